package loadgen

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kplan-dev/kplan/internal/clock"
	"github.com/kplan-dev/kplan/internal/kafka"
)

func TestTally(t *testing.T) {
	var tl Tally
	assert.True(t, tl.Read(2, Pos(0, 10)), "first read")
	assert.False(t, tl.Read(2, Pos(0, 10)), "the same position again: a reread")
	assert.False(t, tl.Read(2, Pos(1, 3)), "another position: a duplicate")
	assert.True(t, tl.Read(0, Pos(0, 11)))
	assert.Equal(t, []uint8{1, 0, 2}, tl.Counts())
	assert.Equal(t, int64(1), tl.Rereads())
	assert.Equal(t, int64(1), Duplicates(tl.Counts()))
	for i := range 300 {
		tl.Read(5, Pos(2, int64(i)))
	}
	assert.Equal(t, uint8(255), tl.Counts()[5], "counts saturate")
}

// TestProduceAndCheck runs the engine end to end on kfake: two producers
// pace stamped records, the Reader reads them back with the RunHeader
// filter, and every acknowledged record is read once, with a latency, while
// another run's records on the same topic are not counted.
func TestProduceAndCheck(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(2), kfake.SeedTopics(3, "t"))
	require.NoError(t, err)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn := kafka.ConnOptions{BootstrapServers: c.ListenAddrs()[0]}
	admin, err := kafka.NewClient(conn, "test")
	require.NoError(t, err)
	defer admin.Close()
	require.NoError(t, kafka.WaitLeaders(ctx, admin, 10*time.Second, "t"))
	start, err := EndOffsets(ctx, admin, []string{"t"})
	require.NoError(t, err)

	const run = 42
	epoch := time.Now()
	cons, err := kafka.NewClient(conn, "test", kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"t": {0: kgo.NewOffset().At(0), 1: kgo.NewOffset().At(0), 2: kgo.NewOffset().At(0)}}),
		kgo.FetchMaxWait(100*time.Millisecond))
	require.NoError(t, err)
	defer cons.Close()
	rd := NewReader(cons, start)
	rd.Accept = func(r uint64) bool { return r == run }
	rd.Header = true
	tallies := []*Tally{{}, {}}
	var mu sync.Mutex
	var latencies int
	rctx, stopReader := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		rd.Run(rctx, clock.System{}, func(rec *kgo.Record, e Envelope, at time.Time) {
			if int(e.Producer) < len(tallies) && tallies[e.Producer].Read(e.Seq, Pos(rec.Partition, rec.Offset)) {
				mu.Lock()
				latencies++
				mu.Unlock()
				assert.Positive(t, at.Sub(epoch)-e.Sent)
			}
		})
	})

	prod, err := kafka.NewClient(conn, "test", append(AcksAll.ProducerOpts(), kgo.DefaultProduceTopic("t"))...)
	require.NoError(t, err)
	defer prod.Close()
	sent := make([]uint64, 2)
	var pw sync.WaitGroup
	for i := range 2 {
		pw.Go(func() {
			p := NewPacer(500, time.Millisecond, nil)
			// A count, not a duration: the pacer's rate on a loaded machine
			// is the pacer's tests' business, not the checker's.
			p.Run(ctx, func() bool { return sent[i] >= 100 }, func() {
				e := Envelope{Run: run, Seq: sent[i], Sent: time.Since(epoch), Producer: uint8(i)}
				sent[i]++
				prod.Produce(ctx, &kgo.Record{Value: Stamp(64, e), Headers: []kgo.RecordHeader{{Key: RunHeader, Value: RunHeaderValue(run)}}}, nil)
			})
		})
	}
	pw.Wait()
	// Another run, and records of this run without the header: not ours.
	prod.Produce(ctx, &kgo.Record{Value: Stamp(64, Envelope{Run: run + 1}), Headers: []kgo.RecordHeader{{Key: RunHeader, Value: RunHeaderValue(run + 1)}}}, nil)
	prod.Produce(ctx, &kgo.Record{Value: Stamp(64, Envelope{Run: run, Seq: 1 << 20})}, nil)
	prod.Produce(ctx, &kgo.Record{Value: []byte("short")}, nil)
	require.NoError(t, prod.Flush(ctx))
	require.NoError(t, rd.Drain(ctx, nil, admin, []string{"t"}, 5*time.Second, 20*time.Second))
	stopReader()
	wg.Wait()

	done, left := rd.CaughtUp(start)
	assert.True(t, done)
	assert.Zero(t, left)
	var total uint64
	for i, tl := range tallies {
		counts := tl.Counts()
		require.Len(t, counts, int(sent[i]), "producer %d: only its sequence numbers", i)
		for seq, n := range counts {
			assert.Equal(t, uint8(1), n, "producer %d seq %d read once", i, seq)
		}
		assert.Zero(t, Duplicates(counts))
		total += sent[i]
	}
	assert.Equal(t, uint64(200), total, "two producers of 100 records each")
	assert.Equal(t, int(total), latencies, "one latency per record")
}
