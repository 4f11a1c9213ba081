package apply

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/errkind"
	"github.com/kplan-dev/kplan/internal/reassign/apply/applytest"
	"github.com/kplan-dev/kplan/internal/topology"
)

// recorder keeps the events of a run.
type recorder struct{ events []Event }

func (r *recorder) progress(e Event) {
	cp := *e.Result
	e.Result = &cp
	r.events = append(r.events, e)
}

func (r *recorder) kinds() []EventKind {
	var out []EventKind
	for _, e := range r.events {
		out = append(out, e.Kind)
	}
	return out
}

func statuses(res *Result) []Status {
	var out []Status
	for _, s := range res.Partitions {
		out = append(out, s.Status)
	}
	return out
}

func key(topic string, p int32) topology.Key { return topology.Key{Topic: topic, Partition: p} }

// Every refusal rule: nothing changes on the cluster, the plan is shown
// first, and the error is a refusal about the plan that lists each reason.
func TestExecuteRefusals(t *testing.T) {
	leaderless := applytest.Part("a", 1, 1, 2)
	leaderless.Leader = topology.NoLeader
	// Broker 3 is down: its replica of a/2 (a plan topic's partition that
	// the plan leaves alone) is offline and the metadata no longer lists it.
	offline := applytest.Part("a", 2, 3, 1)
	offline.Leader, offline.Offline = 1, []int32{3}
	for _, tc := range []struct {
		name  string
		fake  func() *applytest.Admin
		plan  []topology.Partition
		want  []Refusal
		words []string
	}{
		{
			name: "leaderless partition",
			fake: func() *applytest.Admin {
				return applytest.New([]int32{1, 2, 3}, applytest.Part("a", 0, 1, 2), leaderless)
			},
			plan:  []topology.Partition{applytest.Move("a", 0, 2, 3), applytest.Move("a", 1, 2, 3)},
			want:  []Refusal{{Rule: RuleNoLeader, Partition: key("a", 1)}},
			words: []string{"a/1 has no leader"},
		},
		{
			name:  "dead target broker",
			fake:  func() *applytest.Admin { return applytest.New([]int32{1, 2}, applytest.Part("a", 0, 1, 2), offline) },
			plan:  []topology.Partition{applytest.Move("a", 0, 2, 3)},
			want:  []Refusal{{Rule: RuleBrokerDown, Partition: key("a", 0), Broker: 3}},
			words: []string{"a/0: target broker 3 is down"},
		},
		{
			name:  "unknown target broker",
			fake:  func() *applytest.Admin { return applytest.New([]int32{1, 2, 3}, applytest.Part("a", 0, 1, 2)) },
			plan:  []topology.Partition{applytest.Move("a", 0, 2, 9)},
			want:  []Refusal{{Rule: RuleBrokerUnknown, Partition: key("a", 0), Broker: 9}},
			words: []string{"a/0: target broker 9 is not a running broker"},
		},
		{
			name: "reassignment already in progress",
			fake: func() *applytest.Admin {
				f := applytest.New([]int32{1, 2, 3}, applytest.Part("a", 0, 1, 2), applytest.Part("a", 1, 1, 2))
				f.Moving[key("a", 1)] = []int32{1, 3}
				return f
			},
			plan:  []topology.Partition{applytest.Move("a", 0, 2, 3), applytest.Move("a", 1, 2, 3)},
			want:  []Refusal{{Rule: RuleInProgress, Partition: key("a", 1)}},
			words: []string{"a/1 is already being reassigned"},
		},
		{
			name: "every reason, in plan order",
			fake: func() *applytest.Admin {
				return applytest.New([]int32{1, 2}, applytest.Part("a", 0, 1, 2), leaderless, offline)
			},
			plan:  []topology.Partition{applytest.Move("a", 0, 2, 3), applytest.Move("a", 1, 2, 7)},
			want:  []Refusal{{Rule: RuleBrokerDown, Partition: key("a", 0), Broker: 3}, {Rule: RuleNoLeader, Partition: key("a", 1)}, {Rule: RuleBrokerUnknown, Partition: key("a", 1), Broker: 7}},
			words: []string{"target broker 3 is down; a/1 has no leader; a/1: target broker 7"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := tc.fake()
			var rec recorder
			res, err := Execute(context.Background(), f, tc.plan, Options{Throttle: 1000, Yes: true, Clock: applytest.NewClock(), Progress: rec.progress})
			require.Error(t, err)
			assert.Nil(t, res)
			assert.Equal(t, errkind.Refused, errkind.KindOf(err))
			assert.Equal(t, "plan", errkind.FieldOf(err))
			var got Refusals
			require.ErrorAs(t, err, &got)
			assert.Equal(t, Refusals(tc.want), got)
			for _, w := range tc.words {
				assert.ErrorContains(t, err, w)
			}
			assert.Empty(t, f.Calls, "a refused plan changed the cluster")
			assert.Equal(t, []EventKind{EventPlan}, rec.kinds(), "the plan is shown before the refusal")
		})
	}
}

func TestRefusalsListFive(t *testing.T) {
	var rs Refusals
	for i := range 8 {
		rs = append(rs, Refusal{Rule: RuleNoLeader, Partition: key("t", int32(i))})
	}
	msg := rs.Error()
	assert.Contains(t, msg, "t/4 has no leader; and 3 more")
	assert.NotContains(t, msg, "t/5")
}

// A plan partition that does not exist is bad input, named.
func TestExecuteMissingPartition(t *testing.T) {
	f := applytest.New([]int32{1, 2, 3}, applytest.Part("a", 0, 1, 2))
	_, err := Execute(context.Background(), f, []topology.Partition{applytest.Move("a", 0, 2, 3), applytest.Move("a", 5, 1, 2)}, Options{Yes: true, Clock: applytest.NewClock()})
	require.Error(t, err)
	assert.Equal(t, errkind.Usage, errkind.KindOf(err))
	assert.Equal(t, "plan", errkind.FieldOf(err))
	assert.ErrorContains(t, err, "a/5 does not exist on the cluster")
	assert.Empty(t, f.Calls)
}

// Outside the local lab a change needs Yes; in the lab it does not.
func TestExecuteConfirmation(t *testing.T) {
	plan := []topology.Partition{applytest.Move("a", 0, 2, 3)}
	for _, tc := range []struct {
		name    string
		yes     bool
		lab     bool
		refused bool
	}{
		{"neither", false, false, true},
		{"yes", true, false, false},
		{"lab", false, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := applytest.New([]int32{1, 2, 3}, applytest.Part("a", 0, 1, 2))
			f.FinishPerPoll = 1
			var rec recorder
			res, err := Execute(context.Background(), f, plan, Options{Yes: tc.yes, Lab: tc.lab, Clock: applytest.NewClock(), Progress: rec.progress})
			if !tc.refused {
				require.NoError(t, err)
				assert.Equal(t, Done, res.Outcome)
				return
			}
			require.Error(t, err)
			assert.Equal(t, errkind.Refused, errkind.KindOf(err))
			assert.Equal(t, "yes", errkind.FieldOf(err))
			assert.ErrorContains(t, err, "needed to execute 1 partition moves on a cluster that is not the local kplan lab")
			assert.Empty(t, f.Calls)
			assert.Equal(t, []EventKind{EventPlan}, rec.kinds())
			assert.Equal(t, []Status{Pending}, statuses(rec.events[0].Result))
		})
	}
}

// Nothing to move: no confirmation needed, nothing changed.
func TestExecuteNothingToDo(t *testing.T) {
	f := applytest.New([]int32{1, 2, 3}, applytest.Part("a", 0, 2, 3))
	res, err := Execute(context.Background(), f, []topology.Partition{applytest.Move("a", 0, 2, 3)}, Options{Throttle: 5, Clock: applytest.NewClock()})
	require.NoError(t, err)
	assert.Equal(t, NothingToDo, res.Outcome)
	assert.Equal(t, 1, res.Complete)
	assert.Empty(t, f.Calls)
}

// The sequence: throttle, reassign, poll until complete, unthrottle; a
// partition already in place is left alone; progress is reported per poll
// with the injected clock's time.
func TestExecuteSequence(t *testing.T) {
	f := applytest.New([]int32{1, 2, 3, 4}, applytest.Part("a", 0, 1, 2), applytest.Part("a", 1, 1, 2), applytest.Part("b", 0, 3, 4))
	f.FinishPerPoll = 1
	clock := applytest.NewClock()
	var rec recorder
	plan := []topology.Partition{applytest.Move("a", 0, 2, 3), applytest.Move("a", 1, 1, 4), applytest.Move("b", 0, 3, 4)}
	res, err := Execute(context.Background(), f, plan, Options{Throttle: 50_000_000, Yes: true, Poll: 2 * time.Second, Clock: clock, Progress: rec.progress})
	require.NoError(t, err)
	assert.Equal(t, Done, res.Outcome)
	assert.Equal(t, ModeExecute, res.Mode)
	assert.Equal(t, 2, res.Moves)
	assert.Equal(t, 3, res.Complete)
	assert.Equal(t, []Status{Complete, Complete, Complete}, statuses(res))
	assert.Equal(t, []string{
		"SetThrottle 50000000 [1 2 3 4] map[a:[0:1 0:2 1:1 1:2]] map[a:[0:3 1:4]]",
		"Reassign a-0 [2 3]",
		"Reassign a-1 [1 4]",
		"ClearThrottle [1 2 3 4] [a]",
	}, f.Calls)
	// Plan, accepted, then one poll per partition finishing.
	assert.Equal(t, []EventKind{EventPlan, EventAccepted, EventProgress, EventProgress}, rec.kinds())
	assert.Equal(t, []Status{Pending, Pending, Complete}, statuses(rec.events[0].Result))
	assert.Equal(t, 2, rec.events[1].Moves)
	assert.Equal(t, 2, rec.events[2].Result.Complete)
	assert.Equal(t, 1, rec.events[2].Result.InProgress)
	assert.Equal(t, time.Duration(0), rec.events[2].Elapsed)
	assert.Equal(t, 2*time.Second, rec.events[3].Elapsed)
	assert.Equal(t, []time.Duration{2 * time.Second}, clock.Sleeps)
}

// Without a throttle nothing is set or cleared.
func TestExecuteNoThrottle(t *testing.T) {
	f := applytest.New([]int32{1, 2, 3}, applytest.Part("a", 0, 1, 2))
	f.FinishPerPoll = 1
	res, err := Execute(context.Background(), f, []topology.Partition{applytest.Move("a", 0, 2, 3)}, Options{Lab: true, Clock: applytest.NewClock()})
	require.NoError(t, err)
	assert.Equal(t, Done, res.Outcome)
	assert.Equal(t, []string{"Reassign a-0 [2 3]"}, f.Calls)
}

// A plan that only reorders replicas copies nothing: no throttle is set
// even when one is asked for, and the new first replicas are elected.
func TestExecuteReorderOnlyNoThrottle(t *testing.T) {
	f := applytest.New([]int32{1, 2, 3}, applytest.Part("a", 0, 1, 2, 3), applytest.Part("a", 1, 2, 3, 1))
	f.FinishPerPoll = 2
	plan := []topology.Partition{applytest.Move("a", 0, 2, 1, 3), applytest.Move("a", 1, 2, 1, 3)}
	res, err := Execute(context.Background(), f, plan, Options{Throttle: 50_000_000, Yes: true, Clock: applytest.NewClock()})
	require.NoError(t, err)
	assert.Equal(t, Done, res.Outcome)
	calls := strings.Join(f.Calls, "\n")
	assert.NotContains(t, calls, "Throttle")
	assert.Contains(t, calls, "Reassign a-0 [2 1 3]")
	assert.Contains(t, calls, "Elect a-0")
}

// NoWait returns once the moves are accepted; the throttle stays.
func TestExecuteNoWait(t *testing.T) {
	f := applytest.New([]int32{1, 2, 3}, applytest.Part("a", 0, 1, 2))
	res, err := Execute(context.Background(), f, []topology.Partition{applytest.Move("a", 0, 2, 3)}, Options{Throttle: 7, Yes: true, NoWait: true})
	require.NoError(t, err)
	assert.Equal(t, Started, res.Outcome)
	assert.Equal(t, 1, res.Moves)
	require.Len(t, f.Calls, 2)
	assert.True(t, strings.HasPrefix(f.Calls[0], "SetThrottle 7 "))
	assert.Equal(t, "Reassign a-0 [2 3]", f.Calls[1])
	assert.Equal(t, 1, f.Snapshots, "no poll")
}

// The ways a wait ends before completion.
func TestExecuteWaitEnds(t *testing.T) {
	plan := []topology.Partition{applytest.Move("a", 0, 2, 3)}
	t.Run("wait timeout", func(t *testing.T) {
		f := applytest.New([]int32{1, 2, 3}, applytest.Part("a", 0, 1, 2))
		clock := applytest.NewClock()
		_, err := Execute(context.Background(), f, plan, Options{Throttle: 1, Yes: true, Poll: 4 * time.Second, WaitTimeout: 10 * time.Second, Clock: clock})
		require.Error(t, err)
		assert.Equal(t, "wait-timeout", errkind.FieldOf(err))
		assert.ErrorIs(t, err, ErrNotDone)
		assert.ErrorContains(t, err, "not complete after 10s")
		// The last sleep stops at the deadline, then one last poll.
		assert.Equal(t, []time.Duration{4 * time.Second, 4 * time.Second, 2 * time.Second}, clock.Sleeps)
		assert.NotContains(t, strings.Join(f.Calls, "\n"), "ClearThrottle", "the throttle stays while the reassignment goes on")
	})
	t.Run("interrupted", func(t *testing.T) {
		f := applytest.New([]int32{1, 2, 3}, applytest.Part("a", 0, 1, 2))
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		clock := applytest.NewClock()
		clock.Cancel = cancel
		_, err := Execute(ctx, f, plan, Options{Yes: true, Clock: clock})
		require.Error(t, err)
		assert.ErrorIs(t, err, ErrNotDone)
		assert.ErrorIs(t, err, context.Canceled)
	})
	t.Run("cancelled elsewhere", func(t *testing.T) {
		f := applytest.New([]int32{1, 2, 3}, applytest.Part("a", 0, 1, 2))
		f.DropOnPoll = true
		_, err := Execute(context.Background(), f, plan, Options{Yes: true, Clock: applytest.NewClock()})
		require.Error(t, err)
		assert.ErrorContains(t, err, "1 partitions are neither complete nor in progress")
		assert.Equal(t, errkind.Runtime, errkind.KindOf(err))
	})
}

// A failure on the way is reported with what was and was not changed.
func TestExecuteFailures(t *testing.T) {
	plan := []topology.Partition{applytest.Move("a", 0, 2, 3)}
	boom := errors.New("boom")
	for _, tc := range []struct {
		method   string
		throttle int64
		want     string
		calls    int
	}{
		{"SetThrottle", 1, "setting the replication throttle: boom", 1},
		{"Reassign", 0, "executing the plan (nothing else was changed): boom", 1},
		{"Reassign", 1, "nothing was changed but the replication throttle", 2},
		{"ClearThrottle", 1, "the plan is complete, but removing the throttle failed: boom", 3},
		{"Snapshot", 0, "boom", 0},
		{"Ongoing", 0, "boom", 0},
	} {
		t.Run(tc.method, func(t *testing.T) {
			f := applytest.New([]int32{1, 2, 3}, applytest.Part("a", 0, 1, 2))
			f.FinishPerPoll = 1
			f.Errs[tc.method] = boom
			_, err := Execute(context.Background(), f, plan, Options{Throttle: tc.throttle, Yes: true, Clock: applytest.NewClock()})
			require.ErrorIs(t, err, boom)
			assert.ErrorContains(t, err, tc.want)
			assert.Len(t, f.Calls, tc.calls, "%q", f.Calls)
		})
	}
}

func TestExecuteNeedsClock(t *testing.T) {
	f := applytest.New([]int32{1, 2, 3}, applytest.Part("a", 0, 1, 2))
	_, err := Execute(context.Background(), f, []topology.Partition{applytest.Move("a", 0, 2, 3)}, Options{Yes: true})
	require.Error(t, err)
	assert.Empty(t, f.Calls)
}

// Every verify outcome; only a complete plan clears the throttle, from
// every running broker and the plan's topics.
func TestVerify(t *testing.T) {
	inProgress := func() *applytest.Admin {
		f := applytest.New([]int32{1, 2, 3}, applytest.Part("a", 0, 2, 3), applytest.Part("b", 0, 1, 2))
		f.Moving[key("b", 0)] = []int32{1, 3}
		return f
	}
	down := applytest.Part("b", 0, 2, 4)
	down.Offline = []int32{4}
	for _, tc := range []struct {
		name     string
		fake     func() *applytest.Admin
		plan     []topology.Partition
		outcome  Outcome
		statuses []Status
		calls    []string
	}{
		{"complete", func() *applytest.Admin {
			return applytest.New([]int32{1, 2, 3}, applytest.Part("a", 0, 2, 3), applytest.Part("b", 0, 1, 3))
		},
			[]topology.Partition{applytest.Move("a", 0, 2, 3), applytest.Move("b", 0, 1, 3)}, Done, []Status{Complete, Complete},
			[]string{"ClearThrottle [1 2 3] [a b]"}},
		{"complete with a broker down", func() *applytest.Admin { return applytest.New([]int32{1, 2, 3, 4}, applytest.Part("a", 0, 2, 3), down) },
			[]topology.Partition{applytest.Move("a", 0, 2, 3), applytest.Move("b", 0, 2, 4)}, Done, []Status{Complete, Complete},
			[]string{"ClearThrottle [1 2 3] [a b]"}},
		{"in progress", inProgress,
			[]topology.Partition{applytest.Move("a", 0, 2, 3), applytest.Move("b", 0, 1, 3)}, StillInProgress, []Status{Complete, InProgress}, nil},
		{"differs", func() *applytest.Admin {
			return applytest.New([]int32{1, 2, 3}, applytest.Part("a", 0, 2, 3), applytest.Part("b", 0, 1, 2))
		},
			[]topology.Partition{applytest.Move("a", 0, 2, 3), applytest.Move("b", 0, 1, 3)}, Diverged, []Status{Complete, Differs}, nil},
		{"missing", func() *applytest.Admin { return applytest.New([]int32{1, 2, 3}, applytest.Part("a", 0, 2, 3)) },
			[]topology.Partition{applytest.Move("a", 0, 2, 3), applytest.Move("a", 1, 1, 3)}, Diverged, []Status{Complete, Missing}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := tc.fake()
			res, err := Verify(context.Background(), f, tc.plan, Options{Clock: applytest.NewClock()})
			require.NoError(t, err)
			assert.Equal(t, ModeVerify, res.Mode)
			assert.Equal(t, tc.outcome, res.Outcome)
			assert.Equal(t, tc.statuses, statuses(res))
			assert.Equal(t, tc.calls, f.Calls)
		})
	}
	t.Run("clearing fails", func(t *testing.T) {
		f := applytest.New([]int32{1, 2, 3}, applytest.Part("a", 0, 2, 3))
		f.Errs["ClearThrottle"] = errors.New("denied")
		_, err := Verify(context.Background(), f, []topology.Partition{applytest.Move("a", 0, 2, 3)}, Options{Clock: applytest.NewClock()})
		assert.ErrorContains(t, err, "the plan is complete, but removing the throttle failed: denied")
	})
	t.Run("cluster unreachable", func(t *testing.T) {
		f := applytest.New([]int32{1})
		f.Errs["Snapshot"] = errors.New("unreachable")
		_, err := Verify(context.Background(), f, []topology.Partition{applytest.Move("a", 0, 1)}, Options{Clock: applytest.NewClock()})
		assert.ErrorContains(t, err, "unreachable")
	})
}

// Cancel: the reassignments in progress are cancelled (with Yes or in the
// lab), the throttle removed, and the state read again.
func TestCancel(t *testing.T) {
	plan := []topology.Partition{applytest.Move("a", 0, 2, 3), applytest.Move("a", 1, 1, 3)}
	fake := func() *applytest.Admin {
		f := applytest.New([]int32{1, 2, 3}, applytest.Part("a", 0, 1, 2), applytest.Part("a", 1, 1, 3))
		f.Moving[key("a", 0)] = []int32{2, 3}
		return f
	}
	for _, tc := range []struct {
		name string
		o    Options
	}{{"yes", Options{Yes: true}}, {"lab", Options{Lab: true}}} {
		t.Run(tc.name, func(t *testing.T) {
			f := fake()
			res, err := Cancel(context.Background(), f, plan, tc.o)
			require.NoError(t, err)
			assert.Equal(t, Cancelled, res.Outcome)
			assert.Equal(t, ModeCancel, res.Mode)
			assert.Equal(t, 1, res.Moves)
			assert.Equal(t, []string{"Cancel a-0", "ClearThrottle [1 2 3] [a]"}, f.Calls)
			assert.Equal(t, []Status{Differs, Complete}, statuses(res), "read again after the cancel")
		})
	}
	t.Run("refused without yes", func(t *testing.T) {
		f := fake()
		var rec recorder
		res, err := Cancel(context.Background(), f, plan, Options{Progress: rec.progress})
		require.Error(t, err)
		assert.Nil(t, res)
		assert.Equal(t, errkind.Refused, errkind.KindOf(err))
		assert.Equal(t, "yes", errkind.FieldOf(err))
		assert.ErrorContains(t, err, "needed to cancel 1 reassignments")
		assert.Empty(t, f.Calls)
		assert.Equal(t, []EventKind{EventPlan}, rec.kinds())
	})
	t.Run("nothing in progress", func(t *testing.T) {
		f := applytest.New([]int32{1, 2, 3}, applytest.Part("a", 0, 2, 3), applytest.Part("a", 1, 1, 3))
		res, err := Cancel(context.Background(), f, plan, Options{})
		require.NoError(t, err, "nothing to cancel needs no confirmation")
		assert.Equal(t, 0, res.Moves)
		assert.Equal(t, []string{"ClearThrottle [1 2 3] [a]"}, f.Calls)
	})
	t.Run("cancel fails", func(t *testing.T) {
		f := fake()
		f.Errs["CancelReassign"] = errors.New("NO_REASSIGNMENT_IN_PROGRESS")
		_, err := Cancel(context.Background(), f, plan, Options{Yes: true})
		assert.ErrorContains(t, err, "cancelling the reassignments: NO_REASSIGNMENT_IN_PROGRESS")
		assert.Equal(t, []string{"Cancel a-0"}, f.Calls, "the throttle is not touched after a failed cancel")
	})
	t.Run("clearing fails", func(t *testing.T) {
		f := fake()
		f.Errs["ClearThrottle"] = errors.New("denied")
		_, err := Cancel(context.Background(), f, plan, Options{Yes: true})
		assert.ErrorContains(t, err, "removing the throttle: denied")
	})
}

// Bad plan files: usage errors naming the plan, or the file and line.
func TestParsePlan(t *testing.T) {
	got, err := ParsePlan(strings.NewReader(`{"version":1,"partitions":[{"topic":"t","partition":1,"replicas":[3,1]},{"topic":"t","partition":0,"replicas":[1,2],"log_dirs":["any","any"]}]}`), "plan.json")
	require.NoError(t, err)
	assert.Equal(t, []topology.Partition{applytest.Move("t", 0, 1, 2), applytest.Move("t", 1, 3, 1)}, got)

	for _, tc := range []struct {
		name, body, field, want string
	}{
		{"empty", `{"version":1,"partitions":[]}`, "plan", "no partitions"},
		{"describe text", "Topic: t\tPartition: 0\tLeader: 1\tReplicas: 1\tIsr: 1\n", "plan", "not a reassignment JSON file"},
		{"duplicate replica", "{\"version\":1,\n\"partitions\":[{\"topic\":\"t\",\"partition\":0,\"replicas\":[1,1]}]}", "replicas", "plan.json:2"},
		{"broken JSON", `{"version":1,"partitions":[`, "", "plan.json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParsePlan(strings.NewReader(tc.body), "plan.json")
			require.Error(t, err)
			assert.Equal(t, errkind.Usage, errkind.KindOf(err))
			assert.Equal(t, tc.field, errkind.FieldOf(err))
			assert.ErrorContains(t, err, tc.want)
		})
	}
}

// keep is a cluster where a plan of two moves keeps both leaders among the
// new replicas: a/0 led by 1 moves to [2,1], a/1 led by 1 moves to [3,1].
// Kafka's controller keeps leader 1 on both, so only an election gives
// them the plan's leaders 2 and 3.
func keep() (*applytest.Admin, []topology.Partition) {
	f := applytest.New([]int32{1, 2, 3}, applytest.Part("a", 0, 1, 2), applytest.Part("a", 1, 1, 2), applytest.Part("a", 2, 3, 1))
	f.FinishPerPoll = 2
	plan := []topology.Partition{applytest.Move("a", 0, 2, 1), applytest.Move("a", 1, 3, 1), applytest.Move("a", 2, 3, 1)}
	return f, plan
}

func leaders(f *applytest.Admin) map[string]int32 {
	out := map[string]int32{}
	for _, p := range f.Parts {
		out[p.Key().String()] = p.Leader
	}
	return out
}

// The regression: after the moves complete, the plan partitions whose
// leader is not their first replica are elected, after the throttle is
// removed, and the wait ends when metadata shows the preferred leaders.
func TestExecuteElects(t *testing.T) {
	f, plan := keep()
	f.LateLeaders = 1
	clock := applytest.NewClock()
	var rec recorder
	res, err := Execute(context.Background(), f, plan, Options{Throttle: 9, Yes: true, Poll: time.Second, Clock: clock, Progress: rec.progress})
	require.NoError(t, err)
	assert.Equal(t, Done, res.Outcome)
	assert.Equal(t, 2, res.ToElect, "the plan announces the election of a/0 and a/1")
	require.NotNil(t, res.Election)
	assert.Equal(t, Election{Needed: 2, Elected: 2, Waited: time.Second}, *res.Election)
	assert.True(t, res.Election.OK())
	assert.Equal(t, map[string]int32{"a-0": 2, "a-1": 3, "a-2": 3}, leaders(f))
	// throttle -> reassign -> poll -> unthrottle -> elect.
	calls := f.Calls
	require.Len(t, calls, 6, "%q", calls)
	assert.True(t, strings.HasPrefix(calls[0], "SetThrottle 9 "))
	assert.Equal(t, []string{"Reassign a-0 [2 1]", "Reassign a-1 [3 1]", "ClearThrottle [1 2 3] [a]", "Elect a-0", "Elect a-1"}, calls[1:])
	assert.Equal(t, []EventKind{EventPlan, EventAccepted, EventProgress, EventElected}, rec.kinds())
	// The moves finish at the first poll (no sleep); the new leaders show
	// at the second Snapshot after the election (one sleep).
	assert.Equal(t, []time.Duration{time.Second}, clock.Sleeps)
}

// NoElect moves the replicas only and counts the partitions left with
// another leader; NoWait elects nothing and says so.
func TestExecuteNoElect(t *testing.T) {
	t.Run("no-elect", func(t *testing.T) {
		f, plan := keep()
		res, err := Execute(context.Background(), f, plan, Options{Yes: true, NoElect: true, Clock: applytest.NewClock()})
		require.NoError(t, err)
		assert.Equal(t, Done, res.Outcome)
		assert.Equal(t, 0, res.ToElect)
		assert.Equal(t, &Election{Skipped: SkipNoElect, Needed: 2}, res.Election)
		assert.NotContains(t, strings.Join(f.Calls, "\n"), "Elect")
		assert.Equal(t, map[string]int32{"a-0": 1, "a-1": 1, "a-2": 3}, leaders(f), "Kafka keeps leaders in the ISR")
	})
	t.Run("no-wait", func(t *testing.T) {
		f, plan := keep()
		res, err := Execute(context.Background(), f, plan, Options{Yes: true, NoWait: true})
		require.NoError(t, err)
		assert.Equal(t, Started, res.Outcome)
		assert.Equal(t, 0, res.ToElect)
		assert.Equal(t, &Election{Skipped: SkipNoWait}, res.Election)
		assert.NotContains(t, strings.Join(f.Calls, "\n"), "Elect")
	})
}

// A partition the controller refuses is a failure with its reason; one
// whose leader never shows in metadata is reported as not moved when the
// bounded wait ends; the others are elected.
func TestExecuteElectPartial(t *testing.T) {
	t.Run("refused", func(t *testing.T) {
		f, plan := keep()
		refused := errors.New("PREFERRED_LEADER_NOT_AVAILABLE")
		f.ElectErrs[key("a", 1)] = refused
		res, err := Execute(context.Background(), f, plan, Options{Yes: true, Clock: applytest.NewClock()})
		require.NoError(t, err)
		e := res.Election
		assert.Equal(t, 2, e.Needed)
		assert.Equal(t, 1, e.Elected)
		require.Len(t, e.Failed, 1)
		assert.Equal(t, "a", e.Failed[0].Topic)
		assert.Equal(t, int32(1), e.Failed[0].Partition)
		assert.Equal(t, "PREFERRED_LEADER_NOT_AVAILABLE", e.Failed[0].Error)
		assert.ErrorIs(t, e.Failed[0].Err(), refused)
		assert.Empty(t, e.NotMoved, "a refused partition is not waited for")
		assert.False(t, e.OK())
		assert.Equal(t, map[string]int32{"a-0": 2, "a-1": 1, "a-2": 3}, leaders(f))
	})
	t.Run("not moved", func(t *testing.T) {
		f, plan := keep()
		f.LateLeaders = -1
		clock := applytest.NewClock()
		res, err := Execute(context.Background(), f, plan, Options{Yes: true, Poll: 2 * time.Second, ElectWait: 5 * time.Second, Clock: clock})
		require.NoError(t, err)
		e := res.Election
		assert.Equal(t, 2, e.Elected)
		assert.Equal(t, []LeaderStatus{{"a", 0, 1, 2}, {"a", 1, 1, 3}}, e.NotMoved)
		assert.Equal(t, 5*time.Second, e.Waited)
		assert.False(t, e.OK())
		// The wait is bounded on the injected clock: 2+2+1.
		assert.Equal(t, []time.Duration{2 * time.Second, 2 * time.Second, time.Second}, clock.Sleeps)
	})
	t.Run("request fails", func(t *testing.T) {
		f, plan := keep()
		boom := errors.New("boom")
		f.Errs["ElectPreferred"] = boom
		_, err := Execute(context.Background(), f, plan, Options{Yes: true, Clock: applytest.NewClock()})
		require.ErrorIs(t, err, boom)
		assert.ErrorContains(t, err, "the plan is complete, but the preferred leader election failed")
	})
}

// Verify elects too once the plan is complete (and only then), unless
// NoElect; a partition already led by its first replica is not elected.
func TestVerifyElects(t *testing.T) {
	done := func() *applytest.Admin {
		f := applytest.New([]int32{1, 2, 3}, applytest.Part("a", 0, 2, 1), applytest.Part("a", 1, 3, 1))
		f.Parts[0].Leader = 1
		return f
	}
	plan := []topology.Partition{applytest.Move("a", 0, 2, 1), applytest.Move("a", 1, 3, 1)}
	f := done()
	res, err := Verify(context.Background(), f, plan, Options{Clock: applytest.NewClock()})
	require.NoError(t, err)
	assert.Equal(t, Done, res.Outcome)
	assert.Equal(t, &Election{Needed: 1, Elected: 1}, res.Election)
	assert.Equal(t, []string{"ClearThrottle [1 2 3] [a]", "Elect a-0"}, f.Calls)
	assert.Equal(t, int32(2), f.Parts[0].Leader)

	f = done()
	res, err = Verify(context.Background(), f, plan, Options{NoElect: true})
	require.NoError(t, err)
	assert.Equal(t, &Election{Skipped: SkipNoElect, Needed: 1}, res.Election)
	assert.Equal(t, []string{"ClearThrottle [1 2 3] [a]"}, f.Calls)

	f = done()
	f.Moving[key("a", 1)] = []int32{3, 2}
	res, err = Verify(context.Background(), f, plan, Options{Clock: applytest.NewClock()})
	require.NoError(t, err)
	assert.Equal(t, StillInProgress, res.Outcome)
	assert.Nil(t, res.Election)
	assert.Empty(t, f.Calls)
}

// TestExecuteInterruptedCleanup: an interrupt while Execute waits removes
// the throttle it set; a second signal (Options.Abort) cuts that removal
// short, before it starts or while the cluster does not answer, and the
// error says which configs stay on which brokers and topics.
func TestExecuteInterruptedCleanup(t *testing.T) {
	plan := []topology.Partition{applytest.Move("a", 0, 2, 3), applytest.Move("b", 0, 3, 1)}
	left := &ThrottleLeft{Brokers: []int32{1, 2, 3}, BrokerConfigs: []string{LeaderRate, FollowerRate},
		Topics: []string{"a", "b"}, TopicConfigs: []string{LeaderReplicas, FollowerReplicas}}
	clear := "ClearThrottle [1 2 3] [a b]"
	for _, tc := range []struct {
		name     string
		throttle int64
		edit     func(f *applytest.Admin, o *Options, abort chan struct{})
		calls    []string
		left     *ThrottleLeft
		aborted  bool
		cleanErr error
		msg      string
	}{
		{"removed", 1000, nil, []string{clear}, nil, false, nil, "; the throttle was removed"},
		{"no throttle", 0, nil, nil, nil, false, nil, ""},
		{"second signal while removing", 1000, func(f *applytest.Admin, _ *Options, abort chan struct{}) {
			f.Hang["ClearThrottle"] = true
			f.Hung = make(chan string, 1)
			go func() { <-f.Hung; close(abort) }()
		}, []string{clear}, left, true, context.Canceled, "; removing the throttle was cut short, so it may still be set"},
		{"second signal before removing", 1000, func(_ *applytest.Admin, _ *Options, abort chan struct{}) { close(abort) },
			nil, left, true, nil, "; removing the throttle was cut short, so it may still be set"},
		{"cluster does not answer", 1000, func(f *applytest.Admin, o *Options, _ chan struct{}) {
			f.Hang["ClearThrottle"] = true
			o.CleanupTimeout = time.Millisecond
		}, []string{clear}, left, false, context.DeadlineExceeded, "; removing the throttle failed (context deadline exceeded), so it may still be set"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := applytest.New([]int32{1, 2, 3}, applytest.Part("a", 0, 1, 2), applytest.Part("b", 0, 1, 2))
			f.Hang = map[string]bool{}
			ctx, cancel := context.WithCancelCause(context.Background())
			defer cancel(nil)
			clock := applytest.NewClock()
			clock.Cancel = func() { cancel(errors.New("interrupt signal received")) }
			abort := make(chan struct{})
			o := Options{Yes: true, Clock: clock, Throttle: tc.throttle, Abort: abort}
			if tc.edit != nil {
				tc.edit(f, &o, abort)
			}
			res, err := Execute(ctx, f, plan, o)
			assert.Nil(t, res)
			var ie *Interrupted
			require.ErrorAs(t, err, &ie)
			assert.ErrorIs(t, err, ErrNotDone)
			assert.Equal(t, StillInProgress, ie.Result.Outcome)
			assert.Len(t, ie.Result.Partitions, 2)
			assert.Equal(t, tc.left, ie.Left)
			assert.Equal(t, tc.aborted, ie.Aborted)
			if tc.cleanErr != nil {
				assert.ErrorIs(t, ie.CleanupErr, tc.cleanErr)
			} else {
				assert.NoError(t, ie.CleanupErr)
			}
			var clears []string
			for _, c := range f.Calls {
				if strings.HasPrefix(c, "ClearThrottle") {
					clears = append(clears, c)
				}
			}
			assert.Equal(t, tc.calls, clears)
			assert.Equal(t, "interrupted (interrupt signal received) with 0 of 2 partitions complete: the reassignment of the other 2 goes on in the cluster"+tc.msg, err.Error())
		})
	}
}
