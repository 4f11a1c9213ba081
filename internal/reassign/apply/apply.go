// Package apply carries out a reassignment plan on a running cluster, as
// kafka-reassign-partitions --execute, --verify and --cancel do: it reads
// the state of the plan's partitions, refuses what is unsafe, sets the
// replication throttle, starts the reassignment, waits for it and removes
// the throttle, then elects the plan's leaders. It reaches Kafka only
// through the Admin interface and prints nothing: progress goes to
// Options.Progress, the outcome is returned, and the clock is injected.
package apply

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/kplan-dev/kplan/internal/errkind"
	"github.com/kplan-dev/kplan/internal/topology"
)

// Schema versions the JSON of `kplan reassign apply -o json`.
const Schema = "kplan.reassign.apply/v1"

// Admin is what applying a plan needs from a cluster; internal/kafka's
// Admin implements it.
type Admin interface {
	// Snapshot returns the live layout of the topics the filter accepts:
	// the running brokers, and each partition's replicas, leader and
	// offline replicas.
	Snapshot(ctx context.Context, topicFilter func(string) bool) (*topology.Cluster, error)
	// Ongoing returns the reassignments in progress among keys.
	Ongoing(ctx context.Context, keys []topology.Key) (map[topology.Key]topology.Ongoing, error)
	// SetThrottle sets a replication throttle.
	SetThrottle(ctx context.Context, t topology.Throttle) error
	// ClearThrottle removes the throttle configs from brokers and topics.
	ClearThrottle(ctx context.Context, brokers []int32, topics []string) error
	// Reassign starts moving every partition to its replicas.
	Reassign(ctx context.Context, moves []topology.Partition) error
	// CancelReassign cancels the reassignments in progress of keys.
	CancelReassign(ctx context.Context, keys []topology.Key) error
	// ElectPreferred runs a preferred leader election for keys (never for
	// every partition: an empty keys elects nothing). The map holds the
	// partitions the controller refused, with its reason; a partition
	// whose leader is already its preferred one (Kafka's
	// ELECTION_NOT_NEEDED) is not a refusal. The error is for a request
	// that failed as a whole.
	ElectPreferred(ctx context.Context, keys []topology.Key) (map[topology.Key]error, error)
}

// Clock tells the time and waits; tests inject a fake one.
type Clock interface {
	Now() time.Time
	// Sleep waits for d, or returns ctx's error when ctx ends first.
	Sleep(ctx context.Context, d time.Duration) error
}

// Mode is what to do with the plan.
type Mode string

// The modes, as `kplan reassign apply` names them.
const (
	ModeExecute Mode = "execute"
	ModeVerify  Mode = "verify"
	ModeCancel  Mode = "cancel"
)

// Status is one plan partition's state on the cluster.
type Status string

// The statuses of a plan partition.
const (
	// Pending: the partition is about to be reassigned (execute only).
	Pending Status = "pending"
	// Complete: the partition has its target replicas and no reassignment
	// is in progress.
	Complete Status = "complete"
	// InProgress: the controller is reassigning the partition.
	InProgress Status = "in-progress"
	// Differs: the partition's replicas differ from the plan and nothing is
	// moving them.
	Differs Status = "differs"
	// Missing: the partition does not exist on the cluster.
	Missing Status = "missing"
)

// Outcome is how a run ended.
type Outcome string

// The outcomes of a run.
const (
	// NothingToDo: every partition already had its target replicas.
	NothingToDo Outcome = "nothing-to-do"
	// Started: the controller accepted the moves; nobody waited for them.
	Started Outcome = "started"
	// Done: every partition has its target replicas (and, after a verify
	// or a wait, the throttle is gone).
	Done Outcome = "complete"
	// StillInProgress: a verify found reassignments still running.
	StillInProgress Outcome = "in-progress"
	// Diverged: a verify found partitions that differ from the plan with
	// nothing moving them.
	Diverged Outcome = "differs"
	// Cancelled: the reassignments in progress were cancelled.
	Cancelled Outcome = "cancelled"
)

// PartitionStatus is one plan partition: its replicas now and in the plan.
type PartitionStatus struct {
	Topic     string  `json:"topic"`
	Partition int32   `json:"partition"`
	Current   []int32 `json:"current"`
	Target    []int32 `json:"target"`
	Status    Status  `json:"status"`
}

// Key returns the partition's key.
func (s PartitionStatus) Key() topology.Key {
	return topology.Key{Topic: s.Topic, Partition: s.Partition}
}

// Result is the state of the plan's partitions at the end of a run.
type Result struct {
	Mode    Mode
	Outcome Outcome
	// Partitions are in plan order.
	Partitions []PartitionStatus
	// Complete, InProgress and Differs count Partitions by status; Differs
	// also counts pending and missing ones.
	Complete, InProgress, Differs int
	// Moves counts the partition moves started (execute) or the
	// reassignments cancelled (cancel).
	Moves int
	// ToElect is, when the plan is shown (execute), the number of plan
	// partitions that will keep a leader other than their target's first
	// replica once moved, so the election after the move is for them.
	ToElect int
	// Steps counts the reassignments (steps, see Step) the plan's moves
	// take, Submitted those the controller accepted, Waves the requests
	// that submitted them (execute only).
	Steps, Submitted, Waves int
	// Election is the preferred leader election after a complete plan
	// (execute and verify; nil for cancel and when the plan is not
	// complete).
	Election *Election
	// Dirs is where the replicas the plan's log_dirs place stand (nil:
	// the plan names no dir).
	Dirs *DirProgress
}

// Skip says why no preferred election ran after the plan.
type Skip string

// The reasons not to elect.
const (
	// SkipNoElect: Options.NoElect.
	SkipNoElect Skip = "no-elect"
	// SkipNoWait: Options.NoWait; nothing waited for the plan to complete.
	SkipNoWait Skip = "no-wait"
)

// Election is the preferred leader election that follows a complete plan:
// Kafka's controller keeps a partition's leader while it stays in the ISR,
// so moving replicas alone leaves many partitions led by a broker other
// than their first replica, the leader the plan intends.
type Election struct {
	// Skipped says why no election ran ("" when it ran).
	Skipped Skip `json:"skipped,omitempty"`
	// Needed counts the plan partitions whose leader was not their first
	// replica once the plan was complete (not counted with SkipNoWait).
	Needed int `json:"needed"`
	// Elected counts the partitions the controller accepted (or found
	// already led by their first replica).
	Elected int `json:"elected"`
	// Failed are the partitions the controller refused.
	Failed []ElectionFailure `json:"failed"`
	// NotMoved are elected partitions whose metadata still showed another
	// leader when the wait ended.
	NotMoved []LeaderStatus `json:"not_moved"`
	// Waited is how long the wait for the metadata took.
	Waited time.Duration `json:"-"`
}

// OK reports whether every partition that needed it has its preferred
// leader (or the election was skipped).
func (e *Election) OK() bool {
	return e == nil || (len(e.Failed) == 0 && len(e.NotMoved) == 0)
}

// ElectionFailure is one partition the controller did not elect.
type ElectionFailure struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Error     string `json:"error"`
	err       error
}

// Err returns the controller's error.
func (f ElectionFailure) Err() error { return f.err }

// LeaderStatus is a partition's leader and its preferred one.
type LeaderStatus struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Leader    int32  `json:"leader"`
	Preferred int32  `json:"preferred"`
}

func (r *Result) tally() {
	r.Complete, r.InProgress, r.Differs = 0, 0, 0
	for _, s := range r.Partitions {
		switch s.Status {
		case Complete:
			r.Complete++
		case InProgress:
			r.InProgress++
		default:
			r.Differs++
		}
	}
}

// EventKind says what an Event reports.
type EventKind int

const (
	// EventPlan: the partitions about to change, before anything changes
	// and before a refusal.
	EventPlan EventKind = iota
	// EventAccepted: the controller accepted Event.Moves partition moves.
	EventAccepted
	// EventProgress: one poll while waiting for completion.
	EventProgress
	// EventElected: the controller answered the preferred election
	// (Result.Election holds the figures, before the wait for metadata).
	EventElected
	// EventThrottle: the adaptive throttle changed the rate of brokers
	// (Event.Changes).
	EventThrottle
	// EventDirs: one poll while replicas move into their planned log dirs
	// (Result.Dirs).
	EventDirs
)

// Event is a step of a run, reported through Options.Progress.
type Event struct {
	Kind EventKind
	// Result is the state at this step; the callback must not keep it.
	Result *Result
	// Moves is the number of partition moves the controller accepted.
	Moves int
	// Elapsed is the time since the wait began (EventProgress).
	Elapsed time.Duration
	// Wave numbers the request the controller accepted (EventAccepted),
	// from 1.
	Wave int
	// Bytes is the progress in bytes (EventProgress of a staged apply on
	// an Admin that is a ReplicaSizer, when partition sizes are known);
	// nil otherwise.
	Bytes *ByteProgress
	// Changes are the adaptive throttle's rate changes (EventThrottle).
	Changes []RateChange
}

// Options tune a run.
type Options struct {
	// Throttle is the replication throttle in bytes/s while replicas move
	// (0: none).
	Throttle int64
	// Yes confirms a change on a cluster that is not the local kplan lab.
	Yes bool
	// Lab says the cluster is the local kplan lab, where changes need no
	// confirmation.
	Lab bool
	// NoWait returns once the controller accepted the moves.
	NoWait bool
	// WaitTimeout bounds the wait for completion (0: no bound).
	WaitTimeout time.Duration
	// Poll is the interval between polls while waiting (0: 1 s).
	Poll time.Duration
	// Clock tells the time and sleeps while waiting; required unless
	// NoWait.
	Clock Clock
	// NoElect skips the preferred leader election after a complete plan.
	NoElect bool
	// ElectWait bounds the wait until metadata shows the preferred
	// leaders after the election (0: 30 s).
	ElectWait time.Duration
	// Progress, when set, receives each step.
	Progress func(Event)
	// Limits cap the steps in flight (zero: no cap); see Scheduler.
	Limits Limits
	// Sizes are partition sizes in bytes, to spread the largest moves
	// (a partition missing here: the snapshot's SizeBytes, else unknown).
	Sizes map[topology.Key]int64
	// Source, when set, is what the plan was computed from: Execute
	// refuses when the cluster drifted from it (the drift guard).
	Source *Source
	// Resume, when set, is the state an earlier apply of the plan saved:
	// Execute goes on from it, submitting no step again that the cluster
	// shows submitted or done.
	Resume *State
	// SaveState, when set, receives the state after every change (before
	// the throttle is set, after each request the controller accepted and
	// each step found done); an error stops Execute.
	SaveState func(*State) error
	// Abort, when it closes, cuts short the cleanup that follows an
	// interrupt (removing the throttle): a second Ctrl-C. Nil: never.
	Abort <-chan struct{}
	// CleanupTimeout bounds that cleanup (0: 10 s).
	CleanupTimeout time.Duration
	// Guard, when set, adapts the throttle to a canary's latency while
	// replicas move (Execute only; it needs Throttle as the starting rate
	// and an Admin that is a RateSetter). Execute starts it once the plan
	// passed its checks; its owner stops the canary.
	Guard *Guard
}

func (o *Options) emit(e Event) {
	if o.Progress != nil {
		o.Progress(e)
	}
}

// ErrNotDone is wrapped when the wait stops before the plan is complete;
// the reassignment goes on in the cluster.
var ErrNotDone = errors.New("the reassignment goes on")

// Kafka's replication throttle configs: a rate on each broker, the
// throttled replicas on each topic.
const (
	LeaderRate       = "leader.replication.throttled.rate"
	FollowerRate     = "follower.replication.throttled.rate"
	LeaderReplicas   = "leader.replication.throttled.replicas"
	FollowerReplicas = "follower.replication.throttled.replicas"
)

// ThrottleLeft is a replication throttle that may still be set on the
// cluster: the configs on each broker and each topic not known removed.
type ThrottleLeft struct {
	Brokers       []int32  `json:"brokers"`
	BrokerConfigs []string `json:"broker_configs"`
	Topics        []string `json:"topics"`
	TopicConfigs  []string `json:"topic_configs"`
}

func throttleLeft(t throttleSet) *ThrottleLeft {
	return &ThrottleLeft{Brokers: slices.Clone(t.Brokers), BrokerConfigs: []string{LeaderRate, FollowerRate},
		Topics: slices.Clone(t.Topics), TopicConfigs: []string{LeaderReplicas, FollowerReplicas}}
}

// Interrupted is Execute's error when ctx ended (SIGINT, SIGTERM) while it
// waited for the moves: the reassignment goes on in the cluster. Execute
// then removed the throttle it had set, within Options.CleanupTimeout,
// unless Options.Abort cut that short.
type Interrupted struct {
	// Cause is why ctx ended (context.Cause).
	Cause error
	// Result is the last state seen; its Outcome is StillInProgress.
	Result *Result
	// Throttled says this run had set a throttle.
	Throttled bool
	// Left is the throttle that may still be set when its removal failed
	// or was cut short (a delete already sent may yet be applied); nil:
	// removed, or none was set.
	Left *ThrottleLeft
	// Aborted says Options.Abort cut the removal short.
	Aborted bool
	// CleanupErr is why the removal failed (nil when Aborted before it
	// began).
	CleanupErr error
}

func (e *Interrupted) Error() string {
	msg := fmt.Sprintf("interrupted (%v) with %d of %d partitions complete: the reassignment of the other %d goes on in the cluster",
		e.Cause, e.Result.Complete, len(e.Result.Partitions), len(e.Result.Partitions)-e.Result.Complete)
	switch {
	case e.Aborted:
		msg += "; removing the throttle was cut short, so it may still be set"
	case e.Left != nil:
		msg += fmt.Sprintf("; removing the throttle failed (%v), so it may still be set", e.CleanupErr)
	case e.Throttled:
		msg += "; the throttle was removed"
	}
	return msg
}

// Unwrap makes an Interrupted both ErrNotDone and its cause.
func (e *Interrupted) Unwrap() []error { return []error{ErrNotDone, e.Cause} }

// Rule names a reason to refuse executing a plan.
type Rule string

// The refusal rules.
const (
	// RuleInProgress: a reassignment of the partition is in progress.
	RuleInProgress Rule = "in-progress"
	// RuleNoLeader: the partition has no leader.
	RuleNoLeader Rule = "no-leader"
	// RuleBrokerDown: a target broker is known to the cluster but down
	// (its replicas are offline).
	RuleBrokerDown Rule = "broker-down"
	// RuleBrokerUnknown: a target broker is not a running broker of the
	// cluster.
	RuleBrokerUnknown Rule = "broker-unknown"
)

// Refusal is one reason not to execute the plan.
type Refusal struct {
	Rule      Rule
	Partition topology.Key
	// Broker is the target broker at fault (broker rules only).
	Broker int32
}

func (r Refusal) String() string {
	p := fmt.Sprintf("%s/%d", r.Partition.Topic, r.Partition.Partition)
	switch r.Rule {
	case RuleInProgress:
		return p + " is already being reassigned (verify or cancel that first)"
	case RuleNoLeader:
		return p + " has no leader"
	case RuleBrokerDown:
		return fmt.Sprintf("%s: target broker %d is down", p, r.Broker)
	default:
		return fmt.Sprintf("%s: target broker %d is not a running broker of the cluster", p, r.Broker)
	}
}

// Refusals are the reasons not to execute a plan; the error Execute
// returns wraps them as an errkind.Refused error about the field "plan".
type Refusals []Refusal

// Error lists the first five refusals.
func (rs Refusals) Error() string {
	var b bytes.Buffer
	b.WriteString("refusing to execute: ")
	for i, r := range rs {
		if i == 5 {
			fmt.Fprintf(&b, "; and %d more", len(rs)-5)
			break
		}
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(r.String())
	}
	return b.String()
}

// ParsePlan reads a plan: Kafka's reassignment JSON, as kplan reassign
// --out or kafka-reassign-partitions write it. name labels errors. Every
// error is a usage error; its field is "plan" unless the message names
// name itself.
func ParsePlan(r io.Reader, name string) ([]topology.Partition, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, errkind.Wrap(errkind.Usage, "plan", err)
	}
	if t := bytes.TrimLeft(data, " \t\r\n\ufeff"); !bytes.HasPrefix(t, []byte("{")) {
		return nil, errkind.Usagef("plan", "not a reassignment JSON file (want {\"version\":1,\"partitions\":[...]})")
	}
	c, err := topology.Load(bytes.NewReader(data), name)
	if err != nil {
		return nil, errkind.Wrap(errkind.Usage, "", err)
	}
	if len(c.Partitions) == 0 {
		return nil, errkind.Usagef("plan", "no partitions")
	}
	moves := make([]topology.Partition, len(c.Partitions))
	for i, p := range c.Partitions {
		moves[i] = topology.Partition{Topic: p.Topic, Partition: p.Partition, Replicas: slices.Clone(p.Replicas), Leader: topology.NoLeader}
		// log_dirs that name a dir (all "any" is no preference at all).
		if slices.ContainsFunc(p.LogDirs, func(d string) bool { return d != AnyDir }) {
			moves[i].LogDirs = slices.Clone(p.LogDirs)
		}
	}
	if _, err := DirMoves(moves); err != nil {
		return nil, err
	}
	return moves, nil
}

// state is the cluster as it bears on the plan.
type state struct {
	res *Result
	// current are the plan partitions on the cluster.
	current map[topology.Key]topology.Partition
	// running are the brokers that run; named, every other broker the
	// snapshot mentions.
	running, named map[int32]bool
	// ongoing are the plan partitions being reassigned, cluster the
	// snapshot.
	ongoing map[topology.Key]topology.Ongoing
	cluster *topology.Cluster
}

// read takes a snapshot of the plan's topics and the reassignments in
// progress, and classifies every plan partition.
func read(ctx context.Context, adm Admin, mode Mode, plan []topology.Partition) (*state, error) {
	topics := map[string]bool{}
	keys := make([]topology.Key, len(plan))
	for i, m := range plan {
		topics[m.Topic] = true
		keys[i] = m.Key()
	}
	c, err := adm.Snapshot(ctx, func(t string) bool { return topics[t] })
	if err != nil {
		return nil, err
	}
	ongoing, err := adm.Ongoing(ctx, keys)
	if err != nil {
		return nil, err
	}
	st := &state{current: map[topology.Key]topology.Partition{}, running: map[int32]bool{}, named: map[int32]bool{}, ongoing: ongoing, cluster: c}
	down := map[int32]bool{}
	for _, p := range c.Partitions {
		st.current[p.Key()] = p
		for _, b := range p.Offline {
			down[b] = true
		}
		for _, b := range p.Replicas {
			st.named[b] = true
		}
	}
	for _, b := range c.Brokers {
		st.named[b.ID] = true
		if !down[b.ID] {
			st.running[b.ID] = true
		}
	}
	st.res = &Result{Mode: mode, Partitions: make([]PartitionStatus, len(plan))}
	for i, m := range plan {
		p, ok := st.current[m.Key()]
		s := PartitionStatus{Topic: m.Topic, Partition: m.Partition, Current: p.Replicas, Target: m.Replicas}
		_, busy := ongoing[m.Key()]
		switch {
		case !ok:
			s.Status = Missing
		case busy:
			s.Status = InProgress
		case slices.Equal(p.Replicas, m.Replicas):
			s.Status = Complete
		default:
			s.Status = Differs
		}
		st.res.Partitions[i] = s
	}
	st.res.tally()
	return st, nil
}

// runningBrokers returns the running brokers, sorted.
func (st *state) runningBrokers() []int32 {
	out := make([]int32, 0, len(st.running))
	for b := range st.running {
		out = append(out, b)
	}
	slices.Sort(out)
	return out
}

// interrupted ends a wait that ctx's end cut short: the reassignment goes
// on, so the throttle this run set is removed (it would slow the moves
// for good), with a context of its own bounded by o.CleanupTimeout and
// cancelled when o.Abort closes.
func interrupted(ctx context.Context, adm Admin, res *Result, throttle throttleSet, o Options) *Interrupted {
	res.Outcome = StillInProgress
	e := &Interrupted{Cause: context.Cause(ctx), Result: res, Throttled: throttle.set()}
	if !e.Throttled {
		return e
	}
	aborted := func() bool {
		select {
		case <-o.Abort:
			return true
		default:
			return false
		}
	}
	if aborted() {
		e.Aborted, e.Left = true, throttleLeft(throttle)
		return e
	}
	timeout := o.CleanupTimeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	defer cancel()
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-o.Abort:
			cancel()
		case <-done:
		}
	}()
	if err := adm.ClearThrottle(cctx, throttle.Brokers, throttle.Topics); err != nil {
		e.CleanupErr, e.Left, e.Aborted = err, throttleLeft(throttle), aborted()
	}
	return e
}

// toElect counts the plan partitions whose leader, once the plan is
// complete, will not be the target's first replica: Kafka's controller
// keeps a leader that stays among the replicas (a partition led by a
// broker that leaves gets the target's first replica already).
func toElect(plan []topology.Partition, current map[topology.Key]topology.Partition) int {
	n := 0
	for _, m := range plan {
		p, ok := current[m.Key()]
		if ok && len(m.Replicas) > 0 && p.Leader != topology.NoLeader && p.Leader != m.Replicas[0] && slices.Contains(m.Replicas, p.Leader) {
			n++
		}
	}
	return n
}

// misled returns the plan partitions of c whose leader is not their first
// replica, in plan order.
func misled(plan []topology.Partition, c *topology.Cluster) []LeaderStatus {
	byKey := map[topology.Key]topology.Partition{}
	for _, p := range c.Partitions {
		byKey[p.Key()] = p
	}
	var out []LeaderStatus
	for _, m := range plan {
		p, ok := byKey[m.Key()]
		if !ok || len(p.Replicas) == 0 || p.Leader == p.Replicas[0] {
			continue
		}
		out = append(out, LeaderStatus{Topic: m.Topic, Partition: m.Partition, Leader: p.Leader, Preferred: p.Replicas[0]})
	}
	return out
}

func planFilter(plan []topology.Partition) func(string) bool {
	topics := map[string]bool{}
	for _, m := range plan {
		topics[m.Topic] = true
	}
	return func(t string) bool { return topics[t] }
}

// elect runs, after the plan is complete, a preferred leader election for
// the plan partitions led by another broker than their first replica, then
// waits (bounded by o.ElectWait, on o.Clock) until metadata shows the
// preferred leaders. With o.NoElect it only counts them. The partitions
// the controller refused and those that did not move are recorded in
// res.Election, not returned as an error; a request that failed as a
// whole is.
func elect(ctx context.Context, adm Admin, plan []topology.Partition, res *Result, o Options) error {
	e := &Election{}
	res.Election = e
	c, err := adm.Snapshot(ctx, planFilter(plan))
	if err != nil {
		return fmt.Errorf("the plan is complete, but reading the leaders failed: %w", err)
	}
	need := misled(plan, c)
	e.Needed = len(need)
	if o.NoElect {
		e.Skipped = SkipNoElect
		return nil
	}
	if len(need) == 0 {
		return nil
	}
	keys := make([]topology.Key, len(need))
	for i, l := range need {
		keys[i] = topology.Key{Topic: l.Topic, Partition: l.Partition}
	}
	refused, err := adm.ElectPreferred(ctx, keys)
	if err != nil {
		return fmt.Errorf("the plan is complete, but the preferred leader election failed (run kafka-leader-election --election-type PREFERRED): %w", err)
	}
	failed := map[topology.Key]bool{}
	for _, k := range keys {
		if err := refused[k]; err != nil {
			failed[k] = true
			e.Failed = append(e.Failed, ElectionFailure{Topic: k.Topic, Partition: k.Partition, Error: err.Error(), err: err})
		}
	}
	e.Elected = len(keys) - len(e.Failed)
	o.emit(Event{Kind: EventElected, Result: res})
	if e.Elected == 0 {
		return nil
	}
	if o.Clock == nil {
		return errors.New("apply: Options.Clock is nil")
	}
	bound := o.ElectWait
	if bound <= 0 {
		bound = 30 * time.Second
	}
	poll := o.Poll
	if poll <= 0 {
		poll = time.Second
	}
	start := o.Clock.Now()
	for {
		c, err := adm.Snapshot(ctx, planFilter(plan))
		if err != nil {
			return fmt.Errorf("the preferred leaders were elected, but reading the leaders failed: %w", err)
		}
		e.NotMoved = e.NotMoved[:0]
		for _, l := range misled(plan, c) {
			k := topology.Key{Topic: l.Topic, Partition: l.Partition}
			if slices.Contains(keys, k) && !failed[k] {
				e.NotMoved = append(e.NotMoved, l)
			}
		}
		e.Waited = o.Clock.Now().Sub(start)
		left := bound - e.Waited
		if len(e.NotMoved) == 0 || left <= 0 {
			if len(e.NotMoved) == 0 {
				e.NotMoved = nil
			}
			return nil
		}
		if err := o.Clock.Sleep(ctx, min(poll, left)); err != nil {
			// Interrupted: report what had not moved yet.
			return nil
		}
	}
}

// Verify reports the plan's progress, like kafka-reassign-partitions
// --verify: StillInProgress while a reassignment runs, Diverged when a
// partition differs from the plan with nothing moving it, and Done when
// every partition is complete, after removing the throttle from every
// running broker and the plan's topics and, unless o.NoElect, electing the
// preferred leaders of the plan partitions led by another replica (as
// Execute does once it waited). Only o.NoElect, ElectWait, Poll, Clock and
// Progress apply.
func Verify(ctx context.Context, adm Admin, plan []topology.Partition, o Options) (*Result, error) {
	st, err := read(ctx, adm, ModeVerify, plan)
	if err != nil {
		return nil, err
	}
	res := st.res
	if _, _, err := readDirs(ctx, adm, plan, res); err != nil {
		return nil, err
	}
	switch {
	case res.InProgress > 0:
		res.Outcome = StillInProgress
		return res, nil
	case res.Complete < len(plan):
		res.Outcome = Diverged
		return res, nil
	case res.Dirs != nil && res.Dirs.Moving > 0:
		res.Outcome = StillInProgress
		return res, nil
	case !res.Dirs.Done():
		res.Outcome = Diverged
		return res, nil
	}
	// Like Kafka's --verify: every broker, since the plan's sources may
	// have left the replica lists.
	if err := adm.ClearThrottle(ctx, st.runningBrokers(), planTopics(plan)); err != nil {
		return nil, fmt.Errorf("the plan is complete, but removing the throttle failed: %w", err)
	}
	res.Outcome = Done
	if err := elect(ctx, adm, plan, res, o); err != nil {
		return nil, err
	}
	return res, nil
}

// Cancel cancels the plan's reassignments in progress (those partitions go
// back to their previous replicas) and removes the throttle from every
// running broker and the plan's topics. Outside the lab, cancelling needs
// o.Yes (a refusal about the field "yes"); o.Throttle, NoWait, WaitTimeout
// and Poll do not apply.
func Cancel(ctx context.Context, adm Admin, plan []topology.Partition, o Options) (*Result, error) {
	st, err := read(ctx, adm, ModeCancel, plan)
	if err != nil {
		return nil, err
	}
	var keys []topology.Key
	for _, s := range st.res.Partitions {
		if s.Status == InProgress {
			keys = append(keys, s.Key())
		}
	}
	if len(keys) > 0 && !o.Yes && !o.Lab {
		o.emit(Event{Kind: EventPlan, Result: st.res})
		return nil, errkind.Refusedf("yes", "needed to cancel %d reassignments on a cluster that is not the local kplan lab; nothing was changed", len(keys))
	}
	if len(keys) > 0 {
		if err := adm.CancelReassign(ctx, keys); err != nil {
			return nil, fmt.Errorf("cancelling the reassignments: %w", err)
		}
	}
	if err := adm.ClearThrottle(ctx, st.runningBrokers(), planTopics(plan)); err != nil {
		return nil, fmt.Errorf("removing the throttle: %w", err)
	}
	after, err := read(ctx, adm, ModeCancel, plan)
	if err != nil {
		return nil, err
	}
	res := after.res
	res.Moves = len(keys)
	res.Outcome = Cancelled
	return res, nil
}

// planTopics returns the plan's topics, sorted.
func planTopics(plan []topology.Partition) []string {
	out := make([]string, 0, len(plan))
	for _, m := range plan {
		out = append(out, m.Topic)
	}
	slices.Sort(out)
	return slices.Compact(out)
}
