package audit

import (
	"testing"

	"github.com/stretchr/testify/assert"

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

	// A replica list naming more brokers than the cluster has.
	c = &topology.Cluster{Brokers: []topology.Broker{{ID: 1}, {ID: 2}}, Partitions: []topology.Partition{
		{Topic: "z", Partition: 0, Replicas: []int32{1, 2}, Leader: 1},
	}}
	c.Brokers = c.Brokers[:1] // the model lists only live brokers
	assert.Equal(t, Error, rules(Run(c, ByLeaders))["rf-above-brokers z-0"])
}

func TestCleanLayoutHasNoFindings(t *testing.T) {
	c := layout(map[string][]int32{"a": {1, 2, 3}, "b": {2, 3, 1}, "c": {3, 1, 2}})
	r := Run(c, ByLeaders)
	assert.Empty(t, r.Findings)
	assert.False(t, r.AtLeast(Info))
	assert.InDelta(t, 1.0, r.LeaderSkew.MaxOverMean, 1e-9)
}
