//go:build integration

package chaos

import (
	"context"
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	chaoslab "github.com/kplan-dev/kplan/internal/chaos/lab"
	"github.com/kplan-dev/kplan/internal/kafka"
	"github.com/kplan-dev/kplan/internal/labtest"
	"github.com/kplan-dev/kplan/internal/topology"
)

// The checker is trusted once it caught a real anomaly (Jepsen's rule).
// These tests make the lab really lose and really duplicate acknowledged
// records, then read the topic back independently of kplan, from offset 0,
// and count kplan's sequence numbers per producer: kplan's lost and
// duplicate counts must equal what that read finds missing and repeated.
//
// How the lab misbehaves: one partition on brokers 1 (leader) and 2, the
// follower's replication throttled far below the producer's rate, so it
// lags behind the leader (still in the ISR: replica.lag.time.max.ms is 30 s
// and broker 1 is SIGKILLed about 3 s after the producer started). Then:
//   - acks=1: broker 1 acknowledged records broker 2 never fetched; broker 2
//     becomes leader, broker 1 truncates to its log when it comes back.
//     Those acknowledged records are lost.
//   - acks=all without idempotence: broker 2 fetched records whose produce
//     requests broker 1 had not yet answered (the high watermark moves one
//     follower fetch later); the producer retries them on broker 2, which
//     writes them a second time.

// anomalyRate and anomalyThrottle are the producer's rate and the follower's
// replication throttle, bytes/s.
const (
	anomalyRate     = 400_000
	anomalyThrottle = 40_000
)

func TestLossCheckCatchesLoss(t *testing.T) {
	res, read := runAnomaly(t, "anomaly-loss", AcksLeader, false)
	p := res.Partitioners[0]
	t.Logf("kplan: sent %d acked %d lost %d duplicates %d never acked %d; read back: %d distinct, %d extra copies",
		p.Sent, p.Acked, p.Lost, p.Duplicates, p.NeverAcked, read.distinct, read.extra)
	require.Zero(t, p.NeverAcked, "every record was answered, so the read back's missing records are acknowledged ones")
	missing := p.Sent - read.distinct
	assert.Positive(t, missing, "the lab lost acknowledged records (acks=1, lagging follower, leader killed)")
	assert.Equal(t, missing, p.Lost, "kplan's lost count equals the records missing from the topic")
	assert.Equal(t, read.extra, p.Duplicates, "kplan's duplicate count equals the extra copies in the topic")
}

func TestDuplicateCheckCatchesDuplicates(t *testing.T) {
	res, read := runAnomaly(t, "anomaly-dup", AcksAll, true)
	p := res.Partitioners[0]
	t.Logf("kplan: sent %d acked %d lost %d duplicates %d never acked %d; read back: %d distinct, %d extra copies",
		p.Sent, p.Acked, p.Lost, p.Duplicates, p.NeverAcked, read.distinct, read.extra)
	require.Zero(t, p.NeverAcked, "every record was answered")
	assert.Positive(t, read.extra, "the lab duplicated records (acks=all without idempotence, retries through the kill)")
	assert.Equal(t, read.extra, p.Duplicates, "kplan's duplicate count equals the extra copies in the topic")
	assert.Equal(t, p.Sent-read.distinct, p.Lost, "kplan's lost count equals the records missing from the topic")
	assert.Zero(t, p.Lost, "acks=all loses nothing while an in-sync replica survives")
}

// readBack is what an independent read of the topic found.
type readBack struct {
	distinct int64 // distinct sequence numbers of producer 0
	extra    int64 // copies beyond the first
}

// runAnomaly runs one producer (roundrobin) on a fresh one-partition topic,
// leader broker 1 and follower broker 2 throttled, kills broker 1 after the
// before phase, brings the lab back whole and reads the topic back.
func runAnomaly(t *testing.T, prefix string, acks Acks, noIdem bool) (*Result, readBack) {
	lab := labtest.Shared(t)
	c, err := chaoslab.Open(lab.State, kafka.ConnOptions{}, "test")
	require.NoError(t, err)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	conn := kafka.ConnOptions{BootstrapServers: lab.Bootstrap}

	cfg := Defaults()
	cfg.Partitioners = []string{"roundrobin"}
	cfg.Topic = fmt.Sprintf("%s-%d", prefix, time.Now().UnixNano())
	topic := TopicFor(cfg.Topic, "roundrobin")
	cfg.Assignment = [][]int32{{1, 2}}
	cfg.Target = Target{Kind: TargetBroker, Broker: 1}
	cfg.Acks = acks
	cfg.NoIdempotence = noIdem
	cfg.Rate = anomalyRate
	cfg.RecordSize = 1000
	cfg.Warmup = time.Second
	cfg.Phase = 2 * time.Second
	// The follower lags behind on purpose: the pre-kill safety check would
	// refuse.
	cfg.AllowUnavailable = true

	adm := kafka.NewAdmin(conn, "test")
	defer adm.Close()
	require.NoError(t, c.CreateTopic(ctx, topic, cfg.Assignment))
	throttle := topology.Throttle{Rate: anomalyThrottle, Brokers: []int32{1, 2},
		Leaders: map[string][]string{topic: {"0:1"}}, Followers: map[string][]string{topic: {"0:2"}}}
	require.NoError(t, adm.SetThrottle(ctx, throttle))
	cl, err := adm.Client()
	require.NoError(t, err)
	kadmin := kadm.NewClient(cl)
	t.Cleanup(func() {
		cctx, ccancel := context.WithTimeout(context.Background(), time.Minute)
		defer ccancel()
		a := kafka.NewAdmin(conn, "test")
		defer a.Close()
		assert.NoError(t, a.ClearThrottle(cctx, []int32{1, 2}, []string{topic}), "the shared lab keeps no throttle")
		if n, _ := lab.State.Node(1); n != nil && !n.Alive() {
			assert.NoError(t, c.Restart(cctx, 1))
		}
		if cl, err := a.Client(); err == nil {
			_, _ = kadm.NewClient(cl).DeleteTopics(cctx, topic)
		}
	})

	res, err := Run(ctx, c, cfg)
	require.NoError(t, err)
	require.Len(t, res.Partitioners, 1)
	require.Equal(t, int32(1), res.KilledBroker)

	// Broker 1 comes back, unthrottled, truncates to broker 2's log and
	// catches up: the read below sees what the cluster keeps.
	require.NoError(t, adm.ClearThrottle(ctx, []int32{1, 2}, []string{topic}))
	require.NoError(t, c.Restart(ctx, 1))
	_, err = WaitFullISR(ctx, c, conn, "test", 2*time.Minute)
	require.NoError(t, err)
	_, err = kadmin.ElectLeaders(ctx, kadm.ElectPreferredReplica, kadm.TopicsSet{topic: {0: struct{}{}}})
	require.NoError(t, err)
	return res, readTopic(ctx, t, conn, topic)
}

// readTopic reads partition 0 of topic from offset 0 to its end and counts
// producer 0's sequence numbers, without any of kplan's consumer code.
func readTopic(ctx context.Context, t *testing.T, conn kafka.ConnOptions, topic string) readBack {
	t.Helper()
	admCl, err := kafka.NewClient(conn, "test")
	require.NoError(t, err)
	defer admCl.Close()
	ends, err := kadm.NewClient(admCl).ListEndOffsets(ctx, topic)
	require.NoError(t, err)
	end, ok := ends.Lookup(topic, 0)
	require.True(t, ok)
	require.NoError(t, end.Err)

	cl, err := kafka.NewClient(conn, "test", kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	require.NoError(t, err)
	defer cl.Close()
	copies := map[uint64]int64{}
	var next int64
	for next < end.Offset {
		fs := cl.PollFetches(ctx)
		require.NoError(t, ctx.Err(), "reading %s back: at offset %d of %d", topic, next, end.Offset)
		fs.EachError(func(_ string, _ int32, err error) { t.Logf("fetch: %v", err) })
		fs.EachRecord(func(r *kgo.Record) {
			next = r.Offset + 1
			if len(r.Value) < headerLen || r.Value[offProducer] != 0 {
				return
			}
			copies[binary.BigEndian.Uint64(r.Value[offSeq:])]++
		})
	}
	var rb readBack
	for _, n := range copies {
		rb.distinct++
		rb.extra += n - 1
	}
	return rb
}
