// Package chaosmesh is kplan's chaos-mesh killer: it kills one Kafka broker
// running in a Kubernetes pod by creating a Chaos Mesh PodChaos
// (chaos-mesh.org/v1alpha1) that names exactly that pod, built with Chaos
// Mesh's own Go types and created with controller-runtime's client.
//
// Before any kill it checks, reading only, that the pod exists, is Running
// and Ready, and is the broker asked for: Kafka's advertised host for the
// broker must name the pod (its name, its FQDN under a headless service, or
// its IP). It reads the kill time from the status Chaos Mesh writes.
//
// It also places a distributed run's workers on Kubernetes (Workers,
// workers.go): an Indexed Job of `kplan worker` pods and the Secret of
// their client properties, created before the run and deleted after it.
//
// This is the only product package that imports Kubernetes clients.
package chaosmesh

import (
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/kplan-dev/kplan/internal/errkind"
)

// Actions, as Chaos Mesh and --action spell them.
const (
	ActionPodKill       = "pod-kill"
	ActionPodFailure    = "pod-failure"
	ActionContainerKill = "container-kill"
)

// Pod namings, as --pod-naming spells them.
const (
	NamingStrimzi     = "strimzi"
	NamingBitnami     = "bitnami"
	NamingStatefulSet = "statefulset"
	NamingTemplate    = "template"
)

// Labels kplan puts on and reads from Kubernetes objects.
const (
	// ManagedByLabel marks every chaos object kplan creates; `kplan chaos
	// cleanup` deletes what carries it.
	ManagedByLabel = "app.kubernetes.io/managed-by"
	// ManagedByValue is ManagedByLabel's value.
	ManagedByValue = "kplan"
	// RunIDLabel carries the run id of the experiment that made the object.
	RunIDLabel = "kplan.dev/run-id"

	strimziClusterLabel = "strimzi.io/cluster"
	strimziPoolLabel    = "strimzi.io/pool-name"
	strimziBrokerLabel  = "strimzi.io/broker-role"
)

// Defaults.
const (
	DefaultInjectTimeout  = 60 * time.Second
	DefaultRestoreTimeout = 5 * time.Minute
	DefaultBitnamiMinID   = 100
)

// Options are the chaos-mesh killer's settings; field names are the flags'
// (the CLI spells them --kubeconfig, --context, --namespace, --action,
// --duration, --container, --pod-naming, --strimzi-cluster, --strimzi-pool,
// --bitnami-release, --bitnami-min-id, --statefulset, --statefulset-offset,
// --pod-template). Errors name fields in that spelling without the dashes.
type Options struct {
	// Kubeconfig and Context choose the cluster; "" means the default
	// loading rules (KUBECONFIG, ~/.kube/config), then in-cluster.
	Kubeconfig, Context string
	// Namespace is where the broker pods and the PodChaos live (required).
	Namespace string
	// Action is "pod-kill" (default), "pod-failure" or "container-kill".
	Action string
	// Duration is how long a pod-failure lasts (pod-failure only, required
	// there).
	Duration time.Duration
	// Container is the container a container-kill kills (required there).
	Container string
	// PodNaming maps a broker id to its pod: "strimzi" (default),
	// "bitnami", "statefulset" or "template".
	PodNaming string
	// StrimziCluster and StrimziPool name Strimzi's pods
	// {cluster}-{pool}-{id}; each is found from the pods' labels when ""
	// and only one exists among the broker pods.
	StrimziCluster, StrimziPool string
	// BitnamiRelease names Bitnami's pods {release}-broker-{id - minId}.
	BitnamiRelease string
	// BitnamiMinID is the chart's minId for brokers; 0 means 100, the
	// chart's default.
	BitnamiMinID int32
	// StatefulSet names pods {name}-{id - offset}.
	StatefulSet       string
	StatefulSetOffset int32
	// PodTemplate names pods by replacing {id}, e.g. "kafka-{id}".
	PodTemplate string
	// RunID names the PodChaos "kplan-<RunID>"; New makes one when "".
	RunID string
	// InjectTimeout is how long to wait for Chaos Mesh to report the
	// injection, and for a deleted PodChaos to go; 0 means 60s.
	InjectTimeout time.Duration
	// RestoreTimeout bounds Restore's wait for the pod to be Ready again;
	// 0 means 5 minutes.
	RestoreTimeout time.Duration
}

// withDefaults fills the zero values that have defaults.
func (o Options) withDefaults() Options {
	if o.Action == "" {
		o.Action = ActionPodKill
	}
	if o.PodNaming == "" {
		o.PodNaming = NamingStrimzi
	}
	if o.BitnamiMinID == 0 {
		o.BitnamiMinID = DefaultBitnamiMinID
	}
	if o.InjectTimeout == 0 {
		o.InjectTimeout = DefaultInjectTimeout
	}
	if o.RestoreTimeout == 0 {
		o.RestoreTimeout = DefaultRestoreTimeout
	}
	return o
}

// Validate checks the options without reaching Kubernetes; its errors are
// errkind.Usage errors naming the field ("namespace", "duration", ...).
func (o Options) Validate() error {
	o = o.withDefaults()
	if o.Namespace == "" {
		return errkind.Usagef("namespace", "the namespace of the broker pods is required")
	}
	if errs := validation.IsDNS1123Label(o.Namespace); len(errs) > 0 {
		return errkind.Usagef("namespace", "%q is not a namespace name: %s", o.Namespace, errs[0])
	}
	switch o.Action {
	case ActionPodKill, ActionContainerKill:
		if o.Duration != 0 {
			return errkind.Usagef("duration", "applies to action %s only, not %s", ActionPodFailure, o.Action)
		}
	case ActionPodFailure:
		if o.Duration <= 0 {
			return errkind.Usagef("duration", "action %s needs a positive duration, e.g. 2m", ActionPodFailure)
		}
	default:
		return errkind.Usagef("action", "%q is not an action: want %s, %s or %s", o.Action, ActionPodKill, ActionPodFailure, ActionContainerKill)
	}
	if o.Action == ActionContainerKill {
		if o.Container == "" {
			return errkind.Usagef("container", "action %s needs the container's name, e.g. kafka", ActionContainerKill)
		}
		if errs := validation.IsDNS1123Label(o.Container); len(errs) > 0 {
			return errkind.Usagef("container", "%q is not a container name: %s", o.Container, errs[0])
		}
	} else if o.Container != "" {
		return errkind.Usagef("container", "applies to action %s only, not %s", ActionContainerKill, o.Action)
	}
	if err := o.validateNaming(); err != nil {
		return err
	}
	if o.RunID != "" {
		if errs := validation.IsDNS1123Label("kplan-" + o.RunID); len(errs) > 0 {
			return errkind.Usagef("run-id", "%q cannot name a PodChaos kplan-%s: %s", o.RunID, o.RunID, errs[0])
		}
	}
	if o.InjectTimeout < 0 {
		return errkind.Usagef("inject-timeout", "must not be negative, got %s", o.InjectTimeout)
	}
	if o.RestoreTimeout < 0 {
		return errkind.Usagef("restore-timeout", "must not be negative, got %s", o.RestoreTimeout)
	}
	return nil
}

func (o Options) validateNaming() error {
	switch o.PodNaming {
	case NamingStrimzi:
		for _, f := range []struct{ field, v string }{{"strimzi-cluster", o.StrimziCluster}, {"strimzi-pool", o.StrimziPool}} {
			if f.v != "" {
				if errs := validation.IsDNS1123Label(f.v); len(errs) > 0 {
					return errkind.Usagef(f.field, "%q is not a Strimzi name: %s", f.v, errs[0])
				}
			}
		}
	case NamingBitnami:
		if o.BitnamiRelease == "" {
			return errkind.Usagef("bitnami-release", "pod naming %s needs the Helm release's name", NamingBitnami)
		}
		if errs := validation.IsDNS1123Label(o.BitnamiRelease); len(errs) > 0 {
			return errkind.Usagef("bitnami-release", "%q is not a release name: %s", o.BitnamiRelease, errs[0])
		}
		if o.BitnamiMinID < 0 {
			return errkind.Usagef("bitnami-min-id", "must not be negative, got %d", o.BitnamiMinID)
		}
	case NamingStatefulSet:
		if o.StatefulSet == "" {
			return errkind.Usagef("statefulset", "pod naming %s needs the StatefulSet's name", NamingStatefulSet)
		}
		if errs := validation.IsDNS1123Label(o.StatefulSet); len(errs) > 0 {
			return errkind.Usagef("statefulset", "%q is not a StatefulSet name: %s", o.StatefulSet, errs[0])
		}
		if o.StatefulSetOffset < 0 {
			return errkind.Usagef("statefulset-offset", "must not be negative, got %d", o.StatefulSetOffset)
		}
	case NamingTemplate:
		if o.PodTemplate == "" {
			return errkind.Usagef("pod-template", "pod naming %s needs a template with {id}, e.g. kafka-{id}", NamingTemplate)
		}
		if !strings.Contains(o.PodTemplate, "{id}") {
			return errkind.Usagef("pod-template", "%q has no {id}: every broker would map to the same pod", o.PodTemplate)
		}
		if errs := validation.IsDNS1123Subdomain(strings.ReplaceAll(o.PodTemplate, "{id}", "0")); len(errs) > 0 {
			return errkind.Usagef("pod-template", "%q does not make pod names: %s", o.PodTemplate, errs[0])
		}
	default:
		return errkind.Usagef("pod-naming", "%q is not a pod naming: want %s, %s, %s or %s", o.PodNaming, NamingStrimzi, NamingBitnami, NamingStatefulSet, NamingTemplate)
	}
	if o.PodTemplate != "" && o.PodNaming != NamingTemplate {
		return errkind.Usagef("pod-template", "applies to pod naming %s only, not %s", NamingTemplate, o.PodNaming)
	}
	return nil
}

// chaosName is the PodChaos's name for o.
func (o Options) chaosName() string { return "kplan-" + o.RunID }

// staticPodName maps a broker id to its pod for every naming but Strimzi's
// with an unknown cluster or pool (see Killer.podName).
func (o Options) staticPodName(id int32, cluster, pool string) (string, error) {
	var name string
	switch o.PodNaming {
	case NamingStrimzi:
		name = fmt.Sprintf("%s-%s-%d", cluster, pool, id)
	case NamingBitnami:
		if id < o.BitnamiMinID {
			return "", errkind.Usagef("bitnami-min-id", "broker %d is below the chart's minId %d, so it has no pod %s-broker-N", id, o.BitnamiMinID, o.BitnamiRelease)
		}
		name = fmt.Sprintf("%s-broker-%d", o.BitnamiRelease, id-o.BitnamiMinID)
	case NamingStatefulSet:
		if id < o.StatefulSetOffset {
			return "", errkind.Usagef("statefulset-offset", "broker %d is below the offset %d, so it has no pod %s-N", id, o.StatefulSetOffset, o.StatefulSet)
		}
		name = fmt.Sprintf("%s-%d", o.StatefulSet, id-o.StatefulSetOffset)
	case NamingTemplate:
		name = strings.ReplaceAll(o.PodTemplate, "{id}", fmt.Sprint(id))
	}
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return "", errkind.Usagef("pod-naming", "broker %d maps to %q, which is not a pod name: %s", id, name, errs[0])
	}
	return name, nil
}
