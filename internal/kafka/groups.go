package kafka

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/kplan-dev/kplan/internal/topology"
)

// GroupOffset is a consumer group's committed offset of one partition.
type GroupOffset struct {
	Group string
	topology.Key
	Offset int64
}

// CommittedOffsets lists the consumer groups and returns their committed
// offsets of the topics the filter accepts (nil: all but Kafka's internal
// topics), sorted by group and partition. A group whose offsets cannot be
// fetched (a coordinator moving, no Describe on the group) is left out and
// named in skipped. It needs Describe on the cluster's groups it lists.
func (a *Admin) CommittedOffsets(ctx context.Context, topicFilter func(string) bool) (offsets []GroupOffset, skipped []string, err error) {
	cl, err := a.Client()
	if err != nil {
		return nil, nil, err
	}
	ctx, cancel := a.bounded(ctx)
	defer cancel()
	adm := kadm.NewClient(cl)
	listed, err := adm.ListGroups(ctx)
	if err != nil && len(listed) == 0 {
		return nil, nil, a.classify(fmt.Errorf("list groups: %w", err))
	}
	var names []string
	for _, g := range listed.Sorted() {
		// Connect workers and share groups commit no consumer offsets.
		if g.ProtocolType == "" || g.ProtocolType == "consumer" {
			names = append(names, g.Group)
		}
	}
	if len(names) == 0 {
		return nil, nil, nil
	}
	fetched := adm.FetchManyOffsets(ctx, names...)
	for _, g := range names {
		r, ok := fetched[g]
		if !ok || r.Err != nil {
			skipped = append(skipped, g)
			continue
		}
		r.Fetched.Each(func(o kadm.OffsetResponse) {
			if o.Err != nil || o.At < 0 || !accept(topicFilter, o.Topic) {
				return
			}
			offsets = append(offsets, GroupOffset{Group: g, Key: topology.Key{Topic: o.Topic, Partition: o.Partition}, Offset: o.At})
		})
	}
	slices.SortFunc(offsets, func(x, y GroupOffset) int {
		if c := strings.Compare(x.Group, y.Group); c != 0 {
			return c
		}
		return compareKey(x.Key, y.Key)
	})
	return offsets, skipped, nil
}
