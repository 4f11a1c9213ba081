package clock

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestSleep(t *testing.T) {
	assert.NoError(t, Sleep(context.Background(), 0))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	// An ended context wins over any wait, however long.
	assert.ErrorIs(t, System{}.Sleep(ctx, 1<<62), context.Canceled)
	assert.False(t, System{}.Now().IsZero())
}
