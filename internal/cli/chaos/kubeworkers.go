package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/kplan-dev/kplan/internal/chaos"
	"github.com/kplan-dev/kplan/internal/chaos/chaosmesh"
	chaoslab "github.com/kplan-dev/kplan/internal/chaos/lab"
	"github.com/kplan-dev/kplan/internal/cli/worker"
	"github.com/kplan-dev/kplan/internal/cmdutil"
	"github.com/kplan-dev/kplan/internal/errkind"
	"github.com/kplan-dev/kplan/internal/report"
)

// --workers-on kubernetes: kplan places the run's workers itself, as an
// Indexed Job (internal/chaos/chaosmesh's Workers), before the run, and
// deletes it at the end, on success, error and Ctrl-C.

// Where the workers run, as --workers-on spells it.
const (
	workersOnNone       = worker.OnNone
	workersOnKubernetes = worker.OnKubernetes
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
	return worker.NewKube(o, conn, seeds)
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
