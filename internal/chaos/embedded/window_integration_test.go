//go:build integration

package embedded

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kplan-dev/kplan/internal/partitioner"
)

// leaderCounter counts records by the leader franz-go buffered them for.
type leaderCounter struct {
	mu sync.Mutex
	n  map[int32]int
}

func (c *leaderCounter) OnProduceRecordPartitioned(_ *kgo.Record, leader int32) {
	c.mu.Lock()
	c.n[leader]++
	c.mu.Unlock()
}

func (c *leaderCounter) take() map[int32]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.n
	c.n = map[int32]int{}
	return out
}

// TestKillWindow measures the blind window after a kill, before the
// producer's metadata refresh (MetadataMinAge, 1 s here) tells it broker 3 is
// gone: where records are partitioned and how many are acknowledged. What
// must hold: the window ends (broker 1 leads broker 3's partition) and no
// record fails. That sqf sends the dead broker less than node (it sees
// broker 3's in-flight grow and stops choosing it, where roundrobin and node
// keep sending it a third) is an acceptance figure: TestAcceptKillWindow.
func TestKillWindow(t *testing.T) {
	toDead := killWindow(t)
	t.Logf("share partitioned to the dead broker in the window: sqf %.3f, node %.3f", toDead["sqf"], toDead["node"])
}

// killWindow runs the blind-window experiment once per partitioner and
// returns the share of the window's records each partitioned to the dead
// broker.
func killWindow(t *testing.T) map[string]float64 {
	t.Helper()
	const window = time.Second
	toDead := map[string]float64{}
	for _, name := range []string{"roundrobin", "node", "sqf"} {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			e, err := New(3, "test")
			require.NoError(t, err)
			defer e.Close()
			require.NoError(t, e.CreateTopic(ctx, "w", [][]int32{{1, 2}, {2, 3}, {3, 1}}))
			kopts, bind, err := partitioner.ClientOpts(name)
			require.NoError(t, err)
			counter := &leaderCounter{n: map[int32]int{}}
			cl, err := kgo.NewClient(append(kopts,
				kgo.SeedBrokers(e.Addrs()...),
				kgo.DefaultProduceTopic("w"),
				kgo.WithHooks(counter),
				kgo.MetadataMinAge(window),
				kgo.MaxBufferedRecords(2000),
			)...)
			require.NoError(t, err)
			defer cl.Close()
			bind(cl)

			var acked, failed atomic.Int64
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
					cl.Produce(ctx, &kgo.Record{Value: []byte(fmt.Sprint(i))}, func(_ *kgo.Record, err error) {
						if err != nil {
							failed.Add(1)
							return
						}
						acked.Add(1)
					})
				}
			}()
			for acked.Load() < 5000 {
				time.Sleep(5 * time.Millisecond)
			}
			require.NoError(t, e.Kill(3))
			killed := time.Now()
			counter.take()
			before := acked.Load()
			for {
				if l, _, err := cl.PartitionLeader("w", 2); err == nil && l == 1 {
					break
				}
				require.NoError(t, ctx.Err())
				time.Sleep(time.Millisecond)
			}
			blind := time.Since(killed)
			inWindow := counter.take()
			ackedInWindow := acked.Load() - before
			close(stop)
			<-done
			require.NoError(t, cl.Flush(ctx))
			assert.Zero(t, failed.Load())
			total := inWindow[1] + inWindow[2] + inWindow[3]
			toDead[name] = float64(inWindow[3]) / float64(max(total, 1))
			t.Logf("%-10s blind %v: partitioned to b1 %d, b2 %d, dead b3 %d (%.1f%%); acked in the window %d",
				name, blind.Round(time.Millisecond), inWindow[1], inWindow[2], inWindow[3], 100*toDead[name], ackedInWindow)
		})
	}
	return toDead
}
