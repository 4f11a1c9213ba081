package chaos

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kplan-dev/kplan/internal/report"
	"github.com/kplan-dev/kplan/internal/stats"
)

// Result is one experiment's outcome. Its JSON form is kplan chaos -o json.
type Result struct {
	// Cluster is "embedded", "lab" or a bootstrap address.
	Cluster string `json:"cluster"`
	// Label says what the cluster is (e.g. simulated).
	Label string `json:"label"`
	// Target is the --kill argument.
	Target string `json:"target"`
	// KilledBroker is the broker killed (-1 when none).
	KilledBroker int32 `json:"killed_broker"`
	// FailoverMS is the time from the kill until every partition of the
	// experiment topics had a live leader in a metadata answer (-1: never;
	// the mean over kills in a sequential run).
	FailoverMS float64 `json:"failover_ms"`
	// Assignment is the experiment topics' layout, "1,2;2,3;3,1".
	Assignment string `json:"assignment"`
	// Acks is all or 1.
	Acks string `json:"acks"`
	// Idempotent tells whether the producers were idempotent.
	Idempotent bool `json:"idempotent"`
	// Sequential tells whether partitioners ran one after another.
	Sequential bool `json:"sequential"`
	// RateBytesPerS is each producer's rate cap (0: none).
	RateBytesPerS int64 `json:"rate_bytes_per_s"`
	// RecordSize is each record's size in bytes.
	RecordSize int `json:"record_size"`
	// LatencyObjectiveMS is the objective of the violation rates.
	LatencyObjectiveMS float64 `json:"latency_objective_ms"`
	// MetadataMinAgeMS is the clients' metadata min age: how soon a client
	// can learn that a leader moved.
	MetadataMinAgeMS float64 `json:"metadata_min_age_ms"`
	// SQFSlack is the sqf partitioner's slack in records.
	SQFSlack int64 `json:"sqf_slack"`
	// MaxBufferedRecords is each producer's buffer cap in records.
	MaxBufferedRecords int `json:"max_buffered_records"`
	// Stick is node's and sqf's run length in records.
	Stick int `json:"stick"`
	// ConsumeAfter: records were consumed back only after the run, so
	// there are no end-to-end latencies.
	ConsumeAfter bool `json:"consume_after,omitempty"`
	// Interrupted is true when the run was stopped early.
	Interrupted bool `json:"interrupted,omitempty"`
	// Partitioners holds one entry per partitioner, in the order asked.
	Partitioners []PartitionerResult `json:"partitioners"`
	// Notes are things worth knowing about the run.
	Notes []string `json:"notes,omitempty"`

	killAtS float64 // for the throughput plot (side-by-side runs)
}

// PartitionerResult is one partitioner's outcome.
type PartitionerResult struct {
	Name  string `json:"name"`
	Topic string `json:"topic"`
	// Sent records; Acked of them; Lost acknowledged but never consumed
	// back; Duplicates extra copies consumed; NeverAcked got an error or
	// no answer; UnackedDelivered of those were consumed anyway.
	Sent             int64 `json:"sent"`
	Acked            int64 `json:"acked"`
	Lost             int64 `json:"lost"`
	Duplicates       int64 `json:"duplicates"`
	NeverAcked       int64 `json:"never_acked"`
	UnackedDelivered int64 `json:"unacked_delivered"`
	// KilledBroker and FailoverMS of this partitioner's kill.
	KilledBroker int32   `json:"killed_broker"`
	FailoverMS   float64 `json:"failover_ms"`
	// FirstSuccessMS is the time from the kill to this producer's first
	// acknowledgement from a partition the killed broker led (-1: none).
	FirstSuccessMS float64 `json:"first_success_ms"`
	// Phases by name: warm-up, before, failover, after, restore, recovered.
	Phases map[string]*PhaseResult `json:"phases"`
	// KSProduce and KSE2E compare before and after latencies.
	KSProduce *stats.KSResult `json:"ks_produce_before_after,omitempty"`
	KSE2E     *stats.KSResult `json:"ks_e2e_before_after,omitempty"`

	plot plotData
}

// PhaseResult is one partitioner's figures in one phase, by the phase each
// record was sent in.
type PhaseResult struct {
	DurationS float64 `json:"duration_s"`
	// Leaders are the brokers that led at least one partition of the topic
	// in the phase: the skew is computed over them.
	Leaders []int32 `json:"leaders"`
	Sent    int64   `json:"sent"`
	Acked   int64   `json:"acked"`
	Failed  int64   `json:"failed"`
	Lost    int64   `json:"lost"`
	// PerBroker counts acknowledged records by the broker that led the
	// record's partition when it was acknowledged ("-1": unknown).
	PerBroker      map[string]int64   `json:"per_broker"`
	PerBrokerBytes map[string]int64   `json:"per_broker_bytes"`
	Shares         map[string]float64 `json:"shares"`
	MaxOverMean    float64            `json:"max_over_mean"`
	CV             float64            `json:"cv"`
	Jain           float64            `json:"jain"`
	// ThroughputMBps is acknowledged MB (10^6 bytes) per second of phase.
	ThroughputMBps float64 `json:"throughput_mbps"`
	RecordsPerS    float64 `json:"records_per_s"`
	// Batches is how many record batches were acknowledged during the phase;
	// RecordsPerBatch their mean size in records.
	Batches         int64   `json:"batches"`
	RecordsPerBatch float64 `json:"records_per_batch"`
	// LatencyMS is the produce latency (send to acknowledgement);
	// E2ELatencyMS the end-to-end latency (send to consumer receipt).
	LatencyMS    stats.LatencySummary `json:"latency_ms"`
	E2ELatencyMS stats.LatencySummary `json:"e2e_latency_ms"`
	// TimelyThroughputMBps is (1 - e2e violation rate) x (1 - loss rate) x
	// throughput (seed 003).
	TimelyThroughputMBps float64 `json:"timely_throughput_mbps"`
}

// plotData is what the plots need beyond the JSON.
type plotData struct {
	prodSamples, e2eSamples [numPhases][]float64
	buckets                 []int64
	killAtS                 float64
}

func (r *runner) result() *Result {
	cfg := r.cfg
	res := &Result{
		Cluster: r.c.Kind(), Label: r.c.Label(), Target: cfg.Target.String(), KilledBroker: -1, FailoverMS: -1,
		Assignment: FormatAssignment(cfg.Assignment), Acks: string(cfg.Acks), Idempotent: cfg.Acks == AcksAll, SQFSlack: cfg.SQFSlack, MaxBufferedRecords: cfg.MaxBufferedRecords, Stick: cfg.Stick, ConsumeAfter: cfg.ConsumeAfter,
		Sequential: cfg.Sequential, RateBytesPerS: cfg.Rate, RecordSize: cfg.RecordSize,
		LatencyObjectiveMS: ms(cfg.Objective), MetadataMinAgeMS: ms(cfg.MetadataMinAge),
		Notes: append([]string{fmt.Sprintf("cluster: %s", r.c.Label())}, r.notes...),
	}
	var fos []float64
	for _, l := range r.legs {
		if l.victim >= 0 {
			res.KilledBroker = l.victim
			res.killAtS = l.killAt.Seconds()
		}
		if l.failover >= 0 {
			fos = append(fos, ms(l.failover))
		}
		for _, p := range l.prods {
			res.Partitioners = append(res.Partitioners, r.partitionerResult(l, p))
		}
	}
	var rereads int64
	for _, p := range r.prods {
		p.seenMu.Lock()
		rereads += p.rereads
		p.seenMu.Unlock()
	}
	if rereads > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("the checking consumer read %d records a second time at the same offset after its fetch offset was reset (a re-read, not a duplicate; not counted)", rereads))
	}
	if len(fos) > 0 {
		var sum float64
		for _, f := range fos {
			sum += f
		}
		res.FailoverMS = sum / float64(len(fos))
	}
	return res
}

func (r *runner) partitionerResult(l *leg, p *producer) PartitionerResult {
	ls := p.checkLoss()
	pr := PartitionerResult{
		Name: p.name, Topic: p.topic, Sent: ls.sent, Acked: ls.acked, Lost: ls.lost, Duplicates: ls.duplicates,
		NeverAcked: ls.neverAcked, UnackedDelivered: ls.unackedDelivered,
		KilledBroker: l.victim, FailoverMS: -1, FirstSuccessMS: -1, Phases: map[string]*PhaseResult{},
	}
	if l.failover >= 0 {
		pr.FailoverMS = ms(l.failover)
	}
	if f := p.firstMovedAck.Load(); f > 0 {
		pr.FirstSuccessMS = ms(time.Duration(f))
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for ph := range numPhases {
		w := l.windows[ph]
		if !w.ran {
			continue
		}
		s := p.phases[ph]
		d := w.end - w.start
		if d <= 0 {
			d = time.Nanosecond
		}
		out := &PhaseResult{
			DurationS: d.Seconds(), Leaders: slices.Clone(l.leaders[ph][p.topic]),
			Sent: s.sent, Acked: s.acked, Failed: s.failed, Lost: s.lost,
			PerBroker: map[string]int64{}, PerBrokerBytes: map[string]int64{}, Shares: map[string]float64{},
			ThroughputMBps: float64(s.ackedBytes) / 1e6 / d.Seconds(),
			RecordsPerS:    float64(s.acked) / d.Seconds(),
			LatencyMS:      s.prod.Summary(),
			E2ELatencyMS:   s.e2e.Summary(),
			Batches:        p.batches[ph].Load(),
		}
		if out.Batches > 0 {
			out.RecordsPerBatch = float64(p.batchRecords[ph].Load()) / float64(out.Batches)
		}
		for id, bc := range s.perBroker {
			out.PerBroker[strconv.Itoa(int(id))] = bc.records
			out.PerBrokerBytes[strconv.Itoa(int(id))] = bc.bytes
		}
		counts := map[int32]int64{}
		for _, id := range out.Leaders {
			counts[id] = 0
			if bc := s.perBroker[id]; bc != nil {
				counts[id] = bc.records
			}
		}
		sk := stats.SkewOfCounts(counts)
		for _, sh := range sk.Shares {
			out.Shares[strconv.Itoa(int(sh.ID))] = sh.Share
		}
		out.MaxOverMean, out.CV, out.Jain = sk.MaxOverMean, sk.CV, sk.Jain
		viol := out.E2ELatencyMS.ViolationRate
		if out.E2ELatencyMS.Count == 0 {
			viol = out.LatencyMS.ViolationRate
		}
		out.TimelyThroughputMBps = stats.TimelyThroughput(out.ThroughputMBps, viol, stats.LossRate(s.lost, s.acked))
		pr.Phases[ph.String()] = out
		pr.plot.prodSamples[ph] = slices.Clone(s.prodSamples.xs)
		pr.plot.e2eSamples[ph] = slices.Clone(s.e2eSamples.xs)
	}
	pr.plot.buckets = slices.Clone(p.buckets)
	pr.plot.killAtS = l.killAt.Seconds()
	if l.windows[PhaseBefore].ran && l.windows[PhaseAfter].ran {
		if ks, err := stats.KS2(p.phases[PhaseBefore].prodSamples.xs, p.phases[PhaseAfter].prodSamples.xs); err == nil {
			pr.KSProduce = &ks
		}
		if ks, err := stats.KS2(p.phases[PhaseBefore].e2eSamples.xs, p.phases[PhaseAfter].e2eSamples.xs); err == nil {
			pr.KSE2E = &ks
		}
	}
	return pr
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// measuredPhases are the phases the tables compare, in order.
var measuredPhases = []Phase{PhaseBefore, PhaseFailover, PhaseAfter, PhaseRecovered}

// Document renders the result as tables.
func (res *Result) Document() report.Document {
	title := "kplan chaos: " + res.Label
	if res.KilledBroker >= 0 {
		target := ""
		if want := fmt.Sprintf("broker-%d", res.KilledBroker); res.Target != want {
			target = " (" + res.Target + ")"
		}
		title = fmt.Sprintf("kplan chaos: kill broker-%d%s — %s", res.KilledBroker, target, res.Label)
	}
	doc := report.Document{Title: title}

	skew := report.Section{
		Title:  "Records per broker (by the leader that took them) and skew over the topic's leaders",
		Header: []string{"partitioner", "phase", "leaders", "records per broker", "max/mean", "CV", "Jain"},
	}
	perf := report.Section{
		Title:  "Throughput and latency (ms; produce = send to ack, e2e = send to consumer)",
		Header: []string{"partitioner", "phase", "MB/s", "rec/s", "rec/batch", "produce p50", "p99", "p99.9", "max", "e2e p50", "e2e p99", fmt.Sprintf("> %gms", res.LatencyObjectiveMS), "timely MB/s"},
	}
	for _, p := range res.Partitioners {
		for _, ph := range measuredPhases {
			pr := p.Phases[ph.String()]
			if pr == nil {
				continue
			}
			skew.Rows = append(skew.Rows, []string{p.Name, ph.String(), joinIDs(pr.Leaders), perBroker(pr.PerBroker),
				f2(pr.MaxOverMean), f3(pr.CV), f3(pr.Jain)})
			e50, e99, viol := f1(pr.E2ELatencyMS.P50), f1(pr.E2ELatencyMS.P99), pr.E2ELatencyMS.ViolationRate
			if pr.E2ELatencyMS.Count == 0 { // --consume-after: judged on produce latency
				e50, e99, viol = "-", "-", pr.LatencyMS.ViolationRate
			}
			perf.Rows = append(perf.Rows, []string{p.Name, ph.String(), f3(pr.ThroughputMBps), fmt.Sprintf("%.0f", pr.RecordsPerS), f1(pr.RecordsPerBatch),
				f1(pr.LatencyMS.P50), f1(pr.LatencyMS.P99), f1(pr.LatencyMS.P999), f1(pr.LatencyMS.Max),
				e50, e99, pct(viol), f3(pr.TimelyThroughputMBps)})
		}
	}
	loss := report.Section{
		Title:  "Failover and loss (every record consumed back and checked by sequence number)",
		Header: []string{"partitioner", "killed", "failover ms", "first ack on moved partitions ms", "sent", "acked", "lost", "duplicates", "never acked", "KS produce before/after D (p)", "KS e2e D (p)"},
	}
	for _, p := range res.Partitioners {
		killed := "-"
		if p.KilledBroker >= 0 {
			killed = fmt.Sprintf("broker-%d", p.KilledBroker)
		}
		loss.Rows = append(loss.Rows, []string{p.Name, killed, msOrDash(p.FailoverMS), msOrDash(p.FirstSuccessMS),
			strconv.FormatInt(p.Sent, 10), strconv.FormatInt(p.Acked, 10), strconv.FormatInt(p.Lost, 10),
			strconv.FormatInt(p.Duplicates, 10), strconv.FormatInt(p.NeverAcked, 10), ks(p.KSProduce), ks(p.KSE2E)})
	}
	doc.Sections = []report.Section{skew, perf, loss}
	idem := "idempotent"
	if !res.Idempotent {
		idem = "not idempotent"
	}
	rate := "unlimited"
	if res.RateBytesPerS > 0 {
		rate = fmt.Sprintf("%d B/s", res.RateBytesPerS)
	}
	mode := "side by side"
	if res.Sequential {
		mode = "one after another"
	}
	doc.Notes = append(doc.Notes,
		fmt.Sprintf("layout %s (replicas per partition, leader first); acks=%s (%s); %d-byte records, rate per producer %s; partitioners ran %s; clients' metadata min age %gms.",
			res.Assignment, res.Acks, idem, res.RecordSize, rate, mode, res.MetadataMinAgeMS))
	doc.Notes = append(doc.Notes, res.Notes...)
	return doc
}

func joinIDs(ids []int32) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.Itoa(int(id))
	}
	return strings.Join(s, ",")
}

func perBroker(m map[string]int64) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int {
		x, _ := strconv.Atoi(a)
		y, _ := strconv.Atoi(b)
		return x - y
	})
	parts := make([]string, len(keys))
	for i, k := range keys {
		name := "b" + k
		if k == "-1" {
			name = "unknown"
		}
		parts[i] = fmt.Sprintf("%s:%d", name, m[k])
	}
	return strings.Join(parts, " ")
}

func f1(x float64) string { return strconv.FormatFloat(x, 'f', 1, 64) }
func f2(x float64) string { return strconv.FormatFloat(x, 'f', 2, 64) }
func f3(x float64) string { return strconv.FormatFloat(x, 'f', 3, 64) }
func pct(x float64) string {
	return strconv.FormatFloat(100*x, 'f', 1, 64) + "%"
}

func msOrDash(x float64) string {
	if x < 0 {
		return "-"
	}
	return f1(x)
}

func ks(k *stats.KSResult) string {
	if k == nil {
		return "-"
	}
	return fmt.Sprintf("%.3f (%.2g)", k.D, k.P)
}
