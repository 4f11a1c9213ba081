package k8stest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/kplan-dev/kplan/internal/localkafka"
)

// kplan's labels, as internal/chaos/chaosmesh sets them (k8stest does not
// import the code it tests).
const (
	managedByLabel = "app.kubernetes.io/managed-by"
	managedByValue = "kplan"
)

// JobsOptions say how the JobAgent runs the pods' containers.
type JobsOptions struct {
	// Binary stands for every image: the container's args run as
	// Binary's (the kplan test binary run as kplan, or a built kplan).
	Binary string
	// Env is added to each process's environment (e.g. the variable that
	// makes a test binary run as kplan).
	Env []string
	// Dir holds each pod's volumes and its container's log
	// (POD.log); t.TempDir() when "".
	Dir string
	// Unpullable are images no registry has: a pod of one is made, its
	// container left waiting with reason ErrImagePull (as the kubelet
	// reports a missing image), and nothing runs.
	Unpullable []string
}

// JobAgent plays, for the Indexed Jobs labelled managed by kplan in the
// Env's namespace, the Job controller (one pod per completion index, with
// the index annotation, label and $JOB_COMPLETION_INDEX, owned by the
// Job; a failed pod is not replaced: backoffLimit 0), the garbage collector
// (a pod whose Job is gone is deleted) and the kubelet (the container's
// args run as a local process of Binary, the pod's Secret volumes written
// to a directory that stands for the mount, the args' mount paths
// rewritten to it; the pod set Running, then Succeeded or Failed with the
// exit code; the process killed, SIGTERM then SIGKILL, when its pod is
// deleted). It does not update the Jobs' status.
type JobAgent struct {
	env *Env
	o   JobsOptions

	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	made    map[string]bool       // job UID/index: its pod was made
	procs   map[types.UID]*podRun // by pod UID
	started int
	exits   map[string]int // pod name: exit code
	errs    []error
}

// podRun is one pod's container running as a local process.
type podRun struct {
	pod  string
	job  types.UID
	cmd  *exec.Cmd
	log  string
	done chan struct{}
}

// RunJobs starts the JobAgent until t's cleanup, which kills every
// process it started and deletes the pods it made.
func (e *Env) RunJobs(t testing.TB, o JobsOptions) *JobAgent {
	t.Helper()
	if o.Dir == "" {
		o.Dir = t.TempDir()
	}
	if o.Binary == "" {
		t.Fatalf("k8stest: JobsOptions.Binary is required")
	}
	a := &JobAgent{env: e, o: o, made: map[string]bool{}, procs: map[types.UID]*podRun{}, exits: map[string]int{}}
	ctx, cancel := context.WithCancel(context.Background())
	a.cancel = cancel
	a.wg.Add(1)
	go a.loop(ctx)
	t.Cleanup(func() { a.stop(t) })
	return a
}

// Started returns how many containers the agent started.
func (a *JobAgent) Started() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.started
}

// Exits returns the exit code of each container that ended, by pod name
// (-1: killed).
func (a *JobAgent) Exits() map[string]int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return maps.Clone(a.exits)
}

// Running returns how many of its processes still run.
func (a *JobAgent) Running() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := 0
	for _, p := range a.procs {
		select {
		case <-p.done:
		default:
			n++
		}
	}
	return n
}

// Logs returns every container's output, pod by pod in name order.
func (a *JobAgent) Logs() string {
	a.mu.Lock()
	runs := slices.Collect(maps.Values(a.procs))
	a.mu.Unlock()
	slices.SortFunc(runs, func(x, y *podRun) int { return strings.Compare(x.pod, y.pod) })
	var b strings.Builder
	for _, r := range runs {
		out, _ := os.ReadFile(r.log)
		fmt.Fprintf(&b, "--- pod %s:\n%s", r.pod, out)
	}
	return b.String()
}

// Err returns what went wrong in the agent so far (nil: nothing).
func (a *JobAgent) Err() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return errors.Join(a.errs...)
}

func (a *JobAgent) fail(err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.errs = append(a.errs, err)
}

// loop reconciles every 100 ms: a poll, as the agent need not be fast,
// only never miss a Job or a deletion.
func (a *JobAgent) loop(ctx context.Context) {
	defer a.wg.Done()
	for sleep(ctx, 100*time.Millisecond) {
		if err := a.reconcile(ctx); err != nil && ctx.Err() == nil {
			a.fail(err)
		}
	}
}

func (a *JobAgent) reconcile(ctx context.Context) error {
	mine := []client.ListOption{client.InNamespace(a.env.Namespace), client.MatchingLabels{managedByLabel: managedByValue}}
	var jobs batchv1.JobList
	if err := a.env.Client.List(ctx, &jobs, mine...); err != nil {
		return nil // the API server is busy or stopping: the next round
	}
	live := map[types.UID]bool{}
	for i := range jobs.Items {
		job := &jobs.Items[i]
		if job.DeletionTimestamp != nil {
			continue
		}
		live[job.UID] = true
		if job.Spec.CompletionMode == nil || *job.Spec.CompletionMode != batchv1.IndexedCompletion || job.Spec.Completions == nil {
			continue
		}
		for idx := range int(*job.Spec.Completions) {
			key := fmt.Sprintf("%s/%d", job.UID, idx)
			a.mu.Lock()
			made := a.made[key]
			a.made[key] = true
			a.mu.Unlock()
			if made {
				continue
			}
			if err := a.startPod(ctx, job, idx); err != nil {
				return fmt.Errorf("job %s index %d: %w", job.Name, idx, err)
			}
		}
	}
	// Listed after the pods above were made: each pod of a.procs is in
	// the list unless it was deleted.
	var pods corev1.PodList
	if err := a.env.Client.List(ctx, &pods, mine...); err != nil {
		return nil
	}
	present := map[types.UID]*corev1.Pod{}
	for i := range pods.Items {
		present[pods.Items[i].UID] = &pods.Items[i]
	}
	a.mu.Lock()
	runs := maps.Clone(a.procs)
	a.mu.Unlock()
	for uid, run := range runs {
		pod := present[uid]
		switch {
		case pod == nil:
			// Deleted (at once: no node holds it): the container stops.
			a.kill(run)
		case pod.DeletionTimestamp != nil:
			// Being deleted: the kubelet stops the container, then
			// confirms.
			a.kill(run)
			a.forceDelete(ctx, pod)
		case !live[run.job]:
			// Its Job is gone: the garbage collector deletes it.
			a.kill(run)
			a.forceDelete(ctx, pod)
		}
	}
	// Pods that never ran (an unpullable image) go with their Job too.
	for uid, pod := range present {
		if _, ran := runs[uid]; ran {
			continue
		}
		if owner := metav1.GetControllerOf(pod); owner != nil && !live[owner.UID] {
			a.forceDelete(ctx, pod)
		}
	}
	return nil
}

// startPod creates index idx's pod as the Job controller would, and runs
// its container as the kubelet would.
func (a *JobAgent) startPod(ctx context.Context, job *batchv1.Job, idx int) error {
	pod := JobPod(job, idx)
	if err := a.env.Client.Create(ctx, pod); err != nil {
		return fmt.Errorf("creating its pod: %w", err)
	}
	if slices.Contains(a.o.Unpullable, pod.Spec.Containers[0].Image) {
		return a.setStatus(ctx, pod, func(p *corev1.Pod) { imagePullFailed(p, time.Now()) })
	}
	dir := filepath.Join(a.o.Dir, pod.Name) // the container's working directory
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	mounts, err := a.volumes(ctx, pod, dir)
	if err != nil {
		return a.setFailed(ctx, pod, err)
	}
	c := pod.Spec.Containers[0]
	args := RewriteMounts(c.Args, mounts)
	log := filepath.Join(a.o.Dir, pod.Name+".log")
	f, err := os.OpenFile(log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()                          //nolint:errcheck // the child holds its own descriptor
	cmd := exec.Command(a.o.Binary, args...) //nolint:gosec // the test's own binary
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Env = append(append(os.Environ(), a.o.Env...), "JOB_COMPLETION_INDEX="+strconv.Itoa(idx), "HOSTNAME="+pod.Spec.Hostname)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	localkafka.CloseInheritedOnExec()
	if err := cmd.Start(); err != nil {
		return a.setFailed(ctx, pod, fmt.Errorf("starting %s: %w", a.o.Binary, err))
	}
	run := &podRun{pod: pod.Name, job: job.UID, cmd: cmd, log: log, done: make(chan struct{})}
	a.mu.Lock()
	a.procs[pod.UID] = run
	a.started++
	a.mu.Unlock()
	if err := a.setStatus(ctx, pod, func(p *corev1.Pod) { workerRunning(p, cmd.Process.Pid, time.Now()) }); err != nil {
		a.fail(fmt.Errorf("pod %s Running: %w", pod.Name, err))
	}
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		werr := cmd.Wait()
		code := 0
		var ee *exec.ExitError
		if errors.As(werr, &ee) {
			code = ee.ExitCode()
		}
		a.mu.Lock()
		a.exits[pod.Name] = code
		a.mu.Unlock()
		close(run.done)
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		err := a.setStatus(sctx, pod, func(p *corev1.Pod) { workerEnded(p, code, time.Now()) })
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			a.fail(fmt.Errorf("pod %s ended: %w", pod.Name, err))
		}
	}()
	return nil
}

// volumes writes pod's Secret volumes under dir, each key a file with the
// volume's mode, and returns the container's mount paths mapped to them.
func (a *JobAgent) volumes(ctx context.Context, pod *corev1.Pod, dir string) (map[string]string, error) {
	vols := map[string]string{}
	for _, v := range pod.Spec.Volumes {
		if v.Secret == nil {
			continue
		}
		var s corev1.Secret
		if err := a.env.Client.Get(ctx, client.ObjectKey{Namespace: pod.Namespace, Name: v.Secret.SecretName}, &s); err != nil {
			return nil, fmt.Errorf("secret %s of volume %s: %w", v.Secret.SecretName, v.Name, err)
		}
		vdir := filepath.Join(dir, "volumes", v.Name)
		if err := os.MkdirAll(vdir, 0o700); err != nil {
			return nil, err
		}
		mode := os.FileMode(0o644)
		if v.Secret.DefaultMode != nil {
			mode = os.FileMode(*v.Secret.DefaultMode) //nolint:gosec // a file mode
		}
		for k, b := range s.Data {
			// The owner reads it here, as the pod's fsGroup would.
			if err := os.WriteFile(filepath.Join(vdir, k), b, mode|0o400); err != nil {
				return nil, err
			}
		}
		vols[v.Name] = vdir
	}
	mounts := map[string]string{}
	for _, m := range pod.Spec.Containers[0].VolumeMounts {
		if d, ok := vols[m.Name]; ok {
			mounts[m.MountPath] = d
		}
	}
	return mounts, nil
}

// RewriteMounts replaces each mount path at the start of an argument (the
// path itself or a file under it) by the directory standing for it.
func RewriteMounts(args []string, mounts map[string]string) []string {
	paths := slices.Sorted(maps.Keys(mounts))
	slices.Reverse(paths) // a longer path before its parent
	out := make([]string, len(args))
	for i, arg := range args {
		out[i] = arg
		for _, p := range paths {
			if arg == p || strings.HasPrefix(arg, strings.TrimSuffix(p, "/")+"/") {
				out[i] = mounts[p] + strings.TrimPrefix(arg, p)
				break
			}
		}
	}
	return out
}

// JobPod is index idx's pod of an Indexed Job, as the Job controller makes
// it: the template's labels and spec, named JOB-IDX-xxxxx with the
// hostname JOB-IDX, the completion index as annotation, label and
// $JOB_COMPLETION_INDEX (from the annotation, through the downward API),
// the job-name and controller-uid labels, and the Job as its controller
// owner.
func JobPod(job *batchv1.Job, idx int) *corev1.Pod {
	tmpl := job.Spec.Template.DeepCopy()
	index := strconv.Itoa(idx)
	labels := maps.Clone(tmpl.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	labels[batchv1.JobCompletionIndexAnnotation] = index
	labels[batchv1.JobNameLabel] = job.Name
	labels[batchv1.ControllerUidLabel] = string(job.UID)
	annotations := maps.Clone(tmpl.Annotations)
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[batchv1.JobCompletionIndexAnnotation] = index
	yes := true
	spec := tmpl.Spec
	spec.Hostname = job.Name + "-" + index
	for i := range spec.Containers {
		spec.Containers[i].Env = append(spec.Containers[i].Env, corev1.EnvVar{Name: "JOB_COMPLETION_INDEX", ValueFrom: &corev1.EnvVarSource{
			FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.annotations['" + batchv1.JobCompletionIndexAnnotation + "']"},
		}})
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:    job.Namespace,
			GenerateName: job.Name + "-" + index + "-",
			Labels:       labels,
			Annotations:  annotations,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: job.Name, UID: job.UID,
				Controller: &yes, BlockOwnerDeletion: &yes}},
		},
		Spec: spec,
	}
}

// workerRunning is a kubelet's status of a pod whose one container runs
// as process pid.
func workerRunning(pod *corev1.Pod, pid int, now time.Time) {
	t := metav1.NewTime(now)
	started := true
	c := pod.Spec.Containers[0]
	pod.Status = corev1.PodStatus{
		Phase:     corev1.PodRunning,
		HostIP:    "127.0.0.1",
		HostIPs:   []corev1.HostIP{{IP: "127.0.0.1"}},
		PodIP:     "127.0.0.1",
		PodIPs:    []corev1.PodIP{{IP: "127.0.0.1"}},
		StartTime: &t,
		Conditions: []corev1.PodCondition{
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: t},
			{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: t},
			{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: t},
			{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: t},
		},
		ContainerStatuses: []corev1.ContainerStatus{{
			Name: c.Name, Image: c.Image, ImageID: c.Image, ContainerID: "local://" + strconv.Itoa(pid),
			Ready: true, Started: &started,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: t}},
		}},
	}
}

// imagePullFailed is the status of a pod whose image cannot be pulled:
// scheduled, pending, its container waiting with ErrImagePull.
func imagePullFailed(pod *corev1.Pod, now time.Time) {
	t := metav1.NewTime(now)
	c := pod.Spec.Containers[0]
	pod.Status = corev1.PodStatus{
		Phase:     corev1.PodPending,
		HostIP:    "127.0.0.1",
		StartTime: &t,
		Conditions: []corev1.PodCondition{
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: t},
			{Type: corev1.ContainersReady, Status: corev1.ConditionFalse, LastTransitionTime: t, Reason: "ContainersNotReady"},
			{Type: corev1.PodReady, Status: corev1.ConditionFalse, LastTransitionTime: t, Reason: "ContainersNotReady"},
		},
		ContainerStatuses: []corev1.ContainerStatus{{
			Name: c.Name, Image: c.Image,
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
				Reason:  "ErrImagePull",
				Message: fmt.Sprintf("failed to pull and unpack image %q: not found", c.Image),
			}},
		}},
	}
}

// workerEnded is the status of a pod whose container exited with code:
// Succeeded on 0, else Failed.
func workerEnded(pod *corev1.Pod, code int, now time.Time) {
	t := metav1.NewTime(now)
	pod.Status.Phase = corev1.PodSucceeded
	reason := "Completed"
	if code != 0 {
		pod.Status.Phase, reason = corev1.PodFailed, "Error"
	}
	for i, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady || c.Type == corev1.ContainersReady {
			pod.Status.Conditions[i].Status = corev1.ConditionFalse
			pod.Status.Conditions[i].LastTransitionTime = t
			pod.Status.Conditions[i].Reason = "PodCompleted"
		}
	}
	for i := range pod.Status.ContainerStatuses {
		cs := &pod.Status.ContainerStatuses[i]
		started := cs.State.Running
		cs.Ready = false
		no := false
		cs.Started = &no
		term := &corev1.ContainerStateTerminated{ExitCode: int32(code), Reason: reason, FinishedAt: t, ContainerID: cs.ContainerID} //nolint:gosec // an exit code
		if started != nil {
			term.StartedAt = started.StartedAt
		}
		cs.State = corev1.ContainerState{Terminated: term}
	}
}

// setStatus applies change to pod's status, retrying on conflicts.
func (a *JobAgent) setStatus(ctx context.Context, pod *corev1.Pod, change func(*corev1.Pod)) error {
	for {
		var cur corev1.Pod
		err := a.env.Client.Get(ctx, client.ObjectKeyFromObject(pod), &cur)
		if err == nil {
			if cur.UID != pod.UID {
				return nil // replaced
			}
			change(&cur)
			err = a.env.Client.Status().Update(ctx, &cur)
		}
		if err == nil || !apierrors.IsConflict(err) {
			return err
		}
	}
}

// setFailed marks pod Failed (its container could not start) and returns
// err for the record.
func (a *JobAgent) setFailed(ctx context.Context, pod *corev1.Pod, err error) error {
	_ = a.setStatus(ctx, pod, func(p *corev1.Pod) {
		p.Status.Phase = corev1.PodFailed
		p.Status.Message = err.Error()
	})
	return err
}

// kill stops run's process as the kubelet stops a container: SIGTERM,
// then SIGKILL after 2 s.
func (a *JobAgent) kill(run *podRun) {
	select {
	case <-run.done:
		return
	default:
	}
	pgid := run.cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-run.done:
	case <-time.After(2 * time.Second):
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-run.done
	}
}

// forceDelete deletes pod with grace 0, as the kubelet confirms a
// deletion once the container is gone.
func (a *JobAgent) forceDelete(ctx context.Context, pod *corev1.Pod) {
	zero := int64(0)
	err := a.env.Client.Delete(ctx, pod, &client.DeleteOptions{GracePeriodSeconds: &zero, Preconditions: &metav1.Preconditions{UID: &pod.UID}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) && ctx.Err() == nil {
		a.fail(fmt.Errorf("deleting pod %s: %w", pod.Name, err))
	}
}

// stop ends the agent: every process it started is killed and every pod
// it made deleted.
func (a *JobAgent) stop(t testing.TB) {
	a.cancel()
	a.mu.Lock()
	runs := slices.Collect(maps.Values(a.procs))
	a.mu.Unlock()
	for _, r := range runs {
		a.kill(r)
	}
	a.wg.Wait()
	if err := a.Err(); err != nil {
		t.Errorf("k8stest: job agent: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var pods corev1.PodList
	if err := a.env.Client.List(ctx, &pods, client.InNamespace(a.env.Namespace), client.MatchingLabels{managedByLabel: managedByValue}); err != nil {
		t.Errorf("k8stest: job agent: listing pods: %v", err)
		return
	}
	for i := range pods.Items {
		a.mu.Lock()
		_, mine := a.procs[pods.Items[i].UID]
		a.mu.Unlock()
		if mine {
			a.forceDelete(ctx, &pods.Items[i])
		}
	}
}

// GrantRole creates the Role that roleYAML holds (a Role document, as the
// docs give it) in the Env's namespace and binds it to user (e.g.
// OperatorUser, who has no other rights): a test then proves the Role is
// enough. It is idempotent.
func (e *Env) GrantRole(t testing.TB, roleYAML []byte, user string) {
	t.Helper()
	var role rbacv1.Role
	if err := yaml.UnmarshalStrict(roleYAML, &role); err != nil {
		t.Fatalf("k8stest: the Role: %v", err)
	}
	if role.Kind != "Role" || role.Name == "" {
		t.Fatalf("k8stest: want a named Role, got kind %q name %q", role.Kind, role.Name)
	}
	role.Namespace = e.Namespace
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: role.Name + "-" + user, Namespace: e.Namespace},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}
	for _, o := range []client.Object{&role, binding} {
		if err := e.Client.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("k8stest: creating %s: %v", o.GetName(), err)
		}
	}
}

// KplanObjects lists the Jobs, Pods and Secrets labelled managed by kplan
// in the Env's namespace, as kind/name.
func (e *Env) KplanObjects(t testing.TB) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	mine := []client.ListOption{client.InNamespace(e.Namespace), client.MatchingLabels{managedByLabel: managedByValue}}
	var out []string
	var jobs batchv1.JobList
	var pods corev1.PodList
	var secrets corev1.SecretList
	for _, l := range []client.ObjectList{&jobs, &pods, &secrets} {
		if err := e.Client.List(ctx, l, mine...); err != nil {
			t.Fatalf("k8stest: listing kplan's objects: %v", err)
		}
	}
	for _, j := range jobs.Items {
		out = append(out, "job/"+j.Name)
	}
	for _, p := range pods.Items {
		out = append(out, "pod/"+p.Name)
	}
	for _, s := range secrets.Items {
		out = append(out, "secret/"+s.Name)
	}
	return out
}
