package dist

import (
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/stats"
)

var t0 = time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)

func testPlan(workers int, parts ...string) *Plan {
	p := &Plan{
		Workers: workers, EnvelopeRun: 7, Epoch: t0, RecordSize: 100, Acks: "all", Seed: 1,
		ObjectiveNS: int64(50 * time.Millisecond), LatencyCeilingNS: int64(10 * time.Minute),
		MaxBufferedRecords: 1000, Stick: 1, GuardNS: int64(time.Second), HeartbeatDeadlineNS: int64(5 * time.Second), ResultsTopic: "r",
		Phases: []PhaseStart{{Name: "warm-up", Start: t0}, {Name: "before", Start: t0.Add(time.Second), DurationNS: int64(time.Second)}},
	}
	for _, name := range parts {
		p.Streams = append(p.Streams, Stream{Partitioner: name, Topic: "x-" + name})
	}
	return p
}

// rec is one record as a worker saw it.
type rec struct {
	seq    uint64
	broker int32
	part   int32
	bytes  int64
	lat    time.Duration
	acked  bool
	failed bool
}

// report builds the report a worker's producer would publish for recs.
func report(t *testing.T, p *Plan, worker, stream int, phase string, recs []rec) PhaseReport {
	t.Helper()
	l, err := stats.NewLatency(time.Duration(p.LatencyCeilingNS), time.Duration(p.ObjectiveNS))
	require.NoError(t, err)
	r := PhaseReport{Worker: worker, Stream: stream, Phase: phase, PerBroker: map[string]BrokerCount{}, PerPartition: map[string]int64{}}
	var acked []uint64
	for _, x := range recs {
		r.Sent++
		switch {
		case x.acked:
			r.Acked++
			r.AckedBytes += x.bytes
			k := strconv.Itoa(int(x.broker))
			bc := r.PerBroker[k]
			bc.Records++
			bc.Bytes += x.bytes
			r.PerBroker[k] = bc
			r.PerPartition[strconv.Itoa(int(x.part))]++
			l.Record(x.lat)
			acked = append(acked, x.seq)
		case x.failed:
			r.Failed++
		}
	}
	r.AckedSeqs = Ranges(acked)
	r.Violating, r.Clamped = l.Violating(), l.Clamped()
	if r.Acked > 0 {
		r.Latency, err = l.Encode()
		require.NoError(t, err)
	}
	// Through the wire, as the coordinator reads it.
	b, err := Encode(Message{Kind: KindResult, Run: "run", Result: &r})
	require.NoError(t, err)
	m, err := Decode(b)
	require.NoError(t, err)
	return *m.Result
}

// TestMergePercentilesEqualUnion: the percentiles of the merged
// histograms equal those of one histogram of every raw sample, and both
// are within HdrHistogram's precision (3 significant digits) of the exact
// percentiles of the raw samples.
func TestMergePercentilesEqualUnion(t *testing.T) {
	for seed := range uint64(5) {
		rng := rand.New(rand.NewPCG(seed, 1))
		p := testPlan(3, "roundrobin")
		union, err := stats.NewLatency(10*time.Minute, 50*time.Millisecond)
		require.NoError(t, err)
		var raw []float64
		var reports []PhaseReport
		for w := range 3 {
			var recs []rec
			for i := range 2000 + rng.IntN(3000) {
				// Whole microseconds, log-normal-ish, with each worker's
				// own scale: the histograms differ.
				us := int64(math.Exp(rng.NormFloat64()*1.2+7+float64(w))) + 1
				d := time.Duration(us) * time.Microsecond
				recs = append(recs, rec{seq: uint64(i), broker: 1, bytes: 100, lat: d, acked: true})
				union.Record(d)
				raw = append(raw, float64(us))
			}
			reports = append(reports, report(t, p, w, 0, "before", recs))
		}
		m, err := Merge(Input{Plan: p, Ran: []string{"before"}, Reports: reports})
		require.NoError(t, err)
		got := m.Partitioners[0].Phases["before"].Latency
		assert.Equal(t, union.Summary(), got.Summary(), "seed %d", seed)

		slices.Sort(raw)
		for _, q := range []struct {
			name string
			v    float64
			got  float64
		}{{"p50", 50, got.Summary().P50}, {"p95", 95, got.Summary().P95}, {"p99", 99, got.Summary().P99}, {"p99.9", 99.9, got.Summary().P999}} {
			// HdrHistogram's percentile is the sample of rank
			// round(q% of n), reported as the highest value equivalent to
			// it at 3 digits.
			rank := min(max(int(q.v/100*float64(len(raw))+0.5), 1), len(raw))
			exact := raw[rank-1] / 1000 // ms
			assert.InEpsilon(t, exact, q.got, 1e-3, "seed %d %s", seed, q.name)
			assert.GreaterOrEqual(t, q.got, exact, "seed %d %s", seed, q.name)
		}
	}
}

// TestMergeCountsExact: every count of the merge equals the brute-force
// sum over the records the workers saw, on random runs.
func TestMergeCountsExact(t *testing.T) {
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 2))
		parts := []string{"roundrobin", "node"}
		workers := 1 + rng.IntN(4)
		p := testPlan(workers, parts...)
		phases := []string{"warm-up", "before", "after"}
		type want struct{ sent, acked, failed, bytes, lost, dups int64 }
		wantPart := map[string]*want{}
		wantBroker := map[string]map[int32]int64{} // partitioner/phase -> broker -> records
		reads := map[int][]uint8{}
		var reports []PhaseReport
		for w := range workers {
			for s, st := range p.Streams {
				idx := ProducerIndex(w, s, len(p.Streams))
				seq := uint64(0)
				for _, ph := range phases {
					var recs []rec
					for range rng.IntN(300) {
						x := rec{seq: seq, broker: int32(1 + rng.IntN(3)), part: int32(rng.IntN(6)), bytes: int64(50 + rng.IntN(50)), lat: time.Duration(1+rng.IntN(100000)) * time.Microsecond}
						seq++
						switch rng.IntN(10) {
						case 0:
							x.failed = true
						case 1: // no answer
						default:
							x.acked = true
						}
						n := uint8(0)
						switch r := rng.IntN(20); {
						case r == 0 && x.acked: // lost
						case r == 1: // duplicated
							n = 2
						case x.acked:
							n = 1
						}
						for uint64(len(reads[idx])) <= x.seq {
							reads[idx] = append(reads[idx], 0)
						}
						reads[idx][x.seq] = n
						wp := wantPart[st.Partitioner]
						if wp == nil {
							wp = &want{}
							wantPart[st.Partitioner] = wp
						}
						wp.sent++
						if n > 1 {
							wp.dups += int64(n) - 1
						}
						if x.failed {
							wp.failed++
						}
						if x.acked {
							wp.acked++
							wp.bytes += x.bytes
							if n == 0 {
								wp.lost++
							}
							k := st.Partitioner + "/" + ph
							if wantBroker[k] == nil {
								wantBroker[k] = map[int32]int64{}
							}
							wantBroker[k][x.broker]++
						}
						recs = append(recs, x)
					}
					reports = append(reports, report(t, p, w, s, ph, recs))
				}
			}
		}
		rng.Shuffle(len(reports), func(i, j int) { reports[i], reports[j] = reports[j], reports[i] })
		reports = append(reports, reports[0]) // read twice: counts once
		m, err := Merge(Input{Plan: p, Ran: phases, Reports: reports, Reads: reads})
		require.NoError(t, err)
		assert.Empty(t, m.Missing)
		require.Len(t, m.Partitioners, 2)
		for _, pf := range m.Partitioners {
			w := wantPart[pf.Name]
			if w == nil {
				w = &want{}
			}
			var bytes int64
			for ph, f := range pf.Phases {
				bytes += f.AckedBytes
				got := map[int32]int64{}
				for id, bc := range f.PerBroker {
					got[id] = bc.Records
				}
				wb := wantBroker[pf.Name+"/"+ph]
				if wb == nil {
					wb = map[int32]int64{}
				}
				assert.Equal(t, wb, got, "seed %d %s %s", seed, pf.Name, ph)
				assert.Equal(t, f.Acked, f.Latency.Count(), "seed %d: one latency per acked record", seed)
			}
			assert.Equal(t, *w, want{pf.Sent, pf.Acked, pf.Failed, bytes, pf.Lost, pf.Duplicates}, "seed %d %s", seed, pf.Name)
		}
		var read int64
		for _, wf := range m.Workers {
			read += wf.Read
		}
		var wantRead int64
		for _, rs := range reads {
			for _, n := range rs {
				if n > 0 {
					wantRead++
				}
			}
		}
		assert.Equal(t, wantRead, read, "seed %d: each record read counted once", seed)
	}
}

// TestMergeMissing: a worker without a complete report of a phase is
// named with its phase and reason, and none of its figures of that phase
// are merged.
func TestMergeMissing(t *testing.T) {
	p := testPlan(3, "roundrobin", "node")
	phases := []string{"before", "after"}
	one := func(w, s int, ph string) PhaseReport {
		return report(t, p, w, s, ph, []rec{{seq: 0, broker: int32(w + 1), bytes: 100, lat: time.Millisecond, acked: true}})
	}
	var reports []PhaseReport
	for w := range 3 {
		for s := range 2 {
			for _, ph := range phases {
				switch {
				case w == 1 && ph == "after" && s == 1:
					// Worker 1 died before its node producer's after report.
				case w == 2 && ph == "after":
					r := report(t, p, w, s, ph, nil)
					r.Missed = "learnt of the start 3s late (guard 1s)"
					reports = append(reports, r)
				case w == 0:
					// Worker 0 measured its clock: 2 s behind, corrected.
					r := one(w, s, ph)
					r.ClockKnown, r.ClockSkewNS, r.ClockUncertaintyNS, r.ClockCorrected = true, int64(2*time.Second), int64(time.Millisecond), true
					reports = append(reports, r)
				default:
					reports = append(reports, one(w, s, ph))
				}
			}
		}
	}
	m, err := Merge(Input{Plan: p, Ran: phases, Reports: reports})
	require.NoError(t, err)
	assert.Equal(t, &WorkerClock{Skew: Offset{Offset: 2 * time.Second, Uncertainty: time.Millisecond}, Corrected: true}, m.Workers[0].Clock)
	assert.Nil(t, m.Workers[1].Clock, "a worker whose reports carry no clock")
	assert.Equal(t, []Missing{
		{Worker: 1, Phase: "after", Reason: "no report"},
		{Worker: 2, Phase: "after", Reason: "learnt of the start 3s late (guard 1s)"},
	}, m.Missing)
	assert.Equal(t, []string{"after"}, m.Workers[1].Missed)
	assert.Empty(t, m.Workers[0].Missed)
	for _, pf := range m.Partitioners {
		// Worker 1's roundrobin after report exists but its phase is
		// incomplete: only worker 0 is in.
		after := pf.Phases["after"]
		assert.Equal(t, []int{0}, after.Workers, pf.Name)
		assert.Equal(t, int64(1), after.Acked, pf.Name)
		assert.Equal(t, map[int32]BrokerCount{1: {Records: 1, Bytes: 100}}, after.PerBroker, pf.Name)
		assert.Equal(t, []int{0, 1, 2}, pf.Phases["before"].Workers, pf.Name)
		assert.Equal(t, int64(3), pf.Phases["before"].Acked, pf.Name)
	}
}

// TestMergeSkew: the skew is over the leaders the coordinator saw, a leader
// without records included; without leaders, over the brokers that
// acknowledged.
func TestMergeSkew(t *testing.T) {
	p := testPlan(2, "roundrobin")
	var reports []PhaseReport
	for w := range 2 {
		var recs []rec
		for i := range 300 {
			recs = append(recs, rec{seq: uint64(i), broker: int32(1 + i%2), bytes: 10, lat: time.Millisecond, acked: true})
		}
		reports = append(reports, report(t, p, w, 0, "after", recs))
	}
	m, err := Merge(Input{Plan: p, Ran: []string{"after"}, Reports: reports})
	require.NoError(t, err)
	assert.InDelta(t, 1.0, m.Partitioners[0].Phases["after"].Skew.MaxOverMean, 1e-12)
	m, err = Merge(Input{Plan: p, Ran: []string{"after"}, Reports: reports, Leaders: map[string]map[string][]int32{"after": {"roundrobin": {1, 2, 3}}}})
	require.NoError(t, err)
	assert.InDelta(t, 1.5, m.Partitioners[0].Phases["after"].Skew.MaxOverMean, 1e-12)
}

func TestMergeRefusesForeignReports(t *testing.T) {
	p := testPlan(2, "roundrobin")
	other, err := stats.NewLatency(time.Hour, 0) // another range than the plan's
	require.NoError(t, err)
	other.Record(time.Millisecond)
	enc, err := other.Encode()
	require.NoError(t, err)
	for _, tc := range []struct {
		r     PhaseReport
		field string
	}{
		{PhaseReport{Worker: 2, Phase: "before"}, "result.worker"},
		{PhaseReport{Worker: 0, Stream: 1, Phase: "before"}, "result.stream"},
		{PhaseReport{Worker: 0, Phase: "before", Sent: 1, Acked: 1, AckedBytes: 1, PerBroker: map[string]BrokerCount{"1": {1, 1}}, AckedSeqs: []Range{{0, 1}}, Latency: enc}, "result.latency"},
	} {
		_, err := Merge(Input{Plan: p, Ran: []string{"before"}, Reports: []PhaseReport{tc.r}})
		require.Error(t, err)
		assertField(t, err, tc.field)
	}
}

func TestRanges(t *testing.T) {
	assert.Nil(t, Ranges(nil))
	assert.Equal(t, []Range{{0, 3}, {5, 6}, {9, 11}}, Ranges([]uint64{10, 2, 0, 1, 5, 9, 1}))
}

// TestMergeBuckets: the workers' acknowledged bytes over time add up index
// by index since the epoch, whatever bucket each starts at; reports
// without buckets add nothing; another width is refused.
func TestMergeBuckets(t *testing.T) {
	w := int64(100 * time.Millisecond)
	width, first, sums, err := MergeBuckets([]PhaseReport{
		{Worker: 0, BucketNS: w, FirstBucket: 12, Buckets: []int64{5, 6, 7}},
		{Worker: 1, BucketNS: w, FirstBucket: 10, Buckets: []int64{1, 0, 2}},
		{Worker: 2},
		{Worker: 3, BucketNS: w, FirstBucket: 15, Buckets: []int64{9}},
	})
	require.NoError(t, err)
	assert.Equal(t, time.Duration(w), width)
	assert.Equal(t, 10, first)
	assert.Equal(t, []int64{1, 0, 2 + 5, 6, 7, 9}, sums)

	width, _, sums, err = MergeBuckets([]PhaseReport{{Worker: 2}})
	require.NoError(t, err)
	assert.Zero(t, width)
	assert.Empty(t, sums)

	_, _, _, err = MergeBuckets([]PhaseReport{{Worker: 0, BucketNS: w, Buckets: []int64{1}}, {Worker: 4, BucketNS: 2 * w, Buckets: []int64{1}}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "worker 4")
	assertField(t, err, "results.bucket_ns")
}
