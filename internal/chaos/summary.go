package chaos

import (
	"fmt"

	"github.com/kplan-dev/kplan/internal/stats"
)

// Level is the confidence level of repeated runs' intervals (the thesis's).
const Level = 0.99

// Summary is K repetitions of one experiment: means with 99% confidence
// intervals. Its JSON form is kplan chaos --repeat K -o json.
type Summary struct {
	// Schema is the JSON's version, SummarySchema.
	Schema       string `json:"schema"`
	Cluster      string `json:"cluster"`
	Label        string `json:"label"`
	Target       string `json:"target"`
	KilledBroker int32  `json:"killed_broker"`
	// Fault is the --fault of the runs ("" when none).
	Fault string `json:"fault,omitempty"`
	// Slow is the --slow of the runs ("" when none).
	Slow   string  `json:"slow,omitempty"`
	Repeat int     `json:"repeat"`
	Level  float64 `json:"level"`
	// FailoverMS is absent when no run timed its failover (Result.FailoverMS).
	FailoverMS *stats.Interval `json:"failover_ms,omitempty"`
	// Baseline is the partitioner the others' throughput is compared with
	// run by run: the first one named.
	Baseline     string               `json:"baseline"`
	Partitioners []PartitionerSummary `json:"partitioners"`
	// Recommendation is over every run, with the margin's interval.
	Recommendation *Recommendation `json:"recommendation,omitempty"`
	Runs           []*Result       `json:"runs"`
}

// PartitionerSummary is one partitioner over the repetitions: counts are
// sums, figures are means with confidence intervals.
type PartitionerSummary struct {
	Name           string                   `json:"name"`
	Acked          int64                    `json:"acked"`
	Lost           int64                    `json:"lost"`
	Duplicates     int64                    `json:"duplicates"`
	NeverAcked     int64                    `json:"never_acked"`
	FirstSuccessMS stats.Interval           `json:"first_success_ms"`
	Phases         map[string]*PhaseSummary `json:"phases"`
}

// PhaseSummary is one phase over the repetitions.
type PhaseSummary struct {
	PerBroker      map[string]int64          `json:"per_broker"`
	MaxOverMean    stats.Interval            `json:"max_over_mean"`
	ThroughputMBps stats.Interval            `json:"throughput_mbps"`
	LatencyMS      map[string]stats.Interval `json:"latency_ms"`
	E2ELatencyMS   map[string]stats.Interval `json:"e2e_latency_ms"`
	// ViolationRate is judged on ViolationLatency (PhaseResult's), "e2e"
	// unless a run had no end-to-end latencies.
	ViolationRate    stats.Interval `json:"violation_rate"`
	ViolationLatency string         `json:"violation_latency"`
	TimelyMBps       stats.Interval `json:"timely_throughput_mbps"`
	// ThroughputRatio is the paired comparison with the first partitioner
	// named (Summary.Baseline): per run, this partitioner's throughput over
	// the baseline's in the same run, then the mean of those ratios. Pairing
	// cancels the drift between runs that dominates the plain intervals on
	// a shared machine.
	ThroughputRatio stats.Interval `json:"throughput_vs_baseline"`
	// MaxErrorPts is the largest difference between predicted and measured
	// shares, in percentage points (PhaseResult.MaxErrorPts), over the runs
	// that had a prediction.
	MaxErrorPts *stats.Interval `json:"max_error_pts,omitempty"`
}

// partitioner returns the named partitioner's result, or nil.
func (r *Result) partitioner(name string) *PartitionerResult {
	for i := range r.Partitioners {
		if r.Partitioners[i].Name == name {
			return &r.Partitioners[i]
		}
	}
	return nil
}

// Summarize combines repeated runs of the same experiment. Partitioners are
// matched by name (sequential repetitions rotate their order).
func Summarize(runs []*Result) (*Summary, error) {
	if len(runs) < 2 {
		return nil, fmt.Errorf("summary needs at least 2 runs, got %d", len(runs))
	}
	first := runs[0]
	s := &Summary{Schema: SummarySchema, Cluster: first.Cluster, Label: first.Label, Target: first.Target, KilledBroker: first.KilledBroker,
		Repeat: len(runs), Level: Level, Runs: runs}
	if first.Fault != nil {
		s.Fault = first.Fault.Fault
	}
	s.Slow = first.Slow
	if first.Recommendation != nil {
		s.Recommendation = Recommend(runs, first.Recommendation.Objective)
	}
	var fo []float64
	for _, r := range runs {
		if r.FailoverMS != nil && *r.FailoverMS >= 0 {
			fo = append(fo, *r.FailoverMS)
		}
	}
	if len(fo) > 0 {
		iv := ci(fo)
		s.FailoverMS = &iv
	}
	if len(first.Partitioners) > 0 {
		s.Baseline = first.Partitioners[0].Name
	}
	for _, p0 := range first.Partitioners {
		ps := PartitionerSummary{Name: p0.Name, Phases: map[string]*PhaseSummary{}}
		var first []float64
		for _, r := range runs {
			p := r.partitioner(p0.Name)
			if p == nil {
				continue
			}
			ps.Acked += p.Acked
			ps.Lost += p.Lost
			ps.Duplicates += p.Duplicates
			ps.NeverAcked += p.NeverAcked
			if p.FirstSuccessMS >= 0 {
				first = append(first, p.FirstSuccessMS)
			}
		}
		ps.FirstSuccessMS = ci(first)
		for _, ph := range MeasuredPhases {
			name := ph.String()
			var mom, tput, viol, timely, ratio, errPts []float64
			basis := LatencyE2E
			ran := false
			lat := map[string][]float64{}
			e2e := map[string][]float64{}
			per := map[string]int64{}
			for _, r := range runs {
				p := r.partitioner(p0.Name)
				if p == nil {
					continue
				}
				pr := p.Phases[name]
				if pr == nil {
					continue
				}
				ran = true
				for k, v := range pr.PerBroker {
					per[k] += v
				}
				if pr.MaxOverMean != nil {
					mom = append(mom, *pr.MaxOverMean)
				}
				if pr.MaxErrorPts != nil {
					errPts = append(errPts, *pr.MaxErrorPts)
				}
				tput = append(tput, pr.ThroughputMBps)
				viol = append(viol, pr.ViolationRate)
				if pr.ViolationLatency == LatencyProduce {
					basis = LatencyProduce
				}
				timely = append(timely, pr.TimelyThroughputMBps)
				if b := r.partitioner(s.Baseline); b != nil && b.Phases[name] != nil && b.Phases[name].ThroughputMBps > 0 {
					ratio = append(ratio, pr.ThroughputMBps/b.Phases[name].ThroughputMBps)
				}
				for k, v := range percentiles(pr.LatencyMS) {
					lat[k] = append(lat[k], v)
				}
				if pr.E2ELatencyMS.Count > 0 { // none: not measured, not 0 ms
					for k, v := range percentiles(pr.E2ELatencyMS) {
						e2e[k] = append(e2e[k], v)
					}
				}
			}
			if !ran {
				continue
			}
			phs := &PhaseSummary{PerBroker: per, MaxOverMean: ci(mom), ThroughputMBps: ci(tput), ViolationRate: ci(viol), ViolationLatency: basis,
				TimelyMBps: ci(timely), ThroughputRatio: ci(ratio), LatencyMS: map[string]stats.Interval{}, E2ELatencyMS: map[string]stats.Interval{}}
			if len(errPts) > 0 {
				iv := ci(errPts)
				phs.MaxErrorPts = &iv
			}
			for k, v := range lat {
				phs.LatencyMS[k] = ci(v)
			}
			for k, v := range e2e {
				phs.E2ELatencyMS[k] = ci(v)
			}
			ps.Phases[name] = phs
		}
		s.Partitioners = append(s.Partitioners, ps)
	}
	return s, nil
}

func percentiles(l stats.LatencySummary) map[string]float64 {
	return map[string]float64{"mean": l.Mean, "p50": l.P50, "p95": l.P95, "p99": l.P99, "p99_9": l.P999, "max": l.Max}
}

// ci is MeanCI at Level; with fewer than two samples it carries the mean
// (or nothing) and a zero half width.
func ci(xs []float64) stats.Interval {
	if iv, err := stats.MeanCI(xs, Level); err == nil {
		return iv
	}
	iv := stats.Interval{N: len(xs), Level: Level}
	if len(xs) == 1 {
		iv.Mean, iv.Low, iv.High = xs[0], xs[0], xs[0]
	}
	return iv
}
