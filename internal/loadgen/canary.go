package loadgen

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kplan-dev/kplan/internal/clock"
	"github.com/kplan-dev/kplan/internal/kafka"
	"github.com/kplan-dev/kplan/internal/stats"
)

// This file is the canary of `kplan reassign apply --latency-objective`:
// a small idempotent acks=all producer and its checking consumer on a
// scratch topic with one partition led by each broker a plan touches, so
// that what a client feels on each broker while replicas move is measured,
// window by window.

// CanarySpec is a canary.
type CanarySpec struct {
	// Topic is the scratch topic the canary creates and deletes.
	Topic string
	// Leaders lead one partition each, partition i led by Leaders[i].
	Leaders []int32
	// Brokers are the running brokers the followers are taken from
	// (Leaders first; the others are added after them).
	Brokers []int32
	// RF is the replication factor (capped at the brokers there are).
	RF int
	// Rate is the canary's rate in bytes/s in all, RecordSize each
	// record's size.
	Rate       float64
	RecordSize int
	// Run stamps the records (Envelope.Run).
	Run uint64
}

// CanaryBroker is the canary's figures on one broker: the acks=all
// produce latency (what the objective is about) and the end-to-end
// latency, in milliseconds.
type CanaryBroker struct {
	Broker    int32                `json:"broker"`
	Partition int32                `json:"partition"`
	Produce   stats.LatencySummary `json:"produce_ms"`
	EndToEnd  stats.LatencySummary `json:"end_to_end_ms"`
}

// CanaryResult is the canary's whole run.
type CanaryResult struct {
	Topic   string         `json:"topic"`
	Brokers []CanaryBroker `json:"brokers"`
	// Sent, Acked and Read count records; Lost are records acknowledged
	// and never read back, Duplicates records read at two positions.
	Sent       int64 `json:"sent"`
	Acked      int64 `json:"acked"`
	Failed     int64 `json:"failed"`
	Read       int64 `json:"read"`
	Lost       int64 `json:"lost"`
	Duplicates int64 `json:"duplicates"`
	// Deleted says the scratch topic was deleted.
	Deleted bool `json:"deleted"`
}

// Canary is a running canary.
type Canary struct {
	spec  CanarySpec
	m     *Measurer
	clk   clock.Clock
	prod  *kgo.Client
	cons  *kgo.Client
	tally Tally

	mu      sync.Mutex
	window  []*stats.Latency // produce latency per partition since Window
	produce []*stats.Latency
	e2e     []*stats.Latency
	acked   []bool
	nAcked  int64
	failed  int64

	start    time.Time
	reader   *Reader
	stopProd context.CancelFunc
	stopRead context.CancelFunc
	prodDone sync.WaitGroup
	readDone sync.WaitGroup
}

// StartCanary creates the canary's topic and starts producing and
// reading. On error nothing it created is left.
func StartCanary(ctx context.Context, conn kafka.ConnOptions, version string, spec CanarySpec, clk clock.Clock) (*Canary, error) {
	if clk == nil {
		clk = clock.System{}
	}
	if len(spec.Leaders) == 0 || spec.Rate <= 0 || spec.RecordSize < EnvelopeLen {
		return nil, fmt.Errorf("canary: want leaders, a positive rate and records of %d bytes or more", EnvelopeLen)
	}
	order := slices.Clone(spec.Leaders)
	for _, b := range spec.Brokers {
		if !slices.Contains(order, b) {
			order = append(order, b)
		}
	}
	rf := min(max(spec.RF, 1), len(order))
	c := &Canary{spec: spec, m: NewMeasurer(conn, version), clk: clk}
	fail := func(err error) (*Canary, error) {
		c.close()
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		_, _ = c.m.DeleteScratch(dctx)
		c.m.Close()
		return nil, err
	}
	if err := c.m.CreateScratch(ctx, spec.Topic, len(spec.Leaders), rf, order); err != nil {
		return fail(fmt.Errorf("canary topic: %w", err))
	}
	var err error
	c.prod, err = kafka.NewClient(conn, version, append(AcksAll.ProducerOpts(),
		kgo.DefaultProduceTopic(spec.Topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(0),
		kgo.ProducerBatchCompression(kgo.NoCompression()))...)
	if err != nil {
		return fail(err)
	}
	c.cons, err = kafka.NewClient(conn, version, kgo.ConsumeTopics(spec.Topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100*time.Millisecond))
	if err != nil {
		return fail(err)
	}
	if err := c.warm(ctx); err != nil {
		return fail(err)
	}
	n := len(spec.Leaders)
	for range n {
		for _, h := range []*[]*stats.Latency{&c.window, &c.produce, &c.e2e} {
			l, _ := NewLatency(time.Second) // the objective is judged by the caller
			*h = append(*h, l)
		}
	}
	// The canary's own contexts: the caller's ctx ends at Ctrl-C, when
	// the canary must still be stopped and its topic deleted by Stop.
	base := context.WithoutCancel(ctx)
	prodCtx, stopProd := context.WithCancel(base)
	readCtx, stopRead := context.WithCancel(base)
	c.stopProd, c.stopRead = stopProd, stopRead
	c.start = clk.Now()
	c.reader = NewReader(c.cons, nil)
	c.reader.Accept = func(run uint64) bool { return run == spec.Run }
	c.readDone.Go(func() { c.reader.Run(readCtx, clk, c.read) })
	c.prodDone.Go(func() { c.produceLoop(prodCtx, base) })
	return c, nil
}

// warm writes one unstamped record to every partition (the reader skips
// them), so that the first window measures Kafka, not the client's start.
func (c *Canary) warm(ctx context.Context) error {
	var last error
	err := clock.Poll(ctx, nil, 200*time.Millisecond, 30*time.Second, func(ctx context.Context) (bool, error) {
		recs := make([]*kgo.Record, len(c.spec.Leaders))
		for i := range recs {
			recs[i] = &kgo.Record{Topic: c.spec.Topic, Partition: int32(i), Value: []byte("warm")}
		}
		last = c.prod.ProduceSync(ctx, recs...).FirstErr()
		return last == nil, nil
	})
	if err != nil {
		return fmt.Errorf("canary: warming its producer: %w (last: %w)", err, last)
	}
	return nil
}

// produceLoop sends stamped records round robin over the partitions at
// the spec's rate until ctx ends; the records are produced on base, which
// does not end, so that each is acknowledged or fails on its own.
func (c *Canary) produceLoop(ctx, base context.Context) {
	n := len(c.spec.Leaders)
	rate := c.spec.Rate / float64(c.spec.RecordSize)
	var seq uint64
	NewPacer(rate, time.Millisecond, c.clk).Run(ctx, func() bool { return false }, func() {
		p := int32(seq % uint64(n))
		sent := c.clk.Now()
		rec := &kgo.Record{Partition: p, Value: Stamp(c.spec.RecordSize, Envelope{Run: c.spec.Run, Seq: seq, Sent: sent.Sub(c.start)})}
		s := seq
		seq++
		c.mu.Lock()
		c.acked = append(c.acked, false)
		c.mu.Unlock()
		c.prod.Produce(base, rec, func(_ *kgo.Record, err error) {
			d := c.clk.Now().Sub(sent)
			c.mu.Lock()
			defer c.mu.Unlock()
			if err != nil {
				if !errors.Is(err, context.Canceled) {
					c.failed++
				}
				return
			}
			c.acked[s] = true
			c.nAcked++
			c.window[p].Record(d)
			c.produce[p].Record(d)
		})
	})
}

// read counts a record read back and its end-to-end latency.
func (c *Canary) read(rec *kgo.Record, e Envelope, at time.Time) {
	if !c.tally.Read(e.Seq, Pos(rec.Partition, rec.Offset)) {
		return
	}
	d := at.Sub(c.start) - e.Sent
	c.mu.Lock()
	defer c.mu.Unlock()
	if int(rec.Partition) < len(c.e2e) {
		c.e2e[rec.Partition].Record(max(d, 0))
	}
}

// Window returns, per leader broker, the produce latency since the
// previous call.
func (c *Canary) Window() map[int32]stats.LatencySummary {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[int32]stats.LatencySummary, len(c.window))
	for p, l := range c.window {
		out[c.spec.Leaders[p]] = l.Summary()
		c.window[p], _ = NewLatency(time.Second)
	}
	return out
}

// Stop stops producing, waits until what was sent is acknowledged or
// failed, reads every partition to its end (bounded by drain), deletes the
// topic and returns the whole run's figures. Call it on a context that
// Ctrl-C does not cancel; the topic is deleted also when reading fails.
func (c *Canary) Stop(ctx context.Context, drain time.Duration) (CanaryResult, error) {
	res := CanaryResult{Topic: c.spec.Topic}
	var errs []error
	if c.stopProd != nil {
		c.stopProd()
		c.prodDone.Wait()
		fctx, cancel := context.WithTimeout(ctx, drain)
		if err := c.prod.Flush(fctx); err != nil {
			errs = append(errs, fmt.Errorf("canary: records still unacknowledged after %v: %w", drain, err))
		}
		cancel()
		if admin, err := c.m.admin.Client(); err != nil {
			errs = append(errs, err)
		} else if err := c.reader.Drain(ctx, c.clk, admin, []string{c.spec.Topic}, 0, drain); err != nil {
			errs = append(errs, fmt.Errorf("canary: reading back: %w", err))
		}
		c.stopRead()
		c.readDone.Wait()
	}
	c.mu.Lock()
	res.Sent, res.Acked, res.Failed = int64(len(c.acked)), c.nAcked, c.failed
	counts := c.tally.Counts()
	for seq, ok := range c.acked {
		switch {
		case !ok:
		case seq >= len(counts) || counts[seq] == 0:
			res.Lost++
		}
	}
	for _, n := range counts {
		if n > 0 {
			res.Read++
		}
	}
	res.Duplicates = Duplicates(counts)
	for p, b := range c.spec.Leaders {
		if p < len(c.produce) {
			res.Brokers = append(res.Brokers, CanaryBroker{Broker: b, Partition: int32(p), Produce: c.produce[p].Summary(), EndToEnd: c.e2e[p].Summary()})
		}
	}
	c.mu.Unlock()
	c.close()
	deleted, err := c.m.DeleteScratch(ctx)
	res.Deleted = err == nil && slices.Contains(deleted, c.spec.Topic)
	if err != nil {
		errs = append(errs, fmt.Errorf("deleting canary topic %s: %w", c.spec.Topic, err))
	}
	c.m.Close()
	return res, errors.Join(errs...)
}

// close closes the clients.
func (c *Canary) close() {
	if c.prod != nil {
		c.prod.Close()
	}
	if c.cons != nil {
		c.cons.Close()
	}
}
