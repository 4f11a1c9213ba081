package partitioner

import (
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
	return &SQF{leaders: src, inflight: in, bytes: bytes, slack: slack}
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
	return &brokerTopic{topic: topic, leaders: p.leaders, policy: &leastInflight{in: p.inflight, bytes: p.bytes, slack: p.slack}}
}

const (
	// exactBrokers is the largest leader set scanned on every record.
	exactBrokers = 16
	// horizon is how many records a wider scan serves: the scan keeps the
	// horizon least-loaded brokers, and the next horizon records choose among
	// them, adding their own weight as the hook will. Only changes made by
	// acknowledgements and other producers are seen up to horizon-1 records
	// late; with this producer alone and nothing acknowledged, the choices are
	// those of a full scan per record.
	horizon = 8
)

type leastInflight struct {
	in    *Inflight
	bytes bool
	slack int64

	slots    []*slot        // brokers' counters by broker index, for scans
	cand     [horizon]int   // broker indexes, ascending load
	candLoad [horizon]int64 // their loads, plus what this chooser added since
	ncand    int
	left     int // records left before the next scan
}

func (c *leastInflight) slotFor(id int32) *slot { return c.in.slot(id) }

func (c *leastInflight) reset(brokers []brokerParts) {
	c.left, c.ncand = 0, 0
	c.slots = c.slots[:0]
	for i := range brokers {
		c.slots = append(c.slots, brokers[i].load)
	}
}

func (c *leastInflight) value(s *slot) int64 {
	if c.bytes {
		return s.bytes.Load()
	}
	return s.records.Load()
}

func (c *leastInflight) weight(r *kgo.Record) int64 {
	if !c.bytes {
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
		c.left = horizon
	}
	c.left--
	least := c.candLoad[0]
	for i := 1; i < c.ncand; i++ {
		least = min(least, c.candLoad[i])
	}
	best := 0
	for i := range c.ncand {
		if j := (start + i) % c.ncand; c.candLoad[j] <= least+c.slack {
			best = j
			break
		}
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
	n := len(slots)
	c.ncand = 0
	i := start
	for range n {
		l := c.value(slots[i])
		if c.ncand < horizon || l < c.candLoad[c.ncand-1] {
			j := min(c.ncand, horizon-1)
			for ; j > 0 && c.candLoad[j-1] > l; j-- {
				c.cand[j], c.candLoad[j] = c.cand[j-1], c.candLoad[j-1]
			}
			c.cand[j], c.candLoad[j] = i, l
			if c.ncand < horizon {
				c.ncand++
			}
		}
		if c.ncand == horizon && c.candLoad[horizon-1] <= 0 {
			return // horizon idle brokers: nobody can be less loaded
		}
		if i++; i == n {
			i = 0
		}
	}
}

// slot holds one broker's in-flight gauges. They are bounded by what the
// producers may buffer, so int64 never overflows; they return to zero when
// every record has been answered. Padded to keep brokers off one cache line.
type slot struct {
	records atomic.Int64
	bytes   atomic.Int64
	_       [48]byte
}

const shards = 64

type shard struct {
	mu sync.Mutex
	m  map[*kgo.Record]*slot
	_  [40]byte
}

// Inflight tracks records and bytes in flight per broker for producers that
// register it as a hook (kgo.WithHooks). A record counts from the moment
// franz-go buffers it into a partition (HookProduceRecordPartitioned, which
// names the leader broker) until its promise is about to run
// (HookProduceRecordUnbuffered), that is buffered plus unacknowledged. The
// broker charged is remembered per record, so every increment is undone
// exactly once even if the partition's leader changes in between, and
// records that failed before being partitioned are not counted at all.
// It is safe for concurrent use by any number of clients.
type Inflight struct {
	mu     sync.Mutex                      // serializes slot creation
	slots  atomic.Pointer[map[int32]*slot] // copy-on-write: lock-free reads
	shards [shards]shard
}

// NewInflight returns an empty tracker.
func NewInflight() *Inflight {
	in := new(Inflight)
	m := map[int32]*slot{}
	in.slots.Store(&m)
	for i := range in.shards {
		in.shards[i].m = make(map[*kgo.Record]*slot)
	}
	return in
}

func (in *Inflight) slot(id int32) *slot {
	if s := (*in.slots.Load())[id]; s != nil {
		return s
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	cur := *in.slots.Load()
	if s := cur[id]; s != nil {
		return s
	}
	next := make(map[int32]*slot, len(cur)+1)
	for k, v := range cur {
		next[k] = v
	}
	s := new(slot)
	next[id] = s
	in.slots.Store(&next)
	return s
}

func recordBytes(r *kgo.Record) int64 {
	n := len(r.Key) + len(r.Value)
	for _, h := range r.Headers {
		n += len(h.Key) + len(h.Value)
	}
	return int64(n)
}

func (in *Inflight) shardOf(r *kgo.Record) *shard {
	return &in.shards[uint32(r.Partition)%shards]
}

// OnProduceRecordPartitioned implements kgo.HookProduceRecordPartitioned.
func (in *Inflight) OnProduceRecordPartitioned(r *kgo.Record, leader int32) {
	s := in.slot(leader)
	s.records.Add(1)
	s.bytes.Add(recordBytes(r))
	sh := in.shardOf(r)
	sh.mu.Lock()
	sh.m[r] = s
	sh.mu.Unlock()
}

// OnProduceRecordUnbuffered implements kgo.HookProduceRecordUnbuffered.
func (in *Inflight) OnProduceRecordUnbuffered(r *kgo.Record, _ error) {
	sh := in.shardOf(r)
	sh.mu.Lock()
	s, ok := sh.m[r]
	if ok {
		delete(sh.m, r)
	}
	sh.mu.Unlock()
	if ok {
		s.records.Add(-1)
		s.bytes.Add(-recordBytes(r))
	}
}

// Broker returns the records and bytes in flight to a broker.
func (in *Inflight) Broker(id int32) (records, bytes int64) {
	s := (*in.slots.Load())[id]
	if s == nil {
		return 0, 0
	}
	return s.records.Load(), s.bytes.Load()
}

// Add charges (or, with negative values, relieves) a broker directly. It is
// for producers that track in-flight work themselves instead of through the
// hooks, and for tests.
func (in *Inflight) Add(id int32, records, bytes int64) {
	s := in.slot(id)
	s.records.Add(records)
	s.bytes.Add(bytes)
}

var (
	_ kgo.HookProduceRecordPartitioned = (*Inflight)(nil)
	_ kgo.HookProduceRecordUnbuffered  = (*Inflight)(nil)
)
