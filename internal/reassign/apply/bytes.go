package apply

import (
	"context"
	"slices"
	"time"

	"github.com/kplan-dev/kplan/internal/topology"
)

// ReplicaSizer is an Admin that also reports how many bytes each broker
// holds of each partition (DescribeLogDirs): Execute then reports its
// progress in bytes copied, the copy rate per broker and an ETA.
type ReplicaSizer interface {
	// ReplicaSizes returns, per partition of the topics the filter
	// accepts, the bytes on each broker holding a replica.
	ReplicaSizes(ctx context.Context, topicFilter func(string) bool) (map[topology.Key]map[int32]int64, error)
}

// ByteProgress is an apply's progress in bytes: what the replicas being
// added have copied of what they must copy.
type ByteProgress struct {
	// Copied and Total are bytes over every step that adds a replica of
	// known size: a done step counts its partition's size, a step in
	// flight the bytes its new replica holds (at most the size), a step
	// not yet submitted nothing.
	Copied int64 `json:"copied_bytes"`
	Total  int64 `json:"total_bytes"`
	// RatePerSecond is the bytes copied since the first measurement over
	// the time since; 0 until two measurements.
	RatePerSecond float64 `json:"bytes_per_second"`
	// ETASeconds is what is left at that rate; -1 while the rate is
	// unknown.
	ETASeconds float64 `json:"eta_seconds"`
	// Brokers are the destinations, by id: each one's bytes copied, to
	// copy, and rate.
	Brokers []BrokerCopy `json:"brokers"`
}

// BrokerCopy is one destination broker's share of a ByteProgress.
type BrokerCopy struct {
	Broker        int32   `json:"broker"`
	Copied        int64   `json:"copied_bytes"`
	Total         int64   `json:"total_bytes"`
	RatePerSecond float64 `json:"bytes_per_second"`
}

// byteMeter follows the bytes copied from poll to poll.
type byteMeter struct {
	first      time.Time
	firstBytes map[int32]int64
	started    bool
}

// measure computes the progress of steps at now from sizes (nil: only
// done steps count); the first call sets the base of the rates.
func (m *byteMeter) measure(steps []Step, sizes map[topology.Key]map[int32]int64, now time.Time) *ByteProgress {
	per := map[int32]*BrokerCopy{}
	bp := &ByteProgress{ETASeconds: -1, Brokers: []BrokerCopy{}}
	for i := range steps {
		s := &steps[i]
		d := s.Dest()
		if d < 0 || s.Size <= 0 {
			continue
		}
		b := per[d]
		if b == nil {
			b = &BrokerCopy{Broker: d}
			per[d] = b
		}
		b.Total += s.Size
		switch s.Status {
		case StepDone:
			b.Copied += s.Size
		case StepSubmitted:
			b.Copied += min(max(sizes[s.Key()][d], 0), s.Size)
		}
	}
	if len(per) == 0 {
		return nil
	}
	copied := map[int32]int64{}
	for _, b := range per {
		bp.Copied += b.Copied
		bp.Total += b.Total
		copied[b.Broker] = b.Copied
	}
	if !m.started {
		m.first, m.firstBytes, m.started = now, copied, true
	} else if dt := now.Sub(m.first).Seconds(); dt > 0 {
		var base int64
		for id, b := range per {
			b.RatePerSecond = float64(b.Copied-m.firstBytes[id]) / dt
			base += m.firstBytes[id]
		}
		bp.RatePerSecond = float64(bp.Copied-base) / dt
		if bp.RatePerSecond > 0 {
			bp.ETASeconds = float64(bp.Total-bp.Copied) / bp.RatePerSecond
		}
	}
	for _, b := range per {
		bp.Brokers = append(bp.Brokers, *b)
	}
	slices.SortFunc(bp.Brokers, func(a, b BrokerCopy) int { return int(a.Broker - b.Broker) })
	return bp
}
