package audit

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/topology"
)

func TestWhatIfLoss(t *testing.T) {
	c := &topology.Cluster{Partitions: []topology.Partition{
		{Topic: "t", Partition: 0, Replicas: []int32{1, 2}, Leader: 1},
		{Topic: "t", Partition: 1, Replicas: []int32{2, 3}, Leader: 2},
		{Topic: "t", Partition: 2, Replicas: []int32{3, 1}, Leader: 3},
		{Topic: "solo", Partition: 0, Replicas: []int32{1}, Leader: 1},
		{Topic: "u", Partition: 0, Replicas: []int32{3, 2}, Leader: 3},
	}}
	c.Normalize()
	ws := WhatIfLoss(c, ByLeaders, []int32{1})
	require.Len(t, ws, 1)
	w := ws[0]
	assert.Equal(t, 1, w.LeadersMoved, "t-0 moves; solo-0 goes offline and is not a move")
	assert.Equal(t, 1, w.OfflineCount)
	assert.Equal(t, []string{"solo-0"}, w.OfflinePartitions, "RF 1: nothing to elect")
	assert.Equal(t, []Election{{Topic: "solo", Partition: 0, NewLeader: topology.NoLeader}, {Topic: "t", Partition: 0, NewLeader: 2}}, w.Elections)
	assert.Equal(t, []string{"t-0", "t-2"}, w.SingleISR)
	// Leaders after: broker 2 leads t-0 and t-1, broker 3 leads t-2 and u-0.
	assert.Equal(t, 2, w.LeadersMax)
	assert.InDelta(t, 1.0, w.LeadersMaxOverMean, 1e-9)
	// Before: t {1,2,3}, solo {1}, u {3}. After: t {2,3}, solo gone,
	// u {3}: t and u already met on broker 3, so nothing is new.
	assert.Equal(t, 0, w.NewOverlaps)
	assert.Equal(t, 0, w.TopicsGainingBrokers)

	all := WhatIfLoss(c, ByLeaders, nil)
	require.Len(t, all, 3)
	assert.Equal(t, int32(3), all[2].Broker)
	assert.Equal(t, []string{}, all[1].OfflinePartitions)
}

func TestWhatIfRespectsISR(t *testing.T) {
	// Partition led by 1 whose follower 2 is out of sync: losing 1 leaves
	// it offline, as Kafka (without unclean election) would.
	c := &topology.Cluster{Live: true, Partitions: []topology.Partition{
		{Topic: "t", Partition: 0, Replicas: []int32{1, 2, 3}, Leader: 1, ISR: []int32{1, 3}},
		{Topic: "t", Partition: 1, Replicas: []int32{1, 2}, Leader: 1, ISR: []int32{1}},
	}}
	c.Normalize()
	w := WhatIfLoss(c, ByLeaders, []int32{1})[0]
	assert.Equal(t, []string{"t-1"}, w.OfflinePartitions)
	assert.Equal(t, []string{"t-0"}, w.SingleISR)
	assert.Equal(t, int32(3), w.BusiestBroker, "the first in-sync replica in assignment order, not broker 2")
}

func TestWhatIfNewOverlap(t *testing.T) {
	// x is led by 1 and 2, y by 3: disjoint. Losing 1 moves x-0 to its
	// follower 3, where x now meets y.
	c := &topology.Cluster{Partitions: []topology.Partition{
		{Topic: "x", Partition: 0, Replicas: []int32{1, 3}, Leader: 1},
		{Topic: "x", Partition: 1, Replicas: []int32{2, 1}, Leader: 2},
		{Topic: "y", Partition: 0, Replicas: []int32{3, 2}, Leader: 3},
	}}
	c.Normalize()
	w := WhatIfLoss(c, ByLeaders, []int32{1})[0]
	assert.Equal(t, 1, w.NewOverlaps)
	assert.Equal(t, 1, w.TopicsGainingBrokers)
	assert.Equal(t, "x would be led on broker 3 too, where group 2 (y) leads; they shared no broker before", w.NewOverlapExample)
	lit := literalWhatIf(c, ByLeaders, 1)
	lit.NewOverlapExample = w.NewOverlapExample
	assert.Equal(t, lit, w)
	// Replica sets only shrink when a broker goes: nothing new by replicas.
	assert.Equal(t, 0, WhatIfLoss(c, ByReplicas, []int32{1})[0].NewOverlaps)
}

// TestWhatIfEqualsLiteral compares the incremental what-if with the
// from-scratch reference on random layouts: sparse ids, more than 64
// brokers, ISR gaps, offline replicas and partitions, both views.
func TestWhatIfEqualsLiteral(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	seen := 0
	for i := range 400 {
		brokers := 2 + rng.IntN(90)
		c := &topology.Cluster{}
		for tn := range 1 + rng.IntN(25) {
			span := 1 + rng.IntN(min(brokers, 6))
			start := rng.IntN(brokers)
			for p := range 1 + rng.IntN(8) {
				rf := 1 + rng.IntN(min(brokers, 4))
				var reps []int32
				for len(reps) < rf {
					var r int32
					if len(reps) == 0 {
						r = int32(100 + 7*((start+p%span)%brokers))
					} else {
						r = int32(100 + 7*rng.IntN(brokers))
					}
					if !slices.Contains(reps, r) {
						reps = append(reps, r)
					}
				}
				part := topology.Partition{Topic: fmt.Sprintf("t%02d", tn), Partition: int32(p), Replicas: reps, Leader: reps[0]}
				switch rng.IntN(6) {
				case 0: // a follower out of sync
					part.ISR = slices.Clone(reps[:max(1, len(reps)-1)])
				case 1: // led by a follower
					part.Leader = reps[len(reps)-1]
				case 2: // offline
					if rng.IntN(4) == 0 {
						part.Leader, part.ISR = topology.NoLeader, []int32{}
					}
				case 3:
					part.Offline = []int32{reps[len(reps)-1]}
				}
				c.Partitions = append(c.Partitions, part)
			}
		}
		if rng.IntN(4) == 0 {
			// A live cluster whose metadata lists some brokers: the
			// others named by replicas are missing (down).
			for b := range brokers {
				if rng.IntN(3) > 0 {
					c.Brokers = append(c.Brokers, topology.Broker{ID: int32(100 + 7*b)})
				}
			}
		}
		c.Normalize()
		for _, by := range []By{ByLeaders, ByReplicas} {
			fast := WhatIfLoss(c, by, nil)
			require.Len(t, fast, c.LiveBrokers())
			assert.Equal(t, fast, whatIfLoss(c, by, nil, 0), "without the intersection table")
			for _, w := range fast {
				lit := literalWhatIf(c, by, w.Broker)
				if lit.NewOverlaps == 0 || w.NewOverlaps == 0 {
					w.NewOverlapExample = ""
				}
				lit.NewOverlapExample = w.NewOverlapExample
				require.Equal(t, lit, w, "layout %d, by %d, broker %d", i, by, w.Broker)
				if w.NewOverlaps > 0 {
					seen++
				}
			}
		}
	}
	assert.Greater(t, seen, 100, "the layouts must exercise new overlaps")
}

// TestWhatIfRFAboveBrokers: losing one of three brokers leaves two, fewer
// than the replication factor 3, and the audit says so.
func TestWhatIfRFAboveBrokers(t *testing.T) {
	c := &topology.Cluster{Partitions: []topology.Partition{
		{Topic: "t", Partition: 0, Replicas: []int32{1, 2, 3}, Leader: 1},
		{Topic: "t", Partition: 1, Replicas: []int32{2, 3, 1}, Leader: 2},
		{Topic: "u", Partition: 0, Replicas: []int32{3, 1}, Leader: 3},
	}}
	c.Normalize()
	r := Run(c, ByLeaders)
	assert.NotContains(t, rules(r), "rf-above-brokers t-0", "3 brokers hold RF 3")
	r.AddWhatIf(c, ByLeaders, []int32{2})
	require.Len(t, r.WhatIf, 1)
	w := r.WhatIf[0]
	assert.Equal(t, 2, w.LiveBrokers)
	assert.Equal(t, 2, w.RFAboveBrokers, "t-0 and t-1 have RF 3; u-0 has RF 2")
	assert.Equal(t, Warning, rules(r)["rf-above-brokers broker-2"])
	for _, f := range r.Findings {
		if f.Rule == "rf-above-brokers" {
			assert.Contains(t, f.Message, "2 live brokers, fewer than the replication factor of 2 partitions (e.g. t-0)")
		}
	}
}

// TestWhatIfSkipsMissingBrokers: --what-if all simulates the brokers that
// are up; a broker already down counts as dead in every election.
func TestWhatIfSkipsMissingBrokers(t *testing.T) {
	c := &topology.Cluster{Live: true, Brokers: []topology.Broker{{ID: 1}, {ID: 2}}, Partitions: []topology.Partition{
		{Topic: "t", Partition: 0, Replicas: []int32{1, 3, 2}, Leader: 1},
	}}
	c.Normalize()
	ws := WhatIfLoss(c, ByLeaders, nil)
	require.Len(t, ws, 2, "broker 3 is down already")
	assert.Equal(t, []Election{{Topic: "t", Partition: 0, NewLeader: 2}}, ws[0].Elections, "3 is down: 2 is the first live in-sync replica")
	assert.Equal(t, 1, ws[0].LiveBrokers)
}

// TestWhatIfLossWorkersAgree: the losses run on several goroutines give the
// same what-ifs, in the same order, as one goroutine.
func TestWhatIfLossWorkersAgree(t *testing.T) {
	c, err := topology.Generate(topology.GenOptions{Brokers: 40, Racks: 3, Topics: 60, Partitions: 3000, ReplicationFactor: 3, Scatter: 0.3, Uneven: 0.2},
		rand.New(rand.NewPCG(5, 6)))
	require.NoError(t, err)
	for _, by := range []By{ByLeaders, ByReplicas} {
		m := newLossModel(c, by, maxInterWords)
		idx := make([]int, m.ix.Len())
		for i := range idx {
			idx[i] = i
		}
		one := m.loseAll(idx, 1)
		require.Len(t, one, 40)
		for _, workers := range []int{2, 3, 7, 64} {
			require.Equal(t, one, m.loseAll(idx, workers), "by %v, %d workers", by, workers)
		}
	}
}
