// Package clocktest is a clock for tests: it advances only when slept on
// (or by hand), so waits and paces are checked without wall time.
package clocktest

import (
	"context"
	"sync"
	"time"
)

// Clock advances only when slept on or moved by Advance. It is safe for
// concurrent use.
type Clock struct {
	mu     sync.Mutex
	t      time.Time
	sleeps []time.Duration
}

// New returns a clock at a fixed instant.
func New() *Clock { return &Clock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)} }

// Now implements clock.Clock.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Sleep implements clock.Clock: it advances the time by d at once, unless
// ctx has ended.
func (c *Clock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sleeps = append(c.sleeps, d)
	c.t = c.t.Add(d)
	return nil
}

// Advance moves the time by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// Sleeps lists the durations slept, in order.
func (c *Clock) Sleeps() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.sleeps...)
}
