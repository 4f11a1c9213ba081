//go:build integration

package chaos

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	chaoslab "github.com/kplan-dev/kplan/internal/chaos/lab"
	"github.com/kplan-dev/kplan/internal/kafka"
	"github.com/kplan-dev/kplan/internal/labtest"
)

func TestMain(m *testing.M) { os.Exit(labtest.Main(m)) }

// TestLabKillBroker3 is issue 6's acceptance on real brokers: 3 partitions,
// replication factor 2, leaders on brokers 1, 2, 3 and broker 3's partition
// replicated on broker 1. Killing broker 3 (SIGKILL of its JVM) moves its
// leadership to broker 1: roundrobin then sends broker 1 two shares, while
// node and sqf keep brokers even. No acknowledged record may be lost.
func TestLabKillBroker3(t *testing.T) {
	lab := labtest.Shared(t)
	c, err := chaoslab.Open(lab.State, kafka.ConnOptions{}, "test")
	require.NoError(t, err)
	defer c.Close()

	cfg := Defaults()
	cfg.Topic = "labkill"
	// The lab's JVMs are fresh: a longer warm-up lets them settle. The
	// default 8 s phases keep one broker's transient stall (sqf steers
	// around it, which is its job) from moving the shares by 5%: with 4 s
	// and 6 s, sqf measured 1.053 before the kill in one CI run.
	cfg.Warmup = 6 * time.Second
	cfg.Restore = true // leave the shared lab whole
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	res, err := Run(ctx, c, cfg)
	require.NoError(t, err)

	assert.Equal(t, "lab", res.Cluster)
	assert.Equal(t, int32(3), res.KilledBroker)
	assert.Equal(t, Schema, res.Schema)
	require.NotNil(t, res.FailoverMS, "a real cluster's failover is timed")
	assert.Greater(t, *res.FailoverMS, 0.0)
	require.Len(t, res.Partitioners, len(DefaultPartitioners))
	for _, p := range res.Partitioners {
		before, after := p.Phases[PhaseBefore.String()], p.Phases[PhaseAfter.String()]
		require.NotNil(t, before, p.Name)
		require.NotNil(t, after, p.Name)
		require.NotNil(t, before.MaxOverMean, p.Name)
		require.NotNil(t, after.MaxOverMean, p.Name)
		t.Logf("%-10s before %.3f %v  after %.3f %v  acked %d lost %d dup %d never %d",
			p.Name, *before.MaxOverMean, before.PerBroker, *after.MaxOverMean, after.PerBroker, p.Acked, p.Lost, p.Duplicates, p.NeverAcked)
		assert.Positive(t, p.Acked, p.Name)
		assert.Zero(t, p.Lost, "%s: acknowledged records lost", p.Name)
		assert.Equal(t, []int32{1, 2, 3}, before.Leaders, p.Name)
		assert.Equal(t, []int32{1, 2}, after.Leaders, "%s: broker 1 leads broker 3's partition after the kill", p.Name)
		assert.Positive(t, after.Acked, p.Name)
		msg := fmt.Sprintf("%s before %v after %v", p.Name, before.PerBroker, after.PerBroker)
		switch p.Name {
		case "roundrobin":
			assert.LessOrEqual(t, *before.MaxOverMean, 1.05, msg)
			assert.GreaterOrEqual(t, *after.MaxOverMean, 1.25, msg)
		case "node":
			assert.LessOrEqual(t, *before.MaxOverMean, 1.05, msg)
			assert.LessOrEqual(t, *after.MaxOverMean, 1.05, msg)
		case "sqf":
			// sqf balances in-flight queues, not record counts: it matches
			// node's 1.00 while the brokers are equally fast, and sends a
			// broker that answers slower less, which is its purpose. On
			// the shared 2-core machine under other builds' load, broker 1
			// (two partitions after the kill) answers slower and sqf's
			// skew reached 1.06-1.19 (four runs, 2026-11-24); what it must
			// never do is fall into round robin's two shares.
			assert.Less(t, *before.MaxOverMean, 1.25, msg)
			assert.Less(t, *after.MaxOverMean, 1.25, msg)
		}
	}
}
