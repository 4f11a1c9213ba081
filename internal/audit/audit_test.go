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

// TestRackChecksSurviveADownBroker: a broker that is down is known only
// from replica lists, without its rack; the rack rule still holds for the
// brokers whose racks are known (it used to vanish: 3 warnings before a
// kill, none after).
func TestRackChecksSurviveADownBroker(t *testing.T) {
	mk := func(down bool) *topology.Cluster {
		c := &topology.Cluster{Brokers: []topology.Broker{{ID: 1, Rack: "a"}, {ID: 2, Rack: "a"}, {ID: 3, Rack: "b"}, {ID: 4, Rack: "b"}},
			Partitions: []topology.Partition{
				{Topic: "t", Partition: 0, Replicas: []int32{1, 2}, Leader: 1}, // both in rack a
				{Topic: "t", Partition: 1, Replicas: []int32{3, 4}, Leader: 3}, // both in rack b
				{Topic: "t", Partition: 2, Replicas: []int32{1, 3}, Leader: 1},
			}}
		if down { // broker 4 is down: a live cluster no longer lists it
			c.Brokers = c.Brokers[:3]
			c.Partitions[1].ISR = []int32{3}
		}
		c.Normalize()
		return c
	}
	before, after := rules(Run(mk(false), ByLeaders)), rules(Run(mk(true), ByLeaders))
	assert.Equal(t, Warning, before["rack-duplicate t-0"])
	assert.Equal(t, Warning, before["rack-duplicate t-1"])
	assert.Equal(t, Warning, after["rack-duplicate t-0"], "broker 4 down: racks a and b still known")
	assert.NotContains(t, after, "rack-duplicate t-1", "broker 4's rack is unknown once it is down")
	assert.NotContains(t, after, "rack-duplicate t-2")
	// A live broker without a rack: the cluster is not rack-aware.
	c := mk(false)
	c.Brokers[3].Rack = ""
	assert.NotContains(t, rules(Run(c, ByLeaders)), "rack-duplicate t-0")
}

// TestWhatIfMeanLeavesDownBrokersOut: the leaders' max/mean after a loss
// is over the brokers still up, not over brokers already down.
func TestWhatIfMeanLeavesDownBrokersOut(t *testing.T) {
	c := &topology.Cluster{Brokers: []topology.Broker{{ID: 1}, {ID: 2}, {ID: 3}}, Partitions: []topology.Partition{
		{Topic: "t", Partition: 0, Replicas: []int32{1, 2}, Leader: 1},
		{Topic: "t", Partition: 1, Replicas: []int32{1, 2}, Leader: 1},
		{Topic: "t", Partition: 2, Replicas: []int32{2, 1}, Leader: 2},
		{Topic: "t", Partition: 3, Replicas: []int32{3, 1}, Leader: 3},
		{Topic: "t", Partition: 4, Replicas: []int32{4, 2}, Leader: 2, ISR: []int32{2}},
	}}
	c.Normalize() // broker 4 is named only by replicas: down
	require.True(t, c.Brokers[3].Missing)
	w := WhatIfLoss(c, ByLeaders, []int32{3})
	require.Len(t, w, 1)
	// After losing 3: broker 1 leads 3, broker 2 leads 2; 2 brokers up.
	assert.Equal(t, 3, w[0].LeadersMax)
	assert.Equal(t, 2, w[0].LiveBrokers)
	assert.InDelta(t, 3.0*2/5, w[0].LeadersMaxOverMean, 1e-9)
}

// TestISRWithoutLiveFlag: a layout file's isr lists are facts with or
// without its "live" flag: a short ISR is under-replicated either way.
func TestISRWithoutLiveFlag(t *testing.T) {
	for _, live := range []string{``, `"live":true,`} {
		data := []byte(`{"version":1,` + live + `"partitions":[{"topic":"t","partition":0,"replicas":[1,2],"leader":1,"isr":[1]},{"topic":"t","partition":1,"replicas":[2,1],"leader":2,"isr":[2,1]}]}`)
		c, err := topology.LoadJSON(data, "x.json")
		require.NoError(t, err)
		got := rules(Run(c, ByLeaders))
		assert.Equal(t, Warning, got["under-replicated t-0"], live)
		assert.NotContains(t, got, "under-replicated t-1", live)
	}
}
