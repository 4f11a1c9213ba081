package chaos

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/kplan-dev/kplan/internal/chaos/chaosmesh"
	"github.com/kplan-dev/kplan/internal/cmdutil"
	"github.com/kplan-dev/kplan/internal/errkind"
	"github.com/kplan-dev/kplan/internal/iostreams"
)

// `kplan chaos cleanup` deletes what a killed chaos-mesh run left.

// CleanupOptions are the parsed flags of `kplan chaos cleanup`.
type CleanupOptions struct {
	IO   *iostreams.IOStreams
	Mesh chaosmesh.Options
}

// newCmdCleanup returns `kplan chaos cleanup`. runF replaces the run
// function in tests.
func newCmdCleanup(f *cmdutil.Factory, runF func(context.Context, *CleanupOptions) error) *cobra.Command {
	opts := &CleanupOptions{IO: f.IOStreams}
	cmd := &cobra.Command{
		Use:   "cleanup --namespace N",
		Short: "Delete the Kubernetes objects kplan chaos left behind",
		Long: `Delete every chaos object (PodChaos and NetworkChaos), and every workers'
Job (with its pods) and Secret, labelled app.kubernetes.io/managed-by=kplan
in --namespace: what a kplan chaos --killer chaos-mesh or --workers-on
kubernetes run leaves when it is killed before its own cleanup (kill -9, a
lost connection). It prints the objects it deleted. Jobs and Secrets are
skipped when the account may not list them (it could not have created
them either).`,
		Example: `  $ kplan chaos cleanup --namespace kafka
  $ kplan chaos cleanup --namespace kafka --kubeconfig ~/.kube/prod --context prod-eu`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if opts.Mesh.Namespace == "" {
				return errkind.Usagef("", "--namespace: required")
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runCleanup(cmd.Context(), opts)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&opts.Mesh.Kubeconfig, "kubeconfig", "", "kubeconfig file (default: $KUBECONFIG, ~/.kube/config, or in-cluster)")
	fs.StringVar(&opts.Mesh.Context, "context", "", "kubeconfig context (default: the current one)")
	fs.StringVar(&opts.Mesh.Namespace, "namespace", "", "namespace to clean (required)")
	return cmd
}

func runCleanup(ctx context.Context, opts *CleanupOptions) error {
	// The workers first: they need no Chaos Mesh, whose missing CRDs fail
	// the chaos objects' cleanup.
	var deleted []string
	var err error
	for _, clean := range []func(context.Context, chaosmesh.Options) ([]string, error){
		chaosmesh.CleanupWorkers, chaosmesh.Cleanup, chaosmesh.CleanupNetwork,
	} {
		var d []string
		d, err = clean(ctx, opts.Mesh)
		deleted = append(deleted, d...)
		if err != nil {
			break
		}
	}
	for _, d := range deleted {
		fmt.Fprintf(opts.IO.Out, "deleted %s\n", d)
	}
	if err != nil {
		return cmdutil.SpellFlag(err, nil)
	}
	if len(deleted) == 0 {
		fmt.Fprintf(opts.IO.ErrOut, "nothing to delete in namespace %s\n", opts.Mesh.Namespace)
	}
	return nil
}
