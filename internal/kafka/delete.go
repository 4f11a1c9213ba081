package kafka

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kplan-dev/kplan/internal/clock"
)

// deletePoll is how often DeleteTopicsAndWait asks whether the deleted
// topics are gone.
const deletePoll = 100 * time.Millisecond

// DeleteTopicsAndWait deletes topics and waits until the cluster agrees they
// are gone: Kafka deletes topics asynchronously, and a topic the controller
// has accepted to delete stays listed by brokers for a while. A topic is
// gone when every broker's metadata answer leaves it out (or says it is
// unknown). A topic that does not exist counts as deleted.
//
// It returns the topics deleted and gone, sorted, and an error naming each
// topic Kafka refused to delete and the topics still listed when ctx ended
// (bound it with a timeout, and use one that Ctrl-C does not cancel for a
// cleanup: context.WithoutCancel).
func DeleteTopicsAndWait(ctx context.Context, cl *kgo.Client, topics ...string) ([]string, error) {
	topics = slices.Compact(slices.Sorted(slices.Values(topics)))
	if len(topics) == 0 {
		return nil, nil
	}
	resps, err := kadm.NewClient(cl).DeleteTopics(ctx, topics...)
	if err != nil {
		return nil, fmt.Errorf("delete topics %s: %w", strings.Join(topics, ", "), err)
	}
	var errs []error
	var accepted []string
	for _, t := range topics {
		r, ok := resps[t]
		switch {
		case !ok:
			errs = append(errs, fmt.Errorf("delete topic %s: no answer from the cluster", t))
		case r.Err != nil && !errors.Is(r.Err, kerr.UnknownTopicOrPartition):
			errs = append(errs, fmt.Errorf("delete topic %s: %w", t, r.Err))
		default:
			accepted = append(accepted, t)
		}
	}
	left := accepted
	for len(left) > 0 {
		listed, err := listedAnywhere(ctx, cl, left)
		if err == nil {
			left = listed
			if len(left) == 0 {
				break
			}
		}
		if serr := clock.Sleep(ctx, deletePoll); serr != nil {
			why := serr
			if err != nil {
				why = fmt.Errorf("%w (last metadata answer: %w)", serr, err)
			}
			errs = append(errs, fmt.Errorf("topics %s deleted but still listed by the cluster: %w", strings.Join(left, ", "), why))
			break
		}
	}
	var gone []string
	for _, t := range accepted {
		if !slices.Contains(left, t) {
			gone = append(gone, t)
		}
	}
	return gone, errors.Join(errs...)
}

// listedAnywhere returns those of topics that at least one broker still
// lists. Each broker is asked on its own: their metadata caches catch up
// with the controller one at a time. A broker that does not answer (being
// killed or restarted) is passed over; at least one must answer.
func listedAnywhere(ctx context.Context, cl *kgo.Client, topics []string) ([]string, error) {
	brokers, err := kadm.NewClient(cl).BrokerMetadata(ctx)
	if err != nil {
		return nil, fmt.Errorf("metadata: %w", err)
	}
	listed := map[string]bool{}
	var lastErr error
	answered := 0
	for _, b := range brokers.Brokers {
		// A request of its own per broker: franz-go sets its version in
		// the broker's goroutine, which may outlive a cancelled ctx.
		req := kmsg.NewPtrMetadataRequest()
		req.AllowAutoTopicCreation = false // never bring back what was deleted
		for _, t := range topics {
			rt := kmsg.NewMetadataRequestTopic()
			rt.Topic = kmsg.StringPtr(t)
			req.Topics = append(req.Topics, rt)
		}
		kresp, err := cl.Broker(int(b.NodeID)).Request(ctx, req)
		if err != nil {
			lastErr = fmt.Errorf("metadata from broker %d: %w", b.NodeID, err)
			continue
		}
		resp, ok := kresp.(*kmsg.MetadataResponse)
		if !ok {
			return nil, fmt.Errorf("metadata from broker %d: unexpected answer %T", b.NodeID, kresp)
		}
		answered++
		for _, t := range resp.Topics {
			if t.Topic != nil && t.ErrorCode != kerr.UnknownTopicOrPartition.Code {
				listed[*t.Topic] = true
			}
		}
	}
	if answered == 0 {
		if lastErr == nil {
			lastErr = errors.New("metadata: no broker listed")
		}
		return nil, lastErr
	}
	var out []string
	for _, t := range topics {
		if listed[t] {
			out = append(out, t)
		}
	}
	return out, nil
}
