package loadgen

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kplan-dev/kplan/internal/clock"
	"github.com/kplan-dev/kplan/internal/kafka"
)

// This file is `kplan measure unavailability`'s probe: it times, per
// partition, when an acks=all write succeeds again after a broker was
// killed.

// probeBackoff is the probe's retry backoff and metadata min age: the
// resolution of the times it reports.
const probeBackoff = 25 * time.Millisecond

// Prober writes one record at a time to every partition of a topic with
// acks=all, through one client.
type Prober struct {
	cl    *kgo.Client
	topic string
	n     int32
}

// NewProber builds the probe's client for topic's partitions 0..n-1.
// requestTimeout bounds each dial and request (a dead broker whose address
// no longer answers costs the probe at most that), so that a write is
// retried on the new leader soon after it is elected.
func NewProber(conn kafka.ConnOptions, version, topic string, n int32, requestTimeout time.Duration) (*Prober, error) {
	cl, err := kafka.NewClient(conn, version,
		kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.DisableIdempotentWrite(),
		kgo.ProducerLinger(0),
		kgo.ProduceRequestTimeout(requestTimeout),
		kgo.DialTimeout(requestTimeout),
		kgo.RequestTimeoutOverhead(requestTimeout),
		kgo.MetadataMinAge(probeBackoff),
		kgo.RetryBackoffFn(func(int) time.Duration { return probeBackoff }),
		kgo.MaxBufferedRecords(int(n)*2+16),
	)
	if err != nil {
		return nil, err
	}
	return &Prober{cl: cl, topic: topic, n: n}, nil
}

// Close releases the client.
func (p *Prober) Close() { p.cl.Close() }

// Warm writes one record to every partition and waits for all of them: the
// client then holds the topic's metadata and its connections, so that the
// timed probe measures Kafka, not the client's start.
//
// A topic just created may be unknown to some broker for a while (its
// metadata is still on the way): partitions that fail are written again
// every 200 ms until ctx ends.
func (p *Prober) Warm(ctx context.Context) error {
	todo := make([]int32, p.n)
	for i := range todo {
		todo[i] = int32(i)
	}
	var last error
	err := clock.Poll(ctx, nil, 200*time.Millisecond, 0, func(ctx context.Context) (bool, error) {
		recs := make([]*kgo.Record, len(todo))
		for i, part := range todo {
			recs[i] = &kgo.Record{Topic: p.topic, Partition: part, Value: []byte("warm")}
		}
		var failed []int32
		for _, r := range p.cl.ProduceSync(ctx, recs...) {
			if r.Err != nil {
				failed, last = append(failed, r.Record.Partition), r.Err
			}
		}
		if len(failed) > 0 {
			todo = failed
		}
		return len(failed) == 0, nil
	})
	if err != nil {
		return fmt.Errorf("writing to every partition of %s (%d failed): %w", p.topic, len(todo), last)
	}
	return nil
}

// Probe writes one record to every partition at once, each retried until
// it is acknowledged, and returns when each was, measured from since.
// A partition not acknowledged when ctx ends has a negative time, and the
// error says how many.
func (p *Prober) Probe(ctx context.Context, since time.Time) ([]time.Duration, error) {
	out := make([]time.Duration, p.n)
	for i := range out {
		out[i] = -1
	}
	var (
		mu      sync.Mutex
		wg      sync.WaitGroup
		lastErr error
	)
	for i := range p.n {
		wg.Add(1)
		part := i
		p.cl.Produce(ctx, &kgo.Record{Topic: p.topic, Partition: part, Value: []byte("probe")}, func(_ *kgo.Record, err error) {
			at := time.Now()
			defer wg.Done()
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				lastErr = err
				return
			}
			out[part] = at.Sub(since)
		})
	}
	wg.Wait()
	var missing int
	for _, d := range out {
		if d < 0 {
			missing++
		}
	}
	if missing > 0 {
		return out, fmt.Errorf("%d of %d partitions of %s did not accept a write: %w", missing, p.n, p.topic, lastErr)
	}
	return out, nil
}
