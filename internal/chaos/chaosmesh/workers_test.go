package chaosmesh

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/kplan-dev/kplan/internal/errkind"
	"github.com/kplan-dev/kplan/internal/testutil/golden"
)

func workersOpts() WorkersOptions {
	return WorkersOptions{Namespace: ns, Image: "ghcr.io/kplan-dev/kplan:v1", Run: "20261126t195022-ab12", Workers: 3,
		Bootstrap: "k1:9092,k2:9092", CommandConfig: "client.properties",
		Files: map[string][]byte{"client.properties": []byte("security.protocol=SSL\n"), "truststore.pem": []byte("PEM")}}
}

// TestWorkerManifestsGolden: the Job and the Secret as kplan creates them,
// the Secret's values left out of the YAML.
func TestWorkerManifestsGolden(t *testing.T) {
	job, secret, err := WorkerManifests(workersOpts())
	require.NoError(t, err)
	y, err := WorkersYAML(job, secret)
	require.NoError(t, err)
	assert.NotContains(t, y, "security.protocol", "no secret value in a plan")
	golden.AssertString(t, "workers.yaml", y)

	o := workersOpts()
	o.Files, o.CommandConfig = nil, ""
	job, secret, err = WorkerManifests(o)
	require.NoError(t, err)
	assert.Nil(t, secret, "a cluster that needs no client properties gets no Secret")
	assert.Empty(t, job.Spec.Template.Spec.Volumes)
	assert.Equal(t, []string{"worker", "--run", o.Run, "--bootstrap-server", o.Bootstrap}, job.Spec.Template.Spec.Containers[0].Args)
}

// TestWorkerManifestsInvariants: whatever the options, the Job is Indexed
// with completions = parallelism = workers, never retries a worker, runs
// non-root without a token, carries kplan's labels on Job, pods and
// Secret, and keeps every client property out of the pod spec.
func TestWorkerManifestsInvariants(t *testing.T) {
	for n := 1; n <= 5; n++ {
		o := workersOpts()
		o.Workers = n
		job, secret, err := WorkerManifests(o)
		require.NoError(t, err)
		s := job.Spec
		assert.Equal(t, batchv1.IndexedCompletion, *s.CompletionMode)
		assert.Equal(t, int32(n), *s.Completions)
		assert.Equal(t, int32(n), *s.Parallelism)
		assert.Zero(t, *s.BackoffLimit)
		assert.Positive(t, *s.TTLSecondsAfterFinished)
		p := s.Template.Spec
		assert.False(t, *p.AutomountServiceAccountToken)
		assert.True(t, *p.SecurityContext.RunAsNonRoot)
		assert.Equal(t, int64(WorkerUID), *p.SecurityContext.RunAsUser)
		assert.Equal(t, corev1.RestartPolicyNever, p.RestartPolicy)
		c := p.Containers[0]
		assert.False(t, *c.SecurityContext.AllowPrivilegeEscalation)
		assert.NotNil(t, c.Resources.Requests.Cpu())
		assert.False(t, c.Resources.Limits.Memory().IsZero())
		assert.Empty(t, c.Env, "nothing secret in the pod spec")
		for _, a := range c.Args {
			assert.NotContains(t, a, "security.protocol")
		}
		assert.Contains(t, c.Args, WorkerMountPath+"/client.properties")
		for _, labels := range []map[string]string{job.Labels, s.Template.Labels, secret.Labels} {
			assert.Equal(t, ManagedByValue, labels[ManagedByLabel])
			assert.Equal(t, o.Run, labels[RunIDLabel])
		}
		assert.Equal(t, secret.Name, p.Volumes[0].Secret.SecretName)
	}
}

func TestWorkersOptionsValidate(t *testing.T) {
	tests := []struct {
		mod   func(*WorkersOptions)
		field string
		want  string
	}{
		{func(o *WorkersOptions) { o.Namespace = "" }, "namespace", "required"},
		{func(o *WorkersOptions) { o.Image = "" }, FieldImage, "image is required"},
		{func(o *WorkersOptions) { o.Image = "a b" }, FieldImage, "not an image reference"},
		{func(o *WorkersOptions) { o.Workers = 0 }, FieldWorkers, "at least one"},
		{func(o *WorkersOptions) { o.Run = "R_1" }, FieldRun, "cannot name the workers' Job"},
		{func(o *WorkersOptions) { o.Run = strings.Repeat("a", 60) }, FieldRun, "cannot name the workers' Job"},
	}
	for _, tt := range tests {
		o := workersOpts()
		tt.mod(&o)
		err := o.Validate()
		require.Error(t, err, tt.want)
		assert.Equal(t, errkind.Usage, errkind.KindOf(err), err)
		assert.Equal(t, tt.field, errkind.FieldOf(err), err)
		assert.ErrorContains(t, err, tt.want)
	}
}

// TestWorkersLifecycle: Create makes the Secret then the Job; Delete
// deletes both (the Job with background propagation) and is idempotent;
// CleanupWorkers finds leftovers by label and leaves others alone.
func TestWorkersLifecycle(t *testing.T) {
	ctx := context.Background()
	var propagation []metav1.DeletionPropagation
	funcs := &interceptor.Funcs{Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
		var do client.DeleteOptions
		do.ApplyOptions(opts)
		if _, ok := obj.(*batchv1.Job); ok && do.PropagationPolicy != nil {
			propagation = append(propagation, *do.PropagationPolicy)
		}
		return c.Delete(ctx, obj, opts...)
	}}
	other := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "not-kplans"}}
	c := newFake(t, funcs, other)
	w, err := NewWorkersWithClient(c, workersOpts())
	require.NoError(t, err)
	require.NoError(t, w.DryRun(ctx))
	var jobs batchv1.JobList
	require.NoError(t, c.List(ctx, &jobs))
	assert.Empty(t, jobs.Items, "a dry run creates nothing")
	require.NoError(t, w.Create(ctx))
	name := "kplan-worker-20261126t195022-ab12"
	assert.Equal(t, []string{"secret/" + name, "job/" + name}, w.Created())
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &batchv1.Job{}))
	var s corev1.Secret
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &s))
	assert.Equal(t, []byte("PEM"), s.Data["truststore.pem"])

	deleted, err := w.Delete(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{"job/" + name, "secret/" + name}, deleted)
	assert.Equal(t, []metav1.DeletionPropagation{metav1.DeletePropagationBackground}, propagation, "the Job's pods go with it")
	assert.Empty(t, w.Created())
	deleted, err = w.Delete(ctx)
	require.NoError(t, err)
	assert.Empty(t, deleted)

	// Leftovers of a killed kplan.
	w2, err := NewWorkersWithClient(c, workersOpts())
	require.NoError(t, err)
	require.NoError(t, w2.Create(ctx))
	got, err := CleanupWorkersWithClient(ctx, c, ns)
	require.NoError(t, err)
	assert.Equal(t, []string{"job/" + name, "secret/" + name}, got)
	require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(other), &corev1.Secret{}), "an unlabelled Secret stays")
	got, err = CleanupWorkersWithClient(ctx, c, ns)
	require.NoError(t, err)
	assert.Empty(t, got)
}

// TestWorkersCreateErrors: each refusal is one line of the documented
// kind naming the field, and a refused Job takes its Secret with it.
func TestWorkersCreateErrors(t *testing.T) {
	jobErr := func(err error) *interceptor.Funcs {
		return &interceptor.Funcs{Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if _, ok := obj.(*batchv1.Job); ok {
				return err
			}
			return c.Create(ctx, obj, opts...)
		}}
	}
	jobs := schema.GroupResource{Group: "batch", Resource: "jobs"}
	tests := []struct {
		name  string
		err   error
		kind  errkind.Kind
		field string
		want  string
	}{
		{"rbac", apierrors.NewForbidden(jobs, "x", fmt.Errorf("user %q cannot create resource %q", "restricted", "jobs")),
			errkind.Refused, "", "RBAC forbids kplan to create jobs.batch in namespace kafka (grant the Role in docs/chaos.md#rbac-for-workers)"},
		{"exists", apierrors.NewAlreadyExists(jobs, "x"), errkind.Usage, FieldRun, "job/kplan-worker-20261126t195022-ab12 already exists in namespace kafka"},
		{"invalid image", apierrors.NewInvalid(schema.GroupKind{Group: "batch", Kind: "Job"}, "x",
			field.ErrorList{field.Required(field.NewPath("spec", "template", "spec", "containers").Index(0).Child("image"), "")}),
			errkind.Usage, FieldImage, "spec.template.spec.containers[0].image: Required value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newFake(t, jobErr(tt.err))
			w, err := NewWorkersWithClient(c, workersOpts())
			require.NoError(t, err)
			err = w.Create(context.Background())
			require.Error(t, err)
			assert.Equal(t, tt.kind, errkind.KindOf(err))
			assert.Equal(t, tt.field, errkind.FieldOf(err))
			assert.ErrorContains(t, err, tt.want)
			assert.NotContains(t, err.Error(), "\n")
			var secrets corev1.SecretList
			require.NoError(t, c.List(context.Background(), &secrets))
			assert.Empty(t, secrets.Items, "the Secret went with the refused Job")
			assert.Empty(t, w.Created())
		})
	}
}

// TestWorkersStuck: a worker pod whose image cannot be pulled, whose
// container cannot be created or keeps crashing, or that failed, is named
// (its field "image" for a pull); running and pending pods, pods being
// deleted and other runs' pods are not; a client that may not list pods
// reports nothing.
func TestWorkersStuck(t *testing.T) {
	o := workersOpts()
	labels := o.Labels()
	workerPod := func(name string, status corev1.PodStatus, edit ...func(*corev1.Pod)) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels}, Status: status}
		for _, e := range edit {
			e(p)
		}
		return p
	}
	waiting := func(reason string) corev1.PodStatus {
		return corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{Name: "worker",
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: "the\nmessage"}}}}}
	}
	running := corev1.PodStatus{Phase: corev1.PodRunning}
	now := metav1.Now()
	for _, tc := range []struct {
		name  string
		pods  []client.Object
		field string
		want  string
	}{
		{name: "running and pending", pods: []client.Object{workerPod("a", running), workerPod("b", waiting("ContainerCreating"))}},
		{name: "image", pods: []client.Object{workerPod("a", running), workerPod("b", waiting("ErrImagePull"))}, field: FieldImage,
			want: "pod kafka/b of the workers cannot start: ErrImagePull: the message"},
		{name: "back-off", pods: []client.Object{workerPod("c", waiting("ImagePullBackOff"))}, field: FieldImage, want: "ImagePullBackOff"},
		{name: "crashing", pods: []client.Object{workerPod("c", waiting("CrashLoopBackOff"))}, field: FieldWorkers, want: "CrashLoopBackOff"},
		{name: "failed", pods: []client.Object{workerPod("d", corev1.PodStatus{Phase: corev1.PodFailed, ContainerStatuses: []corev1.ContainerStatus{{Name: "worker",
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 2, Reason: "Error"}}}}})},
			field: FieldWorkers, want: "pod kafka/d of the workers failed: its container exited with code 2 (Error)"},
		{name: "being deleted", pods: []client.Object{workerPod("e", waiting("ErrImagePull"), func(p *corev1.Pod) {
			p.DeletionTimestamp, p.Finalizers = &now, []string{"test"}
		})}},
		{name: "another run", pods: []client.Object{workerPod("f", waiting("ErrImagePull"), func(p *corev1.Pod) {
			p.Labels = map[string]string{RunIDLabel: "other", ManagedByLabel: ManagedByValue}
		})}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, err := NewWorkersWithClient(newFake(t, nil, tc.pods...), o)
			require.NoError(t, err)
			err = w.Stuck(context.Background())
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			assert.Equal(t, errkind.Runtime, errkind.KindOf(err))
			assert.Equal(t, tc.field, errkind.FieldOf(err))
		})
	}
	forbidden := &interceptor.Funcs{List: func(context.Context, client.WithWatch, client.ObjectList, ...client.ListOption) error {
		return apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", fmt.Errorf("no"))
	}}
	w, err := NewWorkersWithClient(newFake(t, forbidden, workerPod("b", waiting("ErrImagePull"))), o)
	require.NoError(t, err)
	assert.NoError(t, w.Stuck(context.Background()), "without the right to list pods: the join timeout is the bound")
}

// TestWorkersWaitDone: the wait ends once every worker pod has ended, and
// gives up after its timeout saying how many still run; pods that cannot
// be listed count as ended.
func TestWorkersWaitDone(t *testing.T) {
	o := workersOpts()
	pod := func(name string, phase corev1.PodPhase) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: o.Labels()}, Status: corev1.PodStatus{Phase: phase}}
	}
	ctx := context.Background()
	w, err := NewWorkersWithClient(newFake(t, nil, pod("a", corev1.PodSucceeded), pod("b", corev1.PodFailed)), o)
	require.NoError(t, err)
	assert.Zero(t, w.WaitDone(ctx, time.Second))
	w, err = NewWorkersWithClient(newFake(t, nil, pod("a", corev1.PodSucceeded), pod("b", corev1.PodRunning), pod("c", corev1.PodPending)), o)
	require.NoError(t, err)
	assert.Equal(t, 2, w.WaitDone(ctx, 300*time.Millisecond))
	forbidden := &interceptor.Funcs{List: func(context.Context, client.WithWatch, client.ObjectList, ...client.ListOption) error {
		return apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", fmt.Errorf("no"))
	}}
	w, err = NewWorkersWithClient(newFake(t, forbidden, pod("b", corev1.PodRunning)), o)
	require.NoError(t, err)
	assert.Zero(t, w.WaitDone(ctx, time.Second))
}
