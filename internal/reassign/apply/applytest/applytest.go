// Package applytest is an in-memory cluster for tests of the apply
// workflow (internal/reassign/apply) and of the command that wires it.
package applytest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/kplan-dev/kplan/internal/topology"
)

// Admin is a cluster in memory that implements apply.Admin. Reassign marks
// partitions in progress; each Snapshot after that completes up to
// FinishPerPoll of them (0: none ever completes), keeping the leader when
// it stays among the replicas, as Kafka's controller does. ElectPreferred
// moves leadership to the first replica when it is in the ISR. Calls logs
// every change, in order.
type Admin struct {
	Brokers []topology.Broker
	Parts   []topology.Partition
	// Moving holds the target replicas of the reassignments in progress.
	Moving map[topology.Key][]int32

	FinishPerPoll int
	// DropOnPoll makes the reassignments vanish unfinished at the next
	// Snapshot, as if someone else cancelled them.
	DropOnPoll bool

	// LagRemoval makes a finished reassignment show, at the Snapshot that
	// finishes it, the target's replicas followed by those removed (no
	// longer in progress), and the target only from the next Snapshot on,
	// as Kafka's metadata may for a moment.
	LagRemoval bool
	lagging    map[topology.Key][]int32

	// Unseen makes an accepted reassignment invisible for Unseen
	// Snapshots (neither in progress nor shown in metadata) and then done,
	// as a reorder Kafka applies at once may look before metadata catches
	// up.
	Unseen int
	unseen map[topology.Key]int
	hidden map[topology.Key][]int32

	// Errs makes a method (by name) fail.
	Errs map[string]error
	// Hang makes a method (by name) block until its context ends, as a
	// cluster that stopped answering, and then fail with the context's
	// error; the method's name is sent on Hung (when set) as it blocks.
	Hang map[string]bool
	Hung chan string
	// ElectErrs makes the preferred election of a partition fail.
	ElectErrs map[topology.Key]error
	// LateLeaders is how many Snapshots after an election its new leaders
	// show in metadata (-1: never).
	LateLeaders int
	// elected are the partitions elected, not yet shown, with the Snapshots
	// left before they are.
	elected map[topology.Key]int
	// Calls logs every change: SetThrottle, ClearThrottle, Reassign,
	// Cancel, Elect.
	Calls []string
	// Snapshots counts the Snapshot calls.
	Snapshots int
	// FailReassignAfter makes every Reassign call after the first
	// FailReassignAfter ones fail with ErrKilled, unlogged and changing
	// nothing (0: never), as an apply killed halfway that never sent them.
	FailReassignAfter int
	reassigns         int
	// MaxReplicas is, per partition, the most replicas it held at once
	// (its current and target replicas while it moves); MaxMoves, per
	// broker, the most reassignments moving a replica into or out of it at
	// once. Reassign updates both.
	MaxReplicas map[topology.Key]int
	MaxMoves    map[int32]int
}

// ErrKilled is the error of a Reassign call after FailReassignAfter.
var ErrKilled = errors.New("killed")

// New returns a cluster of running brokers holding parts.
func New(brokers []int32, parts ...topology.Partition) *Admin {
	f := &Admin{Moving: map[topology.Key][]int32{}, Errs: map[string]error{}, ElectErrs: map[topology.Key]error{}, elected: map[topology.Key]int{}}
	for _, b := range brokers {
		f.Brokers = append(f.Brokers, topology.Broker{ID: b})
	}
	f.Parts = parts
	return f
}

// Part is a healthy partition led by its first replica.
func Part(topic string, p int32, replicas ...int32) topology.Partition {
	return topology.Partition{Topic: topic, Partition: p, Replicas: replicas, Leader: replicas[0], ISR: slices.Clone(replicas)}
}

// Move is a plan entry: a partition's target replicas.
func Move(topic string, p int32, replicas ...int32) topology.Partition {
	return topology.Partition{Topic: topic, Partition: p, Replicas: replicas, Leader: topology.NoLeader}
}

func (f *Admin) find(k topology.Key) *topology.Partition {
	for i := range f.Parts {
		if f.Parts[i].Key() == k {
			return &f.Parts[i]
		}
	}
	return nil
}

// Snapshot implements apply.Admin.
func (f *Admin) Snapshot(_ context.Context, filter func(string) bool) (*topology.Cluster, error) {
	f.Snapshots++
	if err := f.Errs["Snapshot"]; err != nil {
		return nil, err
	}
	if f.DropOnPoll {
		clear(f.Moving)
	}
	for k, left := range f.elected {
		switch {
		case left == 0:
			q := f.find(k)
			q.Leader = q.Replicas[0]
			delete(f.elected, k)
		case left > 0:
			f.elected[k] = left - 1
		}
	}
	for k, left := range f.unseen {
		if left > 0 {
			f.unseen[k] = left - 1
			continue
		}
		q := f.find(k)
		q.Replicas, q.ISR = f.hidden[k], slices.Clone(f.hidden[k])
		if !slices.Contains(q.Replicas, q.Leader) {
			q.Leader = q.Replicas[0]
		}
		delete(f.unseen, k)
	}
	for k, target := range f.lagging {
		q := f.find(k)
		q.Replicas, q.ISR = target, slices.Clone(target)
		delete(f.lagging, k)
	}
	done := 0
	for _, p := range f.Parts {
		if target, ok := f.Moving[p.Key()]; ok && done < f.FinishPerPoll {
			q := f.find(p.Key())
			shown := target
			if f.LagRemoval {
				if f.lagging == nil {
					f.lagging = map[topology.Key][]int32{}
				}
				f.lagging[p.Key()] = target
				shown = slices.Clone(target)
				for _, b := range q.Replicas {
					if !slices.Contains(target, b) {
						shown = append(shown, b)
					}
				}
			}
			q.Replicas, q.ISR = shown, slices.Clone(shown)
			if !slices.Contains(target, q.Leader) {
				q.Leader = target[0]
			}
			delete(f.Moving, p.Key())
			done++
		}
	}
	c := &topology.Cluster{Brokers: slices.Clone(f.Brokers), Live: true}
	for _, p := range f.Parts {
		if filter(p.Topic) {
			c.Partitions = append(c.Partitions, p)
		}
	}
	return c, nil
}

// Ongoing implements apply.Admin.
func (f *Admin) Ongoing(_ context.Context, keys []topology.Key) (map[topology.Key]topology.Ongoing, error) {
	if err := f.Errs["Ongoing"]; err != nil {
		return nil, err
	}
	out := map[topology.Key]topology.Ongoing{}
	for _, k := range keys {
		if target, ok := f.Moving[k]; ok {
			// As Kafka lists them: the target's replicas, then those
			// being removed.
			o := topology.Ongoing{Replicas: slices.Clone(target)}
			cur := f.find(k).Replicas
			for _, b := range target {
				if !slices.Contains(cur, b) {
					o.Adding = append(o.Adding, b)
				}
			}
			for _, b := range cur {
				if !slices.Contains(target, b) {
					o.Removing = append(o.Removing, b)
					o.Replicas = append(o.Replicas, b)
				}
			}
			out[k] = o
		}
	}
	return out, nil
}

// SetThrottle implements apply.Admin.
func (f *Admin) SetThrottle(_ context.Context, t topology.Throttle) error {
	f.Calls = append(f.Calls, fmt.Sprintf("SetThrottle %d %v %v %v", t.Rate, t.Brokers, t.Leaders, t.Followers))
	return f.Errs["SetThrottle"]
}

// SetBrokerRates implements apply.RateSetter.
func (f *Admin) SetBrokerRates(_ context.Context, rates map[int32]int64) error {
	var parts []string
	for _, b := range slices.Sorted(maps.Keys(rates)) {
		parts = append(parts, fmt.Sprintf("%d=%d", b, rates[b]))
	}
	f.Calls = append(f.Calls, "SetBrokerRates "+strings.Join(parts, " "))
	return f.Errs["SetBrokerRates"]
}

// ClearThrottle implements apply.Admin.
func (f *Admin) ClearThrottle(ctx context.Context, brokers []int32, topics []string) error {
	f.Calls = append(f.Calls, fmt.Sprintf("ClearThrottle %v %v", brokers, topics))
	if err := f.hang(ctx, "ClearThrottle"); err != nil {
		return err
	}
	return f.Errs["ClearThrottle"]
}

// hang blocks until ctx ends when method is to hang.
func (f *Admin) hang(ctx context.Context, method string) error {
	if !f.Hang[method] {
		return nil
	}
	if f.Hung != nil {
		f.Hung <- method
	}
	<-ctx.Done()
	return ctx.Err()
}

// Reassign implements apply.Admin.
func (f *Admin) Reassign(_ context.Context, moves []topology.Partition) error {
	f.reassigns++
	if f.FailReassignAfter > 0 && f.reassigns > f.FailReassignAfter {
		return ErrKilled
	}
	for _, m := range moves {
		f.Calls = append(f.Calls, fmt.Sprintf("Reassign %s %v", m.Key(), m.Replicas))
	}
	if err := f.Errs["Reassign"]; err != nil {
		return err
	}
	for _, m := range moves {
		if f.Unseen > 0 {
			if f.unseen == nil {
				f.unseen, f.hidden = map[topology.Key]int{}, map[topology.Key][]int32{}
			}
			f.unseen[m.Key()], f.hidden[m.Key()] = f.Unseen-1, m.Replicas
			continue
		}
		f.Moving[m.Key()] = m.Replicas
	}
	f.track()
	return nil
}

// track updates MaxReplicas and MaxMoves from the reassignments in
// progress.
func (f *Admin) track() {
	if f.MaxReplicas == nil {
		f.MaxReplicas, f.MaxMoves = map[topology.Key]int{}, map[int32]int{}
	}
	moves := map[int32]int{}
	for k, target := range f.Moving {
		cur := f.find(k).Replicas
		held := slices.Clone(cur)
		for _, b := range target {
			if !slices.Contains(cur, b) {
				held = append(held, b)
				moves[b]++
			}
		}
		for _, b := range cur {
			if !slices.Contains(target, b) {
				moves[b]++
			}
		}
		f.MaxReplicas[k] = max(f.MaxReplicas[k], len(held))
	}
	for b, n := range moves {
		f.MaxMoves[b] = max(f.MaxMoves[b], n)
	}
}

// CancelReassign implements apply.Admin.
func (f *Admin) CancelReassign(_ context.Context, keys []topology.Key) error {
	for _, k := range keys {
		f.Calls = append(f.Calls, "Cancel "+k.String())
	}
	if err := f.Errs["CancelReassign"]; err != nil {
		return err
	}
	for _, k := range keys {
		delete(f.Moving, k)
	}
	return nil
}

// ElectPreferred implements apply.Admin.
func (f *Admin) ElectPreferred(_ context.Context, keys []topology.Key) (map[topology.Key]error, error) {
	for _, k := range keys {
		f.Calls = append(f.Calls, "Elect "+k.String())
	}
	if err := f.Errs["ElectPreferred"]; err != nil {
		return nil, err
	}
	out := map[topology.Key]error{}
	for _, k := range keys {
		q := f.find(k)
		switch {
		case q == nil:
			out[k] = errors.New("UNKNOWN_TOPIC_OR_PARTITION")
		case f.ElectErrs[k] != nil:
			out[k] = f.ElectErrs[k]
		case q.Leader == q.Replicas[0]:
			// ELECTION_NOT_NEEDED: not a refusal.
		case !slices.Contains(q.ISR, q.Replicas[0]):
			out[k] = errors.New("PREFERRED_LEADER_NOT_AVAILABLE")
		case f.LateLeaders == 0:
			q.Leader = q.Replicas[0]
		default:
			f.elected[k] = f.LateLeaders
		}
	}
	return out, nil
}

// Clock advances only when slept on.
type Clock struct {
	T      time.Time
	Sleeps []time.Duration
	// Cancel, when set, is called on every Sleep (a Ctrl-C mid-wait).
	Cancel context.CancelFunc
}

// Now implements apply.Clock.
func (c *Clock) Now() time.Time { return c.T }

// Sleep implements apply.Clock: it advances the time by d at once.
func (c *Clock) Sleep(ctx context.Context, d time.Duration) error {
	if c.Cancel != nil {
		c.Cancel()
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	c.Sleeps = append(c.Sleeps, d)
	c.T = c.T.Add(d)
	return nil
}

// NewClock returns a clock at a fixed time.
func NewClock() *Clock { return &Clock{T: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)} }
