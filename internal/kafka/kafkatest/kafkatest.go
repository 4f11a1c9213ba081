// Package kafkatest holds test fixtures for code that reaches Kafka through
// internal/kafka: an in-process cluster and a writer that fills partitions.
// Only tests import it.
package kafkatest

import (
	"bytes"
	"context"
	"fmt"

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
