package loadgen

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/kplan-dev/kplan/internal/clock"
	"github.com/kplan-dev/kplan/internal/kafka"
)

// Measurer runs `kplan measure`'s raw measurements on one cluster: it
// creates and deletes scratch topics, produces, consumes and moves
// leadership. It returns raw samples; internal/measure summarises them.
type Measurer struct {
	conn    kafka.ConnOptions
	version string
	admin   *kafka.Admin

	mu      sync.Mutex
	created []string
}

// NewMeasurer returns a Measurer over conn; nothing connects until the
// first call.
func NewMeasurer(conn kafka.ConnOptions, version string) *Measurer {
	return &Measurer{conn: conn, version: version, admin: kafka.NewAdmin(conn, version)}
}

// Close releases the admin client.
func (m *Measurer) Close() { m.admin.Close() }

// ClusterInfo is what measure states about the cluster it measured.
type ClusterInfo struct {
	ClusterID string
	Brokers   []int32
	// VersionGuess is franz-go's guess of the Kafka version from the
	// brokers' ApiVersions answer, e.g. "v4.1" or "at least v4.1".
	VersionGuess string
}

// Info reads the cluster id, the brokers and a version guess.
func (m *Measurer) Info(ctx context.Context) (ClusterInfo, error) {
	cl, err := m.admin.Client()
	if err != nil {
		return ClusterInfo{}, err
	}
	ctx, cancel := m.admin.Bounded(ctx)
	defer cancel()
	md, err := kadm.NewClient(cl).BrokerMetadata(ctx)
	if err != nil {
		return ClusterInfo{}, m.admin.Classify(fmt.Errorf("metadata: %w", err))
	}
	info := ClusterInfo{ClusterID: md.Cluster, Brokers: md.Brokers.NodeIDs()}
	slices.Sort(info.Brokers)
	if resp, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, cl); err == nil && resp.ErrorCode == 0 {
		info.VersionGuess = kversion.FromApiVersionsResponse(resp).VersionGuess()
	}
	return info, nil
}

// CreateScratch creates topic with partitions partitions of rf replicas
// placed round robin over brokers (partition p's preferred leader is
// brokers[p mod n]), and remembers it for DeleteScratch.
func (m *Measurer) CreateScratch(ctx context.Context, topic string, partitions, rf int, brokers []int32) error {
	cl, err := m.admin.Client()
	if err != nil {
		return err
	}
	if rf < 1 || rf > len(brokers) {
		return fmt.Errorf("create topic %s: replication factor %d with %d brokers", topic, rf, len(brokers))
	}
	assignment := make([][]int32, partitions)
	for p := range assignment {
		for r := range rf {
			assignment[p] = append(assignment[p], brokers[(p+r)%len(brokers)])
		}
	}
	cctx, cancel := m.admin.Bounded(ctx)
	defer cancel()
	if err := kafka.CreateTopic(cctx, cl, topic, assignment, nil); err != nil {
		return m.admin.Classify(err)
	}
	m.mu.Lock()
	m.created = append(m.created, topic)
	m.mu.Unlock()
	return m.waitLeaders(ctx, topic, partitions)
}

// waitLeaders waits until every broker's metadata gives every partition of
// topic a leader: a producer may ask any of them first.
func (m *Measurer) waitLeaders(ctx context.Context, topic string, partitions int) error {
	cl, err := m.admin.Client()
	if err != nil {
		return err
	}
	wait := m.admin.Timeout() + 20*time.Second
	if err := kafka.WaitLeaders(ctx, cl, wait, topic); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("topic %s: not every broker knows a leader for its %d partitions after %s", topic, partitions, wait)
	}
	return nil
}

// Created lists the scratch topics created so far.
func (m *Measurer) Created() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.created)
}

// DeleteScratch deletes every scratch topic created and returns those
// deleted. Call it on a context that Ctrl-C does not cancel.
func (m *Measurer) DeleteScratch(ctx context.Context) ([]string, error) {
	topics := m.Created()
	if len(topics) == 0 {
		return nil, nil
	}
	cl, err := m.admin.Client()
	if err != nil {
		return nil, err
	}
	ctx, cancel := m.admin.Bounded(ctx)
	defer cancel()
	// "Deleted" means gone: DeleteTopicsAndWait waits (within the bound)
	// until no broker lists them.
	deleted, err := kafka.DeleteTopicsAndWait(ctx, cl, topics...)
	m.mu.Lock()
	m.created = slices.DeleteFunc(m.created, func(t string) bool { return slices.Contains(deleted, t) })
	m.mu.Unlock()
	if err != nil {
		return deleted, m.admin.Classify(err)
	}
	return deleted, nil
}

// Windows is bytes counted in consecutive windows of one duration from a
// start: Bytes[i] fell in [i*Window, (i+1)*Window).
type Windows struct {
	Window  time.Duration
	Bytes   []int64
	Records int64
	Total   int64
	// Elapsed is from the start to the last counted byte.
	Elapsed time.Duration
}

type windowCounter struct {
	start  time.Time
	window time.Duration
	mu     sync.Mutex
	w      Windows
}

func newWindowCounter(start time.Time, window time.Duration) *windowCounter {
	return &windowCounter{start: start, window: window, w: Windows{Window: window}}
}

func (c *windowCounter) add(at time.Time, bytes int64) {
	d := at.Sub(c.start)
	i := int(d / c.window)
	c.mu.Lock()
	defer c.mu.Unlock()
	for len(c.w.Bytes) <= i {
		c.w.Bytes = append(c.w.Bytes, 0)
	}
	c.w.Bytes[i] += bytes
	c.w.Records++
	c.w.Total += bytes
	c.w.Elapsed = max(c.w.Elapsed, d)
}

func (c *windowCounter) result() Windows {
	c.mu.Lock()
	defer c.mu.Unlock()
	w := c.w
	w.Bytes = slices.Clone(w.Bytes)
	return w
}

// ProduceSpec is one producer's measurement.
type ProduceSpec struct {
	Topic      string
	Partition  int32
	Acks       Acks
	RecordSize int
	Duration   time.Duration
	Window     time.Duration
	// Linger is the producer's linger; MaxBufferedRecords and
	// MaxBufferedBytes bound its buffer (buffered plus unacknowledged), in
	// records and in bytes of record values (0: no byte bound).
	Linger             time.Duration
	MaxBufferedRecords int
	MaxBufferedBytes   int
}

// payload is size bytes that do not compress (seeded, so runs repeat).
func payload(size int) []byte {
	r := rand.New(rand.NewPCG(1, 2))
	b := make([]byte, size)
	for i := range b {
		b[i] = byte(r.UintN(256))
	}
	return b
}

// MeasureProduce writes to one partition as fast as one uncompressed
// producer can for s.Duration and counts the acknowledged bytes (record
// values) per window by acknowledgement time. At acks=0 a record counts
// when it is written to the connection. Only acknowledgements within
// s.Duration count: at the deadline the producer stops, the records still
// buffered are aborted (those in flight are waited for, as idempotence
// requires) and nothing acknowledged after the deadline is counted, so the
// run's windows hold what the cluster acknowledged during the run and no
// backlog is drained after it.
func (m *Measurer) MeasureProduce(ctx context.Context, s ProduceSpec) (Windows, error) {
	opts := append(s.Acks.ProducerOpts(),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.ProducerLinger(s.Linger),
		kgo.MaxBufferedRecords(s.MaxBufferedRecords),
		kgo.ProducerBatchMaxBytes(int32(max(s.RecordSize+1024, 1<<20))),
	)
	if s.MaxBufferedBytes > 0 {
		opts = append(opts, kgo.MaxBufferedBytes(max(s.MaxBufferedBytes, s.RecordSize)))
	}
	cl, err := kafka.NewClient(m.conn, m.version, opts...)
	if err != nil {
		return Windows{}, err
	}
	defer cl.Close()
	value := payload(s.RecordSize)
	// One record first, outside the count: connections and producer id.
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: s.Topic, Partition: s.Partition, Value: value}).FirstErr(); err != nil {
		return Windows{}, m.admin.Classify(fmt.Errorf("produce to %s/%d: %w", s.Topic, s.Partition, err))
	}
	start := time.Now()
	wc := newWindowCounter(start, s.Window)
	var firstErr atomic.Pointer[error]
	var ended atomic.Bool
	deadline := start.Add(s.Duration)
	// Records carry ctx, not the run's deadline: a non-idempotent producer
	// would drop the buffered ones at the deadline instead of sending them.
	for time.Now().Before(deadline) && firstErr.Load() == nil && ctx.Err() == nil {
		cl.Produce(ctx, &kgo.Record{Topic: s.Topic, Partition: s.Partition, Value: value}, func(r *kgo.Record, err error) {
			if err != nil {
				// Records aborted at the end are not an error of the run.
				aborted := ended.Load() && errors.Is(err, kgo.ErrAborting)
				if !errors.Is(err, context.Canceled) && !aborted {
					firstErr.CompareAndSwap(nil, &err)
				}
				return
			}
			if at := time.Now(); at.Before(deadline) {
				wc.add(at, int64(len(r.Value)))
			}
		})
	}
	// The run is over: what is still buffered is not part of it.
	ended.Store(true)
	actx, acancel := context.WithTimeout(ctx, 30*time.Second)
	defer acancel()
	_ = cl.AbortBufferedRecords(actx)
	if err := ctx.Err(); err != nil {
		return Windows{}, err
	}
	if e := firstErr.Load(); e != nil {
		return Windows{}, m.admin.Classify(fmt.Errorf("produce to %s/%d: %w", s.Topic, s.Partition, *e))
	}
	return wc.result(), nil
}

// ConsumeSpec is one consumer's measurement.
type ConsumeSpec struct {
	Topic     string
	Partition int32
	Duration  time.Duration
	Window    time.Duration
}

// MeasureConsume reads one partition from its start with one consumer (no
// group) for s.Duration, going back to the start each time it reaches the
// end offset it saw first, and counts the record bytes (values) per window
// by the time they were polled. The partition must hold records.
func (m *Measurer) MeasureConsume(ctx context.Context, s ConsumeSpec) (Windows, error) {
	admin, err := m.admin.Client()
	if err != nil {
		return Windows{}, err
	}
	ectx, ecancel := m.admin.Bounded(ctx)
	ends, err := kadm.NewClient(admin).ListEndOffsets(ectx, s.Topic)
	ecancel()
	if err != nil {
		return Windows{}, m.admin.Classify(fmt.Errorf("end offsets of %s: %w", s.Topic, err))
	}
	end, ok := ends.Lookup(s.Topic, s.Partition)
	if !ok || end.Err != nil || end.Offset <= 0 {
		return Windows{}, fmt.Errorf("consume %s/%d: no records to read", s.Topic, s.Partition)
	}
	cl, err := kafka.NewClient(m.conn, m.version,
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{s.Topic: {s.Partition: kgo.NewOffset().AtStart()}}))
	if err != nil {
		return Windows{}, err
	}
	defer cl.Close()
	start := time.Now()
	wc := newWindowCounter(start, s.Window)
	pctx, cancel := context.WithDeadline(ctx, start.Add(s.Duration))
	defer cancel()
	for pctx.Err() == nil {
		fs := cl.PollFetches(pctx)
		now := time.Now()
		var ferr error
		fs.EachError(func(_ string, _ int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) && ferr == nil {
				ferr = err
			}
		})
		if ferr != nil {
			return Windows{}, m.admin.Classify(fmt.Errorf("consume %s/%d: %w", s.Topic, s.Partition, ferr))
		}
		last := int64(-1)
		fs.EachRecord(func(r *kgo.Record) {
			if now.Sub(start) < s.Duration {
				wc.add(now, int64(len(r.Value)))
			}
			last = r.Offset
		})
		if last >= end.Offset-1 {
			cl.SetOffsets(map[string]map[int32]kgo.EpochOffset{s.Topic: {s.Partition: {Epoch: -1, Offset: 0}}})
		}
	}
	if err := ctx.Err(); err != nil {
		return Windows{}, err
	}
	return wc.result(), nil
}

// LatencyPair is one sample of the replication measurement: the produce
// latency of one record at acks=all and of one at acks=1, sent back to back.
type LatencyPair struct {
	All, Leader time.Duration
}

// ReplicationSpec is the replication latency measurement.
type ReplicationSpec struct {
	Topic      string
	Partition  int32
	RecordSize int
	Samples    int
	// Interval is the pause between pairs (the rate).
	Interval time.Duration
	// Warmup pairs are sent first and not returned.
	Warmup int
}

// MeasureReplication sends s.Samples pairs of single records to one
// partition, one through an acks=all (idempotent) producer and one through
// an acks=1 producer, alternating which goes first, without linger, and
// returns each record's produce latency (send to acknowledgement).
func (m *Measurer) MeasureReplication(ctx context.Context, s ReplicationSpec) ([]LatencyPair, error) {
	common := []kgo.Opt{
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.ProducerLinger(0),
	}
	all, err := kafka.NewClient(m.conn, m.version, append(AcksAll.ProducerOpts(), common...)...)
	if err != nil {
		return nil, err
	}
	defer all.Close()
	one, err := kafka.NewClient(m.conn, m.version, append(AcksLeader.ProducerOpts(), common...)...)
	if err != nil {
		return nil, err
	}
	defer one.Close()
	value := payload(s.RecordSize)
	send := func(cl *kgo.Client) (time.Duration, error) {
		t0 := time.Now()
		err := cl.ProduceSync(ctx, &kgo.Record{Topic: s.Topic, Partition: s.Partition, Value: value}).FirstErr()
		return time.Since(t0), err
	}
	var out []LatencyPair
	for i := range s.Warmup + s.Samples {
		var p LatencyPair
		var errA, errL error
		if i%2 == 0 {
			p.All, errA = send(all)
			p.Leader, errL = send(one)
		} else {
			p.Leader, errL = send(one)
			p.All, errA = send(all)
		}
		if err := errors.Join(errA, errL); err != nil {
			return nil, m.admin.Classify(fmt.Errorf("produce to %s/%d: %w", s.Topic, s.Partition, err))
		}
		if i >= s.Warmup {
			out = append(out, p)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(s.Interval):
		}
	}
	return out, nil
}

// ElectionRound is one leadership move of every partition of the election
// topic: how long the controller took to answer the election, and how long
// until every partition had acknowledged a write on its new leader.
type ElectionRound struct {
	Partitions int
	Elect      time.Duration
	Writable   time.Duration
}

// MeasureElection moves the leadership of every partition of topic (made
// by CreateScratch over brokers) rounds times without stopping a broker:
// each round rotates every partition's replica order by one
// (AlterPartitionReassignments, no data moves), waits for it, then asks for
// a preferred leader election of all of them at once and times until a
// write to each partition (acks=1) is acknowledged by its new leader.
func (m *Measurer) MeasureElection(ctx context.Context, topic string, partitions, rounds int) ([]ElectionRound, error) {
	admin, err := m.admin.Client()
	if err != nil {
		return nil, err
	}
	adm := kadm.NewClient(admin)
	prod, err := kafka.NewClient(m.conn, m.version, append(AcksLeader.ProducerOpts(),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0),
		kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.MetadataMinAge(10*time.Millisecond))...)
	if err != nil {
		return nil, err
	}
	defer prod.Close()
	value := payload(16)
	writeAll := func() error {
		var wg sync.WaitGroup
		var mu sync.Mutex
		var errs []error
		for p := range partitions {
			wg.Add(1)
			prod.Produce(ctx, &kgo.Record{Topic: topic, Partition: int32(p), Value: value}, func(_ *kgo.Record, err error) {
				if err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
				wg.Done()
			})
		}
		wg.Wait()
		return errors.Join(errs...)
	}
	if err := writeAll(); err != nil { // warm: connections, metadata
		return nil, m.admin.Classify(fmt.Errorf("produce to %s: %w", topic, err))
	}
	var out []ElectionRound
	for range rounds {
		md, err := adm.Metadata(ctx, topic)
		if err != nil {
			return nil, m.admin.Classify(fmt.Errorf("metadata %s: %w", topic, err))
		}
		req := kadm.AlterPartitionAssignmentsReq{}
		set := kadm.TopicsSet{}
		for _, p := range md.Topics[topic].Partitions {
			reps := append(slices.Clone(p.Replicas[1:]), p.Replicas[0])
			req.Assign(topic, p.Partition, reps)
			set.Add(topic, p.Partition)
		}
		if len(set.Topics()) == 0 {
			return nil, fmt.Errorf("metadata %s: no partitions", topic)
		}
		res, err := adm.AlterPartitionAssignments(ctx, req)
		if err != nil {
			return nil, m.admin.Classify(fmt.Errorf("reorder replicas of %s: %w", topic, err))
		}
		if err := res.Error(); err != nil {
			return nil, fmt.Errorf("reorder replicas of %s: %w", topic, err)
		}
		if err := m.waitReassigned(ctx, adm, set); err != nil {
			return nil, err
		}
		t0 := time.Now()
		er, err := adm.ElectLeaders(ctx, kadm.ElectPreferredReplica, set)
		elect := time.Since(t0)
		if err != nil {
			return nil, m.admin.Classify(fmt.Errorf("preferred election: %w", err))
		}
		for _, ps := range er {
			for _, r := range ps {
				if r.Err != nil && !errors.Is(r.Err, kerr.ElectionNotNeeded) {
					return nil, fmt.Errorf("preferred election %s/%d: %w %s", r.Topic, r.Partition, r.Err, r.ErrMessage)
				}
			}
		}
		if err := writeAll(); err != nil {
			return nil, m.admin.Classify(fmt.Errorf("produce to %s after the election: %w", topic, err))
		}
		out = append(out, ElectionRound{Partitions: partitions, Elect: elect, Writable: time.Since(t0)})
	}
	return out, nil
}

// waitReassigned polls until no reassignment of set is in progress.
func (m *Measurer) waitReassigned(ctx context.Context, adm *kadm.Client, set kadm.TopicsSet) error {
	return clock.Poll(ctx, nil, 50*time.Millisecond, m.admin.Timeout()+30*time.Second, func(ctx context.Context) (bool, error) {
		res, err := adm.ListPartitionReassignments(ctx, set)
		if err != nil {
			return true, m.admin.Classify(fmt.Errorf("list reassignments: %w", err))
		}
		if n := len(res.Sorted()); n > 0 {
			return false, fmt.Errorf("replica reorder of %d partitions still in progress", n)
		}
		return true, nil
	})
}
