package chaos

import (
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/kplan-dev/kplan/internal/stats"
)

// Schema versions the JSON of one run (kplan chaos -o json, result.json);
// SummarySchema that of repeated runs.
const (
	Schema        = "kplan.chaos/v1"
	SummarySchema = "kplan.chaos-summary/v1"
)

// MinSkewRecordsPerBroker is the fewest acknowledged records per leading
// broker, on average, that a phase needs for its skew figures (max/mean, CV,
// Jain) to mean anything; below it they are left out. With independent
// choices one broker's count varies by about 1/sqrt(n) of the mean: at 1,000
// records per broker that is about 3%, fine enough to tell an even spread
// (1.00) from the 1.33 of round robin after a kill, while the failover phase
// (a fraction of a second) and very short runs stay below it and print "-".
const MinSkewRecordsPerBroker = 1000

// Latencies the violation rate and timely throughput are judged on.
const (
	LatencyE2E     = "e2e"
	LatencyProduce = "produce"
)

// Result is one experiment's outcome. Its JSON form is kplan chaos -o json.
type Result struct {
	// Schema is the JSON's version, Schema.
	Schema string `json:"schema"`
	// Cluster is "embedded", "lab" or a bootstrap address.
	Cluster string `json:"cluster"`
	// Label says what the cluster is (e.g. simulated).
	Label string `json:"label"`
	// Target is the --kill argument.
	Target string `json:"target"`
	// KilledBroker is the broker killed (-1 when none).
	KilledBroker int32 `json:"killed_broker"`
	// Fault is the network fault injected (--fault); absent when none.
	Fault *FaultResult `json:"fault,omitempty"`
	// Slow is the slow broker as --slow spelled it (a slow-broker
	// experiment: its before phase is "at rest", its fault phase "slow");
	// absent otherwise.
	Slow string `json:"slow,omitempty"`
	// Recommendation says which partitioner to use, by the run's
	// objective; absent when no partitioner acknowledged a record.
	Recommendation *Recommendation `json:"recommendation,omitempty"`
	// FailoverMS is the time from the kill until every partition of the
	// experiment topics had a live leader in a metadata answer (-1: never;
	// the mean over kills in a sequential run). It is absent on a simulated
	// cluster, whose election is done before the kill returns: what a
	// metadata answer would time there is the admin client's polling.
	FailoverMS *float64 `json:"failover_ms,omitempty"`
	// KillEffectMS is the time from the kill call until the kill took
	// effect as the cluster's killer reports it (a command's end, a
	// container's exit, Chaos Mesh's injection record); the failover is
	// timed from that moment. Absent when no killer reports one (the
	// embedded cluster, the lab); the mean in a sequential run.
	KillEffectMS *float64 `json:"kill_effect_ms,omitempty"`
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
	// KIP794TimeoutMS is the kip794 partitioner's availability timeout
	// (absent: 0, disabled, as in Kafka).
	KIP794TimeoutMS float64 `json:"kip794_availability_timeout_ms,omitempty"`
	// MaxBufferedRecords is each producer's buffer cap in records.
	MaxBufferedRecords int `json:"max_buffered_records"`
	// Stick is node's and sqf's run length in records.
	Stick int `json:"stick"`
	// ConsumeAfter: records were consumed back only after the run, so
	// there are no end-to-end latencies.
	ConsumeAfter bool `json:"consume_after,omitempty"`
	// ConsumerRereads counts records the checking consumer read a second
	// time at the same offset after its fetch offset was reset: re-reads,
	// not duplicates, and not counted as either.
	ConsumerRereads int64 `json:"consumer_rereads,omitempty"`
	// Interrupted is true when the run was stopped early.
	Interrupted bool `json:"interrupted,omitempty"`
	// Workload lists the workload's topics (absent for the one-topic
	// experiment).
	Workload []WorkloadTopicResult `json:"workload,omitempty"`
	// Partitioners holds one entry per partitioner, in the order asked.
	Partitioners []PartitionerResult `json:"partitioners"`
	// Workers is a distributed run's workers (kplan chaos --workers);
	// absent for a single-process run.
	Workers *WorkersResult `json:"workers,omitempty"`
	// Notes are things worth knowing about the run.
	Notes []string `json:"notes,omitempty"`
	// KillerLog is what the killer of a cluster reached by
	// --bootstrap-server printed and answered (commands run, their output).
	KillerLog []string `json:"killer_log,omitempty"`
}

// FaultResult is the network fault of a run: what, on which broker, when.
// The measured per-broker shares during it are the "fault" phase's (and,
// with a kill as well, the failover and after phases', which run with the
// fault in force).
type FaultResult struct {
	// Fault is the --fault argument, Kind its kind.
	Fault string    `json:"fault"`
	Kind  FaultKind `json:"kind"`
	// Broker is the broker it hurt (-1: never injected).
	Broker int32 `json:"broker"`
	// Description says in words what it did.
	Description string `json:"description"`
	// InjectedAtS is when kplan asked for it, in seconds since the run
	// began; InForceMS how long the injection took until the cluster
	// reported it in force; ClearedAtS when it was cleared during the run
	// (absent: cleared at the end of the run, or not at all as the notes
	// say). In a sequential run, the first leg's.
	InjectedAtS float64  `json:"injected_at_s"`
	InForceMS   float64  `json:"in_force_ms"`
	ClearedAtS  *float64 `json:"cleared_at_s,omitempty"`
	// Phases are the phases that ran with the fault in force.
	Phases []string `json:"phases"`
}

// NoPredictionUnderFault is what a phase under a network fault says in
// place of predicted shares: the audit's model knows layouts, not slow
// brokers.
const NoPredictionUnderFault = "no prediction under a network fault"

// WorkloadTopicResult is one topic of a workload as it ran.
type WorkloadTopicResult struct {
	Name          string `json:"name"`
	Assignment    string `json:"assignment"`
	RateBytesPerS int64  `json:"rate_bytes_per_s"`
	Keys          string `json:"keys"`
}

// PartitionerResult is one partitioner's outcome, over every topic it wrote.
type PartitionerResult struct {
	Name string `json:"name"`
	// Topic is the first topic it wrote; Topics all of them.
	Topic  string   `json:"topic"`
	Topics []string `json:"topics,omitempty"`
	// Prediction says what the predicted shares rest on (the audit's model
	// for this partitioner), or why there are none.
	Prediction string `json:"prediction,omitempty"`
	// Sent records; Acked of them; Lost acknowledged but never consumed
	// back; Duplicates extra copies consumed; NeverAcked got an error or
	// no answer; UnackedDelivered of those were consumed anyway.
	Sent             int64 `json:"sent"`
	Acked            int64 `json:"acked"`
	Lost             int64 `json:"lost"`
	Duplicates       int64 `json:"duplicates"`
	NeverAcked       int64 `json:"never_acked"`
	UnackedDelivered int64 `json:"unacked_delivered"`
	// KilledBroker and FailoverMS of this partitioner's kill (FailoverMS as
	// in Result).
	KilledBroker int32    `json:"killed_broker"`
	FailoverMS   *float64 `json:"failover_ms,omitempty"`
	// FirstSuccessMS is the time from the kill to this producer's first
	// acknowledgement from a partition the killed broker led (-1: none).
	FirstSuccessMS float64 `json:"first_success_ms"`
	// Phases by name: warm-up, before, failover, after, restore, recovered.
	Phases map[string]*PhaseResult `json:"phases"`
	// KSProduce and KSE2E compare before and after latencies.
	KSProduce *stats.KSResult `json:"ks_produce_before_after,omitempty"`
	KSE2E     *stats.KSResult `json:"ks_e2e_before_after,omitempty"`

	// Series is what plots need beyond the JSON.
	Series Series `json:"-"`
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
	// PredictedShare is each leader's predicted share of the bytes in this
	// phase (the audit's model over the phase's leaders: the layout's for
	// before and recovered, Kafka's election after the kill for after);
	// MeasuredShare the measured one (acknowledged bytes by the broker that
	// led the record's partition). Both are keyed by broker id over the same
	// brokers, Leaders, and sum to 1. MaxErrorPts is the largest difference
	// in percentage points; PredictedMaxOverMean the predicted skew over
	// Leaders, comparable with MaxOverMean. Absent when there is no
	// prediction (PartitionerResult.Prediction says why).
	PredictedShare       map[string]float64 `json:"predicted_share,omitempty"`
	MeasuredShare        map[string]float64 `json:"measured_share,omitempty"`
	MaxErrorPts          *float64           `json:"max_error_pts,omitempty"`
	PredictedMaxOverMean *float64           `json:"predicted_max_over_mean,omitempty"`
	// NoPrediction says why a phase of a partitioner that has predictions
	// has none: NoPredictionUnderFault.
	NoPrediction string `json:"no_prediction,omitempty"`
	// PerPartition counts acknowledged records by "TOPIC/PARTITION" (the
	// workload's topic names) in workload runs.
	PerPartition map[string]int64 `json:"per_partition,omitempty"`
	// MaxOverMean, CV and Jain are the skew over Leaders; absent when the
	// phase acknowledged fewer than MinSkewRecordsPerBroker records per
	// leader on average.
	MaxOverMean *float64 `json:"max_over_mean,omitempty"`
	CV          *float64 `json:"cv,omitempty"`
	Jain        *float64 `json:"jain,omitempty"`
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
	// ViolationRate is the share of records slower than the objective,
	// judged on ViolationLatency: "e2e" when end-to-end latencies were
	// measured, else "produce" (a run that consumed only afterwards).
	ViolationRate    float64 `json:"violation_rate"`
	ViolationLatency string  `json:"violation_latency"`
	// TimelyThroughputMBps is (1 - violation rate) x (1 - loss rate) x
	// throughput (seed 003), with the violation rate above.
	TimelyThroughputMBps float64 `json:"timely_throughput_mbps"`
}

// Series is what the plots need beyond the JSON: latency samples by phase,
// acknowledged bytes over time and when the kill came.
type Series struct {
	// ProduceSamples and E2ESamples are latency samples in ms, indexed by
	// Phase.
	ProduceSamples, E2ESamples [NumPhases][]float64
	// Buckets are acknowledged bytes per BucketWidth since the run began.
	Buckets []int64
	// KillAtS is when this partitioner's kill came, in seconds since the run
	// began (0: none).
	KillAtS float64
}

func (r *runner) result() *Result {
	cfg := r.cfg
	res := &Result{
		Schema: Schema, Cluster: r.c.Kind(), Label: r.c.Label(), Target: cfg.Target.String(), KilledBroker: -1,
		Assignment: FormatAssignment(cfg.Assignment), Acks: cfg.Acks.String(), Idempotent: cfg.Acks.Idempotent(), SQFSlack: cfg.SQFSlack, KIP794TimeoutMS: ms(cfg.KIP794Timeout), MaxBufferedRecords: cfg.MaxBufferedRecords, Stick: cfg.Stick, ConsumeAfter: cfg.ConsumeAfter,
		Sequential: cfg.Sequential, RateBytesPerS: cfg.Rate, RecordSize: cfg.RecordSize,
		LatencyObjectiveMS: ms(cfg.Objective), MetadataMinAgeMS: ms(cfg.MetadataMinAge),
		Notes: append([]string{fmt.Sprintf("cluster: %s", r.c.Label())}, r.notes...),
	}
	if len(cfg.Workload) > 0 {
		res.Assignment = ""
		for _, w := range cfg.Workload {
			wr := WorkloadTopicResult{Name: w.Name, RateBytesPerS: w.Rate, Keys: w.Keys.String()}
			for _, st := range r.streams {
				if st.wname == w.Name {
					wr.Assignment = FormatAssignment(r.assign[st.topic])
					break
				}
			}
			res.Workload = append(res.Workload, wr)
		}
	}
	var fos, effects []float64
	for _, l := range r.legs {
		if l.killEffect >= 0 {
			effects = append(effects, ms(l.killEffect))
		}
		if l.victim >= 0 {
			res.KilledBroker = l.victim
		}
		if l.failover >= 0 {
			fos = append(fos, ms(l.failover))
		}
		for _, group := range groupByPartitioner(l.prods) {
			res.Partitioners = append(res.Partitioners, r.partitionerResult(l, group))
		}
	}
	res.Fault = r.faultResult()
	if cfg.Slow && cfg.Fault != nil {
		res.Slow = SlowString(*cfg.Fault)
	}
	res.Recommendation = Recommend([]*Result{res}, cfg.RecommendBy)
	if kr, ok := r.c.(KillReporter); ok {
		res.KillerLog = kr.KillerLog()
	}
	if len(effects) > 0 {
		var sum float64
		for _, e := range effects {
			sum += e
		}
		res.KillEffectMS = ptr(sum / float64(len(effects)))
	}
	var rereads int64
	for _, p := range r.prods {
		rereads += p.tally.Rereads()
	}
	res.ConsumerRereads = rereads
	switch {
	case !r.c.Real():
		if res.KilledBroker >= 0 {
			res.Notes = append(res.Notes, "failover time: not applicable on a simulated cluster (its election is done before the kill returns)")
		}
	case len(fos) > 0:
		var sum float64
		for _, f := range fos {
			sum += f
		}
		res.FailoverMS = ptr(sum / float64(len(fos)))
	case res.KilledBroker >= 0:
		res.FailoverMS = ptr(-1)
	}
	return res
}

// groupByPartitioner splits producers by partitioner, in order of first
// appearance (a distributed run lists its workers' producers worker by
// worker).
func groupByPartitioner(prods []*producer) [][]*producer {
	var out [][]*producer
	at := map[string]int{}
	for _, p := range prods {
		if i, ok := at[p.name]; ok {
			out[i] = append(out[i], p)
			continue
		}
		at[p.name] = len(out)
		out = append(out, []*producer{p})
	}
	return out
}

// partitionerResult sums one partitioner's producers (one per topic).
func (r *runner) partitionerResult(l *leg, prods []*producer) PartitionerResult {
	p0 := prods[0]
	pr := PartitionerResult{Name: p0.name, Topic: p0.topic, KilledBroker: l.victim, FirstSuccessMS: -1, Phases: map[string]*PhaseResult{}}
	if len(r.cfg.Workload) > 0 {
		for _, p := range prods {
			pr.Topics = append(pr.Topics, p.topic)
		}
	}
	basis, canPredict := r.predictionBasis(prods)
	pr.Prediction = basis
	for _, p := range prods {
		ls := p.checkLoss()
		pr.Sent += ls.sent
		pr.Acked += ls.acked
		pr.Lost += ls.lost
		pr.Duplicates += ls.duplicates
		pr.NeverAcked += ls.neverAcked
		pr.UnackedDelivered += ls.unackedDelivered
		if f := p.firstMovedAck.Load(); f > 0 && (pr.FirstSuccessMS < 0 || ms(time.Duration(f)) < pr.FirstSuccessMS) {
			pr.FirstSuccessMS = ms(time.Duration(f))
		}
	}
	if r.c.Real() && l.victim >= 0 {
		pr.FailoverMS = ptr(-1)
		if l.failover >= 0 {
			pr.FailoverMS = ptr(ms(l.failover))
		}
	}
	for _, p := range prods {
		p.mu.Lock()
		defer p.mu.Unlock()
	}
	for ph := range numPhases {
		w := l.windows[ph]
		if !w.ran {
			continue
		}
		d := w.end - w.start
		if d <= 0 {
			d = time.Nanosecond
		}
		s := mergePhase(prods, ph)
		var leaders []int32
		for _, p := range prods {
			for _, id := range l.leaders[ph][p.topic] {
				if !slices.Contains(leaders, id) {
					leaders = append(leaders, id)
				}
			}
		}
		slices.Sort(leaders)
		out := &PhaseResult{
			DurationS: d.Seconds(), Leaders: leaders,
			Sent: s.sent, Acked: s.acked, Failed: s.failed, Lost: s.lost,
			PerBroker: map[string]int64{}, PerBrokerBytes: map[string]int64{}, Shares: map[string]float64{},
			ThroughputMBps: float64(s.ackedBytes) / 1e6 / d.Seconds(),
			RecordsPerS:    float64(s.acked) / d.Seconds(),
			LatencyMS:      s.prod.Summary(),
			E2ELatencyMS:   s.e2e.Summary(),
		}
		var batchRecords int64
		for _, p := range prods {
			out.Batches += p.batches[ph].Load()
			batchRecords += p.batchRecords[ph].Load()
		}
		if out.Batches > 0 {
			out.RecordsPerBatch = float64(batchRecords) / float64(out.Batches)
		}
		bytes := map[int32]int64{}
		for id, bc := range s.perBroker {
			out.PerBroker[strconv.Itoa(int(id))] = bc.records
			out.PerBrokerBytes[strconv.Itoa(int(id))] = bc.bytes
			bytes[id] = bc.bytes
		}
		if len(r.cfg.Workload) > 0 {
			out.PerPartition = map[string]int64{}
			for _, p := range prods {
				for part, n := range p.phases[ph].perPartition {
					out.PerPartition[fmt.Sprintf("%s/%d", p.wname, part)] += n
				}
			}
		}
		skewOver := out.Leaders
		if canPredict && l.underFault[ph] {
			out.NoPrediction = NoPredictionUnderFault
		} else if canPredict {
			if pred, ok := r.predict(l, prods, ph); ok {
				setPrediction(out, pred, bytes)
				if out.PredictedShare != nil {
					skewOver = nil
					for k := range out.PredictedShare {
						id, _ := strconv.Atoi(k)
						skewOver = append(skewOver, int32(id))
					}
				}
			}
		}
		counts := map[int32]int64{}
		for _, id := range skewOver {
			counts[id] = 0
			if bc := s.perBroker[id]; bc != nil {
				counts[id] = bc.records
			}
		}
		setSkew(out, counts)
		setViolation(out, stats.LossRate(s.lost, s.acked))
		pr.Phases[ph.String()] = out
		pr.Series.ProduceSamples[ph] = s.prodSamples.xs
		pr.Series.E2ESamples[ph] = s.e2eSamples.xs
	}
	for _, p := range prods {
		for b, v := range p.buckets {
			for len(pr.Series.Buckets) <= b {
				pr.Series.Buckets = append(pr.Series.Buckets, 0)
			}
			pr.Series.Buckets[b] += v
		}
	}
	if l.victim >= 0 {
		pr.Series.KillAtS = l.killAt.Seconds()
	}
	if l.windows[PhaseBefore].ran && l.windows[PhaseAfter].ran {
		before, after := mergePhase(prods, PhaseBefore), mergePhase(prods, PhaseAfter)
		if ks, err := stats.KS2(before.prodSamples.xs, after.prodSamples.xs); err == nil {
			pr.KSProduce = &ks
		}
		if ks, err := stats.KS2(before.e2eSamples.xs, after.e2eSamples.xs); err == nil {
			pr.KSE2E = &ks
		}
	}
	return pr
}

// mergePhase sums the producers' figures of one phase into a new
// phaseStats (callers hold every producer's lock). Latency samples are
// concatenated, each producer's reservoir in turn.
func mergePhase(prods []*producer, ph Phase) *phaseStats {
	if len(prods) == 1 {
		s := *prods[0].phases[ph]
		s.prodSamples.xs = slices.Clone(s.prodSamples.xs)
		s.e2eSamples.xs = slices.Clone(s.e2eSamples.xs)
		return &s
	}
	out := &phaseStats{perBroker: map[int32]*brokerCount{}, perPartition: map[int32]int64{}}
	for i, p := range prods {
		s := p.phases[ph]
		if i == 0 {
			out.prod, out.e2e = s.prod.Clone(), s.e2e.Clone()
		} else {
			_ = out.prod.Merge(s.prod) // same objective and range by construction
			_ = out.e2e.Merge(s.e2e)
		}
		out.sent += s.sent
		out.acked += s.acked
		out.failed += s.failed
		out.ackedBytes += s.ackedBytes
		out.lost += s.lost
		for id, bc := range s.perBroker {
			o := out.perBroker[id]
			if o == nil {
				o = &brokerCount{}
				out.perBroker[id] = o
			}
			o.records += bc.records
			o.bytes += bc.bytes
		}
		out.prodSamples.xs = append(out.prodSamples.xs, s.prodSamples.xs...)
		out.e2eSamples.xs = append(out.e2eSamples.xs, s.e2eSamples.xs...)
	}
	return out
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// MeasuredPhases are the phases the tables compare, in order.
var MeasuredPhases = []Phase{PhaseBefore, PhaseFault, PhaseFailover, PhaseAfter, PhaseRecovered}

// setSkew sets out's shares, and its skew figures when the phase has enough
// records per leader for them (MinSkewRecordsPerBroker).
func setSkew(out *PhaseResult, counts map[int32]int64) {
	sk := stats.SkewOfCounts(counts)
	var total int64
	for _, sh := range sk.Shares {
		out.Shares[strconv.Itoa(int(sh.ID))] = sh.Share
	}
	for _, n := range counts {
		total += n
	}
	if len(counts) == 0 || total < MinSkewRecordsPerBroker*int64(len(counts)) {
		return
	}
	out.MaxOverMean, out.CV, out.Jain = ptr(sk.MaxOverMean), ptr(sk.CV), ptr(sk.Jain)
}

// setViolation sets out's violation rate and timely throughput, judged on
// end-to-end latency when there is any, else on produce latency.
func setViolation(out *PhaseResult, lossRate float64) {
	out.ViolationRate, out.ViolationLatency = out.E2ELatencyMS.ViolationRate, LatencyE2E
	if out.E2ELatencyMS.Count == 0 {
		out.ViolationRate, out.ViolationLatency = out.LatencyMS.ViolationRate, LatencyProduce
	}
	out.TimelyThroughputMBps = stats.TimelyThroughput(out.ThroughputMBps, out.ViolationRate, lossRate)
}

func ptr(x float64) *float64 { return &x }
