package loadgen

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kplan-dev/kplan/internal/kafka"
	"github.com/kplan-dev/kplan/internal/measure"
)

// TestBatchRecordsMapping: a --batch-size of n records, mapped onto
// ProducerBatchMaxBytes by measure.BatchSize.MaxBytes, makes franz-go
// build batches of exactly n records (a long linger, so only the size cuts
// batches), with this layout's record values.
// batchSizes records the number of records of each batch written.
type batchSizes struct {
	mu sync.Mutex
	n  []int
}

// OnProduceBatchWritten implements kgo.HookProduceBatchWritten.
func (b *batchSizes) OnProduceBatchWritten(_ kgo.BrokerMetadata, _ string, _ int32, m kgo.ProduceBatchMetrics) {
	b.mu.Lock()
	b.n = append(b.n, m.NumRecords)
	b.mu.Unlock()
}

func (b *batchSizes) reset() {
	b.mu.Lock()
	b.n = nil
	b.mu.Unlock()
}

// total is the records of every batch recorded.
func (b *batchSizes) total() int {
	n := 0
	for _, x := range b.get() {
		n += x
	}
	return n
}

func (b *batchSizes) get() []int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.n)
}

func TestBatchRecordsMapping(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "t"))
	require.NoError(t, err)
	defer c.Close()
	for _, tc := range []struct{ records, size int }{{1, 512}, {2, 512}, {4, 512}, {10, 512}, {100, 512}, {7, 1000}, {3, 4096}, {50, 200}} {
		t.Run(fmt.Sprintf("%dx%dB", tc.records, tc.size), func(t *testing.T) {
			mb, err := measure.BatchSize{Records: tc.records}.MaxBytes(tc.size)
			require.NoError(t, err)
			hook, sizes := &batchHook{}, &batchSizes{}
			cl, err := kafka.NewClient(kafka.ConnOptions{BootstrapServers: c.ListenAddrs()[0]}, "test",
				kgo.DefaultProduceTopic("t"), kgo.ProducerLinger(30*time.Second), kgo.ProducerBatchMaxBytes(mb),
				kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.WithHooks(hook, sizes))
			require.NoError(t, err)
			defer cl.Close()
			// Until the client knows the broker's produce version it sizes
			// batches as the largest encoding (message set v1), as a
			// cell's warm-up does.
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			cl.Produce(ctx, &kgo.Record{Value: make([]byte, tc.size)}, nil)
			require.NoError(t, cl.Flush(ctx))
			// Both hooks run after the promise, one after the other: wait
			// for both before resetting them.
			for (hook.records.Load() < 1 || sizes.total() < 1) && ctx.Err() == nil {
				time.Sleep(5 * time.Millisecond)
			}
			hook.batches.Store(0)
			hook.records.Store(0)
			sizes.reset()
			const batches = 3
			for i := range batches * tc.records {
				v := make([]byte, tc.size)
				v[0] = byte(i)
				cl.Produce(context.Background(), &kgo.Record{Value: v}, nil)
			}
			require.NoError(t, cl.Flush(ctx))
			// The hooks run after the promises Flush waits for, one after
			// the other: wait until both saw every record.
			for (hook.records.Load() < int64(batches*tc.records) || sizes.total() < batches*tc.records) && ctx.Err() == nil {
				time.Sleep(5 * time.Millisecond)
			}
			// How many batches the records make depends on when franz-go's
			// sink runs, not only on batch.size: a sink that wakes while a
			// batch is filling drains it part full (4 batches of 7, 7, 3
			// and 4 records were seen under -race on a loaded machine, and
			// 55, 100, 100, 45 for 100 records here). What batch.size
			// decides holds whatever the timing: no batch holds more than
			// n records (an n+1-th does not fit), a batch cut because it
			// was full holds n (n fit), every record is in one batch, and
			// so there are at least 3 batches.
			got := sizes.get()
			t.Logf("batches of %d records at batch.size %d: %v", tc.records, mb, got)
			require.NotEmpty(t, got)
			total := 0
			for _, n := range got {
				assert.LessOrEqual(t, n, tc.records, "batch.size %d bounds a batch at %d records: %v", mb, tc.records, got)
				total += n
			}
			assert.Equal(t, tc.records, slices.Max(got), "%d records fit in batch.size %d: %v", tc.records, mb, got)
			assert.Equal(t, batches*tc.records, total, "every record in one batch")
			assert.Equal(t, int64(len(got)), hook.batches.Load(), "the hook counts every batch")
			assert.Equal(t, int64(total), hook.records.Load())
			assert.GreaterOrEqual(t, len(got), batches)
		})
	}
}

// TestBatchRunKfake runs two cells end to end on an in-process cluster:
// every record sent is read back once and timed, nothing is lost, and the
// 1-record cell's batches hold one record each.
func TestBatchRunKfake(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	require.NoError(t, err)
	defer c.Close()
	ctx := context.Background()
	conn := kafka.ConnOptions{BootstrapServers: c.ListenAddrs()[0]}
	run, err := StartBatchRun(ctx, conn, "test", BatchTopic{Name: "kplan-batching-test", Partitions: 1})
	require.NoError(t, err)
	assert.Equal(t, 1, run.Topic().ReplicationFactor, "min(3, brokers)")
	for i, records := range []int{1, 10} {
		mb, err := measure.BatchSize{Records: records}.MaxBytes(512)
		require.NoError(t, err)
		n, err := run.RunCell(ctx, BatchCellSpec{Index: i, Linger: 5 * time.Millisecond, MaxBytes: mb, Acks: AcksAll, RecordSize: 512,
			Rate: 400, Warmup: 100 * time.Millisecond, Duration: 300 * time.Millisecond, DeliveryTimeout: 5 * time.Second,
			DrainTimeout: 5 * time.Second, MaxBuffered: 1000, Objective: time.Second})
		require.NoError(t, err)
		assert.Positive(t, n.Sent, "cell %d", i)
		assert.Equal(t, n.Sent, n.Acked, "cell %d", i)
		assert.Equal(t, n.Sent, n.Received, "cell %d: every record read back", i)
		assert.Zero(t, n.Duplicates)
		assert.Equal(t, n.Received, n.Latency.Count(), "one latency per record")
		assert.Positive(t, n.Window)
		if records == 1 {
			assert.Equal(t, n.Batches, n.BatchRecords, "one record per batch")
		}
		assert.LessOrEqual(t, n.BatchRecords, n.Batches*int64(records), "batch.size bounds the batch")
	}
	require.NoError(t, run.Close(ctx, false))
}
