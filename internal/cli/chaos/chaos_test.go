package chaos

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"github.com/kplan-dev/kplan/internal/chaos"
	"github.com/kplan-dev/kplan/internal/chaos/embedded"
	"github.com/kplan-dev/kplan/internal/cmdutil"
	"github.com/kplan-dev/kplan/internal/iostreams"
	"github.com/kplan-dev/kplan/internal/loadgen"
	"github.com/kplan-dev/kplan/internal/report"
	"github.com/kplan-dev/kplan/internal/report/chaosreport"
)

// parse runs argv through the command with a capturing runF.
func parse(t *testing.T, argv ...string) (*Options, error) {
	t.Helper()
	var got *Options
	cmd := NewCmdChaos(cmdutil.NewTestFactory(), func(_ context.Context, o *Options) error {
		got = o
		return nil
	})
	cmd.SetArgs(argv)
	cmd.SetOut(new(nopWriter))
	cmd.SetErr(new(nopWriter))
	err := cmd.Execute()
	return got, err
}

type nopWriter struct{}

func (*nopWriter) Write(p []byte) (int, error) { return len(p), nil }

func TestOptions(t *testing.T) {
	o, err := parse(t, "--kill", "broker-3")
	require.NoError(t, err)
	assert.Equal(t, chaos.Target{Kind: chaos.TargetBroker, Broker: 3}, o.Config.Target)
	assert.Equal(t, []string{"roundrobin", "node", "sqf", "default"}, o.Config.Partitioners)
	assert.Equal(t, "embedded", o.Cluster)
	assert.Equal(t, 3, o.Brokers)
	assert.Nil(t, o.Config.Assignment, "built from the cluster's brokers at run time")
	assert.Equal(t, 3, o.Partitions)
	assert.Equal(t, 2, o.ReplicationFactor)
	assert.Equal(t, loadgen.AcksAll, o.Config.Acks)
	assert.Equal(t, int64(100_000), o.Config.Rate)
	assert.Equal(t, 100*time.Millisecond, o.Config.MetadataMinAge)
	assert.Equal(t, report.Table, o.Format)
	assert.Equal(t, "test", o.Config.Version, "the clients' id is kplan/VERSION")
	assert.Empty(t, o.Config.Conn.CommandConfig)

	o, err = parse(t, "--kill", "leader-of:orders/4", "--partitioner", "node, sqf", "--assignment", "1,2;2,1",
		"--rate", "unlimited", "--records", "5000", "--acks", "1", "--restore", "--sequential", "--repeat", "3",
		"--latency-objective", "50ms", "--cluster", "lab", "-o", "json", "--seed", "9")
	require.NoError(t, err)
	assert.Equal(t, chaos.Target{Kind: chaos.TargetLeaderOf, Topic: "orders", Partition: 4}, o.Config.Target)
	assert.Equal(t, []string{"node", "sqf"}, o.Config.Partitioners)
	assert.Equal(t, [][]int32{{1, 2}, {2, 1}}, o.Config.Assignment)
	assert.Zero(t, o.Config.Rate)
	assert.Equal(t, int64(5000), o.Config.Records)
	assert.Equal(t, loadgen.AcksLeader, o.Config.Acks)
	assert.True(t, o.Config.Restore)
	assert.True(t, o.Config.Sequential)
	assert.Equal(t, 3, o.Repeat)
	assert.Equal(t, 50*time.Millisecond, o.Config.Objective)
	assert.Equal(t, "lab", o.Cluster)
	assert.Equal(t, report.JSON, o.Format)
	assert.Equal(t, uint64(9), o.Config.Seed)

	props := filepath.Join(t.TempDir(), "client.properties")
	require.NoError(t, os.WriteFile(props, []byte("security.protocol=PLAINTEXT\n"), 0o600))
	o, err = parse(t, "--kill", "broker-3", "--command-config", props, "--verbose")
	require.NoError(t, err)
	assert.Equal(t, props, o.Config.Conn.CommandConfig, "the security settings reach every client of the experiment")
	assert.True(t, o.Verbose)
}

func TestWorkersOptions(t *testing.T) {
	o, err := parse(t, "--kill", "broker-3", "--cluster", "lab", "--workers", "3", "--run", "r42", "--workers-on", "none")
	require.NoError(t, err)
	assert.Equal(t, 3, o.Config.Workers)
	assert.Equal(t, "r42", o.Config.RunID)
	o, err = parse(t, "--kill", "broker-3")
	require.NoError(t, err)
	assert.Zero(t, o.Config.Workers)
}

func TestBadInput(t *testing.T) {
	for _, tc := range []struct {
		argv []string
		want string
	}{
		{[]string{}, "--kill: required"},
		{[]string{"--kill", "brokr-3"}, "--kill: unknown target"},
		{[]string{"--kill", "broker-x"}, "--kill: target"},
		{[]string{"--kill", "broker-3", "--partitioner", "nope"}, `--partitioner: unknown partitioner "nope"`},
		{[]string{"--kill", "broker-3", "--partitioner", "node,node"}, `--partitioner: partitioner "node" given twice`},
		{[]string{"--kill", "broker-3", "--topic", ""}, "--topic: empty topic name"},
		{[]string{"--kill", "broker-3", "--failover-timeout", "0s"}, "--failover-timeout: must be positive"},
		{[]string{"--kill", "broker-3", "--acks", "0"}, "--acks: want all or 1"},
		{[]string{"--kill", "broker-3", "--rate", "fast"}, "--rate:"},
		{[]string{"--kill", "broker-3", "--replication-factor", "4"}, "--replication-factor: 4 is more than the 3 brokers"},
		{[]string{"--kill", "broker-3", "--assignment", "1,1"}, "--assignment:"},
		{[]string{"--kill", "broker-3", "--cluster", "prod"}, "--cluster: unknown cluster"},
		{[]string{"--kill", "broker-3", "--record-size", "10"}, "--record-size:"},
		{[]string{"--kill", "broker-3", "--phase-duration", "0s"}, "--phase-duration: must be positive"},
		{[]string{"--kill", "broker-3", "--repeat", "0"}, "--repeat:"},
		{[]string{"--kill", "broker-3", "--max-buffered-records", "0"}, "--max-buffered-records:"},
		{[]string{"--kill", "broker-3", "--stick", "0"}, "--stick:"},
		{[]string{"--kill", "broker-3", "--kip794-availability-timeout", "-1s"}, "--kip794-availability-timeout: must not be negative"},
		{[]string{"--kill", "broker-3", "--metadata-max-age", "10ms"}, "--metadata-max-age:"},
		{[]string{"--kill", "broker-3", "--command-config", "/nonexistent/client.properties"}, "--command-config:"},
		{[]string{"--kill", "broker-3", "--run", "r1"}, "--run: only with --workers"},
		{[]string{"--kill", "broker-3", "--workers-on", "none"}, "--workers-on: only with --workers"},
		{[]string{"--kill", "broker-3", "--workers", "-1"}, "--workers: want a positive number"},
		{[]string{"--kill", "broker-3", "--workers", "2", "--workers-on", "ssh"}, `--workers-on: "ssh", want none`},
		{[]string{"--kill", "broker-3", "--workers", "2", "--run", "a/b"}, "--run: \"a/b\""},
		{[]string{"--kill", "broker-3", "--workers", "2", "--repeat", "2"}, "--repeat: one run at a time"},
		{[]string{"--kill", "each", "--workers", "2"}, "--kill: each"},
		{[]string{"--kill", "broker-3", "--workers", "2", "--sequential"}, "--workers: not with sequential"},
		{[]string{"--kill", "broker-3", "--workers", "2", "--records", "100"}, "--workers: not with --records"},
		{[]string{"--kill", "broker-3", "--workers", "100"}, "--workers: 100 workers x 4 producers"},
	} {
		_, err := parse(t, tc.argv...)
		require.Error(t, err, tc.argv)
		assert.Contains(t, err.Error(), tc.want, tc.argv)
		assert.Equal(t, cmdutil.ExitUsage, cmdutil.ExitCode(err), tc.argv)
	}
}

// TestKIP794Timeout: the flag reaches the run's config (and the result's
// kip794_availability_timeout_ms); unset, it is Kafka's default, 0.
func TestKIP794Timeout(t *testing.T) {
	o, err := parse(t, "--kill", "broker-3", "--partitioner", "kip794")
	require.NoError(t, err)
	assert.Zero(t, o.Config.KIP794Timeout, "Kafka's default: disabled")
	o, err = parse(t, "--kill", "broker-3", "--partitioner", "kip794", "--kip794-availability-timeout", "250ms")
	require.NoError(t, err)
	assert.Equal(t, 250*time.Millisecond, o.Config.KIP794Timeout)
}

func TestFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "x.yaml")
	require.NoError(t, os.WriteFile(path, []byte("kill: busiest\npartitioner: [node, sqf]\nacks: \"1\"\nphase-duration: 5s\n"), 0o600))
	o, err := parse(t, "--file", path, "--acks", "all")
	require.NoError(t, err)
	assert.Equal(t, chaos.TargetBusiest, o.Config.Target.Kind)
	assert.Equal(t, []string{"node", "sqf"}, o.Config.Partitioners)
	assert.Equal(t, loadgen.AcksAll, o.Config.Acks, "the command line overrides the file")
	assert.Equal(t, 5*time.Second, o.Config.Phase)

	for _, tc := range []struct{ body, want string }{
		{"kill: broker-3\nspeed: 3\n", "x.yaml:2: unknown key \"speed\""},
		{"kill: broker-3\nfile: other.yaml\n", "x.yaml:2: unknown key \"file\""},
		{"kill: broker-3\nkill: broker-2\n", "x.yaml:2: duplicate key"},
		{"kill: broker-3\nacks: 7\n", "x.yaml:2: acks: want all or 1"},
		{"- a\n", "x.yaml:1: an experiment file is a mapping"},
		{"kill: [a: b]\n", "x.yaml:1: kill: want a value"},
		{"kill: broker-3\nrepeat: many\n", "x.yaml:2: repeat:"},
	} {
		require.NoError(t, os.WriteFile(path, []byte(tc.body), 0o600))
		_, err := parse(t, "--file", path)
		require.Error(t, err, tc.body)
		assert.Contains(t, err.Error(), tc.want, tc.body)
		assert.Equal(t, cmdutil.ExitUsage, cmdutil.ExitCode(err), tc.body)
	}
}

// TestShippedFiles parses every experiment under chaos/.
func TestShippedFiles(t *testing.T) {
	files, err := filepath.Glob("../../../chaos/*.yaml")
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(files), 8)
	for _, f := range files {
		argv := []string{"--workload", f}
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		var keys map[string]any
		require.NoError(t, yaml.Unmarshal(data, &keys), f)
		if keys["slow"] != nil || keys["fault"] != nil {
			// A network fault needs a real cluster's network.
			argv = append(argv, "--cluster", "lab")
		}
		o, err := parse(t, argv...)
		require.NoError(t, err, f)
		if len(o.Config.Workload) == 0 && !o.Config.Existing && o.Cluster == "embedded" {
			assert.NotEmpty(t, o.Config.Assignment, f)
		}
	}
}

// TestRunEmbedded runs a short experiment end to end: JSON with the fields
// the issue names, and a report directory.
func TestRunEmbedded(t *testing.T) {
	if testing.Short() {
		t.Skip("in-process cluster experiment")
	}
	ios, _, out, _ := iostreams.Test()
	f := &cmdutil.Factory{IOStreams: ios, Version: "test", Now: time.Now}
	dir := filepath.Join(t.TempDir(), "rep")
	cmd := NewCmdChaos(f, nil)
	cmd.SetArgs([]string{"--kill", "broker-3", "--partitioner", "roundrobin,node", "--warmup", "500ms",
		"--phase-duration", "1500ms", "--rate", "20kB/s", "-o", "json", "--report", dir})
	require.NoError(t, cmd.Execute())
	var got struct {
		Schema       string   `json:"schema"`
		Cluster      string   `json:"cluster"`
		KilledBroker int32    `json:"killed_broker"`
		FailoverMS   *float64 `json:"failover_ms"`
		Partitioners []struct {
			Name       string `json:"name"`
			Acked      int64  `json:"acked"`
			Lost       int64  `json:"lost"`
			Duplicates int64  `json:"duplicates"`
			Phases     map[string]struct {
				PerBroker      map[string]int64   `json:"per_broker"`
				MaxOverMean    *float64           `json:"max_over_mean"`
				ThroughputMBps float64            `json:"throughput_mbps"`
				LatencyMS      map[string]float64 `json:"latency_ms"`
			} `json:"phases"`
		} `json:"partitioners"`
	}
	require.NoError(t, json.Unmarshal(out.Bytes(), &got))
	assert.Equal(t, chaos.Schema, got.Schema, "every JSON carries its schema")
	assert.Equal(t, "embedded", got.Cluster)
	assert.Equal(t, int32(3), got.KilledBroker)
	assert.Nil(t, got.FailoverMS, "a simulated cluster times no failover")
	require.Len(t, got.Partitioners, 2)
	for _, p := range got.Partitioners {
		assert.Positive(t, p.Acked)
		assert.Zero(t, p.Lost)
		before, after := p.Phases["before"], p.Phases["after"]
		assert.Len(t, before.PerBroker, 3, p.Name)
		assert.NotContains(t, after.PerBroker, "3", p.Name)
		assert.Positive(t, before.ThroughputMBps)
		assert.Contains(t, after.LatencyMS, "p99")
	}
	for _, name := range []string{"report.md", "result.json", chaosreport.PlotRecordsPerBroker, chaosreport.PlotLatencyCDF, chaosreport.PlotThroughput} {
		st, err := os.Stat(filepath.Join(dir, name))
		require.NoError(t, err, name)
		assert.Positive(t, st.Size(), name)
	}
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	require.NoError(t, err)
	assert.Contains(t, string(md), embedded.Label)
	js, err := os.ReadFile(filepath.Join(dir, "result.json"))
	require.NoError(t, err)
	assert.Contains(t, string(js), `"schema": "`+chaos.Schema+`"`)
}
