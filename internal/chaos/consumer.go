package chaos

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kplan-dev/kplan/internal/kafka"
)

// consumer reads every experiment topic from the offsets the run started at:
// it measures end-to-end latency while the run goes on and, at the end,
// consumes everything back for the loss check.
type consumer struct {
	cl    *kgo.Client
	prods []*producer
	runID uint64
	epoch time.Time
	now   func() time.Time

	// noE2E: the consumer reads only after the run, so receipt minus send
	// time is not a latency; records are checked but not timed.
	noE2E bool

	mu   sync.Mutex
	next map[string]map[int32]int64 // next offset to read per partition
}

func newConsumer(conn kafka.ConnOptions, cfg *Config, start map[string]map[int32]int64, prods []*producer, runID uint64, epoch time.Time, now func() time.Time) (*consumer, error) {
	parts := map[string]map[int32]kgo.Offset{}
	next := map[string]map[int32]int64{}
	for t, ps := range start {
		parts[t] = map[int32]kgo.Offset{}
		next[t] = map[int32]int64{}
		for p, off := range ps {
			parts[t][p] = kgo.NewOffset().At(off)
			next[t][p] = off
		}
	}
	cl, err := kafka.NewClient(conn, cfg.Version,
		kgo.RetryTimeout(30*time.Second), // franz-go's default: fetches wait out the failover
		kgo.ConsumePartitions(parts),
		kgo.FetchMaxWait(100*time.Millisecond),
		kgo.MetadataMinAge(cfg.MetadataMinAge),
		kgo.MetadataMaxAge(cfg.MetadataMaxAge),
		kgo.FetchIsolationLevel(kgo.ReadUncommitted()),
	)
	if err != nil {
		return nil, fmt.Errorf("consumer: %w", err)
	}
	return &consumer{cl: cl, prods: prods, runID: runID, epoch: epoch, now: now, next: next}, nil
}

// run polls until ctx ends.
func (c *consumer) run(ctx context.Context) {
	for {
		fs := c.cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return
		}
		at := c.now().Sub(c.epoch)
		fs.EachRecord(func(r *kgo.Record) {
			c.mu.Lock()
			if n := r.Offset + 1; n > c.next[r.Topic][r.Partition] {
				c.next[r.Topic][r.Partition] = n
			}
			c.mu.Unlock()
			v := r.Value
			if !c.ours(r) || len(v) < headerLen || binary.BigEndian.Uint64(v[offRun:]) != c.runID {
				return
			}
			i := int(v[offProducer])
			if i >= len(c.prods) {
				return
			}
			sent := time.Duration(binary.BigEndian.Uint64(v[offSend:]))
			pos := int64(r.Partition)<<48 | r.Offset
			ph := Phase(v[offPhase])
			if c.noE2E {
				ph = numPhases // counted for the loss check, not timed
			}
			c.prods[i].consumed(binary.BigEndian.Uint64(v[offSeq:]), ph, at-sent, pos)
		})
	}
}

// ours reports whether r carries this run's RunHeader: other producers'
// records on an existing topic are not counted.
func (c *consumer) ours(r *kgo.Record) bool {
	for _, h := range r.Headers {
		if h.Key == RunHeader {
			return len(h.Value) == 8 && binary.BigEndian.Uint64(h.Value) == c.runID
		}
	}
	return false
}

// caughtUp reports whether every partition was read up to end, and how many
// offsets are still left to read.
func (c *consumer) caughtUp(end map[string]map[int32]int64) (bool, int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var left int64
	for t, ps := range end {
		for p, off := range ps {
			if n := c.next[t][p]; n < off {
				left += off - n
			}
		}
	}
	return left == 0, left
}

// endOffsets lists the high watermarks of topics.
func endOffsets(ctx context.Context, cl *kgo.Client, topics []string) (map[string]map[int32]int64, error) {
	res, err := kadm.NewClient(cl).ListEndOffsets(ctx, topics...)
	if err != nil {
		return nil, fmt.Errorf("list end offsets: %w", err)
	}
	out := map[string]map[int32]int64{}
	var errs []error
	res.Each(func(o kadm.ListedOffset) {
		if o.Err != nil {
			errs = append(errs, fmt.Errorf("%s/%d: %w", o.Topic, o.Partition, o.Err))
			return
		}
		if out[o.Topic] == nil {
			out[o.Topic] = map[int32]int64{}
		}
		out[o.Topic][o.Partition] = o.Offset
	})
	if len(errs) > 0 {
		return nil, fmt.Errorf("list end offsets: %w", errors.Join(errs...))
	}
	return out, nil
}
