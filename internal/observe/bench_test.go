package observe

import (
	"fmt"
	"testing"
	"time"

	"github.com/kplan-dev/kplan/internal/topology"
)

// BenchmarkCompute: 100k partitions at RF 3 on 30 brokers, 3 samples, one
// group reading every partition. Target: well under a second, so that a
// large cluster's observation costs its window, not its computation.
func BenchmarkCompute(b *testing.B) {
	const topics, parts, brokers = 1000, 100, 30
	c := &topology.Cluster{Live: true}
	for i := range brokers {
		c.Brokers = append(c.Brokers, topology.Broker{ID: int32(i + 1)})
	}
	for t := range topics {
		for p := range parts {
			l := int32((t+p)%brokers + 1)
			c.Partitions = append(c.Partitions, topology.Partition{Topic: fmt.Sprintf("t%04d", t), Partition: int32(p),
				Replicas: []int32{l, l%brokers + 1, (l+1)%brokers + 1}, Leader: l})
		}
	}
	c.Normalize()
	var samples []Sample
	for s := range 3 {
		sm := Sample{At: t0.Add(time.Duration(s) * 30 * time.Second)}
		for i := range c.Partitions {
			p := &c.Partitions[i]
			end := int64(s * (i%7 + 1) * 1000)
			sm.Offsets = append(sm.Offsets, PartitionOffsets{Topic: p.Topic, Partition: p.Partition, End: end, LocalStart: -1})
			for _, r := range p.Replicas {
				sm.Replicas = append(sm.Replicas, ReplicaSize{Topic: p.Topic, Partition: p.Partition, Broker: r, Dir: "/d", Bytes: end * 100})
			}
			sm.Committed = append(sm.Committed, Committed{Group: "g", Topic: p.Topic, Partition: p.Partition, Offset: end / 2})
		}
		samples = append(samples, sm)
	}
	b.ResetTimer()
	for b.Loop() {
		if _, err := Compute(c, samples); err != nil {
			b.Fatal(err)
		}
	}
}
