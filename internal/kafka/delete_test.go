package kafka

import (
	"context"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// stillListed makes c's brokers keep listing topic in metadata answers
// that ask for it, for the first n such answers (n < 0: always), as a
// broker whose metadata cache has not caught up with the deletion yet. It
// returns the number of such requests seen.
func stillListed(c *kfake.Cluster, topic string, n int64) *atomic.Int64 {
	var seen atomic.Int64
	c.ControlKey(int16(kmsg.Metadata), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		req := kreq.(*kmsg.MetadataRequest)
		if !slices.ContainsFunc(req.Topics, func(t kmsg.MetadataRequestTopic) bool { return t.Topic != nil && *t.Topic == topic }) {
			return nil, nil, false
		}
		if k := seen.Add(1); n >= 0 && k > n {
			return nil, nil, false
		}
		resp := kreq.ResponseKind().(*kmsg.MetadataResponse)
		rt := kmsg.NewMetadataResponseTopic()
		rt.Topic = kmsg.StringPtr(topic)
		rp := kmsg.NewMetadataResponseTopicPartition()
		rp.Leader = 0
		rt.Partitions = append(rt.Partitions, rp)
		resp.Topics = append(resp.Topics, rt)
		return resp, nil, true
	})
	return &seen
}

func deleteCluster(t *testing.T, topics ...string) (*kfake.Cluster, *kgo.Client) {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(3), kfake.SeedTopics(2, topics...))
	require.NoError(t, err)
	t.Cleanup(c.Close)
	cl, err := NewClient(ConnOptions{BootstrapServers: strings.Join(c.ListenAddrs(), ","), Timeout: 5 * time.Second}, "test")
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	return c, cl
}

// listed reports which of topics the cluster's metadata still lists.
func listed(t *testing.T, cl *kgo.Client, topics ...string) []string {
	t.Helper()
	md, err := kadm.NewClient(cl).Metadata(context.Background(), topics...)
	require.NoError(t, err)
	var out []string
	for _, d := range md.Topics.Sorted() {
		if d.Err == nil {
			out = append(out, d.Topic)
		}
	}
	return out
}

func TestDeleteTopicsAndWait(t *testing.T) {
	tests := []struct {
		name    string
		seed    []string
		delete  []string
		lag     int64 // metadata answers that still list "b"; -1: never gone
		timeout time.Duration
		gone    []string
		errHas  []string
	}{
		{name: "deleted and gone", seed: []string{"a", "b"}, delete: []string{"b", "a", "b"}, gone: []string{"a", "b"}},
		{name: "a topic that is not there counts as deleted", seed: []string{"a"}, delete: []string{"a", "absent"}, gone: []string{"a", "absent"}},
		{name: "nothing to delete", seed: []string{"a"}, delete: nil, gone: nil},
		{name: "waits while a broker still lists it", seed: []string{"a", "b"}, delete: []string{"a", "b"}, lag: 4, gone: []string{"a", "b"}},
		{name: "says so when the cluster never agrees", seed: []string{"a", "b"}, delete: []string{"a", "b"}, lag: -1, timeout: 500 * time.Millisecond,
			gone: []string{"a"}, errHas: []string{"topics b deleted but still listed by the cluster", "deadline exceeded"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, cl := deleteCluster(t, tt.seed...)
			var seen *atomic.Int64
			if tt.lag != 0 {
				seen = stillListed(c, "b", tt.lag)
			}
			timeout := tt.timeout
			if timeout == 0 {
				timeout = 20 * time.Second
			}
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()
			gone, err := DeleteTopicsAndWait(ctx, cl, tt.delete...)
			assert.Equal(t, tt.gone, gone)
			if len(tt.errHas) == 0 {
				require.NoError(t, err)
			} else {
				require.Error(t, err)
				for _, s := range tt.errHas {
					assert.Contains(t, err.Error(), s)
				}
			}
			if tt.lag > 0 {
				assert.Greater(t, seen.Load(), tt.lag, "it asked again until no broker listed the topic")
			}
			if len(tt.gone) > 0 && tt.lag >= 0 {
				assert.Empty(t, listed(t, cl, tt.gone...), "what it says is gone is gone")
			}
		})
	}
}

func TestDeleteTopicsAndWaitRefused(t *testing.T) {
	c, cl := deleteCluster(t, "a", "b")
	c.ControlKey(int16(kmsg.DeleteTopics), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		resp := kreq.ResponseKind().(*kmsg.DeleteTopicsResponse)
		st := kmsg.NewDeleteTopicsResponseTopic()
		st.Topic = kmsg.StringPtr("b")
		st.ErrorCode = kerr.TopicAuthorizationFailed.Code
		resp.Topics = append(resp.Topics, st)
		return resp, nil, true
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	gone, err := DeleteTopicsAndWait(ctx, cl, "b")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "delete topic b")
	assert.ErrorIs(t, err, kerr.TopicAuthorizationFailed)
	assert.Empty(t, gone)
	assert.Equal(t, []string{"b"}, listed(t, cl, "a", "b")[1:], "a refused topic stays")
}
