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

// TestLabThesis64Workload is issue 13's L1 on real brokers: the §6.4
// workload (topic A led by 1, 2, 2 and B by 2, 3, replication factor 2,
// rates A:B = 2:1) with the busiest broker, 2, killed by SIGKILL. For
// roundrobin, node and sqf the measured shares of bytes per broker are
// within 2 percentage points of the audit's prediction before the kill and
// after it (Kafka's election); default and hash are reported with their
// error. Nothing acknowledged may be lost.
func TestLabThesis64Workload(t *testing.T) {
	lab := labtest.Shared(t)
	c, err := chaoslab.Open(lab.State, kafka.ConnOptions{}, "test")
	require.NoError(t, err)
	defer c.Close()

	cfg := Defaults()
	cfg.Topic = "l1"
	// 2000 + 1000 records/s of 100 bytes per partitioner: the thinnest
	// broker share (b/2 before the kill) gets 4000 records in 8 s.
	cfg.Workload = thesis64(200_000)
	cfg.Partitioners = []string{"roundrobin", "node", "sqf", "default", "hash"}
	cfg.Target = Target{Kind: TargetBusiest}
	cfg.Warmup = 6 * time.Second
	cfg.Restore = true // leave the shared lab whole
	// One partitioner at a time, as the thesis measured: sqf's prediction
	// (node's shares) holds while its per-broker queues stay within its
	// slack, which needs brokers about equally fast. Side by side, five
	// producers pairs and the checking consumer load the 2-core lab enough
	// that the busiest broker's latency spikes pass the slack, and sqf,
	// doing its job, sends it less: 4.8 and 7.8 points off in 2 of 5 runs
	// (docs/BENCHMARKS.md).
	cfg.Sequential = true
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	res, err := Run(ctx, c, cfg)
	require.NoError(t, err)
	assert.Equal(t, int32(2), res.KilledBroker)
	for _, p := range res.Partitioners {
		assert.Zero(t, p.Lost, "%s: acknowledged records lost", p.Name)
		for _, ph := range []string{"before", "after", "recovered"} {
			if x := p.Phases[ph]; x != nil && x.MaxErrorPts != nil {
				t.Logf("%-10s %-9s predicted %v measured %v error %.2f points", p.Name, ph, x.PredictedShare, x.MeasuredShare, *x.MaxErrorPts)
			}
		}
		switch p.Name {
		case "roundrobin", "node", "sqf":
			checkPrediction(t, p, "before", 2)
			checkPrediction(t, p, "after", 2)
		default:
			require.NotNil(t, p.Phases["before"].MaxErrorPts, p.Name)
			require.NotNil(t, p.Phases["after"].MaxErrorPts, p.Name)
		}
	}
}
