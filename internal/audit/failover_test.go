package audit

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/topology"
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
			want := map[string]int{}
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
					if e := most - (online+len(holders)-1)/len(holders); e > want[tp.Name] {
						want[tp.Name] = e
					}
				}
			}
			got := map[string]int{}
			for _, tf := range TopicFailovers(c, d) {
				got[tf.Topic] = tf.Excess
			}
			for k, v := range want {
				if v == 0 {
					delete(want, k)
				}
			}
			require.Equal(t, want, got, "seed %d %s", seed, d)
		}
	}
}
