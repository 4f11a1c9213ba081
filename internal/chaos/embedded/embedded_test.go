package embedded

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kplan-dev/kplan/internal/partitioner"
)

// apiVersions sends an ApiVersions v0 request on conn and reads the answer.
func apiVersions(conn net.Conn, correlation int32) error {
	req := make([]byte, 4+2+2+4+2)
	binary.BigEndian.PutUint32(req[0:], uint32(len(req)-4))
	binary.BigEndian.PutUint16(req[4:], 18) // ApiVersions
	binary.BigEndian.PutUint16(req[6:], 0)
	binary.BigEndian.PutUint32(req[8:], uint32(correlation))
	binary.BigEndian.PutUint16(req[12:], 0xffff) // null client id
	if err := conn.SetDeadline(time.Now().Add(5 * time.Second)); err != nil {
		return err
	}
	if _, err := conn.Write(req); err != nil {
		return err
	}
	var size [4]byte
	if _, err := io.ReadFull(conn, size[:]); err != nil {
		return err
	}
	body := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(conn, body); err != nil {
		return err
	}
	if got := int32(binary.BigEndian.Uint32(body)); got != correlation {
		return fmt.Errorf("correlation %d, want %d", got, correlation)
	}
	return nil
}

func TestNewEmbeddedValidation(t *testing.T) {
	_, err := New(0, "test")
	require.Error(t, err)
	e, err := New(2, "test")
	require.NoError(t, err)
	defer e.Close()
	ctx := context.Background()
	require.ErrorContains(t, e.CreateTopic(ctx, "t", [][]int32{{1, 3}}), "replica 3 is unknown")
	require.ErrorContains(t, e.CreateTopic(ctx, "t", [][]int32{{1, 1}}), "repeated")
	require.ErrorContains(t, e.CreateTopic(ctx, "t", [][]int32{{1, 2}, {1}}), "has 1 replicas")
	require.ErrorContains(t, e.CreateTopic(ctx, "t", nil), "empty")
	require.NoError(t, e.CreateTopic(ctx, "t", [][]int32{{2}, {1}}))
	require.ErrorContains(t, e.CreateTopic(ctx, "t", [][]int32{{2}}), "already exists")
	require.ErrorContains(t, e.Kill(9), "no such broker")
	require.ErrorContains(t, e.Kill(2), "no live replica", "partition 0 lives on broker 2 only")
	assert.Equal(t, []int32{1, 2}, e.Brokers(), "a refused kill changes nothing")
	assert.Equal(t, int32(2), e.Leader("t", 0))
}

// TestKillFollowsKafkaElection: brokers 1..3, a topic laid out like the
// thesis's (leaders 1, 2, 3; broker 3's partition replicated on broker 1) and
// a second topic. A franz-go producer with acks=all (idempotent) runs across
// the kill of broker 3: the partitions broker 3 led move to their next
// replica, every other leader stays, a connection opened to broker 3 before
// the kill is refused, and no acknowledged record is lost.
func TestKillFollowsKafkaElection(t *testing.T) {
	if testing.Short() {
		t.Skip("in-process cluster test")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	e, err := New(3, "test")
	require.NoError(t, err)
	defer e.Close()
	assert.Equal(t, []int32{1, 2, 3}, e.Brokers())

	chaosAssign := [][]int32{{1, 2}, {2, 3}, {3, 1}}
	otherAssign := [][]int32{{1, 2, 3}, {2, 3, 1}, {3, 1, 2}, {1, 3, 2}, {2, 1, 3}, {3, 2, 1}}
	require.NoError(t, e.CreateTopic(ctx, "chaos", chaosAssign))
	require.NoError(t, e.CreateTopic(ctx, "other", otherAssign))
	for p, r := range chaosAssign {
		require.Equal(t, r[0], e.Leader("chaos", int32(p)))
	}
	for p, r := range otherAssign {
		require.Equal(t, r[0], e.Leader("other", int32(p)))
	}

	conn, err := net.Dial("tcp", e.Addr(3))
	require.NoError(t, err)
	defer func() { _ = conn.Close() }()
	require.NoError(t, apiVersions(conn, 1), "broker 3 answers before the kill")

	kopts, bind, err := partitioner.ClientOpts("node")
	require.NoError(t, err)
	cl, err := kgo.NewClient(append(kopts,
		kgo.SeedBrokers(e.Addrs()...),
		kgo.DefaultProduceTopic("chaos"),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RetryBackoffFn(func(int) time.Duration { return 20 * time.Millisecond }),
		// franz-go refreshes metadata at most every MetadataMinAge (5 s by
		// default), even after a broker's connection fails: that is how long
		// a producer keeps routing to a dead leader's partitions.
		kgo.MetadataMinAge(100*time.Millisecond),
	)...)
	require.NoError(t, err)
	defer cl.Close()
	bind(cl)

	var (
		mu     sync.Mutex
		acked  = map[string]bool{}
		failed []error
		sent   int
	)
	ackedCount := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(acked)
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			key := fmt.Sprintf("seq-%08d", i)
			mu.Lock()
			sent++
			mu.Unlock()
			cl.Produce(ctx, &kgo.Record{Key: []byte(key), Value: []byte("v")}, func(_ *kgo.Record, err error) {
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					failed = append(failed, err)
					return
				}
				acked[key] = true
			})
			if i%50 == 49 {
				time.Sleep(time.Millisecond) // keep the buffer small
			}
		}
	}()
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		for !cond() {
			select {
			case <-ctx.Done():
				t.Fatalf("timed out waiting for %s", what)
			case <-time.After(5 * time.Millisecond):
			}
		}
	}
	waitFor("records before the kill", func() bool { return ackedCount() >= 2000 })

	require.NoError(t, e.Kill(3))
	killTime := time.Now()
	killedAt := ackedCount()
	assert.Equal(t, []int32{1, 2}, e.Brokers())
	for p, r := range chaosAssign {
		want := r[0]
		if want == 3 {
			want = r[1]
		}
		assert.Equal(t, want, e.Leader("chaos", int32(p)), "chaos/%d", p)
	}
	for p, r := range otherAssign {
		want := r[0]
		if want == 3 {
			want = r[1]
		}
		assert.Equal(t, want, e.Leader("other", int32(p)), "other/%d", p)
	}
	assert.Error(t, apiVersions(conn, 2), "broker 3 refuses requests on a connection opened before the kill")
	_, err = net.DialTimeout("tcp", e.Addr(3), time.Second)
	assert.Error(t, err, "broker 3 no longer listens")

	waitFor("the first acknowledgement after the kill", func() bool { return ackedCount() > killedAt })
	firstAck := time.Since(killTime)
	waitFor("the producer to see broker 1 lead chaos/2", func() bool {
		l, _, err := cl.PartitionLeader("chaos", 2)
		return err == nil && l == 1
	})
	t.Logf("producer saw the new leader of chaos/2 %v after the kill", time.Since(killTime).Round(time.Millisecond))
	waitFor("records after the kill", func() bool { return ackedCount() >= killedAt+2000 })
	close(stop)
	<-done
	require.NoError(t, cl.Flush(ctx))
	l, _, err := cl.PartitionLeader("chaos", 2)
	require.NoError(t, err)
	assert.Equal(t, int32(1), l, "the producer follows the new leader")

	mu.Lock()
	assert.Empty(t, failed, "no produce failed")
	assert.Equal(t, sent, len(acked), "every record sent was acknowledged")
	want := make(map[string]bool, len(acked))
	for k := range acked {
		want[k] = true
	}
	mu.Unlock()

	cons, err := kgo.NewClient(
		kgo.SeedBrokers(e.Addrs()...),
		kgo.ConsumeTopics("chaos"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
	)
	require.NoError(t, err)
	defer cons.Close()
	seen := map[string]int{}
	for len(seen) < len(want) && ctx.Err() == nil {
		fs := cons.PollFetches(ctx)
		fs.EachRecord(func(r *kgo.Record) { seen[string(r.Key)]++ })
	}
	lost, dups := 0, 0
	for k := range want {
		if seen[k] == 0 {
			lost++
		}
	}
	for _, n := range seen {
		if n > 1 {
			dups++
		}
	}
	t.Logf("acked %d (%d before the kill), lost %d, duplicates %d; first ack %v after the kill", len(want), killedAt, lost, dups, firstAck.Round(time.Millisecond))
	assert.Zero(t, lost, "acknowledged records lost")
	assert.Zero(t, dups, "duplicates (the producer is idempotent)")

	// Restart: broker 3 is back on its address and leads nothing yet.
	require.ErrorContains(t, e.Restart(2), "not killed")
	require.NoError(t, e.Restart(3))
	assert.Equal(t, []int32{1, 2, 3}, e.Brokers())
	for p, want := range []int32{1, 2, 1} {
		assert.Equal(t, want, e.Leader("chaos", int32(p)), "chaos/%d after the restart", p)
	}
	conn2, err := net.Dial("tcp", e.Addr(3))
	require.NoError(t, err)
	defer func() { _ = conn2.Close() }()
	require.NoError(t, apiVersions(conn2, 3), "broker 3 answers after the restart")
	require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Key: []byte("after-restart")}).FirstErr())
}
