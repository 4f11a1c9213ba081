package apply

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/reassign/apply/applytest"
	"github.com/kplan-dev/kplan/internal/topology"
)

// sizedAdmin is the in-memory Admin with DescribeLogDirs: a replica being
// added holds half its partition, a finished one all of it.
type sizedAdmin struct {
	*applytest.Admin
	size map[topology.Key]int64
	mu   sync.Mutex
}

func (a *sizedAdmin) ReplicaSizes(_ context.Context, filter func(string) bool) (map[topology.Key]map[int32]int64, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := map[topology.Key]map[int32]int64{}
	for _, p := range a.Parts {
		if !filter(p.Topic) {
			continue
		}
		m := map[int32]int64{}
		for _, r := range p.Replicas {
			m[r] = a.size[p.Key()]
		}
		for _, r := range a.Moving[p.Key()] {
			if _, ok := m[r]; !ok {
				m[r] = a.size[p.Key()] / 2
			}
		}
		out[p.Key()] = m
	}
	return out, nil
}

func TestExecuteReportsBytes(t *testing.T) {
	var parts, plan []topology.Partition
	size := map[topology.Key]int64{}
	for p := range int32(4) {
		parts = append(parts, applytest.Part("t", p, 1, 2))
		plan = append(plan, applytest.Move("t", p, 1, 3+p/2))
		size[topology.Key{Topic: "t", Partition: p}] = 100 * int64(p+1)
	}
	f := &sizedAdmin{Admin: applytest.New([]int32{1, 2, 3, 4}, parts...), size: size}
	f.FinishPerPoll = 1
	var got []*ByteProgress
	_, err := Execute(context.Background(), f, plan, Options{Yes: true, Clock: applytest.NewClock(), Limits: Limits{Total: 2}, Sizes: size,
		Progress: func(e Event) {
			if e.Kind == EventProgress {
				got = append(got, e.Bytes)
			}
		}})
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(got), 3)
	for i, b := range got {
		require.NotNil(t, b, "poll %d", i)
		assert.Equal(t, int64(1000), b.Total)
		require.Len(t, b.Brokers, 2)
		assert.Equal(t, int64(100+200), b.Brokers[0].Total, "broker 3 receives t-0 and t-1")
		assert.Equal(t, int64(300+400), b.Brokers[1].Total)
		if i > 0 {
			assert.GreaterOrEqual(t, b.Copied, got[i-1].Copied, "copied never goes back")
		}
	}
	assert.Equal(t, -1.0, got[0].ETASeconds, "no rate from one measurement")
	assert.Positive(t, got[1].RatePerSecond)
	assert.GreaterOrEqual(t, got[1].ETASeconds, 0.0)
	last := got[len(got)-1]
	assert.Equal(t, last.Total, last.Copied)
	assert.Zero(t, last.ETASeconds)
}

func TestByteMeterWithoutSizes(t *testing.T) {
	var m byteMeter
	steps := []Step{{Topic: "t", From: []int32{1}, To: []int32{2}, Size: 0, Status: StepSubmitted}}
	assert.Nil(t, m.measure(steps, nil, applytest.NewClock().Now()), "no size known: no progress in bytes")
	steps[0].Size = 10
	b := m.measure(steps, nil, applytest.NewClock().Now())
	require.NotNil(t, b)
	assert.Equal(t, int64(0), b.Copied, "a step in flight with no sizes counts nothing")
	assert.Equal(t, int64(10), b.Total)
}

// TestByteMeterRateWindow: the rate and the ETA look back RateWindow, so a
// burst at the start (Kafka's quota lets about ten seconds of a fresh
// throttle through) and a throttle the guard changed no longer skew them.
func TestByteMeterRateWindow(t *testing.T) {
	const mb = 1_000_000
	clock := applytest.NewClock()
	t0 := clock.Now()
	var m byteMeter
	tests := []struct {
		at       time.Duration
		copied   int64
		wantRate float64
	}{
		{0, 0, 0},
		{10 * time.Second, 100 * mb, 10 * mb},  // the burst: 100 MB in 10 s
		{20 * time.Second, 110 * mb, 5.5 * mb}, // younger than the window: since the start
		{40 * time.Second, 130 * mb, 1 * mb},   // base: the mark at 10 s, 30 s old
		{70 * time.Second, 160 * mb, 1 * mb},   // base: the mark at 40 s
		{71 * time.Second, 161 * mb, 1 * mb},   // base: still the mark at 40 s (31 s old)
	}
	for _, tt := range tests {
		steps := []Step{{Topic: "t", From: []int32{1}, To: []int32{2}, Size: 1000 * mb, Status: StepSubmitted}}
		sizes := map[topology.Key]map[int32]int64{{Topic: "t"}: {2: tt.copied}}
		bp := m.measure(steps, sizes, t0.Add(tt.at))
		require.NotNil(t, bp, "at %v", tt.at)
		assert.InDelta(t, tt.wantRate, bp.RatePerSecond, 1, "rate at %v", tt.at)
		if tt.wantRate > 0 {
			assert.InDelta(t, float64(1000*mb-tt.copied)/tt.wantRate, bp.ETASeconds, 0.01, "ETA at %v", tt.at)
		} else {
			assert.Equal(t, -1.0, bp.ETASeconds, "no rate from one measurement")
		}
	}
	assert.LessOrEqual(t, len(m.marks), 4, "marks older than the window's base are dropped")
}
