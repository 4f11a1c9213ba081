package partitioner

import (
	"sync"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Gauge units: the index into slot.v.
const (
	unitRecords = 0
	unitBytes   = 1
)

// slot holds one broker's in-flight gauges. They are bounded by what the
// producers may buffer, so int64 never overflows; they return to zero when
// every record has been answered. progress counts the broker's answers and
// its starts from idle (see Progress). Padded to keep brokers off one cache
// line.
type slot struct {
	v        [2]atomic.Int64 // by unit: records, bytes
	progress atomic.Uint64
	_        [40]byte
}

// charged adds records and bytes to the gauges; progress moves when the
// broker goes from idle to busy, so a stall is timed from then.
func (s *slot) charged(records, bytes int64) {
	if s.v[unitRecords].Add(records) == records && records > 0 {
		s.progress.Add(1)
	}
	s.v[unitBytes].Add(bytes)
}

// charge is one record in flight: the broker charged and how much.
type charge struct {
	r     *kgo.Record
	s     *slot
	bytes int64
}

// queue is one partition's records in flight, oldest first, in a ring whose
// size is a power of two.
// franz-go partitions a partition's records under that partition's lock and
// answers them in the same order (batches are finished, or failed, oldest
// first), so the record unbuffered is the head in all but odd cases: those
// are searched, and a record that was never charged is not found. Padded to
// keep partitions' locks off one cache line.
type queue struct {
	mu     sync.Mutex
	ring   []charge
	head   int
	n      int
	s      *slot        // the gauges of leader, the broker charged last
	bytes  atomic.Int64 // the bytes of the records in the ring
	leader int32
	_      [60]byte
}

func (q *queue) push(c charge) {
	if q.n == len(q.ring) {
		grown := make([]charge, max(16, 2*len(q.ring)))
		for i := range q.n {
			grown[i] = q.ring[(q.head+i)&(len(q.ring)-1)]
		}
		q.ring, q.head = grown, 0
	}
	q.ring[(q.head+q.n)&(len(q.ring)-1)] = c
	q.n++
	q.bytes.Add(c.bytes)
}

// remove takes r's charge out of the queue and reports whether r was there.
func (q *queue) remove(r *kgo.Record) (charge, bool) {
	mask := len(q.ring) - 1
	for k := range q.n {
		i := (q.head + k) & mask
		if q.ring[i].r != r {
			continue
		}
		c := q.ring[i]
		// Close the gap from the head side: the older entries move up one.
		for ; k > 0; k-- {
			prev := (q.head + k - 1) & mask
			q.ring[i] = q.ring[prev]
			i = prev
		}
		q.ring[q.head] = charge{} // let the record go
		q.head = (q.head + 1) & mask
		q.n--
		q.bytes.Add(-c.bytes)
		return c, true
	}
	return charge{}, false
}

// topicQueues holds one topic's per-partition queues.
type topicQueues struct {
	name  string
	mu    sync.Mutex // serializes growth
	parts atomic.Pointer[[]*queue]
}

// queue returns partition p's queue, creating it (and any below it) when
// create is set; nil when p is out of range and create is not.
func (t *topicQueues) queue(p int32, create bool) *queue {
	if p < 0 {
		return nil
	}
	if parts := *t.parts.Load(); int(p) < len(parts) {
		return parts[p]
	}
	if !create {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	cur := *t.parts.Load()
	if int(p) < len(cur) {
		return cur[p]
	}
	next := make([]*queue, p+1)
	copy(next, cur)
	for i := len(cur); i < len(next); i++ {
		next[i] = new(queue)
	}
	t.parts.Store(&next)
	return next[p]
}

// Inflight tracks records and bytes in flight per broker for producers that
// register it as a hook (kgo.WithHooks). A record counts from the moment
// franz-go buffers it into a partition (HookProduceRecordPartitioned, which
// names the leader broker) until its promise is about to run
// (HookProduceRecordUnbuffered), that is buffered plus unacknowledged. The
// broker charged is remembered per record, in its partition's queue, so
// every increment is undone exactly once even if the partition's leader
// changes in between, and records that failed before being partitioned are
// not counted at all. It also keeps each partition's bytes and each broker's
// progress, the Tracker KIP794 reads. It is safe for concurrent use by any
// number of clients.
type Inflight struct {
	mu     sync.Mutex                              // serializes slot and topic creation
	slots  atomic.Pointer[map[int32]*slot]         // copy-on-write: lock-free reads
	topics atomic.Pointer[map[string]*topicQueues] // copy-on-write
	last   atomic.Pointer[topicQueues]             // the topic looked up last
}

// NewInflight returns an empty tracker.
func NewInflight() *Inflight {
	in := new(Inflight)
	m := map[int32]*slot{}
	in.slots.Store(&m)
	t := map[string]*topicQueues{}
	in.topics.Store(&t)
	return in
}

func (in *Inflight) slot(id int32) *slot {
	if s := (*in.slots.Load())[id]; s != nil {
		return s
	}
	return insertOnce(&in.mu, &in.slots, id, func() *slot { return new(slot) })
}

// insertOnce returns m's value for k, adding mk() under mu when k is
// missing. The map is copy-on-write, so readers load it without a lock.
func insertOnce[K comparable, V any](mu *sync.Mutex, m *atomic.Pointer[map[K]*V], k K, mk func() *V) *V {
	mu.Lock()
	defer mu.Unlock()
	cur := *m.Load()
	if v := cur[k]; v != nil {
		return v
	}
	next := make(map[K]*V, len(cur)+1)
	for kk, vv := range cur {
		next[kk] = vv
	}
	v := mk()
	next[k] = v
	m.Store(&next)
	return v
}

// topic returns a topic's queues, creating them when create is set; nil
// when the topic is unknown and create is not.
func (in *Inflight) topic(name string, create bool) *topicQueues {
	if t := in.last.Load(); t != nil && t.name == name {
		return t
	}
	t := (*in.topics.Load())[name]
	if t == nil {
		if !create {
			return nil
		}
		t = in.newTopic(name)
	}
	in.last.Store(t)
	return t
}

func (in *Inflight) newTopic(name string) *topicQueues {
	return insertOnce(&in.mu, &in.topics, name, func() *topicQueues {
		t := &topicQueues{name: name}
		parts := []*queue{}
		t.parts.Store(&parts)
		return t
	})
}

func recordBytes(r *kgo.Record) int64 {
	n := len(r.Key) + len(r.Value)
	for _, h := range r.Headers {
		n += len(h.Key) + len(h.Value)
	}
	return int64(n)
}

// OnProduceRecordPartitioned implements kgo.HookProduceRecordPartitioned.
func (in *Inflight) OnProduceRecordPartitioned(r *kgo.Record, leader int32) {
	q := in.topic(r.Topic, true).queue(r.Partition, true)
	if q == nil {
		return // a negative partition: franz-go never buffers one
	}
	c := charge{r: r, bytes: recordBytes(r)}
	q.mu.Lock()
	if q.s == nil || q.leader != leader {
		q.s, q.leader = in.slot(leader), leader
	}
	c.s = q.s
	q.push(c)
	q.mu.Unlock()
	c.s.charged(1, c.bytes)
}

// OnProduceRecordUnbuffered implements kgo.HookProduceRecordUnbuffered. A
// record acknowledged without error is progress for its broker (Progress).
func (in *Inflight) OnProduceRecordUnbuffered(r *kgo.Record, err error) {
	t := in.topic(r.Topic, false)
	if t == nil {
		return
	}
	q := t.queue(r.Partition, false)
	if q == nil {
		return
	}
	q.mu.Lock()
	c, ok := q.remove(r)
	q.mu.Unlock()
	if ok {
		c.s.v[unitRecords].Add(-1)
		c.s.v[unitBytes].Add(-c.bytes)
		if err == nil {
			c.s.progress.Add(1)
		}
	}
}

// Broker returns the records and bytes in flight to a broker.
func (in *Inflight) Broker(id int32) (records, bytes int64) {
	s := (*in.slots.Load())[id]
	if s == nil {
		return 0, 0
	}
	return s.v[unitRecords].Load(), s.v[unitBytes].Load()
}

// PartitionBytes returns the bytes of the records buffered or in flight to a
// partition (as charged by the hooks; Add charges brokers only).
func (in *Inflight) PartitionBytes(topic string, partition int32) int64 {
	t := in.topic(topic, false)
	if t == nil {
		return 0
	}
	q := t.queue(partition, false)
	if q == nil {
		return 0
	}
	return q.bytes.Load()
}

// Progress returns a counter of a broker's progress and whether it has
// records in flight. The counter grows with every record the broker
// acknowledges and every time it goes from nothing in flight to something:
// while busy is true and count stays the same, the broker has made no
// progress since it was last seen to.
func (in *Inflight) Progress(broker int32) (count uint64, busy bool) {
	s := (*in.slots.Load())[broker]
	if s == nil {
		return 0, false
	}
	return s.progress.Load(), s.v[unitRecords].Load() > 0
}

// Add charges (or, with negative values, relieves) a broker directly. It is
// for producers that track in-flight work themselves instead of through the
// hooks, and for tests. Relieving records counts as progress (Progress).
func (in *Inflight) Add(id int32, records, bytes int64) {
	s := in.slot(id)
	s.charged(records, bytes)
	if records < 0 {
		s.progress.Add(1)
	}
}

var (
	_ kgo.HookProduceRecordPartitioned = (*Inflight)(nil)
	_ kgo.HookProduceRecordUnbuffered  = (*Inflight)(nil)
	_ Tracker                          = (*Inflight)(nil)
)
