//go:build integration

package reassign_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/app"
	"github.com/kplan-dev/kplan/internal/kafka"
	"github.com/kplan-dev/kplan/internal/labtest"
	"github.com/kplan-dev/kplan/internal/localkafka"
	"github.com/kplan-dev/kplan/internal/topology"
)

// asKplan makes the test binary run as kplan (its arguments are kplan's),
// so a test can interrupt a real kplan process with SIGINT.
const asKplan = "KPLAN_TEST_AS_KPLAN"

func TestMain(m *testing.M) {
	if os.Getenv(asKplan) == "1" {
		os.Exit(app.Main())
	}
	os.Exit(labtest.Main(m))
}

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

// skewedTopics creates PREFIX-a and PREFIX-b on the lab, with broker 1
// holding 9 of 18 replicas and leading 8 of 9 partitions, and waits until
// every partition is fully in sync under its preferred leader. It returns
// the assignment and a check that every partition of the two topics
// satisfies want.
func skewedTopics(t *testing.T, ctx context.Context, bootstrap, prefix string) (map[string][][]int32, func(want func(topology.Partition) bool) func() bool) {
	t.Helper()
	cl, err := kafka.NewClient(kafka.ConnOptions{BootstrapServers: bootstrap}, "test")
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	original := map[string][][]int32{
		prefix + "-a": {{1, 2}, {1, 2}, {1, 3}, {1, 3}, {1, 2}, {1, 3}},
		prefix + "-b": {{1, 2}, {2, 1}, {1, 3}},
	}
	topics := make([]string, 0, len(original))
	for topic, assign := range original {
		require.NoError(t, kafka.CreateTopic(ctx, cl, topic, assign, nil))
		topics = append(topics, topic)
	}
	// Every broker's metadata has both topics before kplan plans: a
	// broker that had not learnt of one yet (KRaft brokers apply the
	// metadata log each at its pace) once gave kplan a snapshot without
	// it, and a plan that balanced the other topic alone (CI, under
	// load).
	require.NoError(t, kafka.WaitLeaders(ctx, cl, 30*time.Second, topics...))
	only := func(s string) bool { return strings.HasPrefix(s, prefix+"-") }
	layoutIs := func(want func(p topology.Partition) bool) func() bool {
		return func() bool {
			c, err := kafka.Snapshot(ctx, cl, only)
			if err != nil || len(c.Partitions) != 9 {
				return false
			}
			for _, p := range c.Partitions {
				if !want(p) {
					return false
				}
			}
			return true
		}
	}
	require.Eventually(t, layoutIs(func(p topology.Partition) bool {
		return equal(p, original[p.Topic][p.Partition]) && len(p.ISR) == len(p.Replicas) && p.Leader == p.Replicas[0]
	}), 30*time.Second, 200*time.Millisecond)
	return original, layoutIs
}

// TestKafkaAcceptsThePlan: skewed topics on a real 3-broker lab; kplan
// plans from the live cluster; Kafka's own kafka-reassign-partitions
// executes and verifies the plan unchanged; kafka-leader-election runs the
// election file; kplan audit then sees the balanced layout; the rollback
// file, run the same way, restores the original assignment.
func TestKafkaAcceptsThePlan(t *testing.T) {
	lab := labtest.Shared(t)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()

	original, layoutIs := skewedTopics(t, ctx, lab.Bootstrap, "reassign")
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
	require.Eventually(t, layoutIs(func(p topology.Partition) bool { return equal(p, original[p.Topic][p.Partition]) }),
		time.Minute, 500*time.Millisecond, "the rollback did not restore the original assignment")
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

// configs describes an entity's dynamic configs with Kafka's own
// kafka-configs tool.
func configs(t *testing.T, ctx context.Context, bootstrap, entityType, name string) string {
	t.Helper()
	out, err := kafkaTool(t, ctx, "kafka.admin.ConfigCommand", "--bootstrap-server", bootstrap, "--entity-type", entityType, "--entity-name", name, "--describe")
	require.NoError(t, err, out)
	return out
}

// planLeaders reads a plan file: each partition's target replicas, keyed
// "topic/partition".
func planLeaders(t *testing.T, file string) map[string][]int32 {
	t.Helper()
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	var plan struct {
		Partitions []struct {
			Topic     string  `json:"topic"`
			Partition int32   `json:"partition"`
			Replicas  []int32 `json:"replicas"`
		} `json:"partitions"`
	}
	require.NoError(t, json.Unmarshal(data, &plan))
	out := map[string][]int32{}
	for _, p := range plan.Partitions {
		out[fmt.Sprintf("%s/%d", p.Topic, p.Partition)] = p.Replicas
	}
	return out
}

// TestApplyExecutesThePlan: kplan reassign apply refuses without --yes on a
// cluster that is not the default lab and changes nothing; with --yes and a
// throttle it executes the plan through the Admin API and waits until it is
// complete, removing the throttle, then elects the preferred leaders, so
// every partition is led by the plan's first replica (read back from
// metadata, not from apply's report); --verify agrees; the rollback,
// started with --no-wait, carries its throttle (as Kafka's kafka-configs
// shows) until --verify reports it complete, removes it and elects the
// original leaders.
func TestApplyExecutesThePlan(t *testing.T) {
	lab := labtest.Shared(t)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()

	original, layoutIs := skewedTopics(t, ctx, lab.Bootstrap, "apply")
	isOriginal := layoutIs(func(p topology.Partition) bool { return equal(p, original[p.Topic][p.Partition]) })
	dir := t.TempDir()
	plan, rollback := filepath.Join(dir, "plan.json"), filepath.Join(dir, "rollback.json")
	require.Eventually(t, func() bool {
		code, _, _ := run("reassign", "--bootstrap-server", lab.Bootstrap, "--topics", "^apply-", "--out", plan, "--rollback", rollback)
		return code == 0
	}, 20*time.Second, 250*time.Millisecond)

	// No --yes: the plan is shown, nothing changes, exit 4.
	code, _, errOut := run("reassign", "apply", plan, "--bootstrap-server", lab.Bootstrap)
	assert.Equal(t, 4, code, errOut)
	assert.Contains(t, errOut, "Plan for "+lab.Bootstrap)
	assert.Contains(t, errOut, "--yes: needed to execute")
	assert.Contains(t, errOut, "not the local kplan lab; nothing was changed")
	assert.True(t, isOriginal(), "a refused apply changed the cluster")

	// Execute with a throttle and wait.
	var res struct {
		Schema     string `json:"schema"`
		Outcome    string `json:"outcome"`
		Complete   int    `json:"complete"`
		Message    string `json:"message"`
		Partitions []struct {
			Status string `json:"status"`
		} `json:"partitions"`
		Election struct {
			Needed   int               `json:"needed"`
			Elected  int               `json:"elected"`
			Failed   []json.RawMessage `json:"failed"`
			NotMoved []json.RawMessage `json:"not_moved"`
		} `json:"election"`
	}
	targets := planLeaders(t, plan)
	code, out, errOut := run("reassign", "apply", plan, "--bootstrap-server", lab.Bootstrap, "--throttle", "10MB/s", "--yes", "-o", "json", "--progress", "text")
	require.Equal(t, 0, code, errOut)
	t.Logf("kplan reassign apply (stderr):\n%s", errOut)
	require.NoError(t, json.Unmarshal([]byte(out), &res))
	assert.Equal(t, len(res.Partitions), res.Complete, res.Message)
	assert.Equal(t, "kplan.reassign.apply/v1", res.Schema)
	assert.Equal(t, "complete", res.Outcome)
	assert.Contains(t, errOut, "partitions complete")
	// The plan keeps broker 1 among the replicas of partitions it leads
	// and puts another broker first: Kafka keeps leader 1 there, so only
	// the election gives them the plan's leader.
	assert.Contains(t, errOut, "then elect preferred leaders of")
	assert.Positive(t, res.Election.Needed, "the move alone left partitions led by another replica")
	assert.Equal(t, res.Election.Needed, res.Election.Elected)
	assert.Empty(t, res.Election.Failed)
	assert.Empty(t, res.Election.NotMoved)
	assert.Contains(t, res.Message, "preferred leaders elected on")
	// Checked independently, in the cluster's metadata: every partition
	// has the plan's replicas and is led by the plan's first replica.
	// (A partition the plan leaves alone keeps its original replicas.)
	misplaced := func() (bool, []string) {
		var bad []string
		ok := layoutIs(func(p topology.Partition) bool {
			want, ok := targets[fmt.Sprintf("%s/%d", p.Topic, p.Partition)]
			if !ok {
				want = original[p.Topic][p.Partition]
			}
			if !equal(p, want) || p.Leader != want[0] {
				bad = append(bad, fmt.Sprintf("%s/%d replicas %v leader %d", p.Topic, p.Partition, p.Replicas, p.Leader))
				return false
			}
			return true
		})()
		return ok, bad
	}
	if !assert.Eventually(t, func() bool { ok, _ := misplaced(); return ok }, 10*time.Second, 200*time.Millisecond) {
		_, bad := misplaced()
		t.Fatalf("after apply, not as the plan has it: %v", bad)
	}
	for _, b := range []string{"1", "2", "3"} {
		assert.NotContains(t, configs(t, ctx, lab.Bootstrap, "brokers", b), "replication.throttled.rate", "broker %s keeps a throttle", b)
	}
	code, out, errOut = run("reassign", "apply", plan, "--bootstrap-server", lab.Bootstrap, "--verify")
	assert.Equal(t, 0, code, out+errOut)
	t.Logf("kplan reassign apply --verify:\n%s", out)
	var audit struct {
		ReplicaSkew struct{ Min, Max int } `json:"replica_skew"`
	}
	code, out, _ = run("audit", "--bootstrap-server", lab.Bootstrap, "--topics", "^apply-", "-o", "json")
	require.Equal(t, 0, code)
	require.NoError(t, json.Unmarshal([]byte(out), &audit))
	assert.Equal(t, 6, audit.ReplicaSkew.Min, "replicas per broker after apply")
	assert.Equal(t, 6, audit.ReplicaSkew.Max, "replicas per broker after apply")

	// The rollback, started without waiting: the throttle is in place
	// until --verify sees the reassignment complete.
	code, _, errOut = run("reassign", "apply", rollback, "--bootstrap-server", lab.Bootstrap, "--throttle", "1MB/s", "--yes", "--no-wait")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, configs(t, ctx, lab.Bootstrap, "brokers", "1"), "leader.replication.throttled.rate=1000000")
	require.Eventually(t, func() bool {
		code, _, _ := run("reassign", "apply", rollback, "--bootstrap-server", lab.Bootstrap, "--verify")
		return code == 0
	}, 2*time.Minute, time.Second, "--verify never reported the rollback complete")
	assert.NotContains(t, configs(t, ctx, lab.Bootstrap, "brokers", "1"), "replication.throttled.rate")
	assert.NotContains(t, configs(t, ctx, lab.Bootstrap, "topics", "apply-a"), "throttled.replicas")
	// --verify elected the original leaders back: every partition led by
	// its first replica.
	require.Eventually(t, layoutIs(func(p topology.Partition) bool {
		return equal(p, original[p.Topic][p.Partition]) && p.Leader == p.Replicas[0]
	}), 10*time.Second, 200*time.Millisecond, "the rollback did not restore the original assignment and leaders")
}
