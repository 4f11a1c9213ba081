package partitioner

import (
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// LeaderSource reports the current leader of a partition and its leader epoch.
// ok is false when the partition has no usable leader (unknown topic, load
// error, leader not available). It must be safe for concurrent use and cheap:
// Node and SQF call it once per record, KIP794 once per partition whenever it
// chooses a new partition.
type LeaderSource func(topic string, partition int32) (leader, epoch int32, ok bool)

// ClientLeaders is a LeaderSource over a franz-go client that is bound after
// the client is created (kgo.RecordPartitioner must be given to kgo.NewClient,
// so the partitioner exists before the client does). Until Bind is called,
// and until the client's producer has loaded a topic (its first record to
// it), every partition reports no leader. The zero value is ready to use.
type ClientLeaders struct {
	cl atomic.Pointer[kgo.Client]
}

// Bind sets the client whose leader view is reported.
func (c *ClientLeaders) Bind(cl *kgo.Client) { c.cl.Store(cl) }

// Leader implements LeaderSource with kgo.Client.PartitionLeader.
func (c *ClientLeaders) Leader(topic string, partition int32) (leader, epoch int32, ok bool) {
	cl := c.cl.Load()
	if cl == nil {
		return -1, -1, false
	}
	l, e, err := cl.PartitionLeader(topic, partition)
	return l, e, err == nil && l >= 0
}

// Option configures NewNode, NewSQF or NewKIP794. Each option says which
// constructors read it; the others ignore it.
type Option func(*options)

type options struct {
	stick   int
	slack   *int64
	bytes   bool
	batch   int
	timeout time.Duration
	now     func() time.Time
	rng     rand.Source
}

func apply(opts []Option) options {
	o := options{stick: 1, batch: DefaultBatchBytes, now: time.Now}
	for _, f := range opts {
		f(&o)
	}
	return o
}

// WithStick makes Node and SQF send n records in a row to each partition they
// choose (values below 1 count as 1, a choice per record, the default). Runs
// let franz-go fill one batch at a time, as its sticky partitioners do; shares
// over brokers stay equal to within n records. A leader change ends a run at
// once. SQF compares the queues once per run.
func WithStick(n int) Option { return func(o *options) { o.stick = max(n, 1) } }

// WithSlack sets SQF's slack: records, or bytes with WithBytes; 0 is pure
// join-the-shortest-queue, negative values count as 0. Without it SQF uses
// DefaultSlackRecords or DefaultSlackBytes. See SQF.
func WithSlack(n int64) Option {
	return func(o *options) {
		n = max(n, 0)
		o.slack = &n
	}
}

// WithBytes makes SQF compare in-flight bytes instead of in-flight records.
func WithBytes() Option { return func(o *options) { o.bytes = true } }

// WithBatchBytes sets KIP794's sticky batch size, the Java producer's
// batch.size: the bytes sent to one partition before the next is chosen.
// Values below 1 count as 1. The default is DefaultBatchBytes.
func WithBatchBytes(n int) Option { return func(o *options) { o.batch = max(n, 1) } }

// WithAvailabilityTimeout sets KIP794's availability timeout, the Java
// producer's partitioner.availability.timeout.ms: a partition whose leader
// has had records in flight without any progress for longer than d is left
// out of the choice until the leader answers again. 0 (the default, as in
// Kafka) disables it.
func WithAvailabilityTimeout(d time.Duration) Option {
	return func(o *options) { o.timeout = max(d, 0) }
}

// WithClock sets the clock KIP794 measures the availability timeout with
// (time.Now by default, also when now is nil). It is read only when a new
// partition is chosen.
func WithClock(now func() time.Time) Option {
	return func(o *options) {
		if now != nil {
			o.now = now
		}
	}
}

// WithRand sets KIP794's random source (math/rand/v2's global source by
// default; a *math/rand.Rand fits too). Access is serialized internally, so
// one source may serve every topic of a producer.
func WithRand(src rand.Source) Option { return func(o *options) { o.rng = src } }
