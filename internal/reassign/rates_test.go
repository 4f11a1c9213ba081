package reassign

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/audit"
	"github.com/kplan-dev/kplan/internal/errkind"
	"github.com/kplan-dev/kplan/internal/topology"
)

func TestRatesRefused(t *testing.T) {
	c := &topology.Cluster{Brokers: []topology.Broker{{ID: 1}, {ID: 2}, {ID: 3}},
		Partitions: []topology.Partition{{Topic: "t", Partition: 0, Replicas: []int32{1, 2, 3}, Leader: 1, SizeBytes: 10}}}
	loads := map[topology.Key]Load{{Topic: "t", Partition: 0}: {Produce: 1}}
	for _, tc := range []struct {
		name  string
		opts  Options
		field string
		want  string
	}{
		{"unknown topic", Options{Rates: &audit.Rates{ByTopic: map[string]float64{"t": 1, "nope": 2}}}, "rates", `no topic "nope" in this layout`},
		{"unknown topic, bytes plan", Options{Balance: BalanceBytes, Tolerance: 0.1, Rates: &audit.Rates{ByTopic: map[string]float64{"x": 1}}}, "rates", `no topic "x" in this layout`},
		{"with load", Options{Balance: BalanceLoad, Tolerance: 0.1, Loads: loads, Rates: &audit.Rates{ByTopic: map[string]float64{"t": 1}}}, "rates", "cannot go with --balance load"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Compute(c, tc.opts)
			var te *TargetError
			require.ErrorAs(t, err, &te)
			assert.Equal(t, errkind.Usage, errkind.KindOf(err))
			assert.Equal(t, tc.field, errkind.FieldOf(err))
			assert.True(t, strings.HasPrefix(te.Msg, tc.want), "%q does not start with %q", te.Msg, tc.want)
		})
	}
}

// TestRateWeights: each topic's partitions share its rate evenly (audit's
// round-robin share), unnamed topics take the default, and the weights of
// a topic add up to its rate.
func TestRateWeights(t *testing.T) {
	c := &topology.Cluster{}
	for p := range 4 {
		c.Partitions = append(c.Partitions, topology.Partition{Topic: "a", Partition: int32(p)})
	}
	for p := range 3 {
		c.Partitions = append(c.Partitions, topology.Partition{Topic: "b", Partition: int32(p)})
	}
	c.Partitions = append(c.Partitions, topology.Partition{Topic: "c"})
	c.Normalize()
	fw := rateWeights(c, &audit.Rates{ByTopic: map[string]float64{"a": 8, "c": 0}, Default: 3})
	sum := map[string]float64{}
	for i, p := range c.Partitions {
		sum[p.Topic] += fw[i]
		assert.Equal(t, fw[i], fw[c.Find(topology.Key{Topic: p.Topic})], "%s: one share per topic", p.Key())
	}
	assert.InDelta(t, 8, sum["a"], 1e-12)
	assert.InDelta(t, 3, sum["b"], 1e-12)
	assert.Zero(t, sum["c"])
}

// hotLayout is a layout of a few RF-3 topics placed with skew, one of
// them (the largest) written rate times as fast as each other.
func hotLayout(rng *rand.Rand, brokers, racks int, rate float64) (*topology.Cluster, *audit.Rates, func(topology.Partition) float64) {
	c := generate(rng, layout{brokers: brokers, racks: racks, topics: 6, minParts: 8, maxParts: 30, rf: 3, skew: 0.5})
	parts := map[string]int{}
	hot := ""
	for _, p := range c.Partitions {
		parts[p.Topic]++
		if hot == "" || parts[p.Topic] > parts[hot] || parts[p.Topic] == parts[hot] && p.Topic < hot {
			hot = p.Topic
		}
	}
	r := &audit.Rates{ByTopic: map[string]float64{hot: rate}, Default: 1}
	return c, r, func(p topology.Partition) float64 { return r.Of(p.Topic) / float64(parts[p.Topic]) }
}

// TestRatesLowerWorstWeightedLoss: on layouts with one topic much hotter
// than the others, the plan with --rates leaves the busiest survivor of
// the worst single-broker loss, weighted by the rates (an independent
// election over every loss, bfWeighted), no busier than the same plan
// with the weighted pass switched off, and less busy in most; it moves
// the same replicas, keeps every leader and the steady-state balance of
// the plan without rates, and without the pass it is that plan exactly.
// Not parallel: it flips skipWeightedFailover.
func TestRatesLowerWorstWeightedLoss(t *testing.T) {
	rng := rand.New(rand.NewPCG(20, 24))
	iters := 24 / raceScale
	better := 0
	var sumRated, sumCounted float64
	for iter := range iters {
		racks := []int{0, 3}[iter%2]
		c, rates, weight := hotLayout(rng, 6+rng.IntN(5), racks, 10)
		p, err := Compute(c, Options{Rates: rates})
		require.NoError(t, err, "iteration %d", iter)
		skipWeightedFailover = true
		q, err := Compute(c, Options{Rates: rates})
		skipWeightedFailover = false
		require.NoError(t, err, "iteration %d", iter)
		r, err := Compute(c, Options{})
		require.NoError(t, err, "iteration %d", iter)
		checkPlan(t, c, Options{Rates: rates}, p)

		// Without the pass, the rates change nothing but the figures.
		for i := range q.Final.Partitions {
			require.Equal(t, r.Final.Partitions[i].Replicas, q.Final.Partitions[i].Replicas, "iteration %d: %s", iter, q.Final.Partitions[i].Key())
		}
		assert.Nil(t, r.Summary.Failover.Broker.After.Load, "iteration %d: a figure by rates without rates", iter)
		// Same moves, leaders and steady-state balance as without rates.
		assert.Equal(t, r.Summary.ReplicasMoved, p.Summary.ReplicasMoved, "iteration %d: moves", iter)
		assert.Equal(t, r.Summary.After, p.Summary.After, "iteration %d: steady-state balance", iter)
		for i := range p.Final.Partitions {
			require.Equal(t, r.Final.Partitions[i].Leader, p.Final.Partitions[i].Leader, "iteration %d: leader of %s", iter, p.Final.Partitions[i].Key())
		}
		rated, _ := bfWeighted(p.Final, weight, false)
		counted, _ := bfWeighted(r.Final, weight, false)
		assert.LessOrEqual(t, rated, counted*(1+1e-9), "iteration %d", iter)
		if racks > 0 {
			assert.LessOrEqual(t, rackBusiest(p.Final, weight), rackBusiest(r.Final, weight)*(1+1e-9), "iteration %d: a rack loss busier", iter)
		}
		if rated < counted*(1-1e-9) {
			better++
		}
		sumRated, sumCounted = sumRated+rated, sumCounted+counted

		// The summary's figure is the independent election's, in the
		// rates' unit, and the counted figures stay beside it.
		fo := p.Summary.Failover
		require.NotNil(t, fo.Broker.After.Load, "iteration %d", iter)
		assert.Equal(t, "given", fo.Rates)
		assert.False(t, fo.RatesBytesPerSecond)
		assert.InDelta(t, rated, fo.Broker.After.Load.BusiestLoad, 1e-3, "iteration %d", iter)
		assert.Equal(t, q.Summary.Failover.Broker.After.Load.Bound, fo.Broker.After.Load.Bound, "iteration %d: the bound depends on the leaders only", iter)
	}
	t.Logf("rates lower the worst weighted loss in %d of %d plans; busiest survivor all together %.4f of the plan without rates", better, iters, sumRated/sumCounted)
	assert.GreaterOrEqual(t, better, iters/2)
}

// TestRatesNotes: a plan with rates says its order is weighted by them,
// once, in place of the counted note, and a plan whose partitions offer
// no choice says the rates only measure it.
func TestRatesNotes(t *testing.T) {
	c, rates, _ := hotLayout(rand.New(rand.NewPCG(20, 25)), 8, 0, 10)
	p, err := Compute(c, Options{Rates: rates})
	require.NoError(t, err)
	n := 0
	for _, s := range p.Summary.Notes {
		assert.NotContains(t, s, "reads no rates")
		assert.NotContains(t, s, "produce + consume")
		if strings.Contains(s, "weighted by --rates (relative weights") {
			n++
		}
	}
	assert.Equal(t, 1, n, "%q", p.Summary.Notes)

	rf2 := &topology.Cluster{Brokers: []topology.Broker{{ID: 1}, {ID: 2}, {ID: 3}}}
	for i := range 6 {
		rf2.Partitions = append(rf2.Partitions, topology.Partition{Topic: "t", Partition: int32(i), Replicas: []int32{int32(i%3 + 1), int32((i+1)%3 + 1)}, Leader: int32(i%3 + 1)})
	}
	rf2.Normalize()
	p, err = Compute(rf2, Options{Rates: &audit.Rates{ByTopic: map[string]float64{"t": 1e6}, BytesPerSecond: true}})
	require.NoError(t, err)
	assert.Contains(t, strings.Join(p.Summary.Notes, "\n"), "--rates changed no follower order")
	assert.True(t, p.Summary.Failover.RatesBytesPerSecond)
	require.NotNil(t, p.Summary.Failover.Broker.After.Load)
}
