package partitioner

import (
	"fmt"
	"math/rand"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
)

// fakeLeaders is a LeaderSource over a fixed table; -1 means no leader.
type fakeLeaders struct {
	leader []int32
	epoch  []int32
	calls  int
}

func newFake(leaders ...int32) *fakeLeaders {
	return &fakeLeaders{leader: leaders, epoch: make([]int32, len(leaders))}
}

func (f *fakeLeaders) src(_ string, p int32) (int32, int32, bool) {
	f.calls++
	if int(p) >= len(f.leader) || f.leader[p] < 0 {
		return -1, -1, false
	}
	return f.leader[p], f.epoch[p], true
}

func (f *fakeLeaders) move(p, to int32) {
	f.leader[p] = to
	f.epoch[p]++
}

// pick partitions n records and counts them per broker (by the fake's leader
// at the time of the pick) and per partition.
func pick(tp kgo.TopicPartitioner, f *fakeLeaders, n int) (perBroker map[int32]int, perPart map[int32]int) {
	return pickRecord(tp, f, n, &kgo.Record{Value: []byte("x")})
}

// pickRecord is pick with the record given.
func pickRecord(tp kgo.TopicPartitioner, f *fakeLeaders, n int, r *kgo.Record) (perBroker map[int32]int, perPart map[int32]int) {
	perBroker, perPart = map[int32]int{}, map[int32]int{}
	for range n {
		p := int32(tp.Partition(r, len(f.leader)))
		perPart[p]++
		perBroker[f.leader[p]]++
	}
	return perBroker, perPart
}

func TestNodeBalancesBrokers(t *testing.T) {
	tests := []struct {
		name    string
		leaders []int32
	}{
		{"one partition per broker", []int32{1, 2, 3}},
		{"broker 1 leads two", []int32{1, 2, 1}},
		{"uneven 3-1-2", []int32{1, 1, 1, 2, 3, 3}},
		{"single broker", []int32{4, 4, 4}},
		{"a leaderless partition", []int32{1, -1, 2, 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(tt.leaders...)
			tp := NewNode(f.src).ForTopic("t")
			parts := map[int32][]int32{}
			for p, l := range tt.leaders {
				if l >= 0 {
					parts[l] = append(parts[l], int32(p))
				}
			}
			const perCycle = 60 // divisible by every broker and partition count above
			n := perCycle * len(parts) * 4
			perBroker, perPart := pick(tp, f, n)
			for b, ps := range parts {
				assert.Equal(t, n/len(parts), perBroker[b], "broker %d", b)
				for _, p := range ps {
					assert.Equal(t, n/len(parts)/len(ps), perPart[p], "partition %d", p)
				}
			}
			assert.Zero(t, perBroker[-1], "records to leaderless partitions")
		})
	}
}

func TestNodeFollowsLeaderChange(t *testing.T) {
	f := newFake(1, 2, 3)
	tp := NewNode(f.src).ForTopic("t").(*brokerTopic)
	before, _ := pick(tp, f, 300)
	assert.Equal(t, map[int32]int{1: 100, 2: 100, 3: 100}, before)

	f.move(2, 1) // broker 3 died; broker 1 took partition 2
	after, perPart := pick(tp, f, 300)
	assert.Equal(t, map[int32]int{1: 150, 2: 150}, after, "no record may go to broker 3 once the source knows")
	assert.Equal(t, 150, perPart[1])
	assert.InDelta(t, 75, perPart[0], 1)
	assert.InDelta(t, 75, perPart[2], 1)
	assert.Equal(t, map[int32][]int32{1: {0, 2}, 2: {1}}, tp.Layout())

	f.move(2, 3) // broker 3 is back and leads again
	back, _ := pick(tp, f, 300)
	assert.Equal(t, map[int32]int{1: 100, 2: 100, 3: 100}, back)
}

func TestLeaderlessPartitionReturns(t *testing.T) {
	f := newFake(1, 2, -1)
	tp := NewNode(f.src).ForTopic("t")
	got, _ := pick(tp, f, 100)
	assert.Equal(t, map[int32]int{1: 50, 2: 50}, got)
	f.leader[2] = 3
	f.epoch[2] = 7
	pick(tp, f, 1) // one record probes the leaderless partition and rebuilds
	got, _ = pick(tp, f, 300)
	assert.Equal(t, map[int32]int{1: 100, 2: 100, 3: 100}, got)
}

func TestNoLeaderFallsBackToAllPartitions(t *testing.T) {
	f := newFake(-1, -1, -1, -1)
	tp := NewNode(f.src).ForTopic("t")
	_, perPart := pick(tp, f, 40)
	assert.Equal(t, map[int32]int{0: 10, 1: 10, 2: 10, 3: 10}, perPart)
}

func TestPartitionCountGrows(t *testing.T) {
	f := newFake(1, 2)
	tp := NewNode(f.src).ForTopic("t")
	pick(tp, f, 10)
	f.leader = append(f.leader, 3, 3)
	f.epoch = append(f.epoch, 0, 0)
	got, _ := pick(tp, f, 300)
	assert.Equal(t, map[int32]int{1: 100, 2: 100, 3: 100}, got)
}

// Property: whatever the sequence of leader moves, every pick is a valid
// partition whose leader (per the source at that moment) exists, and the
// node partitioner never sends more than one record in a row to the same
// broker while another leads a partition of the topic.
func TestNodePropertyRandomMoves(t *testing.T) {
	rng := rand.New(rand.NewSource(42))
	for trial := range 200 {
		nparts := 1 + rng.Intn(12)
		nbrokers := 1 + rng.Intn(5)
		f := newFake(make([]int32, nparts)...)
		for p := range f.leader {
			f.leader[p] = int32(1 + rng.Intn(nbrokers))
		}
		tp := NewNode(f.src).ForTopic("t")
		r := &kgo.Record{}
		for step := range 300 {
			if rng.Intn(10) == 0 {
				p := int32(rng.Intn(nparts))
				if rng.Intn(4) == 0 {
					f.move(p, -1)
				} else {
					f.move(p, int32(1+rng.Intn(nbrokers)))
				}
			}
			got := tp.Partition(r, nparts)
			require.True(t, got >= 0 && got < nparts, "trial %d step %d: %d out of range", trial, step, got)
			anyLeader := false
			for _, l := range f.leader {
				anyLeader = anyLeader || l >= 0
			}
			if anyLeader {
				require.GreaterOrEqual(t, f.leader[got], int32(0), "trial %d step %d: picked leaderless partition %d", trial, step, got)
			}
		}
	}
}

func TestSQFPicksLeastLoaded(t *testing.T) {
	f := newFake(1, 2, 3, 3)
	in := NewInflight()
	tp := NewSQF(f.src, in, WithSlack(0)).ForTopic("t")
	r := &kgo.Record{}
	in.Add(1, 10, 0)
	in.Add(2, 3, 0)
	in.Add(3, 7, 0)
	for range 5 {
		assert.Equal(t, 1, tp.Partition(r, 4), "broker 2 (partition 1) has the least in flight")
	}
	in.Add(2, 20, 0) // now broker 3 is least: its partitions 2 and 3 alternate
	assert.Equal(t, 2, tp.Partition(r, 4))
	assert.Equal(t, 3, tp.Partition(r, 4))
	assert.Equal(t, 2, tp.Partition(r, 4))

	bytesTP := NewSQF(f.src, in, WithBytes(), WithSlack(0)).ForTopic("t")
	in.Add(1, 0, 100)
	in.Add(2, 0, 1)
	in.Add(3, 0, 50)
	assert.Equal(t, 1, bytesTP.Partition(r, 4), "by bytes broker 2 is least")
}

// Within the slack every broker is a tie and sqf serves them round robin;
// beyond it sqf avoids the broker that fell behind, whatever the rotation.
func TestSQFSlack(t *testing.T) {
	f := newFake(1, 2, 3)
	r := &kgo.Record{}
	tests := []struct {
		name   string
		slack  int64
		loads  [3]int64
		want   map[int32]int
		reason string
	}{
		{"within slack: round robin", 8, [3]int64{8, 0, 3}, map[int32]int{1: 100, 2: 100, 3: 100}, "loads differ by at most the slack"},
		{"beyond slack: avoid broker 1", 8, [3]int64{9, 0, 3}, map[int32]int{2: 150, 3: 150}, "broker 1 is 9 above the least"},
		{"slack 0: only the least", 0, [3]int64{1, 0, 3}, map[int32]int{2: 300}, "pure shortest queue"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := NewInflight()
			for i, l := range tt.loads {
				in.Add(int32(i+1), l, 0)
			}
			tp := NewSQF(f.src, in, WithSlack(tt.slack)).ForTopic("t")
			got := map[int32]int{}
			for range 300 {
				got[f.leader[tp.Partition(r, 3)]]++
			}
			assert.Equal(t, tt.want, got, tt.reason)
		})
	}
	assert.Equal(t, int64(5), NewSQF(f.src, NewInflight(), WithSlack(5)).Slack())
	assert.Equal(t, int64(0), NewSQF(f.src, NewInflight(), WithSlack(-3)).Slack())
	assert.Equal(t, int64(DefaultSlackRecords), NewSQF(f.src, NewInflight()).Slack())
	assert.Equal(t, int64(DefaultSlackBytes), NewSQF(f.src, NewInflight(), WithBytes()).Slack())
}

func TestSQFIdleIsRoundRobin(t *testing.T) {
	f := newFake(1, 2, 1)
	tp := NewSQF(f.src, NewInflight()).ForTopic("t")
	got, _ := pick(tp, f, 300)
	assert.Equal(t, map[int32]int{1: 150, 2: 150}, got)
}

// The thesis's §6.4 case: topic A has one partition on broker 1 and two on
// broker 2, topic B one on each of brokers 2 and 3; producer X writes A, Y
// writes B, equally fast, and nothing is acknowledged. Node (or SQF per
// producer) gives brokers (a/2, a/2+b/2, b/2); one shared SQF instance
// balances the combined flow.
func TestSQFSharedBalancesCombinedFlow(t *testing.T) {
	fa := newFake(1, 2, 2)
	fb := newFake(2, 3)
	const n = 3000
	run := func(pa, pb kgo.Partitioner, in *Inflight) map[int32]int {
		ta, tb := pa.ForTopic("A"), pb.ForTopic("B")
		total := map[int32]int{}
		r := &kgo.Record{Value: []byte("v")}
		for range n {
			l := fa.leader[ta.Partition(r, 3)]
			total[l]++
			if in != nil {
				in.Add(l, 1, 1)
			}
			l = fb.leader[tb.Partition(r, 2)]
			total[l]++
			if in != nil {
				in.Add(l, 1, 1)
			}
		}
		return total
	}
	node := run(NewNode(fa.src), NewNode(fb.src), nil)
	assert.Equal(t, map[int32]int{1: n / 2, 2: n, 3: n / 2}, node)

	shared := NewInflight()
	sqf := run(NewSQF(fa.src, shared, WithSlack(0)), NewSQF(fb.src, shared, WithSlack(0)), shared)
	for b := int32(1); b <= 3; b++ {
		assert.InDelta(t, 2*n/3, sqf[b], 2, "broker %d with a shared SQF", b)
	}
}

func TestInflightPairsExactly(t *testing.T) {
	in := NewInflight()
	recs := make([]*kgo.Record, 100)
	for i := range recs {
		recs[i] = &kgo.Record{Partition: int32(i % 7), Key: []byte("k"), Value: []byte(fmt.Sprint(i))}
		in.OnProduceRecordPartitioned(recs[i], int32(1+i%3))
	}
	r1, _ := in.Broker(1)
	assert.Equal(t, int64(34), r1)
	// A record that failed before partitioning is unbuffered without having
	// been counted: nothing changes.
	in.OnProduceRecordUnbuffered(&kgo.Record{Partition: 0}, fmt.Errorf("no topic"))
	r1, _ = in.Broker(1)
	assert.Equal(t, int64(34), r1)
	for _, r := range recs {
		in.OnProduceRecordUnbuffered(r, nil)
		in.OnProduceRecordUnbuffered(r, nil) // a second call is ignored
	}
	for b := int32(1); b <= 3; b++ {
		rec, by := in.Broker(b)
		assert.Zero(t, rec, "broker %d records", b)
		assert.Zero(t, by, "broker %d bytes", b)
	}
	rec, by := in.Broker(99)
	assert.Zero(t, rec+by)
}

// Water filling: with every pick charged to its broker (as the hook does) and
// nothing acknowledged, SQF must end with loads within one record of each
// other whatever the starting loads in the exact scan (few brokers), and
// within refillEvery/horizon records with the horizon scan (many brokers),
// whose kept brokers take that many records each between scans.
func TestSQFWaterFilling(t *testing.T) {
	for _, nb := range []int{3, exactBrokers, exactBrokers + 1, 40, 100} {
		t.Run(fmt.Sprintf("%d brokers", nb), func(t *testing.T) {
			rng := rand.New(rand.NewSource(int64(nb)))
			f := newFake(make([]int32, 3*nb)...)
			for p := range f.leader {
				f.leader[p] = int32(1 + p%nb)
			}
			in := NewInflight()
			start := make(map[int32]int64)
			var maxStart int64
			for id := int32(1); id <= int32(nb); id++ {
				start[id] = rng.Int63n(50)
				maxStart = max(maxStart, start[id])
				in.Add(id, start[id], 0)
			}
			tp := NewSQF(f.src, in, WithSlack(0)).ForTopic("t")
			// Enough records to lift every broker to the highest start and beyond.
			total := int(maxStart)*nb + 7*nb + 3
			r := &kgo.Record{}
			for range total {
				p := tp.Partition(r, len(f.leader))
				in.Add(f.leader[p], 1, 0)
			}
			lo, hi := int64(1<<62), int64(0)
			for id := int32(1); id <= int32(nb); id++ {
				rec, _ := in.Broker(id)
				lo, hi = min(lo, rec), max(hi, rec)
			}
			spread := int64(1)
			if nb > exactBrokers {
				spread = refillEvery / horizon
			}
			assert.LessOrEqual(t, hi-lo, spread, "loads %d..%d", lo, hi)
		})
	}
}

// TestInflightAnyOrder unbuffers records in a random order (franz-go answers
// a partition's records oldest first, but the tracker must stay exact
// whatever the order), mixed with records that were never partitioned, and
// checks every broker's gauges against a plain count after each step.
func TestInflightAnyOrder(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	in := NewInflight()
	want := map[int32][2]int64{}
	var live []*kgo.Record
	charged := map[*kgo.Record]int32{}
	check := func(step int) {
		for b := int32(1); b <= 4; b++ {
			rec, by := in.Broker(b)
			require.Equal(t, want[b], [2]int64{rec, by}, "step %d broker %d", step, b)
		}
	}
	for step := range 5000 {
		switch op := rng.Intn(10); {
		case op < 5: // partition a new record
			r := &kgo.Record{Topic: []string{"a", "b"}[rng.Intn(2)], Partition: int32(rng.Intn(5)), Value: make([]byte, rng.Intn(50))}
			b := int32(1 + rng.Intn(4))
			in.OnProduceRecordPartitioned(r, b)
			live = append(live, r)
			charged[r] = b
			w := want[b]
			want[b] = [2]int64{w[0] + 1, w[1] + int64(len(r.Value))}
		case op < 9 && len(live) > 0: // unbuffer one, mostly the oldest of its partition
			i := 0
			if rng.Intn(4) == 0 {
				i = rng.Intn(len(live))
			}
			r := live[i]
			live = append(live[:i], live[i+1:]...)
			in.OnProduceRecordUnbuffered(r, nil)
			b := charged[r]
			w := want[b]
			want[b] = [2]int64{w[0] - 1, w[1] - int64(len(r.Value))}
		default: // a record that failed before partitioning
			in.OnProduceRecordUnbuffered(&kgo.Record{Topic: "a", Partition: int32(rng.Intn(7) - 1)}, fmt.Errorf("no"))
		}
		check(step)
	}
	for _, r := range live {
		in.OnProduceRecordUnbuffered(r, nil)
	}
	for b := int32(1); b <= 4; b++ {
		rec, by := in.Broker(b)
		assert.Zero(t, rec+by, "broker %d after draining", b)
	}
}

// With WithStick(n), node and sqf send n records in a row to each chosen
// partition, then choose again: shares stay equal to within n records, and a
// leader change ends a run at once.
func TestStick(t *testing.T) {
	for _, name := range []string{"node", "sqf"} {
		t.Run(name, func(t *testing.T) {
			f := newFake(1, 2, 3, 1, 2, 3)
			p := kgo.Partitioner(NewNode(f.src, WithStick(4)))
			if name == "sqf" {
				p = NewSQF(f.src, NewInflight(), WithStick(4))
			}
			tp := p.ForTopic("t")
			r := &kgo.Record{Value: []byte("x")}
			var seq []int
			for range 24 {
				seq = append(seq, tp.Partition(r, len(f.leader)))
			}
			for i := 0; i < len(seq); i += 4 {
				assert.Equal(t, []int{seq[i], seq[i], seq[i], seq[i]}, seq[i:i+4], "run %d", i/4)
				if i > 0 {
					assert.NotEqual(t, f.leader[seq[i-1]], f.leader[seq[i]], "runs move to the next broker")
				}
			}
			perBroker, _ := pick(tp, f, 1200)
			assert.Equal(t, map[int32]int{1: 400, 2: 400, 3: 400}, perBroker)

			// A run in progress on broker 3's partition ends when broker 1
			// takes it over: no further record goes to broker 3.
			for f.leader[tp.Partition(r, len(f.leader))] != 3 {
			}
			f.move(2, 1)
			f.move(5, 2)
			after, _ := pick(tp, f, 40)
			assert.Zero(t, after[3], "records to broker 3 after it lost its partitions")
			assert.InDelta(t, 20, after[1], 4)
		})
	}
	assert.Equal(t, 1, NewNode(newFake(1).src, WithStick(0)).stick, "below 1 is a choice per record")
}
