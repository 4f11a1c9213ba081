package kafkatest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/kplan-dev/kplan/internal/kafka"
)

// TestFillPartitions: the fixture cluster runs, and FillPartitions writes
// the records it is asked for to each partition named.
func TestFillPartitions(t *testing.T) {
	addrs, stop, err := FakeCluster(1)
	require.NoError(t, err)
	defer stop()
	conn := kafka.ConnOptions{BootstrapServers: strings.Join(addrs, ","), Timeout: 5 * time.Second}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := kafka.NewClient(conn, "test")
	require.NoError(t, err)
	defer cl.Close()
	adm := kadm.NewClient(cl)
	_, err = adm.CreateTopic(ctx, 3, 1, nil, "t")
	require.NoError(t, err)
	require.NoError(t, kafka.WaitLeaders(ctx, cl, 10*time.Second, "t"))
	require.NoError(t, FillPartitions(ctx, conn, "t", []int32{0, 2}, 4, 100))
	ends, err := adm.ListEndOffsets(ctx, "t")
	require.NoError(t, err)
	for p, want := range map[int32]int64{0: 4, 1: 0, 2: 4} {
		o, ok := ends.Lookup("t", p)
		require.True(t, ok)
		assert.Equal(t, want, o.Offset, "partition %d", p)
	}
}
