package observe

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/topology"
)

func TestLoadsOn(t *testing.T) {
	layout := &topology.Cluster{
		Brokers: []topology.Broker{{ID: 1}, {ID: 2}, {ID: 3}},
		Partitions: []topology.Partition{
			{Topic: "a", Partition: 0, Replicas: []int32{1, 2}, Leader: 1},
			{Topic: "a", Partition: 1, Replicas: []int32{2, 3}, Leader: 2},
		},
	}
	parts := []PartitionLoad{
		{Topic: "a", Partition: 0, Produce: Produce{BytesPerSecond: Rate{Mean: 100}}, ConsumerBytesPerSecond: 300, SizeBytes: 1000,
			Replicas: []Replica{{Broker: 1, Bytes: 1000}, {Broker: 2, Bytes: 990}}},
		{Topic: "a", Partition: 1, Produce: Produce{BytesPerSecond: Rate{Mean: 10}}, ConsumerBytesPerSecond: 0, SizeBytes: 50,
			Replicas: []Replica{{Broker: 2, Bytes: 50}, {Broker: 3, Bytes: 50}}},
	}
	// The observed layout: the same as Compute's.
	got := LoadsOn(layout, parts)
	assert.Equal(t, brokerLoads(layout, parts), got)

	// Another layout: a/0 led by 2 and moved from 1 to 3; a partition
	// nobody observed carries nothing.
	moved := layout.Clone()
	moved.Partitions[0].Replicas, moved.Partitions[0].Leader = []int32{2, 3}, 2
	moved.Partitions = append(moved.Partitions, topology.Partition{Topic: "b", Partition: 0, Replicas: []int32{1}, Leader: 1})
	got = LoadsOn(moved, parts)
	require.Len(t, got, 3)
	b1, b2, b3 := got[0], got[1], got[2]
	assert.Equal(t, int64(0), b1.Bytes)
	assert.Equal(t, 0.0, b1.BytesIn+b1.BytesOut, "broker 1 leads only an unobserved partition")
	assert.Equal(t, 1, b1.Leaders)
	assert.Equal(t, int64(990+50), b2.Bytes)
	assert.Equal(t, 110.0, b2.ProduceIn, "leads both")
	assert.Equal(t, 300.0+110, b2.BytesOut, "consumers of a/0 and replication of both to 3")
	assert.Equal(t, int64(1000+50), b3.Bytes, "a new replica counts the partition's size")
	assert.Equal(t, 110.0, b3.ReplicationIn)
	// Law: bytes in sums produce times the replication factor.
	var in float64
	for _, b := range got {
		in += b.BytesIn
	}
	assert.Equal(t, 2*100.0+2*10, in)
}
