// Package chaosreport renders what `kplan chaos` measured: a run, the
// summary of repeated runs and the kills of --kill each as report
// documents (tables, Markdown, JSON), the PNG plots, the --report
// directory, the dry-run plan and the progress line of each repetition.
// Its functions are pure functions of internal/chaos's result types.
package chaosreport

import (
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/kplan-dev/kplan/internal/chaos"
	"github.com/kplan-dev/kplan/internal/report"
	"github.com/kplan-dev/kplan/internal/stats"
	"github.com/kplan-dev/kplan/internal/units"
)

// Document renders one run as tables. verbose adds what only matters when
// looking closely (the checking consumer's re-reads).
func Document(res *chaos.Result, verbose bool) report.Document {
	doc := report.Document{Title: resultTitle(res)}

	skew := report.Section{
		Title:  "Records per broker (by the leader that took them) and skew over the topic's leaders",
		Header: []string{"partitioner", "phase", "leaders", "records per broker", "max/mean", "CV", "Jain"},
	}
	perf := report.Section{
		Title:  "Throughput and latency (ms; produce = send to ack, e2e = send to consumer)",
		Header: []string{"partitioner", "phase", "MB/s", "rec/s", "rec/batch", "produce p50", "p99", "p99.9", "max", "e2e p50", "e2e p99", fmt.Sprintf("> %gms", res.LatencyObjectiveMS), "timely MB/s"},
	}
	short, basis := false, ""
	for _, p := range res.Partitioners {
		for _, ph := range chaos.MeasuredPhases {
			pr := p.Phases[ph.String()]
			if pr == nil {
				continue
			}
			if pr.MaxOverMean == nil {
				short = true
			}
			skew.Rows = append(skew.Rows, []string{p.Name, ph.String(), joinIDs(pr.Leaders), perBroker(pr.PerBroker),
				optF(pr.MaxOverMean, 2), optF(pr.CV, 3), optF(pr.Jain, 3)})
			e50, e99 := f1(pr.E2ELatencyMS.P50), f1(pr.E2ELatencyMS.P99)
			if pr.E2ELatencyMS.Count == 0 { // not measured, not 0 ms
				e50, e99 = "-", "-"
			}
			basis = mergeBasis(basis, pr.ViolationLatency)
			perf.Rows = append(perf.Rows, []string{p.Name, ph.String(), f3(pr.ThroughputMBps), fmt.Sprintf("%.0f", pr.RecordsPerS), f1(pr.RecordsPerBatch),
				f1(pr.LatencyMS.P50), f1(pr.LatencyMS.P99), f1(pr.LatencyMS.P999), f1(pr.LatencyMS.Max),
				e50, e99, pct(pr.ViolationRate), f3(pr.TimelyThroughputMBps)})
		}
	}
	if short {
		skew.Notes = append(skew.Notes, skewNote)
	}
	if n := violationNote(basis, fmt.Sprintf("> %gms", res.LatencyObjectiveMS)); n != "" {
		perf.Notes = append(perf.Notes, n)
	}
	loss := lossSection(res)
	doc.Sections = []report.Section{skew, perf, loss}
	if res.Slow != "" && res.Fault != nil {
		doc.Sections = append([]report.Section{slowSection(res)}, doc.Sections...)
	} else if fs, ok := faultSection(res); ok {
		doc.Sections = append([]report.Section{fs}, doc.Sections...)
	}
	if len(res.Workload) > 0 {
		skew.Title = "Records per broker (by the leader that took them) and skew over the leaders of the partitioner's topics"
		doc.Sections = append([]report.Section{workloadSection(res), skew}, predictionSections(res)...)
		doc.Sections = append(doc.Sections, perf, loss)
	}
	if res.Workers != nil {
		doc.Sections = append(doc.Sections, workersSection(res.Workers))
	}
	if res.Recommendation != nil {
		doc.Sections = append(doc.Sections, recommendationSection(res.Recommendation, res.Slow != ""))
	}
	doc.Notes = resultNotes(res, verbose)
	return doc
}

// workersSection is a distributed run's workers: each one's records sent,
// acknowledged and read back, and the phases it has no complete report of.
func workersSection(w *chaos.WorkersResult) report.Section {
	sec := report.Section{
		Title:  fmt.Sprintf("Workers (run %s: %d kplan worker processes; a missed phase's figures are left out of the tables above)", w.Run, w.Count),
		Header: []string{"worker", "sent", "acked", "read back", "clock vs coordinator", "missed phases"},
	}
	for _, wr := range w.Workers {
		missed := "-"
		if len(wr.Missed) > 0 {
			parts := make([]string, len(wr.Missed))
			for i, m := range wr.Missed {
				parts[i] = m.Phase + " (" + m.Reason + ")"
			}
			missed = strings.Join(parts, ", ")
		}
		sec.Rows = append(sec.Rows, []string{strconv.Itoa(wr.Index), strconv.FormatInt(wr.Sent, 10), strconv.FormatInt(wr.Acked, 10),
			strconv.FormatInt(wr.Read, 10), workerClock(wr.Clock), missed})
	}
	return sec
}

// workerClock is how far the coordinator's clock reads from a worker's:
// "+2000.4 ms ± 1.2 (corrected)", "± 1.2 ms (not corrected)" when the skew
// is within its uncertainty.
func workerClock(c *chaos.WorkerClock) string {
	switch {
	case c == nil:
		return "not measured"
	case c.Corrected:
		return fmt.Sprintf("%+.1f ms ± %s (corrected)", c.SkewMS, f1(c.UncertaintyMS))
	default:
		return fmt.Sprintf("within ± %s ms (not corrected)", f1(c.UncertaintyMS))
	}
}

// resultNotes are a run's notes: its setup, what it noticed, the killer's
// log.
func resultNotes(res *chaos.Result, verbose bool) []string {
	notes := append([]string{setupNote(res)}, res.Notes...)
	if res.KillEffectMS != nil {
		notes = append(notes, fmt.Sprintf("the kill took effect %s ms after the kill command started, as the killer reports it; failover ms counts from then", f1(*res.KillEffectMS)))
	}
	for _, l := range res.KillerLog {
		notes = append(notes, "killer: "+l)
	}
	if verbose && res.ConsumerRereads > 0 {
		notes = append(notes, fmt.Sprintf("the checking consumer read %d records a second time at the same offset after its fetch offset was reset (a re-read, not a duplicate; not counted)", res.ConsumerRereads))
	}
	return notes
}

// resultTitle names the run: the kill, the fault, the cluster.
func resultTitle(res *chaos.Result) string {
	title := "kplan chaos: " + res.Label
	if res.KilledBroker >= 0 {
		target := ""
		if want := fmt.Sprintf("broker-%d", res.KilledBroker); res.Target != want {
			target = " (" + res.Target + ")"
		}
		title = fmt.Sprintf("kplan chaos: kill broker-%d%s — %s", res.KilledBroker, target, res.Label)
	}
	if res.Fault != nil {
		what := "fault " + res.Fault.Fault
		if res.Slow != "" {
			what = "slow " + res.Slow
		}
		if res.KilledBroker >= 0 {
			what += fmt.Sprintf(", then kill broker-%d", res.KilledBroker)
		}
		title = fmt.Sprintf("kplan chaos: %s — %s", what, res.Label)
	}
	return title
}

// lossSection is the failover and loss table of one run.
func lossSection(res *chaos.Result) report.Section {
	loss := report.Section{
		Title:  "Failover and loss (every record consumed back and checked by sequence number)",
		Header: []string{"partitioner", "killed", "failover ms", "first ack on moved partitions ms", "sent", "acked", "lost", "duplicates", "never acked", "KS produce before/after D (p)", "KS e2e D (p)"},
	}
	for _, p := range res.Partitioners {
		killed := "-"
		if p.KilledBroker >= 0 {
			killed = fmt.Sprintf("broker-%d", p.KilledBroker)
		}
		loss.Rows = append(loss.Rows, []string{p.Name, killed, optMS(p.FailoverMS), msOrDash(p.FirstSuccessMS),
			strconv.FormatInt(p.Sent, 10), strconv.FormatInt(p.Acked, 10), strconv.FormatInt(p.Lost, 10),
			strconv.FormatInt(p.Duplicates, 10), strconv.FormatInt(p.NeverAcked, 10), ks(p.KSProduce), ks(p.KSE2E)})
	}
	return loss
}

// faultSection sets the faulted broker's measured share beside the others'
// in each phase, per partitioner: under the fault, and before and after it
// for comparison.
func faultSection(res *chaos.Result) (report.Section, bool) {
	f := res.Fault
	if f == nil {
		return report.Section{}, false
	}
	sec := report.Section{
		Title:  "Network fault: " + f.Description + " (" + f.Fault + ")",
		Header: []string{"partitioner", "phase", "under fault", "faulted broker's share", "shares by broker", "max/mean", "produce p99 ms"},
	}
	under := map[string]bool{}
	for _, ph := range f.Phases {
		under[ph] = true
	}
	faultPhases(res, func(name string, ph chaos.Phase, pr *chaos.PhaseResult, share string) {
		yes := "no"
		if under[ph.String()] {
			yes = "yes"
		}
		sec.Rows = append(sec.Rows, []string{name, ph.String(), yes, share, shares(pr.Shares), optF(pr.MaxOverMean, 2), f1(pr.LatencyMS.P99)})
	})
	inForce := fmt.Sprintf("injected %.1f s into the run, in force after %s ms", f.InjectedAtS, f1(f.InForceMS))
	if f.ClearedAtS != nil {
		inForce += fmt.Sprintf(", cleared at %.1f s (before the recovered phase)", *f.ClearedAtS)
	} else {
		inForce += ", cleared when the run ended"
	}
	sec.Notes = append(sec.Notes, inForce+".",
		"shares are of the records acknowledged in the phase, by the broker that led each record's partition; "+chaos.NoPredictionUnderFault+": the audit's model knows layouts, not slow brokers.")
	return sec, true
}

// faultPhases calls row for each partitioner's measured phases but the
// failover, in order, with the faulted broker's share of the phase ("-"
// when it has none).
func faultPhases(res *chaos.Result, row func(name string, ph chaos.Phase, pr *chaos.PhaseResult, share string)) {
	f := res.Fault
	key := strconv.Itoa(int(f.Broker))
	for _, p := range res.Partitioners {
		for _, ph := range chaos.MeasuredPhases {
			pr := p.Phases[ph.String()]
			if pr == nil || ph == chaos.PhaseFailover {
				continue
			}
			share := "-"
			if v, ok := pr.Shares[key]; ok && f.Broker >= 0 {
				share = pct(v)
			}
			row(p.Name, ph, pr, share)
		}
	}
}

// shares spells a phase's shares by broker, "1: 33.3%, 2: ...", in broker
// order.
func shares(m map[string]float64) string {
	keys := brokerOrder(m)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + ": " + pct(m[k])
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ", ")
}

// skewNote explains a "-" in the skew columns.
var skewNote = fmt.Sprintf("max/mean, CV and Jain are shown only for phases with at least %d acknowledged records per leader on average (\"-\": too few to mean anything).", chaos.MinSkewRecordsPerBroker)

// mergeBasis combines the latencies the violation rates were judged on.
func mergeBasis(have, next string) string {
	switch {
	case next == "" || have == next:
		return have
	case have == "":
		return next
	}
	return "mixed"
}

// violationNote says which latency the violation rate (column col) and
// timely throughput use.
func violationNote(basis, col string) string {
	switch basis {
	case chaos.LatencyE2E:
		return col + " and timely MB/s are judged on end-to-end latency (send to consumer)."
	case chaos.LatencyProduce:
		return col + ` and timely MB/s are judged on produce latency (send to ack): records were consumed only after the run, so there is no end-to-end latency ("-").`
	case "mixed":
		return col + ` and timely MB/s are judged on end-to-end latency where there is any ("-": none), else on produce latency.`
	}
	return ""
}

// setupNote is the experiment's set-up in one line.
func setupNote(res *chaos.Result) string {
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
	if len(res.Workload) > 0 {
		return fmt.Sprintf("workload of %d topics (above; replicas per partition, leader first); acks=%s (%s); %d-byte records, one producer per topic and partitioner at the topic's rate; partitioners ran %s; clients' metadata min age %gms.",
			len(res.Workload), res.Acks, idem, res.RecordSize, mode, res.MetadataMinAgeMS)
	}
	return fmt.Sprintf("layout %s (replicas per partition, leader first); acks=%s (%s); %d-byte records, rate per producer %s; partitioners ran %s; clients' metadata min age %gms.",
		res.Assignment, res.Acks, idem, res.RecordSize, rate, mode, res.MetadataMinAgeMS)
}

// PredictedPhases are the phases whose predicted shares the reports set
// beside the measured ones: the failover phase is a transition, not a
// state the model describes.
var PredictedPhases = []chaos.Phase{chaos.PhaseBefore, chaos.PhaseAfter, chaos.PhaseRecovered}

// workloadSection lists a workload's topics as they ran.
func workloadSection(res *chaos.Result) report.Section {
	sec := report.Section{
		Title:  "Workload (each partitioner writes every topic, one producer per topic)",
		Header: []string{"topic", "assignment", "rate", "keys"},
	}
	for _, w := range res.Workload {
		rate := "unlimited"
		if w.RateBytesPerS > 0 {
			rate = units.FormatRate(w.RateBytesPerS)
		}
		a := w.Assignment
		if a == "" {
			a = "as it is (existing topic)"
		}
		sec.Rows = append(sec.Rows, []string{w.Name, a, rate, w.Keys})
	}
	return sec
}

// predictionSections set each broker's predicted share of the bytes beside
// the measured one, per partitioner and phase, and sum each phase up: the
// largest error and the skew predicted and measured over the same brokers.
func predictionSections(res *chaos.Result) []report.Section {
	shares := report.Section{
		Title:  "Predicted vs measured share of the bytes per broker (the audit's model; error = measured - predicted, in percentage points)",
		Header: []string{"partitioner", "phase", "broker", "predicted", "measured", "error pts"},
	}
	sum := report.Section{
		Title:  "Prediction error and skew per phase (max/mean over the phase's leaders, predicted and measured alike)",
		Header: []string{"partitioner", "phase", "max error pts", "predicted max/mean", "measured max/mean"},
	}
	short := false
	for _, p := range res.Partitioners {
		for _, ph := range PredictedPhases {
			pr := p.Phases[ph.String()]
			if pr == nil || pr.PredictedShare == nil {
				continue
			}
			for _, b := range brokerKeys(pr.PredictedShare, pr.MeasuredShare) {
				pred, hasP := pr.PredictedShare[b]
				meas, hasM := pr.MeasuredShare[b]
				errPts := "-"
				if hasP && hasM {
					errPts = signedPts(100 * (meas - pred))
				}
				shares.Rows = append(shares.Rows, []string{p.Name, ph.String(), b, shareOr(pred, hasP), shareOr(meas, hasM), errPts})
			}
			measured := "-"
			if pr.MaxOverMean != nil && len(pr.MeasuredShare) > 0 {
				var top float64
				for _, x := range pr.MeasuredShare {
					top = max(top, x)
				}
				measured = strconv.FormatFloat(top*float64(len(pr.MeasuredShare)), 'f', 2, 64)
			} else {
				short = true
			}
			sum.Rows = append(sum.Rows, []string{p.Name, ph.String(), optF(pr.MaxErrorPts, 1), optF(pr.PredictedMaxOverMean, 2), measured})
		}
	}
	for _, p := range res.Partitioners {
		if p.Prediction != "" {
			sum.Notes = append(sum.Notes, p.Name+": "+p.Prediction)
		}
	}
	if short {
		sum.Notes = append(sum.Notes, fmt.Sprintf("measured max/mean is shown only for phases with at least %d acknowledged records per leader on average (\"-\").", chaos.MinSkewRecordsPerBroker))
	}
	shares.Notes = []string{"shares are of the acknowledged bytes, by the broker that led the record's partition, over the phase's leaders; each column sums to 100%."}
	if len(shares.Rows) == 0 {
		shares.Header, shares.Notes = nil, []string{"no prediction for any partitioner (the notes below say why)"}
		sum.Header = nil
	}
	return []report.Section{shares, sum}
}

// brokerKeys returns the broker ids keying either map, in numeric order.
func brokerKeys(a, b map[string]float64) []string {
	var ids []int
	seen := map[int]bool{}
	for _, m := range []map[string]float64{a, b} {
		for k := range m {
			if id, err := strconv.Atoi(k); err == nil && !seen[id] {
				seen[id] = true
				ids = append(ids, id)
			}
		}
	}
	slices.Sort(ids)
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = strconv.Itoa(id)
	}
	return out
}

// signedPts formats a difference in points with its sign, "0.0" when it
// rounds to nothing (never "-0.0").
func signedPts(x float64) string {
	r := math.Round(x*10) / 10
	switch {
	case r > 0:
		return "+" + strconv.FormatFloat(r, 'f', 1, 64)
	case r < 0:
		return strconv.FormatFloat(r, 'f', 1, 64)
	}
	return "0.0"
}

// shareOr formats a share as a percentage, "-" when absent.
func shareOr(x float64, ok bool) string {
	if !ok {
		return "-"
	}
	return pct(x)
}

// SummaryDocument renders repeated runs as tables.
func SummaryDocument(s *chaos.Summary) report.Document {
	what := "no kill"
	if s.Slow != "" {
		what = "slow " + s.Slow + ", no kill"
	}
	if s.KilledBroker >= 0 {
		what = fmt.Sprintf("kill broker-%d", s.KilledBroker)
	}
	doc := report.Document{Title: fmt.Sprintf("kplan chaos: %s, %d runs, means with %g%% confidence intervals — %s", what, s.Repeat, 100*s.Level, s.Label)}
	sec := report.Section{
		Title:  "Per partitioner and phase",
		Header: []string{"partitioner", "phase", "max/mean", "MB/s", "MB/s vs " + s.Baseline, "produce p50 ms", "produce p99 ms", "e2e p50 ms", "e2e p99 ms", "violation rate", "timely MB/s"},
	}
	short, basis := false, ""
	for _, p := range s.Partitioners {
		for _, ph := range chaos.MeasuredPhases {
			x := p.Phases[ph.String()]
			if x == nil {
				continue
			}
			if x.MaxOverMean.N == 0 {
				short = true
			}
			basis = mergeBasis(basis, x.ViolationLatency)
			phase := ph.String()
			if s.Slow != "" {
				phase = slowPhaseName(ph)
			}
			sec.Rows = append(sec.Rows, []string{p.Name, phase, civ(x.MaxOverMean, 2), civ(x.ThroughputMBps, 3), civ(x.ThroughputRatio, 3),
				civ(x.LatencyMS["p50"], 1), civ(x.LatencyMS["p99"], 1), civ(x.E2ELatencyMS["p50"], 1), civ(x.E2ELatencyMS["p99"], 1),
				civ(x.ViolationRate, 4), civ(x.TimelyMBps, 3)})
		}
	}
	if short {
		sec.Notes = append(sec.Notes, skewNote)
	}
	if n := violationNote(basis, "violation rate"); n != "" {
		sec.Notes = append(sec.Notes, n)
	}
	loss := report.Section{
		Title:  "Failover and loss over all runs",
		Header: []string{"partitioner", "first ack on moved partitions ms", "acked", "lost", "duplicates", "never acked"},
	}
	for _, p := range s.Partitioners {
		loss.Rows = append(loss.Rows, []string{p.Name, civ(p.FirstSuccessMS, 1), fmt.Sprint(p.Acked), fmt.Sprint(p.Lost), fmt.Sprint(p.Duplicates), fmt.Sprint(p.NeverAcked)})
	}
	doc.Sections = []report.Section{sec, loss}
	if s.Recommendation != nil {
		doc.Sections = append(doc.Sections, recommendationSection(s.Recommendation, s.Slow != ""))
	}
	if s.FailoverMS != nil {
		doc.Notes = []string{fmt.Sprintf("cluster failover (kill to every partition led by a live broker): %s ms", civ(*s.FailoverMS, 1))}
	} else if s.KilledBroker >= 0 {
		doc.Notes = []string{"cluster failover: not timed (not applicable on a simulated cluster, or no run completed it)"}
	}
	if len(s.Runs) > 0 {
		doc.Notes = append(doc.Notes, setupNote(s.Runs[0]))
	}
	return doc
}

// KillEachDocument renders --kill each: per kill and partitioner, the measured
// and predicted share of each surviving broker and their skew.
func KillEachDocument(k *chaos.KillEach) report.Document {
	doc := report.Document{Title: fmt.Sprintf("kplan chaos: kill each broker in turn, %d kills — %s", len(k.Kills), k.Label)}
	sec := report.Section{
		Title:  "After each kill: measured and predicted share of the bytes per broker",
		Header: []string{"kill", "partitioner", "max/mean", "predicted max/mean", "max error pts", "measured share", "predicted share", "acked", "lost", "failover ms", "restored"},
	}
	none := false
	for _, kl := range k.Kills {
		kill := "none"
		if kl.Broker >= 0 {
			kill = fmt.Sprintf("broker-%d", kl.Broker)
		}
		restored := "no"
		if kl.Restored {
			restored = "yes"
		}
		for _, p := range kl.Partitioners {
			if p.PredictedShare == nil {
				none = true
			}
			sec.Rows = append(sec.Rows, []string{kill, p.Name, optF(p.MeasuredMaxOverMean, 2), optF(p.PredictedMaxOverMean, 2), optF(p.MaxErrorPts, 1),
				shares(p.MeasuredShare), shares(p.PredictedShare), fmt.Sprint(p.Acked), fmt.Sprint(p.Lost), optMS(kl.FailoverMS), restored})
		}
	}
	sec.Notes = append(sec.Notes, "shares are of the bytes acknowledged in the after phase, by the broker that led each record's partition; "+
		"the prediction is the audit's model over Kafka's election with the broker gone (kplan audit --what-if); max/mean is over the same brokers.",
		"restored: the broker was back in every ISR and the preferred leaders elected before the next kill (and after the last); a simulated cluster starts each run whole.")
	if none {
		sec.Notes = append(sec.Notes, "\"-\" under predicted: the partitioner has no prediction (see the run's notes, -o json).")
	}
	doc.Sections = []report.Section{sec}
	if len(k.Runs) > 0 {
		doc.Notes = []string{setupNote(k.Runs[0])}
	}
	return doc
}

// Campaign returns what a campaign's output shows: v for JSON (the last
// run, the summary of repeated runs or the kills of --kill each) and its
// document (the last run's, or the summary's or the kills' head).
func Campaign(cr chaos.CampaignResult, verbose bool) (v any, doc func() report.Document) {
	v, head := campaignHead(cr)
	last := cr.Runs[len(cr.Runs)-1]
	if head != nil {
		return v, func() report.Document { return *head }
	}
	return v, func() report.Document { return Document(last, verbose) }
}

// campaignHead is the campaign's JSON value and, for repeated runs or
// --kill each, the document shown before the last run's (nil otherwise).
func campaignHead(cr chaos.CampaignResult) (any, *report.Document) {
	switch {
	case cr.Kills != nil:
		d := KillEachDocument(cr.Kills)
		return cr.Kills, &d
	case cr.Summary != nil:
		d := SummaryDocument(cr.Summary)
		return cr.Summary, &d
	}
	return cr.Runs[len(cr.Runs)-1], nil
}

// WriteCampaign renders a campaign's result (the run, the summary of
// repeated runs, or the kills of --kill each) in format f.
func WriteCampaign(w io.Writer, f report.Format, cr chaos.CampaignResult, verbose bool) error {
	v, doc := Campaign(cr, verbose)
	return report.Render(w, f, v, doc)
}

// WriteReport writes report.md, result.json and the plots of the
// campaign's last run into dir, which must exist: result.json is what -o
// json prints, report.md the summary or the kills (when there are) before
// the last run. Every file is written atomically with mode
// report.PermShared. It returns the names of the files written.
func WriteReport(dir string, cr chaos.CampaignResult, verbose bool) ([]string, error) {
	v, head := campaignHead(cr)
	res := cr.Runs[len(cr.Runs)-1]
	plots, perr := writePlots(dir, res)
	var md strings.Builder
	if head != nil {
		if err := report.WriteMarkdown(&md, *head); err != nil {
			return nil, err
		}
		md.WriteString("\n## The last run\n\n")
		var last strings.Builder
		if err := report.WriteMarkdown(&last, Document(res, verbose)); err != nil {
			return nil, err
		}
		md.WriteString(strings.Replace(last.String(), "# ", "### ", 1))
	} else if err := report.WriteMarkdown(&md, Document(res, verbose)); err != nil {
		return nil, err
	}
	if len(plots) > 0 {
		md.WriteString("\n## Plots\n\n")
		for _, p := range plots {
			fmt.Fprintf(&md, "![%s](%s)\n\n", strings.TrimSuffix(p, ".png"), p)
		}
	}
	var js strings.Builder
	if err := report.WriteJSON(&js, v); err != nil {
		return nil, err
	}
	if err := report.WriteFileAtomic(filepath.Join(dir, "result.json"), []byte(js.String())); err != nil {
		return nil, err
	}
	if err := report.WriteFileAtomic(filepath.Join(dir, "report.md"), []byte(md.String())); err != nil {
		return nil, err
	}
	return append([]string{"report.md", "result.json"}, plots...), perr
}

func joinIDs(ids []int32) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.Itoa(int(id))
	}
	return strings.Join(s, ",")
}

// brokerOrder returns the keys of m, broker ids, in numeric order.
func brokerOrder[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int {
		x, _ := strconv.Atoi(a)
		y, _ := strconv.Atoi(b)
		return x - y
	})
	return keys
}

func perBroker(m map[string]int64) string {
	keys := brokerOrder(m)
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
func f3(x float64) string { return strconv.FormatFloat(x, 'f', 3, 64) }
func pct(x float64) string {
	return strconv.FormatFloat(100*x, 'f', 1, 64) + "%"
}

// optF formats an optional figure: "-" when it was not measured.
func optF(x *float64, prec int) string {
	if x == nil {
		return "-"
	}
	return strconv.FormatFloat(*x, 'f', prec, 64)
}

// optMS formats an optional time in ms: "-" when not measured or never.
func optMS(x *float64) string {
	if x == nil {
		return "-"
	}
	return msOrDash(*x)
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

func civ(iv stats.Interval, prec int) string {
	if iv.N == 0 {
		return "-"
	}
	return fmt.Sprintf("%.*f ± %.*f", prec, iv.Mean, prec, iv.Half)
}

// CycleLine is one repetition's progress line: the kill, the failover and
// the loss check.
func CycleLine(i, n int, res *chaos.Result) string {
	var sent, acked, lost, dups, never int64
	for _, p := range res.Partitioners {
		sent += p.Sent
		acked += p.Acked
		lost += p.Lost
		dups += p.Duplicates
		never += p.NeverAcked
	}
	kill := "no kill"
	if res.Fault != nil {
		kill = "fault " + res.Fault.Fault + ", no kill"
	}
	if res.KilledBroker >= 0 {
		kill = fmt.Sprintf("killed broker %d", res.KilledBroker)
		if res.FailoverMS != nil {
			kill += fmt.Sprintf(", failover %.0f ms", *res.FailoverMS)
		}
	}
	return fmt.Sprintf("chaos: cycle %d/%d: %s, records sent %d, acked %d, lost %d, duplicates %d, never acked %d", i, n, kill, sent, acked, lost, dups, never)
}

// slowPhaseName is a phase as a slow-broker report names it.
func slowPhaseName(ph chaos.Phase) string {
	switch ph {
	case chaos.PhaseBefore:
		return chaos.SlowPhaseAtRest
	case chaos.PhaseFault:
		return chaos.SlowPhaseSlow
	}
	return ph.String()
}

// slowSection is a slow-broker experiment's table: per partitioner, at rest
// and slow side by side, each broker's share, throughput, produce and
// end-to-end percentiles, timely throughput and loss.
func slowSection(res *chaos.Result) report.Section {
	f := res.Fault
	sec := report.Section{
		Title: "Slow broker: " + f.Description + " (--slow " + res.Slow + "); at rest = nothing slow, slow = in force",
		Header: []string{"partitioner", "phase", "slow broker's share", "shares by broker", "MB/s", "produce p50", "p99", "p99.9",
			"e2e p50", "e2e p99", "e2e p99.9", "timely MB/s", "lost"},
	}
	faultPhases(res, func(name string, ph chaos.Phase, pr *chaos.PhaseResult, share string) {
		e := []string{f1(pr.E2ELatencyMS.P50), f1(pr.E2ELatencyMS.P99), f1(pr.E2ELatencyMS.P999)}
		if pr.E2ELatencyMS.Count == 0 { // not measured, not 0 ms
			e = []string{"-", "-", "-"}
		}
		sec.Rows = append(sec.Rows, append(append([]string{name, slowPhaseName(ph), share, shares(pr.Shares), f3(pr.ThroughputMBps),
			f1(pr.LatencyMS.P50), f1(pr.LatencyMS.P99), f1(pr.LatencyMS.P999)}, e...), f3(pr.TimelyThroughputMBps), strconv.FormatInt(pr.Lost, 10)))
	})
	sec.Notes = append(sec.Notes, "latencies in ms; shares are of the records acknowledged in the phase, by the broker that led each record's partition; lost = acknowledged but never consumed back.")
	return sec
}

// recommendationSection says which partitioner to use, by the objective.
// slow names the phases as a slow-broker report does.
func recommendationSection(rec *chaos.Recommendation, slow bool) report.Section {
	phase := rec.Phase
	if slow && phase == chaos.PhaseFault.String() {
		phase = chaos.SlowPhaseSlow
	}
	sec := report.Section{
		Title:  fmt.Sprintf("Recommendation (objective %s, judged in the %s phase)", rec.Objective, phase),
		Header: []string{"use", "metric", "value", "runner-up", "its value", "margin", fmt.Sprintf("%g%% interval", 100*chaos.RecommendLevel), "clear lead", "at rest vs best"},
	}
	runnerUp, its, margin := "-", "-", "-"
	if rec.RunnerUp != "" {
		runnerUp, its = rec.RunnerUp, f3(rec.RunnerUpValue)
		if rec.Margin > 0 {
			margin = strconv.FormatFloat(rec.Margin, 'f', 2, 64) + "x"
		}
	}
	interval := "- (one run)"
	if rec.MarginCI != nil {
		interval = fmt.Sprintf("%.2f to %.2f (%d runs)", rec.MarginCI.Low, rec.MarginCI.High, rec.MarginCI.N)
	}
	clear := "no"
	if rec.Clear {
		clear = "yes"
	}
	atRest := "-"
	if rec.AtRest != nil {
		atRest = fmt.Sprintf("%.2fx %s", *rec.AtRest, rec.AtRestBest)
	}
	sec.Rows = [][]string{{rec.Partitioner, rec.Metric, f3(rec.Value), runnerUp, its, margin, interval, clear, atRest}}
	sec.Notes = []string{rec.Reason + "."}
	return sec
}
