// Package partitioner holds broker-aware record partitioners for franz-go
// producers (github.com/twmb/franz-go/pkg/kgo): the Node and SQF
// partitioners of the Burato thesis, which balance records over brokers
// rather than partitions, and KIP794, the Java client's default partitioner
// since Kafka 3.3 (KIP-794, uniform sticky with adaptive partitioning and an
// availability timeout) rebuilt on franz-go.
//
//   - Node: round robin over the brokers leading a partition of the topic,
//     then round robin over that broker's partitions. Every broker gets the
//     same share, however many partitions it leads.
//   - SQF (shortest queue first): the leader broker with the least in flight
//     (buffered plus unacknowledged), then round robin over its partitions.
//     A slow or dead broker's queue grows, so it gets fewer records.
//   - KIP794: batch.size bytes to one partition, then the next partition is
//     drawn with a weight that falls as the partition's queue grows, and
//     partitions whose leader made no progress for the availability timeout
//     are left out, as Kafka's Java producer does.
//
// All three need the leader of every partition, read through a LeaderSource:
// usually the producing client's own view, bound after the client exists with
// ClientLeaders (kgo.RecordPartitioner is an option of kgo.NewClient, so the
// partitioner is built first). SQF and KIP794 also read an Inflight tracker,
// which must be registered as a hook on the client (kgo.WithHooks).
//
// Usage with franz-go:
//
//	leaders := new(partitioner.ClientLeaders)
//	in := partitioner.NewInflight()
//	cl, err := kgo.NewClient(
//		kgo.SeedBrokers("localhost:9092"),
//		kgo.RecordPartitioner(partitioner.NewSQF(leaders.Leader, in)),
//		kgo.WithHooks(in),
//	)
//	if err != nil {
//		return err
//	}
//	defer cl.Close()
//	leaders.Bind(cl) // from here on the partitioner follows the client's leaders
//
// The partitioners return partition numbers (RequiresConsistency is true) and
// skip partitions without a leader while any partition has one. Node and SQF
// follow a leader change on the first record after the client learns of it,
// KIP794 on its next draw, as the Java producer does. They are safe for
// franz-go's use: a client calls one topic's partitioner for one record at a
// time, and the state shared between topics is synchronized.
//
// The API is versioned with the kplan binary (github.com/kplan-dev/kplan):
// the constructors, their options, LeaderSource, ClientLeaders, Inflight and
// Tracker.
package partitioner
