package partitioner

import (
	"math"
	"sync"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kgo"
)

// SQF is the thesis's Shortest Queue First partitioner: among the brokers
// that lead at least one partition of the topic it picks the one with the
// least in flight (records, or bytes with WithBytes) and then round robins
// over that broker's partitions. Keys are ignored.
//
// Queues are compared with a slack: every broker whose in flight is within
// the slack of the least is a tie, and ties are served round robin (the
// rotation resumes after the broker last chosen). Under light load, where queues differ only by the
// brokers' acknowledgement jitter, sqf therefore serves brokers round robin
// (the thesis's usage-balanced shares, like node); once a broker falls more
// than the slack behind, sqf steers records away from it (join the shortest
// queue). Slack 0 is the pure policy, whose record shares follow each
// broker's acknowledgement speed even when nothing is overloaded.
//
// "In flight" is what the producers sharing the Inflight tracker have
// buffered or sent without an answer yet: the join-the-shortest-queue policy
// of the thesis's chapter 5. One SQF (or several sharing one Inflight) can
// serve several producers in a process, which balances their combined flow
// (thesis §6.4, Fig 6.7).
type SQF struct {
	leaders  LeaderSource
	inflight *Inflight
	bytes    bool
	slack    int64
	stick    int
}

// Default slacks: DefaultSlackRecords records, or DefaultSlackBytes bytes
// with WithBytes.
const (
	DefaultSlackRecords = 64
	DefaultSlackBytes   = 64 << 10
)

// NewSQF returns an SQF partitioner reading leaders from src and loads from
// in, with the default slack. Register in as a hook (kgo.WithHooks(in)) on
// every client using it.
func NewSQF(src LeaderSource, in *Inflight, bytes bool) *SQF {
	slack := int64(DefaultSlackRecords)
	if bytes {
		slack = DefaultSlackBytes
	}
	return &SQF{leaders: src, inflight: in, bytes: bytes, slack: slack, stick: 1}
}

// WithStick makes the partitioner send n records in a row to each partition
// it chooses (values below 1 count as 1) and returns p; see Node.WithStick.
// The queues are compared once per run.
func (p *SQF) WithStick(n int) *SQF {
	p.stick = max(n, 1)
	return p
}

// WithSlack sets the slack (records, or bytes with WithBytes; 0 is pure
// join-the-shortest-queue) and returns p. Negative values count as 0.
func (p *SQF) WithSlack(n int64) *SQF {
	p.slack = max(n, 0)
	return p
}

// Slack returns the slack in use.
func (p *SQF) Slack() int64 { return p.slack }

// Inflight returns the tracker this partitioner reads.
func (p *SQF) Inflight() *Inflight { return p.inflight }

// ForTopic implements kgo.Partitioner.
func (p *SQF) ForTopic(topic string) kgo.TopicPartitioner {
	return &brokerTopic{topic: topic, leaders: p.leaders, policy: newLeastInflight(p.inflight, p.bytes, p.slack), stick: p.stick}
}

const (
	// exactBrokers is the largest leader set scanned on every record.
	exactBrokers = 16
	// horizon is how many brokers a wider scan keeps: the horizon least
	// loaded. The next refillEvery records choose among them, adding their
	// own weight as the hook will. Only changes made by acknowledgements and
	// other producers are seen up to refillEvery-1 records late; with this
	// producer alone and nothing acknowledged, the choices are those of a
	// full scan per record as long as no kept broker's load, grown by those
	// records, passes a broker left out (refillEvery/horizon records each).
	horizon     = 8
	refillEvery = 16
)

type leastInflight struct {
	in    *Inflight
	unit  int // unitRecords or unitBytes
	slack int64

	slots    []*slot        // brokers' counters by broker index, for scans
	cand     [horizon]int   // broker indexes, ascending load
	candLoad [horizon]int64 // their loads, plus what this chooser added since
	ncand    int
	ccur     int // rotation among the candidates
	left     int // records left before the next scan
}

func newLeastInflight(in *Inflight, bytes bool, slack int64) *leastInflight {
	c := &leastInflight{in: in, unit: unitRecords, slack: slack}
	if bytes {
		c.unit = unitBytes
	}
	return c
}

func (c *leastInflight) slotFor(id int32) *slot { return c.in.slot(id) }

func (c *leastInflight) reset(brokers []brokerParts) {
	c.left, c.ncand = 0, 0
	c.slots = c.slots[:0]
	for i := range brokers {
		c.slots = append(c.slots, brokers[i].load)
	}
}

func (c *leastInflight) value(s *slot) int64 { return s.v[c.unit].Load() }

func (c *leastInflight) weight(r *kgo.Record) int64 {
	if c.unit == unitRecords {
		return 1
	}
	if r == nil {
		return 0
	}
	return recordBytes(r)
}

// choose returns the broker with the least in flight. Up to exactBrokers it
// is a linear scan per record from a rotating start that stops at the first
// idle broker; above, see horizon.
func (c *leastInflight) choose(brokers []brokerParts, cur *int, r *kgo.Record) int {
	n := len(brokers)
	start := *cur
	if start >= n {
		start = 0
	}
	if n <= exactBrokers {
		b := c.scan(c.slots, start)
		if *cur = b + 1; *cur == n { // the rotation resumes after the choice
			*cur = 0
		}
		return b
	}
	if *cur = start + 1; *cur == n {
		*cur = 0
	}
	if c.left == 0 {
		c.refill(c.slots, start)
		c.left = refillEvery
	}
	c.left--
	least := c.candLoad[0]
	for _, l := range c.candLoad[1:c.ncand] {
		least = min(least, l)
	}
	// The first candidate within the slack of the least, from a rotating
	// position, so ties are served in turn.
	best := c.ccur
	for range c.ncand {
		if best >= c.ncand {
			best = 0
		}
		if c.candLoad[best] <= least+c.slack {
			break
		}
		best++
	}
	if c.ccur = best + 1; c.ccur >= c.ncand {
		c.ccur = 0
	}
	c.candLoad[best] += c.weight(r)
	return c.cand[best]
}

// scan returns the first broker from start whose load is within the slack of
// the least load.
func (c *leastInflight) scan(slots []*slot, start int) int {
	n := len(slots)
	first := c.value(slots[start])
	if first <= c.slack {
		return start // nobody can be more than the slack below it
	}
	var loads [exactBrokers]int64
	least := first
	for i := range n {
		loads[i] = c.value(slots[i])
		least = min(least, loads[i])
	}
	i := start
	for range n {
		if loads[i] <= least+c.slack {
			return i
		}
		if i++; i == n {
			i = 0
		}
	}
	return start
}

// refill scans every broker from start and keeps the horizon least loaded.
func (c *leastInflight) refill(slots []*slot, start int) {
	c.ncand = 0
	c.refillFrom(slots[start:], start)
	c.refillFrom(slots[:start], 0)
}

// refillFrom offers slots (broker indexes from base) to the candidates.
func (c *leastInflight) refillFrom(slots []*slot, base int) {
	unit, n := c.unit, c.ncand
	worst := int64(math.MaxInt64) // the load a broker must beat to be kept
	if n == horizon {
		worst = c.candLoad[horizon-1]
	}
	if worst <= 0 {
		return // horizon idle brokers: nobody can be less loaded
	}
	for k, s := range slots {
		l := s.v[unit].Load()
		if l >= worst {
			continue
		}
		j := min(n, horizon-1)
		for ; j > 0 && c.candLoad[j-1] > l; j-- {
			c.cand[j], c.candLoad[j] = c.cand[j-1], c.candLoad[j-1]
		}
		c.cand[j], c.candLoad[j] = base+k, l
		if n < horizon {
			n++
		}
		if n == horizon {
			if worst = c.candLoad[horizon-1]; worst <= 0 {
				break
			}
		}
	}
	c.ncand = n
}

// Gauge units: the index into slot.v.
const (
	unitRecords = 0
	unitBytes   = 1
)

// slot holds one broker's in-flight gauges. They are bounded by what the
// producers may buffer, so int64 never overflows; they return to zero when
// every record has been answered. Padded to keep brokers off one cache line.
type slot struct {
	v [2]atomic.Int64 // by unit: records, bytes
	_ [48]byte
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
	s      *slot // the gauges of leader, the broker charged last
	leader int32
	_      [4]byte
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
// not counted at all. It is safe for concurrent use by any number of clients.
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
	c.s.v[unitRecords].Add(1)
	c.s.v[unitBytes].Add(c.bytes)
}

// OnProduceRecordUnbuffered implements kgo.HookProduceRecordUnbuffered.
func (in *Inflight) OnProduceRecordUnbuffered(r *kgo.Record, _ error) {
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

// Add charges (or, with negative values, relieves) a broker directly. It is
// for producers that track in-flight work themselves instead of through the
// hooks, and for tests.
func (in *Inflight) Add(id int32, records, bytes int64) {
	s := in.slot(id)
	s.v[unitRecords].Add(records)
	s.v[unitBytes].Add(bytes)
}

var (
	_ kgo.HookProduceRecordPartitioned = (*Inflight)(nil)
	_ kgo.HookProduceRecordUnbuffered  = (*Inflight)(nil)
)
