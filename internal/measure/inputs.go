package measure

import (
	"bufio"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kplan-dev/kplan/internal/errkind"
	"github.com/kplan-dev/kplan/internal/stats"
)

// Spread summarises samples: count, mean with its 95% confidence interval,
// median, 10th and 90th percentiles, min and max.
type Spread struct {
	N      int     `json:"n"`
	Mean   float64 `json:"mean"`
	CIHalf float64 `json:"ci95_half_width"`
	Median float64 `json:"median"`
	P10    float64 `json:"p10"`
	P90    float64 `json:"p90"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
}

// SpreadOf summarises xs (the empty Spread for none). Percentiles
// interpolate linearly between order statistics; the confidence interval
// is Student's t (stats.MeanCI) and 0 below two samples.
func SpreadOf(xs []float64) Spread {
	if len(xs) == 0 {
		return Spread{}
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	sum := 0.0
	for _, x := range s {
		sum += x
	}
	out := Spread{N: len(s), Mean: sum / float64(len(s)), Min: s[0], Max: s[len(s)-1],
		Median: measureQuantile(s, 0.5), P10: measureQuantile(s, 0.1), P90: measureQuantile(s, 0.9)}
	if ci, err := stats.MeanCI(s, 0.95); err == nil && !math.IsNaN(ci.Half) {
		out.CIHalf = ci.Half
	}
	return out
}

// measureQuantile is the q-quantile of sorted (linear interpolation).
func measureQuantile(sorted []float64, q float64) float64 {
	if len(sorted) == 1 {
		return sorted[0]
	}
	pos := q * float64(len(sorted)-1)
	lo := int(math.Floor(pos))
	hi := min(lo+1, len(sorted)-1)
	return sorted[lo] + (pos-float64(lo))*(sorted[hi]-sorted[lo])
}

// Throughput is Tp or Tc: one partition's sustained rate.
type Throughput struct {
	// BytesPerSec is the mean over the kept windows, rounded down to a
	// whole kB/s.
	BytesPerSec int64 `json:"bytes_per_sec"`
	// Windows is the spread of the kept windows' rates in bytes/s.
	Windows Spread `json:"windows_bytes_per_sec"`
	// Window is each window's length.
	Window time.Duration `json:"window_ns"`
	// Records and Bytes are everything counted, warm-up included.
	Records int64 `json:"records"`
	Bytes   int64 `json:"bytes"`
}

// WarmupWindows is how many windows of a rate measurement are left out at
// the start (connections, buffers filling); CountedWindows the fewest
// windows after them that a rate is taken from. A run must last
// MinWindows windows.
const (
	WarmupWindows  = 1
	CountedWindows = 2
	MinWindows     = WarmupWindows + CountedWindows
)

// ThroughputOf computes a rate from bytes counted per window over a run of
// duration. The warm-up window (connections, buffers filling) and any
// window not wholly inside the run are left out; a run shorter than
// MinWindows windows is refused (field "duration"): it would have no
// spread to state, or nothing but its warm-up to count.
func ThroughputOf(windows []int64, window, duration time.Duration, records int64) (Throughput, error) {
	if window <= 0 || duration < window {
		return Throughput{}, errkind.Usagef("window", "want a window of at least 1ms and at most the duration, got %s for %s", window, duration)
	}
	if duration < MinWindows*window {
		return Throughput{}, errkind.Usagef("duration", "want at least %d windows of %s (%d of warm-up, %d counted), got %s", MinWindows, window, WarmupWindows, CountedWindows, duration)
	}
	var total int64
	for _, b := range windows {
		total += b
	}
	if total <= 0 {
		return Throughput{}, errkind.New(errkind.Runtime, "", "nothing was counted in %s", duration)
	}
	full := int(duration / window)
	var rates []float64
	for i := WarmupWindows; i < full; i++ {
		var b int64
		if i < len(windows) {
			b = windows[i]
		}
		rates = append(rates, float64(b)/window.Seconds())
	}
	sp := SpreadOf(rates)
	bps := int64(sp.Mean) / 1000 * 1000
	if bps <= 0 {
		return Throughput{}, errkind.New(errkind.Runtime, "", "rate below 1kB/s (%d bytes in %s)", total, duration)
	}
	return Throughput{BytesPerSec: bps, Windows: sp, Window: window, Records: records, Bytes: total}, nil
}

// Replication is l_r: how long acks=all takes beyond the leader's own
// append, from paired samples.
type Replication struct {
	// Latency is the median of the paired differences (acks=all minus
	// acks=1), rounded to a microsecond and at least one.
	Latency time.Duration `json:"latency_ns"`
	// Clamped says the median difference was not positive (no measurable
	// replication cost) and Latency is the 1µs floor.
	Clamped bool `json:"clamped,omitempty"`
	// Diff, All and Leader are the spreads in milliseconds of the
	// differences and of each ack level's latency.
	Diff   Spread `json:"difference_ms"`
	All    Spread `json:"acks_all_ms"`
	Leader Spread `json:"acks_1_ms"`
}

// ReplicationOf pairs all[i] with leader[i].
func ReplicationOf(all, leader []time.Duration) (Replication, error) {
	if len(all) != len(leader) || len(all) == 0 {
		return Replication{}, errkind.New(errkind.Runtime, "", "replication latency: %d acks=all and %d acks=1 samples, want equal and positive", len(all), len(leader))
	}
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	var diff, a, l []float64
	for i := range all {
		diff = append(diff, ms(all[i]-leader[i]))
		a = append(a, ms(all[i]))
		l = append(l, ms(leader[i]))
	}
	r := Replication{Diff: SpreadOf(diff), All: SpreadOf(a), Leader: SpreadOf(l)}
	r.Latency = time.Duration(math.Round(r.Diff.Median*1000)) * time.Microsecond
	if r.Latency < time.Microsecond {
		r.Latency, r.Clamped = time.Microsecond, true
	}
	return r, nil
}

// Election is u: the leader election time of one partition.
type Election struct {
	// PerPartition is the median over rounds of the time until every
	// partition accepted a write on its new leader, divided by Partitions;
	// rounded to a microsecond and at least one.
	PerPartition time.Duration `json:"per_partition_ns"`
	Partitions   int           `json:"partitions"`
	// PerPartitionMs is the per-round spread of that figure, Writable and
	// Elect the rounds' totals (until writable, until the controller
	// answered), all in milliseconds.
	PerPartitionMs Spread `json:"per_partition_ms"`
	WritableMs     Spread `json:"writable_ms"`
	ElectMs        Spread `json:"elect_ms"`
}

// ElectionOf summarises rounds that each moved the leadership of
// partitions partitions: writable[i] until all accepted writes, elect[i]
// until the controller answered.
func ElectionOf(writable, elect []time.Duration, partitions int) (Election, error) {
	if partitions < 1 || len(writable) == 0 || len(writable) != len(elect) {
		return Election{}, errkind.New(errkind.Runtime, "", "election time: %d rounds of %d partitions", len(writable), partitions)
	}
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	var per, w, e []float64
	for i := range writable {
		per = append(per, ms(writable[i])/float64(partitions))
		w = append(w, ms(writable[i]))
		e = append(e, ms(elect[i]))
	}
	out := Election{Partitions: partitions, PerPartitionMs: SpreadOf(per), WritableMs: SpreadOf(w), ElectMs: SpreadOf(e)}
	out.PerPartition = max(time.Duration(math.Round(out.PerPartitionMs.Median*1000))*time.Microsecond, time.Microsecond)
	return out, nil
}

// Handles is Hmax: partition replicas one broker can hold open.
type Handles struct {
	Value int64 `json:"max_handles"`
	// OpenFiles is the broker process's soft open-files limit and
	// MaxMapCount the kernel's vm.max_map_count, when read (0 otherwise).
	OpenFiles   int64 `json:"open_files_limit,omitempty"`
	MaxMapCount int64 `json:"max_map_count,omitempty"`
	// Given says Value came from the --max-handles flag.
	Given bool `json:"given,omitempty"`
}

// HandlesPerReplica is what one partition replica holds at the least: one
// segment's .log file descriptor, and the memory maps of its .index and
// .timeindex; seed 001 asks for OS limits "well above 2x the partition
// replicas per broker", so kplan counts two of each limit per replica.
const HandlesPerReplica = 2

// HandlesOf derives Hmax from the limits: min(open files, max map count)
// / HandlesPerReplica.
func HandlesOf(openFiles, maxMapCount int64) (Handles, error) {
	if openFiles <= 0 || maxMapCount <= 0 {
		return Handles{}, errkind.Usagef("max-handles", "broker limits not readable (open files %d, vm.max_map_count %d)", openFiles, maxMapCount)
	}
	v := min(openFiles, maxMapCount) / HandlesPerReplica
	if v < 1 {
		return Handles{}, errkind.Usagef("max-handles", "broker limits too low (open files %d, vm.max_map_count %d)", openFiles, maxMapCount)
	}
	return Handles{Value: v, OpenFiles: openFiles, MaxMapCount: maxMapCount}, nil
}

// Unlimited is what ParseOpenFiles returns for "unlimited".
const Unlimited = math.MaxInt32

// ParseOpenFiles reads the soft "Max open files" limit from the text of
// /proc/PID/limits.
func ParseOpenFiles(limits string) (int64, error) {
	sc := bufio.NewScanner(strings.NewReader(limits))
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "Max open files")
		if !ok {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) < 1 {
			return 0, errkind.Usagef("limits", "\"Max open files\" has no value")
		}
		if fields[0] == "unlimited" {
			return Unlimited, nil
		}
		v, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil || v <= 0 {
			return 0, errkind.Usagef("limits", "\"Max open files\": %q is not a positive number", fields[0])
		}
		return v, nil
	}
	return 0, errkind.Usagef("limits", "no \"Max open files\" line")
}

// ParseMaxMapCount reads /proc/sys/vm/max_map_count's text.
func ParseMaxMapCount(text string) (int64, error) {
	v, err := strconv.ParseInt(strings.TrimSpace(text), 10, 64)
	if err != nil || v <= 0 {
		return 0, errkind.Usagef("max_map_count", "%q is not a positive number", strings.TrimSpace(text))
	}
	return v, nil
}

// formatMs prints milliseconds with three decimals.
func formatMs(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) + "ms" }

// formatMBps prints bytes/s as MB/s with two decimals.
func formatMBps(v float64) string { return strconv.FormatFloat(v/1e6, 'f', 2, 64) + "MB/s" }

// describe prints a spread in the given unit's formatter.
func (s Spread) describe(f func(float64) string) string {
	if s.N == 0 {
		return "no samples"
	}
	out := fmt.Sprintf("n=%d median %s p10 %s p90 %s min %s max %s", s.N, f(s.Median), f(s.P10), f(s.P90), f(s.Min), f(s.Max))
	if s.N >= 2 {
		out += fmt.Sprintf(", mean %s ± %s (95%% CI)", f(s.Mean), f(s.CIHalf))
	}
	return out
}
