package kafka

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/kplan-dev/kplan/internal/topology"
)

// The dynamic configs of a replication throttle, as Kafka's
// kafka-reassign-partitions sets them.
const (
	leaderRate       = "leader.replication.throttled.rate"
	followerRate     = "follower.replication.throttled.rate"
	leaderReplicas   = "leader.replication.throttled.replicas"
	followerReplicas = "follower.replication.throttled.replicas"
)

// SetThrottle applies t: the rate on its brokers, the replica lists on its
// topics.
func (a *Admin) SetThrottle(ctx context.Context, t topology.Throttle) error {
	adm, err := a.kadm()
	if err != nil {
		return err
	}
	rate := strconv.FormatInt(t.Rate, 10)
	res, err := bounded(ctx, a, func(ctx context.Context) (kadm.AlterConfigsResponses, error) {
		return adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{
			{Op: kadm.SetConfig, Name: leaderRate, Value: &rate},
			{Op: kadm.SetConfig, Name: followerRate, Value: &rate},
		}, t.Brokers...)
	})
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
		res, err := bounded(ctx, a, func(ctx context.Context) (kadm.AlterConfigsResponses, error) {
			return adm.AlterTopicConfigs(ctx, cfg, topic)
		})
		if err := alterErr("topic "+topic+" throttle", res, err); err != nil {
			return a.classify(err)
		}
	}
	return nil
}

// SetBrokerRates sets the leader and follower replication throttled rates
// of each broker to its own rate in bytes/s (the adaptive throttle of
// kplan reassign apply), one broker's configs at a time.
func (a *Admin) SetBrokerRates(ctx context.Context, rates map[int32]int64) error {
	adm, err := a.kadm()
	if err != nil {
		return err
	}
	for _, b := range slices.Sorted(maps.Keys(rates)) {
		rate := strconv.FormatInt(rates[b], 10)
		res, err := bounded(ctx, a, func(ctx context.Context) (kadm.AlterConfigsResponses, error) {
			return adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{
				{Op: kadm.SetConfig, Name: leaderRate, Value: &rate},
				{Op: kadm.SetConfig, Name: followerRate, Value: &rate},
			}, b)
		})
		if err := alterErr(fmt.Sprintf("broker %d throttle", b), res, err); err != nil {
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
		res, err := bounded(ctx, a, func(ctx context.Context) (kadm.AlterConfigsResponses, error) {
			return adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{
				{Op: kadm.DeleteConfig, Name: leaderRate}, {Op: kadm.DeleteConfig, Name: followerRate},
			}, brokers...)
		})
		if err := alterErr("broker throttle", res, err); err != nil {
			return a.classify(err)
		}
	}
	for _, topic := range topics {
		res, err := bounded(ctx, a, func(ctx context.Context) (kadm.AlterConfigsResponses, error) {
			return adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{
				{Op: kadm.DeleteConfig, Name: leaderReplicas}, {Op: kadm.DeleteConfig, Name: followerReplicas},
			}, topic)
		})
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
// replicas (AlterPartitionReassignments); moves carry the target replica
// lists. Partition errors are joined.
func (a *Admin) Reassign(ctx context.Context, moves []topology.Partition) error {
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
	ctx, cancel := a.bounded(ctx)
	defer cancel()
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

// ElectPreferred runs a preferred leader election for keys within the
// connection timeout (see ElectPreferredPartitions): the map holds the
// partitions the controller refused.
func (a *Admin) ElectPreferred(ctx context.Context, keys []topology.Key) (map[topology.Key]error, error) {
	cl, err := a.Client()
	if err != nil {
		return nil, err
	}
	ctx, cancel := a.bounded(ctx)
	defer cancel()
	refused, err := ElectPreferredPartitions(ctx, cl, keys)
	if err != nil {
		return nil, a.classify(err)
	}
	return refused, nil
}

// Ongoing lists the reassignments in progress among keys.
func (a *Admin) Ongoing(ctx context.Context, keys []topology.Key) (map[topology.Key]topology.Ongoing, error) {
	adm, err := a.kadm()
	if err != nil {
		return nil, err
	}
	ctx, cancel := a.bounded(ctx)
	defer cancel()
	set := kadm.TopicsSet{}
	for _, k := range keys {
		set.Add(k.Topic, k.Partition)
	}
	res, err := adm.ListPartitionReassignments(ctx, set)
	if err != nil {
		return nil, a.classify(fmt.Errorf("list reassignments: %w", err))
	}
	out := map[topology.Key]topology.Ongoing{}
	for _, r := range res.Sorted() {
		out[topology.Key{Topic: r.Topic, Partition: r.Partition}] = topology.Ongoing{Replicas: r.Replicas, Adding: r.AddingReplicas, Removing: r.RemovingReplicas}
	}
	return out, nil
}

// AllOngoing lists every reassignment in progress on the cluster (a
// ListPartitionReassignments request without topics, which Kafka answers
// with all of them).
func (a *Admin) AllOngoing(ctx context.Context) (map[topology.Key]topology.Ongoing, error) {
	cl, err := a.Client()
	if err != nil {
		return nil, err
	}
	ctx, cancel := a.bounded(ctx)
	defer cancel()
	req := kmsgListReassignments()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, a.classify(fmt.Errorf("list reassignments: %w", err))
	}
	if err := kerrErr(resp.ErrorCode); err != nil {
		return nil, a.classify(fmt.Errorf("list reassignments: %w", err))
	}
	out := map[topology.Key]topology.Ongoing{}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			out[topology.Key{Topic: t.Topic, Partition: p.Partition}] = topology.Ongoing{Replicas: p.Replicas, Adding: p.AddingReplicas, Removing: p.RemovingReplicas}
		}
	}
	return out, nil
}

// bounded runs one request within the connection timeout.
func bounded[T any](ctx context.Context, a *Admin, req func(context.Context) (T, error)) (T, error) {
	ctx, cancel := a.bounded(ctx)
	defer cancel()
	return req(ctx)
}

func (a *Admin) kadm() (*kadm.Client, error) {
	cl, err := a.Client()
	if err != nil {
		return nil, err
	}
	return kadm.NewClient(cl), nil
}
