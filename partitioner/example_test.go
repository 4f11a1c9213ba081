package partitioner_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kplan-dev/kplan/partitioner"
)

// table is a LeaderSource over a fixed table: partition p is led by
// leaders[p]. A producer uses ClientLeaders instead.
func table(leaders ...int32) partitioner.LeaderSource {
	return func(_ string, p int32) (int32, int32, bool) { return leaders[p], 0, true }
}

// Broker 1 leads three partitions and broker 2 one: Node alternates the
// brokers, so broker 2's partition takes half the records.
func ExampleNewNode() {
	leaders := []int32{1, 1, 1, 2}
	tp := partitioner.NewNode(table(leaders...)).ForTopic("events")
	for range 6 {
		p := tp.Partition(&kgo.Record{Value: []byte("v")}, len(leaders))
		fmt.Printf("partition %d (broker %d)\n", p, leaders[p])
	}
	// Output:
	// partition 0 (broker 1)
	// partition 3 (broker 2)
	// partition 1 (broker 1)
	// partition 3 (broker 2)
	// partition 2 (broker 1)
	// partition 3 (broker 2)
}

// Broker 2 has 500 records in flight, beyond the slack of 64 against
// broker 1's none: SQF sends to broker 1 until the queues are within the
// slack again. Here nothing is acknowledged, so each record charges broker 1
// as the client's hooks would.
func ExampleNewSQF() {
	leaders := []int32{1, 2, 1, 2}
	in := partitioner.NewInflight()
	in.Add(2, 500, 0)
	tp := partitioner.NewSQF(table(leaders...), in).ForTopic("events")
	perBroker := map[int32]int{}
	for range 1000 {
		p := tp.Partition(&kgo.Record{Value: []byte("v")}, len(leaders))
		perBroker[leaders[p]]++
		in.Add(leaders[p], 1, 1)
	}
	fmt.Println("broker 1:", perBroker[1], "broker 2:", perBroker[2])
	// Output:
	// broker 1: 718 broker 2: 282
}

// Partition 1 has three batches of 16 KiB queued, the others none: KIP794
// sticks to a partition for 16 KiB (16 records of 1 KiB here), then draws
// the next with weights 4, 1, 4, 4 (the most queued plus one, less each
// queue), so partition 1 gets about a thirteenth of the batches.
func ExampleNewKIP794() {
	leaders := []int32{1, 2, 3, 1}
	in := partitioner.NewInflight()
	in.OnProduceRecordPartitioned(&kgo.Record{Topic: "events", Partition: 1, Value: make([]byte, 3*partitioner.DefaultBatchBytes)}, 2)
	tp := partitioner.NewKIP794(table(leaders...), in, partitioner.WithRand(rand.NewPCG(1, 2))).ForTopic("events")
	perPartition := make([]int, len(leaders))
	for range 16 * 1300 {
		perPartition[tp.Partition(&kgo.Record{Value: make([]byte, 1024)}, len(leaders))]++
	}
	fmt.Println("batches per partition:", perPartition[0]/16, perPartition[1]/16, perPartition[2]/16, perPartition[3]/16)
	// Output:
	// batches per partition: 395 95 399 411
}

// A franz-go producer with a partitioner of this package: the partitioner
// reads the client's leaders once Bind is called, and the Inflight tracker
// (needed by SQF and KIP794) sees every record through the client's hooks.
// The cluster is franz-go's in-process kfake, 3 brokers and a topic of 6
// partitions.
func Example_producer() {
	cluster, err := kfake.NewCluster(kfake.NumBrokers(3), kfake.SeedTopics(6, "events"))
	if err != nil {
		panic(err)
	}
	defer cluster.Close()

	leaders := new(partitioner.ClientLeaders)
	in := partitioner.NewInflight()
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(cluster.ListenAddrs()...),
		kgo.DefaultProduceTopic("events"),
		// Any of: NewNode(leaders.Leader), NewSQF(leaders.Leader, in),
		// NewKIP794(leaders.Leader, in, WithAvailabilityTimeout(...)).
		kgo.RecordPartitioner(partitioner.NewKIP794(leaders.Leader, in, partitioner.WithAvailabilityTimeout(time.Second))),
		kgo.WithHooks(in),
	)
	if err != nil {
		panic(err)
	}
	defer cl.Close()
	leaders.Bind(cl)

	ctx := context.Background()
	for range 100 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: make([]byte, 1024)}).FirstErr(); err != nil {
			panic(err)
		}
	}
	records, bytes := int64(0), int64(0)
	for b := range int32(3) {
		r, by := in.Broker(b)
		records, bytes = records+r, bytes+by
	}
	fmt.Println("in flight after every answer:", records, "records,", bytes, "bytes")
	// Output:
	// in flight after every answer: 0 records, 0 bytes
}
