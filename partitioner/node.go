package partitioner

import (
	"sort"

	"github.com/twmb/franz-go/pkg/kgo"
)

// maxRetries bounds how many times one record rebuilds the layout when the
// leader view keeps changing under it (a metadata update racing the pick).
const maxRetries = 3

// brokerParts is one leader broker of a topic and the partitions it leads.
type brokerParts struct {
	id    int32
	parts []int32 // partition numbers, ascending
	cur   int     // round-robin cursor into parts, always in [0, len(parts))
	load  *slot   // sqf only: the broker's in-flight counters
}

// chooser picks the index of a broker among the topic's leader brokers. One
// chooser serves one topic partitioner, so it may keep state.
type chooser interface {
	choose(brokers []brokerParts, cur *int, r *kgo.Record) int
	// slotFor returns the counters of a broker (nil when the policy needs none).
	slotFor(id int32) *slot
	// reset forgets any state tied to broker indexes: the layout changed.
	reset(brokers []brokerParts)
}

// brokerTopic is the per-topic state shared by node and sqf. franz-go calls a
// TopicPartitioner for one record at a time, so it needs no lock.
type brokerTopic struct {
	topic   string
	leaders LeaderSource
	policy  chooser

	n       int     // partition count the layout was built for
	leader  []int32 // leader per partition, -1 without one
	epoch   []int32 // leader epoch per partition as last seen
	brokers []brokerParts
	bcur    int     // broker cursor, always in [0, len(brokers)) or 0
	down    []int32 // partitions without a leader
	dcur    int     // probe cursor into down
	fcur    int     // fallback round-robin cursor when no partition has a leader
	builds  uint64  // layout builds, for tests and diagnostics

	stick int   // records sent in a row to one partition (1: choose per record)
	left  int   // records left in the current run of last
	last  int32 // the partition of the current run
}

// RequiresConsistency implements kgo.TopicPartitioner: the broker-aware
// partitioners return partition numbers, not indexes into the writable
// partitions, because they choose among partitions by leader.
func (*brokerTopic) RequiresConsistency(*kgo.Record) bool { return true }

// Partition implements kgo.TopicPartitioner. n is the topic's partition count.
func (t *brokerTopic) Partition(r *kgo.Record, n int) int {
	if n != t.n {
		t.rebuild(n)
	}
	if t.left > 0 { // within a run: the same partition while its leader holds
		p := t.last
		if l, e, ok := t.leaders(t.topic, p); ok && l == t.leader[p] && e == t.epoch[p] {
			t.left--
			return int(p)
		}
		t.rebuild(n) // the leader moved: the run ends, choose again
	}
	for range maxRetries {
		if len(t.brokers) == 0 || (len(t.down) > 0 && t.probeDown()) {
			t.rebuild(n) // while no partition has a leader, look again on every record
		}
		if len(t.brokers) == 0 {
			break
		}
		b := &t.brokers[t.policy.choose(t.brokers, &t.bcur, r)]
		p := b.parts[b.cur]
		if b.cur++; b.cur == len(b.parts) {
			b.cur = 0
		}
		if l, e, ok := t.leaders(t.topic, p); ok && l == t.leader[p] && e == t.epoch[p] {
			t.last, t.left = p, t.stick-1
			return int(p)
		}
		t.rebuild(n) // the client's view moved: follow it before sending
	}
	// No partition has a known leader (or the view would not settle): spread
	// records over every partition; franz-go buffers them until leaders return.
	if t.fcur >= n {
		t.fcur = 0
	}
	p := t.fcur
	t.fcur++
	return p
}

// probeDown checks one leaderless partition per call and reports whether it
// has a leader now. It costs nothing while every partition has a leader.
func (t *brokerTopic) probeDown() bool {
	if t.dcur >= len(t.down) {
		t.dcur = 0
	}
	p := t.down[t.dcur]
	t.dcur++
	_, _, ok := t.leaders(t.topic, p)
	return ok
}

// rebuild reads every partition's leader and regroups partitions by broker.
// It allocates, but runs only when the partition count or a leader changes.
// Round-robin cursors survive for brokers that keep leading partitions.
func (t *brokerTopic) rebuild(n int) {
	t.builds++
	t.left = 0
	old := make(map[int32]int, len(t.brokers))
	for i := range t.brokers {
		old[t.brokers[i].id] = t.brokers[i].cur
	}
	t.n = n
	t.leader = make([]int32, n)
	t.epoch = make([]int32, n)
	t.down = t.down[:0]
	byBroker := make(map[int32][]int32)
	for p := range int32(n) {
		l, e, ok := t.leaders(t.topic, p)
		if !ok {
			t.leader[p], t.epoch[p] = -1, -1
			t.down = append(t.down, p)
			continue
		}
		t.leader[p], t.epoch[p] = l, e
		byBroker[l] = append(byBroker[l], p)
	}
	t.brokers = t.brokers[:0]
	for id, parts := range byBroker {
		cur := old[id]
		if cur >= len(parts) {
			cur = 0
		}
		t.brokers = append(t.brokers, brokerParts{id: id, parts: parts, cur: cur, load: t.policy.slotFor(id)})
	}
	sort.Slice(t.brokers, func(i, j int) bool { return t.brokers[i].id < t.brokers[j].id })
	if t.bcur >= len(t.brokers) {
		t.bcur = 0
	}
	t.policy.reset(t.brokers)
}

// Layout returns the topic's current broker -> partitions view as last built
// (for tests and diagnostics).
func (t *brokerTopic) Layout() map[int32][]int32 {
	m := make(map[int32][]int32, len(t.brokers))
	for _, b := range t.brokers {
		m[b.id] = append([]int32(nil), b.parts...)
	}
	return m
}

// Node is the thesis's Node partitioner: round robin over the brokers that
// lead at least one partition of the topic, then round robin over that
// broker's partitions (thesis §6.2.2). Keys are ignored (thesis §6.3).
type Node struct {
	leaders LeaderSource
	stick   int
}

// NewNode returns a Node partitioner reading leaders from src. It reads
// WithStick; without it, it chooses per record.
func NewNode(src LeaderSource, opts ...Option) *Node {
	o := apply(opts)
	return &Node{leaders: src, stick: o.stick}
}

// ForTopic implements kgo.Partitioner.
func (p *Node) ForTopic(topic string) kgo.TopicPartitioner {
	return &brokerTopic{topic: topic, leaders: p.leaders, policy: roundRobinBrokers{}, stick: p.stick}
}

type roundRobinBrokers struct{}

func (roundRobinBrokers) choose(brokers []brokerParts, cur *int, _ *kgo.Record) int {
	i := *cur
	if i >= len(brokers) {
		i = 0
	}
	if *cur = i + 1; *cur == len(brokers) {
		*cur = 0
	}
	return i
}

func (roundRobinBrokers) slotFor(int32) *slot { return nil }

func (roundRobinBrokers) reset([]brokerParts) {}
