package partitioner

import (
	"context"
	"fmt"
	"math/rand"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Decision cost per record at 1,000 partitions led by 100 brokers (10 each).
// Target (issue 6): node and sqf at most 50 ns/op and 0 allocs/op; roundrobin
// (franz-go's) is the baseline in the same run. The leader source is a slice
// lookup, so this measures the partitioner, not kgo.Client.PartitionLeader.
const (
	benchPartitions = 1000
	benchBrokers    = 100
)

func benchLeaders() *fakeLeaders { return benchLeadersOn(benchBrokers) }

func benchLeadersOn(brokers int) *fakeLeaders {
	f := newFake(make([]int32, benchPartitions)...)
	for p := range f.leader {
		f.leader[p] = int32(1 + p%brokers)
	}
	return f
}

func benchPick(b *testing.B, tp kgo.TopicPartitioner, after func(p int)) {
	benchPickRecord(b, tp, &kgo.Record{Value: []byte("v")}, after)
}

func benchPickRecord(b *testing.B, tp kgo.TopicPartitioner, r *kgo.Record, after func(p int)) {
	tp.Partition(r, benchPartitions) // build the layout outside the timer
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		p := tp.Partition(r, benchPartitions)
		if after != nil {
			after(p)
		}
	}
}

func BenchmarkDecision(b *testing.B) {
	b.Run("roundrobin", func(b *testing.B) {
		benchPick(b, kgo.RoundRobinPartitioner().ForTopic("t"), nil)
	})
	b.Run("node", func(b *testing.B) {
		f := benchLeaders()
		benchPick(b, NewNode(f.src).ForTopic("t"), nil)
	})
	b.Run("sqf-idle", func(b *testing.B) {
		f := benchLeaders()
		benchPick(b, NewSQF(f.src, NewInflight()).ForTopic("t"), nil)
	})
	// Every broker has work in flight and each pick charges the chosen
	// broker, so the loads keep changing and no scan stops early. The timed
	// loop includes that charge's atomic add; the rest of the hooks' work
	// (finding the record's queue) is BenchmarkInflightHooks.
	for _, nb := range []int{exactBrokers, benchBrokers} {
		b.Run(fmt.Sprintf("sqf-loaded-%dbrokers", nb), func(b *testing.B) {
			f := benchLeadersOn(nb)
			in := NewInflight()
			rng := rand.New(rand.NewSource(1))
			for id := int32(1); id <= int32(nb); id++ {
				in.Add(id, 1+rng.Int63n(1000), 0)
			}
			slots := make([]*slot, benchPartitions) // each partition's leader's gauges
			for p := range slots {
				slots[p] = in.slot(f.leader[p])
			}
			benchPick(b, NewSQF(f.src, in).ForTopic("t"), func(p int) { slots[p].v[unitRecords].Add(1) })
		})
	}
}

// BenchmarkKIP794 is KIP794's cost per record at 1,000 partitions on 100
// brokers, with records of 100 bytes and 1 KiB: a new partition is drawn
// every 164 and 16 records (16 KiB batches), each draw reading every
// partition's leader and queue. The tracker holds a queue for every
// partition; with the availability timeout each draw also checks the leader
// brokers' progress.
func BenchmarkKIP794(b *testing.B) {
	for _, size := range []int{100, 1024} {
		for _, timeout := range []time.Duration{0, time.Second} {
			b.Run(fmt.Sprintf("record-%dB/timeout-%v", size, timeout), func(b *testing.B) {
				f := benchLeaders()
				in := NewInflight()
				rng := rand.New(rand.NewSource(1))
				for p := range int32(benchPartitions) {
					r := &kgo.Record{Topic: "t", Partition: p, Value: make([]byte, rng.Intn(3*DefaultBatchBytes))}
					in.OnProduceRecordPartitioned(r, f.leader[p])
				}
				tp := NewKIP794(f.src, in, WithAvailabilityTimeout(timeout), WithRand(rng)).ForTopic("t")
				benchPickRecord(b, tp, &kgo.Record{Value: make([]byte, size)}, nil)
			})
		}
	}
}

// BenchmarkInflightHooks is the cost the sqf hooks add per record: one
// Partitioned and one Unbuffered call, with inflight records outstanding as
// in a producer whose buffer is full (franz-go's default buffer is 50,000
// records), over 3 partitions as in the lab's experiments.
func BenchmarkInflightHooks(b *testing.B) {
	for _, inflight := range []int{1, 50000} {
		b.Run(fmt.Sprintf("inflight-%d", inflight), func(b *testing.B) {
			in := NewInflight()
			recs := make([]*kgo.Record, inflight+1)
			for i := range recs {
				recs[i] = &kgo.Record{Topic: "t", Partition: int32(i % 3), Value: []byte("v")}
			}
			for i := range inflight {
				in.OnProduceRecordPartitioned(recs[i], 1+recs[i].Partition)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				// recs[i+inflight] is partitioned; recs[i], the oldest, answered.
				r := recs[(i+inflight)%len(recs)]
				in.OnProduceRecordPartitioned(r, 1+r.Partition)
				in.OnProduceRecordUnbuffered(recs[i%len(recs)], nil)
			}
		})
	}
}

// BenchmarkDecisionClientLeaders is node and sqf with the leader source they
// use in production, kgo.Client.PartitionLeader through ClientLeaders, on an
// in-process cluster (1,000 partitions on 3 brokers: the per-record cost does
// not depend on the broker count for node, and sqf's scan is exact here),
// and kip794.
func BenchmarkDecisionClientLeaders(b *testing.B) {
	c, err := kfake.NewCluster(kfake.NumBrokers(3), kfake.SeedTopics(benchPartitions, "bench"))
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	leaders := new(ClientLeaders)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.DefaultProduceTopic("bench"))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	leaders.Bind(cl)
	if err := cl.ProduceSync(context.Background(), &kgo.Record{Value: []byte("v")}).FirstErr(); err != nil {
		b.Fatal(err)
	}
	b.Run("node", func(b *testing.B) {
		benchPick(b, NewNode(leaders.Leader).ForTopic("bench"), nil)
	})
	b.Run("sqf-idle", func(b *testing.B) {
		benchPick(b, NewSQF(leaders.Leader, NewInflight()).ForTopic("bench"), nil)
	})
	// A draw reads all 1,000 leaders: one every 16 records of 1 KiB.
	b.Run("kip794-1KiB", func(b *testing.B) {
		tp := NewKIP794(leaders.Leader, NewInflight(), WithRand(rand.New(rand.NewSource(1)))).ForTopic("bench")
		benchPickRecord(b, tp, &kgo.Record{Value: make([]byte, 1024)}, nil)
	})
}
