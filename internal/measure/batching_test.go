package measure

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/errkind"
	"github.com/kplan-dev/kplan/internal/stats"
	"github.com/kplan-dev/kplan/internal/units"
)

func TestParseLingers(t *testing.T) {
	tests := []struct {
		in   string
		want []time.Duration
		err  string
	}{
		{"0,5ms,20ms,100ms", []time.Duration{0, 5 * time.Millisecond, 20 * time.Millisecond, 100 * time.Millisecond}, ""},
		{" 0 , 1s ", []time.Duration{0, time.Second}, ""},
		{"0s", []time.Duration{0}, ""},
		{"1m", []time.Duration{time.Minute}, ""},
		{"", nil, "empty item"},
		{"5ms,", nil, "empty item"},
		{"5", nil, "no unit"},
		{"fast", nil, "not a duration"},
		{"-5ms", nil, "negative"},
		{"2m", nil, "1m"},
		{"1500us", nil, "whole number of milliseconds"},
		{"5ms,5ms", nil, "twice"},
		{"0,0ms", nil, "twice"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseLingers(tt.in)
			if tt.err != "" {
				require.Error(t, err)
				assert.ErrorContains(t, err, tt.err)
				assert.Equal(t, BatchFieldLinger, errkind.FieldOf(err))
				assert.Equal(t, errkind.Usage, errkind.KindOf(err))
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestParseBatchSizes(t *testing.T) {
	tests := []struct {
		in   string
		want []BatchSize
		err  string
	}{
		{"1,4,10", []BatchSize{{Records: 1}, {Records: 4}, {Records: 10}}, ""},
		{"16KiB, 1000B,64kB,1MiB", []BatchSize{{Bytes: 16384}, {Bytes: 1000}, {Bytes: 64000}, {Bytes: 1 << 20}}, ""},
		{"10,16KiB", []BatchSize{{Records: 10}, {Bytes: 16384}}, ""},
		{"", nil, "empty item"},
		{"0", nil, "positive"},
		{"-1", nil, "no number"},
		{"KiB", nil, "no number"},
		{"10GiB", nil, "unknown unit"},
		{"4x", nil, "unknown unit"},
		{"2000000", nil, "more than 1000000"},
		{"99999999999999999999", nil, "too large"},
		{"2048MiB", nil, "1GiB"},
		{"4,4", nil, "twice"},
		{"1KiB,1024B", nil, "twice"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseBatchSizes(tt.in)
			if tt.err != "" {
				require.Error(t, err)
				assert.ErrorContains(t, err, tt.err)
				assert.Equal(t, BatchFieldBatchSize, errkind.FieldOf(err))
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestBatchSizeString(t *testing.T) {
	for in, want := range map[BatchSize]string{{Records: 10}: "10", {Bytes: 16384}: "16KiB", {Bytes: 1 << 20}: "1MiB", {Bytes: 1000}: "1000B"} {
		assert.Equal(t, want, in.String())
		back, err := ParseBatchSizes(want)
		require.NoError(t, err)
		assert.Equal(t, []BatchSize{in}, back, "String parses back")
	}
}

func TestBatchMaxBytes(t *testing.T) {
	tests := []struct {
		name  string
		size  BatchSize
		rec   int
		want  int32
		err   string
		field string
	}{
		// 65 B header (franz-go counts the 61 B batch header and its 4 B
		// length) + per record: length varint 2, attributes 1,
		// timestamp delta 2, offset delta 1, key length 1, value length 2,
		// value 512, headers count 1 = 522.
		{"one 512 B record", BatchSize{Records: 1}, 512, 65 + 522, "", ""},
		{"ten 512 B records", BatchSize{Records: 10}, 512, 65 + 10*522, "", ""},
		// offset deltas from 64 take two bytes.
		{"a hundred", BatchSize{Records: 100}, 512, 65 + 100*522 + 36, "", ""},
		{"bytes as given", BatchSize{Bytes: 16384}, 100, 16384, "", ""},
		{"bytes below franz-go's minimum", BatchSize{Bytes: 500}, 100, 0, "512 B minimum", "batch-size"},
		{"records below franz-go's minimum", BatchSize{Records: 1}, 100, 0, "--record-size 437 or more", "batch-size"},
		{"too many bytes", BatchSize{Records: 1_000_000}, 1 << 20, 0, "1GiB", "batch-size"},
		{"no record size", BatchSize{Records: 1}, 0, 0, "positive", "record-size"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.size.MaxBytes(tt.rec)
			if tt.err != "" {
				require.Error(t, err)
				assert.ErrorContains(t, err, tt.err)
				assert.Equal(t, tt.field, errkind.FieldOf(err))
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
	// The hint is right: the record size it names is the smallest that works.
	_, err := BatchSize{Records: 1}.MaxBytes(437)
	require.NoError(t, err)
	_, err = BatchSize{Records: 1}.MaxBytes(436)
	require.Error(t, err)
}

func TestBatchGrid(t *testing.T) {
	cells, err := BatchGrid([]time.Duration{0, 5 * time.Millisecond}, []BatchSize{{Records: 1}, {Bytes: 16384}}, 512)
	require.NoError(t, err)
	require.Len(t, cells, 4)
	assert.Equal(t, []BatchCell{
		{Linger: 0, Size: BatchSize{Records: 1}, MaxBytes: 587},
		{Linger: 0, Size: BatchSize{Bytes: 16384}, MaxBytes: 16384},
		{Linger: 5 * time.Millisecond, Size: BatchSize{Records: 1}, MaxBytes: 587},
		{Linger: 5 * time.Millisecond, Size: BatchSize{Bytes: 16384}, MaxBytes: 16384},
	}, cells, "lingers outer, sizes inner")
	_, err = BatchGrid(nil, []BatchSize{{Records: 1}}, 512)
	assert.Equal(t, BatchFieldLinger, errkind.FieldOf(err))
	_, err = BatchGrid([]time.Duration{0}, []BatchSize{{Records: 1}}, 100)
	assert.Equal(t, BatchFieldBatchSize, errkind.FieldOf(err))
}

func TestBatchRecordsPerSecond(t *testing.T) {
	tests := []struct {
		in   string
		rec  int
		want float64
		err  string
	}{
		{"1000/s", 512, 1000, ""},
		{"250rec/s", 512, 250, ""},
		{"2.5records/s", 512, 2.5, ""},
		{"512kB/s", 512, 1000, ""},
		{"1MiB/s", 1024, 1024, ""},
		{"unlimited", 512, 0, ""},
		{"fast", 512, 0, "or records, e.g. 1000/s"},
		{"0/s", 512, 0, "positive"},
		{"1e3/s", 512, 0, "rate"},
		{"100MB", 512, 0, "no /s"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := BatchRecordsPerSecond(tt.in, tt.rec, units.ParseRate)
			if tt.err != "" {
				require.Error(t, err)
				assert.ErrorContains(t, err, tt.err)
				assert.Equal(t, BatchFieldRate, errkind.FieldOf(err))
				assert.Equal(t, errkind.Usage, errkind.KindOf(err))
				return
			}
			require.NoError(t, err)
			assert.InDelta(t, tt.want, got, 1e-9)
		})
	}
}

// latency builds a distribution from samples in milliseconds.
func latency(t *testing.T, objective time.Duration, ms ...float64) *stats.Latency {
	t.Helper()
	l, err := stats.NewLatency(time.Minute, objective)
	require.NoError(t, err)
	for _, m := range ms {
		l.Record(time.Duration(m * float64(time.Millisecond)))
	}
	return l
}

func TestNewBatchCellResult(t *testing.T) {
	obj := 100 * time.Millisecond
	// 10 sent, 8 read back (2 lost), 2 of the 8 late: throughput 5/s over
	// 2 s, timely 5 x (1 - 2/8) x (1 - 2/10) = 3.
	c := BatchCell{Linger: 5 * time.Millisecond, Size: BatchSize{Records: 4}, MaxBytes: 2149}
	r := NewBatchCellResult(c, BatchCounts{Sent: 10, Acked: 10, Received: 8, Duplicates: 1, Batches: 3, BatchRecords: 10,
		Window: 2 * time.Second, Latency: latency(t, obj, 10, 20, 30, 40, 50, 60, 150, 200)}, 512)
	assert.Equal(t, "5ms", r.Linger)
	assert.Equal(t, int64(5), r.LingerMS)
	assert.Equal(t, int64(2), r.Lost)
	assert.InDelta(t, 0.2, r.LossRate, 1e-12)
	assert.InDelta(t, 0.25, r.ViolationRate, 1e-12)
	assert.InDelta(t, 5.0, r.Throughput, 1e-12)
	assert.InDelta(t, 2560.0, r.ThroughputBytes, 1e-9)
	assert.InDelta(t, 3.0, r.Timely, 1e-12)
	assert.InDelta(t, 3.0*512, r.TimelyBytes, 1e-9)
	assert.InDelta(t, 10.0/3, r.RecordsPerBatch, 1e-12)
	assert.Equal(t, int64(8), r.Latency.Count)
	assert.LessOrEqual(t, r.Latency.P50, r.Latency.P99)
	assert.LessOrEqual(t, r.Latency.P99, r.Latency.Max)

	// Nothing read back: everything lost, no latency, no timely throughput.
	r = NewBatchCellResult(c, BatchCounts{Sent: 10, Window: time.Second, Latency: latency(t, obj)}, 512)
	assert.Equal(t, int64(10), r.Lost)
	assert.InDelta(t, 1.0, r.LossRate, 0)
	assert.Zero(t, r.Timely)
	assert.Zero(t, r.RecordsPerBatch)
}

// cell is a measured cell for the recommendation's tests.
func cell(linger int64, records int, bytes int32, thr, mean, p99, viol, loss float64) BatchCellResult {
	return BatchCellResult{
		Linger: (time.Duration(linger) * time.Millisecond).String(), LingerMS: linger, BatchSize: BatchSize{Records: records}, BatchBytes: bytes,
		Sent: 1000, Received: int64(1000 * (1 - loss)), Latency: stats.LatencySummary{Count: int64(1000 * (1 - loss)), Mean: mean, P50: mean / 2, P99: p99, Max: p99 * 2},
		ViolationRate: viol, LossRate: loss, Throughput: thr, Timely: stats.TimelyThroughput(thr, viol, loss),
	}
}

func TestBatchRecommend(t *testing.T) {
	obj := 100 * time.Millisecond
	tests := []struct {
		name              string
		cells             []BatchCellResult
		wantTimely        int
		wantMean          int
		timelyDiffersMean bool
	}{
		{
			// Seed 003's point: the big batch's mean (80 ms) meets the
			// objective, but its tail does not (30% late); the small batch
			// delivers more records in time.
			name: "the mean hides the tail",
			cells: []BatchCellResult{
				cell(0, 1, 587, 900, 20, 60, 0.0, 0),
				cell(5, 10, 5285, 1000, 45, 95, 0.005, 0),
				cell(100, 100, 52301, 1000, 80, 300, 0.30, 0),
			},
			wantTimely: 1, wantMean: 2, timelyDiffersMean: true,
		},
		{
			// Under packet loss the big batch loses less (seed 003's
			// finding) and wins despite a few late records.
			name: "loss decides",
			cells: []BatchCellResult{
				cell(0, 1, 587, 1000, 30, 90, 0.0, 0.40),
				cell(20, 10, 5285, 1000, 60, 150, 0.05, 0.02),
			},
			wantTimely: 1, wantMean: 1,
		},
		{
			name: "higher throughput wins at equal timeliness",
			cells: []BatchCellResult{
				cell(0, 1, 587, 800, 20, 60, 0, 0),
				cell(0, 10, 5285, 1200, 25, 70, 0, 0),
			},
			wantTimely: 1, wantMean: 1,
		},
		{
			name: "tie: lower violation rate, then lower p99",
			cells: []BatchCellResult{
				cell(0, 1, 587, 1000, 20, 90, 0, 0),
				cell(5, 1, 587, 1000, 20, 60, 0, 0),
			},
			wantTimely: 1, wantMean: 1,
		},
		{
			name: "no mean within the objective",
			cells: []BatchCellResult{
				cell(0, 1, 587, 1000, 150, 400, 0.6, 0),
				cell(100, 10, 5285, 1000, 120, 300, 0.5, 0),
			},
			wantTimely: 1, wantMean: -1,
		},
		{
			name: "a cell that delivered nothing is never chosen",
			cells: []BatchCellResult{
				func() BatchCellResult {
					c := cell(0, 100, 52301, 0, 0, 0, 0, 1)
					c.Received = 0
					return c
				}(),
				cell(0, 1, 587, 10, 50, 300, 0.5, 0.5),
			},
			wantTimely: 1, wantMean: 1,
		},
		{
			name:       "nothing measured",
			cells:      nil,
			wantTimely: -1, wantMean: -1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			timely, mean := BatchRecommend(tt.cells, obj)
			idx := func(c *BatchChoice) int {
				if c == nil {
					return -1
				}
				return c.Cell
			}
			assert.Equal(t, tt.wantTimely, idx(timely), "timely throughput's pick")
			assert.Equal(t, tt.wantMean, idx(mean), "mean latency's pick")
			if tt.timelyDiffersMean {
				assert.Greater(t, tt.cells[timely.Cell].Timely, tt.cells[mean.Cell].Timely, "the recommendation delivers more in time")
				assert.Less(t, tt.cells[mean.Cell].Latency.Mean, float64(obj.Milliseconds()), "the mean pick meets the objective on average")
			}
			if timely != nil {
				assert.Equal(t, BatchRuleTimely, timely.Rule)
				for _, c := range tt.cells {
					if c.Received > 0 {
						assert.LessOrEqual(t, c.Timely, tt.cells[timely.Cell].Timely, "no cell delivers more in time")
					}
				}
			}
		})
	}
}

func study(t *testing.T) *BatchStudy {
	t.Helper()
	s := &BatchStudy{Cluster: "lab", Topic: "kplan-batching-x", Partitions: 1, ReplicationFactor: 3, Objective: "100ms", ObjectiveMS: 100,
		Acks: "all", RecordSize: 512, Rate: "1000/s", RatePerSecond: 1000, CellDuration: "3s", Complete: true, Date: "2026-01-02T03:04:05Z",
		Cells: []BatchCellResult{cell(0, 1, 587, 1000, 20, 60, 0.0, 0), cell(5, 10, 5285, 1000, 45, 95, 0.005, 0)}}
	s.Recommended, s.MeanChoice = BatchRecommend(s.Cells, 100*time.Millisecond)
	return s
}

func TestBatchProperties(t *testing.T) {
	s := study(t)
	require.Equal(t, 0, s.Recommended.Cell)
	fresh, err := BatchProperties("", s)
	require.NoError(t, err)
	assert.True(t, strings.HasSuffix(fresh, "linger.ms=0\nbatch.size=587\nacks=all\n"), fresh)
	assert.Contains(t, fresh, "# kplan measure batching: 2026-01-02T03:04:05Z, linger 0s x batch 1 records")
	assert.Contains(t, fresh, "p99 60.0 ms")

	existing := "# producer of orders\nbootstrap.servers=k1:9092\nlinger.ms = 50\ncompression.type=lz4\nacks:1\nbatch.size 1000\nlinger.ms=7\n"
	got, err := BatchProperties(existing, s)
	require.NoError(t, err)
	assert.Contains(t, got, "# producer of orders\nbootstrap.servers=k1:9092\nlinger.ms=0\ncompression.type=lz4\nacks=all\nbatch.size=587\n", "keys replaced in place, others kept")
	assert.Equal(t, 1, strings.Count(got, "linger.ms="), "a repeated key is written once")

	again, err := BatchProperties(got, s)
	require.NoError(t, err)
	assert.Equal(t, got, again, "a second run replaces its own comment, not piles it up")

	_, err = BatchProperties("", &BatchStudy{})
	assert.ErrorContains(t, err, "no recommended cell")
}
