package kafka

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kplan-dev/kplan/internal/clock"
)

// WaitLeaders polls, every 50 ms for at most timeout, until every broker's
// metadata gives every partition of topics a leader among the brokers it
// lists: a producer or consumer may ask any broker first, and a topic just
// created reaches the brokers' metadata one after another. On timeout it
// returns why the last answer did not do.
func WaitLeaders(ctx context.Context, cl *kgo.Client, timeout time.Duration, topics ...string) error {
	return clock.Poll(ctx, nil, 50*time.Millisecond, timeout, func(ctx context.Context) (bool, error) {
		err := leadersEverywhere(ctx, cl, topics)
		return err == nil, err
	})
}

// leadersEverywhere asks the cluster for its brokers, then each broker for
// topics, and says which partition one of them does not see led.
func leadersEverywhere(ctx context.Context, cl *kgo.Client, topics []string) error {
	brokers, err := metadata(ctx, cl.Request, nil)
	if err != nil {
		return err
	}
	if len(brokers.Brokers) == 0 {
		return fmt.Errorf("metadata: no broker")
	}
	for _, b := range brokers.Brokers {
		rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		resp, err := metadata(rctx, cl.Broker(int(b.NodeID)).Request, topics)
		cancel()
		if err != nil {
			return fmt.Errorf("broker %d: %w", b.NodeID, err)
		}
		live := make([]int32, 0, len(resp.Brokers))
		for _, rb := range resp.Brokers {
			live = append(live, rb.NodeID)
		}
		for _, t := range resp.Topics {
			name := ""
			if t.Topic != nil {
				name = *t.Topic
			}
			if err := kerr.ErrorForCode(t.ErrorCode); err != nil {
				return fmt.Errorf("broker %d: topic %s: %w", b.NodeID, name, err)
			}
			if len(t.Partitions) == 0 {
				return fmt.Errorf("broker %d: topic %s has no partitions", b.NodeID, name)
			}
			for _, p := range t.Partitions {
				if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
					return fmt.Errorf("broker %d: %s/%d: %w", b.NodeID, name, p.Partition, err)
				}
				if p.Leader < 0 || !slices.Contains(live, p.Leader) {
					return fmt.Errorf("broker %d: %s/%d has no live leader", b.NodeID, name, p.Partition)
				}
			}
		}
		if len(resp.Topics) != len(topics) {
			return fmt.Errorf("broker %d: %d of %d topics in the answer", b.NodeID, len(resp.Topics), len(topics))
		}
	}
	return nil
}

// metadata sends MetadataRequest(topics) through request.
func metadata(ctx context.Context, request func(context.Context, kmsg.Request) (kmsg.Response, error), topics []string) (*kmsg.MetadataResponse, error) {
	kresp, err := request(ctx, MetadataRequest(topics))
	if err != nil {
		return nil, fmt.Errorf("metadata: %w", err)
	}
	resp, ok := kresp.(*kmsg.MetadataResponse)
	if !ok {
		return nil, fmt.Errorf("metadata: unexpected answer %T", kresp)
	}
	return resp, nil
}

// MetadataRequest asks for the brokers and topics (none: the brokers only),
// for callers that ask a broker directly, past the client's cache.
func MetadataRequest(topics []string) *kmsg.MetadataRequest {
	req := kmsg.NewPtrMetadataRequest()
	req.Topics = []kmsg.MetadataRequestTopic{}
	for _, t := range topics {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(t)
		req.Topics = append(req.Topics, rt)
	}
	return req
}
