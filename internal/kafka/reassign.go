package kafka

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/kplan-dev/kplan/internal/topology"
)

// Move is one partition's target replica list, preferred leader first.
type Move struct {
	Topic     string
	Partition int32
	Replicas  []int32
}

// Key returns the move's topic-partition.
func (m Move) Key() topology.Key { return topology.Key{Topic: m.Topic, Partition: m.Partition} }

// Ongoing is a partition reassignment the controller is still carrying out.
type Ongoing struct {
	Replicas, Adding, Removing []int32
}

// The dynamic configs of a replication throttle, as Kafka's
// kafka-reassign-partitions sets them.
const (
	leaderRate       = "leader.replication.throttled.rate"
	followerRate     = "follower.replication.throttled.rate"
	leaderReplicas   = "leader.replication.throttled.replicas"
	followerReplicas = "follower.replication.throttled.replicas"
)

// Throttle is a replication throttle for a set of moves: the rate on every
// broker involved, and per topic the replicas it applies to (the current
// replicas lead the copy, the added ones follow), as Kafka's own tool
// computes them.
type Throttle struct {
	Rate int64 // bytes/s
	// Brokers are every broker holding a current or a target replica.
	Brokers []int32
	// Leaders and Followers are, per topic, "partition:broker" lists.
	Leaders, Followers map[string][]string
}

// ThrottleFor returns the throttle of moves at rate bytes/s; current gives
// each moved partition's replicas now.
func ThrottleFor(rate int64, moves []Move, current map[topology.Key][]int32) Throttle {
	t := Throttle{Rate: rate, Leaders: map[string][]string{}, Followers: map[string][]string{}}
	var brokers []int32
	for _, m := range moves {
		cur := current[m.Key()]
		for _, b := range cur {
			t.Leaders[m.Topic] = append(t.Leaders[m.Topic], fmt.Sprintf("%d:%d", m.Partition, b))
		}
		for _, b := range m.Replicas {
			if !slices.Contains(cur, b) {
				t.Followers[m.Topic] = append(t.Followers[m.Topic], fmt.Sprintf("%d:%d", m.Partition, b))
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

// SetThrottle applies t: the rate on its brokers, the replica lists on its
// topics.
func (a *Admin) SetThrottle(ctx context.Context, t Throttle) error {
	adm, err := a.kadm()
	if err != nil {
		return err
	}
	rate := strconv.FormatInt(t.Rate, 10)
	res, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{
		{Op: kadm.SetConfig, Name: leaderRate, Value: &rate},
		{Op: kadm.SetConfig, Name: followerRate, Value: &rate},
	}, t.Brokers...)
	if err := alterErr("broker throttle", res, err); err != nil {
		return a.classify(err)
	}
	for _, topic := range t.Topics() {
		var cfg []kadm.AlterConfig
		if l := strings.Join(t.Leaders[topic], ","); l != "" {
			cfg = append(cfg, kadm.AlterConfig{Op: kadm.SetConfig, Name: leaderReplicas, Value: &l})
		}
		if f := strings.Join(t.Followers[topic], ","); f != "" {
			cfg = append(cfg, kadm.AlterConfig{Op: kadm.SetConfig, Name: followerReplicas, Value: &f})
		}
		res, err := adm.AlterTopicConfigs(ctx, cfg, topic)
		if err := alterErr("topic "+topic+" throttle", res, err); err != nil {
			return a.classify(err)
		}
	}
	return nil
}

// ClearThrottle removes the throttle configs from brokers and topics, as
// kafka-reassign-partitions --verify does once a reassignment completed.
func (a *Admin) ClearThrottle(ctx context.Context, brokers []int32, topics []string) error {
	adm, err := a.kadm()
	if err != nil {
		return err
	}
	if len(brokers) > 0 {
		res, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{
			{Op: kadm.DeleteConfig, Name: leaderRate}, {Op: kadm.DeleteConfig, Name: followerRate},
		}, brokers...)
		if err := alterErr("broker throttle", res, err); err != nil {
			return a.classify(err)
		}
	}
	for _, topic := range topics {
		res, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{
			{Op: kadm.DeleteConfig, Name: leaderReplicas}, {Op: kadm.DeleteConfig, Name: followerReplicas},
		}, topic)
		if err := alterErr("topic "+topic+" throttle", res, err); err != nil {
			return a.classify(err)
		}
	}
	return nil
}

func alterErr(what string, res kadm.AlterConfigsResponses, err error) error {
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	var errs []error
	for _, r := range res {
		if r.Err != nil {
			errs = append(errs, fmt.Errorf("%s %s: %w %s", what, r.Name, r.Err, r.ErrMessage))
		}
	}
	return errors.Join(errs...)
}

// Reassign asks the controller to move every partition to its target
// replicas (AlterPartitionReassignments). Partition errors are joined.
func (a *Admin) Reassign(ctx context.Context, moves []Move) error {
	req := kadm.AlterPartitionAssignmentsReq{}
	for _, m := range moves {
		req.Assign(m.Topic, m.Partition, m.Replicas)
	}
	return a.alterAssignments(ctx, req, "reassign")
}

// CancelReassign cancels the ongoing reassignments of keys; the partitions
// return to their replicas before the reassignment.
func (a *Admin) CancelReassign(ctx context.Context, keys []topology.Key) error {
	req := kadm.AlterPartitionAssignmentsReq{}
	for _, k := range keys {
		req.CancelAssign(k.Topic, k.Partition)
	}
	return a.alterAssignments(ctx, req, "cancel")
}

func (a *Admin) alterAssignments(ctx context.Context, req kadm.AlterPartitionAssignmentsReq, what string) error {
	adm, err := a.kadm()
	if err != nil {
		return err
	}
	res, err := adm.AlterPartitionAssignments(ctx, req)
	if err != nil {
		return a.classify(fmt.Errorf("%s: %w", what, err))
	}
	var errs []error
	for _, r := range res.Sorted() {
		if r.Err != nil {
			errs = append(errs, fmt.Errorf("%s %s/%d: %w %s", what, r.Topic, r.Partition, r.Err, r.ErrMessage))
		}
	}
	return errors.Join(errs...)
}

// Ongoing lists the reassignments in progress among keys.
func (a *Admin) Ongoing(ctx context.Context, keys []topology.Key) (map[topology.Key]Ongoing, error) {
	adm, err := a.kadm()
	if err != nil {
		return nil, err
	}
	set := kadm.TopicsSet{}
	for _, k := range keys {
		set.Add(k.Topic, k.Partition)
	}
	res, err := adm.ListPartitionReassignments(ctx, set)
	if err != nil {
		return nil, a.classify(fmt.Errorf("list reassignments: %w", err))
	}
	out := map[topology.Key]Ongoing{}
	for _, r := range res.Sorted() {
		out[topology.Key{Topic: r.Topic, Partition: r.Partition}] = Ongoing{Replicas: r.Replicas, Adding: r.AddingReplicas, Removing: r.RemovingReplicas}
	}
	return out, nil
}

func (a *Admin) kadm() (*kadm.Client, error) {
	cl, err := a.Client()
	if err != nil {
		return nil, err
	}
	return kadm.NewClient(cl), nil
}
