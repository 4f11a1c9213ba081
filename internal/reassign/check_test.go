package reassign

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/topology"
)

// Check catches every kind of bad change a planner bug could produce, and
// passes the plans Compute makes.
func TestCheck(t *testing.T) {
	c := &topology.Cluster{Brokers: []topology.Broker{{ID: 1}, {ID: 2}, {ID: 3}}}
	old := topology.Partition{Topic: "t", Partition: 0, Replicas: []int32{1, 2}, Leader: 1}
	change := func(replicas ...int32) *Plan {
		n := old
		n.Replicas = replicas
		return &Plan{Changes: []Change{{New: n, Old: old}}}
	}
	for _, tc := range []struct {
		name string
		plan *Plan
		o    Options
		want string
	}{
		{"good", change(2, 3), Options{}, ""},
		{"empty replica list", change(), Options{}, "t-0: empty replica list"},
		{"replication factor changed unasked", change(1, 2, 3), Options{}, "t-0: replication factor 2 -> 3, and no replication factor was asked for"},
		{"replication factor asked", change(1, 2, 3), Options{ReplicationFactor: 3}, ""},
		{"replication factor not the one asked", change(1, 2), Options{ReplicationFactor: 3}, "t-0: replication factor 2, not the 3 asked for"},
		{"broker outside the cluster", change(1, 4), Options{}, "t-0: broker 4 is not a target broker"},
		{"broker left out of the targets", change(1, 3), Options{Brokers: []topology.Broker{{ID: 1}, {ID: 2}}}, "t-0: broker 3 is not a target broker"},
		{"target broker new to the cluster", change(1, 4), Options{Brokers: []topology.Broker{{ID: 1}, {ID: 4}}}, ""},
		{"broker twice", change(2, 2), Options{}, "t-0: broker 2 twice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Check(c, tc.plan, tc.o)
			if tc.want == "" {
				assert.NoError(t, err)
				return
			}
			assert.EqualError(t, err, tc.want)
		})
	}
}

func TestCheckPassesComputedPlans(t *testing.T) {
	c := &topology.Cluster{Brokers: []topology.Broker{{ID: 1}, {ID: 2}, {ID: 3}, {ID: 4}}}
	for p := range int32(8) {
		c.Partitions = append(c.Partitions, topology.Partition{Topic: "t", Partition: p, Replicas: []int32{1, 2}, Leader: 1})
	}
	c.Normalize()
	for _, o := range []Options{{}, {ReplicationFactor: 3}, {Brokers: []topology.Broker{{ID: 2}, {ID: 3}, {ID: 4}}}} {
		plan, err := Compute(c, o)
		require.NoError(t, err)
		require.NotEmpty(t, plan.Changes)
		assert.NoError(t, Check(c, plan, o), "%+v", o)
	}
}
