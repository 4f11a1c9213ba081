//go:build integration

package chaos

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestKillBroker3Skew is the skew half of the kill acceptance on the
// embedded cluster, with enough records to be stable (5,000 per producer
// and phase, about 1,700 per broker before the kill): before it every
// partitioner spreads records evenly over brokers 1, 2, 3; after broker 3's
// partition moved to broker 1, roundrobin gives broker 1 two shares while
// node and sqf keep brokers even.
func TestKillBroker3Skew(t *testing.T) {
	res := runEmbedded(t, func(cfg *Config) {
		cfg.Warmup = time.Second
		cfg.Records = 5000
		cfg.Rate = 100_000 // 1,000 records/s per producer
	})
	require.Len(t, res.Partitioners, 4)
	for _, p := range res.Partitioners {
		before, after := p.Phases["before"], p.Phases["after"]
		require.NotNil(t, before, p.Name)
		require.NotNil(t, after, p.Name)
		require.NotNil(t, before.MaxOverMean, p.Name)
		require.NotNil(t, after.MaxOverMean, p.Name)
		assert.Zero(t, p.Lost, p.Name)
		assert.InDelta(t, float64(before.Acked), float64(before.Batches)*before.RecordsPerBatch, 0.2*float64(before.Acked), p.Name)
		switch p.Name {
		case "roundrobin", "node", "sqf":
			assert.LessOrEqual(t, *before.MaxOverMean, 1.05, "%s before", p.Name)
		}
		switch p.Name {
		case "roundrobin":
			assert.GreaterOrEqual(t, *after.MaxOverMean, 1.25, "roundrobin after")
		case "node", "sqf":
			assert.LessOrEqual(t, *after.MaxOverMean, 1.05, "%s after", p.Name)
		}
	}
}
