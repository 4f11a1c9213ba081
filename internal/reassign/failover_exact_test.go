package reassign

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/audit"
	"github.com/kplan-dev/kplan/internal/topology"
)

// flowOptimum is the exact least busiest survivor over every order of c's
// replica sets, per loss of domain d (audit.FailoverLosses' order),
// computed independently of the planner and the summary: a binary search
// on the busiest survivor's leaders M, each step a maximum flow from the
// lost unit's partitions to the survivors holding their live in-sync
// followers, survivor j taking at most M minus its own leaders.
func flowOptimum(c *topology.Cluster, d audit.Domain) []int {
	unitOf := func(b topology.Broker) string {
		if d == audit.DomainRack {
			return b.Rack
		}
		return strconv.Itoa(int(b.ID))
	}
	var units []string
	for _, b := range c.Brokers {
		if !b.Missing && (d == audit.DomainBroker || b.Rack != "") && !slices.Contains(units, unitOf(b)) {
			units = append(units, unitOf(b))
		}
	}
	if d == audit.DomainRack {
		slices.Sort(units)
	}
	live := map[int32]topology.Broker{}
	for _, b := range c.Brokers {
		if !b.Missing {
			live[b.ID] = b
		}
	}
	inUnit := func(id int32, u string) bool {
		b, ok := live[id]
		return ok && (d == audit.DomainBroker || b.Rack != "") && unitOf(b) == u
	}
	out := make([]int, len(units))
	for ui, u := range units {
		base := map[int32]int{}
		var survivors []int32
		for id := range live {
			if !inUnit(id, u) {
				survivors = append(survivors, id)
			}
		}
		slices.Sort(survivors)
		var parts [][]int32
		for _, p := range c.Partitions {
			if _, ok := live[p.Leader]; !ok {
				continue
			}
			if !inUnit(p.Leader, u) {
				base[p.Leader]++
				continue
			}
			var cand []int32
			for _, r := range p.Replicas {
				if _, ok := live[r]; ok && !inUnit(r, u) && p.InSync(r) && !slices.Contains(p.Offline, r) {
					cand = append(cand, r)
				}
			}
			if len(cand) > 0 {
				parts = append(parts, cand)
			}
		}
		if len(survivors) == 0 {
			continue
		}
		lo := 0
		for _, j := range survivors {
			lo = max(lo, base[j])
		}
		hi := lo + len(parts)
		for lo < hi {
			m := (lo + hi) / 2
			if maxFlow(parts, survivors, base, m) == len(parts) {
				hi = m
			} else {
				lo = m + 1
			}
		}
		out[ui] = lo
	}
	return out
}

// maxFlow is the most partitions assignable to their candidates with
// survivor j taking at most m - base[j] (Ford-Fulkerson, depth-first
// augmenting paths).
func maxFlow(parts [][]int32, survivors []int32, base map[int32]int, m int) int {
	capLeft := map[int32]int{}
	for _, j := range survivors {
		capLeft[j] = m - base[j]
	}
	holders := map[int32][]int{} // survivor -> partitions assigned
	at := make([]int32, len(parts))
	for i := range at {
		at[i] = -1
	}
	var try func(i int, seen map[int32]bool) bool
	try = func(i int, seen map[int32]bool) bool {
		for _, j := range parts[i] {
			if seen[j] {
				continue
			}
			seen[j] = true
			if capLeft[j] > 0 {
				capLeft[j]--
				at[i] = j
				holders[j] = append(holders[j], i)
				return true
			}
			for k, q := range holders[j] {
				if try(q, seen) {
					// q moved elsewhere: i takes its place on j.
					holders[j][k] = i
					at[i] = j
					return true
				}
			}
		}
		return false
	}
	flow := 0
	for i := range parts {
		if try(i, map[int32]bool{}) {
			flow++
		}
	}
	return flow
}

// TestReachableIsExact: the summary's reachable figure equals the flow's
// exact optimum for every loss of both domains, on random layouts with
// brokers down.
func TestReachableIsExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(20, 9))
	for iter := range 300 {
		c, _ := randomFailoverLayout(rng)
		if rng.IntN(4) == 0 {
			c.Brokers[rng.IntN(len(c.Brokers))].Missing = true
		}
		for _, d := range []audit.Domain{audit.DomainBroker, audit.DomainRack} {
			want := flowOptimum(c, d)
			got := reachable(c, d)
			losses := audit.FailoverLosses(c, d)
			require.Len(t, got, len(want), "iteration %d, domain %s", iter, d)
			for u := range want {
				if losses[u].Survivors == 0 {
					continue
				}
				require.Equal(t, want[u], max(got[u], losses[u].Optimum), "iteration %d, domain %s, loss %v", iter, d, losses[u].Lost)
				require.GreaterOrEqual(t, losses[u].BusiestLeaders, want[u])
			}
		}
	}
}

// TestPlanReachesExactOptimum: the plan's follower order leaves every
// single-broker loss at most one leader above the exact optimum of its
// replica sets (the flow's), on random layouts; and on the generated
// 10k-partition, 3-rack, RF-3 layout every loss at it.
func TestPlanReachesExactOptimum(t *testing.T) {
	rng := rand.New(rand.NewPCG(20, 11))
	exact, total := 0, 0
	for iter := range 200 {
		c, _ := randomFailoverLayout(rng)
		p, err := Compute(c, Options{})
		require.NoError(t, err)
		want := flowOptimum(p.Final, audit.DomainBroker)
		for u, l := range audit.FailoverLosses(p.Final, audit.DomainBroker) {
			require.LessOrEqual(t, l.BusiestLeaders, max(want[u], l.Optimum)+1, "iteration %d, loss %v", iter, l.Lost)
			total++
			if l.BusiestLeaders <= max(want[u], l.Optimum) {
				exact++
			}
		}
	}
	t.Logf("%d of %d losses at the exact optimum", exact, total)

	c := generate(rand.New(rand.NewPCG(10, 10)), layout{brokers: 30, firstID: 1, racks: 3, topics: 100, minParts: 50, maxParts: 150, rf: 3, skew: 0.3})
	p, err := Compute(c, Options{})
	require.NoError(t, err)
	want := flowOptimum(p.Final, audit.DomainBroker)
	for u, l := range audit.FailoverLosses(p.Final, audit.DomainBroker) {
		assert.LessOrEqual(t, l.BusiestLeaders, max(want[u], l.Optimum), "loss %v", l.Lost)
	}
	b := p.Summary.Failover.Broker.After
	assert.Equal(t, want[slices.IndexFunc(p.Final.Brokers, func(x topology.Broker) bool { return x.ID == b.Lost[0] })], b.Reachable)
}
