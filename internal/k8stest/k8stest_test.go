package k8stest

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/clientcmd"
)

// TestKubeconfig: the kubeconfig files parse with client-go's own loader
// and carry the server, the token and the namespace.
func TestKubeconfig(t *testing.T) {
	for _, tc := range []struct {
		name, user, ns, wantNS string
	}{
		{"admin", "admin", "", "default"},
		{"restricted", RestrictedUser, Namespace, Namespace},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "kubeconfig")
			require.NoError(t, os.WriteFile(path, kubeconfig("https://127.0.0.1:6443", tc.user, "tok-"+tc.user, tc.ns), 0o600))
			cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(&clientcmd.ClientConfigLoadingRules{ExplicitPath: path}, nil)
			cfg, err := cc.ClientConfig()
			require.NoError(t, err)
			assert.Equal(t, "https://127.0.0.1:6443", cfg.Host)
			assert.Equal(t, "tok-"+tc.user, cfg.BearerToken)
			assert.True(t, cfg.Insecure)
			ns, _, err := cc.Namespace()
			require.NoError(t, err)
			assert.Equal(t, tc.wantNS, ns)
		})
	}
}

// TestFindBinariesNamesWhatIsMissing: each missing program gets one line
// naming it and how to get it.
func TestFindBinariesNamesWhatIsMissing(t *testing.T) {
	dir := t.TempDir()
	exe := func(name string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755))
		return p
	}
	for _, tc := range []struct {
		name, etcd, apiserver, chaos, want string
	}{
		{"no kube-apiserver", exe("etcd"), filepath.Join(dir, "none"), dir, "kube-apiserver not found (run `make k8s`, or set KPLAN_KUBE_APISERVER to the binary)"},
		{"no controller-manager", exe("etcd"), exe("kube-apiserver"), filepath.Join(dir, "none"), "chaos-controller-manager and crd.yaml (Chaos Mesh) not found (run `make k8s`, or set KPLAN_CHAOS_MESH to their directory)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("KPLAN_ETCD", tc.etcd)
			t.Setenv("KPLAN_KUBE_APISERVER", tc.apiserver)
			t.Setenv("KPLAN_CHAOS_MESH", tc.chaos)
			_, err := findBinaries()
			assert.EqualError(t, err, tc.want)
		})
	}
	t.Setenv("KPLAN_ETCD", "")
	t.Setenv("PATH", dir+"/empty")
	saved := binDirs
	binDirs = nil
	t.Cleanup(func() { binDirs = saved })
	_, err := findBinaries()
	assert.EqualError(t, err, "etcd not found on PATH (run `make k8s`, which installs Debian's etcd-server, or set KPLAN_ETCD)")
	exe("chaos-controller-manager")
	exe("crd.yaml")
	t.Setenv("KPLAN_ETCD", exe("etcd"))
	t.Setenv("KPLAN_KUBE_APISERVER", exe("kube-apiserver"))
	t.Setenv("KPLAN_CHAOS_MESH", dir)
	var b binaries
	b, err = findBinaries()
	require.NoError(t, err)
	assert.Equal(t, binaries{etcd: filepath.Join(dir, "etcd"), apiserver: filepath.Join(dir, "kube-apiserver"),
		controller: filepath.Join(dir, "chaos-controller-manager"), crds: filepath.Join(dir, "crd.yaml")}, b)
}

// TestBrokerPod: Strimzi's names and labels, no service account token, and
// a kubelet's status that SetReady flips.
func TestBrokerPod(t *testing.T) {
	name, labels := StrimziName("my-cluster", "pool-a"), StrimziLabels("my-cluster", "pool-a")
	pod := brokerPod(Namespace, name(3), labels(3))
	assert.Equal(t, "my-cluster-pool-a-3", pod.Name)
	assert.Equal(t, Namespace, pod.Namespace)
	for k, v := range map[string]string{"strimzi.io/cluster": "my-cluster", "strimzi.io/pool-name": "pool-a", "strimzi.io/broker-role": "true", "strimzi.io/kind": "Kafka"} {
		assert.Equal(t, v, pod.Labels[k], k)
	}
	require.NotNil(t, pod.Spec.AutomountServiceAccountToken)
	assert.False(t, *pod.Spec.AutomountServiceAccountToken)
	assert.Equal(t, ContainerName, pod.Spec.Containers[0].Name)

	runningStatus(pod, "127.0.0.4", 42, time.Unix(0, 0))
	assert.Equal(t, corev1.PodRunning, pod.Status.Phase)
	assert.Equal(t, "127.0.0.4", pod.Status.PodIP)
	assert.Equal(t, corev1.ConditionTrue, condition(pod, corev1.PodReady))
	setReady(pod, false)
	assert.Equal(t, corev1.ConditionFalse, condition(pod, corev1.PodReady))
	assert.Equal(t, corev1.ConditionFalse, condition(pod, corev1.ContainersReady))
	assert.False(t, pod.Status.ContainerStatuses[0].Ready)
	assert.Equal(t, corev1.PodRunning, pod.Status.Phase, "a pod that is not Ready still runs")
	setReady(pod, true)
	assert.Equal(t, corev1.ConditionTrue, condition(pod, corev1.PodReady))
	assert.True(t, pod.Status.ContainerStatuses[0].Ready)
}

func condition(pod *corev1.Pod, typ corev1.PodConditionType) corev1.ConditionStatus {
	for _, c := range pod.Status.Conditions {
		if c.Type == typ {
			return c.Status
		}
	}
	return ""
}
