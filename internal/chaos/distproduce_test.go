package chaos

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/kplan-dev/kplan/internal/chaos/dist"
	"github.com/kplan-dev/kplan/internal/chaos/embedded"
	"github.com/kplan-dev/kplan/internal/kafka"
	"github.com/kplan-dev/kplan/internal/loadgen"
)

// TestDistProduce: two in-process workers produce as fast as they can into
// one partition for a timed phase; the coordinator's result adds up their
// reports (bytes over time included, in windows that may each be empty under load but not all), names no worker as missed, and the
// run's topics are gone afterwards. When a worker never joins, the run
// fails after the join timeout, saying how many joined, and deletes its
// topics too.
func TestDistProduce(t *testing.T) {
	if testing.Short() {
		t.Skip("in-process cluster experiment")
	}
	for _, tc := range []struct {
		name    string
		workers int
		started int
		// stuck: the join check says a worker cannot start, which ends
		// the wait long before the join timeout.
		stuck bool
	}{
		{name: "every worker", workers: 2, started: 2},
		{name: "a worker never joins", workers: 2, started: 1},
		{name: "a worker's pod cannot start", workers: 2, started: 1, stuck: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			c, err := embedded.NewCluster(3, "test")
			require.NoError(t, err)
			t.Cleanup(c.Close)
			conn := kafka.ConnOptions{BootstrapServers: strings.Join(c.Seeds(), ",")}
			cl, err := kafka.NewClient(conn, "test")
			require.NoError(t, err)
			defer cl.Close()
			adm := kadm.NewClient(cl)
			_, err = adm.CreateTopic(ctx, 1, 3, nil, "tp")
			require.NoError(t, err)

			var wg sync.WaitGroup
			outs := make([]workerRun, tc.started)
			d := &DistProduce{
				Conn: conn, Version: "test", Workers: tc.workers,
				Streams:    []dist.Stream{{Partitioner: "roundrobin", Topic: "tp"}},
				RecordSize: 1000, Acks: loadgen.AcksAll, Linger: 5 * time.Millisecond, MaxBufferedRecords: 2000,
				Duration: 1500 * time.Millisecond, JoinTimeout: 5 * time.Second,
				OnRun: func(run string) {
					for i := range tc.started {
						w := &Worker{Run: run, Index: i, Conn: conn, Version: "test"}
						wg.Go(func() { outs[i].out, outs[i].err = RunWorker(ctx, w) })
					}
				},
			}
			if tc.stuck {
				d.JoinTimeout = time.Minute
				d.JoinCheck = func(context.Context) error { return errors.New("pod kafka/w-1 cannot start: ErrImagePull") }
			}
			var run string
			onRun := d.OnRun
			d.OnRun = func(r string) { run = r; onRun(r) }
			res, err := d.Run(ctx)
			wg.Wait()
			topics, lerr := adm.ListTopics(ctx)
			require.NoError(t, lerr)
			for _, name := range topics.Names() {
				assert.NotContains(t, name, run, "the run's topics are deleted")
			}
			if tc.started < tc.workers {
				require.Error(t, err, "the run waits for every worker to join")
				assert.Contains(t, err.Error(), "of 2 workers joined run "+run)
				if tc.stuck {
					assert.Contains(t, err.Error(), ": pod kafka/w-1 cannot start: ErrImagePull")
					assert.NotContains(t, err.Error(), "within", "the check ended the wait, not the join timeout")
				}
				return
			}
			require.NoError(t, err)
			for i, o := range outs {
				require.NoError(t, o.err, "worker %d", i)
				assert.Equal(t, []string{"before"}, o.out.Reported, "worker %d", i)
			}
			assert.Empty(t, res.Missed)
			require.Len(t, res.Reports, 2)
			assert.Positive(t, res.Acked)
			var sum, inWindows int64
			for _, b := range res.Buckets {
				sum += b
			}
			assert.Equal(t, res.AckedBytes, sum, "every acknowledged byte in a bucket")
			ws, err := res.Windows(500 * time.Millisecond)
			require.NoError(t, err)
			assert.Len(t, ws, 3)
			for _, w := range ws {
				// A window may be empty: under the race detector on a busy
				// 2-core machine the producers once stalled a whole 500 ms
				// window (CI, stop 31). The windows as a whole may not be.
				assert.GreaterOrEqual(t, w, int64(0))
				inWindows += w
			}
			assert.Positive(t, inWindows, "the phase's windows hold acknowledged bytes")
			assert.LessOrEqual(t, inWindows, res.AckedBytes)
			_, err = res.Windows(150 * time.Millisecond)
			require.Error(t, err, "not a multiple of the buckets")
			assert.Equal(t, run, res.Run)
		})
	}
}
