package reassign

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/topology"
)

// racksOf counts the distinct racks of each partition's replicas.
func racksOf(c *topology.Cluster, p topology.Partition) int {
	seen := map[string]bool{}
	for _, r := range p.Replicas {
		b, _ := c.Broker(r)
		seen[b.Rack] = true
	}
	return len(seen)
}

// Fewer racks than replicas used to exit with "N racks cannot hold
// replication factor R" (blaming --brokers even when not given). Now the
// plan spreads replicas over racks as far as they allow: every partition
// spans min(replicas, racks) racks, and counts are balanced.
func TestFewerRacksThanReplicas(t *testing.T) {
	for _, tc := range []struct {
		name  string
		racks int
		rf    int
	}{
		{"one rack, rf 2", 1, 2},
		{"one rack, rf 3", 1, 3},
		{"two racks, rf 3", 2, 3},
		{"three racks, rf 3", 3, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := generate(rand.New(rand.NewPCG(7, uint64(tc.racks))), layout{brokers: 6, firstID: 1, racks: tc.racks, topics: 4, minParts: 3, maxParts: 12, rf: tc.rf, skew: 1})
			p, err := Compute(c, Options{})
			require.NoError(t, err)
			checkPlan(t, c, Options{}, p)
			reps, leads := balanced(p)
			assert.True(t, reps && leads, "balanced: %+v %+v", p.Summary.After.Replicas, p.Summary.After.Leaders)
			assert.Zero(t, p.Summary.After.RackViolations)
			for _, fp := range p.Final.Partitions {
				assert.Equal(t, min(tc.rf, tc.racks), racksOf(p.Final, fp), "racks of %s", fp.Key())
			}
			assert.Nil(t, p.Summary.RackBound)
		})
	}
}

// The same on the repository's one-rack layout (the acceptance case).
func TestOneRackLayoutPlans(t *testing.T) {
	c := load(t, layouts+"one-rack.json")
	p, err := Compute(c, Options{})
	require.NoError(t, err)
	checkPlan(t, c, Options{}, p)
	assert.Contains(t, strings.Join(p.Summary.Notes, "\n"), "1 rack for replication factor 2")
}

// Two racks for replication factor 3 with a rack holding all three replicas
// of some partitions: the plan repairs them to span both racks.
func TestRepairsBeyondRackCap(t *testing.T) {
	c := &topology.Cluster{Brokers: []topology.Broker{{ID: 1, Rack: "a"}, {ID: 2, Rack: "a"}, {ID: 3, Rack: "a"}, {ID: 4, Rack: "b"}, {ID: 5, Rack: "b"}, {ID: 6, Rack: "b"}}}
	for p := range 6 {
		c.Partitions = append(c.Partitions, topology.Partition{Topic: "t", Partition: int32(p), Replicas: []int32{1, 2, 3}, Leader: 1})
	}
	c.Normalize()
	p, err := Compute(c, Options{})
	require.NoError(t, err)
	checkPlan(t, c, Options{}, p)
	assert.Equal(t, 6, p.Summary.Before.RackViolations)
	assert.Zero(t, p.Summary.After.RackViolations)
	for _, fp := range p.Final.Partitions {
		assert.Equal(t, 2, racksOf(p.Final, fp), fp.Key().String())
	}
}

// The lab's racks (a, b, c, a) with a 12-partition RF-2 topic and an
// 8-partition RF-3 topic: strict rack spreading allows 10, 10, 14, 14
// replicas per broker, not 12 each. The plan used to say nothing (notes [],
// gap 0); now it names rack a, shows the rack-aware targets and finds the
// broker changes that allow an even spread, which the planner then reaches.
func TestRackBound(t *testing.T) {
	c := load(t, layouts+"racks-4-brokers-3-racks.json")
	p, err := Compute(c, Options{})
	require.NoError(t, err)
	checkPlan(t, c, Options{}, p)
	s := p.Summary
	var after []int
	for _, b := range s.PerBroker {
		after = append(after, b.ReplicasAfter)
	}
	assert.Equal(t, []int{10, 14, 14, 10}, after)
	require.NotNil(t, s.RackBound)
	rb := s.RackBound
	require.Len(t, rb.Limits, 1)
	assert.Equal(t, RackLimit{Cell: 1, Rack: "rack-a", Brokers: []int32{1, 4}, Capacity: 20, Even: 24, CellReplicas: 48, CellBrokers: 4}, rb.Limits[0])
	targets := map[int32]int{}
	for _, bt := range rb.Targets {
		targets[bt.Broker] = bt.Target
		assert.Equal(t, 12, bt.Even)
	}
	assert.Equal(t, map[int32]int{1: 10, 2: 14, 3: 14, 4: 10}, targets)
	assert.Contains(t, strings.Join(s.Notes, "\n"), "rack rack-a (brokers 1,4) can hold at most 20 of 48 replicas")

	// The suggestions hold: each gives an even spread.
	require.Equal(t, []int32{4}, rb.NewRacks)
	require.Equal(t, 1, rb.AddBrokers)
	moved := slices.Clone(c.Brokers)
	for j := range moved {
		if slices.Contains(rb.NewRacks, moved[j].ID) {
			moved[j].Rack = fmt.Sprintf("new-%d", j)
		}
	}
	added := append(slices.Clone(c.Brokers), topology.Broker{ID: 5, Rack: "new"})
	for _, brokers := range [][]topology.Broker{moved, added} {
		q, err := Compute(c, Options{Brokers: brokers})
		require.NoError(t, err)
		reps, _ := balanced(q)
		assert.True(t, reps, "%+v", q.Summary.After.Replicas)
		assert.Nil(t, q.Summary.RackBound)
		assert.Zero(t, q.Summary.After.RackViolations)
	}
}

// evenFits against brute force: an even spread fits the racks exactly when
// some assignment of floor/ceil targets keeps every rack within its room.
func TestEvenFits(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	for range 500 {
		nr := 1 + rng.IntN(4)
		sizes := make([]int, nr)
		n := 0
		for r := range sizes {
			sizes[r] = 1 + rng.IntN(3)
			n += sizes[r]
		}
		perRF := make([]int, min(n, 4)+1)
		total := 0
		for rf := 1; rf < len(perRF); rf++ {
			perRF[rf] = rng.IntN(5)
			total += rf * perRF[rf]
		}
		if total == 0 {
			continue
		}
		room := rackRooms(sizes, perRF)
		// Brute force: how many ceilings each rack takes.
		lo, extra := total/n, total%n
		var try func(r, left int) bool
		try = func(r, left int) bool {
			if r == nr {
				return left == 0
			}
			for k := 0; k <= min(sizes[r], left); k++ {
				if sizes[r]*lo+k <= room[r] && try(r+1, left-k) {
					return true
				}
			}
			return false
		}
		assert.Equal(t, try(0, extra), evenFits(sizes, perRF, total), "sizes %v perRF %v", sizes, perRF)
	}
}

// --cell-size used to deal rack-alternated brokers round robin, so with as
// many cells as racks every cell got one rack ("cell 1 has 1 racks").
// Cells now hold as many racks as the brokers allow.
func TestCellsMixRacks(t *testing.T) {
	c := load(t, layouts+"demo-cells.json")
	opts := Options{FixOverlaps: true, CellSize: 3}
	p, err := Compute(c, opts)
	require.NoError(t, err)
	checkPlan(t, c, opts, p)
	require.Len(t, p.Summary.Cells, 3)
	for _, cell := range p.Summary.Cells {
		assert.Len(t, cell.Racks, 3, "cell %d", cell.Cell)
	}
	assert.Zero(t, p.Summary.After.RackViolations)

	// Every rack and cell count: each cell holds min(cell size, racks)
	// racks when racks are even, and racks differ by at most one between
	// cells otherwise.
	for racks := 1; racks <= 6; racks++ {
		for cells := 1; cells <= 6; cells++ {
			for _, k := range []int{2, 3, 4} {
				n := cells * k
				w := &work{opts: Options{FixOverlaps: true, CellSize: k}}
				for b := range n {
					w.ids = append(w.ids, int32(b+1))
					w.target = append(w.target, true)
					w.rack = append(w.rack, int32(b%racks))
				}
				w.nrack = racks
				got := w.splitCells(k)
				require.Len(t, got, cells)
				lo, hi := n, 0
				for _, cell := range got {
					require.Len(t, cell, k)
					seen := map[int32]bool{}
					for _, b := range cell {
						seen[w.rack[b]] = true
					}
					lo, hi = min(lo, len(seen)), max(hi, len(seen))
				}
				assert.LessOrEqual(t, hi-lo, 1, "racks %d cells %d size %d", racks, cells, k)
				if n%racks == 0 {
					assert.Equal(t, min(k, racks), lo, "racks %d cells %d size %d", racks, cells, k)
				}
			}
		}
	}
}

// Under --fix-overlaps the summary used to show only the per-cell bound
// ("gap 0 (1x)") while balance got worse. It now carries the count-balance
// bound (the bound of the same target without --fix-overlaps) and says
// when counts end less even than they were.
func TestCountBalanceBound(t *testing.T) {
	c := load(t, layouts+"demo-cells.json")
	plain, err := Compute(c, Options{})
	require.NoError(t, err)
	assert.Nil(t, plain.Summary.CountBalanceBound)
	p, err := Compute(c, Options{FixOverlaps: true, CellSize: 3})
	require.NoError(t, err)
	require.NotNil(t, p.Summary.CountBalanceBound)
	assert.Equal(t, plain.Summary.LowerBound, *p.Summary.CountBalanceBound)
	assert.NotEqual(t, p.Summary.LowerBound, *p.Summary.CountBalanceBound, "cells have a bound of their own")
	s := p.Summary
	worse := s.After.Replicas.Max-s.After.Replicas.Min > s.Before.Replicas.Max-s.Before.Replicas.Min
	assert.True(t, worse, "this layout's cells leave replicas less even")
	assert.Equal(t, worse, strings.Contains(strings.Join(s.Notes, "\n"), "replicas per broker are less even after the plan"))
	// Without cells both bounds are one.
	q, err := Compute(c, Options{FixOverlaps: true})
	require.NoError(t, err)
	assert.Equal(t, q.Summary.LowerBound, *q.Summary.CountBalanceBound)
}

// A layout where some brokers have racks and others not used to fail with
// "--brokers: broker N has no rack ..." even without --brokers. From the
// layout the rack-less broker counts as a rack of its own, with a note
// (TestRacklessBrokerKeepsRacks); only an explicit target broker list is
// refused, naming the brokers field.
func TestPartialRacks(t *testing.T) {
	c := &topology.Cluster{Brokers: []topology.Broker{{ID: 1, Rack: "a"}, {ID: 2, Rack: "b"}, {ID: 3}}}
	for p := range 6 {
		c.Partitions = append(c.Partitions, topology.Partition{Topic: "t", Partition: int32(p), Replicas: []int32{1, 2}, Leader: 1})
	}
	c.Normalize()
	p, err := Compute(c, Options{})
	require.NoError(t, err)
	checkPlan(t, c, Options{}, p)
	assert.Contains(t, strings.Join(p.Summary.Notes, "\n"), "broker 3 without a rack beside brokers with one (e.g. 2): each counts as a rack of its own")
	reps, _ := balanced(p)
	assert.True(t, reps)

	_, err = Compute(c, Options{Brokers: []topology.Broker{{ID: 1}, {ID: 2}, {ID: 3}}})
	var te *TargetError
	require.ErrorAs(t, err, &te)
	assert.Equal(t, "brokers", te.Field)
}
