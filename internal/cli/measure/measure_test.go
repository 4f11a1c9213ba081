package measure

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/chaos"
	"github.com/kplan-dev/kplan/internal/chaos/chaosmesh"
	"github.com/kplan-dev/kplan/internal/cli/size"
	"github.com/kplan-dev/kplan/internal/cmdutil"
	"github.com/kplan-dev/kplan/internal/iostreams"
	"github.com/kplan-dev/kplan/internal/kafka"
	"github.com/kplan-dev/kplan/internal/kafka/kafkatest"
	"github.com/kplan-dev/kplan/internal/loadgen"
	mm "github.com/kplan-dev/kplan/internal/measure"
	"github.com/kplan-dev/kplan/internal/measure/experiment"
)

func parse(t *testing.T, args ...string) (*Options, error) {
	t.Helper()
	f := cmdutil.NewTestFactory()
	var got *Options
	cmd := newCmdMeasure(f, func(_ context.Context, o *Options) error { got = o; return nil })
	cmd.SetArgs(append([]string{}, args...)) // never nil: cobra would read the test binary's own command line
	cmd.SetOut(&strings.Builder{})
	cmd.SetErr(&strings.Builder{})
	err := cmd.Execute()
	return got, err
}

func TestNewCmdMeasureOptions(t *testing.T) {
	o, err := parse(t, "--bootstrap-server", "k:9092")
	require.NoError(t, err)
	assert.Equal(t, "k:9092", o.Conn.BootstrapServers)
	assert.Equal(t, loadgen.AcksAll, o.Acks)
	assert.Equal(t, 1024, o.RecordSize)
	assert.Equal(t, 10*time.Second, o.Duration)
	assert.Equal(t, 100, o.ElectionPartitions)
	assert.Equal(t, 200*time.Millisecond, o.Requirements.MaxReplicationLatency)
	assert.Equal(t, 2*time.Second, o.Requirements.MaxUnavailability)
	assert.Equal(t, int64(1), o.Requirements.Consumers)
	assert.False(t, o.Lab)
	assert.Equal(t, []string{"kplan", "measure", "--bootstrap-server", "k:9092"}, o.Args)

	o, err = parse(t, "--cluster", "lab", "--acks", "1", "--record-size", "512", "--election-partitions", "0",
		"--election-time", "25ms", "--throughput", "50MB/s", "--max-handles", "30000", "--keep")
	require.NoError(t, err)
	assert.True(t, o.Lab)
	assert.True(t, o.Keep)
	assert.Equal(t, loadgen.AcksLeader, o.Acks)
	assert.Equal(t, 512, o.RecordSize)
	assert.Equal(t, 25*time.Millisecond, o.ElectionTime)
	assert.Equal(t, int64(50_000_000), o.Requirements.Throughput)
	assert.Equal(t, int64(30000), o.MaxHandles)

	o, err = parse(t, "--bootstrap-server", "k:9092", "--acks", "0")
	require.NoError(t, err)
	assert.Equal(t, loadgen.AcksNone, o.Acks)

	// Workers: printed commands by default; on Kubernetes, the Job's
	// options, with a run id picked now (the Job is named after it).
	o, err = parse(t, "--bootstrap-server", "k:9092", "--workers", "3", "--run", "r42")
	require.NoError(t, err)
	assert.Equal(t, 3, o.Workers)
	assert.Equal(t, "r42", o.RunID)
	assert.Nil(t, o.KubeWorkers)
	o, err = parse(t, "--bootstrap-server", "k:9092", "--workers", "2", "--workers-on", "kubernetes", "--image", "kplan:dev",
		"--namespace", "kafka", "--kubeconfig", "/k", "--context", "c")
	require.NoError(t, err)
	require.NotNil(t, o.KubeWorkers)
	assert.NotEmpty(t, o.RunID)
	assert.Equal(t, chaosmesh.WorkersOptions{Kubeconfig: "/k", Context: "c", Namespace: "kafka", Image: "kplan:dev", Run: o.RunID, Workers: 2}, *o.KubeWorkers)
}

func TestNewCmdMeasureRefuses(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		args []string
		want string
	}{
		{nil, "--bootstrap-server: required"},
		{[]string{"--cluster", "docker"}, "--cluster: unknown cluster"},
		{[]string{"--cluster", "lab", "--bootstrap-server", "k:1"}, "--bootstrap-server: not with --cluster lab"},
		{[]string{"--bootstrap-server", "k:1", "--acks", "2"}, "--acks"},
		{[]string{"--bootstrap-server", "k:1", "--record-size", "0"}, "--record-size"},
		{[]string{"--bootstrap-server", "k:1", "--duration", "10ms"}, "--duration"},
		{[]string{"--bootstrap-server", "k:1", "--window", "0s"}, "--window"},
		{[]string{"--bootstrap-server", "k:1", "--election-partitions", "-1"}, "--election-partitions"},
		{[]string{"--bootstrap-server", "k:1", "--election-rounds", "0"}, "--election-rounds"},
		{[]string{"--bootstrap-server", "k:1", "--election-time", "25ms"}, "--election-time: only with --election-partitions 0"},
		{[]string{"--bootstrap-server", "k:1", "--election-partitions", "0", "--election-time", "0s"}, "--election-time"},
		{[]string{"--bootstrap-server", "k:1", "--max-handles", "0"}, "--max-handles"},
		{[]string{"--bootstrap-server", "k:1", "--replication-factor", "0"}, "--replication-factor"},
		{[]string{"--bootstrap-server", "k:1", "--throughput", "fast"}, "--throughput"},
		{[]string{"--bootstrap-server", "k:1", "--max-unavailability", "2"}, "--max-unavailability"},
		{[]string{"--bootstrap-server", "k:1", "--out", filepath.Join(dir, "no", "plan.yaml")}, "--out: directory"},
		{[]string{"--bootstrap-server", "k:1", "--out", dir}, "--out: " + dir + " is a directory"},
		{[]string{"--bootstrap-server", "k:1", "-o", "csv"}, "--output"},
		{[]string{"--bootstrap-server", "k:1", "--timeout", "0s"}, "--timeout"},
		{[]string{"--bootstrap-server", "k:1", "--run", "r1"}, "--run: only with --workers"},
		{[]string{"--bootstrap-server", "k:1", "--workers", "-1"}, "--workers: want 1 to 256"},
		{[]string{"--bootstrap-server", "k:1", "--workers", "257"}, "--workers: want 1 to 256"},
		{[]string{"--bootstrap-server", "k:1", "--workers", "2", "--acks", "0"}, "--acks: 0 with --workers"},
		{[]string{"--bootstrap-server", "k:1", "--workers", "2", "--window", "150ms"}, "--window: 150ms with --workers"},
		{[]string{"--bootstrap-server", "k:1", "--workers", "2", "--run", "a/b"}, "--run: "},
		{[]string{"--bootstrap-server", "k:1", "--workers-on", "kubernetes"}, "--workers-on: only with --workers"},
		{[]string{"--bootstrap-server", "k:1", "--workers", "2", "--workers-on", "ssh"}, `--workers-on: "ssh", want none`},
		{[]string{"--bootstrap-server", "k:1", "--workers", "2", "--image", "kplan:dev"}, "--image: only with --workers-on kubernetes"},
		{[]string{"--bootstrap-server", "k:1", "--workers", "2", "--workers-on", "kubernetes", "--namespace", "kafka"}, "--image"},
		{[]string{"--bootstrap-server", "k:1", "--workers", "2", "--workers-on", "kubernetes", "--image", "kplan:dev"}, "--namespace"},
		{[]string{"--bootstrap-server", "k:1", "--workers", "2", "--workers-on", "kubernetes", "--image", "kplan:dev", "--namespace", "kafka", "--run", "Big_Run"}, "--run"},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			_, err := parse(t, tc.args...)
			require.Error(t, err)
			assert.ErrorContains(t, err, tc.want)
			assert.Equal(t, cmdutil.ExitUsage, cmdutil.ExitCode(err))
		})
	}
}

// fake is an in-process cluster.
type fake struct{ addrs []string }

func newFake(t *testing.T, brokers int) fake {
	t.Helper()
	addrs, stop, err := kafkatest.FakeCluster(brokers)
	require.NoError(t, err)
	t.Cleanup(stop)
	return fake{addrs: addrs}
}

// kfakeOpts is a short run against an in-process cluster.
func kfakeOpts(t *testing.T, c fake, out string) (*Options, *bytes.Buffer, *bytes.Buffer) {
	t.Helper()
	t.Setenv("KPLAN_LAB_DIR", t.TempDir()) // no lab here
	ios, _, stdout, stderr := iostreams.Test()
	f := cmdutil.NewTestFactory()
	o := &Options{IO: ios, Now: f.Now, Version: "test", Args: []string{"kplan", "measure", "--test"},
		Conn: kafka.ConnOptions{BootstrapServers: strings.Join(c.addrs, ","), Timeout: 5 * time.Second},
		Out:  out, Format: "json", MaxHandles: 1000,
		Inputs: experiment.Inputs{Acks: loadgen.AcksAll, RecordSize: 100, Duration: time.Second, Window: 250 * time.Millisecond,
			ReplicationSamples: 5, ReplicationRecordSize: 10, ElectionPartitions: 4, ElectionRounds: 2,
			Requirements: mm.Requirements{Consumers: 2, MaxReplicationLatency: 200 * time.Millisecond, MaxUnavailability: 2 * time.Second}}}
	return o, stdout, stderr
}

func TestRunMeasureOnKfake(t *testing.T) {
	c := newFake(t, 3)
	out := filepath.Join(t.TempDir(), "plan.yaml")
	o, stdout, stderr := kfakeOpts(t, c, out)
	o.Yes = true
	require.NoError(t, runMeasure(context.Background(), o))

	var plan mm.Plan
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &plan))
	assert.Positive(t, plan.Produce.BytesPerSec)
	assert.Positive(t, plan.Consume.BytesPerSec)
	assert.Positive(t, plan.Replication.Latency)
	require.NotNil(t, plan.Election)
	assert.Equal(t, 4, plan.Election.Partitions)
	assert.Equal(t, int64(1000), plan.Handles.Value)
	assert.True(t, plan.Handles.Given)
	assert.Equal(t, 3, plan.Machine.Brokers)
	assert.Contains(t, stderr.String(), "measure: deleted ")
	assert.Contains(t, stderr.String(), "kplan-measure-20260102-030405-tp")

	// The plan is what kplan size reads, flags overriding it.
	f := cmdutil.NewTestFactory()
	var got *size.Options
	cmd := size.NewCmdSize(f, func(_ context.Context, so *size.Options) error { got = so; return nil })
	cmd.SetArgs([]string{"--plan", out, "--throughput", "1MB/s"})
	require.NoError(t, cmd.Execute())
	assert.Equal(t, plan.Produce.BytesPerSec, got.Input.PartitionProduceRate)
	assert.Equal(t, plan.Consume.BytesPerSec, got.Input.PartitionConsumeRate)
	assert.Equal(t, plan.Replication.Latency, got.Input.ReplicationLatency)
	assert.Equal(t, plan.Election.PerPartition, got.Input.ElectionTime)
	assert.Equal(t, int64(1000), got.Input.MaxHandles)
	assert.Equal(t, int64(2), got.Input.Consumers)
	assert.Equal(t, int64(3), got.Input.ReplicationFactor)
	assert.Equal(t, int64(3), got.Input.MaxBrokers)
	assert.Equal(t, int64(1_000_000), got.Input.Throughput)

	// Nothing left behind.
	ids := listTopics(t, c)
	assert.Empty(t, ids)
}

// TestRunMeasureWithWorkersOnKfake: Tp measured by two kplan workers
// (in-process here, started before the coordinator with its --run id):
// the plan says so, its Tp adds up both workers' bytes, the worker
// commands are printed, and nothing is left behind (the run's topics
// included).
func TestRunMeasureWithWorkersOnKfake(t *testing.T) {
	c := newFake(t, 3)
	o, stdout, stderr := kfakeOpts(t, c, "")
	o.Yes, o.Workers, o.RunID = true, 2, "m1"
	o.Duration, o.Window = 1500*time.Millisecond, 500*time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	outs := make([]*chaos.WorkerOutcome, 2)
	errs := make([]error, 2)
	for i := range 2 {
		w := &chaos.Worker{Run: "m1", Index: i, Conn: o.Conn, Version: "test", JoinTimeout: 30 * time.Second}
		wg.Go(func() { outs[i], errs[i] = chaos.RunWorker(ctx, w) })
	}
	require.NoError(t, runMeasure(ctx, o))
	wg.Wait()
	for i := range 2 {
		require.NoError(t, errs[i], "worker %d", i)
		assert.Equal(t, []string{"before"}, outs[i].Reported, "worker %d", i)
		assert.Positive(t, outs[i].Sent, "worker %d", i)
	}
	var plan mm.Plan
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &plan))
	assert.Equal(t, 2, plan.Settings.Workers)
	assert.Equal(t, "m1", plan.Settings.WorkersRun)
	assert.Positive(t, plan.Produce.BytesPerSec)
	assert.Positive(t, plan.Consume.BytesPerSec)
	assert.Equal(t, 2, plan.Produce.Windows.N, "three 500ms windows, the first the warm-up")
	assert.Contains(t, stderr.String(), "kplan worker --run m1 --index 1 --bootstrap-server ")
	assert.Empty(t, listTopics(t, c), "scratch and run topics deleted")
}

// TestRunMeasureRefusesWithoutYes: a cluster that is not the local lab gets
// the plan and exit 4, with nothing created or written.
func TestRunMeasureRefusesWithoutYes(t *testing.T) {
	c := newFake(t, 1)
	out := filepath.Join(t.TempDir(), "plan.yaml")
	o, stdout, _ := kfakeOpts(t, c, out)
	o.ElectionPartitions = 0
	o.Format = "table"
	err := runMeasure(context.Background(), o)
	require.Error(t, err)
	assert.Equal(t, cmdutil.ExitRefused, cmdutil.ExitCode(err))
	assert.ErrorContains(t, err, "--yes")
	assert.Contains(t, stdout.String(), "kplan-measure-20260102-030405-tp")
	assert.NoFileExists(t, out)
	assert.Empty(t, listTopics(t, c))
}

func TestRunMeasureNeedsMaxHandlesOffLab(t *testing.T) {
	c := newFake(t, 1)
	o, _, _ := kfakeOpts(t, c, "")
	o.MaxHandles, o.Yes, o.ElectionPartitions = 0, true, 0
	err := runMeasure(context.Background(), o)
	assert.ErrorContains(t, err, "--max-handles: required")
	assert.Equal(t, cmdutil.ExitUsage, cmdutil.ExitCode(err))
	assert.Empty(t, listTopics(t, c))
}

func TestRunMeasureElectionNeedsReplicas(t *testing.T) {
	c := newFake(t, 1)
	o, _, _ := kfakeOpts(t, c, "")
	o.Yes = true
	err := runMeasure(context.Background(), o)
	assert.ErrorContains(t, err, "--election-partitions: leadership cannot move with replication factor 1")
	assert.Empty(t, listTopics(t, c))
}

// TestRunMeasureCancelled: Ctrl-C during the run still deletes the scratch
// topics and writes no plan.
func TestRunMeasureCancelled(t *testing.T) {
	c := newFake(t, 3)
	out := filepath.Join(t.TempDir(), "plan.yaml")
	o, _, _ := kfakeOpts(t, c, out)
	o.Yes, o.Duration = true, 5*time.Second
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for len(listTopics(t, c)) == 0 {
			time.Sleep(20 * time.Millisecond)
		}
		cancel()
	}()
	err := runMeasure(ctx, o)
	require.Error(t, err)
	assert.NoFileExists(t, out)
	assert.Empty(t, listTopics(t, c))
}

func listTopics(t *testing.T, c fake) []string {
	t.Helper()
	snap, err := kafka.NewAdmin(kafka.ConnOptions{BootstrapServers: strings.Join(c.addrs, ",")}, "test").Snapshot(context.Background(), nil)
	require.NoError(t, err)
	var names []string
	for _, p := range snap.Partitions {
		if !strings.HasPrefix(p.Topic, "__") {
			names = append(names, p.Topic)
		}
	}
	return names
}

func TestKafkaVersion(t *testing.T) {
	assert.Equal(t, "v4.1 (guessed by franz-go from the brokers' ApiVersions)", kafkaVersion(nil, "v4.1"))
	assert.Empty(t, kafkaVersion(nil, ""))
}

func TestCheckOutDir(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	require.NoError(t, os.WriteFile(file, nil, 0o600))
	assert.NoError(t, checkOutDir(filepath.Join(dir, "plan.yaml")))
	assert.ErrorContains(t, checkOutDir(filepath.Join(file, "plan.yaml")), "is not a directory")
}
