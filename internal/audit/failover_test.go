package audit

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/topology"
	"github.com/kplan-dev/kplan/internal/workload"
)

// bruteLoss elects every partition with AfterLoss and counts leaders: the
// reference the dense failover evaluation must equal.
func bruteLoss(c *topology.Cluster, lost []int32) (busiest, online, survivors int) {
	after := AfterLoss(c, lost...)
	count := map[int32]int{}
	for _, p := range after.Partitions {
		if p.Leader != topology.NoLeader {
			count[p.Leader]++
			online++
		}
	}
	for _, b := range after.Brokers {
		if !b.Missing {
			survivors++
			busiest = max(busiest, count[b.ID])
		}
	}
	return busiest, online, survivors
}

func TestFailoverLossesEqualBruteForce(t *testing.T) {
	for seed := range uint64(60) {
		rng := rand.New(rand.NewPCG(seed, 7))
		o := topology.GenOptions{
			Brokers:           3 + rng.IntN(9),
			Topics:            1 + rng.IntN(5),
			Partitions:        5 + rng.IntN(60),
			ReplicationFactor: 1 + rng.IntN(3),
			Racks:             rng.IntN(4),
			Scatter:           rng.Float64(),
		}
		if o.Racks == 1 {
			o.Racks = 0
		}
		if o.ReplicationFactor > o.Brokers {
			o.ReplicationFactor = o.Brokers
		}
		if o.Topics > o.Partitions {
			o.Topics = o.Partitions
		}
		c, err := topology.Generate(o, rng)
		require.NoError(t, err, "seed %d", seed)
		// One broker down already, sometimes.
		if rng.IntN(3) == 0 {
			c = AfterLoss(c, c.Brokers[rng.IntN(len(c.Brokers))].ID)
		}
		for _, d := range []Domain{DomainBroker, DomainRack} {
			for _, lf := range FailoverLosses(c, d) {
				busiest, online, surv := bruteLoss(c, lf.Lost)
				require.Equal(t, busiest, lf.BusiestLeaders, "seed %d %s %v", seed, d, lf.Lost)
				require.Equal(t, online, lf.Online, "seed %d %s %v", seed, d, lf.Lost)
				require.Equal(t, surv, lf.Survivors, "seed %d %s %v", seed, d, lf.Lost)
				if surv > 0 {
					require.Equal(t, (online+surv-1)/surv, lf.Optimum)
				}
			}
			// Per topic: the worst excess equals the brute force over every loss.
			type worst struct{ excess, most int }
			want := map[string]worst{}
			for _, lf := range FailoverLosses(c, d) {
				after := AfterLoss(c, lf.Lost...)
				for _, tp := range after.Topics() {
					holders, count, online := map[int32]bool{}, map[int32]int{}, 0
					leadLost := false
					before := c.Partitions[c.Find(tp.Partitions[0].Key()):]
					for k, p := range tp.Partitions {
						if slices.Contains(lf.Lost, before[k].Leader) {
							leadLost = true
						}
						for _, r := range p.Replicas {
							if b, ok := after.Broker(r); ok && !b.Missing {
								holders[r] = true
							}
						}
						if p.Leader != topology.NoLeader {
							count[p.Leader]++
							online++
						}
					}
					if !leadLost || len(holders) == 0 {
						continue
					}
					most := 0
					for b := range holders {
						most = max(most, count[b])
					}
					if e := most - (online+len(holders)-1)/len(holders); e > want[tp.Name].excess {
						want[tp.Name] = worst{e, most}
					}
				}
			}
			got := map[string]worst{}
			losses, topics := Failover(c, d)
			require.Equal(t, FailoverLosses(c, d), losses)
			require.Equal(t, TopicFailovers(c, d), topics)
			for _, tf := range topics {
				got[tf.Topic] = worst{tf.Excess, tf.BusiestLeaders}
			}
			require.Equal(t, want, got, "seed %d %s", seed, d)
		}
	}
}

// TestAddFailoverEqualsItsParts: the section's worst losses are WorstLoss
// of FailoverLosses, its topics TopicFailovers, its round robin prediction
// PredictAll on the layout after that loss (brute force through AfterLoss),
// and a warning stands exactly where the excess passes the threshold.
func TestAddFailoverEqualsItsParts(t *testing.T) {
	for seed := range uint64(30) {
		rng := rand.New(rand.NewPCG(seed, 11))
		o := topology.GenOptions{Brokers: 4 + rng.IntN(8), Topics: 1 + rng.IntN(4), Partitions: 10 + rng.IntN(50),
			ReplicationFactor: 1 + rng.IntN(3), Racks: []int{0, 2, 3}[rng.IntN(3)], Scatter: rng.Float64()}
		c, err := topology.Generate(o, rng)
		require.NoError(t, err)
		if rng.IntN(3) == 0 {
			// A broker down that still leads in the layout (stale): the
			// prediction elects its partitions as AfterLoss does.
			c.Brokers[rng.IntN(len(c.Brokers))].Missing = true
		}
		rates := Rates{ByTopic: map[string]float64{c.Partitions[0].Topic: 5}, Default: 1}
		threshold := rng.IntN(3)
		var r Report
		require.NoError(t, r.AddFailover(c, FailoverOptions{Rates: rates, RatesGiven: true, Threshold: threshold}))
		require.NotNil(t, r.Failover)
		assert.Equal(t, "given", r.Failover.Rates)
		for _, d := range []Domain{DomainBroker, DomainRack} {
			w := r.Failover.Broker
			if d == DomainRack {
				w = r.Failover.Rack
			}
			losses := FailoverLosses(c, d)
			if d == DomainRack && len(losses) < 2 {
				assert.Nil(t, w, "seed %d: a rack section needs two racks", seed)
				continue
			}
			require.NotNil(t, w, "seed %d %s", seed, d)
			assert.Equal(t, *WorstLoss(losses), w.Worst)
			assert.Equal(t, len(losses), w.Losses)
			want := TopicFailovers(c, d)
			if want == nil {
				want = []TopicFailover{}
			}
			assert.Equal(t, want, w.Topics)
			after := AfterLoss(c, w.Worst.Lost...)
			ps, err := PredictAll(after, Loads(after, rates, workload.TopicKeys{}), ShareOptions{}, RoundRobin)
			require.NoError(t, err)
			assert.Equal(t, ps[0].MaxOverMean, w.RoundRobin.MaxOverMean, "seed %d %s", seed, d)
			assert.Equal(t, ps[0].BusiestBroker, w.RoundRobin.Busiest, "seed %d %s", seed, d)
			warned := slices.ContainsFunc(r.Findings, func(f Finding) bool {
				return f.Rule == "failover-excess" && strings.HasPrefix(f.Subject, string(d))
			})
			assert.Equal(t, w.Worst.Excess > threshold, warned, "seed %d %s", seed, d)
		}
	}
}

// TestFailoverTopicsWorkersAgree: each topic's worst loss computed on
// several goroutines equals the one-goroutine result.
func TestFailoverTopicsWorkersAgree(t *testing.T) {
	c, err := topology.Generate(topology.GenOptions{Brokers: 30, Racks: 3, Topics: 700, Partitions: 9000, ReplicationFactor: 3, Skew: 1, Scatter: 0.3, Uneven: 0.2},
		rand.New(rand.NewPCG(7, 8)))
	require.NoError(t, err)
	em := newElectModel(c)
	// The model built on several goroutines is the same.
	defer func(w, n int) { fillWorkers, fillChunk = w, n }(fillWorkers, fillChunk)
	fillWorkers, fillChunk = 3, 100
	require.Equal(t, em, newElectModel(c))
	for _, d := range []Domain{DomainBroker, DomainRack} {
		f := newFailover(em, d)
		one := f.topicsOn(1)
		require.NotEmpty(t, one, "domain %s: the scattered layout has topics above their optimum", d)
		for _, w := range []int{2, 3, 5} {
			require.Equal(t, one, f.topicsOn(w), "domain %s, %d workers", d, w)
		}
	}
}
