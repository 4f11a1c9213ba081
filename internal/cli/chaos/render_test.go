package chaos

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/chaos"
	"github.com/kplan-dev/kplan/internal/chaos/chaostest"
	"github.com/kplan-dev/kplan/internal/cmdutil"
	"github.com/kplan-dev/kplan/internal/errkind"
	"github.com/kplan-dev/kplan/internal/report"
	"github.com/kplan-dev/kplan/internal/testutil/golden"
)

func render(t *testing.T, f report.Format, v any, doc report.Document) string {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, report.Render(&buf, f, v, func() report.Document { return doc }))
	return buf.String()
}

func TestDocumentGolden(t *testing.T) {
	res := chaostest.Result()
	for _, tc := range []struct {
		format report.Format
		name   string
	}{{report.Table, "document.txt"}, {report.Markdown, "document.md"}, {report.JSON, "document.json"}} {
		golden.AssertString(t, tc.name, render(t, tc.format, res, resultDoc(res, false)))
	}
}

// rowOf returns the table line that starts with the given cells.
func rowOf(t *testing.T, out string, cells ...string) string {
	t.Helper()
	for line := range strings.SplitSeq(out, "\n") {
		if strings.Join(strings.Fields(line)[:min(len(cells), len(strings.Fields(line)))], " ") == strings.Join(cells, " ") {
			return line
		}
	}
	t.Fatalf("no row %v in\n%s", cells, out)
	return ""
}

// Regressions of "Chaos outputs": what was not measured is not printed as
// a measurement.
func TestResultDocNotMeasured(t *testing.T) {
	res := chaostest.Result()
	out := render(t, report.Table, res, resultDoc(res, false))
	// The embedded cluster's failover is no failover time.
	loss := strings.Fields(rowOf(t, out, "roundrobin", "broker-3"))
	assert.Equal(t, "-", loss[2], "failover ms on a simulated cluster")
	assert.Contains(t, out, "failover time: not applicable on a simulated cluster")
	// A 0.2 s failover phase has no skew figures.
	fo := strings.Fields(rowOf(t, out, "roundrobin", "failover", "1,2"))
	assert.Equal(t, []string{"-", "-", "-"}, fo[len(fo)-3:], "skew of a too short phase")
	assert.Contains(t, out, "at least 1000 acknowledged records per leader")
	before := strings.Fields(rowOf(t, out, "roundrobin", "before", "1,2,3"))
	assert.Equal(t, "1.00", before[len(before)-3])
	// Re-reads are for JSON and --verbose.
	assert.NotContains(t, out, "a second time")
	assert.Contains(t, render(t, report.Table, res, resultDoc(res, true)), "read 12 records a second time")
	assert.Contains(t, render(t, report.JSON, res, report.Document{}), `"consumer_rereads": 12`)
	assert.Contains(t, out, "> 100ms and timely MB/s are judged on end-to-end latency")

	// A real cluster's failover is timed.
	lab := chaostest.Lab(chaostest.Result(), 5321.25)
	out = render(t, report.Table, lab, resultDoc(lab, false))
	assert.Equal(t, "5321.2", strings.Fields(rowOf(t, out, "roundrobin", "broker-3"))[2])
}

// Regression: with --consume-after the table showed e2e p50 0.0 and a
// violation rate and timely throughput from an empty histogram.
func TestResultDocConsumeAfter(t *testing.T) {
	res := chaostest.ConsumeAfter(chaostest.Result())
	out := render(t, report.Table, res, resultDoc(res, false))
	row := strings.Fields(rowOf(t, out, "node", "after", "0.100"))
	// ... e2e p50, e2e p99, > 100ms, timely MB/s
	assert.Equal(t, []string{"-", "-", "0.1%", "0.100"}, row[len(row)-4:])
	assert.Contains(t, out, "judged on produce latency (send to ack)")

	s, err := chaos.Summarize([]*chaos.Result{res, chaostest.ConsumeAfter(chaostest.Result())})
	require.NoError(t, err)
	out = render(t, report.Table, s, summaryDoc(s))
	row = strings.Fields(rowOf(t, out, "node", "after"))
	// e2e p50 ms, e2e p99 ms, violation rate (mean ± half), timely MB/s (mean ± half)
	assert.Equal(t, []string{"-", "-", "0.0010", "±", "0.0000", "0.100", "±", "0.000"}, row[len(row)-8:])
	assert.Contains(t, out, "violation rate and timely MB/s are judged on produce latency")
	assert.Contains(t, render(t, report.JSON, s, report.Document{}), `"schema": "`+chaos.SummarySchema+`"`)
}

func TestSummaryDoc(t *testing.T) {
	s, err := chaos.Summarize([]*chaos.Result{chaostest.Lab(chaostest.Result(), 200), chaostest.Lab(chaostest.Result(), 400)})
	require.NoError(t, err)
	out := render(t, report.Table, s, summaryDoc(s))
	assert.Contains(t, out, "MB/s vs roundrobin")
	assert.Contains(t, out, "cluster failover (kill to every partition led by a live broker): 300.0 ± ")
	fo := strings.Fields(rowOf(t, out, "roundrobin", "failover"))
	assert.Equal(t, "-", fo[2], "no skew from too few records")

	s, err = chaos.Summarize([]*chaos.Result{chaostest.Result(), chaostest.Result()})
	require.NoError(t, err)
	assert.Contains(t, render(t, report.Table, s, summaryDoc(s)), "cluster failover: not timed")
}

// Reports and PNGs are files people hand on: 0644 less the umask.
func TestWriteReport(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	dir := t.TempDir()
	res := chaostest.Result()
	res.Partitioners[0].Series.ProduceSamples[chaos.PhaseBefore] = []float64{1, 2, 3}
	res.Partitioners[0].Series.ProduceSamples[chaos.PhaseAfter] = []float64{2, 3, 4}
	res.Partitioners[0].Series.Buckets = []int64{1000, 2000, 1500}
	res.Partitioners[0].Series.KillAtS = 0.15
	_, err := writeReport(dir, res, nil, false)
	require.NoError(t, err)
	for _, n := range []string{"report.md", "result.json", PlotRecordsPerBroker, PlotLatencyCDF, PlotThroughput} {
		fi, err := os.Stat(filepath.Join(dir, n))
		require.NoError(t, err, n)
		assert.Equal(t, os.FileMode(0o644), fi.Mode().Perm(), n)
	}
	_, err = writeReport(filepath.Join(dir, "missing"), res, nil, false)
	require.Error(t, err)
}

// An interrupted sequential run leaves partitioners that never ran: the
// report still gets written, with those panels marked empty.
func TestWriteReportPartitionerNeverRan(t *testing.T) {
	dir := t.TempDir()
	res := chaostest.Result()
	res.Partitioners = append(res.Partitioners, chaos.PartitionerResult{Name: "default", Topic: "kplan-chaos-default", Phases: map[string]*chaos.PhaseResult{}})
	s, err := chaos.Summarize([]*chaos.Result{res, chaostest.Result()})
	require.NoError(t, err)
	_, err = writeReport(dir, res, s, false)
	require.NoError(t, err)
	for _, n := range []string{"report.md", "result.json", PlotRecordsPerBroker, PlotLatencyCDF, PlotThroughput} {
		_, err := os.Stat(filepath.Join(dir, n))
		assert.NoError(t, err, n)
	}
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	require.NoError(t, err)
	assert.Contains(t, string(md), "## The last run")
}

// The first interrupt cancels the run (internal/app) and the cleanup runs;
// the second cuts it short.
func TestSecondInterrupt(t *testing.T) {
	sigs := make(chan os.Signal, 2)
	done := make(chan struct{})
	defer close(done)
	first := make(chan struct{})
	abort := secondInterrupt(sigs, done, func() { close(first) })
	sigs <- os.Interrupt
	<-first
	select {
	case <-abort:
		t.Fatal("one interrupt must not cut the cleanup short")
	default:
	}
	sigs <- os.Interrupt
	select {
	case <-abort:
	case <-time.After(time.Minute):
		t.Fatal("the second interrupt did not abort the cleanup")
	}
}

// Regression: errors were re-formatted with %s (dropping the chain) and
// classified by their text.
func TestMapErr(t *testing.T) {
	inner := errors.New("root cause")
	for _, tc := range []struct {
		name    string
		err     error
		cluster string
		want    string
		code    int
	}{
		{"usage field", errkind.Usagef("kill", "broker-9: no such broker (brokers [1 2 3]): %w", inner), "embedded", "--kill: broker-9: no such broker", cmdutil.ExitUsage},
		{"refused, allow", errkind.Refusedf(chaos.FieldAllowUnavailable, "2 partitions are under-replicated: %w", inner), "lab", "; pass --allow-unavailable to kill anyway", cmdutil.ExitRefused},
		{"refused, rf embedded", errkind.Refusedf(chaos.FieldReplicationFactor, "no replica: %w", inner), "embedded", "no replica: root cause; use --replication-factor 2", cmdutil.ExitRefused},
		{"refused, rf lab", errkind.Refusedf(chaos.FieldReplicationFactor, "no replica: %w", inner), "lab", "use --replication-factor 2 or --allow-unavailable", cmdutil.ExitRefused},
		{"runtime", errkindless(inner), "embedded", "kafka: root cause", cmdutil.ExitRuntime},
	} {
		err := mapErr(tc.err, &Options{Cluster: tc.cluster})
		require.Error(t, err, tc.name)
		assert.ErrorContains(t, err, tc.want, tc.name)
		assert.ErrorIs(t, err, inner, "%s: the chain is kept", tc.name)
		assert.Equal(t, tc.code, cmdutil.ExitCode(err), tc.name)
	}
	err := mapErr(context.Canceled, &Options{})
	assert.ErrorIs(t, err, context.Canceled)
	assert.ErrorContains(t, err, "interrupted; the partial result was printed")
}

func errkindless(err error) error { return errors.Join(errors.New("kafka: root cause"), err) }
