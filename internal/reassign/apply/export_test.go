package apply

import (
	"context"
	"time"
)

// StartGuardForTest starts g as Execute does, on brokers from rate, and
// returns the rate it sets first.
func StartGuardForTest(ctx context.Context, g *Guard, now time.Time, brokers []int32, rate int64) (int64, error) {
	return g.begin(ctx, now, brokers, rate)
}
