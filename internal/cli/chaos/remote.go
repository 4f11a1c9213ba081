package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kplan-dev/kplan/internal/chaos"
	"github.com/kplan-dev/kplan/internal/chaos/docker"
	chaosexec "github.com/kplan-dev/kplan/internal/chaos/exec"
	"github.com/kplan-dev/kplan/internal/chaos/remote"
	clitarget "github.com/kplan-dev/kplan/internal/cli/target"
	"github.com/kplan-dev/kplan/internal/cmdutil"
	"github.com/kplan-dev/kplan/internal/errkind"
	"github.com/kplan-dev/kplan/internal/kafka"
	"github.com/kplan-dev/kplan/internal/report/chaosreport"
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
	if err := r.killerOptions(o, c, cfg); err != nil {
		return nil, err
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

// killerOptions checks --killer and its own flags into o.
func (r *remoteFlags) killerOptions(o *RemoteOptions, c *flags, cfg *chaos.Config) error {
	var err error
	switch r.killer {
	case "":
		if cfg.Fault != nil {
			return cmdutil.UsageErrorf("%s: required with --fault on a --bootstrap-server cluster (chaos-mesh injects it as a NetworkChaos)", c.where("killer"))
		}
		if cfg.Target.Kind != chaos.TargetNone {
			return cmdutil.UsageErrorf("%s: required with --bootstrap-server (%s)", c.where("killer"), killerKinds)
		}
	case KillerExec:
		o.Exec = chaosexec.Options{KillCmd: r.killCmd, RestoreCmd: r.restoreCmd, Timeout: r.killTimeout}
		err = o.Exec.Validate()
		if err == nil && strings.TrimSpace(r.restoreCmd) == "" && cfg.Target.Kind != chaos.TargetNone {
			switch {
			case cfg.Restore:
				err = errkind.Usagef("restore-cmd", "required with --restore")
			case cfg.Target.Kind == chaos.TargetEach:
				err = errkind.Usagef("restore-cmd", "required with --kill each (each kill is undone before the next)")
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
		return cmdutil.UsageErrorf("%s: unknown killer %q (want %s)", c.where("killer"), r.killer, killerKinds)
	}
	return cmdutil.Usage(spell(err, c.where))
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
	if err := remoteTopics(ctx, c, opts, cfg); err != nil {
		return nil, false, err
	}
	k := c.Killer()
	pr := chaos.PlanRun{Cluster: c, Killer: k, Config: *cfg, DeleteTopics: !opts.Remote.KeepTopics, DryRun: opts.Remote.DryRun}
	plan, perr := pr.Run(ctx)
	ro := opts.Remote
	out := opts.IO.Out
	if !ro.DryRun && ro.Yes {
		out = opts.IO.ErrOut // the result goes to stdout
	}
	if plan != nil && (ro.DryRun || !ro.Yes || perr != nil) {
		if err := chaosreport.WritePlan(out, opts.Format, plan); err != nil {
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

// remoteTopics completes cfg's topics on a --bootstrap-server cluster:
// the existing ones listed, the assignment checked against its brokers or
// built round them.
func remoteTopics(ctx context.Context, c *remote.Cluster, opts *Options, cfg *chaos.Config) error {
	brokers, err := c.Brokers(ctx)
	if err != nil {
		return err
	}
	if cfg.Existing && len(cfg.Workload) == 0 {
		if cfg.Workload, err = existingWorkload(ctx, c, *cfg, opts.Workload); err != nil {
			return err
		}
		cfg.Rate = chaos.TotalRate(cfg.Workload)
	}
	if err := chaos.CheckWorkloadBrokers(cfg.Workload, brokers); err != nil {
		return spell(err, flagName)
	}
	for p, reps := range cfg.Assignment {
		for _, id := range reps {
			if !slices.Contains(brokers, id) {
				return cmdutil.UsageErrorf("--assignment: partition %d is assigned to broker %d, which the cluster does not have (brokers %v)", p, id, brokers)
			}
		}
	}
	if cfg.Assignment == nil && len(cfg.Workload) == 0 {
		if opts.ReplicationFactor > len(brokers) {
			return cmdutil.UsageErrorf("--replication-factor: %d is more than the cluster's %d brokers", opts.ReplicationFactor, len(brokers))
		}
		cfg.Assignment = chaos.RingAssignment(brokers, opts.Partitions, opts.ReplicationFactor)
	}
	return nil
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
