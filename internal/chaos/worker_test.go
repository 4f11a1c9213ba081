package chaos

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kplan-dev/kplan/internal/chaos/dist"
	"github.com/kplan-dev/kplan/internal/clock"
	"github.com/kplan-dev/kplan/internal/errkind"
	"github.com/kplan-dev/kplan/internal/kafka"
	"github.com/kplan-dev/kplan/internal/loadgen"
)

// distLab is an in-process cluster with a run's topics, playing the
// coordinator.
type distLab struct {
	conn kafka.ConnOptions
	ctl  *Control
}

func newDistLab(t *testing.T, ctx context.Context, run string, topics ...string) *distLab {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(3), kfake.SeedTopics(3, topics...))
	require.NoError(t, err)
	t.Cleanup(c.Close)
	conn := kafka.ConnOptions{BootstrapServers: strings.Join(c.ListenAddrs(), ",")}
	ctl, err := NewControl(ctx, conn, "test", run, nil, nil)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, ctl.Close(ctx)) })
	return &distLab{conn: conn, ctl: ctl}
}

func testDistPlan(run string, workers int, epoch time.Time, phases ...dist.PhaseStart) *dist.Plan {
	return &dist.Plan{
		Workers: workers, EnvelopeRun: 99, Epoch: epoch, RecordSize: 100, Acks: "all", Seed: 1,
		Streams:          []dist.Stream{{Partitioner: "roundrobin", Topic: "w-roundrobin", RateBytesPerS: 50_000}, {Partitioner: "node", Topic: "w-node", RateBytesPerS: 50_000}},
		ObjectiveNS:      int64(100 * time.Millisecond),
		LatencyCeilingNS: int64(loadgen.LatencyCeiling), MetadataMinAgeNS: int64(100 * time.Millisecond), MetadataMaxAgeNS: int64(time.Second),
		MaxBufferedRecords: 10_000, Stick: 1, Phases: phases,
		GuardNS: int64(300 * time.Millisecond), HeartbeatDeadlineNS: int64(2 * time.Second), ResultsTopic: dist.ResultsTopic(run),
	}
}

type workerRun struct {
	out *WorkerOutcome
	err error
}

func startWorkers(ctx context.Context, conn kafka.ConnOptions, run string, n int) (wait func() []workerRun) {
	res := make([]workerRun, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			res[i].out, res[i].err = RunWorker(ctx, &Worker{Run: run, Index: i, Conn: conn, Version: "test", JoinTimeout: 20 * time.Second})
		})
	}
	return func() []workerRun { wg.Wait(); return res }
}

// readBackByProducer reads the topics from offset 0 and counts each producer's
// records by sequence number, as the coordinator's checking consumer does.
func readBackByProducer(t *testing.T, ctx context.Context, conn kafka.ConnOptions, envRun uint64, topics ...string) map[int][]uint8 {
	t.Helper()
	cl, err := kafka.NewClient(conn, "test", kgo.ConsumeTopics(topics...), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100*time.Millisecond))
	require.NoError(t, err)
	defer cl.Close()
	rd := loadgen.NewReader(cl, nil)
	rd.Accept = func(r uint64) bool { return r == envRun }
	rd.Header = true
	tallies := map[int]*loadgen.Tally{}
	var mu sync.Mutex
	rctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		rd.Run(rctx, nil, func(r *kgo.Record, e loadgen.Envelope, _ time.Time) {
			mu.Lock()
			tl := tallies[int(e.Producer)]
			if tl == nil {
				tl = &loadgen.Tally{}
				tallies[int(e.Producer)] = tl
			}
			mu.Unlock()
			tl.Read(e.Seq, loadgen.Pos(r.Partition, r.Offset))
		})
	})
	require.NoError(t, rd.Drain(ctx, clock.System{}, cl, topics, 10*time.Second, 30*time.Second))
	stop()
	wg.Wait()
	reads := map[int][]uint8{}
	for i, tl := range tallies {
		reads[i] = tl.Counts()
	}
	return reads
}

// TestWorkersRunAPlan: two workers join a run, produce in each phase the
// coordinator starts (two planned in advance, one announced during the
// run), report every phase, and exit at the end; the merge has both
// partitioners, no loss, no duplicate, and each worker's records read
// back once each.
func TestWorkersRunAPlan(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const run = "t1"
	lab := newDistLab(t, ctx, run, "w-roundrobin", "w-node")
	wait := startWorkers(ctx, lab.conn, run, 2) // before the plan: they wait for it

	t0 := time.Now()
	plan := testDistPlan(run, 2, t0, dist.PhaseStart{Name: "warm-up", Start: t0.Add(700 * time.Millisecond)}, dist.PhaseStart{Name: "before", Start: t0.Add(1200 * time.Millisecond), DurationNS: int64(600 * time.Millisecond)})
	require.NoError(t, lab.ctl.Publish(ctx, dist.Message{Kind: dist.KindPlan, Plan: plan}))
	stopHB := lab.ctl.Heartbeats(ctx, time.Now, 200*time.Millisecond)
	defer stopHB()
	require.NoError(t, clock.Sleep(ctx, time.Until(t0.Add(1500*time.Millisecond))))
	require.NoError(t, lab.ctl.Publish(ctx, dist.Message{Kind: dist.KindPhase, Phase: &dist.PhaseStart{Name: "after", Start: t0.Add(1800 * time.Millisecond)}}))
	require.NoError(t, lab.ctl.Publish(ctx, dist.Message{Kind: dist.KindEnd, End: &dist.End{At: t0.Add(2400 * time.Millisecond), Reason: "done"}}))

	ran := []string{"warm-up", "before", "after"}
	for i, r := range wait() {
		require.NoError(t, r.err, "worker %d", i)
		assert.Equal(t, ran, r.out.Reported, "worker %d", i)
		assert.Empty(t, r.out.Missed, "worker %d", i)
		assert.Equal(t, "done", r.out.End, "worker %d", i)
		assert.Positive(t, r.out.Sent, "worker %d", i)
	}
	stopHB()
	reps := lab.ctl.WaitReports(ctx, 2, 2, ran, 10*time.Second, time.Minute)
	reads := readBackByProducer(t, ctx, lab.conn, plan.EnvelopeRun, "w-roundrobin", "w-node")
	assert.Len(t, reads, 4, "2 workers x 2 streams, each its own envelope producer index")
	m, err := dist.Merge(dist.Input{Plan: plan, Ran: ran, Reports: reps, Reads: reads})
	require.NoError(t, err)
	assert.Empty(t, m.Missing)
	require.Len(t, m.Partitioners, 2)
	for _, pf := range m.Partitioners {
		assert.Zero(t, pf.Lost, pf.Name)
		assert.Zero(t, pf.Duplicates, pf.Name)
		assert.Equal(t, pf.Sent, pf.Acked, pf.Name)
		for _, ph := range ran {
			f := pf.Phases[ph]
			require.NotNil(t, f, "%s %s", pf.Name, ph)
			assert.Equal(t, []int{0, 1}, f.Workers, "%s %s", pf.Name, ph)
			assert.Positive(t, f.Acked, "%s %s", pf.Name, ph)
			assert.Equal(t, f.Acked, f.Latency.Count(), "%s %s", pf.Name, ph)
		}
	}
	for _, wf := range m.Workers {
		assert.Positive(t, wf.Acked, "worker %d", wf.Index)
		assert.Equal(t, wf.Acked, wf.Read, "worker %d: every acknowledged record read back, once", wf.Index)
	}
}

// TestWorkerLateJoin: a worker that reads the plan after its phases began
// produces only from the current one and reports the others missed, with
// why; the merge names it.
func TestWorkerLateJoin(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const run = "late"
	lab := newDistLab(t, ctx, run, "w-roundrobin", "w-node")
	t0 := time.Now()
	plan := testDistPlan(run, 1, t0.Add(-3*time.Second),
		dist.PhaseStart{Name: "warm-up", Start: t0.Add(-3 * time.Second)},
		dist.PhaseStart{Name: "before", Start: t0.Add(-2 * time.Second)},
		dist.PhaseStart{Name: "after", Start: t0.Add(-time.Second)})
	require.NoError(t, lab.ctl.Publish(ctx, dist.Message{Kind: dist.KindPlan, Plan: plan}))
	stopHB := lab.ctl.Heartbeats(ctx, time.Now, 200*time.Millisecond)
	defer stopHB()
	require.NoError(t, lab.ctl.Publish(ctx, dist.Message{Kind: dist.KindEnd, End: &dist.End{At: t0.Add(time.Second), Reason: "done"}}))
	r := startWorkers(ctx, lab.conn, run, 1)()[0]
	require.NoError(t, r.err)
	ran := []string{"warm-up", "before", "after"}
	assert.Equal(t, ran, r.out.Missed)

	reps := lab.ctl.WaitReports(ctx, 1, 2, ran, 10*time.Second, time.Minute)
	m, err := dist.Merge(dist.Input{Plan: plan, Ran: ran, Reports: reps})
	require.NoError(t, err)
	require.Len(t, m.Missing, 3)
	assert.Equal(t, dist.Missing{Worker: 0, Phase: "warm-up", Reason: "joined after the phase ended"}, m.Missing[0])
	assert.Equal(t, "before", m.Missing[1].Phase)
	assert.Equal(t, "after", m.Missing[2].Phase)
	assert.Contains(t, m.Missing[2].Reason, "late (guard 300ms)")
}

// TestWorkerCoordinatorGone: a worker whose coordinator stops
// heartbeating stops within the plan's deadline, reports the phase it ran
// and says why.
func TestWorkerCoordinatorGone(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const run = "gone"
	lab := newDistLab(t, ctx, run, "w-roundrobin", "w-node")
	t0 := time.Now()
	plan := testDistPlan(run, 1, t0, dist.PhaseStart{Name: "warm-up", Start: t0.Add(300 * time.Millisecond)})
	plan.HeartbeatDeadlineNS = int64(time.Second)
	require.NoError(t, lab.ctl.Publish(ctx, dist.Message{Kind: dist.KindPlan, Plan: plan}))
	r := startWorkers(ctx, lab.conn, run, 1)()[0]
	require.ErrorIs(t, r.err, ErrCoordinatorGone)
	assert.Equal(t, []string{"warm-up"}, r.out.Missed, "stopped before the run's end: the phase is incomplete")
}

func TestWorkerRefusesIndex(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const run = "idx"
	lab := newDistLab(t, ctx, run, "w-roundrobin", "w-node")
	t0 := time.Now()
	require.NoError(t, lab.ctl.Publish(ctx, dist.Message{Kind: dist.KindPlan, Plan: testDistPlan(run, 2, t0, dist.PhaseStart{Name: "warm-up", Start: t0})}))
	_, err := RunWorker(ctx, &Worker{Run: run, Index: 2, Conn: lab.conn, Version: "test"})
	require.Error(t, err)
	assert.Equal(t, errkind.Usage, errkind.KindOf(err))
	assert.Equal(t, FieldWorkerIndex, errkind.FieldOf(err))

	_, err = RunWorker(ctx, &Worker{Run: "a b", Conn: lab.conn})
	assert.Equal(t, "run", errkind.FieldOf(err))
}
