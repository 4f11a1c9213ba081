package kafka

import (
	"context"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/kplan-dev/kplan/internal/topology"
)

// ReplicaDir is one replica's size in one log dir, as DescribeLogDirs
// reports it.
type ReplicaDir struct {
	topology.Key
	Broker int32
	Dir    string
	// Bytes is the size of its log segments on the broker's disk.
	Bytes int64
	// Future is a copy in progress into Dir that replaces the replica in
	// another dir of the broker once caught up (LogDirReplicas only).
	Future bool
}

// ReplicaDirs describes the log dirs of every broker and returns each
// replica of the topics the filter accepts (nil: all but Kafka's internal
// topics), sorted by partition, broker and dir; future replicas (a move
// between dirs in progress) are left out. A broker that does not answer
// is left out too; the call fails only when none answered. It needs
// Describe on the cluster.
func (a *Admin) ReplicaDirs(ctx context.Context, topicFilter func(string) bool) ([]ReplicaDir, error) {
	cl, err := a.Client()
	if err != nil {
		return nil, err
	}
	ctx, cancel := a.bounded(ctx)
	defer cancel()
	all, err := kadm.NewClient(cl).DescribeAllLogDirs(ctx, nil)
	if err != nil && len(all) == 0 {
		return nil, a.classify(fmt.Errorf("describe log dirs: %w", err))
	}
	var out []ReplicaDir
	// A dead broker yields a shard error; the survivors' answers still count.
	for _, dirs := range all {
		for _, d := range dirs {
			if d.Err != nil {
				continue
			}
			d.Topics.Each(func(p kadm.DescribedLogDirPartition) {
				if p.IsFuture || !accept(topicFilter, p.Topic) {
					return
				}
				out = append(out, ReplicaDir{Key: topology.Key{Topic: p.Topic, Partition: p.Partition}, Broker: p.Broker, Dir: p.Dir, Bytes: p.Size})
			})
		}
	}
	slices.SortFunc(out, func(x, y ReplicaDir) int {
		if c := compareKey(x.Key, y.Key); c != 0 {
			return c
		}
		if x.Broker != y.Broker {
			return int(x.Broker) - int(y.Broker)
		}
		if x.Dir < y.Dir {
			return -1
		}
		if x.Dir > y.Dir {
			return 1
		}
		return 0
	})
	return out, nil
}

// LogDirSizes returns the on-disk size of every partition of the topics the
// filter accepts (nil: all but Kafka's internal topics), from
// DescribeLogDirs on every broker: the largest replica's size, which is
// what a reassignment copies at most. Partitions no live broker reports are
// absent from the map.
func (a *Admin) LogDirSizes(ctx context.Context, topicFilter func(string) bool) (map[topology.Key]int64, error) {
	reps, err := a.ReplicaDirs(ctx, topicFilter)
	if err != nil {
		return nil, err
	}
	return LargestReplicas(reps), nil
}

// LargestReplicas is each partition's largest replica in reps.
func LargestReplicas(reps []ReplicaDir) map[topology.Key]int64 {
	sizes := make(map[topology.Key]int64)
	for _, r := range reps {
		if cur, ok := sizes[r.Key]; !ok || r.Bytes > cur {
			sizes[r.Key] = r.Bytes
		}
	}
	return sizes
}

// ReplicaSizes returns, per partition of the topics the filter accepts,
// the bytes on each broker holding a replica (ReplicaDirs summed over a
// broker's dirs): what `kplan reassign apply` follows to report the bytes
// its new replicas copied.
func (a *Admin) ReplicaSizes(ctx context.Context, topicFilter func(string) bool) (map[topology.Key]map[int32]int64, error) {
	rds, err := a.ReplicaDirs(ctx, topicFilter)
	if err != nil {
		return nil, err
	}
	out := map[topology.Key]map[int32]int64{}
	for _, r := range rds {
		m := out[r.Key]
		if m == nil {
			m = map[int32]int64{}
			out[r.Key] = m
		}
		m[r.Broker] += r.Bytes
	}
	return out, nil
}
