package chaosreport

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/chaos"
	"github.com/kplan-dev/kplan/internal/chaos/chaostest"
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
		golden.AssertString(t, tc.name, render(t, tc.format, res, Document(res, false)))
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
	out := render(t, report.Table, res, Document(res, false))
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
	assert.Contains(t, render(t, report.Table, res, Document(res, true)), "read 12 records a second time")
	assert.Contains(t, render(t, report.JSON, res, report.Document{}), `"consumer_rereads": 12`)
	assert.Contains(t, out, "> 100ms and timely MB/s are judged on end-to-end latency")

	// A real cluster's failover is timed.
	lab := chaostest.Lab(chaostest.Result(), 5321.25)
	out = render(t, report.Table, lab, Document(lab, false))
	assert.Equal(t, "5321.2", strings.Fields(rowOf(t, out, "roundrobin", "broker-3"))[2])
}

// Regression: with --consume-after the table showed e2e p50 0.0 and a
// violation rate and timely throughput from an empty histogram.
func TestResultDocConsumeAfter(t *testing.T) {
	res := chaostest.ConsumeAfter(chaostest.Result())
	out := render(t, report.Table, res, Document(res, false))
	row := strings.Fields(rowOf(t, out, "node", "after", "0.100"))
	// ... e2e p50, e2e p99, > 100ms, timely MB/s
	assert.Equal(t, []string{"-", "-", "0.1%", "0.100"}, row[len(row)-4:])
	assert.Contains(t, out, "judged on produce latency (send to ack)")

	s, err := chaos.Summarize([]*chaos.Result{res, chaostest.ConsumeAfter(chaostest.Result())})
	require.NoError(t, err)
	out = render(t, report.Table, s, SummaryDocument(s))
	row = strings.Fields(rowOf(t, out, "node", "after"))
	// e2e p50 ms, e2e p99 ms, violation rate (mean ± half), timely MB/s (mean ± half)
	assert.Equal(t, []string{"-", "-", "0.0010", "±", "0.0000", "0.100", "±", "0.000"}, row[len(row)-8:])
	assert.Contains(t, out, "violation rate and timely MB/s are judged on produce latency")
	assert.Contains(t, render(t, report.JSON, s, report.Document{}), `"schema": "`+chaos.SummarySchema+`"`)
}

// TestResultDocWorkers: a distributed run's text report lists every
// worker's records and names the phases one missed, with why.
func TestResultDocWorkers(t *testing.T) {
	res := chaostest.Result()
	res.Workers = &chaos.WorkersResult{Run: "r42", Count: 2, Workers: []chaos.WorkerResult{
		{Index: 0, Sent: 1200, Acked: 1200, Read: 1200, Clock: &chaos.WorkerClock{SkewMS: -2000.44, UncertaintyMS: 1.25, Corrected: true}},
		{Index: 1, Sent: 800, Acked: 790, Read: 790, Missed: []chaos.MissedPhase{{Phase: "after", Reason: "no report"}}},
		{Index: 2, Sent: 900, Acked: 900, Read: 900, Clock: &chaos.WorkerClock{SkewMS: 0.3, UncertaintyMS: 0.9}},
	}}
	out := render(t, report.Table, res, Document(res, false))
	assert.Contains(t, out, "Workers (run r42: 2 kplan worker processes")
	assert.Equal(t, []string{"0", "1200", "1200", "1200", "-2000.4", "ms", "±", "1.2", "(corrected)", "-"}, strings.Fields(rowOf(t, out, "0", "1200")))
	assert.Equal(t, []string{"1", "800", "790", "790", "not", "measured", "after", "(no", "report)"}, strings.Fields(rowOf(t, out, "1", "800")))
	assert.Equal(t, []string{"2", "900", "900", "900", "within", "±", "0.9", "ms", "(not", "corrected)", "-"}, strings.Fields(rowOf(t, out, "2", "900")))
	assert.NotContains(t, render(t, report.Table, chaostest.Result(), Document(chaostest.Result(), false)), "Workers (run", "a single-process run has no workers section")
}

func TestSummaryDoc(t *testing.T) {
	s, err := chaos.Summarize([]*chaos.Result{chaostest.Lab(chaostest.Result(), 200), chaostest.Lab(chaostest.Result(), 400)})
	require.NoError(t, err)
	out := render(t, report.Table, s, SummaryDocument(s))
	assert.Contains(t, out, "MB/s vs roundrobin")
	assert.Contains(t, out, "cluster failover (kill to every partition led by a live broker): 300.0 ± ")
	fo := strings.Fields(rowOf(t, out, "roundrobin", "failover"))
	assert.Equal(t, "-", fo[2], "no skew from too few records")

	s, err = chaos.Summarize([]*chaos.Result{chaostest.Result(), chaostest.Result()})
	require.NoError(t, err)
	assert.Contains(t, render(t, report.Table, s, SummaryDocument(s)), "cluster failover: not timed")
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

func fp(x float64) *float64 { return &x }

// workloadResult is a hand-made workload run: the thesis's §6.4 layout at
// A:B = 2:1, broker 3 killed; roundrobin and node with predictions, hash
// with a reason why there is none.
func workloadResult() *chaos.Result {
	res := chaostest.Result()
	res.Assignment = ""
	res.Workload = []chaos.WorkloadTopicResult{
		{Name: "A", Assignment: "1,2;2,3;2,1", RateBytesPerS: 200_000, Keys: "none"},
		{Name: "B", Assignment: "2,1;3,1", RateBytesPerS: 100_000, Keys: "zipf:1.1:1000"},
	}
	set := func(ph *chaos.PhaseResult, pred, meas map[string]float64, maxErr, predMOM float64) {
		ph.PredictedShare, ph.MeasuredShare, ph.MaxErrorPts, ph.PredictedMaxOverMean = pred, meas, fp(maxErr), fp(predMOM)
	}
	rr, node := &res.Partitioners[0], &res.Partitioners[1]
	rr.Topics = []string{"kplan-chaos-roundrobin-A", "kplan-chaos-roundrobin-B"}
	rr.Prediction = "each topic's bytes split evenly over its partitions, taken by their leaders"
	set(rr.Phases["before"], map[string]float64{"1": 2.0 / 9, "2": 11.0 / 18, "3": 1.0 / 6}, map[string]float64{"1": 0.230, "2": 0.605, "3": 0.165}, 0.8, 11.0/6)
	set(rr.Phases["after"], map[string]float64{"1": 7.0 / 18, "2": 11.0 / 18}, map[string]float64{"1": 0.395, "2": 0.605}, 0.6, 11.0/9)
	node.Topics = []string{"kplan-chaos-node-A", "kplan-chaos-node-B"}
	node.Prediction = "each topic's bytes split evenly over its leader brokers"
	set(node.Phases["before"], map[string]float64{"1": 1.0 / 3, "2": 0.5, "3": 1.0 / 6}, map[string]float64{"1": 0.331, "2": 0.503, "3": 0.166}, 0.3, 1.5)
	set(node.Phases["after"], map[string]float64{"1": 0.5, "2": 0.5}, map[string]float64{"1": 0.488, "2": 0.512}, 1.2, 1)
	node.Phases["after"].MaxOverMean = nil // too few records for a measured skew
	hash := chaos.PartitionerResult{Name: "hash", Topic: "kplan-chaos-hash-A", Topics: []string{"kplan-chaos-hash-A", "kplan-chaos-hash-B"},
		Prediction: "no prediction: topic A has no keys, so hash writes it like default", Sent: 10, Acked: 10, KilledBroker: 3, FirstSuccessMS: -1,
		Phases: map[string]*chaos.PhaseResult{"before": {DurationS: 8, Leaders: []int32{1, 2, 3}, PerBroker: map[string]int64{"1": 3, "2": 4, "3": 3}}}}
	res.Partitioners = append(res.Partitioners, hash)
	return res
}

func TestWorkloadDocumentGolden(t *testing.T) {
	res := workloadResult()
	for _, tc := range []struct {
		format report.Format
		name   string
	}{{report.Table, "workload.txt"}, {report.Markdown, "workload.md"}, {report.JSON, "workload.json"}} {
		golden.AssertString(t, tc.name, render(t, tc.format, res, Document(res, false)))
	}
}

func TestWorkloadPredictionTable(t *testing.T) {
	res := workloadResult()
	out := render(t, report.Table, res, Document(res, false))
	// broker, predicted, measured, error in points (measured - predicted).
	assert.Equal(t, []string{"roundrobin", "before", "1", "22.2%", "23.0%", "+0.8"}, strings.Fields(rowOf(t, out, "roundrobin", "before", "1")))
	assert.Equal(t, []string{"roundrobin", "before", "2", "61.1%", "60.5%", "-0.6"}, strings.Fields(rowOf(t, out, "roundrobin", "before", "2")))
	assert.Equal(t, []string{"node", "after", "1", "50.0%", "48.8%", "-1.2"}, strings.Fields(rowOf(t, out, "node", "after", "1")))
	// max error, predicted and measured max/mean over the same brokers.
	assert.Equal(t, []string{"roundrobin", "after", "0.6", "1.22", "1.21"}, strings.Fields(rowOf(t, out, "roundrobin", "after", "0.6")))
	assert.Equal(t, []string{"node", "after", "1.2", "1.00", "-"}, strings.Fields(rowOf(t, out, "node", "after", "1.2")))
	// The basis once per partitioner, and why hash has none.
	assert.Equal(t, 1, strings.Count(out, "roundrobin: each topic's bytes split evenly over its partitions"))
	assert.Contains(t, out, "hash: no prediction: topic A has no keys")
	assert.NotContains(t, out, "hash      before  1")
	// The workload's topics, rates and keys.
	assert.Equal(t, []string{"B", "2,1;3,1", "100kB/s", "zipf:1.1:1000"}, strings.Fields(rowOf(t, out, "B", "2,1;3,1")))
	assert.Contains(t, out, "workload of 2 topics")

	// The one-topic experiment shows none of it.
	one := chaostest.Result()
	out = render(t, report.Table, one, Document(one, false))
	assert.NotContains(t, out, "Predicted vs measured")
	assert.NotContains(t, out, "Workload")
}

// A workload with no prediction for any partitioner says so instead of
// printing empty tables.
func TestSignedPts(t *testing.T) {
	for _, tc := range []struct {
		x    float64
		want string
	}{{0.84, "+0.8"}, {-0.56, "-0.6"}, {0.04, "0.0"}, {-0.04, "0.0"}, {0, "0.0"}, {-12.34, "-12.3"}} {
		assert.Equal(t, tc.want, signedPts(tc.x), tc.x)
	}
}

func TestWorkloadNoPrediction(t *testing.T) {
	res := workloadResult()
	res.Partitioners = res.Partitioners[2:]
	out := render(t, report.Table, res, Document(res, false))
	assert.Contains(t, out, "no prediction for any partitioner")
	assert.Contains(t, out, "hash: no prediction: topic A has no keys")
	grid, err := predictionPlots(res)
	require.NoError(t, err)
	assert.Nil(t, grid, "no panel without a prediction")
}

// The report of a workload run carries prediction.png, listed in report.md
// and in the files written; the one-topic experiment's does not.
func TestWriteReportPrediction(t *testing.T) {
	dir := t.TempDir()
	files, err := writeReport(dir, workloadResult(), nil, false)
	require.NoError(t, err)
	assert.Equal(t, []string{"report.md", "result.json", PlotRecordsPerBroker, PlotLatencyCDF, PlotThroughput, PlotPrediction}, files)
	fi, err := os.Stat(filepath.Join(dir, PlotPrediction))
	require.NoError(t, err)
	assert.Positive(t, fi.Size())
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	require.NoError(t, err)
	assert.Contains(t, string(md), "![prediction](prediction.png)")
	assert.Contains(t, string(md), "Predicted vs measured")

	grid, err := predictionPlots(workloadResult())
	require.NoError(t, err)
	require.Len(t, grid, 2, "a row per partitioner with a prediction")
	assert.Len(t, grid[0], 2, "a column per phase with a prediction: before, after")

	dir = t.TempDir()
	files, err = writeReport(dir, chaostest.Result(), nil, false)
	require.NoError(t, err)
	assert.NotContains(t, files, PlotPrediction)
	_, err = os.Stat(filepath.Join(dir, PlotPrediction))
	assert.True(t, os.IsNotExist(err))
}

// writeReport is WriteReport of a single run or of repeated runs with their summary.
func writeReport(dir string, res *chaos.Result, sum *chaos.Summary, verbose bool) ([]string, error) {
	return WriteReport(dir, chaos.CampaignResult{Runs: []*chaos.Result{res}, Summary: sum}, verbose)
}

// killEachResult is --kill each on three brokers, hand-made: roundrobin
// with predictions (the survivor that takes the dead broker's partition
// carries two thirds), node without.
func killEachResult() *chaos.KillEach {
	var runs []*chaos.Result
	for _, id := range []int32{1, 2, 3} {
		res := chaostest.Result()
		res.Target, res.KilledBroker = fmt.Sprintf("broker-%d", id), id
		var surv []string
		for _, b := range []int32{1, 2, 3} {
			if b != id {
				surv = append(surv, strconv.Itoa(int(b)))
			}
		}
		// Ring 1,2;2,3;3,1: the dead broker's partition fails over to the
		// next broker in the ring.
		heavy := strconv.Itoa(int(id%3 + 1))
		after := res.Partitioners[0].Phases["after"]
		after.PredictedShare, after.MeasuredShare = map[string]float64{}, map[string]float64{}
		for _, b := range surv {
			p, m := 1/3.0, 0.3341
			if b == heavy {
				p, m = 2/3.0, 0.6659
			}
			after.PredictedShare[b], after.MeasuredShare[b] = p, m
		}
		after.PredictedMaxOverMean, after.MaxErrorPts = fp(1.3333), fp(0.08)
		runs = append(runs, res)
	}
	return chaos.NewKillEach(runs, []bool{true, true, true})
}

func TestKillEachGolden(t *testing.T) {
	k := killEachResult()
	for _, tc := range []struct {
		format report.Format
		name   string
	}{{report.Table, "kill-each.txt"}, {report.Markdown, "kill-each.md"}} {
		golden.AssertString(t, tc.name, render(t, tc.format, k, KillEachDocument(k)))
	}
	var got struct {
		Schema string `json:"schema"`
		Kills  []struct {
			Broker       int32 `json:"broker"`
			Partitioners []struct {
				Name      string   `json:"name"`
				Predicted *float64 `json:"predicted_max_over_mean"`
				Measured  *float64 `json:"measured_max_over_mean"`
			} `json:"partitioners"`
		} `json:"kills"`
		Runs []json.RawMessage `json:"runs"`
	}
	require.NoError(t, json.Unmarshal([]byte(render(t, report.JSON, k, report.Document{})), &got))
	assert.Equal(t, chaos.KillEachSchema, got.Schema)
	require.Len(t, got.Kills, 3)
	assert.Len(t, got.Runs, 3)
	for i, kl := range got.Kills {
		assert.Equal(t, int32(i+1), kl.Broker)
		require.Len(t, kl.Partitioners, 2)
		assert.InDelta(t, 1.3333, *kl.Partitioners[0].Predicted, 1e-9)
		assert.InDelta(t, 1.3318, *kl.Partitioners[0].Measured, 1e-9, "the largest measured share over the mean")
		assert.Nil(t, kl.Partitioners[1].Predicted, "node has no prediction here")
	}
}

// A result with a fault has a section setting the faulted broker's share
// beside the others', phase by phase, and says why there is no prediction.
func TestFaultSection(t *testing.T) {
	res := chaostest.Result()
	res.KilledBroker = -1
	res.Fault = &chaos.FaultResult{Fault: "delay:broker-2:200ms", Kind: chaos.FaultDelay, Broker: 2, Description: "delay broker 2's packets by 200ms",
		InjectedAtS: 10, InForceMS: 12.5, Phases: []string{"fault"}}
	for i := range res.Partitioners {
		p := &res.Partitioners[i]
		p.Phases["fault"] = &chaos.PhaseResult{Leaders: []int32{1, 2, 3}, Shares: map[string]float64{"1": 0.4, "2": 0.2, "3": 0.4}, NoPrediction: chaos.NoPredictionUnderFault}
	}
	out := render(t, report.Table, res, Document(res, false))
	assert.Contains(t, out, "kplan chaos: fault delay:broker-2:200ms")
	assert.Contains(t, out, "Network fault: delay broker 2's packets by 200ms (delay:broker-2:200ms)")
	name := res.Partitioners[0].Name
	row := rowOf(t, out, name, "fault", "yes")
	assert.Contains(t, row, "20.0%")
	assert.Contains(t, row, "1: 40.0%, 2: 20.0%, 3: 40.0%")
	assert.Contains(t, out, chaos.NoPredictionUnderFault)
	assert.Contains(t, out, "cleared when the run ended")
	j := render(t, report.JSON, res, Document(res, false))
	assert.True(t, strings.Contains(j, `"fault": "delay:broker-2:200ms"`), j)
	assert.Contains(t, j, `"no_prediction": "no prediction under a network fault"`)
}

// The plan of a --bootstrap-server run with --fault shows the fault's
// broker, steps and NetworkChaos (what --dry-run prints).
func TestWriteFaultPlan(t *testing.T) {
	b := int32(2)
	p := &chaos.Plan{Schema: chaos.PlanSchema, Label: "real", Killer: "chaos-mesh", Target: "none", Broker: -1, Topics: []string{"kplan-chaos-sqf"},
		Assignment: "1,2;2,3;3,1", DryRun: true, Fault: "delay:broker-2:200ms", FaultBroker: &b,
		FaultPlan: &chaos.KillPlan{Target: "pod kafka/my-cluster-pool-a-2", Steps: []string{"create NetworkChaos kafka/kplan-x"},
			Manifest: "apiVersion: chaos-mesh.org/v1alpha1\nkind: NetworkChaos\n"}}
	var sb strings.Builder
	require.NoError(t, WritePlan(&sb, report.Table, p))
	out := sb.String()
	assert.Contains(t, out, "fault:       delay:broker-2:200ms: broker 2\n")
	assert.Contains(t, out, "fault target: pod kafka/my-cluster-pool-a-2\n")
	assert.Contains(t, out, "  1. create NetworkChaos kafka/kplan-x\n")
	assert.Contains(t, out, "fault manifest:\n  apiVersion: chaos-mesh.org/v1alpha1\n  kind: NetworkChaos\n")
	sb.Reset()
	require.NoError(t, WritePlan(&sb, report.JSON, p))
	assert.Contains(t, sb.String(), `"fault_plan": {`)
}

// A slow-broker run sets at rest and slow side by side per partitioner
// (shares, throughput, produce and end-to-end percentiles, timely
// throughput, loss) and ends with the recommendation.
func TestSlowDocumentGolden(t *testing.T) {
	res := chaostest.Slow(1)
	for _, tc := range []struct {
		format report.Format
		name   string
	}{{report.Table, "slow.txt"}, {report.Markdown, "slow.md"}, {report.JSON, "slow.json"}} {
		golden.AssertString(t, tc.name, render(t, tc.format, res, Document(res, false)))
	}
	out := render(t, report.Table, res, Document(res, false))
	assert.Contains(t, out, "kplan chaos: slow broker-2:bandwidth=2MB/s")
	row := rowOf(t, out, "sqf", "slow", "4.0%")
	assert.Contains(t, row, "20.000")
	assert.Contains(t, rowOf(t, out, "sqf", "at", "rest"), "25.0%")
	assert.Contains(t, rowOf(t, out, "sqf", "throughput_mbps"), "4.00x")
	assert.NotContains(t, out, "Network fault:", "the slow section replaces the fault section")
}

// Repeated slow-broker runs: the summary names the phases at rest and
// slow and ends with the recommendation and its interval.
func TestSlowSummaryRecommendation(t *testing.T) {
	s, err := chaos.Summarize([]*chaos.Result{chaostest.Slow(1), chaostest.Slow(0.9), chaostest.Slow(1.1)})
	require.NoError(t, err)
	require.NotNil(t, s.Recommendation)
	assert.Equal(t, "broker-2:bandwidth=2MB/s", s.Slow)
	assert.Equal(t, 3, s.Recommendation.Runs)
	require.NotNil(t, s.Recommendation.MarginCI)
	assert.True(t, s.Recommendation.Clear)
	out := render(t, report.Table, s, SummaryDocument(s))
	assert.Contains(t, out, "slow broker-2:bandwidth=2MB/s, no kill")
	rowOf(t, out, "sqf", "at", "rest")
	rowOf(t, out, "default", "slow")
	rec := rowOf(t, out, "sqf", "throughput_mbps")
	assert.Contains(t, rec, "(3 runs)")
	assert.Contains(t, rec, "yes")
}
