package chaos

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/chaos"
	"github.com/kplan-dev/kplan/internal/cmdutil"
)

func TestFaultOptions(t *testing.T) {
	o, err := parse(t, "--cluster", "lab", "--fault", "delay:broker-2:200ms", "--partitioner", "roundrobin,sqf")
	require.NoError(t, err)
	require.NotNil(t, o.Config.Fault)
	assert.Equal(t, chaos.FaultDelay, o.Config.Fault.Kind)
	assert.Equal(t, 200*time.Millisecond, o.Config.Fault.Delay)
	assert.Equal(t, chaos.Target{Kind: chaos.TargetNone}, o.Config.Target, "--fault alone: no kill")

	o, err = parse(t, "--cluster", "lab", "--fault", "loss:busiest:5%", "--kill", "broker-3", "--restore")
	require.NoError(t, err)
	assert.Equal(t, chaos.Target{Kind: chaos.TargetBroker, Broker: 3}, o.Config.Target, "besides a kill")
	assert.InDelta(t, 0.05, o.Config.Fault.Loss, 1e-12)

	o, err = parse(t, "--bootstrap-server", "kafka:9092", "--killer", "chaos-mesh", "--namespace", "kafka", "--fault", "partition:broker-1")
	require.NoError(t, err)
	assert.Equal(t, chaos.FaultPartition, o.Config.Fault.Kind)
	assert.Equal(t, "remote", o.Cluster)

	dir := t.TempDir()
	wl := filepath.Join(dir, "fault.yaml")
	require.NoError(t, os.WriteFile(wl, []byte("cluster: lab\nfault: delay:broker-2:100ms:20ms\npartitioner: [roundrobin, sqf]\nrestore: true\n"), 0o600))
	o, err = parse(t, "--workload", wl)
	require.NoError(t, err)
	assert.Equal(t, "delay:broker-2:100ms:20ms", o.Config.Fault.String(), "the workload file's fault: key")
	assert.True(t, o.Config.Restore)
}

func TestFaultBadInput(t *testing.T) {
	dir := t.TempDir()
	wl := filepath.Join(dir, "fault.yaml")
	require.NoError(t, os.WriteFile(wl, []byte("cluster: lab\nfault: delay:broker-2:soon\n"), 0o600))
	for _, tc := range []struct {
		argv []string
		want string
	}{
		{[]string{"--fault", "delay:broker-2:100ms"}, "--fault: the embedded cluster is simulated"},
		{[]string{"--cluster", "lab", "--fault", "slow:broker-2"}, `--fault: "slow:broker-2": unknown fault "slow"`},
		{[]string{"--cluster", "lab", "--fault", "loss:broker-2:10"}, "--fault: "},
		{[]string{"--cluster", "lab", "--fault", "partition:none"}, "not none"},
		{[]string{"--workload", wl}, wl + ":2: fault: "},
		{[]string{"--bootstrap-server", "kafka:9092", "--fault", "delay:broker-2:1ms"}, "--killer: required with --fault"},
		{[]string{"--bootstrap-server", "kafka:9092", "--killer", "docker", "--container-template", "k-{id}", "--fault", "delay:broker-2:1ms"}, "--fault: on a --bootstrap-server cluster only with --killer chaos-mesh"},
	} {
		_, err := parse(t, tc.argv...)
		require.Error(t, err, tc.argv)
		assert.Contains(t, err.Error(), tc.want, tc.argv)
		assert.Equal(t, cmdutil.ExitUsage, cmdutil.ExitCode(err), tc.argv)
		assert.NotContains(t, err.Error(), "\n", "one line")
	}
}

func TestSlowOptions(t *testing.T) {
	o, err := parse(t, "--cluster", "lab", "--slow", "broker-2:bandwidth=2MB/s", "--partitioner", "default,sqf", "--objective", "p99")
	require.NoError(t, err)
	require.NotNil(t, o.Config.Fault)
	assert.True(t, o.Config.Slow)
	assert.Equal(t, chaos.FaultBandwidth, o.Config.Fault.Kind)
	assert.Equal(t, int64(2_000_000), o.Config.Fault.Rate)
	assert.Equal(t, chaos.Target{Kind: chaos.TargetNone}, o.Config.Target, "--slow never kills")
	assert.Equal(t, chaos.ByP99, o.Config.RecommendBy)

	o, err = parse(t, "--cluster", "lab", "--slow", "broker-3:delay=50ms", "--kill", "none")
	require.NoError(t, err)
	assert.Equal(t, 50*time.Millisecond, o.Config.Fault.Delay)
	assert.Equal(t, chaos.ByThroughput, o.Config.RecommendBy, "the default objective")

	o, err = parse(t, "--bootstrap-server", "kafka:9092", "--killer", "chaos-mesh", "--namespace", "kafka", "--slow", "broker-1:bandwidth=1MB/s")
	require.NoError(t, err)
	assert.Equal(t, "remote", o.Cluster)
	assert.True(t, o.Config.Slow)

	o, err = parse(t, "--workload", "../../../chaos/slow-broker-4.yaml", "--cluster", "lab")
	require.NoError(t, err, "the shipped experiment parses")
	assert.Equal(t, "broker-2:bandwidth=2MB/s", chaos.SlowString(*o.Config.Fault))
	assert.Equal(t, []string{"default", "hash", "kip794", "leastbackup", "node", "sqf", "sqf-shared"}, o.Config.Partitioners)
	assert.Equal(t, 60, o.Partitions)
	assert.Equal(t, 10240, o.Config.RecordSize)
}

func TestSlowBadInput(t *testing.T) {
	dir := t.TempDir()
	wl := filepath.Join(dir, "slow.yaml")
	require.NoError(t, os.WriteFile(wl, []byte("cluster: lab\nslow: broker-2:cpu=0.2\n"), 0o600))
	for _, tc := range []struct {
		argv []string
		want string
	}{
		{[]string{"--slow", "broker-2:bandwidth=2MB/s"}, "--slow: the embedded cluster is simulated"},
		{[]string{"--cluster", "lab", "--slow", "broker-2:cpu=20"}, "--slow: \"broker-2:cpu=20\": the CPU cap \"20\" is not a percentage of one CPU"},
		{[]string{"--bootstrap-server", "kafka:9092", "--killer", "chaos-mesh", "--namespace", "kafka", "--slow", "broker-2:cpu=20%"}, "--slow: a CPU cap only on the lab"},
		{[]string{"--cluster", "lab", "--slow", "broker-2:bandwidth=fast"}, "--slow: "},
		{[]string{"--cluster", "lab", "--slow", "broker-2:delay=5ms", "--fault", "loss:broker-2:1%"}, "--slow and --fault: give one"},
		{[]string{"--cluster", "lab", "--slow", "broker-2:delay=5ms", "--kill", "broker-3"}, "--slow and --kill: a slow-broker experiment kills nothing"},
		{[]string{"--cluster", "lab", "--slow", "broker-2:delay=5ms", "--objective", "fast"}, `--objective: unknown objective "fast"`},
		{[]string{"--workload", wl}, wl + ":2: slow: "},
		{[]string{"--bootstrap-server", "kafka:9092", "--slow", "broker-2:delay=1ms"}, "--killer: required with --slow"},
		{[]string{"--bootstrap-server", "kafka:9092", "--killer", "docker", "--container-template", "k-{id}", "--slow", "broker-2:delay=1ms"}, "--slow: on a --bootstrap-server cluster only with --killer chaos-mesh"},
	} {
		_, err := parse(t, tc.argv...)
		require.Error(t, err, tc.argv)
		assert.Contains(t, err.Error(), tc.want, tc.argv)
		assert.Equal(t, cmdutil.ExitUsage, cmdutil.ExitCode(err), tc.argv)
		assert.NotContains(t, err.Error(), "\n", "one line")
	}
}
