package loadgen

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kplan-dev/kplan/internal/clock"
	"github.com/kplan-dev/kplan/internal/stats"
)

// LatencyCeiling is the largest latency the histograms track.
const LatencyCeiling = 10 * time.Minute

// NewLatency is a latency histogram up to LatencyCeiling with the
// violation rate of objective.
func NewLatency(objective time.Duration) (*stats.Latency, error) {
	return stats.NewLatency(LatencyCeiling, objective)
}

// Tally ticks off one producer's records as the checking consumer reads
// them back, by sequence number: how many times each was read, where it was
// first read. It is safe for concurrent use.
type Tally struct {
	mu      sync.Mutex
	seen    []uint8 // times read, per sequence number (at most 255)
	pos     []int64 // where it was first read, -1 before
	rereads int64   // records read again at the same position
}

// Pos is a record's position for Tally.Read: its partition and offset.
func Pos(partition int32, offset int64) int64 { return int64(partition)<<48 | offset }

// Read notes that record seq was read at pos (Pos) and reports whether
// this was its first read, the one whose latency counts. Reading the same
// position again (the consumer's offset was reset) is a reread, not a
// duplicate; the same record at another position is a duplicate.
func (t *Tally) Read(seq uint64, pos int64) (first bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for uint64(len(t.seen)) <= seq {
		t.seen = append(t.seen, 0)
		t.pos = append(t.pos, -1)
	}
	if t.pos[seq] == pos {
		t.rereads++
		return false
	}
	if t.pos[seq] < 0 {
		t.pos[seq] = pos
	}
	if t.seen[seq] < 255 { // saturates: a uint8 would wrap to 0
		t.seen[seq]++
	}
	return t.seen[seq] == 1
}

// Counts returns how many times each sequence number was read (a copy;
// sequence numbers past its end were never read).
func (t *Tally) Counts() []uint8 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]uint8(nil), t.seen...)
}

// Rereads is the number of records read again at the same position.
func (t *Tally) Rereads() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.rereads
}

// Duplicates counts the extra reads: a record read n times is n-1
// duplicates.
func Duplicates(counts []uint8) int64 {
	var d int64
	for _, n := range counts {
		if n > 1 {
			d += int64(n) - 1
		}
	}
	return d
}

// Reader is the checking consumer: it polls a consuming client, keeps the
// next offset of every partition it read, and hands each record of the
// runs it accepts, with its envelope and the time it was polled, to a
// callback. Its client is built by the caller (the consumer's settings are
// the experiment's) and closed by the caller after Run returned.
type Reader struct {
	cl *kgo.Client
	// Accept reports whether a run's records count; nil counts every
	// record with an envelope.
	Accept func(run uint64) bool
	// Header makes only records carrying RunHeader with their envelope's
	// run count: other producers' records on a shared topic do not.
	Header bool

	mu   sync.Mutex
	next map[string]map[int32]int64
}

// NewReader is a Reader over cl, whose partitions start at start (nil: at
// offset 0, for a topic read from its beginning).
func NewReader(cl *kgo.Client, start map[string]map[int32]int64) *Reader {
	next := map[string]map[int32]int64{}
	for t, ps := range start {
		next[t] = map[int32]int64{}
		for p, off := range ps {
			next[t][p] = off
		}
	}
	return &Reader{cl: cl, next: next}
}

// Client is the consuming client.
func (r *Reader) Client() *kgo.Client { return r.cl }

// Run polls until ctx ends, calling on for every accepted record with the
// time the fetch holding it was polled.
func (r *Reader) Run(ctx context.Context, c clock.Clock, on func(rec *kgo.Record, e Envelope, at time.Time)) {
	if c == nil {
		c = clock.System{}
	}
	for {
		fs := r.cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return
		}
		at := c.Now()
		fs.EachRecord(func(rec *kgo.Record) {
			r.advance(rec)
			e, ok := DecodeEnvelope(rec.Value)
			if !ok || r.Accept != nil && !r.Accept(e.Run) || r.Header && !hasRunHeader(rec, e.Run) {
				return
			}
			on(rec, e, at)
		})
	}
}

func (r *Reader) advance(rec *kgo.Record) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ps := r.next[rec.Topic]
	if ps == nil {
		ps = map[int32]int64{}
		r.next[rec.Topic] = ps
	}
	if n := rec.Offset + 1; n > ps[rec.Partition] {
		ps[rec.Partition] = n
	}
}

// hasRunHeader reports whether rec carries RunHeader with run's id.
func hasRunHeader(rec *kgo.Record, run uint64) bool {
	for _, h := range rec.Headers {
		if h.Key == RunHeader {
			return bytes.Equal(h.Value, RunHeaderValue(run))
		}
	}
	return false
}

// CaughtUp reports whether every partition of end was read up to its
// offset there, and how many offsets are still left to read.
func (r *Reader) CaughtUp(end map[string]map[int32]int64) (bool, int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var left int64
	for t, ps := range end {
		for p, off := range ps {
			if n := r.next[t][p]; n < off {
				left += off - n
			}
		}
	}
	return left == 0, left
}

// Drain waits until the reader read every partition of topics up to the end
// offsets it lists on admin first. It gives up once the reader made no
// progress for stall (0: never; a consumer behind a bandwidth limit may
// need minutes, but keeps advancing), and after limit in any case.
func (r *Reader) Drain(ctx context.Context, c clock.Clock, admin *kgo.Client, topics []string, stall, limit time.Duration) error {
	if c == nil {
		c = clock.System{}
	}
	dctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	end, err := EndOffsets(dctx, admin, topics)
	if err != nil {
		return err
	}
	_, best := r.CaughtUp(end)
	last := c.Now()
	var left int64
	err = clock.Poll(dctx, c, 20*time.Millisecond, 0, func(context.Context) (bool, error) {
		var done bool
		done, left = r.CaughtUp(end)
		switch {
		case done:
			return true, nil
		case left < best:
			best, last = left, c.Now()
		case stall > 0 && c.Now().Sub(last) > stall:
			return true, fmt.Errorf("consumer made no progress for %v with %d records left to read", stall, left)
		}
		return false, nil
	})
	if err != nil && dctx.Err() != nil {
		return fmt.Errorf("consumer did not reach the end offsets within %v (%d records left)", limit, left)
	}
	return err
}

// EndOffsets lists the high watermarks of topics; a partition that cannot
// say is an error.
func EndOffsets(ctx context.Context, cl *kgo.Client, topics []string) (map[string]map[int32]int64, error) {
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
