package reassign

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/audit"
	"github.com/kplan-dev/kplan/internal/topology"
)

// topicCounts counts each topic's replicas per broker, an independent
// count over the final sets.
func topicCounts(c *topology.Cluster) map[string]map[int32]int {
	out := map[string]map[int32]int{}
	for _, p := range c.Partitions {
		if out[p.Topic] == nil {
			out[p.Topic] = map[int32]int{}
		}
		for _, r := range p.Replicas {
			out[p.Topic][r]++
		}
	}
	return out
}

// reachableOptimum is the count --failover-moves aims at, computed from
// the final layout alone: the failover optimum, or one above the leaders of
// a broker that is the only follower of some partition (it succeeds to it
// whatever the placement).
func reachableOptimum(c *topology.Cluster, opt int) int {
	_, leads := perBroker(c)
	for _, p := range c.Partitions {
		if len(p.Replicas) == 2 {
			opt = max(opt, leads[p.Replicas[1]]+1)
		}
	}
	return opt
}

// TestFailoverMovesKafkaKit: on the kafka-kit map (RF 2) the default plan
// moves the bound and says how many more moves reach the reachable
// optimum; --failover-moves auto reaches it with exactly that many, at
// most one leader above the optimum, and the same replicas and leaders per
// broker.
func TestFailoverMovesKafkaKit(t *testing.T) {
	c := load(t, "../../testdata/layouts/kafkakit-optimize-input.json")
	def, err := Compute(c, Options{})
	require.NoError(t, err)
	require.Equal(t, def.Summary.LowerBound, def.Summary.ReplicasMoved)
	fo := def.Summary.Failover
	require.Equal(t, 0, fo.ExtraMoves)
	before := audit.WorstLoss(audit.FailoverLosses(def.Final, audit.DomainBroker))
	if before.BusiestLeaders <= before.Optimum+1 {
		return // the default plan already meets the acceptance
	}
	require.NotNil(t, fo.MoreMoves, "the summary must say how many more moves reach the optimum")
	more := *fo.MoreMoves
	require.Positive(t, more)

	auto, err := Compute(c, Options{FailoverMoves: FailoverMovesAuto})
	require.NoError(t, err)
	checkPlan(t, c, Options{}, auto)
	assert.Equal(t, def.Summary.ReplicasMoved+more, auto.Summary.ReplicasMoved, "auto moves what the summary said")
	assert.Equal(t, more, auto.Summary.Failover.ExtraMoves)
	assert.Nil(t, auto.Summary.Failover.MoreMoves)
	after := audit.WorstLoss(audit.FailoverLosses(auto.Final, audit.DomainBroker))
	assert.LessOrEqual(t, after.BusiestLeaders, reachableOptimum(auto.Final, after.Optimum))
	assert.LessOrEqual(t, after.BusiestLeaders, after.Optimum+1)
	r1, l1 := perBroker(def.Final)
	r2, l2 := perBroker(auto.Final)
	assert.Equal(t, r1, r2, "replicas per broker")
	assert.Equal(t, l1, l2, "leaders per broker")
	t.Logf("default: %d moves, busiest survivor %d (optimum %d), %d more moves; auto: %d moves, busiest %d",
		def.Summary.ReplicasMoved, before.BusiestLeaders, before.Optimum, more, auto.Summary.ReplicasMoved, after.BusiestLeaders)

	// A budget of N moves uses at most N and says how many more would.
	some, err := Compute(c, Options{FailoverMoves: more / 2})
	require.NoError(t, err)
	assert.LessOrEqual(t, some.Summary.Failover.ExtraMoves, more/2)
	if m := some.Summary.Failover.MoreMoves; m != nil && *m >= 0 {
		assert.Equal(t, more, some.Summary.Failover.ExtraMoves+*m)
	}
}

// TestFailoverMovesGenerated10k: on a generated 10k-partition, 3-rack,
// RF-3 layout, auto moves at most 10% more replicas than the default plan
// and never makes the worst broker loss worse.
func TestFailoverMovesGenerated10k(t *testing.T) {
	c := generate(rand.New(rand.NewPCG(10, 10)), layout{brokers: 30, firstID: 1, racks: 3, topics: 100, minParts: 50, maxParts: 150, rf: 3, skew: 0.3})
	def, err := Compute(c, Options{})
	require.NoError(t, err)
	auto, err := Compute(c, Options{FailoverMoves: FailoverMovesAuto})
	require.NoError(t, err)
	assert.LessOrEqual(t, float64(auto.Summary.ReplicasMoved), 1.1*float64(def.Summary.ReplicasMoved))
	bd := audit.WorstLoss(audit.FailoverLosses(def.Final, audit.DomainBroker))
	ba := audit.WorstLoss(audit.FailoverLosses(auto.Final, audit.DomainBroker))
	assert.LessOrEqual(t, ba.BusiestLeaders, bd.BusiestLeaders)
	assert.LessOrEqual(t, auto.Summary.Failover.Rack.After.Excess, def.Summary.Failover.Rack.After.Excess)
	assert.Equal(t, sameRackPairs(c, def.Final.Partitions), sameRackPairs(c, auto.Final.Partitions))
	t.Logf("moves %d -> %d; worst broker loss busiest %d -> %d (optimum %d)", def.Summary.ReplicasMoved, auto.Summary.ReplicasMoved, bd.BusiestLeaders, ba.BusiestLeaders, ba.Optimum)
}

// TestFailoverMovesProperties: on random layouts (brokers, racks, RF 1-3,
// uneven topics, drained brokers), --failover-moves N or auto keeps the
// plan's leaders, each topic's replicas per broker (so steady-state
// balance and cells), the rack rules, and moves at most its budget more;
// the worst broker loss is never worse.
func TestFailoverMovesProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(20, 7))
	gained := 0
	for iter := range 300 {
		c, l := randomFailoverLayout(rng)
		opts := Options{}
		if rng.IntN(3) == 0 && l.brokers > l.rf+1 && (l.racks == 0 || l.brokers-1 >= l.racks*2) {
			opts.Brokers = c.Brokers[1:]
		}
		def, err := Compute(c, opts)
		require.NoError(t, err)
		fm := opts
		fm.FailoverMoves = FailoverMovesAuto
		if rng.IntN(2) == 0 {
			fm.FailoverMoves = 1 + rng.IntN(6)
		}
		with, err := Compute(c, fm)
		require.NoError(t, err, "iteration %d", iter)
		checkPlan(t, c, fm, with)
		require.NoError(t, Check(c, with, fm))
		budget := fm.FailoverMoves
		if budget == FailoverMovesAuto {
			budget = autoMovesCap(def.Summary.ReplicasMoved)
		}
		require.LessOrEqual(t, with.Summary.ReplicasMoved, def.Summary.ReplicasMoved+budget, "iteration %d", iter)
		require.Equal(t, def.Summary.ReplicasMoved+with.Summary.Failover.ExtraMoves, with.Summary.ReplicasMoved, "iteration %d", iter)
		require.Equal(t, topicCounts(def.Final), topicCounts(with.Final), "iteration %d: topic replicas per broker", iter)
		for i := range with.Final.Partitions {
			require.Equal(t, def.Final.Partitions[i].Leader, with.Final.Partitions[i].Leader, "iteration %d", iter)
		}
		require.LessOrEqual(t, sameRackPairs(c, with.Final.Partitions), sameRackPairs(c, def.Final.Partitions), "iteration %d: rack rules", iter)
		bd := audit.WorstLoss(audit.FailoverLosses(def.Final, audit.DomainBroker))
		bw := audit.WorstLoss(audit.FailoverLosses(with.Final, audit.DomainBroker))
		require.LessOrEqual(t, bw.BusiestLeaders, bd.BusiestLeaders, "iteration %d", iter)
		if bw.BusiestLeaders < bd.BusiestLeaders {
			gained++
		}
	}
	t.Logf("worst broker loss lowered in %d of 300 layouts", gained)
	assert.Positive(t, gained)
}

// TestFailoverMovesRefused: a negative count, and extra moves with
// --reorder-only, are usage errors naming the flag.
func TestFailoverMovesRefused(t *testing.T) {
	c := load(t, "../../testdata/layouts/kafkakit-optimize-input.json")
	for _, o := range []Options{{FailoverMoves: -2}, {FailoverMoves: 3, ReorderOnly: true}} {
		_, err := Compute(c, o)
		var te *TargetError
		require.ErrorAs(t, err, &te)
		assert.Equal(t, "failover-moves", te.Field)
	}
}
