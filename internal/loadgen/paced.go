package loadgen

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kplan-dev/kplan/internal/clock"
	"github.com/kplan-dev/kplan/internal/kafka"
)

// WriteSpec is a paced writer of one topic: stamped records of RecordSize
// bytes at Rate records/s, spread over the topic's partitions round robin
// (record by record, so that even a slow writer reaches every partition,
// where franz-go's sticky default fills one batch at a time), uncompressed
// so that the bytes on disk are the bytes written.
type WriteSpec struct {
	Topic      string
	Rate       float64
	RecordSize int
	// Run stamps the records (Envelope.Run).
	Run uint64
	// Acks is the producer's level (the zero value: acks=all).
	Acks Acks
}

// Write writes s until ctx ends and returns the records acknowledged. A
// record that fails for another reason than ctx's end is the run's error.
func Write(ctx context.Context, conn kafka.ConnOptions, version string, s WriteSpec) (int64, error) {
	if s.Rate <= 0 || s.RecordSize < EnvelopeLen {
		return 0, fmt.Errorf("write %s: want a positive rate and records of %d bytes or more, got %g/s of %d bytes", s.Topic, EnvelopeLen, s.Rate, s.RecordSize)
	}
	if s.Acks == 0 {
		s.Acks = AcksAll
	}
	opts := append(s.Acks.ProducerOpts(),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.ProducerLinger(5*time.Millisecond),
		kgo.ProducerBatchMaxBytes(int32(max(s.RecordSize+1024, 1<<20))))
	cl, err := kafka.NewClient(conn, version, opts...)
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	var acked atomic.Int64
	var firstErr atomic.Pointer[error]
	start := time.Now()
	var seq uint64
	NewPacer(s.Rate, time.Millisecond, clock.System{}).Run(ctx, func() bool { return firstErr.Load() != nil }, func() {
		v := Stamp(s.RecordSize, Envelope{Run: s.Run, Seq: seq, Sent: time.Since(start)})
		seq++
		cl.Produce(ctx, &kgo.Record{Topic: s.Topic, Value: v}, func(_ *kgo.Record, err error) {
			switch {
			case err == nil:
				acked.Add(1)
			case !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded):
				firstErr.CompareAndSwap(nil, &err)
			}
		})
	})
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	_ = cl.Flush(fctx) // what is in flight is acknowledged or fails
	if e := firstErr.Load(); e != nil {
		return acked.Load(), fmt.Errorf("write %s: %w", s.Topic, *e)
	}
	return acked.Load(), nil
}

// ConsumeGroup reads topics as member of the consumer group group from the
// earliest offset, committing what it has read every commitEvery, until
// ctx ends; it returns the records read. It is a group's real traffic
// (fetches and commits) for what observes a cluster to see.
func ConsumeGroup(ctx context.Context, conn kafka.ConnOptions, version, group string, topics []string, commitEvery time.Duration) (int64, error) {
	cl, err := kafka.NewClient(conn, version,
		kgo.ConsumerGroup(group), kgo.ConsumeTopics(topics...),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.AutoCommitInterval(commitEvery))
	if err != nil {
		return 0, err
	}
	defer cl.Close() // commits what was read before leaving the group
	var n int64
	for ctx.Err() == nil {
		// Fetch errors are retried by the client; only the records count.
		n += int64(cl.PollFetches(ctx).NumRecords())
	}
	return n, nil
}
