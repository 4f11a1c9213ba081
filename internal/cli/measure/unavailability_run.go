package measure

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kplan-dev/kplan/internal/chaos"
	chaoslab "github.com/kplan-dev/kplan/internal/chaos/lab"
	"github.com/kplan-dev/kplan/internal/chaos/remote"
	"github.com/kplan-dev/kplan/internal/clock"
	"github.com/kplan-dev/kplan/internal/cmdutil"
	"github.com/kplan-dev/kplan/internal/errkind"
	"github.com/kplan-dev/kplan/internal/kafka"
	"github.com/kplan-dev/kplan/internal/loadgen"
	"github.com/kplan-dev/kplan/internal/measure"
	"github.com/kplan-dev/kplan/internal/report"
)

// unavailWait bounds each wait for the cluster to settle: a topic led and
// in sync, a restarted broker back in every ISR.
const unavailWait = 3 * time.Minute

// errUnavailUnsteady is a kill not made because the victim lost the
// leadership on its own (fenced after missed heartbeats on a loaded
// machine): that run is made again, up to unavailAttempts times.
var errUnavailUnsteady = errkind.New(errkind.Runtime, "", "the cluster is not steady (a broker fenced after missed heartbeats?)")

// unavailAttempts bounds the attempts at one run.
const unavailAttempts = 3

// unavailRun is one measurement's state, for the cleanup.
type unavailRun struct {
	opts   *UnavailabilityOptions
	c      chaos.Cluster
	rc     *remote.Cluster // nil on the lab
	admin  *kafka.ScratchAdmin
	conn   kafka.ConnOptions
	victim int32
	killed bool
	topics []string // created and not yet deleted
}

func runUnavailability(ctx context.Context, opts *UnavailabilityOptions) (retErr error) {
	u := &unavailRun{opts: opts, victim: -1}
	if err := u.open(ctx); err != nil {
		return err
	}
	defer u.c.Close()
	defer u.admin.Close()
	res := &UnavailabilityResult{Schema: UnavailSchema, Date: opts.Now().UTC().Format(time.RFC3339), Cluster: u.c.Kind(), Label: u.c.Label(),
		ReplicationFactor: opts.ReplicationFactor, Repeat: opts.Repeat, Counts: opts.Counts, Method: unavailMethod, Runs: []measure.UnavailRun{}}
	brokers, err := u.c.Brokers(ctx)
	if err != nil {
		return err
	}
	if opts.ReplicationFactor > len(brokers) {
		return cmdutil.UsageErrorf("--replication-factor: %d is more than the cluster's %d brokers", opts.ReplicationFactor, len(brokers))
	}
	res.Controller = -1
	qctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	if id, err := u.admin.ActiveController(qctx); err == nil {
		res.Controller = id
	}
	cancel()
	if u.victim, err = unavailVictim(opts.Broker, brokers, res.Controller); err != nil {
		return err
	}
	res.Victim = u.victim
	if u.rc != nil {
		if done, err := u.plan(ctx, brokers); err != nil || done {
			return err
		}
	}
	// On success, error and Ctrl-C: the broker comes back, the topics go.
	defer func() {
		if err := u.cleanup(ctx); err != nil && retErr == nil {
			retErr = err
		}
	}()
	runID := strconv.FormatInt(opts.Now().Unix(), 36)
	errOut := opts.IO.ErrOut
	fmt.Fprintf(errOut, "measure unavailability: %s; killing broker %d (active controller: %s), partitions %s, %d runs each\n",
		u.c.Label(), u.victim, unavailController(res.Controller), unavailJoin(opts.Counts), opts.Repeat)
	var runErr error
counts:
	for _, n := range opts.Counts {
		topic := unavailTopicName(opts.Topic, n, runID)
		if err := u.c.CreateTopic(ctx, topic, unavailAssignment(u.victim, brokers, n, opts.ReplicationFactor)); err != nil {
			runErr = fmt.Errorf("creating %s: %w", topic, err)
			break
		}
		u.topics = append(u.topics, topic)
		for rep, attempt := 1, 1; rep <= opts.Repeat; attempt++ {
			run, err := u.once(ctx, topic, n, rep)
			if errors.Is(err, errUnavailUnsteady) && attempt < unavailAttempts {
				fmt.Fprintf(errOut, "measure unavailability: %d partitions, run %d/%d: %v; again\n", n, rep, opts.Repeat, err)
				continue
			}
			if err != nil {
				runErr = fmt.Errorf("%d partitions, run %d: %w", n, rep, err)
				break counts
			}
			res.Runs = append(res.Runs, run)
			fmt.Fprintf(errOut, "measure unavailability: %d partitions, run %d/%d: all writable after %.0f ms (first %.0f, median %.0f)\n",
				n, rep, opts.Repeat, run.AllMS, run.FirstMS, run.MedianMS)
			rep, attempt = rep+1, 0
		}
		if !opts.Keep {
			if err := u.deleteTopic(ctx, topic); err != nil {
				runErr = err
				break
			}
		}
	}
	if runErr != nil {
		res.Partial = true
		if len(res.Runs) == 0 {
			return unavailErr(runErr)
		}
	}
	res.finish()
	if err := report.Render(opts.IO.Out, opts.Format, res, res.doc); err != nil {
		return err
	}
	if opts.ReportDir != "" {
		files, err := res.writeReport(opts.ReportDir)
		if err != nil {
			return err
		}
		fmt.Fprintf(errOut, "report written to %s (%s)\n", opts.ReportDir, strings.Join(files, ", "))
	}
	if opts.OutPlan != "" {
		switch {
		case res.Fit == nil || res.Partial:
			fmt.Fprintf(errOut, "measure unavailability: %s left as it was (no complete fit)\n", opts.OutPlan)
		default:
			if err := res.writePlan(opts.OutPlan); err != nil {
				return err
			}
			fmt.Fprintf(errOut, "measure unavailability: election-time: %s written to %s\n", res.ElectionTime, opts.OutPlan)
		}
	}
	return unavailErr(runErr)
}

// unavailErr spells a run's error for the command line.
func unavailErr(err error) error {
	var ke *errkind.Error
	switch {
	case err == nil:
		return nil
	case errors.Is(err, context.Canceled):
		return fmt.Errorf("interrupted; the runs that finished were printed: %w", err)
	case errors.As(err, &ke) && ke.Kind == errkind.Refused && ke.Field == chaos.FieldAllowUnavailable:
		return errkind.Wrap(ke.Kind, "", fmt.Errorf("%w; pass --allow-unavailable to kill anyway", err))
	}
	return err
}

// open connects to the cluster and builds the admin client.
func (u *unavailRun) open(ctx context.Context) error {
	o := u.opts
	if o.Cluster == "lab" {
		c, err := chaoslab.New(o.LabDir, o.Conn, o.Version)
		if err != nil {
			return cmdutil.Usage(fmt.Errorf("--cluster lab: %w", err))
		}
		u.c, u.conn = c, c.Conn().WithSeeds(c.Seeds())
	} else {
		k, err := o.Killer.New()
		if err != nil {
			return cmdutil.Usage(unavailSpell(err))
		}
		rc, err := remote.New(ctx, remote.Options{Conn: o.Conn, Version: o.Version, Killer: k, KeepTopics: o.Keep})
		if err != nil {
			return err
		}
		u.c, u.rc, u.conn = rc, rc, o.Conn
	}
	admin, err := kafka.NewScratchAdmin(u.conn, o.Version)
	if err != nil {
		u.c.Close()
		return err
	}
	u.admin = admin
	return nil
}

// unavailVictim is --broker, checked, or the highest broker id that is not
// the active controller.
func unavailVictim(want int32, brokers []int32, controller int32) (int32, error) {
	if want >= 0 {
		if !slices.Contains(brokers, want) {
			return -1, cmdutil.UsageErrorf("--broker: %d is not a broker of the cluster (brokers %v)", want, brokers)
		}
		return want, nil
	}
	for i := len(brokers) - 1; i >= 0; i-- {
		if brokers[i] != controller {
			return brokers[i], nil
		}
	}
	return brokers[len(brokers)-1], nil
}

// unavailAssignment places n partitions with the victim first (their
// leader) and the other replicas round the other brokers, so the new
// leaders spread over them.
func unavailAssignment(victim int32, brokers []int32, n, rf int) [][]int32 {
	var others []int32
	for _, b := range brokers {
		if b != victim {
			others = append(others, b)
		}
	}
	out := make([][]int32, n)
	for p := range out {
		reps := []int32{victim}
		for j := range rf - 1 {
			reps = append(reps, others[(p+j)%len(others)])
		}
		out[p] = reps
	}
	return out
}

// plan prints what a remote run would do and refuses without --yes.
func (u *unavailRun) plan(ctx context.Context, brokers []int32) (bool, error) {
	o := u.opts
	b, err := u.rc.Broker(ctx, u.victim)
	if err != nil {
		return false, unavailSpell(err)
	}
	kp, err := u.rc.Killer().Plan(ctx, b)
	if err != nil {
		return false, err
	}
	out := o.IO.ErrOut
	if !o.Yes {
		out = o.IO.Out
	}
	fmt.Fprintf(out, "kplan measure unavailability plan\ncluster:  %s (brokers %v)\nkill:     broker %d, advertised as %s:%d, with %s: %s\n",
		u.rc.Label(), brokers, b.ID, b.Host, b.Port, u.rc.Killer().Name(), kp.Target)
	for i, s := range kp.Steps {
		fmt.Fprintf(out, "  %d. %s\n", i+1, s)
	}
	what := "deleted at the end"
	if o.Keep {
		what = "kept (--keep)"
	}
	fmt.Fprintf(out, "topics:   %s-N-RUNID for N in %s, led by broker %d, replication factor %d (%s)\nruns:     %d kills per count, each restored\n",
		o.Topic, unavailJoin(o.Counts), u.victim, o.ReplicationFactor, what, o.Repeat)
	if !o.Yes {
		return false, errkind.Refusedf("", "--yes: not given: kplan creates topics and kills brokers on %s only with --yes (the plan is above)", u.rc.Kind())
	}
	return false, nil
}

// once is one kill: the topic led by the victim and in sync, the probe
// client warm, the kill, the probe, the restart.
func (u *unavailRun) once(ctx context.Context, topic string, n, rep int) (measure.UnavailRun, error) {
	o := u.opts
	if _, err := chaos.WaitFullISR(ctx, u.c, u.conn, o.Version, unavailWait); err != nil {
		return measure.UnavailRun{}, err
	}
	if err := u.waitLed(ctx, topic); err != nil {
		return measure.UnavailRun{}, err
	}
	if !o.AllowUnavailable {
		snap, err := u.admin.Snapshot(ctx)
		if err != nil {
			return measure.UnavailRun{}, err
		}
		parts := make([]chaos.PartitionState, 0, len(snap.Partitions))
		for _, p := range snap.Partitions {
			parts = append(parts, chaos.PartitionState{Name: fmt.Sprintf("%s/%d", p.Topic, p.Partition), Replicas: p.Replicas, ISR: p.ISR})
		}
		if err := chaos.CheckKill(parts, u.victim); err != nil {
			return measure.UnavailRun{}, err
		}
	}
	pr, err := loadgen.NewProber(u.conn, o.Version, topic, int32(n), o.RequestTimeout)
	if err != nil {
		return measure.UnavailRun{}, err
	}
	defer pr.Close()
	wctx, cancel := context.WithTimeout(ctx, unavailWait)
	err = pr.Warm(wctx)
	cancel()
	if err != nil {
		return measure.UnavailRun{}, err
	}
	// Warming took a while: on a loaded machine a broker that missed its
	// heartbeats may have been fenced meanwhile and its leadership moved,
	// and a kill then measures nothing. Check again just before it.
	parts, ok, err := u.admin.TopicLeadership(ctx, topic)
	if err != nil {
		return measure.UnavailRun{}, err
	}
	if led, why := kafka.LedInSync(parts, u.victim); !ok || !led {
		return measure.UnavailRun{}, fmt.Errorf("%s: broker %d lost the leadership before the kill (%s): %w", topic, u.victim, why, errUnavailUnsteady)
	}
	killAt, err := u.kill(ctx)
	if err != nil {
		return measure.UnavailRun{}, err
	}
	start := time.Now()
	pctx, cancel := context.WithTimeout(ctx, o.FailoverTimeout)
	per, perr := pr.Probe(pctx, killAt)
	cancel()
	// The broker comes back even when Ctrl-C ended the probe.
	rctx, cancel := unavailContext(ctx)
	defer cancel()
	if err := u.restart(rctx); err != nil {
		return measure.UnavailRun{}, err
	}
	if perr != nil {
		if ctx.Err() != nil {
			return measure.UnavailRun{}, ctx.Err()
		}
		return measure.UnavailRun{}, errkind.Wrap(errkind.Runtime, "", fmt.Errorf("within --failover-timeout %v: %w", o.FailoverTimeout, perr))
	}
	return measure.SummarizeUnavailRun(n, rep, per, start.Sub(killAt)), nil
}

// waitLed waits until the victim leads every partition of topic with every
// replica in sync, electing preferred leaders when it does not.
func (u *unavailRun) waitLed(ctx context.Context, topic string) error {
	deadline := time.Now().Add(unavailWait)
	elected := false
	for {
		parts, ok, err := u.admin.TopicLeadership(ctx, topic)
		why := "the topic is not in the metadata yet"
		if err == nil && ok {
			var led bool
			if led, why = kafka.LedInSync(parts, u.victim); led {
				return nil
			}
			if !elected && !slices.ContainsFunc(parts, func(p kafka.PartitionLeadership) bool { return p.Leader < 0 }) {
				ectx, cancel := context.WithTimeout(ctx, unavailWait)
				err = u.c.ElectPreferred(ectx)
				cancel()
				if err != nil {
					return fmt.Errorf("moving the leadership of %s back to broker %d: %w", topic, u.victim, err)
				}
				elected = true
				continue
			}
		} else if err != nil {
			why = err.Error()
		}
		if time.Now().After(deadline) {
			return errkind.New(errkind.Runtime, "", "%s not led by broker %d with every replica in sync after %v: %s", topic, u.victim, unavailWait, why)
		}
		if err := clock.Sleep(ctx, 200*time.Millisecond); err != nil {
			return err
		}
	}
}

// kill kills the victim and returns when the kill took effect: just before
// the lab's SIGKILL, or as the killer reports it (the time before its
// command when it reports none). A remote kill goes through the killer
// alone, so the probe starts at once rather than after Kafka noticed.
func (u *unavailRun) kill(ctx context.Context) (time.Time, error) {
	if u.rc == nil {
		at := time.Now()
		u.killed = true
		if err := u.c.Kill(ctx, u.victim); err != nil {
			return at, fmt.Errorf("killing broker %d: %w", u.victim, err)
		}
		return at, nil
	}
	b, err := u.rc.Broker(ctx, u.victim)
	if err != nil {
		return time.Time{}, err
	}
	k := u.rc.Killer()
	if _, err := k.Plan(ctx, b); err != nil {
		return time.Time{}, err
	}
	before := time.Now()
	u.killed = true
	at, err := k.Kill(ctx, b)
	if err != nil {
		return before, fmt.Errorf("killing broker %d with %s: %w", u.victim, k.Name(), err)
	}
	if at.IsZero() {
		at = before
	}
	return at, nil
}

// restart brings the victim back.
func (u *unavailRun) restart(ctx context.Context) error {
	if !u.killed {
		return nil
	}
	if err := u.c.Restart(ctx, u.victim); err != nil {
		return fmt.Errorf("restarting broker %d: %w", u.victim, err)
	}
	u.killed = false
	return nil
}

// deleteTopic deletes one scratch topic.
func (u *unavailRun) deleteTopic(ctx context.Context, topic string) error {
	if err := u.admin.DeleteTopic(ctx, topic); err != nil {
		return err
	}
	u.topics = slices.DeleteFunc(u.topics, func(t string) bool { return t == topic })
	return nil
}

// cleanup restarts a broker left killed, deletes the scratch topics left
// (unless --keep) and removes the killer's objects, on a context Ctrl-C
// does not cancel; then it waits, briefly, for the cluster to be whole.
func (u *unavailRun) cleanup(ctx context.Context) error {
	cctx, cancel := unavailContext(ctx)
	defer cancel()
	var errs []error
	errOut := u.opts.IO.ErrOut
	if u.killed {
		fmt.Fprintf(errOut, "measure unavailability: restarting broker %d\n", u.victim)
		if err := u.restart(cctx); err != nil {
			errs = append(errs, err)
		}
	}
	if !u.opts.Keep {
		for _, t := range slices.Clone(u.topics) {
			if err := u.deleteTopic(cctx, t); err != nil {
				errs = append(errs, err)
			} else {
				fmt.Fprintf(errOut, "measure unavailability: deleted topic %s\n", t)
			}
		}
	} else if len(u.topics) > 0 {
		fmt.Fprintf(errOut, "measure unavailability: kept topics %s (--keep)\n", strings.Join(u.topics, ", "))
	}
	if u.rc != nil {
		if _, err := u.rc.Cleanup(cctx); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) == 0 && !u.killed {
		if rep, err := chaos.WaitFullISR(cctx, u.c, u.conn, u.opts.Version, unavailWait); err != nil {
			errs = append(errs, err)
		} else {
			fmt.Fprintln(errOut, "measure unavailability: "+rep.String())
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("cleanup: %w", err)
	}
	return nil
}
