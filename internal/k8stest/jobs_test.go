package k8stest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestRewriteMounts(t *testing.T) {
	mounts := map[string]string{"/etc/kplan": "/tmp/x/v1", "/etc/kplan/tls": "/tmp/x/v2"}
	tests := []struct{ in, want []string }{
		{[]string{"worker", "--command-config", "/etc/kplan/client.properties"}, []string{"worker", "--command-config", "/tmp/x/v1/client.properties"}},
		{[]string{"/etc/kplan/tls/ca.pem", "/etc/kplan"}, []string{"/tmp/x/v2/ca.pem", "/tmp/x/v1"}},
		{[]string{"/etc/kplanx/a", "x/etc/kplan/a", "--k=/etc/kplan/a"}, []string{"/etc/kplanx/a", "x/etc/kplan/a", "--k=/etc/kplan/a"}},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, RewriteMounts(tt.in, mounts), tt.in)
	}
}

// TestJobPod: index i's pod as the Job controller makes it.
func TestJobPod(t *testing.T) {
	indexed := batchv1.IndexedCompletion
	three := int32(3)
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kafka", Name: "kplan-worker-r1", UID: "u-1"},
		Spec: batchv1.JobSpec{CompletionMode: &indexed, Completions: &three, Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{managedByLabel: managedByValue}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "worker", Image: "kplan:dev", Args: []string{"worker"}}}},
		}},
	}
	pod := JobPod(job, 2)
	assert.Equal(t, "kplan-worker-r1-2-", pod.GenerateName)
	assert.Equal(t, "kplan-worker-r1-2", pod.Spec.Hostname)
	assert.Equal(t, "2", pod.Annotations[batchv1.JobCompletionIndexAnnotation])
	assert.Equal(t, "2", pod.Labels[batchv1.JobCompletionIndexAnnotation])
	assert.Equal(t, managedByValue, pod.Labels[managedByLabel])
	assert.Equal(t, "kplan-worker-r1", pod.Labels[batchv1.JobNameLabel])
	assert.Equal(t, "u-1", string(pod.OwnerReferences[0].UID))
	assert.True(t, *pod.OwnerReferences[0].Controller)
	env := pod.Spec.Containers[0].Env
	assert.Equal(t, "JOB_COMPLETION_INDEX", env[len(env)-1].Name)
	assert.Empty(t, job.Spec.Template.Spec.Containers[0].Env, "the template is left alone")

	workerRunning(pod, 42, time.Unix(0, 0))
	assert.Equal(t, corev1.PodRunning, pod.Status.Phase)
	workerEnded(pod, 1, time.Unix(1, 0))
	assert.Equal(t, corev1.PodFailed, pod.Status.Phase)
	assert.Equal(t, int32(1), pod.Status.ContainerStatuses[0].State.Terminated.ExitCode)
	workerRunning(pod, 42, time.Unix(0, 0))
	workerEnded(pod, 0, time.Unix(1, 0))
	assert.Equal(t, corev1.PodSucceeded, pod.Status.Phase)
}
