package clock

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/kplan-dev/kplan/internal/clock/clocktest"
)

func TestSleep(t *testing.T) {
	assert.NoError(t, Sleep(context.Background(), 0))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	// An ended context wins over any wait, however long.
	assert.ErrorIs(t, System{}.Sleep(ctx, 1<<62), context.Canceled)
	assert.False(t, System{}.Now().IsZero())
}

func TestPoll(t *testing.T) {
	errNotYet := errors.New("not yet")
	errFatal := errors.New("fatal")
	for _, tc := range []struct {
		name string
		// answers cond gives, one per call; past the end it repeats the last.
		answers []answer
		timeout time.Duration
		want    error
		calls   int
	}{
		{"done at once", []answer{{true, nil}}, time.Second, nil, 1},
		{"done on the third call", []answer{{false, nil}, {false, errNotYet}, {true, nil}}, time.Second, nil, 3},
		{"stop with an error", []answer{{false, nil}, {true, errFatal}}, time.Second, errFatal, 2},
		// 100 ms between calls, 250 ms timeout: calls at 0, 100, 200, 300.
		{"timeout returns the last reason", []answer{{false, errNotYet}, {false, nil}}, 250 * time.Millisecond, errNotYet, 4},
		{"timeout without a reason", []answer{{false, nil}}, 250 * time.Millisecond, ErrTimeout, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := clocktest.New()
			calls := 0
			err := Poll(context.Background(), c, 100*time.Millisecond, tc.timeout, func(context.Context) (bool, error) {
				a := tc.answers[min(calls, len(tc.answers)-1)]
				calls++
				return a.done, a.err
			})
			assert.ErrorIs(t, err, tc.want)
			if tc.want == nil {
				assert.NoError(t, err)
			}
			assert.Equal(t, tc.calls, calls)
			assert.Len(t, c.Sleeps(), calls-1, "a wait between two calls, none after the last")
		})
	}
}

type answer struct {
	done bool
	err  error
}

func TestPollContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	calls := 0
	err := Poll(ctx, clocktest.New(), time.Millisecond, 0, func(context.Context) (bool, error) {
		calls++
		if calls == 3 {
			cancel()
		}
		return false, errors.New("never")
	})
	assert.ErrorIs(t, err, context.Canceled, "an ended context wins over the last reason")
	assert.Equal(t, 3, calls)
}

func TestWithNow(t *testing.T) {
	at := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	assert.Equal(t, at, WithNow(func() time.Time { return at }).Now())
	assert.Equal(t, System{}, WithNow(nil))
	assert.NoError(t, WithNow(time.Now).Sleep(context.Background(), 0))
}
