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
	// RatePerSecond is the bytes copied over the last RateWindow (since
	// the first measurement while the apply is younger) over that time; 0
	// until two measurements.
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

// RateWindow is how far back the copy rate of a ByteProgress looks: the
// rate, and the ETA from it, are the bytes copied over the last RateWindow
// (since the first measurement while the apply is younger). An average
// since the start misleads twice: Kafka's replication quota lets about ten
// seconds' worth of a fresh throttle through at once, and the adaptive
// throttle (--latency-objective) changes the rate as it goes; on the
// guarded apply's acceptance lab the average since the start put the ETA
// at 25% of the bytes 34-89% off the real remaining time.
const RateWindow = 30 * time.Second

// byteMeter follows the bytes copied from poll to poll.
type byteMeter struct {
	// marks are the measurements of the last RateWindow, oldest first,
	// and the newest one older than that (the base of the rates).
	marks []byteMark
}

// byteMark is one measurement: when, and each destination's bytes copied.
type byteMark struct {
	at     time.Time
	copied map[int32]int64
}

// base drops the marks the rate no longer needs at now and returns the
// oldest one left: the newest mark at least RateWindow old, or the first.
func (m *byteMeter) base(now time.Time) byteMark {
	i := 0
	for i+1 < len(m.marks) && now.Sub(m.marks[i+1].at) >= RateWindow {
		i++
	}
	m.marks = m.marks[i:]
	return m.marks[0]
}

// measure computes the progress of steps at now from sizes (nil: only
// done steps count); the rates are over the last RateWindow.
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
	if len(m.marks) > 0 {
		old := m.base(now)
		if dt := now.Sub(old.at).Seconds(); dt > 0 {
			var base int64
			for id, b := range per {
				b.RatePerSecond = float64(b.Copied-old.copied[id]) / dt
				base += old.copied[id]
			}
			bp.RatePerSecond = float64(bp.Copied-base) / dt
			if bp.RatePerSecond > 0 {
				bp.ETASeconds = float64(bp.Total-bp.Copied) / bp.RatePerSecond
			}
		}
	}
	m.marks = append(m.marks, byteMark{at: now, copied: copied})
	for _, b := range per {
		bp.Brokers = append(bp.Brokers, *b)
	}
	slices.SortFunc(bp.Brokers, func(a, b BrokerCopy) int { return int(a.Broker - b.Broker) })
	return bp
}
