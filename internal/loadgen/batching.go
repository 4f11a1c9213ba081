package loadgen

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kplan-dev/kplan/internal/clock"
	"github.com/kplan-dev/kplan/internal/kafka"
	"github.com/kplan-dev/kplan/internal/measure"
	"github.com/kplan-dev/kplan/internal/stats"
)

// The batching study's records carry the Envelope: each cell is a run of
// its own (its run id is the study's plus the cell's index plus one), one
// producer, sequence numbers from 0 for its measured records; warm-up
// records carry batchWarmupTag and nothing counts them.
const batchWarmupTag = 1

// BatchTopic is the batching study's scratch topic.
type BatchTopic struct {
	Name       string
	Partitions int
	// ReplicationFactor 0 means min(3, brokers).
	ReplicationFactor int
}

// BatchCellSpec is how one cell of the sweep produces.
type BatchCellSpec struct {
	// Index is the cell's index in the sweep (carried in each record).
	Index  int
	Linger time.Duration
	// MaxBytes is ProducerBatchMaxBytes (batch.size).
	MaxBytes int32
	// Acks is the producer's acknowledgement level (idempotent at all).
	Acks       Acks
	RecordSize int
	// Rate is records per second; 0 is as fast as the producer can.
	Rate float64
	// Warmup is produced first and not measured (connections, metadata,
	// the brokers' JIT, the queue reaching its steady state).
	Warmup   time.Duration
	Duration time.Duration
	// DeliveryTimeout bounds each record's delivery (franz-go's
	// RecordDeliveryTimeout, Kafka's delivery.timeout.ms) and the final
	// flush.
	DeliveryTimeout time.Duration
	// DrainTimeout bounds the wait for the consumer to read the cell's
	// records back after the flush.
	DrainTimeout time.Duration
	// MaxBuffered caps buffered plus unacknowledged records.
	MaxBuffered int
	// Objective is the latency objective of the violation rate.
	Objective time.Duration
}

// BatchProducerSettings states the producer settings every cell shares,
// for the study's output.
func BatchProducerSettings(spec BatchCellSpec) []string {
	acks := "acks=all (idempotent: up to 5 produce requests in flight per broker)"
	if spec.Acks != AcksAll {
		acks = "acks=" + spec.Acks.String() + " (idempotence off: franz-go's 1 produce request in flight per broker)"
	}
	return []string{
		"franz-go producer: linger = the cell's linger (ProducerLinger), batch.size = the cell's bytes (ProducerBatchMaxBytes)",
		acks,
		"compression none (so batch.size bounds the records a batch holds; franz-go's default snappy would merge batches)",
		"sticky partitioner (a new partition per batch when the topic has more than one)",
		fmt.Sprintf("delivery timeout %s (records not acknowledged by then fail and count as lost)", spec.DeliveryTimeout),
		fmt.Sprintf("at most %d records buffered or in flight", spec.MaxBuffered),
		"checking consumer: one client reading every partition from the start, fetch max wait 100ms",
		fmt.Sprintf("each cell: a new producer, %s of warm-up not measured, then %s measured", spec.Warmup, spec.Duration),
	}
}

// BatchRun is the Kafka side of the batching study: the scratch topic, one
// checking consumer reading it throughout, and a producer per cell.
type BatchRun struct {
	conn    kafka.ConnOptions
	version string
	admin   *kgo.Client
	reader  *Reader
	topic   BatchTopic
	runID   uint64
	epoch   time.Time
	stop    context.CancelFunc
	done    chan struct{}

	mu    sync.Mutex
	cells map[uint64]*batchCell // by the cell's run id
}

// batchCell is one cell's consumer-side bookkeeping.
type batchCell struct {
	run      uint64
	sent     uint64 // measured records sent: the sequence numbers in use
	tally    Tally
	received int64
	latency  *stats.Latency
	frozen   bool
}

// StartBatchRun creates the scratch topic (it must not exist) and starts
// the checking consumer. Close deletes the topic unless keep. When an error
// comes after the topic was created, the run is returned too: Close it.
func StartBatchRun(ctx context.Context, conn kafka.ConnOptions, version string, topic BatchTopic) (*BatchRun, error) {
	admin, err := kafka.NewClient(conn, version)
	if err != nil {
		return nil, err
	}
	adm := kadm.NewClient(admin)
	if topic.ReplicationFactor == 0 {
		bs, err := adm.ListBrokers(ctx)
		if err != nil {
			admin.Close()
			return nil, fmt.Errorf("list brokers: %w", err)
		}
		topic.ReplicationFactor = min(3, len(bs))
	}
	if topic.Partitions < 1 || topic.ReplicationFactor < 1 {
		admin.Close()
		return nil, fmt.Errorf("topic %s: want at least one partition and one replica", topic.Name)
	}
	resp, err := adm.CreateTopic(ctx, int32(topic.Partitions), int16(topic.ReplicationFactor), nil, topic.Name)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		admin.Close()
		return nil, fmt.Errorf("create topic %s: %w", topic.Name, err)
	}
	r := &BatchRun{conn: conn, version: version, admin: admin, topic: topic, runID: rand.Uint64(), epoch: time.Now(),
		cells: map[uint64]*batchCell{}}
	if err := kafka.WaitLeaders(ctx, admin, 30*time.Second, topic.Name); err != nil {
		return r, fmt.Errorf("topic %s: partitions have no leader after 30s: %w", topic.Name, err)
	}
	cons, err := kafka.NewClient(conn, version,
		kgo.ConsumeTopics(topic.Name),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(100*time.Millisecond),
		kgo.MetadataMinAge(100*time.Millisecond),
		kgo.FetchIsolationLevel(kgo.ReadUncommitted()),
	)
	if err != nil {
		return r, fmt.Errorf("consumer: %w", err)
	}
	r.reader = NewReader(cons, nil)
	cctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	r.stop, r.done = cancel, make(chan struct{})
	go r.consume(cctx)
	return r, nil
}

// Topic is the scratch topic with its replication factor resolved.
func (r *BatchRun) Topic() BatchTopic { return r.topic }

// consume reads the topic until ctx ends, timing and ticking off each of
// this run's records.
func (r *BatchRun) consume(ctx context.Context) {
	defer close(r.done)
	r.reader.Run(ctx, nil, func(rec *kgo.Record, e Envelope, at time.Time) {
		if e.Tag == batchWarmupTag {
			return
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		c := r.cells[e.Run]
		if c == nil || c.frozen || e.Seq >= c.sent {
			return // another cell's, too late, or not a sequence number this cell sent
		}
		if c.tally.Read(e.Seq, Pos(rec.Partition, rec.Offset)) {
			c.received++
			c.latency.Record(at.Sub(r.epoch) - e.Sent)
		}
	})
}

// batchHook counts the batches the brokers acknowledged.
type batchHook struct{ batches, records atomic.Int64 }

// OnProduceBatchWritten implements kgo.HookProduceBatchWritten.
func (h *batchHook) OnProduceBatchWritten(_ kgo.BrokerMetadata, _ string, _ int32, m kgo.ProduceBatchMetrics) {
	h.batches.Add(1)
	h.records.Add(int64(m.NumRecords))
}

var _ kgo.HookProduceBatchWritten = (*batchHook)(nil)

// RunCell produces one cell, flushes, waits for the consumer to read the
// cell's records back (or spec.DrainTimeout), and returns its counts. When
// ctx ends, it stops early and returns the counts so far with ctx's error.
func (r *BatchRun) RunCell(ctx context.Context, spec BatchCellSpec) (measure.BatchCounts, error) {
	if spec.RecordSize < EnvelopeLen {
		return measure.BatchCounts{}, fmt.Errorf("record size %d is below %d bytes", spec.RecordSize, EnvelopeLen)
	}
	lat, err := NewLatency(spec.Objective)
	if err != nil {
		return measure.BatchCounts{}, err
	}
	cell := &batchCell{run: r.runID + uint64(spec.Index) + 1, latency: lat}
	r.mu.Lock()
	r.cells[cell.run] = cell
	r.mu.Unlock()

	hook := &batchHook{}
	opts := append(spec.Acks.ProducerOpts(),
		kgo.DefaultProduceTopic(r.topic.Name),
		kgo.ProducerLinger(spec.Linger),
		kgo.ProducerBatchMaxBytes(spec.MaxBytes),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.RecordPartitioner(kgo.StickyPartitioner()),
		kgo.RecordDeliveryTimeout(spec.DeliveryTimeout),
		kgo.MaxBufferedRecords(spec.MaxBuffered),
		kgo.MetadataMinAge(100*time.Millisecond),
		kgo.WithHooks(hook),
	)
	cl, err := kafka.NewClient(r.conn, r.version, opts...)
	if err != nil {
		return measure.BatchCounts{}, fmt.Errorf("producer: %w", err)
	}
	defer cl.Close()

	var acked, failed atomic.Int64
	promise := func(rec *kgo.Record, err error) {
		if e, _ := DecodeEnvelope(rec.Value); e.Tag == batchWarmupTag {
			return
		}
		if err != nil {
			failed.Add(1)
			return
		}
		acked.Add(1)
	}
	sent, window, runErr := r.produce(ctx, cl, cell, spec, promise, func() {
		hook.batches.Store(0) // warm-up batches are not counted
		hook.records.Store(0)
	})

	// Flush what is buffered; what is not delivered in time fails.
	fctx, cancel := context.WithTimeout(ctx, spec.DeliveryTimeout+5*time.Second)
	if ferr := cl.Flush(fctx); ferr != nil {
		actx, acancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		_ = cl.AbortBufferedRecords(actx) // fails every record still buffered; the counts say so
		acancel()
	}
	cancel()
	if runErr == nil && ctx.Err() == nil {
		r.drain(ctx, spec.DrainTimeout)
	}
	r.mu.Lock()
	cell.frozen = true
	counts := measure.BatchCounts{
		Sent: sent, Acked: acked.Load(), Failed: failed.Load(), Received: cell.received, Duplicates: Duplicates(cell.tally.Counts()),
		Batches: hook.batches.Load(), BatchRecords: hook.records.Load(), Window: window, Latency: cell.latency.Clone(),
	}
	r.mu.Unlock()
	if runErr == nil {
		runErr = ctx.Err()
	}
	return counts, runErr
}

// produce sends records paced at spec.Rate for spec.Warmup, unmeasured,
// then for spec.Duration, and returns how many it sent after the warm-up
// and for how long.
// onMeasure is called once, when the warm-up ends.
func (r *BatchRun) produce(ctx context.Context, cl *kgo.Client, cell *batchCell, spec BatchCellSpec, promise func(*kgo.Record, error), onMeasure func()) (int64, time.Duration, error) {
	pacer := NewPacer(spec.Rate, time.Millisecond, nil)
	var sent int64 // measured records produced
	pacer.Run(ctx, func() bool { return pacer.Elapsed() >= spec.Warmup+spec.Duration }, func() {
		e := Envelope{Run: cell.run, Tag: batchWarmupTag}
		if pacer.Elapsed() >= spec.Warmup {
			if sent == 0 {
				onMeasure()
			}
			r.mu.Lock()
			e.Seq, e.Tag = cell.sent, 0
			cell.sent++
			r.mu.Unlock()
			sent++
		}
		e.Sent = time.Since(r.epoch)
		cl.Produce(ctx, &kgo.Record{Value: Stamp(spec.RecordSize, e)}, promise)
	})
	return sent, max(0, pacer.Elapsed()-spec.Warmup), nil
}

// drain waits until the consumer has read every partition up to its high
// watermark, or timeout.
func (r *BatchRun) drain(ctx context.Context, timeout time.Duration) {
	_ = r.reader.Drain(ctx, clock.System{}, r.admin, []string{r.topic.Name}, 0, timeout) // what is not read back counts as lost
}

// Close stops the consumer and deletes the scratch topic unless keep,
// waiting until the cluster no longer lists it. It runs its own 30 s
// deadline, so it works after ctx was cancelled (Ctrl-C).
func (r *BatchRun) Close(ctx context.Context, keep bool) error {
	if r.stop != nil {
		r.stop()
		<-r.done
	}
	if r.reader != nil {
		r.reader.Client().Close()
	}
	defer r.admin.Close()
	if keep {
		return nil
	}
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	_, err := kafka.DeleteTopicsAndWait(dctx, r.admin, r.topic.Name)
	return err
}
