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
