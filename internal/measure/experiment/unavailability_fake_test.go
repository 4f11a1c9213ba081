package experiment

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/chaos/embedded"
	"github.com/kplan-dev/kplan/internal/kafka"
)

// TestUnavailabilityRunOnEmbedded runs the workflow on the embedded (kfake)
// cluster, whose kills are simulated: every count gets its topic and its
// runs in order and the victim comes back. The figures are not checked.
// Keep, because the embedded cluster's simulated kills do not survive a
// deleted topic (the deletion is the lab tests' to check).
func TestUnavailabilityRunOnEmbedded(t *testing.T) {
	c, err := embedded.NewCluster(3, "test")
	require.NoError(t, err)
	conn := kafka.ConnOptions{BootstrapServers: strings.Join(c.Seeds(), ","), Timeout: 5 * time.Second}
	admin, err := kafka.NewScratchAdmin(conn, "test")
	require.NoError(t, err)
	defer admin.Close()
	defer c.Close()
	var lines []string
	a := &Unavailability{Cluster: c, Admin: admin, Conn: conn, Version: "test",
		Now:    func() time.Time { return time.Unix(1_700_000_000, 0) },
		Counts: []int{1, 4}, Repeat: 2, ReplicationFactor: 2, Broker: 2, Keep: true, Topic: "kplan-unavail",
		FailoverTimeout: 20 * time.Second, RequestTimeout: 2 * time.Second,
		Progress: func(format string, args ...any) { lines = append(lines, fmt.Sprintf(format, args...)) }}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := a.Run(ctx)
	require.NoError(t, err, "progress: %q", lines)
	require.NotNil(t, res)
	assert.False(t, res.Partial)
	require.Len(t, res.Runs, 4)
	for i, want := range []struct{ n, rep int }{{1, 1}, {1, 2}, {4, 1}, {4, 2}} {
		assert.Equal(t, want.n, res.Runs[i].Partitions, "run %d", i)
		assert.Equal(t, want.rep, res.Runs[i].Repeat, "run %d", i)
	}
	assert.Equal(t, int32(2), res.Victim)
	assert.Contains(t, lines[len(lines)-2], "kept topics kplan-unavail-1-", "the cleanup reports the kept topics")
	assert.Contains(t, lines[len(lines)-1], "back in every ISR")
	parts, ok, err := admin.TopicLeadership(ctx, "kplan-unavail-4-"+strconv.FormatInt(1_700_000_000, 36))
	require.NoError(t, err)
	require.True(t, ok)
	assert.Len(t, parts, 4, "count 4's topic has 4 partitions")
}
