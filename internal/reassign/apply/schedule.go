package apply

import (
	"cmp"
	"math"
	"slices"

	"github.com/kplan-dev/kplan/internal/topology"
)

// Default limits of the staged waves (`kplan reassign apply
// --max-inflight-per-broker` and `--max-inflight`): Cruise Control's
// default of 5 concurrent partition movements per broker, and a global cap
// of 50 moves, so a small plan (at most 5 moves into or out of any broker)
// still starts in one wave, as before waves existed.
const (
	DefaultMaxInflightPerBroker = 5
	DefaultMaxInflight          = 50
)

// StepStatus is where a step stands.
type StepStatus string

// The statuses of a step.
const (
	// StepPending: not submitted yet.
	StepPending StepStatus = "pending"
	// StepSubmitted: the controller accepted it; it may still run.
	StepSubmitted StepStatus = "submitted"
	// StepDone: the partition has the step's replicas, nothing moving it.
	StepDone StepStatus = "done"
)

// Step is one reassignment the controller runs for a plan partition. A
// plan move that adds several replicas is split into steps that add one
// replica each (and remove one, while some remain to remove), so the
// partition never holds more than one replica beyond its replication
// factor (the larger of its current and target ones) while it moves.
type Step struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	// Index counts the partition's steps from 1 to Of.
	Index int `json:"step"`
	Of    int `json:"of"`
	// From are the partition's replicas before the step, To after it; the
	// last step's To is the plan's target.
	From []int32 `json:"from"`
	To   []int32 `json:"to"`
	// Size is the partition's size in bytes (0: unknown).
	Size   int64      `json:"size_bytes,omitempty"`
	Status StepStatus `json:"status"`
}

// Key returns the step's partition.
func (s Step) Key() topology.Key { return topology.Key{Topic: s.Topic, Partition: s.Partition} }

// Dest returns the broker the step adds a replica to, or -1 when it adds
// none (a reorder or a removal).
func (s Step) Dest() int32 {
	for _, b := range s.To {
		if !slices.Contains(s.From, b) {
			return b
		}
	}
	return -1
}

// Brokers returns the brokers a replica moves into or out of, sorted.
func (s Step) Brokers() []int32 {
	var out []int32
	for _, b := range s.To {
		if !slices.Contains(s.From, b) {
			out = append(out, b)
		}
	}
	for _, b := range s.From {
		if !slices.Contains(s.To, b) {
			out = append(out, b)
		}
	}
	slices.Sort(out)
	return out
}

// move is the step as a reassignment request.
func (s Step) move() topology.Partition {
	return topology.Partition{Topic: s.Topic, Partition: s.Partition, Replicas: slices.Clone(s.To), Leader: topology.NoLeader}
}

// SplitMove returns the replica lists a partition goes through from cur
// to target, one reassignment each, the last one target itself: each adds
// at most one broker, in target's order, and, while some remain, removes
// one broker target drops, in place (the leader last). A move that adds at
// most one replica is a single step.
func SplitMove(cur, target []int32, leader int32) [][]int32 {
	var adds, removes []int32
	for _, b := range target {
		if !slices.Contains(cur, b) {
			adds = append(adds, b)
		}
	}
	for _, b := range cur {
		if !slices.Contains(target, b) && b != leader {
			removes = append(removes, b)
		}
	}
	if slices.Contains(cur, leader) && !slices.Contains(target, leader) {
		removes = append(removes, leader)
	}
	if len(adds) <= 1 {
		return [][]int32{slices.Clone(target)}
	}
	var out [][]int32
	s := slices.Clone(cur)
	for i, a := range adds[:len(adds)-1] {
		next := slices.Clone(s)
		if i < len(removes) {
			next[slices.Index(next, removes[i])] = a
		} else {
			next = append(next, a)
		}
		out = append(out, next)
		s = next
	}
	return append(out, slices.Clone(target))
}

// planSteps splits the moves into steps, in plan order; size gives a
// partition's size (0: unknown).
func planSteps(todo []topology.Partition, current map[topology.Key]topology.Partition, size func(topology.Key) int64) []Step {
	var out []Step
	for _, m := range todo {
		p := current[m.Key()]
		lists := SplitMove(p.Replicas, m.Replicas, p.Leader)
		from := p.Replicas
		for i, to := range lists {
			out = append(out, Step{Topic: m.Topic, Partition: m.Partition, Index: i + 1, Of: len(lists),
				From: slices.Clone(from), To: to, Size: size(m.Key()), Status: StepPending})
			from = to
		}
	}
	return out
}

// Limits cap the steps in flight; 0 is no cap.
type Limits struct {
	// PerBroker caps the steps moving a replica into or out of a broker.
	PerBroker int
	// Total caps the steps in flight.
	Total int
}

// Scheduler chooses which steps to submit next: a partition's steps one
// after the other, within Limits, the next step chosen round robin over
// destination brokers (so no broker is filled or drained before the
// others), alternately the largest and the smallest step of the
// destination served (so the largest partitions do not all start
// together). It is deterministic; its only state is where the round robin
// and the alternation stand.
type Scheduler struct {
	limits Limits
	// cursor is the last destination served.
	cursor int32
	// small says the next pick takes a destination's smallest step.
	small bool
}

// NewScheduler returns a scheduler within l.
func NewScheduler(l Limits) *Scheduler {
	return &Scheduler{limits: l, cursor: math.MinInt32}
}

// Next returns the indexes in steps of the steps to submit now, in the
// order chosen, given the steps' statuses (StepSubmitted ones are in
// flight). steps hold each partition's steps together, in order. Next
// changes no status.
func (s *Scheduler) Next(steps []Step) []int {
	load := map[int32]int{}
	total := 0
	busy := map[topology.Key]bool{}
	brokers := map[int][]int32{} // of the eligible steps
	for _, st := range steps {
		if st.Status == StepSubmitted {
			total++
			busy[st.Key()] = true
			for _, b := range st.Brokers() {
				load[b]++
			}
		}
	}
	// The eligible steps: each idle partition's first step not done.
	queues := map[int32][]int{}
	seen := map[topology.Key]bool{}
	for i, st := range steps {
		k := st.Key()
		if seen[k] || st.Status == StepDone {
			continue
		}
		seen[k] = true
		if st.Status == StepPending && !busy[k] {
			queues[st.Dest()] = append(queues[st.Dest()], i)
			brokers[i] = st.Brokers()
		}
	}
	dests := make([]int32, 0, len(queues))
	for d := range queues {
		dests = append(dests, d)
	}
	slices.Sort(dests)
	fits := func(i int) bool {
		if s.limits.PerBroker <= 0 {
			return true
		}
		for _, b := range brokers[i] {
			if load[b] >= s.limits.PerBroker {
				return false
			}
		}
		return true
	}
	var out []int
	for s.limits.Total <= 0 || total < s.limits.Total {
		start, _ := slices.BinarySearch(dests, s.cursor+1)
		if s.cursor == math.MaxInt32 {
			start = 0
		}
		picked := false
		for j := range dests {
			d := dests[(start+j)%len(dests)]
			q := queues[d]
			if d >= 0 && s.limits.PerBroker > 0 && load[d] >= s.limits.PerBroker {
				continue // every step of q moves a replica into d
			}
			best := -1
			for qi, i := range q {
				if !fits(i) {
					continue
				}
				if best < 0 || s.better(steps[i], steps[q[best]]) {
					best = qi
				}
			}
			if best < 0 {
				continue
			}
			i := q[best]
			queues[d] = slices.Delete(q, best, best+1)
			out = append(out, i)
			total++
			for _, b := range brokers[i] {
				load[b]++
			}
			s.cursor, s.small, picked = d, !s.small, true
			break
		}
		if !picked {
			break
		}
	}
	return out
}

// better reports whether a goes before b at this pick: the larger (or,
// when the pick takes the smallest, the smaller) first, then plan order
// (a queue is in plan order, so an earlier candidate wins ties).
func (s *Scheduler) better(a, b Step) bool {
	c := cmp.Compare(a.Size, b.Size)
	if s.small {
		return c < 0
	}
	return c > 0
}
