package chaos

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kplan-dev/kplan/internal/chaos"
	"github.com/kplan-dev/kplan/internal/chaos/chaosmesh"
	"github.com/kplan-dev/kplan/internal/chaos/remote"
	"github.com/kplan-dev/kplan/internal/cmdutil"
	"github.com/kplan-dev/kplan/internal/iostreams"
)

// This file is the only one of the command that knows the chaos-mesh
// killer (internal/chaos/chaosmesh): its flags, its killer and
// `kplan chaos cleanup`.

// MeshOptions configure the chaos-mesh killer.
type MeshOptions = chaosmesh.Options

// meshFlagNames are the chaos-mesh killer's own flags.
var meshFlagNames = []string{"kubeconfig", "context", "namespace", "action", "duration", "container", "pod-naming",
	"strimzi-cluster", "strimzi-pool", "bitnami-release", "bitnami-min-id", "statefulset", "statefulset-offset", "pod-template", "inject-timeout"}

// meshFlags are the chaos-mesh killer's raw flags.
type meshFlags struct {
	o MeshOptions
}

func (m *meshFlags) add(fs *pflag.FlagSet) {
	o := &m.o
	fs.StringVar(&o.Kubeconfig, "kubeconfig", "", "chaos-mesh: kubeconfig file (default: $KUBECONFIG, ~/.kube/config, or in-cluster)")
	fs.StringVar(&o.Context, "context", "", "chaos-mesh: kubeconfig context (default: the current one)")
	fs.StringVar(&o.Namespace, "namespace", "", "chaos-mesh: namespace of the broker pods and of the PodChaos")
	fs.StringVar(&o.Action, "action", "pod-kill", "chaos-mesh: pod-kill (grace period 0), pod-failure (with --duration) or container-kill (with --container)")
	fs.DurationVar(&o.Duration, "duration", 0, "chaos-mesh: how long pod-failure lasts")
	fs.StringVar(&o.Container, "container", "", "chaos-mesh: the container container-kill kills (e.g. kafka)")
	fs.StringVar(&o.PodNaming, "pod-naming", "", "chaos-mesh: how a broker id names its pod: strimzi, bitnami, statefulset or template")
	fs.StringVar(&o.StrimziCluster, "strimzi-cluster", "", "chaos-mesh, strimzi: the Kafka resource's name (pods {cluster}-{pool}-{id})")
	fs.StringVar(&o.StrimziPool, "strimzi-pool", "", "chaos-mesh, strimzi: the KafkaNodePool (default: found from the pods' labels when there is one broker pool)")
	fs.StringVar(&o.BitnamiRelease, "bitnami-release", "", "chaos-mesh, bitnami: the Helm release (pods {release}-broker-{id - min id})")
	fs.Int32Var(&o.BitnamiMinID, "bitnami-min-id", 100, "chaos-mesh, bitnami: the chart's broker.minId")
	fs.StringVar(&o.StatefulSet, "statefulset", "", "chaos-mesh, statefulset: the StatefulSet (pods {name}-{id - offset})")
	fs.Int32Var(&o.StatefulSetOffset, "statefulset-offset", 0, "chaos-mesh, statefulset: broker id of pod ordinal 0")
	fs.StringVar(&o.PodTemplate, "pod-template", "", "chaos-mesh, template: the pod's name with {id}, e.g. kafka-{id}")
	fs.DurationVar(&o.InjectTimeout, "inject-timeout", time.Minute, "chaos-mesh: longest wait for Chaos Mesh to report the injection")
}

// options checks the chaos-mesh flags.
func (m *meshFlags) options() (MeshOptions, error) {
	if err := m.o.Validate(); err != nil {
		return MeshOptions{}, err
	}
	return m.o, nil
}

// newMeshKiller builds the chaos-mesh killer of one run.
func newMeshKiller(o MeshOptions, runID string) (chaos.Killer, error) {
	o.RunID = runID
	return chaosmesh.New(o)
}

// meshFaulter returns the network faults of a chaos-mesh killer (its
// NetworkChaos), nil for any other killer.
func meshFaulter(k chaos.Killer) remote.NetFaulter {
	if mk, ok := k.(*chaosmesh.Killer); ok {
		return chaosmesh.NewNetworker(mk)
	}
	return nil
}

// CleanupOptions are the parsed flags of `kplan chaos cleanup`.
type CleanupOptions struct {
	IO   *iostreams.IOStreams
	Mesh MeshOptions
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
				return cmdutil.UsageErrorf("--namespace: required")
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
		return spell(err, flagName)
	}
	if len(deleted) == 0 {
		fmt.Fprintf(opts.IO.ErrOut, "nothing to delete in namespace %s\n", opts.Mesh.Namespace)
	}
	return nil
}
