package chaos

import (
	"context"
	"fmt"
	goio "io"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/kplan-dev/kplan/internal/chaos"
	"github.com/kplan-dev/kplan/internal/chaos/chaosmesh"
	chaoslab "github.com/kplan-dev/kplan/internal/chaos/lab"
	"github.com/kplan-dev/kplan/internal/cli/worker"
	"github.com/kplan-dev/kplan/internal/cmdutil"
	"github.com/kplan-dev/kplan/internal/errkind"
	"github.com/kplan-dev/kplan/internal/kafka"
	"github.com/kplan-dev/kplan/internal/report"
)

// --workers-on kubernetes: kplan places the run's workers itself, as an
// Indexed Job (internal/chaos/chaosmesh's Workers), before the run, and
// deletes it at the end, on success, error and Ctrl-C.

// Where the workers run, as --workers-on spells it.
const (
	workersOnNone       = "none"
	workersOnKubernetes = "kubernetes"
)

// kubeFlags are the killer's Kubernetes flags that --workers-on kubernetes
// shares: the cluster and the namespace the Job goes to.
var kubeFlags = map[string]bool{"kubeconfig": true, "context": true, "namespace": true}

// kubeWorkerOptions checks --workers-on kubernetes's flags and returns the
// workers' options without the cluster's addresses (known when the run
// starts); nil for --workers-on none. now and rng pick the run id when
// --run is not given: the Job is named after it before the run starts.
func (c *flags) kubeWorkerOptions(given func(string) bool, cfg *chaos.Config, now time.Time, rng *rand.Rand) (*chaosmesh.WorkersOptions, error) {
	if c.workersOn != workersOnKubernetes {
		if given("image") {
			return nil, errkind.Usagef("", "%s: only with --workers-on %s", c.where("image"), workersOnKubernetes)
		}
		return nil, nil
	}
	mesh := c.remote.killer.Spec.Mesh
	switch {
	case c.cluster == "embedded" && !given("bootstrap-server"):
		return nil, errkind.Usagef("", "%s: the embedded cluster lives in this process, where no pod can reach it (use --cluster lab or --bootstrap-server)", c.where("workers-on"))
	case strings.TrimSpace(c.image) == "":
		return nil, errkind.Usagef("", "--image: required with --workers-on %s (kplan's image; docs/chaos.md says how to build it)", workersOnKubernetes)
	case mesh.Namespace == "":
		return nil, errkind.Usagef("", "--namespace: required with --workers-on %s (where the workers' Job runs)", workersOnKubernetes)
	}
	if cfg.RunID == "" {
		cfg.RunID = chaos.NewRunID(now, rng)
	}
	o := &chaosmesh.WorkersOptions{Kubeconfig: mesh.Kubeconfig, Context: mesh.Context, Namespace: mesh.Namespace,
		Image: c.image, Run: cfg.RunID, Workers: cfg.Workers}
	if err := o.CheckFlags(); err != nil {
		return nil, cmdutil.Spell(err, c.where)
	}
	return o, nil
}

// newKubeWorkers completes the workers' options with the cluster's
// addresses and client settings (a lab's from its state, a
// --bootstrap-server cluster's from the flags) and builds them: the
// client properties become portable files for the Secret.
func newKubeWorkers(opts *Options) (*chaosmesh.Workers, error) {
	o := *opts.KubeWorkers
	conn := opts.Config.Conn
	var seeds []string
	switch {
	case opts.Remote != nil:
		conn = opts.Remote.Conn
		for s := range strings.SplitSeq(conn.BootstrapServers, ",") {
			if s = strings.TrimSpace(s); s != "" {
				seeds = append(seeds, s)
			}
		}
	case opts.Cluster == "lab":
		s, err := chaoslab.Load(opts.LabDir)
		if err != nil {
			return nil, errkind.Wrap(errkind.Usage, "", fmt.Errorf("--cluster lab: %w", err))
		}
		if conn, err = chaoslab.Conn(s, conn); err != nil {
			return nil, errkind.Wrap(errkind.Usage, "", fmt.Errorf("--cluster lab: %w", err))
		}
		seeds = s.Bootstrap()
	}
	o.Bootstrap = strings.Join(seeds, ",")
	files, ok, err := conn.Portable(chaosmesh.WorkerMountPath)
	if err != nil {
		return nil, errkind.Wrap(errkind.Usage, "", fmt.Errorf("--command-config: %w", err))
	}
	if ok {
		o.Files, o.CommandConfig = files, kafka.PortableConfig
	}
	w, err := chaosmesh.NewWorkers(o)
	if err != nil {
		return nil, cmdutil.SpellFlag(err, nil)
	}
	return w, nil
}

// writeKubePlan prints what --workers-on kubernetes will create.
func writeKubePlan(w goio.Writer, kw *chaosmesh.Workers) {
	o := kw.Options()
	fmt.Fprintf(w, "chaos: workers on Kubernetes, namespace %s: kplan creates before the run and deletes after it\n", o.Namespace)
	if s := kw.Secret(); s != nil {
		keys := make([]string, 0, len(s.Data))
		for k := range s.Data {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		fmt.Fprintf(w, "  secret/%s  %s, mounted read-only at %s\n", s.Name, strings.Join(keys, ", "), chaosmesh.WorkerMountPath)
	}
	job := kw.Job()
	args := make([]string, 0, len(o.Args()))
	for _, a := range o.Args() {
		args = append(args, worker.ShellQuote(a))
	}
	fmt.Fprintf(w, "  job/%s  Indexed, %d pods of %s, each running (its index from $JOB_COMPLETION_INDEX):\n", job.Name, o.Workers, o.Image)
	fmt.Fprintf(w, "    kplan %s\n", strings.Join(args, " "))
	fmt.Fprintf(w, "  labelled %s=%s, %s=%s (kplan chaos cleanup --namespace %s deletes leftovers)\n",
		chaosmesh.ManagedByLabel, chaosmesh.ManagedByValue, chaosmesh.RunIDLabel, o.Run, o.Namespace)
}

// dryRunKube asks the API server to accept the Job and the Secret without
// creating them, and prints their manifests (the Secret's values left
// out) for a text --dry-run.
func dryRunKube(ctx context.Context, opts *Options, kw *chaosmesh.Workers) error {
	if err := kw.DryRun(ctx); err != nil {
		return cmdutil.SpellFlag(err, nil)
	}
	if opts.Format == report.Table {
		y, err := chaosmesh.WorkersYAML(kw.Job(), kw.Secret())
		if err != nil {
			return err
		}
		fmt.Fprintf(opts.IO.Out, "\nWorkers' manifests (accepted by the API server's server-side dry run):\n---\n%s", y)
	}
	fmt.Fprintln(opts.IO.ErrOut, "chaos: the API server accepts the workers' Job and Secret (server-side dry run; nothing created)")
	return nil
}

// startKube checks the Job and the Secret with a server-side dry run, then
// creates them.
func startKube(ctx context.Context, opts *Options, kw *chaosmesh.Workers) error {
	if err := kw.DryRun(ctx); err != nil {
		return cmdutil.SpellFlag(err, nil)
	}
	if err := kw.Create(ctx); err != nil {
		return cmdutil.SpellFlag(err, nil)
	}
	fmt.Fprintf(opts.IO.ErrOut, "chaos: created %s\n", strings.Join(kw.Created(), ", "))
	return nil
}

// stopKube deletes the Job (its pods with it) and the Secret on a context
// Ctrl-C does not cancel, cut short by abort (the second Ctrl-C).
func stopKube(ctx context.Context, opts *Options, kw *chaosmesh.Workers, abort <-chan struct{}) error {
	cctx, cancel := chaos.CleanupContext(ctx, 0, abort)
	defer cancel()
	deleted, err := kw.Delete(cctx)
	if len(deleted) > 0 {
		fmt.Fprintf(opts.IO.ErrOut, "chaos: deleted %s (the Job's pods with it)\n", strings.Join(deleted, ", "))
	}
	if left := kw.Created(); len(left) > 0 {
		fmt.Fprintf(opts.IO.ErrOut, "chaos: left behind: %s (kplan chaos cleanup --namespace %s)\n", strings.Join(left, ", "), kw.Options().Namespace)
	}
	if err != nil {
		return cmdutil.SpellFlag(fmt.Errorf("deleting the workers: %w", err), nil)
	}
	return nil
}
