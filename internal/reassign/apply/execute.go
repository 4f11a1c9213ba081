package apply

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/kplan-dev/kplan/internal/errkind"
	"github.com/kplan-dev/kplan/internal/topology"
)

// throttleSet is where a replication throttle is set: brokers and topics.
type throttleSet struct {
	Brokers []int32
	Topics  []string
}

func (t throttleSet) set() bool { return len(t.Brokers) > 0 || len(t.Topics) > 0 }

// union returns the brokers and topics of t and u, sorted.
func (t throttleSet) union(u throttleSet) throttleSet {
	b := append(slices.Clone(t.Brokers), u.Brokers...)
	slices.Sort(b)
	ts := append(slices.Clone(t.Topics), u.Topics...)
	slices.Sort(ts)
	return throttleSet{Brokers: slices.Compact(b), Topics: slices.Compact(ts)}
}

// stepsThrottle is the throttle for every step, as Kafka's tool computes
// it for each: the replicas before a step lead, the ones it adds follow.
func stepsThrottle(rate int64, steps []Step) topology.Throttle {
	t := topology.Throttle{Rate: rate, Leaders: map[string][]string{}, Followers: map[string][]string{}}
	var brokers []int32
	for _, s := range steps {
		one := topology.ThrottleFor(rate, []topology.Partition{s.move()}, map[topology.Key][]int32{s.Key(): s.From})
		for topic, es := range one.Leaders {
			for _, e := range es {
				if !slices.Contains(t.Leaders[topic], e) {
					t.Leaders[topic] = append(t.Leaders[topic], e)
				}
			}
		}
		for topic, es := range one.Followers {
			for _, e := range es {
				if !slices.Contains(t.Followers[topic], e) {
					t.Followers[topic] = append(t.Followers[topic], e)
				}
			}
		}
		brokers = append(brokers, one.Brokers...)
	}
	slices.Sort(brokers)
	t.Brokers = slices.Compact(brokers)
	return t
}

// Execute carries out the plan in staged waves and, unless o.NoWait,
// waits until it is complete, removes the throttle and, unless o.NoElect,
// elects the preferred leaders of the plan partitions led by another
// replica than their first (see Election).
//
// Each move is split into steps that add one replica each (SplitMove);
// the Scheduler submits them within o.Limits, round robin over the
// destination brokers, and every poll submits the steps the finished ones
// make room for. The state (the steps and their statuses) goes to
// o.SaveState after each change, and o.Resume goes on from a saved one.
//
// Before anything changes it refuses (an errkind.Refused error about the
// field "plan") when the cluster drifted from o.Source (the error wraps a
// *Drift), and when a partition to move is being reassigned already (not
// by the apply resumed), has no leader, or has a target broker that is
// not running (the error wraps Refusals); outside the lab, without o.Yes,
// it refuses about the field "yes". A plan partition missing from the
// cluster is a usage error about "plan".
func Execute(ctx context.Context, adm Admin, plan []topology.Partition, o Options) (*Result, error) {
	if o.Clock == nil && !o.NoWait {
		return nil, errors.New("apply: Options.Clock is nil")
	}
	st, err := read(ctx, adm, ModeExecute, plan)
	if err != nil {
		return nil, err
	}
	res := st.res
	state := o.Resume
	ours := map[topology.Key]bool{}
	if state != nil {
		if err := state.reconcile(st.current, st.ongoing); err != nil {
			o.emit(Event{Kind: EventPlan, Result: res})
			return nil, errkind.Wrap(errkind.Refused, "plan", err)
		}
		for _, s := range state.Steps {
			ours[s.Key()] = true
		}
	} else {
		state = &State{Schema: StateSchema, Plan: PlanDigest(plan)}
	}
	var todo []topology.Partition
	var refusals Refusals
	for i, m := range plan {
		s := &res.Partitions[i]
		k := m.Key()
		switch {
		case s.Status == Missing:
			return nil, errkind.Usagef("plan", "%s/%d does not exist on the cluster", m.Topic, m.Partition)
		case s.Status == InProgress && ours[k]:
			continue
		case s.Status == InProgress:
			refusals = append(refusals, Refusal{Rule: RuleInProgress, Partition: k})
			continue
		case s.Status == Complete:
			continue
		}
		p := st.current[k]
		if p.Leader == topology.NoLeader {
			refusals = append(refusals, Refusal{Rule: RuleNoLeader, Partition: k})
		}
		for _, b := range m.Replicas {
			switch {
			case st.running[b]:
			case st.named[b]:
				refusals = append(refusals, Refusal{Rule: RuleBrokerDown, Partition: k, Broker: b})
			default:
				refusals = append(refusals, Refusal{Rule: RuleBrokerUnknown, Partition: k, Broker: b})
			}
		}
		s.Status = Pending
		if !ours[k] {
			todo = append(todo, m)
		}
	}
	if !o.NoElect && !o.NoWait {
		res.ToElect = toElect(plan, st.current)
	}
	dmoves, da, err := readDirs(ctx, adm, plan, res)
	if err != nil {
		return nil, err
	}
	o.emit(Event{Kind: EventPlan, Result: res})
	if o.Source != nil {
		if d := o.Source.check(st.cluster, plan, func(k topology.Key) bool { return ours[k] }); d != nil {
			return nil, errkind.Wrap(errkind.Refused, "plan", d)
		}
	}
	if len(refusals) > 0 {
		return nil, errkind.Wrap(errkind.Refused, "plan", refusals)
	}
	size := func(k topology.Key) int64 {
		if n, ok := o.Sizes[k]; ok {
			return max(n, 0)
		}
		return max(st.current[k].SizeBytes, 0)
	}
	state.Steps = append(state.Steps, planSteps(todo, st.current, size)...)
	state.Complete = false
	left := map[topology.Key]bool{}
	var open []Step
	for _, s := range state.Steps {
		if s.Status != StepDone {
			left[s.Key()] = true
			open = append(open, s)
		}
	}
	res.Steps = len(state.Steps)
	done, inflight := state.Counts()
	res.Submitted = done + inflight
	previous := throttleSet{Brokers: state.ThrottleBrokers, Topics: state.ThrottleTopics}
	if len(left) == 0 && !previous.set() && o.Resume == nil && res.Dirs.Done() {
		res.Outcome = NothingToDo
		return res, nil
	}
	if len(left) > 0 && !o.Yes && !o.Lab {
		return nil, errkind.Refusedf("yes", "needed to execute %d partition moves on a cluster that is not the local kplan lab; nothing was changed", len(left))
	}
	if !res.Dirs.Done() && !o.Yes && !o.Lab {
		return nil, errkind.Refusedf("yes", "needed to move %d replicas between log dirs on a cluster that is not the local kplan lab; nothing was changed", res.Dirs.Planned-res.Dirs.InPlace)
	}
	res.Moves = len(left)
	if !slices.ContainsFunc(open, func(s Step) bool { return s.Dest() >= 0 }) {
		// Only replica orders change (kplan reassign --reorder-only):
		// Kafka applies them as metadata, there is nothing to throttle.
		o.Throttle = 0
	}
	save := func() error {
		if o.SaveState == nil {
			return nil
		}
		if err := o.SaveState(state); err != nil {
			return fmt.Errorf("saving the apply's state: %w", err)
		}
		return nil
	}
	lift := previous
	if o.Throttle > 0 && len(open) > 0 {
		t := stepsThrottle(o.Throttle, open)
		if o.Guard != nil {
			if _, ok := adm.(RateSetter); !ok {
				return nil, errkind.Usagef("latency-objective", "this cluster's admin cannot set the throttle broker by broker")
			}
			// Nothing changed on the cluster yet but what the canary
			// creates, which its owner removes. The guard ramps the
			// rate up to o.Throttle from the one it starts at.
			first, err := o.Guard.begin(ctx, o.Clock.Now(), t.Brokers, o.Throttle)
			if err != nil {
				return nil, err
			}
			t.Rate = first
		}
		lift = lift.union(throttleSet{Brokers: t.Brokers, Topics: t.Topics()})
		state.ThrottleBrokers, state.ThrottleTopics = lift.Brokers, lift.Topics
		if err := save(); err != nil {
			return nil, err
		}
		if err := adm.SetThrottle(ctx, t); err != nil {
			return nil, fmt.Errorf("setting the replication throttle: %w", err)
		}
	} else if err := save(); err != nil {
		return nil, err
	}
	sched := NewScheduler(o.Limits)
	// submit sends the steps the scheduler picks, in plan order.
	submit := func() error {
		batch := sched.Next(state.Steps)
		if len(batch) == 0 {
			return nil
		}
		slices.Sort(batch)
		moves := make([]topology.Partition, len(batch))
		for i, x := range batch {
			moves[i] = state.Steps[x].move()
		}
		if err := adm.Reassign(ctx, moves); err != nil {
			return err
		}
		sent := map[topology.Key]bool{}
		for _, x := range batch {
			state.Steps[x].Status = StepSubmitted
			sent[state.Steps[x].Key()] = true
		}
		// A copy: the events before saw the statuses before.
		res.Partitions = slices.Clone(res.Partitions)
		for i := range res.Partitions {
			if sent[res.Partitions[i].Key()] && res.Partitions[i].Status != Complete {
				res.Partitions[i].Status = InProgress
			}
		}
		res.tally()
		res.Submitted += len(batch)
		res.Waves++
		if err := save(); err != nil {
			return err
		}
		o.emit(Event{Kind: EventAccepted, Result: res, Moves: len(batch), Wave: res.Waves})
		return nil
	}
	// The replicas' dirs first, as the brokers remember a dir for a
	// replica they will create; those they do not hold yet are asked
	// again once moved (finishDirs).
	var againDirs []DirMove
	if da != nil && !res.Dirs.Done() {
		if againDirs, err = alterDirs(ctx, da, res.Dirs.Wrong); err != nil {
			return nil, err
		}
	}
	if len(left) == 0 && da != nil && !previous.set() {
		// Only dirs change: no reassignment to submit.
		return finishOnlyDirs(ctx, adm, da, dmoves, againDirs, plan, res, o)
	}
	if err := submit(); err != nil {
		switch {
		case res.Waves > 0:
			return nil, err
		case o.Throttle > 0:
			return nil, fmt.Errorf("executing the plan (nothing was changed but the replication throttle, which stays until the plan is verified or cancelled): %w", err)
		}
		return nil, fmt.Errorf("executing the plan (nothing else was changed): %w", err)
	}
	if o.NoWait {
		res.Outcome = Started
		res.Election = &Election{Skipped: SkipNoWait}
		return res, nil
	}
	if err := waves(ctx, adm, plan, res, state, submit, save, o); err != nil {
		if ctx.Err() != nil && errors.Is(err, ErrNotDone) {
			return nil, interrupted(ctx, adm, res, lift, o)
		}
		return nil, err
	}
	if lift.set() {
		if err := adm.ClearThrottle(ctx, lift.Brokers, lift.Topics); err != nil {
			return nil, fmt.Errorf("the plan is complete, but removing the throttle failed: %w", err)
		}
		state.ThrottleBrokers, state.ThrottleTopics = nil, nil
		if err := save(); err != nil {
			return nil, err
		}
	}
	if da != nil {
		if err := finishDirs(ctx, da, dmoves, againDirs, res, o); err != nil {
			return nil, err
		}
	}
	res.Outcome = Done
	if err := elect(ctx, adm, plan, res, o); err != nil {
		return nil, err
	}
	return res, nil
}

// finishOnlyDirs ends an Execute whose plan moves replicas between log
// dirs only (its replica lists are in place).
func finishOnlyDirs(ctx context.Context, adm Admin, da DirAdmin, moves, again []DirMove, plan []topology.Partition, res *Result, o Options) (*Result, error) {
	if o.NoWait {
		res.Outcome = Started
		res.Election = &Election{Skipped: SkipNoWait}
		return res, nil
	}
	if err := finishDirs(ctx, da, moves, again, res, o); err != nil {
		return nil, err
	}
	res.Outcome = Done
	if err := elect(ctx, adm, plan, res, o); err != nil {
		return nil, err
	}
	return res, nil
}

// lostPolls is how many polls in a row a submitted step must be neither
// running nor done before it counts as cancelled or replaced.
const lostPolls = 3

// waves polls until every step is done, reporting each poll, marking the
// steps found done and submitting the next ones.
func waves(ctx context.Context, adm Admin, plan []topology.Partition, res *Result, state *State,
	submit func() error, save func() error, o Options) error {
	poll := o.Poll
	if poll <= 0 {
		poll = time.Second
	}
	start := o.Clock.Now()
	stopped := func(err error) error { return fmt.Errorf("stopped waiting (%w): %w", err, ErrNotDone) }
	lost := map[int]int{}
	sizer, _ := adm.(ReplicaSizer)
	var meter byteMeter
	for {
		st, err := read(ctx, adm, ModeExecute, plan)
		if err != nil {
			if ctx.Err() != nil {
				return stopped(ctx.Err())
			}
			return err
		}
		changed, gone := false, 0
		left := map[topology.Key]bool{}
		for i := range state.Steps {
			s := &state.Steps[i]
			if s.Status == StepSubmitted {
				k := s.Key()
				_, busy := st.ongoing[k]
				switch {
				case busy, finishing(st.current[k].Replicas, *s):
					// Running, or just ended with the removal not yet
					// in metadata: the next poll tells.
					delete(lost, i)
				case slices.Equal(st.current[k].Replicas, s.To):
					s.Status, changed = StepDone, true
				default:
					// Cancelled or replaced, or accepted and not yet in
					// metadata (a reorder, applied at once, can show its
					// old order for a moment): lost after lostPolls
					// polls in a row.
					if lost[i]++; lost[i] >= lostPolls {
						gone++
					}
				}
			}
			if s.Status != StepDone {
				left[s.Key()] = true
			}
		}
		res.Partitions = st.res.Partitions
		for i := range res.Partitions {
			if p := &res.Partitions[i]; p.Status == Differs && left[p.Key()] {
				p.Status = Pending
			}
		}
		res.tally()
		now := o.Clock.Now()
		elapsed := now.Sub(start)
		var sizes map[topology.Key]map[int32]int64
		if sizer != nil && len(left) > 0 {
			// Unknown this poll when the brokers do not answer: progress
			// in bytes is a report, not a reason to stop.
			sizes, _ = sizer.ReplicaSizes(ctx, planFilter(plan))
		}
		bytes := meter.measure(state.Steps, sizes, now)
		progress := func() {
			o.emit(Event{Kind: EventProgress, Result: res, Moves: res.Moves, Elapsed: elapsed, Bytes: bytes})
		}
		if gone > 0 {
			progress()
			return fmt.Errorf("%d partitions are neither complete nor in progress: the reassignment was cancelled or replaced", gone)
		}
		if len(left) == 0 {
			progress()
			state.Complete = true
			return save()
		}
		if changed {
			if err := save(); err != nil {
				return err
			}
		}
		if err := submit(); err != nil {
			if ctx.Err() != nil {
				return stopped(ctx.Err())
			}
			return fmt.Errorf("submitting the next moves (%d of %d submitted: those go on in the cluster, the others wait for a resumed apply): %w", res.Submitted, res.Steps, err)
		}
		// After the next wave, so its moves count in progress.
		progress()
		if err := adapt(ctx, adm, res, elapsed, now, o); err != nil {
			if ctx.Err() != nil {
				return stopped(ctx.Err())
			}
			return err
		}
		d := poll
		if o.WaitTimeout > 0 {
			left := o.WaitTimeout - elapsed
			if left <= 0 {
				waiting := ""
				if res.Submitted < res.Steps {
					waiting = fmt.Sprintf(" (%d of %d moves submitted, the others wait for a resumed apply)", res.Submitted, res.Steps)
				}
				return errkind.Wrap(errkind.Runtime, "wait-timeout", fmt.Errorf("not complete after %v%s: %w", o.WaitTimeout, waiting, ErrNotDone))
			}
			d = min(d, left)
		}
		if err := o.Clock.Sleep(ctx, d); err != nil {
			return stopped(err)
		}
	}
}

// adapt closes a window of the adaptive throttle (o.Guard) when one is
// due, sets the rates its rule changed and reports them.
func adapt(ctx context.Context, adm Admin, res *Result, elapsed time.Duration, now time.Time, o Options) error {
	if o.Guard == nil || !o.Guard.started {
		return nil
	}
	changes := o.Guard.Adjust(now)
	o.Guard.Commit(changes)
	if rates := o.Guard.Pending(now); len(rates) > 0 {
		if err := adm.(RateSetter).SetBrokerRates(ctx, rates); err != nil {
			return fmt.Errorf("adapting the replication throttle (the moves go on at the rates set before): %w: %w", err, ErrNotDone)
		}
		o.Guard.Applied(rates)
	}
	if len(changes) > 0 {
		o.emit(Event{Kind: EventThrottle, Result: res, Elapsed: elapsed, Changes: changes})
	}
	return nil
}
