//go:build integration

package kafka_test

import (
	"context"
	"encoding/binary"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kplan-dev/kplan/internal/kafka"
	"github.com/kplan-dev/kplan/internal/labtest"
	"github.com/kplan-dev/kplan/internal/topology"
)

func TestMain(m *testing.M) { os.Exit(labtest.Main(m)) }

// produce sends n records numbered from first with acks=all and
// idempotence, and returns the numbers Kafka acknowledged.
func produce(t *testing.T, cl *kgo.Client, topic string, first, n int) []uint64 {
	t.Helper()
	var mu sync.Mutex
	var acked []uint64
	var wg sync.WaitGroup
	for i := first; i < first+n; i++ {
		v := make([]byte, 100)
		binary.BigEndian.PutUint64(v, uint64(i))
		wg.Add(1)
		cl.Produce(context.Background(), &kgo.Record{Topic: topic, Value: v}, func(r *kgo.Record, err error) {
			defer wg.Done()
			if err == nil {
				mu.Lock()
				acked = append(acked, binary.BigEndian.Uint64(r.Value))
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return acked
}

func snapshot(t *testing.T, cl *kgo.Client, topic string) *topology.Cluster {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := kafka.Snapshot(ctx, cl, func(s string) bool { return s == topic })
	require.NoError(t, err)
	return c
}

// TestFailoverLosesNothing is issue 3's acceptance run on real brokers.
func TestFailoverLosesNothing(t *testing.T) {
	lab := labtest.Shared(t)
	const topic = "failover"
	admin, err := kafka.NewClient(kafka.ConnOptions{BootstrapServers: lab.Bootstrap}, "test")
	require.NoError(t, err)
	defer admin.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	require.NoError(t, kafka.CreateTopic(ctx, admin, topic, [][]int32{{1, 2}, {2, 3}, {3, 1}}, nil))

	prod, err := kafka.NewClient(kafka.ConnOptions{BootstrapServers: lab.Bootstrap}, "test",
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()),
		kgo.RecordDeliveryTimeout(60*time.Second))
	require.NoError(t, err)
	defer prod.Close()

	acked := produce(t, prod, topic, 0, 10_000)
	require.Len(t, acked, 10_000)

	c := snapshot(t, admin, topic)
	victim := c.Partitions[0].Leader
	require.NotEqual(t, topology.NoLeader, victim)
	require.NoError(t, lab.State.Kill(victim))
	killedAt := time.Now()

	// Every partition the victim led elects a surviving replica and the
	// victim leaves every ISR; the wait is bounded by ctx only (a cluster
	// that never recovers fails there), and how long it took is logged, not
	// asserted.
	for {
		c = snapshot(t, admin, topic)
		ok := true
		for _, p := range c.Partitions {
			if p.Leader == victim || p.Leader < 0 || slices.Contains(p.ISR, victim) {
				ok = false
			}
		}
		if ok {
			break
		}
		require.NoError(t, ctx.Err(), "no live leader for every partition: %+v", c.Partitions)
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("every partition had a live leader and an ISR without broker-%d %v after the kill", victim, time.Since(killedAt).Round(time.Millisecond))
	for _, p := range c.Partitions {
		assert.Contains(t, p.Replicas, p.Leader, "%s: the new leader is one of its replicas", p.Key())
		assert.Contains(t, p.ISR, p.Leader, "%s: the new leader was in sync", p.Key())
	}

	acked = append(acked, produce(t, prod, topic, 10_000, 5_000)...)
	require.Len(t, acked, 15_000, "with RF 2 and one broker down, acks=all still succeeds (min.insync.replicas=1)")

	require.NoError(t, lab.State.Restart(ctx, victim, kafka.WaitBrokers))
	for {
		c = snapshot(t, admin, topic)
		ok := true
		for _, p := range c.Partitions {
			if len(p.ISR) != 2 {
				ok = false
			}
		}
		if ok {
			break
		}
		require.NoError(t, ctx.Err(), "ISR never back to 2: %+v", c.Partitions)
		time.Sleep(200 * time.Millisecond)
	}

	cons, err := kafka.NewClient(kafka.ConnOptions{BootstrapServers: lab.Bootstrap}, "test",
		kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	require.NoError(t, err)
	defer cons.Close()
	seen := map[uint64]int{}
	total := 0
	for total < len(acked) {
		fs := cons.PollFetches(ctx)
		require.NoError(t, ctx.Err(), "consumed %d of %d", total, len(acked))
		fs.EachRecord(func(r *kgo.Record) {
			seen[binary.BigEndian.Uint64(r.Value)]++
			total++
		})
	}
	lost, dups := 0, 0
	for _, a := range acked {
		if seen[a] == 0 {
			lost++
		}
	}
	for _, n := range seen {
		if n > 1 {
			dups++
		}
	}
	assert.Zero(t, lost, "acknowledged records lost")
	assert.Zero(t, dups, "duplicated records")
	assert.Equal(t, len(acked), total)
}

func TestSnapshotOfLiveCluster(t *testing.T) {
	lab := labtest.Shared(t)
	cl, err := kafka.NewClient(kafka.ConnOptions{BootstrapServers: lab.Bootstrap}, "test")
	require.NoError(t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, kafka.CreateTopic(ctx, cl, "snap", [][]int32{{1, 2, 3}, {3, 2, 1}}, nil))
	require.Eventually(t, func() bool {
		c, err := kafka.Snapshot(ctx, cl, func(s string) bool { return s == "snap" })
		return err == nil && len(c.Partitions) == 2 && c.Partitions[1].Leader == 3 && len(c.Partitions[0].ISR) == 3
	}, 20*time.Second, 200*time.Millisecond)
	c, err := kafka.Snapshot(ctx, cl, func(s string) bool { return s == "snap" })
	require.NoError(t, err)
	assert.True(t, c.Live)
	assert.Equal(t, []int32{3, 2, 1}, c.Partitions[1].Replicas, "assignment order kept")
	require.Len(t, c.Brokers, 3)
	assert.True(t, c.HasRacks())
	assert.True(t, strings.HasPrefix(c.Brokers[0].Rack, "rack-"))

	err = kafka.CreateTopic(ctx, cl, "snap", [][]int32{{1}}, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "TOPIC_ALREADY_EXISTS")
}

// TestUnreachableClusterFailsFast: with nothing listening, Snapshot gives
// up on the client's own timeout (the caller's context has no deadline) and
// says why; the time it took is logged, not asserted.
func TestUnreachableClusterFailsFast(t *testing.T) {
	cl, err := kafka.NewClient(kafka.ConnOptions{BootstrapServers: "127.0.0.1:1", Timeout: 2 * time.Second}, "test")
	require.NoError(t, err)
	defer cl.Close()
	start := time.Now()
	_, err = kafka.Snapshot(context.Background(), cl, nil)
	t.Logf("Snapshot of an unreachable cluster returned after %v: %v", time.Since(start).Round(time.Millisecond), err)
	require.Error(t, err)
	assert.ErrorIs(t, err, syscall.ECONNREFUSED, "the dial's error is kept")
}
