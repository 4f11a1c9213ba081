package sizing

import "fmt"

// Point is one value of a sweep with each strategy's result.
type Point struct {
	Value   int64    `json:"value"`
	Results []Result `json:"results"`
}

// Setter writes a swept value into an Input.
type Setter func(*Input, int64)

// Sweep solves BroMin, BroMax and (when draws > 0) MS-CNFL for each value.
// Inputs a value makes invalid (e.g. r > B) are reported as an error naming
// the value.
func Sweep(base Input, set Setter, values []int64, draws int, seed uint64) ([]Point, error) {
	out := make([]Point, 0, len(values))
	for _, v := range values {
		in := base
		set(&in, v)
		if err := in.Validate(); err != nil {
			return nil, fmt.Errorf("at %d: %w", v, err)
		}
		p := Point{Value: v, Results: []Result{Solve(in, StrategyBroMin), Solve(in, StrategyBroMax)}}
		for i := range p.Results {
			p.Results[i].Fixes = nil // a sweep shows where it turns infeasible, not how to fix each point
		}
		if draws > 0 {
			p.Results = append(p.Results, SolveMSCNFL(in, draws, seed))
		}
		out = append(out, p)
	}
	return out, nil
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
