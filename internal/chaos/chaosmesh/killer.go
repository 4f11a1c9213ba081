package chaosmesh

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/chaos-mesh/chaos-mesh/api/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kplan-dev/kplan/internal/chaos"
	"github.com/kplan-dev/kplan/internal/errkind"
)

// Name is the killer's kind as --killer spells it.
const Name = "chaos-mesh"

const (
	defaultPoll = 250 * time.Millisecond
	// defaultSelectGrace is how long Selected=False must last before it
	// counts: Chaos Mesh's condition controller may write it before its
	// records controller has selected the pod.
	defaultSelectGrace = 3 * time.Second
)

// Killer kills brokers through Chaos Mesh; it implements chaos.Killer. Use
// it from one goroutine at a time, except Cleanup and Log, which are safe
// to call from a signal handler's goroutine.
type Killer struct {
	o    Options
	c    client.Client
	host string // the API server, for errors

	poll        time.Duration
	selectGrace time.Duration
	now         func() time.Time

	strimziCluster, strimziPool string // found from the pods' labels

	mu    sync.Mutex
	log   []string
	seq   int      // PodChaos names handed out, for the next one's suffix
	owned []string // PodChaos that may exist because Kill created them; Cleanup deletes them
	kills map[int32]killed
}

// killed is what Kill remembers of a broker for Restore.
type killed struct {
	pod      string
	uid      types.UID
	restarts int32 // of the killed container, for container-kill
	chaos    string
}

var _ chaos.Killer = (*Killer)(nil)

// New validates o and builds the client from the kubeconfig, context or
// in-cluster account; it does not reach the API server yet.
func New(o Options) (*Killer, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	c, host, err := newClient(o)
	if err != nil {
		return nil, err
	}
	k, err := NewWithClient(o, c)
	if err != nil {
		return nil, err
	}
	k.host = host
	return k, nil
}

// NewWithClient is New with a client already built (a fake one in tests).
// The client's scheme must know core/v1 and chaos-mesh.org/v1alpha1 (see
// Scheme).
func NewWithClient(o Options, c client.Client) (*Killer, error) {
	quiet()
	if err := o.Validate(); err != nil {
		return nil, err
	}
	o = o.withDefaults()
	if o.RunID == "" {
		var b [4]byte
		if _, err := rand.Read(b[:]); err != nil {
			return nil, fmt.Errorf("make a run id: %w", err)
		}
		o.RunID = hex.EncodeToString(b[:])
	}
	return &Killer{
		o: o, c: c,
		poll: defaultPoll, selectGrace: defaultSelectGrace, now: time.Now,
		strimziCluster: o.StrimziCluster, strimziPool: o.StrimziPool,
		kills: map[int32]killed{},
	}, nil
}

// Name returns "chaos-mesh".
func (k *Killer) Name() string { return Name }

// Options returns the options in use, defaults and run id filled in.
func (k *Killer) Options() Options { return k.o }

// Log returns what the killer did and what Chaos Mesh answered, one line
// each.
func (k *Killer) Log() []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(k.log) == 0 {
		return nil
	}
	return slices.Clone(k.log)
}

func (k *Killer) logf(format string, a ...any) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.log = append(k.log, fmt.Sprintf(format, a...))
}

func (k *Killer) kerr(err error, verb, resource string) error {
	return kubeErr(err, k.host, verb, resource, k.o.Namespace)
}

// podName maps broker id to its pod's name, finding Strimzi's cluster and
// pool from the pods' labels when they were not given.
func (k *Killer) podName(ctx context.Context, id int32) (string, error) {
	if k.o.PodNaming == NamingStrimzi && (k.strimziCluster == "" || k.strimziPool == "") {
		if err := k.findStrimzi(ctx); err != nil {
			return "", err
		}
	}
	return k.o.staticPodName(id, k.strimziCluster, k.strimziPool)
}

// findStrimzi finds the Strimzi cluster and broker pool from the labels of
// the namespace's broker pods; more than one of either is a usage error
// naming the field to set.
func (k *Killer) findStrimzi(ctx context.Context) error {
	sel := client.MatchingLabels{strimziBrokerLabel: "true"}
	if k.strimziCluster != "" {
		sel[strimziClusterLabel] = k.strimziCluster
	}
	var pods corev1.PodList
	if err := k.c.List(ctx, &pods, client.InNamespace(k.o.Namespace), sel); err != nil {
		return k.kerr(err, "list", "pods")
	}
	clusters, pools := map[string]bool{}, map[string]bool{}
	for _, p := range pods.Items {
		if c := p.Labels[strimziClusterLabel]; c != "" {
			clusters[c] = true
		}
	}
	if k.strimziCluster == "" {
		switch len(clusters) {
		case 0:
			return errkind.Usagef("strimzi-cluster", "no pod in namespace %s is labelled %s=true with a %s: name the Strimzi cluster", k.o.Namespace, strimziBrokerLabel, strimziClusterLabel)
		case 1:
			k.strimziCluster = sortedKeys(clusters)[0]
		default:
			return errkind.Usagef("strimzi-cluster", "namespace %s has broker pods of several Strimzi clusters (%s): name one", k.o.Namespace, strings.Join(sortedKeys(clusters), ", "))
		}
	}
	for _, p := range pods.Items {
		if p.Labels[strimziClusterLabel] == k.strimziCluster && p.Labels[strimziPoolLabel] != "" {
			pools[p.Labels[strimziPoolLabel]] = true
		}
	}
	if k.strimziPool == "" {
		switch len(pools) {
		case 0:
			return errkind.Usagef("strimzi-pool", "no broker pod of Strimzi cluster %s in namespace %s carries %s: name the node pool", k.strimziCluster, k.o.Namespace, strimziPoolLabel)
		case 1:
			k.strimziPool = sortedKeys(pools)[0]
		default:
			return errkind.Usagef("strimzi-pool", "Strimzi cluster %s has several broker pools (%s): name the broker's pool", k.strimziCluster, strings.Join(sortedKeys(pools), ", "))
		}
	}
	return nil
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for s := range m {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

// check finds b's pod and checks that it exists, runs, is Ready and is b:
// b's advertised host names it. Each failure is one refused line.
func (k *Killer) check(ctx context.Context, b chaos.Broker) (*corev1.Pod, error) {
	name, err := k.podName(ctx, b.ID)
	if err != nil {
		return nil, err
	}
	ref := k.o.Namespace + "/" + name
	var pod corev1.Pod
	if err := k.c.Get(ctx, client.ObjectKey{Namespace: k.o.Namespace, Name: name}, &pod); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, errkind.Refusedf("", "broker %d's pod %s does not exist", b.ID, ref)
		}
		return nil, k.kerr(err, "get", "pods")
	}
	switch {
	case pod.DeletionTimestamp != nil:
		return nil, errkind.Refusedf("", "broker %d's pod %s is being deleted", b.ID, ref)
	case pod.Status.Phase != corev1.PodRunning:
		phase := string(pod.Status.Phase)
		if phase == "" {
			phase = "in no phase yet"
		}
		return nil, errkind.Refusedf("", "broker %d's pod %s is %s, not Running", b.ID, ref, phase)
	case !podReady(&pod):
		return nil, errkind.Refusedf("", "broker %d's pod %s is Running but not Ready", b.ID, ref)
	case !hostNamesPod(b.Host, &pod):
		ip := pod.Status.PodIP
		if ip == "" {
			ip = "none"
		}
		return nil, errkind.Refusedf("", "broker %d advertises host %q, which does not name pod %s (IP %s): the pod naming maps the broker to another pod", b.ID, b.Host, ref, ip)
	}
	return &pod, nil
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// hostNamesPod reports whether host, as Kafka advertises it, is the pod:
// its name, a name under it (its FQDN under a headless service,
// "<pod>.<service>.<namespace>.svc..."), or one of its IPs.
func hostNamesPod(host string, p *corev1.Pod) bool {
	h := strings.ToLower(strings.TrimSuffix(strings.Trim(host, "[]"), "."))
	if h == "" {
		return false
	}
	if h == p.Name || strings.HasPrefix(h, p.Name+".") {
		return true
	}
	hip := net.ParseIP(h)
	if hip == nil {
		return false
	}
	ips := []string{p.Status.PodIP}
	for _, ip := range p.Status.PodIPs {
		ips = append(ips, ip.IP)
	}
	for _, ip := range ips {
		if pip := net.ParseIP(ip); pip != nil && pip.Equal(hip) {
			return true
		}
	}
	return false
}

// chaosNameFor returns the name the next PodChaos gets: kplan-<RunID>,
// then kplan-<RunID>-2, ... when one killer kills more than once.
func (k *Killer) chaosNameFor(n int) string {
	if n == 0 {
		return k.o.chaosName()
	}
	return fmt.Sprintf("%s-%d", k.o.chaosName(), n+1)
}

func (k *Killer) manifest(pod string, n int) (*v1alpha1.PodChaos, error) {
	pc, err := Manifest(k.o, pod)
	if err != nil {
		return nil, err
	}
	pc.Name = k.chaosNameFor(n)
	return pc, nil
}

// Plan checks b's pod and asks the API server, with a server-side dry run
// that creates nothing, whether it would take the PodChaos (Chaos Mesh's
// CRDs installed, RBAC allowing the create). It returns the PodChaos as
// YAML and the steps in words.
func (k *Killer) Plan(ctx context.Context, b chaos.Broker) (chaos.KillPlan, error) {
	pod, err := k.check(ctx, b)
	if err != nil {
		return chaos.KillPlan{}, err
	}
	k.mu.Lock()
	n := k.seq
	k.mu.Unlock()
	pc, err := k.manifest(pod.Name, n)
	if err != nil {
		return chaos.KillPlan{}, err
	}
	// A server-side dry run does not report a name already taken; a get
	// does.
	err = k.c.Get(ctx, client.ObjectKeyFromObject(pc), &v1alpha1.PodChaos{})
	switch {
	case err == nil:
		return chaos.KillPlan{}, errkind.Refusedf("", "a PodChaos %s/%s already exists: remove it with kplan chaos cleanup", k.o.Namespace, pc.Name)
	case !apierrors.IsNotFound(err):
		return chaos.KillPlan{}, k.kerr(err, "get", "podchaos")
	}
	if err := k.c.Create(ctx, pc.DeepCopy(), client.DryRunAll); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return chaos.KillPlan{}, errkind.Refusedf("", "a PodChaos %s/%s already exists: remove it with kplan chaos cleanup", k.o.Namespace, pc.Name)
		}
		return chaos.KillPlan{}, k.kerr(err, "create", "podchaos")
	}
	y, err := ManifestYAML(pc)
	if err != nil {
		return chaos.KillPlan{}, err
	}
	return chaos.KillPlan{
		Target:   "pod " + k.o.Namespace + "/" + pod.Name,
		Steps:    k.steps(pc.Name, pod.Name),
		Manifest: y,
	}, nil
}

func (k *Killer) steps(chaosName, pod string) []string {
	ref := k.o.Namespace + "/" + pod
	var what, restore string
	switch k.o.Action {
	case ActionPodFailure:
		what = fmt.Sprintf("pod-failure for %s", k.o.Duration)
		restore = fmt.Sprintf("restore: delete PodChaos %s so Chaos Mesh recovers the pod, then wait until %s is Ready", chaosName, ref)
	case ActionContainerKill:
		what = fmt.Sprintf("container-kill of container %s", k.o.Container)
		restore = fmt.Sprintf("restore: wait until container %s has restarted and %s is Ready", k.o.Container, ref)
	default:
		what = "pod-kill, grace period 0"
		restore = fmt.Sprintf("restore: wait until the StatefulSet has recreated %s and it is Ready", ref)
	}
	return []string{
		fmt.Sprintf("create PodChaos %s/%s (%s) selecting only pod %s, mode one", k.o.Namespace, chaosName, what, ref),
		fmt.Sprintf("wait up to %s for Chaos Mesh to report the injection (AllInjected=True); its record's Apply time is the kill time", k.o.InjectTimeout),
		restore,
		fmt.Sprintf("delete PodChaos %s/%s at the end, on error and on Ctrl-C", k.o.Namespace, chaosName),
	}
}

// Kill checks b's pod again, creates the PodChaos that kills it and waits
// until Chaos Mesh reports the injection. It returns the Apply event's
// time from Chaos Mesh's record, kept within the interval kplan watched
// (the record has a resolution of one second and the controller's clock
// is not kplan's).
func (k *Killer) Kill(ctx context.Context, b chaos.Broker) (time.Time, error) {
	pod, err := k.check(ctx, b)
	if err != nil {
		return time.Time{}, err
	}
	k.mu.Lock()
	n := k.seq
	k.mu.Unlock()
	pc, err := k.manifest(pod.Name, n)
	if err != nil {
		return time.Time{}, err
	}
	// Remembered before the create, so Cleanup deletes it even when Ctrl-C
	// cuts the call after the API server has taken it.
	k.mu.Lock()
	k.seq++
	k.owned = append(k.owned, pc.Name)
	k.kills[b.ID] = killed{pod: pod.Name, uid: pod.UID, restarts: restarts(pod, k.o.Container), chaos: pc.Name}
	k.mu.Unlock()

	start := k.now()
	if err := k.c.Create(ctx, pc); err != nil {
		if notCreated(err) {
			// The API server answered no (or has no such resource): there
			// is nothing to delete, nor perhaps the right to delete it.
			k.disown(pc.Name)
		}
		if apierrors.IsAlreadyExists(err) {
			return time.Time{}, errkind.Refusedf("", "a PodChaos %s/%s already exists: remove it with kplan chaos cleanup", k.o.Namespace, pc.Name)
		}
		return time.Time{}, k.kerr(err, "create", "podchaos")
	}
	k.logf("created PodChaos %s/%s: %s of pod %s/%s", k.o.Namespace, pc.Name, k.o.Action, k.o.Namespace, pod.Name)
	at, err := k.waitInjected(ctx, pc.Name, pod.Name, start)
	if err != nil {
		return time.Time{}, err
	}
	return at, nil
}

// notCreated reports whether a create's error proves the object was not
// created: the API server answered with a status, or the kind is unknown.
// A lost connection or a cancelled call proves nothing.
func notCreated(err error) bool {
	var st apierrors.APIStatus
	return errors.As(err, &st) || meta.IsNoMatchError(err)
}

// disown forgets name: Cleanup need not delete it.
func (k *Killer) disown(name string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.owned = slices.DeleteFunc(k.owned, func(s string) bool { return s == name })
}

func restarts(p *corev1.Pod, container string) int32 {
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name == container {
			return cs.RestartCount
		}
	}
	return 0
}

// waitInjected polls the PodChaos until Chaos Mesh reports AllInjected and
// an Apply record for pod, Selected=False lasts, or the timeout passes.
func (k *Killer) waitInjected(ctx context.Context, name, pod string, start time.Time) (time.Time, error) {
	ref := k.o.Namespace + "/" + name
	deadline := start.Add(k.o.InjectTimeout)
	var unselectedSince time.Time
	lastFailure := ""
	for {
		var pc v1alpha1.PodChaos
		if err := k.c.Get(ctx, client.ObjectKey{Namespace: k.o.Namespace, Name: name}, &pc); err != nil {
			if apierrors.IsNotFound(err) {
				return time.Time{}, errkind.New(errkind.Runtime, "", "PodChaos %s disappeared before Chaos Mesh reported the injection", ref)
			}
			return time.Time{}, k.kerr(err, "get", "podchaos")
		}
		now := k.now()
		applied, failure := applyTime(&pc, k.o.Namespace+"/"+pod)
		if failure != "" && failure != lastFailure {
			lastFailure = failure
			k.logf("Chaos Mesh failed to inject PodChaos %s: %s", ref, failure)
		}
		if condition(&pc, v1alpha1.ConditionAllInjected) == corev1.ConditionTrue && !applied.IsZero() {
			k.logf("Chaos Mesh injected PodChaos %s into pod %s/%s at %s (its record's second; kplan saw it %s after the create)",
				ref, k.o.Namespace, pod, applied.UTC().Format(time.RFC3339), now.Sub(start).Round(time.Millisecond))
			return clampTime(applied, start, now), nil
		}
		if condition(&pc, v1alpha1.ConditionSelected) == corev1.ConditionFalse {
			if unselectedSince.IsZero() {
				unselectedSince = now
			}
			if now.Sub(unselectedSince) >= k.selectGrace {
				return time.Time{}, errkind.New(errkind.Runtime, "", "Chaos Mesh selected no pod for PodChaos %s (Selected=False): it did not find pod %s/%s", ref, k.o.Namespace, pod)
			}
		} else {
			unselectedSince = time.Time{}
		}
		if !now.Before(deadline) {
			why := "is chaos-controller-manager running?"
			if lastFailure != "" {
				why = "its last failure: " + lastFailure
			}
			return time.Time{}, errkind.New(errkind.Runtime, "", "Chaos Mesh did not report the injection of PodChaos %s within %s (%s)", ref, k.o.InjectTimeout, why)
		}
		if err := k.sleep(ctx); err != nil {
			return time.Time{}, fmt.Errorf("wait for Chaos Mesh to inject PodChaos %s: %w", ref, err)
		}
	}
}

func (k *Killer) sleep(ctx context.Context) error {
	t := time.NewTimer(k.poll)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// clampTime keeps t within [lo, hi]: the kill cannot have taken effect
// before kplan asked for it nor after kplan saw it.
func clampTime(t, lo, hi time.Time) time.Time {
	if t.Before(lo) {
		return lo
	}
	if t.After(hi) {
		return hi
	}
	return t
}

func condition(pc *v1alpha1.PodChaos, typ v1alpha1.ChaosConditionType) corev1.ConditionStatus {
	return statusCondition(&pc.Status.ChaosStatus, typ)
}

// applyTime returns the earliest successful Apply event of the records for
// pod ("ns/name", or "ns/name/container" for container-kill), and the
// message of the latest failed one.
func applyTime(pc *v1alpha1.PodChaos, pod string) (time.Time, string) {
	return statusApply(&pc.Status.ChaosStatus, pod)
}

// Restore brings b back: for pod-failure it deletes the PodChaos, so Chaos
// Mesh recovers the pod; then it waits until the pod runs again and is
// Ready (for pod-kill a new pod, as the StatefulSet recreates it; for
// container-kill the container restarted).
func (k *Killer) Restore(ctx context.Context, b chaos.Broker) error {
	k.mu.Lock()
	st, ok := k.kills[b.ID]
	k.mu.Unlock()
	if !ok {
		name, err := k.podName(ctx, b.ID)
		if err != nil {
			return err
		}
		st = killed{pod: name}
	}
	ctx, cancel := context.WithTimeout(ctx, k.o.RestoreTimeout)
	defer cancel()
	if k.o.Action == ActionPodFailure && st.chaos != "" {
		if err := podChaosKind.deleteAndWait(ctx, k.c, k.host, k.o.Namespace, st.chaos, k.o.InjectTimeout, k.poll); err != nil {
			return err
		}
		k.disown(st.chaos)
		k.logf("deleted PodChaos %s/%s: Chaos Mesh recovers pod %s/%s", k.o.Namespace, st.chaos, k.o.Namespace, st.pod)
	}
	ref := k.o.Namespace + "/" + st.pod
	for {
		var pod corev1.Pod
		err := k.c.Get(ctx, client.ObjectKey{Namespace: k.o.Namespace, Name: st.pod}, &pod)
		switch {
		case err == nil:
			if k.restored(&pod, st) {
				k.logf("pod %s is Ready again", ref)
				return nil
			}
		case apierrors.IsNotFound(err):
		default:
			if ctx.Err() == nil {
				return k.kerr(err, "get", "pods")
			}
		}
		if err := k.sleep(ctx); err != nil {
			if errors.Is(err, context.DeadlineExceeded) {
				return errkind.New(errkind.Runtime, "", "pod %s was not Ready again within %s: %w", ref, k.o.RestoreTimeout, err)
			}
			return fmt.Errorf("wait for pod %s to be Ready: %w", ref, err)
		}
	}
}

func (k *Killer) restored(p *corev1.Pod, st killed) bool {
	if p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning || !podReady(p) {
		return false
	}
	switch k.o.Action {
	case ActionPodKill:
		return st.uid == "" || p.UID != st.uid
	case ActionContainerKill:
		return st.uid == "" || p.UID != st.uid || restarts(p, k.o.Container) > st.restarts
	}
	return true
}

// Cleanup deletes the PodChaos objects this killer created and waits until
// Chaos Mesh has let them go. It is idempotent: a PodChaos already gone is
// fine.
func (k *Killer) Cleanup(ctx context.Context) error {
	k.mu.Lock()
	names := slices.Clone(k.owned)
	k.mu.Unlock()
	return podChaosKind.deleteOwned(ctx, k, names, k.disown)
}

// Cleanup deletes every kplan-managed chaos object (labelled
// app.kubernetes.io/managed-by=kplan) in o.Namespace, left behind by a kplan
// that was killed, and returns their names (`kplan chaos cleanup`).
func Cleanup(ctx context.Context, o Options) ([]string, error) {
	return cleanupFromOptions(ctx, o, cleanupWith)
}

// CleanupWithClient is Cleanup with a client already built.
func CleanupWithClient(ctx context.Context, c client.Client, namespace string) ([]string, error) {
	return cleanupWithBuiltClient(ctx, c, namespace, cleanupWith)
}

func cleanupWith(ctx context.Context, c client.Client, host, ns string, timeout, poll time.Duration) ([]string, error) {
	return podChaosKind.cleanup(ctx, c, host, ns, timeout, poll)
}
