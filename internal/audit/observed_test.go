package audit

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/observe"
	"github.com/kplan-dev/kplan/internal/topology"
)

// observedFixture: three brokers, RF 2; broker 1 leads the two busy
// partitions and broker 2 follows both, so losing broker 1 puts all their
// consumers on broker 2.
func observedFixture() (*topology.Cluster, *observe.Result) {
	c := &topology.Cluster{
		Brokers: []topology.Broker{{ID: 1}, {ID: 2}, {ID: 3}},
		Partitions: []topology.Partition{
			{Topic: "hot", Partition: 0, Replicas: []int32{1, 2}, Leader: 1, SizeBytes: -1},
			{Topic: "hot", Partition: 1, Replicas: []int32{1, 2}, Leader: 1, SizeBytes: -1},
			{Topic: "cold", Partition: 0, Replicas: []int32{3, 1}, Leader: 3, SizeBytes: -1},
		},
	}
	load := func(topic string, p int32, in, out float64, size int64, reps ...int32) observe.PartitionLoad {
		pl := observe.PartitionLoad{Topic: topic, Partition: p, Produce: observe.Produce{BytesPerSecond: observe.Rate{Mean: in}}, ConsumerBytesPerSecond: out, SizeBytes: size}
		for _, r := range reps {
			pl.Replicas = append(pl.Replicas, observe.Replica{Broker: r, Bytes: size})
		}
		return pl
	}
	r := &observe.Result{WindowSeconds: 60, Traffic: true, Partitions: []observe.PartitionLoad{
		load("hot", 0, 1000, 3000, 1e9, 1, 2),
		load("hot", 1, 1000, 3000, 1e9, 1, 2),
		load("cold", 0, 10, 0, 1e6, 3, 1),
	}}
	return c, r
}

func TestObservedLoad(t *testing.T) {
	c, r := observedFixture()
	o, fs := Observed(c, r, 0.10)
	require.Len(t, o.Brokers, 3)
	// Broker 1 leads both hot partitions: 2000 B/s in, 6000 + 2000 out.
	assert.Equal(t, 2000.0+10, o.Brokers[0].BytesIn, "produce to its leaders and replication of cold")
	assert.Equal(t, 8000.0, o.Brokers[0].BytesOut)
	assert.Equal(t, int32(1), o.Out.Busiest)
	assert.InDelta(t, 8000/((8000.0+0+10)/3), o.Out.MaxOverMean, 1e-9)

	// Losing broker 1: broker 2 leads both hot partitions and serves their
	// consumers alone (no follower left to replicate to); broker 3 leads
	// cold with no follower.
	require.NotNil(t, o.WorstLoss)
	w := o.WorstLoss
	assert.Equal(t, int32(1), w.Broker)
	assert.Equal(t, int32(2), w.Out.Busiest)
	assert.InDelta(t, 6000.0, w.Out.Max, 1e-9)
	assert.InDelta(t, 6000/((6000.0+0)/2), w.Out.MaxOverMean, 1e-9)

	var rules []string
	for _, f := range fs {
		rules = append(rules, f.Rule+" "+f.Subject)
	}
	assert.Contains(t, rules, "observed-load broker-1")
	assert.Contains(t, rules, "observed-loss-load broker-1")
	assert.NotContains(t, rules, "observed-load broker-3")
}

func TestObservedLoadNoTrafficAndBound(t *testing.T) {
	c, r := observedFixture()
	r.Traffic = false
	o, _ := Observed(c, r, 0.10)
	assert.Nil(t, o.WorstLoss)
	assert.Contains(t, o.LossNote, "no traffic")

	// afterLoss leaves the audited layout as it was.
	c2, r2 := observedFixture()
	before := c2.Clone()
	Observed(c2, r2, 0.10)
	assert.Equal(t, before, c2)
}
