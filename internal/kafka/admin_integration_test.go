//go:build integration

package kafka_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kplan-dev/kplan/internal/kafka"
	"github.com/kplan-dev/kplan/internal/labtest"
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
