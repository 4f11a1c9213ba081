package stats

import (
	"bytes"
	"compress/zlib"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"io"
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

// Violating returns how many samples were strictly above the objective.
func (l *Latency) Violating() int64 { return l.violating }

// Encode returns l's histogram in HdrHistogram's V2 compressed encoding
// (base64 text, readable by every HdrHistogram implementation). The
// violating and clamped counts are not part of it: DecodeLatency takes them
// beside it.
func (l *Latency) Encode() (string, error) {
	b, err := l.h.Encode(hdrhistogram.V2CompressedEncodingCookieBase)
	if err != nil {
		return "", fmt.Errorf("encode latency histogram: %w", err)
	}
	return string(b), nil
}

// DecodeLatency is the inverse of Encode: a distribution over the same
// range as NewLatency(highest, objective) with violating samples above the
// objective and clamped ones above highest. It refuses an encoding of any
// other range or precision before allocating its counts, so a hostile
// header cannot make it allocate more than NewLatency would.
func DecodeLatency(enc string, highest, objective time.Duration, violating, clamped int64) (*Latency, error) {
	l, err := NewLatency(highest, objective)
	if err != nil {
		return nil, err
	}
	if err := checkGeometry(enc, l.h); err != nil {
		return nil, err
	}
	h, err := hdrhistogram.Decode([]byte(enc))
	if err != nil {
		return nil, fmt.Errorf("decode latency histogram: %w", err)
	}
	n := h.TotalCount()
	if violating < 0 || violating > n || clamped < 0 || clamped > n {
		return nil, fmt.Errorf("latency histogram: %d violating and %d clamped of %d samples", violating, clamped, n)
	}
	l.h, l.violating, l.clamped = h, violating, clamped
	return l, nil
}

// checkGeometry reads the header of an encoded histogram (base64 of an
// 8-byte prefix and a zlib stream starting with a 40-byte header: cookie,
// payload length, normalizing offset, significant digits, lowest, highest,
// ratio) and checks its range and precision against want's.
func checkGeometry(enc string, want *hdrhistogram.Histogram) error {
	raw, err := base64.StdEncoding.DecodeString(enc)
	if err != nil {
		return fmt.Errorf("decode latency histogram: %w", err)
	}
	if len(raw) < 8 {
		return fmt.Errorf("decode latency histogram: %d bytes, too short", len(raw))
	}
	z, err := zlib.NewReader(bytes.NewReader(raw[8:]))
	if err != nil {
		return fmt.Errorf("decode latency histogram: %w", err)
	}
	defer func() { _ = z.Close() }()
	var hdr [40]byte
	if _, err := io.ReadFull(z, hdr[:]); err != nil {
		return fmt.Errorf("decode latency histogram header: %w", err)
	}
	digits := int64(binary.BigEndian.Uint32(hdr[12:]))
	lowest := int64(binary.BigEndian.Uint64(hdr[16:]))  //nolint:gosec // compared, never used as a size
	highest := int64(binary.BigEndian.Uint64(hdr[24:])) //nolint:gosec // compared, never used as a size
	if digits != want.SignificantFigures() || lowest != want.LowestTrackableValue() || highest != want.HighestTrackableValue() {
		return fmt.Errorf("latency histogram covers %d..%dµs at %d digits, want %d..%dµs at %d",
			lowest, highest, digits, want.LowestTrackableValue(), want.HighestTrackableValue(), want.SignificantFigures())
	}
	return nil
}
