package chaos

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kplan-dev/kplan/internal/clock"
	"github.com/kplan-dev/kplan/internal/kafka"
	"github.com/kplan-dev/kplan/internal/loadgen"
)

// consumer reads every experiment topic from the offsets the run started at
// with loadgen's checking consumer: it measures end-to-end latency while
// the run goes on and, at the end, consumes everything back for the loss
// check.
type consumer struct {
	*loadgen.Reader
	prods []*producer
	epoch time.Time
	now   func() time.Time

	// noE2E: the consumer reads only after the run, so receipt minus send
	// time is not a latency; records are checked but not timed.
	noE2E bool
}

func newConsumer(conn kafka.ConnOptions, cfg *Config, start map[string]map[int32]int64, prods []*producer, runID uint64, epoch time.Time, now func() time.Time) (*consumer, error) {
	parts := map[string]map[int32]kgo.Offset{}
	for t, ps := range start {
		parts[t] = map[int32]kgo.Offset{}
		for p, off := range ps {
			parts[t][p] = kgo.NewOffset().At(off)
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
	rd := loadgen.NewReader(cl, start)
	// Only this run's records, and only those carrying its RunHeader:
	// other producers' records on an existing topic are not counted.
	rd.Accept = func(run uint64) bool { return run == runID }
	rd.Header = true
	return &consumer{Reader: rd, prods: prods, epoch: epoch, now: now}, nil
}

// run polls until ctx ends.
func (c *consumer) run(ctx context.Context) {
	c.Run(ctx, clock.WithNow(c.now), func(r *kgo.Record, e loadgen.Envelope, at time.Time) {
		i := int(e.Producer)
		if i >= len(c.prods) {
			return
		}
		ph := Phase(e.Tag)
		if c.noE2E {
			ph = numPhases // counted for the loss check, not timed
		}
		c.prods[i].consumed(e.Seq, ph, at.Sub(c.epoch)-e.Sent, loadgen.Pos(r.Partition, r.Offset))
	})
}
