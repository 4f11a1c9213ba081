package sizing

import (
	"math/rand/v2"
	"slices"
)

// Distribution summarises integer draws.
type Distribution struct {
	Min  int64   `json:"min"`
	P50  int64   `json:"p50"`
	Mean float64 `json:"mean"`
	Max  int64   `json:"max"`
}

func distribution(v []int64) Distribution {
	if len(v) == 0 {
		return Distribution{}
	}
	s := slices.Clone(v)
	slices.Sort(s)
	var sum float64
	for _, x := range s {
		sum += float64(x)
	}
	return Distribution{Min: s[0], P50: s[(len(s)-1)/2], Mean: round6(sum / float64(len(s))), Max: s[len(s)-1]}
}

// MSCNFLResult is the baseline's behaviour over many draws.
type MSCNFLResult struct {
	Draws      int          `json:"draws"`
	Seed       uint64       `json:"seed"`
	Partitions Distribution `json:"partitions"`
	Brokers    Distribution `json:"brokers"`
	// FeasibleRate is the share of draws meeting every constraint.
	FeasibleRate float64 `json:"feasible_rate"`
	// ViolationRate is, per constraint, the share of draws violating it.
	ViolationRate map[Constraint]float64 `json:"violation_rate"`
}

// MSCNFL draws the Microsoft/Confluent rule of thumb (paper section 3.4):
// P = min(U[1 .. 1000*B/r], U[1 .. 100*B]), b = U[1 .. B], K times, and
// reports how often each constraint is violated. rng is injected.
func MSCNFL(in Input, draws int, seed uint64) MSCNFLResult {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	res := MSCNFLResult{Draws: draws, Seed: seed, ViolationRate: map[Constraint]float64{}}
	ps, bs := make([]int64, draws), make([]int64, draws)
	viol := map[Constraint]int{}
	ok := 0
	a := max(1, 1000*in.MaxBrokers/in.ReplicationFactor)
	c := 100 * in.MaxBrokers
	for i := range draws {
		p := min(1+rng.Int64N(a), 1+rng.Int64N(c))
		b := 1 + rng.Int64N(in.MaxBrokers)
		ps[i], bs[i] = p, b
		all := true
		for name, ch := range checks(in, p, b, "") {
			if !ch.Satisfied {
				viol[name]++
				all = false
			}
		}
		if all {
			ok++
		}
	}
	for _, name := range []Constraint{Throughput, OSLoad, ReplicationLatency, Unavailability, Brokers} {
		res.ViolationRate[name] = round6(float64(viol[name]) / float64(max(draws, 1)))
	}
	res.FeasibleRate = round6(float64(ok) / float64(max(draws, 1)))
	res.Partitions, res.Brokers = distribution(ps), distribution(bs)
	return res
}
