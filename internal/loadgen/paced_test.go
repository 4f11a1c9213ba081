package loadgen

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kplan-dev/kplan/internal/kafka"
)

// TestWriteAndConsumeGroup: the paced writer's records arrive stamped and
// acknowledged, and a group reading them commits its position (on kfake:
// plumbing only, no rate is judged).
func TestWriteAndConsumeGroup(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "w"))
	require.NoError(t, err)
	defer c.Close()
	conn := kafka.ConnOptions{BootstrapServers: c.ListenAddrs()[0]}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	acked, err := Write(ctx, conn, "test", WriteSpec{Topic: "w", Rate: 200, RecordSize: 64, Run: 7})
	require.NoError(t, err)
	assert.Positive(t, acked)

	cctx, ccancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer ccancel()
	read, err := ConsumeGroup(cctx, conn, "test", "readers", []string{"w"}, 100*time.Millisecond)
	require.NoError(t, err)
	assert.Equal(t, acked, read, "the group read every record written")

	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	require.NoError(t, err)
	defer cl.Close()
	offs, err := kadm.NewClient(cl).FetchOffsets(context.Background(), "readers")
	require.NoError(t, err)
	var committed int64
	offs.Each(func(o kadm.OffsetResponse) { committed += o.At })
	assert.Equal(t, acked, committed, "the group committed what it read")

	_, err = Write(context.Background(), conn, "test", WriteSpec{Topic: "w", Rate: 0, RecordSize: 64})
	assert.ErrorContains(t, err, "want a positive rate")
}
