package chaos

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/report"
	"github.com/kplan-dev/kplan/internal/stats"
)

var update = flag.Bool("update", false, "rewrite golden files")

func TestParseTarget(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Target
		err  string
	}{
		{"broker-3", Target{Kind: TargetBroker, Broker: 3}, ""},
		{"busiest", Target{Kind: TargetBusiest}, ""},
		{"none", Target{Kind: TargetNone}, ""},
		{"leader-of:orders/2", Target{Kind: TargetLeaderOf, Topic: "orders", Partition: 2}, ""},
		{"leader-of:a/b/7", Target{Kind: TargetLeaderOf, Topic: "a/b", Partition: 7}, ""},
		{"broker-", Target{}, "want broker-N"},
		{"broker--1", Target{}, "want broker-N"},
		{"leader-of:orders", Target{}, "want leader-of:TOPIC/PARTITION"},
		{"leader-of:orders/x", Target{}, "not a partition number"},
		{"kafka-1", Target{}, "unknown target"},
	} {
		got, err := ParseTarget(tc.in)
		if tc.err != "" {
			require.Error(t, err, tc.in)
			assert.Contains(t, err.Error(), tc.err, tc.in)
			continue
		}
		require.NoError(t, err, tc.in)
		assert.Equal(t, tc.want, got, tc.in)
		assert.Equal(t, tc.in, got.String(), "round trip")
	}
}

func FuzzParseTarget(f *testing.F) {
	for _, s := range []string{"broker-3", "busiest", "none", "leader-of:t/0", "leader-of:/1", "broker-99999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tg, err := ParseTarget(s)
		if err != nil {
			return
		}
		again, err := ParseTarget(tg.String())
		require.NoError(t, err, "String of a parsed target parses")
		assert.Equal(t, tg, again)
	})
}

func TestParseAssignment(t *testing.T) {
	a, err := ParseAssignment("1,2;2,3; 3 ,1")
	require.NoError(t, err)
	assert.Equal(t, [][]int32{{1, 2}, {2, 3}, {3, 1}}, a)
	assert.Equal(t, "1,2;2,3;3,1", FormatAssignment(a))
	for _, bad := range []string{"", "1,", "1,1", "1,2;3", "a", "-1", "1;;2"} {
		_, err := ParseAssignment(bad)
		assert.Error(t, err, bad)
	}
}

func FuzzParseAssignment(f *testing.F) {
	for _, s := range []string{"1,2;2,3;3,1", "1;2;1", "1,2,3", "", ";", "1,1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, err := ParseAssignment(s)
		if err != nil {
			return
		}
		again, err := ParseAssignment(FormatAssignment(a))
		require.NoError(t, err)
		assert.Equal(t, a, again)
		for _, reps := range a {
			assert.Len(t, reps, len(a[0]), "every partition has as many replicas")
		}
	})
}

// RingAssignment: every partition has rf distinct replicas, leaders cycle
// through the brokers, so leadership is as even as the counts allow.
func TestRingAssignment(t *testing.T) {
	assert.Equal(t, [][]int32{{1, 2}, {2, 3}, {3, 1}}, RingAssignment([]int32{1, 2, 3}, 3, 2))
	for n := 1; n <= 6; n++ {
		brokers := make([]int32, n)
		for i := range brokers {
			brokers[i] = int32(i + 1)
		}
		for parts := 1; parts <= 12; parts++ {
			for rf := 1; rf <= n; rf++ {
				a := RingAssignment(brokers, parts, rf)
				lead := map[int32]int{}
				for _, reps := range a {
					require.Len(t, reps, rf)
					seen := map[int32]bool{}
					for _, r := range reps {
						assert.False(t, seen[r])
						seen[r] = true
					}
					lead[reps[0]]++
				}
				lo, hi := parts, 0
				for _, b := range brokers {
					lo, hi = min(lo, lead[b]), max(hi, lead[b])
				}
				assert.LessOrEqual(t, hi-lo, 1)
			}
		}
	}
}

func TestValidate(t *testing.T) {
	ok := Defaults()
	require.NoError(t, ok.Validate())
	for name, mut := range map[string]func(*Config){
		"no partitioner":  func(c *Config) { c.Partitioners = nil },
		"unknown":         func(c *Config) { c.Partitioners = []string{"x"} },
		"twice":           func(c *Config) { c.Partitioners = []string{"node", "node"} },
		"topic":           func(c *Config) { c.Topic = "" },
		"assignment":      func(c *Config) { c.Assignment = nil },
		"record size":     func(c *Config) { c.RecordSize = 10 },
		"phase":           func(c *Config) { c.Phase = 0 },
		"acks":            func(c *Config) { c.Acks = "0" },
		"metadata ages":   func(c *Config) { c.MetadataMaxAge = c.MetadataMinAge / 2 },
		"failover budget": func(c *Config) { c.FailoverTimeout = 0 },
	} {
		c := Defaults()
		mut(&c)
		assert.Error(t, c.Validate(), name)
	}
}

// sampleResult is a hand-made result for the rendering tests.
func sampleResult() *Result {
	lat := stats.LatencySummary{Count: 1000, Mean: 7, P50: 6.3, P95: 10, P99: 11.3, P999: 13.3, Max: 20.8, ViolationRate: 0.001}
	phase := func(per map[string]int64, leaders []int32, mom float64) *PhaseResult {
		return &PhaseResult{DurationS: 8, Leaders: leaders, PerBroker: per, MaxOverMean: mom, CV: mom - 1, Jain: 1 / mom,
			ThroughputMBps: 0.1, RecordsPerS: 1000, Batches: 40, RecordsPerBatch: 25, LatencyMS: lat, E2ELatencyMS: lat, TimelyThroughputMBps: 0.0999}
	}
	return &Result{
		Cluster: "embedded", Label: EmbeddedLabel, Target: "broker-3", KilledBroker: 3, FailoverMS: 0.2,
		Assignment: "1,2;2,3;3,1", Acks: "all", Idempotent: true, SQFSlack: 64, MaxBufferedRecords: 50000, Stick: 1, RateBytesPerS: 100000, RecordSize: 100,
		LatencyObjectiveMS: 100, MetadataMinAgeMS: 100, Notes: []string{"cluster: " + EmbeddedLabel},
		Partitioners: []PartitionerResult{
			{Name: "roundrobin", Topic: "kplan-chaos-roundrobin", Sent: 18000, Acked: 18000, KilledBroker: 3, FailoverMS: 0.2, FirstSuccessMS: 273.3,
				Phases: map[string]*PhaseResult{
					"before": phase(map[string]int64{"1": 2667, "2": 2667, "3": 2666}, []int32{1, 2, 3}, 1),
					"after":  phase(map[string]int64{"1": 5332, "2": 2666}, []int32{1, 2}, 1.333),
				},
				KSProduce: &stats.KSResult{D: 0.072, P: 1.3e-18, N1: 8000, N2: 8000}},
			{Name: "node", Topic: "kplan-chaos-node", Sent: 18000, Acked: 18000, KilledBroker: 3, FailoverMS: 0.2, FirstSuccessMS: -1,
				Phases: map[string]*PhaseResult{
					"before": phase(map[string]int64{"1": 2667, "2": 2667, "3": 2666}, []int32{1, 2, 3}, 1),
					"after":  phase(map[string]int64{"1": 4000, "2": 4000, "-1": 2}, []int32{1, 2}, 1),
				}},
		},
	}
}

func TestDocumentGolden(t *testing.T) {
	res := sampleResult()
	for _, format := range []report.Format{report.Table, report.Markdown, report.JSON} {
		var buf bytes.Buffer
		require.NoError(t, report.Render(&buf, format, res, res.Document))
		golden := filepath.Join("testdata", "document."+string(format)+".golden")
		if *update {
			require.NoError(t, os.MkdirAll("testdata", 0o755))
			require.NoError(t, os.WriteFile(golden, buf.Bytes(), 0o644))
		}
		want, err := os.ReadFile(golden)
		require.NoError(t, err)
		assert.Equal(t, string(want), buf.String(), format)
	}
}

func TestSummarize(t *testing.T) {
	_, err := Summarize([]*Result{sampleResult()})
	require.Error(t, err)
	a, b := sampleResult(), sampleResult()
	b.FailoverMS = 0.4
	b.Partitioners[0].Phases["after"].MaxOverMean = 1.335
	b.Partitioners[0].Lost = 2
	s, err := Summarize([]*Result{a, b})
	require.NoError(t, err)
	assert.Equal(t, 2, s.Repeat)
	assert.InDelta(t, 0.3, s.FailoverMS.Mean, 1e-9)
	assert.Positive(t, s.FailoverMS.Half)
	rr := s.Partitioners[0]
	assert.Equal(t, int64(2), rr.Lost)
	assert.Equal(t, int64(36000), rr.Acked)
	assert.InDelta(t, 1.334, rr.Phases["after"].MaxOverMean.Mean, 1e-9)
	assert.Equal(t, int64(2*5332), rr.Phases["after"].PerBroker["1"])
	assert.Equal(t, 0, s.Partitioners[1].FirstSuccessMS.N, "no first success in either run")
	var buf bytes.Buffer
	require.NoError(t, report.Render(&buf, report.Table, s, s.Document))
	assert.Contains(t, buf.String(), "1.33 ± ")
}

func TestWriteReport(t *testing.T) {
	dir := t.TempDir()
	res := sampleResult()
	res.Partitioners[0].plot.prodSamples[PhaseBefore] = []float64{1, 2, 3}
	res.Partitioners[0].plot.prodSamples[PhaseAfter] = []float64{2, 3, 4}
	res.Partitioners[0].plot.buckets = []int64{1000, 2000, 1500}
	res.Partitioners[0].plot.killAtS = 0.15
	require.NoError(t, WriteReport(dir, res, nil))
	for _, n := range []string{"report.md", "result.json", PlotRecordsPerBroker, PlotLatencyCDF, PlotThroughput} {
		_, err := os.Stat(filepath.Join(dir, n))
		assert.NoError(t, err, n)
	}
	err := WriteReport(filepath.Join(dir, "missing"), res, nil)
	require.Error(t, err)
	assert.False(t, errors.Is(err, os.ErrExist))
}

// An interrupted sequential run leaves partitioners that never ran: the
// report still gets written, with those panels marked empty.
func TestWriteReportPartitionerNeverRan(t *testing.T) {
	dir := t.TempDir()
	res := sampleResult()
	res.Partitioners = append(res.Partitioners, PartitionerResult{Name: "default", Topic: "kplan-chaos-default", Phases: map[string]*PhaseResult{}})
	require.NoError(t, WriteReport(dir, res, nil))
	for _, n := range []string{"report.md", "result.json", PlotRecordsPerBroker, PlotLatencyCDF, PlotThroughput} {
		_, err := os.Stat(filepath.Join(dir, n))
		assert.NoError(t, err, n)
	}
}

// Sequential repetitions rotate the partitioners' order: the summary matches
// them by name, not by position.
func TestSummarizeRotatedOrder(t *testing.T) {
	a, b := sampleResult(), sampleResult()
	b.Partitioners[0], b.Partitioners[1] = b.Partitioners[1], b.Partitioners[0]
	b.Partitioners[1].Lost = 5 // roundrobin, now second
	s, err := Summarize([]*Result{a, b})
	require.NoError(t, err)
	require.Len(t, s.Partitioners, 2)
	assert.Equal(t, "roundrobin", s.Partitioners[0].Name)
	assert.Equal(t, int64(5), s.Partitioners[0].Lost)
	assert.Zero(t, s.Partitioners[1].Lost)
	assert.InDelta(t, 1.333, s.Partitioners[0].Phases["after"].MaxOverMean.Mean, 1e-9)
	assert.InDelta(t, 1.0, s.Partitioners[1].Phases["after"].MaxOverMean.Mean, 1e-9)
}

// The throughput ratio pairs each run's partitioners: run-to-run drift
// cancels, so two runs at very different speeds but the same ratio give
// that ratio with no spread.
func TestSummarizeThroughputRatio(t *testing.T) {
	a, b := sampleResult(), sampleResult()
	set := func(r *Result, rr, node float64) {
		r.Partitioners[0].Phases["before"].ThroughputMBps = rr
		r.Partitioners[1].Phases["before"].ThroughputMBps = node
	}
	set(a, 10, 9)
	set(b, 40, 36)
	b.Partitioners[0], b.Partitioners[1] = b.Partitioners[1], b.Partitioners[0] // rotated order
	s, err := Summarize([]*Result{a, b})
	require.NoError(t, err)
	assert.Equal(t, "roundrobin", s.Baseline)
	node := s.Partitioners[1].Phases["before"]
	assert.Equal(t, 2, node.ThroughputRatio.N)
	assert.InDelta(t, 0.9, node.ThroughputRatio.Mean, 1e-9)
	assert.InDelta(t, 0, node.ThroughputRatio.Half, 1e-9)
	assert.Greater(t, node.ThroughputMBps.Half, 10.0, "the plain interval carries the drift")
	assert.InDelta(t, 1, s.Partitioners[0].Phases["before"].ThroughputRatio.Mean, 1e-9)
	var buf bytes.Buffer
	require.NoError(t, report.Render(&buf, report.Table, s, s.Document))
	assert.Contains(t, buf.String(), "MB/s vs roundrobin")
	assert.Contains(t, buf.String(), "0.900 ± 0.000")
}
