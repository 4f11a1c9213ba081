// Package clock is the wall clock kplan's waits use, behind the small
// interface that domain packages take so tests can inject a fake one.
package clock

import (
	"context"
	"errors"
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

// ErrTimeout is what Poll returns when its timeout passed and cond never
// returned an error.
var ErrTimeout = errors.New("timed out")

// Poll calls cond, then again every interval, until cond reports done, ctx
// ends or timeout has passed since the first call (timeout 0: until ctx
// ends), telling and waiting the time on c (nil: the wall clock).
//
// cond's answers: (true, nil) done, Poll returns nil; (true, err) stop,
// Poll returns err as it is; (false, err) not yet, err is the reason, kept;
// (false, nil) not yet. When the timeout passes, Poll returns the last
// reason cond gave, or ErrTimeout when it gave none; when ctx ends first,
// ctx's error. The deadline is checked after each call, so cond always runs
// at least once, and once more than the waits in between.
func Poll(ctx context.Context, c Clock, interval, timeout time.Duration, cond func(context.Context) (bool, error)) error {
	if c == nil {
		c = System{}
	}
	deadline := c.Now().Add(timeout)
	var last error
	for {
		done, err := cond(ctx)
		if done {
			return err
		}
		if err != nil {
			last = err
		}
		if timeout > 0 && c.Now().After(deadline) {
			if last == nil {
				return ErrTimeout
			}
			return last
		}
		if err := c.Sleep(ctx, interval); err != nil {
			return err
		}
	}
}

// WithNow is the wall clock's Sleep with now telling the time: for callers
// that take a func() time.Time.
func WithNow(now func() time.Time) Clock {
	if now == nil {
		return System{}
	}
	return nowFunc(now)
}

type nowFunc func() time.Time

func (f nowFunc) Now() time.Time { return f() }

func (nowFunc) Sleep(ctx context.Context, d time.Duration) error { return Sleep(ctx, d) }
