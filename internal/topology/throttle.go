package topology

import (
	"slices"
	"strconv"
)

// Ongoing is a partition reassignment the controller is still carrying out,
// as Kafka's ListPartitionReassignments reports it.
type Ongoing struct {
	Replicas, Adding, Removing []int32
}

// Throttle is Kafka's replication throttle for a set of moves: the rate on
// every broker involved (leader/follower.replication.throttled.rate) and,
// per topic, the replicas it applies to
// (leader/follower.replication.throttled.replicas, "partition:broker"
// lists), as Kafka's kafka-reassign-partitions computes them.
type Throttle struct {
	Rate int64 // bytes/s
	// Brokers are every broker holding a current or a target replica.
	Brokers []int32
	// Leaders and Followers are, per topic, "partition:broker" lists: the
	// current replicas of a moving partition lead the copy, the replicas
	// being added follow.
	Leaders, Followers map[string][]string
}

// ThrottleFor returns the throttle of moves (each partition's target
// replicas) at rate bytes/s; current gives each moved partition's replicas
// now.
func ThrottleFor(rate int64, moves []Partition, current map[Key][]int32) Throttle {
	t := Throttle{Rate: rate, Leaders: map[string][]string{}, Followers: map[string][]string{}}
	var brokers []int32
	entry := func(p, b int32) string {
		return strconv.FormatInt(int64(p), 10) + ":" + strconv.FormatInt(int64(b), 10)
	}
	for _, m := range moves {
		cur := current[m.Key()]
		for _, b := range cur {
			t.Leaders[m.Topic] = append(t.Leaders[m.Topic], entry(m.Partition, b))
		}
		for _, b := range m.Replicas {
			if !slices.Contains(cur, b) {
				t.Followers[m.Topic] = append(t.Followers[m.Topic], entry(m.Partition, b))
			}
		}
		brokers = append(brokers, cur...)
		brokers = append(brokers, m.Replicas...)
	}
	slices.Sort(brokers)
	t.Brokers = slices.Compact(brokers)
	return t
}

// Topics returns the topics the throttle names, sorted.
func (t Throttle) Topics() []string {
	var out []string
	for topic := range t.Leaders {
		out = append(out, topic)
	}
	for topic := range t.Followers {
		if _, ok := t.Leaders[topic]; !ok {
			out = append(out, topic)
		}
	}
	slices.Sort(out)
	return out
}
