package measure

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kplan-dev/kplan/internal/chaos"
	"github.com/kplan-dev/kplan/internal/chaos/chaosmesh"
	"github.com/kplan-dev/kplan/internal/chaos/docker"
	chaosexec "github.com/kplan-dev/kplan/internal/chaos/exec"
	clitarget "github.com/kplan-dev/kplan/internal/cli/target"
	"github.com/kplan-dev/kplan/internal/cmdutil"
)

// This file spells the chaos backends' killers as `kplan chaos` does
// (--killer exec|docker|chaos-mesh and each one's flags), for a cluster
// reached by --bootstrap-server.

// Killer kinds, as --killer spells them.
const (
	unavailKillerExec   = chaosexec.Name
	unavailKillerDocker = docker.Name
	unavailKillerMesh   = "chaos-mesh"
	unavailKillerKinds  = "chaos-mesh, docker or exec"
)

// UnavailKiller is a remote cluster's killer, checked.
type UnavailKiller struct {
	Kind   string
	Exec   chaosexec.Options
	Docker docker.Options
	Mesh   chaosmesh.Options
}

// New builds the killer.
func (k *UnavailKiller) New() (chaos.Killer, error) {
	switch k.Kind {
	case unavailKillerExec:
		return chaosexec.New(k.Exec)
	case unavailKillerDocker:
		return docker.New(k.Docker)
	}
	o := k.Mesh
	o.RunID = strconv.FormatInt(time.Now().Unix(), 36) + strconv.FormatUint(rand.Uint64()%(36*36*36*36), 36) //nolint:gosec // a name, not a secret
	return chaosmesh.New(o)
}

// unavailKillerFlags are the raw flags.
type unavailKillerFlags struct {
	bootstrap, killer, killCmd, restoreCmd, containerTemplate string
	killTimeout                                               time.Duration
	mesh                                                      chaosmesh.Options
}

// unavailMeshFlags are the chaos-mesh killer's own flags.
var unavailMeshFlags = []string{"kubeconfig", "context", "namespace", "action", "duration", "container", "pod-naming",
	"strimzi-cluster", "strimzi-pool", "bitnami-release", "bitnami-min-id", "statefulset", "statefulset-offset", "pod-template", "inject-timeout"}

func (k *unavailKillerFlags) add(fs *pflag.FlagSet) {
	clitarget.BootstrapVar(fs, &k.bootstrap, "with --killer and --yes; --command-config for TLS and SASL")
	fs.StringVar(&k.killer, "killer", "", "how to kill a broker of a --bootstrap-server cluster: chaos-mesh, docker or exec")
	fs.DurationVar(&k.killTimeout, "kill-timeout", chaosexec.DefaultTimeout, "exec, docker: longest run of each kill, restore or docker command")
	fs.StringVar(&k.killCmd, "kill-cmd", "", "exec: command that kills a broker, run with sh -c; {id}, {host}, {port} are the broker's id and advertised address")
	fs.StringVar(&k.restoreCmd, "restore-cmd", "", "exec: command that brings a killed broker back (required: every kill is restored)")
	fs.StringVar(&k.containerTemplate, "container-template", "", "docker: the broker's container, e.g. kafka-{id}")
	o := &k.mesh
	fs.StringVar(&o.Kubeconfig, "kubeconfig", "", "chaos-mesh: kubeconfig file (default: $KUBECONFIG, ~/.kube/config, or in-cluster)")
	fs.StringVar(&o.Context, "context", "", "chaos-mesh: kubeconfig context (default: the current one)")
	fs.StringVar(&o.Namespace, "namespace", "", "chaos-mesh: namespace of the broker pods and of the PodChaos")
	fs.StringVar(&o.Action, "action", chaosmesh.ActionPodKill, "chaos-mesh: pod-kill (grace period 0), pod-failure (with --duration) or container-kill (with --container)")
	fs.DurationVar(&o.Duration, "duration", 0, "chaos-mesh: how long pod-failure lasts")
	fs.StringVar(&o.Container, "container", "", "chaos-mesh: the container container-kill kills (e.g. kafka)")
	fs.StringVar(&o.PodNaming, "pod-naming", "", "chaos-mesh: how a broker id names its pod: strimzi, bitnami, statefulset or template")
	fs.StringVar(&o.StrimziCluster, "strimzi-cluster", "", "chaos-mesh, strimzi: the Kafka resource's name (pods {cluster}-{pool}-{id})")
	fs.StringVar(&o.StrimziPool, "strimzi-pool", "", "chaos-mesh, strimzi: the KafkaNodePool (default: found from the pods' labels when there is one broker pool)")
	fs.StringVar(&o.BitnamiRelease, "bitnami-release", "", "chaos-mesh, bitnami: the Helm release (pods {release}-broker-{id - min id})")
	fs.Int32Var(&o.BitnamiMinID, "bitnami-min-id", chaosmesh.DefaultBitnamiMinID, "chaos-mesh, bitnami: the chart's broker.minId")
	fs.StringVar(&o.StatefulSet, "statefulset", "", "chaos-mesh, statefulset: the StatefulSet (pods {name}-{id - offset})")
	fs.Int32Var(&o.StatefulSetOffset, "statefulset-offset", 0, "chaos-mesh, statefulset: broker id of pod ordinal 0")
	fs.StringVar(&o.PodTemplate, "pod-template", "", "chaos-mesh, template: the pod's name with {id}, e.g. kafka-{id}")
	fs.DurationVar(&o.InjectTimeout, "inject-timeout", chaosmesh.DefaultInjectTimeout, "chaos-mesh: longest wait for Chaos Mesh to report the injection")
}

// kindOf maps each killer's own flags to its kind.
func (k *unavailKillerFlags) kindOf() map[string]string {
	m := map[string]string{"kill-cmd": unavailKillerExec, "restore-cmd": unavailKillerExec, "container-template": unavailKillerDocker}
	for _, n := range unavailMeshFlags {
		m[n] = unavailKillerMesh
	}
	return m
}

// noneGiven refuses killer flags on the lab, which kills its own brokers.
func (k *unavailKillerFlags) noneGiven(cmd *cobra.Command) error {
	names := []string{"killer", "kill-timeout", "yes"}
	for n := range k.kindOf() {
		names = append(names, n)
	}
	slices.Sort(names[3:])
	for _, n := range names {
		if cmd.Flags().Changed(n) {
			return cmdutil.UsageErrorf("--%s: needs --bootstrap-server (the lab kills its own brokers)", n)
		}
	}
	return nil
}

// options checks the killer flags of a --bootstrap-server run.
func (k *unavailKillerFlags) options(cmd *cobra.Command) (*UnavailKiller, error) {
	if k.killTimeout <= 0 {
		return nil, cmdutil.UsageErrorf("--kill-timeout: must be positive, got %v", k.killTimeout)
	}
	o := &UnavailKiller{Kind: k.killer}
	var err error
	switch k.killer {
	case "":
		return nil, cmdutil.UsageErrorf("--killer: required with --bootstrap-server (%s)", unavailKillerKinds)
	case unavailKillerExec:
		o.Exec = chaosexec.Options{KillCmd: k.killCmd, RestoreCmd: k.restoreCmd, Timeout: k.killTimeout}
		err = o.Exec.Validate()
		if err == nil && strings.TrimSpace(k.restoreCmd) == "" {
			return nil, cmdutil.UsageErrorf("--restore-cmd: required with --killer exec (every kill is restored before the next)")
		}
	case unavailKillerDocker:
		o.Docker = docker.Options{ContainerTemplate: k.containerTemplate, Timeout: k.killTimeout}
		err = o.Docker.Validate()
	case unavailKillerMesh:
		o.Mesh = k.mesh
		err = o.Mesh.Validate()
	default:
		return nil, cmdutil.UsageErrorf("--killer: unknown killer %q (want %s)", k.killer, unavailKillerKinds)
	}
	if err != nil {
		return nil, cmdutil.Usage(unavailSpell(err))
	}
	for n, kind := range k.kindOf() {
		if kind != k.killer && cmd.Flags().Changed(n) {
			return nil, cmdutil.UsageErrorf("--%s: only with --killer %s", n, kind)
		}
	}
	return o, nil
}
