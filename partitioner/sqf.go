package partitioner

import (
	"math"

	"github.com/twmb/franz-go/pkg/kgo"
)

// SQF is the thesis's Shortest Queue First partitioner: among the brokers
// that lead at least one partition of the topic it picks the one with the
// least in flight (records, or bytes with WithBytes) and then round robins
// over that broker's partitions (thesis §6.2.3). Keys are ignored.
//
// Queues are compared with a slack: every broker whose in flight is within
// the slack of the least is a tie, and ties are served round robin (the
// rotation resumes after the broker last chosen). Under light load, where
// queues differ only by the brokers' acknowledgement jitter, sqf therefore
// serves brokers round robin (the thesis's usage-balanced shares, like node);
// once a broker falls more than the slack behind, sqf steers records away
// from it (join the shortest queue). Slack 0 is the pure policy, whose record shares follow each
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
// in. It reads WithBytes, WithSlack and WithStick. Register in as a hook
// (kgo.WithHooks(in)) on every client using it; one Inflight may serve several
// SQFs, which then balance their combined flow.
func NewSQF(src LeaderSource, in *Inflight, opts ...Option) *SQF {
	o := apply(opts)
	slack := int64(DefaultSlackRecords)
	if o.bytes {
		slack = DefaultSlackBytes
	}
	if o.slack != nil {
		slack = *o.slack
	}
	return &SQF{leaders: src, inflight: in, bytes: o.bytes, slack: slack, stick: o.stick}
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
