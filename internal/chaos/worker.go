package chaos

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kplan-dev/kplan/internal/chaos/dist"
	"github.com/kplan-dev/kplan/internal/errkind"
	"github.com/kplan-dev/kplan/internal/kafka"
	"github.com/kplan-dev/kplan/internal/loadgen"
)

// Worker is one kplan worker of a distributed run: it joins the run by id,
// reads the plan from the run's control topic (dist.ControlTopic), produces
// with the experiment's producers in each phase the coordinator starts,
// and publishes one dist.PhaseReport per phase and producer on the results
// topic. It creates and deletes no topic: the coordinator owns them.
type Worker struct {
	// Run is the run's id (dist.CheckRunID).
	Run string
	// Index is this worker's index in [0, N).
	Index int
	// Conn reaches the cluster (bootstrap servers and command config).
	Conn kafka.ConnOptions
	// Version is kplan's version, for the clients' id.
	Version string
	// JoinTimeout bounds the wait for the plan (0: 10 minutes): a worker
	// may start before its coordinator.
	JoinTimeout time.Duration
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	// Log, if set, gets one line per event (plan read, phase started,
	// report published).
	Log func(string)
}

// WorkerOutcome is what a worker did.
type WorkerOutcome struct {
	// Workers is N, from the plan.
	Workers int
	// Reported are the phases it published complete reports of, Missed
	// those it reported missed, in order.
	Reported, Missed []string
	// Sent is the records its producers sent over the run.
	Sent int64
	// End is the coordinator's reason for the end ("" when the worker
	// stopped for another reason).
	End string
}

// Fields of a worker's usage errors.
const (
	FieldWorkerIndex = "index"
	FieldWorkerRun   = "run"
)

// WorkerHeartbeatEvery is how often a worker publishes its heartbeat (at
// most: a quarter of the plan's deadline if that is shorter).
const WorkerHeartbeatEvery = time.Second

// ErrCoordinatorGone is the error of a worker whose coordinator's
// heartbeats stopped for longer than the plan's deadline.
var ErrCoordinatorGone = errors.New("the coordinator's heartbeat missed its deadline")

// worker is one run of a Worker.
type worker struct {
	w    *Worker
	now  func() time.Time
	cl   *kgo.Client // control and results
	plan *dist.Plan
	r    *runner
	log  func(string, ...any)

	// sched are the phases known, by start; cur the index of the current
	// one (-1 before the first).
	sched  []dist.PhaseStart
	cur    int
	missed map[string]string // phase name -> why
	lastHB time.Time         // when the coordinator's last heartbeat was read
	end    *dist.End

	phase   *leg // the producers' phase and stop channel
	started bool

	mu       sync.Mutex
	reported map[string]bool
	out      WorkerOutcome
	pubs     sync.WaitGroup
	pubErr   error
	// prevPub is closed when the previous report is published (or given
	// up): reports go out in phase order, so "phase X reported" means
	// every earlier phase was reported too.
	prevPub chan struct{}

	// probes are this worker's clock probes read back from the control
	// topic; clock its clock against the coordinator's once measured.
	probes chan dist.ClockSample
	clock  *dist.WorkerClock
}

// RunWorker runs w until the run ends (nil), its coordinator disappears
// (ErrCoordinatorGone) or ctx ends (ctx's error); in each case it stops
// its producers and publishes the reports of the phases that ran.
func RunWorker(ctx context.Context, w *Worker) (*WorkerOutcome, error) {
	if err := dist.CheckRunID(w.Run); err != nil {
		return nil, err
	}
	if w.Index < 0 || w.Index >= dist.MaxProducers {
		return nil, errkind.Usagef(FieldWorkerIndex, "%d, want 0 to %d", w.Index, dist.MaxProducers-1)
	}
	now := w.Now
	if now == nil {
		now = time.Now
	}
	control := dist.ControlTopic(w.Run)
	cl, err := kafka.NewClient(w.Conn, w.Version,
		kgo.ConsumeTopics(control),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(100*time.Millisecond),
		kgo.MetadataMinAge(100*time.Millisecond),
		kgo.ProducerLinger(0),
	)
	if err != nil {
		return nil, fmt.Errorf("worker client: %w", err)
	}
	defer cl.Close()
	wk := &worker{w: w, now: now, cl: cl, cur: -1, missed: map[string]string{}, reported: map[string]bool{}, probes: make(chan dist.ClockSample, 16)}
	wk.log = func(format string, a ...any) {
		if w.Log != nil {
			w.Log(fmt.Sprintf(format, a...))
		}
	}
	events := make(chan dist.Message, 64)
	pollCtx, stopPoll := context.WithCancel(ctx)
	var pollWG sync.WaitGroup
	pollWG.Go(func() { wk.poll(pollCtx, events) })
	defer func() { stopPoll(); pollWG.Wait() }()

	runErr := wk.loop(ctx, events)
	wk.stop(ctx, runErr)
	wk.pubs.Wait()
	if wk.r != nil {
		wk.r.closeProducers()
	}
	out := wk.out
	// Reports are published concurrently: list them in phase order.
	order := func(a, b string) int { return wk.schedIndex(a) - wk.schedIndex(b) }
	slices.SortFunc(out.Reported, order)
	slices.SortFunc(out.Missed, order)
	if runErr == nil && wk.pubErr != nil {
		runErr = wk.pubErr
	}
	return &out, runErr
}

// poll reads the control topic and hands this run's messages to events.
// A record that is not a valid message is skipped (the topic is the run's
// own; a bad record is logged, not fatal).
func (wk *worker) poll(ctx context.Context, events chan<- dist.Message) {
	for ctx.Err() == nil {
		fs := wk.cl.PollFetches(ctx)
		fs.EachRecord(func(rec *kgo.Record) {
			m, err := dist.Decode(rec.Value)
			if err != nil {
				wk.log("control record at offset %d skipped: %v", rec.Offset, err)
				return
			}
			if m.Run != wk.w.Run {
				return
			}
			if m.Kind == dist.KindHeartbeat && m.Heartbeat.Worker == wk.w.Index {
				// This worker's own clock probe (probeClock).
				select {
				case wk.probes <- dist.ClockSample{Sent: m.Heartbeat.At, Broker: rec.Timestamp}:
				default:
				}
				return
			}
			select {
			case events <- m:
			case <-ctx.Done():
			}
		})
	}
}

// loop handles control messages and timers until the run ends.
func (wk *worker) loop(ctx context.Context, events <-chan dist.Message) error {
	joinTimeout := wk.w.JoinTimeout
	if joinTimeout <= 0 {
		joinTimeout = 10 * time.Minute
	}
	joinBy := wk.now().Add(joinTimeout)
	timer := time.NewTimer(0)
	defer timer.Stop()
	var nextHB time.Time
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case m := <-events:
			if err := wk.handle(m); err != nil {
				return err
			}
		case <-timer.C:
		}
		now := wk.now()
		if wk.plan == nil {
			if now.After(joinBy) {
				return fmt.Errorf("no plan on %s after %v: is the coordinator running with --run %s?", dist.ControlTopic(wk.w.Run), joinTimeout, wk.w.Run)
			}
			timer.Reset(time.Second)
			continue
		}
		wk.advance(ctx, now)
		if wk.end != nil && !wk.end.At.After(now) {
			wk.out.End = wk.end.Reason
			wk.log("run ended: %s", wk.end.Reason)
			return nil
		}
		deadline := time.Duration(wk.plan.HeartbeatDeadlineNS)
		if now.Sub(wk.lastHB) > deadline {
			return fmt.Errorf("%w (%v): stopped", ErrCoordinatorGone, deadline)
		}
		if !now.Before(nextHB) {
			wk.heartbeat(ctx, now)
			nextHB = now.Add(min(deadline/4, WorkerHeartbeatEvery))
		}
		// Wake at the next event: a phase start, the end, the heartbeat
		// deadline or this worker's own heartbeat.
		wake := minTime(wk.lastHB.Add(deadline), nextHB)
		if wk.cur+1 < len(wk.sched) {
			wake = minTime(wake, wk.sched[wk.cur+1].Start)
		}
		if wk.end != nil {
			wake = minTime(wake, wk.end.At)
		}
		timer.Reset(max(wake.Sub(now), time.Millisecond))
	}
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// handle takes one control message.
func (wk *worker) handle(m dist.Message) error {
	switch m.Kind {
	case dist.KindPlan:
		if wk.plan != nil {
			return nil // read again after a reconnection
		}
		return wk.join(m.Plan)
	case dist.KindPhase:
		wk.schedule(*m.Phase)
	case dist.KindHeartbeat:
		if m.Heartbeat.Worker == dist.Coordinator {
			// Receipt time, not the message's: a skewed coordinator clock
			// cannot make a live coordinator look dead.
			wk.lastHB = wk.now()
		}
	case dist.KindEnd:
		e := *m.End
		wk.end = &e
	}
	return nil
}

// join takes the plan: it checks it against this worker and builds the
// producers (not started before the first phase).
func (wk *worker) join(p *dist.Plan) error {
	if wk.w.Index >= p.Workers {
		return errkind.Usagef(FieldWorkerIndex, "%d, but run %s has %d workers (0 to %d)", wk.w.Index, wk.w.Run, p.Workers, p.Workers-1)
	}
	if p.LatencyCeilingNS != int64(loadgen.LatencyCeiling) {
		return errkind.Usagef("plan.latency_ceiling_ns", "%d, this kplan's histograms end at %d: run the same kplan version as the coordinator", p.LatencyCeilingNS, int64(loadgen.LatencyCeiling))
	}
	for i, ph := range p.Phases {
		if _, ok := phaseByName(ph.Name); !ok {
			return errkind.Usagef(fmt.Sprintf("plan.phases[%d].name", i), "unknown phase %q", ph.Name)
		}
	}
	acks, err := loadgen.ParseAcks(p.Acks)
	if err != nil {
		return errkind.Wrap(errkind.Usage, "plan.acks", err)
	}
	wk.syncClock(p)
	cfg := Config{
		RecordSize: p.RecordSize, Objective: time.Duration(p.ObjectiveNS), Acks: acks,
		MetadataMinAge: time.Duration(p.MetadataMinAgeNS), MetadataMaxAge: time.Duration(p.MetadataMaxAgeNS),
		MaxBufferedRecords: p.MaxBufferedRecords, SQFSlack: p.SQFSlack, Stick: p.Stick, KIP794Timeout: time.Duration(p.KIP794TimeoutNS),
		Linger: time.Duration(p.LingerNS),
		// Each worker's partitioners draw their own random numbers.
		Seed:            p.Seed ^ (uint64(wk.w.Index)+1)*0x9e3779b97f4a7c15, //nolint:gosec // Index is in [0, 256)
		FailoverTimeout: 30 * time.Second,
		Conn:            wk.w.Conn, Version: wk.w.Version, Now: wk.now,
	}
	r := &runner{cfg: &cfg, now: wk.now, epoch: p.Epoch, dead: -1, faulted: -1, prodBase: dist.ProducerIndex(wk.w.Index, 0, len(p.Streams))}
	for _, s := range p.Streams {
		r.streams = append(r.streams, stream{part: s.Partitioner, wname: s.Topic, topic: s.Topic, rate: s.RateBytesPerS})
	}
	if err := r.newProducers(p.EnvelopeRun); err != nil {
		return err
	}
	wk.plan, wk.r = p, r
	wk.out.Workers = p.Workers
	wk.lastHB = wk.now()
	wk.phase = &leg{stop: make(chan struct{})}
	for _, pr := range r.prods {
		pr.phase = &wk.phase.phase
	}
	for _, ph := range p.Phases {
		wk.schedule(ph)
	}
	wk.log("joined run %s as worker %d of %d: %d producers", wk.w.Run, wk.w.Index, p.Workers, len(r.prods))
	return nil
}

// schedule adds a phase start (once per phase name), keeping the phases
// not started yet in order of their starts (the coordinator's clock is the
// reference; the guard judges lateness).
func (wk *worker) schedule(ph dist.PhaseStart) {
	for _, s := range wk.sched {
		if s.Name == ph.Name {
			return
		}
	}
	wk.sched = append(wk.sched, ph)
	tail := wk.sched[wk.cur+1:]
	slices.SortStableFunc(tail, func(a, b dist.PhaseStart) int { return a.Start.Compare(b.Start) })
}

// advance starts every phase whose start has come: a phase learnt of later
// than its start plus the guard is reported missed; one already followed by
// the next phase's start when the worker got to it was skipped.
func (wk *worker) advance(ctx context.Context, now time.Time) {
	guard := time.Duration(wk.plan.GuardNS)
	for wk.cur+1 < len(wk.sched) && !wk.sched[wk.cur+1].Start.After(now) {
		next := wk.sched[wk.cur+1]
		skipped := wk.cur+2 < len(wk.sched) && !wk.sched[wk.cur+2].Start.After(now)
		switch {
		case skipped:
			wk.missed[next.Name] = "joined after the phase ended"
		case now.Sub(next.Start) > guard:
			wk.missed[next.Name] = fmt.Sprintf("learnt of its start %v late (guard %v)", now.Sub(next.Start).Round(time.Millisecond), guard)
		}
		if wk.cur >= 0 {
			wk.report(ctx, wk.sched[wk.cur].Name, false)
		}
		wk.cur++
		ph, _ := phaseByName(next.Name)
		wk.phase.phase.Store(int32(ph))
		if skipped {
			continue
		}
		if !wk.started {
			wk.started = true
			for _, p := range wk.r.prods {
				wk.phase.wg.Go(func() { p.loop(ctx, wk.phase.stop) })
			}
		}
		wk.log("phase %s started (%v after its start)", next.Name, now.Sub(next.Start).Round(time.Millisecond))
	}
}

// stop stops the producers, waits for their answers and reports the
// current phase: as missed when the worker stops before the run's end
// (runErr), since it did not produce for the whole phase.
func (wk *worker) stop(ctx context.Context, runErr error) {
	if wk.r == nil {
		return
	}
	if wk.started {
		close(wk.phase.stop)
		wk.phase.wg.Wait()
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		for _, p := range wk.r.prods {
			_ = p.cl.Flush(fctx) // unanswered records count as never acknowledged
		}
		cancel()
	}
	if wk.cur >= 0 {
		name := wk.sched[wk.cur].Name
		if _, ok := wk.missed[name]; !ok && runErr != nil {
			wk.missed[name] = fmt.Sprintf("worker stopped during the phase: %v", runErr)
		}
		wk.report(ctx, name, true)
	}
	for _, p := range wk.r.prods {
		for ph := range p.sentIn {
			wk.out.Sent += p.sentIn[ph].Load()
		}
	}
}

// report publishes a phase's reports once every record sent in it was
// answered (or after 30 s: the rest count as never acknowledged), and
// never before the previous phase's; now does not wait for answers (the
// producers were flushed).
func (wk *worker) report(ctx context.Context, name string, now bool) {
	wk.mu.Lock()
	if wk.reported[name] {
		wk.mu.Unlock()
		return
	}
	wk.reported[name] = true
	prev, done := wk.prevPub, make(chan struct{})
	wk.prevPub = done
	wk.mu.Unlock()
	ph, _ := phaseByName(name)
	bg := context.WithoutCancel(ctx)
	missed := wk.missed[name] // read here: the loop's goroutine writes the map
	wk.pubs.Go(func() {
		defer close(done)
		if prev != nil {
			<-prev
		}
		if !now {
			deadline := wk.now().Add(30 * time.Second)
			for !wk.answered(ph) && wk.now().Before(deadline) {
				time.Sleep(20 * time.Millisecond)
			}
		}
		wk.publish(bg, name, ph, missed)
	})
}

// syncClock measures this worker's clock against the coordinator's (the
// coordinator's offset is in the plan; the control topic exists once the
// plan is read, so probing never creates it) and, when the skew is larger
// than its uncertainty, moves the worker's clock by it: phase starts and
// the records' send times are then on the coordinator's clock.
func (wk *worker) syncClock(p *dist.Plan) {
	coord, ok := p.CoordinatorClock()
	if !ok {
		wk.log("clock: the coordinator's offset is unknown; phases are timed on this worker's clock")
		return
	}
	own, ok := wk.probeClock()
	if !ok {
		wk.log("clock: no probe came back within %v; phases are timed on this worker's clock", probeTimeout)
		return
	}
	skew := dist.Skew(own, coord)
	wk.clock = &dist.WorkerClock{Skew: skew, Corrected: skew.Significant()}
	if !wk.clock.Corrected {
		wk.log("clock: within %v of the coordinator's; not corrected", skew.Uncertainty.Round(100*time.Microsecond))
		return
	}
	base := wk.now
	wk.now = func() time.Time { return base().Add(skew.Offset) }
	wk.lastHB = wk.now()
	wk.log("clock: the coordinator's clock reads %v more than this worker's (± %v); corrected", skew.Offset.Round(100*time.Microsecond), skew.Uncertainty.Round(100*time.Microsecond))
}

// probeClock measures this worker's clock against the brokers': it
// publishes clockProbes heartbeats of its own on the control topic (the
// coordinator's workers ignore them) and reads each back.
func (wk *worker) probeClock() (dist.Offset, bool) {
	return probeClock(context.Background(), wk.now, wk.probes, func(ctx context.Context, sent time.Time) error {
		b, err := dist.Encode(dist.Message{Kind: dist.KindHeartbeat, Run: wk.w.Run, Heartbeat: &dist.Heartbeat{Worker: wk.w.Index, At: sent}})
		if err != nil {
			return err
		}
		return wk.cl.ProduceSync(ctx, &kgo.Record{Topic: dist.ControlTopic(wk.w.Run), Value: b}).FirstErr()
	})
}

// answered reports whether every record sent in ph has an answer.
func (wk *worker) answered(ph Phase) bool {
	for _, p := range wk.r.prods {
		p.mu.Lock()
		s := p.phases[ph]
		done := s.acked+s.failed >= s.sent
		p.mu.Unlock()
		if !done {
			return false
		}
	}
	return true
}

// publish writes the phase's report of every producer to the results topic
// (a report saying missed, without figures, when the worker missed it).
func (wk *worker) publish(ctx context.Context, name string, ph Phase, missed string) {
	var recs []*kgo.Record
	for i, p := range wk.r.prods {
		rep := phaseReport(p, ph)
		rep.Worker, rep.Stream, rep.Phase = wk.w.Index, i, name
		if missed != "" {
			rep = dist.PhaseReport{Worker: wk.w.Index, Stream: i, Phase: name, Missed: missed, PerBroker: map[string]dist.BrokerCount{}}
		}
		if c := wk.clock; c != nil {
			rep.ClockKnown, rep.ClockSkewNS, rep.ClockUncertaintyNS, rep.ClockCorrected = true, int64(c.Skew.Offset), int64(c.Skew.Uncertainty), c.Corrected
		}
		if rep.Latency == "" && rep.Acked > 0 {
			wk.fail(fmt.Errorf("report of %s: latency histogram not encoded", name))
			return
		}
		b, err := dist.Encode(dist.Message{Kind: dist.KindResult, Run: wk.w.Run, Result: &rep})
		if err != nil {
			wk.fail(fmt.Errorf("report of %s: %w", name, err))
			return
		}
		recs = append(recs, &kgo.Record{Topic: wk.plan.ResultsTopic, Key: []byte(strconv.Itoa(wk.w.Index)), Value: b})
	}
	pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := wk.cl.ProduceSync(pctx, recs...).FirstErr(); err != nil {
		wk.fail(fmt.Errorf("publish the report of %s: %w", name, err))
		return
	}
	wk.mu.Lock()
	if missed != "" {
		wk.out.Missed = append(wk.out.Missed, name)
	} else {
		wk.out.Reported = append(wk.out.Reported, name)
	}
	wk.mu.Unlock()
	if missed != "" {
		wk.log("phase %s reported missed: %s", name, missed)
	} else {
		wk.log("phase %s reported", name)
	}
}

func (wk *worker) fail(err error) {
	wk.mu.Lock()
	defer wk.mu.Unlock()
	if wk.pubErr == nil {
		wk.pubErr = err
	}
}

// heartbeat publishes this worker's heartbeat on the results topic, which
// the coordinator reads (best effort: a lost one only makes the
// coordinator's view staler).
func (wk *worker) heartbeat(ctx context.Context, now time.Time) {
	b, err := dist.Encode(dist.Message{Kind: dist.KindHeartbeat, Run: wk.w.Run, Heartbeat: &dist.Heartbeat{Worker: wk.w.Index, At: now}})
	if err != nil {
		return
	}
	wk.cl.Produce(ctx, &kgo.Record{Topic: wk.plan.ResultsTopic, Value: b}, nil)
}

// phaseReport is p's figures of phase ph as a worker publishes them (its
// Worker, Stream and Phase left for the caller).
func phaseReport(p *producer, ph Phase) dist.PhaseReport {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.phases[ph]
	rep := dist.PhaseReport{
		Sent: s.sent, Acked: s.acked, Failed: s.failed, AckedBytes: s.ackedBytes,
		PerBroker: map[string]dist.BrokerCount{}, PerPartition: map[string]int64{},
		Violating: s.prod.Violating(), Clamped: s.prod.Clamped(),
		Batches: p.batches[ph].Load(), BatchRecords: p.batchRecords[ph].Load(),
	}
	if len(s.buckets) > 0 {
		rep.BucketNS, rep.FirstBucket, rep.Buckets = int64(BucketWidth), s.first, slices.Clone(s.buckets)
	}
	for id, bc := range s.perBroker {
		rep.PerBroker[strconv.Itoa(int(id))] = dist.BrokerCount{Records: bc.records, Bytes: bc.bytes}
	}
	for part, n := range s.perPartition {
		rep.PerPartition[strconv.Itoa(int(part))] = n
	}
	var seqs []uint64
	for seq, st := range p.status {
		if st&stAcked != 0 && Phase(st&stPhase) == ph {
			seqs = append(seqs, uint64(seq))
		}
	}
	rep.AckedSeqs = dist.Ranges(seqs)
	if s.acked > 0 {
		rep.Latency, _ = s.prod.Encode() // empty on failure: publish refuses it
	}
	return rep
}

// schedIndex is the phase's place in the schedule.
func (wk *worker) schedIndex(name string) int {
	return slices.IndexFunc(wk.sched, func(s dist.PhaseStart) bool { return s.Name == name })
}

// phaseByName is the phase of a name as Phase.String spells it.
func phaseByName(name string) (Phase, bool) {
	for i, n := range phaseNames {
		if n == name {
			return Phase(i), true
		}
	}
	return 0, false
}
