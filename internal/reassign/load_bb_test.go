package reassign

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/topology"
)

// bbLoad is a branch and bound over every partition's replica set and
// leader (no racks, no cordons): the least bytes copied (CopyBytes per new
// replica) that puts every broker within the three bands of the load plan
// (bytes in, bytes out, leader bytes; inBand's slack). It returns -1 when
// no placement is within them, and ok false when it gave up after maxNodes
// nodes. ub >= 0 is a known placement's cost: only cheaper ones are
// searched. Bytes in counts undecided partitions where they are, so a
// broker above its band must shed the excess, each byte/s shed or taken
// costing at least the least copy bytes per produce byte/s left; bytes out
// and leader bytes count decided partitions only.
func bbLoad(c *topology.Cluster, loads map[topology.Key]Load, tol float64, ub int64, maxNodes int) (int64, bool) {
	cost, ok, _ := bbLoadPlace(c, loads, tol, ub, maxNodes)
	return cost, ok
}

// bbLoadPlace is bbLoad that also returns the optimum placement: each
// partition's replicas (broker ids, leader first), nil when none was found
// below ub.
func bbLoadPlace(c *topology.Cluster, loads map[topology.Key]Load, tol float64, ub int64, maxNodes int) (int64, bool, [][]int32) {
	n := len(c.Brokers)
	idx := map[int32]int{}
	for b, br := range c.Brokers {
		idx[br.ID] = b
	}
	type part struct {
		p, o, cost float64 // produce, bytes out as leader, copy bytes
		orig       []int
		opts       [][]int // leader first
		optCost    []int64
	}
	parts := make([]part, len(c.Partitions))
	var totIn, totOut, totLd float64
	for i := range c.Partitions {
		q := &c.Partitions[i]
		l := loads[q.Key()]
		rf := len(q.Replicas)
		pt := part{p: l.Produce, o: l.Consume + float64(rf-1)*l.Produce, cost: float64(q.CopyBytes())}
		for _, r := range q.Replicas {
			pt.orig = append(pt.orig, idx[r])
		}
		totIn += float64(rf) * pt.p
		totOut += pt.o
		totLd += pt.p
		subsets(n, rf, func(cur []int) {
			var k int64
			for _, b := range cur {
				if !slices.Contains(pt.orig, b) {
					k++
				}
			}
			for li := range cur {
				set := append([]int{cur[li]}, slices.Delete(slices.Clone(cur), li, li+1)...)
				pt.opts = append(pt.opts, set)
				pt.optCost = append(pt.optCost, k*q.CopyBytes())
			}
		})
		pt.opts, pt.optCost = byCost(pt.opts, pt.optCost)
		parts[i] = pt
	}
	k := float64(n)
	mIn, mOut, mLd := totIn/k, totOut/k, totLd/k
	slack := func(m float64) float64 { return 1e-6*m + 1e-3 }
	hiIn, loIn := mIn*(1+tol)+slack(mIn), mIn*(1-tol)-slack(mIn)
	hiOut, loOut := mOut*(1+tol)+slack(mOut), mOut*(1-tol)-slack(mOut)
	hiLd, loLd := mLd*(1+tol)+slack(mLd), mLd*(1-tol)-slack(mLd)
	order := make([]int, len(parts))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return parts[order[a]].p+parts[order[a]].o > parts[order[b]].p+parts[order[b]].o })
	in, out, ld := make([]float64, n), make([]float64, n), make([]float64, n)
	undOn := make([]float64, n) // undecided produce on b (bytes in)
	var undP, undO float64      // undecided produce, bytes out
	for i := range parts {
		for _, b := range parts[i].orig {
			in[b] += parts[i].p
			undOn[b] += parts[i].p
		}
		undP += parts[i].p
		undO += parts[i].o
	}
	minRatio := suffixMinRatio(len(order), func(k int) (float64, float64) { return parts[order[k]].cost, parts[order[k]].p })
	at := func(k int) *part { return &parts[order[k]] }
	chosen := make([]int, len(order))
	var place [][]int32
	cost, ok := bbSearch(bbSpec{
		levels: len(order),
		cost:   func(k int) []int64 { return at(k).optCost },
		open: func(k int) {
			p := at(k)
			for _, b := range p.orig {
				in[b] -= p.p
				undOn[b] -= p.p
			}
			undP -= p.p
			undO -= p.o
		},
		shut: func(k int) {
			p := at(k)
			for _, b := range p.orig {
				in[b] += p.p
				undOn[b] += p.p
			}
			undP += p.p
			undO += p.o
		},
		take: func(k, j int) {
			p, set := at(k), at(k).opts[j]
			chosen[k] = j
			for _, b := range set {
				in[b] += p.p
			}
			out[set[0]] += p.o
			ld[set[0]] += p.p
		},
		drop: func(k, j int) {
			p, set := at(k), at(k).opts[j]
			for _, b := range set {
				in[b] -= p.p
			}
			out[set[0]] -= p.o
			ld[set[0]] -= p.p
		},
		gap: func(k int) (bool, float64, float64) {
			var over, under float64
			for b := range n {
				if e := in[b] - hiIn; e > 0 {
					if e > undOn[b] {
						return true, 0, 0
					}
					over += e
				}
				if d := loIn - in[b]; d > 0 {
					if d > undP-undOn[b] {
						return true, 0, 0
					}
					under += d
				}
				if out[b] > hiOut || ld[b] > hiLd || loOut-out[b] > undO || loLd-ld[b] > undP {
					return true, 0, 0
				}
			}
			return false, max(over, under), minRatio[k]
		},
		found: func() {
			place = make([][]int32, len(parts))
			for k, i := range order {
				for _, b := range parts[i].opts[chosen[k]] {
					place[i] = append(place[i], c.Brokers[b].ID)
				}
			}
		},
	}, ub, maxNodes)
	return cost, ok, place
}

// TestLoadNearOptimum (issue 22): on random small layouts (3-8 brokers,
// 6-30 partitions, RF 1-3, lognormal sizes and loads, no racks or
// cordons), measured against bbLoad's optimum for the same tolerance: the
// load plan reaches the bands whenever the branch and bound says a
// placement does, and copies at most 10% more bytes than it. The first
// set is the one issue 22's figure was first measured on; the second,
// from another seed, keeps the claim from being fit to it.
func TestLoadNearOptimum(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		seeds []uint64
		n     int // layouts per seed
		// within10 is the share in percent of the layouts within reach
		// whose plan reaches the bands copying within 10% of the optimum
		// the test holds, missed how many of them may end outside the
		// bands.
		within10, missed int
	}{
		// Issue 22's target: every one (16 of 16 within reach).
		{"issue-22", []uint64{2027}, 60, 100, 0},
		// Two more seeds, measured at this commit: 38 of 200 layouts
		// within reach, 37 of them reached copying within 10% (worst
		// 1.099x); one (seed 2029, layout 83: 4 brokers, 11 partitions,
		// RF 2, a 10% band) stays outside the bands, as it did before
		// prune (which starts only within them). The test holds that.
		{"more", []uint64{2028, 2029}, 100, 97, 1},
	} {
		if tc.within10 < 100 && raceScale > 1 {
			// Under -race (make test's unit run) the second set would
			// check nothing its share depends on and cost 50 s of
			// branch and bound: it runs without -race only.
			continue
		}
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// Under -race the first set runs a third of its layouts, each
			// still within 10%.
			n, share, missedMax := tc.n/raceScale, tc.within10, tc.missed
			solved, feasible, missed, within10, worst := 0, 0, 0, 0, 1.0
			for _, seed := range tc.seeds {
				rng := rand.New(rand.NewPCG(22, seed))
				for k := range n {
					in := randomSized(rng, 30)
					for i := range in.c.Brokers {
						in.c.Brokers[i].Rack = ""
					}
					loads := randomLoads(rng, in.c, 1)
					pl, err := Compute(in.c, Options{Balance: BalanceLoad, Tolerance: in.tol, Loads: loads})
					require.NoError(t, err, "seed %d instance %d", seed, k)
					lb := pl.Summary.Load
					ub := int64(-1)
					if lb.Within {
						ub = lb.BytesMoved
					}
					opt, ok, place := bbLoadPlace(in.c, loads, in.tol, ub, 2_000_000)
					if !ok {
						continue
					}
					solved++
					if opt < 0 {
						assert.False(t, lb.Within, "seed %d instance %d: within bands the branch and bound says are out of reach", seed, k)
						continue
					}
					feasible++
					if !lb.Within {
						missed++
						t.Logf("seed %d instance %d: the optimum %d is within the bands, the plan is not (%d brokers, %d partitions, RF %d, tol %g)", seed, k, opt, len(in.c.Brokers), len(in.c.Partitions), len(in.c.Partitions[0].Replicas), in.tol)
						continue
					}
					r := 1.0
					if opt > 0 {
						r = float64(lb.BytesMoved) / float64(opt)
					} else if lb.BytesMoved > 0 {
						r = math.Inf(1)
					}
					worst = max(worst, r)
					if r <= 1.10 {
						within10++
					} else {
						t.Logf("seed %d instance %d: %d bytes against the optimum %d (%d brokers, %d partitions, RF %d, tol %g); moves: plan %s, optimum %s", seed, k, lb.BytesMoved, opt, len(in.c.Brokers), len(in.c.Partitions), len(in.c.Partitions[0].Replicas), in.tol,
							newReplicas(in.c, func(i int) []int32 { return pl.Final.Partitions[i].Replicas }), newReplicas(in.c, func(i int) []int32 { return place[i] }))
					}
				}
			}
			total := n * len(tc.seeds)
			t.Logf("solved %d of %d (%d within reach, %d of them not reached), within 10%% of the optimum %d, worst bytes/optimum of those reached %.3f", solved, total, feasible, missed, within10, worst)
			require.GreaterOrEqual(t, solved, total*4/5, "the branch and bound gave up too often")
			require.GreaterOrEqual(t, feasible, total/8)
			assert.LessOrEqual(t, missed, missedMax, "plans outside bands the branch and bound says are within reach")
			assert.GreaterOrEqual(t, within10*100, feasible*share, "within 10%% of the optimum")
		})
	}
}

// newReplicas lists, per partition given a new replica set by reps, the
// brokers it adds and what a copy costs: "p3 +2 (1508 B)".
func newReplicas(c *topology.Cluster, reps func(i int) []int32) string {
	var out []string
	for i := range c.Partitions {
		p := &c.Partitions[i]
		for _, r := range reps(i) {
			if !slices.Contains(p.Replicas, r) {
				out = append(out, fmt.Sprintf("%s +%d (%d B)", p.Key(), r, p.CopyBytes()))
			}
		}
	}
	return strings.Join(out, ", ")
}

// TestBBLoadIsExact: the branch and bound equals bfLoad's plain
// enumeration on tiny layouts (3-4 brokers, 5-6 partitions, RF 1-2).
func TestBBLoadIsExact(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(22, 8))
	reach := 0
	for iter := range 80 {
		c, loads, tol := tinyLoaded(rng)
		want := bfLoad(c, loads, tol)
		got, ok := bbLoad(c, loads, tol, -1, 50_000_000)
		require.True(t, ok, "iteration %d", iter)
		require.Equal(t, want, got, "iteration %d", iter)
		if want >= 0 {
			reach++
		}
	}
	assert.Positive(t, reach)
}
