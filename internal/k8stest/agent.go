package k8stest

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kplan-dev/kplan/internal/kafka"
	"github.com/kplan-dev/kplan/internal/localkafka"
)

// DefaultRestartDelay is how long a recreated broker pod stays Pending
// before the agent starts its broker again: the time a kubelet takes to
// start a container. It keeps a killed broker away long enough for Kafka
// to fence it (3 s in the lab) and for an experiment to measure the loss.
const DefaultRestartDelay = 10 * time.Second

// ContainerName is the broker pods' one container, as Strimzi names it.
const ContainerName = "kafka"

// StrimziName names broker id's pod as Strimzi does: {cluster}-{pool}-{id}.
func StrimziName(cluster, pool string) func(int32) string {
	return func(id int32) string { return fmt.Sprintf("%s-%s-%d", cluster, pool, id) }
}

// StrimziLabels labels a broker pod as Strimzi does.
func StrimziLabels(cluster, pool string) func(int32) map[string]string {
	return func(int32) map[string]string {
		return map[string]string{
			"strimzi.io/cluster":     cluster,
			"strimzi.io/pool-name":   pool,
			"strimzi.io/broker-role": "true",
			"strimzi.io/kind":        "Kafka",
			"strimzi.io/name":        cluster + "-kafka",
		}
	}
}

// Agent plays the kubelet (and the StatefulSet controller) for the pods
// that stand for a lab's brokers: when such a pod is deleted it kills the
// broker, recreates the pod, restarts the broker and marks the pod Running
// and Ready again once the broker answers.
type Agent struct {
	env    *Env
	lab    *localkafka.State
	name   func(int32) string
	labels func(int32) map[string]string
	ids    map[string]int32
	poke   map[int32]chan struct{}

	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	kills   int
	delay   time.Duration
	uids    map[int32]types.UID // the pod the agent made last, per broker
	running map[int32]bool      // pod marked Running+Ready by the agent
	away    map[int32]bool      // pod deleted by DeletePod: left alone
	errs    []error
}

// labMu serialises the agents' actions on labs (localkafka.State is not
// safe for concurrent use).
var labMu sync.Mutex

// BrokerPods creates one Pod per broker of lab in e.Namespace, named
// name(id) with labels(id), automountServiceAccountToken false, its status
// set Running and Ready with podIP the broker's listen address, and runs
// the node agent until t's cleanup: when such a pod is deleted (e.g. by
// Chaos Mesh's pod-kill) the agent kills that lab broker (as the kubelet
// would kill the container), recreates the pod (as the StatefulSet
// controller would), waits the restart delay (SetRestartDelay), restarts
// the broker, and sets the pod Running and Ready again once the broker
// answers. At cleanup the agent stops, restarts any broker it left dead and
// deletes the pods.
func (e *Env) BrokerPods(t testing.TB, lab *localkafka.State, name func(id int32) string, labels func(id int32) map[string]string) *Agent {
	t.Helper()
	a := &Agent{env: e, lab: lab, name: name, labels: labels, ids: map[string]int32{}, poke: map[int32]chan struct{}{},
		delay: DefaultRestartDelay, uids: map[int32]types.UID{}, running: map[int32]bool{}, away: map[int32]bool{}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, b := range lab.Brokers() {
		a.ids[name(b.ID)] = b.ID
		a.poke[b.ID] = make(chan struct{}, 1)
		pod, err := a.create(ctx, b.ID)
		if err != nil {
			t.Fatalf("k8stest: creating pod %s: %v", name(b.ID), err)
		}
		if err := a.markRunning(ctx, pod, b); err != nil {
			t.Fatalf("k8stest: setting pod %s Running: %v", pod.Name, err)
		}
	}
	actx, acancel := context.WithCancel(context.Background())
	a.cancel = acancel
	for id := range a.poke {
		a.wg.Add(1)
		go a.worker(actx, id)
	}
	a.wg.Add(1)
	go a.watchLoop(actx)
	t.Cleanup(func() { a.stop(t) })
	return a
}

// Kills returns the number of pod deletions the agent acted on.
func (a *Agent) Kills() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.kills
}

// SetRestartDelay sets how long a recreated pod stays Pending before its
// broker restarts (DefaultRestartDelay until set).
func (a *Agent) SetRestartDelay(d time.Duration) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.delay = d
}

// Pod returns the name of broker id's pod.
func (a *Agent) Pod(id int32) string { return a.name(id) }

// SetReady flips the Ready condition of broker id's pod (its phase stays
// Running), as a failing readiness probe would.
func (a *Agent) SetReady(t testing.TB, id int32, ready bool) {
	t.Helper()
	a.updateStatus(t, id, func(pod *corev1.Pod) { setReady(pod, ready) })
}

// DeletePod deletes broker id's pod, as if it had never been made, and
// leaves it deleted: the agent neither kills the broker nor recreates the
// pod until RecreatePod (for the "pod missing" refusal).
func (a *Agent) DeletePod(t testing.TB, id int32) {
	t.Helper()
	a.mu.Lock()
	a.away[id] = true
	a.running[id] = false
	a.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	zero := int64(0)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: a.env.Namespace, Name: a.name(id)}}
	if err := a.env.Client.Delete(ctx, pod, &client.DeleteOptions{GracePeriodSeconds: &zero}); err != nil && !apierrors.IsNotFound(err) {
		t.Fatalf("k8stest: deleting pod %s: %v", pod.Name, err)
	}
	if err := a.waitGone(ctx, client.ObjectKeyFromObject(pod), ""); err != nil {
		t.Fatalf("k8stest: pod %s not gone: %v", pod.Name, err)
	}
}

// RecreatePod makes broker id's pod again after DeletePod, Running and
// Ready, and the agent manages it again.
func (a *Agent) RecreatePod(t testing.TB, id int32) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	node, err := a.lab.Node(id)
	if err != nil {
		t.Fatalf("k8stest: %v", err)
	}
	pod, err := a.create(ctx, id)
	if err != nil {
		t.Fatalf("k8stest: recreating pod %s: %v", a.name(id), err)
	}
	if err := a.markRunning(ctx, pod, *node); err != nil {
		t.Fatalf("k8stest: setting pod %s Running: %v", pod.Name, err)
	}
	a.mu.Lock()
	a.away[id] = false
	a.mu.Unlock()
}

// SetPodIP sets the podIP of broker id's pod (for the identity-mismatch
// refusal); the agent sets the broker's own address again only when it
// recreates the pod.
func (a *Agent) SetPodIP(t testing.TB, id int32, ip string) {
	t.Helper()
	a.updateStatus(t, id, func(pod *corev1.Pod) {
		pod.Status.PodIP = ip
		pod.Status.PodIPs = []corev1.PodIP{{IP: ip}}
	})
}

// updateStatus applies change to broker id's pod status, retrying on
// conflicts.
func (a *Agent) updateStatus(t testing.TB, id int32, change func(*corev1.Pod)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		var pod corev1.Pod
		err := a.env.Client.Get(ctx, client.ObjectKey{Namespace: a.env.Namespace, Name: a.name(id)}, &pod)
		if err == nil {
			change(&pod)
			err = a.env.Client.Status().Update(ctx, &pod)
		}
		if err == nil {
			return
		}
		if !apierrors.IsConflict(err) {
			t.Fatalf("k8stest: updating the status of pod %s: %v", a.name(id), err)
		}
	}
}

// WaitRunning waits until broker id's pod is Running and Ready under the
// agent again (after a deletion: the broker restarted and answers).
func (a *Agent) WaitRunning(t testing.TB, id int32, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		a.mu.Lock()
		ok, errs := a.running[id], errors.Join(a.errs...)
		a.mu.Unlock()
		if ok {
			return
		}
		if errs != nil {
			t.Fatalf("k8stest: agent: %v", errs)
		}
		if time.Now().After(deadline) {
			t.Fatalf("k8stest: pod %s not Running and Ready again within %s", a.name(id), timeout)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Err returns what went wrong in the agent so far (nil: nothing).
func (a *Agent) Err() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return errors.Join(a.errs...)
}

func (a *Agent) fail(err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.errs = append(a.errs, err)
}

// watchLoop pokes a broker's worker on every event of its pod, and every
// broker's worker after each (re)list, so that no deletion is missed.
func (a *Agent) watchLoop(ctx context.Context) {
	defer a.wg.Done()
	for ctx.Err() == nil {
		var list corev1.PodList
		if err := a.env.watch.List(ctx, &list, client.InNamespace(a.env.Namespace)); err != nil {
			sleep(ctx, time.Second)
			continue
		}
		for id := range a.poke {
			a.pokeID(id)
		}
		w, err := a.env.watch.Watch(ctx, &corev1.PodList{}, client.InNamespace(a.env.Namespace),
			&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: list.ResourceVersion}})
		if err != nil {
			sleep(ctx, time.Second)
			continue
		}
		for ev := range w.ResultChan() {
			if ev.Type == watch.Error {
				break
			}
			if pod, ok := ev.Object.(*corev1.Pod); ok {
				if id, mine := a.ids[pod.Name]; mine {
					a.pokeID(id)
				}
			}
		}
		w.Stop()
	}
}

func (a *Agent) pokeID(id int32) {
	select {
	case a.poke[id] <- struct{}{}:
	default:
	}
}

func (a *Agent) worker(ctx context.Context, id int32) {
	defer a.wg.Done()
	for {
		select {
		case <-ctx.Done():
			return
		case <-a.poke[id]:
		case <-time.After(2 * time.Second): // a resync, should a watch event go astray
		}
		if err := a.reconcile(ctx, id); err != nil && ctx.Err() == nil {
			a.fail(fmt.Errorf("broker-%d: %w", id, err))
		}
	}
}

// reconcile acts when broker id's pod is gone or going: the kubelet's and
// the StatefulSet controller's work.
func (a *Agent) reconcile(ctx context.Context, id int32) error {
	key := client.ObjectKey{Namespace: a.env.Namespace, Name: a.name(id)}
	var pod corev1.Pod
	err := a.env.Client.Get(ctx, key, &pod)
	if err != nil && !apierrors.IsNotFound(err) {
		return nil // the API server is busy or stopping: try on the next poke
	}
	a.mu.Lock()
	mine := err == nil && pod.UID == a.uids[id]
	away := a.away[id]
	a.mu.Unlock()
	if away || (mine && pod.DeletionTimestamp == nil) {
		return nil
	}
	// The pod is deleted (or being deleted, or replaced by someone else):
	// its container dies.
	a.mu.Lock()
	a.kills++
	a.running[id] = false
	delay := a.delay
	a.mu.Unlock()
	node, nerr := a.lab.Node(id)
	if nerr != nil {
		return nerr
	}
	labMu.Lock()
	if node.Alive() {
		if kerr := a.lab.Kill(id); kerr != nil {
			labMu.Unlock()
			return kerr
		}
	}
	labMu.Unlock()
	if err == nil { // still there, terminating: confirm its deletion, as the kubelet does
		zero := int64(0)
		if derr := a.env.Client.Delete(ctx, &pod, &client.DeleteOptions{GracePeriodSeconds: &zero,
			Preconditions: &metav1.Preconditions{UID: &pod.UID}}); derr != nil && !apierrors.IsNotFound(derr) && !apierrors.IsConflict(derr) {
			return fmt.Errorf("deleting pod %s: %w", key.Name, derr)
		}
		if werr := a.waitGone(ctx, key, pod.UID); werr != nil {
			return werr
		}
	}
	// The StatefulSet controller makes the pod again; it stays Pending
	// while its container starts.
	created, cerr := a.create(ctx, id)
	if cerr != nil {
		return fmt.Errorf("recreating pod %s: %w", key.Name, cerr)
	}
	if !sleep(ctx, delay) {
		return nil
	}
	if rerr := a.restart(ctx, id); rerr != nil {
		return rerr
	}
	node, _ = a.lab.Node(id)
	if merr := a.markRunning(ctx, created, *node); merr != nil {
		if apierrors.IsNotFound(merr) || apierrors.IsConflict(merr) {
			a.pokeID(id) // deleted again meanwhile: the next round handles it
			return nil
		}
		return fmt.Errorf("setting pod %s Running: %w", key.Name, merr)
	}
	return nil
}

// restart starts broker id again and waits until it answers.
func (a *Agent) restart(ctx context.Context, id int32) error {
	ready := func(ctx context.Context, clusterID string, bootstrap []string, _ []int32) error {
		return kafka.WaitBrokers(ctx, clusterID, bootstrap, []int32{id})
	}
	rctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	labMu.Lock()
	node, err := a.lab.Node(id)
	if err != nil {
		labMu.Unlock()
		return err
	}
	alive := node.Alive()
	if !alive {
		err = a.lab.Restart(rctx, id, ready)
	}
	labMu.Unlock()
	if err != nil && ctx.Err() == nil {
		return fmt.Errorf("restarting: %w", err)
	}
	if alive { // started by someone else: wait until it answers
		for rctx.Err() == nil {
			wctx, wcancel := context.WithTimeout(rctx, 2*time.Second)
			werr := ready(wctx, a.lab.ClusterID, a.lab.Bootstrap(), nil)
			wcancel()
			if werr == nil {
				return nil
			}
			sleep(rctx, 300*time.Millisecond)
		}
	}
	return nil
}

// waitGone waits until the pod of key is gone, or (uid not "") replaced.
func (a *Agent) waitGone(ctx context.Context, key client.ObjectKey, uid types.UID) error {
	for {
		var pod corev1.Pod
		err := a.env.Client.Get(ctx, key, &pod)
		if apierrors.IsNotFound(err) || (err == nil && uid != "" && pod.UID != uid) {
			return nil
		}
		if !sleep(ctx, 50*time.Millisecond) {
			return ctx.Err()
		}
	}
}

// create makes broker id's pod (Pending) and remembers its UID.
func (a *Agent) create(ctx context.Context, id int32) (*corev1.Pod, error) {
	pod := brokerPod(a.env.Namespace, a.name(id), a.labels(id))
	if err := a.env.Client.Create(ctx, pod); err != nil {
		return nil, err
	}
	a.mu.Lock()
	a.uids[id] = pod.UID
	a.mu.Unlock()
	return pod, nil
}

// markRunning sets pod's status as a kubelet does once its container runs
// and is ready: phase Running, Ready, podIP the broker's address.
func (a *Agent) markRunning(ctx context.Context, pod *corev1.Pod, b localkafka.Node) error {
	runningStatus(pod, b.Addr, b.PID, time.Now())
	if err := a.env.Client.Status().Update(ctx, pod); err != nil {
		return err
	}
	a.mu.Lock()
	a.running[b.ID] = true
	a.mu.Unlock()
	return nil
}

// stop ends the agent, brings back any broker it left dead, and deletes
// the pods.
func (a *Agent) stop(t testing.TB) {
	a.cancel()
	a.wg.Wait()
	if err := a.Err(); err != nil {
		t.Errorf("k8stest: agent: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	for _, b := range a.lab.Brokers() {
		if err := a.restart(ctx, b.ID); err != nil {
			t.Errorf("k8stest: bringing broker-%d back after the test: %v", b.ID, err)
		}
	}
	zero := int64(0)
	for name := range a.ids {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: a.env.Namespace, Name: name}}
		if err := a.env.Client.Delete(ctx, pod, &client.DeleteOptions{GracePeriodSeconds: &zero}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("k8stest: deleting pod %s: %v", name, err)
			continue
		}
		if err := a.waitGone(ctx, client.ObjectKeyFromObject(pod), ""); err != nil {
			t.Errorf("k8stest: pod %s not gone: %v", name, err)
		}
	}
}

// brokerPod is the object a StatefulSet controller would create.
func brokerPod(namespace, name string, labels map[string]string) *corev1.Pod {
	no := false
	zero := int64(0)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: labels},
		Spec: corev1.PodSpec{
			AutomountServiceAccountToken:  &no,
			TerminationGracePeriodSeconds: &zero,
			Hostname:                      name,
			Containers: []corev1.Container{{
				Name:  ContainerName,
				Image: "kplan.dev/lab-broker:local",
				Ports: []corev1.ContainerPort{{Name: "clients", ContainerPort: 9092}},
			}},
		},
	}
}

// runningStatus is a kubelet's status of a running, ready pod whose
// container is the lab broker with pid.
func runningStatus(pod *corev1.Pod, ip string, pid int, now time.Time) {
	t := metav1.NewTime(now)
	started := true
	pod.Status = corev1.PodStatus{
		Phase:     corev1.PodRunning,
		HostIP:    "127.0.0.1",
		HostIPs:   []corev1.HostIP{{IP: "127.0.0.1"}},
		PodIP:     ip,
		PodIPs:    []corev1.PodIP{{IP: ip}},
		StartTime: &t,
		Conditions: []corev1.PodCondition{
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: t},
			{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: t},
			{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: t},
			{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: t},
		},
		ContainerStatuses: []corev1.ContainerStatus{{
			Name:        ContainerName,
			Image:       pod.Spec.Containers[0].Image,
			ImageID:     pod.Spec.Containers[0].Image,
			ContainerID: "lab://" + strconv.Itoa(pid),
			Ready:       true,
			Started:     &started,
			State:       corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: t}},
		}},
	}
}

// setReady flips the pod's Ready and ContainersReady conditions and its
// container's readiness.
func setReady(pod *corev1.Pod, ready bool) {
	st := corev1.ConditionFalse
	if ready {
		st = corev1.ConditionTrue
	}
	now := metav1.Now()
	for i, c := range pod.Status.Conditions {
		if (c.Type == corev1.PodReady || c.Type == corev1.ContainersReady) && c.Status != st {
			pod.Status.Conditions[i].Status = st
			pod.Status.Conditions[i].LastTransitionTime = now
		}
	}
	for i := range pod.Status.ContainerStatuses {
		pod.Status.ContainerStatuses[i].Ready = ready
	}
}

// sleep waits d or until ctx ends; it reports whether d passed.
func sleep(ctx context.Context, d time.Duration) bool {
	select {
	case <-ctx.Done():
		return false
	case <-time.After(d):
		return true
	}
}
