//go:build integration

package chaosmesh_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chaos-mesh/chaos-mesh/api/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/kplan-dev/kplan/internal/app"
	"github.com/kplan-dev/kplan/internal/chaos"
	"github.com/kplan-dev/kplan/internal/cmdutil"
	"github.com/kplan-dev/kplan/internal/iostreams"
	"github.com/kplan-dev/kplan/internal/k8stest"
	"github.com/kplan-dev/kplan/internal/kafka"
	"github.com/kplan-dev/kplan/internal/labtest"
)

// These tests run `kplan chaos --killer chaos-mesh` end to end, in process:
// kplan reads the real lab through Kafka, checks the Strimzi-named pod on
// the real API server, creates the PodChaos, Chaos Mesh's own controller
// deletes the pod, and k8stest's agent kills the broker as the kubelet
// would. The lab's brokers listen on 127.0.0.2-4, the pods' IPs.

const cliCluster, cliPool = "my-cluster", "pool-a"

type cliEnv struct {
	lab   *labtest.Lab
	env   *k8stest.Env
	agent *k8stest.Agent
}

func newCLIEnv(t *testing.T) cliEnv {
	t.Helper()
	lab := labtest.Start(t, labtest.Options{LoopbackPerBroker: true})
	env := k8stest.Shared(t)
	agent := env.BrokerPods(t, lab.State, k8stest.StrimziName(cliCluster, cliPool), k8stest.StrimziLabels(cliCluster, cliPool))
	// Longer than the run's after-phase: the broker comes back once the
	// phases are measured, as a pod's start time would have it.
	agent.SetRestartDelay(15 * time.Second)
	grantDocsRole(t, env)
	return cliEnv{lab, env, agent}
}

// grantDocsRole binds the Role that docs/chaos-mesh.md tells operators to
// grant kplan to k8stest's operator user, whose kubeconfig every run here
// uses: the runs prove that Role is enough.
func grantDocsRole(t *testing.T, env *k8stest.Env) {
	t.Helper()
	block := k8stest.DocYAML(t, filepath.Join("..", "..", "..", "docs", "chaos-mesh.md"), "## RBAC")
	roleYAML, _, _ := strings.Cut(string(block), "\n---\n")
	var role rbacv1.Role
	require.NoError(t, yaml.UnmarshalStrict([]byte(roleYAML), &role))
	require.Equal(t, "Role", role.Kind)
	role.Namespace = env.Namespace
	ctx := context.Background()
	if err := env.Client.Create(ctx, &role); !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err)
	}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: role.Name + "-operator", Namespace: env.Namespace},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: k8stest.OperatorUser}},
	}
	if err := env.Client.Create(ctx, binding); !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err)
	}
}

// kplanRun runs kplan in process and returns the exit code, stdout and
// stderr.
func kplanRun(ctx context.Context, args ...string) (int, string, string) {
	ios, _, out, errOut := iostreams.Test()
	f := &cmdutil.Factory{IOStreams: ios, Version: "test", Now: time.Now}
	code := app.Run(ctx, f, args)
	return code, out.String(), errOut.String()
}

func (e cliEnv) args(topic string, extra ...string) []string {
	return append([]string{"chaos", "--bootstrap-server", e.lab.Bootstrap, "--killer", "chaos-mesh",
		"--kubeconfig", e.env.OperatorKubeconfig, "--namespace", e.env.Namespace, "--pod-naming", "strimzi",
		"--strimzi-cluster", cliCluster, "--kill", "broker-3", "--topic", topic,
		// Short phases: only invariants are checked (the skews are
		// acceptance figures, internal/chaos's TestAcceptLabKillBroker3Skew).
		"--warmup", "2s", "--phase-duration", "4s"}, extra...)
}

func noPodChaos(t *testing.T, c client.Client, ns string) {
	t.Helper()
	var list v1alpha1.PodChaosList
	require.NoError(t, c.List(context.Background(), &list, client.InNamespace(ns)))
	assert.Empty(t, list.Items, "no PodChaos is left")
}

// brokerBack waits until the agent has broker 3's pod Ready and Kafka lists
// the broker again, so the next test starts whole.
func (e cliEnv) brokerBack(t *testing.T) {
	t.Helper()
	e.agent.WaitRunning(t, 3, 2*time.Minute)
	a := kafka.NewAdmin(kafka.ConnOptions{BootstrapServers: e.lab.Bootstrap}, "test")
	defer a.Close()
	require.Eventually(t, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		c, err := a.Snapshot(ctx, func(string) bool { return false })
		return err == nil && c.LiveBrokers() == 3
	}, 2*time.Minute, 500*time.Millisecond, "broker 3 is back in the metadata")
}

// TestChaosMeshCLIKillBroker3 is issue 12's acceptance through the CLI:
// without --yes kplan prints the plan and exits 4; --dry-run prints a
// PodChaos naming exactly one pod; with --yes the run kills broker 3
// once, loses nothing, and leaves no PodChaos and no topic behind.
func TestChaosMeshCLIKillBroker3(t *testing.T) {
	e := newCLIEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()

	code, out, errOut := kplanRun(ctx, e.args("cmcli")...)
	assert.Equal(t, cmdutil.ExitRefused, code, errOut)
	assert.Contains(t, errOut, "--yes")
	assert.Contains(t, out, "my-cluster-pool-a-3")
	noPodChaos(t, e.env.Client, e.env.Namespace)

	code, out, errOut = kplanRun(ctx, e.args("cmcli", "--dry-run")...)
	require.Equal(t, cmdutil.ExitOK, code, errOut)
	t.Logf("kplan %s --dry-run\n%s", strings.Join(e.args("cmcli"), " "), out)
	assert.Contains(t, out, "kind: PodChaos")
	assert.Contains(t, out, "action: pod-kill")
	assert.Equal(t, 1, strings.Count(out, "- my-cluster-pool-a-"), "the selector names exactly one pod:\n%s", out)
	noPodChaos(t, e.env.Client, e.env.Namespace)
	assert.Zero(t, e.agent.Kills(), "--dry-run kills nothing")

	code, out, errOut = kplanRun(ctx, e.args("cmcli", "--restore", "--yes", "-o", "json")...)
	require.Equal(t, cmdutil.ExitOK, code, errOut)
	var res chaos.Result
	require.NoError(t, json.Unmarshal([]byte(out), &res), out)
	assert.Equal(t, int32(3), res.KilledBroker)
	require.NotNil(t, res.FailoverMS)
	assert.Positive(t, *res.FailoverMS)
	assert.Equal(t, 1, e.agent.Kills(), "Chaos Mesh deleted broker 3's pod once")
	if res.KillEffectMS != nil {
		t.Logf("kill command -> kill took effect %.1f ms; -> every partition led %.1f ms", *res.KillEffectMS, *res.FailoverMS)
	}
	for _, p := range res.Partitioners {
		before, after := p.Phases[chaos.PhaseBefore.String()], p.Phases[chaos.PhaseAfter.String()]
		require.NotNil(t, before.MaxOverMean, p.Name)
		require.NotNil(t, after.MaxOverMean, p.Name)
		t.Logf("%-10s before %.3f %v  after %.3f %v  acked %d lost %d", p.Name, *before.MaxOverMean, before.PerBroker, *after.MaxOverMean, after.PerBroker, p.Acked, p.Lost)
		assert.Zero(t, p.Lost, p.Name)
		// The skews themselves are acceptance figures, measured on the
		// lab by internal/chaos's TestAcceptLabKillBroker3Skew: the same
		// partitioners and experiment, whatever killed the broker.
	}
	noPodChaos(t, e.env.Client, e.env.Namespace)
	e.brokerBack(t)
}

// TestChaosMeshCLIInterrupt interrupts a run after the kill: kplan deletes
// its PodChaos and topics on the way out.
func TestChaosMeshCLIInterrupt(t *testing.T) {
	e := newCLIEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	runCtx, interrupt := context.WithCancel(ctx)
	go func() {
		// After the kill: warm-up 6 s, then the 8 s before-phase.
		for e.agent.Kills() == 0 && runCtx.Err() == nil {
			time.Sleep(100 * time.Millisecond)
		}
		time.Sleep(time.Second)
		interrupt()
	}()
	code, _, errOut := kplanRun(runCtx, e.args("cmint", "--yes")...)
	interrupt()
	assert.NotEqual(t, cmdutil.ExitOK, code, errOut)
	assert.Equal(t, 1, e.agent.Kills(), errOut)
	noPodChaos(t, e.env.Client, e.env.Namespace)
	assert.Contains(t, errOut, "deleted topics", errOut)
	e.brokerBack(t)
}

// TestChaosMeshCLIRefusals: each refusal is one line with exit 4, and
// nothing is created.
func TestChaosMeshCLIRefusals(t *testing.T) {
	e := newCLIEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	tests := []struct {
		name  string
		setup func(t *testing.T) (undo func())
		extra []string
		want  string
	}{
		{"pod missing", func(t *testing.T) func() {
			e.agent.DeletePod(t, 3)
			return func() { e.agent.RecreatePod(t, 3) }
		}, nil, "my-cluster-pool-a-3"},
		{"pod not ready", func(t *testing.T) func() {
			e.agent.SetReady(t, 3, false)
			return func() { e.agent.SetReady(t, 3, true) }
		}, nil, "Ready"},
		{"identity mismatch", func(*testing.T) func() { return func() {} },
			[]string{"--pod-naming", "statefulset", "--statefulset", "my-cluster-pool-a", "--statefulset-offset", "1"}, "my-cluster-pool-a-2"},
		{"rbac forbidden", func(*testing.T) func() { return func() {} },
			[]string{"--kubeconfig", e.env.RestrictedKubeconfig}, "forbidden"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			undo := tt.setup(t)
			defer undo()
			code, _, errOut := kplanRun(ctx, e.args("cmref", append(tt.extra, "--yes")...)...)
			assert.Equal(t, cmdutil.ExitRefused, code, errOut)
			// With --yes the plan goes to stderr; the refusal is its one last line.
			lines := strings.Split(strings.TrimSpace(errOut), "\n")
			last := lines[len(lines)-1]
			assert.True(t, strings.HasPrefix(last, "kplan: "), "last line %q", last)
			assert.Contains(t, last, tt.want)
			noPodChaos(t, e.env.Client, e.env.Namespace)
		})
	}
	assert.Zero(t, e.agent.Kills(), "no refusal kills")
}
