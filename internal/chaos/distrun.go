package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"time"

	"github.com/kplan-dev/kplan/internal/chaos/dist"
	"github.com/kplan-dev/kplan/internal/clock"
	"github.com/kplan-dev/kplan/internal/errkind"
	"github.com/kplan-dev/kplan/internal/loadgen"
	"github.com/kplan-dev/kplan/internal/stats"
)

// Distributed runs (Config.Workers > 0): the coordinator (Run) creates the
// run's topics (Control), publishes the plan, waits for every worker's
// first heartbeat, announces each phase a lead time before it starts, kills
// as in a single-process run, ends the run, waits for the workers' reports
// and reads every record back with its own checking consumer. Each worker's
// producer is represented by a remote producer here: the consumer ticks off
// its records, and the reports fill its figures, so Result is built by the
// same code as a single-process run's.

// Fields of a distributed run's usage errors.
const (
	FieldWorkers = "workers"
	FieldRunID   = "run"
)

// DefaultJoinTimeout bounds the wait for every worker's first heartbeat
// when Config.JoinTimeout is 0.
const DefaultJoinTimeout = 5 * time.Minute

// Timing of a distributed run: a phase is announced phaseLead before it
// starts; a worker that acts on it more than phaseGuard after its start
// reports it missed; workers stop after heartbeatDeadline without the
// coordinator's heartbeat (sent every heartbeatEvery).
const (
	phaseLead         = 300 * time.Millisecond
	phaseGuard        = time.Second
	heartbeatEvery    = 500 * time.Millisecond
	heartbeatDeadline = 10 * time.Second
	reportsTimeout    = time.Minute
	// workerSilent is how long without a worker's heartbeat (sent every
	// WorkerHeartbeatEvery) the coordinator stops waiting for its reports.
	workerSilent = 5 * WorkerHeartbeatEvery
)

// WorkersResult is a distributed run's workers: who produced what, and
// which phases each missed (its figures of those phases are left out of
// every partitioner's, not mixed in).
type WorkersResult struct {
	// Run is the run's id; Count the number of workers.
	Run   string `json:"run"`
	Count int    `json:"count"`
	// Workers by index.
	Workers []WorkerResult `json:"workers"`
}

// WorkerResult is one worker of a distributed run.
type WorkerResult struct {
	Index int `json:"index"`
	// Sent and Acked over the phases it reported; Read the distinct
	// records of its producers the checking consumer read back.
	Sent  int64 `json:"sent"`
	Acked int64 `json:"acked"`
	Read  int64 `json:"read"`
	// Missed are the phases without its complete report, with why.
	Missed []MissedPhase `json:"missed,omitempty"`
	// Clock is its clock against the coordinator's (nil: not measured).
	Clock *WorkerClock `json:"clock,omitempty"`
}

// WorkerClock is a worker's clock against the coordinator's, measured
// through the brokers' log-append times: the coordinator's clock reads
// SkewMS more than the worker's, within UncertaintyMS. Corrected says the
// worker timed its phases and records on its clock plus the skew (it does
// so when the skew is larger than its uncertainty).
type WorkerClock struct {
	SkewMS        float64 `json:"skew_ms"`
	UncertaintyMS float64 `json:"uncertainty_ms"`
	Corrected     bool    `json:"corrected"`
}

// MissedPhase is a phase a worker has no complete report of.
type MissedPhase struct {
	Phase  string `json:"phase"`
	Reason string `json:"reason"`
}

// distRun is the coordinator's state of a distributed run.
type distRun struct {
	run     string
	ctl     *Control
	plan    *dist.Plan
	stopHB  func()
	ran     []string
	reports []dist.PhaseReport
	merged  *dist.Merged
}

// NewRunID is a new run id: the time and 4 random hex digits.
func NewRunID(now time.Time, rng *rand.Rand) string {
	return fmt.Sprintf("%s-%04x", now.UTC().Format("20060102t150405"), rng.IntN(1<<16))
}

// validateWorkers checks a distributed run's settings.
func (c *Config) validateWorkers() error {
	if c.Workers < 0 {
		return errkind.Usagef(FieldWorkers, "%d is negative", c.Workers)
	}
	if c.Workers == 0 {
		return nil
	}
	if c.RunID != "" {
		if err := dist.CheckRunID(c.RunID); err != nil {
			return err
		}
	}
	streams := len(c.Partitioners) * max(1, len(c.Workload))
	switch {
	case c.Workers*streams > dist.MaxProducers:
		return errkind.Usagef(FieldWorkers, "%d workers x %d producers each is over %d producers (a record's envelope has one byte for its producer)", c.Workers, streams, dist.MaxProducers)
	case c.Sequential:
		return errkind.Usagef(FieldWorkers, "not with sequential runs (partitioners side by side only)")
	case c.Records > 0:
		return errkind.Usagef(FieldWorkers, "not with --records: phases are timed (--phase-duration)")
	case c.ConsumeAfter:
		return errkind.Usagef(FieldWorkers, "not with --consume-after")
	case c.JoinTimeout < 0:
		return errkind.Usagef(FieldWorkers, "negative join timeout")
	}
	for _, w := range c.Workload {
		if w.Keys.Keyed() {
			return errkind.Usagef(FieldWorkers, "workload topic %s has keys: distributed runs produce keyless records", w.Name)
		}
	}
	if c.SQFShared() {
		return errkind.Usagef(FieldWorkers, "%s shares one tracker between producers of one process: not across workers", SQFShared)
	}
	return nil
}

// SQFShared reports whether the run uses the sqf-shared partitioner.
func (c *Config) SQFShared() bool { return slices.Contains(c.Partitioners, SQFShared) }

// newRemoteProducers makes one remote producer per worker and stream, at
// the records' envelope index dist.ProducerIndex.
func (r *runner) newRemoteProducers(runID uint64) {
	cfg := r.cfg
	for w := range cfg.Workers {
		for i, st := range r.streams {
			p := &producer{idx: dist.ProducerIndex(w, i, len(r.streams)), name: st.part, topic: st.topic, wname: st.wname, rate: st.rate,
				cfg: cfg, epoch: r.epoch, now: r.now, runID: runID, remote: &remote{worker: w, stream: i}}
			rng := rand.New(rand.NewPCG(cfg.Seed, uint64(p.idx)+1)) //nolint:gosec // idx < 256
			for ph := range p.phases {
				p.phases[ph] = newPhaseStats(cfg.Objective, rng)
			}
			r.prods = append(r.prods, p)
		}
	}
}

// startDist creates the run's topics, publishes the plan, starts the
// heartbeats and waits for every worker's first heartbeat.
func (r *runner) startDist(ctx context.Context, envRun uint64) error {
	cfg := r.cfg
	run := cfg.RunID
	ctl, err := NewControl(ctx, r.clientOpts(), cfg.Version, run, r.atRisk(ctx), r.now)
	if err != nil {
		return err
	}
	d := &distRun{run: run, ctl: ctl}
	r.dist = d
	if cfg.OnRun != nil {
		cfg.OnRun(run, r.c.Seeds())
	}
	d.plan = &dist.Plan{
		Workers: cfg.Workers, EnvelopeRun: envRun, Epoch: r.epoch, RecordSize: cfg.RecordSize, Acks: cfg.Acks.String(), Seed: cfg.Seed,
		ObjectiveNS: int64(cfg.Objective), LatencyCeilingNS: int64(loadgen.LatencyCeiling),
		MetadataMinAgeNS: int64(cfg.MetadataMinAge), MetadataMaxAgeNS: int64(cfg.MetadataMaxAge),
		MaxBufferedRecords: cfg.MaxBufferedRecords, SQFSlack: cfg.SQFSlack, Stick: cfg.Stick, KIP794TimeoutNS: int64(cfg.KIP794Timeout),
		GuardNS: int64(phaseGuard), HeartbeatDeadlineNS: int64(heartbeatDeadline), ResultsTopic: dist.ResultsTopic(run),
	}
	for _, st := range r.streams {
		d.plan.Streams = append(d.plan.Streams, dist.Stream{Partitioner: st.part, Topic: st.topic, RateBytesPerS: st.rate})
	}
	if off, ok := ctl.ProbeClock(ctx); ok {
		d.plan.ClockKnown, d.plan.ClockOffsetNS, d.plan.ClockUncertaintyNS = true, int64(off.Offset), int64(off.Uncertainty)
	} else {
		r.notes = append(r.notes, "the coordinator's clock could not be measured against the brokers' (no probe came back): the workers time phases on their own clocks")
	}
	d.stopHB = ctl.Heartbeats(context.WithoutCancel(ctx), r.now, heartbeatEvery)
	if err := ctl.Publish(ctx, dist.Message{Kind: dist.KindPlan, Plan: d.plan}); err != nil {
		return err
	}
	return awaitWorkers(ctx, ctl, cfg.Workers, run, cfg.JoinTimeout, r.now, cfg.JoinCheck)
}

// joinCheckEvery is how often the wait for the workers asks its check
// whether waiting is pointless.
const joinCheckEvery = 2 * time.Second

// awaitWorkers waits until n workers of run have sent a heartbeat on ctl,
// at most timeout (0: DefaultJoinTimeout). check, when set, is asked every
// joinCheckEvery whether waiting is pointless (a worker's pod cannot
// start, say); its error ends the wait at once.
func awaitWorkers(ctx context.Context, ctl *Control, n int, run string, timeout time.Duration, now func() time.Time, check func(context.Context) error) error {
	if timeout <= 0 {
		timeout = DefaultJoinTimeout
	}
	var asked time.Time
	var stuck error
	err := clock.Poll(ctx, clock.WithNow(now), 100*time.Millisecond, timeout, func(ctx context.Context) (bool, error) {
		if len(ctl.Seen()) >= n {
			return true, nil
		}
		if check != nil && now().Sub(asked) >= joinCheckEvery {
			asked = now()
			if stuck = check(ctx); stuck != nil {
				return true, stuck
			}
		}
		return false, nil
	})
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return ctx.Err()
	case stuck != nil:
		return fmt.Errorf("%d of %d workers joined run %s: %w", len(ctl.Seen()), n, run, stuck)
	}
	return errkind.New(errkind.Runtime, FieldWorkers, "%d of %d workers joined run %s within %v (workers seen: %v)", len(ctl.Seen()), n, run, timeout, ctl.Seen())
}

// atRisk are the brokers the run will kill or fault, as far as they are
// known before it starts (a target that does not resolve yet is left out:
// the run reports its error later, where it acts).
func (r *runner) atRisk(ctx context.Context) []int32 {
	var out []int32
	targets := []Target{r.cfg.Target}
	if r.cfg.Fault != nil {
		targets = append(targets, r.cfg.Fault.Target)
	}
	for _, t := range targets {
		if t.Kind == TargetNone {
			continue
		}
		if id, err := r.resolveTarget(ctx, &leg{prods: r.prods}, t); err == nil {
			out = append(out, id)
		}
	}
	return out
}

// announce publishes ph's start a lead time ahead and waits for it: the
// workers switch at the same instant as the coordinator's phase window.
func (r *runner) announce(ctx context.Context, ph Phase) {
	d := r.dist
	start := r.now().Add(phaseLead)
	d.ran = append(d.ran, ph.String())
	if err := d.ctl.Publish(ctx, dist.Message{Kind: dist.KindPhase, Phase: &dist.PhaseStart{Name: ph.String(), Start: start}}); err != nil {
		r.notes = append(r.notes, fmt.Sprintf("phase %s could not be announced to the workers: %v", ph, err))
	}
	_ = clock.Sleep(ctx, start.Sub(r.now()))
}

// endDist ends the run for the workers and waits for their reports.
func (r *runner) endDist(ctx context.Context, runErr error) {
	d := r.dist
	reason := "done"
	timeout := reportsTimeout
	if runErr != nil {
		reason, timeout = "interrupted: "+runErr.Error(), 15*time.Second
	}
	bg, cancel := r.cleanupContext(ctx)
	defer cancel()
	if err := d.ctl.Publish(bg, dist.Message{Kind: dist.KindEnd, End: &dist.End{At: r.now(), Reason: reason}}); err != nil {
		r.notes = append(r.notes, fmt.Sprintf("the end of the run could not be announced to the workers (they stop when the heartbeats stop): %v", err))
	}
	d.reports = d.ctl.WaitReports(bg, r.cfg.Workers, len(r.streams), d.ran, timeout, workerSilent)
	d.stopHB()
}

// applyReports merges the workers' reports into the remote producers'
// figures (after the loss check's read): a worker's phase without a
// complete report is left out and named.
func (r *runner) applyReports() {
	d := r.dist
	reads := map[int][]uint8{}
	for _, p := range r.prods {
		reads[p.idx] = p.tally.Counts()
	}
	m, err := dist.Merge(dist.Input{Plan: d.plan, Ran: d.ran, Reports: d.reports, Reads: reads})
	if err != nil {
		r.notes = append(r.notes, fmt.Sprintf("workers' reports not merged: %v", err))
		return
	}
	d.merged = m
	missing := map[string]bool{}
	for _, ms := range m.Missing {
		missing[fmt.Sprintf("%d/%s", ms.Worker, ms.Phase)] = true
		r.notes = append(r.notes, fmt.Sprintf("worker %d missed phase %s (%s): its figures of that phase are left out", ms.Worker, ms.Phase, ms.Reason))
	}
	byKey := map[string]dist.PhaseReport{}
	for _, rep := range d.reports {
		k := fmt.Sprintf("%d/%d/%s", rep.Worker, rep.Stream, rep.Phase)
		if _, ok := byKey[k]; !ok {
			byKey[k] = rep
		}
	}
	for _, p := range r.prods {
		rm := p.remote
		counts := reads[p.idx]
		var ls loss
		acked := map[uint64]bool{}
		for _, name := range d.ran {
			if missing[fmt.Sprintf("%d/%s", rm.worker, name)] {
				continue
			}
			rep := byKey[fmt.Sprintf("%d/%d/%s", rm.worker, rm.stream, name)]
			ph, _ := phaseByName(name)
			if err := fillPhase(p, ph, rep, r.cfg.Objective); err != nil {
				r.notes = append(r.notes, fmt.Sprintf("worker %d %s %s: %v", rm.worker, p.name, name, err))
				continue
			}
			lost := int64(0)
			for _, rg := range rep.AckedSeqs {
				for q := rg.From; q < rg.To; q++ {
					acked[q] = true
					if q >= uint64(len(counts)) || counts[q] == 0 {
						lost++
					}
				}
			}
			p.phases[ph].lost = lost
			ls.sent += rep.Sent
			ls.acked += rep.Acked
			ls.lost += lost
		}
		ls.neverAcked = ls.sent - ls.acked
		for q, n := range counts {
			if n > 1 {
				ls.duplicates += int64(n) - 1
			}
			if n > 0 && !acked[uint64(q)] && len(m.Workers[rm.worker].Missed) == 0 {
				ls.unackedDelivered++
			}
		}
		rm.loss = ls
	}
}

// fillPhase sets a remote producer's figures of one phase from its report.
func fillPhase(p *producer, ph Phase, rep dist.PhaseReport, objective time.Duration) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.phases[ph]
	s.sent, s.acked, s.failed, s.ackedBytes = rep.Sent, rep.Acked, rep.Failed, rep.AckedBytes
	for k, bc := range rep.PerBroker {
		id, err := strconv.ParseInt(k, 10, 32)
		if err != nil {
			return err
		}
		s.perBroker[int32(id)] = &brokerCount{records: bc.Records, bytes: bc.Bytes}
	}
	for k, n := range rep.PerPartition {
		part, err := strconv.ParseInt(k, 10, 32)
		if err != nil {
			return err
		}
		s.perPartition[int32(part)] = n
	}
	if rep.Latency != "" {
		l, err := stats.DecodeLatency(rep.Latency, loadgen.LatencyCeiling, objective, rep.Violating, rep.Clamped)
		if err != nil {
			return err
		}
		s.prod = l
	}
	p.sentIn[ph].Store(rep.Sent)
	p.batches[ph].Store(rep.Batches)
	p.batchRecords[ph].Store(rep.BatchRecords)
	return nil
}

// workersResult is the result's workers section.
func (r *runner) workersResult() *WorkersResult {
	d := r.dist
	out := &WorkersResult{Run: d.run, Count: r.cfg.Workers}
	if d.merged == nil {
		return out
	}
	reasons := map[string]string{}
	for _, ms := range d.merged.Missing {
		reasons[fmt.Sprintf("%d/%s", ms.Worker, ms.Phase)] = ms.Reason
	}
	for _, wf := range d.merged.Workers {
		wr := WorkerResult{Index: wf.Index, Sent: wf.Sent, Acked: wf.Acked, Read: wf.Read}
		if c := wf.Clock; c != nil {
			wr.Clock = &WorkerClock{SkewMS: ms(c.Skew.Offset), UncertaintyMS: ms(c.Skew.Uncertainty), Corrected: c.Corrected}
		}
		for _, ph := range wf.Missed {
			wr.Missed = append(wr.Missed, MissedPhase{Phase: ph, Reason: reasons[fmt.Sprintf("%d/%s", wf.Index, ph)]})
		}
		out.Workers = append(out.Workers, wr)
	}
	return out
}
