package apply

import (
	"context"
	"time"
)

// StartGuardForTest starts g as Execute does, on brokers at rate.
func StartGuardForTest(ctx context.Context, g *Guard, now time.Time, brokers []int32, rate int64) error {
	return g.begin(ctx, now, brokers, rate)
}
