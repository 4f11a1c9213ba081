package reassign

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kplan-dev/kplan/internal/cmdutil"
	"github.com/kplan-dev/kplan/internal/iostreams"
	"github.com/kplan-dev/kplan/internal/kafka"
	"github.com/kplan-dev/kplan/internal/localkafka"
	"github.com/kplan-dev/kplan/internal/report"
	"github.com/kplan-dev/kplan/internal/topology"
	"github.com/kplan-dev/kplan/internal/units"
)

// ApplyOptions are the parsed flags of `kplan reassign apply`.
type ApplyOptions struct {
	IO     *iostreams.IOStreams
	Format report.Format

	Plan             string
	BootstrapServers string
	CommandConfig    string
	Timeout          time.Duration
	// Throttle is the replication throttle in bytes/s (0: none).
	Throttle int64
	// Mode is "execute", "verify" or "cancel".
	Mode   string
	Yes    bool
	NoWait bool
	// WaitTimeout bounds the wait for completion (0: no bound).
	WaitTimeout time.Duration
	// LabDir is the kplan lab whose brokers need no --yes.
	LabDir string
	// Poll is the progress interval.
	Poll time.Duration

	f *cmdutil.Factory
}

// NewCmdApply returns `kplan reassign apply`. runF replaces the run function
// in tests.
func NewCmdApply(f *cmdutil.Factory, runF func(context.Context, *ApplyOptions) error) *cobra.Command {
	opts := &ApplyOptions{IO: f.IOStreams, f: f, Poll: time.Second}
	var out cmdutil.OutputFlag
	var throttle string
	var verify, cancel bool
	cmd := &cobra.Command{
		Use:   "apply PLAN.json --bootstrap-server HOST:PORT [--throttle RATE] [--verify | --cancel] [--yes]",
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
does); the throttle is removed once the plan is complete. --no-wait returns
once the controller accepted the plan; run --verify later.

--verify reports each partition as complete, in progress or different from
the plan; when every partition is complete it removes the throttle. Exit 0:
complete; exit 3: still in progress; exit 1: a partition is neither.
--cancel cancels the plan's reassignments still in progress (the partitions
return to their previous replicas) and removes the throttle.`,
		Example: `  $ kplan reassign --bootstrap-server k1:9092 --out plan.json --rollback rollback.json
  $ kplan reassign apply plan.json --bootstrap-server k1:9092 --throttle 50MB/s --yes
  $ kplan reassign apply plan.json --bootstrap-server k1:9092 --verify
  $ kplan reassign apply plan.json --bootstrap-server k1:9092 --cancel --yes`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return cmdutil.UsageErrorf("reassign apply: want one plan file, got %d arguments", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			var err error
			if opts.Format, err = out.Format(); err != nil {
				return err
			}
			opts.Plan = args[0]
			if opts.BootstrapServers == "" && opts.CommandConfig == "" {
				return cmdutil.UsageErrorf("--bootstrap-server: required (or --command-config with bootstrap.servers)")
			}
			if verify && cancel {
				return cmdutil.UsageErrorf("--verify and --cancel: give one")
			}
			opts.Mode = "execute"
			switch {
			case verify:
				opts.Mode = "verify"
			case cancel:
				opts.Mode = "cancel"
			}
			switch strings.ToLower(strings.TrimSpace(throttle)) {
			case "", "none", "0":
				opts.Throttle = 0
			default:
				if opts.Throttle, err = units.ParseRate(throttle); err != nil {
					return cmdutil.UsageErrorf("--throttle: %w", err)
				}
			}
			if opts.Timeout <= 0 {
				return cmdutil.UsageErrorf("--timeout: must be positive, got %v", opts.Timeout)
			}
			if opts.WaitTimeout < 0 {
				return cmdutil.UsageErrorf("--wait-timeout: must not be negative, got %v", opts.WaitTimeout)
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runApply(cmd.Context(), opts)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&opts.BootstrapServers, "bootstrap-server", "", "the cluster: host:port[,host:port...]")
	fs.StringVar(&opts.CommandConfig, "command-config", "", "Kafka client properties file (bootstrap.servers, security.protocol, sasl.*, ssl.* as PEM)")
	fs.DurationVar(&opts.Timeout, "timeout", 15*time.Second, "give up on each request to the cluster after this long")
	fs.StringVar(&throttle, "throttle", "none", "replication throttle while replicas move, e.g. 50MB/s (none: no throttle)")
	fs.BoolVar(&verify, "verify", false, "report the plan's progress; remove the throttle once it is complete")
	fs.BoolVar(&cancel, "cancel", false, "cancel the plan's reassignments in progress and remove the throttle")
	fs.BoolVar(&opts.Yes, "yes", false, "execute or cancel on a cluster that is not the local kplan lab")
	fs.BoolVar(&opts.NoWait, "no-wait", false, "return once the controller accepted the plan (then use --verify)")
	fs.DurationVar(&opts.WaitTimeout, "wait-timeout", 0, "stop waiting for completion after this long (0: wait until done); the reassignment goes on")
	fs.StringVar(&opts.LabDir, "lab-dir", "", "the kplan lab's directory, whose brokers need no --yes (default: kplan lab's)")
	cmdutil.AddOutputFlag(cmd, &out)
	return cmd
}

// partStatus is one plan partition's state on the cluster.
type partStatus struct {
	Topic     string  `json:"topic"`
	Partition int32   `json:"partition"`
	Current   []int32 `json:"current"`
	Target    []int32 `json:"target"`
	// Status: pending (execute, before), complete, in-progress, differs.
	Status string `json:"status"`
}

type applyResult struct {
	Mode       string       `json:"mode"`
	Bootstrap  string       `json:"bootstrap"`
	Throttle   int64        `json:"throttle_bytes_per_s"`
	Partitions []partStatus `json:"partitions"`
	Complete   int          `json:"complete"`
	InProgress int          `json:"in_progress"`
	Differs    int          `json:"differs"`
	Message    string       `json:"message"`
}

func runApply(ctx context.Context, o *ApplyOptions) error {
	moves, err := loadPlan(o.Plan)
	if err != nil {
		return err
	}
	adm := kafka.NewAdmin(kafka.ConnOptions{BootstrapServers: o.BootstrapServers, CommandConfig: o.CommandConfig, Timeout: o.Timeout}, o.f.Version)
	defer adm.Close()
	if _, err := adm.Client(); err != nil {
		return cmdutil.Usage(err)
	}
	st, cur, live, err := status(ctx, adm, moves)
	if err != nil {
		return err
	}
	res := &applyResult{Mode: o.Mode, Bootstrap: o.BootstrapServers, Throttle: o.Throttle, Partitions: st}
	tally(res)
	switch o.Mode {
	case "verify":
		return o.verify(ctx, adm, moves, live, res)
	case "cancel":
		return o.cancel(ctx, adm, moves, live, res)
	}
	return o.execute(ctx, adm, moves, cur, live, res)
}

// loadPlan reads a reassignment JSON file into moves.
func loadPlan(path string) ([]kafka.Move, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, cmdutil.UsageErrorf("plan: %w", err)
	}
	defer f.Close() //nolint:errcheck // read-only
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, cmdutil.UsageErrorf("plan %s: %w", path, err)
	}
	if t := bytes.TrimLeft(data, " \t\r\n\ufeff"); !bytes.HasPrefix(t, []byte("{")) {
		return nil, cmdutil.UsageErrorf("plan %s: not a reassignment JSON file (want {\"version\":1,\"partitions\":[...]})", path)
	}
	c, err := topology.Load(bytes.NewReader(data), path)
	if err != nil {
		return nil, cmdutil.Usage(err)
	}
	if len(c.Partitions) == 0 {
		return nil, cmdutil.UsageErrorf("plan %s: no partitions", path)
	}
	moves := make([]kafka.Move, 0, len(c.Partitions))
	for _, p := range c.Partitions {
		moves = append(moves, kafka.Move{Topic: p.Topic, Partition: p.Partition, Replicas: slices.Clone(p.Replicas)})
	}
	return moves, nil
}

// status reads the cluster and classifies every plan partition. It also
// returns the live layout of those partitions and the running brokers.
func status(ctx context.Context, adm *kafka.Admin, moves []kafka.Move) ([]partStatus, map[topology.Key]topology.Partition, []int32, error) {
	topics := map[string]bool{}
	keys := make([]topology.Key, len(moves))
	for i, m := range moves {
		topics[m.Topic] = true
		keys[i] = m.Key()
	}
	c, err := adm.Snapshot(ctx, func(t string) bool { return topics[t] })
	if err != nil {
		return nil, nil, nil, err
	}
	cur := map[topology.Key]topology.Partition{}
	for _, p := range c.Partitions {
		cur[topology.Key{Topic: p.Topic, Partition: p.Partition}] = p
	}
	bctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	ongoing, err := adm.Ongoing(bctx, keys)
	if err != nil {
		return nil, nil, nil, err
	}
	out := make([]partStatus, len(moves))
	for i, m := range moves {
		p, ok := cur[m.Key()]
		s := partStatus{Topic: m.Topic, Partition: m.Partition, Current: p.Replicas, Target: m.Replicas}
		_, busy := ongoing[m.Key()]
		switch {
		case !ok:
			s.Status = "missing"
		case busy:
			s.Status = "in-progress"
		case slices.Equal(p.Replicas, m.Replicas):
			s.Status = "complete"
		default:
			s.Status = "differs"
		}
		out[i] = s
	}
	return out, cur, liveBrokers(c), nil
}

// liveBrokers returns the brokers in the metadata that no partition reports
// offline.
func liveBrokers(c *topology.Cluster) []int32 {
	off := map[int32]bool{}
	for _, p := range c.Partitions {
		for _, b := range p.Offline {
			off[b] = true
		}
	}
	var live []int32
	for _, b := range c.Brokers {
		if !off[b.ID] {
			live = append(live, b.ID)
		}
	}
	return live
}

func tally(r *applyResult) {
	r.Complete, r.InProgress, r.Differs = 0, 0, 0
	for _, s := range r.Partitions {
		switch s.Status {
		case "complete":
			r.Complete++
		case "in-progress":
			r.InProgress++
		default:
			r.Differs++
		}
	}
}

func (o *ApplyOptions) execute(ctx context.Context, adm *kafka.Admin, moves []kafka.Move, cur map[topology.Key]topology.Partition, live []int32, res *applyResult) error {
	var todo []kafka.Move
	var refuse []string
	current := map[topology.Key][]int32{}
	for i, m := range moves {
		s := &res.Partitions[i]
		switch s.Status {
		case "missing":
			return cmdutil.UsageErrorf("plan %s: %s/%d does not exist on %s", o.Plan, m.Topic, m.Partition, o.BootstrapServers)
		case "in-progress":
			refuse = append(refuse, fmt.Sprintf("%s/%d is already being reassigned (use --verify or --cancel)", m.Topic, m.Partition))
			continue
		case "complete":
			continue
		}
		p := cur[m.Key()]
		if p.Leader == topology.NoLeader {
			refuse = append(refuse, fmt.Sprintf("%s/%d has no leader", m.Topic, m.Partition))
		}
		for _, b := range m.Replicas {
			if !slices.Contains(live, b) {
				refuse = append(refuse, fmt.Sprintf("%s/%d: broker %d is not a running broker of the cluster", m.Topic, m.Partition, b))
			}
		}
		s.Status = "pending"
		current[m.Key()] = p.Replicas
		todo = append(todo, m)
	}
	o.showPlan(res)
	if len(refuse) > 0 {
		if len(refuse) > 5 {
			refuse = append(refuse[:5], fmt.Sprintf("and %d more", len(refuse)-5))
		}
		return cmdutil.RefusedErrorf("refusing to execute the plan: %s", strings.Join(refuse, "; "))
	}
	if len(todo) == 0 {
		res.Message = "nothing to do: every partition already has its target replicas"
		return o.render(res)
	}
	if !o.Yes && !o.isLab() {
		return cmdutil.RefusedErrorf("refusing to execute %d partition moves on %s, which is not the local kplan lab, without --yes", len(todo), o.BootstrapServers)
	}
	throttle := kafka.ThrottleFor(o.Throttle, todo, current)
	if o.Throttle > 0 {
		if err := adm.SetThrottle(ctx, throttle); err != nil {
			return fmt.Errorf("setting the replication throttle: %w", err)
		}
	}
	if err := adm.Reassign(ctx, todo); err != nil {
		return fmt.Errorf("executing the plan (nothing else was changed%s): %w", throttleNote(o.Throttle), err)
	}
	fmt.Fprintf(o.IO.ErrOut, "kplan reassign apply: the controller accepted %d partition moves\n", len(todo))
	if o.NoWait {
		res.Message = fmt.Sprintf("%d partition moves started; run with --verify to follow them%s", len(todo), throttleNote(o.Throttle))
		return o.render(res)
	}
	if err := o.wait(ctx, adm, moves, res); err != nil {
		return err
	}
	if o.Throttle > 0 {
		if err := adm.ClearThrottle(ctx, throttle.Brokers, throttle.Topics()); err != nil {
			return fmt.Errorf("the plan is complete, but removing the throttle failed: %w", err)
		}
	}
	res.Message = fmt.Sprintf("complete: %d partitions have their target replicas", res.Complete)
	return o.render(res)
}

func throttleNote(rate int64) string {
	if rate <= 0 {
		return ""
	}
	return "; the throttle stays until --verify or --cancel removes it"
}

// wait polls until every plan partition is complete, printing progress.
func (o *ApplyOptions) wait(ctx context.Context, adm *kafka.Admin, moves []kafka.Move, res *applyResult) error {
	var deadline <-chan time.Time
	if o.WaitTimeout > 0 {
		t := time.NewTimer(o.WaitTimeout)
		defer t.Stop()
		deadline = t.C
	}
	start := time.Now()
	var said time.Time
	lastDone := -1
	for {
		st, _, _, err := status(ctx, adm, moves)
		if err != nil {
			return err
		}
		res.Partitions = st
		tally(res)
		// A line when something finished, and every 10 s otherwise.
		if res.Complete != lastDone || time.Since(said) >= 10*time.Second {
			fmt.Fprintf(o.IO.ErrOut, "kplan reassign apply: %d of %d partitions complete, %d in progress (%s)\n",
				res.Complete, len(moves), res.InProgress, time.Since(start).Round(time.Second))
			lastDone, said = res.Complete, time.Now()
		}
		if res.Complete == len(moves) {
			return nil
		}
		if res.InProgress == 0 {
			return fmt.Errorf("%d partitions are neither complete nor in progress: the reassignment was cancelled or replaced", res.Differs)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("stopped waiting (the reassignment goes on; --verify or --cancel it): %w", ctx.Err())
		case <-deadline:
			return fmt.Errorf("not complete after --wait-timeout %v (the reassignment goes on; --verify or --cancel it)", o.WaitTimeout)
		case <-time.After(o.Poll):
		}
	}
}

func (o *ApplyOptions) verify(ctx context.Context, adm *kafka.Admin, moves []kafka.Move, live []int32, res *applyResult) error {
	switch {
	case res.InProgress > 0:
		res.Message = fmt.Sprintf("in progress: %d of %d partitions complete", res.Complete, len(moves))
		if err := o.render(res); err != nil {
			return err
		}
		return cmdutil.SilentExit(cmdutil.ExitFindings)
	case res.Complete < len(moves):
		res.Message = fmt.Sprintf("%d partitions differ from the plan and are not being reassigned", res.Differs)
		if err := o.render(res); err != nil {
			return err
		}
		return cmdutil.SilentExit(cmdutil.ExitRuntime)
	}
	// Like Kafka's --verify: every broker, since the plan's sources may
	// have left the replica lists.
	if err := adm.ClearThrottle(ctx, live, planTopics(moves)); err != nil {
		return fmt.Errorf("the plan is complete, but removing the throttle failed: %w", err)
	}
	res.Message = fmt.Sprintf("complete: %d partitions have their target replicas; throttle removed", res.Complete)
	return o.render(res)
}

func (o *ApplyOptions) cancel(ctx context.Context, adm *kafka.Admin, moves []kafka.Move, live []int32, res *applyResult) error {
	var keys []topology.Key
	for i, m := range moves {
		if res.Partitions[i].Status == "in-progress" {
			keys = append(keys, m.Key())
		}
	}
	if len(keys) > 0 && !o.Yes && !o.isLab() {
		o.showPlan(res)
		return cmdutil.RefusedErrorf("refusing to cancel %d reassignments on %s, which is not the local kplan lab, without --yes", len(keys), o.BootstrapServers)
	}
	if len(keys) > 0 {
		if err := adm.CancelReassign(ctx, keys); err != nil {
			return err
		}
	}
	if err := adm.ClearThrottle(ctx, live, planTopics(moves)); err != nil {
		return fmt.Errorf("removing the throttle: %w", err)
	}
	st, _, _, err := status(ctx, adm, moves)
	if err != nil {
		return err
	}
	res.Partitions = st
	tally(res)
	res.Message = fmt.Sprintf("cancelled %d reassignments in progress; throttle removed", len(keys))
	return o.render(res)
}

// planTopics returns the plan's topics, sorted.
func planTopics(moves []kafka.Move) []string {
	var out []string
	for _, m := range moves {
		out = append(out, m.Topic)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// isLab reports whether every bootstrap address belongs to the local kplan
// lab in LabDir.
func (o *ApplyOptions) isLab() bool {
	if o.BootstrapServers == "" {
		return false
	}
	dir := o.LabDir
	if dir == "" {
		dir = localkafka.DefaultDir()
	}
	s, err := localkafka.Load(dir)
	if err != nil {
		return false
	}
	lab := s.Bootstrap()
	for _, a := range strings.Split(o.BootstrapServers, ",") {
		if !slices.Contains(lab, strings.TrimSpace(a)) {
			return false
		}
	}
	return true
}

// showPlan prints the partitions to change on stderr, so stdout stays the
// result.
func (o *ApplyOptions) showPlan(res *applyResult) {
	w := o.IO.ErrOut
	n := 0
	for _, s := range res.Partitions {
		if s.Status != "complete" {
			n++
		}
	}
	fmt.Fprintf(w, "Plan for %s: %d of %d partitions to change%s\n", o.BootstrapServers, n, len(res.Partitions), func() string {
		if o.Throttle > 0 {
			return ", replication throttled to " + units.FormatRate(o.Throttle)
		}
		return ""
	}())
	shown := 0
	for _, s := range res.Partitions {
		if s.Status == "complete" {
			continue
		}
		if shown == 20 {
			fmt.Fprintf(w, "  ... and %d more\n", n-shown)
			break
		}
		fmt.Fprintf(w, "  %s/%d: %s -> %s (%s)\n", s.Topic, s.Partition, ids(s.Current), ids(s.Target), s.Status)
		shown++
	}
}

func ids(xs []int32) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = fmt.Sprint(x)
	}
	return "[" + strings.Join(parts, ",") + "]"
}

func (o *ApplyOptions) render(res *applyResult) error {
	return report.Render(o.IO.Out, o.Format, res, func() report.Document {
		rows := make([][]string, 0, len(res.Partitions))
		for _, s := range res.Partitions {
			rows = append(rows, []string{s.Topic, fmt.Sprint(s.Partition), ids(s.Current), ids(s.Target), s.Status})
		}
		return report.Document{
			Title: "kplan reassign apply (" + res.Mode + "): " + res.Message,
			Sections: []report.Section{{
				Title:  "Partitions",
				Header: []string{"TOPIC", "PARTITION", "CURRENT", "TARGET", "STATUS"},
				Rows:   rows,
			}},
		}
	})
}
