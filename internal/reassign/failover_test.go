package reassign

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/audit"
	"github.com/kplan-dev/kplan/internal/topology"
)

// randomFailoverLayout is a small random layout for the failover laws:
// 3-12 brokers, racks or not, RF 1-3, uneven topics.
func randomFailoverLayout(rng *rand.Rand) (*topology.Cluster, layout) {
	l := layout{brokers: 3 + rng.IntN(10), firstID: int32(1 + rng.IntN(100)), topics: 1 + rng.IntN(6), minParts: 1, maxParts: 1 + rng.IntN(40), skew: rng.Float64() * 2}
	l.rf = 1 + rng.IntN(min(3, l.brokers))
	if rng.IntN(3) > 0 {
		l.racks = 2 + rng.IntN(2)
	}
	return generate(rng, l), l
}

// worstExcess is audit's largest per-topic excess over every loss, or 0.
func worstExcess(c *topology.Cluster, d audit.Domain) int {
	if tf := audit.TopicFailovers(c, d); len(tf) > 0 {
		return tf[0].Excess
	}
	return 0
}

// TestTopicWorstMatchesAudit: the summary's fast per-topic figure equals
// audit's, which is checked against a brute-force election; with brokers
// down too.
func TestTopicWorstMatchesAudit(t *testing.T) {
	rng := rand.New(rand.NewPCG(20, 1))
	for iter := range 400 {
		c, _ := randomFailoverLayout(rng)
		if rng.IntN(4) == 0 {
			c.Brokers[rng.IntN(len(c.Brokers))].Missing = true
		}
		for _, d := range []audit.Domain{audit.DomainBroker, audit.DomainRack} {
			got, topic, over := topicWorst(c, d)
			require.GreaterOrEqual(t, over, 0)
			require.LessOrEqual(t, over, got)
			want := worstExcess(c, d)
			require.Equal(t, want, got, "iteration %d, domain %s", iter, d)
			if want > 0 {
				tf := audit.TopicFailovers(c, d)
				require.Equal(t, tf[0].Topic, topic, "iteration %d, domain %s", iter, d)
			}
		}
	}
}

// TestReachableIsALowerBound: no loss leaves its busiest survivor below
// the reachable figure's own loss bound, so the worst loss is at least it.
func TestReachableIsALowerBound(t *testing.T) {
	rng := rand.New(rand.NewPCG(20, 2))
	for iter := range 300 {
		c, _ := randomFailoverLayout(rng)
		for _, d := range []audit.Domain{audit.DomainBroker, audit.DomainRack} {
			losses := audit.FailoverLosses(c, d)
			bounds := reachable(c, d)
			require.Len(t, bounds, len(losses))
			for u, l := range losses {
				require.GreaterOrEqual(t, l.BusiestLeaders, bounds[u], "iteration %d, domain %s, loss %v", iter, d, l.Lost)
			}
			f := figure(c, d)
			require.GreaterOrEqual(t, f.OverReachable, 0)
			require.LessOrEqual(t, f.OverReachable, max(f.Excess, 0))
		}
	}
}

// sets maps each partition to its sorted replica set.
func sets(c *topology.Cluster) map[topology.Key][]int32 {
	out := map[topology.Key][]int32{}
	for _, p := range c.Partitions {
		s := slices.Clone(p.Replicas)
		slices.Sort(s)
		out[p.Key()] = s
	}
	return out
}

// TestFailoverOrderKeepsSetsAndLeaders: the failover phase changes only
// the order of followers: the same replica sets, leaders and moves as the
// plan without it, and its worst losses no worse, on random layouts with
// added and drained brokers.
func TestFailoverOrderKeepsSetsAndLeaders(t *testing.T) {
	rng := rand.New(rand.NewPCG(20, 3))
	worseBroker, worseRack, better := 0, 0, 0
	for iter := range 500 {
		c, l := randomFailoverLayout(rng)
		opts := Options{}
		if rng.IntN(3) == 0 && l.brokers > l.rf+1 && (l.racks == 0 || l.brokers-1 >= l.racks*2) {
			opts.Brokers = slices.Clone(c.Brokers[1:])
		}
		with, err := Compute(c, opts)
		require.NoError(t, err)
		checkPlan(t, c, opts, with)
		none := opts
		none.FailoverDomain = FailoverNone
		without, err := Compute(c, none)
		require.NoError(t, err)
		require.Equal(t, sets(without.Final), sets(with.Final), "iteration %d", iter)
		for i := range with.Final.Partitions {
			require.Equal(t, without.Final.Partitions[i].Leader, with.Final.Partitions[i].Leader, "iteration %d", iter)
		}
		require.Equal(t, without.Summary.ReplicasMoved, with.Summary.ReplicasMoved)
		require.Equal(t, without.Summary.After.Leaders, with.Summary.After.Leaders)
		wb := audit.WorstLoss(audit.FailoverLosses(with.Final, audit.DomainBroker))
		nb := audit.WorstLoss(audit.FailoverLosses(without.Final, audit.DomainBroker))
		if max(wb.Excess, 0) > max(nb.Excess, 0) {
			worseBroker++
		}
		if wb.Excess < nb.Excess {
			better++
		}
		if l.racks >= 2 {
			wr := audit.WorstLoss(audit.FailoverLosses(with.Final, audit.DomainRack))
			nr := audit.WorstLoss(audit.FailoverLosses(without.Final, audit.DomainRack))
			if max(wr.Excess, 0) > max(nr.Excess, 0) {
				worseRack++
			}
		}
	}
	assert.Zero(t, worseBroker, "plans whose worst broker loss got worse")
	assert.Zero(t, worseRack, "plans whose worst rack loss got worse")
	assert.Positive(t, better)
}

// failoverCase plans a generated layout and checks the acceptance figures:
// every single-broker loss at most one leader above what the replica sets
// allow (the optimum, or the reachable bound when rack rules keep
// followers out of the leader's rack), every rack loss within 2% of the
// optimum, and per topic at most one above the topic's own exact figure
// (the least busiest survivor any order of its replica sets allows).
func failoverCase(t *testing.T, c *topology.Cluster) {
	t.Helper()
	p, err := Compute(c, Options{})
	require.NoError(t, err)
	fo := p.Summary.Failover
	require.NotNil(t, fo)
	b, r := fo.Broker.After, fo.Rack.After
	t.Logf("broker loss: before %d (optimum %d, reachable %d), after %d (reachable %d, over it %d); topic excess %d -> %d (over its reachable %d)",
		fo.Broker.Before.BusiestLeaders, fo.Broker.Before.Optimum, fo.Broker.Before.Reachable, b.BusiestLeaders, b.Reachable, b.OverReachable, fo.Broker.Before.TopicExcess, b.TopicExcess, b.TopicOverReachable)
	t.Logf("rack loss: before %d, after %d (optimum %d); topic excess %d -> %d (over its reachable %d)", fo.Rack.Before.BusiestLeaders, r.BusiestLeaders, r.Optimum, fo.Rack.Before.TopicExcess, r.TopicExcess, r.TopicOverReachable)
	assert.LessOrEqual(t, b.OverReachable, 1)
	// Per topic at most one above the topic's own exact figure (the topic
	// pass, failover_topic.go).
	assert.LessOrEqual(t, b.TopicOverReachable, 1)
	assert.LessOrEqual(t, float64(r.BusiestLeaders), float64(r.Optimum)*1.02)
	assert.Less(t, b.Excess, fo.Broker.Before.Excess)
	assert.Less(t, r.Excess, fo.Rack.Before.Excess)
}

func TestFailoverGenerated10k(t *testing.T) {
	c := generate(rand.New(rand.NewPCG(10, 10)), layout{brokers: 30, firstID: 1, racks: 3, topics: 100, minParts: 50, maxParts: 150, rf: 3, skew: 0.3})
	failoverCase(t, c)
}

func TestFailoverGenerated100k(t *testing.T) {
	if testing.Short() {
		t.Skip("100k partitions")
	}
	c := generate(rand.New(rand.NewPCG(100, 100)), layout{brokers: 60, firstID: 1, racks: 3, topics: 500, minParts: 100, maxParts: 300, rf: 3, skew: 0.3})
	failoverCase(t, c)
}

// TestReorderOnly: no replica changes broker (an independent count over
// the sets), and neither the steady-state leaders nor the worst loss of
// either domain gets worse, on random layouts.
func TestReorderOnly(t *testing.T) {
	rng := rand.New(rand.NewPCG(20, 4))
	improved := 0
	for iter := range 500 {
		c, l := randomFailoverLayout(rng)
		p, err := Compute(c, Options{ReorderOnly: true})
		require.NoError(t, err)
		before := sets(c)
		moved := 0
		for _, q := range p.Final.Partitions {
			for _, r := range q.Replicas {
				if !slices.Contains(before[q.Key()], r) {
					moved++
				}
			}
			require.Len(t, q.Replicas, len(before[q.Key()]))
		}
		require.Zero(t, moved, "iteration %d", iter)
		require.Zero(t, p.Summary.ReplicasMoved)
		for _, ch := range p.Changes {
			require.Zero(t, ch.Moves)
		}
		sb, sa := p.Summary.Before.Leaders, p.Summary.After.Leaders
		require.LessOrEqual(t, sa.Max, sb.Max, "iteration %d: leaders per broker", iter)
		require.LessOrEqual(t, sa.Max-sa.Min, sb.Max-sb.Min, "iteration %d: leaders per broker", iter)
		domains := []audit.Domain{audit.DomainBroker}
		if l.racks >= 2 {
			domains = append(domains, audit.DomainRack)
		}
		for _, d := range domains {
			b := audit.WorstLoss(audit.FailoverLosses(c, d))
			a := audit.WorstLoss(audit.FailoverLosses(p.Final, d))
			require.LessOrEqual(t, a.Excess, b.Excess, "iteration %d, domain %s", iter, d)
			if a.Excess < b.Excess {
				improved++
			}
		}
	}
	assert.Positive(t, improved)
}

func TestReorderOnlyRefusesSetChanges(t *testing.T) {
	c := generate(rand.New(rand.NewPCG(1, 1)), layout{brokers: 4, firstID: 1, topics: 2, minParts: 4, maxParts: 4, rf: 2})
	for _, o := range []Options{
		{ReorderOnly: true, Brokers: c.Brokers[1:]},
		{ReorderOnly: true, ReplicationFactor: 3},
		{ReorderOnly: true, FixOverlaps: true},
	} {
		_, err := Compute(c, o)
		var te *TargetError
		require.ErrorAs(t, err, &te)
		assert.Equal(t, "reorder-only", te.Field)
	}
}

// TestKafkaKitFailover: on the kafka-kit production map (RF 2) the plan
// still moves the bound, and its failover section says how far the worst
// loss is from the optimum and from what these sets allow.
func TestKafkaKitFailover(t *testing.T) {
	c := load(t, "../../testdata/layouts/kafkakit-optimize-input.json")
	p, err := Compute(c, Options{})
	require.NoError(t, err)
	s := p.Summary
	assert.Equal(t, s.LowerBound, s.ReplicasMoved)
	b := s.Failover.Broker
	require.NotNil(t, b)
	assert.Less(t, b.After.Excess, b.Before.Excess)
	assert.GreaterOrEqual(t, b.After.BusiestLeaders, b.After.Reachable)
	assert.GreaterOrEqual(t, b.After.Reachable, b.After.Optimum)
	w := audit.WorstLoss(audit.FailoverLosses(p.Final, audit.DomainBroker))
	assert.Equal(t, w.BusiestLeaders, b.After.BusiestLeaders)
	t.Logf("moves %d (bound %d); worst broker loss %v: busiest %d -> %d, optimum %d, reachable %d",
		s.ReplicasMoved, s.LowerBound, b.After.Lost, b.Before.BusiestLeaders, b.After.BusiestLeaders, b.After.Optimum, b.After.Reachable)
}
