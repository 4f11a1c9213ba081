package loadgen

import (
	"context"
	"time"

	"github.com/kplan-dev/kplan/internal/clock"
)

// Pacer spaces records at a rate: record n is due n/rate seconds after the
// pacer started. A producer that fell behind (a full buffer, a failover)
// catches up at most a tenth of a second of debt at once: the records it
// skipped beyond that are never sent, so a stall is not followed by a burst
// that measures the burst instead of the rate.
type Pacer struct {
	rate  float64 // records/s; 0: as fast as the producer can
	burst int64
	tick  time.Duration
	clk   clock.Clock
	t0    time.Time
	n     int64 // the pacing's count (catch-up skips records)
}

// NewPacer starts a pacer of rate records per second (0: unpaced) that
// checks every tick whether the next record is due, on clock c (nil: the
// wall clock).
func NewPacer(rate float64, tick time.Duration, c clock.Clock) *Pacer {
	if c == nil {
		c = clock.System{}
	}
	return &Pacer{rate: rate, burst: int64(max(1, rate/10)), tick: tick, clk: c, t0: c.Now()}
}

// Elapsed is the time since the pacer started.
func (p *Pacer) Elapsed() time.Duration { return p.clk.Now().Sub(p.t0) }

// Ready reports whether the next record is due now; when it is, it counts
// it as sent.
func (p *Pacer) Ready() bool {
	if p.rate > 0 {
		due := int64(p.Elapsed().Seconds() * p.rate)
		if due-p.n > p.burst {
			p.n = due - p.burst // the records skipped are never sent
		}
		if p.n >= due {
			return false
		}
	}
	p.n++
	return true
}

// Run calls send each time a record is due until done reports true or ctx
// ends, waiting a tick whenever none is due.
func (p *Pacer) Run(ctx context.Context, done func() bool, send func()) {
	for !done() && ctx.Err() == nil {
		if !p.Ready() {
			_ = p.clk.Sleep(ctx, p.tick) // an ended ctx ends the loop
			continue
		}
		send()
	}
}
