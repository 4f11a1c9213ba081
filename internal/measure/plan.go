package measure

import (
	"fmt"
	"strings"
	"time"

	"github.com/kplan-dev/kplan/internal/units"
)

// Machine is where the measurement ran and what it measured.
type Machine struct {
	// Host and Cores describe the machine kplan ran on.
	Host  string `json:"host"`
	Cores int    `json:"cores"`
	// Cluster is the bootstrap address list (or "kplan lab DIR").
	Cluster   string `json:"cluster"`
	ClusterID string `json:"cluster_id"`
	Brokers   int    `json:"brokers"`
	// KafkaVersion is the version as far as it could be read, with its
	// source, e.g. "4.3.1 (the lab's jars)".
	KafkaVersion string `json:"kafka_version,omitempty"`
}

// Settings are the clients' settings, stated in the plan.
type Settings struct {
	Acks       string        `json:"acks"`
	RecordSize int           `json:"record_size"`
	Duration   time.Duration `json:"duration_ns"`
	Window     time.Duration `json:"window_ns"`
	Linger     time.Duration `json:"linger_ns"`
	// MaxBuffered and MaxBufferedBytes bound the producer's buffer, in
	// records and in bytes (0: no byte bound).
	MaxBuffered      int `json:"max_buffered_records"`
	MaxBufferedBytes int `json:"max_buffered_bytes,omitempty"`
	// ReplicationFactor is the scratch topics'.
	ReplicationFactor int `json:"replication_factor"`
	// ReplicationRecordSize and ReplicationInterval are the l_r pairs'
	// record size and pause between pairs.
	ReplicationRecordSize int           `json:"replication_record_size"`
	ReplicationInterval   time.Duration `json:"replication_interval_ns"`
	// ElectionRounds is how many times leadership moved.
	ElectionRounds int `json:"election_rounds"`
	// Workers, when set, is how many kplan worker processes produced Tp
	// (one producer each, summed window by window), in run WorkersRun.
	Workers    int    `json:"workers,omitempty"`
	WorkersRun string `json:"workers_run,omitempty"`
}

// Requirements are the plan's keys that are not measured: from flags or
// defaults, to be revised by the reader.
type Requirements struct {
	// Throughput is T in bytes/s; 0 leaves it to kplan size --throughput.
	Throughput            int64         `json:"throughput_bytes_per_sec,omitempty"`
	Consumers             int64         `json:"consumers"`
	ReplicationFactor     int64         `json:"replication_factor"`
	MaxBrokers            int64         `json:"max_brokers"`
	MaxReplicationLatency time.Duration `json:"max_replication_latency_ns"`
	MaxUnavailability     time.Duration `json:"max_unavailability_ns"`
}

// Plan is a measured plan file.
type Plan struct {
	Date         time.Time    `json:"date"`
	Command      string       `json:"command"`
	Machine      Machine      `json:"machine"`
	Settings     Settings     `json:"settings"`
	Requirements Requirements `json:"requirements"`

	Produce     Throughput  `json:"partition_produce_rate"`
	Consume     Throughput  `json:"partition_consume_rate"`
	Replication Replication `json:"replication_latency"`
	// Election is nil when u was not measured; ElectionTime then holds the
	// value given instead (0: none, the plan has no election-time key).
	Election     *Election     `json:"election_time,omitempty"`
	ElectionTime time.Duration `json:"election_time_given_ns,omitempty"`
	Handles      Handles       `json:"max_handles"`
}

// FormatMs writes d in milliseconds in Go duration syntax ("0.969ms",
// "25ms"): ASCII, exact to the nanosecond, what kplan size parses.
func FormatMs(d time.Duration) string {
	ms := d / time.Millisecond
	frac := d % time.Millisecond
	if frac == 0 {
		return fmt.Sprintf("%dms", ms)
	}
	return strings.TrimRight(fmt.Sprintf("%d.%06d", ms, frac), "0") + "ms"
}

// Row is one measured input for a table.
type Row struct {
	Key, Symbol, Value, Spread, How string
}

// Rows lists the measured inputs: key, symbol, value, spread and how.
func (p *Plan) Rows() []Row {
	rows := []Row{
		{"partition-produce-rate", "Tp", units.FormatRate(p.Produce.BytesPerSec), p.Produce.Windows.describe(formatMBps), p.produceHow()},
		{"partition-consume-rate", "Tc", units.FormatRate(p.Consume.BytesPerSec), p.Consume.Windows.describe(formatMBps), p.consumeHow()},
		{"replication-latency", "l_r", FormatMs(p.Replication.Latency), p.Replication.Diff.describe(formatMs), p.replicationHow()},
	}
	switch {
	case p.Election != nil:
		rows = append(rows, Row{"election-time", "u", FormatMs(p.Election.PerPartition), p.Election.PerPartitionMs.describe(formatMs), p.electionHow()})
	case p.ElectionTime > 0:
		rows = append(rows, Row{"election-time", "u", p.ElectionTime.String(), "not measured", "given with --election-time"})
	default:
		rows = append(rows, Row{"election-time", "u", "-", "not measured", "give kplan size --election-time"})
	}
	rows = append(rows, Row{"max-handles", "Hmax", fmt.Sprint(p.Handles.Value), "-", p.handlesHow()})
	return rows
}

func (p *Plan) produceHow() string {
	s := p.Settings
	idem := ""
	if s.Acks == "all" {
		idem = " (idempotent)"
	}
	if s.Workers > 0 {
		return fmt.Sprintf("one partition, %d producers (one on each of %d kplan workers, run %s) as fast as they can for %s, acks=%s%s, %d-byte records (incompressible), uncompressed, linger %s, %s buffered each; mean of the %s windows after the first (warm-up) of the bytes every worker acknowledged, added up window by window by acknowledgement time on each worker's clock (corrected against the brokers' when skewed); %d records, %d bytes in all",
			s.Workers, s.Workers, s.WorkersRun, s.Duration, s.Acks, idem, s.RecordSize, s.Linger, s.bufferText(), s.Window, p.Produce.Records, p.Produce.Bytes)
	}
	return fmt.Sprintf("one partition, one producer as fast as it can for %s, acks=%s%s, %d-byte records (incompressible), uncompressed, linger %s, %s buffered; mean of the %s windows after the first (warm-up), by acknowledgement time, stopped at the end (records still buffered aborted, not counted); %d records, %d bytes in all",
		s.Duration, s.Acks, idem, s.RecordSize, s.Linger, s.bufferText(), s.Window, p.Produce.Records, p.Produce.Bytes)
}

func (p *Plan) consumeHow() string {
	s := p.Settings
	return fmt.Sprintf("one partition, one consumer (no group, default fetch sizes) reading Tp's records from the start for %s, again from the start at the end; mean of the %s windows after the first (warm-up); %d records, %d bytes in all",
		s.Duration, s.Window, p.Consume.Records, p.Consume.Bytes)
}

func (p *Plan) replicationHow() string {
	s := p.Settings
	r := p.Replication
	out := fmt.Sprintf("median of %d paired differences: one %d-byte record at acks=all minus one at acks=1, sent back to back to the same partition (replication factor %d) by two producers without linger, alternating which goes first, one pair every %s; acks=all %s; acks=1 %s",
		r.Diff.N, s.ReplicationRecordSize, s.ReplicationFactor, s.ReplicationInterval, r.All.describe(formatMs), r.Leader.describe(formatMs))
	if r.Clamped {
		out += "; the median difference was not positive: 1µs stands for no measurable replication cost"
	}
	return out
}

func (p *Plan) electionHow() string {
	e := p.Election
	return fmt.Sprintf("no broker stopped: %d rounds, each reordering the replicas of %d partitions and running one preferred leader election of them all, timed from the election request until every partition acknowledged a write (acks=1) on its new leader, divided by %d; median over rounds; until writable %s; until the controller answered %s. A cheap estimate: kplan measure unavailability fits u from broker kills",
		e.WritableMs.N, e.Partitions, e.Partitions, e.WritableMs.describe(formatMs), e.ElectMs.describe(formatMs))
}

func (p *Plan) handlesHow() string {
	h := p.Handles
	if h.Given {
		return "given with --max-handles (the brokers' limits cannot be read on this cluster)"
	}
	return fmt.Sprintf("min(broker JVM open files limit %d, vm.max_map_count %d) / %d: each partition replica holds at least one segment's .log file and the maps of its .index and .timeindex, and seed 001 asks for limits well above 2x the replicas per broker",
		h.OpenFiles, h.MaxMapCount, HandlesPerReplica)
}

// YAML renders the plan file: keys `kplan size --plan` reads, each with a
// comment saying how it was measured; stable for a given plan.
func (p *Plan) YAML() []byte {
	var b strings.Builder
	c := func(format string, a ...any) { comment(&b, fmt.Sprintf(format, a...)) }
	m := p.Machine
	c("Measured by kplan measure on %s.", p.Date.UTC().Format("2006-01-02 15:04 MST"))
	c("Machine: %s, %d cores. Cluster: %s (id %s, %d brokers, Kafka %s).", m.Host, m.Cores, m.Cluster, m.ClusterID, m.Brokers, orUnknown(m.KafkaVersion))
	c("Command: %s", p.Command)
	c("Use: kplan size --plan THIS_FILE --throughput 50MB/s (flags override any key).")
	b.WriteString("\n")
	c("Requirements: not measured. Revise them, or override them with kplan size's flags.")
	r := p.Requirements
	if r.Throughput > 0 {
		fmt.Fprintf(&b, "throughput: %s # T, from --throughput\n", units.FormatRate(r.Throughput))
	} else {
		c("throughput (T): not set here: give kplan size --throughput")
	}
	fmt.Fprintf(&b, "consumers: %d # c, from --consumers\n", r.Consumers)
	fmt.Fprintf(&b, "replication-factor: %d # r, from --replication-factor (the scratch topics had %d)\n", r.ReplicationFactor, p.Settings.ReplicationFactor)
	fmt.Fprintf(&b, "max-brokers: %d # B, from --max-brokers (default: the cluster's brokers)\n", r.MaxBrokers)
	fmt.Fprintf(&b, "max-replication-latency: %s # L, from --max-replication-latency\n", r.MaxReplicationLatency)
	fmt.Fprintf(&b, "max-unavailability: %s # U, from --max-unavailability\n", r.MaxUnavailability)
	b.WriteString("\n")
	c("Measured inputs (seed 002, Raptis et al.).")
	for _, row := range p.Rows() {
		b.WriteString("\n")
		if row.Value == "-" {
			c("%s (%s): not measured (--election-partitions 0): %s.", row.Key, row.Symbol, row.How)
			continue
		}
		c("%s: %s.", row.Symbol, row.How)
		if row.Spread != "-" && row.Spread != "not measured" {
			c("Spread: %s.", row.Spread)
		}
		fmt.Fprintf(&b, "%s: %s # %s\n", row.Key, row.Value, row.Symbol)
	}
	return []byte(b.String())
}

func orUnknown(s string) string {
	if s == "" {
		return "version unknown"
	}
	return s
}

// comment writes text as "# " lines wrapped at about 100 columns.
func comment(b *strings.Builder, text string) {
	const width = 98
	line := "#"
	for _, w := range strings.Fields(text) {
		if len(line)+1+len(w) > width && line != "#" {
			b.WriteString(line + "\n")
			line = "#  "
		}
		line += " " + w
	}
	b.WriteString(line + "\n")
}

// bufferText is the producer's buffer bound in words.
func (s Settings) bufferText() string {
	if s.MaxBufferedBytes <= 0 {
		return fmt.Sprintf("%d records", s.MaxBuffered)
	}
	return fmt.Sprintf("at most %d records or %d bytes", s.MaxBuffered, s.MaxBufferedBytes)
}
