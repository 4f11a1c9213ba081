package kafka

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kplan-dev/kplan/internal/measure"
	"github.com/kplan-dev/kplan/internal/stats"
)

// Record value layout of the batching study: every record names its run,
// cell and sequence number and carries the time it was handed to the
// producer, so loss and end-to-end latency are counted record by record.
const (
	batchOffRun  = 0  // uint64 run id
	batchOffCell = 8  // uint32 cell index
	batchOffSeq  = 12 // uint64 sequence number within the cell, from 0
	batchOffSent = 20 // int64 ns since the run's epoch when Produce was called
	// BatchHeaderLen is the smallest record value the study sends.
	BatchHeaderLen = 28
)

// batchWarmupCell is the cell index of warm-up records, which nothing
// counts.
const batchWarmupCell = ^uint32(0)

// batchLatencyCeiling is the largest end-to-end latency the histograms
// track.
const batchLatencyCeiling = 10 * time.Minute

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
	// Acks is "0", "1" or "all" (idempotent).
	Acks       string
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
	if spec.Acks != "all" {
		acks = "acks=" + spec.Acks + " (idempotence off: franz-go's 1 produce request in flight per broker)"
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
	conn    ConnOptions
	version string
	admin   *kgo.Client
	cons    *kgo.Client
	topic   BatchTopic
	runID   uint64
	epoch   time.Time
	stop    context.CancelFunc
	done    chan struct{}

	mu    sync.Mutex
	cells map[uint32]*batchCell
	next  map[int32]int64 // the consumer's next offset per partition
}

// batchCell is one cell's consumer-side bookkeeping.
type batchCell struct {
	seen       []uint8
	received   int64
	duplicates int64
	latency    *stats.Latency
	frozen     bool
}

// StartBatchRun creates the scratch topic (it must not exist) and starts
// the checking consumer. Close deletes the topic unless keep. When an error
// comes after the topic was created, the run is returned too: Close it.
func StartBatchRun(ctx context.Context, conn ConnOptions, version string, topic BatchTopic) (*BatchRun, error) {
	admin, err := NewClient(conn, version)
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
		cells: map[uint32]*batchCell{}, next: map[int32]int64{}}
	if err := r.waitLeaders(ctx); err != nil {
		return r, err
	}
	r.cons, err = NewClient(conn, version,
		kgo.ConsumeTopics(topic.Name),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(100*time.Millisecond),
		kgo.MetadataMinAge(100*time.Millisecond),
		kgo.FetchIsolationLevel(kgo.ReadUncommitted()),
	)
	if err != nil {
		return r, fmt.Errorf("consumer: %w", err)
	}
	cctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	r.stop, r.done = cancel, make(chan struct{})
	go r.consume(cctx)
	return r, nil
}

// Topic is the scratch topic with its replication factor resolved.
func (r *BatchRun) Topic() BatchTopic { return r.topic }

// waitLeaders waits until every partition of the new topic has a leader.
func (r *BatchRun) waitLeaders(ctx context.Context) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		md, err := kadm.NewClient(r.admin).Metadata(ctx, r.topic.Name)
		if err == nil {
			t := md.Topics[r.topic.Name]
			ok := t.Err == nil && len(t.Partitions) == r.topic.Partitions
			for _, p := range t.Partitions {
				ok = ok && p.Leader >= 0 && p.Err == nil
			}
			if ok {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("topic %s: partitions have no leader after 30s", r.topic.Name)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// consume reads the topic until ctx ends, timing and ticking off each of
// this run's records.
func (r *BatchRun) consume(ctx context.Context) {
	defer close(r.done)
	for {
		fs := r.cons.PollFetches(ctx)
		if ctx.Err() != nil {
			return
		}
		at := time.Since(r.epoch)
		r.mu.Lock()
		fs.EachRecord(func(rec *kgo.Record) {
			if n := rec.Offset + 1; n > r.next[rec.Partition] {
				r.next[rec.Partition] = n
			}
			v := rec.Value
			if len(v) < BatchHeaderLen || binary.BigEndian.Uint64(v[batchOffRun:]) != r.runID {
				return
			}
			c := r.cells[binary.BigEndian.Uint32(v[batchOffCell:])]
			if c == nil || c.frozen {
				return
			}
			seq := binary.BigEndian.Uint64(v[batchOffSeq:])
			if seq >= uint64(len(c.seen)) {
				return // not a sequence number this cell sent
			}
			if c.seen[seq] > 0 {
				c.duplicates++
				return
			}
			c.seen[seq] = 1
			c.received++
			c.latency.Record(at - time.Duration(binary.BigEndian.Uint64(v[batchOffSent:])))
		})
		r.mu.Unlock()
	}
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
	if spec.RecordSize < BatchHeaderLen {
		return measure.BatchCounts{}, fmt.Errorf("record size %d is below %d bytes", spec.RecordSize, BatchHeaderLen)
	}
	lat, err := stats.NewLatency(batchLatencyCeiling, spec.Objective)
	if err != nil {
		return measure.BatchCounts{}, err
	}
	idx := uint32(spec.Index)
	cell := &batchCell{latency: lat}
	r.mu.Lock()
	r.cells[idx] = cell
	r.mu.Unlock()

	hook := &batchHook{}
	opts := []kgo.Opt{
		kgo.DefaultProduceTopic(r.topic.Name),
		kgo.ProducerLinger(spec.Linger),
		kgo.ProducerBatchMaxBytes(spec.MaxBytes),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.RecordPartitioner(kgo.StickyPartitioner()),
		kgo.RecordDeliveryTimeout(spec.DeliveryTimeout),
		kgo.MaxBufferedRecords(spec.MaxBuffered),
		kgo.MetadataMinAge(100 * time.Millisecond),
		kgo.WithHooks(hook),
	}
	switch spec.Acks {
	case "0":
		opts = append(opts, kgo.RequiredAcks(kgo.NoAck()), kgo.DisableIdempotentWrite())
	case "1":
		opts = append(opts, kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	default:
		opts = append(opts, kgo.RequiredAcks(kgo.AllISRAcks()))
	}
	cl, err := NewClient(r.conn, r.version, opts...)
	if err != nil {
		return measure.BatchCounts{}, fmt.Errorf("producer: %w", err)
	}
	defer cl.Close()

	var acked, failed atomic.Int64
	promise := func(rec *kgo.Record, err error) {
		if binary.BigEndian.Uint32(rec.Value[batchOffCell:]) == batchWarmupCell {
			return
		}
		if err != nil {
			failed.Add(1)
			return
		}
		acked.Add(1)
	}
	// The seen slice grows with the sequence numbers sent, under r.mu.
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
		Sent: sent, Acked: acked.Load(), Failed: failed.Load(), Received: cell.received, Duplicates: cell.duplicates,
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
	burst := int64(max(1, spec.Rate/10)) // at most 100 ms of debt is caught up
	t0 := time.Now()
	var paced, sent int64 // paced: the pacing's count (catch-up skips records), sent: measured records produced
	for {
		el := time.Since(t0)
		if el >= spec.Warmup+spec.Duration || ctx.Err() != nil {
			return sent, max(0, el-spec.Warmup), nil
		}
		if spec.Rate > 0 {
			due := int64(el.Seconds() * spec.Rate)
			if due-paced > burst {
				paced = due - burst // the records skipped were never sent: not counted
			}
			if paced >= due {
				time.Sleep(min(time.Millisecond, spec.Duration-el))
				continue
			}
		}
		val := make([]byte, spec.RecordSize)
		binary.BigEndian.PutUint64(val[batchOffRun:], r.runID)
		if el < spec.Warmup {
			binary.BigEndian.PutUint32(val[batchOffCell:], batchWarmupCell)
		} else {
			if sent == 0 {
				onMeasure()
			}
			binary.BigEndian.PutUint32(val[batchOffCell:], uint32(spec.Index))
			r.mu.Lock()
			seq := uint64(len(cell.seen))
			cell.seen = append(cell.seen, 0)
			r.mu.Unlock()
			binary.BigEndian.PutUint64(val[batchOffSeq:], seq)
			sent++
		}
		binary.BigEndian.PutUint64(val[batchOffSent:], uint64(time.Since(r.epoch)))
		cl.Produce(ctx, &kgo.Record{Value: val}, promise)
		paced++
	}
}

// drain waits until the consumer has read every partition up to its high
// watermark, or timeout.
func (r *BatchRun) drain(ctx context.Context, timeout time.Duration) {
	dctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	ends, err := kadm.NewClient(r.admin).ListEndOffsets(dctx, r.topic.Name)
	if err != nil {
		return
	}
	for {
		left := false
		r.mu.Lock()
		ends.Each(func(o kadm.ListedOffset) {
			if o.Err == nil && r.next[o.Partition] < o.Offset {
				left = true
			}
		})
		r.mu.Unlock()
		if !left {
			return
		}
		select {
		case <-dctx.Done():
			return
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Close stops the consumer and deletes the scratch topic unless keep,
// waiting until the cluster no longer lists it. It runs its own 30 s
// deadline, so it works after ctx was cancelled (Ctrl-C).
func (r *BatchRun) Close(ctx context.Context, keep bool) error {
	if r.stop != nil {
		r.stop()
		<-r.done
	}
	if r.cons != nil {
		r.cons.Close()
	}
	defer r.admin.Close()
	if keep {
		return nil
	}
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	_, err := DeleteTopicsAndWait(dctx, r.admin, r.topic.Name)
	return err
}
