package reassign

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/topology"
)

// ring returns a layout of partitions with replication factor rf over the
// brokers ids in a ring, the i-th partition starting at broker i mod n.
func ring(topic string, parts, rf int, ids ...int32) []topology.Partition {
	var out []topology.Partition
	for p := range parts {
		var reps []int32
		for j := range rf {
			reps = append(reps, ids[(p+j)%len(ids)])
		}
		out = append(out, topology.Partition{Topic: topic, Partition: int32(p), Replicas: reps, Leader: reps[0]})
	}
	return out
}

// A broker that replicas name but the cluster's broker list does not is
// down: a live cluster with it Missing, or a layout whose broker is known
// only from replicas. Plans used to place replicas and leaders on it; now
// it is drained and never a target, and an explicit target list naming it
// is refused.
func TestDownBrokerIsDrained(t *testing.T) {
	for _, live := range []bool{true, false} {
		c := &topology.Cluster{Live: live, Brokers: []topology.Broker{{ID: 1}, {ID: 2}, {ID: 3}}}
		c.Partitions = ring("t", 12, 2, 1, 2, 3, 4)
		c.Normalize()
		down, _ := c.Broker(4)
		require.True(t, down.Missing)
		p, err := Compute(c, Options{})
		require.NoError(t, err)
		checkPlan(t, c, Options{}, p)
		require.NoError(t, Check(c, p, Options{}))
		for _, fp := range p.Final.Partitions {
			assert.NotContains(t, fp.Replicas, int32(4), "%s", fp.Key())
			assert.NotEqual(t, int32(4), fp.Leader)
		}
		assert.Equal(t, []int32{4}, p.Summary.DrainedBrokers)
		assert.Equal(t, []int32{1, 2, 3}, p.Summary.TargetBrokers)
		assert.Contains(t, strings.Join(p.Summary.Notes, "\n"), "broker 4 is down")

		_, err = Compute(c, Options{Brokers: []topology.Broker{{ID: 1}, {ID: 2}, {ID: 4}}})
		var te *TargetError
		require.ErrorAs(t, err, &te)
		assert.Equal(t, "brokers", te.Field)
		assert.Contains(t, te.Msg, "broker 4 is down")
	}
}
