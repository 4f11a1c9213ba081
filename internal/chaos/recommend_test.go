package chaos

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/errkind"
	"github.com/kplan-dev/kplan/internal/stats"
)

// fig is one partitioner's figures in one phase of a made-up run.
type fig struct {
	mbps, p99, timely float64
}

// runOf builds a run whose partitioners have figs per phase, in the order
// of names.
func runOf(names []string, phases map[Phase][]fig) *Result {
	res := &Result{}
	for i, n := range names {
		p := PartitionerResult{Name: n, Phases: map[string]*PhaseResult{}}
		for ph, figs := range phases {
			f := figs[i]
			p.Phases[ph.String()] = &PhaseResult{Acked: 1000, ThroughputMBps: f.mbps, TimelyThroughputMBps: f.timely, LatencyMS: stats.LatencySummary{P99: f.p99}}
		}
		res.Partitioners = append(res.Partitioners, p)
	}
	return res
}

func TestRecommend(t *testing.T) {
	names := []string{"default", "node", "sqf"}
	slow := map[Phase][]fig{
		PhaseBefore: {{10, 50, 9}, {9.5, 60, 9}, {9, 55, 8.5}},
		PhaseFault:  {{2, 900, 1}, {5, 400, 3}, {8, 120, 6}},
	}
	tests := []struct {
		name     string
		runs     []*Result
		by       RecommendBy
		phase    string
		pick     string
		runnerUp string
		margin   float64
		atRest   float64 // NaN: none
		atBest   string
	}{
		{"throughput under a slow broker", []*Result{runOf(names, slow)}, ByThroughput, "fault", "sqf", "node", 8.0 / 5, 9.0 / 10, "default"},
		{"the default objective is throughput", []*Result{runOf(names, slow)}, "", "fault", "sqf", "node", 8.0 / 5, 9.0 / 10, "default"},
		{"p99: the lowest, margin the runner-up's over its own", []*Result{runOf(names, slow)}, ByP99, "fault", "sqf", "node", 400.0 / 120, 50.0 / 55, "default"},
		{"timely", []*Result{runOf(names, slow)}, ByTimely, "fault", "sqf", "node", 6.0 / 3, 8.5 / 9, "default"},
		{"after a kill", []*Result{runOf(names, map[Phase][]fig{
			PhaseBefore: {{10, 50, 9}, {10, 50, 9}, {10, 50, 9}},
			PhaseAfter:  {{6, 80, 5}, {7, 70, 6}, {6.5, 75, 5}},
		})}, ByThroughput, "after", "node", "sqf", 7 / 6.5, 1, "default"},
		{"steady state: no cost at rest", []*Result{runOf(names, map[Phase][]fig{
			PhaseBefore: {{10, 50, 9}, {11, 50, 9}, {10.5, 50, 9}},
		})}, ByThroughput, "before", "node", "sqf", 11 / 10.5, math.NaN(), ""},
		{"ties keep the order they ran in", []*Result{runOf(names, map[Phase][]fig{
			PhaseBefore: {{10, 50, 9}, {10, 50, 9}, {10, 50, 9}},
		})}, ByThroughput, "before", "default", "node", 1, math.NaN(), ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := Recommend(tc.runs, tc.by)
			require.NotNil(t, rec)
			assert.Equal(t, tc.phase, rec.Phase)
			assert.Equal(t, tc.pick, rec.Partitioner)
			assert.Equal(t, tc.runnerUp, rec.RunnerUp)
			assert.InDelta(t, tc.margin, rec.Margin, 1e-9)
			assert.Nil(t, rec.MarginCI, "one run: no interval")
			assert.False(t, rec.Clear, "one run: no clear lead")
			assert.Equal(t, 1, rec.Runs)
			if math.IsNaN(tc.atRest) {
				assert.Nil(t, rec.AtRest)
			} else {
				require.NotNil(t, rec.AtRest)
				assert.InDelta(t, tc.atRest, *rec.AtRest, 1e-9)
				assert.Equal(t, tc.atBest, rec.AtRestBest)
			}
			assert.Contains(t, rec.Reason, tc.pick+" has the best")
		})
	}
}

// TestRecommendRepeat: over repeated runs the pick is the best mean, the
// margin the mean of the per-run ratios with its 95% interval, and the lead
// clear only when the interval lies above 1.
func TestRecommendRepeat(t *testing.T) {
	names := []string{"default", "sqf"}
	run := func(def, sqf float64) *Result {
		return runOf(names, map[Phase][]fig{PhaseBefore: {{10, 1, 1}, {10, 1, 1}}, PhaseFault: {{def, 1, 1}, {sqf, 1, 1}}})
	}
	clear := Recommend([]*Result{run(4, 8), run(5, 9), run(4.5, 8.8)}, ByThroughput)
	require.NotNil(t, clear)
	assert.Equal(t, "sqf", clear.Partitioner)
	ratios := []float64{8.0 / 4, 9.0 / 5, 8.8 / 4.5}
	want, err := stats.MeanCI(ratios, RecommendLevel)
	require.NoError(t, err)
	require.NotNil(t, clear.MarginCI)
	assert.InDelta(t, want.Mean, clear.Margin, 1e-12)
	assert.InDelta(t, want.Low, clear.MarginCI.Low, 1e-12)
	assert.InDelta(t, want.High, clear.MarginCI.High, 1e-12)
	assert.True(t, clear.Clear)
	assert.Equal(t, 3, clear.Runs)
	assert.InDelta(t, (8+9+8.8)/3.0, clear.Value, 1e-12, "the mean over the runs")

	noise := Recommend([]*Result{run(5, 6), run(6, 5), run(5, 5.5)}, ByThroughput)
	require.NotNil(t, noise)
	require.NotNil(t, noise.MarginCI)
	assert.False(t, noise.Clear, "the interval reaches below 1")
	assert.Contains(t, noise.Reason, "not a clear lead")
}

func TestRecommendNone(t *testing.T) {
	assert.Nil(t, Recommend(nil, ByThroughput))
	empty := runOf([]string{"sqf"}, map[Phase][]fig{PhaseBefore: {{0, 0, 0}}})
	empty.Partitioners[0].Phases["before"].Acked = 0
	assert.Nil(t, Recommend([]*Result{empty}, ByThroughput), "nothing acknowledged")

	one := Recommend([]*Result{runOf([]string{"sqf"}, map[Phase][]fig{PhaseBefore: {{3, 1, 1}}})}, ByP99)
	require.NotNil(t, one)
	assert.Equal(t, "sqf", one.Partitioner)
	assert.Empty(t, one.RunnerUp)
	assert.Zero(t, one.Margin)
	assert.Contains(t, one.Reason, "the only partitioner")
}

// TestRecommendIsBestMean: against brute force on random runs, the pick
// has the best mean figure of the judged phase, the runner-up the next, and
// the single-run margin is at least 1.
func TestRecommendIsBestMean(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	names := []string{"a", "b", "c", "d"}
	for range 200 {
		nRuns := 1 + rng.IntN(4)
		var runs []*Result
		for range nRuns {
			figs := make([]fig, len(names))
			for i := range figs {
				figs[i] = fig{mbps: rng.Float64() * 100, p99: 1 + rng.Float64()*1000, timely: rng.Float64() * 50}
			}
			runs = append(runs, runOf(names, map[Phase][]fig{PhaseFault: figs}))
		}
		for _, by := range []RecommendBy{ByThroughput, ByP99, ByTimely} {
			rec := Recommend(runs, by)
			require.NotNil(t, rec)
			_, higher, of := by.metric()
			mean := map[string]float64{}
			for _, r := range runs {
				for _, p := range r.Partitioners {
					mean[p.Name] += of(p.Phases["fault"]) / float64(nRuns)
				}
			}
			for _, n := range names {
				if higher {
					assert.GreaterOrEqual(t, mean[rec.Partitioner], mean[n]-1e-9)
				} else {
					assert.LessOrEqual(t, mean[rec.Partitioner], mean[n]+1e-9)
				}
				if n != rec.Partitioner && higher {
					assert.GreaterOrEqual(t, mean[rec.RunnerUp], mean[n]-1e-9)
				} else if n != rec.Partitioner {
					assert.LessOrEqual(t, mean[rec.RunnerUp], mean[n]+1e-9)
				}
			}
			if nRuns == 1 {
				assert.GreaterOrEqual(t, rec.Margin, 1.0)
			}
		}
	}
}

func TestParseRecommendBy(t *testing.T) {
	for in, want := range map[string]RecommendBy{"": ByThroughput, "throughput": ByThroughput, "p99": ByP99, "timely": ByTimely} {
		got, err := ParseRecommendBy(in)
		require.NoError(t, err)
		assert.Equal(t, want, got)
	}
	_, err := ParseRecommendBy("latency")
	require.Error(t, err)
	assert.Equal(t, errkind.Usage, errkind.KindOf(err))
	assert.Equal(t, FieldObjective, errkind.FieldOf(err))
}
