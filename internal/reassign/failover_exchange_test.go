package reassign

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/audit"
	"github.com/kplan-dev/kplan/internal/topology"
)

// electionLoads counts, for every single-broker loss of c, the leaders
// each survivor holds once Kafka elects the first live replica of each
// partition the lost broker led: independent of the plan's counts.
func electionLoads(c *topology.Cluster) map[int32]map[int32]int {
	out := map[int32]map[int32]int{}
	for _, b := range c.Brokers {
		m := map[int32]int{}
		for _, s := range c.Brokers {
			if s.ID != b.ID {
				m[s.ID] = 0
			}
		}
		for _, p := range c.Partitions {
			if p.Leader != b.ID {
				m[p.Leader]++
				continue
			}
			for _, r := range p.Replicas {
				if r != b.ID {
					m[r]++
					break
				}
			}
		}
		out[b.ID] = m
	}
	return out
}

// lossFloor is the fewest leaders the busiest survivor of b's loss can
// hold, by counting: ceil(partitions / survivors), and, when every
// follower of b's partitions sits outside b's rack, b's leaders spread
// over the other racks' brokers on top of their own.
func lossFloor(c *topology.Cluster, b topology.Broker) int {
	_, leads := perBroker(c)
	floor := ceilDiv(len(c.Partitions), len(c.Brokers)-1)
	out := true
	for _, p := range c.Partitions {
		if p.Leader != b.ID {
			continue
		}
		for _, r := range p.Replicas {
			for _, o := range c.Brokers {
				if o.ID == r && r != b.ID && o.Rack == b.Rack {
					out = false
				}
			}
		}
	}
	if out {
		sum, k := leads[b.ID], 0
		for _, o := range c.Brokers {
			if o.Rack != b.Rack {
				sum += leads[o.ID]
				k++
			}
		}
		floor = max(floor, ceilDiv(sum, k))
	}
	return floor
}

// TestFailoverExchange60: on the failover-5 layout (60 partitions, 5
// brokers, racks a = {1, 3, 5} and b = {2, 4}, F2 of RF 2 and F3 of RF 3)
// the placement step alone stops at 17 leaders on the busiest survivor
// (its sets allow no better order); the exchange step changes the sets so
// that every single-broker loss leaves at most 16, one above
// ceil(60 / 4), which is the floor of a rack-b loss (its partitions only
// fail over to rack a). It keeps each broker's and topic's replicas and
// leaders, the rack rules, the rack losses' worst, and the auto cap.
func TestFailoverExchange60(t *testing.T) {
	c := load(t, "../../testdata/layouts/failover-5.json")
	for _, tc := range []struct {
		name string
		tol  float64
	}{{"exact balance", 0}, {"cli tolerance", 0.05}} {
		t.Run(tc.name, func(t *testing.T) {
			checkExchange60(t, c, tc.tol)
		})
	}
}

func checkExchange60(t *testing.T, c *topology.Cluster, tol float64) {
	def, err := Compute(c, Options{Tolerance: tol})
	require.NoError(t, err)
	o := Options{Tolerance: tol, FailoverMoves: FailoverMovesAuto}
	auto, err := Compute(c, o)
	require.NoError(t, err)
	checkPlan(t, c, o, auto)
	require.NoError(t, Check(c, auto, o))

	worst := 0
	for _, b := range c.Brokers {
		loads := electionLoads(auto.Final)[b.ID]
		busiest := 0
		for _, v := range loads {
			busiest = max(busiest, v)
		}
		floor := lossFloor(auto.Final, b)
		assert.LessOrEqual(t, busiest, 16, "loss of broker %d", b.ID)
		assert.LessOrEqual(t, busiest, max(floor, ceilDiv(len(c.Partitions), len(c.Brokers)-1)+1), "loss of broker %d", b.ID)
		assert.GreaterOrEqual(t, busiest, floor, "loss of broker %d below its floor: the count is wrong", b.ID)
		worst = max(worst, busiest)
	}
	wa := audit.WorstLoss(audit.FailoverLosses(auto.Final, audit.DomainBroker))
	assert.Equal(t, worst, wa.BusiestLeaders, "the election count and audit agree")
	require.NotNil(t, auto.Summary.Failover)
	assert.Equal(t, worst, auto.Summary.Failover.Broker.After.BusiestLeaders)
	assert.Zero(t, auto.Summary.Failover.Broker.After.OverReachable)

	// Moves: within the auto cap over the default plan, and counted.
	extra := auto.Summary.Failover.ExtraMoves
	assert.Positive(t, extra)
	assert.LessOrEqual(t, extra, autoMovesCap(def.Summary.ReplicasMoved))
	assert.Equal(t, def.Summary.ReplicasMoved+extra, auto.Summary.ReplicasMoved)

	// Balance and rack rules as the default plan leaves them.
	r1, l1 := perBroker(def.Final)
	r2, l2 := perBroker(auto.Final)
	assert.Equal(t, r1, r2, "replicas per broker")
	assert.Equal(t, l1, l2, "leaders per broker")
	assert.Equal(t, topicCounts(def.Final), topicCounts(auto.Final), "topic replicas per broker")
	for i := range auto.Final.Partitions {
		assert.Equal(t, def.Final.Partitions[i].Leader, auto.Final.Partitions[i].Leader)
	}
	assert.Zero(t, auto.Summary.After.RackViolations)
	assert.LessOrEqual(t, sameRackPairs(c, auto.Final.Partitions), sameRackPairs(c, def.Final.Partitions), "rack rules")
	rd := audit.WorstLoss(audit.FailoverLosses(def.Final, audit.DomainRack))
	ra := audit.WorstLoss(audit.FailoverLosses(auto.Final, audit.DomainRack))
	assert.LessOrEqual(t, ra.Excess, rd.Excess, "worst rack loss")
	t.Logf("auto: %d moves (%d extra, cap %d), worst single-broker loss %d (optimum %d)",
		auto.Summary.ReplicasMoved, extra, autoMovesCap(def.Summary.ReplicasMoved), worst, wa.Optimum)
}

// TestExchangeOverBruteForce: over (a b-matching by augmenting paths) is
// the fewest items any assignment leaves above level c, against every
// assignment of small random rows.
func TestExchangeOverBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 60))
	for iter := range 2000 {
		n := 3 + rng.IntN(3)
		e := &exState{n: n, gc: make([]int, n), load: make([]int, n)}
		for j := range n {
			e.gc[j] = rng.IntN(4)
			e.surv1 = append(e.surv1, int32(j))
		}
		items := rng.IntN(7)
		for range items {
			var c []int32
			for j := range n {
				if rng.IntN(2) == 0 {
					c = append(c, int32(j))
				}
			}
			if len(c) == 0 {
				c = append(c, int32(rng.IntN(n)))
			}
			e.cand = append(e.cand, c)
			e.at = append(e.at, c[0])
		}
		level := rng.IntN(6)
		// Brute force: every assignment, the items beyond each survivor's
		// room under level.
		best := items
		cnt := make([]int, n)
		var rec func(k int)
		rec = func(k int) {
			if k == items {
				left := 0
				for j := range n {
					left += max(0, cnt[j]-max(0, level-e.gc[j]))
				}
				best = min(best, left)
				return
			}
			for _, y := range e.cand[k] {
				cnt[y]++
				rec(k + 1)
				cnt[y]--
			}
		}
		rec(0)
		require.Equal(t, best, e.over(level), "iteration %d", iter)
	}
}
