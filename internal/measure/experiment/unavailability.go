package experiment

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kplan-dev/kplan/internal/chaos"
	"github.com/kplan-dev/kplan/internal/chaos/remote"
	"github.com/kplan-dev/kplan/internal/clock"
	"github.com/kplan-dev/kplan/internal/errkind"
	"github.com/kplan-dev/kplan/internal/kafka"
	"github.com/kplan-dev/kplan/internal/loadgen"
	"github.com/kplan-dev/kplan/internal/measure"
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

// Unavailability is the action behind `kplan measure unavailability`: for
// each partition count, a scratch topic led by one broker (the victim),
// then Repeat times: wait until the topic is led by the victim and in
// sync, kill it, probe every partition until it accepts a write, restart
// it. A broker left killed comes back and the scratch topics go (unless
// Keep) also on error and Ctrl-C. It prints nothing: Progress reports.
type Unavailability struct {
	// Cluster is the cluster; Remote the same cluster when it is not the
	// lab (its killer plans and kills), else nil.
	Cluster chaos.Cluster
	Remote  *remote.Cluster
	// Admin is an admin client of the cluster, Conn how to reach it.
	Admin   *kafka.ScratchAdmin
	Conn    kafka.ConnOptions
	Version string
	Now     func() time.Time

	// Counts are the partition counts, ascending; Repeat the kills per
	// count.
	Counts            []int
	Repeat            int
	ReplicationFactor int
	// Broker is the broker to kill; -1 chooses one that is not the active
	// controller.
	Broker int32
	// Topic prefixes the scratch topics' names.
	Topic string
	// Keep keeps the scratch topics.
	Keep bool
	// Yes allows the kills on a remote cluster (without it, Run stops
	// after OnPlan with a refusal).
	Yes bool
	// AllowUnavailable kills even when another topic would lose its last
	// in-sync replica.
	AllowUnavailable bool
	// FailoverTimeout bounds the wait, after each kill, for every
	// partition to accept a write; RequestTimeout each probe request.
	FailoverTimeout, RequestTimeout time.Duration

	// Progress, when set, gets one line of progress at a time.
	Progress func(format string, a ...any)
	// OnPlan, when set, gets what a run on a remote cluster will do before
	// anything is created or killed.
	OnPlan func(UnavailabilityPlan) error
}

// UnavailabilityPlan is what a run on a remote cluster will do.
type UnavailabilityPlan struct {
	Label   string
	Brokers []int32
	// Victim is the broker killed, as its metadata advertises it.
	Victim chaos.Broker
	// Killer names the killer; Target and Steps are its plan.
	Killer string
	Target string
	Steps  []string
	// Topic, Counts, ReplicationFactor, Keep and Repeat are the
	// action's.
	Topic             string
	Counts            []int
	ReplicationFactor int
	Keep              bool
	Repeat            int
}

// unavailRun is one measurement's state, for the cleanup.
type unavailRun struct {
	*Unavailability
	victim int32
	killed bool
	topics []string // created and not yet deleted
}

func (a *Unavailability) progress(format string, args ...any) {
	if a.Progress != nil {
		a.Progress(format, args...)
	}
}

// Run measures and fits. It returns no result with the error when it
// stopped before any run finished; with runs, the error is the one that
// stopped it (the result is then Partial) or the cleanup's.
func (a *Unavailability) Run(ctx context.Context) (res *UnavailabilityResult, retErr error) {
	u := &unavailRun{Unavailability: a, victim: -1}
	res = &UnavailabilityResult{Schema: UnavailSchema, Date: a.Now().UTC().Format(time.RFC3339), Cluster: a.Cluster.Kind(), Label: a.Cluster.Label(),
		ReplicationFactor: a.ReplicationFactor, Repeat: a.Repeat, Counts: a.Counts, Method: UnavailMethod, Runs: []measure.UnavailRun{}}
	brokers, err := a.Cluster.Brokers(ctx)
	if err != nil {
		return nil, err
	}
	if a.ReplicationFactor > len(brokers) {
		return nil, errkind.Usagef("replication-factor", "%d is more than the cluster's %d brokers", a.ReplicationFactor, len(brokers))
	}
	res.Controller = -1
	qctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	if id, err := a.Admin.ActiveController(qctx); err == nil {
		res.Controller = id
	}
	cancel()
	if u.victim, err = UnavailVictim(a.Broker, brokers, res.Controller); err != nil {
		return nil, err
	}
	res.Victim = u.victim
	if a.Remote != nil {
		if err := u.plan(ctx, brokers); err != nil {
			return nil, err
		}
	}
	// On success, error and Ctrl-C: the broker comes back, the topics go.
	defer func() {
		if err := u.cleanup(ctx); err != nil && retErr == nil {
			retErr = err
		}
	}()
	a.progress("measure unavailability: %s; killing broker %d (active controller: %s), partitions %s, %d runs each",
		a.Cluster.Label(), u.victim, UnavailController(res.Controller), JoinCounts(a.Counts), a.Repeat)
	runErr := u.counts(ctx, brokers, res)
	if runErr != nil {
		res.Partial = true
		if len(res.Runs) == 0 {
			return nil, runErr
		}
	}
	res.Finish()
	return res, runErr
}

// counts runs every count's repetitions, appending to res.Runs.
func (u *unavailRun) counts(ctx context.Context, brokers []int32, res *UnavailabilityResult) error {
	runID := strconv.FormatInt(u.Now().Unix(), 36)
	for _, n := range u.Counts {
		topic := UnavailTopicName(u.Topic, n, runID)
		if err := u.Cluster.CreateTopic(ctx, topic, UnavailAssignment(u.victim, brokers, n, u.ReplicationFactor)); err != nil {
			return fmt.Errorf("creating %s: %w", topic, err)
		}
		u.topics = append(u.topics, topic)
		for rep, attempt := 1, 1; rep <= u.Repeat; attempt++ {
			run, err := u.once(ctx, topic, n, rep)
			if errors.Is(err, errUnavailUnsteady) && attempt < unavailAttempts {
				u.progress("measure unavailability: %d partitions, run %d/%d: %v; again", n, rep, u.Repeat, err)
				continue
			}
			if err != nil {
				return fmt.Errorf("%d partitions, run %d: %w", n, rep, err)
			}
			res.Runs = append(res.Runs, run)
			u.progress("measure unavailability: %d partitions, run %d/%d: all writable after %.0f ms (first %.0f, median %.0f)",
				n, rep, u.Repeat, run.AllMS, run.FirstMS, run.MedianMS)
			rep, attempt = rep+1, 0
		}
		if !u.Keep {
			if err := u.deleteTopic(ctx, topic); err != nil {
				return err
			}
		}
	}
	return nil
}

// UnavailVictim is the broker asked for, checked, or the highest broker id
// that is not the active controller.
func UnavailVictim(want int32, brokers []int32, controller int32) (int32, error) {
	if want >= 0 {
		if !slices.Contains(brokers, want) {
			return -1, errkind.Usagef("broker", "%d is not a broker of the cluster (brokers %v)", want, brokers)
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

// UnavailAssignment places n partitions with the victim first (their
// leader) and the other replicas round the other brokers, so the new
// leaders spread over them.
func UnavailAssignment(victim int32, brokers []int32, n, rf int) [][]int32 {
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

// UnavailTopicName names the scratch topic of count n.
func UnavailTopicName(prefix string, n int, runID string) string {
	return prefix + "-" + strconv.Itoa(n) + "-" + runID
}

// UnavailController spells the active controller's id (-1: unknown).
func UnavailController(id int32) string {
	if id < 0 {
		return "unknown"
	}
	return "broker " + strconv.Itoa(int(id))
}

// JoinCounts spells partition counts as "1,10,100".
func JoinCounts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}

// cleanupContext is the context cleanup runs on: not cancelled by Ctrl-C,
// bounded so a dead cluster cannot hold kplan forever.
func cleanupContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), 5*time.Minute)
}

// plan hands what a remote run would do to OnPlan and refuses without Yes.
// An error about the victim names the field "broker".
func (u *unavailRun) plan(ctx context.Context, brokers []int32) error {
	b, err := u.Remote.Broker(ctx, u.victim)
	if err != nil {
		return err
	}
	kp, err := u.Remote.Killer().Plan(ctx, b)
	if err != nil {
		return err
	}
	if u.OnPlan != nil {
		p := UnavailabilityPlan{Label: u.Remote.Label(), Brokers: brokers, Victim: b, Killer: u.Remote.Killer().Name(), Target: kp.Target, Steps: kp.Steps,
			Topic: u.Topic, Counts: u.Counts, ReplicationFactor: u.ReplicationFactor, Keep: u.Keep, Repeat: u.Repeat}
		if err := u.OnPlan(p); err != nil {
			return err
		}
	}
	if !u.Yes {
		return errkind.Refusedf("", "--yes: not given: kplan creates topics and kills brokers on %s only with --yes (the plan is above)", u.Remote.Kind())
	}
	return nil
}

// once is one kill: the topic led by the victim and in sync, the probe
// client warm, the kill, the probe, the restart.
func (u *unavailRun) once(ctx context.Context, topic string, n, rep int) (measure.UnavailRun, error) {
	if _, err := chaos.WaitFullISR(ctx, u.Cluster, u.Conn, u.Version, unavailWait); err != nil {
		return measure.UnavailRun{}, err
	}
	if err := u.waitLed(ctx, topic); err != nil {
		return measure.UnavailRun{}, err
	}
	if !u.AllowUnavailable {
		snap, err := u.Admin.Snapshot(ctx)
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
	pr, err := loadgen.NewProber(u.Conn, u.Version, topic, int32(n), u.RequestTimeout)
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
	parts, ok, err := u.Admin.TopicLeadership(ctx, topic)
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
	pctx, cancel := context.WithTimeout(ctx, u.FailoverTimeout)
	per, perr := pr.Probe(pctx, killAt)
	cancel()
	// The broker comes back even when Ctrl-C ended the probe.
	rctx, cancel := cleanupContext(ctx)
	defer cancel()
	if err := u.restart(rctx); err != nil {
		return measure.UnavailRun{}, err
	}
	if perr != nil {
		if ctx.Err() != nil {
			return measure.UnavailRun{}, ctx.Err()
		}
		return measure.UnavailRun{}, errkind.Wrap(errkind.Runtime, "", fmt.Errorf("within --failover-timeout %v: %w", u.FailoverTimeout, perr))
	}
	return measure.SummarizeUnavailRun(n, rep, per, start.Sub(killAt)), nil
}

// waitLed waits until the victim leads every partition of topic with every
// replica in sync, electing preferred leaders when it does not.
func (u *unavailRun) waitLed(ctx context.Context, topic string) error {
	deadline := time.Now().Add(unavailWait)
	elected := false
	for {
		parts, ok, err := u.Admin.TopicLeadership(ctx, topic)
		why := "the topic is not in the metadata yet"
		if err == nil && ok {
			var led bool
			if led, why = kafka.LedInSync(parts, u.victim); led {
				return nil
			}
			if !elected && !slices.ContainsFunc(parts, func(p kafka.PartitionLeadership) bool { return p.Leader < 0 }) {
				ectx, cancel := context.WithTimeout(ctx, unavailWait)
				err = u.Cluster.ElectPreferred(ectx)
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
	if u.Remote == nil {
		at := time.Now()
		u.killed = true
		if err := u.Cluster.Kill(ctx, u.victim); err != nil {
			return at, fmt.Errorf("killing broker %d: %w", u.victim, err)
		}
		return at, nil
	}
	b, err := u.Remote.Broker(ctx, u.victim)
	if err != nil {
		return time.Time{}, err
	}
	k := u.Remote.Killer()
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
	if err := u.Cluster.Restart(ctx, u.victim); err != nil {
		return fmt.Errorf("restarting broker %d: %w", u.victim, err)
	}
	u.killed = false
	return nil
}

// deleteTopic deletes one scratch topic.
func (u *unavailRun) deleteTopic(ctx context.Context, topic string) error {
	if err := u.Admin.DeleteTopic(ctx, topic); err != nil {
		return err
	}
	u.topics = slices.DeleteFunc(u.topics, func(t string) bool { return t == topic })
	return nil
}

// cleanup restarts a broker left killed, deletes the scratch topics left
// (unless --keep) and removes the killer's objects, on a context Ctrl-C
// does not cancel; then it waits, briefly, for the cluster to be whole.
func (u *unavailRun) cleanup(ctx context.Context) error {
	cctx, cancel := cleanupContext(ctx)
	defer cancel()
	var errs []error
	if u.killed {
		u.progress("measure unavailability: restarting broker %d", u.victim)
		if err := u.restart(cctx); err != nil {
			errs = append(errs, err)
		}
	}
	if !u.Keep {
		for _, t := range slices.Clone(u.topics) {
			if err := u.deleteTopic(cctx, t); err != nil {
				errs = append(errs, err)
			} else {
				u.progress("measure unavailability: deleted topic %s", t)
			}
		}
	} else if len(u.topics) > 0 {
		u.progress("measure unavailability: kept topics %s (--keep)", strings.Join(u.topics, ", "))
	}
	if u.Remote != nil {
		if _, err := u.Remote.Cleanup(cctx); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) == 0 && !u.killed {
		if rep, err := chaos.WaitFullISR(cctx, u.Cluster, u.Conn, u.Version, unavailWait); err != nil {
			errs = append(errs, err)
		} else {
			u.progress("measure unavailability: %s", rep.String())
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("cleanup: %w", err)
	}
	return nil
}
