package chaos

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/kplan-dev/kplan/internal/errkind"
	"github.com/kplan-dev/kplan/internal/kafka"
	"github.com/kplan-dev/kplan/internal/loadgen"
	"github.com/kplan-dev/kplan/internal/partitioner"
	"github.com/kplan-dev/kplan/internal/workload"
)

// TargetKind says how the broker to kill is chosen.
type TargetKind int

// Target kinds.
const (
	// TargetNone kills nothing: the experiment measures a steady state.
	TargetNone TargetKind = iota
	// TargetBroker kills a broker by id.
	TargetBroker
	// TargetLeaderOf kills the leader of one partition at kill time.
	TargetLeaderOf
	// TargetBusiest kills the broker leading most partitions of the
	// experiment topics at kill time (ties: the lowest id).
	TargetBusiest
	// TargetEach kills every broker in turn, one run each: a Campaign's
	// target (Run takes one broker).
	TargetEach
)

// Target is the broker an experiment kills.
type Target struct {
	Kind      TargetKind
	Broker    int32  // TargetBroker
	Topic     string // TargetLeaderOf
	Partition int32  // TargetLeaderOf
}

// String returns the target as --kill takes it.
func (t Target) String() string {
	switch t.Kind {
	case TargetBroker:
		return fmt.Sprintf("broker-%d", t.Broker)
	case TargetLeaderOf:
		return fmt.Sprintf("leader-of:%s/%d", t.Topic, t.Partition)
	case TargetBusiest:
		return "busiest"
	case TargetEach:
		return "each"
	default:
		return "none"
	}
}

// ParseTarget parses broker-N, leader-of:TOPIC/P, busiest, each or none.
func ParseTarget(s string) (Target, error) {
	switch {
	case s == "each":
		return Target{Kind: TargetEach}, nil
	case s == "none":
		return Target{Kind: TargetNone}, nil
	case s == "busiest":
		return Target{Kind: TargetBusiest}, nil
	case strings.HasPrefix(s, "broker-"):
		id, err := strconv.ParseInt(strings.TrimPrefix(s, "broker-"), 10, 32)
		if err != nil || id < 0 {
			return Target{}, errkind.Usagef("kill", "target %q: want broker-N with N a broker id", s)
		}
		return Target{Kind: TargetBroker, Broker: int32(id)}, nil
	case strings.HasPrefix(s, "leader-of:"):
		rest := strings.TrimPrefix(s, "leader-of:")
		i := strings.LastIndexByte(rest, '/')
		if i <= 0 {
			return Target{}, errkind.Usagef("kill", "target %q: want leader-of:TOPIC/PARTITION", s)
		}
		p, err := strconv.ParseInt(rest[i+1:], 10, 32)
		if err != nil || p < 0 {
			return Target{}, errkind.Usagef("kill", "target %q: partition %q is not a partition number", s, rest[i+1:])
		}
		return Target{Kind: TargetLeaderOf, Topic: rest[:i], Partition: int32(p)}, nil
	}
	return Target{}, errkind.Usagef("kill", "unknown target %q (want broker-N, leader-of:TOPIC/P, busiest, each or none)", s)
}

// Config is one experiment.
type Config struct {
	// Partitioners to compare, by partitioner.Names() name, or SQFShared.
	Partitioners []string
	// Workload, when set, replaces the one-topic experiment (Topic,
	// Assignment, Rate): every partitioner writes each of these topics,
	// through a producer of its own per topic, at the topic's rate. Side by
	// side each partitioner writes its own copies (WorkloadTopicName);
	// sequential runs write the same topics one partitioner after another.
	Workload []WorkloadTopic
	// Existing makes Workload name topics that exist on the cluster, written
	// as they are (their assignments are read from the cluster, nothing is
	// created); it requires Sequential. kplan's records carry the RunHeader
	// header, and the loss check counts only those.
	Existing bool
	// Target is the broker to kill (TargetNone: no kill).
	Target Target
	// Fault, when set, is a network fault injected after the before phase
	// and measured in a fault phase of its own, instead of or before the
	// kill (the kill, if any, then comes with the fault in force). Restore
	// clears it before the recovered phase; without Restore it is cleared
	// when the run ends. The cluster must implement Faulter.
	Fault *Fault
	// Slow marks a slow-broker experiment (--slow): Fault is the broker's
	// slowness (a bandwidth cap or a delay), there is no kill, and the
	// reports name the before phase "at rest" and the fault phase "slow".
	Slow bool
	// RecommendBy is the objective of the result's recommendation (""
	// means ByThroughput).
	RecommendBy RecommendBy
	// Topic is the topic name prefix: each partitioner writes Topic-NAME.
	Topic string
	// Assignment is the replica assignment of every experiment topic
	// (replicas per partition, preferred leader first).
	Assignment [][]int32
	// Rate caps each producer in bytes/s; 0 means as fast as it can.
	Rate int64
	// Records, when positive, ends every measured phase once each producer
	// sent that many records in it instead of after Phase.
	Records int64
	// RecordSize is each record's value size in bytes (at least MinRecordSize).
	RecordSize int
	// Warmup, Phase: durations of the warm-up and of each measured phase.
	Warmup, Phase time.Duration
	// FailoverTimeout bounds the wait for failover before the after phase.
	FailoverTimeout time.Duration
	// Objective is the latency objective of the violation rates (0: none).
	Objective time.Duration
	// Acks is all (with idempotence) or 1.
	Acks loadgen.Acks
	// noIdempotence makes acks=all producers retry without idempotence, as
	// Kafka's producers did before 3.0: a retried batch the old leader had
	// replicated but not answered is written twice. Only the duplicate
	// check's test sets it, to make the lab duplicate records.
	noIdempotence bool
	// Restore restarts the killed broker after the after phase, elects
	// preferred leaders and measures a recovered phase.
	Restore bool
	// Sequential runs the partitioners one after another, each with its own
	// kill (and a restore between them), instead of side by side.
	Sequential bool
	// AllowUnavailable skips the safety checks before a real kill.
	AllowUnavailable bool
	// MetadataMinAge and MetadataMaxAge are the producers' and consumer's
	// metadata ages: the minimum bounds how soon a client can learn of a
	// leader change (franz-go's default is 5 s).
	MetadataMinAge, MetadataMaxAge time.Duration
	// ConsumeAfter starts the checking consumer only after the producers
	// stopped: no end-to-end latency, but its reads stay off the brokers'
	// links and disks while throughput is measured (the thesis measured
	// with producers alone).
	ConsumeAfter bool
	// SQFSlack is the sqf partitioner's slack in records (see
	// partitioner.SQF); 0 is pure join-the-shortest-queue.
	SQFSlack int64
	// KIP794Timeout is the kip794 partitioner's availability timeout (the
	// Java producer's partitioner.availability.timeout.ms): a partition
	// whose leader made no progress for longer is left out of the draw; 0,
	// Kafka's default, disables it.
	KIP794Timeout time.Duration
	// MaxBufferedRecords caps each producer's buffered plus unacknowledged
	// records (kgo.MaxBufferedRecords; franz-go's default is 50,000). With
	// no rate cap the buffer stays full, and the cap shapes how large the
	// batches can grow.
	MaxBufferedRecords int
	// Linger is the producers' linger (kgo.ProducerLinger); 0 keeps
	// franz-go's default. kplan measure's distributed Tp sets it to its
	// --linger, so one process and N workers produce alike.
	Linger time.Duration
	// Stick is how many records node and sqf send in a row to each
	// partition they choose (1: a choice per record, as in the thesis).
	Stick int
	// Seed seeds the random sources (the random partitioner, sampling).
	Seed uint64
	// Now is the clock; nil means time.Now. It must carry a monotonic reading.
	Now func() time.Time
	// Progress, if set, is called about four times a second.
	Progress func(Progress)
	// Conn holds the clients' connection settings: the command config's
	// security settings apply to every client of the experiment, while the
	// cluster's own addresses replace the bootstrap servers.
	Conn kafka.ConnOptions
	// Version is kplan's version, for the clients' id "kplan/VERSION".
	Version string
	// CleanupTimeout bounds the cleanup after the experiment (stop and
	// flush the producers, restart a killed broker after an interruption);
	// 0 means DefaultCleanupTimeout. The loss check's final read has its
	// own limits.
	CleanupTimeout time.Duration
	// Workers, when positive, makes the run distributed: the records are
	// produced by Workers kplan worker processes (RunWorker) that join the
	// run by RunID, and Run coordinates them through the run's topics
	// (distrun.go). No producer runs in this process.
	Workers int
	// RunID is a distributed run's id ("": Run picks a new one, NewRunID).
	RunID string
	// OnRun, if set, is called once a distributed run's topics exist, with
	// its id and the cluster's bootstrap addresses, before Run waits for
	// the workers: the CLI prints their commands.
	OnRun func(run string, seeds []string)
	// JoinTimeout bounds the wait for every worker (0: DefaultJoinTimeout).
	JoinTimeout time.Duration
	// JoinCheck, if set, is asked now and then while a distributed run
	// waits for its workers whether waiting is pointless (a worker's pod
	// cannot start: --workers-on kubernetes); its error ends the run.
	JoinCheck func(context.Context) error
	// Abort, when closed, cuts the cleanup short (a second Ctrl-C): the
	// producers are not flushed, a killed broker is not restarted and the
	// loss check is skipped.
	Abort <-chan struct{}
}

// WorkloadTopic is one topic of a workload.
type WorkloadTopic struct {
	// Name is the topic as the layout (or the cluster, with Existing)
	// names it.
	Name string
	// Assignment is its replica assignment, preferred leader first; nil
	// with Existing (read from the cluster).
	Assignment [][]int32
	// Rate is each producer's rate for this topic in bytes/s; 0 means as
	// fast as it can.
	Rate int64
	// Keys are the record keys' distribution.
	Keys workload.Keys
}

// SQFShared is the partitioner name of sqf with one in-flight tracker shared
// by every producer of the experiment that uses it (thesis Fig 6.7), next to
// "sqf", one tracker per producer.
const SQFShared = "sqf-shared"

// RunHeader is the record header carrying kplan's run id (8 bytes, big
// endian): the checking consumer counts only records that carry it.
const RunHeader = loadgen.RunHeader

// WorkloadTopicName is the topic a partitioner's producer writes for the
// workload topic name: PREFIX-PARTITIONER-NAME side by side, PREFIX-NAME in
// a sequential run (every partitioner writes the same topics), NAME itself
// for existing topics.
func WorkloadTopicName(prefix, partitionerName, name string, sequential, existing bool) string {
	switch {
	case existing:
		return name
	case sequential:
		return prefix + "-" + name
	}
	return prefix + "-" + partitionerName + "-" + name
}

// DefaultCleanupTimeout bounds the cleanup when Config.CleanupTimeout is 0.
const DefaultCleanupTimeout = 2 * time.Minute

// Progress is a running experiment's state for a progress line.
type Progress struct {
	Phase       string
	Partitioner string // in sequential runs, the one running
	Sent        int64
	Elapsed     time.Duration
}

// MinRecordSize is the smallest record value: the sequence number, the send
// time, the producer and phase, and the run id.
const MinRecordSize = loadgen.EnvelopeLen

// DefaultPartitioners is what --partitioner defaults to.
var DefaultPartitioners = []string{"roundrobin", "node", "sqf", "default"}

// Defaults returns the default experiment: kill broker-3 of three brokers,
// 3 partitions with replication factor 2 led by brokers 1, 2, 3.
func Defaults() Config {
	return Config{
		Partitioners:    append([]string(nil), DefaultPartitioners...),
		Target:          Target{Kind: TargetBroker, Broker: 3},
		Topic:           "kplan-chaos",
		Assignment:      RingAssignment([]int32{1, 2, 3}, 3, 2),
		Rate:            100_000,
		RecordSize:      100,
		Warmup:          2 * time.Second,
		Phase:           8 * time.Second,
		FailoverTimeout: 30 * time.Second,
		Objective:       100 * time.Millisecond,
		Acks:            loadgen.AcksAll,
		MetadataMinAge:  100 * time.Millisecond,
		MetadataMaxAge:  time.Second,
		SQFSlack:        partitioner.DefaultSlackRecords,
		// franz-go's default.
		MaxBufferedRecords: 50_000,
		Stick:              1,
		Seed:               1,
	}
}

// RingAssignment places partition p's replicas on brokers p, p+1, ... (mod
// the broker count): with brokers 1,2,3, 3 partitions and replication factor
// 2 that is {1,2} {2,3} {3,1}, so broker 3's partition fails over to broker 1.
func RingAssignment(brokers []int32, partitions, rf int) [][]int32 {
	out := make([][]int32, partitions)
	for p := range out {
		for k := range rf {
			out[p] = append(out[p], brokers[(p+k)%len(brokers)])
		}
	}
	return out
}

// ParseAssignment parses "1,2;2,3;3,1": partitions separated by ';',
// replicas by ','.
func ParseAssignment(s string) ([][]int32, error) {
	var out [][]int32
	for i, part := range strings.Split(s, ";") {
		var reps []int32
		for _, r := range strings.Split(part, ",") {
			id, err := strconv.ParseInt(strings.TrimSpace(r), 10, 32)
			if err != nil || id < 0 {
				return nil, errkind.Usagef("assignment", "assignment %q: partition %d: %q is not a broker id", s, i, strings.TrimSpace(r))
			}
			for _, x := range reps {
				if x == int32(id) {
					return nil, errkind.Usagef("assignment", "assignment %q: partition %d names broker %d twice", s, i, id)
				}
			}
			reps = append(reps, int32(id))
		}
		if len(out) > 0 && len(reps) != len(out[0]) {
			return nil, errkind.Usagef("assignment", "assignment %q: partition %d has %d replicas, partition 0 has %d", s, i, len(reps), len(out[0]))
		}
		out = append(out, reps)
	}
	return out, nil
}

// FormatAssignment is the inverse of ParseAssignment.
func FormatAssignment(a [][]int32) string {
	parts := make([]string, len(a))
	for i, reps := range a {
		s := make([]string, len(reps))
		for j, r := range reps {
			s[j] = strconv.Itoa(int(r))
		}
		parts[i] = strings.Join(s, ",")
	}
	return strings.Join(parts, ";")
}

// Validate checks what can be checked without a cluster. Its errors are
// usage errors naming the field (the flag's name without dashes).
func (c *Config) Validate() error { return c.validate(false, false, false) }

// validate is Validate; ring leaves out the assignment a campaign builds
// over the cluster's brokers, existing the existing topics it lists, and
// campaign allows the targets only a campaign resolves (each).
func (c *Config) validate(ring, existing, campaign bool) error {
	if len(c.Partitioners) == 0 {
		return errkind.Usagef("partitioner", "no partitioner")
	}
	seen := map[string]bool{}
	for _, n := range c.Partitioners {
		if partitioner.Describe(n) == "" {
			return errkind.Usagef("partitioner", "unknown partitioner %q (want one of %s)", n, strings.Join(partitioner.Names(), ", "))
		}
		if seen[n] {
			return errkind.Usagef("partitioner", "partitioner %q given twice", n)
		}
		seen[n] = true
	}
	if len(c.Partitioners) > 16 {
		return errkind.Usagef("partitioner", "at most 16 partitioners")
	}
	if c.Topic == "" {
		return errkind.Usagef("topic", "empty topic name")
	}
	if c.Target.Kind == TargetEach && !campaign {
		return errkind.Usagef("kill", "each: one run kills one broker (a campaign kills each in turn)")
	}
	if err := c.Fault.validate(); err != nil {
		return err
	}
	if err := c.validateSlow(); err != nil {
		return err
	}
	if _, err := ParseRecommendBy(string(c.RecommendBy)); err != nil {
		return err
	}
	if !ring && !existing {
		if err := c.validateWorkload(); err != nil {
			return err
		}
	}
	if err := c.validateFigures(); err != nil {
		return err
	}
	if err := c.validateWorkers(); err != nil {
		return err
	}
	return c.validateDurations()
}

// validateFigures checks the counts and sizes.
func (c *Config) validateFigures() error {
	if c.RecordSize < MinRecordSize || c.RecordSize > 1<<20 {
		return errkind.Usagef("record-size", "record size %d: want %d to %d bytes", c.RecordSize, MinRecordSize, 1<<20)
	}
	if c.Rate < 0 {
		return errkind.Usagef("rate", "negative rate")
	}
	if c.Records < 0 {
		return errkind.Usagef("records", "must not be negative, got %d", c.Records)
	}
	if c.Acks != loadgen.AcksAll && c.Acks != loadgen.AcksLeader {
		return errkind.Usagef("acks", "want all or 1, got %q", c.Acks.String())
	}
	if c.SQFSlack < 0 {
		return errkind.Usagef("sqf-slack", "must not be negative, got %d", c.SQFSlack)
	}
	if c.KIP794Timeout < 0 {
		return errkind.Usagef("kip794-availability-timeout", "must not be negative, got %v", c.KIP794Timeout)
	}
	if c.MaxBufferedRecords < 1 || c.MaxBufferedRecords > 100_000_000 {
		return errkind.Usagef("max-buffered-records", "want 1 to 100000000, got %d", c.MaxBufferedRecords)
	}
	if c.Stick < 1 || c.Stick > 1_000_000 {
		return errkind.Usagef("stick", "want 1 to 1000000, got %d", c.Stick)
	}
	return nil
}

// validateDurations checks the phases' durations, the objective and the
// metadata ages.
func (c *Config) validateDurations() error {
	if c.Records == 0 && c.Phase <= 0 {
		return errkind.Usagef("phase-duration", "must be positive, got %v", c.Phase)
	}
	if c.Warmup < 0 {
		return errkind.Usagef("warmup", "must not be negative, got %v", c.Warmup)
	}
	if c.FailoverTimeout <= 0 {
		return errkind.Usagef("failover-timeout", "must be positive, got %v (the failover timeout)", c.FailoverTimeout)
	}
	if c.Objective < 0 {
		return errkind.Usagef("latency-objective", "must not be negative, got %v", c.Objective)
	}
	if c.MetadataMinAge <= 0 {
		return errkind.Usagef("metadata-min-age", "must be positive, got %v", c.MetadataMinAge)
	}
	if c.MetadataMaxAge < c.MetadataMinAge {
		return errkind.Usagef("metadata-max-age", "%v is less than the min age %v (metadata ages: want 0 < min <= max)", c.MetadataMaxAge, c.MetadataMinAge)
	}
	return nil
}

// MaxProducers bounds partitioners times workload topics: each record names
// its producer in one byte.
const MaxProducers = 255

func (c *Config) validateWorkload() error {
	if len(c.Workload) == 0 {
		if c.Existing {
			return errkind.Usagef("topics", "no existing topic to write")
		}
		if len(c.Assignment) == 0 {
			return errkind.Usagef("partitions", "no partitions")
		}
		return nil
	}
	if n := len(c.Partitioners) * len(c.Workload); n > MaxProducers {
		return errkind.Usagef("partitioner", "%d partitioners times %d topics is %d producers, more than %d", len(c.Partitioners), len(c.Workload), n, MaxProducers)
	}
	if c.Existing && !c.Sequential {
		return errkind.Usagef("sequential", "existing topics are written one partitioner after another: add --sequential")
	}
	seen := map[string]bool{}
	for _, w := range c.Workload {
		if w.Name == "" {
			return errkind.Usagef("layout", "a workload topic without a name")
		}
		if seen[w.Name] {
			return errkind.Usagef("layout", "topic %s given twice", w.Name)
		}
		seen[w.Name] = true
		if w.Rate < 0 {
			return errkind.Usagef("rates", "%s: negative rate", w.Name)
		}
		if c.Existing {
			continue
		}
		if len(w.Assignment) == 0 {
			return errkind.Usagef("layout", "%s: no partitions", w.Name)
		}
		for p, reps := range w.Assignment {
			if len(reps) == 0 {
				return errkind.Usagef("layout", "%s partition %d: no replicas", w.Name, p)
			}
		}
	}
	return nil
}
