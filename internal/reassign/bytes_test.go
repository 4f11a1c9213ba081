package reassign

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/topology"
)

// bfInstance is a small layout for the brute force.
type bfInstance struct {
	c      *topology.Cluster
	tol    float64
	cordon []int32
}

// randomSized builds a random small layout: 3-8 brokers, optionally in 2-3
// racks, 6-30 partitions of one replication factor (1-3), placed at random
// with replicas in distinct racks where racks allow, sizes lognormal.
func randomSized(rng *rand.Rand, maxParts int) bfInstance {
	n := 3 + rng.IntN(6)
	racks := 0
	if rng.IntN(2) == 0 {
		racks = 2 + rng.IntN(2)
	}
	rf := 1 + rng.IntN(min(3, n))
	np := 6 + rng.IntN(maxParts-5)
	c := &topology.Cluster{}
	for b := range n {
		br := topology.Broker{ID: int32(b + 1)}
		if racks > 0 {
			br.Rack = fmt.Sprintf("r%d", b%racks)
		}
		c.Brokers = append(c.Brokers, br)
	}
	sizes := make([]int, max(racks, 1))
	for b := range n {
		sizes[b%max(racks, 1)]++
	}
	rc := rf
	if racks > 0 {
		rc = rackCap(sizes, rf)
	}
	for p := range np {
		var reps []int32
		for len(reps) < rf {
			b := int32(1 + rng.IntN(n))
			if slices.Contains(reps, b) {
				continue
			}
			if racks > 0 {
				k := 0
				for _, r := range reps {
					if (r-1)%int32(racks) == (b-1)%int32(racks) {
						k++
					}
				}
				if k >= rc {
					continue
				}
			}
			reps = append(reps, b)
		}
		size := int64(math.Exp(rng.NormFloat64())*1000) + 1
		c.Partitions = append(c.Partitions, topology.Partition{Topic: fmt.Sprintf("t%d", p%3), Partition: int32(p), Replicas: reps, Leader: reps[0], SizeBytes: size})
	}
	c.Normalize()
	in := bfInstance{c: c, tol: []float64{0.1, 0.15, 0.2}[rng.IntN(3)]}
	if rng.IntN(3) == 0 {
		in.cordon = []int32{int32(1 + rng.IntN(n))}
	}
	return in
}

// bfOptimum is a branch and bound over every partition's replica set: the
// least bytes copied (CopyBytes per new replica) that puts every broker's
// disk within the band (cordoned brokers only below its top), with
// replicas in distinct racks as far as racks allow and no new replica on
// a cordoned broker. It returns -1 when no placement is within the band,
// and ok false when it gave up after maxNodes nodes.
func bfOptimum(in bfInstance, ub int64, maxNodes int) (int64, bool) {
	c := in.c
	n := len(c.Brokers)
	idx := map[int32]int{}
	rackOf := make([]int, n)
	rackIx := map[string]int{}
	for b, br := range c.Brokers {
		idx[br.ID] = b
		if _, ok := rackIx[br.Rack]; !ok {
			rackIx[br.Rack] = len(rackIx)
		}
		rackOf[b] = rackIx[br.Rack]
	}
	rackSizes := make([]int, len(rackIx))
	for b := range n {
		rackSizes[rackOf[b]]++
	}
	cord := make([]bool, n)
	for _, id := range in.cordon {
		cord[idx[id]] = true
	}
	type part struct {
		size, cost int64
		orig       []int
		opts       [][]int
		optCost    []int64
	}
	var total int64
	parts := make([]part, len(c.Partitions))
	for i := range c.Partitions {
		p := &c.Partitions[i]
		pt := part{size: p.SizeBytes, cost: p.CopyBytes()}
		for _, r := range p.Replicas {
			pt.orig = append(pt.orig, idx[r])
		}
		rf := len(p.Replicas)
		total += pt.size * int64(rf)
		rc := rf
		if c.HasRacks() {
			rc = rackCap(rackSizes, rf)
		}
		subsets(n, rf, func(cur []int) {
			perRack := map[int]int{}
			var k int64
			for _, b := range cur {
				perRack[rackOf[b]]++
				if perRack[rackOf[b]] > rc {
					return
				}
				if !slices.Contains(pt.orig, b) {
					if cord[b] {
						return
					}
					k++
				}
			}
			pt.opts = append(pt.opts, slices.Clone(cur))
			pt.optCost = append(pt.optCost, k*pt.cost)
		})
		pt.opts, pt.optCost = byCost(pt.opts, pt.optCost)
		parts[i] = pt
	}
	mean := float64(total) / float64(n)
	lo, hi := mean*(1-in.tol), mean*(1+in.tol)
	// Largest first: the big decisions prune most.
	order := make([]int, len(parts))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return parts[order[a]].size > parts[order[b]].size })
	// disk counts decided partitions at their choice and undecided ones
	// where they are; undecidedOn[b] the undecided bytes on b.
	disk := make([]int64, n)
	undecidedOn := make([]int64, n)
	var undecided int64
	for i := range parts {
		for _, b := range parts[i].orig {
			disk[b] += parts[i].size
			undecidedOn[b] += parts[i].size
		}
		undecided += parts[i].size
	}
	// minRatio[k]: the least cost per byte among partitions order[k:].
	minRatio := suffixMinRatio(len(order), func(k int) (float64, float64) {
		return float64(parts[order[k]].cost), float64(parts[order[k]].size)
	})
	return bbSearch(bbSpec{
		levels: len(order),
		cost:   func(k int) []int64 { return parts[order[k]].optCost },
		open: func(k int) {
			p := &parts[order[k]]
			for _, b := range p.orig {
				disk[b] -= p.size
				undecidedOn[b] -= p.size
			}
			undecided -= p.size
		},
		shut: func(k int) {
			p := &parts[order[k]]
			for _, b := range p.orig {
				disk[b] += p.size
				undecidedOn[b] += p.size
			}
			undecided += p.size
		},
		take: func(k, j int) {
			p := &parts[order[k]]
			for _, b := range p.opts[j] {
				disk[b] += p.size
			}
		},
		drop: func(k, j int) {
			p := &parts[order[k]]
			for _, b := range p.opts[j] {
				disk[b] -= p.size
			}
		},
		gap: func(k int) (bool, float64, float64) {
			var over, under float64
			for b := range n {
				x := float64(disk[b])
				if e := x - hi; e > 0 {
					if e > float64(undecidedOn[b]) {
						return true, 0, 0 // cannot shed enough
					}
					over += e
				}
				if d := lo - x; d > 0 && !cord[b] {
					if d > float64(undecided-undecidedOn[b]) {
						return true, 0, 0
					}
					under += d
				}
			}
			return false, max(over, under), minRatio[k]
		},
	}, ub, maxNodes)
}

// planBytes recounts a plan independently: bytes copied (CopyBytes per
// replica on a broker that did not hold the partition), disk per broker,
// and whether every broker is within the band.
func planBytes(t *testing.T, in bfInstance, pl *Plan) (int64, bool) {
	t.Helper()
	c := in.c
	disk := map[int32]int64{}
	var copied, total int64
	for i, q := range pl.Final.Partitions {
		p := c.Partitions[i]
		require.Equal(t, p.Key(), q.Key())
		require.Len(t, q.Replicas, len(p.Replicas), "replication factor of %s", p.Key())
		for _, r := range q.Replicas {
			disk[r] += p.SizeBytes
			total += p.SizeBytes
			if !slices.Contains(p.Replicas, r) {
				copied += p.CopyBytes()
				assert.NotContains(t, in.cordon, r, "cordoned broker %d receives %s", r, p.Key())
			}
		}
		if c.HasRacks() {
			assert.Zero(t, rackViolations([]topology.Partition{q}, c.Brokers, func(id int32) string { b, _ := c.Broker(id); return b.Rack }),
				"rack rule broken by %s %v", q.Key(), q.Replicas)
		}
	}
	mean := float64(total) / float64(len(c.Brokers))
	within := true
	for _, b := range c.Brokers {
		x := float64(disk[b.ID])
		if x > mean*(1+in.tol) || x < mean*(1-in.tol) && !slices.Contains(in.cordon, b.ID) {
			within = false
		}
	}
	return copied, within
}

// TestBytesNearOptimum: on random small layouts (up to 8 brokers, 30
// partitions, RF 1-3, racks, cordons, heavy-tailed sizes), the bytes plan
// copies at most 10% more than the branch-and-bound optimum for the same
// tolerance, reaches the band whenever any placement does, never breaks a
// rack rule and never puts a new replica on a cordoned broker.
func TestBytesNearOptimum(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(22, 2026))
	solved, feasible, worst := 0, 0, 1.0
	for k := 0; k < 150/raceScale; k++ {
		in := randomSized(rng, 30)
		pl, err := Compute(in.c, Options{Balance: BalanceBytes, Tolerance: in.tol, Cordon: in.cordon})
		require.NoError(t, err, "instance %d", k)
		require.NoError(t, Check(in.c, pl, Options{Cordon: in.cordon}))
		copied, within := planBytes(t, in, pl)
		require.Equal(t, copied, pl.Summary.Bytes.BytesMoved, "instance %d: bytes moved as recounted", k)
		require.Equal(t, within, pl.Summary.Bytes.Within, "instance %d: within as recounted", k)
		ub := int64(-1)
		if within {
			ub = copied
		}
		opt, ok := bfOptimum(in, ub, 3_000_000)
		if !ok {
			continue
		}
		solved++
		if opt < 0 {
			continue // no placement is within the band
		}
		feasible++
		require.True(t, within, "instance %d: the optimum %d is within the band, the plan is not (%d brokers, %d partitions, tol %g, cordon %v)",
			k, opt, len(in.c.Brokers), len(in.c.Partitions), in.tol, in.cordon)
		if opt == 0 {
			assert.Zero(t, copied, "instance %d: already within the band", k)
			continue
		}
		r := float64(copied) / float64(opt)
		worst = max(worst, r)
		assert.LessOrEqual(t, r, 1.10, "instance %d: %d bytes against the optimum %d (%d brokers, %d partitions, tol %g)",
			k, copied, opt, len(in.c.Brokers), len(in.c.Partitions), in.tol)
	}
	n := 150 / raceScale
	t.Logf("solved %d of %d (%d within reach), worst bytes/optimum %.3f", solved, n, feasible, worst)
	require.GreaterOrEqual(t, solved, n*4/5, "the brute force gave up too often")
	require.GreaterOrEqual(t, feasible, n*2/5)
}

// A tiered partition whose remote bytes need no copy: tiered-4's broker 1
// sheds its 100 GiB tiered partition (5 GiB local) rather than 100 GiB of
// others; without local_bytes the same layout copies 100 GiB.
func TestBytesPrefersTiered(t *testing.T) {
	c := load(t, "../../testdata/layouts/tiered-4.json")
	pl, err := Compute(c, Options{Balance: BalanceBytes, Tolerance: 0.05})
	require.NoError(t, err)
	require.Len(t, pl.Changes, 1)
	assert.Equal(t, topology.Key{Topic: "logs", Partition: 0}, pl.Changes[0].New.Key())
	assert.Equal(t, int64(5<<30), pl.Summary.Bytes.BytesMoved)
	assert.Equal(t, int64(5<<30), *pl.Summary.BytesMoved)
	assert.True(t, pl.Summary.Bytes.Within)
	assert.Zero(t, pl.Summary.Bytes.LowerBound, "no bound holds when moves cost less than they relieve")

	flat := c.Clone()
	for i := range flat.Partitions {
		flat.Partitions[i].LocalBytes = 0
	}
	pf, err := Compute(flat, Options{Balance: BalanceBytes, Tolerance: 0.05})
	require.NoError(t, err)
	assert.Equal(t, int64(100<<30), pf.Summary.Bytes.BytesMoved, "untiered, 100 GiB must leave broker 1 whichever partitions go")
	assert.Equal(t, int64(95<<30), pf.Summary.Bytes.LowerBound, "broker 1 may keep 105 GiB: 95 GiB must leave it")
}

// Unknown sizes: --balance bytes refuses with one line naming how many
// partitions lack one; the count plan still runs.
func TestBytesRefusesUnknownSizes(t *testing.T) {
	c := load(t, "../../testdata/layouts/sized-6.json")
	c.Partitions[3].SizeBytes = -1
	c.Partitions[7].SizeBytes = -1
	_, err := Compute(c, Options{Balance: BalanceBytes, Tolerance: 0.05})
	var te *TargetError
	require.ErrorAs(t, err, &te)
	assert.Equal(t, "balance", te.Field)
	assert.Equal(t, "bytes needs every partition's size: 2 of 36 partitions have none (size_bytes in the layout, or a live cluster's DescribeLogDirs)", te.Msg)
	_, err = Compute(c, Options{Tolerance: 0.05})
	assert.NoError(t, err)
}

func TestBytesOptionErrors(t *testing.T) {
	c := load(t, "../../testdata/layouts/sized-6.json")
	bytes := Options{Balance: BalanceBytes, Tolerance: 0.05}
	with := func(f func(*Options)) Options { o := bytes; f(&o); return o }
	for _, tc := range []struct {
		name  string
		opts  Options
		field string
	}{
		{"unknown objective", Options{Balance: "cpu"}, "balance"},
		{"cordon with failover moves", Options{Cordon: []int32{1}, FailoverMoves: FailoverMovesAuto}, "failover-moves"},
		{"budget with replicas", Options{MaxMoveBytes: 1}, "max-move-bytes"},
		{"no band", with(func(o *Options) { o.Tolerance = 0 }), "tolerance"},
		{"negative budget", with(func(o *Options) { o.MaxMoveBytes = -1 }), "max-move-bytes"},
		{"fix overlaps", with(func(o *Options) { o.FixOverlaps = true }), "fix-overlaps"},
		{"reorder only", with(func(o *Options) { o.ReorderOnly = true }), "reorder-only"},
		{"max moves", with(func(o *Options) { o.MaxMoves = 3 }), "max-moves"},
		{"failover moves", with(func(o *Options) { o.FailoverMoves = 2 }), "failover-moves"},
		{"cordon unknown broker", with(func(o *Options) { o.Cordon = []int32{9} }), "cordon"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Compute(c, tc.opts)
			var te *TargetError
			require.ErrorAs(t, err, &te)
			assert.Equal(t, tc.field, te.Field, te.Error())
			assert.NotContains(t, te.Error(), "\n")
		})
	}
}

// With a budget the plan copies no more than it, never ends worse than it
// started, and the trade-off's steps never cost more than their budget;
// a drained broker's replicas move whatever the budget (forced), never to
// a cordoned broker.
func TestBytesBudgetAndDrain(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(5, 22))
	for k := 0; k < 60/raceScale; k++ {
		in := randomSized(rng, 30)
		full, err := Compute(in.c, Options{Balance: BalanceBytes, Tolerance: in.tol, Cordon: in.cordon})
		require.NoError(t, err)
		budget := full.Summary.Bytes.BytesMoved / 2
		if budget == 0 {
			continue
		}
		pl, err := Compute(in.c, Options{Balance: BalanceBytes, Tolerance: in.tol, Cordon: in.cordon, MaxMoveBytes: budget})
		require.NoError(t, err)
		copied, _ := planBytes(t, in, pl)
		assert.LessOrEqual(t, copied, budget, "instance %d", k)
		assert.LessOrEqual(t, pl.Summary.Bytes.After.MaxOverMean, pl.Summary.Bytes.Before.MaxOverMean, "instance %d", k)
		for _, st := range full.Summary.Bytes.TradeOff {
			assert.LessOrEqual(t, st.BytesMoved, st.Budget, "instance %d", k)
		}

		// Drain the last broker (not cordoned), if the rest can hold the
		// replication factor.
		last := in.c.Brokers[len(in.c.Brokers)-1]
		if slices.Contains(in.cordon, last.ID) || len(in.c.Brokers)-1-len(in.cordon) < len(in.c.Partitions[0].Replicas) {
			continue
		}
		target := in.c.Brokers[:len(in.c.Brokers)-1]
		dr, err := Compute(in.c, Options{Balance: BalanceBytes, Tolerance: in.tol, Cordon: in.cordon, Brokers: target, MaxMoveBytes: 1})
		if err != nil {
			var te *TargetError
			require.ErrorAs(t, err, &te, "instance %d", k)
			continue // racks or cordons leave no room
		}
		var onLast int64
		for _, p := range in.c.Partitions {
			if slices.Contains(p.Replicas, last.ID) {
				onLast += p.CopyBytes()
			}
		}
		assert.Equal(t, onLast, dr.Summary.Bytes.ForcedBytes, "instance %d", k)
		for _, p := range dr.Final.Partitions {
			assert.NotContains(t, p.Replicas, last.ID)
		}
		require.NoError(t, Check(in.c, dr, Options{Brokers: target, Cordon: in.cordon}))
	}
}

// The same input gives the same plan.
func TestBytesDeterministic(t *testing.T) {
	c := load(t, "../../testdata/layouts/sized-6.json")
	a, err := Compute(c, Options{Balance: BalanceBytes, Tolerance: 0.05})
	require.NoError(t, err)
	b, err := Compute(c, Options{Balance: BalanceBytes, Tolerance: 0.05})
	require.NoError(t, err)
	assert.Equal(t, a.New(), b.New())
	assert.Equal(t, a.Summary, b.Summary)
}

// byCost sorts the options of a branch and bound by cost, cheapest first
// (stable: equal costs keep their order).
func byCost(opts [][]int, cost []int64) ([][]int, []int64) {
	order := make([]int, len(opts))
	for j := range order {
		order[j] = j
	}
	sort.SliceStable(order, func(a, b int) bool { return cost[order[a]] < cost[order[b]] })
	o2, c2 := make([][]int, len(order)), make([]int64, len(order))
	for j, k := range order {
		o2[j], c2[j] = opts[k], cost[k]
	}
	return o2, c2
}
