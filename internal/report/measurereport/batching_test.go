package measurereport

import (
	"bytes"
	"image/png"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/measure"
	"github.com/kplan-dev/kplan/internal/report"
	"github.com/kplan-dev/kplan/internal/stats"
	"github.com/kplan-dev/kplan/internal/testutil/golden"
)

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
			require.NoError(t, report.Render(&b, f.format, s, func() report.Document { return BatchDocument(s) }))
			golden.Assert(t, f.name, b.Bytes())
		})
	}
}

func TestWriteBatchReport(t *testing.T) {
	s := fixedStudy(t)
	dir := filepath.Join(t.TempDir(), "out", "batching")
	require.NoError(t, WriteBatchReport(dir, s))
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

func TestWriteBatchProperties(t *testing.T) {
	s := fixedStudy(t)
	p := filepath.Join(t.TempDir(), "producer.properties")
	require.NoError(t, os.WriteFile(p, []byte("compression.type=zstd\nlinger.ms=500\n"), 0o600))
	require.NoError(t, WriteBatchProperties(p, s))
	got, err := os.ReadFile(p)
	require.NoError(t, err)
	assert.Contains(t, string(got), "compression.type=zstd\nlinger.ms=0\nbatch.size=5285\nacks=all\n")
	require.Error(t, WriteBatchProperties(filepath.Join(t.TempDir(), "missing", "x.properties"), s))
}
