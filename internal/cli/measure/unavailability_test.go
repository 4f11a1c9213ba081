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
	"github.com/kplan-dev/kplan/internal/measure"
	"github.com/kplan-dev/kplan/internal/measure/experiment"
	"github.com/kplan-dev/kplan/internal/report"
	"github.com/kplan-dev/kplan/internal/testutil/golden"
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

func TestUnavailSetElectionTime(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"replace", "throughput: 1MB/s\nelection-time: 25ms              # u\nmax-unavailability: 2s\n",
			"throughput: 1MB/s\nelection-time: 850us          # measured\nmax-unavailability: 2s\n"},
		{"append", "throughput: 1MB/s\n", "throughput: 1MB/s\nelection-time: 850us          # measured\n"},
		{"append without newline", "throughput: 1MB/s", "throughput: 1MB/s\nelection-time: 850us          # measured\n"},
		{"indented key is not the plan's", "x:\n  election-time: 1ms\n", "x:\n  election-time: 1ms\nelection-time: 850us          # measured\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := unavailSetElectionTime([]byte(tc.in), "850us", "measured")
			require.NoError(t, err)
			assert.Equal(t, tc.want, string(got))
		})
	}
	_, err := unavailSetElectionTime([]byte("election-time: 1ms\nelection-time: 2ms\n"), "1ms", "")
	assert.ErrorContains(t, err, "set 2 times")
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

// sampleResult is a result on a known line with a little scatter.
func sampleResult() *UnavailabilityResult {
	r := &UnavailabilityResult{Schema: UnavailSchema, Date: "2026-01-02T03:04:05Z", Cluster: "lab", Label: "real (kplan lab)",
		Victim: 3, Controller: 1, ReplicationFactor: 2, Repeat: 2, Counts: []int{1, 10, 100, 1000}, Method: experiment.UnavailMethod}
	noise := []float64{12, -9, 4, -6, -3, 8, 10, -11}
	i := 0
	for _, n := range r.Counts {
		for rep := 1; rep <= 2; rep++ {
			all := 3400 + 1.5*float64(n) + noise[i]
			r.Runs = append(r.Runs, measure.UnavailRun{Partitions: n, Repeat: rep, AllMS: all, FirstMS: 3300, MedianMS: all - 20, P90MS: all - 5, ProbeLagMS: 40})
			i++
		}
	}
	r.Finish()
	return r
}

func TestUnavailResultRender(t *testing.T) {
	r := sampleResult()
	require.NotNil(t, r.Fit)
	assert.Equal(t, measure.VerdictLinear, r.Fit.Verdict, r.Fit.Why)
	assert.False(t, r.ElectionTimeBound)
	var table, md, js bytes.Buffer
	require.NoError(t, report.Render(&table, report.Table, r, func() report.Document { return unavailDoc(r) }))
	require.NoError(t, report.Render(&md, report.Markdown, r, func() report.Document { return unavailDoc(r) }))
	require.NoError(t, report.Render(&js, report.JSON, r, func() report.Document { return unavailDoc(r) }))
	golden.Assert(t, "unavailability.txt", table.Bytes())
	golden.Assert(t, "unavailability.md", md.Bytes())
	golden.Assert(t, "unavailability.json", js.Bytes())
	assert.Contains(t, r.PlanLines[2], "election-time: 1.4")
}

func TestUnavailResultNoFit(t *testing.T) {
	r := &UnavailabilityResult{Schema: UnavailSchema, Date: "2026-01-02T03:04:05Z", Counts: []int{100}, Repeat: 1,
		Runs: []measure.UnavailRun{{Partitions: 100, Repeat: 1, AllMS: 3000}}}
	r.Finish()
	assert.Nil(t, r.Fit)
	assert.Contains(t, r.FitError, "two distinct partition counts")
	assert.Empty(t, r.PlanLines)
	var table bytes.Buffer
	require.NoError(t, report.WriteTable(&table, unavailDoc(r)))
	assert.Contains(t, table.String(), "No fit: ")
}

func TestUnavailWriteReportAndPlan(t *testing.T) {
	r := sampleResult()
	dir := filepath.Join(t.TempDir(), "report")
	names, err := unavailWriteReport(r, dir)
	require.NoError(t, err)
	assert.Equal(t, []string{UnavailPlot, "result.json", "report.md"}, names)
	png, err := os.ReadFile(filepath.Join(dir, UnavailPlot))
	require.NoError(t, err)
	assert.True(t, bytes.HasPrefix(png, []byte("\x89PNG")), "a PNG")

	plan := filepath.Join(t.TempDir(), "plan.yaml")
	require.NoError(t, os.WriteFile(plan, []byte("throughput: 1MB/s\nelection-time: 25ms # u\n"), 0o600))
	require.NoError(t, unavailWritePlan(r, plan))
	got, err := os.ReadFile(plan)
	require.NoError(t, err)
	assert.Equal(t, "throughput: 1MB/s\nelection-time: "+r.ElectionTime+strings.Repeat(" ", 14-len(r.ElectionTime))+" # u: slope of the fit, kplan measure unavailability 2026-01-02\n", string(got))
}
