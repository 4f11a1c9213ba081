package chaosmesh

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/chaos-mesh/chaos-mesh/api/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/yaml"

	"github.com/kplan-dev/kplan/internal/chaos"
	"github.com/kplan-dev/kplan/internal/errkind"
	"github.com/kplan-dev/kplan/internal/testutil/golden"
)

func mustFault(t *testing.T, s string) chaos.Fault {
	t.Helper()
	f, err := chaos.ParseFault(s)
	require.NoError(t, err)
	return f
}

func brokers3() []chaos.Broker { return []chaos.Broker{broker(1), broker(2), broker(3)} }

// newNetFake is a fake API server with NetworkChaos's status subresource;
// react plays Chaos Mesh's controller on each NetworkChaos created.
func newNetFake(t *testing.T, react func(ctx context.Context, c client.Client, nc *v1alpha1.NetworkChaos) error, objs ...client.Object) client.WithWatch {
	t.Helper()
	s, err := Scheme()
	require.NoError(t, err)
	return fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).WithStatusSubresource(&v1alpha1.NetworkChaos{}).
		WithInterceptorFuncs(interceptor.Funcs{Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if err := c.Create(ctx, obj, opts...); err != nil {
				return err
			}
			nc, ok := obj.(*v1alpha1.NetworkChaos)
			if !ok || isDryRun(opts) || react == nil {
				return nil
			}
			return react(ctx, c, nc.DeepCopy())
		}}).Build()
}

// netStatus writes the status Chaos Mesh writes: injected at at, or a
// failed Apply with failure.
func netStatus(ctx context.Context, c client.Client, nc *v1alpha1.NetworkChaos, at time.Time, failure string) error {
	ts := metav1.NewTime(at)
	ev := v1alpha1.RecordEvent{Type: v1alpha1.TypeSucceeded, Operation: v1alpha1.Apply, Timestamp: &ts}
	injected := corev1.ConditionTrue
	if failure != "" {
		ev.Type, ev.Message, injected = v1alpha1.TypeFailed, failure, corev1.ConditionFalse
	}
	nc.Status.Conditions = []v1alpha1.ChaosCondition{
		{Type: v1alpha1.ConditionSelected, Status: corev1.ConditionTrue},
		{Type: v1alpha1.ConditionAllInjected, Status: injected},
	}
	nc.Status.Experiment.Records = []*v1alpha1.Record{{Id: ns + "/" + nc.Spec.Selector.Pods[ns][0], SelectorKey: ".", Events: []v1alpha1.RecordEvent{ev}}}
	return c.Status().Update(ctx, nc)
}

// TestNetworkManifestGolden: each fault's NetworkChaos through PlanFault,
// checked against a golden file and passed through Chaos Mesh's own
// defaulting and validation unchanged.
func TestNetworkManifestGolden(t *testing.T) {
	tests := []struct {
		name, fault string
		action      v1alpha1.NetworkChaosAction
		direction   v1alpha1.Direction
	}{
		{"delay", "delay:broker-3:100ms", v1alpha1.DelayAction, v1alpha1.To},
		{"delay-jitter", "delay:broker-3:200ms:20ms", v1alpha1.DelayAction, v1alpha1.To},
		{"loss", "loss:broker-3:10%", v1alpha1.LossAction, v1alpha1.To},
		{"partition", "partition:broker-3", v1alpha1.PartitionAction, v1alpha1.Both},
		{"bandwidth", "bandwidth:broker-3:2MB/s", v1alpha1.BandwidthAction, v1alpha1.To},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k := newKiller(t, strimziOpts(), newNetFake(t, nil, strimziPods(nil)...))
			plan, err := NewNetworker(k).PlanFault(context.Background(), broker(3), brokers3(), mustFault(t, tt.fault))
			require.NoError(t, err)
			assert.Equal(t, "pod kafka/my-cluster-pool-a-3", plan.Target)
			golden.AssertString(t, "networkchaos-"+tt.name+".yaml", plan.Manifest)

			// As kubectl sends it: YAML to JSON without a target struct, then
			// JSON. (sigs.k8s.io/yaml's Unmarshal converts against the struct
			// and allocates an empty spec.rate beside bandwidth.rate, which
			// Chaos Mesh's webhook then refuses.)
			js, err := yaml.YAMLToJSON([]byte(plan.Manifest))
			require.NoError(t, err)
			dec := json.NewDecoder(bytes.NewReader(js))
			dec.DisallowUnknownFields()
			var nc v1alpha1.NetworkChaos
			require.NoError(t, dec.Decode(&nc))
			assert.Equal(t, "kplan-run1", nc.Name)
			assert.Equal(t, ManagedByValue, nc.Labels[ManagedByLabel])
			assert.Equal(t, map[string][]string{ns: {"my-cluster-pool-a-3"}}, nc.Spec.Selector.Pods, "exactly one pod, named")
			assert.Equal(t, v1alpha1.OneMode, nc.Spec.Mode)
			assert.Equal(t, tt.action, nc.Spec.Action)
			assert.Equal(t, tt.direction, nc.Spec.Direction)
			if tt.action == v1alpha1.PartitionAction {
				require.NotNil(t, nc.Spec.Target)
				assert.Equal(t, map[string][]string{ns: {"my-cluster-pool-a-1", "my-cluster-pool-a-2"}}, nc.Spec.Target.Selector.Pods, "the other brokers")
			} else {
				assert.Nil(t, nc.Spec.Target)
			}
			defaulted := nc.DeepCopy()
			require.NoError(t, defaulted.Default(context.Background(), defaulted))
			assert.Equal(t, nc.Spec, defaulted.Spec, "Chaos Mesh's defaults change nothing")
			_, err = nc.ValidateCreate(context.Background(), &nc)
			assert.NoError(t, err, "Chaos Mesh's webhook accepts it")
		})
	}
}

// Chaos Mesh's validation is real: a netem direction "both" without a
// target is refused, and NetworkManifest never builds one.
func TestNetworkValidatorIsReal(t *testing.T) {
	nc, err := NetworkManifest(strimziOpts(), mustFault(t, "delay:broker-3:10ms"), "p", nil)
	require.NoError(t, err)
	nc.Spec.Direction = v1alpha1.Both
	_, err = nc.ValidateCreate(context.Background(), nc)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "direction")
}

func TestNetworkManifestDurations(t *testing.T) {
	assert.Equal(t, "90000ms", meshDuration(90*time.Second), "1m30s does not match Chaos Mesh's pattern")
	assert.Equal(t, "0.5ms", meshDuration(500*time.Microsecond))
	assert.Equal(t, "12.5", meshPercent(0.125))
	assert.Equal(t, "2000000bps", meshRate(2_000_000), "bps is bytes per second in Chaos Mesh")
	_, err := NetworkManifest(strimziOpts(), mustFault(t, "partition:broker-3"), "p", nil)
	require.Error(t, err)
	assert.Equal(t, chaos.FieldFault, errkind.FieldOf(err))
}

func TestNetworkLifecycle(t *testing.T) {
	t0 := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	c := newNetFake(t, func(ctx context.Context, c client.Client, nc *v1alpha1.NetworkChaos) error {
		return netStatus(ctx, c, nc, t0.Add(time.Second), "")
	}, strimziPods(nil)...)
	k := newKiller(t, strimziOpts(), c)
	k.now = stepClock(t0)
	n := NewNetworker(k)
	ctx := context.Background()
	at, err := n.InjectFault(ctx, broker(2), brokers3(), mustFault(t, "delay:broker-2:200ms"))
	require.NoError(t, err)
	assert.Equal(t, t0.Add(time.Second), at.UTC(), "Chaos Mesh's Apply time")
	assert.Equal(t, []string{"kplan-run1"}, n.Owned())
	var got v1alpha1.NetworkChaos
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "kplan-run1"}, &got))
	assert.Equal(t, "200ms", got.Spec.Delay.Latency)

	// A second fault (the next sequential leg) gets a name of its own.
	_, err = n.InjectFault(ctx, broker(1), brokers3(), mustFault(t, "loss:broker-1:5%"))
	require.NoError(t, err)
	assert.Equal(t, []string{"kplan-run1", "kplan-run1-2"}, n.Owned())

	require.NoError(t, n.ClearFault(ctx))
	require.NoError(t, n.ClearFault(ctx), "idempotent")
	assert.Empty(t, n.Owned())
	var list v1alpha1.NetworkChaosList
	require.NoError(t, c.List(ctx, &list))
	assert.Empty(t, list.Items)
	log := strings.Join(k.Log(), "\n")
	assert.Contains(t, log, "created NetworkChaos kafka/kplan-run1: delay:broker-2:200ms on pod kafka/my-cluster-pool-a-2")
	assert.Contains(t, log, "deleted NetworkChaos kafka/kplan-run1")
}

// Without chaos-daemon Chaos Mesh records a failed Apply: InjectFault waits
// out its timeout and names the failure; ClearFault still deletes the object.
func TestNetworkInjectFailureIsReported(t *testing.T) {
	c := newNetFake(t, func(ctx context.Context, c client.Client, nc *v1alpha1.NetworkChaos) error {
		return netStatus(ctx, c, nc, time.Now(), "no chaos-daemon on node")
	}, strimziPods(nil)...)
	o := strimziOpts()
	o.InjectTimeout = 50 * time.Millisecond
	k := newKiller(t, o, c)
	n := NewNetworker(k)
	_, err := n.InjectFault(context.Background(), broker(2), brokers3(), mustFault(t, "loss:broker-2:10%"))
	require.Error(t, err)
	assert.Equal(t, errkind.Runtime, errkind.KindOf(err))
	assert.ErrorContains(t, err, "its last failure: no chaos-daemon on node")
	require.NoError(t, n.ClearFault(context.Background()))
	var list v1alpha1.NetworkChaosList
	require.NoError(t, c.List(context.Background(), &list))
	assert.Empty(t, list.Items)
}

func TestNetworkPlanRefuses(t *testing.T) {
	ctx := context.Background()
	t.Run("existing object", func(t *testing.T) {
		objs := append(strimziPods(nil), &v1alpha1.NetworkChaos{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "kplan-run1"}})
		k := newKiller(t, strimziOpts(), newNetFake(t, nil, objs...))
		_, err := NewNetworker(k).PlanFault(ctx, broker(3), brokers3(), mustFault(t, "delay:broker-3:10ms"))
		require.Error(t, err)
		assert.Equal(t, errkind.Refused, errkind.KindOf(err))
		assert.ErrorContains(t, err, "a NetworkChaos kafka/kplan-run1 already exists")
	})
	t.Run("partition target missing", func(t *testing.T) {
		pods := strimziPods(nil)[1:] // no broker 1
		k := newKiller(t, strimziOpts(), newNetFake(t, nil, pods...))
		_, err := NewNetworker(k).PlanFault(ctx, broker(3), brokers3(), mustFault(t, "partition:broker-3"))
		require.Error(t, err)
		assert.Equal(t, errkind.Refused, errkind.KindOf(err))
		assert.ErrorContains(t, err, "broker 1's pod kafka/my-cluster-pool-a-1 does not exist")
	})
	t.Run("a CPU cap", func(t *testing.T) {
		k := newKiller(t, strimziOpts(), newNetFake(t, nil, strimziPods(nil)...))
		_, err := NewNetworker(k).PlanFault(ctx, broker(3), brokers3(), mustFault(t, "cpu:broker-3:20%"))
		require.Error(t, err)
		assert.Equal(t, errkind.Usage, errkind.KindOf(err))
		assert.Equal(t, chaos.FieldFault, errkind.FieldOf(err))
		assert.ErrorContains(t, err, "a CPU cap is the lab's only")
	})
	t.Run("pod is not the broker", func(t *testing.T) {
		k := newKiller(t, strimziOpts(), newNetFake(t, nil, strimziPods(nil)...))
		b := broker(3)
		b.Host = "10.9.9.9"
		_, err := NewNetworker(k).PlanFault(ctx, b, brokers3(), mustFault(t, "delay:broker-3:10ms"))
		require.Error(t, err)
		assert.Equal(t, errkind.Refused, errkind.KindOf(err))
	})
}

func TestCleanupNetworkDeletesOnlyKplanObjects(t *testing.T) {
	mine := &v1alpha1.NetworkChaos{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "kplan-x", Labels: map[string]string{ManagedByLabel: ManagedByValue}}}
	theirs := &v1alpha1.NetworkChaos{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "other"}}
	c := newNetFake(t, nil, mine, theirs)
	got, err := CleanupNetworkWithClient(context.Background(), c, ns)
	require.NoError(t, err)
	assert.Equal(t, []string{"networkchaos/kplan-x"}, got)
	var list v1alpha1.NetworkChaosList
	require.NoError(t, c.List(context.Background(), &list))
	require.Len(t, list.Items, 1)
	assert.Equal(t, "other", list.Items[0].Name)
}
