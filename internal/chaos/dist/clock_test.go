package dist

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestEstimateOffset(t *testing.T) {
	t0 := time.Date(2026, 11, 26, 20, 0, 0, 0, time.UTC)
	ms := time.Millisecond
	// probe makes a sample of a clock whose true offset is off: sent at
	// local s, stamped by the broker d after the send (truncated to the
	// millisecond), acknowledged at local s+rtt.
	probe := func(off time.Duration, s, d, rtt time.Duration) ClockSample {
		return ClockSample{Sent: t0.Add(s), Acked: t0.Add(s + rtt), Broker: t0.Add(s + d + off).Truncate(ms)}
	}
	tests := []struct {
		name    string
		samples []ClockSample
		trueOff time.Duration
		maxU    time.Duration
	}{
		{"one probe", []ClockSample{probe(0, 0, ms, 2*ms)}, 0, 2 * ms},
		{"worker 5 s ahead", []ClockSample{probe(-5*time.Second, 0, 300*time.Microsecond, 600*time.Microsecond)}, -5 * time.Second, 1 * ms},
		{"worker 3 s behind, several probes narrow it", []ClockSample{
			probe(3*time.Second, 0, 4*ms, 9*ms),
			probe(3*time.Second, 10*ms, 1*ms, 3*ms),
			probe(3*time.Second, 20*ms+400*time.Microsecond, 700*time.Microsecond, 1500*time.Microsecond),
		}, 3 * time.Second, 2 * ms},
		{"a stepped clock: the narrowest probe alone", []ClockSample{
			probe(0, 0, ms, 2*ms),
			probe(time.Second, 10*ms, 200*time.Microsecond, 500*time.Microsecond),
		}, time.Second, ms},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o, ok := EstimateOffset(tc.samples)
			assert.True(t, ok)
			assert.LessOrEqual(t, o.Uncertainty, tc.maxU)
			assert.InDelta(t, float64(tc.trueOff), float64(o.Offset), float64(o.Uncertainty), "offset %v ± %v, true %v", o.Offset, o.Uncertainty, tc.trueOff)
		})
	}
	_, ok := EstimateOffset(nil)
	assert.False(t, ok)
}

func TestSkewSignificant(t *testing.T) {
	ms := time.Millisecond
	w := Offset{Offset: -2 * time.Second, Uncertainty: ms}
	c := Offset{Offset: 0, Uncertainty: 2 * ms}
	s := Skew(w, c)
	assert.Equal(t, Offset{Offset: -2 * time.Second, Uncertainty: 3 * ms}, s)
	assert.True(t, s.Significant())
	assert.False(t, Skew(Offset{Offset: ms, Uncertainty: ms}, Offset{Offset: 0, Uncertainty: ms}).Significant())
	assert.True(t, Offset{Offset: -3 * ms, Uncertainty: 2 * ms}.Significant())
}
