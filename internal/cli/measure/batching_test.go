package measure

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/cmdutil"
	"github.com/kplan-dev/kplan/internal/loadgen"
	"github.com/kplan-dev/kplan/internal/measure"
	"github.com/kplan-dev/kplan/internal/report"
)

// parseBatching runs the command's flag handling and returns the options
// it would run with.
func parseBatching(t *testing.T, args ...string) (*BatchingOptions, error) {
	t.Helper()
	f := cmdutil.NewTestFactory()
	var got *BatchingOptions
	cmd := NewCmdBatching(f, func(o *BatchingOptions) error { got = o; return nil })
	cmd.SetArgs(append([]string{}, args...)) // never nil: cobra would read the test binary's own command line
	cmd.SetOut(&bytes.Buffer{})
	cmd.SetErr(&bytes.Buffer{})
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	err := cmd.Execute()
	return got, err
}

func TestNewCmdBatchingDefaults(t *testing.T) {
	o, err := parseBatching(t, "--cluster", "lab")
	require.NoError(t, err)
	assert.True(t, o.Lab)
	assert.Equal(t, 100*time.Millisecond, o.Objective)
	assert.Equal(t, loadgen.AcksAll, o.Acks)
	assert.Equal(t, 512, o.RecordSize)
	assert.InDelta(t, 1000.0, o.RatePerSecond, 0)
	assert.Equal(t, 3*time.Second, o.CellDuration)
	assert.Equal(t, time.Second, o.Warmup)
	require.Len(t, o.Cells, 16, "4 lingers x 4 sizes")
	assert.Equal(t, measure.BatchCell{Linger: 0, Size: measure.BatchSize{Records: 1}, MaxBytes: 587}, o.Cells[0])
	assert.Equal(t, 100*time.Millisecond, o.Cells[15].Linger)
	assert.Equal(t, measure.BatchSize{Records: 100}, o.Cells[15].Size)
	assert.Equal(t, report.Table, o.Format)
}

func TestNewCmdBatchingFlags(t *testing.T) {
	o, err := parseBatching(t, "--bootstrap-server", "k1:9092,k2:9092", "--yes", "--linger", "0,20ms", "--batch-size", "1,16KiB",
		"--rate", "1MB/s", "--record-size", "1000", "--acks", "1", "--cell-duration", "2s", "--warmup", "0s",
		"--partitions", "3", "--replication-factor", "2", "--keep", "--topic", "bt", "-o", "json")
	require.NoError(t, err)
	assert.False(t, o.Lab)
	assert.Equal(t, "k1:9092,k2:9092", o.Conn.BootstrapServers)
	assert.True(t, o.Yes)
	assert.InDelta(t, 1000.0, o.RatePerSecond, 0, "1 MB/s of 1000 B records")
	assert.Equal(t, loadgen.AcksLeader, o.Acks)
	require.Len(t, o.Cells, 4)
	assert.Equal(t, int32(16384), o.Cells[1].MaxBytes)
	assert.Equal(t, 3, o.Partitions)
	assert.Equal(t, 2, o.ReplicationFactor)
	assert.True(t, o.Keep)
	assert.Equal(t, "bt", o.TopicPrefix)
	assert.Equal(t, report.JSON, o.Format)
}

func TestNewCmdBatchingErrors(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "a-file")
	require.NoError(t, os.WriteFile(file, nil, 0o600))
	tests := []struct {
		args []string
		code int
		want string
	}{
		{[]string{}, cmdutil.ExitUsage, "--cluster lab or --bootstrap-server"},
		{[]string{"--cluster", "lab", "--linger", "5"}, cmdutil.ExitUsage, "--linger: \"5\" has no unit"},
		{[]string{"--cluster", "lab", "--batch-size", "4x"}, cmdutil.ExitUsage, "--batch-size:"},
		{[]string{"--cluster", "lab", "--record-size", "100"}, cmdutil.ExitUsage, "--batch-size: 1 records of 100 B"},
		{[]string{"--cluster", "lab", "--record-size", "10"}, cmdutil.ExitUsage, "--record-size"},
		{[]string{"--cluster", "lab", "--acks", "2"}, cmdutil.ExitUsage, "--acks"},
		{[]string{"--cluster", "lab", "--rate", "fast"}, cmdutil.ExitUsage, "--rate"},
		{[]string{"--cluster", "lab", "--cell-duration", "0s"}, cmdutil.ExitUsage, "--cell-duration"},
		{[]string{"--cluster", "lab", "--latency-objective", "-1s"}, cmdutil.ExitUsage, "--latency-objective"},
		{[]string{"--cluster", "lab", "--warmup", "-1s"}, cmdutil.ExitUsage, "--warmup"},
		{[]string{"--cluster", "lab", "--partitions", "0"}, cmdutil.ExitUsage, "--partitions"},
		{[]string{"--cluster", "bogus"}, cmdutil.ExitUsage, "--cluster"},
		{[]string{"--cluster", "lab", "--bootstrap-server", "k:1"}, cmdutil.ExitUsage, "--bootstrap-server"},
		{[]string{"--lab-dir", dir, "--bootstrap-server", "k:1"}, cmdutil.ExitUsage, "--lab-dir"},
		{[]string{"--cluster", "lab", "--report", filepath.Join(file, "r")}, cmdutil.ExitUsage, "--report"},
		{[]string{"--cluster", "lab", "--apply-to", filepath.Join(dir, "nodir", "p.properties")}, cmdutil.ExitUsage, "--apply-to"},
		{[]string{"--cluster", "lab", "--apply-to", dir}, cmdutil.ExitUsage, "--apply-to"},
		{[]string{"--bootstrap-server", "k:1"}, cmdutil.ExitRefused, "--yes"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			_, err := parseBatching(t, tt.args...)
			require.Error(t, err)
			assert.Equal(t, tt.code, cmdutil.ExitCode(err), err.Error())
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

// No recommendation: nothing written, a negative answer.
func TestWriteBatchFilesApplyTo(t *testing.T) {
	q := filepath.Join(t.TempDir(), "none.properties")
	err := writeBatchFiles(&BatchingOptions{IO: cmdutil.NewTestFactory().IOStreams, ApplyTo: q}, &measure.BatchStudy{})
	assert.Equal(t, cmdutil.ExitFindings, cmdutil.ExitCode(err))
	assert.ErrorContains(t, err, "--apply-to")
	assert.NoFileExists(t, q)
}
