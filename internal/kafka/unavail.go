package kafka

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kplan-dev/kplan/internal/topology"
)

// This file is the admin side of `kplan measure unavailability`: the
// scratch topics' leadership, the active controller, their deletion (the
// probe that writes to them is loadgen.Prober).

// PartitionLeadership is a partition's leader and replicas as a metadata
// answer reports them.
type PartitionLeadership struct {
	Leader   int32
	Replicas []int32
	ISR      []int32
}

// ScratchAdmin is the admin side of a measurement on scratch topics: their
// leadership, the active controller, their deletion, the cluster's state.
type ScratchAdmin struct {
	cl *kgo.Client
}

// NewScratchAdmin builds the admin client.
func NewScratchAdmin(conn ConnOptions, version string) (*ScratchAdmin, error) {
	cl, err := NewClient(conn, version)
	if err != nil {
		return nil, err
	}
	return &ScratchAdmin{cl: cl}, nil
}

// Close releases the client.
func (a *ScratchAdmin) Close() { a.cl.Close() }

// Snapshot reads every topic's layout (Snapshot).
func (a *ScratchAdmin) Snapshot(ctx context.Context) (*topology.Cluster, error) {
	return Snapshot(ctx, a.cl, nil)
}

// TopicLeadership asks a broker (past the client's cache) for a topic's
// partitions; ok is false when the topic does not exist.
func (a *ScratchAdmin) TopicLeadership(ctx context.Context, topic string) (parts []PartitionLeadership, ok bool, err error) {
	cl := a.cl
	resp, err := MetadataRequest([]string{topic}).RequestWith(ctx, cl)
	if err != nil {
		return nil, false, fmt.Errorf("metadata %s: %w", topic, err)
	}
	if len(resp.Topics) != 1 {
		return nil, false, fmt.Errorf("metadata %s: %d topics in the answer", topic, len(resp.Topics))
	}
	t := resp.Topics[0]
	if terr := kerr.ErrorForCode(t.ErrorCode); terr != nil {
		if errors.Is(terr, kerr.UnknownTopicOrPartition) {
			return nil, false, nil
		}
		return nil, false, fmt.Errorf("metadata %s: %w", topic, terr)
	}
	parts = make([]PartitionLeadership, len(t.Partitions))
	for _, p := range t.Partitions {
		if p.Partition < 0 || int(p.Partition) >= len(parts) {
			return nil, false, fmt.Errorf("metadata %s: partition %d out of range", topic, p.Partition)
		}
		leader := p.Leader
		if kerr.ErrorForCode(p.ErrorCode) != nil {
			leader = -1
		}
		parts[p.Partition] = PartitionLeadership{Leader: leader, Replicas: p.Replicas, ISR: p.ISR}
	}
	return parts, true, nil
}

// LedInSync reports whether every partition is led by leader with all its
// replicas in sync; when not, it says about the first one that is not.
func LedInSync(parts []PartitionLeadership, leader int32) (bool, string) {
	for i, p := range parts {
		if p.Leader != leader {
			return false, fmt.Sprintf("partition %d is led by %d", i, p.Leader)
		}
		for _, r := range p.Replicas {
			if !slices.Contains(p.ISR, r) {
				return false, fmt.Sprintf("partition %d has in-sync replicas %v of %v", i, p.ISR, p.Replicas)
			}
		}
	}
	return true, ""
}

// ActiveController asks the KRaft quorum (DescribeQuorum on the metadata
// log) which node leads it: killing that node also elects a new
// controller, which a broker-failure measurement keeps apart. The
// metadata answer's controller field is not it on KRaft.
func (a *ScratchAdmin) ActiveController(ctx context.Context) (int32, error) {
	req := kmsg.NewPtrDescribeQuorumRequest()
	rt := kmsg.NewDescribeQuorumRequestTopic()
	rt.Topic = "__cluster_metadata"
	rp := kmsg.NewDescribeQuorumRequestTopicPartition()
	rp.Partition = 0
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, a.cl)
	if err != nil {
		return -1, fmt.Errorf("describe quorum: %w", err)
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return -1, fmt.Errorf("describe quorum: %w", err)
	}
	if len(resp.Topics) == 0 || len(resp.Topics[0].Partitions) == 0 {
		return -1, errors.New("describe quorum: no partition in the answer")
	}
	p := resp.Topics[0].Partitions[0]
	if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
		return -1, fmt.Errorf("describe quorum: %w", err)
	}
	return p.LeaderID, nil
}

// DeleteTopic deletes a topic and waits, for at most 30 s, until the
// cluster no longer lists it (DeleteTopicsAndWait); one that does not exist
// is not an error.
func (a *ScratchAdmin) DeleteTopic(ctx context.Context, topic string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	_, err := DeleteTopicsAndWait(ctx, a.cl, topic)
	return err
}
