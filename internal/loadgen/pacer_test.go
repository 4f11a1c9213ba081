package loadgen

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/kplan-dev/kplan/internal/clock/clocktest"
)

// TestPacerRate: on a clock that only moves when the pacer sleeps, a pacer
// of r records/s sends r*t records in t (record n is due n/r after the
// start), whatever the tick.
func TestPacerRate(t *testing.T) {
	for _, tc := range []struct {
		rate float64
		tick time.Duration
		run  time.Duration
	}{{100, time.Millisecond, time.Second}, {100, 2 * time.Millisecond, time.Second}, {1000, time.Millisecond, 2 * time.Second}, {7, 5 * time.Millisecond, 3 * time.Second}} {
		c := clocktest.New()
		p := NewPacer(tc.rate, tc.tick, c)
		var sent int
		p.Run(context.Background(), func() bool { return p.Elapsed() >= tc.run }, func() { sent++ })
		// Record n is due at n/rate: those due in [0, run) are sent.
		assert.InDelta(t, tc.rate*tc.run.Seconds(), float64(sent), 1, "rate %v tick %v", tc.rate, tc.tick)
	}
}

// TestPacerCatchUp: after a stall the pacer sends at most a tenth of a
// second of debt at once, and the records beyond it are never sent.
func TestPacerCatchUp(t *testing.T) {
	c := clocktest.New()
	p := NewPacer(1000, time.Millisecond, c)
	assert.False(t, p.Ready(), "record 1 is due after 1 ms")
	c.Advance(time.Millisecond)
	assert.True(t, p.Ready())
	assert.False(t, p.Ready(), "the next one is due 1 ms later")
	c.Advance(5 * time.Second) // a stall: 5000 records due
	burst := 0
	for p.Ready() {
		burst++
	}
	assert.Equal(t, 100, burst, "a tenth of a second of debt")
	c.Advance(time.Millisecond)
	assert.True(t, p.Ready())
	assert.False(t, p.Ready())
}

func TestPacerUnpaced(t *testing.T) {
	c := clocktest.New()
	p := NewPacer(0, time.Millisecond, c)
	for range 1000 {
		assert.True(t, p.Ready(), "no rate: always due")
	}
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	p.Run(ctx, func() bool { return false }, func() {
		n++
		if n == 10 {
			cancel()
		}
	})
	assert.Equal(t, 10, n, "an ended context ends the run")
	assert.Empty(t, c.Sleeps())
}
