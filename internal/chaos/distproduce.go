package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/kplan-dev/kplan/internal/chaos/dist"
	"github.com/kplan-dev/kplan/internal/clock"
	"github.com/kplan-dev/kplan/internal/errkind"
	"github.com/kplan-dev/kplan/internal/kafka"
	"github.com/kplan-dev/kplan/internal/loadgen"
)

// DistProduce is a distributed run without a fault: N kplan workers
// produce Streams through one timed phase, as fast as they can where a
// stream's rate is 0, and report what was acknowledged. It is the
// coordinator of `kplan measure --workers N`: one partition's throughput
// with N producers on N machines, where one client's own CPU and network
// would be what a single process measures. The coordinator creates the
// run's control and results topics (Control), publishes the plan, waits
// for every worker, runs the phase, ends the run and deletes its topics,
// also on error and Ctrl-C; it produces nothing itself.
type DistProduce struct {
	// Conn reaches the cluster; Version is kplan's, for the clients' id.
	Conn    kafka.ConnOptions
	Version string
	// RunID is the run's id (dist.CheckRunID; "" makes a new one) and
	// Workers N.
	RunID   string
	Workers int
	// Streams are each worker's producers (the topics must exist).
	Streams []dist.Stream
	// RecordSize, Acks, Linger and MaxBufferedRecords are the producers'
	// settings (MaxBufferedRecords 0: chaos's default).
	RecordSize         int
	Acks               loadgen.Acks
	Linger             time.Duration
	MaxBufferedRecords int
	// Duration is the phase's length.
	Duration time.Duration
	// JoinTimeout bounds the wait for every worker (0:
	// DefaultJoinTimeout).
	JoinTimeout time.Duration
	// Now is the clock (nil: time.Now); Rand the source of the run's ids
	// (nil: a random one).
	Now  func() time.Time
	Rand *rand.Rand
	// JoinCheck, if set, is asked now and then while the run waits for
	// its workers whether waiting is pointless (a worker's pod cannot
	// start); its error ends the run.
	JoinCheck func(context.Context) error
	// OnRun, if set, is called with the run's id once its topics exist,
	// before the wait for the workers: the caller prints the command that
	// starts them.
	OnRun func(run string)
	// Progress, if set, gets one line at a time.
	Progress func(format string, a ...any)
}

// DistProduceResult is what the workers acknowledged in the phase.
type DistProduceResult struct {
	Run string
	// Start and End are the phase's bounds on the coordinator's clock.
	Start, End time.Time
	// Reports are the workers' reports of the phase.
	Reports []dist.PhaseReport
	// Missed names the workers without a complete report, with why.
	Missed map[int]string
	// Acked and AckedBytes add up every report.
	Acked, AckedBytes int64
	// BucketWidth, FirstBucket and Buckets are the acknowledged bytes over
	// time (dist.MergeBuckets), bucket FirstBucket starting at
	// Epoch + FirstBucket*BucketWidth.
	Epoch       time.Time
	BucketWidth time.Duration
	FirstBucket int
	Buckets     []int64
}

// distProducePhase is the phase the workers produce in: a steady-state
// measurement, as a chaos run's before phase.
const distProducePhase = "before"

func (d *DistProduce) progress(format string, a ...any) {
	if d.Progress != nil {
		d.Progress(format, a...)
	}
}

// Run runs the phase and returns the merged result. A worker that fails
// or falls silent is named in Missed; none reporting is an error.
func (d *DistProduce) Run(ctx context.Context) (res *DistProduceResult, err error) {
	now := d.Now
	if now == nil {
		now = time.Now
	}
	switch {
	case d.Workers < 1 || d.Workers*len(d.Streams) > dist.MaxProducers:
		return nil, errkind.Usagef(FieldWorkers, "%d workers x %d producers: want 1 to %d producers", d.Workers, len(d.Streams), dist.MaxProducers)
	case len(d.Streams) == 0:
		return nil, errkind.Usagef(FieldWorkers, "no stream to produce")
	case d.Duration <= 0:
		return nil, errkind.Usagef("duration", "%v, want a positive duration", d.Duration)
	}
	rng := d.Rand
	if rng == nil {
		rng = rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64())) //nolint:gosec // ids, not secrets
	}
	run := d.RunID
	if run == "" {
		run = NewRunID(now(), rng)
	}
	ctl, err := NewControl(ctx, d.Conn, d.Version, run, nil, now)
	if err != nil {
		return nil, err
	}
	defer func() {
		if cerr := ctl.Close(ctx); cerr != nil && err == nil {
			err = cerr
		}
	}()
	if d.OnRun != nil {
		d.OnRun(run)
	}
	def := Defaults()
	maxBuf := d.MaxBufferedRecords
	if maxBuf <= 0 {
		maxBuf = def.MaxBufferedRecords
	}
	epoch := now()
	plan := &dist.Plan{
		Workers: d.Workers, EnvelopeRun: rng.Uint64(), Epoch: epoch, Streams: d.Streams, RecordSize: d.RecordSize, Acks: d.Acks.String(), Seed: rng.Uint64(),
		ObjectiveNS: int64(def.Objective), LatencyCeilingNS: int64(loadgen.LatencyCeiling),
		MetadataMinAgeNS: int64(def.MetadataMinAge), MetadataMaxAgeNS: int64(def.MetadataMaxAge),
		MaxBufferedRecords: maxBuf, SQFSlack: def.SQFSlack, Stick: def.Stick, LingerNS: int64(d.Linger),
		GuardNS: int64(phaseGuard), HeartbeatDeadlineNS: int64(heartbeatDeadline), ResultsTopic: dist.ResultsTopic(run),
	}
	if off, ok := ctl.ProbeClock(ctx); ok {
		plan.ClockKnown, plan.ClockOffsetNS, plan.ClockUncertaintyNS = true, int64(off.Offset), int64(off.Uncertainty)
	}
	stopHB := ctl.Heartbeats(context.WithoutCancel(ctx), now, heartbeatEvery)
	defer stopHB()
	if err := ctl.Publish(ctx, dist.Message{Kind: dist.KindPlan, Plan: plan}); err != nil {
		return nil, err
	}
	ended := false
	end := func(ctx context.Context, reason string) {
		ended = true
		if err := ctl.Publish(ctx, dist.Message{Kind: dist.KindEnd, End: &dist.End{At: now(), Reason: reason}}); err != nil {
			d.progress("the end of run %s could not be announced (the workers stop when the heartbeats stop): %v", run, err)
		}
	}
	defer func() {
		if !ended { // the workers that joined stop now, not at the heartbeat deadline
			bg, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			defer cancel()
			end(bg, fmt.Sprintf("the coordinator stopped: %v", err))
		}
	}()
	timeout := d.JoinTimeout
	if timeout <= 0 {
		timeout = DefaultJoinTimeout
	}
	d.progress("run %s: waiting up to %v for %d workers", run, timeout, d.Workers)
	if err = awaitWorkers(ctx, ctl, d.Workers, run, timeout, now, d.JoinCheck); err != nil {
		return nil, err
	}
	res = &DistProduceResult{Run: run, Epoch: epoch, Missed: map[int]string{}}
	res.Start = now().Add(phaseLead)
	if err := ctl.Publish(ctx, dist.Message{Kind: dist.KindPhase, Phase: &dist.PhaseStart{Name: distProducePhase, Start: res.Start, DurationNS: int64(d.Duration)}}); err != nil {
		return nil, err
	}
	d.progress("run %s: %d workers produce for %v", run, d.Workers, d.Duration)
	planned := res.Start.Add(d.Duration)
	runErr := clock.Sleep(ctx, planned.Sub(now()))
	// The workers stop at the phase's planned end: a late wake-up here
	// adds no window.
	res.End = now()
	if res.End.After(planned) {
		res.End = planned
	}
	reason, wait := "done", reportsTimeout
	if runErr != nil {
		reason, wait = "interrupted: "+runErr.Error(), 15*time.Second
	}
	bg, cancel := context.WithTimeout(context.WithoutCancel(ctx), wait+30*time.Second)
	defer cancel()
	end(bg, reason)
	reps := ctl.WaitReports(bg, d.Workers, len(d.Streams), []string{distProducePhase}, wait, workerSilent)
	if runErr != nil {
		return nil, runErr
	}
	return res, res.add(reps, d.Workers, len(d.Streams))
}

// add keeps the phase's reports, names the workers without a complete
// one and merges the acknowledged bytes over time.
func (res *DistProduceResult) add(reps []dist.PhaseReport, workers, streams int) error {
	have := map[int]int{}
	for _, r := range reps {
		if r.Phase != distProducePhase {
			continue
		}
		if r.Missed != "" {
			res.Missed[r.Worker] = r.Missed
			continue
		}
		have[r.Worker]++
		res.Reports = append(res.Reports, r)
		res.Acked += r.Acked
		res.AckedBytes += r.AckedBytes
	}
	for w := range workers {
		if _, missed := res.Missed[w]; !missed && have[w] < streams {
			res.Missed[w] = "no report (the worker stopped or fell silent)"
		}
	}
	if len(res.Reports) == 0 {
		return errkind.New(errkind.Runtime, FieldWorkers, "no worker of run %s reported the phase (%d missed)", res.Run, len(res.Missed))
	}
	width, first, sums, err := dist.MergeBuckets(res.Reports)
	if err != nil {
		return fmt.Errorf("run %s: %w", res.Run, err)
	}
	res.BucketWidth, res.FirstBucket, res.Buckets = width, first, sums
	return nil
}

// Windows are the acknowledged bytes in consecutive windows of w from the
// phase's start (w a multiple of the bucket width; a partial last window
// is left out), for measure.ThroughputOf.
func (res *DistProduceResult) Windows(w time.Duration) ([]int64, error) {
	if res.BucketWidth <= 0 || w < res.BucketWidth || w%res.BucketWidth != 0 {
		return nil, errkind.Usagef("window", "%v: want a multiple of the workers' %v buckets", w, res.BucketWidth)
	}
	per := int(w / res.BucketWidth)
	start := int(res.Start.Sub(res.Epoch) / res.BucketWidth) // the bucket the phase starts in
	n := int(res.End.Sub(res.Start) / w)
	out := make([]int64, n)
	for i := range n {
		for b := start + i*per; b < start+(i+1)*per; b++ {
			if j := b - res.FirstBucket; j >= 0 && j < len(res.Buckets) {
				out[i] += res.Buckets[j]
			}
		}
	}
	return out, nil
}
