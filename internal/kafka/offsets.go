package kafka

import (
	"context"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/kplan-dev/kplan/internal/topology"
)

// PartitionOffsets are one partition's offsets as its leader reports them.
type PartitionOffsets struct {
	topology.Key
	// End is the log end offset (high watermark); Start the log start
	// offset (the earliest, remote storage included).
	End, Start int64
	// LocalStart is the earliest offset on the leader's disk (ListOffsets
	// timestamp -4, Kafka 3.4+): past Start only with tiered storage. -1
	// when the broker did not answer it.
	LocalStart int64
}

// ListOffsets reads the end, start and earliest local offsets of every
// partition of topics. A partition whose leader did not answer (offline,
// moving) is left out; the call fails only when no broker answered.
// It needs Describe on the topics.
func (a *Admin) ListOffsets(ctx context.Context, topics []string) ([]PartitionOffsets, error) {
	if len(topics) == 0 {
		return nil, nil
	}
	cl, err := a.Client()
	if err != nil {
		return nil, err
	}
	ctx, cancel := a.bounded(ctx)
	defer cancel()
	adm := kadm.NewClient(cl)
	ends, err := adm.ListEndOffsets(ctx, topics...)
	if err != nil && len(ends) == 0 {
		return nil, a.classify(fmt.Errorf("list end offsets: %w", err))
	}
	starts, err := adm.ListStartOffsets(ctx, topics...)
	if err != nil && len(starts) == 0 {
		return nil, a.classify(fmt.Errorf("list start offsets: %w", err))
	}
	// Earliest local: brokers before 3.4 refuse it; then it is unknown.
	locals, _ := adm.ListLocalLogStartOffsets(ctx, topics...)
	var out []PartitionOffsets
	ends.Each(func(e kadm.ListedOffset) {
		if e.Err != nil || e.Partition < 0 {
			return
		}
		s, ok := starts.Lookup(e.Topic, e.Partition)
		if !ok || s.Err != nil {
			return
		}
		po := PartitionOffsets{Key: topology.Key{Topic: e.Topic, Partition: e.Partition}, End: e.Offset, Start: s.Offset, LocalStart: -1}
		if l, ok := locals.Lookup(e.Topic, e.Partition); ok && l.Err == nil && l.Offset >= 0 {
			po.LocalStart = l.Offset
		}
		out = append(out, po)
	})
	slices.SortFunc(out, func(x, y PartitionOffsets) int { return compareKey(x.Key, y.Key) })
	return out, nil
}

func compareKey(x, y topology.Key) int {
	if x.Topic != y.Topic {
		if x.Topic < y.Topic {
			return -1
		}
		return 1
	}
	return int(x.Partition) - int(y.Partition)
}
