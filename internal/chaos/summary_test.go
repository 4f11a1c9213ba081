package chaos_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/chaos"
	"github.com/kplan-dev/kplan/internal/chaos/chaostest"
)

func ptr(x float64) *float64 { return &x }

func TestSummarize(t *testing.T) {
	_, err := chaos.Summarize([]*chaos.Result{chaostest.Result()})
	require.Error(t, err)
	a, b := chaostest.Lab(chaostest.Result(), 200), chaostest.Lab(chaostest.Result(), 400)
	b.Partitioners[0].Phases["after"].MaxOverMean = ptr(1.335)
	b.Partitioners[0].Lost = 2
	s, err := chaos.Summarize([]*chaos.Result{a, b})
	require.NoError(t, err)
	assert.Equal(t, chaos.SummarySchema, s.Schema)
	assert.Equal(t, 2, s.Repeat)
	require.NotNil(t, s.FailoverMS)
	assert.InDelta(t, 300, s.FailoverMS.Mean, 1e-9)
	assert.Positive(t, s.FailoverMS.Half)
	rr := s.Partitioners[0]
	assert.Equal(t, int64(2), rr.Lost)
	assert.Equal(t, int64(36000), rr.Acked)
	assert.InDelta(t, 1.334, rr.Phases["after"].MaxOverMean.Mean, 1e-9)
	assert.Equal(t, int64(2*5332), rr.Phases["after"].PerBroker["1"])
	assert.Equal(t, 0, s.Partitioners[1].FirstSuccessMS.N, "no first success in either run")
	assert.Equal(t, 0, rr.Phases["failover"].MaxOverMean.N, "too few records for a skew figure")
	assert.Equal(t, 2, rr.Phases["failover"].ThroughputMBps.N, "the failover phase still counts")
}

// A simulated cluster times no failover: the summary has none either.
func TestSummarizeNoFailoverTime(t *testing.T) {
	s, err := chaos.Summarize([]*chaos.Result{chaostest.Result(), chaostest.Result()})
	require.NoError(t, err)
	assert.Nil(t, s.FailoverMS)
}

// Regression: with --consume-after there is no end-to-end latency; the
// summary must not average zeros into e2e percentiles, and judges the
// violation rate on produce latency.
func TestSummarizeConsumeAfter(t *testing.T) {
	s, err := chaos.Summarize([]*chaos.Result{chaostest.ConsumeAfter(chaostest.Result()), chaostest.ConsumeAfter(chaostest.Result())})
	require.NoError(t, err)
	before := s.Partitioners[0].Phases["before"]
	assert.Empty(t, before.E2ELatencyMS, "no end-to-end latency was measured")
	assert.Equal(t, chaos.LatencyProduce, before.ViolationLatency)
	assert.InDelta(t, 0.001, before.ViolationRate.Mean, 1e-12)
	assert.InDelta(t, 0.0999, before.TimelyMBps.Mean, 1e-12)
}

// Sequential repetitions rotate the partitioners' order: the summary matches
// them by name, not by position.
func TestSummarizeRotatedOrder(t *testing.T) {
	a, b := chaostest.Result(), chaostest.Result()
	b.Partitioners[0], b.Partitioners[1] = b.Partitioners[1], b.Partitioners[0]
	b.Partitioners[1].Lost = 5 // roundrobin, now second
	s, err := chaos.Summarize([]*chaos.Result{a, b})
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
	a, b := chaostest.Result(), chaostest.Result()
	set := func(r *chaos.Result, rr, node float64) {
		r.Partitioners[0].Phases["before"].ThroughputMBps = rr
		r.Partitioners[1].Phases["before"].ThroughputMBps = node
	}
	set(a, 10, 9)
	set(b, 40, 36)
	b.Partitioners[0], b.Partitioners[1] = b.Partitioners[1], b.Partitioners[0] // rotated order
	s, err := chaos.Summarize([]*chaos.Result{a, b})
	require.NoError(t, err)
	assert.Equal(t, "roundrobin", s.Baseline)
	node := s.Partitioners[1].Phases["before"]
	assert.Equal(t, 2, node.ThroughputRatio.N)
	assert.InDelta(t, 0.9, node.ThroughputRatio.Mean, 1e-9)
	assert.InDelta(t, 0, node.ThroughputRatio.Half, 1e-9)
	assert.Greater(t, node.ThroughputMBps.Half, 10.0, "the plain interval carries the drift")
	assert.InDelta(t, 1, s.Partitioners[0].Phases["before"].ThroughputRatio.Mean, 1e-9)
}
