//go:build integration

package chaosmesh_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chaos-mesh/chaos-mesh/api/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kplan-dev/kplan/internal/cmdutil"
)

// TestChaosMeshCLIFaultPlan: `kplan chaos --fault ... --killer chaos-mesh`
// against the real lab and API server prints the plan with the
// NetworkChaos (checked by the server's dry run, under the Role
// docs/chaos-mesh.md gives), exits 4 without --yes and 0 with --dry-run,
// and creates nothing. (The injection itself needs chaos-daemon, which
// these machines do not have: see network_integration_test.go.)
func TestChaosMeshCLIFaultPlan(t *testing.T) {
	e := newCLIEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	args := func(fault string, extra ...string) []string {
		return append([]string{"chaos", "--bootstrap-server", e.lab.Bootstrap, "--killer", "chaos-mesh",
			"--kubeconfig", e.env.OperatorKubeconfig, "--namespace", e.env.Namespace, "--pod-naming", "strimzi",
			"--strimzi-cluster", cliCluster, "--fault", fault, "--topic", "netcli", "--partitioner", "roundrobin,sqf"}, extra...)
	}

	code, out, errOut := kplanRun(ctx, args("delay:broker-2:200ms")...)
	assert.Equal(t, cmdutil.ExitRefused, code, errOut)
	assert.Contains(t, errOut, "--yes")
	assert.Contains(t, out, "kind: NetworkChaos")

	code, out, errOut = kplanRun(ctx, args("delay:broker-2:200ms", "--dry-run")...)
	require.Equal(t, cmdutil.ExitOK, code, errOut)
	t.Logf("--dry-run:\n%s", out)
	assert.Contains(t, out, "fault:       delay:broker-2:200ms: broker 2")
	assert.Contains(t, out, "action: delay")
	assert.Contains(t, out, "latency: 200ms")
	assert.Contains(t, out, "direction: to")
	assert.Equal(t, 1, strings.Count(out, "- my-cluster-pool-a-"), "the selector names exactly one pod:\n%s", out)
	assert.Contains(t, out, "- my-cluster-pool-a-2")

	code, out, errOut = kplanRun(ctx, args("partition:broker-2", "--dry-run")...)
	require.Equal(t, cmdutil.ExitOK, code, errOut)
	assert.Contains(t, out, "action: partition")
	assert.Contains(t, out, "direction: both")
	for _, p := range []string{"my-cluster-pool-a-1", "my-cluster-pool-a-2", "my-cluster-pool-a-3"} {
		assert.Contains(t, out, "- "+p, "the broker and, as the target, the others")
	}

	var list v1alpha1.NetworkChaosList
	require.NoError(t, e.env.Client.List(ctx, &list, client.InNamespace(e.env.Namespace)))
	assert.Empty(t, list.Items, "a plan creates no NetworkChaos")
	assert.Zero(t, e.agent.Kills())
}
