package measure

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/cmdutil"
	"github.com/kplan-dev/kplan/internal/measure/experiment"
	"github.com/kplan-dev/kplan/internal/report"
)

// parseUnavail runs the command's flag checks and returns the options.
func parseUnavail(t *testing.T, args ...string) (*UnavailabilityOptions, error) {
	t.Helper()
	var got *UnavailabilityOptions
	cmd := NewCmdUnavailability(cmdutil.NewTestFactory(), func(o *UnavailabilityOptions) error {
		got = o
		return nil
	})
	cmd.SetArgs(append([]string{}, args...)) // never nil: cobra would read the test binary's own command line
	cmd.SetOut(&bytes.Buffer{})
	cmd.SetErr(&bytes.Buffer{})
	err := cmd.Execute()
	return got, err
}

func TestNewCmdUnavailabilityOptions(t *testing.T) {
	o, err := parseUnavail(t)
	require.NoError(t, err)
	assert.Equal(t, "lab", o.ClusterKind)
	assert.Equal(t, []int{1, 10, 100, 1000}, o.Counts)
	assert.Equal(t, 3, o.Repeat)
	assert.Equal(t, 2, o.ReplicationFactor)
	assert.Equal(t, int32(-1), o.Broker)
	assert.Nil(t, o.Killer)
	assert.Equal(t, report.Table, o.Format)

	o, err = parseUnavail(t, "--partitions", "50,1,10", "--repeat", "1", "--broker", "2", "--replication-factor", "3", "-o", "json", "--keep")
	require.NoError(t, err)
	assert.Equal(t, []int{1, 10, 50}, o.Counts)
	assert.Equal(t, int32(2), o.Broker)
	assert.Equal(t, 3, o.ReplicationFactor)
	assert.True(t, o.Keep)
	assert.Equal(t, report.JSON, o.Format)

	o, err = parseUnavail(t, "--bootstrap-server", "k:9092", "--killer", "exec", "--kill-cmd", "kill {id}", "--restore-cmd", "start {id}", "--yes")
	require.NoError(t, err)
	assert.Equal(t, "remote", o.ClusterKind)
	assert.Equal(t, "k:9092", o.Conn.BootstrapServers)
	require.NotNil(t, o.Killer)
	assert.Equal(t, "exec", o.Killer.Kind)
	assert.Equal(t, "start {id}", o.Killer.Exec.RestoreCmd)
	assert.True(t, o.Yes)

	o, err = parseUnavail(t, "--bootstrap-server", "k:9092", "--killer", "docker", "--container-template", "kafka-{id}")
	require.NoError(t, err)
	assert.Equal(t, "kafka-{id}", o.Killer.Docker.ContainerTemplate)
}

func TestNewCmdUnavailabilityBadInput(t *testing.T) {
	dir := t.TempDir()
	plan := filepath.Join(dir, "plan.yaml")
	require.NoError(t, os.WriteFile(plan, []byte("election-time: 5ms\nelection-time: 6ms\n"), 0o600))
	aFile := filepath.Join(dir, "file")
	require.NoError(t, os.WriteFile(aFile, nil, 0o600))
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--partitions", "1,x"}, `--partitions: "x" is not a whole number`},
		{[]string{"--partitions", ""}, "--partitions: empty list"},
		{[]string{"--partitions", "10,10"}, "--partitions: 10 is given twice"},
		{[]string{"--partitions", "0"}, "--partitions: 0: want 1 to 10000"},
		{[]string{"--repeat", "0"}, "--repeat: want 1 to 100"},
		{[]string{"--replication-factor", "1"}, "--replication-factor: want 2 to 16"},
		{[]string{"--broker", "-2"}, "--broker: -2 is not a broker id"},
		{[]string{"--topic", "a/b"}, "--topic:"},
		{[]string{"--topic", ""}, "--topic: empty prefix"},
		{[]string{"--failover-timeout", "0s"}, "--failover-timeout: must be positive"},
		{[]string{"--request-timeout", "-1s"}, "--request-timeout: must be positive"},
		{[]string{"--cluster", "embedded"}, `--cluster: unknown cluster "embedded"`},
		{[]string{"-o", "csv"}, "--output:"},
		{[]string{"--out-plan", filepath.Join(dir, "missing.yaml")}, "--out-plan:"},
		{[]string{"--out-plan", plan}, "--out-plan: " + plan + ": election-time is set 2 times"},
		{[]string{"--report", aFile}, "--report: " + aFile + " is not a directory"},
		{[]string{"--command-config", dir}, "--command-config"},
		{[]string{"--killer", "exec"}, "--killer: needs --bootstrap-server"},
		{[]string{"--yes"}, "--yes: needs --bootstrap-server"},
		{[]string{"--kill-cmd", "true"}, "--kill-cmd: needs --bootstrap-server"},
		{[]string{"--bootstrap-server", "k:9092"}, "--killer: required with --bootstrap-server"},
		{[]string{"--bootstrap-server", " ", "--killer", "docker"}, "--bootstrap-server: no address given"},
		{[]string{"--bootstrap-server", "k:9092", "--cluster", "lab"}, "--bootstrap-server: not with --cluster"},
		{[]string{"--bootstrap-server", "k:9092", "--lab-dir", dir, "--killer", "docker"}, "--lab-dir: only with --cluster lab"},
		{[]string{"--bootstrap-server", "k:9092", "--killer", "bogus"}, `--killer: unknown killer "bogus"`},
		{[]string{"--bootstrap-server", "k:9092", "--killer", "exec", "--kill-cmd", "kill {id}"}, "--restore-cmd: required with --killer exec"},
		{[]string{"--bootstrap-server", "k:9092", "--killer", "exec", "--kill-cmd", "kill {id}", "--restore-cmd", "x", "--container-template", "k-{id}"}, "--container-template: only with --killer docker"},
		{[]string{"--bootstrap-server", "k:9092", "--killer", "docker", "--container-template", "k-{id}", "--kill-timeout", "0s"}, "--kill-timeout: must be positive"},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			_, err := parseUnavail(t, tc.args...)
			require.Error(t, err)
			assert.ErrorContains(t, err, tc.want)
			assert.Equal(t, 2, cmdutil.ExitCode(err), "a usage error: %v", err)
		})
	}
}

func TestUnavailFormatDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		time.Microsecond: "1us", 850 * time.Microsecond: "850us", time.Millisecond: "1ms",
		1250 * time.Microsecond: "1.25ms", 3 * time.Second: "3000ms",
	} {
		assert.Equal(t, want, experiment.FormatElectionTime(d))
		back, err := time.ParseDuration(want)
		require.NoError(t, err)
		assert.Equal(t, d, back)
	}
}
