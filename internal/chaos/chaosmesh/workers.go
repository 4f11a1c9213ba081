package chaosmesh

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/kplan-dev/kplan/internal/clock"
	"github.com/kplan-dev/kplan/internal/errkind"
)

// This file places a distributed chaos run's workers on Kubernetes (kplan
// chaos --workers N --workers-on kubernetes): an Indexed Job of N pods
// running `kplan worker`, the client properties in a Secret mounted into
// them (never in the pod spec), both labelled managed by kplan with the
// run's id, deleted when the run ends and by `kplan chaos cleanup`.

// Settings of the workers' pods.
const (
	// WorkerMountPath is where the pods mount the Secret: the worker's
	// --command-config is a file under it.
	WorkerMountPath = "/etc/kplan"
	// WorkerContainer is the pods' one container.
	WorkerContainer = "worker"
	// WorkerUID is the user (and group) the pods run as: distroless's
	// nonroot, as the Dockerfile's USER.
	WorkerUID = 65532
	// ComponentLabel and ComponentWorker mark the workers' objects among
	// kplan's.
	ComponentLabel  = "app.kubernetes.io/component"
	ComponentWorker = "worker"
	// NameLabel names the application.
	NameLabel = "app.kubernetes.io/name"
	// JobCompletionIndexAnnotation is the index the Job controller gives
	// each pod of an Indexed Job (also a label since Kubernetes 1.28).
	JobCompletionIndexAnnotation = batchv1.JobCompletionIndexAnnotation
	// workerTTL is how long a finished Job stays before Kubernetes' TTL
	// controller deletes it (kplan deletes it itself at the end of the
	// run; this reaps what a killed kplan left).
	workerTTL = 600
	// volumeName is the Secret's volume in the pod spec.
	volumeName = "client-config"
)

// WorkersRBACDoc is where the Role the workers' objects need is written
// down; RBAC errors about them point at it.
const WorkersRBACDoc = "docs/chaos.md#rbac-for-workers"

// Fields of the workers' usage errors.
const (
	FieldImage   = "image"
	FieldWorkers = "workers"
	FieldRun     = "run"
)

// WorkersOptions are a distributed run's workers as kplan places them on
// Kubernetes. Field names are the flags' (--kubeconfig, --context,
// --namespace, --image, --workers, --run).
type WorkersOptions struct {
	// Kubeconfig and Context choose the cluster as for the killer.
	Kubeconfig, Context string
	// Namespace is where the Job, its pods and the Secret live (required).
	Namespace string
	// Image is kplan's image (required): its entrypoint is kplan.
	Image string
	// Run is the run's id; the objects are named kplan-worker-<Run>.
	Run string
	// Workers is the number of pods (the Job's completions and
	// parallelism).
	Workers int
	// Bootstrap is the workers' --bootstrap-server.
	Bootstrap string
	// Files are the Secret's data (file name to content), nil for none:
	// the client properties and the files they name, as the pods see them
	// under WorkerMountPath.
	Files map[string][]byte
	// CommandConfig is the file of Files that is the worker's
	// --command-config ("" for none).
	CommandConfig string
}

// Validate checks the options without reaching Kubernetes; errors are
// errkind.Usage naming the field.
func (o WorkersOptions) Validate() error {
	if err := o.CheckFlags(); err != nil {
		return err
	}
	if strings.TrimSpace(o.Bootstrap) == "" {
		return errkind.Usagef("bootstrap-server", "the workers need the cluster's bootstrap servers")
	}
	if o.CommandConfig != "" {
		if _, ok := o.Files[o.CommandConfig]; !ok {
			return fmt.Errorf("the command config %s is not among the Secret's files", o.CommandConfig)
		}
	}
	for name := range o.Files {
		if errs := validation.IsConfigMapKey(name); len(errs) > 0 {
			return fmt.Errorf("%q cannot be a key of the workers' Secret: %s", name, errs[0])
		}
	}
	return nil
}

// CheckFlags is Validate of what the operator gives (namespace, image,
// workers, run), before the cluster's addresses and client files are
// known.
func (o WorkersOptions) CheckFlags() error {
	if err := (Options{Namespace: o.Namespace}).Validate(); err != nil {
		return err
	}
	switch {
	case strings.TrimSpace(o.Image) == "":
		return errkind.Usagef(FieldImage, "kplan's image is required to run the workers on Kubernetes (see docs/chaos.md: building the image)")
	case strings.ContainsAny(o.Image, " \t\n"):
		return errkind.Usagef(FieldImage, "%q is not an image reference", o.Image)
	case o.Workers < 1:
		return errkind.Usagef(FieldWorkers, "want at least one worker, got %d", o.Workers)
	}
	if errs := validation.IsDNS1123Label(o.JobName()); len(errs) > 0 {
		return errkind.Usagef(FieldRun, "%q cannot name the workers' Job %s (lowercase letters, digits and '-' only): %s", o.Run, o.JobName(), errs[0])
	}
	if errs := validation.IsValidLabelValue(o.Run); len(errs) > 0 || o.Run == "" {
		return errkind.Usagef(FieldRun, "%q cannot be a label value", o.Run)
	}
	return nil
}

// JobName is the name of the workers' Job and Secret.
func (o WorkersOptions) JobName() string { return "kplan-worker-" + o.Run }

// Labels are the labels of every object kplan makes for the workers.
func (o WorkersOptions) Labels() map[string]string {
	return map[string]string{ManagedByLabel: ManagedByValue, RunIDLabel: o.Run, NameLabel: "kplan", ComponentLabel: ComponentWorker}
}

// Args are the arguments of each pod's kplan (after the image's
// entrypoint): the worker's index comes from $JOB_COMPLETION_INDEX.
func (o WorkersOptions) Args() []string {
	args := []string{"worker", "--run", o.Run, "--bootstrap-server", o.Bootstrap}
	if o.CommandConfig != "" {
		args = append(args, "--command-config", WorkerMountPath+"/"+o.CommandConfig)
	}
	return args
}

// WorkerManifests returns the Job and the Secret (nil without Files) as
// kplan creates them.
//
// The Job is Indexed, with completions = parallelism = Workers and
// backoffLimit 0: a worker that fails is not replaced, because a new pod
// with the same index would produce the same sequence numbers again; the
// coordinator names the phases it missed instead. Its pods run as a
// non-root user with no privilege escalation, no capabilities, a
// read-only root file system and no service account token (a worker talks
// to Kafka only); they request a little CPU and memory and have a memory
// limit but no CPU limit, so that CFS throttling does not show up as
// produce latency.
func WorkerManifests(o WorkersOptions) (*batchv1.Job, *corev1.Secret, error) {
	if err := o.Validate(); err != nil {
		return nil, nil, err
	}
	n := int32(o.Workers) //nolint:gosec // dist.MaxProducers bounds it far below 2^31
	no, yes := false, true
	uid := int64(WorkerUID)
	zero := int32(0)
	ttl := int32(workerTTL)
	grace := int64(10)
	indexed := batchv1.IndexedCompletion
	meta := metav1.ObjectMeta{Name: o.JobName(), Namespace: o.Namespace, Labels: o.Labels()}
	pod := corev1.PodSpec{
		RestartPolicy:                 corev1.RestartPolicyNever,
		AutomountServiceAccountToken:  &no,
		EnableServiceLinks:            &no,
		TerminationGracePeriodSeconds: &grace,
		SecurityContext: &corev1.PodSecurityContext{
			RunAsNonRoot: &yes, RunAsUser: &uid, RunAsGroup: &uid, FSGroup: &uid,
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
		Containers: []corev1.Container{{
			Name:  WorkerContainer,
			Image: o.Image,
			Args:  o.Args(),
			SecurityContext: &corev1.SecurityContext{
				AllowPrivilegeEscalation: &no, ReadOnlyRootFilesystem: &yes, RunAsNonRoot: &yes,
				Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
			},
			Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
				Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("512Mi")},
			},
		}},
	}
	var secret *corev1.Secret
	if o.Files != nil {
		secret = &corev1.Secret{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
			ObjectMeta: *meta.DeepCopy(),
			Type:       corev1.SecretTypeOpaque,
			Immutable:  &yes,
			Data:       maps.Clone(o.Files),
		}
		mode := int32(0o440) // the group is the pods' fsGroup
		pod.Volumes = []corev1.Volume{{Name: volumeName, VolumeSource: corev1.VolumeSource{
			Secret: &corev1.SecretVolumeSource{SecretName: secret.Name, DefaultMode: &mode},
		}}}
		pod.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: volumeName, MountPath: WorkerMountPath, ReadOnly: true}}
	}
	job := &batchv1.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: meta,
		Spec: batchv1.JobSpec{
			CompletionMode:          &indexed,
			Completions:             &n,
			Parallelism:             &n,
			BackoffLimit:            &zero,
			TTLSecondsAfterFinished: &ttl,
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: o.Labels()},
				Spec:       pod,
			},
		},
	}
	return job, secret, nil
}

// WorkersYAML renders the Job and the Secret as kubectl would take them,
// the Secret's values replaced by their sizes: a plan never prints a
// secret.
func WorkersYAML(job *batchv1.Job, secret *corev1.Secret) (string, error) {
	var docs []string
	if secret != nil {
		s := secret.DeepCopy()
		s.StringData = map[string]string{}
		for k, v := range s.Data {
			s.StringData[k] = fmt.Sprintf("<%d bytes, not shown>", len(v))
		}
		s.Data = nil
		b, err := cleanYAML(s)
		if err != nil {
			return "", err
		}
		docs = append(docs, b)
	}
	b, err := cleanYAML(job)
	if err != nil {
		return "", err
	}
	docs = append(docs, b)
	return strings.Join(docs, "---\n"), nil
}

// cleanYAML is obj's YAML without status, creationTimestamp and empty
// resources.
func cleanYAML(obj any) (string, error) {
	j, err := yaml.Marshal(obj)
	if err != nil {
		return "", fmt.Errorf("encode: %w", err)
	}
	var m map[string]any
	if err := yaml.Unmarshal(j, &m); err != nil {
		return "", fmt.Errorf("encode: %w", err)
	}
	delete(m, "status")
	dropCreation(m)
	out, err := yaml.Marshal(m)
	if err != nil {
		return "", fmt.Errorf("encode: %w", err)
	}
	return string(out), nil
}

// dropCreation removes every creationTimestamp: null the types print.
func dropCreation(v any) {
	switch x := v.(type) {
	case map[string]any:
		if x["creationTimestamp"] == nil {
			delete(x, "creationTimestamp")
		}
		for _, e := range x {
			dropCreation(e)
		}
	case []any:
		for _, e := range x {
			dropCreation(e)
		}
	}
}

// Workers are a run's workers on Kubernetes: the Job and the Secret kplan
// creates, checks (DryRun) and deletes.
type Workers struct {
	c      client.Client
	host   string
	o      WorkersOptions
	job    *batchv1.Job
	secret *corev1.Secret

	created []client.Object // what Create made, in order
}

// NewWorkers builds the manifests and the client o names; it does not
// reach the API server.
func NewWorkers(o WorkersOptions) (*Workers, error) {
	quiet()
	job, secret, err := WorkerManifests(o)
	if err != nil {
		return nil, err
	}
	c, host, err := newClient(Options{Kubeconfig: o.Kubeconfig, Context: o.Context})
	if err != nil {
		return nil, err
	}
	return &Workers{c: c, host: host, o: o, job: job, secret: secret}, nil
}

// NewWorkersWithClient is NewWorkers with a client already built (its
// scheme must hold core/v1 and batch/v1).
func NewWorkersWithClient(c client.Client, o WorkersOptions) (*Workers, error) {
	job, secret, err := WorkerManifests(o)
	if err != nil {
		return nil, err
	}
	return &Workers{c: c, o: o, job: job, secret: secret}, nil
}

// Job returns the Job as kplan creates it.
func (w *Workers) Job() *batchv1.Job { return w.job.DeepCopy() }

// Secret returns the Secret as kplan creates it (nil: none).
func (w *Workers) Secret() *corev1.Secret {
	if w.secret == nil {
		return nil
	}
	return w.secret.DeepCopy()
}

// Options returns the options the workers were made from.
func (w *Workers) Options() WorkersOptions { return w.o }

// objects are the Secret (first: the pods mount it) and the Job.
func (w *Workers) objects() []client.Object {
	var objs []client.Object
	if w.secret != nil {
		objs = append(objs, w.secret.DeepCopy())
	}
	return append(objs, w.job.DeepCopy())
}

// DryRun asks the API server to create the Secret and the Job without
// persisting them (server-side dry run): admission, validation and RBAC
// answer as for the real create, and nothing is made.
func (w *Workers) DryRun(ctx context.Context) error {
	for _, obj := range w.objects() {
		if err := w.c.Create(ctx, obj, client.DryRunAll); err != nil {
			return w.createErr(err, obj)
		}
	}
	return nil
}

// Create creates the Secret, then the Job. When the Job is refused the
// Secret is deleted again before Create returns.
func (w *Workers) Create(ctx context.Context) error {
	for _, obj := range w.objects() {
		if err := w.c.Create(ctx, obj); err != nil {
			cerr := w.createErr(err, obj)
			if _, derr := w.Delete(context.WithoutCancel(ctx)); derr != nil {
				return errors.Join(cerr, derr)
			}
			return cerr
		}
		w.created = append(w.created, obj)
	}
	return nil
}

// Delete deletes what Create made, the Job first (with background
// propagation: Kubernetes' garbage collector deletes its pods, whose
// workers the kubelet stops), and returns what it deleted as kind/name.
// Already gone is not an error.
func (w *Workers) Delete(ctx context.Context) ([]string, error) {
	var deleted []string
	var errs []error
	for i := len(w.created) - 1; i >= 0; i-- {
		obj := w.created[i]
		name, err := deleteLabelled(ctx, w.c, w.host, obj)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		deleted = append(deleted, name)
		w.created = slices.Delete(w.created, i, i+1)
	}
	return deleted, errors.Join(errs...)
}

// Created returns what Create made and Delete has not deleted, as
// kind/name.
func (w *Workers) Created() []string {
	var out []string
	for _, obj := range w.created {
		out = append(out, objectRef(obj))
	}
	return out
}

// deleteLabelled deletes obj (a Job with its pods, or a Secret); NotFound
// is success.
func deleteLabelled(ctx context.Context, c client.Client, host string, obj client.Object) (string, error) {
	ref := objectRef(obj)
	err := c.Delete(ctx, obj, client.PropagationPolicy(metav1.DeletePropagationBackground))
	if err != nil && !apierrors.IsNotFound(err) {
		return "", workersErr(err, host, "delete", resourceOf(obj), obj.GetNamespace())
	}
	return ref, nil
}

// objectRef names obj as kind/name ("job/kplan-worker-r1").
func objectRef(obj client.Object) string {
	return resourceSingular(obj) + "/" + obj.GetName()
}

func resourceSingular(obj client.Object) string {
	switch obj.(type) {
	case *batchv1.Job:
		return "job"
	case *corev1.Secret:
		return "secret"
	}
	return strings.ToLower(fmt.Sprintf("%T", obj))
}

// resourceOf names obj's resource as RBAC spells it.
func resourceOf(obj client.Object) string {
	switch obj.(type) {
	case *batchv1.Job:
		return "jobs.batch"
	case *corev1.Secret:
		return "secrets"
	}
	return resourceSingular(obj)
}

// createErr spells a refused create: an existing object means another run
// with this id (or its leftovers), an invalid one names the field the API
// server names; RBAC, the namespace and the connection as kubeErr does.
func (w *Workers) createErr(err error, obj client.Object) error {
	ref := objectRef(obj)
	switch {
	case apierrors.IsAlreadyExists(err):
		return errkind.Usagef(FieldRun, "%s already exists in namespace %s: another run with id %s, or its leftovers (kplan chaos cleanup --namespace %s)", ref, w.o.Namespace, w.o.Run, w.o.Namespace)
	case apierrors.IsInvalid(err):
		field, why := invalidCause(err)
		flag := ""
		if strings.Contains(field, ".image") {
			flag = FieldImage
		}
		return errkind.Usagef(flag, "the API server refuses %s: %s: %s", ref, field, why)
	}
	return workersErr(err, w.host, "create", resourceOf(obj), w.o.Namespace)
}

// workersErr is kubeErr with RBAC refusals pointing at the workers' Role.
func workersErr(err error, host, verb, resource, namespace string) error {
	if apierrors.IsForbidden(err) {
		return errkind.Refusedf("", "Kubernetes RBAC forbids kplan to %s %s in namespace %s (grant the Role in %s): %w", verb, resource, namespace, WorkersRBACDoc, err)
	}
	return kubeErr(err, host, verb, resource, namespace)
}

// invalidCause is the first field and reason of an Invalid status.
func invalidCause(err error) (field, why string) {
	var se apierrors.APIStatus
	if errors.As(err, &se) {
		if d := se.Status().Details; d != nil && len(d.Causes) > 0 {
			return d.Causes[0].Field, d.Causes[0].Message
		}
		return "", se.Status().Message
	}
	return "", err.Error()
}

// CleanupWorkers deletes every Job and Secret labelled managed by kplan
// in o.Namespace (what a killed kplan chaos --workers-on kubernetes left)
// and returns them as kind/name, in name order, Jobs first.
func CleanupWorkers(ctx context.Context, o Options) ([]string, error) {
	quiet()
	if err := (Options{Namespace: o.Namespace}).Validate(); err != nil {
		return nil, err
	}
	c, host, err := newClient(o)
	if err != nil {
		return nil, err
	}
	return cleanupWorkers(ctx, c, host, o.Namespace)
}

// CleanupWorkersWithClient is CleanupWorkers with a client already built.
func CleanupWorkersWithClient(ctx context.Context, c client.Client, namespace string) ([]string, error) {
	if err := (Options{Namespace: namespace}).Validate(); err != nil {
		return nil, err
	}
	return cleanupWorkers(ctx, c, "", namespace)
}

// cleanupWorkers deletes the workers' leftovers in ns. A list refused
// with Forbidden (no right to list Jobs or Secrets: an account that only
// kills brokers) means this account could not have created one either,
// as for the NetworkChaos.
func cleanupWorkers(ctx context.Context, c client.Client, host, ns string) ([]string, error) {
	mine := []client.ListOption{client.InNamespace(ns), client.MatchingLabels{ManagedByLabel: ManagedByValue}}
	var objs []client.Object
	var jobs batchv1.JobList
	if err := c.List(ctx, &jobs, mine...); err != nil && !apierrors.IsForbidden(err) {
		return nil, workersErr(err, host, "list", "jobs.batch", ns)
	}
	sort.Slice(jobs.Items, func(i, j int) bool { return jobs.Items[i].Name < jobs.Items[j].Name })
	for i := range jobs.Items {
		objs = append(objs, &jobs.Items[i])
	}
	var secrets corev1.SecretList
	if err := c.List(ctx, &secrets, mine...); err != nil && !apierrors.IsForbidden(err) {
		return nil, workersErr(err, host, "list", "secrets", ns)
	}
	sort.Slice(secrets.Items, func(i, j int) bool { return secrets.Items[i].Name < secrets.Items[j].Name })
	for i := range secrets.Items {
		objs = append(objs, &secrets.Items[i])
	}
	var deleted []string
	for _, obj := range objs {
		name, err := deleteLabelled(ctx, c, host, obj)
		if err != nil {
			return deleted, err
		}
		deleted = append(deleted, name)
	}
	return deleted, nil
}

// stuckReasons are the waiting reasons of a container that waiting does
// not cure: its image cannot be pulled, it cannot be created, or it keeps
// crashing.
var stuckReasons = map[string]bool{
	"ErrImagePull": true, "ImagePullBackOff": true, "InvalidImageName": true, "ErrImageNeverPull": true,
	"CreateContainerConfigError": true, "CreateContainerError": true, "CrashLoopBackOff": true,
}

// Stuck looks at the workers' pods (those of the run's Job) and returns an
// error naming the first one that cannot start (its image cannot be
// pulled, its container cannot be created or keeps crashing) or that
// failed before its worker joined: waiting longer for the workers is then
// pointless. Its kind is Runtime, with the field "image" for an image
// that cannot be pulled. nil when none is stuck, and when the pods cannot
// be listed (the Role without "list pods": the join timeout stays the
// bound).
func (w *Workers) Stuck(ctx context.Context) error {
	var pods corev1.PodList
	if err := w.c.List(ctx, &pods, client.InNamespace(w.o.Namespace), client.MatchingLabels{RunIDLabel: w.o.Run, ManagedByLabel: ManagedByValue}); err != nil {
		return nil
	}
	slices.SortFunc(pods.Items, func(a, b corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil {
			continue
		}
		for _, cs := range p.Status.ContainerStatuses {
			if wt := cs.State.Waiting; wt != nil && stuckReasons[wt.Reason] {
				field := FieldWorkers
				if strings.Contains(wt.Reason, "Image") {
					field = FieldImage
				}
				return errkind.New(errkind.Runtime, field, "pod %s/%s of the workers cannot start: %s: %s", p.Namespace, p.Name, wt.Reason, oneLine(wt.Message))
			}
		}
		if p.Status.Phase == corev1.PodFailed {
			why := p.Status.Message
			for _, cs := range p.Status.ContainerStatuses {
				if t := cs.State.Terminated; t != nil {
					why = fmt.Sprintf("its container exited with code %d (%s)", t.ExitCode, t.Reason)
				}
			}
			return errkind.New(errkind.Runtime, FieldWorkers, "pod %s/%s of the workers failed: %s", p.Namespace, p.Name, oneLine(why))
		}
	}
	return nil
}

// oneLine is s on one line.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// WaitDone waits, at most timeout, until every pod of the workers' Job
// has ended (Succeeded or Failed): after a run, each worker publishes its
// last reports and exits on its own, and deleting the Job before that
// would stop it mid-way (SIGTERM). It returns how many pods still ran
// when it gave up (0: all ended); pods that cannot be listed count as
// ended (the Role without "list pods").
func (w *Workers) WaitDone(ctx context.Context, timeout time.Duration) int {
	running := 0
	_ = clock.Poll(ctx, nil, 200*time.Millisecond, timeout, func(ctx context.Context) (bool, error) {
		var pods corev1.PodList
		running = 0
		if err := w.c.List(ctx, &pods, client.InNamespace(w.o.Namespace), client.MatchingLabels{RunIDLabel: w.o.Run, ManagedByLabel: ManagedByValue}); err != nil {
			return true, nil
		}
		for _, p := range pods.Items {
			if p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
				running++
			}
		}
		return running == 0, nil
	})
	return running
}
