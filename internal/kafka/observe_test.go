package kafka

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kplan-dev/kplan/internal/topology"
)

// TestObserveCalls: ListOffsets, ReplicaDirs and CommittedOffsets on a
// fake cluster (plumbing: kfake keeps every replica's bytes on its leader
// and nothing tiered).
func TestObserveCalls(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(2), kfake.SeedTopics(2, "a", "b"))
	require.NoError(t, err)
	defer c.Close()
	conn := ConnOptions{BootstrapServers: strings.Join(c.ListenAddrs(), ","), Timeout: 5 * time.Second}
	a := NewAdmin(conn, "test")
	defer a.Close()
	ctx := context.Background()
	cl, err := NewClient(conn, "test", kgo.RecordPartitioner(kgo.ManualPartitioner()))
	require.NoError(t, err)
	defer cl.Close()
	for range 5 {
		require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Topic: "a", Partition: 1, Value: []byte("hello")}).FirstErr())
	}
	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: "a", Partition: 1, At: 3, LeaderEpoch: -1})
	_, err = kadm.NewClient(cl).CommitOffsets(ctx, "g", offs)
	require.NoError(t, err)

	po, err := a.ListOffsets(ctx, []string{"a", "b"})
	require.NoError(t, err)
	require.Len(t, po, 4)
	assert.Equal(t, PartitionOffsets{Key: topology.Key{Topic: "a", Partition: 1}, End: 5, Start: 0, LocalStart: 0}, po[1])
	assert.Equal(t, "b", po[3].Topic)
	none, err := a.ListOffsets(ctx, nil)
	require.NoError(t, err)
	assert.Empty(t, none)

	reps, err := a.ReplicaDirs(ctx, func(s string) bool { return s == "a" })
	require.NoError(t, err)
	require.NotEmpty(t, reps)
	for i := 1; i < len(reps); i++ {
		assert.LessOrEqual(t, compareKey(reps[i-1].Key, reps[i].Key), 0, "sorted by partition")
	}
	sizes := LargestReplicas(reps)
	assert.Positive(t, sizes[topology.Key{Topic: "a", Partition: 1}])
	assert.Zero(t, sizes[topology.Key{Topic: "a", Partition: 0}])

	got, skipped, err := a.CommittedOffsets(ctx, nil)
	require.NoError(t, err)
	assert.Empty(t, skipped)
	assert.Equal(t, []GroupOffset{{Group: "g", Key: topology.Key{Topic: "a", Partition: 1}, Offset: 3}}, got)
	got, _, err = a.CommittedOffsets(ctx, func(s string) bool { return s == "b" })
	require.NoError(t, err)
	assert.Empty(t, got, "the filter keeps b only")
}
