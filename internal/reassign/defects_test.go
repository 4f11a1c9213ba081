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

// sameRackPairs counts partitions with two replicas in one named rack, by
// the racks of c's brokers: the independent count of rack violations when
// there are at least as many racks as replicas.
func sameRackPairs(c *topology.Cluster, parts []topology.Partition) int {
	bad := 0
	for _, p := range parts {
		seen := map[string]bool{}
		for _, r := range p.Replicas {
			b, _ := c.Broker(r)
			if b.Rack != "" && seen[b.Rack] {
				bad++
				break
			}
			seen[b.Rack] = true
		}
	}
	return bad
}

// One rack-less broker (or a down one) used to turn rack awareness off for
// the whole plan while the summary said "rack violations 0" before and
// after. Now the rack-less broker counts as a rack of its own, the brokers
// with racks keep their rules, and the summary counts what is there.
func TestRacklessBrokerKeepsRacks(t *testing.T) {
	for _, down := range []bool{false, true} {
		brokers := []topology.Broker{{ID: 1, Rack: "a"}, {ID: 2, Rack: "a"}, {ID: 3, Rack: "b"}, {ID: 4, Rack: "b"}, {ID: 6, Rack: "c"}}
		if !down {
			brokers = append(brokers, topology.Broker{ID: 5})
		}
		c := &topology.Cluster{Live: down, Brokers: brokers}
		// Every partition on two brokers of one rack, some on broker 5.
		c.Partitions = append(ring("a", 6, 2, 1, 2), ring("b", 6, 2, 3, 4)...)
		c.Partitions = append(c.Partitions, ring("c", 6, 2, 5, 6)...)
		c.Normalize()
		p, err := Compute(c, Options{})
		require.NoError(t, err)
		checkPlan(t, c, Options{}, p)
		assert.Equal(t, 12, sameRackPairs(c, c.Partitions))
		assert.Equal(t, 12, p.Summary.Before.RackViolations, "down=%v", down)
		assert.Zero(t, sameRackPairs(c, p.Final.Partitions), "down=%v", down)
		assert.Zero(t, p.Summary.After.RackViolations)
	}
}

// An RF-1 topic spread 1-1-1 used to be moved entirely onto one broker by
// --fix-overlaps (its leader block: its only replica is its data), several
// times the lower bound. Partitions of replication factor 1 now stay and
// lead where they are: a balanced layout moves nothing, the bound.
func TestFixOverlapsKeepsRF1Data(t *testing.T) {
	for _, tc := range []struct {
		name string
		rf   int
	}{{"with rf 1", 1}, {"with rf 2", 2}, {"with rf 3", 3}} {
		t.Run(tc.name, func(t *testing.T) {
			c := &topology.Cluster{Brokers: []topology.Broker{{ID: 1}, {ID: 2}, {ID: 3}, {ID: 4}}}
			c.Partitions = append(ring("a", 3, 1, 1, 2, 3), ring("big", 32, tc.rf, 1, 2, 3, 4)...)
			c.Partitions = append(c.Partitions, ring("c", 1, 1, 4)...)
			c.Normalize()
			opts := Options{FixOverlaps: true}
			p, err := Compute(c, opts)
			require.NoError(t, err)
			checkPlan(t, c, opts, p)
			assert.Equal(t, p.Summary.LowerBound, p.Summary.ReplicasMoved)
			assert.Equal(t, movesBetween(c, p.Final), p.Summary.ReplicasMoved)
			for _, fp := range p.Final.Partitions {
				if fp.Topic != "big" {
					assert.Equal(t, c.Partitions[c.Find(fp.Key())].Replicas, fp.Replicas, "%s moved", fp.Key())
				}
			}
		})
	}
}
