package chaos

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kplan-dev/kplan/internal/chaos"
	"github.com/kplan-dev/kplan/internal/chaos/killers"
	"github.com/kplan-dev/kplan/internal/chaos/remote"
	clitarget "github.com/kplan-dev/kplan/internal/cli/target"
	"github.com/kplan-dev/kplan/internal/cmdutil"
	"github.com/kplan-dev/kplan/internal/errkind"
	"github.com/kplan-dev/kplan/internal/kafka"
	"github.com/kplan-dev/kplan/internal/report/chaosreport"
)

// RemoteOptions are the settings of a cluster reached by --bootstrap-server.
type RemoteOptions struct {
	// Conn has the bootstrap servers and --command-config.
	Conn kafka.ConnOptions
	// Spec is the killer; Kind "" when nothing is killed (--kill none).
	killers.Spec
	// Yes allows the kill; DryRun prints the plan and changes nothing;
	// KeepTopics keeps the experiment topics kplan created.
	Yes, DryRun, KeepTopics bool
}

// remoteFlags are the raw flags of --bootstrap-server runs.
type remoteFlags struct {
	bootstrap               string
	yes, dryRun, keepTopics bool
	killer                  clitarget.KillerFlags
}

func (r *remoteFlags) add(fs *pflag.FlagSet) {
	clitarget.BootstrapVar(fs, &r.bootstrap, "run against it (with --killer; --command-config for TLS and SASL)")
	fs.BoolVar(&r.yes, "yes", false, "kill a broker of a --bootstrap-server cluster (without it kplan prints the plan and exits 4)")
	fs.BoolVar(&r.dryRun, "dry-run", false, "print the plan (the killer's command or manifest, the partitions losing their leader and their new leaders) and change nothing")
	fs.BoolVar(&r.keepTopics, "keep-topics", false, "keep the experiment topics kplan created on a --bootstrap-server cluster (default: deleted at the end)")
	r.killer.AddFlags(fs, "needed by --restore, --repeat and --sequential")
}

// options checks the flags of a --bootstrap-server run; nil when there is
// none. The killer checks itself against what the campaign needs.
func (r *remoteFlags) options(cmd *cobra.Command, c *flags, camp *chaos.Campaign) (*RemoteOptions, error) {
	given := func(name string) bool {
		_, inFile := c.origin[name]
		return cmd.Flags().Changed(name) || inFile
	}
	// --workers-on kubernetes takes the killer's Kubernetes flags for its
	// Job: they are not the killer's alone then.
	killerGiven := func(name string) bool {
		return given(name) && (c.workersOn != workersOnKubernetes || !kubeFlags[name])
	}
	if !given("bootstrap-server") {
		own := append(clitarget.KillerFlagNames(), "yes", "dry-run", "keep-topics")
		slices.Sort(own[1:]) // --killer first: the flag the others go with
		for _, n := range own {
			if killerGiven(n) {
				return nil, errkind.Usagef("", "%s: needs --bootstrap-server (a cluster kplan does not run itself)", c.where(n))
			}
		}
		return nil, nil
	}
	if strings.TrimSpace(r.bootstrap) == "" {
		return nil, errkind.Usagef("", "%s: no address given", c.where("bootstrap-server"))
	}
	r.killer.Spec.RequiredWith, r.killer.Spec.RestoreNeeded = camp.KillerNeeded(), camp.RestoreNeeded()
	spec, err := r.killer.Options(killerGiven, c.where)
	if err != nil {
		return nil, errkind.Wrap(errkind.Usage, "", cmdutil.Spell(err, c.where))
	}
	if f := camp.Config.Fault; f != nil && f.Kind == chaos.FaultCPU {
		return nil, errkind.Usagef("", "%s: a CPU cap only on the lab (a cgroup for the broker's JVM); on a --bootstrap-server cluster use bandwidth or delay", c.where(c.faultFlag()))
	}
	if camp.Config.Fault != nil && spec.Kind != killers.ChaosMesh {
		return nil, errkind.Usagef("", "%s: on a --bootstrap-server cluster only with --killer chaos-mesh (its NetworkChaos), not %s", c.where(c.faultFlag()), spec.Kind)
	}
	o := &RemoteOptions{
		Conn: camp.Config.Conn, // resolved: the command config is not read again
		Spec: spec, Yes: r.yes, DryRun: r.dryRun, KeepTopics: r.keepTopics,
	}
	o.Conn.BootstrapServers = r.bootstrap
	return o, nil
}

// openRemote connects to a --bootstrap-server cluster with its killer.
func openRemote(ctx context.Context, opts *Options) (*remote.Cluster, error) {
	k, err := opts.Remote.New(killers.NewRunID())
	if err != nil {
		return nil, errkind.Wrap(errkind.Usage, "", cmdutil.SpellFlag(err, nil))
	}
	leave := max(remote.DefaultLeaveTimeout, opts.Config.FailoverTimeout)
	return remote.New(ctx, remote.Options{
		Conn: opts.Remote.Conn, Version: opts.Config.Version, Killer: k, Faulter: killers.NetFaulter(k),
		KeepTopics: opts.Remote.KeepTopics, LeaveTimeout: leave,
	})
}

// prepareRemote opens the cluster, completes the campaign on it and makes
// the plan, and decides whether to run: it prints the plan and returns
// done for a dry run (or an error with the exit code the run would meet),
// and refuses without --yes.
func prepareRemote(ctx context.Context, opts *Options, camp *chaos.Campaign) (_ *remote.Cluster, done bool, err error) {
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
	if err := camp.Complete(ctx, c); err != nil {
		return nil, false, cmdutil.SpellFlag(err, nil)
	}
	pr := chaos.PlanRun{Cluster: c, Killer: c.Killer(), Config: camp.Config, DeleteTopics: !opts.Remote.KeepTopics, DryRun: opts.Remote.DryRun}
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

// cleanupRemote deletes the experiment topics and the killer's objects on a
// context Ctrl-C does not cancel, cut short by abort (the second Ctrl-C).
func cleanupRemote(ctx context.Context, c *remote.Cluster, opts *Options, abort <-chan struct{}) error {
	cctx, cancel := chaos.CleanupContext(ctx, 0, abort)
	defer cancel()
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
