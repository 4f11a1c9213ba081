//go:build integration

package reassign_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/kafka"
	"github.com/kplan-dev/kplan/internal/labtest"
)

// TestApplyGuardedLab: a guarded apply on real brokers, with an objective
// no broker can meet (p99 1 ms) so that the rule must act. Invariants
// only: the canary ran on every broker the plan touches, the throttle
// changes were logged (cuts, within --min-throttle), the canary lost
// nothing, its topic is gone, the plan is complete and the throttle
// removed. How well the guard keeps an objective it can meet is an
// acceptance figure (TestAcceptGuardedApply, make acceptance).
func TestApplyGuardedLab(t *testing.T) {
	lab := labtest.Shared(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	topic, conn, throttles := filledTopic(t, ctx, lab, "guarded", [][]int32{{1, 2}, {1, 2}, {2, 1}, {2, 1}}, 10)
	targets := [][]int32{{3, 2}, {1, 3}, {3, 1}, {2, 3}}
	plan := writePlan(t, topic, "plan.json", targets)

	code, out, errOut := run("reassign", "apply", plan, "--bootstrap-server", lab.Bootstrap, "--yes", "-o", "json",
		"--throttle", "400kB/s", "--min-throttle", "200kB/s", "--latency-objective", "p99=1ms",
		"--canary-rate", "90kB/s", "--canary-window", "1s", "--max-inflight-per-broker", "1")
	t.Logf("kplan reassign apply (stderr):\n%s", errOut)
	require.Equal(t, 0, code, errOut)
	var res struct {
		Outcome string `json:"outcome"`
		Canary  struct {
			Topic   string `json:"topic"`
			Acked   int64  `json:"acked"`
			Read    int64  `json:"read"`
			Lost    int64  `json:"lost"`
			Deleted bool   `json:"deleted"`
			Brokers []struct {
				Broker  int32 `json:"broker"`
				Produce struct {
					Count int64   `json:"count"`
					P99   float64 `json:"p99"`
				} `json:"produce_ms"`
			} `json:"brokers"`
		} `json:"canary"`
		Adaptive struct {
			Min     int64 `json:"min_bytes_per_s"`
			Changes []struct {
				Broker int32  `json:"broker"`
				From   int64  `json:"from_bytes_per_s"`
				To     int64  `json:"to_bytes_per_s"`
				Reason string `json:"reason"`
			} `json:"changes"`
			Windows []json.RawMessage `json:"windows"`
		} `json:"adaptive_throttle"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &res), out)
	assert.Equal(t, "complete", res.Outcome)

	// -o json: the progress is JSON events on stderr, one a line.
	events := map[string][]map[string]any{}
	for _, line := range strings.Split(strings.TrimSpace(errOut), "\n") {
		var ev map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &ev), "a stderr line that is no JSON event: %s", line)
		require.Equal(t, "kplan.reassign.apply.event/v1", ev["schema"], line)
		events[ev["event"].(string)] = append(events[ev["event"].(string)], ev)
	}
	for _, kind := range []string{"plan", "canary-started", "accepted", "progress", "throttle", "canary-stopped"} {
		assert.NotEmpty(t, events[kind], "no %s event", kind)
	}
	require.NotEmpty(t, events["canary-started"])
	assert.Equal(t, res.Canary.Topic, events["canary-started"][0]["canary"].(map[string]any)["topic"])
	last := events["progress"][len(events["progress"])-1]
	assert.Equal(t, float64(4), last["complete"])
	assert.NotNil(t, last["bytes"], "progress in bytes")

	// The canary: one partition led by each broker the plan touches.
	var brokers []int32
	for _, b := range res.Canary.Brokers {
		brokers = append(brokers, b.Broker)
		assert.Positive(t, b.Produce.Count, "broker %d's canary partition was written", b.Broker)
	}
	assert.ElementsMatch(t, []int32{1, 2, 3}, brokers)
	assert.Positive(t, res.Canary.Acked)
	assert.Equal(t, int64(0), res.Canary.Lost, "the canary loses nothing")
	assert.GreaterOrEqual(t, res.Canary.Read, res.Canary.Acked)
	assert.True(t, res.Canary.Deleted)

	// The rule acted: cuts, logged with their reason, never below the
	// minimum.
	require.NotEmpty(t, res.Adaptive.Changes, "an objective of 1 ms is never met: the rule cuts")
	assert.NotEmpty(t, res.Adaptive.Windows)
	for _, c := range res.Adaptive.Changes {
		assert.Less(t, c.To, c.From, "only cuts: %+v", c)
		assert.GreaterOrEqual(t, c.To, res.Adaptive.Min)
		assert.Contains(t, c.Reason, "above the objective")
	}
	var logged int
	for _, ev := range events["throttle"] {
		logged += len(ev["changes"].([]any))
	}
	assert.Equal(t, len(res.Adaptive.Changes), logged, "every change was an event as it happened")

	// Checked on the cluster: the canary's topic is gone, the throttle
	// removed.
	adm := kafka.NewAdmin(conn, "test")
	defer adm.Close()
	left, err := adm.Snapshot(ctx, func(tp string) bool { return strings.HasPrefix(tp, "kplan-canary-") })
	require.NoError(t, err)
	assert.Empty(t, left.Partitions, "canary topics left")
	assert.Empty(t, throttles(), "the throttle is removed")
}
