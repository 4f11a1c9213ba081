package kafka

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kplan-dev/kplan/internal/errkind"
	"github.com/kplan-dev/kplan/internal/topology"
)

// DirMove asks a broker to hold its replica of a partition in a log dir
// (AlterReplicaLogDirs).
type DirMove struct {
	topology.Key
	Broker int32
	Dir    string
}

// ErrReplicaNotYet is a broker's REPLICA_NOT_AVAILABLE answer to a dir
// move: it holds no replica of the partition yet. The broker remembers the
// dir and creates the replica in it; ask again once it exists, as Kafka's
// kafka-reassign-partitions does.
var ErrReplicaNotYet = errors.New("the broker holds no replica of the partition yet")

// AlterReplicaDirs sends each broker its moves (one AlterReplicaLogDirs
// request per broker) and returns, per move, the broker's error: nil when
// accepted, ErrReplicaNotYet (wrapping Kafka's) when the replica does not
// exist there yet, a usage error when the broker has no such dir
// (LOG_DIR_NOT_FOUND), Kafka's error otherwise (e.g. KAFKA_STORAGE_ERROR).
// The error is for a broker that did not answer. It needs Alter on the
// cluster.
func (a *Admin) AlterReplicaDirs(ctx context.Context, moves []DirMove) ([]error, error) {
	cl, err := a.Client()
	if err != nil {
		return nil, err
	}
	ctx, cancel := a.bounded(ctx)
	defer cancel()
	adm := kadm.NewClient(cl)
	byBroker := map[int32][]int{}
	for i, m := range moves {
		byBroker[m.Broker] = append(byBroker[m.Broker], i)
	}
	out := make([]error, len(moves))
	for _, b := range slices.Sorted(maps.Keys(byBroker)) {
		var req kadm.AlterReplicaLogDirsReq
		for _, i := range byBroker[b] {
			m := moves[i]
			req.Add(m.Dir, kadm.TopicsSet{m.Topic: {m.Partition: struct{}{}}})
		}
		resp, err := adm.AlterBrokerReplicaLogDirs(ctx, b, req)
		if err != nil {
			return nil, a.classify(fmt.Errorf("alter replica log dirs on broker %d: %w", b, err))
		}
		for _, i := range byBroker[b] {
			m := moves[i]
			r, ok := resp[m.Topic][m.Partition]
			switch {
			case !ok:
				out[i] = fmt.Errorf("broker %d did not answer for %s", b, m.Key)
			case r.Err == nil:
			case errors.Is(r.Err, kerr.ReplicaNotAvailable), errors.Is(r.Err, kerr.NotLeaderForPartition):
				out[i] = fmt.Errorf("%w (%w)", ErrReplicaNotYet, r.Err)
			case errors.Is(r.Err, kerr.LogDirNotFound):
				out[i] = errkind.Wrap(errkind.Usage, "", r.Err) // a usage error: the plan names a dir the broker lacks
			default:
				out[i] = r.Err
			}
		}
	}
	return out, nil
}

// LogDirReplicas describes the log dirs of every broker: each broker's
// dirs (empty ones included; offline ones left out) and every replica of
// the topics the filter accepts (nil: all but Kafka's internal topics),
// future replicas (a move between dirs in progress) included, sorted by
// partition, broker, dir and future last. A broker that does not answer
// is left out; the call fails only when none answered.
func (a *Admin) LogDirReplicas(ctx context.Context, topicFilter func(string) bool) (map[int32][]string, []ReplicaDir, error) {
	cl, err := a.Client()
	if err != nil {
		return nil, nil, err
	}
	ctx, cancel := a.bounded(ctx)
	defer cancel()
	all, err := kadm.NewClient(cl).DescribeAllLogDirs(ctx, nil)
	if err != nil && len(all) == 0 {
		return nil, nil, a.classify(fmt.Errorf("describe log dirs: %w", err))
	}
	dirs := map[int32][]string{}
	var out []ReplicaDir
	for broker, ds := range all {
		for _, d := range ds {
			if d.Err != nil {
				continue
			}
			dirs[broker] = append(dirs[broker], d.Dir)
			d.Topics.Each(func(p kadm.DescribedLogDirPartition) {
				if !accept(topicFilter, p.Topic) {
					return
				}
				out = append(out, ReplicaDir{Key: topology.Key{Topic: p.Topic, Partition: p.Partition}, Broker: p.Broker, Dir: p.Dir, Bytes: p.Size, Future: p.IsFuture})
			})
		}
		slices.Sort(dirs[broker])
	}
	slices.SortFunc(out, func(x, y ReplicaDir) int {
		if c := compareKey(x.Key, y.Key); c != 0 {
			return c
		}
		if x.Broker != y.Broker {
			return int(x.Broker) - int(y.Broker)
		}
		if x.Future != y.Future {
			if x.Future {
				return 1
			}
			return -1
		}
		if x.Dir < y.Dir {
			return -1
		}
		if x.Dir > y.Dir {
			return 1
		}
		return 0
	})
	return dirs, out, nil
}
