package kafka

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
)

func TestScratchAdmin(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(3), kfake.SeedTopics(5, "probe"))
	require.NoError(t, err)
	defer c.Close()
	conn := ConnOptions{BootstrapServers: strings.Join(c.ListenAddrs(), ","), Timeout: 5 * time.Second}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	a, err := NewScratchAdmin(conn, "test")
	require.NoError(t, err)
	defer a.Close()
	parts, ok, err := a.TopicLeadership(ctx, "probe")
	require.NoError(t, err)
	require.True(t, ok)
	require.Len(t, parts, 5)
	for _, pl := range parts {
		assert.GreaterOrEqual(t, pl.Leader, int32(0))
	}
	_, ok, err = a.TopicLeadership(ctx, "absent")
	require.NoError(t, err)
	assert.False(t, ok)
	require.NoError(t, a.DeleteTopic(ctx, "probe"))
	require.NoError(t, a.DeleteTopic(ctx, "absent"), "deleting a topic that is not there is no error")
	_, ok, err = a.TopicLeadership(ctx, "probe")
	require.NoError(t, err)
	assert.False(t, ok)
}

func TestLedInSync(t *testing.T) {
	tests := []struct {
		name  string
		parts []PartitionLeadership
		ok    bool
		why   string
	}{
		{"led and in sync", []PartitionLeadership{{Leader: 2, Replicas: []int32{2, 1}, ISR: []int32{1, 2}}}, true, ""},
		{"led elsewhere", []PartitionLeadership{{Leader: 2, Replicas: []int32{2, 1}, ISR: []int32{2, 1}}, {Leader: 1, Replicas: []int32{2, 1}, ISR: []int32{2, 1}}}, false, "partition 1 is led by 1"},
		{"short ISR", []PartitionLeadership{{Leader: 2, Replicas: []int32{2, 3}, ISR: []int32{2}}}, false, "partition 0 has in-sync replicas [2] of [2 3]"},
		{"no leader", []PartitionLeadership{{Leader: -1, Replicas: []int32{2, 3}, ISR: []int32{3}}}, false, "partition 0 is led by -1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ok, why := LedInSync(tc.parts, 2)
			assert.Equal(t, tc.ok, ok)
			assert.Equal(t, tc.why, why)
		})
	}
}
