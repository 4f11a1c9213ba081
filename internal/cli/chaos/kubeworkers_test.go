package chaos

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/chaos/chaosmesh"
	"github.com/kplan-dev/kplan/internal/cli/worker"
	"github.com/kplan-dev/kplan/internal/cmdutil"
	"github.com/kplan-dev/kplan/internal/localkafka"
)

func TestKubeWorkersOptions(t *testing.T) {
	o, err := parse(t, "--kill", "broker-3", "--cluster", "lab", "--workers", "3", "--workers-on", "kubernetes",
		"--namespace", "kafka", "--image", "ghcr.io/kplan-dev/kplan:v1", "--kubeconfig", "/k/config", "--context", "prod")
	require.NoError(t, err)
	require.NotNil(t, o.KubeWorkers)
	assert.Equal(t, chaosmesh.WorkersOptions{Kubeconfig: "/k/config", Context: "prod", Namespace: "kafka",
		Image: "ghcr.io/kplan-dev/kplan:v1", Run: o.Config.RunID, Workers: 3}, *o.KubeWorkers)
	assert.Equal(t, "20260102t030405-", o.Config.RunID[:16], "a run id picked before the run names the Job (the factory's clock)")
	assert.Nil(t, o.Remote, "the Kubernetes flags are the workers' here, not a killer's")

	o, err = parse(t, "--kill", "broker-3", "--bootstrap-server", "k1:9092", "--killer", "exec", "--kill-cmd", "true",
		"--workers", "2", "--run", "r42", "--workers-on", "kubernetes", "--namespace", "kafka", "--image", "kplan:dev")
	require.NoError(t, err)
	assert.Equal(t, "r42", o.KubeWorkers.Run)
	assert.Equal(t, "exec", o.Remote.Kind, "--namespace goes with another killer when the workers take it")

	o, err = parse(t, "--kill", "broker-3", "--cluster", "lab", "--workers", "2")
	require.NoError(t, err)
	assert.Nil(t, o.KubeWorkers)
}

func TestKubeWorkersBadInput(t *testing.T) {
	k8s := []string{"--kill", "broker-3", "--cluster", "lab", "--workers", "2", "--workers-on", "kubernetes"}
	for _, tc := range []struct {
		argv []string
		want string
	}{
		{append(k8s, "--namespace", "kafka"), "--image: required with --workers-on kubernetes"},
		{append(k8s, "--image", "kplan:dev"), "--namespace: required with --workers-on kubernetes"},
		{append(k8s, "--image", "kplan:dev", "--namespace", "Kafka!"), `--namespace: "Kafka!" is not a namespace name`},
		{append(k8s, "--image", "kplan:dev", "--namespace", "kafka", "--run", "Run_1"), `--run: "Run_1" cannot name the workers' Job`},
		{[]string{"--kill", "broker-3", "--workers", "2", "--workers-on", "kubernetes", "--image", "kplan:dev", "--namespace", "kafka"}, "--workers-on: the embedded cluster"},
		{[]string{"--kill", "broker-3", "--cluster", "lab", "--workers", "2", "--image", "kplan:dev"}, "--image: only with --workers-on kubernetes"},
		{[]string{"--kill", "broker-3", "--cluster", "lab", "--image", "kplan:dev"}, "--image: only with --workers"},
		{[]string{"--kill", "broker-3", "--cluster", "lab", "--workers", "2", "--namespace", "kafka"}, "--namespace: needs --bootstrap-server"},
	} {
		_, err := parse(t, tc.argv...)
		require.Error(t, err, tc.argv)
		assert.Contains(t, err.Error(), tc.want, tc.argv)
		assert.Equal(t, cmdutil.ExitUsage, cmdutil.ExitCode(err), tc.argv)
	}
}

// TestKubePlan: the plan names what will be created, the worker's command
// and the labels, and never a secret's value.
func TestKubePlan(t *testing.T) {
	dir := t.TempDir()
	props := filepath.Join(dir, "client.properties")
	require.NoError(t, os.WriteFile(props, []byte("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"+
		`sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="hunter2";`+"\n"), 0o600))
	o, err := parse(t, "--kill", "none", "--bootstrap-server", "k1:9092,k2:9092", "--command-config", props,
		"--workers", "2", "--run", "r42", "--workers-on", "kubernetes", "--namespace", "kafka", "--image", "kplan:dev",
		"--kubeconfig", filepath.Join(dir, "kubeconfig"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "kubeconfig"), []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`), 0o600))
	kw, err := newKubeWorkers(o)
	require.NoError(t, err)
	var b bytes.Buffer
	worker.WriteKubePlan(&b, "chaos", kw)
	assert.Equal(t, `chaos: workers on Kubernetes, namespace kafka: kplan creates before the run and deletes after it
  secret/kplan-worker-r42  client.properties, mounted read-only at /etc/kplan
  job/kplan-worker-r42  Indexed, 2 pods of kplan:dev, each running (its index from $JOB_COMPLETION_INDEX):
    kplan worker --run r42 --bootstrap-server k1:9092,k2:9092 --command-config /etc/kplan/client.properties
  labelled app.kubernetes.io/managed-by=kplan, kplan.dev/run-id=r42 (kplan chaos cleanup --namespace kafka deletes leftovers)
`, b.String())
	assert.Contains(t, string(kw.Secret().Data["client.properties"]), `password="hunter2"`, "the Secret carries the credentials")

	// A lab: its addresses and, unsecured, no Secret.
	lab := t.TempDir()
	st, err := json.Marshal(localkafka.State{Dir: lab, Nodes: []localkafka.Node{{ID: 1, Addr: "127.0.0.1", Port: 19092, Broker: true}}})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(lab, "lab.json"), st, 0o600))
	o, err = parse(t, "--kill", "broker-1", "--cluster", "lab", "--lab-dir", lab, "--workers", "1", "--run", "r7",
		"--workers-on", "kubernetes", "--namespace", "kafka", "--image", "kplan:dev", "--kubeconfig", filepath.Join(dir, "kubeconfig"))
	require.NoError(t, err)
	kw, err = newKubeWorkers(o)
	require.NoError(t, err)
	assert.Nil(t, kw.Secret())
	assert.Equal(t, []string{"worker", "--run", "r7", "--bootstrap-server", "127.0.0.1:19092"}, kw.Options().Args())
}
