package stats

import (
	"fmt"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// Latency is a latency distribution recorded in microseconds in an
// HdrHistogram (3 significant digits), with an exact count of samples above
// an optional objective. It is not safe for concurrent use.
type Latency struct {
	h         *hdrhistogram.Histogram
	objective time.Duration
	violating int64
	clamped   int64
}

// NewLatency returns an empty distribution tracking values up to highest
// (larger values are recorded as highest and counted in Clamped). objective
// is the latency objective of the violation rate; 0 means none.
func NewLatency(highest, objective time.Duration) (*Latency, error) {
	hi := highest.Microseconds()
	if hi < 2 {
		return nil, fmt.Errorf("latency histogram: highest trackable value %s is below 2µs", highest)
	}
	if objective < 0 {
		return nil, fmt.Errorf("latency objective %s is negative", objective)
	}
	return &Latency{h: hdrhistogram.New(1, hi, 3), objective: objective}, nil
}

// Record adds one sample. Negative durations (clock steps) count as 0.
func (l *Latency) Record(d time.Duration) {
	if l.objective > 0 && d > l.objective {
		l.violating++
	}
	us := max(d.Microseconds(), 0)
	if us > l.h.HighestTrackableValue() {
		us = l.h.HighestTrackableValue()
		l.clamped++
	}
	if us < 1 {
		us = 1 // the histogram's lowest discernible value
	}
	_ = l.h.RecordValue(us) // cannot fail: us is within [1, highest]
}

// Clone returns an independent copy of l.
func (l *Latency) Clone() *Latency {
	c := *l
	c.h = hdrhistogram.Import(l.h.Export())
	return &c
}

// Merge adds every sample of o. Both must have the same objective and range.
func (l *Latency) Merge(o *Latency) error {
	if l.objective != o.objective || l.h.HighestTrackableValue() != o.h.HighestTrackableValue() {
		return fmt.Errorf("merge latencies: objective or range differ (%s/%dµs vs %s/%dµs)",
			l.objective, l.h.HighestTrackableValue(), o.objective, o.h.HighestTrackableValue())
	}
	l.h.Merge(o.h)
	l.violating += o.violating
	l.clamped += o.clamped
	return nil
}

// Count returns the number of samples.
func (l *Latency) Count() int64 { return l.h.TotalCount() }

// Clamped returns how many samples exceeded the highest trackable value.
func (l *Latency) Clamped() int64 { return l.clamped }

// ViolationRate returns the share of samples strictly above the objective
// (0 without an objective or samples). It is counted exactly, not read from
// the histogram's buckets.
func (l *Latency) ViolationRate() float64 {
	if l.h.TotalCount() == 0 {
		return 0
	}
	return float64(l.violating) / float64(l.h.TotalCount())
}

// LatencySummary is a distribution summary in milliseconds.
type LatencySummary struct {
	Count int64   `json:"count"`
	Mean  float64 `json:"mean"`
	P50   float64 `json:"p50"`
	P95   float64 `json:"p95"`
	P99   float64 `json:"p99"`
	P999  float64 `json:"p99_9"`
	Max   float64 `json:"max"`
	// ViolationRate is the share of samples above the objective.
	ViolationRate float64 `json:"violation_rate"`
}

// Summary returns count, mean, p50/p95/p99/p99.9 and max in milliseconds.
func (l *Latency) Summary() LatencySummary {
	ms := func(us int64) float64 { return float64(us) / 1000 }
	return LatencySummary{
		Count:         l.h.TotalCount(),
		Mean:          l.h.Mean() / 1000,
		P50:           ms(l.h.ValueAtQuantile(50)),
		P95:           ms(l.h.ValueAtQuantile(95)),
		P99:           ms(l.h.ValueAtQuantile(99)),
		P999:          ms(l.h.ValueAtQuantile(99.9)),
		Max:           ms(l.h.Max()),
		ViolationRate: l.ViolationRate(),
	}
}

// ViolationRate is the share of samples strictly above objective, computed
// from raw samples.
func ViolationRate(samples []time.Duration, objective time.Duration) float64 {
	if len(samples) == 0 {
		return 0
	}
	n := 0
	for _, s := range samples {
		if s > objective {
			n++
		}
	}
	return float64(n) / float64(len(samples))
}

// LossRate is lost over sent (0 when nothing was sent).
func LossRate(lost, sent int64) float64 {
	if sent <= 0 {
		return 0
	}
	return float64(lost) / float64(sent)
}

// TimelyThroughput is seed 003's figure: the throughput of records that
// arrived and arrived in time, (1 - violation rate) x (1 - loss rate) x
// throughput. Rates are clamped to [0, 1].
func TimelyThroughput(throughput, violationRate, lossRate float64) float64 {
	clamp := func(x float64) float64 { return min(max(x, 0), 1) }
	return (1 - clamp(violationRate)) * (1 - clamp(lossRate)) * throughput
}
