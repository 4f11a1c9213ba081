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
	// Raises set at once: TestGuardRamp has the ramps.
	rule := apply.ThrottleRule{Objective: 100 * time.Millisecond, Min: 1 * mb, Max: 40 * mb, Period: 5 * time.Second, Ramp: -1}
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
			first, err := apply.StartGuardForTest(context.Background(), g, clk.Now(), []int32{1, 2}, 10*mb)
			require.NoError(t, err)
			require.Equal(t, int64(10*mb), first, "no ramp: the start's rate at once")
			var rates []int64
			var reasons []string
			for range tc.p99 {
				clk.T = clk.T.Add(5 * time.Second)
				changes := g.Adjust(clk.T)
				g.Commit(changes)
				g.Applied(g.Pending(clk.T))
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

// TestGuardRamp: the guard starts at --min-throttle and ramps to the
// starting rate over Ramp, one step a poll; a raise ramps the same way and
// the calm windows during a ramp do not count toward the next raise; a
// window over the objective during a ramp cuts at once from the rate set
// then, which ends the ramp.
func TestGuardRamp(t *testing.T) {
	const mb = 1 << 20
	rule := apply.ThrottleRule{Objective: 100 * time.Millisecond, Min: 1 * mb, Max: 40 * mb, Period: 2 * time.Second, Ramp: 10 * time.Second}
	// Broker 1's p99 per 2 s window: calm (10 ms) but for the window that
	// ends at 32 s, over the objective.
	p99 := calm(30)
	p99[15] = 150
	src := &script{samples: 50}
	for _, p := range p99 {
		src.p99 = append(src.p99, map[int32]float64{1: p, 2: 80})
	}
	g := apply.NewGuard(rule, src)
	clk := applytest.NewClock()
	t0 := clk.Now()
	first, err := apply.StartGuardForTest(context.Background(), g, t0, []int32{1, 2}, 6*mb)
	require.NoError(t, err)
	require.Equal(t, int64(1*mb), first, "the guard starts at --min-throttle")
	set := map[int32][]int64{} // per broker, each rate set, in order
	var raises, cuts []time.Duration
	for range 60 { // 60 polls of 1 s
		clk.T = clk.T.Add(time.Second)
		changes := g.Adjust(clk.T)
		g.Commit(changes)
		for _, c := range changes {
			require.Equal(t, int32(1), c.Broker, "broker 2 stays in the band")
			if c.To > c.From {
				raises = append(raises, clk.T.Sub(t0))
			} else {
				cuts = append(cuts, clk.T.Sub(t0))
			}
		}
		p := g.Pending(clk.T)
		for b, r := range p {
			set[b] = append(set[b], r)
		}
		g.Applied(p)
	}
	// The start's ramp, for both brokers: 1 MB/s to 6 MB/s in ten
	// steps of 0.5 MB/s, one a second.
	for _, b := range []int32{1, 2} {
		require.GreaterOrEqual(t, len(set[b]), 10, "broker %d", b)
		assert.Equal(t, []int64{1.5 * mb, 2 * mb, 2.5 * mb, 3 * mb, 3.5 * mb, 4 * mb, 4.5 * mb, 5 * mb, 5.5 * mb, 6 * mb}, set[b][:10], "broker %d", b)
	}
	assert.Len(t, set[2], 10, "broker 2, in the band, only ramps at the start")
	// Broker 1's first raise waits for the ramp's end (10 s) and then two
	// calm windows (14 s); the next for that ramp and two more (28 s).
	require.Len(t, raises, 4)
	assert.Equal(t, 14*time.Second, raises[0])
	assert.Equal(t, 28*time.Second, raises[1])
	// The window over the objective (32 s) falls in the second raise's
	// ramp: a cut at once, from the rate set then, below the raise's.
	require.Equal(t, []time.Duration{32 * time.Second}, cuts)
	rep := g.Report()
	var cut apply.RateChange
	for _, c := range rep.Changes {
		if c.To < c.From {
			cut = c
		}
	}
	assert.Less(t, cut.From, int64(float64(6*mb)*1.25*1.25), "the cut starts from the ramp's rate, not the raise's")
	assert.Equal(t, cut.From/2, cut.To)
	// Rates only rise by ramp steps, a tenth of a raise each: none above
	// the start's 0.5 MB/s.
	prev := int64(1 * mb)
	for _, r := range set[1] {
		if r > prev {
			assert.LessOrEqual(t, r-prev, int64(0.5*mb), "step from %d to %d", prev, r)
		}
		prev = r
	}
	// After the cut, calm windows raise again, ramped: two calm windows
	// after the cut (36 s), and two after that raise's ramp (50 s).
	assert.Equal(t, []time.Duration{36 * time.Second, 50 * time.Second}, raises[2:])
	assert.Equal(t, rep.Final[1], set[1][len(set[1])-1])
}

// TestGuardRampCutAtMin: a window over the objective while the start's
// ramp is at --min-throttle ends the ramp though the rate stays.
func TestGuardRampCutAtMin(t *testing.T) {
	src := &script{samples: 50, p99: []map[int32]float64{{1: 500}}}
	g := apply.NewGuard(apply.ThrottleRule{Objective: 100 * time.Millisecond, Min: 10, Max: 100, Period: time.Second, Ramp: 10 * time.Second}, src)
	clk := applytest.NewClock()
	first, err := apply.StartGuardForTest(context.Background(), g, clk.Now(), []int32{1}, 50)
	require.NoError(t, err)
	require.Equal(t, int64(10), first)
	clk.T = clk.T.Add(time.Second)
	changes := g.Adjust(clk.T)
	assert.Empty(t, changes, "the cut leaves the rate at --min-throttle: no change")
	g.Commit(changes)
	for range 20 {
		clk.T = clk.T.Add(time.Second)
		assert.Empty(t, g.Pending(clk.T), "no ramp after the cut")
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
	g := apply.NewGuard(apply.ThrottleRule{Objective: 100 * time.Millisecond, Min: 1, Max: 100, Period: 5 * time.Second, Ramp: -1}, src)
	clk := applytest.NewClock()
	_, err := apply.StartGuardForTest(context.Background(), g, clk.Now(), []int32{1}, 50)
	require.NoError(t, err)
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
	// Raises at once here; TestExecuteRampsTheThrottle has the ramps.
	g := apply.NewGuard(apply.ThrottleRule{Objective: 200 * time.Millisecond, Min: 1000, Max: 1_000_000, Period: 2 * time.Second, Ramp: -1}, src)
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

// TestExecuteRampsTheThrottle: with the default ramp, Execute sets the
// throttle at --min-throttle first and then raises it poll by poll to the
// starting rate, which no throttle change reports (the ramp is not a
// decision of the rule).
func TestExecuteRampsTheThrottle(t *testing.T) {
	var parts, plan []topology.Partition
	for p := range int32(12) {
		parts = append(parts, applytest.Part("t", p, 1, 2))
		plan = append(plan, applytest.Move("t", p, 1, 3))
	}
	adm := applytest.New([]int32{1, 2, 3}, parts...)
	adm.FinishPerPoll = 1
	src := &script{samples: 100, p99: []map[int32]float64{{1: 150}, {1: 150}, {1: 150}, {1: 150}, {1: 150}, {1: 150}}} // in the band
	g := apply.NewGuard(apply.ThrottleRule{Objective: 200 * time.Millisecond, Min: 1000, Max: 1_000_000, Period: 2 * time.Second}, src)
	var changes int
	_, err := apply.Execute(context.Background(), adm, plan, apply.Options{
		Throttle: 11_000, Lab: true, Clock: applytest.NewClock(), Poll: time.Second, Guard: g, NoElect: true,
		Limits:   apply.Limits{PerBroker: 1},
		Progress: func(e apply.Event) { changes += len(e.Changes) },
	})
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(adm.Calls[0], "SetThrottle 1000 [1 2 3]"), "the throttle starts at --min-throttle: %v", adm.Calls[0])
	var steps []string
	for _, c := range adm.Calls {
		if strings.HasPrefix(c, "SetBrokerRates") {
			steps = append(steps, c)
		}
	}
	require.Len(t, steps, 10, "ten steps a second apart: %v", steps)
	assert.Equal(t, "SetBrokerRates 1=2000 2=2000 3=2000", steps[0])
	assert.Equal(t, "SetBrokerRates 1=11000 2=11000 3=11000", steps[9])
	assert.Zero(t, changes, "the ramp is no decision of the rule")
	assert.Equal(t, int64(11_000), g.Report().Final[1])
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
