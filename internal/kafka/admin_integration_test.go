//go:build integration

package kafka_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kplan-dev/kplan/internal/kafka"
	"github.com/kplan-dev/kplan/internal/labtest"
	"github.com/kplan-dev/kplan/internal/topology"
)

// TestAdminOnRealBrokers reads racks, ordered replicas and log-dir sizes
// from the real lab through the lazily built Admin.
func TestAdminOnRealBrokers(t *testing.T) {
	lab := labtest.Shared(t)
	const topic = "admin-sizes"
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	a := kafka.NewAdmin(kafka.ConnOptions{BootstrapServers: lab.Bootstrap}, "test")
	defer a.Close()
	require.NoError(t, a.WaitBrokers(ctx, labtest.Brokers))
	cl, err := a.Client()
	require.NoError(t, err)
	assignment := [][]int32{{3, 1}, {1, 2}}
	require.NoError(t, kafka.CreateTopic(ctx, cl, topic, assignment, nil))

	prod, err := kafka.NewClient(kafka.ConnOptions{BootstrapServers: lab.Bootstrap}, "test",
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchCompression(kgo.NoCompression()))
	require.NoError(t, err)
	defer prod.Close()
	for i := range 200 {
		r := &kgo.Record{Topic: topic, Partition: int32(i % 2), Value: make([]byte, 1000)}
		require.NoError(t, prod.ProduceSync(ctx, r).FirstErr())
	}

	snap, err := a.Snapshot(ctx, func(s string) bool { return s == topic })
	require.NoError(t, err)
	require.Len(t, snap.Brokers, labtest.Brokers)
	assert.True(t, snap.HasRacks(), "the lab sets broker.rack")
	require.Len(t, snap.Partitions, 2)
	for i, p := range snap.Partitions {
		assert.Equal(t, assignment[i], p.Replicas, "replicas keep assignment order")
	}

	sizes, err := a.LogDirSizes(ctx, func(s string) bool { return s == topic })
	require.NoError(t, err)
	require.Len(t, sizes, 2)
	for _, p := range snap.Partitions {
		// 100 uncompressed 1000-byte values per partition.
		assert.GreaterOrEqual(t, sizes[p.Key()], int64(100*1000), p.Key().String())
	}
}

// TestElectPreferredPartitions: a reassignment that only reorders replicas
// keeps the leader (Kafka's controller keeps a leader in the ISR); the
// election of the given partitions moves theirs, and only theirs; a
// partition already led by its first replica (ELECTION_NOT_NEEDED) is no
// refusal.
func TestElectPreferredPartitions(t *testing.T) {
	lab := labtest.Shared(t)
	const topic = "admin-elect"
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	a := kafka.NewAdmin(kafka.ConnOptions{BootstrapServers: lab.Bootstrap}, "test")
	defer a.Close()
	require.NoError(t, a.WaitBrokers(ctx, labtest.Brokers))
	cl, err := a.Client()
	require.NoError(t, err)
	require.NoError(t, kafka.CreateTopic(ctx, cl, topic, [][]int32{{1, 2}, {1, 2}, {2, 3}}, nil))
	only := func(s string) bool { return s == topic }
	leaders := func() []int32 {
		snap, err := a.Snapshot(ctx, only)
		if err != nil || len(snap.Partitions) != 3 {
			return nil
		}
		var out []int32
		for _, p := range snap.Partitions {
			if len(p.ISR) != len(p.Replicas) {
				return nil
			}
			out = append(out, p.Leader)
		}
		return out
	}
	require.Eventually(t, func() bool { return slices.Equal(leaders(), []int32{1, 1, 2}) }, 30*time.Second, 200*time.Millisecond)

	// Reorder partitions 0 and 1 to [2,1]: leader 1 stays.
	require.NoError(t, a.Reassign(ctx, []topology.Partition{
		{Topic: topic, Partition: 0, Replicas: []int32{2, 1}},
		{Topic: topic, Partition: 1, Replicas: []int32{2, 1}},
	}))
	require.Eventually(t, func() bool {
		snap, err := a.Snapshot(ctx, only)
		return err == nil && len(snap.Partitions) == 3 && slices.Equal(snap.Partitions[0].Replicas, []int32{2, 1}) &&
			slices.Equal(snap.Partitions[1].Replicas, []int32{2, 1})
	}, 30*time.Second, 200*time.Millisecond)
	assert.Equal(t, []int32{1, 1, 2}, leaders(), "a reorder alone keeps the leaders")

	// Elect partition 0 (needed) and 2 (not needed): 1 keeps leader 1.
	refused, err := a.ElectPreferred(ctx, []topology.Key{{Topic: topic, Partition: 0}, {Topic: topic, Partition: 2}})
	require.NoError(t, err)
	assert.Empty(t, refused)
	require.Eventually(t, func() bool { return slices.Equal(leaders(), []int32{2, 1, 2}) }, 10*time.Second, 200*time.Millisecond,
		"leaders: %v", leaders())

	none, err := a.ElectPreferred(ctx, nil)
	require.NoError(t, err)
	assert.Empty(t, none, "no keys elects nothing")
	assert.Equal(t, []int32{2, 1, 2}, leaders(), "no keys elects nothing, not everything")
}

// TestLabSnapshotKeepsInternalTopics: a filtered snapshot of real brokers
// holds __consumer_offsets (it used to be dropped, so live audits counted
// fewer partitions than describe text), and the metadata reads the other
// checks need answer on real brokers: the cluster id (reassign apply's lab
// check), min.insync.replicas (chaos's check before a kill) and the
// ongoing reassignments (reassign's planning).
func TestLabSnapshotKeepsInternalTopics(t *testing.T) {
	lab := labtest.Shared(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	a := kafka.NewAdmin(kafka.ConnOptions{BootstrapServers: lab.Bootstrap}, "test")
	defer a.Close()
	require.NoError(t, a.WaitBrokers(ctx, labtest.Brokers))
	cl, err := a.Client()
	require.NoError(t, err)
	const topic = "internal-topics"
	require.NoError(t, kafka.CreateTopic(ctx, cl, topic, [][]int32{{1, 2}}, nil))
	adm := kadm.NewClient(cl)
	var committed bool
	for !committed && ctx.Err() == nil {
		offs := kadm.Offsets{}
		offs.Add(kadm.Offset{Topic: topic, Partition: 0, At: 0})
		resp, err := adm.CommitOffsets(ctx, "kplan-internal-topics", offs)
		committed = err == nil && resp.Error() == nil
		if !committed {
			time.Sleep(200 * time.Millisecond)
		}
	}
	require.True(t, committed, "commit an offset so __consumer_offsets exists")
	md, err := adm.Metadata(ctx)
	require.NoError(t, err)
	internal := 0
	for _, td := range md.Topics {
		if td.IsInternal {
			internal += len(td.Partitions)
		}
	}
	require.Positive(t, internal)
	snap, err := a.Snapshot(ctx, func(string) bool { return true })
	require.NoError(t, err)
	n := 0
	for _, p := range snap.Partitions {
		if p.Topic == "__consumer_offsets" {
			n++
		}
	}
	assert.Equal(t, internal, n)

	id, err := a.ClusterID(ctx)
	require.NoError(t, err)
	assert.NotEmpty(t, id)
	minISR, def, err := kafka.MinInsync(ctx, cl, []string{topic, "__consumer_offsets"}, 1)
	require.NoError(t, err)
	assert.Equal(t, 1, minISR[topic])
	assert.Contains(t, minISR, "__consumer_offsets")
	assert.Equal(t, 1, def)
	ongoing, err := a.AllOngoing(ctx)
	require.NoError(t, err)
	assert.Empty(t, ongoing)
}
