package chaosmesh

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/chaos-mesh/chaos-mesh/api/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/kplan-dev/kplan/internal/chaos"
	"github.com/kplan-dev/kplan/internal/errkind"
)

// This file is the chaos-mesh killer's network faults (kplan chaos
// --fault): a NetworkChaos per fault, with the PodChaos's lifecycle.

// networkResource names the resource in errors.
const networkResource = "networkchaos"

// NetworkManifest returns the NetworkChaos that injects f into pod, as kplan
// creates it: named kplan-<RunID> (generateName kplan- when RunID is ""),
// labelled managed by kplan, in mode one with the pod named explicitly, and
// already defaulted and validated by Chaos Mesh's own webhook methods.
//
// A delay, a loss or a bandwidth cap applies to every packet the broker's pod sends
// (direction "to" with no target: the replies to its clients and to its
// followers, and its own fetches, all leave late or not at all), which is
// what a slow or lossy broker is to the rest of the cluster. A partition
// cuts the pod off from others, the other broker pods, in both
// directions: Chaos Mesh's partition needs a target, and the brokers are
// the pods kplan knows; clients outside those pods still reach it.
func NetworkManifest(o Options, f chaos.Fault, pod string, others []string) (*v1alpha1.NetworkChaos, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	o = o.withDefaults()
	if pod == "" {
		return nil, errkind.Usagef("pod", "the pod to hurt is required")
	}
	nc := &v1alpha1.NetworkChaos{
		TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: v1alpha1.KindNetworkChaos},
		ObjectMeta: metav1.ObjectMeta{
			Namespace: o.Namespace,
			Labels:    map[string]string{ManagedByLabel: ManagedByValue},
		},
		Spec: v1alpha1.NetworkChaosSpec{
			PodSelector: v1alpha1.PodSelector{
				Mode:     v1alpha1.OneMode,
				Selector: v1alpha1.PodSelectorSpec{Pods: map[string][]string{o.Namespace: {pod}}},
			},
			Direction: v1alpha1.To,
		},
	}
	if o.RunID == "" {
		nc.GenerateName = "kplan-"
	} else {
		nc.Name = o.chaosName()
		nc.Labels[RunIDLabel] = o.RunID
	}
	switch f.Kind {
	case chaos.FaultDelay:
		if f.Delay <= 0 || f.Jitter < 0 {
			return nil, errkind.Usagef(chaos.FieldFault, "%s: a delay must be positive and a jitter not negative", f)
		}
		nc.Spec.Action = v1alpha1.DelayAction
		nc.Spec.Delay = &v1alpha1.DelaySpec{Latency: meshDuration(f.Delay), Jitter: meshDuration(f.Jitter)}
	case chaos.FaultLoss:
		if !(f.Loss > 0 && f.Loss <= 1) {
			return nil, errkind.Usagef(chaos.FieldFault, "%s: want a loss above 0%% and at most 100%%", f)
		}
		nc.Spec.Action = v1alpha1.LossAction
		nc.Spec.Loss = &v1alpha1.LossSpec{Loss: meshPercent(f.Loss)}
	case chaos.FaultPartition:
		if len(others) == 0 {
			return nil, errkind.Usagef(chaos.FieldFault, "%s: a partition needs other broker pods to cut the broker off from", f)
		}
		nc.Spec.Action = v1alpha1.PartitionAction
		nc.Spec.Direction = v1alpha1.Both
		nc.Spec.Target = &v1alpha1.PodSelector{
			Mode:     v1alpha1.AllMode,
			Selector: v1alpha1.PodSelectorSpec{Pods: map[string][]string{o.Namespace: slices.Sorted(slices.Values(others))}},
		}
	case chaos.FaultBandwidth:
		if f.Rate < chaos.MinFaultRate {
			return nil, errkind.Usagef(chaos.FieldFault, "%s: want a rate of at least %d bytes/s", f, chaos.MinFaultRate)
		}
		nc.Spec.Action = v1alpha1.BandwidthAction
		nc.Spec.Bandwidth = &v1alpha1.BandwidthSpec{Rate: meshRate(f.Rate), Limit: meshBandwidthLimit, Buffer: meshBandwidthBuffer}
	case chaos.FaultCPU:
		return nil, errkind.Usagef(chaos.FieldFault, "%s: a CPU cap is the lab's only (a cgroup for the broker's JVM); Chaos Mesh's NetworkChaos cannot cap CPU and its StressChaos adds load instead: use bandwidth or delay on Kubernetes", f)
	default:
		return nil, errkind.Usagef(chaos.FieldFault, "unknown fault %q (want delay, loss, partition or bandwidth)", f.Kind)
	}
	if err := nc.Default(context.Background(), nc); err != nil {
		return nil, fmt.Errorf("chaos mesh's defaults for the NetworkChaos: %w", err)
	}
	if _, err := nc.ValidateCreate(context.Background(), nc); err != nil {
		return nil, errkind.Wrap(errkind.Usage, chaos.FieldFault, fmt.Errorf("chaos mesh's validation refuses the NetworkChaos: %w", err))
	}
	return nc, nil
}

// meshDuration spells d as Chaos Mesh's duration pattern takes it
// (^[0-9]+(\.[0-9]+)?(ns|us|ms|s|m|h)$, which Go's "1m30s" does not match):
// in milliseconds.
func meshDuration(d time.Duration) string {
	return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', -1, 64) + "ms"
}

// A bandwidth cap's token bucket (tc tbf under Chaos Mesh): a queue of
// 20 MiB before packets drop, and a burst of 64 KiB, one loopback-sized
// segment, so the cap holds at millisecond scale.
const (
	meshBandwidthLimit  = 20 << 20
	meshBandwidthBuffer = 64 << 10
)

// meshRate spells a rate in bytes/s as Chaos Mesh's bandwidth rate ("bps"
// is bytes per second there, as tc spells it).
func meshRate(bytesPerS int64) string {
	return strconv.FormatInt(bytesPerS, 10) + "bps"
}

// meshPercent spells a share as Chaos Mesh's percentage string, to 1e-4 %.
func meshPercent(x float64) string {
	return strconv.FormatFloat(math.Round(x*100*1e4)/1e4, 'f', -1, 64)
}

// NetworkManifestYAML renders nc as YAML as kubectl would take it: without
// status and server-set metadata.
func NetworkManifestYAML(nc *v1alpha1.NetworkChaos) (string, error) {
	c := nc.DeepCopy()
	c.Status = v1alpha1.NetworkChaosStatus{}
	c.ResourceVersion, c.UID, c.Generation = "", "", 0
	c.CreationTimestamp = metav1.Time{}
	c.ManagedFields = nil
	if c.APIVersion == "" || c.Kind == "" {
		c.APIVersion, c.Kind = v1alpha1.SchemeGroupVersion.String(), v1alpha1.KindNetworkChaos
	}
	j, err := yaml.Marshal(c)
	if err != nil {
		return "", fmt.Errorf("encode the NetworkChaos: %w", err)
	}
	var m map[string]any
	if err := yaml.Unmarshal(j, &m); err != nil {
		return "", fmt.Errorf("encode the NetworkChaos: %w", err)
	}
	delete(m, "status")
	if md, ok := m["metadata"].(map[string]any); ok {
		delete(md, "creationTimestamp")
	}
	out, err := yaml.Marshal(m)
	if err != nil {
		return "", fmt.Errorf("encode the NetworkChaos: %w", err)
	}
	return string(out), nil
}

// Networker injects network faults through Chaos Mesh with a Killer's
// client, options and log: a NetworkChaos per fault, created, watched until
// Chaos Mesh records the injection, and deleted (by its exact name) on
// ClearFault and at cleanup. It implements remote.NetFaulter. ClearFault
// and Log are safe to call from another goroutine.
type Networker struct {
	k *Killer

	mu    sync.Mutex
	seq   int      // NetworkChaos names handed out
	owned []string // NetworkChaos that may exist because Inject created them
}

// NewNetworker returns the network faults of k's cluster.
func NewNetworker(k *Killer) *Networker { return &Networker{k: k} }

// nameFor is the n-th NetworkChaos's name: kplan-<RunID>, then -2, ...
func (n *Networker) nameFor(i int) string { return n.k.chaosNameFor(i) }

// pods checks b's pod (exists, runs, is b) and names the other brokers'
// pods, for a partition's target; those must exist.
func (n *Networker) pods(ctx context.Context, b chaos.Broker, others []chaos.Broker, f chaos.Fault) (string, []string, error) {
	pod, err := n.k.check(ctx, b)
	if err != nil {
		return "", nil, err
	}
	if f.Kind != chaos.FaultPartition {
		return pod.Name, nil, nil
	}
	var names []string
	for _, o := range others {
		if o.ID == b.ID {
			continue
		}
		name, err := n.k.podName(ctx, o.ID)
		if err != nil {
			return "", nil, err
		}
		var p corev1.Pod
		if err := n.k.c.Get(ctx, client.ObjectKey{Namespace: n.k.o.Namespace, Name: name}, &p); err != nil {
			if apierrors.IsNotFound(err) {
				return "", nil, errkind.Refusedf("", "broker %d's pod %s/%s does not exist: the partition's target would miss it", o.ID, n.k.o.Namespace, name)
			}
			return "", nil, n.k.kerr(err, "get", "pods")
		}
		names = append(names, name)
	}
	sort.Strings(names)
	return pod.Name, names, nil
}

func (n *Networker) manifest(f chaos.Fault, pod string, others []string, i int) (*v1alpha1.NetworkChaos, error) {
	nc, err := NetworkManifest(n.k.o, f, pod, others)
	if err != nil {
		return nil, err
	}
	nc.Name = n.nameFor(i)
	return nc, nil
}

// PlanFault checks b's pod (and for a partition the other brokers' pods)
// and asks the API server, with a server-side dry run, whether it would
// take the NetworkChaos. It returns the manifest as YAML and the steps.
func (n *Networker) PlanFault(ctx context.Context, b chaos.Broker, others []chaos.Broker, f chaos.Fault) (chaos.KillPlan, error) {
	pod, targets, err := n.pods(ctx, b, others, f)
	if err != nil {
		return chaos.KillPlan{}, err
	}
	n.mu.Lock()
	i := n.seq
	n.mu.Unlock()
	nc, err := n.manifest(f, pod, targets, i)
	if err != nil {
		return chaos.KillPlan{}, err
	}
	ns := n.k.o.Namespace
	err = n.k.c.Get(ctx, client.ObjectKeyFromObject(nc), &v1alpha1.NetworkChaos{})
	switch {
	case err == nil:
		return chaos.KillPlan{}, errkind.Refusedf("", "a NetworkChaos %s/%s already exists: remove it with kplan chaos cleanup", ns, nc.Name)
	case !apierrors.IsNotFound(err):
		return chaos.KillPlan{}, n.k.kerr(err, "get", networkResource)
	}
	if err := n.k.c.Create(ctx, nc.DeepCopy(), client.DryRunAll); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return chaos.KillPlan{}, errkind.Refusedf("", "a NetworkChaos %s/%s already exists: remove it with kplan chaos cleanup", ns, nc.Name)
		}
		return chaos.KillPlan{}, n.k.kerr(err, "create", networkResource)
	}
	y, err := NetworkManifestYAML(nc)
	if err != nil {
		return chaos.KillPlan{}, err
	}
	ref := ns + "/" + pod
	what := f.Describe(b.ID) + ": every packet pod " + ref + " sends"
	if f.Kind == chaos.FaultPartition {
		what = fmt.Sprintf("partition pod %s from the other broker pods (%s), both directions", ref, strings.Join(targets, ", "))
	}
	return chaos.KillPlan{
		Target: "pod " + ref,
		Steps: []string{
			fmt.Sprintf("create NetworkChaos %s/%s (%s) selecting only pod %s, mode one", ns, nc.Name, what, ref),
			fmt.Sprintf("wait up to %s for Chaos Mesh to report the injection (AllInjected=True)", n.k.o.InjectTimeout),
			fmt.Sprintf("clear: delete NetworkChaos %s/%s so Chaos Mesh recovers the pod's network, at the restore, at the end, on error and on Ctrl-C", ns, nc.Name),
		},
		Manifest: y,
	}, nil
}

// InjectFault creates the NetworkChaos for f on b's pod and waits until
// Chaos Mesh reports it injected; it returns the Apply time of its record.
func (n *Networker) InjectFault(ctx context.Context, b chaos.Broker, others []chaos.Broker, f chaos.Fault) (time.Time, error) {
	pod, targets, err := n.pods(ctx, b, others, f)
	if err != nil {
		return time.Time{}, err
	}
	n.mu.Lock()
	i := n.seq
	n.mu.Unlock()
	nc, err := n.manifest(f, pod, targets, i)
	if err != nil {
		return time.Time{}, err
	}
	// Remembered before the create, so ClearFault deletes it even when
	// Ctrl-C cuts the call after the API server has taken it.
	n.mu.Lock()
	n.seq++
	n.owned = append(n.owned, nc.Name)
	n.mu.Unlock()
	ns := n.k.o.Namespace
	start := n.k.now()
	if err := n.k.c.Create(ctx, nc); err != nil {
		if notCreated(err) {
			n.disown(nc.Name)
		}
		if apierrors.IsAlreadyExists(err) {
			return time.Time{}, errkind.Refusedf("", "a NetworkChaos %s/%s already exists: remove it with kplan chaos cleanup", ns, nc.Name)
		}
		return time.Time{}, n.k.kerr(err, "create", networkResource)
	}
	n.k.logf("created NetworkChaos %s/%s: %s on pod %s/%s", ns, nc.Name, f, ns, pod)
	return n.waitInjected(ctx, nc.Name, pod, start)
}

func (n *Networker) disown(name string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.owned = slices.DeleteFunc(n.owned, func(s string) bool { return s == name })
}

// waitInjected polls the NetworkChaos until Chaos Mesh reports AllInjected
// with an Apply record for pod, Selected=False lasts, or the timeout passes;
// the failures Chaos Mesh records (e.g. no chaos-daemon on the node) are
// logged and named in the error.
func (n *Networker) waitInjected(ctx context.Context, name, pod string, start time.Time) (time.Time, error) {
	k := n.k
	ref := k.o.Namespace + "/" + name
	deadline := start.Add(k.o.InjectTimeout)
	var unselectedSince time.Time
	lastFailure, phase := "", ""
	for {
		var nc v1alpha1.NetworkChaos
		if err := k.c.Get(ctx, client.ObjectKey{Namespace: k.o.Namespace, Name: name}, &nc); err != nil {
			if apierrors.IsNotFound(err) {
				return time.Time{}, errkind.New(errkind.Runtime, "", "NetworkChaos %s disappeared before Chaos Mesh reported the injection", ref)
			}
			return time.Time{}, k.kerr(err, "get", networkResource)
		}
		now := k.now()
		applied, failure := statusApply(&nc.Status.ChaosStatus, k.o.Namespace+"/"+pod)
		if ph := recordPhase(&nc.Status.ChaosStatus, k.o.Namespace+"/"+pod); ph != "" {
			phase = ph
		}
		if failure != "" && failure != lastFailure {
			lastFailure = failure
			k.logf("Chaos Mesh failed to inject NetworkChaos %s: %s", ref, failure)
		}
		if statusCondition(&nc.Status.ChaosStatus, v1alpha1.ConditionAllInjected) == corev1.ConditionTrue && !applied.IsZero() {
			k.logf("Chaos Mesh injected NetworkChaos %s into pod %s/%s at %s (kplan saw it %s after the create)",
				ref, k.o.Namespace, pod, applied.UTC().Format(time.RFC3339), now.Sub(start).Round(time.Millisecond))
			return clampTime(applied, start, now), nil
		}
		if statusCondition(&nc.Status.ChaosStatus, v1alpha1.ConditionSelected) == corev1.ConditionFalse {
			if unselectedSince.IsZero() {
				unselectedSince = now
			}
			if now.Sub(unselectedSince) >= k.selectGrace {
				return time.Time{}, errkind.New(errkind.Runtime, "", "Chaos Mesh selected no pod for NetworkChaos %s (Selected=False): it did not find pod %s/%s", ref, k.o.Namespace, pod)
			}
		} else {
			unselectedSince = time.Time{}
		}
		if !now.Before(deadline) {
			why := "is chaos-controller-manager running?"
			switch {
			case lastFailure != "":
				why = "its last failure: " + lastFailure
			case phase != "":
				why = fmt.Sprintf("its record of pod %s/%s stays %q: chaos-daemon applies a NetworkChaos on the pod's node; is it running there?", k.o.Namespace, pod, phase)
			}
			return time.Time{}, errkind.New(errkind.Runtime, "", "Chaos Mesh did not report the injection of NetworkChaos %s within %s (%s)", ref, k.o.InjectTimeout, why)
		}
		if err := k.sleep(ctx); err != nil {
			return time.Time{}, fmt.Errorf("wait for Chaos Mesh to inject NetworkChaos %s: %w", ref, err)
		}
	}
}

// ClearFault deletes every NetworkChaos this networker created, by name,
// and waits until Chaos Mesh has let each go (its finalizer recovers the
// pod's network first). It is idempotent.
func (n *Networker) ClearFault(ctx context.Context) error {
	n.mu.Lock()
	names := slices.Clone(n.owned)
	n.mu.Unlock()
	return networkChaosKind.deleteOwned(ctx, n.k, names, n.disown)
}

// Owned returns the NetworkChaos names that may still exist.
func (n *Networker) Owned() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.Clone(n.owned)
}

// CleanupNetwork deletes every kplan-managed NetworkChaos in o.Namespace
// (`kplan chaos cleanup`, next to Cleanup's PodChaos) and returns their
// names as "networkchaos/NAME".
func CleanupNetwork(ctx context.Context, o Options) ([]string, error) {
	return cleanupFromOptions(ctx, o, cleanupNetworkWith)
}

// CleanupNetworkWithClient is CleanupNetwork with a client already built.
func CleanupNetworkWithClient(ctx context.Context, c client.Client, namespace string) ([]string, error) {
	return cleanupWithBuiltClient(ctx, c, namespace, cleanupNetworkWith)
}

func cleanupNetworkWith(ctx context.Context, c client.Client, host, ns string, timeout, poll time.Duration) ([]string, error) {
	names, err := networkChaosKind.cleanup(ctx, c, host, ns, timeout, poll)
	var done []string
	for _, name := range names {
		done = append(done, "networkchaos/"+name)
	}
	return done, err
}

// recordPhase is the phase of Chaos Mesh's record of pod, "" when none.
func recordPhase(st *v1alpha1.ChaosStatus, pod string) string {
	for _, r := range st.Experiment.Records {
		if r != nil && r.Id == pod {
			return string(r.Phase)
		}
	}
	return ""
}

// statusCondition is a chaos object's condition of type typ.
func statusCondition(st *v1alpha1.ChaosStatus, typ v1alpha1.ChaosConditionType) corev1.ConditionStatus {
	for _, c := range st.Conditions {
		if c.Type == typ {
			return c.Status
		}
	}
	return corev1.ConditionUnknown
}

// statusApply returns the earliest successful Apply event of the records
// for pod ("ns/name", or with a suffix), and the message of the latest
// failed one.
func statusApply(st *v1alpha1.ChaosStatus, pod string) (time.Time, string) {
	var at time.Time
	failure := ""
	for _, r := range st.Experiment.Records {
		if r == nil || (r.Id != pod && !strings.HasPrefix(r.Id, pod+"/")) {
			continue
		}
		for _, e := range r.Events {
			if e.Operation != v1alpha1.Apply || e.Timestamp == nil {
				continue
			}
			switch e.Type {
			case v1alpha1.TypeSucceeded:
				if at.IsZero() || e.Timestamp.Time.Before(at) {
					at = e.Timestamp.Time
				}
			case v1alpha1.TypeFailed:
				failure = e.Message
			}
		}
	}
	return at, failure
}
