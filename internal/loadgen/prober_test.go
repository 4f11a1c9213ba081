package loadgen

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/kplan-dev/kplan/internal/kafka"
)

func TestProber(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(3), kfake.SeedTopics(5, "probe"))
	require.NoError(t, err)
	defer c.Close()
	conn := kafka.ConnOptions{BootstrapServers: strings.Join(c.ListenAddrs(), ","), Timeout: 5 * time.Second}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	p, err := NewProber(conn, "test", "probe", 5, time.Second)
	require.NoError(t, err)
	defer p.Close()
	require.NoError(t, p.Warm(ctx))
	since := time.Now()
	per, err := p.Probe(ctx, since)
	require.NoError(t, err)
	require.Len(t, per, 5)
	for i, d := range per {
		assert.GreaterOrEqual(t, d, time.Duration(0), "partition %d acknowledged", i)
	}
}

func TestProbeCancelled(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "probe"))
	require.NoError(t, err)
	conn := kafka.ConnOptions{BootstrapServers: strings.Join(c.ListenAddrs(), ","), Timeout: time.Second}
	p, err := NewProber(conn, "test", "probe", 2, 200*time.Millisecond)
	require.NoError(t, err)
	defer p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, p.Warm(ctx))
	c.Close() // no broker left: nothing is acknowledged
	pctx, pcancel := context.WithTimeout(context.Background(), time.Second)
	defer pcancel()
	per, err := p.Probe(pctx, time.Now())
	require.Error(t, err)
	assert.ErrorContains(t, err, "2 of 2 partitions of probe did not accept a write")
	assert.Equal(t, []time.Duration{-1, -1}, per)
}
