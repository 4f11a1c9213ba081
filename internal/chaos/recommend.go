package chaos

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/kplan-dev/kplan/internal/errkind"
	"github.com/kplan-dev/kplan/internal/stats"
)

// RecommendBy is what a recommendation optimises (--objective).
type RecommendBy string

// The objectives of a recommendation.
const (
	// ByThroughput picks the highest acknowledged throughput.
	ByThroughput RecommendBy = "throughput"
	// ByP99 picks the lowest produce p99 (send to acknowledgement).
	ByP99 RecommendBy = "p99"
	// ByTimely picks the highest timely throughput (throughput within the
	// latency objective, net of loss).
	ByTimely RecommendBy = "timely"
)

// FieldObjective is the field the objective's errors name.
const FieldObjective = "objective"

// RecommendLevel is the confidence level of a recommendation's margin.
const RecommendLevel = 0.95

// ParseRecommendBy parses throughput, p99 or timely ("" is throughput).
func ParseRecommendBy(s string) (RecommendBy, error) {
	switch b := RecommendBy(s); b {
	case "":
		return ByThroughput, nil
	case ByThroughput, ByP99, ByTimely:
		return b, nil
	}
	return "", errkind.Usagef(FieldObjective, "unknown objective %q (want throughput, p99 or timely)", s)
}

// metric is the figure an objective compares, and whether more is better.
func (b RecommendBy) metric() (name string, higher bool, of func(*PhaseResult) float64) {
	switch b {
	case ByP99:
		return "produce_p99_ms", false, func(p *PhaseResult) float64 { return p.LatencyMS.P99 }
	case ByTimely:
		return "timely_throughput_mbps", true, func(p *PhaseResult) float64 { return p.TimelyThroughputMBps }
	}
	return "throughput_mbps", true, func(p *PhaseResult) float64 { return p.ThroughputMBps }
}

// Recommendation says which partitioner to use for the cluster and
// workload the runs measured, by one objective.
type Recommendation struct {
	Objective RecommendBy `json:"objective"`
	// Phase is the phase judged: the fault phase when there was a fault
	// (a slow broker's "slow"), else after the kill, else before.
	Phase string `json:"phase"`
	// Metric is the figure compared (throughput_mbps, produce_p99_ms or
	// timely_throughput_mbps); HigherIsBetter says which way.
	Metric         string `json:"metric"`
	HigherIsBetter bool   `json:"higher_is_better"`
	// Partitioner is the one to use; Value its figure (the mean over the
	// runs).
	Partitioner string  `json:"partitioner"`
	Value       float64 `json:"value"`
	// RunnerUp is the next best and RunnerUpValue its figure; absent when
	// one partitioner ran.
	RunnerUp      string  `json:"runner_up,omitempty"`
	RunnerUpValue float64 `json:"runner_up_value,omitempty"`
	// Margin is how many times better Partitioner is than RunnerUp (above
	// 1: better): its figure over the runner-up's when higher is better,
	// the runner-up's over its own for a latency; with several runs, the
	// mean of the per-run ratios (paired, which cancels the drift between
	// runs).
	Margin float64 `json:"margin,omitempty"`
	// MarginCI is the margin's RecommendLevel confidence interval over
	// two or more runs (absent with one).
	MarginCI *stats.Interval `json:"margin_ci,omitempty"`
	// Clear says the lead is not noise: the margin's interval lies above 1.
	// It is false with a single run, which has no interval.
	Clear bool `json:"clear"`
	// AtRest is the cost at rest, when Phase is not the before phase: the
	// partitioner's before-phase figure relative to the best one's there
	// (1: it is the best at rest too; below 1 it costs that much),
	// AtRestBest the best at rest.
	AtRest     *float64 `json:"at_rest_vs_best,omitempty"`
	AtRestBest string   `json:"at_rest_best,omitempty"`
	// Runs is how many runs the recommendation rests on.
	Runs int `json:"runs"`
	// Reason says it in one sentence.
	Reason string `json:"reason"`
}

// judgedPhase is the phase a recommendation judges in runs.
func judgedPhase(runs []*Result) Phase {
	ran := func(ph Phase) bool {
		for _, r := range runs {
			for _, p := range r.Partitioners {
				if p.Phases[ph.String()] != nil {
					return true
				}
			}
		}
		return false
	}
	for _, ph := range []Phase{PhaseFault, PhaseAfter} {
		if ran(ph) {
			return ph
		}
	}
	return PhaseBefore
}

// phaseMeans is each partitioner's mean figure in one phase over the runs
// it acknowledged records in, in the order of the first run that names it,
// and its figure per run (NaN where it did not run).
type phaseMeans struct {
	names []string
	mean  map[string]float64
	per   map[string][]float64
}

func meansOf(runs []*Result, ph Phase, of func(*PhaseResult) float64) phaseMeans {
	m := phaseMeans{mean: map[string]float64{}, per: map[string][]float64{}}
	for i, r := range runs {
		for _, p := range r.Partitioners {
			pr := p.Phases[ph.String()]
			if pr == nil || pr.Acked == 0 {
				continue
			}
			if _, ok := m.per[p.Name]; !ok {
				m.names = append(m.names, p.Name)
				m.per[p.Name] = slices.Repeat([]float64{math.NaN()}, len(runs))
			}
			m.per[p.Name][i] = of(pr)
		}
	}
	for _, n := range m.names {
		var sum float64
		var k int
		for _, x := range m.per[n] {
			if !math.IsNaN(x) {
				sum += x
				k++
			}
		}
		m.mean[n] = sum / float64(k)
	}
	return m
}

// ranked is m's partitioners best first (ties: the order they ran in).
func (m phaseMeans) ranked(higher bool) []string {
	out := slices.Clone(m.names)
	slices.SortStableFunc(out, func(a, b string) int {
		x, y := m.mean[a], m.mean[b]
		if !higher {
			x, y = y, x
		}
		switch {
		case x > y:
			return -1
		case x < y:
			return 1
		}
		return 0
	})
	return out
}

// Recommend picks the partitioner to use from runs of one experiment (one
// run, or the repetitions of --repeat) by the objective: the best mean
// figure in the judged phase, with its margin over the runner-up (and the
// margin's confidence interval over two or more runs) and, when the judged
// phase is not the before phase, what it costs at rest. It returns nil
// when no partitioner acknowledged a record in the judged phase. It is a
// pure function of the results.
func Recommend(runs []*Result, by RecommendBy) *Recommendation {
	if by == "" {
		by = ByThroughput
	}
	ph := judgedPhase(runs)
	metric, higher, of := by.metric()
	m := meansOf(runs, ph, of)
	if len(m.names) == 0 {
		return nil
	}
	order := m.ranked(higher)
	rec := &Recommendation{Objective: by, Phase: ph.String(), Metric: metric, HigherIsBetter: higher,
		Partitioner: order[0], Value: m.mean[order[0]], Runs: len(runs)}
	if len(order) > 1 {
		rec.RunnerUp, rec.RunnerUpValue = order[1], m.mean[order[1]]
		setMargin(rec, m.per[order[0]], m.per[order[1]], higher)
	}
	if ph != PhaseBefore {
		rest := meansOf(runs, PhaseBefore, of)
		if best, ok := rest.mean[rec.Partitioner]; ok {
			top := rest.ranked(higher)[0]
			if r := ratio(best, rest.mean[top], higher); !math.IsNaN(r) {
				rec.AtRest, rec.AtRestBest = &r, top
			}
		}
	}
	label := rec.Phase
	if len(runs) > 0 && runs[0].Slow != "" && ph == PhaseFault {
		label = SlowPhaseSlow
	}
	rec.Reason = reason(rec, label)
	return rec
}

// ratio is how many times better a is than b (above 1: better), NaN when
// it is not defined.
func ratio(a, b float64, higher bool) float64 {
	if !higher {
		a, b = b, a
	}
	if b <= 0 || math.IsNaN(a) || math.IsNaN(b) {
		return math.NaN()
	}
	return a / b
}

// setMargin sets rec's margin from the paired per-run figures of the
// best and the runner-up.
func setMargin(rec *Recommendation, best, next []float64, higher bool) {
	var rs []float64
	for i := range best {
		if r := ratio(best[i], next[i], higher); !math.IsNaN(r) && !math.IsInf(r, 0) {
			rs = append(rs, r)
		}
	}
	if len(rs) == 0 {
		return
	}
	var sum float64
	for _, r := range rs {
		sum += r
	}
	rec.Margin = sum / float64(len(rs))
	if iv, err := stats.MeanCI(rs, RecommendLevel); err == nil {
		rec.MarginCI = &iv
		rec.Clear = iv.Low > 1
	}
}

// reason says the recommendation in one sentence; phase names the judged
// phase as the report does.
func reason(rec *Recommendation, phase string) string {
	what := map[RecommendBy]string{ByThroughput: "throughput", ByP99: "produce p99", ByTimely: "timely throughput"}[rec.Objective]
	var b strings.Builder
	fmt.Fprintf(&b, "%s has the best %s in the %s phase", rec.Partitioner, what, phase)
	switch {
	case rec.RunnerUp == "":
		b.WriteString(" (the only partitioner that ran)")
	case rec.Margin > 0:
		fmt.Fprintf(&b, ", %.2fx %s's", rec.Margin, rec.RunnerUp)
		if rec.MarginCI != nil {
			fmt.Fprintf(&b, " (%g%% interval %.2f to %.2f over %d runs", 100*rec.MarginCI.Level, rec.MarginCI.Low, rec.MarginCI.High, rec.Runs)
			if !rec.Clear {
				b.WriteString(": not a clear lead")
			}
			b.WriteString(")")
		} else {
			b.WriteString(" (one run: no interval; use --repeat)")
		}
	}
	if rec.AtRest != nil {
		if rec.AtRestBest == rec.Partitioner {
			b.WriteString("; it is also the best at rest")
		} else {
			fmt.Fprintf(&b, "; at rest it reaches %.2fx %s's, the best there", *rec.AtRest, rec.AtRestBest)
		}
	}
	return b.String()
}
