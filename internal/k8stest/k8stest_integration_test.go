//go:build integration

package k8stest_test

import (
	"context"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	chaosv1alpha1 "github.com/chaos-mesh/chaos-mesh/api/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kplan-dev/kplan/internal/k8stest"
	"github.com/kplan-dev/kplan/internal/kafka"
	"github.com/kplan-dev/kplan/internal/labtest"
	"github.com/kplan-dev/kplan/internal/localkafka"
	"github.com/kplan-dev/kplan/internal/topology"
)

func TestMain(m *testing.M) { os.Exit(k8stest.Stop(labtest.Main(m))) }

// TestPodKillKillsTheLabBroker is the infrastructure end to end: Chaos
// Mesh's own controller, against a real API server, kills a Strimzi-named
// pod; the node agent kills the lab broker it stands for, then brings pod
// and broker back.
func TestPodKillKillsTheLabBroker(t *testing.T) {
	env := k8stest.Shared(t)
	t.Logf("control plane started in %s", env.StartedIn.Round(time.Millisecond))
	lab := labtest.Start(t, labtest.Options{Brokers: 3, LoopbackPerBroker: true})
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	const victim = int32(3)
	agent := env.BrokerPods(t, lab.State, k8stest.StrimziName("my-cluster", "pool-a"), k8stest.StrimziLabels("my-cluster", "pool-a"))

	// The pods stand for the brokers: Running, Ready, podIP the broker's own address.
	for _, b := range lab.State.Brokers() {
		var pod corev1.Pod
		require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Namespace: env.Namespace, Name: "my-cluster-pool-a-" + itoa(b.ID)}, &pod))
		assert.Equal(t, corev1.PodRunning, pod.Status.Phase)
		assert.True(t, podReady(&pod))
		assert.Equal(t, localkafka.LoopbackAddr(b.ID), pod.Status.PodIP)
		assert.Equal(t, b.Addr, pod.Status.PodIP)
		assert.Equal(t, "Kafka", pod.Labels["strimzi.io/kind"])
	}
	before := podUID(ctx, t, env, victim)

	pc := &chaosv1alpha1.PodChaos{
		ObjectMeta: metav1.ObjectMeta{Name: "infra-pod-kill", Namespace: env.Namespace},
		Spec: chaosv1alpha1.PodChaosSpec{
			Action:      chaosv1alpha1.PodKillAction,
			GracePeriod: 0,
			ContainerSelector: chaosv1alpha1.ContainerSelector{PodSelector: chaosv1alpha1.PodSelector{
				Mode:     chaosv1alpha1.OneMode,
				Selector: chaosv1alpha1.PodSelectorSpec{Pods: map[string][]string{env.Namespace: {"my-cluster-pool-a-3"}}},
			}},
		},
	}
	created := time.Now()
	require.NoError(t, env.Client.Create(ctx, pc))

	// Chaos Mesh's controller selects, kills and records.
	var applied *metav1.Time
	require.Eventually(t, func() bool {
		var got chaosv1alpha1.PodChaos
		if env.Client.Get(ctx, client.ObjectKeyFromObject(pc), &got) != nil || !chaosCondition(&got, chaosv1alpha1.ConditionAllInjected) {
			return false
		}
		for _, r := range got.Status.Experiment.Records {
			if r.Id != env.Namespace+"/my-cluster-pool-a-3" {
				continue
			}
			for _, ev := range r.Events {
				if ev.Operation == chaosv1alpha1.Apply && ev.Type == chaosv1alpha1.TypeSucceeded && ev.Timestamp != nil {
					applied = ev.Timestamp
					return true
				}
			}
		}
		return false
	}, time.Minute, 100*time.Millisecond, "Chaos Mesh reports AllInjected and an Apply event for the pod")
	t.Logf("Chaos Mesh recorded the pod-kill at %s; AllInjected seen %s after the create", applied.Format(time.RFC3339), time.Since(created).Round(time.Millisecond))

	// The agent killed broker 3: Kafka fences it and its metadata drops it.
	cl, err := kafka.NewClient(kafka.ConnOptions{BootstrapServers: lab.Bootstrap, Timeout: 2 * time.Second}, "k8stest")
	require.NoError(t, err)
	defer cl.Close()
	require.Eventually(t, func() bool {
		c, err := kafka.Snapshot(ctx, cl, nil)
		return err == nil && len(c.Brokers) > 0 && !listed(c.Brokers, victim)
	}, time.Minute, 100*time.Millisecond, "Kafka's metadata stops listing broker %d", victim)
	assert.GreaterOrEqual(t, agent.Kills(), 1)
	t.Logf("broker %d gone from Kafka's metadata %s after the create", victim, time.Since(created).Round(time.Millisecond))

	// The pod comes back (a new one), Ready, and the broker with it.
	agent.WaitRunning(t, victim, 3*time.Minute)
	assert.NotEqual(t, before, podUID(ctx, t, env, victim), "the pod was recreated")
	var pod corev1.Pod
	require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Namespace: env.Namespace, Name: "my-cluster-pool-a-3"}, &pod))
	assert.True(t, podReady(&pod))
	assert.Equal(t, localkafka.LoopbackAddr(victim), pod.Status.PodIP)
	require.Eventually(t, func() bool {
		c, err := kafka.Snapshot(ctx, cl, nil)
		return err == nil && listed(c.Brokers, victim)
	}, time.Minute, 200*time.Millisecond, "broker %d back in Kafka's metadata", victim)
	assert.Equal(t, 1, agent.Kills(), "one pod deletion, one kill")
	t.Logf("pod Ready and broker %d back %s after the create (restart delay %s)", victim, time.Since(created).Round(time.Millisecond), k8stest.DefaultRestartDelay)

	// Deleting the PodChaos leaves nothing behind.
	require.NoError(t, env.Client.Delete(ctx, pc))
	require.Eventually(t, func() bool {
		var list chaosv1alpha1.PodChaosList
		return env.Client.List(ctx, &list, client.InNamespace(env.Namespace)) == nil && len(list.Items) == 0
	}, time.Minute, 100*time.Millisecond, "the PodChaos is gone (Chaos Mesh removed its finalizer)")
	require.NoError(t, agent.Err())
}

// TestAgentRefusalHelpers: the helpers the refusal tests use change the
// pods only, never the brokers.
func TestAgentRefusalHelpers(t *testing.T) {
	env := k8stest.Shared(t)
	lab := labtest.Start(t, labtest.Options{Brokers: 3, LoopbackPerBroker: true})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	agent := env.BrokerPods(t, lab.State, k8stest.StrimziName("my-cluster", "pool-a"), k8stest.StrimziLabels("my-cluster", "pool-a"))
	get := func(id int32) (*corev1.Pod, error) {
		var pod corev1.Pod
		err := env.Client.Get(ctx, client.ObjectKey{Namespace: env.Namespace, Name: agent.Pod(id)}, &pod)
		return &pod, err
	}

	agent.SetReady(t, 2, false)
	pod, err := get(2)
	require.NoError(t, err)
	assert.False(t, podReady(pod))
	assert.Equal(t, corev1.PodRunning, pod.Status.Phase)
	agent.SetReady(t, 2, true)
	pod, err = get(2)
	require.NoError(t, err)
	assert.True(t, podReady(pod))

	agent.SetPodIP(t, 2, "10.1.2.3")
	pod, err = get(2)
	require.NoError(t, err)
	assert.Equal(t, "10.1.2.3", pod.Status.PodIP)

	agent.DeletePod(t, 1)
	_, err = get(1)
	assert.True(t, apierrors.IsNotFound(err), "pod stays deleted, got %v", err)
	time.Sleep(3 * time.Second) // past the agent's resync: it must not act
	_, err = get(1)
	assert.True(t, apierrors.IsNotFound(err), "pod stays deleted, got %v", err)
	node, err := lab.State.Node(1)
	require.NoError(t, err)
	assert.True(t, node.Alive(), "DeletePod kills no broker")
	assert.Zero(t, agent.Kills())
	agent.RecreatePod(t, 1)
	pod, err = get(1)
	require.NoError(t, err)
	assert.True(t, podReady(pod))
	assert.Equal(t, localkafka.LoopbackAddr(1), pod.Status.PodIP)
	require.NoError(t, agent.Err())
}

// TestRestrictedUserCannotCreatePodChaos: the restricted kubeconfig reads
// pods but creating a PodChaos is forbidden (403).
func TestRestrictedUserCannotCreatePodChaos(t *testing.T) {
	env := k8stest.Shared(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg, err := clientcmd.BuildConfigFromFlags("", env.RestrictedKubeconfig)
	require.NoError(t, err)
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	require.NoError(t, err)
	var pods corev1.PodList
	require.NoError(t, c.List(ctx, &pods, client.InNamespace(env.Namespace)), "restricted may list pods")
	pc := &chaosv1alpha1.PodChaos{
		ObjectMeta: metav1.ObjectMeta{Name: "restricted-pod-kill", Namespace: env.Namespace},
		Spec: chaosv1alpha1.PodChaosSpec{Action: chaosv1alpha1.PodKillAction, ContainerSelector: chaosv1alpha1.ContainerSelector{PodSelector: chaosv1alpha1.PodSelector{
			Mode: chaosv1alpha1.OneMode, Selector: chaosv1alpha1.PodSelectorSpec{Pods: map[string][]string{env.Namespace: {"my-cluster-pool-a-3"}}},
		}}},
	}
	err = c.Create(ctx, pc)
	require.Error(t, err)
	assert.True(t, apierrors.IsForbidden(err), "want 403, got %v", err)
	assert.True(t, strings.Contains(err.Error(), `User "restricted" cannot create resource "podchaos"`), err.Error())
}

func itoa(id int32) string { return strconv.Itoa(int(id)) }

func listed(brokers []topology.Broker, id int32) bool {
	return slices.ContainsFunc(brokers, func(b topology.Broker) bool { return b.ID == id })
}

func podReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func chaosCondition(pc *chaosv1alpha1.PodChaos, typ chaosv1alpha1.ChaosConditionType) bool {
	for _, c := range pc.Status.Conditions {
		if c.Type == typ {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func podUID(ctx context.Context, t *testing.T, env *k8stest.Env, id int32) string {
	t.Helper()
	var pod corev1.Pod
	require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Namespace: env.Namespace, Name: "my-cluster-pool-a-" + itoa(id)}, &pod))
	return string(pod.UID)
}
