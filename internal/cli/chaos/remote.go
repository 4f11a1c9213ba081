package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kplan-dev/kplan/internal/audit"
	"github.com/kplan-dev/kplan/internal/chaos"
	"github.com/kplan-dev/kplan/internal/chaos/docker"
	chaosexec "github.com/kplan-dev/kplan/internal/chaos/exec"
	"github.com/kplan-dev/kplan/internal/chaos/remote"
	clitarget "github.com/kplan-dev/kplan/internal/cli/target"
	"github.com/kplan-dev/kplan/internal/cmdutil"
	"github.com/kplan-dev/kplan/internal/errkind"
	"github.com/kplan-dev/kplan/internal/kafka"
	"github.com/kplan-dev/kplan/internal/report"
	"github.com/kplan-dev/kplan/internal/topology"
)

// Killer kinds, as --killer spells them.
const (
	KillerChaosMesh = "chaos-mesh"
	KillerDocker    = docker.Name
	KillerExec      = chaosexec.Name
)

// killerKinds lists the kinds for messages.
const killerKinds = "chaos-mesh, docker or exec"

// RemoteOptions are the settings of a cluster reached by --bootstrap-server.
type RemoteOptions struct {
	// Conn has the bootstrap servers and --command-config.
	Conn kafka.ConnOptions
	// Killer is the killer's kind; "" with --kill none.
	Killer string
	// Exec, Docker and Mesh configure the killer of that kind.
	Exec   chaosexec.Options
	Docker docker.Options
	Mesh   MeshOptions
	// Yes allows the kill; DryRun prints the plan and changes nothing;
	// KeepTopics keeps the experiment topics kplan created.
	Yes, DryRun, KeepTopics bool
}

// remoteFlags are the raw flags of --bootstrap-server runs.
type remoteFlags struct {
	bootstrap, killer, killCmd, restoreCmd, containerTemplate string
	killTimeout                                               time.Duration
	yes, dryRun, keepTopics                                   bool
	mesh                                                      meshFlags
}

func (r *remoteFlags) add(fs *pflag.FlagSet) {
	clitarget.BootstrapVar(fs, &r.bootstrap, "run against it (with --killer; --command-config for TLS and SASL)")
	fs.StringVar(&r.killer, "killer", "", "how to kill a broker of a --bootstrap-server cluster: chaos-mesh, docker or exec")
	fs.BoolVar(&r.yes, "yes", false, "kill a broker of a --bootstrap-server cluster (without it kplan prints the plan and exits 4)")
	fs.BoolVar(&r.dryRun, "dry-run", false, "print the plan (the killer's command or manifest, the partitions losing their leader and their new leaders) and change nothing")
	fs.BoolVar(&r.keepTopics, "keep-topics", false, "keep the experiment topics kplan created on a --bootstrap-server cluster (default: deleted at the end)")
	fs.DurationVar(&r.killTimeout, "kill-timeout", chaosexec.DefaultTimeout, "exec, docker: longest run of each kill, restore or docker command")
	fs.StringVar(&r.killCmd, "kill-cmd", "", "exec: command that kills a broker, run with sh -c; {id}, {host}, {port} are the broker's id and advertised address")
	fs.StringVar(&r.restoreCmd, "restore-cmd", "", "exec: command that brings a killed broker back (needed by --restore, --repeat and --sequential)")
	fs.StringVar(&r.containerTemplate, "container-template", "", "docker: the broker's container, e.g. kafka-{id}")
	r.mesh.add(fs)
}

// killerFlags maps each killer's own flags to the killer.
func killerFlags() map[string]string {
	m := map[string]string{"kill-cmd": KillerExec, "restore-cmd": KillerExec, "container-template": KillerDocker}
	for _, n := range meshFlagNames {
		m[n] = KillerChaosMesh
	}
	return m
}

// options checks the flags of a --bootstrap-server run; nil when there is
// none.
func (r *remoteFlags) options(cmd *cobra.Command, c *flags, cfg *chaos.Config) (*RemoteOptions, error) {
	given := func(name string) bool {
		_, inFile := c.origin[name]
		return cmd.Flags().Changed(name) || inFile
	}
	kf := killerFlags()
	own := []string{"killer", "yes", "dry-run", "keep-topics", "kill-timeout"}
	for n := range kf {
		own = append(own, n)
	}
	slices.Sort(own[1:]) // --killer first: the flag the others go with
	if !given("bootstrap-server") {
		for _, n := range own {
			if given(n) {
				return nil, cmdutil.UsageErrorf("%s: needs --bootstrap-server (a cluster kplan does not run itself)", c.where(n))
			}
		}
		return nil, nil
	}
	if strings.TrimSpace(r.bootstrap) == "" {
		return nil, cmdutil.UsageErrorf("%s: no address given", c.where("bootstrap-server"))
	}
	if r.killTimeout <= 0 {
		return nil, cmdutil.UsageErrorf("%s: must be positive, got %v", c.where("kill-timeout"), r.killTimeout)
	}
	o := &RemoteOptions{
		Conn:   cfg.Conn, // resolved: the command config is not read again
		Killer: r.killer, Yes: r.yes, DryRun: r.dryRun, KeepTopics: r.keepTopics,
	}
	o.Conn.BootstrapServers = r.bootstrap
	var err error
	switch r.killer {
	case "":
		if cfg.Fault != nil {
			return nil, cmdutil.UsageErrorf("%s: required with --fault on a --bootstrap-server cluster (chaos-mesh injects it as a NetworkChaos)", c.where("killer"))
		}
		if cfg.Target.Kind != chaos.TargetNone {
			return nil, cmdutil.UsageErrorf("%s: required with --bootstrap-server (%s)", c.where("killer"), killerKinds)
		}
	case KillerExec:
		o.Exec = chaosexec.Options{KillCmd: r.killCmd, RestoreCmd: r.restoreCmd, Timeout: r.killTimeout}
		err = o.Exec.Validate()
		if err == nil && strings.TrimSpace(r.restoreCmd) == "" && cfg.Target.Kind != chaos.TargetNone {
			switch {
			case cfg.Restore:
				err = errkind.Usagef("restore-cmd", "required with --restore")
			case c.repeat > 1:
				err = errkind.Usagef("restore-cmd", "required with --repeat (each run needs the broker back)")
			case cfg.Sequential && len(cfg.Partitioners) > 1:
				err = errkind.Usagef("restore-cmd", "required with --sequential (each partitioner's leg needs the broker back)")
			}
		}
	case KillerDocker:
		o.Docker = docker.Options{ContainerTemplate: r.containerTemplate, Timeout: r.killTimeout}
		err = o.Docker.Validate()
	case KillerChaosMesh:
		o.Mesh, err = r.mesh.options()
	default:
		return nil, cmdutil.UsageErrorf("%s: unknown killer %q (want %s)", c.where("killer"), r.killer, killerKinds)
	}
	if err != nil {
		return nil, cmdutil.Usage(spell(err, c.where))
	}
	if cfg.Fault != nil && r.killer != KillerChaosMesh {
		return nil, cmdutil.UsageErrorf("%s: on a --bootstrap-server cluster only with --killer chaos-mesh (its NetworkChaos), not %s", c.where("fault"), r.killer)
	}
	for _, n := range own {
		if k, ok := kf[n]; ok && k != r.killer && given(n) {
			return nil, cmdutil.UsageErrorf("%s: only with --killer %s", c.where(n), k)
		}
	}
	return o, nil
}

// newKiller builds the killer of a --bootstrap-server run.
func newKiller(o *RemoteOptions) (chaos.Killer, error) {
	switch o.Killer {
	case KillerExec:
		return chaosexec.New(o.Exec)
	case KillerDocker:
		return docker.New(o.Docker)
	case KillerChaosMesh:
		return newMeshKiller(o.Mesh, newRunID())
	}
	return noKiller{}, nil
}

// newRunID names one run's chaos objects: lowercase letters and digits.
func newRunID() string {
	return strconv.FormatInt(time.Now().Unix(), 36) + strconv.FormatUint(rand.Uint64()%(36*36*36*36), 36) //nolint:gosec // a name, not a secret
}

// noKiller is the killer of --kill none: there is nothing to kill.
type noKiller struct{}

func (noKiller) Name() string { return "none" }
func (noKiller) Plan(context.Context, chaos.Broker) (chaos.KillPlan, error) {
	return chaos.KillPlan{}, errkind.Usagef("killer", "no killer given")
}
func (noKiller) Kill(context.Context, chaos.Broker) (time.Time, error) {
	return time.Time{}, errkind.Usagef("killer", "no killer given")
}
func (noKiller) Restore(context.Context, chaos.Broker) error {
	return errkind.Usagef("killer", "no killer given")
}
func (noKiller) Cleanup(context.Context) error { return nil }
func (noKiller) Log() []string                 { return nil }

// openRemote connects to a --bootstrap-server cluster with its killer.
func openRemote(ctx context.Context, opts *Options) (*remote.Cluster, error) {
	k, err := newKiller(opts.Remote)
	if err != nil {
		return nil, cmdutil.Usage(spell(err, flagName))
	}
	leave := max(remote.DefaultLeaveTimeout, opts.Config.FailoverTimeout)
	return remote.New(ctx, remote.Options{
		Conn: opts.Remote.Conn, Version: opts.Config.Version, Killer: k, Faulter: meshFaulter(k),
		KeepTopics: opts.Remote.KeepTopics, LeaveTimeout: leave,
	})
}

// PlanSchema versions the JSON of a plan (--dry-run -o json).
const PlanSchema = "kplan.chaos-plan/v1"

// Plan is what a --bootstrap-server run would do, printed by --dry-run and
// when --yes is missing.
type Plan struct {
	Schema  string `json:"schema"`
	Cluster string `json:"cluster"`
	Label   string `json:"label"`
	Killer  string `json:"killer"`
	// Target is --kill; Broker the broker it resolves to now (-1: none).
	Target string `json:"target"`
	Broker int32  `json:"broker"`
	// Host, Port and Rack are the broker's, as Kafka advertises them.
	Host string `json:"host,omitempty"`
	Port int32  `json:"port,omitempty"`
	Rack string `json:"rack,omitempty"`
	// Kill is the killer's plan.
	Kill *chaos.KillPlan `json:"kill,omitempty"`
	// Fault is --fault, FaultBroker the broker it resolves to now and
	// FaultPlan the faulter's plan (its NetworkChaos); absent without
	// --fault.
	Fault       string          `json:"fault,omitempty"`
	FaultBroker *int32          `json:"fault_broker,omitempty"`
	FaultPlan   *chaos.KillPlan `json:"fault_plan,omitempty"`
	// Topics are the experiment topics with their Assignment; Existing
	// those that exist already (reused, never deleted).
	Topics     []string `json:"topics"`
	Existing   []string `json:"existing_topics,omitempty"`
	Assignment string   `json:"assignment"`
	// DeleteTopics tells whether the topics kplan creates are deleted at
	// the end.
	DeleteTopics bool `json:"delete_topics"`
	// Elections are the partitions the broker leads and the leaders Kafka
	// would elect (audit's what-if on the live layout, with the
	// experiment topics as they will be created); Offline counts those
	// left with no leader.
	Elections []audit.Election `json:"elections"`
	Offline   int              `json:"offline"`
	// Refusal is why the pre-kill checks would refuse ("" when they pass).
	Refusal string `json:"refusal,omitempty"`
	DryRun  bool   `json:"dry_run"`
}

// planRemote reads Kafka (and the killer's platform) and says what the run
// would do. The error, if any, is the refusal or failure the run would
// meet; the plan is returned with it when there is one to show.
func planRemote(ctx context.Context, c *remote.Cluster, k chaos.Killer, cfg chaos.Config, opts *Options) (*Plan, error) {
	p := &Plan{Schema: PlanSchema, Cluster: c.Kind(), Label: c.Label(), Killer: k.Name(), Target: cfg.Target.String(), Broker: -1,
		Assignment: chaos.FormatAssignment(cfg.Assignment), DeleteTopics: !opts.Remote.KeepTopics, DryRun: opts.Remote.DryRun,
		Elections: []audit.Election{}}
	snap, err := c.Snapshot(ctx)
	if err != nil {
		return nil, err
	}
	if len(cfg.Workload) > 0 {
		p.Assignment = workloadAssignment(cfg.Workload)
	}
	for _, t := range experimentTopics(cfg) {
		p.Topics = append(p.Topics, t.name)
		have, ok, err := c.Layout(ctx, t.name)
		if err != nil {
			return nil, err
		}
		if t.existing {
			if !ok {
				return p, errkind.Usagef("topics", "topic %s no longer exists", t.name)
			}
			p.Existing = append(p.Existing, t.name)
			continue
		}
		if ok {
			if !slices.EqualFunc(have, t.assignment, slices.Equal) {
				return p, errkind.Usagef("topic", "topic %s exists with layout %s, not %s (choose another topic prefix or delete it)", t.name, chaos.FormatAssignment(have), chaos.FormatAssignment(t.assignment))
			}
			p.Existing = append(p.Existing, t.name)
			continue
		}
		for part, reps := range t.assignment {
			snap.Partitions = append(snap.Partitions, topology.Partition{Topic: t.name, Partition: int32(part), Leader: reps[0],
				Replicas: slices.Clone(reps), ISR: slices.Clone(reps), SizeBytes: -1})
		}
	}
	snap.Normalize()
	if err := planFault(ctx, c, cfg, snap, p); err != nil {
		return p, err
	}
	victim, err := planVictim(cfg, snap)
	if err != nil || victim < 0 {
		return p, err
	}
	b, err := c.Broker(ctx, victim)
	if err != nil {
		return p, err
	}
	p.Broker, p.Host, p.Port, p.Rack = b.ID, b.Host, b.Port, b.Rack
	if w := audit.WhatIfLoss(snap, audit.ByLeaders, []int32{victim}); len(w) == 1 {
		p.Elections = append(p.Elections, w[0].Elections...)
		p.Offline = w[0].OfflineCount
	}
	kp, err := k.Plan(ctx, b)
	if err != nil {
		p.Refusal = err.Error()
		return p, err
	}
	p.Kill = &kp
	if !cfg.AllowUnavailable {
		parts, err := killStates(ctx, c, snap, victim)
		if err != nil {
			return p, err
		}
		if err := chaos.CheckKill(parts, victim); err != nil {
			p.Refusal = err.Error()
			return p, err
		}
	}
	return p, nil
}

// killStates are the partitions of snap as chaos.CheckKill reads them,
// with each topic's min.insync.replicas (the victim's default for the
// topics the experiment has yet to create).
func killStates(ctx context.Context, c *remote.Cluster, snap *topology.Cluster, victim int32) ([]chaos.PartitionState, error) {
	var topics []string
	for _, t := range snap.Topics() {
		topics = append(topics, t.Name)
	}
	minISR, def, err := c.MinInsync(ctx, topics, victim)
	if err != nil {
		return nil, fmt.Errorf("checks before the kill: %w", err)
	}
	parts := make([]chaos.PartitionState, 0, len(snap.Partitions))
	for _, pt := range snap.Partitions {
		m, ok := minISR[pt.Topic]
		if !ok {
			m = def
		}
		parts = append(parts, chaos.PartitionState{Name: fmt.Sprintf("%s/%d", pt.Topic, pt.Partition), Replicas: pt.Replicas, ISR: pt.ISR, MinISR: m})
	}
	return parts, nil
}

// planFault adds the fault's plan to p: the broker it resolves to now and
// the faulter's manifest; a partition takes the kill's checks.
func planFault(ctx context.Context, c *remote.Cluster, cfg chaos.Config, snap *topology.Cluster, p *Plan) error {
	f := cfg.Fault
	if f == nil {
		return nil
	}
	p.Fault = f.String()
	fcfg := cfg
	fcfg.Target = f.Target
	victim, err := planVictim(fcfg, snap)
	if err != nil || victim < 0 {
		return err
	}
	p.FaultBroker = &victim
	fp, err := c.PlanFault(ctx, victim, *f)
	if err != nil {
		p.Refusal = err.Error()
		return err
	}
	p.FaultPlan = &fp
	if f.Kind == chaos.FaultPartition && !cfg.AllowUnavailable {
		parts, err := killStates(ctx, c, snap, victim)
		if err != nil {
			return err
		}
		if err := chaos.CheckKill(parts, victim); err != nil {
			p.Refusal = err.Error()
			return err
		}
	}
	return nil
}

// experimentTopic is a topic an experiment writes: created with assignment,
// or existing (written as it is).
type experimentTopic struct {
	name       string
	assignment [][]int32
	existing   bool
}

// experimentTopics lists the topics cfg writes, each once: one per
// partitioner for the one-topic experiment; for a workload, each workload
// topic per partitioner side by side, or once in a sequential run.
func experimentTopics(cfg chaos.Config) []experimentTopic {
	var out []experimentTopic
	seen := map[string]bool{}
	for _, name := range cfg.Partitioners {
		if len(cfg.Workload) == 0 {
			out = append(out, experimentTopic{name: chaos.TopicFor(cfg.Topic, name), assignment: cfg.Assignment})
			continue
		}
		for _, w := range cfg.Workload {
			t := chaos.WorkloadTopicName(cfg.Topic, name, w.Name, cfg.Sequential, cfg.Existing)
			if !seen[t] {
				seen[t] = true
				out = append(out, experimentTopic{name: t, assignment: w.Assignment, existing: cfg.Existing})
			}
		}
	}
	return out
}

// workloadAssignment spells a workload's layout as "A=1,2;2,3 B=2,1"
// ("A=existing" for topics written as they are).
func workloadAssignment(ws []chaos.WorkloadTopic) string {
	parts := make([]string, len(ws))
	for i, w := range ws {
		a := "existing"
		if w.Assignment != nil {
			a = chaos.FormatAssignment(w.Assignment)
		}
		parts[i] = w.Name + "=" + a
	}
	return strings.Join(parts, " ")
}

// planVictim resolves --kill on the snapshot: the broker now, the leader of
// a partition now (an experiment topic's preferred leader), or the broker
// leading most partitions of the experiment topics as they will be
// created. -1 for none.
func planVictim(cfg chaos.Config, snap *topology.Cluster) (int32, error) {
	t := cfg.Target
	switch t.Kind {
	case chaos.TargetBroker:
		return t.Broker, nil
	case chaos.TargetLeaderOf:
		for _, pt := range snap.Partitions {
			if pt.Topic == t.Topic && pt.Partition == t.Partition {
				if pt.Leader < 0 {
					return -1, errkind.Refusedf("kill", "%s: the partition has no leader", t)
				}
				return pt.Leader, nil
			}
		}
		return -1, errkind.Usagef("kill", "%s: no such partition", t)
	case chaos.TargetBusiest:
		count := map[int32]int{}
		mine := map[string]bool{}
		for _, et := range experimentTopics(cfg) {
			mine[et.name] = true
		}
		for _, pt := range snap.Partitions {
			if mine[pt.Topic] && pt.Leader >= 0 {
				count[pt.Leader]++
			}
		}
		best, bestN := int32(-1), 0
		for id, n := range count {
			if n > bestN || n == bestN && id < best {
				best, bestN = id, n
			}
		}
		return best, nil
	}
	return -1, nil
}

// maxPlanElections bounds the elections the text plan lists.
const maxPlanElections = 20

// writePlan prints the plan: JSON with -o json, else text.
func writePlan(w io.Writer, f report.Format, p *Plan) error {
	if f == report.JSON {
		b, err := json.MarshalIndent(p, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(w, "%s\n", b)
		return err
	}
	var sb strings.Builder
	head := "plan"
	if p.DryRun {
		head = "plan (dry run: nothing is created, killed or written)"
	}
	fmt.Fprintf(&sb, "kplan chaos %s\n", head)
	fmt.Fprintf(&sb, "cluster:     %s\n", p.Label)
	fmt.Fprintf(&sb, "killer:      %s\n", p.Killer)
	if p.Broker >= 0 {
		rack := ""
		if p.Rack != "" {
			rack = ", rack " + p.Rack
		}
		fmt.Fprintf(&sb, "kill:        %s: broker %d, advertised as %s:%d%s\n", p.Target, p.Broker, p.Host, p.Port, rack)
	} else {
		fmt.Fprintf(&sb, "kill:        %s\n", p.Target)
	}
	if p.Kill != nil {
		fmt.Fprintf(&sb, "target:      %s\n", p.Kill.Target)
		for i, s := range p.Kill.Steps {
			fmt.Fprintf(&sb, "  %d. %s\n", i+1, s)
		}
		if p.Kill.Manifest != "" {
			sb.WriteString("manifest:\n")
			for _, l := range strings.Split(strings.TrimRight(p.Kill.Manifest, "\n"), "\n") {
				sb.WriteString("  " + l + "\n")
			}
		}
	}
	writeFaultPlan(&sb, p)
	what := "created, deleted at the end"
	switch {
	case len(p.Topics) > 0 && len(p.Existing) == len(p.Topics):
		what = "existing: written as they are, kept"
	case !p.DeleteTopics:
		what = "created, kept (--keep-topics)"
	}
	fmt.Fprintf(&sb, "topics:      %s (assignment %s; %s)\n", strings.Join(p.Topics, ", "), p.Assignment, what)
	if len(p.Existing) > 0 && len(p.Existing) < len(p.Topics) {
		fmt.Fprintf(&sb, "             existing, reused and kept: %s\n", strings.Join(p.Existing, ", "))
	}
	if p.Broker >= 0 {
		fmt.Fprintf(&sb, "leaders:     broker %d leads %d partitions; Kafka would elect (audit what-if):\n", p.Broker, len(p.Elections))
		for i, e := range p.Elections {
			if i == maxPlanElections {
				fmt.Fprintf(&sb, "  ... and %d more\n", len(p.Elections)-i)
				break
			}
			if e.NewLeader < 0 {
				fmt.Fprintf(&sb, "  %s/%d -> none (offline)\n", e.Topic, e.Partition)
				continue
			}
			fmt.Fprintf(&sb, "  %s/%d -> broker %d\n", e.Topic, e.Partition, e.NewLeader)
		}
		if p.Offline > 0 {
			fmt.Fprintf(&sb, "  %d partitions would have no leader\n", p.Offline)
		}
	}
	switch {
	case p.Refusal != "":
		fmt.Fprintf(&sb, "checks:      refused: %s\n", p.Refusal)
	case p.Broker >= 0:
		sb.WriteString("checks:      passed: the killer's target checks; no partition is under-replicated or would be left without an in-sync replica\n")
	}
	_, err := io.WriteString(w, sb.String())
	return err
}

// writeFaultPlan prints the fault's part of a plan.
func writeFaultPlan(sb *strings.Builder, p *Plan) {
	if p.Fault == "" {
		return
	}
	if p.FaultBroker != nil {
		fmt.Fprintf(sb, "fault:       %s: broker %d\n", p.Fault, *p.FaultBroker)
	} else {
		fmt.Fprintf(sb, "fault:       %s\n", p.Fault)
	}
	if p.FaultPlan == nil {
		return
	}
	fmt.Fprintf(sb, "fault target: %s\n", p.FaultPlan.Target)
	for i, s := range p.FaultPlan.Steps {
		fmt.Fprintf(sb, "  %d. %s\n", i+1, s)
	}
	if p.FaultPlan.Manifest != "" {
		sb.WriteString("fault manifest:\n")
		for _, l := range strings.Split(strings.TrimRight(p.FaultPlan.Manifest, "\n"), "\n") {
			sb.WriteString("  " + l + "\n")
		}
	}
}

// prepareRemote opens the cluster, builds the experiment's assignment and
// the plan, and decides whether to run: it prints the plan and returns
// done for a dry run (or an error with the exit code the run would meet),
// and refuses without --yes.
func prepareRemote(ctx context.Context, opts *Options, cfg *chaos.Config) (_ *remote.Cluster, done bool, err error) {
	c, err := openRemote(ctx, opts)
	if err != nil {
		return nil, false, err
	}
	keep := false
	defer func() {
		if !keep {
			c.Close()
		}
	}()
	brokers, err := c.Brokers(ctx)
	if err != nil {
		return nil, false, err
	}
	if cfg.Existing && len(cfg.Workload) == 0 {
		if cfg.Workload, err = existingWorkload(ctx, c, opts); err != nil {
			return nil, false, err
		}
		cfg.Rate = totalRate(cfg.Workload)
	}
	if err := checkWorkloadBrokers(cfg.Workload, brokers); err != nil {
		return nil, false, err
	}
	for p, reps := range cfg.Assignment {
		for _, id := range reps {
			if !slices.Contains(brokers, id) {
				return nil, false, cmdutil.UsageErrorf("--assignment: partition %d is assigned to broker %d, which the cluster does not have (brokers %v)", p, id, brokers)
			}
		}
	}
	if cfg.Assignment == nil && len(cfg.Workload) == 0 {
		if opts.ReplicationFactor > len(brokers) {
			return nil, false, cmdutil.UsageErrorf("--replication-factor: %d is more than the cluster's %d brokers", opts.ReplicationFactor, len(brokers))
		}
		cfg.Assignment = chaos.RingAssignment(brokers, opts.Partitions, opts.ReplicationFactor)
	}
	k := c.Killer()
	plan, perr := planRemote(ctx, c, k, *cfg, opts)
	ro := opts.Remote
	out := opts.IO.Out
	if !ro.DryRun && ro.Yes {
		out = opts.IO.ErrOut // the result goes to stdout
	}
	if plan != nil && (ro.DryRun || !ro.Yes || perr != nil) {
		if err := writePlan(out, opts.Format, plan); err != nil {
			return nil, false, err
		}
	}
	if perr != nil {
		return nil, false, mapErr(perr, opts)
	}
	if ro.DryRun {
		return nil, true, nil
	}
	if !ro.Yes {
		return nil, false, errkind.Refusedf("", "--yes: not given: kplan creates topics, writes and kills on %s only with --yes (the plan is above; --dry-run prints it alone)", c.Kind())
	}
	if plan != nil && plan.Kill != nil {
		fmt.Fprintf(opts.IO.ErrOut, "chaos: %s: %s\n", plan.Killer, plan.Kill.Target)
	}
	if plan != nil && plan.FaultPlan != nil {
		fmt.Fprintf(opts.IO.ErrOut, "chaos: fault %s: %s\n", plan.Fault, plan.FaultPlan.Target)
	}
	keep = true
	return c, false, nil
}

// cleanupRemote deletes the experiment topics and the killer's objects on a
// context Ctrl-C does not cancel, cut short by abort (the second Ctrl-C).
func cleanupRemote(ctx context.Context, c *remote.Cluster, opts *Options, abort <-chan struct{}) error {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), chaos.DefaultCleanupTimeout)
	defer cancel()
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		select {
		case <-abort:
			cancel()
		case <-stop:
		}
	}()
	deleted, err := c.Cleanup(cctx)
	if len(deleted) > 0 {
		fmt.Fprintf(opts.IO.ErrOut, "chaos: deleted topics %s\n", strings.Join(deleted, ", "))
	}
	if left := c.Created(); len(left) > 0 {
		fmt.Fprintf(opts.IO.ErrOut, "chaos: topics left behind: %s\n", strings.Join(left, ", "))
	}
	if err != nil {
		return fmt.Errorf("cleanup: %w", err)
	}
	return nil
}
