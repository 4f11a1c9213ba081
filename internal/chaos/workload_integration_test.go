//go:build integration

package chaos

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	chaoslab "github.com/kplan-dev/kplan/internal/chaos/lab"
	"github.com/kplan-dev/kplan/internal/kafka"
	"github.com/kplan-dev/kplan/internal/labtest"
)

// labThesis64 runs issue 13's L1 on the shared lab: the §6.4 workload
// (topic A led by 1, 2, 2 and B by 2, 3, replication factor 2, rates
// A:B = 2:1) with the busiest broker, 2, killed by SIGKILL and restored.
// phase > 0 shortens the warm-up, sets the phases and runs the
// partitioners side by side (only invariants checked); 0 keeps the
// measured figures' 6 s warm-up and 8 s phases, one partitioner at a time.
func labThesis64(t *testing.T, lab *labtest.Lab, topic string, phase time.Duration) *Result {
	t.Helper()
	c, err := chaoslab.Open(lab.State, kafka.ConnOptions{}, "test")
	require.NoError(t, err)
	defer c.Close()

	cfg := Defaults()
	cfg.Topic = topic
	// 2000 + 1000 records/s of 100 bytes per partitioner: the thinnest
	// broker share (b/2 before the kill) gets 4000 records in 8 s.
	cfg.Workload = thesis64(200_000)
	cfg.Partitioners = []string{"roundrobin", "node", "sqf", "default", "hash"}
	cfg.Target = Target{Kind: TargetBusiest}
	cfg.Warmup = 6 * time.Second
	if phase > 0 { // only invariants checked: a short warm-up and phases
		cfg.Warmup = 2 * time.Second
		cfg.Phase = phase
	}
	cfg.Restore = true // leave the shared lab whole
	// The measured figures: one partitioner at a time, as the thesis
	// measured: sqf's prediction (node's shares) holds while its
	// per-broker queues stay within its slack, which needs brokers about
	// equally fast. Side by side, five producers pairs and the checking
	// consumer load the 2-core lab enough that the busiest broker's
	// latency spikes pass the slack, and sqf, doing its job, sends it
	// less: 4.8 and 7.8 points off in 2 of 5 runs (docs/BENCHMARKS.md).
	// The invariants (the busiest broker killed, nothing lost, every
	// partitioner's shares predicted and measured) hold side by side as
	// well, with one kill and restore instead of five.
	cfg.Sequential = phase == 0
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	res, err := Run(ctx, c, cfg)
	require.NoError(t, err)
	return res
}

// TestLabThesis64Workload is issue 13's L1 on real brokers, with what must
// always hold: the busiest broker (2) is the one killed, nothing
// acknowledged is lost, and every partitioner gets its predicted and
// measured shares and their error before and after the kill. Whether the
// measured shares are within 2 points of the prediction is an acceptance
// figure (TestAcceptLabThesis64Prediction); only invariants are checked
// here, so the phases are short and the partitioners run side by side.
func TestLabThesis64Workload(t *testing.T) {
	res := labThesis64(t, labtest.Shared(t), "l1", 3*time.Second)
	assert.Equal(t, int32(2), res.KilledBroker)
	require.Len(t, res.Partitioners, 5)
	for _, p := range res.Partitioners {
		assert.Zero(t, p.Lost, "%s: acknowledged records lost", p.Name)
		for _, ph := range []string{"before", "after"} {
			x := p.Phases[ph]
			require.NotNil(t, x, "%s %s", p.Name, ph)
			require.NotNil(t, x.MaxErrorPts, "%s %s: the error is computed", p.Name, ph)
			assert.NotEmpty(t, x.PredictedShare, "%s %s: a prediction (%s)", p.Name, ph, p.Prediction)
			assert.Equal(t, len(x.PredictedShare), len(x.MeasuredShare), "%s %s: the same brokers", p.Name, ph)
			t.Logf("%-10s %-9s predicted %v measured %v error %.2f points", p.Name, ph, x.PredictedShare, x.MeasuredShare, *x.MaxErrorPts)
		}
	}
}
