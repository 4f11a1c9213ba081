package reassign

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	chaoslab "github.com/kplan-dev/kplan/internal/chaos/lab"
	"github.com/kplan-dev/kplan/internal/cli/target"
	sysclock "github.com/kplan-dev/kplan/internal/clock"
	"github.com/kplan-dev/kplan/internal/cmdutil"
	"github.com/kplan-dev/kplan/internal/errkind"
	"github.com/kplan-dev/kplan/internal/iostreams"
	"github.com/kplan-dev/kplan/internal/kafka"
	"github.com/kplan-dev/kplan/internal/loadgen"
	"github.com/kplan-dev/kplan/internal/reassign/apply"
	"github.com/kplan-dev/kplan/internal/report"
	"github.com/kplan-dev/kplan/internal/report/observereport"
	"github.com/kplan-dev/kplan/internal/topology"
	"github.com/kplan-dev/kplan/internal/units"
)

// ApplyOptions are the parsed flags of `kplan reassign apply`.
type ApplyOptions struct {
	IO     *iostreams.IOStreams
	Format report.Format

	Plan string
	// Options are the cluster's flags (--bootstrap-server,
	// --command-config, --timeout, --lab-dir: the kplan lab whose brokers
	// need no --yes).
	target.Options
	// Throttle is the replication throttle in bytes/s (0: none).
	Throttle int64
	// Mode is execute, verify or cancel.
	Mode   apply.Mode
	Yes    bool
	NoWait bool
	// NoElect skips the preferred leader election after a complete plan.
	NoElect bool
	// WaitTimeout bounds the wait for completion (0: no bound).
	WaitTimeout time.Duration
	// Poll is the progress interval.
	Poll time.Duration
	// MaxInflightPerBroker and MaxInflight cap the moves in flight into or
	// out of each broker and in all (0: no cap).
	MaxInflightPerBroker, MaxInflight int
	// Source is what the plan was computed from: its sidecar or a layout
	// file ("": the sidecar beside the plan, when there is one).
	Source string
	// IgnoreDrift applies the plan even when the cluster drifted from its
	// source.
	IgnoreDrift bool
	// Resume goes on from the state file of an apply cut short.
	Resume bool
	// State is the state file ("": beside the plan).
	State string
	// Rule, when set (--latency-objective), guards the apply: a canary
	// measures each touched broker's produce p99 and the throttle adapts
	// to it; CanaryRate is the canary's rate in bytes/s.
	Rule       *apply.ThrottleRule
	CanaryRate int64
	// Progress is text or json: how progress goes to stderr.
	Progress string

	f *cmdutil.Factory
	// admin and clock replace the cluster and the wall clock in tests.
	admin apply.Admin
	clock apply.Clock
	// signals replaces SIGINT and SIGTERM in tests.
	signals <-chan os.Signal
	// latency replaces the canary in tests.
	latency apply.LatencySource

	// canary and adaptive are the guarded apply's, canaryResult what the
	// canary measured once stopped.
	canary       *canarySource
	adaptive     *apply.Guard
	canaryResult *loadgen.CanaryResult
}

// NewCmdApply returns `kplan reassign apply`. runF replaces the run function
// in tests.
func NewCmdApply(f *cmdutil.Factory, runF func(context.Context, *ApplyOptions) error) *cobra.Command {
	opts := &ApplyOptions{IO: f.IOStreams, f: f, Poll: time.Second}
	var raw applyFlags
	cmd := &cobra.Command{
		Use:   "apply PLAN.json --bootstrap-server HOST:PORT [--throttle RATE] [--max-inflight-per-broker N] [--resume] [--verify | --cancel] [--no-elect] [--yes]",
		Short: "Execute, verify or cancel a reassignment plan through the Admin API",
		Long: `Execute a reassignment plan (Kafka's reassignment JSON, as kplan reassign --out
or kafka-reassign-partitions write it) through the Admin API, like
kafka-reassign-partitions --execute, and wait until the controller has
finished it, showing progress.

Before anything changes, apply prints the plan (current and target replicas
of every partition) and refuses (exit 4) when a target broker is unknown or
not running, when a partition has no leader, or when a reassignment of a
plan partition is already in progress. Outside the local kplan lab it also
needs --yes.

--throttle caps replication traffic during the move (Kafka's
leader/follower.replication.throttled.rate on the brokers involved and
*.replication.throttled.replicas on the topics, computed as Kafka's own tool
does); the throttle is removed once the plan is complete. A plan that adds
no replica anywhere (kplan reassign --reorder-only: only orders change, which
Kafka applies as metadata) copies nothing, so apply sets no throttle for it.
--no-wait returns once the controller accepted the plan; run --verify later.

Staged waves. apply never submits the whole plan at once: a move that adds
several replicas to a partition is split into steps that add one each (and
drop one, the leader last), so a partition never holds more than one
replica beyond its replication factor; at most --max-inflight-per-broker
moves run into or out of each broker (default 5) and --max-inflight in all
(default 50); the next moves are taken round robin over the destination
brokers, alternately the largest and the smallest partition (by size on
disk), so no broker is filled first and the largest partitions do not all
start together. Each poll submits what finished moves make room for. A
plan within the caps starts at once, as a single request. 0 lifts a cap.

Drift guard. When the plan has a sidecar PLAN.kplan.json beside it (what of
the cluster the plan was computed from: the replicas of every partition it
moves, the id and rack of every broker those name, and their SHA-256
digest), or --source names it or the layout file the plan was computed
from, apply refuses (exit 4) when that part of the cluster changed since,
naming the first partition (or broker) that differs; --ignore-drift
applies the plan anyway. A partition already at its target is no drift.
Without a sidecar or --source there is no drift guard.

Resume. apply saves its state (every step, submitted or done, and where it
set the throttle) atomically after each change in PLAN.kplan-state.json
beside the plan (--state FILE elsewhere). An apply cut short (Ctrl-C,
SIGKILL, a lost connection) goes on with --resume: it reads which steps the
cluster shows done or running, submits none of them again, finishes the
others and removes the throttle, the one the first run set included.
Without --resume, apply refuses (exit 4) to start over while that file holds
an unfinished apply of the same plan.

Once the plan is complete, apply runs a preferred leader election for the
plan's partitions whose leader is not their first replica (Kafka's
controller keeps a leader that stays in the ISR, so moving replicas alone
does not give a partition the leader the plan puts first), and waits until
metadata shows the new leaders. --no-elect skips it and says how many
partitions are left to elect with kafka-leader-election; --no-wait elects
nothing. Exit 1 when the controller refused a partition's election or its
leader did not move.

Log dirs (JBOD). A plan's log_dirs (one per replica, "any" for no
preference) are honoured as kafka-reassign-partitions does: each broker is
asked to hold its replica in the dir (AlterReplicaLogDirs) before the moves,
and again, until it accepts, for a replica it did not hold yet; apply then
waits until no intra-broker copy (future replica) is left. A dir the broker
does not have, or log_dirs of another length than the replicas, is refused
before anything changes (exit 2, naming the partition and log_dirs).

--verify reports each partition as complete, in progress or different from
the plan (and each replica with a planned dir as in it, being copied there,
or elsewhere); when every partition is complete it removes the throttle and
elects the preferred leaders as above. Exit 0: complete; exit 3: still in
progress; exit 1: a partition is neither.
--cancel cancels the plan's reassignments still in progress (the partitions
return to their previous replicas) and removes the throttle.

Interrupted (Ctrl-C, SIGTERM) while it waits, apply removes the throttle,
prints the state reached and says what goes on in the cluster (exit 1). A
second signal cuts the removal short: the line then names the throttle
configs left on each broker and topic and the kafka-configs commands that
delete them (exit 1).`,
		Example: `  $ kplan reassign --bootstrap-server k1:9092 --out plan.json --rollback rollback.json
  $ kplan reassign apply plan.json --bootstrap-server k1:9092 --throttle 50MB/s --yes
  $ kplan reassign apply plan.json --bootstrap-server k1:9092 --verify
  $ kplan reassign apply plan.json --bootstrap-server k1:9092 --yes --no-elect
  $ kplan reassign apply plan.json --bootstrap-server k1:9092 --cancel --yes
  $ kplan reassign apply plan.json --bootstrap-server k1:9092 --yes --max-inflight-per-broker 2 --max-inflight 10
  $ kplan reassign apply plan.json --bootstrap-server k1:9092 --yes --source layout.json
  $ kplan reassign apply plan.json --bootstrap-server k1:9092 --yes --ignore-drift
  $ kplan reassign apply plan.json --bootstrap-server k1:9092 --yes --resume --throttle 50MB/s`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return errkind.Usagef("", "reassign apply: want one plan file, got %d arguments", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			raw.changed = cmd.Flags().Changed
			if err := opts.complete(args, &raw); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runApply(cmd.Context(), opts)
		},
	}
	addApplyFlags(cmd, opts, &raw)
	return cmd
}

// applyFlags are the flags of `kplan reassign apply` as typed, before
// complete parses them into ApplyOptions.
type applyFlags struct {
	out            cmdutil.OutputFlag
	throttle       string
	verify, cancel bool
	guard          guardFlags
	progress       string
	// changed reports whether a flag was given.
	changed func(string) bool
}

// addApplyFlags declares the flags of `kplan reassign apply` on cmd, into
// opts and raw.
func addApplyFlags(cmd *cobra.Command, opts *ApplyOptions, raw *applyFlags) {
	fs := cmd.Flags()
	opts.AddFlags(fs, target.Conn|target.LabDir, target.Notes{LabDir: "its brokers need no --yes"})
	fs.StringVar(&raw.throttle, "throttle", "none", "replication throttle while replicas move, e.g. 50MB/s (none: no throttle)")
	fs.BoolVar(&raw.verify, "verify", false, "report the plan's progress; remove the throttle once it is complete")
	fs.BoolVar(&raw.cancel, "cancel", false, "cancel the plan's reassignments in progress and remove the throttle")
	fs.BoolVar(&opts.Yes, "yes", false, "execute or cancel on a cluster that is not the local kplan lab")
	fs.BoolVar(&opts.NoWait, "no-wait", false, "return once the controller accepted the plan (then use --verify)")
	fs.BoolVar(&opts.NoElect, "no-elect", false, "move replicas only: no preferred leader election once the plan is complete")
	fs.DurationVar(&opts.WaitTimeout, "wait-timeout", 0, "stop waiting for completion after this long (0: wait until done); the reassignment goes on")
	fs.IntVar(&opts.MaxInflightPerBroker, "max-inflight-per-broker", apply.DefaultMaxInflightPerBroker, "at most this many moves into or out of each broker at once (0: no cap)")
	fs.IntVar(&opts.MaxInflight, "max-inflight", apply.DefaultMaxInflight, "at most this many moves at once in the cluster (0: no cap)")
	fs.StringVar(&opts.Source, "source", "", "what the plan was computed from, for the drift guard: its sidecar or the layout file (default: PLAN.kplan.json beside the plan, if any)")
	fs.BoolVar(&opts.IgnoreDrift, "ignore-drift", false, "apply even when the cluster changed since the plan was made")
	fs.BoolVar(&opts.Resume, "resume", false, "go on with an apply cut short, from its state file")
	fs.StringVar(&opts.State, "state", "", "the apply's state file (default: PLAN.kplan-state.json beside the plan)")
	addGuardFlags(fs, &raw.guard)
	fs.StringVar(&raw.progress, "progress", progressAuto, "progress on stderr: text, json (one event object a line, for automation) or auto (json with -o json)")
	cmdutil.AddOutputFlag(cmd, &raw.out)
}

// complete parses args and raw into o and validates them.
func (o *ApplyOptions) complete(args []string, raw *applyFlags) error {
	var err error
	if o.Format, err = raw.out.Format(); err != nil {
		return err
	}
	o.Plan = args[0]
	if o.Progress, err = parseProgress(raw.progress, o.Format); err != nil {
		return err
	}
	if o.BootstrapServers == "" && o.CommandConfig == "" {
		return errkind.Usagef("", "--bootstrap-server: required (or --command-config with bootstrap.servers)")
	}
	if raw.verify && raw.cancel {
		return errkind.Usagef("", "--verify and --cancel: give one")
	}
	o.Mode = apply.ModeExecute
	switch {
	case raw.verify:
		o.Mode = apply.ModeVerify
	case raw.cancel:
		o.Mode = apply.ModeCancel
	}
	switch strings.ToLower(strings.TrimSpace(raw.throttle)) {
	case "", "none", "0":
		o.Throttle = 0
	default:
		if o.Throttle, err = units.ParseRate(raw.throttle); err != nil {
			return errkind.Usagef("", "--throttle: %w", err)
		}
	}
	if err := o.Validate(); err != nil {
		return err
	}
	if o.WaitTimeout < 0 {
		return errkind.Usagef("", "--wait-timeout: must not be negative, got %v", o.WaitTimeout)
	}
	if o.MaxInflightPerBroker < 0 {
		return errkind.Usagef("", "--max-inflight-per-broker: must not be negative, got %d", o.MaxInflightPerBroker)
	}
	if o.MaxInflight < 0 {
		return errkind.Usagef("", "--max-inflight: must not be negative, got %d", o.MaxInflight)
	}
	if o.Resume && o.Mode != apply.ModeExecute {
		return errkind.Usagef("", "--resume: only when executing, not with --verify or --cancel")
	}
	if o.Source != "" && o.IgnoreDrift {
		return errkind.Usagef("", "--source and --ignore-drift: give one")
	}
	changed := raw.changed
	if changed == nil {
		changed = func(string) bool { return false }
	}
	return o.completeGuard(&raw.guard, changed)
}

// output is the JSON of `kplan reassign apply -o json`.
type output struct {
	Schema     string                  `json:"schema"`
	Mode       apply.Mode              `json:"mode"`
	Bootstrap  string                  `json:"bootstrap"`
	Throttle   int64                   `json:"throttle_bytes_per_s"`
	Outcome    apply.Outcome           `json:"outcome"`
	Partitions []apply.PartitionStatus `json:"partitions"`
	Complete   int                     `json:"complete"`
	InProgress int                     `json:"in_progress"`
	Differs    int                     `json:"differs"`
	Message    string                  `json:"message"`
	// Steps, Submitted and Waves are the reassignments the plan's moves
	// take, those submitted, and the requests that submitted them
	// (execute).
	Steps     int `json:"steps,omitempty"`
	Submitted int `json:"submitted,omitempty"`
	Waves     int `json:"waves,omitempty"`
	// Election is the preferred leader election after a complete plan
	// (null for cancel and an incomplete plan).
	Election *apply.Election `json:"election"`
	// LogDirs is where the replicas the plan's log_dirs place stand
	// (absent when the plan names no dir).
	LogDirs *apply.DirProgress `json:"log_dirs,omitempty"`
	// Canary is what the canary of a guarded apply measured, and
	// AdaptiveThrottle what the adaptive throttle saw and did
	// (--latency-objective only).
	Canary           *loadgen.CanaryResult `json:"canary,omitempty"`
	AdaptiveThrottle *apply.GuardReport    `json:"adaptive_throttle,omitempty"`
	// ThrottleLeft is the replication throttle an interrupted run left
	// set (its removal failed or a second signal cut it short); absent
	// otherwise.
	ThrottleLeft *apply.ThrottleLeft `json:"throttle_left,omitempty"`
}

// The Admin of internal/kafka is what the workflow talks to.
var (
	_ apply.Admin        = (*kafka.Admin)(nil)
	_ apply.ReplicaSizer = (*kafka.Admin)(nil) // progress in bytes
)

// runApply loads the plan, connects, executes, verifies or cancels it, and
// renders the result.
func runApply(ctx context.Context, o *ApplyOptions) error {
	plan, err := o.loadPlan()
	if err != nil {
		return err
	}
	var g apply.Options
	if o.Mode == apply.ModeExecute {
		if g, err = o.guard(plan); err != nil {
			return o.spell(err)
		}
	}
	adm, closeAdmin, err := o.connect()
	if err != nil {
		return err
	}
	defer closeAdmin()
	ao := o.applyOptions(ctx, adm)
	sigs, stopSignals := o.interrupts()
	defer stopSignals()
	done := make(chan struct{})
	defer close(done)
	ao.Abort = cmdutil.SecondInterrupt(sigs, done, func() {
		if o.Mode == apply.ModeExecute && o.Throttle > 0 {
			fmt.Fprintln(o.IO.ErrOut, "kplan reassign apply: interrupted; removing the replication throttle (interrupt again to leave it in place)")
		}
	})
	var res *apply.Result
	switch o.Mode {
	case apply.ModeVerify:
		res, err = apply.Verify(ctx, adm, plan, ao)
	case apply.ModeCancel:
		res, err = apply.Cancel(ctx, adm, plan, ao)
	default:
		ao.Limits, ao.Source, ao.Resume, ao.SaveState = g.Limits, g.Source, g.Resume, g.SaveState
		ao.Sizes = sizes(ctx, adm, plan)
		res, err = o.execute(ctx, adm, plan, ao)
	}
	var ie *apply.Interrupted
	if errors.As(err, &ie) {
		return o.interrupted(ie)
	}
	if err != nil {
		return o.spell(err)
	}
	return o.finish(res)
}

// execute runs the plan, guarded by a canary and the adaptive throttle
// with --latency-objective: the canary starts once the plan passed its
// checks and is stopped (its topic deleted) whatever the outcome.
func (o *ApplyOptions) execute(ctx context.Context, adm apply.Admin, plan []topology.Partition, ao apply.Options) (*apply.Result, error) {
	if o.Rule == nil {
		return apply.Execute(ctx, adm, plan, ao)
	}
	src := o.latency
	if src == nil {
		conn, err := o.ConnOptions()
		if err != nil {
			return nil, err
		}
		o.canary = &canarySource{conn: conn, version: o.f.Version, rate: o.CanaryRate, say: o.sayCanary}
		src = o.canary
	}
	o.adaptive = apply.NewGuard(*o.Rule, src)
	ao.Guard = o.adaptive
	res, err := apply.Execute(ctx, adm, plan, ao)
	cres, cerr := o.canary.stop(ctx, o.Timeout)
	o.canaryResult = cres
	if cres != nil {
		o.canaryStopped(cres)
	}
	if err == nil && cerr != nil {
		err = fmt.Errorf("the plan went through, but the canary failed: %w", cerr)
	}
	return res, err
}

// connect returns the cluster's Admin (o.admin in tests) and the function
// that closes it.
func (o *ApplyOptions) connect() (apply.Admin, func(), error) {
	if o.admin != nil {
		return o.admin, func() {}, nil
	}
	conn, err := o.ConnOptions()
	if err != nil {
		return nil, nil, err
	}
	ka := kafka.NewAdmin(conn, o.f.Version)
	if _, err := ka.Client(); err != nil {
		ka.Close()
		return nil, nil, errkind.Wrap(errkind.Usage, "", err)
	}
	return jbodAdmin{ka}, ka.Close, nil
}

// applyOptions are the options of the apply workflow, without Abort.
func (o *ApplyOptions) applyOptions(ctx context.Context, adm apply.Admin) apply.Options {
	clock := o.clock
	if clock == nil {
		clock = sysclock.System{}
	}
	ao := apply.Options{
		Throttle:    o.Throttle,
		Yes:         o.Yes,
		Lab:         o.isLab(ctx, adm),
		NoWait:      o.NoWait,
		WaitTimeout: o.WaitTimeout,
		Poll:        o.Poll,
		Clock:       clock,
		NoElect:     o.NoElect,
	}
	ao.Progress = o.progress()
	ao.CleanupTimeout = o.Timeout
	return ao
}

// interrupts returns SIGINT and SIGTERM (o.signals in tests) and the
// function that stops relaying them.
func (o *ApplyOptions) interrupts() (<-chan os.Signal, func()) {
	if o.signals != nil {
		return o.signals, func() {}
	}
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	return ch, func() { signal.Stop(ch) }
}

// finish renders res, says how to elect the leaders --no-elect left, and
// returns the exit status of the outcome.
func (o *ApplyOptions) finish(res *apply.Result) error {
	if err := o.render(res, nil); err != nil {
		return err
	}
	if e := res.Election; e != nil && e.Skipped == apply.SkipNoElect && e.Needed > 0 {
		fmt.Fprintf(o.IO.ErrOut, "kplan reassign apply: %d partitions are not led by their first replica; elect them with kafka-leader-election --bootstrap-server %s --election-type PREFERRED --path-to-json-file ELECTION.json (kplan reassign --election-out writes it), or run this again with --verify\n",
			e.Needed, o.BootstrapServers)
	}
	if c := o.canaryResult; c != nil && c.Lost > 0 {
		return errkind.New(errkind.Runtime, "", "the canary lost %d of %d records acknowledged with acks=all while replicas moved", c.Lost, c.Acked)
	}
	if !res.Election.OK() {
		return errkind.Silent(errkind.Runtime)
	}
	switch res.Outcome {
	case apply.StillInProgress:
		return errkind.Silent(errkind.Negative)
	case apply.Diverged:
		return errkind.Silent(errkind.Runtime)
	}
	return nil
}

// interrupted ends a wait that SIGINT or SIGTERM cut short once the
// controller accepted the moves: apply.Execute removed the throttle (or a
// second signal cut that short); this prints the last state seen and says
// in one line what goes on, what is left and how to remove it.
func (o *ApplyOptions) interrupted(ie *apply.Interrupted) error {
	if err := o.render(ie.Result, ie.Left); err != nil {
		return err
	}
	res := ie.Result
	throttle := ""
	switch {
	case ie.Left != nil:
		why := fmt.Sprintf("removing the throttle failed (%v)", ie.CleanupErr)
		if ie.Aborted {
			why = "removing the throttle was cut short by a second signal"
		}
		throttle = fmt.Sprintf("; %s, so it may still be set: %s on %s %s and %s on %s %s; remove it with: %s",
			why, strings.Join(ie.Left.BrokerConfigs, " and "), plural(len(ie.Left.Brokers), "broker"), joinIDs(ie.Left.Brokers),
			strings.Join(ie.Left.TopicConfigs, " and "), plural(len(ie.Left.Topics), "topic"), strings.Join(ie.Left.Topics, ","),
			strings.Join(o.removeThrottleCommands(ie.Left), " && "))
	case ie.Throttled:
		throttle = "; the throttle was removed, so it runs unthrottled"
	}
	resume := ""
	if res.Submitted < res.Steps {
		resume = fmt.Sprintf("; %d of %d moves were not submitted yet: kplan reassign apply %s --resume submits them", res.Steps-res.Submitted, res.Steps, o.Plan)
	}
	return errkind.New(errkind.Runtime, "", "interrupted (%w) with %d of %d partitions complete: the reassignment of the other %d goes on in the cluster%s%s; follow it with kplan reassign apply %s --verify or stop it with --cancel",
		ie.Cause, res.Complete, len(res.Partitions), len(res.Partitions)-res.Complete, throttle, resume, o.Plan)
}

// removeThrottleCommands are the kafka-configs commands that delete the
// throttle left: one per broker and one per topic.
func (o *ApplyOptions) removeThrottleCommands(left *apply.ThrottleLeft) []string {
	conn := "kafka-configs --bootstrap-server " + o.BootstrapServers
	if o.BootstrapServers == "" {
		conn = "kafka-configs --bootstrap-server HOST:PORT"
	}
	if o.CommandConfig != "" {
		conn += " --command-config " + o.CommandConfig
	}
	var out []string
	for _, b := range left.Brokers {
		out = append(out, fmt.Sprintf("%s --alter --entity-type brokers --entity-name %d --delete-config %s", conn, b, strings.Join(left.BrokerConfigs, ",")))
	}
	for _, t := range left.Topics {
		out = append(out, fmt.Sprintf("%s --alter --entity-type topics --entity-name %s --delete-config %s", conn, t, strings.Join(left.TopicConfigs, ",")))
	}
	return out
}

// plural is what, with an s unless n is 1.
func plural(n int, what string) string {
	if n == 1 {
		return what
	}
	return what + "s"
}

func joinIDs(xs []int32) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = strconv.Itoa(int(x))
	}
	return strings.Join(parts, ",")
}

// loadPlan reads the plan file.
func (o *ApplyOptions) loadPlan() ([]topology.Partition, error) {
	f, err := os.Open(o.Plan)
	if err != nil {
		return nil, errkind.Usagef("", "plan: %w", err)
	}
	defer f.Close() //nolint:errcheck // read-only
	plan, err := apply.ParsePlan(f, o.Plan)
	return plan, o.spell(err)
}

// spell names a domain error's field as the command line does (where),
// and says how to follow a plan still in progress.
func (o *ApplyOptions) spell(err error) error {
	err = cmdutil.Spell(err, o.where)
	if errors.Is(err, apply.ErrNotDone) {
		err = fmt.Errorf("%w; follow it with --verify or stop it with --cancel", err)
	}
	return err
}

// where spells a field of the workflow's errors: "plan" is the plan file,
// any other field its flag.
func (o *ApplyOptions) where(field string) string {
	switch field {
	case "plan":
		return "plan " + o.Plan
	case "log_dirs":
		return "plan " + o.Plan + ": log_dirs"
	}
	return "--" + field
}

// progress prints the workflow's steps on stderr, so stdout stays the
// result: the plan, the controller's acceptance, and while waiting a line
// when a partition finished and every 10 s otherwise.
func (o *ApplyOptions) progress() func(apply.Event) {
	lastDone, said := -1, time.Duration(0)
	lastDirs, saidDirs := -1, time.Duration(0)
	return func(e apply.Event) {
		if o.Progress == progressJSON {
			ev := jsonEvent(e)
			if e.Kind == apply.EventPlan {
				ev.Throttle = o.Throttle
			}
			o.writeEvent(ev)
			return
		}
		w := o.IO.ErrOut
		switch e.Kind {
		case apply.EventPlan:
			o.showPlan(e.Result)
		case apply.EventAccepted:
			switch {
			case e.Wave > 1:
				fmt.Fprintf(w, "kplan reassign apply: wave %d: the controller accepted %d more moves (%d of %d submitted)\n", e.Wave, e.Moves, e.Result.Submitted, e.Result.Steps)
			case e.Result.Submitted < e.Result.Steps:
				fmt.Fprintf(w, "kplan reassign apply: the controller accepted %d partition moves (%d of %d steps; the others follow as these finish)\n", e.Moves, e.Result.Submitted, e.Result.Steps)
			default:
				fmt.Fprintf(w, "kplan reassign apply: the controller accepted %d partition moves\n", e.Moves)
			}
		case apply.EventProgress:
			if e.Result.Complete == lastDone && e.Elapsed-said < 10*time.Second {
				return
			}
			lastDone, said = e.Result.Complete, e.Elapsed
			fmt.Fprintf(w, "kplan reassign apply: %d of %d partitions complete, %d in progress (%s)%s\n",
				e.Result.Complete, len(e.Result.Partitions), e.Result.InProgress, e.Elapsed.Round(time.Second), bytesNote(e.Bytes))
		case apply.EventDirs:
			d := e.Result.Dirs
			if d.InPlace == lastDirs && e.Elapsed-saidDirs < 10*time.Second {
				return
			}
			lastDirs, saidDirs = d.InPlace, e.Elapsed
			fmt.Fprintf(w, "kplan reassign apply: log dirs: %d of %d replicas in their planned dir, %d intra-broker copies in progress (%s)\n",
				d.InPlace, d.Planned, d.Moving, e.Elapsed.Round(time.Second))
		case apply.EventThrottle:
			for _, c := range e.Changes {
				fmt.Fprintln(w, throttleChange(c))
			}
		case apply.EventElected:
			el := e.Result.Election
			refused := ""
			if len(el.Failed) > 0 {
				refused = fmt.Sprintf(", %d refused", len(el.Failed))
			}
			fmt.Fprintf(w, "kplan reassign apply: preferred leader election: %d of %d partitions elected%s\n", el.Elected, el.Needed, refused)
		}
	}
}

// clusterIDer is an admin that reads the cluster id from metadata
// (kafka.Admin does).
type clusterIDer interface {
	ClusterID(ctx context.Context) (string, error)
}

// isLab reports whether the cluster is the local kplan lab in LabDir: every
// bootstrap address is one of the lab's brokers, and the cluster answering
// there has the lab's cluster id (lab.json). The address alone let any
// cluster that took over a stale lab's ports skip --yes.
func (o *ApplyOptions) isLab(ctx context.Context, adm apply.Admin) bool {
	if o.BootstrapServers == "" {
		return false
	}
	ider, ok := adm.(clusterIDer)
	if !ok {
		return false
	}
	s, err := chaoslab.Load(o.LabDir)
	if err != nil {
		return false
	}
	lab := s.Bootstrap()
	for _, a := range strings.Split(o.BootstrapServers, ",") {
		if !slices.Contains(lab, strings.TrimSpace(a)) {
			return false
		}
	}
	id, err := ider.ClusterID(ctx)
	return err == nil && s.ClusterID != "" && id == s.ClusterID
}

// showPlan prints the partitions to change.
func (o *ApplyOptions) showPlan(res *apply.Result) {
	w := o.IO.ErrOut
	n := 0
	for _, s := range res.Partitions {
		if s.Status != apply.Complete {
			n++
		}
	}
	throttled := ""
	if o.Throttle > 0 {
		throttled = ", replication throttled to " + units.FormatRate(o.Throttle)
		if o.Rule != nil {
			r := o.Rule.WithDefaults()
			ramp := ""
			if r.Ramp > 0 {
				ramp = fmt.Sprintf(", reached from %s and raised in steps over %v", units.FormatRate(r.Min), r.Ramp)
			}
			throttled += fmt.Sprintf(" (adaptive between %s and %s%s, to keep the canary's produce p99 within %v)", units.FormatRate(r.Min), units.FormatRate(r.Max), ramp, r.Objective)
		}
	}
	fmt.Fprintf(w, "Plan for %s: %d of %d partitions to change%s\n", o.BootstrapServers, n, len(res.Partitions), throttled)
	shown := 0
	for _, s := range res.Partitions {
		if s.Status == apply.Complete {
			continue
		}
		if shown == 20 {
			fmt.Fprintf(w, "  ... and %d more\n", n-shown)
			break
		}
		fmt.Fprintf(w, "  %s/%d: %s -> %s (%s)\n", s.Topic, s.Partition, ids(s.Current), ids(s.Target), s.Status)
		shown++
	}
	if res.ToElect > 0 {
		fmt.Fprintf(w, "  then elect preferred leaders of %d partitions\n", res.ToElect)
	}
}

func ids(xs []int32) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = strconv.Itoa(int(x))
	}
	return "[" + strings.Join(parts, ",") + "]"
}

// message says in one line how the run ended.
func (o *ApplyOptions) message(res *apply.Result) string {
	switch res.Outcome {
	case apply.NothingToDo:
		return "nothing to do: every partition already has its target replicas"
	case apply.Started:
		note := ""
		if o.Throttle > 0 {
			note = "; the throttle stays until --verify or --cancel removes it"
		}
		if res.Submitted < res.Steps {
			return fmt.Sprintf("%d of %d steps of %d partition moves started (the others wait for room within the caps); run again with --resume to submit them%s", res.Submitted, res.Steps, res.Moves, note)
		}
		return fmt.Sprintf("%d partition moves started; run with --verify to follow them%s; no preferred leader election without waiting (--verify elects once the plan is complete)", res.Moves, note)
	case apply.StillInProgress:
		return fmt.Sprintf("in progress: %d of %d partitions complete", res.Complete, len(res.Partitions)) + dirsMessage(res.Dirs)
	case apply.Diverged:
		if res.Differs == 0 && res.Dirs != nil {
			return fmt.Sprintf("%d replicas are not in their planned log dir and are not moving there", len(res.Dirs.Wrong))
		}
		return fmt.Sprintf("%d partitions differ from the plan and are not being reassigned", res.Differs)
	case apply.Cancelled:
		return fmt.Sprintf("cancelled %d reassignments in progress; throttle removed", res.Moves)
	}
	msg := fmt.Sprintf("complete: %d partitions have their target replicas", res.Complete) + dirsMessage(res.Dirs)
	if res.Mode == apply.ModeVerify {
		msg += "; throttle removed"
	}
	return msg + electionMessage(res.Election)
}

// dirsMessage says where the plan's log_dirs stand, as a part of the
// message ("" when the plan names no dir).
func dirsMessage(d *apply.DirProgress) string {
	if d == nil {
		return ""
	}
	msg := fmt.Sprintf(", %d of %d replicas in their planned log dir", d.InPlace, d.Planned)
	if d.Moving > 0 {
		msg += fmt.Sprintf(" (%d being copied there)", d.Moving)
	}
	return msg
}

// electionMessage says how the preferred election after a complete plan
// went, as the end of the message.
func electionMessage(e *apply.Election) string {
	switch {
	case e == nil:
		return ""
	case e.Skipped == apply.SkipNoElect:
		return fmt.Sprintf("; %d partitions left led by another replica than their first (--no-elect)", e.Needed)
	case e.Needed == 0:
		return "; every partition is led by its first replica"
	case e.OK():
		return fmt.Sprintf("; preferred leaders elected on %d partitions", e.Elected)
	}
	return fmt.Sprintf("; preferred leader election: %d of %d partitions elected, %d refused, %d elected but not moved after %s",
		e.Elected, e.Needed, len(e.Failed), len(e.NotMoved), e.Waited.Round(time.Second))
}

// render prints the result; left is the throttle an interrupted run left
// in place (nil: none).
func (o *ApplyOptions) render(res *apply.Result, left *apply.ThrottleLeft) error {
	out := output{
		Schema: apply.Schema, Mode: res.Mode, Bootstrap: o.BootstrapServers, Throttle: o.Throttle, Outcome: res.Outcome,
		Partitions: res.Partitions, Complete: res.Complete, InProgress: res.InProgress, Differs: res.Differs, Message: o.message(res),
		Steps: res.Steps, Submitted: res.Submitted, Waves: res.Waves, ThrottleLeft: left,
		Canary: o.canaryResult, AdaptiveThrottle: o.adaptive.Report(), LogDirs: res.Dirs,
	}
	if res.Election != nil {
		e := *res.Election
		if e.Failed == nil {
			e.Failed = []apply.ElectionFailure{}
		}
		if e.NotMoved == nil {
			e.NotMoved = []apply.LeaderStatus{}
		}
		out.Election = &e
	}
	return report.Render(o.IO.Out, o.Format, out, func() report.Document {
		rows := make([][]string, 0, len(out.Partitions))
		for _, s := range out.Partitions {
			rows = append(rows, []string{s.Topic, strconv.Itoa(int(s.Partition)), ids(s.Current), ids(s.Target), string(s.Status)})
		}
		doc := report.Document{
			Title: "kplan reassign apply (" + string(out.Mode) + "): " + out.Message,
			Sections: []report.Section{{
				Title:  "Partitions",
				Header: []string{"TOPIC", "PARTITION", "CURRENT", "TARGET", "STATUS"},
				Rows:   rows,
			}},
		}
		if d := out.LogDirs; d != nil {
			sec := report.Section{Title: "Log dirs (the plan's log_dirs)", Header: []string{"PARTITION", "BROKER", "PLANNED DIR", "STATUS"},
				Notes: []string{fmt.Sprintf("%d of %d replicas in their planned dir, %d being copied there (future replicas)", d.InPlace, d.Planned, d.Moving)}}
			for _, m := range d.Wrong {
				sec.Rows = append(sec.Rows, []string{m.Key.String(), strconv.Itoa(int(m.Broker)), m.Dir, "in another dir, not moving"})
			}
			if len(sec.Rows) == 0 {
				sec.Header = nil // every replica in place: the note says it
			}
			doc.Sections = append(doc.Sections, sec)
		}
		doc.Sections = append(doc.Sections, canarySections(out.Canary, out.AdaptiveThrottle)...)
		if e := out.Election; e != nil && !e.OK() {
			var rows [][]string
			for _, f := range e.Failed {
				rows = append(rows, []string{f.Topic, strconv.Itoa(int(f.Partition)), "refused: " + f.Error})
			}
			for _, l := range e.NotMoved {
				rows = append(rows, []string{l.Topic, strconv.Itoa(int(l.Partition)),
					fmt.Sprintf("still led by %d, not %d, after %s", l.Leader, l.Preferred, e.Waited.Round(time.Second))})
			}
			doc.Sections = append(doc.Sections, report.Section{
				Title:  "Preferred leader election",
				Header: []string{"TOPIC", "PARTITION", "PROBLEM"},
				Rows:   rows,
				Notes:  []string{"kafka-leader-election --election-type PREFERRED retries them (a preferred leader is elected only from the ISR)"},
			})
		}
		return doc
	})
}

// guard returns the options of an execute that come from its flags and
// files, read before connecting: the caps, the plan's source (--source, else the sidecar beside the plan;
// none with --ignore-drift), the state to resume (--resume) and where to
// save it. Without --resume it refuses to start over an unfinished apply
// of the same plan.
func (o *ApplyOptions) guard(plan []topology.Partition) (apply.Options, error) {
	ao := apply.Options{Limits: apply.Limits{PerBroker: o.MaxInflightPerBroker, Total: o.MaxInflight}}
	if !o.IgnoreDrift {
		src, err := o.loadSource(plan)
		if err != nil {
			return ao, err
		}
		ao.Source = src
	}
	path := o.State
	if path == "" {
		path = apply.StatePath(o.Plan)
	}
	st, err := apply.LoadState(path, plan)
	switch {
	case o.Resume && err != nil:
		return ao, err
	case o.Resume && st == nil:
		return ao, errkind.Usagef("resume", "no state file %s (the apply to resume saves it there; --state names another)", path)
	case o.Resume:
		ao.Resume = st
	case errors.Is(err, apply.ErrOtherPlan):
		// A state left by another plan of the same name: start over.
	case err != nil:
		return ao, err
	case st != nil && !st.Complete:
		done, _ := st.Counts()
		return ao, errkind.Refusedf("resume", "%s holds an apply of this plan that did not finish (%d of %d steps done): go on with --resume, or delete the file to start over", path, done, len(st.Steps))
	}
	ao.SaveState = apply.SaveStateFile(path)
	return ao, nil
}

// loadSource reads what the plan was computed from: --source (a sidecar,
// or a layout file from which the sidecar's content is computed), else
// the sidecar beside the plan (for a wave file, the whole plan's) when
// there is one (nil when not).
func (o *ApplyOptions) loadSource(plan []topology.Partition) (*apply.Source, error) {
	if o.Source == "" {
		return apply.LoadSource(apply.SourceFor(o.Plan), plan)
	}
	data, err := os.ReadFile(o.Source)
	if err != nil {
		return nil, errkind.Usagef("source", "%w", err)
	}
	var head struct {
		Schema string `json:"schema"`
	}
	if json.Unmarshal(data, &head) == nil && head.Schema == apply.SourceSchema {
		return apply.LoadSource(o.Source, plan)
	}
	c, err := topology.Load(bytes.NewReader(data), o.Source)
	if err != nil {
		return nil, errkind.Wrap(errkind.Usage, "", err)
	}
	return apply.NewSource(c, plan), nil
}

// sizer is an admin that reads partition sizes (kafka.Admin does).
type sizer interface {
	LogDirSizes(ctx context.Context, topicFilter func(string) bool) (map[topology.Key]int64, error)
}

// sizes returns the sizes of the plan's partitions when the admin reads
// them (nil otherwise, or when it fails: the waves then go in plan order).
func sizes(ctx context.Context, adm apply.Admin, plan []topology.Partition) map[topology.Key]int64 {
	s, ok := adm.(sizer)
	if !ok {
		return nil
	}
	topics := map[string]bool{}
	for _, m := range plan {
		topics[m.Topic] = true
	}
	out, err := s.LogDirSizes(ctx, func(t string) bool { return topics[t] })
	if err != nil {
		return nil
	}
	return out
}

// bytesNote is a progress line's bytes: copied of total, the rate and the
// ETA, or "" when the sizes are unknown.
func bytesNote(b *apply.ByteProgress) string {
	if b == nil || b.Total == 0 {
		return ""
	}
	s := fmt.Sprintf("; copied %s of %s (%.0f%%)", observereport.Bytes(b.Copied), observereport.Bytes(b.Total), 100*float64(b.Copied)/float64(b.Total))
	if b.RatePerSecond > 0 {
		s += " at " + observereport.Rate(b.RatePerSecond)
	}
	if b.ETASeconds >= 0 {
		s += ", ETA " + (time.Duration(b.ETASeconds * float64(time.Second))).Round(time.Second).String()
	}
	return s
}

// jbodAdmin is internal/kafka's Admin with the log-dir moves of a plan's
// log_dirs (apply.DirAdmin), in the apply workflow's types.
type jbodAdmin struct{ *kafka.Admin }

var _ apply.DirAdmin = jbodAdmin{}

// ReplicaLogDirs implements apply.DirAdmin.
func (a jbodAdmin) ReplicaLogDirs(ctx context.Context, topicFilter func(string) bool) (map[int32][]string, []apply.DirReplica, error) {
	dirs, reps, err := a.LogDirReplicas(ctx, topicFilter)
	if err != nil {
		return nil, nil, err
	}
	out := make([]apply.DirReplica, len(reps))
	for i, r := range reps {
		out[i] = apply.DirReplica{Key: r.Key, Broker: r.Broker, Dir: r.Dir, Future: r.Future, Bytes: r.Bytes}
	}
	return dirs, out, nil
}

// AlterReplicaDirs implements apply.DirAdmin.
func (a jbodAdmin) AlterReplicaDirs(ctx context.Context, moves []apply.DirMove) ([]error, error) {
	km := make([]kafka.DirMove, len(moves))
	for i, m := range moves {
		km[i] = kafka.DirMove{Key: m.Key, Broker: m.Broker, Dir: m.Dir}
	}
	errs, err := a.Admin.AlterReplicaDirs(ctx, km)
	for i, e := range errs {
		if errors.Is(e, kafka.ErrReplicaNotYet) {
			errs[i] = fmt.Errorf("%w: %w", apply.ErrReplicaNotYet, e)
		}
	}
	return errs, err
}
