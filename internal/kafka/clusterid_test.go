package kafka

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
)

func TestWaitBrokersChecksClusterID(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(3))
	require.NoError(t, err)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	all := []int32{0, 1, 2}

	require.NoError(t, WaitBrokers(ctx, "kfake", c.ListenAddrs(), all), "kfake's cluster id is kfake")
	require.NoError(t, WaitBrokers(ctx, "", c.ListenAddrs(), all), "no id: any cluster")

	err = WaitBrokers(ctx, "MkU3OEVBNTcwNTJENDM2Qk", c.ListenAddrs(), all)
	require.Error(t, err)
	var fe *ForeignClusterError
	require.True(t, errors.As(err, &fe), "%v", err)
	assert.True(t, fe.ForeignCluster())
	assert.Equal(t, "kfake", fe.Got)
	assert.Equal(t, "MkU3OEVBNTcwNTJENDM2Qk", fe.Want)
	assert.Equal(t, int32(0), fe.Broker)
	assert.NotEmpty(t, fe.Addr)
	assert.Contains(t, err.Error(), "belongs to cluster kfake, not MkU3OEVBNTcwNTJENDM2Qk")
}
