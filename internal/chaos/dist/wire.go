// Package dist is the wire protocol and the merge of a distributed chaos
// run: a coordinator (kplan chaos --workers N) and N kplan worker processes
// that meet on a run's control and results topics. The coordinator
// publishes a Plan, the start of each phase, heartbeats and the end on the
// control topic; each worker publishes one Report per phase and producer
// on the results topic; Merge turns the reports and the checking consumer's
// read counts into per-partitioner, per-phase figures and names the
// workers that missed a phase.
//
// The package is pure: JSON messages in, data out, no Kafka client and no
// clock of its own.
package dist

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/kplan-dev/kplan/internal/errkind"
)

// Schema versions every message of a distributed run. A reader refuses
// another major version; fields added within v1 are optional.
const Schema = "kplan.chaos-dist/v1"

// Kind says what a Message carries.
type Kind string

// Kinds of messages: the first four on the control topic (from the
// coordinator, heartbeats also from workers), results on the results topic.
const (
	KindPlan      Kind = "plan"
	KindPhase     Kind = "phase"
	KindHeartbeat Kind = "heartbeat"
	KindEnd       Kind = "end"
	KindResult    Kind = "result"
)

// MaxProducers is the most producers a run can have over all its workers:
// a record's envelope carries its producer's index in one byte
// (loadgen.Envelope.Producer).
const MaxProducers = 256

// Message is one record's value on a run's control or results topic:
// exactly the field its Kind names is set.
type Message struct {
	Schema    string       `json:"schema"`
	Kind      Kind         `json:"kind"`
	Run       string       `json:"run"`
	Plan      *Plan        `json:"plan,omitempty"`
	Phase     *PhaseStart  `json:"phase,omitempty"`
	Heartbeat *Heartbeat   `json:"heartbeat,omitempty"`
	End       *End         `json:"end,omitempty"`
	Result    *PhaseReport `json:"result,omitempty"`
}

// Plan is what every worker runs: its streams, at what rates, from which
// epoch, and the phases scheduled in advance (later ones come as KindPhase
// messages once the coordinator knows when they start, e.g. after the
// failover).
type Plan struct {
	// Workers is N; a worker's index is in [0, N).
	Workers int `json:"workers"`
	// EnvelopeRun is the run id in every record's envelope (the checking
	// consumer counts only these records).
	EnvelopeRun uint64 `json:"envelope_run"`
	// Epoch is the run's time zero: an envelope's Sent is the time since it.
	Epoch time.Time `json:"epoch"`
	// Streams are what each worker produces: one producer per stream.
	Streams []Stream `json:"streams"`
	// RecordSize is each record's size in bytes.
	RecordSize int `json:"record_size"`
	// Acks is "all" or "1".
	Acks string `json:"acks"`
	// Seed seeds the partitioners' randomness; each worker mixes in its
	// index.
	Seed uint64 `json:"seed"`
	// ObjectiveNS is the latency objective of the violation counts;
	// LatencyCeilingNS the histograms' highest trackable latency.
	ObjectiveNS      int64 `json:"objective_ns"`
	LatencyCeilingNS int64 `json:"latency_ceiling_ns"`
	// MetadataMinAgeNS and MetadataMaxAgeNS are the producers' metadata
	// ages; MaxBufferedRecords their buffer cap.
	MetadataMinAgeNS   int64 `json:"metadata_min_age_ns"`
	MetadataMaxAgeNS   int64 `json:"metadata_max_age_ns"`
	MaxBufferedRecords int   `json:"max_buffered_records"`
	// LingerNS is the producers' linger (0: franz-go's default).
	LingerNS int64 `json:"linger_ns,omitempty"`
	// SQFSlack is the sqf partitioner's slack in records; Stick node's and
	// sqf's run length in records.
	SQFSlack int64 `json:"sqf_slack"`
	Stick    int   `json:"stick"`
	// KIP794TimeoutNS is the kip794 partitioner's availability timeout (0:
	// disabled, as in Kafka).
	KIP794TimeoutNS int64 `json:"kip794_availability_timeout_ns,omitempty"`
	// Phases are the phases scheduled when the plan was published.
	Phases []PhaseStart `json:"phases"`
	// GuardNS is the clock guard: a worker that learns of a phase later
	// than its start plus the guard reports the phase missed instead of
	// producing in it late.
	GuardNS int64 `json:"guard_ns"`
	// HeartbeatDeadlineNS is how long a worker waits for the coordinator's
	// next heartbeat before it stops and exits.
	HeartbeatDeadlineNS int64 `json:"heartbeat_deadline_ns"`
	// ResultsTopic is where workers publish their reports.
	ResultsTopic string `json:"results_topic"`
	// ClockOffsetNS is the coordinator's clock offset against the brokers'
	// (EstimateOffset) and ClockUncertaintyNS its uncertainty; both 0
	// and ClockKnown false when the coordinator could not measure it
	// (workers then keep their own clocks).
	ClockKnown         bool  `json:"clock_known,omitempty"`
	ClockOffsetNS      int64 `json:"clock_offset_ns,omitempty"`
	ClockUncertaintyNS int64 `json:"clock_uncertainty_ns,omitempty"`
}

// CoordinatorClock is the coordinator's clock offset in p, if it is known.
func (p *Plan) CoordinatorClock() (Offset, bool) {
	return Offset{Offset: time.Duration(p.ClockOffsetNS), Uncertainty: time.Duration(p.ClockUncertaintyNS)}, p.ClockKnown
}

// Stream is one producer of each worker: a partitioner writing one topic.
type Stream struct {
	Partitioner string `json:"partitioner"`
	Topic       string `json:"topic"`
	// RateBytesPerS is this stream's rate on each worker (0: as fast as it
	// can).
	RateBytesPerS int64 `json:"rate_bytes_per_s"`
}

// PhaseStart is when a phase starts, as an absolute time on the
// coordinator's clock.
type PhaseStart struct {
	Name  string    `json:"name"`
	Start time.Time `json:"start"`
	// DurationNS is the phase's planned length; 0 when it lasts until the
	// next phase starts or the run ends.
	DurationNS int64 `json:"duration_ns"`
}

// Coordinator is Heartbeat.Worker of the coordinator's heartbeats.
const Coordinator = -1

// Heartbeat says its sender is alive at At.
type Heartbeat struct {
	// Worker is the sender's index, Coordinator for the coordinator.
	Worker int       `json:"worker"`
	At     time.Time `json:"at"`
}

// End ends the run: workers stop producing at At (they stop at once if it
// is past), publish their last reports and exit.
type End struct {
	At time.Time `json:"at"`
	// Reason says why: "done", "interrupted", "failed: ...".
	Reason string `json:"reason"`
}

// BrokerCount is what one broker acknowledged.
type BrokerCount struct {
	Records int64 `json:"records"`
	Bytes   int64 `json:"bytes"`
}

// Range is the sequence numbers [From, To).
type Range struct {
	From uint64 `json:"from"`
	To   uint64 `json:"to"`
}

// PhaseReport is one worker's producer's figures for one phase, by the
// phase each record was sent in.
type PhaseReport struct {
	Worker int `json:"worker"`
	// Stream is the producer's index in Plan.Streams.
	Stream int    `json:"stream"`
	Phase  string `json:"phase"`
	// Missed is set when the worker did not produce in the phase, saying
	// why (it learnt of the start too late, it stopped); its counts are
	// then zero.
	Missed     string `json:"missed,omitempty"`
	Sent       int64  `json:"sent"`
	Acked      int64  `json:"acked"`
	Failed     int64  `json:"failed"`
	AckedBytes int64  `json:"acked_bytes"`
	// PerBroker is keyed by the id of the broker that led the record's
	// partition at acknowledgement ("-1": unknown); PerPartition by
	// partition.
	PerBroker    map[string]BrokerCount `json:"per_broker"`
	PerPartition map[string]int64       `json:"per_partition,omitempty"`
	// Latency is the produce latency histogram in HdrHistogram's V2
	// compressed encoding (stats.Latency.Encode); Violating and Clamped
	// its samples above the objective and the ceiling.
	Latency   string `json:"latency"`
	Violating int64  `json:"violating"`
	Clamped   int64  `json:"clamped"`
	// AckedSeqs lists the sequence numbers of the records sent in this phase
	// that were acknowledged, as ascending disjoint ranges. They are not
	// split by partition: a round-robin partitioner would make every range
	// one record long.
	AckedSeqs []Range `json:"acked_seqs"`
	// Batches and BatchRecords count acknowledged batches and the records
	// in them during the phase.
	Batches      int64 `json:"batches"`
	BatchRecords int64 `json:"batch_records"`
	// Buckets are the phase's acknowledged bytes per BucketNS since the
	// plan's epoch, by acknowledgement time on the worker's (corrected)
	// clock, from bucket FirstBucket on: summed index by index over the
	// workers (MergeBuckets), they are the run's throughput over time.
	// Optional within v1: empty from a worker that did not send them.
	BucketNS    int64   `json:"bucket_ns,omitempty"`
	FirstBucket int     `json:"first_bucket,omitempty"`
	Buckets     []int64 `json:"acked_bytes_buckets,omitempty"`
	// ClockKnown says the worker measured its clock against the
	// coordinator's: the coordinator's time is the worker's plus
	// ClockSkewNS, within ClockUncertaintyNS; ClockCorrected that the
	// worker timed its phases and records on the corrected clock.
	ClockKnown         bool  `json:"clock_known,omitempty"`
	ClockSkewNS        int64 `json:"clock_skew_ns,omitempty"`
	ClockUncertaintyNS int64 `json:"clock_uncertainty_ns,omitempty"`
	ClockCorrected     bool  `json:"clock_corrected,omitempty"`
}

// ControlTopic is the topic of a run's plan, phase starts, heartbeats and
// end (one partition: one order); ResultsTopic that of its reports.
func ControlTopic(run string) string { return TopicPrefix + run + "-control" }

// ResultsTopic is the topic of a run's reports (see ControlTopic).
func ResultsTopic(run string) string { return TopicPrefix + run + "-results" }

// TopicPrefix starts the name of every topic of a distributed run.
const TopicPrefix = "kplan-run-"

// MaxRunIDLen bounds a run id: its topics' names stay well within Kafka's
// 249 characters.
const MaxRunIDLen = 64

// CheckRunID refuses a run id that cannot name topics: empty, longer than
// MaxRunIDLen, or with characters other than ASCII letters, digits, '-'
// and '_' (field "run").
func CheckRunID(run string) error {
	if run == "" || len(run) > MaxRunIDLen {
		return errkind.Usagef("run", "%q: want 1 to %d characters", run, MaxRunIDLen)
	}
	for _, c := range run {
		if !runIDChar(c) {
			return errkind.Usagef("run", "%q: %q is not a letter, digit, '-' or '_'", run, c)
		}
	}
	return nil
}

func runIDChar(c rune) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_'
}

// ProducerIndex is the envelope's producer index of a worker's stream:
// worker*streams + stream.
func ProducerIndex(worker, stream, streams int) int { return worker*streams + stream }

// Encode returns m's JSON with Schema set.
func Encode(m Message) ([]byte, error) {
	m.Schema = Schema
	if err := m.Validate(); err != nil {
		return nil, err
	}
	return json.Marshal(m)
}

// Decode reads one message and validates it. Errors are errkind usage
// errors naming the field at fault ("plan.streams[1].topic").
func Decode(b []byte) (Message, error) {
	var m Message
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&m); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return Message{}, errkind.Usagef(te.Field, "want %s, got %s", te.Type, te.Value)
		}
		return Message{}, errkind.Usagef("message", "not a JSON message: %w", err)
	}
	if dec.More() {
		return Message{}, errkind.Usagef("message", "trailing data after the message")
	}
	if m.Schema != Schema {
		return Message{}, errkind.Usagef("schema", "%q, want %q", m.Schema, Schema)
	}
	if err := m.Validate(); err != nil {
		return Message{}, err
	}
	return m, nil
}

// Validate checks that exactly the field Kind names is set and valid.
func (m Message) Validate() error {
	if err := CheckRunID(m.Run); err != nil {
		return err
	}
	set := map[Kind]bool{KindPlan: m.Plan != nil, KindPhase: m.Phase != nil, KindHeartbeat: m.Heartbeat != nil, KindEnd: m.End != nil, KindResult: m.Result != nil}
	if _, ok := set[m.Kind]; !ok {
		return errkind.Usagef("kind", "%q is not one of plan, phase, heartbeat, end, result", m.Kind)
	}
	for _, k := range []Kind{KindPlan, KindPhase, KindHeartbeat, KindEnd, KindResult} {
		if ok := set[k]; ok != (k == m.Kind) {
			if ok {
				return errkind.Usagef(string(k), "set in a %s message", m.Kind)
			}
			return errkind.Usagef(string(k), "missing")
		}
	}
	switch m.Kind {
	case KindPlan:
		return m.Plan.Validate()
	case KindPhase:
		return m.Phase.validate("phase")
	case KindHeartbeat:
		if m.Heartbeat.Worker < Coordinator {
			return errkind.Usagef("heartbeat.worker", "%d is negative", m.Heartbeat.Worker)
		}
		if m.Heartbeat.At.IsZero() {
			return errkind.Usagef("heartbeat.at", "missing")
		}
	case KindEnd:
		if m.End.At.IsZero() {
			return errkind.Usagef("end.at", "missing")
		}
	case KindResult:
		return m.Result.validate()
	}
	return nil
}

// Validate checks a plan; errors name the field ("plan.streams[0].rate_bytes_per_s").
func (p *Plan) Validate() error {
	f := func(name string) string { return "plan." + name }
	switch {
	case p.Workers < 1:
		return errkind.Usagef(f("workers"), "%d, want at least 1", p.Workers)
	case len(p.Streams) == 0:
		return errkind.Usagef(f("streams"), "none")
	case p.Workers*len(p.Streams) > MaxProducers:
		return errkind.Usagef(f("workers"), "%d workers x %d streams is over %d producers (a record's envelope has one byte for its producer)", p.Workers, len(p.Streams), MaxProducers)
	case p.Epoch.IsZero():
		return errkind.Usagef(f("epoch"), "missing")
	case p.RecordSize < 1:
		return errkind.Usagef(f("record_size"), "%d, want at least 1", p.RecordSize)
	case p.Acks != "all" && p.Acks != "1":
		return errkind.Usagef(f("acks"), "%q, want all or 1", p.Acks)
	case p.ObjectiveNS < 0:
		return errkind.Usagef(f("objective_ns"), "%d is negative", p.ObjectiveNS)
	case p.LatencyCeilingNS < int64(2*time.Microsecond):
		return errkind.Usagef(f("latency_ceiling_ns"), "%d, want at least 2000", p.LatencyCeilingNS)
	case p.MetadataMinAgeNS < 0 || p.MetadataMaxAgeNS < 0:
		return errkind.Usagef(f("metadata_min_age_ns"), "negative metadata age")
	case p.MaxBufferedRecords < 1:
		return errkind.Usagef(f("max_buffered_records"), "%d, want at least 1", p.MaxBufferedRecords)
	case p.LingerNS < 0:
		return errkind.Usagef(f("linger_ns"), "%d is negative", p.LingerNS)
	case p.SQFSlack < 0:
		return errkind.Usagef(f("sqf_slack"), "%d is negative", p.SQFSlack)
	case p.KIP794TimeoutNS < 0:
		return errkind.Usagef(f("kip794_availability_timeout_ns"), "%d is negative", p.KIP794TimeoutNS)
	case p.Stick < 1:
		return errkind.Usagef(f("stick"), "%d, want at least 1", p.Stick)
	case p.GuardNS <= 0:
		return errkind.Usagef(f("guard_ns"), "%d, want a positive guard", p.GuardNS)
	case p.HeartbeatDeadlineNS <= 0:
		return errkind.Usagef(f("heartbeat_deadline_ns"), "%d, want a positive deadline", p.HeartbeatDeadlineNS)
	case p.ResultsTopic == "":
		return errkind.Usagef(f("results_topic"), "missing")
	}
	if err := checkClock(f("clock_uncertainty_ns"), p.ClockUncertaintyNS); err != nil {
		return err
	}
	for i, s := range p.Streams {
		switch {
		case s.Partitioner == "":
			return errkind.Usagef(fmt.Sprintf("plan.streams[%d].partitioner", i), "missing")
		case s.Topic == "":
			return errkind.Usagef(fmt.Sprintf("plan.streams[%d].topic", i), "missing")
		case s.RateBytesPerS < 0:
			return errkind.Usagef(fmt.Sprintf("plan.streams[%d].rate_bytes_per_s", i), "%d is negative", s.RateBytesPerS)
		}
	}
	for i, ph := range p.Phases {
		if err := ph.validate(fmt.Sprintf("plan.phases[%d]", i)); err != nil {
			return err
		}
		if i > 0 && ph.Start.Before(p.Phases[i-1].Start) {
			return errkind.Usagef(fmt.Sprintf("plan.phases[%d].start", i), "before the previous phase's start")
		}
	}
	return nil
}

func (ph *PhaseStart) validate(field string) error {
	switch {
	case ph.Name == "":
		return errkind.Usagef(field+".name", "missing")
	case ph.Start.IsZero():
		return errkind.Usagef(field+".start", "missing")
	case ph.DurationNS < 0:
		return errkind.Usagef(field+".duration_ns", "%d is negative", ph.DurationNS)
	}
	return nil
}

func (r *PhaseReport) validate() error {
	f := func(name string) string { return "result." + name }
	switch {
	case r.Worker < 0:
		return errkind.Usagef(f("worker"), "%d is negative", r.Worker)
	case r.Stream < 0:
		return errkind.Usagef(f("stream"), "%d is negative", r.Stream)
	case r.Phase == "":
		return errkind.Usagef(f("phase"), "missing")
	case r.Sent < 0 || r.Acked < 0 || r.Failed < 0 || r.AckedBytes < 0:
		return errkind.Usagef(f("sent"), "negative count")
	case r.Acked+r.Failed > r.Sent:
		return errkind.Usagef(f("acked"), "%d acked and %d failed of %d sent", r.Acked, r.Failed, r.Sent)
	case r.Violating < 0 || r.Clamped < 0 || r.Batches < 0 || r.BatchRecords < 0:
		return errkind.Usagef(f("violating"), "negative count")
	}
	if err := checkClock(f("clock_uncertainty_ns"), r.ClockUncertaintyNS); err != nil {
		return err
	}
	if len(r.Buckets) > 0 {
		var sum int64
		for _, b := range r.Buckets {
			if b < 0 {
				return errkind.Usagef(f("acked_bytes_buckets"), "negative count")
			}
			sum += b
		}
		switch {
		case r.BucketNS <= 0 || r.FirstBucket < 0:
			return errkind.Usagef(f("bucket_ns"), "buckets of %dns from %d: want a positive width and a first bucket >= 0", r.BucketNS, r.FirstBucket)
		case sum != r.AckedBytes:
			return errkind.Usagef(f("acked_bytes_buckets"), "%d bytes, but %d acked bytes", sum, r.AckedBytes)
		}
	}
	var total, bytes int64
	for k, bc := range r.PerBroker {
		if !isBrokerID(k) {
			return errkind.Usagef(f("per_broker"), "key %q is not a broker id", k)
		}
		if bc.Records < 0 || bc.Bytes < 0 {
			return errkind.Usagef(f("per_broker"), "broker %s: negative count", k)
		}
		total += bc.Records
		bytes += bc.Bytes
	}
	if total != r.Acked || bytes != r.AckedBytes {
		return errkind.Usagef(f("per_broker"), "%d records and %d bytes, but %d acked and %d acked bytes", total, bytes, r.Acked, r.AckedBytes)
	}
	var n uint64
	for i, rg := range r.AckedSeqs {
		if rg.To <= rg.From || i > 0 && rg.From <= r.AckedSeqs[i-1].To {
			return errkind.Usagef(fmt.Sprintf("result.acked_seqs[%d]", i), "[%d, %d) is empty, or not after the previous range with a gap", rg.From, rg.To)
		}
		n += rg.To - rg.From
	}
	if n != uint64(r.Acked) { //nolint:gosec // Acked >= 0 checked above
		return errkind.Usagef(f("acked_seqs"), "ranges hold %d sequence numbers, %d acked", n, r.Acked)
	}
	if r.Acked > 0 && r.Latency == "" {
		return errkind.Usagef(f("latency"), "missing")
	}
	return nil
}

func isBrokerID(k string) bool {
	if k == "-1" {
		return true
	}
	if k == "" || len(k) > 10 || (len(k) > 1 && k[0] == '0') {
		return false
	}
	return strings.IndexFunc(k, func(r rune) bool { return r < '0' || r > '9' }) < 0
}

// Ranges compresses sequence numbers into ascending disjoint ranges
// (consecutive numbers share one). seqs need not be sorted; duplicates
// count once.
func Ranges(seqs []uint64) []Range {
	s := slices.Clone(seqs)
	slices.Sort(s)
	s = slices.Compact(s)
	var out []Range
	for _, q := range s {
		if n := len(out); n > 0 && out[n-1].To == q {
			out[n-1].To++
			continue
		}
		out = append(out, Range{From: q, To: q + 1})
	}
	return out
}
