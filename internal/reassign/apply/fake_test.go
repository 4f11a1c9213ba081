package apply

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/kplan-dev/kplan/internal/topology"
)

// fakeAdmin is a cluster in memory. Reassign marks partitions in progress;
// each Snapshot after that completes up to finishPerPoll of them (0: none
// ever completes). calls logs every change, in order.
type fakeAdmin struct {
	brokers []topology.Broker
	parts   []topology.Partition
	ongoing map[topology.Key][]int32 // target replicas of reassignments in progress

	finishPerPoll int
	// dropOnPoll makes the reassignments vanish unfinished at the next
	// Snapshot, as if someone else cancelled them.
	dropOnPoll bool

	errs      map[string]error
	calls     []string
	snapshots int
}

func newFake(brokers []int32, parts ...topology.Partition) *fakeAdmin {
	f := &fakeAdmin{ongoing: map[topology.Key][]int32{}, errs: map[string]error{}}
	for _, b := range brokers {
		f.brokers = append(f.brokers, topology.Broker{ID: b})
	}
	f.parts = parts
	return f
}

// part is a healthy partition led by its first replica.
func part(topic string, p int32, replicas ...int32) topology.Partition {
	return topology.Partition{Topic: topic, Partition: p, Replicas: replicas, Leader: replicas[0], ISR: slices.Clone(replicas)}
}

func move(topic string, p int32, replicas ...int32) topology.Partition {
	return topology.Partition{Topic: topic, Partition: p, Replicas: replicas, Leader: topology.NoLeader}
}

func (f *fakeAdmin) find(k topology.Key) *topology.Partition {
	for i := range f.parts {
		if f.parts[i].Key() == k {
			return &f.parts[i]
		}
	}
	return nil
}

func (f *fakeAdmin) Snapshot(_ context.Context, filter func(string) bool) (*topology.Cluster, error) {
	f.snapshots++
	if err := f.errs["Snapshot"]; err != nil {
		return nil, err
	}
	if f.dropOnPoll {
		clear(f.ongoing)
	}
	done := 0
	for _, p := range f.parts {
		if target, ok := f.ongoing[p.Key()]; ok && done < f.finishPerPoll {
			q := f.find(p.Key())
			q.Replicas, q.Leader = target, target[0]
			delete(f.ongoing, p.Key())
			done++
		}
	}
	c := &topology.Cluster{Brokers: slices.Clone(f.brokers), Live: true}
	for _, p := range f.parts {
		if filter(p.Topic) {
			c.Partitions = append(c.Partitions, p)
		}
	}
	return c, nil
}

func (f *fakeAdmin) Ongoing(_ context.Context, keys []topology.Key) (map[topology.Key]topology.Ongoing, error) {
	if err := f.errs["Ongoing"]; err != nil {
		return nil, err
	}
	out := map[topology.Key]topology.Ongoing{}
	for _, k := range keys {
		if target, ok := f.ongoing[k]; ok {
			out[k] = topology.Ongoing{Replicas: target}
		}
	}
	return out, nil
}

func (f *fakeAdmin) SetThrottle(_ context.Context, t topology.Throttle) error {
	f.calls = append(f.calls, fmt.Sprintf("SetThrottle %d %v %v %v", t.Rate, t.Brokers, t.Leaders, t.Followers))
	return f.errs["SetThrottle"]
}

func (f *fakeAdmin) ClearThrottle(_ context.Context, brokers []int32, topics []string) error {
	f.calls = append(f.calls, fmt.Sprintf("ClearThrottle %v %v", brokers, topics))
	return f.errs["ClearThrottle"]
}

func (f *fakeAdmin) Reassign(_ context.Context, moves []topology.Partition) error {
	for _, m := range moves {
		f.calls = append(f.calls, fmt.Sprintf("Reassign %s %v", m.Key(), m.Replicas))
	}
	if err := f.errs["Reassign"]; err != nil {
		return err
	}
	for _, m := range moves {
		f.ongoing[m.Key()] = m.Replicas
	}
	return nil
}

func (f *fakeAdmin) CancelReassign(_ context.Context, keys []topology.Key) error {
	for _, k := range keys {
		f.calls = append(f.calls, "Cancel "+k.String())
	}
	if err := f.errs["CancelReassign"]; err != nil {
		return err
	}
	for _, k := range keys {
		delete(f.ongoing, k)
	}
	return nil
}

// fakeClock advances only when slept on.
type fakeClock struct {
	now    time.Time
	sleeps []time.Duration
	// cancel, when set, is called on the first Sleep (a Ctrl-C mid-wait).
	cancel context.CancelFunc
}

func (c *fakeClock) Now() time.Time { return c.now }

func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	if c.cancel != nil {
		c.cancel()
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	c.sleeps = append(c.sleeps, d)
	c.now = c.now.Add(d)
	return nil
}

func newClock() *fakeClock { return &fakeClock{now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)} }
