package chaos

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/chaos/embedded"
	"github.com/kplan-dev/kplan/internal/errkind"
	"github.com/kplan-dev/kplan/internal/stats"
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
	c, err := embedded.NewCluster(3, "test")
	require.NoError(t, err)
	defer c.Close()
	cfg := Defaults()
	edit(&cfg)
	res, err := Run(ctx, c, cfg)
	require.NoError(t, err)
	return res
}

// TestKillBroker3 runs the default experiment briefly on the embedded
// cluster and checks what does not depend on timing: leaders before and
// after the kill, nothing lost, every record answered, the schema, and no
// failover time on a simulated cluster. The skew figures of a longer run are
// checked in the integration tests (run_integration_test.go).
func TestKillBroker3(t *testing.T) {
	res := runEmbedded(t, func(cfg *Config) {
		cfg.Warmup, cfg.Phase = 500*time.Millisecond, 1500*time.Millisecond
		cfg.Rate = 50_000 // 500 records/s per producer
	})
	assert.Equal(t, Schema, res.Schema)
	assert.Equal(t, "embedded", res.Cluster)
	assert.Equal(t, int32(3), res.KilledBroker)
	assert.Nil(t, res.FailoverMS, "a simulated cluster times no failover")
	assert.Contains(t, res.Notes, "failover time: not applicable on a simulated cluster (its election is done before the kill returns)")
	for _, n := range res.Notes {
		assert.NotContains(t, n, "a second time", "re-reads are a JSON field, not a note")
	}
	require.Len(t, res.Partitioners, 4)
	for _, p := range res.Partitioners {
		before, after := p.Phases["before"], p.Phases["after"]
		require.NotNil(t, before, p.Name)
		require.NotNil(t, after, p.Name)
		assert.Nil(t, p.FailoverMS, p.Name)
		assert.Equal(t, []int32{1, 2, 3}, before.Leaders, p.Name)
		assert.Equal(t, []int32{1, 2}, after.Leaders, p.Name)
		assert.Zero(t, p.Lost, "%s lost acknowledged records", p.Name)
		assert.Zero(t, p.NeverAcked, p.Name)
		assert.Equal(t, p.Sent, p.Acked, p.Name)
		assert.Positive(t, after.Acked, p.Name)
		assert.GreaterOrEqual(t, p.FirstSuccessMS, 0.0, p.Name)
		assert.Equal(t, LatencyE2E, before.ViolationLatency, p.Name)
		// Every acknowledged record came in a counted batch (a batch that
		// spans a phase boundary is counted where it was acknowledged).
		assert.Positive(t, before.Batches, p.Name)
		assert.GreaterOrEqual(t, before.RecordsPerBatch, 1.0, p.Name)
		// About 250 records per broker: below MinSkewRecordsPerBroker.
		assert.Nil(t, before.MaxOverMean, p.Name)
	}
}

// Skew figures need MinSkewRecordsPerBroker records per leader on average.
// Regression: a 0.2 s failover phase printed max/mean 3.00 from a handful
// of records.
func TestSetSkew(t *testing.T) {
	for _, tc := range []struct {
		name   string
		counts map[int32]int64
		want   *float64
	}{
		{"failover phase", map[int32]int64{1: 30, 2: 0, 3: 0}, nil},
		{"just below", map[int32]int64{1: 1500, 2: 499}, nil},
		{"enough", map[int32]int64{1: 2000, 2: 1000}, ptr(4.0 / 3)},
		{"even", map[int32]int64{1: 1000, 2: 1000, 3: 1000}, ptr(1)},
		{"no leaders", map[int32]int64{}, nil},
	} {
		out := &PhaseResult{Shares: map[string]float64{}}
		setSkew(out, tc.counts)
		if tc.want == nil {
			assert.Nil(t, out.MaxOverMean, tc.name)
			assert.Nil(t, out.CV, tc.name)
			assert.Nil(t, out.Jain, tc.name)
			continue
		}
		require.NotNil(t, out.MaxOverMean, tc.name)
		assert.InDelta(t, *tc.want, *out.MaxOverMean, 1e-9, tc.name)
		assert.NotNil(t, out.Jain, tc.name)
		assert.Len(t, out.Shares, len(tc.counts), tc.name)
	}
}

// Regression: with --consume-after there is no end-to-end latency, and the
// violation rate and timely throughput were judged on an empty histogram.
func TestSetViolation(t *testing.T) {
	out := &PhaseResult{ThroughputMBps: 2, LatencyMS: stats.LatencySummary{Count: 10, ViolationRate: 0.5}}
	setViolation(out, 0)
	assert.Equal(t, LatencyProduce, out.ViolationLatency)
	assert.InDelta(t, 0.5, out.ViolationRate, 1e-12)
	assert.InDelta(t, 1.0, out.TimelyThroughputMBps, 1e-12)

	out = &PhaseResult{ThroughputMBps: 2, LatencyMS: stats.LatencySummary{Count: 10, ViolationRate: 0.5},
		E2ELatencyMS: stats.LatencySummary{Count: 10, ViolationRate: 0.25}}
	setViolation(out, 0)
	assert.Equal(t, LatencyE2E, out.ViolationLatency)
	assert.InDelta(t, 1.5, out.TimelyThroughputMBps, 1e-12)
}

func shortConfig() Config {
	cfg := Defaults()
	cfg.Partitioners = []string{"roundrobin", "node"}
	cfg.Warmup, cfg.Phase = 300*time.Millisecond, time.Second
	cfg.Rate = 20_000
	return cfg
}

func TestRunRefusesUnavailable(t *testing.T) {
	c, err := embedded.NewCluster(3, "test")
	require.NoError(t, err)
	defer c.Close()
	cfg := shortConfig()
	cfg.Assignment = RingAssignment([]int32{1, 2, 3}, 3, 1)
	_, err = Run(context.Background(), c, cfg)
	require.Error(t, err)
	assert.Equal(t, errkind.Refused, errkind.KindOf(err))
	assert.Equal(t, FieldReplicationFactor, errkind.FieldOf(err))
	assert.ErrorContains(t, err, "partition 2")

	cfg = shortConfig()
	cfg.Target = Target{Kind: TargetBroker, Broker: 4}
	_, err = Run(context.Background(), c, cfg)
	require.Error(t, err)
	assert.Equal(t, errkind.Usage, errkind.KindOf(err))
	assert.Equal(t, "kill", errkind.FieldOf(err))
	assert.ErrorContains(t, err, "no such broker")

	cfg = shortConfig()
	cfg.Assignment = [][]int32{{1, 5}}
	_, err = Run(context.Background(), c, cfg)
	require.Error(t, err)
	assert.Equal(t, errkind.Usage, errkind.KindOf(err))
	assert.Equal(t, "assignment", errkind.FieldOf(err))
	assert.ErrorContains(t, err, "broker 5")
}

// Busiest: with leaders 1,1,2 broker 1 leads most and dies; the sequential
// run kills it once per partitioner, restores it between them and at the
// end, and measures a recovered phase led by the preferred replicas again.
func TestRunBusiestSequentialRestore(t *testing.T) {
	if testing.Short() {
		t.Skip("in-process cluster experiment")
	}
	c, err := embedded.NewCluster(3, "test")
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
	c, err := embedded.NewCluster(3, "test")
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

// A second Ctrl-C (Abort) cuts the cleanup short: the killed broker stays
// down and the loss check is skipped, and the result says so.
func TestRunAbortCleanup(t *testing.T) {
	if testing.Short() {
		t.Skip("in-process cluster experiment")
	}
	c, err := embedded.NewCluster(3, "test")
	require.NoError(t, err)
	defer c.Close()
	cfg := shortConfig()
	cfg.Restore = true
	cfg.Phase = 3 * time.Second
	ctx, cancel := context.WithCancel(context.Background())
	abort := make(chan struct{})
	cfg.Abort = abort
	cfg.Progress = func(p Progress) {
		if p.Phase == "after" {
			select {
			case <-abort:
			default:
				close(abort) // the second interrupt came before the cleanup began
			}
			cancel()
		}
	}
	res, err := Run(ctx, c, cfg)
	require.ErrorIs(t, err, context.Canceled)
	require.NotNil(t, res)
	assert.True(t, res.Interrupted)
	assert.Equal(t, []int32{1, 2}, c.Embedded.Brokers(), "not restored: the cleanup was cut short")
	assert.Contains(t, res.Notes, "cleanup cut short: the loss check was skipped; lost counts are upper bounds")
	assert.Contains(t, res.Notes, "broker 3 is still down")
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
		assert.Equal(t, LatencyProduce, ph.ViolationLatency, name)
	}
	assert.Positive(t, p.Phases["after"].LatencyMS.Count)
}

// TestKIP794Timeout: kip794 with an availability timeout runs through a
// kill (the dead leader's partitions are left out once the timeout
// passes), loses nothing acknowledged, and the result records the timeout.
func TestKIP794Timeout(t *testing.T) {
	res := runEmbedded(t, func(cfg *Config) {
		cfg.Partitioners = []string{"kip794"}
		cfg.Warmup, cfg.Phase = 500*time.Millisecond, time.Second
		cfg.KIP794Timeout = 200 * time.Millisecond
	})
	assert.InDelta(t, 200.0, res.KIP794TimeoutMS, 0)
	p := res.Partitioners[0]
	assert.Positive(t, p.Phases["after"].Acked)
	assert.Zero(t, p.Lost)
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
