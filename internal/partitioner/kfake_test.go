package partitioner

import (
	"context"
	"flag"
	"fmt"
	"math/rand"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kplan-dev/kplan/internal/stats"
)

var sharesRecords = flag.Int("shares.records", 6000, "records per phase in TestSharesOnKfake")

// brokerCounter counts records per leader broker as franz-go reports them
// (HookProduceRecordPartitioned).
type brokerCounter struct {
	mu sync.Mutex
	n  map[int32]int
}

func (c *brokerCounter) OnProduceRecordPartitioned(_ *kgo.Record, leader int32) {
	c.mu.Lock()
	c.n[leader]++
	c.mu.Unlock()
}

func (c *brokerCounter) take() map[int32]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.n
	c.n = map[int32]int{}
	return out
}

// newLabLikeCluster starts a kfake cluster with brokers numbered 1..3 (kfake
// numbers from 0) and a 3-partition topic led by brokers 1, 2, 3.
func newLabLikeCluster(t *testing.T, topic string) *kfake.Cluster {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(3, topic))
	require.NoError(t, err)
	t.Cleanup(c.Close)
	for id := int32(1); id <= 3; id++ {
		_, _, err := c.AddNode(id, 0)
		require.NoError(t, err)
	}
	require.NoError(t, c.RemoveNode(0))
	for p := int32(0); p < 3; p++ {
		require.NoError(t, c.MoveTopicPartition(topic, p, p+1))
	}
	return c
}

func produceN(ctx context.Context, t *testing.T, cl *kgo.Client, n int, keyed bool) {
	t.Helper()
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for i := range n {
		wg.Add(1)
		r := &kgo.Record{Value: make([]byte, 100)}
		if keyed {
			r.Key = []byte(fmt.Sprintf("seq-%d", i))
		}
		cl.Produce(ctx, r, func(_ *kgo.Record, err error) {
			if err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
			wg.Done()
		})
	}
	require.NoError(t, cl.Flush(ctx))
	wg.Wait()
	require.Empty(t, errs)
}

func waitLeader(ctx context.Context, t *testing.T, cl *kgo.Client, topic string, p, want int32) {
	t.Helper()
	for {
		cl.ForceMetadataRefresh()
		if l, _, err := cl.PartitionLeader(topic, p); err == nil && l == want {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("client never saw broker %d lead %s/%d", want, topic, p)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// shares returns the skew of counts over the given leader brokers (a leader
// that got nothing counts as 0).
func shares(counts map[int32]int, leaders ...int32) stats.Skew {
	all := map[int32]int{}
	for _, b := range leaders {
		all[b] = counts[b]
	}
	for b, c := range counts {
		all[b] = c
	}
	return stats.SkewOfCounts(all)
}

func fmtShares(s stats.Skew) string {
	var parts []string
	for _, sh := range s.Shares {
		parts = append(parts, fmt.Sprintf("b%d %.3f", sh.ID, sh.Share))
	}
	return fmt.Sprintf("%s (max/mean %.3f, Jain %.3f)", strings.Join(parts, ", "), s.MaxOverMean, s.Jain)
}

// TestSharesOnKfake runs each partitioner against an in-process 3-broker
// cluster: before, every broker leads one partition; then broker 3's
// partition moves to broker 1 (as after broker 3 dies) and the producer keeps
// going. roundrobin balances partitions, so broker 1 gets 2/3; node and sqf
// balance brokers, so 1/2 each.
func TestSharesOnKfake(t *testing.T) {
	if testing.Short() {
		t.Skip("in-process cluster test")
	}
	const topic = "shares"
	n := *sharesRecords
	for _, linger := range []bool{true, false} {
		for _, name := range Names() {
			mode := "acks-interleaved"
			if linger {
				mode = "linger"
			}
			t.Run(mode+"/"+name, func(t *testing.T) {
				sharesRun(t, topic, name, n, linger)
			})
		}
	}
}

// sharesRun produces n records before and n after the leader move, keyless
// except for hash (unique keys, as a sequence-keyed experiment sends). With
// linger, a phase's records are all buffered before any is sent (Flush sends
// them), so sqf sees only its own choices; without, acknowledgements arrive
// while the phase runs and sqf follows them, as it is meant to.
func sharesRun(t *testing.T, topic, name string, n int, linger bool) {
	{
		{
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			c := newLabLikeCluster(t, topic)
			in := NewInflight()
			kopts, bind, err := ClientOpts(name, WithRand(rand.New(rand.NewSource(1))), WithInflight(in))
			require.NoError(t, err)
			counter := &brokerCounter{n: map[int32]int{}}
			kopts = append(kopts,
				kgo.SeedBrokers(c.ListenAddrs()...),
				kgo.DefaultProduceTopic(topic),
				kgo.WithHooks(counter),
			)
			if linger {
				kopts = append(kopts, kgo.ProducerLinger(time.Minute))
			}
			cl, err := kgo.NewClient(kopts...)
			require.NoError(t, err)
			defer cl.Close()
			bind(cl)
			// The client's producer learns a topic's leaders with its first
			// record to it; PartitionLeader reports nothing before that.
			produceN(ctx, t, cl, 1, false)
			for p := int32(0); p < 3; p++ {
				waitLeader(ctx, t, cl, topic, p, p+1)
			}
			counter.take()

			produceN(ctx, t, cl, n, name == "hash")
			before := counter.take()

			require.NoError(t, c.MoveTopicPartition(topic, 2, 1))
			waitLeader(ctx, t, cl, topic, 2, 1)
			produceN(ctx, t, cl, n, name == "hash")
			after := counter.take()
			sb, sa := shares(before, 1, 2, 3), shares(after, 1, 2)
			t.Logf("linger=%-5v %-11s before: %s", linger, name, fmtShares(sb))
			t.Logf("linger=%-5v %-11s after:  %s", linger, name, fmtShares(sa))

			for b := int32(1); b <= 3; b++ {
				rec, by := in.Broker(b)
				assert.Zero(t, rec+by, "in flight to broker %d after Flush", b)
			}
			mmBefore, mmAfter := sb.MaxOverMean, sa.MaxOverMean
			switch name {
			case "roundrobin":
				assert.LessOrEqual(t, mmBefore, 1.05)
				assert.InDelta(t, 2.0/3, float64(after[1])/float64(n), 0.01)
				assert.GreaterOrEqual(t, mmAfter, 1.25)
			case "node", "sqf":
				assert.Zero(t, after[3], "no record to broker 3 after the move")
				if name == "sqf" && !linger {
					// Records follow acknowledgement speed, and kfake's
					// brokers share one loop: how fast each answers depends
					// on scheduling (under -race max/mean reached 1.36).
					// The linger mode checks the decisions themselves.
					break
				}
				assert.LessOrEqual(t, mmBefore, 1.05)
				assert.InDelta(t, 0.5, float64(after[1])/float64(n), 0.03)
				assert.LessOrEqual(t, mmAfter, 1.05)
			}
		}
	}
}
