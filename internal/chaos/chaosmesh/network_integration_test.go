//go:build integration

package chaosmesh

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chaos-mesh/chaos-mesh/api/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/kplan-dev/kplan/internal/chaos"
	"github.com/kplan-dev/kplan/internal/errkind"
	"github.com/kplan-dev/kplan/internal/k8stest"
)

// netPod names the pods standing for brokers in the NetworkChaos tests:
// no Kafka runs behind them (a NetworkChaos needs chaos-daemon on a node
// to act, which these machines do not have), so the pods are made Running
// and Ready by hand, as a kubelet would report them.
func netPod(id int32) string { return fmt.Sprintf("net-broker-%d", id) }

func netBroker(id int32) chaos.Broker { return chaos.Broker{ID: id, Host: netPod(id), Port: 9092} }

func makeNetPods(ctx context.Context, t *testing.T, c client.Client, ns string) {
	t.Helper()
	no, zero := false, int64(0)
	for id := int32(1); id <= 3; id++ {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: netPod(id), Labels: map[string]string{"app": "net-broker"}},
			Spec: corev1.PodSpec{AutomountServiceAccountToken: &no, TerminationGracePeriodSeconds: &zero,
				Containers: []corev1.Container{{Name: "kafka", Image: "kplan.dev/lab-broker:local"}}},
		}
		require.NoError(t, c.Create(ctx, p))
		now := metav1.Now()
		ip := fmt.Sprintf("10.9.0.%d", id)
		p.Status = corev1.PodStatus{
			Phase: corev1.PodRunning, PodIP: ip, PodIPs: []corev1.PodIP{{IP: ip}}, HostIP: "127.0.0.1", StartTime: &now,
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
				{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: now}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "kafka", Ready: true, ContainerID: "lab://1",
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}}},
		}
		require.NoError(t, c.Status().Update(ctx, p))
	}
	t.Cleanup(func() {
		for id := int32(1); id <= 3; id++ {
			p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: netPod(id)}}
			if err := c.Delete(context.Background(), p, client.GracePeriodSeconds(0)); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("delete pod %s: %v", p.Name, err)
			}
		}
	})
}

// TestNetworkChaosAgainstTheAPIServer: for delay, loss and partition,
// kplan's NetworkChaos is accepted by the real API server (Chaos Mesh's CRD
// schema) and by Chaos Mesh's own validation, created under its exact
// name, watched while Chaos Mesh's controller works on it, and deleted by
// ClearFault and by cleanup. The controller has no chaos-daemon to talk to
// here, so the injection itself cannot happen: the test asserts what the
// controller records (it selects the pod and keeps its record "Not
// Injected", its Apply failing for want of a daemon) and that kplan
// reports it in one line. Nor can Chaos Mesh recover without chaos-daemon,
// so it keeps its finalizer: kplan's delete says so in one line, and the
// test then removes the finalizer as an operator would (kplan never does:
// that would leave the pod's traffic control rules in place).
func TestNetworkChaosAgainstTheAPIServer(t *testing.T) {
	env := k8stest.Shared(t)
	admin := adminClient(t, env)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	makeNetPods(ctx, t, admin, env.Namespace)

	for _, fault := range []string{"delay:broker-2:200ms:20ms", "loss:broker-2:10%", "partition:broker-2"} {
		t.Run(fault, func(t *testing.T) {
			f, err := chaos.ParseFault(fault)
			require.NoError(t, err)
			runID := "it-net-" + string(f.Kind)
			k, err := New(Options{Kubeconfig: env.Kubeconfig, Namespace: env.Namespace, PodNaming: NamingTemplate,
				PodTemplate: "net-broker-{id}", RunID: runID, InjectTimeout: 5 * time.Second})
			require.NoError(t, err)
			n := NewNetworker(k)
			others := []chaos.Broker{netBroker(1), netBroker(2), netBroker(3)}

			plan, err := n.PlanFault(ctx, netBroker(2), others, f)
			require.NoError(t, err, "the server-side dry run takes it")
			var nc v1alpha1.NetworkChaos
			require.NoError(t, yaml.UnmarshalStrict([]byte(plan.Manifest), &nc))
			require.NoError(t, admin.Create(ctx, nc.DeepCopy(), client.DryRunAll), "the real API server accepts the plan's NetworkChaos")
			assertNoNetworkChaos(t, admin, env.Namespace)

			_, injErr := n.InjectFault(ctx, netBroker(2), others, f)
			require.Error(t, injErr, "no chaos-daemon runs here, so nothing can be injected")
			assert.Equal(t, errkind.Runtime, errkind.KindOf(injErr), injErr.Error())
			assert.NotContains(t, injErr.Error(), "\n")
			assert.Contains(t, injErr.Error(), "Chaos Mesh did not report the injection of NetworkChaos "+env.Namespace+"/kplan-"+runID)
			// What Chaos Mesh records: its Apply fails, with no chaos-daemon
			// on the pod's node to call.
			assert.Contains(t, injErr.Error(), "its last failure: ")
			assert.Contains(t, injErr.Error(), "daemon")
			var got v1alpha1.NetworkChaos
			require.NoError(t, admin.Get(ctx, client.ObjectKey{Namespace: env.Namespace, Name: "kplan-" + runID}, &got), "found by its exact name")
			assert.Equal(t, ManagedByValue, got.Labels[ManagedByLabel])
			assert.Equal(t, map[string][]string{env.Namespace: {netPod(2)}}, got.Spec.Selector.Pods)
			require.Eventually(t, func() bool {
				var cur v1alpha1.NetworkChaos
				if admin.Get(ctx, client.ObjectKeyFromObject(&got), &cur) != nil {
					return false
				}
				got = cur
				return statusCondition(&cur.Status.ChaosStatus, v1alpha1.ConditionSelected) == corev1.ConditionTrue
			}, 30*time.Second, 250*time.Millisecond, "Chaos Mesh's controller selects the broker's pod")
			assert.NotEmpty(t, recordPhase(&got.Status.ChaosStatus, env.Namespace+"/"+netPod(2)), "Chaos Mesh keeps a record of the pod")
			assert.NotEqual(t, corev1.ConditionTrue, statusCondition(&got.Status.ChaosStatus, v1alpha1.ConditionAllInjected), "nothing injected without chaos-daemon")
			status, _ := yaml.Marshal(got.Status)
			t.Logf("inject: %v\nChaos Mesh's status:\n%s", injErr, status)

			err = n.ClearFault(ctx)
			require.Error(t, err, "Chaos Mesh cannot recover without chaos-daemon and keeps its finalizer")
			assert.Contains(t, err.Error(), "Chaos Mesh has not released its finalizer")
			assert.NotContains(t, err.Error(), "\n")
			assert.Equal(t, []string{"kplan-" + runID}, n.Owned(), "still kplan's to delete")
			forceFinalizer(ctx, t, admin, env.Namespace, "kplan-"+runID)
			require.NoError(t, n.ClearFault(ctx), "gone once the finalizer is forced off")
			require.NoError(t, n.ClearFault(ctx), "idempotent")
			assert.Empty(t, n.Owned())
			assertNoNetworkChaos(t, admin, env.Namespace)
			t.Logf("log:\n%s", strings.Join(k.Log(), "\n"))
		})
	}
}

// TestNetworkChaosCleanupAfterAKilledKplan: a NetworkChaos left behind
// goes with `kplan chaos cleanup`.
func TestNetworkChaosCleanupAfterAKilledKplan(t *testing.T) {
	env := k8stest.Shared(t)
	admin := adminClient(t, env)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	o := Options{Kubeconfig: env.Kubeconfig, Namespace: env.Namespace, RunID: "it-net-left"}
	f, err := chaos.ParseFault("delay:broker-3:50ms")
	require.NoError(t, err)
	left, err := NetworkManifest(o, f, "no-such-pod", nil)
	require.NoError(t, err)
	require.NoError(t, admin.Create(ctx, left))
	// Chaos Mesh selects no pod, so it has nothing to recover: its
	// finalizer goes with the delete.
	names, err := CleanupNetwork(ctx, o)
	require.NoError(t, err)
	assert.Equal(t, []string{"networkchaos/kplan-it-net-left"}, names)
	assertNoNetworkChaos(t, admin, env.Namespace)
}

// forceFinalizer removes Chaos Mesh's finalizer without a recovery, as an
// operator does (kubectl patch) when chaos-daemon is gone.
func forceFinalizer(ctx context.Context, t *testing.T, c client.Client, ns, name string) {
	t.Helper()
	require.Eventually(t, func() bool {
		var nc v1alpha1.NetworkChaos
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &nc); err != nil {
			return apierrors.IsNotFound(err)
		}
		nc.Finalizers = nil
		return c.Update(ctx, &nc) == nil // a conflict with the controller is retried
	}, 30*time.Second, 200*time.Millisecond, "finalizer of NetworkChaos %s removed", name)
}

func assertNoNetworkChaos(t *testing.T, c client.Client, ns string) {
	t.Helper()
	var list v1alpha1.NetworkChaosList
	require.NoError(t, c.List(context.Background(), &list, client.InNamespace(ns)))
	assert.Empty(t, list.Items, "no NetworkChaos is left")
}
