package chaos

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kplan-dev/kplan/internal/clock"
	"github.com/kplan-dev/kplan/internal/errkind"
	"github.com/kplan-dev/kplan/internal/kafka"
)

// KillEachSchema versions the JSON of `kplan chaos --kill each`.
const KillEachSchema = "kplan.chaos-kill-each/v1"

// KillEach is a campaign that killed every broker in turn: per kill, per
// partitioner, the measured and the predicted share of each broker after
// the kill. Its JSON form is kplan chaos --kill each -o json.
type KillEach struct {
	// Schema is the JSON's version, KillEachSchema.
	Schema  string `json:"schema"`
	Cluster string `json:"cluster"`
	Label   string `json:"label"`
	// Kills are the kills in the order they ran.
	Kills []Kill `json:"kills"`
	// Runs are the runs' full results, one per kill.
	Runs []*Result `json:"runs"`
}

// Kill is one broker's kill of a KillEach campaign.
type Kill struct {
	// Broker is the broker killed (-1: the run killed none).
	Broker int32 `json:"broker"`
	// Restored tells whether the cluster was whole again afterwards: on a
	// real cluster the broker restarted, back in every ISR with the
	// preferred leaders elected before the next kill (and after the last);
	// a simulated cluster starts each run whole.
	Restored bool `json:"restored"`
	// FailoverMS is Result.FailoverMS of the kill's run.
	FailoverMS   *float64          `json:"failover_ms,omitempty"`
	Partitioners []KillPartitioner `json:"partitioners"`
}

// KillPartitioner is one partitioner's after phase of one kill.
type KillPartitioner struct {
	Name string `json:"name"`
	// MeasuredShare and PredictedShare are each surviving broker's share
	// of the bytes after the kill (PhaseResult's, the killed broker left
	// out); MeasuredMaxOverMean and PredictedMaxOverMean the skew of those
	// shares over the same brokers.
	// The predicted figures are absent when the partitioner has none
	// (PartitionerResult.Prediction says why).
	MeasuredShare        map[string]float64 `json:"measured_share,omitempty"`
	PredictedShare       map[string]float64 `json:"predicted_share,omitempty"`
	MeasuredMaxOverMean  *float64           `json:"measured_max_over_mean,omitempty"`
	PredictedMaxOverMean *float64           `json:"predicted_max_over_mean,omitempty"`
	// MaxErrorPts is the largest difference between the two shares, in
	// percentage points.
	MaxErrorPts *float64 `json:"max_error_pts,omitempty"`
	// Acked and Lost are the run's counts for the partitioner (all phases).
	Acked int64 `json:"acked"`
	Lost  int64 `json:"lost"`
}

// NewKillEach builds the per-kill report of runs (one kill each, at least
// one run); restored[i] tells whether run i's kill was undone.
func NewKillEach(runs []*Result, restored []bool) *KillEach {
	k := &KillEach{Schema: KillEachSchema, Cluster: runs[0].Cluster, Label: runs[0].Label, Kills: []Kill{}, Runs: runs}
	for i, r := range runs {
		kl := Kill{Broker: r.KilledBroker, Restored: restored[i], FailoverMS: r.FailoverMS, Partitioners: []KillPartitioner{}}
		for _, p := range r.Partitioners {
			kp := KillPartitioner{Name: p.Name, Acked: p.Acked, Lost: p.Lost}
			if ph := p.Phases[PhaseAfter.String()]; ph != nil {
				// Over the survivors: a real cluster's after phase may list
				// the dead broker among its leaders (a metadata answer from
				// before the election), with a share of 0.
				dead := strconv.Itoa(int(r.KilledBroker))
				kp.MeasuredShare, kp.PredictedShare = without(ph.MeasuredShare, dead), without(ph.PredictedShare, dead)
				kp.MaxErrorPts = ph.MaxErrorPts
				kp.MeasuredMaxOverMean, kp.PredictedMaxOverMean = shareSkew(kp.MeasuredShare), shareSkew(kp.PredictedShare)
			}
			kl.Partitioners = append(kl.Partitioners, kp)
		}
		k.Kills = append(k.Kills, kl)
	}
	return k
}

// without is m without key k, m itself when it has no k.
func without(m map[string]float64, k string) map[string]float64 {
	if _, ok := m[k]; !ok {
		return m
	}
	out := maps.Clone(m)
	delete(out, k)
	return out
}

// shareSkew is the largest share over the mean share; nil without shares.
func shareSkew(shares map[string]float64) *float64 {
	if len(shares) == 0 {
		return nil
	}
	var hi, sum float64
	for _, s := range shares {
		hi = max(hi, s)
		sum += s
	}
	if sum <= 0 {
		return nil
	}
	return ptr(round4(hi * float64(len(shares)) / sum))
}

// WaitPreferredLeaders elects the preferred leaders of c and waits, for at
// most wait, until every partition of every topic is led by its first
// replica, as a metadata answer says: between the kills of --kill each,
// the next kill must start from the layout's own leaders. Call it once
// every broker is back in every ISR (WaitFullISR): Kafka elects a
// preferred replica only when it is in sync.
func WaitPreferredLeaders(ctx context.Context, c Cluster, conn kafka.ConnOptions, version string, wait time.Duration) error {
	cl, err := kafka.NewClient(conn.WithSeeds(c.Seeds()), version, kgo.RetryTimeout(10*time.Second))
	if err != nil {
		return fmt.Errorf("metadata client: %w", err)
	}
	defer cl.Close()
	deadline := time.Now().Add(wait)
	var off []string
	for {
		ectx, cancel := context.WithDeadline(ctx, deadline)
		err := c.ElectPreferred(ectx)
		cancel()
		if err == nil {
			var m *clusterMeta
			if m, err = fetchMeta(ctx, cl, nil); err == nil {
				if off = notPreferred(m); len(off) == 0 {
					return nil
				}
			}
		}
		if time.Now().After(deadline) {
			if err != nil {
				return errkind.Wrap(errkind.Runtime, "", fmt.Errorf("electing the preferred leaders: %w", err))
			}
			return errkind.New(errkind.Runtime, "", "%d partitions are not led by their preferred replica after %v (%s)", len(off), wait, head(off))
		}
		if err := clock.Sleep(ctx, 500*time.Millisecond); err != nil {
			return err
		}
	}
}

// notPreferred lists the partitions (TOPIC/P) of m not led by their first
// replica, sorted.
func notPreferred(m *clusterMeta) []string {
	var out []string
	for t, parts := range m.topics {
		for p, pm := range parts {
			if len(pm.replicas) > 0 && pm.leader != pm.replicas[0] {
				out = append(out, fmt.Sprintf("%s/%d", t, p))
			}
		}
	}
	slices.Sort(out)
	return out
}
