package experiment

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/kafka"
	"github.com/kplan-dev/kplan/internal/kafka/kafkatest"
	"github.com/kplan-dev/kplan/internal/loadgen"
	"github.com/kplan-dev/kplan/internal/measure"
)

// TestBatchingRunOnFake sweeps a 1 x 2 grid on an in-process cluster: the
// action names its topic from the injected clock and random source,
// measures every cell in order, recommends one and deletes the topic.
// kfake judges no latency, so the figures are not checked.
func TestBatchingRunOnFake(t *testing.T) {
	addrs, stop, err := kafkatest.FakeCluster(1)
	require.NoError(t, err)
	defer stop()
	cells, err := measure.BatchGrid([]time.Duration{5 * time.Millisecond}, []measure.BatchSize{{Records: 1}, {Records: 10}}, 512)
	require.NoError(t, err)
	var lines []string
	b := &Batching{Conn: kafka.ConnOptions{BootstrapServers: addrs[0]}, Cluster: "fake", Version: "test",
		Now: func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) }, Rand: func() uint64 { return 35 },
		Cells: cells, Objective: time.Second, Acks: loadgen.AcksAll, RecordSize: 512, Rate: "400/s", RatePerSecond: 400,
		CellDuration: 300 * time.Millisecond, Warmup: 100 * time.Millisecond, DeliveryTimeout: 5 * time.Second, DrainTimeout: 5 * time.Second,
		MaxBuffered: 1000, TopicPrefix: "kplan-batching", Partitions: 1,
		Progress: func(format string, a ...any) { lines = append(lines, fmt.Sprintf(format, a...)) }}
	study, err := b.Run(context.Background())
	require.NoError(t, err)
	require.NotNil(t, study)
	assert.True(t, study.Complete)
	assert.Equal(t, "kplan-batching-20260102-030405-z", study.Topic)
	assert.Equal(t, "2026-01-02T03:04:05Z", study.Date)
	require.Len(t, study.Cells, 2)
	for i, c := range study.Cells {
		assert.Positive(t, c.Sent, "cell %d", i)
	}
	assert.NotNil(t, study.Recommended, "a cell that delivered is recommended")
	require.Len(t, lines, 3, "a header line and one per cell: %q", lines)
	assert.Contains(t, lines[1], "cell 1/2")
	assert.Contains(t, lines[2], "cell 2/2")
}

// TestBatchingRunUnreachable fails before any cell: no study.
func TestBatchingRunUnreachable(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	b := &Batching{Conn: kafka.ConnOptions{BootstrapServers: "127.0.0.1:1", Timeout: time.Second}, Cluster: "none", Version: "test",
		Cells: []measure.BatchCell{{}}, TopicPrefix: "kplan-batching", Partitions: 1}
	study, err := b.Run(ctx)
	require.Error(t, err)
	assert.Nil(t, study)
	assert.ErrorContains(t, err, "measure batching: ")
}
