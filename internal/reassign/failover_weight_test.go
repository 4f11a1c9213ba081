package reassign

import (
	"maps"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/topology"
)

// bfWeighted is, for c's replica sets and leaders, independently of the
// planner: the busiest survivor's load over every single-broker loss with
// c's own order (Kafka's election: the first other replica), and the least
// any order of the same sets reaches (when exhaustive), by enumerating every first follower
// of every partition the lost broker leads (rows are independent: a
// partition's first follower matters only when its leader is lost).
func bfWeighted(c *topology.Cluster, weight func(p topology.Partition) float64, exhaustive bool) (plan, opt float64) {
	for _, lost := range c.Brokers {
		own := map[int32]float64{}
		var mine []topology.Partition
		for _, b := range c.Brokers {
			if b.ID != lost.ID {
				own[b.ID] = 0
			}
		}
		for _, p := range c.Partitions {
			if p.Leader == lost.ID {
				mine = append(mine, p)
			} else {
				own[p.Leader] += weight(p)
			}
		}
		busiest := func(first []int32) float64 {
			load := maps.Clone(own)
			for k, p := range mine {
				load[first[k]] += weight(p)
			}
			m := 0.0
			for _, v := range load {
				m = max(m, v)
			}
			return m
		}
		first := make([]int32, len(mine))
		for k, p := range mine {
			for _, r := range p.Replicas {
				if r != lost.ID {
					first[k] = r
					break
				}
			}
		}
		plan = max(plan, busiest(first))
		if !exhaustive {
			continue
		}
		best := math.Inf(1)
		var walk func(k int)
		walk = func(k int) {
			if k == len(mine) {
				best = min(best, busiest(first))
				return
			}
			for _, r := range mine[k].Replicas {
				if r != lost.ID {
					first[k] = r
					walk(k + 1)
				}
			}
		}
		walk(0)
		opt = max(opt, best)
	}
	return plan, opt
}

// TestWeightedFailoverAgainstBruteForce: on small layouts (4-6 brokers,
// RF 3, no racks, lognormal loads), the load plan's follower order leaves
// the busiest survivor of the worst single-broker loss near the least any
// order of its replica sets allows (brute force), the summary's figure
// equals an independent election, and its bound is below every order's.
func TestWeightedFailoverAgainstBruteForce(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(20, 22))
	const iters = 150
	optimal := 0
	var sumPlan, sumOpt, worst float64
	for iter := range iters {
		n := 4 + rng.IntN(3)
		c := &topology.Cluster{}
		for b := range n {
			c.Brokers = append(c.Brokers, topology.Broker{ID: int32(b + 1)})
		}
		for p := range 6 + rng.IntN(9) {
			perm := rng.Perm(n)[:3]
			reps := make([]int32, 3)
			for j, b := range perm {
				reps[j] = int32(b + 1)
			}
			c.Partitions = append(c.Partitions, topology.Partition{Topic: "t" + string(rune('a'+p%2)), Partition: int32(p), Replicas: reps, Leader: reps[0], SizeBytes: 1000})
		}
		c.Normalize()
		loads := randomLoads(rng, c, 1)
		weight := func(p topology.Partition) float64 { l := loads[p.Key()]; return l.Produce + l.Consume }
		p, err := Compute(c, Options{Balance: BalanceLoad, Tolerance: 0.2, Loads: loads})
		require.NoError(t, err, "iteration %d", iter)
		plan, opt := bfWeighted(p.Final, weight, true)
		fo := p.Summary.Failover
		require.NotNil(t, fo.Broker.After.Load, "iteration %d", iter)
		got := fo.Broker.After.Load
		assert.InDelta(t, plan, got.BusiestLoad, 1e-3+1e-9*plan, "iteration %d: the summary's figure", iter)
		assert.LessOrEqual(t, got.Bound, opt*(1+1e-9), "iteration %d: the bound is above an order's figure", iter)
		require.GreaterOrEqual(t, plan, opt*(1-1e-9), "iteration %d", iter)
		big := 0.0
		for _, q := range p.Final.Partitions {
			big = max(big, weight(q))
		}
		assert.LessOrEqual(t, plan, opt+big, "iteration %d: more than one partition above the optimum", iter)
		sumPlan, sumOpt = sumPlan+plan, sumOpt+opt
		worst = max(worst, plan/opt)
		if plan <= opt*(1+1e-9) {
			optimal++
		}
	}
	t.Logf("at the optimum %d of %d; busiest over the optimum: worst %.3f, all together %.4f", optimal, iters, worst, sumPlan/sumOpt)
	assert.GreaterOrEqual(t, optimal, iters*9/10, "at the optimum")
	assert.LessOrEqual(t, sumPlan/sumOpt, 1.01, "all together")
}

// TestWeightedFailoverNeverWorse: the weighted pass never leaves the worst
// single-broker loss busier, by load, than the counted order of the same
// plan (the phase run with the pass switched off), with and without racks.
// Not parallel: it flips skipWeightedFailover.
func TestWeightedFailoverNeverWorse(t *testing.T) {
	rng := rand.New(rand.NewPCG(20, 23))
	better := 0
	for iter := range 20 / raceScale {
		c := generate(rng, layout{brokers: 6 + rng.IntN(4), racks: []int{0, 3}[rng.IntN(2)], topics: 3, minParts: 4, maxParts: 10, rf: 3, skew: 0.5})
		for i := range c.Partitions {
			c.Partitions[i].SizeBytes = 1 + rng.Int64N(1<<20)
		}
		loads := randomLoads(rng, c, 1.5)
		weight := func(p topology.Partition) float64 { l := loads[p.Key()]; return l.Produce + l.Consume }
		opts := Options{Balance: BalanceLoad, Tolerance: 0.2, Loads: loads}
		p, err := Compute(c, opts)
		require.NoError(t, err, "iteration %d", iter)
		skipWeightedFailover = true
		q, err := Compute(c, opts)
		skipWeightedFailover = false
		require.NoError(t, err, "iteration %d", iter)
		for i := range p.Final.Partitions {
			a, b := p.Final.Partitions[i], q.Final.Partitions[i]
			require.Equal(t, a.Leader, b.Leader, "iteration %d: the pass changes leaders", iter)
			require.ElementsMatch(t, a.Replicas, b.Replicas, "iteration %d: the pass changes sets", iter)
		}
		plan, _ := bfWeighted(p.Final, weight, false)
		counted, _ := bfWeighted(q.Final, weight, false)
		assert.LessOrEqual(t, plan, counted*(1+1e-9), "iteration %d", iter)
		assert.LessOrEqual(t, rackBusiest(p.Final, weight), rackBusiest(q.Final, weight)*(1+1e-9), "iteration %d: a rack loss busier", iter)
		if plan < counted*(1-1e-9) {
			better++
		}
		checkPlanLaws(t, c, opts, p)
	}
	t.Logf("weighted order lowers the worst loss's busiest survivor in %d of %d plans", better, 20/raceScale)
	assert.Positive(t, better)
}

// rackBusiest is the busiest survivor's load over every rack loss of c
// (0 without racks), by Kafka's election: the first replica outside the
// lost rack takes a lost leadership.
func rackBusiest(c *topology.Cluster, weight func(p topology.Partition) float64) float64 {
	rackOf := map[int32]string{}
	racks := map[string]bool{}
	for _, b := range c.Brokers {
		rackOf[b.ID] = b.Rack
		if b.Rack != "" {
			racks[b.Rack] = true
		}
	}
	worst := 0.0
	for r := range racks {
		load := map[int32]float64{}
		for _, p := range c.Partitions {
			to := p.Leader
			if rackOf[to] == r {
				to = -1
				for _, x := range p.Replicas {
					if rackOf[x] != r {
						to = x
						break
					}
				}
			}
			if to >= 0 {
				load[to] += weight(p)
			}
		}
		for _, v := range load {
			worst = max(worst, v)
		}
	}
	return worst
}
