//go:build acceptance

package reassign_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/acceptance"
	"github.com/kplan-dev/kplan/internal/kafka"
	"github.com/kplan-dev/kplan/internal/kafka/kafkatest"
	"github.com/kplan-dev/kplan/internal/labtest"
	"github.com/kplan-dev/kplan/internal/loadgen"
	"github.com/kplan-dev/kplan/internal/localkafka"
)

// The guarded apply's acceptance lab: 4 brokers, each behind a link of
// guardLink bytes/s, and guardParts partitions of guardPartBytes each on
// brokers 1 and 2 (RF 2), so that a plan moving one replica of each
// copies guardParts x guardPartBytes (512 MB) into brokers 3 and 4.
const (
	guardLink      = 20_000_000
	guardParts     = 8
	guardPartBytes = 64 << 20
	guardWindow    = "2s"
	// guardInflight is both applies' --max-inflight-per-broker: a
	// throttled leader still sends each fetch answer whole, up to
	// replica.fetch.max.bytes (1 MiB) per partition being copied, at the
	// link's speed, so N moves served by one broker put bursts of up to N
	// MiB on its link (4 MiB: 210 ms at 20 MB/s, the p99 plateau its
	// canary showed under any throttle with the default 5). One move per
	// broker bounds a burst to 1 MiB, 52 ms.
	guardInflight = "1"
)

// guardFloor is the canary's p99 floor during a move, whatever the
// throttle: one partition's fetch answer (replica.fetch.max.bytes, 1 MiB)
// at the link's speed, 52 ms at 20 MB/s. Measured: with one move per
// broker, broker 1's late windows sat at 56-58 ms under every rate the
// guard tried (2026-11-26, docs/BENCHMARKS.md).
const guardFloor = time.Duration(float64(1<<20) / guardLink * float64(time.Second))

// TestAcceptGuardedApply is issue 23's acceptance: on the 4-broker lab
// with capped links, a plan moving 512 MB, applied once with a fixed high
// throttle (1GB/s: the links are the only limit) and then back with
// --latency-objective p99=X, where X is between the canary's p99 at rest
// and the median window p99 under the fixed move, measured in the same
// repetition (objectiveX: their geometric mean, but not below 1.25x the
// floor a move puts on the canary whatever the throttle). Per repetition:
// the share of the guarded apply's canary windows within X (at least 0.9),
// the same share for the fixed apply (reported: the guard is worth
// something only where it is low), records lost (0), and the error of the
// ETA printed at 25% of the bytes against the real remaining time (at
// most 0.3, fixed apply; the guarded one's is reported).
func TestAcceptGuardedApply(t *testing.T) {
	bootstrap, _ := guardLab(t)
	ctx := context.Background()
	topic := "bulk"
	fillBulk(t, ctx, bootstrap, topic)
	home, away := bulkPlans(t, topic)
	var guardedWithin, fixedWithin, lost, etaFixed, etaGuarded, slowdown []float64
	for i := range acceptance.Repeat(t) {
		rest := restP99(t, ctx, bootstrap)
		fixed := guardedRun(t, bootstrap, away, "--throttle", "1GB/s", "--latency-objective", "p99=1h",
			"--min-throttle", "1GB/s", "--max-throttle", "1GB/s", "--max-inflight-per-broker", guardInflight)
		x := objectiveX(rest, fixed.worstMedian())
		guarded := guardedRun(t, bootstrap, home, "--throttle", "10MB/s", "--latency-objective", "p99="+x.String(),
			"--min-throttle", "1MB/s", "--max-throttle", "1GB/s", "--max-inflight-per-broker", guardInflight)
		t.Logf("repetition %d: p99 at rest %.1f ms, fixed: the worst broker's median window p99 %.1f ms (all windows' median %.1f ms), X %v; fixed %v, guarded %v; within X: fixed %.2f, guarded %.2f; ETA error at 25%%: fixed %.2f, guarded %.2f; lost %d+%d; %d throttle changes",
			i+1, rest, fixed.worstMedian(), median(fixed.p99s()), x, fixed.took, guarded.took, fixed.within(x), guarded.within(x), fixed.etaErr, guarded.etaErr,
			fixed.lost, guarded.lost, guarded.changes)
		t.Logf("repetition %d: the guarded apply's windows over X: %s", i+1, guarded.over(x))
		guardedWithin = append(guardedWithin, guarded.within(x))
		fixedWithin = append(fixedWithin, fixed.within(x))
		lost = append(lost, float64(fixed.lost+guarded.lost))
		etaFixed = append(etaFixed, fixed.etaErr)
		etaGuarded = append(etaGuarded, guarded.etaErr)
		slowdown = append(slowdown, guarded.took.Seconds()/fixed.took.Seconds())
	}
	acceptance.Check(t, "reassign/guarded-apply/guarded-windows-within-x", "", acceptance.AtLeast, 0.9, guardedWithin)
	acceptance.Check(t, "reassign/guarded-apply/fixed-windows-within-x", "", acceptance.AtMost, 0.9, fixedWithin)
	acceptance.Check(t, "reassign/guarded-apply/canary-records-lost", "records", acceptance.AtMost, 0, lost)
	acceptance.Check(t, "reassign/guarded-apply/fixed-eta-error-at-25pct", "", acceptance.AtMost, 0.3, etaFixed)
	acceptance.Check(t, "reassign/guarded-apply/guarded-eta-error-at-25pct", "", acceptance.AtMost, 1, etaGuarded)
	acceptance.Check(t, "reassign/guarded-apply/guarded-over-fixed-time", "", acceptance.AtMost, 20, slowdown)
}

// objectiveX is the guarded apply's objective, between the canary's p99 at
// rest and under the fixed apply (the worst broker's median window p99,
// ms), as the issue asks:
// their geometric mean, raised to 1.25x guardFloor when it falls below
// (an objective under the floor is one no throttle can hold; with the
// geometric mean, one repetition of five got a 33 ms X and its guard held
// 0.76), unless that is not below the fixed median.
func objectiveX(rest, fixedMedian float64) time.Duration {
	ms := func(v float64) time.Duration {
		return time.Duration(v * float64(time.Millisecond)).Round(time.Millisecond)
	}
	x := max(ms(math.Sqrt(rest*fixedMedian)), time.Millisecond)
	if floor := guardFloor * 5 / 4; x < floor && floor < ms(fixedMedian) {
		x = floor.Round(time.Millisecond)
	}
	return x
}

// guardLab starts the 4-broker lab with capped links and returns its
// bootstrap servers and state.
func guardLab(t *testing.T) (string, *localkafka.State) {
	t.Helper()
	require.NoError(t, localkafka.CheckNetPrivileges(), "this machine cannot run the bandwidth lab")
	jars, err := localkafka.FindJars("")
	require.NoError(t, err)
	base, err := labtest.FreeBase(4)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	s, err := localkafka.Up(ctx, localkafka.Config{Brokers: 4, JarsDir: jars, Dir: filepath.Join(t.TempDir(), "guardlab"),
		BasePort: base, FastFailover: true, BandwidthBps: guardLink, HeapMB: 512}, kafka.WaitBrokers)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Down(15*time.Second)) })
	return strings.Join(s.Bootstrap(), ","), s
}

// fillBulk creates topic on brokers 1 and 2 and writes guardPartBytes
// into each partition.
func fillBulk(t *testing.T, ctx context.Context, bootstrap, topic string) {
	t.Helper()
	conn := kafka.ConnOptions{BootstrapServers: bootstrap}
	cl, err := kafka.NewClient(conn, "test")
	require.NoError(t, err)
	defer cl.Close()
	var assignment [][]int32
	parts := make([]int32, guardParts)
	for p := range guardParts {
		assignment = append(assignment, []int32{int32(1 + p%2), int32(2 - p%2)})
		parts[p] = int32(p)
	}
	require.NoError(t, kafka.CreateTopic(ctx, cl, topic, assignment, nil))
	start := time.Now()
	require.NoError(t, kafkatest.FillBytes(ctx, conn, topic, parts, guardPartBytes, 256<<10))
	t.Logf("filled %s: %d MB in %v", topic, guardParts*guardPartBytes>>20, time.Since(start).Round(time.Second))
}

// bulkPlans writes the plan that moves the follower of every partition to
// broker 3 or 4 (away) and the one that moves it back (home).
func bulkPlans(t *testing.T, topic string) (home, away string) {
	t.Helper()
	var out, back [][]int32
	for p := range int32(guardParts) {
		out = append(out, []int32{1 + p%2, 3 + p%2})
		back = append(back, []int32{1 + p%2, 2 - p%2})
	}
	return writePlan(t, topic, "home.json", back), writePlan(t, topic, "away.json", out)
}

// restP99 is the canary's p99 at rest: the largest of the brokers' produce
// p99 over 20 s with nothing moving (milliseconds).
func restP99(t *testing.T, ctx context.Context, bootstrap string) float64 {
	t.Helper()
	c, err := loadgen.StartCanary(ctx, kafka.ConnOptions{BootstrapServers: bootstrap}, "test", loadgen.CanarySpec{
		Topic: fmt.Sprintf("kplan-canary-rest-%d", time.Now().UnixNano()), Leaders: []int32{1, 2, 3, 4}, Brokers: []int32{1, 2, 3, 4},
		RF: 3, Rate: 512_000, RecordSize: 1024, Run: uint64(time.Now().UnixNano()),
	}, nil)
	require.NoError(t, err)
	time.Sleep(20 * time.Second)
	res, err := c.Stop(ctx, 30*time.Second)
	require.NoError(t, err)
	require.Zero(t, res.Lost)
	var worst float64
	for _, b := range res.Brokers {
		worst = max(worst, b.Produce.P99)
	}
	return worst
}

// window is one broker's window in adaptive_throttle.windows.
type window struct {
	At      time.Duration `json:"at_ns"`
	Broker  int32         `json:"broker"`
	P99     float64       `json:"p99_ms"`
	Counted bool          `json:"counted"`
	Rate    int64         `json:"rate_bytes_per_s"`
}

// change is one of adaptive_throttle.changes.
type change struct {
	At     time.Duration `json:"at_ns"`
	Broker int32         `json:"broker"`
	From   int64         `json:"from_bytes_per_s"`
	To     int64         `json:"to_bytes_per_s"`
}

// applyRun is one apply's figures.
type applyRun struct {
	windows []window
	// raises are the raises of adaptive_throttle.changes.
	raises  []change
	lost    int64
	etaErr  float64
	took    time.Duration
	changes int
}

func (r applyRun) p99s() []float64 {
	var out []float64
	for _, w := range r.windows {
		if w.Counted {
			out = append(out, w.P99)
		}
	}
	return out
}

// worstMedian is the canary's p99 under the apply as restP99 takes it at
// rest, the worst broker's: the largest of the brokers' median counted
// window p99 (ms). The median of every broker's windows pooled is not:
// under the unthrottled move the source brokers' canaries (1 and 2) sit
// near 800-1100 ms and the others' near 100-180 ms, so the pooled median
// falls in one cluster or the other with the count of windows on each
// side (measured 2026-11-26, docs/BENCHMARKS.md).
func (r applyRun) worstMedian() float64 {
	var worst float64
	for _, ps := range r.perBroker() {
		worst = max(worst, median(ps))
	}
	return worst
}

// perBroker is each broker's counted window p99s (ms), in window order.
func (r applyRun) perBroker() map[int32][]float64 {
	per := map[int32][]float64{}
	for _, w := range r.windows {
		if w.Counted {
			per[w.Broker] = append(per[w.Broker], w.P99)
		}
	}
	return per
}

// within is the share of counted windows whose p99 is within x.
func (r applyRun) within(x time.Duration) float64 {
	ps := r.p99s()
	if len(ps) == 0 {
		return 1
	}
	n := 0
	for _, p := range ps {
		if p <= float64(x)/float64(time.Millisecond) {
			n++
		}
	}
	return float64(n) / float64(len(ps))
}

// over lists the counted windows whose p99 is above x: when, which broker,
// the p99, the broker's throttle then (MB/s) and how long after its last
// raise the window closed ("+12s"; "start" before any).
func (r applyRun) over(x time.Duration) string {
	var out []string
	for _, w := range r.windows {
		if w.Counted && w.P99 > float64(x)/float64(time.Millisecond) {
			since := "start"
			for _, c := range r.raises {
				if c.Broker == w.Broker && c.At < w.At {
					since = "+" + (w.At - c.At).Round(time.Second).String()
				}
			}
			out = append(out, fmt.Sprintf("%v b%d %.0fms@%.1f %s", w.At.Round(time.Second), w.Broker, w.P99, float64(w.Rate)/1e6, since))
		}
	}
	return strings.Join(out, ", ")
}

func median(xs []float64) float64 { return quantile(xs, 0.5) }

// quantile is the q-quantile of xs (nearest rank; 0 when empty).
func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[min(len(s)-1, int(q*float64(len(s))))]
}

// guardedRun applies plan with the canary (and flags), and returns its
// windows, loss, time and the ETA's error at 25% of the bytes.
func guardedRun(t *testing.T, bootstrap, plan string, flags ...string) applyRun {
	t.Helper()
	start := time.Now()
	code, out, errOut := run(append([]string{"reassign", "apply", plan, "--bootstrap-server", bootstrap, "--yes", "-o", "json",
		"--canary-window", guardWindow}, flags...)...)
	took := time.Since(start)
	require.Equal(t, 0, code, errOut)
	var res struct {
		Canary struct {
			Lost int64 `json:"lost"`
		} `json:"canary"`
		Adaptive struct {
			Windows []window `json:"windows"`
			Changes []change `json:"changes"`
		} `json:"adaptive_throttle"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &res))
	r := applyRun{windows: res.Adaptive.Windows, lost: res.Canary.Lost, took: took, changes: len(res.Adaptive.Changes), etaErr: math.NaN()}
	for _, c := range res.Adaptive.Changes {
		if c.To > c.From {
			r.raises = append(r.raises, c)
		}
	}
	type progress struct {
		Event   string  `json:"event"`
		Elapsed float64 `json:"elapsed_s"`
		Bytes   *struct {
			Copied int64   `json:"copied_bytes"`
			Total  int64   `json:"total_bytes"`
			ETA    float64 `json:"eta_seconds"`
		} `json:"bytes"`
	}
	var at25 *progress
	var end float64
	for _, line := range strings.Split(strings.TrimSpace(errOut), "\n") {
		var p progress
		if json.Unmarshal([]byte(line), &p) != nil || p.Event != "progress" || p.Bytes == nil || p.Bytes.Total == 0 {
			continue
		}
		end = p.Elapsed
		if at25 == nil && float64(p.Bytes.Copied) >= 0.25*float64(p.Bytes.Total) && p.Bytes.ETA >= 0 {
			at25 = &p
		}
	}
	require.NotNil(t, at25, "no progress event at 25%% of the bytes:\n%s", errOut)
	if real := end - at25.Elapsed; real > 0 {
		r.etaErr = math.Abs(at25.Bytes.ETA-real) / real
	}
	return r
}

func TestObjectiveX(t *testing.T) {
	for _, tc := range []struct {
		rest, fixed float64
		want        time.Duration
	}{
		{5.2, 693.2, 66 * time.Millisecond},    // geometric mean 60 ms: raised to 1.25x the 52 ms floor
		{194.9, 708.1, 371 * time.Millisecond}, // the geometric mean, above the floor
		{9.8, 112.4, 66 * time.Millisecond},    // 33 ms raised
		{2, 60, 11 * time.Millisecond},         // the fixed median is under 1.25x the floor: the geometric mean
	} {
		require.Equal(t, tc.want, objectiveX(tc.rest, tc.fixed), "rest %v, fixed %v", tc.rest, tc.fixed)
	}
}
