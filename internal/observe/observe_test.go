package observe

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/clock/clocktest"
	"github.com/kplan-dev/kplan/internal/topology"
)

var t0 = time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)

// layout1 is one topic "t" of one partition on brokers 1 (leader), 2, 3.
func layout1() *topology.Cluster {
	c := &topology.Cluster{Live: true, Brokers: []topology.Broker{{ID: 1}, {ID: 2}, {ID: 3}},
		Partitions: []topology.Partition{{Topic: "t", Partition: 0, Replicas: []int32{1, 2, 3}, Leader: 1, ISR: []int32{1, 2, 3}}}}
	c.Normalize()
	return c
}

// at is a sample of partition t-0 at second sec: end offset end, every
// replica size bytes, and committed offsets by group.
func at(sec float64, start, localStart, end, bytes int64, committed map[string]int64) Sample {
	s := Sample{At: t0.Add(time.Duration(sec * float64(time.Second))),
		Offsets: []PartitionOffsets{{Topic: "t", Partition: 0, End: end, Start: start, LocalStart: localStart}}}
	for _, b := range []int32{1, 2, 3} {
		s.Replicas = append(s.Replicas, ReplicaSize{Topic: "t", Partition: 0, Broker: b, Dir: "/d", Bytes: bytes})
	}
	for g, off := range committed {
		s.Committed = append(s.Committed, Committed{Group: g, Topic: "t", Partition: 0, Offset: off})
	}
	return s
}

func TestComputeOnePartition(t *testing.T) {
	for _, tc := range []struct {
		name    string
		samples []Sample
		// want
		traffic, idle, estimated bool
		recs, bytes, bpr         Rate
		bytesPerRecord           float64
		remote                   int64
	}{
		{
			name:    "steady, two samples",
			samples: []Sample{at(0, 0, 0, 0, 0, nil), at(10, 0, 0, 1000, 100_000, nil)},
			traffic: true, recs: Rate{100, 100, 100}, bytes: Rate{10_000, 10_000, 10_000}, bytesPerRecord: 100,
		},
		{
			name:    "three samples, uneven: the window's mean and the intervals' spread",
			samples: []Sample{at(0, 0, 0, 0, 0, nil), at(5, 0, 0, 100, 10_000, nil), at(10, 0, 0, 1000, 100_000, nil)},
			traffic: true, recs: Rate{100, 20, 180}, bytes: Rate{10_000, 2_000, 18_000}, bytesPerRecord: 100,
		},
		{
			name:    "no traffic: idle, bytes/record of the log on disk",
			samples: []Sample{at(0, 0, 0, 500, 50_000, nil), at(10, 0, 0, 500, 50_000, nil)},
			idle:    true, bytesPerRecord: 100,
		},
		{
			name:    "retention deleted a segment: bytes estimated from the interval that grew",
			samples: []Sample{at(0, 0, 0, 0, 0, nil), at(5, 0, 0, 500, 50_000, nil), at(10, 400, 400, 1000, 20_000, nil)},
			traffic: true, estimated: true, recs: Rate{100, 100, 100}, bytes: Rate{10_000, 10_000, 10_000}, bytesPerRecord: 100,
		},
		{
			name:    "tiered: records before the earliest local offset are remote",
			samples: []Sample{at(0, 0, 900, 1000, 10_000, nil), at(10, 0, 900, 2000, 110_000, nil)},
			traffic: true, recs: Rate{100, 100, 100}, bytes: Rate{10_000, 10_000, 10_000}, bytesPerRecord: 100, remote: 90_000,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Compute(layout1(), tc.samples)
			require.NoError(t, err)
			require.Len(t, r.Partitions, 1)
			p := r.Partitions[0]
			assert.Equal(t, tc.traffic, r.Traffic)
			assert.Equal(t, tc.idle, p.Idle)
			assert.Equal(t, tc.idle, r.Topics[0].Idle)
			assert.Equal(t, tc.estimated, p.Produce.BytesEstimated)
			assertRate(t, tc.recs, p.Produce.RecordsPerSecond, "records/s")
			assertRate(t, tc.bytes, p.Produce.BytesPerSecond, "bytes/s")
			assert.InDelta(t, tc.bytesPerRecord, p.Produce.BytesPerRecord, 1e-9)
			assert.Equal(t, tc.remote, p.RemoteBytes)
			assert.Equal(t, tc.remote > 0, p.RemoteEstimated)
			if tc.traffic {
				assert.Empty(t, r.Note)
			} else {
				assert.Equal(t, NoTrafficNote, r.Note)
			}
			// Leader 1 takes the produce and replicates it twice; 2 and 3
			// replicate it in.
			in := tc.bytes.Mean
			require.Len(t, r.Brokers, 3)
			assert.InDelta(t, in, r.Brokers[0].BytesIn, 1e-9)
			assert.InDelta(t, 2*in, r.Brokers[0].BytesOut, 1e-9)
			for _, b := range r.Brokers[1:] {
				assert.InDelta(t, in, b.BytesIn, 1e-9)
				assert.Zero(t, b.BytesOut)
			}
		})
	}
}

func assertRate(t *testing.T, want, got Rate, what string) {
	t.Helper()
	assert.InDelta(t, want.Mean, got.Mean, 1e-9, what+" mean")
	assert.InDelta(t, want.Min, got.Min, 1e-9, what+" min")
	assert.InDelta(t, want.Max, got.Max, 1e-9, what+" max")
}

func TestComputeGroups(t *testing.T) {
	s := []Sample{
		at(0, 0, 0, 0, 0, map[string]int64{"fast": 0, "stuck": 10}),
		at(10, 0, 0, 1000, 100_000, map[string]int64{"fast": 900, "stuck": 10, "late": 50}),
		at(20, 0, 0, 2000, 200_000, map[string]int64{"fast": 2000, "stuck": 10, "late": 550}),
	}
	r, err := Compute(layout1(), s)
	require.NoError(t, err)
	require.Len(t, r.Groups, 3)
	byName := map[string]GroupRead{}
	for _, g := range r.Groups {
		byName[g.Group] = g
	}
	assert.Equal(t, []string{"fast", "late", "stuck"}, r.Topics[0].Groups)
	fast := byName["fast"]
	assert.Equal(t, int64(2000), fast.Records)
	assertRate(t, Rate{100, 90, 110}, fast.RecordsPerSecond, "fast records/s")
	assert.InDelta(t, 10_000, fast.BytesPerSecond, 1e-9)
	assert.Zero(t, fast.Lag)
	// late committed from the second sample: 500 records in the 10 s it
	// was seen.
	assert.Equal(t, int64(500), byName["late"].Records)
	assertRate(t, Rate{50, 50, 50}, byName["late"].RecordsPerSecond, "late records/s")
	assert.Equal(t, int64(1450), byName["late"].Lag)
	assert.Zero(t, byName["stuck"].Records)
	assert.Equal(t, int64(1990), byName["stuck"].Lag)
	// The leader serves both moving groups.
	assert.InDelta(t, 10_000+5_000, r.Brokers[0].ConsumeOut, 1e-9)
	assert.InDelta(t, 15_000, r.Partitions[0].ConsumerBytesPerSecond, 1e-9)
}

func TestComputeRefuses(t *testing.T) {
	_, err := Compute(layout1(), []Sample{at(0, 0, 0, 0, 0, nil)})
	assert.ErrorIs(t, err, ErrTooFewSamples)
	_, err = Compute(layout1(), []Sample{at(5, 0, 0, 0, 0, nil), at(5, 0, 0, 0, 0, nil)})
	assert.ErrorContains(t, err, "sample 1")
}

func TestComputePartitionMissingFromSamples(t *testing.T) {
	c := layout1()
	c.Partitions = append(c.Partitions, topology.Partition{Topic: "u", Partition: 0, Replicas: []int32{2}, Leader: 2})
	c.Normalize()
	r, err := Compute(c, []Sample{at(0, 0, 0, 0, 0, nil), at(10, 0, 0, 100, 1000, nil)})
	require.NoError(t, err)
	require.Len(t, r.Partitions, 2)
	u := r.Partitions[1]
	assert.True(t, u.Idle)
	assert.Equal(t, int64(-1), u.SizeBytes)
	assert.Empty(t, u.Replicas)
	assert.True(t, r.Traffic, "t was written")
}

// randomCase is a random layout with random samples: offsets and sizes
// that only grow, and groups committing some partitions.
func randomCase(rng *rand.Rand) (*topology.Cluster, []Sample) {
	nb := 1 + rng.IntN(6)
	c := &topology.Cluster{Live: true}
	for b := range nb {
		c.Brokers = append(c.Brokers, topology.Broker{ID: int32(b + 1)})
	}
	for ti := range 1 + rng.IntN(4) {
		topic := string(rune('a' + ti))
		for p := range 1 + rng.IntN(5) {
			rf := 1 + rng.IntN(nb)
			perm := rng.Perm(nb)[:rf]
			reps := make([]int32, rf)
			for i, x := range perm {
				reps[i] = int32(x + 1)
			}
			leader := reps[rng.IntN(rf)]
			c.Partitions = append(c.Partitions, topology.Partition{Topic: topic, Partition: int32(p), Replicas: reps, Leader: leader})
		}
	}
	c.Normalize()
	n := 2 + rng.IntN(4)
	groups := []string{"g1", "g2"}
	end := map[topology.Key]int64{}
	size := map[topology.Key]int64{}
	comm := map[string]map[topology.Key]int64{"g1": {}, "g2": {}}
	var out []Sample
	at := t0
	for range n {
		s := Sample{At: at}
		for i := range c.Partitions {
			p := &c.Partitions[i]
			k := p.Key()
			s.Offsets = append(s.Offsets, PartitionOffsets{Topic: k.Topic, Partition: k.Partition, End: end[k], LocalStart: -1})
			for _, r := range p.Replicas {
				s.Replicas = append(s.Replicas, ReplicaSize{Topic: k.Topic, Partition: k.Partition, Broker: r, Dir: "/d" + string('0'+r%2), Bytes: size[k]})
			}
			for _, g := range groups {
				if (int(p.Partition)+len(g)+len(k.Topic))%3 != 0 {
					s.Committed = append(s.Committed, Committed{Group: g, Topic: k.Topic, Partition: k.Partition, Offset: comm[g][k]})
				}
			}
		}
		out = append(out, s)
		at = at.Add(time.Duration(1+rng.IntN(10_000)) * time.Millisecond)
		for i := range c.Partitions {
			k := c.Partitions[i].Key()
			w := int64(rng.IntN(3)) * int64(rng.IntN(1000))
			end[k] += w
			size[k] += w * int64(10+rng.IntN(100))
			for _, g := range groups {
				comm[g][k] = min(end[k], comm[g][k]+int64(rng.IntN(800)))
			}
		}
	}
	return c, out
}

// TestComputeLaws checks, on random clusters, the laws the loads obey:
// every byte a producer writes enters RF brokers (once at the leader,
// once per follower), leaves the leader once per follower, and consumers'
// bytes leave leaders; the bytes on disk add up the same per broker, per
// log dir and per replica; the rates equal their definitions computed by
// hand.
func TestComputeLaws(t *testing.T) {
	rng := rand.New(rand.NewPCG(22, 23))
	for i := range 300 {
		c, samples := randomCase(rng)
		r, err := Compute(c, samples)
		require.NoError(t, err, "case %d", i)
		var produceRF, produceFollowers, consumed, in, out float64
		var replicaBytes, brokerBytes, dirBytes int64
		first, last := samples[0], samples[len(samples)-1]
		window := last.At.Sub(first.At).Seconds()
		for j, p := range r.Partitions {
			lp := c.Partitions[j]
			produceRF += p.Produce.BytesPerSecond.Mean * float64(len(lp.Replicas))
			produceFollowers += p.Produce.BytesPerSecond.Mean * float64(len(lp.Replicas)-1)
			consumed += p.ConsumerBytesPerSecond
			for _, rp := range p.Replicas {
				replicaBytes += rp.Bytes
			}
			// Brute force: records/s is the end offsets' delta over the window.
			want := float64(last.Offsets[j].End-first.Offsets[j].End) / window
			assert.InDelta(t, want, p.Produce.RecordsPerSecond.Mean, 1e-6*max(1, want), "case %d %s-%d", i, p.Topic, p.Partition)
			assert.LessOrEqual(t, p.Produce.RecordsPerSecond.Min, p.Produce.RecordsPerSecond.Mean+1e-9)
			assert.GreaterOrEqual(t, p.Produce.RecordsPerSecond.Max, p.Produce.RecordsPerSecond.Mean-1e-9)
			assert.Equal(t, want == 0, p.Idle)
		}
		for _, b := range r.Brokers {
			in += b.BytesIn
			out += b.BytesOut
			brokerBytes += b.Bytes
		}
		for _, d := range r.LogDirs {
			dirBytes += d.Bytes
		}
		tol := 1e-6 * max(1, produceRF)
		assert.InDelta(t, produceRF, in, tol, "case %d: bytes in = produce x RF", i)
		assert.InDelta(t, produceFollowers+consumed, out, tol+1e-6*consumed, "case %d: bytes out = consumers + produce x (RF-1)", i)
		assert.Equal(t, replicaBytes, brokerBytes, "case %d", i)
		assert.Equal(t, replicaBytes, dirBytes, "case %d", i)
		var topicRecords int64
		for _, tl := range r.Topics {
			topicRecords += tl.Produce.Records
			assert.LessOrEqual(t, tl.Produce.RecordsPerSecond.Min, tl.Produce.RecordsPerSecond.Mean*(1+1e-9)+1e-9, "case %d %s", i, tl.Topic)
			assert.GreaterOrEqual(t, tl.Produce.RecordsPerSecond.Max*(1+1e-9)+1e-9, tl.Produce.RecordsPerSecond.Mean, "case %d %s", i, tl.Topic)
		}
		var partRecords int64
		for _, p := range r.Partitions {
			partRecords += p.Produce.Records
		}
		assert.Equal(t, partRecords, topicRecords, "case %d", i)
		assert.Equal(t, r.Traffic, r.Note == "", "case %d", i)
		assert.False(t, math.IsNaN(in) || math.IsNaN(out), "case %d", i)
	}
}

type countingSampler struct{ n int }

func (c *countingSampler) Sample(context.Context) (Sample, error) {
	c.n++
	if c.n > 3 {
		return Sample{}, errors.New("broker gone")
	}
	return Sample{Offsets: []PartitionOffsets{{Topic: "t", End: int64(c.n)}}}, nil
}

func TestRun(t *testing.T) {
	clk := clocktest.New()
	var seen []int
	s, err := Run(context.Background(), &countingSampler{}, clk, Plan{Window: 10 * time.Second, Samples: 3}, func(i int, _ Sample) { seen = append(seen, i) })
	require.NoError(t, err)
	require.Len(t, s, 3)
	assert.Equal(t, []int{0, 1, 2}, seen)
	assert.Equal(t, 5*time.Second, s[1].At.Sub(s[0].At))
	assert.Equal(t, 10*time.Second, s[2].At.Sub(s[0].At))
	assert.Equal(t, []time.Duration{5 * time.Second, 5 * time.Second}, clk.Sleeps())

	_, err = Run(context.Background(), &countingSampler{}, clocktest.New(), Plan{Window: time.Second, Samples: 4}, nil)
	assert.ErrorContains(t, err, "sample 4 of 4: broker gone")

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = Run(ctx, &countingSampler{}, clocktest.New(), Plan{Window: time.Second, Samples: 2}, nil)
	assert.ErrorIs(t, err, context.Canceled)
}

func TestPlanValidate(t *testing.T) {
	for _, tc := range []struct {
		plan  Plan
		field string
	}{
		{Plan{Window: time.Minute, Samples: 2}, ""},
		{Plan{Window: time.Minute, Samples: 1}, FieldSamples},
		{Plan{Window: time.Minute, Samples: 10001}, FieldSamples},
		{Plan{Window: 0, Samples: 2}, FieldWindow},
		{Plan{Window: -time.Second, Samples: 2}, FieldWindow},
		{Plan{Window: time.Millisecond, Samples: 3}, FieldWindow},
	} {
		err := tc.plan.Validate()
		if tc.field == "" {
			assert.NoError(t, err, "%+v", tc.plan)
			continue
		}
		var pe *PlanError
		require.ErrorAs(t, err, &pe, "%+v", tc.plan)
		assert.Equal(t, tc.field, pe.Field)
	}
}
