//go:build integration

package reassign_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/kafka"
	"github.com/kplan-dev/kplan/internal/labtest"
	"github.com/kplan-dev/kplan/internal/reassign/apply"
	"github.com/kplan-dev/kplan/internal/topology"
)

// TestApplyRefusesDrift: on the real lab, a plan made with its sidecar
// (what the plan command records), then one of its partitions reassigned
// by Kafka's own kafka-reassign-partitions (from a JSON file with an extra
// top-level field, which Kafka's tool accepts), then kplan reassign apply:
// exit 4 naming that partition, nothing changed; with --ignore-drift and
// one move per broker at a time it applies the plan in waves and removes
// the throttle.
func TestApplyRefusesDrift(t *testing.T) {
	lab := labtest.Shared(t)
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	skewedTopics(t, ctx, lab.Bootstrap, "drift")
	dir := t.TempDir()
	planFile := filepath.Join(dir, "plan.json")
	require.Eventually(t, func() bool {
		code, _, _ := run("reassign", "--bootstrap-server", lab.Bootstrap, "--topics", "^drift-", "--out", planFile)
		return code == 0
	}, 20*time.Second, 250*time.Millisecond)
	r, err := os.Open(planFile)
	require.NoError(t, err)
	plan, err := apply.ParsePlan(r, planFile)
	require.NoError(t, r.Close())
	require.NoError(t, err)
	cl, err := kafka.NewClient(kafka.ConnOptions{BootstrapServers: lab.Bootstrap}, "test")
	require.NoError(t, err)
	defer cl.Close()
	c, err := kafka.Snapshot(ctx, cl, func(s string) bool { return strings.HasPrefix(s, "drift-") })
	require.NoError(t, err)
	_, err = apply.WriteSourceFile(planFile, c, plan)
	require.NoError(t, err)

	// Move the plan's first partition to replicas that are neither its
	// current nor its target ones, with Kafka's tool.
	m := plan[0]
	var cur []int32
	for _, p := range c.Partitions {
		if p.Key() == m.Key() {
			cur = p.Replicas
		}
	}
	other := []int32{}
	for _, cand := range [][]int32{{2, 3}, {3, 2}, {1, 3}, {3, 1}, {2, 1}, {1, 2}} {
		if !slices.Equal(cand, cur) && !slices.Equal(cand, m.Replicas) {
			other = cand
			break
		}
	}
	change := filepath.Join(dir, "change.json")
	require.NoError(t, os.WriteFile(change, []byte(fmt.Sprintf(`{"version":1,"partitions":[{"topic":%q,"partition":%d,"replicas":[%d,%d]}],"kplan":{"digest":"sha256:0"}}`,
		m.Topic, m.Partition, other[0], other[1])), 0o600))
	runReassignment(t, ctx, lab.Bootstrap, change)

	code, _, errOut := run("reassign", "apply", planFile, "--bootstrap-server", lab.Bootstrap, "--yes")
	t.Logf("kplan reassign apply (drifted):\n%s", errOut)
	assert.Equal(t, 4, code, errOut)
	assert.Contains(t, errOut, fmt.Sprintf("the cluster changed since the plan was made: %s/%d has replicas [%d,%d], the plan was made from [%s]",
		m.Topic, m.Partition, other[0], other[1], strings.Trim(strings.ReplaceAll(fmt.Sprint(cur), " ", ","), "[]")))
	after, err := kafka.Snapshot(ctx, cl, func(s string) bool { return strings.HasPrefix(s, "drift-") })
	require.NoError(t, err)
	was := map[topology.Key][]int32{}
	for _, p := range c.Partitions {
		was[p.Key()] = p.Replicas
	}
	for _, p := range after.Partitions {
		if p.Key() != m.Key() {
			assert.Equal(t, was[p.Key()], p.Replicas, "a refused apply changed %s", p.Key())
		}
	}

	code, _, errOut = run("reassign", "apply", planFile, "--bootstrap-server", lab.Bootstrap, "--yes", "--ignore-drift",
		"--max-inflight-per-broker", "1", "--throttle", "10MB/s")
	t.Logf("kplan reassign apply --ignore-drift --max-inflight-per-broker 1:\n%s", errOut)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, errOut, "wave 2:")
	for _, b := range []string{"1", "2", "3"} {
		assert.NotContains(t, configs(t, ctx, lab.Bootstrap, "brokers", b), "replication.throttled.rate", "broker %s keeps a throttle", b)
	}
}
