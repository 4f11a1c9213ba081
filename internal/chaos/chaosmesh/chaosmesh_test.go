package chaosmesh

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chaos-mesh/chaos-mesh/api/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/yaml"

	"github.com/kplan-dev/kplan/internal/chaos"
	"github.com/kplan-dev/kplan/internal/errkind"
	"github.com/kplan-dev/kplan/internal/testutil/golden"
)

const ns = "kafka"

// strimziOpts are the options of a Strimzi cluster "my-cluster" whose
// broker pool is found from the pods' labels.
func strimziOpts() Options {
	return Options{Namespace: ns, RunID: "run1", StrimziCluster: "my-cluster"}
}

// pod is a Running, Ready broker pod; mods change it.
func pod(name, ip string, labels map[string]string, mods ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels, UID: types.UID("uid-" + name)},
		Status: corev1.PodStatus{
			Phase:      corev1.PodRunning,
			PodIP:      ip,
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
			ContainerStatuses: []corev1.ContainerStatus{
				{Name: "kafka", Ready: true},
			},
		},
	}
	for _, m := range mods {
		m(p)
	}
	return p
}

func strimziLabels(pool string) map[string]string {
	return map[string]string{strimziClusterLabel: "my-cluster", strimziPoolLabel: pool, strimziBrokerLabel: "true"}
}

// strimziPods are brokers 1..3 of pool pool-a at 127.0.0.(1+id).
func strimziPods(mods map[int32]func(*corev1.Pod)) []client.Object {
	var out []client.Object
	for id := int32(1); id <= 3; id++ {
		var ms []func(*corev1.Pod)
		if m := mods[id]; m != nil {
			ms = append(ms, m)
		}
		out = append(out, pod(fmt.Sprintf("my-cluster-pool-a-%d", id), fmt.Sprintf("127.0.0.%d", 1+id), strimziLabels("pool-a"), ms...))
	}
	return out
}

func newFake(t *testing.T, funcs *interceptor.Funcs, objs ...client.Object) client.WithWatch {
	t.Helper()
	s, err := Scheme()
	require.NoError(t, err)
	b := fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).WithStatusSubresource(&v1alpha1.PodChaos{})
	if funcs != nil {
		b = b.WithInterceptorFuncs(*funcs)
	}
	return b.Build()
}

func newKiller(t *testing.T, o Options, c client.Client) *Killer {
	t.Helper()
	k, err := NewWithClient(o, c)
	require.NoError(t, err)
	k.poll = time.Millisecond
	k.selectGrace = 0
	return k
}

func broker(id int32) chaos.Broker {
	return chaos.Broker{ID: id, Host: fmt.Sprintf("127.0.0.%d", 1+id), Port: 9092}
}

// TestManifestGolden covers each pod naming and action through Plan: the
// pod named, the selector, the action's fields. Every manifest passes Chaos
// Mesh's own defaulting and validating webhook methods unchanged.
func TestManifestGolden(t *testing.T) {
	tests := []struct {
		name string
		o    Options
		pod  *corev1.Pod
		b    chaos.Broker
	}{
		{
			name: "strimzi-pod-kill",
			o:    strimziOpts(),
			pod:  pod("my-cluster-pool-a-3", "10.0.0.3", strimziLabels("pool-a")),
			b:    chaos.Broker{ID: 3, Host: "my-cluster-pool-a-3.my-cluster-kafka-brokers.kafka.svc", Port: 9092},
		},
		{
			name: "strimzi-pod-failure",
			o: func() Options {
				o := strimziOpts()
				o.Action = ActionPodFailure
				o.Duration = 2 * time.Minute
				return o
			}(),
			pod: pod("my-cluster-pool-a-3", "10.0.0.3", strimziLabels("pool-a")),
			b:   chaos.Broker{ID: 3, Host: "10.0.0.3", Port: 9092},
		},
		{
			name: "strimzi-container-kill",
			o:    func() Options { o := strimziOpts(); o.Action = ActionContainerKill; o.Container = "kafka"; return o }(),
			pod:  pod("my-cluster-pool-a-3", "10.0.0.3", strimziLabels("pool-a")),
			b:    chaos.Broker{ID: 3, Host: "my-cluster-pool-a-3", Port: 9092},
		},
		{
			name: "bitnami-pod-kill",
			o:    Options{Namespace: ns, RunID: "run1", PodNaming: NamingBitnami, BitnamiRelease: "kafka"},
			pod:  pod("kafka-broker-2", "10.0.0.7", nil),
			b:    chaos.Broker{ID: 102, Host: "kafka-broker-2.kafka-broker-headless.kafka.svc.cluster.local", Port: 9092},
		},
		{
			name: "statefulset-pod-kill",
			o:    Options{Namespace: ns, RunID: "run1", PodNaming: NamingStatefulSet, StatefulSet: "kafka", StatefulSetOffset: 1},
			pod:  pod("kafka-2", "10.0.0.8", nil),
			b:    chaos.Broker{ID: 3, Host: "kafka-2.kafka-headless", Port: 9092},
		},
		{
			name: "template-pod-kill",
			o:    Options{Namespace: ns, RunID: "run1", PodNaming: NamingTemplate, PodTemplate: "broker-{id}-0"},
			pod:  pod("broker-3-0", "10.0.0.9", nil),
			b:    chaos.Broker{ID: 3, Host: "10.0.0.9", Port: 9092},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k := newKiller(t, tt.o, newFake(t, nil, tt.pod))
			plan, err := k.Plan(context.Background(), tt.b)
			require.NoError(t, err)
			assert.Equal(t, "pod kafka/"+tt.pod.Name, plan.Target)
			assert.Len(t, plan.Steps, 4)
			golden.AssertString(t, "podchaos-"+tt.name+".yaml", plan.Manifest)

			var pc v1alpha1.PodChaos
			require.NoError(t, yaml.UnmarshalStrict([]byte(plan.Manifest), &pc))
			assert.Equal(t, map[string][]string{ns: {tt.pod.Name}}, pc.Spec.Selector.Pods, "exactly one pod, named")
			assert.Equal(t, v1alpha1.OneMode, pc.Spec.Mode)
			assert.Empty(t, pc.Spec.Selector.LabelSelectors)
			assert.Empty(t, pc.Spec.Selector.ExpressionSelectors)
			defaulted := pc.DeepCopy()
			require.NoError(t, defaulted.Default(context.Background(), defaulted))
			assert.Equal(t, pc.Spec, defaulted.Spec, "Chaos Mesh's defaults change nothing")
			_, err = pc.ValidateCreate(context.Background(), &pc)
			assert.NoError(t, err, "Chaos Mesh's webhook accepts it")
		})
	}
}

// TestChaosMeshValidatorIsReal shows the webhook method the golden test
// relies on does refuse a bad PodChaos.
func TestChaosMeshValidatorIsReal(t *testing.T) {
	o := strimziOpts()
	o.Action, o.Container = ActionContainerKill, "kafka"
	pc, err := Manifest(o, "my-cluster-pool-a-3")
	require.NoError(t, err)
	pc.Spec.ContainerNames = nil
	_, err = pc.ValidateCreate(context.Background(), pc)
	assert.ErrorContains(t, err, "containerNames")
}

func TestManifestWithoutRunIDGeneratesName(t *testing.T) {
	pc, err := Manifest(Options{Namespace: ns}, "kafka-0")
	require.NoError(t, err)
	assert.Equal(t, "kplan-", pc.GenerateName)
	assert.Empty(t, pc.Name)
	assert.Equal(t, ManagedByValue, pc.Labels[ManagedByLabel])
}

func TestValidateNamesTheField(t *testing.T) {
	tests := []struct {
		name  string
		o     Options
		field string
	}{
		{"no namespace", Options{}, "namespace"},
		{"bad namespace", Options{Namespace: "Kafka_NS"}, "namespace"},
		{"bad action", Options{Namespace: ns, Action: "pod-explode"}, "action"},
		{"pod-failure without duration", Options{Namespace: ns, Action: ActionPodFailure}, "duration"},
		{"duration on pod-kill", Options{Namespace: ns, Duration: time.Minute}, "duration"},
		{"container-kill without container", Options{Namespace: ns, Action: ActionContainerKill}, "container"},
		{"container on pod-kill", Options{Namespace: ns, Container: "kafka"}, "container"},
		{"bad naming", Options{Namespace: ns, PodNaming: "guess"}, "pod-naming"},
		{"bitnami without release", Options{Namespace: ns, PodNaming: NamingBitnami}, "bitnami-release"},
		{"bitnami negative min id", Options{Namespace: ns, PodNaming: NamingBitnami, BitnamiRelease: "k", BitnamiMinID: -1}, "bitnami-min-id"},
		{"statefulset without name", Options{Namespace: ns, PodNaming: NamingStatefulSet}, "statefulset"},
		{"statefulset negative offset", Options{Namespace: ns, PodNaming: NamingStatefulSet, StatefulSet: "k", StatefulSetOffset: -1}, "statefulset-offset"},
		{"template without template", Options{Namespace: ns, PodNaming: NamingTemplate}, "pod-template"},
		{"template without id", Options{Namespace: ns, PodNaming: NamingTemplate, PodTemplate: "kafka-0"}, "pod-template"},
		{"template not a name", Options{Namespace: ns, PodNaming: NamingTemplate, PodTemplate: "Kafka_{id}"}, "pod-template"},
		{"template with other naming", Options{Namespace: ns, PodTemplate: "kafka-{id}"}, "pod-template"},
		{"bad strimzi pool", Options{Namespace: ns, StrimziPool: "Pool A"}, "strimzi-pool"},
		{"bad run id", Options{Namespace: ns, RunID: "Run/1"}, "run-id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.o.Validate()
			require.Error(t, err)
			assert.Equal(t, errkind.Usage, errkind.KindOf(err))
			assert.Equal(t, tt.field, errkind.FieldOf(err))
			assert.NotContains(t, err.Error(), "\n")
			_, err = NewWithClient(tt.o, newFake(t, nil))
			assert.Equal(t, tt.field, errkind.FieldOf(err), "NewWithClient validates")
		})
	}
}

func TestPodNaming(t *testing.T) {
	tests := []struct {
		name string
		o    Options
		id   int32
		want string
	}{
		{"strimzi", Options{PodNaming: NamingStrimzi}, 3, "c-p-3"},
		{"bitnami default min id", Options{PodNaming: NamingBitnami, BitnamiRelease: "kafka"}.withDefaults(), 100, "kafka-broker-0"},
		{"bitnami", Options{PodNaming: NamingBitnami, BitnamiRelease: "kafka", BitnamiMinID: 10}, 12, "kafka-broker-2"},
		{"statefulset", Options{PodNaming: NamingStatefulSet, StatefulSet: "kafka", StatefulSetOffset: 1}, 1, "kafka-0"},
		{"template", Options{PodNaming: NamingTemplate, PodTemplate: "kafka-{id}"}, 12, "kafka-12"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.o.staticPodName(tt.id, "c", "p")
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
	_, err := Options{PodNaming: NamingBitnami, BitnamiRelease: "kafka", BitnamiMinID: 100}.staticPodName(3, "", "")
	assert.Equal(t, "bitnami-min-id", errkind.FieldOf(err))
	_, err = Options{PodNaming: NamingStatefulSet, StatefulSet: "kafka", StatefulSetOffset: 5}.staticPodName(3, "", "")
	assert.Equal(t, "statefulset-offset", errkind.FieldOf(err))
}

// TestHostNamesPod: the identity check matches the pod's name, names under
// it and its IPs, and nothing that merely contains the id (Litmus's
// strings.ContainsAny mapped broker 3 to any pod with a 3 in its name).
func TestHostNamesPod(t *testing.T) {
	p := pod("my-cluster-pool-a-3", "10.0.0.3", nil, func(p *corev1.Pod) {
		p.Status.PodIPs = []corev1.PodIP{{IP: "10.0.0.3"}, {IP: "fd00::3"}}
	})
	tests := []struct {
		host string
		want bool
	}{
		{"my-cluster-pool-a-3", true},
		{"my-cluster-pool-a-3.my-cluster-kafka-brokers.kafka.svc", true},
		{"MY-CLUSTER-POOL-A-3.my-cluster-kafka-brokers.kafka.svc.cluster.local.", true},
		{"10.0.0.3", true},
		{"[fd00::3]", true},
		{"my-cluster-pool-a-30", false},
		{"my-cluster-pool-a-30.my-cluster-kafka-brokers.kafka.svc", false},
		{"my-cluster-pool-a-33", false},
		{"pool-a-3", false},
		{"10.0.0.33", false},
		{"", false},
	}
	for _, tt := range tests {
		t.Run(tt.host, func(t *testing.T) {
			assert.Equal(t, tt.want, hostNamesPod(tt.host, p))
		})
	}
}

// TestPlanRefuses: each failed check is one line of kind refused (or the
// kind the issue gives it), naming what differs.
func TestPlanRefuses(t *testing.T) {
	forbidden := &interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
		return apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, key.Name, fmt.Errorf("user %q cannot get resource %q", "restricted", "pods"))
	}}
	forbiddenCreate := &interceptor.Funcs{Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
		return apierrors.NewForbidden(schema.GroupResource{Group: "chaos-mesh.org", Resource: "podchaos"}, obj.GetName(), fmt.Errorf("user %q cannot create resource %q", "restricted", "podchaos"))
	}}
	noCRD := &interceptor.Funcs{Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
		return &meta.NoKindMatchError{GroupKind: schema.GroupKind{Group: "chaos-mesh.org", Kind: "PodChaos"}, SearchedVersions: []string{"v1alpha1"}}
	}}
	crd404 := &interceptor.Funcs{Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
		return apierrors.NewNotFound(schema.GroupResource{Group: "chaos-mesh.org", Resource: "podchaos"}, "")
	}}
	tests := []struct {
		name    string
		o       Options
		funcs   *interceptor.Funcs
		objs    []client.Object
		b       chaos.Broker
		kind    errkind.Kind
		field   string
		message []string
	}{
		{
			name: "pod missing", o: strimziOpts(), objs: strimziPods(nil)[:2], b: broker(3),
			kind: errkind.Refused, message: []string{"broker 3's pod kafka/my-cluster-pool-a-3 does not exist"},
		},
		{
			name: "pod not running", o: strimziOpts(), b: broker(3),
			objs: strimziPods(map[int32]func(*corev1.Pod){3: func(p *corev1.Pod) { p.Status.Phase = corev1.PodPending }}),
			kind: errkind.Refused, message: []string{"kafka/my-cluster-pool-a-3 is Pending, not Running"},
		},
		{
			name: "pod not ready", o: strimziOpts(), b: broker(3),
			objs: strimziPods(map[int32]func(*corev1.Pod){3: func(p *corev1.Pod) { p.Status.Conditions[0].Status = corev1.ConditionFalse }}),
			kind: errkind.Refused, message: []string{"kafka/my-cluster-pool-a-3 is Running but not Ready"},
		},
		{
			name: "pod being deleted", o: strimziOpts(), b: broker(3),
			objs: strimziPods(map[int32]func(*corev1.Pod){3: func(p *corev1.Pod) {
				p.DeletionTimestamp = &metav1.Time{Time: time.Unix(1, 0)}
				p.Finalizers = []string{"test/keep"}
			}}),
			kind: errkind.Refused, message: []string{"is being deleted"},
		},
		{
			name: "identity mismatch", b: chaos.Broker{ID: 2, Host: "127.0.0.3", Port: 9092},
			o:    Options{Namespace: ns, RunID: "run1", PodNaming: NamingTemplate, PodTemplate: "kafka-{id}"},
			objs: []client.Object{pod("kafka-2", "127.0.0.4", nil)},
			kind: errkind.Refused, message: []string{`broker 2 advertises host "127.0.0.3"`, "pod kafka/kafka-2 (IP 127.0.0.4)"},
		},
		{
			name: "several strimzi pools", o: strimziOpts(), b: broker(3),
			objs: append(strimziPods(nil), pod("my-cluster-pool-b-4", "127.0.0.5", strimziLabels("pool-b"))),
			kind: errkind.Usage, field: "strimzi-pool", message: []string{"several broker pools (pool-a, pool-b)"},
		},
		{
			name: "no strimzi pods", o: Options{Namespace: ns, RunID: "run1"}, b: broker(3),
			kind: errkind.Usage, field: "strimzi-cluster", message: []string{"no pod in namespace kafka"},
		},
		{
			name: "forbidden to read pods", o: Options{Namespace: ns, RunID: "run1", StrimziCluster: "my-cluster", StrimziPool: "pool-a"},
			funcs: forbidden, objs: strimziPods(nil), b: broker(3),
			kind: errkind.Refused, message: []string{"RBAC forbids kplan to get pods in namespace kafka", RBACDoc},
		},
		{
			name: "forbidden to create podchaos", o: strimziOpts(), funcs: forbiddenCreate, objs: strimziPods(nil), b: broker(3),
			kind: errkind.Refused, message: []string{"RBAC forbids kplan to create podchaos in namespace kafka", RBACDoc},
		},
		{
			name: "no CRD", o: strimziOpts(), funcs: noCRD, objs: strimziPods(nil), b: broker(3),
			kind: errkind.Runtime, message: []string{"Chaos Mesh's CRDs are not installed"},
		},
		{
			name: "no CRD 404", o: strimziOpts(), funcs: crd404, objs: strimziPods(nil), b: broker(3),
			kind: errkind.Runtime, message: []string{"Chaos Mesh's CRDs are not installed"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newFake(t, tt.funcs, tt.objs...)
			k := newKiller(t, tt.o, c)
			_, err := k.Plan(context.Background(), tt.b)
			require.Error(t, err)
			assert.Equal(t, tt.kind, errkind.KindOf(err), err.Error())
			assert.Equal(t, tt.field, errkind.FieldOf(err))
			for _, m := range tt.message {
				assert.Contains(t, err.Error(), m)
			}
			assert.NotContains(t, err.Error(), "\n")

			// Kill checks the same before creating anything.
			_, err = k.Kill(context.Background(), tt.b)
			require.Error(t, err)
			assert.Equal(t, tt.kind, errkind.KindOf(err))
			var list v1alpha1.PodChaosList
			if c.List(context.Background(), &list) == nil {
				assert.Empty(t, list.Items, "a refused kill creates nothing")
			}
			assert.NoError(t, k.Cleanup(context.Background()))
		})
	}
}

// fakeChaosMesh plays Chaos Mesh's controller on the fake client: when
// kplan creates a PodChaos, it does what react says (kill the pod, write
// the status).
type fakeChaosMesh struct {
	mu      sync.Mutex
	react   func(ctx context.Context, c client.Client, pc *v1alpha1.PodChaos) error
	created []string
}

func (f *fakeChaosMesh) funcs() *interceptor.Funcs {
	return &interceptor.Funcs{Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
		if err := c.Create(ctx, obj, opts...); err != nil {
			return err
		}
		pc, ok := obj.(*v1alpha1.PodChaos)
		if !ok || isDryRun(opts) {
			return nil
		}
		f.mu.Lock()
		f.created = append(f.created, pc.Name)
		f.mu.Unlock()
		if f.react == nil {
			return nil
		}
		return f.react(ctx, c, pc.DeepCopy())
	}}
}

func isDryRun(opts []client.CreateOption) bool {
	co := &client.CreateOptions{}
	co.ApplyOptions(opts)
	return len(co.DryRun) > 0
}

// inject writes the status Chaos Mesh writes after a successful injection
// into pod at t.
func inject(ctx context.Context, c client.Client, pc *v1alpha1.PodChaos, pod string, at time.Time) error {
	pc.Status.Conditions = []v1alpha1.ChaosCondition{
		{Type: v1alpha1.ConditionSelected, Status: corev1.ConditionTrue},
		{Type: v1alpha1.ConditionAllInjected, Status: corev1.ConditionTrue},
		{Type: v1alpha1.ConditionAllRecovered, Status: corev1.ConditionFalse},
	}
	ts := metav1.NewTime(at)
	pc.Status.Experiment.Records = []*v1alpha1.Record{{
		Id: ns + "/" + pod, SelectorKey: ".", Phase: v1alpha1.Injected, InjectedCount: 1,
		Events: []v1alpha1.RecordEvent{{Type: v1alpha1.TypeSucceeded, Operation: v1alpha1.Apply, Timestamp: &ts}},
	}}
	return c.Status().Update(ctx, pc)
}

// stepClock returns a clock that advances one second per reading from t0.
func stepClock(t0 time.Time) func() time.Time {
	var mu sync.Mutex
	n := 0
	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		n++
		return t0.Add(time.Duration(n-1) * time.Second)
	}
}

func TestPodKillLifecycle(t *testing.T) {
	t0 := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	fcm := &fakeChaosMesh{}
	fcm.react = func(ctx context.Context, c client.Client, pc *v1alpha1.PodChaos) error {
		name := pc.Spec.Selector.Pods[ns][0]
		old := &corev1.Pod{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, old); err != nil {
			return err
		}
		if err := c.Delete(ctx, old); err != nil {
			return err
		}
		// The StatefulSet recreates the pod: same name, new UID, Ready.
		p := pod(name, old.Status.PodIP, old.Labels)
		p.UID = "uid-recreated"
		if err := c.Create(ctx, p); err != nil {
			return err
		}
		return inject(ctx, c, pc, name, t0.Add(time.Second))
	}
	c := newFake(t, fcm.funcs(), strimziPods(nil)...)
	k := newKiller(t, strimziOpts(), c)
	k.now = stepClock(t0)
	ctx := context.Background()

	plan, err := k.Plan(ctx, broker(3))
	require.NoError(t, err)
	assert.Empty(t, fcm.created, "Plan creates nothing")
	assert.Contains(t, plan.Manifest, "name: kplan-run1")

	at, err := k.Kill(ctx, broker(3))
	require.NoError(t, err)
	assert.Equal(t, t0.Add(time.Second), at.UTC(), "the kill time is Chaos Mesh's Apply event")
	assert.Equal(t, []string{"kplan-run1"}, fcm.created)

	var got v1alpha1.PodChaos
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "kplan-run1"}, &got))
	assert.Equal(t, map[string]string{ManagedByLabel: ManagedByValue, RunIDLabel: "run1"}, got.Labels)
	assert.Equal(t, map[string][]string{ns: {"my-cluster-pool-a-3"}}, got.Spec.Selector.Pods)

	require.NoError(t, k.Restore(ctx, broker(3)))
	require.NoError(t, k.Cleanup(ctx))
	require.NoError(t, k.Cleanup(ctx), "Cleanup is idempotent")
	var list v1alpha1.PodChaosList
	require.NoError(t, c.List(ctx, &list))
	assert.Empty(t, list.Items)
	log := strings.Join(k.Log(), "\n")
	assert.Contains(t, log, "created PodChaos kafka/kplan-run1")
	assert.Contains(t, log, "injected PodChaos kafka/kplan-run1 into pod kafka/my-cluster-pool-a-3")
	assert.Contains(t, log, "deleted PodChaos kafka/kplan-run1")
}

// TestKillTimeStaysInTheWatchedInterval: Chaos Mesh's record has a
// resolution of one second and its own clock; the kill time never falls
// before kplan asked for the kill.
func TestKillTimeStaysInTheWatchedInterval(t *testing.T) {
	t0 := time.Date(2026, 11, 23, 12, 0, 0, 500_000_000, time.UTC)
	fcm := &fakeChaosMesh{react: func(ctx context.Context, c client.Client, pc *v1alpha1.PodChaos) error {
		return inject(ctx, c, pc, "my-cluster-pool-a-3", t0.Truncate(time.Second))
	}}
	k := newKiller(t, strimziOpts(), newFake(t, fcm.funcs(), strimziPods(nil)...))
	k.now = stepClock(t0)
	at, err := k.Kill(context.Background(), broker(3))
	require.NoError(t, err)
	assert.Equal(t, t0, at.UTC())
}

func TestPodFailureRestoreDeletesTheChaos(t *testing.T) {
	fcm := &fakeChaosMesh{react: func(ctx context.Context, c client.Client, pc *v1alpha1.PodChaos) error {
		return inject(ctx, c, pc, "my-cluster-pool-a-2", time.Now())
	}}
	o := strimziOpts()
	o.Action, o.Duration = ActionPodFailure, time.Hour
	c := newFake(t, fcm.funcs(), strimziPods(nil)...)
	k := newKiller(t, o, c)
	ctx := context.Background()
	_, err := k.Kill(ctx, broker(2))
	require.NoError(t, err)
	var got v1alpha1.PodChaos
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "kplan-run1"}, &got))
	require.NotNil(t, got.Spec.Duration)
	assert.Equal(t, "1h0m0s", *got.Spec.Duration)

	require.NoError(t, k.Restore(ctx, broker(2)))
	err = c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "kplan-run1"}, &got)
	assert.True(t, apierrors.IsNotFound(err), "Restore deleted the PodChaos: %v", err)
	require.NoError(t, k.Cleanup(ctx))
}

func TestContainerKillRestoreWaitsForTheRestart(t *testing.T) {
	fcm := &fakeChaosMesh{}
	fcm.react = func(ctx context.Context, c client.Client, pc *v1alpha1.PodChaos) error {
		if err := inject(ctx, c, pc, "my-cluster-pool-a-2/kafka", time.Now()); err != nil {
			return err
		}
		// The kubelet restarts the container: same pod, one more restart.
		p := &corev1.Pod{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "my-cluster-pool-a-2"}, p); err != nil {
			return err
		}
		p.Status.ContainerStatuses[0].RestartCount = 1
		return c.Status().Update(ctx, p)
	}
	o := strimziOpts()
	o.Action, o.Container = ActionContainerKill, "kafka"
	o.RestoreTimeout = time.Second
	c := newFake(t, fcm.funcs(), strimziPods(nil)...)
	k := newKiller(t, o, c)
	ctx := context.Background()
	_, err := k.Kill(ctx, broker(2))
	require.NoError(t, err)
	require.NoError(t, k.Restore(ctx, broker(2)))
	require.NoError(t, k.Cleanup(ctx))
}

func TestRestoreTimesOutWhenThePodNeverComesBack(t *testing.T) {
	fcm := &fakeChaosMesh{react: func(ctx context.Context, c client.Client, pc *v1alpha1.PodChaos) error {
		p := &corev1.Pod{}
		p.Namespace, p.Name = ns, "my-cluster-pool-a-1"
		if err := c.Delete(ctx, p); err != nil {
			return err
		}
		return inject(ctx, c, pc, "my-cluster-pool-a-1", time.Now())
	}}
	o := strimziOpts()
	o.RestoreTimeout = 20 * time.Millisecond
	k := newKiller(t, o, newFake(t, fcm.funcs(), strimziPods(nil)...))
	ctx := context.Background()
	_, err := k.Kill(ctx, broker(1))
	require.NoError(t, err)
	err = k.Restore(ctx, broker(1))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "pod kafka/my-cluster-pool-a-1 was not Ready again within 20ms")
	require.NoError(t, k.Cleanup(ctx))
}

func TestKillFailures(t *testing.T) {
	tests := []struct {
		name    string
		react   func(ctx context.Context, c client.Client, pc *v1alpha1.PodChaos) error
		message string
	}{
		{
			name: "selected false",
			react: func(ctx context.Context, c client.Client, pc *v1alpha1.PodChaos) error {
				pc.Status.Conditions = []v1alpha1.ChaosCondition{{Type: v1alpha1.ConditionSelected, Status: corev1.ConditionFalse}}
				return c.Status().Update(ctx, pc)
			},
			message: "Chaos Mesh selected no pod for PodChaos kafka/kplan-run1 (Selected=False): it did not find pod kafka/my-cluster-pool-a-3",
		},
		{
			name:    "timeout",
			message: "Chaos Mesh did not report the injection of PodChaos kafka/kplan-run1 within 20ms (is chaos-controller-manager running?)",
		},
		{
			name: "timeout after failed injections",
			react: func(ctx context.Context, c client.Client, pc *v1alpha1.PodChaos) error {
				ts := metav1.Now()
				pc.Status.Conditions = []v1alpha1.ChaosCondition{{Type: v1alpha1.ConditionSelected, Status: corev1.ConditionTrue}}
				pc.Status.Experiment.Records = []*v1alpha1.Record{{Id: ns + "/my-cluster-pool-a-3", Phase: v1alpha1.NotInjected,
					Events: []v1alpha1.RecordEvent{{Type: v1alpha1.TypeFailed, Operation: v1alpha1.Apply, Message: "chaos-daemon unreachable", Timestamp: &ts}}}}
				return c.Status().Update(ctx, pc)
			},
			message: "its last failure: chaos-daemon unreachable",
		},
		{
			name: "deleted under it",
			react: func(ctx context.Context, c client.Client, pc *v1alpha1.PodChaos) error {
				return c.Delete(ctx, pc)
			},
			message: "PodChaos kafka/kplan-run1 disappeared before Chaos Mesh reported the injection",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fcm := &fakeChaosMesh{react: tt.react}
			o := strimziOpts()
			o.InjectTimeout = 20 * time.Millisecond
			c := newFake(t, fcm.funcs(), strimziPods(nil)...)
			k := newKiller(t, o, c)
			_, err := k.Kill(context.Background(), broker(3))
			require.Error(t, err)
			assert.Equal(t, errkind.Runtime, errkind.KindOf(err))
			assert.Contains(t, err.Error(), tt.message)
			assert.NotContains(t, err.Error(), "\n")
			require.NoError(t, k.Cleanup(context.Background()), "Cleanup after a failed Kill")
			var list v1alpha1.PodChaosList
			require.NoError(t, c.List(context.Background(), &list))
			assert.Empty(t, list.Items)
		})
	}
}

// TestSelectedFalseIsForgivenWhileChaosMeshSelects: a Selected=False
// written before the records controller selected the pod does not fail
// the kill.
func TestSelectedFalseIsForgivenWhileChaosMeshSelects(t *testing.T) {
	var c client.WithWatch
	gets := 0
	funcs := &interceptor.Funcs{
		Create: func(ctx context.Context, cl client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if err := cl.Create(ctx, obj, opts...); err != nil {
				return err
			}
			pc, ok := obj.(*v1alpha1.PodChaos)
			if !ok || isDryRun(opts) {
				return nil
			}
			pc = pc.DeepCopy()
			pc.Status.Conditions = []v1alpha1.ChaosCondition{{Type: v1alpha1.ConditionSelected, Status: corev1.ConditionFalse}}
			return cl.Status().Update(ctx, pc)
		},
		Get: func(ctx context.Context, cl client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if pc, ok := obj.(*v1alpha1.PodChaos); ok {
				gets++
				if gets == 3 {
					cur := &v1alpha1.PodChaos{}
					if err := cl.Get(ctx, key, cur); err != nil {
						return err
					}
					if err := inject(ctx, cl, cur, "my-cluster-pool-a-3", time.Now()); err != nil {
						return err
					}
				}
				return cl.Get(ctx, key, pc, opts...)
			}
			return cl.Get(ctx, key, obj, opts...)
		},
	}
	c = newFake(t, funcs, strimziPods(nil)...)
	k := newKiller(t, strimziOpts(), c)
	k.selectGrace = time.Hour
	_, err := k.Kill(context.Background(), broker(3))
	require.NoError(t, err)
	assert.Equal(t, 3, gets)
}

func TestKillCreateErrors(t *testing.T) {
	deny := func(verb string) error {
		return apierrors.NewForbidden(schema.GroupResource{Group: "chaos-mesh.org", Resource: "podchaos"}, "kplan-run1", fmt.Errorf("user cannot %s", verb))
	}
	forbidden := &interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if isDryRun(opts) {
				return c.Create(ctx, obj, opts...)
			}
			return deny("create")
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			return deny("delete")
		},
	}
	k := newKiller(t, strimziOpts(), newFake(t, forbidden, strimziPods(nil)...))
	_, err := k.Kill(context.Background(), broker(3))
	assert.Equal(t, errkind.Refused, errkind.KindOf(err))
	assert.ErrorContains(t, err, "RBAC forbids kplan to create podchaos in namespace kafka")
	// Regression: the API server said no, so nothing was created and
	// Cleanup has nothing to delete (found by the integration test, where
	// the restricted user may not delete either).
	assert.NoError(t, k.Cleanup(context.Background()))

	// A create cut short without an answer may have happened: Cleanup
	// deletes it.
	lost := &interceptor.Funcs{Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
		if err := c.Create(ctx, obj, opts...); err != nil {
			return err
		}
		if isDryRun(opts) {
			return nil
		}
		return context.Canceled
	}}
	c := newFake(t, lost, strimziPods(nil)...)
	k = newKiller(t, strimziOpts(), c)
	_, err = k.Kill(context.Background(), broker(3))
	require.ErrorIs(t, err, context.Canceled)
	require.NoError(t, k.Cleanup(context.Background()))
	var list v1alpha1.PodChaosList
	require.NoError(t, c.List(context.Background(), &list))
	assert.Empty(t, list.Items)

	// A PodChaos of that name left behind by an earlier run.
	left := &v1alpha1.PodChaos{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "kplan-run1"}}
	k = newKiller(t, strimziOpts(), newFake(t, nil, append(strimziPods(nil), left)...))
	_, err = k.Plan(context.Background(), broker(3))
	assert.Equal(t, errkind.Refused, errkind.KindOf(err))
	assert.ErrorContains(t, err, "kplan chaos cleanup")
}

func TestCleanupDeletesOnlyKplanObjects(t *testing.T) {
	managed := func(name string) *v1alpha1.PodChaos {
		return &v1alpha1.PodChaos{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{ManagedByLabel: ManagedByValue}}}
	}
	other := &v1alpha1.PodChaos{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "someone-elses", Labels: map[string]string{ManagedByLabel: "helm"}}}
	elsewhere := managed("kplan-elsewhere")
	elsewhere.Namespace = "other"
	c := newFake(t, nil, managed("kplan-b"), managed("kplan-a"), other, elsewhere)
	ctx := context.Background()

	names, err := CleanupWithClient(ctx, c, ns)
	require.NoError(t, err)
	assert.Equal(t, []string{"kplan-a", "kplan-b"}, names)
	var list v1alpha1.PodChaosList
	require.NoError(t, c.List(ctx, &list))
	var left []string
	for _, pc := range list.Items {
		left = append(left, pc.Namespace+"/"+pc.Name)
	}
	assert.ElementsMatch(t, []string{"kafka/someone-elses", "other/kplan-elsewhere"}, left)

	names, err = CleanupWithClient(ctx, c, ns)
	require.NoError(t, err, "idempotent")
	assert.Empty(t, names)

	_, err = CleanupWithClient(ctx, c, "")
	assert.Equal(t, "namespace", errkind.FieldOf(err))
}

func TestCleanupErrors(t *testing.T) {
	noCRD := &interceptor.Funcs{List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
		return &meta.NoKindMatchError{GroupKind: schema.GroupKind{Group: "chaos-mesh.org", Kind: "PodChaos"}}
	}}
	_, err := CleanupWithClient(context.Background(), newFake(t, noCRD), ns)
	assert.ErrorContains(t, err, "Chaos Mesh's CRDs are not installed")

	forbidden := &interceptor.Funcs{List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
		return apierrors.NewForbidden(schema.GroupResource{Group: "chaos-mesh.org", Resource: "podchaos"}, "", fmt.Errorf("no"))
	}}
	_, err = CleanupWithClient(context.Background(), newFake(t, forbidden), ns)
	assert.Equal(t, errkind.Refused, errkind.KindOf(err))
	assert.ErrorContains(t, err, "RBAC forbids kplan to list podchaos in namespace kafka")

	// A finalizer nobody releases: the wait ends with one line.
	stuck := &v1alpha1.PodChaos{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "kplan-stuck",
		Labels: map[string]string{ManagedByLabel: ManagedByValue}, Finalizers: []string{"chaos-mesh/records"}}}
	_, err = cleanupWith(context.Background(), newFake(t, nil, stuck), "", ns, 10*time.Millisecond, time.Millisecond)
	assert.ErrorContains(t, err, "PodChaos kafka/kplan-stuck is still there 10ms after its deletion")
}

// TestNewConfigErrors: kube configuration problems are one usage line
// naming the field.
func TestNewConfigErrors(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("HOME", dir)
	t.Setenv("KUBECONFIG", filepath.Join(dir, "absent"))
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	t.Setenv("KUBERNETES_SERVICE_PORT", "")
	kc := filepath.Join(dir, "kubeconfig")
	require.NoError(t, os.WriteFile(kc, []byte(kubeconfig("https://127.0.0.1:1")), 0o600))

	tests := []struct {
		name  string
		o     Options
		field string
	}{
		{"no kubeconfig anywhere", Options{Namespace: ns}, "kubeconfig"},
		{"missing file", Options{Namespace: ns, Kubeconfig: filepath.Join(dir, "nope")}, "kubeconfig"},
		{"unknown context", Options{Namespace: ns, Kubeconfig: kc, Context: "nope"}, "context"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.o)
			require.Error(t, err)
			assert.Equal(t, errkind.Usage, errkind.KindOf(err), err.Error())
			assert.Equal(t, tt.field, errkind.FieldOf(err))
			assert.NotContains(t, err.Error(), "\n")
			_, err = Cleanup(context.Background(), tt.o)
			assert.Equal(t, tt.field, errkind.FieldOf(err))
		})
	}
}

// TestUnreachableAPIServer: nothing listens on port 1 of loopback.
func TestUnreachableAPIServer(t *testing.T) {
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, os.WriteFile(kc, []byte(kubeconfig("https://127.0.0.1:1")), 0o600))
	k, err := New(Options{Namespace: ns, Kubeconfig: kc, StrimziCluster: "c", StrimziPool: "p"})
	require.NoError(t, err, "New does not reach the API server")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err = k.Plan(ctx, broker(3))
	require.Error(t, err)
	assert.Equal(t, errkind.Runtime, errkind.KindOf(err))
	assert.Contains(t, err.Error(), "cannot reach the Kubernetes API server https://127.0.0.1:1")
	assert.NotContains(t, err.Error(), "\n")
}

func kubeconfig(server string) string {
	return `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster:
    server: ` + server + `
    insecure-skip-tls-verify: true
users:
- name: u
  user:
    token: t
contexts:
- name: ctx
  context: {cluster: c, user: u}
current-context: ctx
`
}

// TestTwoKillsTwoPodChaos: a killer that kills twice names the second
// PodChaos kplan-<run id>-2, and Cleanup deletes both.
func TestTwoKillsTwoPodChaos(t *testing.T) {
	fcm := &fakeChaosMesh{}
	fcm.react = func(ctx context.Context, c client.Client, pc *v1alpha1.PodChaos) error {
		return inject(ctx, c, pc, pc.Spec.Selector.Pods[ns][0], time.Now())
	}
	c := newFake(t, fcm.funcs(), strimziPods(nil)...)
	k := newKiller(t, strimziOpts(), c)
	ctx := context.Background()
	_, err := k.Kill(ctx, broker(3))
	require.NoError(t, err)
	plan, err := k.Plan(ctx, broker(2))
	require.NoError(t, err)
	assert.Contains(t, plan.Manifest, "name: kplan-run1-2")
	_, err = k.Kill(ctx, broker(2))
	require.NoError(t, err)
	assert.Equal(t, []string{"kplan-run1", "kplan-run1-2"}, fcm.created)
	require.NoError(t, k.Cleanup(ctx))
	var list v1alpha1.PodChaosList
	require.NoError(t, c.List(ctx, &list))
	assert.Empty(t, list.Items)
}

// TestRestoreWithoutKillWaitsForReady: Restore of a broker this killer did
// not kill only waits until its pod is Ready.
func TestRestoreWithoutKillWaitsForReady(t *testing.T) {
	k := newKiller(t, strimziOpts(), newFake(t, nil, strimziPods(nil)...))
	require.NoError(t, k.Restore(context.Background(), broker(1)))
	assert.Equal(t, []string{"pod kafka/my-cluster-pool-a-1 is Ready again"}, k.Log())
}
