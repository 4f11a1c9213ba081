package chaos

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/report"
)

// runEmbedded runs the default experiment, changed by edit, on a fresh
// embedded 3-broker cluster.
func runEmbedded(t *testing.T, edit func(*Config)) *Result {
	t.Helper()
	if testing.Short() {
		t.Skip("in-process cluster experiment")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := NewEmbeddedCluster(3)
	require.NoError(t, err)
	defer c.Close()
	cfg := Defaults()
	edit(&cfg)
	res, err := Run(ctx, c, cfg)
	require.NoError(t, err)
	return res
}

// TestKillBroker3Acceptance is the acceptance on the embedded
// cluster: before the kill every partitioner spreads records evenly over
// brokers 1, 2, 3; after broker 3's partition moved to broker 1, roundrobin
// gives broker 1 two shares while node and sqf keep brokers even; nothing
// acknowledged is lost.
func TestKillBroker3Acceptance(t *testing.T) {
	res := runEmbedded(t, func(cfg *Config) {
		cfg.Warmup, cfg.Phase = time.Second, 3*time.Second
		cfg.Rate = 50_000 // 500 records/s per producer
	})
	if testing.Verbose() {
		require.NoError(t, report.Render(os.Stdout, report.Table, res, res.Document))
	}
	assert.Equal(t, "embedded", res.Cluster)
	assert.Equal(t, int32(3), res.KilledBroker)
	assert.GreaterOrEqual(t, res.FailoverMS, 0.0)
	require.Len(t, res.Partitioners, 4)
	for _, p := range res.Partitioners {
		before, after := p.Phases["before"], p.Phases["after"]
		require.NotNil(t, before, p.Name)
		require.NotNil(t, after, p.Name)
		assert.Equal(t, []int32{1, 2, 3}, before.Leaders, p.Name)
		assert.Equal(t, []int32{1, 2}, after.Leaders, p.Name)
		assert.Zero(t, p.Lost, "%s lost acknowledged records", p.Name)
		assert.Zero(t, p.NeverAcked, p.Name)
		assert.Equal(t, p.Sent, p.Acked, p.Name)
		assert.Positive(t, after.Acked, p.Name)
		assert.GreaterOrEqual(t, p.FirstSuccessMS, 0.0, p.Name)
		// Every acknowledged record came in a counted batch (a batch that
		// spans a phase boundary is counted where it was acknowledged).
		assert.Positive(t, before.Batches, p.Name)
		assert.GreaterOrEqual(t, before.RecordsPerBatch, 1.0, p.Name)
		assert.InDelta(t, float64(before.Acked), float64(before.Batches)*before.RecordsPerBatch, 0.2*float64(before.Acked), p.Name)
		switch p.Name {
		case "roundrobin", "node", "sqf":
			assert.LessOrEqual(t, before.MaxOverMean, 1.05, "%s before", p.Name)
		}
		switch p.Name {
		case "roundrobin":
			assert.GreaterOrEqual(t, after.MaxOverMean, 1.25, "roundrobin after")
		case "node", "sqf":
			assert.LessOrEqual(t, after.MaxOverMean, 1.05, "%s after", p.Name)
		}
	}
}

func shortConfig() Config {
	cfg := Defaults()
	cfg.Partitioners = []string{"roundrobin", "node"}
	cfg.Warmup, cfg.Phase = 300*time.Millisecond, time.Second
	cfg.Rate = 20_000
	return cfg
}

func TestRunRefusesUnavailable(t *testing.T) {
	c, err := NewEmbeddedCluster(3)
	require.NoError(t, err)
	defer c.Close()
	cfg := shortConfig()
	cfg.Assignment = RingAssignment([]int32{1, 2, 3}, 3, 1)
	_, err = Run(context.Background(), c, cfg)
	require.ErrorIs(t, err, ErrRefused)
	assert.Contains(t, err.Error(), "partition 2")

	cfg = shortConfig()
	cfg.Target = Target{Kind: TargetBroker, Broker: 4}
	_, err = Run(context.Background(), c, cfg)
	require.ErrorIs(t, err, ErrUsage)
	assert.Contains(t, err.Error(), "no such broker")

	cfg = shortConfig()
	cfg.Assignment = [][]int32{{1, 5}}
	_, err = Run(context.Background(), c, cfg)
	require.ErrorIs(t, err, ErrUsage)
}

// Busiest: with leaders 1,1,2 broker 1 leads most and dies; the sequential
// run kills it once per partitioner, restores it between them and at the
// end, and measures a recovered phase led by the preferred replicas again.
func TestRunBusiestSequentialRestore(t *testing.T) {
	if testing.Short() {
		t.Skip("in-process cluster experiment")
	}
	c, err := NewEmbeddedCluster(3)
	require.NoError(t, err)
	defer c.Close()
	cfg := shortConfig()
	cfg.Target = Target{Kind: TargetBusiest}
	cfg.Assignment = [][]int32{{1, 2}, {1, 3}, {2, 3}}
	cfg.Sequential, cfg.Restore = true, true
	var phases []string
	cfg.Progress = func(p Progress) { phases = append(phases, p.Partitioner+"/"+p.Phase) }
	res, err := Run(context.Background(), c, cfg)
	require.NoError(t, err)
	assert.Equal(t, int32(1), res.KilledBroker)
	assert.True(t, res.Sequential)
	require.Len(t, res.Partitioners, 2)
	for _, p := range res.Partitioners {
		assert.Equal(t, int32(1), p.KilledBroker)
		assert.Zero(t, p.Lost, p.Name)
		assert.Equal(t, []int32{2, 3}, p.Phases["after"].Leaders, p.Name)
		require.NotNil(t, p.Phases["recovered"], p.Name)
		assert.Equal(t, []int32{1, 2}, p.Phases["recovered"].Leaders, p.Name)
		assert.Positive(t, p.Phases["recovered"].Acked, p.Name)
	}
	assert.Equal(t, []int32{1, 2, 3}, c.Embedded.Brokers())
	assert.Contains(t, phases, "node/after")
}

// Ctrl-C: the run stops, restores the killed broker when asked and still
// returns what it measured.
func TestRunInterrupted(t *testing.T) {
	if testing.Short() {
		t.Skip("in-process cluster experiment")
	}
	c, err := NewEmbeddedCluster(3)
	require.NoError(t, err)
	defer c.Close()
	cfg := shortConfig()
	cfg.Restore = true
	cfg.Phase = 3 * time.Second // the progress ticker (every 250 ms) sees the after phase
	ctx, cancel := context.WithCancel(context.Background())
	cfg.Progress = func(p Progress) {
		if p.Phase == "after" {
			cancel()
		}
	}
	res, err := Run(ctx, c, cfg)
	require.ErrorIs(t, err, context.Canceled)
	require.NotNil(t, res)
	assert.True(t, res.Interrupted)
	assert.Equal(t, int32(3), res.KilledBroker)
	assert.Equal(t, []int32{1, 2, 3}, c.Embedded.Brokers(), "restored")
	for _, p := range res.Partitioners {
		assert.NotNil(t, p.Phases["before"])
		assert.Zero(t, p.Lost)
	}
}

// With ConsumeAfter the checking consumer starts only after the producers
// stopped: every record is still checked (nothing lost, nothing missing),
// but no end-to-end latency is recorded.
func TestConsumeAfter(t *testing.T) {
	res := runEmbedded(t, func(cfg *Config) {
		cfg.Partitioners = []string{"node"}
		cfg.Warmup, cfg.Phase = 500*time.Millisecond, time.Second
		cfg.ConsumeAfter = true
	})
	assert.True(t, res.ConsumeAfter)
	p := res.Partitioners[0]
	assert.Positive(t, p.Acked)
	assert.Equal(t, p.Sent, p.Acked)
	assert.Zero(t, p.Lost)
	assert.Zero(t, p.Duplicates)
	for name, ph := range p.Phases {
		assert.Zero(t, ph.E2ELatencyMS.Count, "phase %s has end-to-end samples", name)
	}
	assert.Positive(t, p.Phases["after"].LatencyMS.Count)
}

// A sequential run stops each partitioner's producer before the next one
// starts, even when no broker is killed: the first producer sends nothing
// while the second one is measured.
func TestSequentialLegsStop(t *testing.T) {
	res := runEmbedded(t, func(cfg *Config) {
		cfg.Partitioners = []string{"roundrobin", "node"}
		cfg.Target = Target{Kind: TargetNone}
		cfg.Sequential = true
		cfg.Warmup, cfg.Phase = 300*time.Millisecond, 2*time.Second
	})
	// The rate caps each producer at 1,000 records/s, so a 2 s before phase
	// holds at most about 2,000 records; a producer left running would keep
	// counting into it during the second leg's 2.3 s.
	for _, p := range res.Partitioners {
		before := p.Phases["before"]
		require.NotNil(t, before, p.Name)
		assert.Positive(t, before.Sent, p.Name)
		assert.Less(t, before.Sent, int64(3000), "%s kept producing after its leg", p.Name)
		assert.Zero(t, p.Lost, p.Name)
	}
}
