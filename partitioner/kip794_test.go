package partitioner

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
)

// fakeTracker is a Tracker over tables the test sets: bytes per partition
// (one topic), progress count and busy per broker.
type fakeTracker struct {
	bytes    map[int32]int64
	progress map[int32]uint64
	busy     map[int32]bool
}

func newFakeTracker() *fakeTracker {
	return &fakeTracker{bytes: map[int32]int64{}, progress: map[int32]uint64{}, busy: map[int32]bool{}}
}

func (f *fakeTracker) PartitionBytes(_ string, p int32) int64 { return f.bytes[p] }

func (f *fakeTracker) Progress(b int32) (uint64, bool) { return f.progress[b], f.busy[b] }

// fakeClock is a clock the test moves.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

func (c *fakeClock) advance(d time.Duration) { c.t = c.t.Add(d) }

// seqSource returns 0, 1, 2, ...: the mock random of Kafka's own tests
// (RecordAccumulatorTest.testAdaptiveBuiltInPartitioner).
type seqSource struct{ n uint64 }

func (s *seqSource) Uint64() uint64 {
	s.n++
	return s.n - 1
}

const testBatch = 100

// murmur21 is Kafka's toPositive(murmur2("21")), from Kafka's own tests
// (Utils.murmur2("21") = -973932308).
var murmur21 = int(uint32(-973932308+(1<<32)) & 0x7fffffff)

// oneBatch is a keyless record of testBatch bytes: with WithBatchBytes(testBatch)
// every record is a batch of its own, so every record draws a partition.
var oneBatch = &kgo.Record{Value: make([]byte, testBatch)}

// setQueues gives each partition q batches of bytes (q*testBatch).
func (f *fakeTracker) setQueues(queues ...int64) {
	for p, q := range queues {
		f.bytes[int32(p)] = q * testBatch
	}
}

// TestKIP794CumulativeFrequencyTable: with draws 0, 1, 2, ... each partition
// is chosen as often as its weight max(q)+1-q, in partition order, as in
// Kafka's BuiltInPartitioner.updatePartitionLoadStats (its example: queues 0
// 3 1, weights 4 1 3, draws 0-3 to partition 0, 4 to 1, 5-7 to 2).
func TestKIP794CumulativeFrequencyTable(t *testing.T) {
	tests := []struct {
		name    string
		leaders []int32
		queues  []int64 // in batches
		want    []int   // the partitions of draws 0, 1, 2, ...
	}{
		{"kafka's example", []int32{1, 2, 3}, []int64{0, 3, 1}, []int{0, 0, 0, 0, 1, 2, 2, 2}},
		{"equal queues: uniform", []int32{1, 2, 3}, []int64{2, 2, 2}, []int{0, 1, 2}},
		{"empty queues: uniform", []int32{1, 2, 3}, []int64{0, 0, 0}, []int{0, 1, 2}},
		{"partial batch counts as one", []int32{1, 2}, []int64{0, 1}, []int{0, 0, 1}},
		{"leaderless partition left out", []int32{1, -1, 2}, []int64{1, 0, 0}, []int{0, 2, 2}},
		{"one partition", []int32{4}, []int64{9}, []int{0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(tt.leaders...)
			tr := newFakeTracker()
			tr.setQueues(tt.queues...)
			tp := NewKIP794(f.src, tr, WithBatchBytes(testBatch), WithRand(&seqSource{})).ForTopic("t")
			var got []int
			for range 2 * len(tt.want) { // the table twice: draws wrap modulo its total
				got = append(got, tp.Partition(oneBatch, len(tt.leaders)))
			}
			assert.Equal(t, append(tt.want, tt.want...), got)
		})
	}
}

// TestKIP794Weighting: over many draws (seeded) each broker's share is its
// partitions' weights over the total. A broker whose queues are 3x the
// others' gets the inverse share: queues 3, 1, 1 weigh 1, 3, 3. Kafka's
// weights are linear, not inverse, as the second row shows.
func TestKIP794Weighting(t *testing.T) {
	tests := []struct {
		name   string
		queues [3]int64 // per broker, in batches, on each of its two partitions
		want   [3]float64
	}{
		{"broker 1 three times the others", [3]int64{3, 1, 1}, [3]float64{1.0 / 7, 3.0 / 7, 3.0 / 7}},
		{"thirty against ten", [3]int64{30, 10, 10}, [3]float64{1.0 / 43, 21.0 / 43, 21.0 / 43}},
		{"all equal", [3]int64{5, 5, 5}, [3]float64{1.0 / 3, 1.0 / 3, 1.0 / 3}},
		{"one idle", [3]int64{0, 4, 4}, [3]float64{5.0 / 7, 1.0 / 7, 1.0 / 7}},
	}
	const draws = 70000
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(1, 2, 3, 1, 2, 3)
			tr := newFakeTracker()
			for p, l := range f.leader {
				tr.bytes[int32(p)] = tt.queues[l-1] * testBatch
			}
			tp := NewKIP794(f.src, tr, WithBatchBytes(testBatch), WithRand(rand.NewPCG(24, 794))).ForTopic("t")
			perBroker, perPart := pickRecord(tp, f, draws, oneBatch)
			for b := range 3 {
				assert.InDelta(t, tt.want[b], float64(perBroker[int32(b+1)])/draws, 0.01, "broker %d", b+1)
			}
			// A broker's two partitions weigh the same.
			for p := range int32(3) {
				assert.InDelta(t, perPart[p], perPart[p+3], 0.02*draws, "partitions %d and %d", p, p+3)
			}
		})
	}
}

// TestKIP794Sticky: keyless records stay on one partition until batch.size
// bytes went to it; the record that reaches it is the last of the run.
// Keyed records go by murmur2 and neither end nor extend the run.
func TestKIP794Sticky(t *testing.T) {
	tests := []struct {
		batch, size int
		run         int // records per partition
	}{
		{1000, 100, 10},
		{1000, 300, 4}, // 300, 600, 900, 1200: the fourth reaches the batch
		{1000, 1000, 1},
		{1000, 5000, 1},
		{DefaultBatchBytes, 1024, 16},
		{1, 0, 1}, // empty records: batch 1 is never reached, so never switch
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("batch %d record %d", tt.batch, tt.size), func(t *testing.T) {
			f := newFake(1, 2, 3, 4, 5, 6, 7, 8)
			tp := NewKIP794(f.src, newFakeTracker(), WithBatchBytes(tt.batch), WithRand(rand.NewPCG(1, 2))).ForTopic("t")
			r := &kgo.Record{Value: make([]byte, tt.size)}
			keyed := &kgo.Record{Key: []byte("21"), Value: make([]byte, tt.size)}
			var seq []int
			for i := range 20 * tt.run {
				seq = append(seq, tp.Partition(r, len(f.leader)))
				if i%3 == 0 {
					assert.Equal(t, murmur21%8, tp.Partition(keyed, len(f.leader)), "murmur2 of the key")
				}
			}
			if tt.size == 0 {
				for _, p := range seq {
					require.Equal(t, seq[0], p, "no bytes, no switch")
				}
				return
			}
			switches := 0
			for i := range seq {
				if i%tt.run == 0 {
					if i > 0 && seq[i] != seq[i-1] {
						switches++
					}
					continue
				}
				require.Equal(t, seq[i-1], seq[i], "record %d is within a run of %d", i, tt.run)
			}
			assert.Greater(t, switches, 10, "runs move to other partitions (uniform draw over 8)")
		})
	}
}

// TestKIP794AvailabilityTimeout: with the timeout set, a broker that has had
// records in flight without progress for longer than the timeout is left
// out, and taken back on its next progress. The clock and tracker are fakes;
// broker 3 leads partitions 2 and 5.
func TestKIP794AvailabilityTimeout(t *testing.T) {
	const timeout = 100 * time.Millisecond
	type step struct {
		advance  time.Duration
		progress bool  // broker 3 answers (its progress count moves)
		busy     bool  // broker 3 has records in flight
		queue5   int64 // batches queued for partition 5
		want3    bool  // broker 3's partitions still get records
	}
	tests := []struct {
		name    string
		timeout time.Duration
		steps   []step
	}{
		{"stalled beyond the timeout, then recovers", timeout, []step{
			{0, false, true, 1, true},                 // first seen stalled: the stall starts now
			{timeout / 2, false, true, 1, true},       // within the timeout
			{timeout / 2, false, true, 1, true},       // exactly the timeout: Kafka's test is >
			{time.Millisecond, false, true, 1, false}, // beyond: left out
			{time.Hour, false, true, 1, false},        // and stays out
			{0, true, true, 1, true},                  // it answered: back at once
			{timeout, false, true, 1, true},           // a new stall is timed from then
			{time.Millisecond, false, true, 1, false},
		}},
		{"idle is not stalled", timeout, []step{
			{0, false, false, 0, true},
			{time.Hour, false, false, 0, true},
		}},
		{"timeout 0 never leaves anything out", 0, []step{
			{0, false, true, 1, true},
			{time.Hour, false, true, 1, true},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(1, 2, 3, 1, 2, 3)
			tr := newFakeTracker()
			tr.setQueues(1, 1, 1, 1, 1, 1) // equal: a uniform draw unless something is left out
			clock := &fakeClock{t: time.Unix(1700000000, 0)}
			tp := NewKIP794(f.src, tr, WithBatchBytes(testBatch), WithAvailabilityTimeout(tt.timeout), WithClock(clock.now), WithRand(rand.NewPCG(7, 7))).ForTopic("t")
			for i, s := range tt.steps {
				clock.advance(s.advance)
				if s.progress {
					tr.progress[3]++
				}
				tr.busy[3] = s.busy
				tr.bytes[2], tr.bytes[5] = s.queue5*testBatch, s.queue5*testBatch
				// The first draw of a step sees the clock; 60 more as
				// long as nothing moves sample the draw.
				perBroker, _ := pickRecord(tp, f, 60, oneBatch)
				if s.want3 {
					assert.Positive(t, perBroker[3], "step %d: broker 3 gets records", i)
				} else {
					assert.Zero(t, perBroker[3], "step %d: broker 3 is left out", i)
					assert.Equal(t, 60, perBroker[1]+perBroker[2], "step %d", i)
				}
			}
		})
	}
}

// TestKIP794LeftOutCases: which partitions remain when brokers are stalled,
// per Kafka's partitionReady and nextPartition.
func TestKIP794LeftOutCases(t *testing.T) {
	tests := []struct {
		name    string
		leaders []int32
		queues  []int64
		stalled []int32
		want    map[int32]bool // the partitions that get records
	}{
		{"one broker stalled", []int32{1, 2, 3}, []int64{1, 1, 1}, []int32{3}, map[int32]bool{0: true, 1: true}},
		{"its empty partition stays in, as in Kafka", []int32{1, 2, 3, 3}, []int64{1, 1, 1, 0}, []int32{3}, map[int32]bool{0: true, 1: true, 3: true}},
		{"all stalled: uniform over partitions with a leader", []int32{1, 2, -1, 3}, []int64{1, 2, 0, 3}, []int32{1, 2, 3}, map[int32]bool{0: true, 1: true, 3: true}},
		{"no leader anywhere: uniform over all", []int32{-1, -1, -1}, []int64{0, 0, 0}, nil, map[int32]bool{0: true, 1: true, 2: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(tt.leaders...)
			tr := newFakeTracker()
			tr.setQueues(tt.queues...)
			for _, b := range tt.stalled {
				tr.busy[b] = true
			}
			clock := &fakeClock{t: time.Unix(0, 0)}
			tp := NewKIP794(f.src, tr, WithBatchBytes(testBatch), WithAvailabilityTimeout(time.Second), WithClock(clock.now), WithRand(rand.NewPCG(5, 5))).ForTopic("t")
			tp.Partition(oneBatch, len(tt.leaders)) // the stalls start
			clock.advance(2 * time.Second)
			got := map[int32]bool{}
			for range 300 {
				got[int32(tp.Partition(oneBatch, len(tt.leaders)))] = true
			}
			assert.Equal(t, tt.want, got)
		})
	}
}

// TestKIP794Shrink: a sticky partition beyond a shrunk partition count is
// dropped and a new one chosen.
func TestKIP794Shrink(t *testing.T) {
	f := newFake(1, 2, 3, 4)
	tp := NewKIP794(f.src, newFakeTracker(), WithRand(&seqSource{n: 3})).ForTopic("t")
	r := &kgo.Record{Value: []byte("x")}
	require.Equal(t, 3, tp.Partition(r, 4))
	assert.Less(t, tp.Partition(r, 3), 3)
	assert.True(t, tp.RequiresConsistency(r))
}

// TestKIP794Concurrent: topics share the random source and the stall table;
// run under -race.
func TestKIP794Concurrent(t *testing.T) {
	f := newFake(1, 2, 3)
	in := NewInflight()
	p := NewKIP794(f.src, in, WithBatchBytes(testBatch), WithAvailabilityTimeout(time.Second), WithRand(rand.NewPCG(1, 1)))
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			tp := p.ForTopic(fmt.Sprint("t", i))
			for range 2000 {
				r := &kgo.Record{Topic: fmt.Sprint("t", i), Value: make([]byte, 40)}
				r.Partition = int32(tp.Partition(r, 3))
				in.OnProduceRecordPartitioned(r, f.leader[r.Partition])
				in.OnProduceRecordUnbuffered(r, nil)
			}
		})
	}
	wg.Wait()
	for b := int32(1); b <= 3; b++ {
		rec, by := in.Broker(b)
		assert.Zero(t, rec+by)
	}
}

// TestInflightProgress: the tracker's side of KIP794: bytes per partition,
// and progress on an acknowledgement or a start from idle, not on an error.
func TestInflightProgress(t *testing.T) {
	in := NewInflight()
	c0, busy := in.Progress(1)
	assert.Equal(t, [2]any{uint64(0), false}, [2]any{c0, busy}, "unknown broker")
	a := &kgo.Record{Topic: "t", Partition: 0, Value: make([]byte, 10)}
	b := &kgo.Record{Topic: "t", Partition: 0, Key: []byte("k"), Value: make([]byte, 20)}
	c := &kgo.Record{Topic: "t", Partition: 1, Value: make([]byte, 5)}
	steps := []struct {
		do        func()
		count     uint64
		busy      bool
		p0, p1    int64
		rationale string
	}{
		{func() { in.OnProduceRecordPartitioned(a, 1) }, 1, true, 10, 0, "idle to busy"},
		{func() { in.OnProduceRecordPartitioned(b, 1) }, 1, true, 31, 0, "busy already"},
		{func() { in.OnProduceRecordPartitioned(c, 1) }, 1, true, 31, 5, "another partition, same broker"},
		{func() { in.OnProduceRecordUnbuffered(a, nil) }, 2, true, 21, 5, "acknowledged"},
		{func() { in.OnProduceRecordUnbuffered(b, fmt.Errorf("timed out")) }, 2, true, 0, 5, "failed: no progress"},
		{func() { in.OnProduceRecordUnbuffered(c, nil) }, 3, false, 0, 0, "acknowledged, now idle"},
		{func() { in.OnProduceRecordUnbuffered(c, nil) }, 3, false, 0, 0, "twice: ignored"},
		{func() { in.Add(1, 2, 0) }, 4, true, 0, 0, "Add from idle"},
		{func() { in.Add(1, -1, 0) }, 5, true, 0, 0, "Add relieving"},
	}
	for i, s := range steps {
		s.do()
		count, busy := in.Progress(1)
		assert.Equal(t, s.count, count, "step %d: %s", i, s.rationale)
		assert.Equal(t, s.busy, busy, "step %d: %s", i, s.rationale)
		assert.Equal(t, s.p0, in.PartitionBytes("t", 0), "step %d", i)
		assert.Equal(t, s.p1, in.PartitionBytes("t", 1), "step %d", i)
	}
	assert.Zero(t, in.PartitionBytes("other", 0))
	assert.Zero(t, in.PartitionBytes("t", 9))
}
