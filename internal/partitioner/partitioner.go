// Package partitioner holds franz-go kgo.Partitioner implementations that kplan
// compares: partition-balancing ones (roundrobin, default, random, hash,
// leastbackup) and the broker-balancing Node and SQF partitioners of the
// Burato thesis (seed 000, chapters 5 and 6).
//
// The broker-aware partitioners need the leader of every partition. They read
// it from a LeaderSource, usually the producing client's own view
// (kgo.Client.PartitionLeader, bound late through ClientLeaders because the
// partitioner is configured before the client exists). They return partition
// numbers (RequiresConsistency is true), skip partitions without a leader, and
// check the leader of the partition they chose on every record, so a leader
// change is followed on the first record after the client learns of it.
package partitioner

import (
	"fmt"
	"math/rand"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kgo"
)

// LeaderSource reports the current leader of a partition and its leader epoch.
// ok is false when the partition has no usable leader (unknown topic, load
// error, leader not available). It must be safe for concurrent use and cheap:
// the broker-aware partitioners call it once per record.
type LeaderSource func(topic string, partition int32) (leader, epoch int32, ok bool)

// ClientLeaders is a LeaderSource over a franz-go client that is bound after
// the client is created (kgo.RecordPartitioner must be given to kgo.NewClient,
// so the partitioner exists before the client does). Until Bind is called,
// every partition reports no leader.
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

// Option configures New.
type Option func(*config)

type config struct {
	leaders  LeaderSource
	rng      *rand.Rand
	inflight *Inflight
	bytes    bool
	slack    *int64
	stick    int
}

// WithLeaders sets the leader source of the broker-aware partitioners (node,
// sqf). It is required for them.
func WithLeaders(src LeaderSource) Option { return func(c *config) { c.leaders = src } }

// WithRand sets the random source of the random partitioner (required for it;
// kplan never uses the global source). Access is serialized internally.
func WithRand(r *rand.Rand) Option { return func(c *config) { c.rng = r } }

// WithInflight sets the in-flight tracker the sqf partitioner reads. Share one
// Inflight between several producers (and their partitioners) to balance their
// combined flow; it must be registered as a hook on every one of those
// clients (kgo.WithHooks). Without it, sqf makes its own, reachable through
// the returned partitioner's Inflight method.
func WithInflight(in *Inflight) Option { return func(c *config) { c.inflight = in } }

// WithSlack sets sqf's slack (see SQF): records, or bytes with WithBytes; 0
// is pure join-the-shortest-queue. Without it sqf uses DefaultSlackRecords or
// DefaultSlackBytes.
func WithSlack(n int64) Option { return func(c *config) { c.slack = &n } }

// WithStick makes node and sqf send n records in a row to each partition
// they choose (see Node.WithStick); without it, or below 1, they choose per
// record.
func WithStick(n int) Option { return func(c *config) { c.stick = n } }

// WithBytes makes sqf compare in-flight bytes instead of in-flight records.
func WithBytes() Option { return func(c *config) { c.bytes = true } }

type constructor struct {
	doc string
	new func(*config) (kgo.Partitioner, error)
}

var registry = map[string]constructor{
	"roundrobin": {"per-partition round robin over the writable partitions (the thesis's default)", func(*config) (kgo.Partitioner, error) {
		return kgo.RoundRobinPartitioner(), nil
	}},
	"default": {"franz-go's default: uniform sticky (KIP-794) with adaptive backlog and murmur2 for keys", func(*config) (kgo.Partitioner, error) {
		return kgo.UniformBytesPartitioner(64<<10, true, true, nil), nil
	}},
	"random": {"a uniformly random writable partition per record", newRandom},
	"hash": {"murmur2 of the key modulo the partition count, like Kafka; keyless records stick to a random partition per batch", func(*config) (kgo.Partitioner, error) {
		return kgo.StickyKeyPartitioner(nil), nil
	}},
	"leastbackup": {"franz-go's: the partition with the fewest buffered records, pinned per batch", func(*config) (kgo.Partitioner, error) {
		return kgo.LeastBackupPartitioner(), nil
	}},
	"node": {"round robin over the topic's leader brokers, then round robin over that broker's partitions", func(c *config) (kgo.Partitioner, error) {
		if c.leaders == nil {
			return nil, fmt.Errorf("partitioner node: %w", errNoLeaders)
		}
		return NewNode(c.leaders).WithStick(c.stick), nil
	}},
	"sqf": {"the leader broker with the least in flight (buffered plus unacknowledged), then round robin over its partitions", func(c *config) (kgo.Partitioner, error) {
		if c.leaders == nil {
			return nil, fmt.Errorf("partitioner sqf: %w", errNoLeaders)
		}
		in := c.inflight
		if in == nil {
			in = NewInflight()
		}
		return newSQF(c, in), nil
	}},
	SQFShared: {"sqf with one in-flight tracker shared by every producer given it (WithInflight): balances their combined flow (thesis Fig 6.7)", func(c *config) (kgo.Partitioner, error) {
		if c.leaders == nil {
			return nil, fmt.Errorf("partitioner %s: %w", SQFShared, errNoLeaders)
		}
		if c.inflight == nil {
			return nil, fmt.Errorf("partitioner %s: needs the shared tracker (WithInflight)", SQFShared)
		}
		return newSQF(c, c.inflight), nil
	}},
}

// SQFShared is sqf over a tracker shared by several producers.
const SQFShared = "sqf-shared"

func newSQF(c *config, in *Inflight) *SQF {
	p := NewSQF(c.leaders, in, c.bytes).WithStick(c.stick)
	if c.slack != nil {
		p.WithSlack(*c.slack)
	}
	return p
}

var errNoLeaders = fmt.Errorf("needs a leader source (WithLeaders)")

// Names returns the partitioner names New accepts, sorted.
func Names() []string {
	names := make([]string, 0, len(registry))
	for n := range registry {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Describe returns a one-line description of the named partitioner, or "" if
// the name is unknown.
func Describe(name string) string { return registry[name].doc }

// BrokerAware reports whether the named partitioner needs a LeaderSource.
func BrokerAware(name string) bool { return name == "node" || name == "sqf" || name == SQFShared }

// New returns the named partitioner. node and sqf need WithLeaders; random
// needs WithRand.
func New(name string, opts ...Option) (kgo.Partitioner, error) {
	var c config
	for _, o := range opts {
		o(&c)
	}
	ctor, ok := registry[name]
	if !ok {
		return nil, fmt.Errorf("unknown partitioner %q (want one of %s)", name, strings.Join(Names(), ", "))
	}
	return ctor.new(&c)
}

// ClientOpts returns what a producer needs to use the named partitioner: the
// kgo options (the partitioner and, for sqf, its in-flight hooks) and a bind
// function to call with the client once kgo.NewClient returned it. Options
// given here (WithInflight, WithBytes, WithRand) are passed to New; the leader
// source is the bound client.
func ClientOpts(name string, opts ...Option) (kopts []kgo.Opt, bind func(*kgo.Client), err error) {
	leaders := new(ClientLeaders)
	var c config
	for _, o := range opts {
		o(&c)
	}
	if name == "sqf" && c.inflight == nil {
		c.inflight = NewInflight()
		opts = append(opts, WithInflight(c.inflight))
	}
	opts = append(opts, WithLeaders(leaders.Leader))
	p, err := New(name, opts...)
	if err != nil {
		return nil, nil, err
	}
	kopts = []kgo.Opt{kgo.RecordPartitioner(p)}
	if name == "sqf" || name == SQFShared {
		kopts = append(kopts, kgo.WithHooks(c.inflight))
	}
	return kopts, leaders.Bind, nil
}

// random picks a uniformly random writable partition.
type random struct {
	mu  sync.Mutex
	rng *rand.Rand
}

func newRandom(c *config) (kgo.Partitioner, error) {
	if c.rng == nil {
		return nil, fmt.Errorf("partitioner random: needs a random source (WithRand)")
	}
	return &random{rng: c.rng}, nil
}

// ForTopic implements kgo.Partitioner.
func (r *random) ForTopic(string) kgo.TopicPartitioner { return randomTopic{r} }

type randomTopic struct{ r *random }

// RequiresConsistency implements kgo.TopicPartitioner: any writable partition will do.
func (randomTopic) RequiresConsistency(*kgo.Record) bool { return false }

// Partition implements kgo.TopicPartitioner.
func (t randomTopic) Partition(_ *kgo.Record, n int) int {
	t.r.mu.Lock()
	p := t.r.rng.Intn(n)
	t.r.mu.Unlock()
	return p
}
