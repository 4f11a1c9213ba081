package apply

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/kplan-dev/kplan/internal/errkind"
	"github.com/kplan-dev/kplan/internal/stats"
)

// This file is the adaptive throttle of `kplan reassign apply
// --latency-objective`: a canary measures what clients feel on each broker
// the plan touches, and a control rule raises or cuts each broker's
// replication throttle from it.

// RateSetter is an Admin that sets the replication throttle's rate broker
// by broker (internal/kafka's Admin does); the adaptive throttle needs it.
type RateSetter interface {
	// SetBrokerRates sets the leader and follower replication throttled
	// rates of each broker to its rate in bytes/s.
	SetBrokerRates(ctx context.Context, rates map[int32]int64) error
}

// LatencySource is the canary the adaptive throttle listens to.
type LatencySource interface {
	// Start begins measuring, with one probe led by each of brokers; it is
	// called once the plan passed every check, before the throttle is set.
	Start(ctx context.Context, brokers []int32) error
	// Window returns, per broker, the latency measured since the previous
	// call (milliseconds, as stats.LatencySummary has them).
	Window() map[int32]stats.LatencySummary
}

// ThrottleRule is the adaptive throttle's control rule, applied to each throttled
// broker at the end of every window (Period) with the canary's p99 on it:
//
//   - fewer than MinSamples samples in the window: hold (too few to judge);
//   - p99 above Objective: cut the rate at once (multiplicative decrease)
//     to Down times it, or to Objective/p99 times it when that is lower (a
//     window far over the objective cuts deeper), but never below Floor
//     times it, nor below Min;
//   - p99 below Calm times Objective for RaiseAfter windows in a row:
//     raise it to Up times it, not above Max, and not above Approach times
//     the rate of the broker's last window over the objective (its
//     ceiling); at that point, ProbeAfter calm windows in a row raise it
//     above the ceiling (a probe), which forgets the ceiling;
//   - p99 above Objective while a probe is on (no raise since it): back to
//     the rate before the probe, which had held calm for the whole wait,
//     instead of a cut, and the next probe waits twice as many calm windows
//     (at most MaxProbeAfter); a probe that earns a raise resets the wait
//     to ProbeAfter. Probes are the rule's only deliberate step into
//     the rate that broke the objective: without the backoff a broker
//     whose limit holds still spends one window in 10-15 over it, probe
//     after probe (the guarded apply's acceptance, 2026-11-26);
//   - in between (the hysteresis band, Calm x Objective to Objective):
//     hold, and start counting calm windows again.
//
// The asymmetry is on purpose: one window over the objective is what a
// client felt, so the cut is immediate and large; a raise waits for calm
// windows in a row, so the rate does not oscillate around the objective.
//
// A raise is not set at once but ramped, over Ramp, one step a poll: a
// broker's replication quota is a byte rate averaged over its last
// replication.quota.window.num windows of replication.quota.window.size.seconds
// (11 of 1 s by default, at least 10 s averaged), so a rate raised at once
// from r to r' lets (r'-r) x 10 s through at the link's full speed before
// the average catches up: at 2 MB/s a quarter's raise is 5 MB, a quarter
// of a second of a 20 MB/s link, which the link's queue turns into drops
// and a canary p99 of 300-800 ms (the guarded apply's acceptance,
// 2026-11-27: before the ramp, its windows over the objective came in the
// first 50 s after the start at 10 MB/s and then every 10-13 s, one cut
// and three raises apart). Ramped in steps of a poll, the raise's credit
// comes in as many bursts a poll apart, each a step's share, instead of
// one (a step still lets its own (step) x 10 s through). For the same
// reason the guard starts at Min and ramps to the starting rate. While a
// broker's rate ramps its calm windows do not count toward the next raise
// (they were measured below the rate being judged); a window over the
// objective cuts at once from the rate set then, which is also its
// ceiling.
type ThrottleRule struct {
	Objective time.Duration
	// Min and Max bound every broker's rate (bytes/s).
	Min, Max int64
	// Period is a window's length (0: DefaultWindow).
	Period time.Duration
	// MinSamples is the fewest samples a window needs to count (0:
	// DefaultMinSamples).
	MinSamples int64
	// Calm is the fraction of the objective under which a window is calm
	// (0: DefaultCalm).
	Calm float64
	// RaiseAfter is the number of calm windows in a row before a raise (0:
	// DefaultRaiseAfter).
	RaiseAfter int
	// Up and Down are the factors of a raise and of a cut (0: DefaultUp,
	// DefaultDown); Floor bounds the deepest cut (0: DefaultFloor).
	Up, Down, Floor float64
	// Approach is the fraction of the rate that last broke the objective
	// (a broker's ceiling) that raises stop at (0: DefaultApproach);
	// ProbeAfter the calm windows in a row there before a raise above it
	// (0: DefaultProbeAfter).
	Approach   float64
	ProbeAfter int
	// MaxProbeAfter bounds the doubled wait after failed probes (0:
	// DefaultMaxProbeAfter).
	MaxProbeAfter int
	// Ramp is how long a raise takes to reach its rate, the start's
	// included (0: DefaultRamp; negative: raises are set at once).
	Ramp time.Duration
}

// The defaults of ThrottleRule.
const (
	DefaultWindow     = 5 * time.Second
	DefaultMinSamples = 20
	DefaultCalm       = 0.75
	DefaultRaiseAfter = 2
	DefaultUp         = 1.25
	DefaultDown       = 0.5
	DefaultFloor      = 0.25
	DefaultApproach   = 0.9
	DefaultProbeAfter = 6
	// DefaultMaxProbeAfter is three doublings of DefaultProbeAfter: 48
	// windows, four minutes of 5 s windows.
	DefaultMaxProbeAfter = 48
	// DefaultRamp is the span a broker averages its replication quota
	// over with Kafka's defaults: 11 windows of 1 s, the oldest partial.
	DefaultRamp = 10 * time.Second
)

// WithDefaults is the rule with every zero field at its default, as the
// guard runs it.
func (r ThrottleRule) WithDefaults() ThrottleRule {
	if r.Period <= 0 {
		r.Period = DefaultWindow
	}
	if r.MinSamples <= 0 {
		r.MinSamples = DefaultMinSamples
	}
	if r.Calm <= 0 || r.Calm >= 1 {
		r.Calm = DefaultCalm
	}
	if r.RaiseAfter <= 0 {
		r.RaiseAfter = DefaultRaiseAfter
	}
	if r.Up <= 1 {
		r.Up = DefaultUp
	}
	if r.Down <= 0 || r.Down >= 1 {
		r.Down = DefaultDown
	}
	if r.Approach <= 0 || r.Approach > 1 {
		r.Approach = DefaultApproach
	}
	if r.ProbeAfter <= 0 {
		r.ProbeAfter = DefaultProbeAfter
	}
	if r.MaxProbeAfter < r.ProbeAfter {
		r.MaxProbeAfter = max(DefaultMaxProbeAfter, r.ProbeAfter)
	}
	if r.Floor <= 0 || r.Floor > r.Down {
		r.Floor = min(DefaultFloor, r.Down)
	}
	if r.Ramp == 0 {
		r.Ramp = DefaultRamp
	}
	return r
}

// Validate checks the rule against the starting rate; the error names the
// flag of `kplan reassign apply` at fault.
func (r ThrottleRule) Validate(start int64) error {
	switch {
	case r.Objective <= 0:
		return errkind.Usagef("latency-objective", "must be positive, got %v", r.Objective)
	case start <= 0:
		return errkind.Usagef("throttle", "the adaptive throttle starts from it: give a rate, e.g. 50MB/s")
	case r.Min <= 0:
		return errkind.Usagef("min-throttle", "must be positive, got %d bytes/s", r.Min)
	case r.Max < r.Min:
		return errkind.Usagef("max-throttle", "%d bytes/s is below --min-throttle %d bytes/s", r.Max, r.Min)
	case start < r.Min || start > r.Max:
		return errkind.Usagef("throttle", "%d bytes/s is outside --min-throttle %d and --max-throttle %d bytes/s", start, r.Min, r.Max)
	}
	return nil
}

// RateChange is one change the adaptive throttle made to a broker's rate.
type RateChange struct {
	// At is the time since the apply began.
	At     time.Duration `json:"at_ns"`
	Broker int32         `json:"broker"`
	From   int64         `json:"from_bytes_per_s"`
	To     int64         `json:"to_bytes_per_s"`
	// P99 and Samples are the window's figures that decided it
	// (milliseconds).
	P99     float64 `json:"p99_ms"`
	Samples int64   `json:"samples"`
	Reason  string  `json:"reason"`
}

// GuardWindow is one broker's figures in one window.
type GuardWindow struct {
	At      time.Duration `json:"at_ns"`
	Broker  int32         `json:"broker"`
	Samples int64         `json:"samples"`
	P50     float64       `json:"p50_ms"`
	P99     float64       `json:"p99_ms"`
	// Rate is the broker's throttle during the window (bytes/s).
	Rate int64 `json:"rate_bytes_per_s"`
	// Counted says the window had enough samples to judge (ThrottleRule's
	// MinSamples); Within, that its p99 met the objective then.
	Counted bool `json:"counted"`
	Within  bool `json:"within"`
}

// GuardReport is what the adaptive throttle saw and did.
type GuardReport struct {
	Objective time.Duration `json:"objective_ns"`
	Min       int64         `json:"min_bytes_per_s"`
	Max       int64         `json:"max_bytes_per_s"`
	Start     int64         `json:"start_bytes_per_s"`
	Period    time.Duration `json:"window_ns"`
	Windows   []GuardWindow `json:"windows"`
	Changes   []RateChange  `json:"changes"`
	// Final is each broker's rate when the moves ended.
	Final map[int32]int64 `json:"final_bytes_per_s"`
}

// WithinShare is the share of counted windows whose p99 met the
// objective (1 when none counted).
func (g *GuardReport) WithinShare() float64 {
	n, in := 0, 0
	for _, w := range g.Windows {
		if w.Counted {
			n++
			if w.Within {
				in++
			}
		}
	}
	if n == 0 {
		return 1
	}
	return float64(in) / float64(n)
}

// Guard is the adaptive throttle: Execute starts its Source once the plan
// passed its checks and, after every poll, applies what Adjust returns.
type Guard struct {
	Rule   ThrottleRule
	Source LatencySource

	started bool
	start   time.Time
	last    time.Time
	// rates is, per broker, the rate set on the cluster; target the
	// rate the rule decided, which a raise ramps rates up to, from
	// rampFrom at rampAt over Rule.Ramp.
	rates    map[int32]int64
	target   map[int32]int64
	rampFrom map[int32]int64
	rampAt   map[int32]time.Time
	calm     map[int32]int
	// ceiling is, per broker, the rate of its last window over the
	// objective (0: none since its last probe above it succeeded).
	ceiling map[int32]int64
	// probeFrom is, per broker with a probe on, the rate before it;
	// probeAfter the calm windows its next probe waits for.
	probeFrom  map[int32]int64
	probeAfter map[int32]int
	report     GuardReport
}

// NewGuard is the adaptive throttle with rule over src.
func NewGuard(rule ThrottleRule, src LatencySource) *Guard {
	return &Guard{Rule: rule.WithDefaults(), Source: src}
}

// begin starts the canary on brokers and returns the rate to set on each
// at first: Rule.Min, ramped up to start over Rule.Ramp (start itself when
// raises are set at once).
func (g *Guard) begin(ctx context.Context, now time.Time, brokers []int32, start int64) (int64, error) {
	if err := g.Source.Start(ctx, brokers); err != nil {
		return 0, fmt.Errorf("starting the canary: %w", err)
	}
	r := g.Rule
	first := start
	if r.Ramp > 0 {
		first = min(r.Min, start)
	}
	g.started, g.start, g.last = true, now, now
	g.rates, g.target, g.calm, g.ceiling = map[int32]int64{}, map[int32]int64{}, map[int32]int{}, map[int32]int64{}
	g.rampFrom, g.rampAt = map[int32]int64{}, map[int32]time.Time{}
	g.probeFrom, g.probeAfter = map[int32]int64{}, map[int32]int{}
	for _, b := range brokers {
		g.rates[b], g.target[b] = first, start
		g.rampFrom[b], g.rampAt[b] = first, now
	}
	g.report = GuardReport{Objective: r.Objective, Min: r.Min, Max: r.Max, Start: start, Period: r.Period, Windows: []GuardWindow{}, Changes: []RateChange{}}
	return first, nil
}

// Adjust closes a window when one Period passed since the last and
// returns the rule's decisions (none otherwise), each from the rate set
// on the cluster to the rate decided; the caller records them with Commit
// and then sets what Pending returns.
func (g *Guard) Adjust(now time.Time) []RateChange {
	if !g.started || now.Sub(g.last) < g.Rule.Period {
		return nil
	}
	g.last = now
	at := now.Sub(g.start)
	window := g.Source.Window()
	r := g.Rule
	var out []RateChange
	for _, b := range slices.Sorted(maps.Keys(g.rates)) {
		rate := g.rates[b]
		s := window[b]
		w := GuardWindow{At: at, Broker: b, Samples: s.Count, P50: s.P50, P99: s.P99, Rate: rate}
		objective := float64(r.Objective) / float64(time.Millisecond)
		if s.Count >= r.MinSamples {
			w.Counted, w.Within = true, s.P99 <= objective
		}
		g.report.Windows = append(g.report.Windows, w)
		change := RateChange{At: at, Broker: b, From: rate, P99: s.P99, Samples: s.Count}
		switch {
		case !w.Counted:
			continue
		case !w.Within:
			g.calm[b] = 0
			g.ceiling[b] = rate
			if from, ok := g.probeFrom[b]; ok {
				delete(g.probeFrom, b)
				g.probeAfter[b] = min(r.MaxProbeAfter, 2*g.wait(b))
				// The ceiling that puts the rate before the probe at
				// Approach of it: what follows is a wait for the next
				// probe, not a climb above the rate that held.
				g.ceiling[b] = int64(float64(from) / r.Approach)
				change.To = from
				change.Reason = fmt.Sprintf("p99 %.0f ms above the objective %v after a probe: back to the rate before it; next probe after %d calm windows",
					s.P99, r.Objective, g.probeAfter[b])
				break
			}
			f := max(r.Floor, min(r.Down, objective/s.P99))
			change.To = max(r.Min, int64(float64(rate)*f))
			change.Reason = fmt.Sprintf("p99 %.0f ms above the objective %v: cut", s.P99, r.Objective)
		case g.target[b] > rate:
			// Ramping: the window was measured below the rate being
			// judged, so it holds.
			g.calm[b] = 0
			continue
		case s.P99 < r.Calm*objective:
			g.calm[b]++
			if !g.raise(b, rate, &change, objective) {
				continue
			}
		default:
			g.calm[b] = 0
			continue
		}
		if !w.Within {
			// Also when the rate stays (at Min): a cut ends a ramp.
			g.target[b] = change.To
		}
		if change.To != change.From {
			out = append(out, change)
		}
	}
	return out
}

// raise decides a calm window's raise of broker b from rate, into change:
// RaiseAfter calm windows in a row raise it by Up, up to Approach times
// the rate that last broke the objective (its ceiling); once there,
// ProbeAfter calm windows in a row raise it above the ceiling by Up (a
// probe), which forgets the ceiling. It reports whether there is a raise.
func (g *Guard) raise(b int32, rate int64, change *RateChange, objective float64) bool {
	r := g.Rule
	limit, need, probe := r.Max, r.RaiseAfter, false
	if c := g.ceiling[b]; c > 0 {
		near := int64(float64(c) * r.Approach)
		if rate < near {
			limit = min(limit, near)
		} else {
			need, probe = g.wait(b), true
		}
	}
	if g.calm[b] < need {
		return false
	}
	g.calm[b] = 0
	change.To = min(limit, int64(float64(rate)*r.Up))
	if change.To <= rate {
		return false
	}
	if _, on := g.probeFrom[b]; on {
		// The probe held for RaiseAfter calm windows: it succeeded.
		delete(g.probeFrom, b)
		delete(g.probeAfter, b)
	}
	change.Reason = fmt.Sprintf("p99 below %.0f ms (%.0f%% of the objective) for %d windows: raise", r.Calm*objective, 100*r.Calm, need)
	if probe {
		g.ceiling[b] = 0
		g.probeFrom[b] = rate
		change.Reason = fmt.Sprintf("p99 below %.0f ms (%.0f%% of the objective) for %d windows at %.0f%% of the rate that last broke it: probe above it",
			r.Calm*objective, 100*r.Calm, need, 100*r.Approach)
	} else if limit < r.Max && change.To == limit {
		change.Reason += fmt.Sprintf(", up to %.0f%% of the rate that last broke the objective", 100*r.Approach)
	}
	if r.Ramp > 0 {
		change.Reason += fmt.Sprintf(" (ramped over %v)", r.Ramp)
	}
	return true
}

// wait is the calm windows in a row broker b's next probe waits for.
func (g *Guard) wait(b int32) int {
	if w, ok := g.probeAfter[b]; ok {
		return w
	}
	return g.Rule.ProbeAfter
}

// Commit records the decisions Adjust returned: each broker's rate
// decided, which a cut sets at once and a raise ramps to.
func (g *Guard) Commit(changes []RateChange) {
	for _, c := range changes {
		g.target[c.Broker] = c.To
		if c.To > g.rates[c.Broker] {
			g.rampFrom[c.Broker], g.rampAt[c.Broker] = g.rates[c.Broker], g.start.Add(c.At)
		}
		g.report.Changes = append(g.report.Changes, c)
	}
}

// Pending returns the rates to set on the cluster at now, per broker
// whose rate changes: a cut's at once, a ramp's step (the rate decided
// when its Ramp is over). The caller sets them and then calls Applied.
func (g *Guard) Pending(now time.Time) map[int32]int64 {
	if !g.started {
		return nil
	}
	out := map[int32]int64{}
	for b, to := range g.target {
		cur := g.rates[b]
		switch {
		case to < cur:
			out[b] = to
		case to > cur:
			next := to
			if ramp := g.Rule.Ramp; ramp > 0 {
				if f := float64(now.Sub(g.rampAt[b])) / float64(ramp); f < 1 {
					from := g.rampFrom[b]
					next = from + int64(max(0, f)*float64(to-from))
				}
			}
			if next > cur {
				out[b] = next
			}
		}
	}
	return out
}

// Applied records rates as set on the cluster.
func (g *Guard) Applied(rates map[int32]int64) {
	maps.Copy(g.rates, rates)
}

// Report is what the guard saw and did so far (nil before it started).
func (g *Guard) Report() *GuardReport {
	if g == nil || !g.started {
		return nil
	}
	rep := g.report
	rep.Final = maps.Clone(g.rates)
	return &rep
}
