package apply_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/errkind"
	"github.com/kplan-dev/kplan/internal/reassign/apply"
	"github.com/kplan-dev/kplan/internal/reassign/apply/applytest"
	"github.com/kplan-dev/kplan/internal/stats"
	"github.com/kplan-dev/kplan/internal/topology"
)

// script is a canary that returns, at each window, the next p99 of each
// broker (milliseconds), with samples samples; after the script, calm
// windows of 1 ms.
type script struct {
	samples int64
	p99     []map[int32]float64
	window  int
	started []int32
	err     error
}

func (s *script) Start(_ context.Context, brokers []int32) error {
	s.started = slices.Clone(brokers)
	return s.err
}

func (s *script) Window() map[int32]stats.LatencySummary {
	out := map[int32]stats.LatencySummary{}
	for _, b := range s.started {
		p := 1.0
		if s.window < len(s.p99) {
			if v, ok := s.p99[s.window][b]; ok {
				p = v
			}
		}
		out[b] = stats.LatencySummary{Count: s.samples, P50: p / 2, P99: p}
	}
	s.window++
	return out
}

func TestGuardRule(t *testing.T) {
	const mb = 1 << 20
	rule := apply.ThrottleRule{Objective: 100 * time.Millisecond, Min: 1 * mb, Max: 40 * mb, Period: 5 * time.Second}
	for _, tc := range []struct {
		name    string
		samples int64
		p99     []float64 // broker 1's p99 per window
		want    []int64   // broker 1's rate after each change
		reasons []string
	}{
		{"above the objective cuts at once, by half", 50, []float64{150}, []int64{5 * mb}, []string{"above the objective 100ms: cut"}},
		{"cuts stop at --min-throttle", 50, []float64{150, 150, 150, 150, 150}, []int64{5 * mb, 2.5 * mb, 1.25 * mb, 1 * mb}, nil},
		{"the hysteresis band holds", 50, []float64{80, 90, 99, 76}, nil, nil},
		{"a window far over the objective cuts deeper, to objective/p99", 50, []float64{300}, []int64{3495253}, nil},
		{"the deepest cut is a quarter", 50, []float64{1000}, []int64{2.5 * mb}, nil},
		{"two calm windows in a row raise by a quarter", 50, []float64{10, 10}, []int64{12.5 * mb}, []string{"p99 below 75 ms (75% of the objective) for 2 windows: raise"}},
		{"a window in the band resets the calm count", 50, []float64{10, 80, 10, 10}, []int64{12.5 * mb}, nil},
		{"raises stop at --max-throttle", 50, []float64{10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10},
			[]int64{13107200, 16384000, 20480000, 25600000, 32000000, 40000000, 40 * mb}, nil},
		{"too few samples hold", 19, []float64{500, 500, 500}, nil, nil},
		{"cut then raise", 50, []float64{200, 10, 10}, []int64{5 * mb, 6.25 * mb}, nil},
		{"raises after a cut stop at 90% of the rate that broke the objective, then probe above it after 6 calm windows", 50,
			[]float64{150, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10},
			[]int64{5 * mb, 6.25 * mb, 7.8125 * mb, 9437184, 11796480, 14745600},
			[]string{"cut", "raise", "raise", "up to 90% of the rate that last broke the objective", "probe above it", "raise"}},
		{"a failed probe goes back to the rate before it and doubles the wait for the next", 50,
			slices.Concat([]float64{150}, calm(12), []float64{150}, calm(12), []float64{150}),
			[]int64{5 * mb, 6.25 * mb, 7.8125 * mb, 9437184, 11796480, 9437184, 11796480, 9437184},
			[]string{"cut", "raise", "raise", "up to 90%", "probe above it", "after a probe: back to the rate before it; next probe after 12 calm windows",
				"probe above it", "next probe after 24 calm windows"}},
		{"a probe that earns a raise resets the wait", 50,
			slices.Concat([]float64{150}, calm(12), []float64{150}, calm(14)),
			[]int64{5 * mb, 6.25 * mb, 7.8125 * mb, 9437184, 11796480, 9437184, 11796480, 14745600},
			[]string{"cut", "raise", "raise", "up to 90%", "probe above it", "back to the rate before it", "probe above it", "for 2 windows: raise"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := &script{samples: tc.samples}
			for _, p := range tc.p99 {
				src.p99 = append(src.p99, map[int32]float64{1: p, 2: 80})
			}
			g := apply.NewGuard(rule, src)
			clk := applytest.NewClock()
			// Drive the guard through Execute's start with a plan that
			// never finishes, then window by window by hand.
			require.NoError(t, apply.StartGuardForTest(context.Background(), g, clk.Now(), []int32{1, 2}, 10*mb))
			var rates []int64
			var reasons []string
			for range tc.p99 {
				clk.T = clk.T.Add(5 * time.Second)
				changes := g.Adjust(clk.T)
				g.Commit(changes)
				for _, c := range changes {
					assert.Equal(t, int32(1), c.Broker, "broker 2 stays in the band: %+v", c)
					rates = append(rates, c.To)
					reasons = append(reasons, c.Reason)
				}
			}
			assert.Equal(t, tc.want, rates)
			for i, r := range tc.reasons {
				assert.Contains(t, reasons[i], r)
			}
			rep := g.Report()
			require.NotNil(t, rep)
			assert.Len(t, rep.Windows, 2*len(tc.p99), "one window per broker and period")
			if len(tc.want) > 0 {
				assert.Equal(t, tc.want[len(tc.want)-1], rep.Final[1])
			}
		})
	}
}

// calm is n calm windows (10 ms p99).
func calm(n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = 10
	}
	return out
}

func TestGuardWindowsNeedAPeriod(t *testing.T) {
	src := &script{samples: 50, p99: []map[int32]float64{{1: 500}}}
	g := apply.NewGuard(apply.ThrottleRule{Objective: 100 * time.Millisecond, Min: 1, Max: 100, Period: 5 * time.Second}, src)
	clk := applytest.NewClock()
	require.NoError(t, apply.StartGuardForTest(context.Background(), g, clk.Now(), []int32{1}, 50))
	assert.Empty(t, g.Adjust(clk.T.Add(4*time.Second)), "no window closes before a period")
	assert.Equal(t, 0, src.window)
	changes := g.Adjust(clk.T.Add(5 * time.Second))
	require.Len(t, changes, 1)
	assert.Equal(t, int64(12), changes[0].To, "p99 5x the objective: the deepest cut, a quarter")
}

func TestThrottleRuleValidate(t *testing.T) {
	ok := apply.ThrottleRule{Objective: time.Second, Min: 10, Max: 100}
	for _, tc := range []struct {
		name  string
		rule  apply.ThrottleRule
		start int64
		field string
	}{
		{"valid", ok, 50, ""},
		{"no objective", apply.ThrottleRule{Min: 10, Max: 100}, 50, "latency-objective"},
		{"no starting rate", ok, 0, "throttle"},
		{"min zero", apply.ThrottleRule{Objective: time.Second, Max: 100}, 50, "min-throttle"},
		{"max below min", apply.ThrottleRule{Objective: time.Second, Min: 10, Max: 5}, 50, "max-throttle"},
		{"start above max", ok, 500, "throttle"},
		{"start below min", ok, 5, "throttle"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.rule.Validate(tc.start)
			if tc.field == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Equal(t, errkind.Usage, errkind.KindOf(err))
			assert.Equal(t, tc.field, errkind.FieldOf(err))
		})
	}
}

// TestExecuteAdaptsTheThrottle runs a plan on the in-memory cluster with a
// canary whose p99 on broker 4 is over the objective, then calm: Execute
// starts the canary on the throttled brokers, cuts broker 4's rate, raises
// it again, and removes the throttle at the end.
func TestExecuteAdaptsTheThrottle(t *testing.T) {
	var parts, plan []topology.Partition
	for p := range int32(9) {
		a, b := p%3+1, (p+1)%3+1
		parts = append(parts, applytest.Part("t", p, a, b))
		plan = append(plan, applytest.Move("t", p, a, 4))
	}
	adm := applytest.New([]int32{1, 2, 3, 4}, parts...)
	adm.FinishPerPoll = 1
	clk := applytest.NewClock()
	src := &script{samples: 100, p99: []map[int32]float64{{4: 900}, {4: 10}, {4: 10}}}
	g := apply.NewGuard(apply.ThrottleRule{Objective: 200 * time.Millisecond, Min: 1000, Max: 1_000_000, Period: 2 * time.Second}, src)
	var events []apply.Event
	res, err := apply.Execute(context.Background(), adm, plan, apply.Options{
		Throttle: 100_000, Lab: true, Clock: clk, Poll: 2 * time.Second, Guard: g, NoElect: true,
		Limits: apply.Limits{PerBroker: 1},
		Progress: func(e apply.Event) {
			if e.Kind == apply.EventThrottle {
				events = append(events, e)
			}
		},
	})
	require.NoError(t, err)
	assert.Equal(t, apply.Done, res.Outcome)
	assert.Equal(t, []int32{1, 2, 3, 4}, src.started, "one canary probe on every throttled broker")
	// Broker 4's rate: cut after the first window, raised after the
	// next two calm ones; brokers 1-3, calm from the start, are raised.
	var four []int64
	for _, e := range events {
		for _, c := range e.Changes {
			if c.Broker == 4 {
				four = append(four, c.To)
			} else {
				assert.Greater(t, c.To, c.From, "calm brokers are only raised: %+v", c)
			}
		}
	}
	require.GreaterOrEqual(t, len(four), 2)
	assert.Equal(t, []int64{25_000, 31_250}, four[:2], "p99 4.5x the objective: a quarter; then a quarter more")
	assert.Contains(t, events[0].Changes[0].Reason, "cut")
	assert.Contains(t, adm.Calls, "SetBrokerRates 4=25000", "the cut reached the cluster")
	assert.True(t, strings.HasPrefix(adm.Calls[len(adm.Calls)-1], "ClearThrottle [1 2 3 4]"), "the throttle is removed at the end: %v", adm.Calls)
	rep := g.Report()
	require.NotNil(t, rep)
	assert.Equal(t, four[len(four)-1], rep.Final[4])
}

func TestExecuteGuardFailures(t *testing.T) {
	plan := []topology.Partition{applytest.Move("t", 0, 1, 3)}
	t.Run("a canary that cannot start changes nothing", func(t *testing.T) {
		adm := applytest.New([]int32{1, 2, 3}, applytest.Part("t", 0, 1, 2))
		src := &script{err: errors.New("no room")}
		g := apply.NewGuard(apply.ThrottleRule{Objective: time.Second, Min: 1, Max: 100}, src)
		_, err := apply.Execute(context.Background(), adm, plan, apply.Options{Throttle: 50, Lab: true, Clock: applytest.NewClock(), Guard: g})
		require.ErrorContains(t, err, "starting the canary: no room")
		assert.Empty(t, adm.Calls, "no throttle, no move")
	})
	t.Run("a failed rate change stops the wait, the moves go on", func(t *testing.T) {
		adm := applytest.New([]int32{1, 2, 3}, applytest.Part("t", 0, 1, 2))
		adm.Errs["SetBrokerRates"] = errors.New("denied")
		src := &script{samples: 100, p99: []map[int32]float64{{1: 5000}}}
		g := apply.NewGuard(apply.ThrottleRule{Objective: time.Second, Min: 1, Max: 100, Period: time.Second}, src)
		_, err := apply.Execute(context.Background(), adm, plan, apply.Options{Throttle: 50, Lab: true, Clock: applytest.NewClock(), Guard: g})
		require.ErrorIs(t, err, apply.ErrNotDone)
		assert.ErrorContains(t, err, "adapting the replication throttle")
	})
}
