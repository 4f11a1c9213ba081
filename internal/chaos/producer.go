package chaos

import (
	"context"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kplan-dev/kplan/internal/clock"
	"github.com/kplan-dev/kplan/internal/loadgen"
	"github.com/kplan-dev/kplan/internal/stats"
	"github.com/kplan-dev/kplan/internal/workload"
)

// Phase is a stage of an experiment.
type Phase uint8

// Phases in order.
const (
	PhaseWarmup Phase = iota
	PhaseBefore
	PhaseFailover
	PhaseAfter
	PhaseRestore
	PhaseRecovered
	// PhaseFault runs while a network fault (--fault) is in force, before
	// any kill; it comes after before in time, last in number so that the
	// records' phase byte keeps its values.
	PhaseFault
	// NumPhases is the number of phases.
	NumPhases
)

const numPhases = NumPhases

var phaseNames = [numPhases]string{"warm-up", "before", "failover", "after", "restore", "recovered", "fault"}

// String returns the phase's name as outputs show it.
func (p Phase) String() string {
	if p < numPhases {
		return phaseNames[p]
	}
	return "unknown"
}

// Records carry loadgen's Envelope: the run id, the producer's index, its
// sequence number, the send time since the experiment's epoch, and the
// phase at send time as the envelope's tag.

// Record status flags, per sequence number, next to the send phase.
const (
	stAcked  = 0x10
	stFailed = 0x20
	stPhase  = 0x0f
)

// sampleCap bounds the latency samples kept per phase for the KS test and
// the CDF plots (a uniform reservoir sample beyond it).
const sampleCap = 20000

// BucketWidth is the width of the throughput-over-time series
// (Series.Buckets).
const BucketWidth = 100 * time.Millisecond

const bucket = BucketWidth

// reservoir keeps a uniform sample of at most sampleCap values.
type reservoir struct {
	n   int64
	xs  []float64
	rng *rand.Rand
}

func (r *reservoir) add(x float64) {
	r.n++
	if len(r.xs) < sampleCap {
		r.xs = append(r.xs, x)
		return
	}
	if j := r.rng.Int64N(r.n); j < sampleCap {
		r.xs[j] = x
	}
}

// brokerCount is what one broker took in one phase.
type brokerCount struct{ records, bytes int64 }

// phaseStats is one producer's figures for one phase (by send phase).
type phaseStats struct {
	sent, acked, failed, ackedBytes int64
	perBroker                       map[int32]*brokerCount
	perPartition                    map[int32]int64
	prod, e2e                       *stats.Latency
	prodSamples, e2eSamples         reservoir
	lost                            int64
	// buckets are the phase's acknowledged bytes per BucketWidth since
	// the epoch, by acknowledgement time, from bucket first on: what a
	// worker reports for the coordinator to add up window by window
	// (dist.PhaseReport.Buckets).
	first   int
	buckets []int64
}

// addBucket counts size acknowledged bytes in bucket b.
func (s *phaseStats) addBucket(b int, size int64) {
	if len(s.buckets) == 0 {
		s.first = b
	}
	if b < s.first {
		s.buckets = append(make([]int64, s.first-b, s.first-b+len(s.buckets)), s.buckets...)
		s.first = b
	}
	for len(s.buckets) <= b-s.first {
		s.buckets = append(s.buckets, 0)
	}
	s.buckets[b-s.first] += size
}

func newPhaseStats(objective time.Duration, rng *rand.Rand) *phaseStats {
	prod, err := loadgen.NewLatency(objective)
	if err != nil {
		panic(err) // constant arguments
	}
	e2e, err := loadgen.NewLatency(objective)
	if err != nil {
		panic(err)
	}
	return &phaseStats{perBroker: map[int32]*brokerCount{}, perPartition: map[int32]int64{}, prod: prod, e2e: e2e,
		prodSamples: reservoir{rng: rng}, e2eSamples: reservoir{rng: rng}}
}

// producer is one partitioner's client for one topic and its bookkeeping.
type producer struct {
	idx   int
	name  string // the partitioner's
	topic string // the topic written
	// wname is the workload's name of the topic (the layout's), equal to
	// topic in a one-topic experiment.
	wname string
	rate  int64 // bytes/s, 0: as fast as it can
	keys  *workload.Sampler
	// keySpec is the distribution keys draws from (keyless: none).
	keySpec workload.Keys
	cl      *kgo.Client
	cfg     *Config
	epoch   time.Time
	now     func() time.Time
	runID   uint64
	phase   *atomic.Int32 // the leg's current phase

	mu      sync.Mutex
	phases  [numPhases]*phaseStats
	status  []byte
	buckets []int64 // acked bytes per bucket since the epoch

	// tally ticks off the records the checking consumer read back.
	tally loadgen.Tally

	sentIn [numPhases]atomic.Int64
	// Batches acknowledged, and the records in them, by the phase at
	// acknowledgement (HookProduceBatchWritten).
	batches, batchRecords [numPhases]atomic.Int64

	// remote is set for a worker's producer in a distributed run: it has
	// no client here; the worker's reports fill its figures.
	remote *remote

	moved         atomic.Pointer[map[int32]bool] // partitions the victim led
	killAt        atomic.Int64                   // ns since epoch, 0 before a kill
	firstMovedAck atomic.Int64                   // ns after killAt, 0 before one
}

func (p *producer) since() time.Duration { return p.now().Sub(p.epoch) }

// OnProduceBatchWritten implements kgo.HookProduceBatchWritten: it counts
// acknowledged batches and their records, so results show how well a
// partitioner lets franz-go batch (fewer, larger batches cost the producer
// and the brokers less per record).
func (p *producer) OnProduceBatchWritten(_ kgo.BrokerMetadata, _ string, _ int32, m kgo.ProduceBatchMetrics) {
	if p.phase == nil {
		return // not part of a leg yet
	}
	ph := Phase(p.phase.Load())
	if ph >= numPhases {
		return
	}
	p.batches[ph].Add(1)
	p.batchRecords[ph].Add(int64(m.NumRecords))
}

var _ kgo.HookProduceBatchWritten = (*producer)(nil)

// loop sends records until stop closes or ctx ends, paced at cfg.Rate.
func (p *producer) loop(ctx context.Context, stop <-chan struct{}) {
	pacer := loadgen.NewPacer(float64(p.rate)/float64(p.cfg.RecordSize), 2*time.Millisecond, clock.WithNow(p.now))
	stopped := func() bool {
		select {
		case <-stop:
			return true
		default:
			return false
		}
	}
	pacer.Run(ctx, stopped, func() { p.send(ctx) })
}

func (p *producer) send(ctx context.Context) {
	ph := Phase(p.phase.Load())
	p.mu.Lock()
	seq := uint64(len(p.status))
	p.status = append(p.status, byte(ph))
	p.phases[ph].sent++
	p.mu.Unlock()
	p.sentIn[ph].Add(1)
	val := loadgen.Stamp(p.cfg.RecordSize, loadgen.Envelope{Run: p.runID, Seq: seq, Sent: p.since(), Producer: uint8(p.idx), Tag: uint8(ph)})
	rec := &kgo.Record{Topic: p.topic, Value: val, Headers: []kgo.RecordHeader{{Key: RunHeader, Value: loadgen.RunHeaderValue(p.runID)}}}
	if p.keys != nil {
		rec.Key = workload.Key(p.keys.Next())
	}
	p.cl.Produce(ctx, rec, p.promise)
}

func (p *producer) promise(r *kgo.Record, err error) {
	at := p.since()
	env, _ := loadgen.DecodeEnvelope(r.Value) // our own record: it holds one
	seq, sentAt, ph := env.Seq, env.Sent, Phase(env.Tag)
	if err != nil {
		p.mu.Lock()
		p.status[seq] |= stFailed
		p.phases[ph].failed++
		p.mu.Unlock()
		return
	}
	leader, _, lerr := p.cl.PartitionLeader(r.Topic, r.Partition)
	if lerr != nil {
		leader = -1
	}
	lat := at - sentAt
	size := int64(len(r.Value))
	p.mu.Lock()
	p.status[seq] |= stAcked
	s := p.phases[ph]
	s.acked++
	s.ackedBytes += size
	bc := s.perBroker[leader]
	if bc == nil {
		bc = &brokerCount{}
		s.perBroker[leader] = bc
	}
	bc.records++
	bc.bytes += size
	s.perPartition[r.Partition]++
	s.prod.Record(lat)
	s.prodSamples.add(float64(lat) / float64(time.Millisecond))
	b := int(at / bucket)
	for len(p.buckets) <= b {
		p.buckets = append(p.buckets, 0)
	}
	p.buckets[b] += size
	s.addBucket(b, size)
	p.mu.Unlock()
	if k := p.killAt.Load(); k > 0 && int64(at) > k && p.firstMovedAck.Load() == 0 {
		if m := p.moved.Load(); m != nil && (*m)[r.Partition] {
			p.firstMovedAck.CompareAndSwap(0, int64(at)-k)
		}
	}
}

// consumed notes that the consumer read record seq (sent in phase ph) e2e
// after it was sent, at pos (partition<<48 | offset). Reading the same
// position again (the consumer's offset was reset) is not a duplicate; the
// same record at another position is.
func (p *producer) consumed(seq uint64, ph Phase, e2e time.Duration, pos int64) {
	if !p.tally.Read(seq, pos) || ph >= numPhases {
		return
	}
	p.mu.Lock()
	s := p.phases[ph]
	s.e2e.Record(e2e)
	s.e2eSamples.add(float64(e2e) / float64(time.Millisecond))
	p.mu.Unlock()
}

// loss is the record-by-record check after everything was consumed back.
type loss struct {
	sent, acked, lost, duplicates, neverAcked, unackedDelivered int64
}

// remote is a distributed run's worker producer as the coordinator sees it.
type remote struct {
	worker, stream int
	// loss is its loss check, computed from the worker's acknowledged
	// ranges and the coordinator's reads (applyReports).
	loss loss
}

func (p *producer) checkLoss() loss {
	if p.remote != nil {
		return p.remote.loss
	}
	counts := p.tally.Counts()
	p.mu.Lock()
	defer p.mu.Unlock()
	var l loss
	for seq, st := range p.status {
		var seen uint8
		if seq < len(counts) {
			seen = counts[seq]
		}
		l.sent++
		if seen > 1 {
			l.duplicates += int64(seen) - 1
		}
		switch {
		case st&stAcked != 0:
			l.acked++
			if seen == 0 {
				l.lost++
				if ph := Phase(st & stPhase); ph < numPhases {
					p.phases[ph].lost++
				}
			}
		default:
			l.neverAcked++
			if seen > 0 {
				l.unackedDelivered++
			}
		}
	}
	return l
}
