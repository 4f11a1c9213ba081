//go:build integration

package chaos

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	chaoslab "github.com/kplan-dev/kplan/internal/chaos/lab"
	"github.com/kplan-dev/kplan/internal/kafka"
	"github.com/kplan-dev/kplan/internal/labtest"
	"github.com/kplan-dev/kplan/internal/loadgen"
)

// The checker is trusted once it caught a real anomaly (Jepsen's rule).
// These tests make the lab really lose and really duplicate acknowledged
// records, then read the topic back independently of kplan, from offset 0,
// and count kplan's sequence numbers per producer: kplan's lost and
// duplicate counts must equal what that read finds missing and repeated.
//
// How the lab misbehaves: one partition on brokers 1 (leader) and 2. A
// replication throttle cannot make the follower lag: Kafka throttles only
// replicas out of the ISR (measured: with broker 2's follower rate at a
// tenth of the producer's, nothing was lost). So the kill pauses broker 2's
// JVM (SIGSTOP) for pauseFor, shorter than the lab's 3 s broker session
// and far shorter than replica.lag.time.max.ms (30 s): broker 2 stays in
// the ISR but fetches nothing. Then broker 1 is SIGKILLed and broker 2
// resumed (SIGCONT); broker 1 is fenced and broker 2, in the ISR, is
// elected cleanly.
//   - acks=1: broker 1 acknowledged what it received during the pause;
//     broker 2 never had it, and broker 1 truncates to broker 2's log when
//     it comes back. Those acknowledged records are lost.
//   - acks=all without idempotence: nothing acknowledged can be lost, but
//     the requests broker 1 held in purgatory are retried on broker 2,
//     which writes again the records it had fetched just before the pause.

// pauseFor is how long broker 2 is paused before broker 1 is killed.
const pauseFor = 1500 * time.Millisecond

// pausingKill is the lab with a kill that first pauses broker follower for
// pauseFor and resumes it right after the kill.
type pausingKill struct {
	*chaoslab.Cluster
	lab      *labtest.Lab
	follower int32
}

func (c *pausingKill) Kill(ctx context.Context, id int32) error {
	n, err := c.lab.State.Node(c.follower)
	if err != nil {
		return err
	}
	if err := syscall.Kill(n.PID, syscall.SIGSTOP); err != nil {
		return err
	}
	defer func() { _ = syscall.Kill(n.PID, syscall.SIGCONT) }()
	time.Sleep(pauseFor)
	return c.Cluster.Kill(ctx, id)
}

func TestLossCheckCatchesLoss(t *testing.T) {
	res, read := runAnomaly(t, "anomaly-loss", loadgen.AcksLeader, false)
	p := res.Partitioners[0]
	t.Logf("kplan: sent %d acked %d lost %d duplicates %d never acked %d; read back: %d distinct, %d extra copies",
		p.Sent, p.Acked, p.Lost, p.Duplicates, p.NeverAcked, read.distinct, read.extra)
	require.Zero(t, p.NeverAcked, "every record was answered, so the read back's missing records are acknowledged ones")
	missing := p.Sent - read.distinct
	assert.Positive(t, missing, "the lab lost acknowledged records (acks=1, follower paused, leader killed)")
	assert.Equal(t, missing, p.Lost, "kplan's lost count equals the records missing from the topic")
	assert.Equal(t, read.extra, p.Duplicates, "kplan's duplicate count equals the extra copies in the topic")
}

func TestDuplicateCheckCatchesDuplicates(t *testing.T) {
	// Measured 5, 5, 192 and 5 extra copies in four runs: the records of
	// broker 2's last fetch before the pause are on it but not yet
	// acknowledged (the high watermark moves one fetch later). A pause that
	// lands while the follower has nothing new to fetch duplicates nothing,
	// so the scenario runs up to three times until the lab produced a real
	// duplicate; kplan's counts must equal the independent read every time.
	var caught int64
	for attempt := 1; attempt <= 3 && caught == 0; attempt++ {
		res, read := runAnomaly(t, fmt.Sprintf("anomaly-dup%d", attempt), loadgen.AcksAll, true)
		p := res.Partitioners[0]
		t.Logf("attempt %d: kplan: sent %d acked %d lost %d duplicates %d never acked %d; read back: %d distinct, %d extra copies",
			attempt, p.Sent, p.Acked, p.Lost, p.Duplicates, p.NeverAcked, read.distinct, read.extra)
		require.Zero(t, p.NeverAcked, "every record was answered")
		assert.Equal(t, read.extra, p.Duplicates, "kplan's duplicate count equals the extra copies in the topic")
		assert.Equal(t, p.Sent-read.distinct, p.Lost, "kplan's lost count equals the records missing from the topic")
		assert.Zero(t, p.Lost, "acks=all loses nothing while an in-sync replica survives")
		caught = read.extra
	}
	assert.Positive(t, caught, "the lab duplicated records (acks=all without idempotence, retries through the kill) in one of three attempts")
}

// readBack is what an independent read of the topic found.
type readBack struct {
	distinct int64 // distinct sequence numbers of producer 0
	extra    int64 // copies beyond the first
}

// runAnomaly runs one producer (roundrobin) on a fresh one-partition topic
// on brokers 1 (leader) and 2, pauses broker 2 and kills broker 1 after the
// before phase, brings the lab back whole and reads the topic back.
func runAnomaly(t *testing.T, prefix string, acks loadgen.Acks, noIdem bool) (*Result, readBack) {
	lab := labtest.Shared(t)
	lc, err := chaoslab.Open(lab.State, kafka.ConnOptions{}, "test")
	require.NoError(t, err)
	defer lc.Close()
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
	cfg.noIdempotence = noIdem
	cfg.Rate = 400_000
	cfg.RecordSize = 1000
	cfg.Warmup = time.Second
	cfg.Phase = 2 * time.Second
	cfg.AllowUnavailable = true // the kill leaves the partition to a paused replica

	adm := kafka.NewAdmin(conn, "test")
	defer adm.Close()
	cl, err := adm.Client()
	require.NoError(t, err)
	kadmin := kadm.NewClient(cl)
	defer func() { // the shared lab stays whole, whatever failed
		cctx, ccancel := context.WithTimeout(context.Background(), time.Minute)
		defer ccancel()
		if n, _ := lab.State.Node(2); n != nil {
			_ = syscall.Kill(n.PID, syscall.SIGCONT)
		}
		if n, _ := lab.State.Node(1); n != nil && !n.Alive() {
			assert.NoError(t, lc.Restart(cctx, 1))
		}
		_, _ = kadmin.DeleteTopics(cctx, topic)
	}()

	res, err := Run(ctx, &pausingKill{Cluster: lc, lab: lab, follower: 2}, cfg)
	require.NoError(t, err)
	require.Len(t, res.Partitioners, 1)
	require.Equal(t, int32(1), res.KilledBroker)

	// Broker 1 comes back, truncates to broker 2's log and catches up: the
	// read below sees what the cluster keeps.
	require.NoError(t, lc.Restart(ctx, 1))
	_, err = WaitFullISR(ctx, lc, conn, "test", 2*time.Minute)
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
			e, ok := loadgen.DecodeEnvelope(r.Value)
			if !ok || e.Producer != 0 {
				return
			}
			copies[e.Seq]++
		})
	}
	var rb readBack
	for _, n := range copies {
		rb.distinct++
		rb.extra += n - 1
	}
	return rb
}
