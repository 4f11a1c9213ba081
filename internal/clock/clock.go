// Package clock is the wall clock kplan's waits use, behind the small
// interface that domain packages take so tests can inject a fake one.
package clock

import (
	"context"
	"time"
)

// Clock tells the time and waits.
type Clock interface {
	Now() time.Time
	// Sleep waits d, or until ctx ends (then it returns ctx's error).
	Sleep(ctx context.Context, d time.Duration) error
}

// System is the wall clock.
type System struct{}

// Now returns time.Now().
func (System) Now() time.Time { return time.Now() }

// Sleep is the package's Sleep.
func (System) Sleep(ctx context.Context, d time.Duration) error { return Sleep(ctx, d) }

// Sleep waits d, or until ctx ends, whichever comes first; it returns
// ctx's error when ctx ended first.
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
