package target

import (
	"slices"

	"github.com/spf13/pflag"

	"github.com/kplan-dev/kplan/internal/chaos/chaosmesh"
	chaosexec "github.com/kplan-dev/kplan/internal/chaos/exec"
	"github.com/kplan-dev/kplan/internal/chaos/killers"
	"github.com/kplan-dev/kplan/internal/errkind"
)

// FlagKiller is --killer.
const FlagKiller = "killer"

// KillerFlags are --killer, --kill-timeout and each killer's own flags
// (exec's --kill-cmd and --restore-cmd, docker's --container-template and
// chaos-mesh's fifteen), declared once for every verb that kills a broker
// of a --bootstrap-server cluster (kplan chaos, kplan measure
// unavailability). They bind into Spec, which checks itself
// (killers.Spec.Validate); the group adds only what is about flags: a
// killer's own flag given with another killer.
type KillerFlags struct {
	Spec killers.Spec
}

// killerOwn maps each killer's own flags to its kind.
var killerOwn = map[string]string{
	"kill-cmd": killers.Exec, "restore-cmd": killers.Exec, "container-template": killers.Docker,
	"kubeconfig": killers.ChaosMesh, "context": killers.ChaosMesh, "namespace": killers.ChaosMesh, "action": killers.ChaosMesh,
	"duration": killers.ChaosMesh, "container": killers.ChaosMesh, "pod-naming": killers.ChaosMesh, "strimzi-cluster": killers.ChaosMesh,
	"strimzi-pool": killers.ChaosMesh, "bitnami-release": killers.ChaosMesh, "bitnami-min-id": killers.ChaosMesh, "statefulset": killers.ChaosMesh,
	"statefulset-offset": killers.ChaosMesh, "pod-template": killers.ChaosMesh, "inject-timeout": killers.ChaosMesh,
}

// KillerFlagNames are the group's flags: --killer, --kill-timeout, then
// the killers' own in name order.
func KillerFlagNames() []string {
	own := make([]string, 0, len(killerOwn))
	for n := range killerOwn {
		own = append(own, n)
	}
	slices.Sort(own)
	return append([]string{FlagKiller, killers.FieldKillTimeout}, own...)
}

// AddFlags declares the group on fs, bound to k.Spec. restoreNote says
// when the verb needs --restore-cmd (the parenthesis of its help).
func (k *KillerFlags) AddFlags(fs *pflag.FlagSet, restoreNote string) {
	s := &k.Spec
	fs.StringVar(&s.Kind, FlagKiller, "", "how to kill a broker of a --bootstrap-server cluster: chaos-mesh, docker or exec")
	fs.DurationVar(&s.Timeout, killers.FieldKillTimeout, chaosexec.DefaultTimeout, "exec, docker: longest run of each kill, restore or docker command")
	fs.StringVar(&s.Exec.KillCmd, "kill-cmd", "", "exec: command that kills a broker, run with sh -c; {id}, {host}, {port} are the broker's id and advertised address")
	fs.StringVar(&s.Exec.RestoreCmd, "restore-cmd", "", "exec: command that brings a killed broker back ("+restoreNote+")")
	fs.StringVar(&s.Docker.ContainerTemplate, "container-template", "", "docker: the broker's container, e.g. kafka-{id}")
	o := &s.Mesh
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

// Options checks the group (the spec itself, then a killer's own flag
// given with another kind) and returns the spec with its timeout in the
// exec and docker options. given says whether a flag was set (on the
// command line or in a file); where spells it (the flag, or the file line
// that set it). The spec's own errors name their field (errkind), for the
// verb to spell as it spells its other fields; the others exit 2 and name
// the flag.
func (k *KillerFlags) Options(given func(string) bool, where func(string) string) (killers.Spec, error) {
	s := k.Spec.WithTimeout()
	if err := s.Validate(); err != nil {
		return s, err
	}
	for _, n := range KillerFlagNames()[2:] {
		if kind := killerOwn[n]; kind != s.Kind && given(n) {
			return s, errkind.Usagef("", "%s: only with --killer %s", where(n), kind)
		}
	}
	return s, nil
}
