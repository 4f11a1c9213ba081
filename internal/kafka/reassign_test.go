package kafka

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/kplan-dev/kplan/internal/topology"
)

// The admin calls of `kplan reassign apply` against kfake: kfake cannot
// judge a reassignment's result (see DESIGN.md), so this checks the
// requests go through and errors come back per partition; the real
// workflow runs against real brokers in internal/cli/reassign's
// integration tests.
func TestAdminReassignCalls(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(3), kfake.SeedTopics(2, "orders"))
	require.NoError(t, err)
	defer c.Close()
	a := NewAdmin(ConnOptions{BootstrapServers: strings.Join(c.ListenAddrs(), ","), Timeout: 5 * time.Second}, "test")
	defer a.Close()
	ctx := context.Background()
	require.NoError(t, a.WaitBrokers(ctx, 3))
	snap, err := a.Snapshot(ctx, nil)
	require.NoError(t, err)
	require.Len(t, snap.Partitions, 2)
	var brokers []int32
	for _, b := range snap.Brokers {
		brokers = append(brokers, b.ID)
	}

	keys := []topology.Key{{Topic: "orders", Partition: 0}, {Topic: "orders", Partition: 1}}
	ongoing, err := a.Ongoing(ctx, keys)
	require.NoError(t, err)
	assert.Empty(t, ongoing)

	moves := []topology.Partition{{Topic: "orders", Partition: 0, Replicas: []int32{brokers[1]}}}
	th := topology.ThrottleFor(1_000_000, moves, map[topology.Key][]int32{keys[0]: snap.Partitions[0].Replicas})
	require.NoError(t, a.SetThrottle(ctx, th))
	require.NoError(t, a.Reassign(ctx, moves))
	// kfake finishes at once (its metadata keeps the old replicas), so
	// nothing is in progress: the cancel fails, naming the partition.
	err = a.CancelReassign(ctx, keys[:1])
	require.Error(t, err)
	assert.Contains(t, err.Error(), "cancel orders/0")
	require.NoError(t, a.ClearThrottle(ctx, brokers, []string{"orders"}))

	// A partition that does not exist fails by name.
	err = a.Reassign(ctx, []topology.Partition{{Topic: "nope", Partition: 7, Replicas: []int32{brokers[0]}}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "nope/7")
}
