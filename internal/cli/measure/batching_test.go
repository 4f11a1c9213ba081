package measure

import (
	"bytes"
	"image/png"
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
	"github.com/kplan-dev/kplan/internal/stats"
	"github.com/kplan-dev/kplan/internal/testutil/golden"
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

// fixedStudy is a study as a lab run returns it, with the mean-latency
// pick differing from the recommendation.
func fixedStudy(t *testing.T) *measure.BatchStudy {
	t.Helper()
	obj := 100 * time.Millisecond
	lat := func(ms ...float64) *stats.Latency {
		l, err := stats.NewLatency(time.Minute, obj)
		require.NoError(t, err)
		for _, m := range ms {
			l.Record(time.Duration(m * float64(time.Millisecond)))
		}
		return l
	}
	cells, err := measure.BatchGrid([]time.Duration{0, 100 * time.Millisecond}, []measure.BatchSize{{Records: 1}, {Records: 10}}, 512)
	require.NoError(t, err)
	counts := []measure.BatchCounts{
		{Sent: 900, Acked: 900, Received: 900, Batches: 900, BatchRecords: 900, Window: time.Second, Latency: lat(5, 8, 9, 12, 40)},
		{Sent: 1000, Acked: 1000, Received: 1000, Batches: 250, BatchRecords: 1000, Window: time.Second, Latency: lat(4, 6, 7, 9, 30)},
		{Sent: 950, Acked: 950, Received: 940, Batches: 950, BatchRecords: 950, Window: time.Second, Latency: lat(20, 30, 60, 90, 150)},
		{Sent: 1000, Acked: 1000, Received: 1000, Batches: 100, BatchRecords: 1000, Window: time.Second, Latency: lat(10, 20, 40, 150, 160)},
	}
	s := &measure.BatchStudy{Cluster: "lab", Topic: "kplan-batching-20260102-030405-ab12", Partitions: 1, ReplicationFactor: 3,
		Objective: "100ms", ObjectiveMS: 100, Acks: "all", RecordSize: 512, Rate: "1000/s", RatePerSecond: 1000, CellDuration: "3s",
		Producer: []string{"acks=all (idempotent)"}, Complete: true, Date: "2026-01-02T03:04:05Z"}
	for i, c := range cells {
		s.Cells = append(s.Cells, measure.NewBatchCellResult(c, counts[i], 512))
	}
	s.Recommended, s.MeanChoice = measure.BatchRecommend(s.Cells, obj)
	require.NotNil(t, s.Recommended)
	require.NotNil(t, s.MeanChoice)
	require.NotEqual(t, s.Recommended.Cell, s.MeanChoice.Cell, "the fixture shows seed 003's point")
	return s
}

func TestBatchRenderGolden(t *testing.T) {
	s := fixedStudy(t)
	for _, f := range []struct {
		format report.Format
		name   string
	}{{report.Table, "batching.txt"}, {report.Markdown, "batching.md"}, {report.JSON, "batching.json"}, {report.YAML, "batching.yaml"}} {
		t.Run(string(f.format), func(t *testing.T) {
			var b bytes.Buffer
			require.NoError(t, report.Render(&b, f.format, s, func() report.Document { return batchDocument(s) }))
			golden.Assert(t, f.name, b.Bytes())
		})
	}
}

func TestWriteBatchReport(t *testing.T) {
	s := fixedStudy(t)
	dir := filepath.Join(t.TempDir(), "out", "batching")
	require.NoError(t, writeBatchReport(dir, s))
	data, err := os.ReadFile(filepath.Join(dir, BatchHeatmap))
	require.NoError(t, err)
	img, err := png.Decode(bytes.NewReader(data))
	require.NoError(t, err, "the heatmap is a PNG")
	assert.Greater(t, img.Bounds().Dx(), 100)
	md, err := os.ReadFile(filepath.Join(dir, BatchReportMarkdown))
	require.NoError(t, err)
	assert.Contains(t, string(md), "("+BatchHeatmap+")")
	js, err := os.ReadFile(filepath.Join(dir, BatchReportJSON))
	require.NoError(t, err)
	assert.Contains(t, string(js), `"mean_latency_choice"`)

	g := newBatchGrid(s)
	assert.Len(t, g.sizes, 2)
	assert.Len(t, g.lingers, 2)
	assert.Contains(t, g.label[0][1], "[best]", "linger 0 x 10 records is recommended")
	assert.Contains(t, g.label[1][1], "[mean]", "linger 100ms x 10 records is the mean's pick")
	assert.Contains(t, g.label[1][0], "loss 1.1%")
}

func TestWriteBatchFilesApplyTo(t *testing.T) {
	s := fixedStudy(t)
	dir := t.TempDir()
	p := filepath.Join(dir, "producer.properties")
	require.NoError(t, os.WriteFile(p, []byte("compression.type=zstd\nlinger.ms=500\n"), 0o600))
	f := cmdutil.NewTestFactory()
	require.NoError(t, writeBatchFiles(&BatchingOptions{IO: f.IOStreams, ApplyTo: p}, s))
	got, err := os.ReadFile(p)
	require.NoError(t, err)
	assert.Contains(t, string(got), "compression.type=zstd\nlinger.ms=0\nbatch.size=5285\nacks=all\n")

	// No recommendation: nothing written, a negative answer.
	s.Recommended = nil
	q := filepath.Join(dir, "none.properties")
	err = writeBatchFiles(&BatchingOptions{IO: f.IOStreams, ApplyTo: q}, s)
	assert.Equal(t, cmdutil.ExitFindings, cmdutil.ExitCode(err))
	assert.ErrorContains(t, err, "--apply-to")
	assert.NoFileExists(t, q)
}
