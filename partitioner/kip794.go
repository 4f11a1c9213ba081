package partitioner

import (
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// DefaultBatchBytes is KIP794's default sticky batch size, the Java
// producer's default batch.size (16 KiB).
const DefaultBatchBytes = 16384

// Tracker is what KIP794 reads about the producer's queues. *Inflight
// implements it.
type Tracker interface {
	// PartitionBytes returns the bytes buffered or in flight to a partition.
	PartitionBytes(topic string, partition int32) int64
	// Progress returns a counter that grows whenever a broker makes progress
	// (acknowledges a record, or gets work after having none) and whether it
	// has records in flight now.
	Progress(broker int32) (count uint64, busy bool)
}

// KIP794 is the Java producer's built-in partitioner since Kafka 3.3
// (KIP-794, "uniform sticky" with partitioner.adaptive.partitioning.enable
// true, its default) on franz-go, with partitioner.availability.timeout.ms
// as WithAvailabilityTimeout. The rule, from apache/kafka's
// clients/src/main/java/org/apache/kafka/clients/producer/internals/
// BuiltInPartitioner.java (nextPartition, updatePartitionInfo,
// updatePartitionLoadStats) and RecordAccumulator.java (partitionReady):
//
//   - A keyed record goes to murmur2(key) modulo the partition count and
//     leaves the sticky state alone (partitioner.ignore.keys false).
//   - Keyless records go to the current partition until batch.size bytes
//     (WithBatchBytes) have gone to it; the record that reaches it is the
//     last, and the next record chooses again.
//   - The choice: every partition with a leader has a queue size q; a
//     partition with q > 0 whose leader is unavailable (below) is left out.
//     The others are drawn with weight max(q)+1-q: with queues 0, 3, 1 the
//     weights are 4, 1, 3 (Kafka's example). Equal queues give a uniform
//     draw over the partitions with a leader.
//   - With the timeout set, a leader is unavailable when it has had records
//     in flight and made no progress (Tracker.Progress) for longer than the
//     timeout; it is taken back on its next progress. Kafka's condition is
//     the sender's readyTimeMs - drainTimeMs > timeout per node: batches
//     ready for it that it could not take, because its connection was down
//     or its in-flight requests were all unanswered.
//   - When every partition is left out, the draw is uniform over the
//     partitions with a leader, and over all partitions when none has one.
//
// Where it differs from the Java producer, because franz-go exposes other
// state: q is the partition's bytes buffered or unacknowledged (the
// Tracker's) in batches of batch.size, rounded up, where Java counts the
// batches still queued in the partition's deque (so a request in flight
// counts here, not there); bytes are the records' keys, values and headers,
// not their encoded size; progress is seen when a new partition is chosen,
// so a stall is timed from the first choice that sees it, up to one batch
// later than Java; the switch is never held back for an unfinished batch
// (Java's enableSwitch, KAFKA-14156); and the load statistics are used from
// the first choice, where Java draws uniformly until every partition has had
// a batch.
type KIP794 struct {
	leaders LeaderSource
	tracker Tracker
	batch   int64
	timeout time.Duration
	now     func() time.Time

	mu     sync.Mutex // guards rng, stalls and draws, shared by the topics
	rng    rand.Source
	stalls map[int32]*stall
	draws  uint64 // draws so far, to check each broker once per draw
}

// stall is what KIP794 last saw of a broker's progress, and when.
type stall struct {
	count uint64
	since time.Time
	draw  uint64 // the draw that set ok
	ok    bool   // available at that draw
}

// NewKIP794 returns a KIP794 partitioner reading leaders from src and queues
// from t (usually an *Inflight registered as a hook on the client). It reads
// WithBatchBytes, WithAvailabilityTimeout, WithClock and WithRand.
func NewKIP794(src LeaderSource, t Tracker, opts ...Option) *KIP794 {
	o := apply(opts)
	return &KIP794{leaders: src, tracker: t, batch: int64(o.batch), timeout: o.timeout, now: o.now, rng: o.rng, stalls: map[int32]*stall{}}
}

// ForTopic implements kgo.Partitioner.
func (p *KIP794) ForTopic(topic string) kgo.TopicPartitioner {
	return &kip794Topic{p: p, topic: topic, cur: -1, keyed: kgo.StickyKeyPartitioner(nil).ForTopic(topic)}
}

// kip794Topic is one topic's sticky state. franz-go calls it for one record
// at a time, so only what it shares with other topics is locked.
type kip794Topic struct {
	p     *KIP794
	topic string
	keyed kgo.TopicPartitioner // murmur2, as Kafka's producer

	cur      int32 // the sticky partition, -1 to choose one
	produced int64 // bytes sent to cur

	ids   []int32 // scratch: the partitions drawn from
	cft   []int64 // scratch: their cumulative weights
	avail []int32 // scratch: the partitions with a leader
}

// RequiresConsistency implements kgo.TopicPartitioner: Partition returns
// partition numbers, as the leaders are read by number.
func (*kip794Topic) RequiresConsistency(*kgo.Record) bool { return true }

// Partition implements kgo.TopicPartitioner. n is the topic's partition count.
func (t *kip794Topic) Partition(r *kgo.Record, n int) int {
	if r != nil && r.Key != nil {
		return t.keyed.Partition(r, n)
	}
	if t.cur < 0 || int(t.cur) >= n {
		t.cur = t.next(n)
	}
	p := t.cur
	if r != nil {
		t.produced += recordBytes(r)
	}
	if t.produced >= t.p.batch {
		t.cur, t.produced = -1, 0
	}
	return int(p)
}

// next draws the next sticky partition (BuiltInPartitioner.nextPartition).
func (t *kip794Topic) next(n int) int32 {
	p := t.p
	p.mu.Lock()
	defer p.mu.Unlock()
	var now time.Time
	if p.timeout > 0 {
		now = p.now()
		p.draws++
	}
	t.ids, t.cft, t.avail = t.ids[:0], t.cft[:0], t.avail[:0]
	var most int64
	for part := range int32(n) {
		l, _, ok := p.leaders(t.topic, part)
		if !ok {
			continue
		}
		t.avail = append(t.avail, part)
		q := (p.tracker.PartitionBytes(t.topic, part) + p.batch - 1) / p.batch
		if q > 0 && p.timeout > 0 && !p.available(l, now) {
			continue
		}
		t.ids, t.cft = append(t.ids, part), append(t.cft, q)
		most = max(most, q)
	}
	switch {
	case len(t.ids) > 0:
		var total int64
		for i, q := range t.cft {
			total += most + 1 - q
			t.cft[i] = total
		}
		// The first partition whose running sum is above the draw.
		i, _ := slices.BinarySearch(t.cft, int64(p.draw(uint64(total)))+1)
		return t.ids[i]
	case len(t.avail) > 0:
		return t.avail[p.draw(uint64(len(t.avail)))]
	default:
		return int32(p.draw(uint64(n)))
	}
}

// available reports whether broker made progress within the timeout: since
// the last time it was seen to, it has had work in flight for at most the
// timeout. Called with mu held.
func (p *KIP794) available(broker int32, now time.Time) bool {
	s := p.stalls[broker]
	if s != nil && s.draw == p.draws {
		return s.ok // a broker leading several partitions is checked once
	}
	count, busy := p.tracker.Progress(broker)
	switch {
	case s == nil:
		s = &stall{count: count, since: now}
		p.stalls[broker] = s
	case !busy || count != s.count:
		s.count, s.since = count, now
	}
	s.draw, s.ok = p.draws, now.Sub(s.since) <= p.timeout
	return s.ok
}

// draw returns a uniform number in [0, n). Called with mu held.
func (p *KIP794) draw(n uint64) uint64 {
	if p.rng == nil {
		return rand.Uint64N(n)
	}
	return p.rng.Uint64() % n
}
