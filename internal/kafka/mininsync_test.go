package kafka

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
)

// MinInsync reads each topic's min.insync.replicas (the chaos pre-kill
// check needs it) and leaves out topics the cluster does not know.
func TestMinInsync(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(3))
	require.NoError(t, err)
	defer c.Close()
	cl, err := NewClient(ConnOptions{BootstrapServers: strings.Join(c.ListenAddrs(), ",")}, "test")
	require.NoError(t, err)
	defer cl.Close()
	ctx := context.Background()
	two := "2"
	require.NoError(t, CreateTopic(ctx, cl, "strict", [][]int32{{0, 1}}, map[string]*string{"min.insync.replicas": &two}))
	require.NoError(t, CreateTopic(ctx, cl, "plain", [][]int32{{0, 1}}, nil))
	got, def, err := MinInsync(ctx, cl, []string{"strict", "plain", "missing"}, -1)
	require.NoError(t, err)
	assert.Equal(t, 2, got["strict"])
	assert.NotContains(t, got, "missing")
	assert.Equal(t, 1, got["plain"], "Kafka's default")
	assert.Zero(t, def, "no broker asked")
	_, def, err = MinInsync(ctx, cl, nil, 0)
	require.NoError(t, err)
	assert.Equal(t, 1, def, "broker 0's default")
}
