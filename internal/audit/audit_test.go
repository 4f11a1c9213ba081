package audit

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/topology"
)

func rules(r Report) map[string]Severity {
	out := map[string]Severity{}
	for _, f := range r.Findings {
		out[f.Rule+" "+f.Subject] = f.Severity
	}
	return out
}

// TestFig38 is the thesis's uneven spread: topic B has four partitions on
// three brokers, so broker 3 takes two shares, with no overlap at all.
func TestFig38(t *testing.T) {
	c := layout(map[string][]int32{"A": {1, 2, 3}, "B": {1, 2, 3, 3}})
	r := Run(c, ByLeaders)
	assert.Len(t, r.MaxGroups, 1)
	assert.Empty(t, r.Overlaps)
	assert.Equal(t, Info, rules(r)["uneven-spread B"], "4 partitions cannot split evenly over 3 brokers")
	c = layout(map[string][]int32{"B": {1, 2, 3, 3, 3, 1}})
	assert.Equal(t, Warning, rules(Run(c, ByLeaders))["uneven-spread B"], "6 partitions could split 2-2-2")
}

func TestHealthRules(t *testing.T) {
	c := &topology.Cluster{Live: true, Brokers: []topology.Broker{{ID: 1, Rack: "a"}, {ID: 2, Rack: "a"}, {ID: 3, Rack: "b"}}, Partitions: []topology.Partition{
		{Topic: "x", Partition: 0, Replicas: []int32{1, 2}, Leader: 1, ISR: []int32{1}},
		{Topic: "x", Partition: 1, Replicas: []int32{3, 1}, Leader: topology.NoLeader, ISR: []int32{}},
		{Topic: "y", Partition: 0, Replicas: []int32{2, 3}, Leader: 2, ISR: []int32{2, 3}},
		{Topic: "y", Partition: 1, Replicas: []int32{2, 3}, Leader: 2, ISR: []int32{2, 3}},
	}}
	c.Normalize()
	r := Run(c, ByLeaders)
	got := rules(r)
	assert.Equal(t, Warning, got["under-replicated x-0"])
	assert.Equal(t, Error, got["offline x-1"])
	assert.Equal(t, Warning, got["rack-duplicate x-0"], "brokers 1 and 2 share rack a")
	assert.Equal(t, Warning, got["single-broker y"])
	assert.Equal(t, Error, r.Findings[0].Severity, "errors first")
	assert.True(t, r.AtLeast(Error))

}

// TestRFAboveBrokers: the rule fires when fewer brokers are up than a
// partition has replicas, although Normalize adds every broker a replica
// names, on a live snapshot and on the same snapshot saved and read back.
func TestRFAboveBrokers(t *testing.T) {
	// Metadata lists brokers 1 and 2; replicas also name 3, which is down.
	live := func() *topology.Cluster {
		c := &topology.Cluster{Live: true, Brokers: []topology.Broker{{ID: 1, Rack: "a"}, {ID: 2, Rack: "b"}}, Partitions: []topology.Partition{
			{Topic: "z", Partition: 0, Replicas: []int32{1, 2, 3}, Leader: 1, ISR: []int32{1, 2}, Offline: []int32{3}},
			{Topic: "z", Partition: 1, Replicas: []int32{2, 1}, Leader: 2, ISR: []int32{2, 1}},
		}}
		c.Normalize()
		return c
	}
	saved := func() *topology.Cluster {
		var b bytes.Buffer
		require.NoError(t, topology.WriteSnapshot(&b, live()))
		c, err := topology.Load(&b, "snap.json")
		require.NoError(t, err)
		return c
	}
	for name, c := range map[string]*topology.Cluster{"live": live(), "saved snapshot": saved()} {
		t.Run(name, func(t *testing.T) {
			require.Len(t, c.Brokers, 3, "Normalize adds broker 3")
			r := Run(c, ByLeaders)
			got := rules(r)
			assert.Equal(t, Error, got["rf-above-brokers z-0"])
			assert.NotContains(t, got, "rf-above-brokers z-1", "RF 2 fits on 2 brokers")
			for _, f := range r.Findings {
				if f.Subject == "z-0" && f.Rule == "rf-above-brokers" {
					assert.Equal(t, "z-0 has 3 replicas but only 2 of its 3 brokers are up", f.Message)
				}
			}
		})
	}
	// A layout without a broker list names brokers only through replicas:
	// none is missing, nothing fires.
	c := &topology.Cluster{Partitions: []topology.Partition{{Topic: "a", Partition: 0, Replicas: []int32{1, 2, 3}, Leader: 1}}}
	c.Normalize()
	assert.NotContains(t, rules(Run(c, ByLeaders)), "rf-above-brokers a-0")
}

func TestCleanLayoutHasNoFindings(t *testing.T) {
	c := layout(map[string][]int32{"a": {1, 2, 3}, "b": {2, 3, 1}, "c": {3, 1, 2}})
	r := Run(c, ByLeaders)
	assert.Empty(t, r.Findings)
	assert.False(t, r.AtLeast(Info))
	assert.InDelta(t, 1.0, r.LeaderSkew.MaxOverMean, 1e-9)
}
