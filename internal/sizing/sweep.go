package sizing

import "fmt"

// Point is one value of a sweep with each selected strategy's result.
type Point struct {
	Value   int64         `json:"value"`
	Results []SweepResult `json:"results"`
}

// SweepResult is one strategy's answer at one point of a sweep: P, b and the
// three loads the paper's Figs 2-4 plot. It is the compact form of a Result:
// a sweep shows where a strategy turns infeasible, not how to fix each point,
// so it carries no fixes, and the full constraint checks only when asked
// (SweepOptions.Constraints).
type SweepResult struct {
	Strategy Strategy `json:"strategy"`
	Feasible bool     `json:"feasible"`
	// Partitions and Brokers are the answer (0 when infeasible); for ms-cnfl
	// the medians of the draws.
	Partitions int64 `json:"partitions"`
	Brokers    int64 `json:"brokers"`
	// Binding is the constraint that set P, or the one that cannot be met
	// (empty for ms-cnfl).
	Binding Constraint `json:"binding"`
	// The loads at (P, b), or, when infeasible, at the minimum P on all B
	// brokers, as in Result.Constraints: P*r/b, P*r*l_r/b and P*u/b.
	ReplicasPerBroker    float64 `json:"replicas_per_broker"`
	ReplicationLatencyMs float64 `json:"replication_latency_ms"`
	UnavailabilityMs     float64 `json:"unavailability_ms"`
	// FeasibleRate is the share of ms-cnfl draws meeting every constraint
	// (ms-cnfl only).
	FeasibleRate *float64 `json:"feasible_rate,omitempty"`
	// Constraints is every constraint's check, as in Result (only with
	// SweepOptions.Constraints).
	Constraints map[Constraint]Check `json:"constraints,omitempty"`
	// MSCNFL is the baseline's full distribution (ms-cnfl only, and only
	// with SweepOptions.Constraints).
	MSCNFL *MSCNFLResult `json:"ms_cnfl,omitempty"`
}

// SweepOptions says what a sweep solves at each point.
type SweepOptions struct {
	// Strategies are solved in this order at every point. StrategyMSCNFL
	// costs Draws random draws per point; BroMin and BroMax are closed forms.
	Strategies []Strategy
	Draws      int
	Seed       uint64
	// Constraints keeps every constraint's check (and ms-cnfl's
	// distribution) in each result, at about ten times the output.
	Constraints bool
}

// Setter writes a swept value into an Input.
type Setter func(*Input, int64)

// Sweep solves the selected strategies for each value. Inputs a value makes
// invalid (e.g. r > B) are reported as an error naming the value.
func Sweep(base Input, set Setter, values []int64, opt SweepOptions) ([]Point, error) {
	out := make([]Point, len(values))
	// One backing array for every result: a 100,000-point sweep allocates
	// once, not once per point.
	all := make([]SweepResult, len(values)*len(opt.Strategies))
	for i, v := range values {
		in := base
		set(&in, v)
		if err := in.Validate(); err != nil {
			return nil, fmt.Errorf("at %d: %w", v, err)
		}
		rs := all[i*len(opt.Strategies) : (i+1)*len(opt.Strategies) : (i+1)*len(opt.Strategies)]
		for j, s := range opt.Strategies {
			rs[j] = sweepSolve(in, s, opt)
		}
		out[i] = Point{Value: v, Results: rs}
	}
	return out, nil
}

// sweepSolve is Solve (or SolveMSCNFL) without the fixes of an infeasible
// answer, which cost dozens of solves each, and without the checks map
// unless asked. Its numbers equal Solve's (TestSweepMatchesSolve).
func sweepSolve(in Input, s Strategy, opt SweepOptions) SweepResult {
	if s == StrategyMSCNFL {
		full := SolveMSCNFL(in, opt.Draws, opt.Seed)
		r := SweepResult{Strategy: s, Feasible: full.Feasible, Partitions: full.Partitions, Brokers: full.Brokers, Binding: full.Binding}
		r.setLoads(in, full.Partitions, full.Brokers)
		rate := full.MSCNFL.FeasibleRate
		r.FeasibleRate = &rate
		if opt.Constraints {
			r.Constraints, r.MSCNFL = full.Constraints, full.MSCNFL
		}
		return r
	}
	var sol Solution
	if s == StrategyBroMin {
		sol = BroMin(in)
	} else {
		sol = BroMax(in)
	}
	r := SweepResult{Strategy: s, Feasible: sol.Feasible, Partitions: sol.Partitions, Brokers: sol.Brokers}
	p, b := sol.Partitions, sol.Brokers
	var binding Constraint // Explain marks no check binding when infeasible
	if sol.Feasible {
		_, r.Binding = in.PMax(b)
		binding = r.Binding
	} else {
		// As Explain: the loads the minimum P would put on all B brokers.
		p, b = in.MinPartitions(), in.MaxBrokers
		r.Binding = infeasibleBinding(in, p)
	}
	r.setLoads(in, p, b)
	if opt.Constraints {
		r.Constraints = checks(in, p, b, binding)
	}
	return r
}

func (r *SweepResult) setLoads(in Input, p, b int64) {
	l := loads(in, p, b)
	r.ReplicasPerBroker = round6(l.replicasPerBroker)
	r.ReplicationLatencyMs = round6(l.replicationLatencyMs)
	r.UnavailabilityMs = round6(l.unavailabilityMs)
}

// SolveMSCNFL runs the MS-CNFL baseline and reports it as a Result: P and b
// are the medians of the draws, constraints are checked at those medians,
// and MSCNFL holds the full distribution and violation rates.
func SolveMSCNFL(in Input, draws int, seed uint64) Result {
	m := MSCNFL(in, draws, seed)
	p, b := m.Partitions.P50, m.Brokers.P50
	res := Result{Strategy: StrategyMSCNFL, Partitions: p, Brokers: b, MinPartitions: in.MinPartitions(), MSCNFL: &m}
	res.Constraints = checks(in, p, b, "")
	res.Feasible = true
	for _, c := range res.Constraints {
		res.Feasible = res.Feasible && c.Satisfied
	}
	if b > 0 {
		res.PartitionsPerBroker = round6(float64(p) / float64(b))
	}
	return res
}
