package chaos

import (
	"context"
	"fmt"
	mrand "math/rand"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kplan-dev/kplan/internal/clock"
	"github.com/kplan-dev/kplan/internal/errkind"
	"github.com/kplan-dev/kplan/internal/kafka"
	"github.com/kplan-dev/kplan/internal/loadgen"
	"github.com/kplan-dev/kplan/internal/partitioner"
	"github.com/kplan-dev/kplan/internal/workload"
)

// window is when a phase ran, relative to the run's epoch.
type window struct {
	start, end time.Duration
	ran        bool
}

// leg is one kill experiment: every producer side by side, or one producer
// in a sequential run.
type leg struct {
	prods   []*producer
	phase   atomic.Int32
	windows [numPhases]window
	leaders [numPhases]map[string][]int32
	// meta is the experiment topics' metadata when each phase began;
	// preKill the metadata read just before the kill: the predictions
	// start from them.
	meta    [numPhases]*clusterMeta
	preKill *clusterMeta
	victim  int32
	killAt  time.Duration
	// killEffect is the time from the kill call to the kill taking effect,
	// as the cluster's killer reports it; -1 when it reports none.
	killEffect time.Duration
	failover   time.Duration // -1 until every partition has a live leader
	restore    time.Duration // -1 unless a restore completed
	// fault is the leg's network fault (fault.go); underFault marks the
	// phases that began with it in force.
	fault      legFault
	underFault [numPhases]bool
	stop       chan struct{}
	wg         sync.WaitGroup
}

// stream is one producer's work: a partitioner writing one topic.
type stream struct {
	part  string // partitioner
	wname string // the workload's name of the topic
	topic string // the topic written
	rate  int64
	keys  workload.Keys
}

type runner struct {
	c       Cluster
	cfg     *Config
	admin   *kgo.Client
	epoch   time.Time
	now     func() time.Time
	streams []stream
	topics  []string             // distinct topics written, in stream order
	assign  map[string][][]int32 // replica assignment by topic written
	brokers []int32              // the cluster's brokers when the run began
	prods   []*producer
	legs    []*leg
	cur     atomic.Pointer[leg]
	dead    int32 // the broker currently killed by this run, -1 for none
	// faulted is the broker under this run's network fault, -1 for none;
	// faultTried is set once InjectFault was called (ClearFault then runs
	// at cleanup whatever happened).
	faulted    int32
	faultTried bool
	notes      []string
	// prodBase is added to each producer's index in the records'
	// envelopes: a distributed run's worker numbers its producers after
	// the lower workers' (dist.ProducerIndex).
	prodBase int
	// dist is a distributed run's coordination (nil: single process).
	dist *distRun
}

func (r *runner) since() time.Duration { return r.now().Sub(r.epoch) }

// TopicFor is the topic a partitioner writes to.
func TopicFor(prefix, partitionerName string) string { return prefix + "-" + partitionerName }

// Run runs one experiment on c. When ctx ends (Ctrl-C), it stops the
// producers, restarts the killed broker if cfg.Restore, and returns the
// partial result with Interrupted set together with ctx's error. The
// cleanup runs on a context of its own (cfg.CleanupTimeout, cut short when
// cfg.Abort closes). Errors carry an errkind kind: Usage for an experiment
// that cannot run as asked (naming the field), Refused for a kill that
// would make partitions unavailable.
func Run(ctx context.Context, c Cluster, cfg Config) (*Result, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	r := &runner{c: c, cfg: &cfg, now: now, dead: -1, faulted: -1}
	if err := r.prepare(ctx); err != nil {
		if r.admin != nil {
			r.admin.Close()
		}
		return nil, err
	}
	defer r.admin.Close()

	start, err := r.startOffsets(ctx)
	if err != nil {
		return nil, err
	}
	r.epoch = now()
	idRand := rand.New(rand.NewPCG(cfg.Seed, uint64(r.epoch.UnixNano())))
	runID := idRand.Uint64()
	if cfg.Workers > 0 {
		if cfg.RunID == "" {
			cfg.RunID = NewRunID(r.epoch, idRand)
		}
		r.newRemoteProducers(runID)
	} else if err := r.newProducers(runID); err != nil {
		return nil, err
	}
	cons, err := newConsumer(r.clientOpts(), &cfg, start, r.prods, runID, r.epoch, now)
	if err != nil {
		r.closeProducers()
		return nil, err
	}
	cons.noE2E = cfg.ConsumeAfter
	consCtx, stopCons := context.WithCancel(context.WithoutCancel(ctx))
	var consDone sync.WaitGroup
	if !cfg.ConsumeAfter {
		consDone.Go(func() { cons.run(consCtx) })
	}

	if cfg.Workers > 0 {
		// The run's topics go on success, error and Ctrl-C (closed before
		// the result on the way through, to note a failure there).
		defer func() {
			if r.dist != nil {
				_ = r.dist.ctl.Close(ctx)
			}
		}()
		if err := r.startDist(ctx, runID); err != nil {
			if r.dist != nil && r.dist.stopHB != nil {
				r.dist.stopHB()
			}
			stopCons()
			consDone.Wait()
			cons.Client().Close()
			return nil, err
		}
	}

	progDone := make(chan struct{})
	var progWG sync.WaitGroup
	if cfg.Progress != nil {
		progWG.Go(func() { r.progress(progDone) })
	}

	runErr := r.runLegs(ctx)
	if r.dist != nil {
		r.endDist(ctx, runErr)
	}
	r.cleanup(ctx, runErr, cons, func() { consDone.Go(func() { cons.run(consCtx) }) })
	stopCons()
	consDone.Wait()
	cons.Client().Close()
	close(progDone)
	progWG.Wait()

	if r.dist != nil {
		r.applyReports()
		if err := r.dist.ctl.Close(ctx); err != nil {
			r.notes = append(r.notes, err.Error())
		}
	}
	res := r.result()
	if r.dist != nil {
		res.Workers = r.workersResult()
	}
	if runErr != nil {
		if ctx.Err() != nil {
			res.Interrupted = true
			res.Notes = append(res.Notes, "interrupted: the figures cover the phases that ran")
			return res, ctx.Err()
		}
		return res, runErr
	}
	return res, nil
}

// aborted reports whether cfg.Abort closed.
func (r *runner) aborted() bool {
	if r.cfg.Abort == nil {
		return false
	}
	select {
	case <-r.cfg.Abort:
		return true
	default:
		return false
	}
}

// startOffsets reads the experiment topics' end offsets, where the checking
// consumer starts. A new topic's leaders may be known before they serve it:
// it retries for 30 s.
func (r *runner) startOffsets(ctx context.Context) (map[string]map[int32]int64, error) {
	var start map[string]map[int32]int64
	err := clock.Poll(ctx, clock.WithNow(r.now), 100*time.Millisecond, 30*time.Second, func(ctx context.Context) (bool, error) {
		var err error
		start, err = loadgen.EndOffsets(ctx, r.admin, r.topics)
		return err == nil, err
	})
	if err != nil {
		return nil, err
	}
	return start, nil
}

// runLegs runs every leg: one with every producer side by side, or one per
// producer in a sequential run.
func (r *runner) runLegs(ctx context.Context) error {
	if r.cfg.Sequential {
		for _, name := range r.cfg.Partitioners {
			l := &leg{}
			for _, p := range r.prods {
				if p.name == name {
					l.prods = append(l.prods, p)
				}
			}
			r.legs = append(r.legs, l)
		}
	} else {
		r.legs = []*leg{{prods: r.prods}}
	}
	for i, l := range r.legs {
		l.victim, l.failover, l.restore, l.killEffect = -1, -1, -1, -1
		for _, p := range l.prods {
			p.phase = &l.phase
		}
		r.cur.Store(l)
		if err := r.runLeg(ctx, l, i == len(r.legs)-1); err != nil {
			return err
		}
		if r.cfg.Sequential {
			// One partitioner at a time: this one stops before the next
			// starts, whatever phases it ran.
			r.stopLeg(ctx, l)
		}
	}
	return nil
}

// cleanupContext is the cleanup's context (CleanupContext) of the run.
func (r *runner) cleanupContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return CleanupContext(ctx, r.cfg.CleanupTimeout, r.cfg.Abort)
}

// CleanupContext is a cleanup's context: not cancelled with ctx (the
// cleanup must run after a Ctrl-C), bounded by timeout (0:
// DefaultCleanupTimeout), and cancelled when abort (the second Ctrl-C, nil
// for none) closes.
func CleanupContext(ctx context.Context, timeout time.Duration, abort <-chan struct{}) (context.Context, context.CancelFunc) {
	if timeout <= 0 {
		timeout = DefaultCleanupTimeout
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	if abort == nil {
		return cctx, cancel
	}
	stop := make(chan struct{})
	go func() {
		select {
		case <-abort:
			cancel()
		case <-stop:
		}
	}()
	return cctx, func() { close(stop); cancel() }
}

// cleanup stops the producers whatever happened, restarts a killed broker
// after a failure when cfg.Restore asked for it, and lets the consumer read
// everything back for the loss check; startLate starts the consumer of a
// run that consumes only after the producers stopped.
func (r *runner) cleanup(ctx context.Context, runErr error, cons *consumer, startLate func()) {
	cfg := r.cfg
	bg, cancel := r.cleanupContext(ctx)
	defer cancel()
	for _, l := range r.legs {
		r.stopLeg(bg, l)
	}
	r.cleanupFault(bg)
	restartCut := false
	if runErr != nil && r.dead >= 0 && cfg.Restore && !r.aborted() {
		if err := r.c.Restart(bg, r.dead); err != nil && r.aborted() {
			// The second signal came while the broker was being started:
			// its process may be up already, or not.
			restartCut = true
			r.notes = append(r.notes, fmt.Sprintf("restart of broker %d cut short before it was confirmed: the broker may or may not come up; check it (kplan lab status, or the cluster's metadata)", r.dead))
		} else if err != nil {
			r.notes = append(r.notes, fmt.Sprintf("restart of broker %d after the interruption failed: %v", r.dead, err))
		} else {
			r.notes = append(r.notes, fmt.Sprintf("broker %d restarted after the interruption", r.dead))
			r.dead = -1
		}
	}
	r.closeProducers()
	if r.aborted() {
		r.notes = append(r.notes, "cleanup cut short: the loss check was skipped; lost counts are upper bounds")
		if r.dead >= 0 && !restartCut {
			r.notes = append(r.notes, fmt.Sprintf("broker %d is still down", r.dead))
		}
		return
	}
	if cfg.ConsumeAfter {
		startLate()
	}
	stall, limit := 30*time.Second, drainCap
	if runErr != nil { // interrupted or failed: do not keep the user waiting
		stall, limit = 5*time.Second, 5*time.Second
	}
	// The drain sets its own limit (the cleanup timeout is for stopping and
	// restoring), but an abort still ends it.
	dctx, dcancel := context.WithCancel(context.WithoutCancel(ctx))
	defer dcancel()
	if cfg.Abort != nil {
		go func() {
			select {
			case <-cfg.Abort:
				dcancel()
			case <-dctx.Done():
			}
		}()
	}
	if err := r.drain(dctx, cons, stall, limit); err != nil {
		if r.aborted() {
			r.notes = append(r.notes, "cleanup cut short: the loss check is incomplete; lost counts are upper bounds")
			return
		}
		r.notes = append(r.notes, "loss check incomplete: "+err.Error()+"; lost counts are upper bounds")
	}
}

// plan lists the streams: every partitioner writes every workload topic (or
// the one experiment topic) through a producer of its own.
func (r *runner) plan() {
	cfg := r.cfg
	for _, name := range cfg.Partitioners {
		if len(cfg.Workload) == 0 {
			t := TopicFor(cfg.Topic, name)
			r.streams = append(r.streams, stream{part: name, wname: t, topic: t, rate: cfg.Rate})
			continue
		}
		for _, w := range cfg.Workload {
			r.streams = append(r.streams, stream{part: name, wname: w.Name, topic: WorkloadTopicName(cfg.Topic, name, w.Name, cfg.Sequential, cfg.Existing), rate: w.Rate, keys: w.Keys})
		}
	}
	r.assign = map[string][][]int32{}
	for _, st := range r.streams {
		if slices.Contains(r.topics, st.topic) {
			continue
		}
		r.topics = append(r.topics, st.topic)
		if len(cfg.Workload) == 0 {
			r.assign[st.topic] = cfg.Assignment
			continue
		}
		for _, w := range cfg.Workload {
			if w.Name == st.wname && w.Assignment != nil {
				r.assign[st.topic] = w.Assignment
			}
		}
	}
}

// prepare checks the cluster, creates the topics (or reads the layouts of
// existing ones) and waits for their leaders.
func (r *runner) prepare(ctx context.Context) error {
	cfg := r.cfg
	r.plan()
	brokers, err := r.c.Brokers(ctx)
	if err != nil {
		return err
	}
	r.brokers = brokers
	for _, t := range r.topics {
		for p, reps := range r.assign[t] {
			for _, id := range reps {
				if !slices.Contains(brokers, id) {
					return errkind.Usagef("assignment", "%s partition %d is assigned to broker %d, which the cluster does not have (brokers %v)", r.wname(t), p, id, brokers)
				}
			}
		}
	}
	if err := r.checkFault(brokers); err != nil {
		return err
	}
	if cfg.Target.Kind == TargetBroker && !slices.Contains(brokers, cfg.Target.Broker) {
		return errkind.Usagef("kill", "%s: no such broker (brokers %v)", cfg.Target, brokers)
	}
	if cfg.Target.Kind != TargetNone && len(brokers) < 2 {
		return errkind.Usagef("kill", "a kill needs at least 2 brokers")
	}
	r.admin, err = kafka.NewClient(r.clientOpts(), cfg.Version, kgo.MetadataMinAge(cfg.MetadataMinAge), kgo.RetryTimeout(10*time.Second))
	if err != nil {
		return fmt.Errorf("admin client: %w", err)
	}
	var created []string
	for _, t := range r.topics {
		have, ok, err := r.c.Layout(ctx, t)
		if err != nil {
			return err
		}
		if cfg.Existing {
			if !ok {
				return errkind.Usagef("topics", "topic %s does not exist", t)
			}
			r.assign[t] = have
			continue
		}
		if ok {
			if !slices.EqualFunc(have, r.assign[t], slices.Equal) {
				return errkind.Usagef("topic", "topic %s exists with layout %s, not %s (choose another topic prefix or delete it)", t, FormatAssignment(have), FormatAssignment(r.assign[t]))
			}
			continue
		}
		if err := r.c.CreateTopic(ctx, t, r.assign[t]); err != nil {
			return err
		}
		created = append(created, t)
	}
	// A partition whose only replica is the victim has nowhere to fail over.
	if cfg.Target.Kind == TargetBroker {
		if err := r.checkReplicas(cfg.Target.Broker); err != nil {
			return err
		}
	}
	if cfg.Target.Kind == TargetLeaderOf {
		have, ok, err := r.c.Layout(ctx, cfg.Target.Topic)
		if err != nil {
			return err
		}
		if !ok || int(cfg.Target.Partition) >= len(have) {
			return errkind.Usagef("kill", "%s: no such partition", cfg.Target)
		}
	}
	if err := kafka.WaitLeaders(ctx, r.admin, 30*time.Second, r.topics...); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("experiment topics are not ready after 30s: %w", err)
	}
	return r.syncNewTopics(ctx, created)
}

// wname is the workload's name of a topic written.
func (r *runner) wname(topic string) string {
	for _, st := range r.streams {
		if st.topic == topic {
			return st.wname
		}
	}
	return topic
}

// Fields of refusals: the setting that would allow the kill (allow
// unavailable partitions on a real cluster) or avoid it (a replication
// factor above 1).
const (
	FieldAllowUnavailable  = "allow-unavailable"
	FieldReplicationFactor = "replication-factor"
)

// checkReplicas refuses a kill that leaves an experiment partition with no
// other replica.
func (r *runner) checkReplicas(victim int32) error {
	for _, t := range r.topics {
		for p, reps := range r.assign[t] {
			if len(reps) != 1 || reps[0] != victim {
				continue
			}
			if r.cfg.AllowUnavailable && r.c.Real() {
				continue
			}
			why := ""
			if !r.c.Real() {
				why = " (a simulated cluster cannot run a partition without a leader)"
			}
			what := fmt.Sprintf("partition %d of every experiment topic", p)
			if len(r.cfg.Workload) > 0 {
				what = fmt.Sprintf("%s partition %d", r.wname(t), p)
			}
			return errkind.Refusedf(FieldReplicationFactor, "killing broker %d leaves %s with no replica (replication factor 1): its records could go nowhere%s", victim, what, why)
		}
	}
	return nil
}

// safety refuses to kill a real broker when partitions are already
// under-replicated or when the kill would leave a partition with no
// in-sync replica.
func (r *runner) safety(ctx context.Context, victim int32) error {
	if !r.c.Real() || r.cfg.AllowUnavailable {
		return nil
	}
	m, err := fetchMeta(ctx, r.admin, nil)
	if err != nil {
		return fmt.Errorf("safety check: %w", err)
	}
	topics := make([]string, 0, len(m.topics))
	for t := range m.topics {
		topics = append(topics, t)
	}
	minISR, _, err := kafka.MinInsync(ctx, r.admin, topics, -1)
	if err != nil {
		return fmt.Errorf("safety check: %w", err)
	}
	var parts []PartitionState
	for t, ps := range m.topics {
		for p, pm := range ps {
			parts = append(parts, PartitionState{Name: fmt.Sprintf("%s/%d", t, p), Replicas: pm.replicas, ISR: pm.isr, MinISR: minISR[t]})
		}
	}
	return CheckKill(parts, victim)
}

// PartitionState is one partition as the pre-kill checks read it.
type PartitionState struct {
	Name          string // TOPIC/PARTITION
	Replicas, ISR []int32
	// MinISR is its topic's min.insync.replicas (0: unknown, not checked).
	MinISR int
}

// CheckKill is the check before a real kill of victim: it refuses
// (errkind.Refused, field FieldAllowUnavailable) when partitions are already
// under-replicated, when the kill would leave a partition with no in-sync
// replica, or when it would leave a partition with fewer in-sync replicas
// than its min.insync.replicas (every acks=all write to it then fails:
// a dry run once said "checks: passed" and the kill let 0 of 200 such
// records through). Run applies it on every real cluster unless
// AllowUnavailable; a dry run applies it to a snapshot.
func CheckKill(parts []PartitionState, victim int32) error {
	var under, orphan, belowMin []string
	for _, p := range parts {
		if len(p.ISR) < len(p.Replicas) {
			under = append(under, p.Name)
		}
		left := len(p.ISR)
		if slices.Contains(p.ISR, victim) {
			left--
		}
		switch {
		case left == 0 && len(p.ISR) > 0:
			orphan = append(orphan, p.Name)
		case p.MinISR > 0 && left < p.MinISR && len(p.ISR) >= p.MinISR:
			belowMin = append(belowMin, fmt.Sprintf("%s (%d in sync, min.insync.replicas %d)", p.Name, left, p.MinISR))
		}
	}
	slices.Sort(under)
	slices.Sort(orphan)
	slices.Sort(belowMin)
	if len(under) > 0 {
		return errkind.Refusedf(FieldAllowUnavailable, "%d partitions are under-replicated before the kill (%s)", len(under), head(under))
	}
	if len(orphan) > 0 {
		return errkind.Refusedf(FieldAllowUnavailable, "killing broker %d leaves %d partitions with no in-sync replica (%s)", victim, len(orphan), head(orphan))
	}
	if len(belowMin) > 0 {
		return errkind.Refusedf(FieldAllowUnavailable, "killing broker %d leaves %d partitions below min.insync.replicas, where acks=all writes fail (%s)", victim, len(belowMin), head(belowMin))
	}
	return nil
}

func head(xs []string) string {
	if len(xs) > 5 {
		return strings.Join(xs[:5], ", ") + ", ..."
	}
	return strings.Join(xs, ", ")
}

func (r *runner) newProducers(runID uint64) error {
	cfg := r.cfg
	var shared *partitioner.Inflight
	for i, st := range r.streams {
		popts := []partitioner.Option{partitioner.WithRand(mrand.New(mrand.NewSource(int64(cfg.Seed) + int64(i)))), partitioner.WithSlack(cfg.SQFSlack), partitioner.WithStick(cfg.Stick), partitioner.WithAvailabilityTimeout(cfg.KIP794Timeout)} //nolint:gosec // experiment randomness, seeded for repeatability
		if st.part == SQFShared {
			if shared == nil {
				shared = partitioner.NewInflight()
			}
			popts = append(popts, partitioner.WithInflight(shared))
		}
		kopts, bind, err := partitioner.ClientOpts(st.part, popts...)
		if err != nil {
			r.closeProducers()
			return err
		}
		p := &producer{idx: r.prodBase + i, name: st.part, topic: st.topic, wname: st.wname, rate: st.rate, cfg: cfg, epoch: r.epoch, now: r.now, runID: runID}
		kopts = append(kopts,
			kgo.WithHooks(p),
			// franz-go's default retry limit: a produce answer may wait for
			// the failover.
			kgo.RetryTimeout(30*time.Second),
			kgo.MetadataMinAge(cfg.MetadataMinAge),
			kgo.MetadataMaxAge(cfg.MetadataMaxAge),
			kgo.RecordDeliveryTimeout(max(time.Minute, 2*cfg.FailoverTimeout)),
			// Uncompressed, like Kafka's producer default and the thesis's
			// runs: record values are mostly padding, and compressed they
			// would slip under a --broker-bandwidth limit.
			kgo.ProducerBatchCompression(kgo.NoCompression()),
			kgo.MaxBufferedRecords(cfg.MaxBufferedRecords),
		)
		kopts = append(kopts, cfg.Acks.ProducerOpts()...)
		if cfg.Linger > 0 {
			kopts = append(kopts, kgo.ProducerLinger(cfg.Linger))
		}
		if cfg.Acks == loadgen.AcksAll && cfg.noIdempotence {
			kopts = append(kopts, kgo.DisableIdempotentWrite())
		}
		cl, err := kafka.NewClient(r.clientOpts(), cfg.Version, kopts...)
		if err != nil {
			r.closeProducers()
			return fmt.Errorf("producer %s: %w", st.part, err)
		}
		bind(cl)
		rng := rand.New(rand.NewPCG(cfg.Seed, uint64(i)+1))
		p.keySpec = st.keys
		if st.keys.Keyed() {
			p.keys = workload.NewSampler(st.keys, rand.New(rand.NewPCG(cfg.Seed^0x6b657973, uint64(i)+1)))
		}
		p.cl = cl
		for ph := range p.phases {
			p.phases[ph] = newPhaseStats(cfg.Objective, rng)
		}
		r.prods = append(r.prods, p)
	}
	return nil
}

// clientOpts are the connection settings of the experiment's clients: the
// cluster's addresses with cfg.Conn's security settings.
// A worker's runner (RunWorker) has no Cluster: cfg.Conn holds its
// bootstrap servers.
func (r *runner) clientOpts() kafka.ConnOptions {
	if r.c == nil {
		return r.cfg.Conn
	}
	return r.cfg.Conn.WithSeeds(r.c.Seeds())
}

func (r *runner) closeProducers() {
	for _, p := range r.prods {
		if p.cl != nil { // a distributed run's remote producers have none
			p.cl.Close()
		}
	}
}

// runLeg runs warm-up, before, kill, failover, after and (if asked or
// needed by the next leg) restore and recovered.
func (r *runner) runLeg(ctx context.Context, l *leg, last bool) error {
	cfg := r.cfg
	l.stop = make(chan struct{})
	r.begin(ctx, l, PhaseWarmup)
	for _, p := range l.prods {
		if p.remote == nil {
			l.wg.Go(func() { p.loop(ctx, l.stop) })
		}
	}
	if err := clock.Sleep(ctx, cfg.Warmup); err != nil {
		r.end(ctx, l, PhaseWarmup)
		return err
	}
	r.end(ctx, l, PhaseWarmup)
	if err := r.measured(ctx, l, PhaseBefore); err != nil {
		return err
	}
	if err := r.faultPhase(ctx, l); err != nil {
		return err
	}
	if cfg.Target.Kind == TargetNone {
		return r.endFaultLeg(ctx, l, last)
	}
	victim, err := r.resolve(ctx, l)
	if err != nil {
		return err
	}
	if err := r.checkReplicas(victim); err != nil {
		return err
	}
	if err := r.safety(ctx, victim); err != nil {
		return err
	}
	m, err := fetchMeta(ctx, r.admin, r.topics)
	if err != nil {
		return err
	}
	l.preKill = m
	for _, p := range l.prods {
		moved := map[int32]bool{}
		for part, pm := range m.topics[p.topic] {
			if pm.leader == victim {
				moved[int32(part)] = true
			}
		}
		p.moved.Store(&moved)
	}

	r.begin(ctx, l, PhaseFailover)
	l.victim = victim
	l.killAt = r.since()
	for _, p := range l.prods {
		p.killAt.Store(max(int64(l.killAt), 1))
	}
	if err := r.c.Kill(ctx, victim); err != nil {
		r.end(ctx, l, PhaseFailover)
		return fmt.Errorf("kill broker %d: %w", victim, err)
	}
	r.dead = victim
	r.killTook(l)
	err = r.waitFailover(ctx, l)
	r.end(ctx, l, PhaseFailover)
	if err != nil {
		return err
	}
	if err := r.measured(ctx, l, PhaseAfter); err != nil {
		return err
	}
	if !cfg.Restore && (!cfg.Sequential || last) {
		return nil
	}
	if !cfg.Restore {
		// Only the next leg needs the broker back: stop this leg's producer
		// first so its figures end with the after phase.
		r.stopLeg(ctx, l)
	}
	r.begin(ctx, l, PhaseRestore)
	t0 := r.since()
	if err := r.clearFault(ctx, l); err != nil {
		r.end(ctx, l, PhaseRestore)
		return err
	}
	// Between sequential legs (producers stopped) the broker must be fully
	// back; a measured restore goes on while the producers write, which a
	// saturated broker may not catch up with, so it waits for leaders only.
	err = r.restore(ctx, victim, !cfg.Restore)
	r.end(ctx, l, PhaseRestore)
	if err != nil {
		return err
	}
	l.restore = r.since() - t0
	if cfg.Restore {
		return r.measured(ctx, l, PhaseRecovered)
	}
	return nil
}

// killTook moves the leg's kill time to when the kill took effect, when the
// cluster's killer reports it (a command's return, Chaos Mesh's injection
// record): the failover is timed from it. The time is kept within the kill
// call, so a skewed platform clock cannot move it outside.
func (r *runner) killTook(l *leg) {
	kr, ok := r.c.(KillReporter)
	if !ok {
		return
	}
	at := kr.KillTime()
	if at.IsZero() {
		return
	}
	d := min(max(at.Sub(r.epoch), l.killAt), r.since())
	l.killEffect = d - l.killAt
	if d == l.killAt {
		return
	}
	l.killAt = d
	for _, p := range l.prods {
		p.killAt.Store(max(int64(d), 1))
		// An acknowledgement before the kill took effect came from the
		// victim itself, not from a new leader.
		p.firstMovedAck.Store(0)
	}
}

// restore restarts the victim, elects preferred leaders and waits until the
// experiment topics are led by their preferred replicas again.
func (r *runner) restore(ctx context.Context, victim int32, fullSync bool) error {
	if err := r.c.Restart(ctx, victim); err != nil {
		return fmt.Errorf("restart broker %d: %w", victim, err)
	}
	r.dead = -1
	ectx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	if err := r.c.ElectPreferred(ectx); err != nil {
		return err
	}
	// Back in every ISR too: a broker still catching up would load its links
	// and disks during the next phase (or the next partitioner's leg).
	err := clock.Poll(ectx, clock.WithNow(r.now), 50*time.Millisecond, 0, func(ctx context.Context) (bool, error) {
		m, err := fetchMeta(ctx, r.admin, r.topics)
		return err == nil && slices.Contains(m.brokers, victim) && r.preferred(m) && (!fullSync || fullISR(m)), nil
	})
	if err != nil {
		return fmt.Errorf("waiting for preferred leaders after the restart of broker %d: %w", victim, err)
	}
	return nil
}

// fullISR reports whether every partition's replicas are all in sync.
func fullISR(m *clusterMeta) bool {
	for _, parts := range m.topics {
		for _, p := range parts {
			if len(p.isr) < len(p.replicas) {
				return false
			}
		}
	}
	return true
}

func (r *runner) preferred(m *clusterMeta) bool {
	for _, t := range r.topics {
		parts := m.topics[t]
		if len(parts) != len(r.assign[t]) {
			return false
		}
		for p, pm := range parts {
			if pm.leader != r.assign[t][p][0] {
				return false
			}
		}
	}
	return true
}

// resolve picks the broker to kill now.
func (r *runner) resolve(ctx context.Context, l *leg) (int32, error) {
	return r.resolveTarget(ctx, l, r.cfg.Target)
}

// resolveTarget picks the broker t names now.
func (r *runner) resolveTarget(ctx context.Context, l *leg, t Target) (int32, error) {
	switch t.Kind {
	case TargetBroker:
		return t.Broker, nil
	case TargetLeaderOf:
		m, err := fetchMeta(ctx, r.admin, []string{t.Topic})
		if err != nil {
			return -1, err
		}
		parts := m.topics[t.Topic]
		if int(t.Partition) >= len(parts) || parts[t.Partition].leader < 0 {
			return -1, errkind.Refusedf("kill", "%s: the partition has no leader", t)
		}
		return parts[t.Partition].leader, nil
	case TargetBusiest:
		m, err := fetchMeta(ctx, r.admin, r.topics)
		if err != nil {
			return -1, err
		}
		count := map[int32]int{}
		for _, p := range l.prods {
			for _, pm := range m.topics[p.topic] {
				if pm.leader >= 0 {
					count[pm.leader]++
				}
			}
		}
		best, bestN := int32(-1), 0
		for id, n := range count {
			if n > bestN || n == bestN && id < best {
				best, bestN = id, n
			}
		}
		if best < 0 {
			return -1, errkind.Refusedf("kill", "busiest: no partition has a leader")
		}
		return best, nil
	}
	return -1, errkind.Usagef("kill", "nothing to kill")
}

// waitFailover waits until every partition has a live leader and every
// producer had an acknowledgement from a partition the victim led.
func (r *runner) waitFailover(ctx context.Context, l *leg) error {
	deadline := l.killAt + r.cfg.FailoverTimeout
	return clock.Poll(ctx, clock.WithNow(r.now), 10*time.Millisecond, 0, func(ctx context.Context) (bool, error) {
		if l.failover < 0 {
			if m, err := fetchMeta(ctx, r.admin, r.topics); err == nil && m.allLed(r.topics, l.victim) {
				l.failover = r.since() - l.killAt
			}
		}
		done := l.failover >= 0
		for _, p := range l.prods {
			if p.remote != nil {
				continue // a worker's acknowledgements are not seen here
			}
			if m := p.moved.Load(); m != nil && len(*m) > 0 && p.firstMovedAck.Load() == 0 {
				done = false
			}
		}
		if !done && r.since() > deadline {
			r.notes = append(r.notes, fmt.Sprintf("failover not complete %v after the kill of broker %d; the after phase started anyway", r.cfg.FailoverTimeout, l.victim))
			return true, nil
		}
		return done, nil
	})
}

// measured runs a measured phase: for cfg.Phase, or until every producer of
// the leg sent cfg.Records records in it.
func (r *runner) measured(ctx context.Context, l *leg, ph Phase) error {
	r.begin(ctx, l, ph)
	defer r.end(ctx, l, ph)
	return r.wait(ctx, l, ph)
}

// wait waits out a measured phase that began: for cfg.Phase, or until every
// producer of the leg sent cfg.Records records in it.
func (r *runner) wait(ctx context.Context, l *leg, ph Phase) error {
	if r.cfg.Records <= 0 {
		return clock.Sleep(ctx, r.cfg.Phase)
	}
	return clock.Poll(ctx, clock.WithNow(r.now), 5*time.Millisecond, 0, func(context.Context) (bool, error) {
		for _, p := range l.prods {
			if p.sentIn[ph].Load() < r.cfg.Records {
				return false, nil
			}
		}
		return true, nil
	})
}

func (r *runner) begin(ctx context.Context, l *leg, ph Phase) {
	if r.dist != nil {
		r.announce(ctx, ph)
	}
	l.windows[ph] = window{start: r.since(), ran: true}
	l.underFault[ph] = r.faulted >= 0
	l.phase.Store(int32(ph))
	r.snapLeaders(ctx, l, ph)
}

func (r *runner) end(ctx context.Context, l *leg, ph Phase) {
	l.windows[ph].end = r.since()
	r.snapLeaders(ctx, l, ph)
}

// snapLeaders adds the experiment topics' current leaders to the phase's set.
func (r *runner) snapLeaders(ctx context.Context, l *leg, ph Phase) {
	if ctx.Err() != nil {
		return
	}
	m, err := fetchMeta(ctx, r.admin, r.topics)
	if err != nil {
		return
	}
	if l.meta[ph] == nil {
		l.meta[ph] = m
	}
	if l.leaders[ph] == nil {
		l.leaders[ph] = map[string][]int32{}
	}
	for _, t := range r.topics {
		for _, id := range m.leaders(t) {
			if !slices.Contains(l.leaders[ph][t], id) {
				l.leaders[ph][t] = append(l.leaders[ph][t], id)
			}
		}
		slices.Sort(l.leaders[ph][t])
	}
}

// stopLeg stops the leg's producers and waits for their records.
func (r *runner) stopLeg(ctx context.Context, l *leg) {
	if l.stop == nil {
		return
	}
	select {
	case <-l.stop:
		return
	default:
	}
	close(l.stop)
	l.wg.Wait()
	fctx, cancel := context.WithTimeout(ctx, max(30*time.Second, r.cfg.FailoverTimeout))
	defer cancel()
	for _, p := range l.prods {
		if p.cl == nil {
			continue // a worker's: it flushes its own
		}
		if err := p.cl.Flush(fctx); err != nil && !r.aborted() {
			r.notes = append(r.notes, fmt.Sprintf("%s: not every record was answered before the flush timeout", p.name))
		}
	}
}

// drain waits until the consumer read every experiment partition up to its
// end offset. It gives up once the consumer made no progress for stall (a
// consumer behind a --broker-bandwidth limit may need minutes, but keeps
// advancing), and after limit in any case.
func (r *runner) drain(ctx context.Context, cons *consumer, stall, limit time.Duration) error {
	return cons.Drain(ctx, clock.WithNow(r.now), r.admin, r.topics, stall, limit)
}

// drainCap bounds the loss check's final read after a complete run.
const drainCap = 10 * time.Minute

func (r *runner) progress(done <-chan struct{}) {
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-t.C:
		}
		l := r.cur.Load()
		if l == nil {
			continue
		}
		var sent int64
		for _, p := range r.prods {
			for i := range p.sentIn {
				sent += p.sentIn[i].Load()
			}
		}
		pr := Progress{Phase: Phase(l.phase.Load()).String(), Sent: sent, Elapsed: r.since()}
		if r.cfg.Sequential {
			pr.Partitioner = l.prods[0].name
		}
		r.cfg.Progress(pr)
	}
}
