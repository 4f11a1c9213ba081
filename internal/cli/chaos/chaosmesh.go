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
		Short: "Delete the Chaos Mesh objects kplan chaos left behind",
		Long: `Delete every chaos object (PodChaos and NetworkChaos) labelled
app.kubernetes.io/managed-by=kplan in --namespace: what a kplan chaos --killer chaos-mesh run leaves when it is
killed before its own cleanup (kill -9, a lost connection). It prints the
objects it deleted.`,
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
	deleted, err := chaosmesh.Cleanup(ctx, opts.Mesh)
	if err == nil {
		var net []string
		net, err = chaosmesh.CleanupNetwork(ctx, opts.Mesh)
		deleted = append(deleted, net...)
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
