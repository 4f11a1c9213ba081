package audit

import (
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
	assert.Equal(t, 2, w.LeadersMoved)
	assert.Equal(t, []string{"solo-0"}, w.OfflinePartitions, "RF 1: nothing to elect")
	assert.Equal(t, []string{"t-0", "t-2"}, w.SingleISR)
	// Leaders after: broker 2 leads t-0 and t-1, broker 3 leads t-2 and u-0.
	assert.Equal(t, 2, w.LeadersMax)
	assert.InDelta(t, 1.0, w.LeadersMaxOverMean, 1e-9)
	// Before: t {1,2,3}, solo {1}, u {3}: overlaps t-solo and t-u. After:
	// t {2,3}, solo gone, u {3}: overlap t-u only, none new.
	assert.Equal(t, 1, w.Overlaps)
	assert.Equal(t, 0, w.NewOverlaps)

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
