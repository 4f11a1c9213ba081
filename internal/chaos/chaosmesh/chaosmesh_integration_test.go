//go:build integration

package chaosmesh

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chaos-mesh/chaos-mesh/api/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/kplan-dev/kplan/internal/chaos"
	"github.com/kplan-dev/kplan/internal/errkind"
	"github.com/kplan-dev/kplan/internal/k8stest"
	"github.com/kplan-dev/kplan/internal/kafka"
	"github.com/kplan-dev/kplan/internal/labtest"
)

// These tests run kplan's killer against a real kube-apiserver and Chaos
// Mesh's own chaos-controller-manager (k8stest), with pods named and
// labelled as Strimzi names them standing for the brokers of a real Kafka
// lab whose brokers listen on 127.0.0.2, 127.0.0.3, ...: kplan creates the
// PodChaos, Chaos Mesh selects and deletes the pod, k8stest's agent kills
// the broker as the kubelet would and recreates both.

// The lab stops first, then the control plane.
func TestMain(m *testing.M) { os.Exit(k8stest.Stop(labtest.Main(m))) }

const itCluster, itPool = "my-cluster", "pool-a"

func strimziPodName(id int32) string { return fmt.Sprintf("%s-%s-%d", itCluster, itPool, id) }

func strimziPodLabels(int32) map[string]string {
	return map[string]string{strimziClusterLabel: itCluster, strimziPoolLabel: itPool, strimziBrokerLabel: "true"}
}

// itBroker is broker id as Kafka's metadata describes it.
func itBroker(t *testing.T, lab *labtest.Lab, id int32) chaos.Broker {
	t.Helper()
	n, err := lab.State.Node(id)
	require.NoError(t, err)
	return chaos.Broker{ID: id, Host: n.Addr, Port: int32(n.Port), Rack: n.Rack}
}

// adminClient is a controller-runtime client of env's admin with the
// killer's scheme.
func adminClient(t *testing.T, env *k8stest.Env) client.Client {
	t.Helper()
	cfg, err := restConfig(env.Kubeconfig, "")
	require.NoError(t, err)
	s, err := Scheme()
	require.NoError(t, err)
	c, err := client.New(cfg, client.Options{Scheme: s})
	require.NoError(t, err)
	return c
}

func TestChaosMeshKillsStrimziBroker(t *testing.T) {
	env := k8stest.Shared(t)
	lab := labtest.Start(t, labtest.Options{Brokers: 3, LoopbackPerBroker: true})
	agent := env.BrokerPods(t, lab.State, strimziPodName, strimziPodLabels)
	admin := adminClient(t, env)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	k, err := New(Options{Kubeconfig: env.Kubeconfig, Namespace: env.Namespace, StrimziCluster: itCluster, RunID: "it-kill"})
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, k.Cleanup(context.Background())) })
	b := itBroker(t, lab, 3)

	plan, err := k.Plan(ctx, b)
	require.NoError(t, err)
	assert.Equal(t, "pod "+env.Namespace+"/"+strimziPodName(3), plan.Target)
	var pc v1alpha1.PodChaos
	require.NoError(t, yaml.UnmarshalStrict([]byte(plan.Manifest), &pc))
	assert.Equal(t, map[string][]string{env.Namespace: {strimziPodName(3)}}, pc.Spec.Selector.Pods, "exactly one pod")
	require.NoError(t, admin.Create(ctx, &pc, client.DryRunAll), "the real API server accepts the plan's PodChaos")
	assertNoPodChaos(t, admin, env.Namespace)
	assert.Zero(t, agent.Kills(), "Plan kills nothing")

	start := time.Now()
	at, err := k.Kill(ctx, b)
	require.NoError(t, err)
	assert.False(t, at.Before(start), "the kill time %s is not before the call %s", at, start)
	assert.GreaterOrEqual(t, agent.Kills(), 1, "Chaos Mesh deleted the pod and the agent killed the broker")
	t.Logf("kill took effect %s after the call", at.Sub(start))

	ka := kafka.NewAdmin(kafka.ConnOptions{BootstrapServers: lab.Bootstrap}, "test")
	defer ka.Close()
	require.Eventually(t, func() bool { return !brokerInMetadata(ctx, ka, 3) }, 90*time.Second, 200*time.Millisecond,
		"Kafka's metadata loses broker 3")

	require.NoError(t, k.Restore(ctx, b))
	var p corev1.Pod
	require.NoError(t, admin.Get(ctx, client.ObjectKey{Namespace: env.Namespace, Name: strimziPodName(3)}, &p))
	assert.True(t, podReady(&p), "Restore returns with the pod Ready")
	require.Eventually(t, func() bool { return brokerInMetadata(ctx, ka, 3) }, 2*time.Minute, 500*time.Millisecond,
		"broker 3 comes back")

	require.NoError(t, k.Cleanup(ctx))
	require.NoError(t, k.Cleanup(ctx), "idempotent")
	assertNoPodChaos(t, admin, env.Namespace)
	t.Logf("killer log:\n%s", strings.Join(k.Log(), "\n"))
}

// TestChaosMeshCleanupAfterAKilledKplan: a PodChaos left behind (kplan
// killed between create and delete) goes with `kplan chaos cleanup`.
func TestChaosMeshCleanupAfterAKilledKplan(t *testing.T) {
	env := k8stest.Shared(t)
	admin := adminClient(t, env)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	o := Options{Kubeconfig: env.Kubeconfig, Namespace: env.Namespace, RunID: "it-left"}
	left, err := Manifest(o, "no-such-pod")
	require.NoError(t, err)
	require.NoError(t, admin.Create(ctx, left))

	names, err := Cleanup(ctx, o)
	require.NoError(t, err)
	assert.Equal(t, []string{"kplan-it-left"}, names)
	assertNoPodChaos(t, admin, env.Namespace)
}

// TestChaosMeshManifestsAccepted: the real API server, validating by
// Chaos Mesh's CRD schema, takes kplan's PodChaos for every action.
func TestChaosMeshManifestsAccepted(t *testing.T) {
	env := k8stest.Shared(t)
	admin := adminClient(t, env)
	for _, o := range []Options{
		{Namespace: env.Namespace, RunID: "it-dry-kill"},
		{Namespace: env.Namespace, RunID: "it-dry-failure", Action: ActionPodFailure, Duration: 90 * time.Second},
		{Namespace: env.Namespace, RunID: "it-dry-container", Action: ActionContainerKill, Container: "kafka"},
	} {
		pc, err := Manifest(o, "my-cluster-pool-a-3")
		require.NoError(t, err)
		assert.NoError(t, admin.Create(context.Background(), pc, client.DryRunAll), o.Action)
	}
	assertNoPodChaos(t, admin, env.Namespace)
}

// TestChaosMeshPodFailureLifecycle: Chaos Mesh performs a pod-failure
// through the API server (it swaps the pod's images for a pause image), so
// its controller reports the injection here too; no kubelet runs, so the
// broker itself keeps running. Restore deletes the PodChaos, Chaos Mesh's
// finalizer recovers the pod, and nothing is left.
func TestChaosMeshPodFailureLifecycle(t *testing.T) {
	env := k8stest.Shared(t)
	lab := labtest.Start(t, labtest.Options{Brokers: 3, LoopbackPerBroker: true})
	env.BrokerPods(t, lab.State, strimziPodName, strimziPodLabels)
	admin := adminClient(t, env)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	k, err := New(Options{Kubeconfig: env.Kubeconfig, Namespace: env.Namespace, RunID: "it-failure",
		Action: ActionPodFailure, Duration: time.Minute})
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, k.Cleanup(context.Background())) })
	b := itBroker(t, lab, 2)

	start := time.Now()
	at, err := k.Kill(ctx, b)
	require.NoError(t, err)
	assert.False(t, at.Before(start))
	var pc v1alpha1.PodChaos
	require.NoError(t, admin.Get(ctx, client.ObjectKey{Namespace: env.Namespace, Name: "kplan-it-failure"}, &pc))
	assert.Equal(t, corev1.ConditionTrue, condition(&pc, v1alpha1.ConditionAllInjected))

	require.NoError(t, k.Restore(ctx, b))
	assertNoPodChaos(t, admin, env.Namespace)
	require.NoError(t, k.Cleanup(ctx))
	t.Logf("killer log:\n%s", strings.Join(k.Log(), "\n"))
}

func TestChaosMeshRefuses(t *testing.T) {
	env := k8stest.Shared(t)
	lab := labtest.Start(t, labtest.Options{Brokers: 3, LoopbackPerBroker: true})
	agent := env.BrokerPods(t, lab.State, strimziPodName, strimziPodLabels)
	admin := adminClient(t, env)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	base := Options{Kubeconfig: env.Kubeconfig, Namespace: env.Namespace, StrimziCluster: itCluster, RunID: "it-refuse"}

	t.Run("pod missing", func(t *testing.T) {
		o := base
		o.PodNaming, o.PodTemplate = NamingTemplate, "absent-{id}"
		refused(ctx, t, o, itBroker(t, lab, 3), "broker 3's pod "+env.Namespace+"/absent-3 does not exist")
	})
	t.Run("pod not ready", func(t *testing.T) {
		agent.SetReady(t, 2, false)
		defer agent.SetReady(t, 2, true)
		refused(ctx, t, base, itBroker(t, lab, 2), "is Running but not Ready")
	})
	t.Run("identity mismatch", func(t *testing.T) {
		// Broker 2's advertised host with broker 3's pod.
		o := base
		o.PodNaming, o.PodTemplate = NamingTemplate, itCluster+"-"+itPool+"-{id}"
		b := itBroker(t, lab, 2)
		b.ID = 3
		refused(ctx, t, o, b, fmt.Sprintf("advertises host %q, which does not name pod %s/%s", b.Host, env.Namespace, strimziPodName(3)))
	})
	t.Run("rbac forbidden", func(t *testing.T) {
		o := base
		o.Kubeconfig = env.RestrictedKubeconfig
		refused(ctx, t, o, itBroker(t, lab, 3), "RBAC forbids kplan to")
	})
	assert.Zero(t, agent.Kills(), "no refusal killed anything")
	assertNoPodChaos(t, admin, env.Namespace)
}

// refused checks that Plan and Kill refuse b with one line containing msg.
func refused(ctx context.Context, t *testing.T, o Options, b chaos.Broker, msg string) {
	t.Helper()
	k, err := New(o)
	require.NoError(t, err)
	_, err = k.Plan(ctx, b)
	require.Error(t, err)
	assert.Equal(t, errkind.Refused, errkind.KindOf(err), err.Error())
	assert.Contains(t, err.Error(), msg)
	assert.NotContains(t, err.Error(), "\n")
	_, err = k.Kill(ctx, b)
	assert.Equal(t, errkind.Refused, errkind.KindOf(err))
	assert.NoError(t, k.Cleanup(ctx))
}

func assertNoPodChaos(t *testing.T, c client.Client, ns string) {
	t.Helper()
	var list v1alpha1.PodChaosList
	require.NoError(t, c.List(context.Background(), &list, client.InNamespace(ns)))
	assert.Empty(t, list.Items, "no PodChaos is left")
}

// brokerInMetadata reports whether Kafka's metadata lists broker id as
// live.
func brokerInMetadata(ctx context.Context, a *kafka.Admin, id int32) bool {
	c, err := a.Snapshot(ctx, func(string) bool { return false })
	if err != nil {
		return false
	}
	for _, b := range c.Brokers {
		if b.ID == id && !b.Missing {
			return true
		}
	}
	return false
}
