//go:build integration || acceptance

package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/chaos"
	"github.com/kplan-dev/kplan/internal/kafka"
	"github.com/kplan-dev/kplan/internal/labtest"
	"github.com/kplan-dev/kplan/internal/topology"
)

// workloadFile is the shipped failover workload, from this package.
const workloadFile = "../../chaos/failover-5.yaml"

// workloadFlags are chaos/failover-5.yaml's producer and phases as flags,
// for the run on the existing topics after the plan (--topics takes no
// workload file); the YAML's rates (F2: 1, F3: 1) are the default there.
var workloadFlags = []string{"--acks", "all", "--rate", "200kB/s", "--record-size", "100", "--warmup", "2s", "--phase-duration", "8s"}

// planFlags are the flags of `kplan reassign` in the sequence, besides the
// cluster, the topics and --out: issue 20's acceptance names
// `--failover-moves auto`.
var planFlags = []string{"--failover-moves", "auto"}

// sequence is issue 20's proof on real brokers: the failover-5 topics
// created with their layout, every broker killed in turn (before), the
// failover-ordered plan of `kplan reassign` applied, and every broker killed
// in turn again on the same topics (after).
type sequence struct {
	// Prefix names the topics, Prefix-F2 and Prefix-F3: each sequence
	// needs its own, since its plan changes them.
	Prefix string
	// Timing are chaos's flags for the rate and the phases (the workload's
	// when empty).
	Timing []string
}

// sequenceResult is what a sequence measured and planned.
type sequenceResult struct {
	Before, After *chaos.KillEach
	// BeforeLog and AfterLog are the two kill-each runs' standard error.
	BeforeLog, AfterLog string
	// Plan is the partitions the plan changes, with their new replicas.
	Plan []planPartition
}

// planPartition is one partition of Kafka's reassignment JSON.
type planPartition struct {
	Topic     string  `json:"topic"`
	Partition int32   `json:"partition"`
	Replicas  []int32 `json:"replicas"`
}

// mustKplan runs the CLI in process, logging the command, and returns its
// standard output and standard error; any exit code but 0 fails the test.
func mustKplan(ctx context.Context, t *testing.T, args ...string) (string, string) {
	t.Helper()
	t.Logf("$ kplan %s", strings.Join(args, " "))
	code, out, errOut := kplan(ctx, args...)
	require.Equal(t, 0, code, "kplan %s\n%s", strings.Join(args, " "), errOut)
	return out, errOut
}

// killEach runs `kplan chaos --kill each -o json` with args and decodes it;
// it returns the result and the run's standard error.
func killEach(ctx context.Context, t *testing.T, args ...string) (*chaos.KillEach, string) {
	t.Helper()
	out, errOut := mustKplan(ctx, t, append(append([]string{"chaos"}, args...), "--kill", "each", "--partitioner", "roundrobin", "--sequential", "-o", "json")...)
	var got chaos.KillEach
	require.NoError(t, json.Unmarshal([]byte(out), &got), out)
	return &got, errOut
}

// run runs the sequence on lab.
func (s sequence) run(ctx context.Context, t *testing.T, lab *labtest.Lab) sequenceResult {
	t.Helper()
	topics := "^" + s.Prefix + "-F[23]$"
	var res sequenceResult

	// Before: the workload creates Prefix-F2 and Prefix-F3 with the
	// layout's assignment, which the lab keeps.
	res.Before, res.BeforeLog = killEach(ctx, t, append([]string{"--cluster", "lab", "--lab-dir", lab.State.Dir, "--workload", workloadFile, "--topic", s.Prefix}, s.Timing...)...)

	plan := filepath.Join(t.TempDir(), "plan.json")
	mustKplan(ctx, t, append([]string{"reassign", "--bootstrap-server", lab.Bootstrap, "--topics", topics, "--out", plan}, planFlags...)...)
	b, err := os.ReadFile(plan)
	require.NoError(t, err)
	var pj struct {
		Partitions []planPartition `json:"partitions"`
	}
	require.NoError(t, json.Unmarshal(b, &pj), string(b))
	res.Plan = pj.Partitions
	mustKplan(ctx, t, "reassign", "apply", plan, "--bootstrap-server", lab.Bootstrap, "--lab-dir", lab.State.Dir)
	checkApplied(ctx, t, lab, res.Plan)

	// After: the same topics, as the plan left them, with the workload's
	// producer and phases (Timing overrides them as before: the last
	// value of a flag wins).
	args := append([]string{"--cluster", "lab", "--lab-dir", lab.State.Dir, "--topics", topics}, workloadFlags...)
	res.After, res.AfterLog = killEach(ctx, t, append(args, s.Timing...)...)
	return res
}

// checkApplied reads the cluster's replicas with a client of its own (not
// through the commands) and checks that every partition of the plan has
// the planned replicas in the planned order, led by the first.
func checkApplied(ctx context.Context, t *testing.T, lab *labtest.Lab, plan []planPartition) {
	t.Helper()
	cl, err := kafka.NewClient(kafka.ConnOptions{BootstrapServers: lab.Bootstrap}, "test")
	require.NoError(t, err)
	defer cl.Close()
	names := map[string]bool{}
	for _, p := range plan {
		names[p.Topic] = true
	}
	snap, err := kafka.Snapshot(ctx, cl, func(n string) bool { return names[n] })
	require.NoError(t, err)
	live := map[topology.Key]topology.Partition{}
	for _, p := range snap.Partitions {
		live[p.Key()] = p
	}
	for _, p := range plan {
		got, ok := live[topology.Key{Topic: p.Topic, Partition: p.Partition}]
		if !assert.True(t, ok, "%s/%d: not found", p.Topic, p.Partition) {
			continue
		}
		assert.Equal(t, p.Replicas, got.Replicas, "%s/%d: replicas as planned", p.Topic, p.Partition)
		assert.Equal(t, p.Replicas[0], got.Leader, "%s/%d: led by its preferred leader", p.Topic, p.Partition)
	}
}

// checkKillEach checks a kill-each run's invariants on the 5-broker lab:
// every broker killed once, in order, each kill restored, a prediction per
// kill over the four survivors, records acknowledged and none lost, on the
// topics named by prefix.
func checkKillEach(t *testing.T, label string, got *chaos.KillEach, prefix string) {
	t.Helper()
	assert.Equal(t, chaos.KillEachSchema, got.Schema, label)
	require.Len(t, got.Kills, 5, label)
	var killed []int32
	for _, k := range got.Kills {
		killed = append(killed, k.Broker)
		assert.True(t, k.Restored, "%s: kill of broker %d restored", label, k.Broker)
		require.Len(t, k.Partitioners, 1, label)
		p := k.Partitioners[0]
		assert.Positive(t, p.Acked, "%s: kill of broker %d", label, k.Broker)
		assert.Zero(t, p.Lost, "%s: kill of broker %d: acknowledged records lost", label, k.Broker)
		require.NotNil(t, p.PredictedMaxOverMean, "%s: kill of broker %d: a prediction", label, k.Broker)
		require.NotNil(t, p.MeasuredMaxOverMean, "%s: kill of broker %d: a measurement", label, k.Broker)
		assert.NotContains(t, p.PredictedShare, strconv.Itoa(int(k.Broker)), "%s: the dead broker takes nothing", label)
		assert.Len(t, p.PredictedShare, 4, "%s: kill of broker %d: four survivors", label, k.Broker)
	}
	assert.Equal(t, []int32{1, 2, 3, 4, 5}, killed, label)
	for _, r := range got.Runs {
		for _, p := range r.Partitioners {
			assert.ElementsMatch(t, []string{prefix + "-F2", prefix + "-F3"}, p.Topics, "%s: the topics written", label)
		}
	}
}
