//go:build integration

package reassign_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/kafka"
	"github.com/kplan-dev/kplan/internal/labtest"
	"github.com/kplan-dev/kplan/internal/localkafka"
	"github.com/kplan-dev/kplan/internal/topology"
)

func TestMain(m *testing.M) { os.Exit(labtest.Main(m)) }

// kafkaTool runs one of Kafka's own command-line tools from the lab's jars.
func kafkaTool(t *testing.T, ctx context.Context, class string, args ...string) (string, error) {
	t.Helper()
	jars, err := localkafka.FindJars("")
	require.NoError(t, err)
	cmd := exec.CommandContext(ctx, "java", append([]string{"-cp", filepath.Join(jars, "*"), class}, args...)...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

const reassignTool = "org.apache.kafka.tools.reassign.ReassignPartitionsCommand"

// runReassignment executes a plan file with Kafka's own tool and polls
// --verify until every partition's reassignment is complete.
func runReassignment(t *testing.T, ctx context.Context, bootstrap, file string) {
	t.Helper()
	out, err := kafkaTool(t, ctx, reassignTool, "--bootstrap-server", bootstrap, "--reassignment-json-file", file, "--execute")
	require.NoError(t, err, out)
	require.Contains(t, out, "Successfully started partition reassignment")
	require.Eventually(t, func() bool {
		out, err = kafkaTool(t, ctx, reassignTool, "--bootstrap-server", bootstrap, "--reassignment-json-file", file, "--verify")
		return err == nil && strings.Contains(out, "is completed") && !strings.Contains(out, "in progress")
	}, 2*time.Minute, time.Second, "kafka-reassign-partitions --verify never reported completion: %s", out)
	t.Logf("kafka-reassign-partitions --verify:\n%s", out)
}

// TestKafkaAcceptsThePlan: skewed topics on a real 3-broker lab; kplan
// plans from the live cluster; Kafka's own kafka-reassign-partitions
// executes and verifies the plan unchanged; kafka-leader-election runs the
// election file; kplan audit then sees the balanced layout; the rollback
// file, run the same way, restores the original assignment.
func TestKafkaAcceptsThePlan(t *testing.T) {
	lab := labtest.Shared(t)
	cl, err := kafka.NewClient(kafka.ConnOptions{BootstrapServers: lab.Bootstrap}, "test")
	require.NoError(t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()

	// Broker 1 holds 9 of 18 replicas and leads 8 of 9 partitions.
	original := map[string][][]int32{
		"reassign-a": {{1, 2}, {1, 2}, {1, 3}, {1, 3}, {1, 2}, {1, 3}},
		"reassign-b": {{1, 2}, {2, 1}, {1, 3}},
	}
	for topic, assign := range original {
		require.NoError(t, kafka.CreateTopic(ctx, cl, topic, assign, nil))
	}
	only := func(s string) bool { return strings.HasPrefix(s, "reassign-") }
	require.Eventually(t, func() bool {
		c, err := kafka.Snapshot(ctx, cl, only)
		if err != nil || len(c.Partitions) != 9 {
			return false
		}
		for _, p := range c.Partitions {
			if len(p.ISR) != len(p.Replicas) || p.Leader != p.Replicas[0] {
				return false
			}
		}
		return true
	}, 30*time.Second, 200*time.Millisecond)

	dir := t.TempDir()
	plan, rollback, elect := filepath.Join(dir, "plan.json"), filepath.Join(dir, "rollback.json"), filepath.Join(dir, "elect.json")
	var sum struct {
		Partitions    int `json:"partitions"`
		ReplicasMoved int `json:"replicas_moved"`
		LowerBound    int `json:"lower_bound"`
		Elections     int `json:"preferred_elections"`
	}
	require.Eventually(t, func() bool {
		code, out, _ := run("reassign", "--bootstrap-server", lab.Bootstrap, "--topics", "^reassign-", "--out", plan, "--rollback", rollback, "--election-out", elect, "-o", "json")
		return code == 0 && json.Unmarshal([]byte(out), &sum) == nil && sum.Partitions == 9
	}, 20*time.Second, 250*time.Millisecond, "kplan never saw both topics")
	data, err := os.ReadFile(plan)
	require.NoError(t, err)
	t.Logf("plan.json:\n%s", data)
	assert.Equal(t, 3, sum.LowerBound)
	assert.Equal(t, sum.LowerBound, sum.ReplicasMoved)

	runReassignment(t, ctx, lab.Bootstrap, plan)
	if sum.Elections > 0 {
		out, err := kafkaTool(t, ctx, "org.apache.kafka.tools.LeaderElectionCommand", "--bootstrap-server", lab.Bootstrap, "--election-type", "PREFERRED", "--path-to-json-file", elect)
		require.NoError(t, err, out)
	}
	// Everything leads from its first replica, the plan's intended leader:
	// kplan audit shows replicas 6-6 and leaders 3-3 per broker.
	var audit struct {
		LeaderSkew  struct{ Min, Max int } `json:"leader_skew"`
		ReplicaSkew struct{ Min, Max int } `json:"replica_skew"`
	}
	require.Eventually(t, func() bool {
		code, out, _ := run("audit", "--bootstrap-server", lab.Bootstrap, "--topics", "^reassign-", "-o", "json")
		return code == 0 && json.Unmarshal([]byte(out), &audit) == nil &&
			audit.ReplicaSkew.Min == 6 && audit.ReplicaSkew.Max == 6 && audit.LeaderSkew.Min == 3 && audit.LeaderSkew.Max == 3
	}, time.Minute, 500*time.Millisecond, "audit after the plan: %+v", audit)

	// The rollback restores every replica list as it was.
	runReassignment(t, ctx, lab.Bootstrap, rollback)
	require.Eventually(t, func() bool {
		c, err := kafka.Snapshot(ctx, cl, only)
		if err != nil {
			return false
		}
		for _, p := range c.Partitions {
			if !equal(p, original[p.Topic][p.Partition]) {
				return false
			}
		}
		return len(c.Partitions) == 9
	}, time.Minute, 500*time.Millisecond, "the rollback did not restore the original assignment")
}

func equal(p topology.Partition, want []int32) bool {
	if len(p.Replicas) != len(want) {
		return false
	}
	for i := range want {
		if p.Replicas[i] != want[i] {
			return false
		}
	}
	return true
}
