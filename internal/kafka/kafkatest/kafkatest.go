// Package kafkatest holds test fixtures for code that reaches Kafka through
// internal/kafka: an in-process cluster and a writer that fills partitions.
// Only tests import it.
package kafkatest

import (
	"bytes"
	"context"
	"fmt"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kplan-dev/kplan/internal/kafka"
)

// FakeCluster starts an in-process cluster of brokers brokers (franz-go's
// kfake) and returns its addresses and its stop function: for tests of
// verbs outside the Kafka-facing packages, which may not import franz-go.
// kfake cannot judge rates, replication or elections; it checks plumbing
// only.
func FakeCluster(brokers int) (addrs []string, stop func(), err error) {
	c, err := kfake.NewCluster(kfake.NumBrokers(brokers))
	if err != nil {
		return nil, nil, err
	}
	return c.ListenAddrs(), c.Close, nil
}

// FillPartitions writes records records of size bytes to each of the
// partitions of topic, acknowledged by every in-sync replica: data for a
// reassignment or a throttle to move.
func FillPartitions(ctx context.Context, opts kafka.ConnOptions, topic string, partitions []int32, records, size int) error {
	cl, err := kafka.NewClient(opts, "fill", kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.ProducerBatchMaxBytes(int32(max(size+1024, 1<<20))))
	if err != nil {
		return err
	}
	defer cl.Close()
	value := bytes.Repeat([]byte("x"), size)
	for range records {
		for _, p := range partitions {
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: p, Value: value}).FirstErr(); err != nil {
				return fmt.Errorf("writing to %s/%d: %w", topic, p, err)
			}
		}
	}
	return nil
}

// FillBytes writes bytesPerPartition bytes, in uncompressed records of
// recordSize bytes, into each of partitions of topic, with many records in
// flight (FillPartitions writes one at a time): a bulk filler for data
// that only has to be there, hundreds of megabytes.
func FillBytes(ctx context.Context, opts kafka.ConnOptions, topic string, partitions []int32, bytesPerPartition int64, recordSize int) error {
	cl, err := kafka.NewClient(opts, "fill", kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.ProducerBatchMaxBytes(int32(max(recordSize+1024, 1_000_000))),
		kgo.MaxBufferedBytes(64<<20))
	if err != nil {
		return err
	}
	defer cl.Close()
	value := bytes.Repeat([]byte("x"), recordSize)
	var first atomic.Pointer[error]
	for range bytesPerPartition / int64(recordSize) {
		for _, p := range partitions {
			if first.Load() != nil {
				break
			}
			cl.Produce(ctx, &kgo.Record{Topic: topic, Partition: p, Value: value}, func(r *kgo.Record, err error) {
				if err != nil {
					err = fmt.Errorf("writing to %s/%d: %w", topic, r.Partition, err)
					first.CompareAndSwap(nil, &err)
				}
			})
		}
	}
	if err := cl.Flush(ctx); err != nil {
		return err
	}
	if e := first.Load(); e != nil {
		return *e
	}
	return nil
}

// FakeClusterWithTopics is FakeCluster with topics of partitions
// partitions each already created.
func FakeClusterWithTopics(brokers, partitions int, topics ...string) (addrs []string, stop func(), err error) {
	c, err := kfake.NewCluster(kfake.NumBrokers(brokers), kfake.SeedTopics(int32(partitions), topics...))
	if err != nil {
		return nil, nil, err
	}
	return c.ListenAddrs(), c.Close, nil
}

// CommitOffset commits offset as group's position in topic's partition:
// a consumer group that has read so far, without running a consumer.
func CommitOffset(ctx context.Context, opts kafka.ConnOptions, group, topic string, partition int32, offset int64) error {
	cl, err := kafka.NewClient(opts, "commit")
	if err != nil {
		return err
	}
	defer cl.Close()
	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: topic, Partition: partition, At: offset, LeaderEpoch: -1})
	res, err := kadm.NewClient(cl).CommitOffsets(ctx, group, offs)
	if err != nil {
		return fmt.Errorf("committing %s's offset of %s/%d: %w", group, topic, partition, err)
	}
	return res.Error()
}
