package loadgen

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/kplan-dev/kplan/internal/kafka"
)

// TestMeasurerOnKfake runs every raw measurement on an in-process cluster:
// kfake cannot judge rates or replication, so this checks the plumbing
// (topics made and deleted, samples counted), not the figures.
func TestMeasurerOnKfake(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(3))
	require.NoError(t, err)
	defer c.Close()
	ctx := context.Background()
	m := NewMeasurer(kafka.ConnOptions{BootstrapServers: strings.Join(c.ListenAddrs(), ","), Timeout: 5 * time.Second}, "test")
	defer m.Close()

	info, err := m.Info(ctx)
	require.NoError(t, err)
	assert.Len(t, info.Brokers, 3)
	assert.NotEmpty(t, info.ClusterID)

	require.NoError(t, m.CreateScratch(ctx, "kplan-measure-t-tp", 1, 3, info.Brokers))
	for _, acks := range []Acks{AcksAll, AcksLeader, AcksNone} {
		w, err := m.MeasureProduce(ctx, ProduceSpec{Topic: "kplan-measure-t-tp", Acks: acks, RecordSize: 100,
			Duration: 300 * time.Millisecond, Window: 100 * time.Millisecond, MaxBufferedRecords: 1000})
		require.NoError(t, err, "acks=%s", acks)
		assert.Positive(t, w.Records, "acks=%s", acks)
		assert.Equal(t, w.Records*100, w.Total, "every counted record is 100 bytes")
		var sum int64
		for _, b := range w.Bytes {
			sum += b
		}
		assert.Equal(t, w.Total, sum, "windows add up")
	}

	cw, err := m.MeasureConsume(ctx, ConsumeSpec{Topic: "kplan-measure-t-tp", Duration: time.Second, Window: 250 * time.Millisecond})
	require.NoError(t, err)
	assert.Positive(t, cw.Records)

	require.NoError(t, m.CreateScratch(ctx, "kplan-measure-t-lr", 1, 3, info.Brokers))
	pairs, err := m.MeasureReplication(ctx, ReplicationSpec{Topic: "kplan-measure-t-lr", RecordSize: 10, Samples: 6, Warmup: 2})
	require.NoError(t, err)
	require.Len(t, pairs, 6, "warm-up pairs are not returned")
	for _, p := range pairs {
		assert.Positive(t, p.All)
		assert.Positive(t, p.Leader)
	}

	require.NoError(t, m.CreateScratch(ctx, "kplan-measure-t-u", 6, 3, info.Brokers))
	rounds, err := m.MeasureElection(ctx, "kplan-measure-t-u", 6, 2)
	require.NoError(t, err)
	require.Len(t, rounds, 2)
	for _, r := range rounds {
		assert.Equal(t, 6, r.Partitions)
		assert.GreaterOrEqual(t, r.Writable, r.Elect, "writable after the controller answered")
	}

	assert.ElementsMatch(t, []string{"kplan-measure-t-tp", "kplan-measure-t-lr", "kplan-measure-t-u"}, m.Created())
	deleted, err := m.DeleteScratch(context.WithoutCancel(ctx))
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"kplan-measure-t-tp", "kplan-measure-t-lr", "kplan-measure-t-u"}, deleted)
	assert.Empty(t, m.Created())
	cl, err := m.admin.Client()
	require.NoError(t, err)
	topics, err := kadm.NewClient(cl).ListTopics(ctx)
	require.NoError(t, err)
	for _, name := range topics.Names() {
		assert.NotContains(t, name, "kplan-measure-", "scratch topic left behind")
	}
}

// TestMeasureProduceCountsOnlyTheRun is the regression test of the SASL_SSL
// lab's "rate below 1kB/s": a producer buffer larger than the run can
// acknowledge was drained after the deadline and its acknowledgements
// counted in windows past the run. Now the producer stops at the deadline,
// aborts what is still buffered and counts nothing after it, with a buffer
// bounded in bytes.
func TestMeasureProduceCountsOnlyTheRun(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	require.NoError(t, err)
	defer c.Close()
	addrs := c.ListenAddrs()
	ctx := context.Background()
	m := NewMeasurer(kafka.ConnOptions{BootstrapServers: strings.Join(addrs, ","), Timeout: 5 * time.Second}, "test")
	defer m.Close()
	info, err := m.Info(ctx)
	require.NoError(t, err)
	require.NoError(t, m.CreateScratch(ctx, "kplan-measure-t-run", 1, 1, info.Brokers))
	tests := []struct {
		name  string
		acks  Acks
		bytes int
	}{
		{"acks all, 64 KiB", AcksAll, 64 << 10},
		{"acks 1, 64 KiB", AcksLeader, 64 << 10},
		{"acks 0, no byte bound", AcksNone, 0},
		// A bound below one record still lets one record through.
		{"acks all, bound below a record", AcksAll, 10},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := ProduceSpec{Topic: "kplan-measure-t-run", Acks: tc.acks, RecordSize: 1000, Duration: time.Second,
				Window: 250 * time.Millisecond, MaxBufferedRecords: 100_000, MaxBufferedBytes: tc.bytes}
			w, err := m.MeasureProduce(ctx, s)
			require.NoError(t, err)
			assert.Positive(t, w.Records)
			assert.LessOrEqual(t, len(w.Bytes), int(s.Duration/s.Window), "a window past the run counted something")
			assert.Less(t, w.Elapsed, s.Duration, "an acknowledgement after the deadline was counted")
			var sum int64
			for _, b := range w.Bytes {
				sum += b
			}
			assert.Equal(t, w.Total, sum, "windows add up")
			assert.Equal(t, w.Records*1000, w.Total)
		})
	}
	_, err = m.DeleteScratch(context.WithoutCancel(ctx))
	require.NoError(t, err)
}

func TestCreateScratchRefusesReplicationFactor(t *testing.T) {
	m := NewMeasurer(kafka.ConnOptions{BootstrapServers: "127.0.0.1:1", Timeout: time.Second}, "test")
	defer m.Close()
	err := m.CreateScratch(context.Background(), "t", 1, 4, []int32{1, 2, 3})
	assert.ErrorContains(t, err, "replication factor 4 with 3 brokers")
	assert.Empty(t, m.Created())
}
