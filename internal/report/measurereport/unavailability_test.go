package measurereport

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/measure"
	"github.com/kplan-dev/kplan/internal/measure/experiment"
	"github.com/kplan-dev/kplan/internal/report"
	"github.com/kplan-dev/kplan/internal/testutil/golden"
)

// sampleResult is a result on a known line with a little scatter.
func sampleResult() *experiment.UnavailabilityResult {
	r := &experiment.UnavailabilityResult{Schema: experiment.UnavailSchema, Date: "2026-01-02T03:04:05Z", Cluster: "lab", Label: "real (kplan lab)",
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
	require.NoError(t, report.Render(&table, report.Table, r, func() report.Document { return UnavailabilityDocument(r) }))
	require.NoError(t, report.Render(&md, report.Markdown, r, func() report.Document { return UnavailabilityDocument(r) }))
	require.NoError(t, report.Render(&js, report.JSON, r, func() report.Document { return UnavailabilityDocument(r) }))
	golden.Assert(t, "unavailability.txt", table.Bytes())
	golden.Assert(t, "unavailability.md", md.Bytes())
	golden.Assert(t, "unavailability.json", js.Bytes())
	assert.Contains(t, r.PlanLines[2], "election-time: 1.4")
}

func TestUnavailResultNoFit(t *testing.T) {
	r := &experiment.UnavailabilityResult{Schema: experiment.UnavailSchema, Date: "2026-01-02T03:04:05Z", Counts: []int{100}, Repeat: 1,
		Runs: []measure.UnavailRun{{Partitions: 100, Repeat: 1, AllMS: 3000}}}
	r.Finish()
	assert.Nil(t, r.Fit)
	assert.Contains(t, r.FitError, "two distinct partition counts")
	assert.Empty(t, r.PlanLines)
	var table bytes.Buffer
	require.NoError(t, report.WriteTable(&table, UnavailabilityDocument(r)))
	assert.Contains(t, table.String(), "No fit: ")
}

func TestUnavailWriteReportAndPlan(t *testing.T) {
	r := sampleResult()
	dir := filepath.Join(t.TempDir(), "report")
	names, err := WriteUnavailabilityReport(r, dir)
	require.NoError(t, err)
	assert.Equal(t, []string{UnavailPlot, "result.json", "report.md"}, names)
	png, err := os.ReadFile(filepath.Join(dir, UnavailPlot))
	require.NoError(t, err)
	assert.True(t, bytes.HasPrefix(png, []byte("\x89PNG")), "a PNG")

	plan := filepath.Join(t.TempDir(), "plan.yaml")
	require.NoError(t, os.WriteFile(plan, []byte("throughput: 1MB/s\nelection-time: 25ms # u\n"), 0o600))
	require.NoError(t, WriteElectionTime(r, plan))
	got, err := os.ReadFile(plan)
	require.NoError(t, err)
	assert.Equal(t, "throughput: 1MB/s\nelection-time: "+r.ElectionTime+strings.Repeat(" ", 14-len(r.ElectionTime))+" # u: slope of the fit, kplan measure unavailability 2026-01-02\n", string(got))
}
