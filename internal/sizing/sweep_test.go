package sizing

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var allStrategies = []Strategy{StrategyBroMin, StrategyBroMax, StrategyMSCNFL}

func setConsumers(in *Input, v int64) { in.Consumers = v }

func TestSweepConsumers(t *testing.T) {
	in := prototype(3)
	vals := []int64{40, 100, 200, 213, 214}
	pts, err := Sweep(in, setConsumers, vals, SweepOptions{Strategies: allStrategies, Draws: 100, Seed: 1})
	require.NoError(t, err)
	require.Len(t, pts, 5)
	for i, p := range pts {
		require.Len(t, p.Results, 3)
		assert.Equal(t, vals[i], p.Value)
		assert.Equal(t, StrategyMSCNFL, p.Results[2].Strategy)
		require.NotNil(t, p.Results[2].FeasibleRate)
		assert.Nil(t, p.Results[2].MSCNFL, "the distribution only when asked")
		assert.Nil(t, p.Results[0].Constraints, "the checks only when asked")
	}
	assert.True(t, pts[3].Results[1].Feasible, "213 consumers fit exactly")
	assert.False(t, pts[4].Results[1].Feasible, "214 do not")
	assert.Equal(t, ReplicationLatency, pts[4].Results[1].Binding, "an infeasible point names the constraint that cannot be met")
	assert.Equal(t, int64(16), pts[3].Results[0].Brokers)

	_, err = Sweep(in, func(in *Input, v int64) { in.ReplicationFactor = v }, []int64{3, 17}, SweepOptions{Strategies: allStrategies[:2]})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "at 17")
	assert.Contains(t, err.Error(), FieldReplicationFactor)
}

// TestSweepSelectsStrategies is the regression test for sweeps always running
// MS-CNFL: a sweep solves the strategies asked, in the order asked.
func TestSweepSelectsStrategies(t *testing.T) {
	tests := []struct {
		name string
		sel  []Strategy
	}{
		{"bromin", []Strategy{StrategyBroMin}},
		{"bromax", []Strategy{StrategyBroMax}},
		{"both", []Strategy{StrategyBroMin, StrategyBroMax}},
		{"ms-cnfl", []Strategy{StrategyMSCNFL}},
		{"all", allStrategies},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pts, err := Sweep(prototype(3), setConsumers, []int64{40, 214}, SweepOptions{Strategies: tt.sel, Draws: 10, Seed: 1})
			require.NoError(t, err)
			for _, p := range pts {
				var got []Strategy
				for _, r := range p.Results {
					got = append(got, r.Strategy)
					assert.Equal(t, r.Strategy == StrategyMSCNFL, r.FeasibleRate != nil, "feasible_rate only for ms-cnfl")
				}
				assert.Equal(t, tt.sel, got)
			}
		})
	}
}

// TestSweepMatchesSolve: the sweep's compact results carry exactly Solve's
// numbers (and, with Constraints, its checks) on random inputs, feasible or
// not, so the fast path changes no figure.
func TestSweepMatchesSolve(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	feasible, infeasible := 0, 0
	for range 3000 {
		in := randomInput(rng)
		if in.Validate() != nil {
			continue
		}
		pts, err := Sweep(in, setConsumers, []int64{in.Consumers}, SweepOptions{Strategies: allStrategies, Draws: 20, Seed: 3, Constraints: true})
		require.NoError(t, err)
		for _, r := range pts[0].Results {
			var want Result
			if r.Strategy == StrategyMSCNFL {
				want = SolveMSCNFL(in, 20, 3)
				assert.Equal(t, want.MSCNFL, r.MSCNFL)
				assert.Equal(t, want.MSCNFL.FeasibleRate, *r.FeasibleRate)
			} else {
				want = Solve(in, r.Strategy)
				if want.Feasible {
					feasible++
				} else {
					infeasible++
				}
			}
			require.Equal(t, want.Feasible, r.Feasible, "%+v %s", in, r.Strategy)
			assert.Equal(t, want.Partitions, r.Partitions)
			assert.Equal(t, want.Brokers, r.Brokers)
			assert.Equal(t, want.Binding, r.Binding)
			assert.Equal(t, want.Constraints, r.Constraints)
			assert.Equal(t, want.Constraints[OSLoad].Value, r.ReplicasPerBroker)
			assert.Equal(t, want.Constraints[ReplicationLatency].Value, r.ReplicationLatencyMs)
			assert.Equal(t, want.Constraints[Unavailability].Value, r.UnavailabilityMs)
		}
	}
	assert.Positive(t, feasible)
	assert.Positive(t, infeasible)
}

// sweepBench is the 100,000-point sweep of docs/BENCHMARKS.md: the
// prototype with B = 60, c = 1..2000 repeated.
func sweepBench(b *testing.B, opt SweepOptions) {
	in := prototype(3)
	in.MaxBrokers = 60
	vals := make([]int64, 100_000)
	for i := range vals {
		vals[i] = int64(1 + i%2000)
	}
	for b.Loop() {
		if _, err := Sweep(in, setConsumers, vals, opt); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSweep100k(b *testing.B) {
	b.Run("bromin+bromax", func(b *testing.B) {
		sweepBench(b, SweepOptions{Strategies: allStrategies[:2]})
	})
	b.Run("bromin+bromax+constraints", func(b *testing.B) {
		sweepBench(b, SweepOptions{Strategies: allStrategies[:2], Constraints: true})
	})
}
