// Package partitioner is the registry of the franz-go kgo.Partitioner
// implementations kplan compares, by name: partition-balancing ones
// (roundrobin, default, random, hash, leastbackup), the broker-balancing Node
// and SQF partitioners of the Burato thesis (seed 000, chapters 5 and 6), and
// the Java producer's KIP-794 rule (kip794). Node, SQF and KIP794 live in the
// public package github.com/kplan-dev/kplan/partitioner; this package names
// them, describes them and builds a producer's options (ClientOpts) for kplan
// chaos.
package partitioner

import (
	"fmt"
	"math/rand"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	pub "github.com/kplan-dev/kplan/partitioner"
)

// LeaderSource reports the current leader of a partition and its leader
// epoch (see the public package).
type LeaderSource = pub.LeaderSource

// Inflight tracks records and bytes in flight per broker (see the public
// package); sqf, sqf-shared and kip794 read one.
type Inflight = pub.Inflight

// NewInflight returns an empty tracker.
func NewInflight() *Inflight { return pub.NewInflight() }

// DefaultSlackRecords is sqf's default slack in records.
const DefaultSlackRecords = pub.DefaultSlackRecords

// Option configures New.
type Option func(*config)

type config struct {
	leaders  LeaderSource
	rng      *rand.Rand
	inflight *Inflight
	bytes    bool
	slack    *int64
	stick    int
	timeout  time.Duration
}

// WithLeaders sets the leader source of the broker-aware partitioners (node,
// sqf, kip794). It is required for them.
func WithLeaders(src LeaderSource) Option { return func(c *config) { c.leaders = src } }

// WithRand sets the random source of the random partitioner (required for it;
// kplan never uses the global source) and of kip794. Access is serialized
// internally.
func WithRand(r *rand.Rand) Option { return func(c *config) { c.rng = r } }

// WithInflight sets the in-flight tracker sqf and kip794 read. Share one
// Inflight between several producers (and their partitioners) to balance their
// combined flow; it must be registered as a hook on every one of those
// clients (kgo.WithHooks). Without it, sqf and kip794 make their own.
func WithInflight(in *Inflight) Option { return func(c *config) { c.inflight = in } }

// WithSlack sets sqf's slack (see pub.SQF): records, or bytes with
// WithBytes; 0 is pure join-the-shortest-queue. Without it sqf uses the
// public package's default.
func WithSlack(n int64) Option { return func(c *config) { c.slack = &n } }

// WithStick makes node and sqf send n records in a row to each partition
// they choose (see pub.WithStick); without it, or below 1, they choose per
// record.
func WithStick(n int) Option { return func(c *config) { c.stick = n } }

// WithBytes makes sqf compare in-flight bytes instead of in-flight records.
func WithBytes() Option { return func(c *config) { c.bytes = true } }

// WithAvailabilityTimeout sets kip794's availability timeout (the Java
// producer's partitioner.availability.timeout.ms); 0, the default as in
// Kafka, disables it.
func WithAvailabilityTimeout(d time.Duration) Option { return func(c *config) { c.timeout = d } }

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
		return pub.NewNode(c.leaders, pub.WithStick(c.stick)), nil
	}},
	"sqf": {"the leader broker with the least in flight (buffered plus unacknowledged), then round robin over its partitions", func(c *config) (kgo.Partitioner, error) {
		if c.leaders == nil {
			return nil, fmt.Errorf("partitioner sqf: %w", errNoLeaders)
		}
		return newSQF(c, c.tracker()), nil
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
	KIP794: {"the Java producer's default since Kafka 3.3 (KIP-794): 16 KiB sticky batches, the next partition drawn against its queue, murmur2 for keys; partitioner.availability.timeout.ms 0 as in Kafka", func(c *config) (kgo.Partitioner, error) {
		if c.leaders == nil {
			return nil, fmt.Errorf("partitioner %s: %w", KIP794, errNoLeaders)
		}
		opts := []pub.Option{pub.WithAvailabilityTimeout(c.timeout)}
		if c.rng != nil {
			opts = append(opts, pub.WithRand(c.rng))
		}
		return pub.NewKIP794(c.leaders, c.tracker(), opts...), nil
	}},
}

// Registry names beyond the plain ones.
const (
	// SQFShared is sqf over a tracker shared by several producers.
	SQFShared = "sqf-shared"
	// KIP794 is the Java producer's default partitioner (pub.KIP794).
	KIP794 = "kip794"
)

// tracker returns the in-flight tracker given, or a new one.
func (c *config) tracker() *Inflight {
	if c.inflight == nil {
		return NewInflight()
	}
	return c.inflight
}

func newSQF(c *config, in *Inflight) *pub.SQF {
	opts := []pub.Option{pub.WithStick(c.stick)}
	if c.bytes {
		opts = append(opts, pub.WithBytes())
	}
	if c.slack != nil {
		opts = append(opts, pub.WithSlack(*c.slack))
	}
	return pub.NewSQF(c.leaders, in, opts...)
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
func BrokerAware(name string) bool {
	return name == "node" || name == "sqf" || name == SQFShared || name == KIP794
}

// tracked reports whether the named partitioner reads an in-flight tracker.
func tracked(name string) bool { return name == "sqf" || name == SQFShared || name == KIP794 }

// New returns the named partitioner. node, sqf, sqf-shared and kip794 need
// WithLeaders; random needs WithRand.
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
// kgo options (the partitioner and, for sqf and kip794, the in-flight hooks)
// and a bind function to call with the client once kgo.NewClient returned it.
// Options given here (WithInflight, WithBytes, WithRand, ...) are passed to
// New; the leader source is the bound client.
func ClientOpts(name string, opts ...Option) (kopts []kgo.Opt, bind func(*kgo.Client), err error) {
	leaders := new(pub.ClientLeaders)
	var c config
	for _, o := range opts {
		o(&c)
	}
	if tracked(name) && c.inflight == nil {
		c.inflight = NewInflight()
		opts = append(opts, WithInflight(c.inflight))
	}
	opts = append(opts, WithLeaders(leaders.Leader))
	p, err := New(name, opts...)
	if err != nil {
		return nil, nil, err
	}
	kopts = []kgo.Opt{kgo.RecordPartitioner(p)}
	if tracked(name) {
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
