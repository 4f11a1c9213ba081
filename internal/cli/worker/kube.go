package worker

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/kplan-dev/kplan/internal/chaos"
	"github.com/kplan-dev/kplan/internal/chaos/chaosmesh"
	"github.com/kplan-dev/kplan/internal/cmdutil"
	"github.com/kplan-dev/kplan/internal/errkind"
	"github.com/kplan-dev/kplan/internal/kafka"
)

// --workers-on kubernetes, for every coordinator (kplan chaos, kplan
// measure): kplan places the run's workers itself, as an Indexed Job
// (internal/chaos/chaosmesh's Workers), before the run, and deletes it at
// the end, on success, error and Ctrl-C. verb names the coordinator in
// the lines printed.

// Where the workers run, as --workers-on spells it.
const (
	OnNone       = "none"
	OnKubernetes = "kubernetes"
)

// NewKube completes o with the cluster's addresses (seeds) and client
// settings (conn: its client properties become portable files for the
// Secret) and builds the workers.
func NewKube(o chaosmesh.WorkersOptions, conn kafka.ConnOptions, seeds []string) (*chaosmesh.Workers, error) {
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

// WriteKubePlan prints what --workers-on kubernetes will create.
func WriteKubePlan(w io.Writer, verb string, kw *chaosmesh.Workers) {
	o := kw.Options()
	fmt.Fprintf(w, "%s: workers on Kubernetes, namespace %s: kplan creates before the run and deletes after it\n", verb, o.Namespace)
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
		args = append(args, ShellQuote(a))
	}
	fmt.Fprintf(w, "  job/%s  Indexed, %d pods of %s, each running (its index from $JOB_COMPLETION_INDEX):\n", job.Name, o.Workers, o.Image)
	fmt.Fprintf(w, "    kplan %s\n", strings.Join(args, " "))
	fmt.Fprintf(w, "  labelled %s=%s, %s=%s (kplan chaos cleanup --namespace %s deletes leftovers)\n",
		chaosmesh.ManagedByLabel, chaosmesh.ManagedByValue, chaosmesh.RunIDLabel, o.Run, o.Namespace)
}

// StartKube checks the Job and the Secret with a server-side dry run, then
// creates them.
func StartKube(ctx context.Context, errOut io.Writer, verb string, kw *chaosmesh.Workers) error {
	if err := kw.DryRun(ctx); err != nil {
		return cmdutil.SpellFlag(err, nil)
	}
	if err := kw.Create(ctx); err != nil {
		return cmdutil.SpellFlag(err, nil)
	}
	fmt.Fprintf(errOut, "%s: created %s\n", verb, strings.Join(kw.Created(), ", "))
	return nil
}

// KubeExitWait bounds the wait for the workers' pods to end on their own
// after a run that ended normally, before kplan deletes their Job.
const KubeExitWait = 20 * time.Second

// StopKube deletes the Job (its pods with it) and the Secret on a context
// Ctrl-C does not cancel, cut short by abort (the second Ctrl-C). After a
// run that ended normally (done), it first lets the workers exit on their
// own (at most KubeExitWait), so that none is stopped while it prints its
// summary.
func StopKube(ctx context.Context, errOut io.Writer, verb string, kw *chaosmesh.Workers, abort <-chan struct{}, done bool) error {
	cctx, cancel := chaos.CleanupContext(ctx, 0, abort)
	defer cancel()
	if done {
		if n := kw.WaitDone(cctx, KubeExitWait); n > 0 {
			fmt.Fprintf(errOut, "%s: %d of the workers' pods still running after %v: deleting them\n", verb, n, KubeExitWait)
		}
	}
	deleted, err := kw.Delete(cctx)
	if len(deleted) > 0 {
		fmt.Fprintf(errOut, "%s: deleted %s (the Job's pods with it)\n", verb, strings.Join(deleted, ", "))
	}
	if left := kw.Created(); len(left) > 0 {
		fmt.Fprintf(errOut, "%s: left behind: %s (kplan chaos cleanup --namespace %s)\n", verb, strings.Join(left, ", "), kw.Options().Namespace)
	}
	if err != nil {
		return cmdutil.SpellFlag(fmt.Errorf("deleting the workers: %w", err), nil)
	}
	return nil
}
