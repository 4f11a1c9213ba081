package chaos

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/kplan-dev/kplan/internal/chaos/dist"
	"github.com/kplan-dev/kplan/internal/chaos/embedded"
	"github.com/kplan-dev/kplan/internal/errkind"
	"github.com/kplan-dev/kplan/internal/kafka"
)

// runDistributed runs a distributed experiment on the embedded cluster
// with in-process workers (RunWorker), started when the coordinator
// announces the run; stopAt, when set, is called with the progress and
// returns the index of a worker to stop (-1 none); skews[i], when given,
// sets worker i's clock that far off the coordinator's.
func runDistributed(t *testing.T, workers int, edit func(*Config), stopAt func(Progress) int, skews ...time.Duration) (*Result, []workerRun, *embedded.Cluster) {
	t.Helper()
	if testing.Short() {
		t.Skip("in-process cluster experiment")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := embedded.NewCluster(3, "test")
	require.NoError(t, err)
	t.Cleanup(c.Close)
	cfg := Defaults()
	cfg.Partitioners = []string{"roundrobin", "node"}
	cfg.Warmup, cfg.Phase = 500*time.Millisecond, 1500*time.Millisecond
	cfg.Rate = 50_000
	cfg.Workers = workers
	cfg.JoinTimeout = 30 * time.Second
	if edit != nil {
		edit(&cfg)
	}

	outs := make([]workerRun, workers)
	cancels := make([]context.CancelFunc, workers)
	var wg sync.WaitGroup
	cfg.OnRun = func(run string, seeds []string) {
		for i := range workers {
			wctx, wcancel := context.WithCancel(ctx)
			cancels[i] = wcancel
			w := &Worker{Run: run, Index: i, Conn: kafka.ConnOptions{BootstrapServers: strings.Join(seeds, ",")}, Version: "test"}
			if i < len(skews) {
				skew := skews[i]
				w.Now = func() time.Time { return time.Now().Add(skew) }
			}
			wg.Go(func() { outs[i].out, outs[i].err = RunWorker(wctx, w) })
		}
	}
	var stopped atomic.Bool
	if stopAt != nil {
		cfg.Progress = func(p Progress) {
			if i := stopAt(p); i >= 0 && !stopped.Swap(true) {
				cancels[i]()
			}
		}
	}
	res, err := Run(ctx, c, cfg)
	wg.Wait()
	require.NoError(t, err)
	return res, outs, c
}

// TestDistributedRun: two in-process workers produce a kill experiment the
// coordinator runs; the result has the invariants of a single-process run
// (every partitioner, the leaders before and after the kill, nothing lost
// or duplicated) and a workers section in which each worker's acknowledged
// records were read back once each.
func TestDistributedRun(t *testing.T) {
	res, outs, _ := runDistributed(t, 2, nil, nil)
	for i, o := range outs {
		require.NoError(t, o.err, "worker %d", i)
		assert.Equal(t, []string{"warm-up", "before", "failover", "after"}, o.out.Reported, "worker %d", i)
	}
	assert.Equal(t, int32(3), res.KilledBroker)
	var names []string
	for _, p := range res.Partitioners {
		names = append(names, p.Name)
	}
	require.Equal(t, []string{"roundrobin", "node"}, names)
	for _, p := range res.Partitioners {
		assert.Zero(t, p.Lost, p.Name)
		assert.Zero(t, p.Duplicates, p.Name)
		assert.Zero(t, p.NeverAcked, p.Name)
		assert.Positive(t, p.Acked, p.Name)
		before, after := p.Phases["before"], p.Phases["after"]
		require.NotNil(t, before, p.Name)
		require.NotNil(t, after, p.Name)
		assert.Equal(t, []int32{1, 2, 3}, before.Leaders, p.Name)
		assert.Equal(t, []int32{1, 2}, after.Leaders, p.Name)
		assert.Positive(t, before.Acked, p.Name)
		assert.Equal(t, before.Acked, before.LatencyMS.Count, "%s: one produce latency per acknowledged record, from the workers' histograms", p.Name)
		assert.Positive(t, before.E2ELatencyMS.Count, "%s: end-to-end latency measured by the coordinator's consumer", p.Name)
		var sum int64
		for _, n := range after.PerBroker {
			sum += n
		}
		assert.Equal(t, after.Acked, sum, p.Name)
	}
	require.NotNil(t, res.Workers)
	assert.Equal(t, 2, res.Workers.Count)
	require.NoError(t, dist.CheckRunID(res.Workers.Run))
	require.Len(t, res.Workers.Workers, 2)
	for _, w := range res.Workers.Workers {
		assert.Empty(t, w.Missed, "worker %d", w.Index)
		assert.Positive(t, w.Acked, "worker %d", w.Index)
		assert.Equal(t, w.Acked, w.Read, "worker %d: every acknowledged record read once", w.Index)
	}
	// The run's topics are not checked here: kfake keeps the killed broker
	// as its controller, which refuses their deletion (noted in the result);
	// TestDistributedRunWorkerKilled and the lab test check it.
}

// TestDistributedRunSkewedClocks: one worker's clock 3 s ahead of the
// coordinator's, the other's 3 s behind. Each measures its skew through the
// brokers' timestamps and corrects it: neither misses a phase (the one
// behind would learn of each start 3 s late, past the 1 s guard) and each
// skew is measured within its uncertainty. The end-to-end latencies and
// the uncertainty's size are acceptance figures
// (TestAcceptDistributedSkewedClocks).
func TestDistributedRunSkewedClocks(t *testing.T) {
	res, outs, _ := runDistributed(t, 2, nil, nil, 3*time.Second, -3*time.Second)
	for i, o := range outs {
		require.NoError(t, o.err, "worker %d", i)
		assert.Equal(t, []string{"warm-up", "before", "failover", "after"}, o.out.Reported, "worker %d", i)
	}
	require.NotNil(t, res.Workers)
	for i, want := range []float64{-3000, 3000} {
		w := res.Workers.Workers[i]
		assert.Empty(t, w.Missed, "worker %d", i)
		require.NotNil(t, w.Clock, "worker %d", i)
		assert.True(t, w.Clock.Corrected, "worker %d", i)
		assert.InDelta(t, want, w.Clock.SkewMS, w.Clock.UncertaintyMS+1, "worker %d", i)
	}
	for _, p := range res.Partitioners {
		before := p.Phases["before"]
		require.NotNil(t, before, p.Name)
		assert.Positive(t, before.E2ELatencyMS.Count, p.Name)
		assert.Zero(t, p.Lost, p.Name)
	}
}

// TestDistributedRunWorkerKilled: a worker stopped during the before phase
// is named with that phase, and its figures of it are left out. (No broker
// kill here: kfake's controller, once killed and restarted, may refuse the
// deletion of the run's topics; TestDistributedRun kills one.)
func TestDistributedRunWorkerKilled(t *testing.T) {
	res, outs, c := runDistributed(t, 2, func(cfg *Config) {
		cfg.Target = Target{Kind: TargetNone}
	}, func(p Progress) int {
		if p.Phase == "before" {
			return 1
		}
		return -1
	})
	require.NoError(t, outs[0].err)
	require.ErrorIs(t, outs[1].err, context.Canceled)
	require.NotNil(t, res.Workers)
	assert.Empty(t, res.Workers.Workers[0].Missed)
	missed := res.Workers.Workers[1].Missed
	require.Len(t, missed, 1)
	assert.Equal(t, "before", missed[0].Phase)
	assert.Contains(t, missed[0].Reason, "worker stopped during the phase")
	assert.Contains(t, strings.Join(res.Notes, "\n"), "worker 1 missed phase before")
	for _, p := range res.Partitioners {
		assert.Zero(t, p.Lost, p.Name)
		assert.Zero(t, p.Duplicates, p.Name)
	}
	assertRunTopicsGone(t, c, res)
}

func assertRunTopicsGone(t *testing.T, c *embedded.Cluster, res *Result) {
	run := res.Workers.Run
	t.Helper()
	cl, err := kafka.NewClient(kafka.ConnOptions{BootstrapServers: strings.Join(c.Seeds(), ",")}, "test")
	require.NoError(t, err)
	defer cl.Close()
	topics, err := kadm.NewClient(cl).ListTopics(context.Background())
	require.NoError(t, err)
	assert.False(t, topics.Has(dist.ControlTopic(run)), "notes: %q", res.Notes)
	assert.False(t, topics.Has(dist.ResultsTopic(run)), "notes: %q", res.Notes)
}

func TestValidateWorkers(t *testing.T) {
	for _, tc := range []struct {
		edit func(*Config)
		msg  string
	}{
		{func(c *Config) { c.Workers = -1 }, "negative"},
		{func(c *Config) { c.Workers = 100 }, "over 256 producers"},
		{func(c *Config) { c.Workers, c.Sequential = 2, true }, "sequential"},
		{func(c *Config) { c.Workers, c.Records = 2, 100 }, "--records"},
		{func(c *Config) { c.Workers, c.RunID = 2, "a/b" }, "'/'"},
		{func(c *Config) { c.Workers, c.Partitioners = 2, []string{SQFShared} }, SQFShared},
	} {
		cfg := Defaults()
		tc.edit(&cfg)
		err := cfg.Validate()
		require.Error(t, err, tc.msg)
		assert.Equal(t, errkind.Usage, errkind.KindOf(err))
		assert.Contains(t, err.Error(), tc.msg)
	}
}
