package apply

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/reassign/apply/applytest"
	"github.com/kplan-dev/kplan/internal/topology"
)

func TestSplitMove(t *testing.T) {
	for _, tc := range []struct {
		name        string
		cur, target []int32
		leader      int32
		want        [][]int32
	}{
		{"one replica added", []int32{1, 2, 3}, []int32{1, 2, 4}, 1, [][]int32{{1, 2, 4}}},
		{"reorder only", []int32{1, 2, 3}, []int32{3, 1, 2}, 1, [][]int32{{3, 1, 2}}},
		{"removal only", []int32{1, 2, 3}, []int32{1, 2}, 1, [][]int32{{1, 2}}},
		{"two added, followers replaced in place", []int32{1, 2, 3}, []int32{1, 4, 5}, 1, [][]int32{{1, 4, 3}, {1, 4, 5}}},
		{"every replica replaced, the leader last", []int32{1, 2, 3}, []int32{4, 5, 6}, 1, [][]int32{{1, 4, 3}, {1, 4, 5}, {4, 5, 6}}},
		{"the actual leader, not the first replica, goes last", []int32{1, 2, 3}, []int32{4, 5, 6}, 2, [][]int32{{4, 2, 3}, {4, 2, 5}, {4, 5, 6}}},
		{"replication factor up", []int32{1, 2}, []int32{1, 2, 3, 4}, 1, [][]int32{{1, 2, 3}, {1, 2, 3, 4}}},
		{"replication factor up and moved", []int32{1}, []int32{2, 3, 4}, 1, [][]int32{{2}, {2, 3}, {2, 3, 4}}},
		{"replication factor down and moved", []int32{1, 2, 3}, []int32{4, 5}, 1, [][]int32{{1, 4, 3}, {4, 5}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := SplitMove(tc.cur, tc.target, tc.leader)
			assert.Equal(t, tc.want, got)
			rf := max(len(tc.cur), len(tc.target))
			from := tc.cur
			for _, to := range got {
				held := slices.Clone(from)
				added := 0
				for _, b := range to {
					if !slices.Contains(from, b) {
						held = append(held, b)
						added++
					}
				}
				assert.LessOrEqual(t, added, 1, "%v -> %v adds at most one replica", from, to)
				assert.LessOrEqual(t, len(held), rf+1, "%v -> %v holds at most RF+1", from, to)
				from = to
			}
		})
	}
}

// step is a pending single step from -> to of partition p of topic "t".
func step(p int32, size int64, from, to []int32) Step {
	return Step{Topic: "t", Partition: p, Index: 1, Of: 1, From: from, To: to, Size: size, Status: StepPending}
}

func TestSchedulerNext(t *testing.T) {
	for _, tc := range []struct {
		name   string
		limits Limits
		steps  []Step
		// want are the partitions picked, in the order picked.
		want []int32
	}{
		{
			name:   "no caps: everything, round robin over destinations 4,5,6",
			limits: Limits{},
			steps: []Step{
				step(0, 0, []int32{1, 2}, []int32{1, 4}), step(1, 0, []int32{1, 2}, []int32{1, 4}),
				step(2, 0, []int32{1, 3}, []int32{1, 5}), step(3, 0, []int32{2, 3}, []int32{6, 3}),
			},
			want: []int32{0, 2, 3, 1},
		},
		{
			name:   "global cap: one per destination first, never draining broker 4",
			limits: Limits{Total: 3},
			steps: []Step{
				step(0, 0, []int32{1, 2}, []int32{1, 4}), step(1, 0, []int32{1, 2}, []int32{1, 4}), step(2, 0, []int32{1, 2}, []int32{1, 4}),
				step(3, 0, []int32{1, 3}, []int32{1, 5}), step(4, 0, []int32{2, 3}, []int32{6, 3}),
			},
			want: []int32{0, 3, 4},
		},
		{
			name:   "per-broker cap counts moves out of a broker too",
			limits: Limits{PerBroker: 1},
			steps: []Step{
				step(0, 0, []int32{1, 2}, []int32{1, 4}), step(1, 0, []int32{1, 2}, []int32{1, 5}),
				step(2, 0, []int32{1, 3}, []int32{1, 6}),
			},
			// 0 takes 2 and 4; 1 needs 2 again; 2 takes 3 and 6.
			want: []int32{0, 2},
		},
		{
			name:   "in flight steps count against the caps, and their partitions wait",
			limits: Limits{PerBroker: 2},
			steps: []Step{
				{Topic: "t", Partition: 0, Index: 1, Of: 2, From: []int32{1, 2}, To: []int32{1, 4}, Status: StepSubmitted},
				{Topic: "t", Partition: 0, Index: 2, Of: 2, From: []int32{1, 4}, To: []int32{5, 4}, Status: StepPending},
				step(1, 0, []int32{1, 3}, []int32{6, 3}), step(2, 0, []int32{1, 3}, []int32{1, 4}),
				step(3, 0, []int32{2, 3}, []int32{2, 4}),
			},
			// Broker 4 has one in flight: one more (2), then 3 waits.
			want: []int32{2, 1},
		},
		{
			name:   "largest and smallest alternate, so the largest do not start together",
			limits: Limits{Total: 2},
			steps: []Step{
				step(0, 900, []int32{1, 2}, []int32{1, 4}), step(1, 10, []int32{1, 2}, []int32{1, 4}),
				step(2, 800, []int32{1, 3}, []int32{1, 5}), step(3, 20, []int32{1, 3}, []int32{1, 5}),
			},
			want: []int32{0, 3},
		},
		{
			name:   "done steps are skipped; the next step of a partition follows",
			limits: Limits{},
			steps: []Step{
				{Topic: "t", Partition: 0, Index: 1, Of: 2, From: []int32{1, 2}, To: []int32{1, 4}, Status: StepDone},
				{Topic: "t", Partition: 0, Index: 2, Of: 2, From: []int32{1, 4}, To: []int32{5, 4}, Status: StepPending},
			},
			want: []int32{0},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := NewScheduler(tc.limits).Next(tc.steps)
			var parts []int32
			for _, i := range got {
				parts = append(parts, tc.steps[i].Partition)
			}
			assert.Equal(t, tc.want, parts)
		})
	}
}

// The round robin goes on from where the previous batch stopped.
func TestSchedulerRoundRobinAcrossBatches(t *testing.T) {
	var steps []Step
	for i := range int32(6) {
		steps = append(steps, step(i, 0, []int32{1, 2}, []int32{1, 4 + i%3}))
	}
	s := NewScheduler(Limits{Total: 2})
	var dests []int32
	for range 3 {
		batch := s.Next(steps)
		for _, i := range batch {
			dests = append(dests, steps[i].Dest())
			steps[i].Status = StepDone
		}
	}
	assert.Equal(t, []int32{4, 5, 6, 4, 5, 6}, dests)
}

// randomPlan is a cluster of 4 to 9 brokers with 1 to 40 partitions of
// replication factor 1 to 3 and a plan that moves each to random brokers,
// sometimes changing its replication factor.
func randomPlan(rng *rand.Rand) (brokers []int32, parts, plan []topology.Partition) {
	n := 4 + rng.IntN(6)
	for b := range n {
		brokers = append(brokers, int32(b+1))
	}
	pick := func(k int) []int32 {
		ids := slices.Clone(brokers)
		rng.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
		return ids[:k]
	}
	for p := range 1 + rng.IntN(40) {
		rf := 1 + rng.IntN(3)
		cur := pick(rf)
		part := applytest.Part("t", int32(p), cur...)
		part.SizeBytes = rng.Int64N(1 << 30)
		parts = append(parts, part)
		if rng.IntN(10) == 0 {
			rf = 1 + rng.IntN(3)
		}
		plan = append(plan, applytest.Move("t", int32(p), pick(rf)...))
	}
	return brokers, parts, plan
}

// Property: on random plans, limits and controller speeds, Execute never
// lets a partition hold more than RF+1 replicas, never has more than the
// per-broker cap of moves into or out of a broker nor more than the global
// cap in flight, submits no step twice, and ends with every partition at
// its target and the throttle removed.
func TestExecuteWavesProperty(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 5))
	staged, split := 0, 0
	for i := range 300 {
		brokers, parts, plan := randomPlan(rng)
		f := applytest.New(brokers, parts...)
		f.FinishPerPoll = 1 + rng.IntN(4)
		limits := Limits{PerBroker: 1 + rng.IntN(4), Total: rng.IntN(12)}
		rf := map[topology.Key]int{}
		for j, p := range parts {
			rf[p.Key()] = max(len(p.Replicas), len(plan[j].Replicas))
		}
		maxInflight := 0
		o := Options{Throttle: 1000, Yes: true, Clock: applytest.NewClock(), Limits: limits, Progress: func(e Event) {
			if e.Kind == EventAccepted || e.Kind == EventProgress {
				maxInflight = max(maxInflight, len(f.Moving))
			}
		}}
		res, err := Execute(context.Background(), f, plan, o)
		require.NoError(t, err, "case %d", i)
		if res.Outcome == NothingToDo {
			require.Empty(t, f.Calls)
			continue
		}
		require.Equal(t, Done, res.Outcome)
		if res.Waves > 1 {
			staged++
		}
		if res.Steps > res.Moves {
			split++
		}
		for j, p := range f.Parts {
			assert.Equal(t, plan[j].Replicas, p.Replicas, "case %d: %s at its target", i, p.Key())
			assert.LessOrEqual(t, f.MaxReplicas[p.Key()], rf[p.Key()]+1, "case %d: %s held more than RF+1", i, p.Key())
		}
		for b, n := range f.MaxMoves {
			assert.LessOrEqual(t, n, limits.PerBroker, "case %d: broker %d had %d moves in flight", i, b, n)
		}
		if limits.Total > 0 {
			assert.LessOrEqual(t, maxInflight, limits.Total, "case %d", i)
		}
		seen := map[string]bool{}
		for _, c := range f.Calls {
			if strings.HasPrefix(c, "Reassign ") {
				assert.False(t, seen[c], "case %d: %s submitted twice", i, c)
				seen[c] = true
			}
		}
		assert.Equal(t, res.Steps, len(seen), "case %d: every step submitted once", i)
		assert.Contains(t, strings.Join(f.Calls, "\n"), "ClearThrottle", "case %d", i)
	}
	assert.Greater(t, staged, 100, "plans run in several waves")
	assert.Greater(t, split, 100, "plans with moves split into steps")
}

// Property: the scheduler serves destinations round robin. After each
// batch, a destination picked twice more than another means the other
// had no step that fit the caps left (fitting only gets harder within a
// batch, so a fitting step at the end fitted all along); and every step
// is eventually picked.
func TestSchedulerRoundRobinProperty(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 23))
	for i := range 500 {
		_, parts, plan := randomPlan(rng)
		current := map[topology.Key]topology.Partition{}
		for _, p := range parts {
			current[p.Key()] = p
		}
		steps := planSteps(plan, current, func(k topology.Key) int64 { return current[k].SizeBytes })
		limits := Limits{PerBroker: 1 + rng.IntN(3), Total: rng.IntN(8)}
		s := NewScheduler(limits)
		for round := 0; ; round++ {
			require.Less(t, round, 10*len(steps)+10, "case %d: stuck", i)
			batch := s.Next(steps)
			picks := map[int32]int{}
			for _, x := range batch {
				require.Equal(t, StepPending, steps[x].Status)
				steps[x].Status = StepSubmitted
				picks[steps[x].Dest()]++
			}
			// What still fits, with the batch in flight.
			load, total := map[int32]int{}, 0
			busy := map[topology.Key]bool{}
			for _, st := range steps {
				if st.Status == StepSubmitted {
					total++
					busy[st.Key()] = true
					for _, b := range st.Brokers() {
						load[b]++
					}
				}
			}
			fitsSomewhere := map[int32]bool{}
			seen := map[topology.Key]bool{}
			for _, st := range steps {
				if seen[st.Key()] || st.Status == StepDone {
					continue
				}
				seen[st.Key()] = true
				if st.Status != StepPending || busy[st.Key()] {
					continue
				}
				ok := true
				for _, b := range st.Brokers() {
					ok = ok && load[b] < limits.PerBroker
				}
				if ok {
					fitsSomewhere[st.Dest()] = true
				}
			}
			if limits.Total == 0 || total < limits.Total {
				assert.Empty(t, fitsSomewhere, "case %d: a step that fits was left out", i)
			}
			for d1, n1 := range picks {
				for d2 := range fitsSomewhere {
					assert.LessOrEqual(t, n1-picks[d2], 1, "case %d: destination %d picked %d times, %d only %d", i, d1, n1, d2, picks[d2])
				}
			}
			// Finish a random half of the steps in flight.
			for x := range steps {
				if steps[x].Status == StepSubmitted && (rng.IntN(2) == 0 || len(batch) == 0) {
					steps[x].Status = StepDone
				}
			}
			if !slices.ContainsFunc(steps, func(st Step) bool { return st.Status != StepDone }) {
				break
			}
		}
	}
}

// On the in-memory Admin: with a global cap of 3 and four moves to each
// of brokers 4, 5 and 6, each request sends one move to each.
func TestExecuteRoundRobinOnAdmin(t *testing.T) {
	var parts, plan []topology.Partition
	for p := range int32(12) {
		parts = append(parts, applytest.Part("t", p, 1, 2))
		plan = append(plan, applytest.Move("t", p, 1, 4+p/4))
	}
	f := applytest.New([]int32{1, 2, 3, 4, 5, 6}, parts...)
	f.FinishPerPoll = 3
	res, err := Execute(context.Background(), f, plan, Options{Yes: true, Clock: applytest.NewClock(), Limits: Limits{Total: 3}})
	require.NoError(t, err)
	assert.Equal(t, 4, res.Waves)
	var dests []string
	for _, c := range f.Calls {
		if strings.HasPrefix(c, "Reassign ") {
			dests = append(dests, strings.TrimSuffix(c[strings.LastIndex(c, " ")+1:], "]"))
		}
	}
	assert.Equal(t, strings.Fields(strings.Repeat("4 5 6 ", 4)), dests, fmt.Sprint(f.Calls))
}

// BenchmarkSchedulerNext: one wave's choice on a plan of 100k steps over
// 100 brokers, with the default caps and with no global cap.
func BenchmarkSchedulerNext(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	var steps []Step
	for p := range int32(100_000) {
		from := []int32{1 + rng.Int32N(100), 101 + rng.Int32N(100)}
		steps = append(steps, step(p, rng.Int64N(1<<30), from, []int32{from[0], 201 + rng.Int32N(100)}))
	}
	for _, l := range []Limits{{PerBroker: DefaultMaxInflightPerBroker, Total: DefaultMaxInflight}, {PerBroker: DefaultMaxInflightPerBroker}} {
		b.Run(fmt.Sprintf("per-broker=%d,total=%d", l.PerBroker, l.Total), func(b *testing.B) {
			for b.Loop() {
				NewScheduler(l).Next(steps)
			}
		})
	}
}
