package measure

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/errkind"
)

func TestSpreadOf(t *testing.T) {
	tests := []struct {
		name string
		xs   []float64
		want Spread
	}{
		{"none", nil, Spread{}},
		{"one", []float64{4}, Spread{N: 1, Mean: 4, Median: 4, P10: 4, P90: 4, Min: 4, Max: 4}},
		{"odd, unsorted", []float64{5, 1, 3}, Spread{N: 3, Mean: 3, Median: 3, P10: 1.4, P90: 4.6, Min: 1, Max: 5}},
		{"even", []float64{1, 2, 3, 4}, Spread{N: 4, Mean: 2.5, Median: 2.5, P10: 1.3, P90: 3.7, Min: 1, Max: 4}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := SpreadOf(tc.xs)
			ci := got.CIHalf
			got.CIHalf = 0
			assert.InDeltaMapValues(t, map[string]float64{"mean": tc.want.Mean, "median": tc.want.Median, "p10": tc.want.P10, "p90": tc.want.P90, "min": tc.want.Min, "max": tc.want.Max},
				map[string]float64{"mean": got.Mean, "median": got.Median, "p10": got.P10, "p90": got.P90, "min": got.Min, "max": got.Max}, 1e-9)
			assert.Equal(t, tc.want.N, got.N)
			if len(tc.xs) >= 2 {
				assert.Positive(t, ci, "a confidence interval from two samples on")
			} else {
				assert.Zero(t, ci)
			}
		})
	}
}

func TestSpreadOfKeepsInput(t *testing.T) {
	xs := []float64{3, 1, 2}
	SpreadOf(xs)
	assert.Equal(t, []float64{3, 1, 2}, xs, "the caller's samples are not reordered")
}

func TestThroughputOf(t *testing.T) {
	tests := []struct {
		name     string
		windows  []int64
		window   time.Duration
		duration time.Duration
		want     int64
		n        int
	}{
		// The first window (warm-up) and the ones past the run are left out.
		{"drops warm-up and tail", []int64{1_000, 10_000_000, 12_000_000, 99_000_000}, time.Second, 3 * time.Second, 11_000_000, 2},
		{"half-second windows", []int64{0, 5_000_000, 5_000_000, 5_000_000}, 500 * time.Millisecond, 2 * time.Second, 10_000_000, 3},
		{"rounds down to kB/s", []int64{0, 1_999_999, 1_999_999}, time.Second, 3 * time.Second, 1_999_000, 2},
		// A counted window with no acknowledgement in it is a zero, not
		// left out: the rate is of the whole counted time.
		{"empty counted window", []int64{0, 4_000_000}, time.Second, 3 * time.Second, 2_000_000, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ThroughputOf(tc.windows, tc.window, tc.duration, 42)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got.BytesPerSec)
			assert.Equal(t, tc.n, got.Windows.N)
			assert.Equal(t, int64(42), got.Records)
		})
	}
}

func TestThroughputOfRefuses(t *testing.T) {
	tests := []struct {
		name     string
		windows  []int64
		window   time.Duration
		duration time.Duration
		kind     errkind.Kind
		field    string
	}{
		{"nothing counted", []int64{0, 0, 0}, time.Second, 3 * time.Second, errkind.Runtime, ""},
		{"no windows", nil, time.Second, 3 * time.Second, errkind.Runtime, ""},
		{"zero window", []int64{1}, 0, time.Second, errkind.Usage, "window"},
		{"window longer than the run", []int64{1}, 2 * time.Second, time.Second, errkind.Usage, "window"},
		{"below 1kB/s", []int64{0, 999, 999}, time.Second, 3 * time.Second, errkind.Runtime, ""},
		// The SASL_SSL lab at --duration 1s: only the warm-up window, and
		// everything acknowledged after the run.
		{"only the warm-up window", []int64{0, 10_000_000}, time.Second, time.Second, errkind.Usage, "duration"},
		{"one counted window", []int64{0, 10_000_000}, time.Second, 2 * time.Second, errkind.Usage, "duration"},
		{"everything after the run", []int64{0, 0, 0, 10_000_000}, time.Second, 3 * time.Second, errkind.Runtime, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ThroughputOf(tc.windows, tc.window, tc.duration, 0)
			require.Error(t, err)
			assert.Equal(t, tc.kind, errkind.KindOf(err))
			assert.Equal(t, tc.field, errkind.FieldOf(err))
		})
	}
}

func TestReplicationOf(t *testing.T) {
	ms := func(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }
	all := []time.Duration{ms(5), ms(6), ms(100), ms(4)}
	leader := []time.Duration{ms(2), ms(3), ms(3), ms(2)}
	r, err := ReplicationOf(all, leader)
	require.NoError(t, err)
	// Differences 3, 3, 97, 2: the median (3ms) ignores the outlier that
	// the mean (26.25ms) does not.
	assert.Equal(t, 3*time.Millisecond, r.Latency)
	assert.False(t, r.Clamped)
	assert.InDelta(t, 26.25, r.Diff.Mean, 1e-9)
	assert.Equal(t, 4, r.Diff.N)
	assert.InDelta(t, 5.5, r.All.Median, 1e-9)
	assert.InDelta(t, 2.5, r.Leader.Median, 1e-9)
}

func TestReplicationOfClamps(t *testing.T) {
	r, err := ReplicationOf([]time.Duration{time.Millisecond, time.Millisecond}, []time.Duration{2 * time.Millisecond, time.Millisecond})
	require.NoError(t, err)
	assert.Equal(t, time.Microsecond, r.Latency, "kplan size needs a positive l_r")
	assert.True(t, r.Clamped)
}

func TestReplicationOfRefuses(t *testing.T) {
	for _, tc := range []struct {
		name        string
		all, leader []time.Duration
	}{
		{"none", nil, nil},
		{"unpaired", []time.Duration{1}, []time.Duration{1, 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReplicationOf(tc.all, tc.leader)
			assert.ErrorContains(t, err, "replication latency")
		})
	}
}

func TestElectionOf(t *testing.T) {
	e, err := ElectionOf([]time.Duration{300 * time.Millisecond, 100 * time.Millisecond, 200 * time.Millisecond},
		[]time.Duration{50 * time.Millisecond, 40 * time.Millisecond, 60 * time.Millisecond}, 100)
	require.NoError(t, err)
	assert.Equal(t, 2*time.Millisecond, e.PerPartition, "median round (200ms) over 100 partitions")
	assert.Equal(t, 100, e.Partitions)
	assert.Equal(t, 3, e.PerPartitionMs.N)
	assert.InDelta(t, 50, e.ElectMs.Median, 1e-9)
	assert.InDelta(t, 300, e.WritableMs.Max, 1e-9)

	_, err = ElectionOf(nil, nil, 10)
	assert.ErrorContains(t, err, "election time")
	_, err = ElectionOf([]time.Duration{1}, []time.Duration{1}, 0)
	assert.ErrorContains(t, err, "election time")
	tiny, err := ElectionOf([]time.Duration{time.Nanosecond}, []time.Duration{time.Nanosecond}, 10)
	require.NoError(t, err)
	assert.Equal(t, time.Microsecond, tiny.PerPartition, "at least 1µs: kplan size needs a positive u")
}

func TestHandlesOf(t *testing.T) {
	tests := []struct {
		open, maps int64
		want       int64
		err        string
	}{
		{20000, 65530, 10000, ""},
		{1048576, 65530, 32765, ""},
		{Unlimited, 262144, 131072, ""},
		{0, 65530, 0, "not readable"},
		{1, 1, 0, "too low"},
	}
	for _, tc := range tests {
		h, err := HandlesOf(tc.open, tc.maps)
		if tc.err != "" {
			assert.ErrorContains(t, err, tc.err)
			assert.Equal(t, "max-handles", errkind.FieldOf(err))
			continue
		}
		require.NoError(t, err)
		assert.Equal(t, tc.want, h.Value)
		assert.Equal(t, tc.open, h.OpenFiles)
	}
}

const procLimits = `Limit                     Soft Limit           Hard Limit           Units
Max cpu time              unlimited            unlimited            seconds
Max open files            20000                1048576              files
Max locked memory         8388608              8388608              bytes
`

func TestParseOpenFiles(t *testing.T) {
	tests := []struct {
		text string
		want int64
		err  string
	}{
		{procLimits, 20000, ""},
		{"Max open files            unlimited            unlimited            files\n", Unlimited, ""},
		{"Max cpu time unlimited unlimited seconds\n", 0, "no \"Max open files\" line"},
		{"Max open files\n", 0, "has no value"},
		{"Max open files  lots  lots files\n", 0, "not a positive number"},
		{"Max open files  -5  5 files\n", 0, "not a positive number"},
		{"", 0, "no \"Max open files\" line"},
	}
	for _, tc := range tests {
		got, err := ParseOpenFiles(tc.text)
		if tc.err != "" {
			assert.ErrorContains(t, err, tc.err)
			continue
		}
		require.NoError(t, err)
		assert.Equal(t, tc.want, got)
	}
}

func TestParseMaxMapCount(t *testing.T) {
	v, err := ParseMaxMapCount("65530\n")
	require.NoError(t, err)
	assert.Equal(t, int64(65530), v)
	for _, bad := range []string{"", "x", "-1", "0"} {
		_, err := ParseMaxMapCount(bad)
		assert.ErrorContains(t, err, "not a positive number", "%q", bad)
	}
}

func FuzzParseOpenFiles(f *testing.F) {
	f.Add(procLimits)
	f.Add("Max open files unlimited unlimited files\n")
	f.Add("Max open files\n")
	f.Fuzz(func(t *testing.T, text string) {
		v, err := ParseOpenFiles(text)
		if err == nil && v <= 0 {
			t.Fatalf("accepted %q as %d", text, v)
		}
		if err != nil && errkind.KindOf(err) != errkind.Usage {
			t.Fatalf("error of kind %v: %v", errkind.KindOf(err), err)
		}
		if mc, err := ParseMaxMapCount(text); err == nil && mc <= 0 {
			t.Fatalf("max_map_count %q as %d", text, mc)
		}
	})
}
