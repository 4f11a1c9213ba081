package chaos

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/audit"
	"github.com/kplan-dev/kplan/internal/errkind"
	"github.com/kplan-dev/kplan/internal/topology"
	"github.com/kplan-dev/kplan/internal/workload"
)

// Weights share the total, rates in bytes/s are each topic's own, a topic
// at rate 0 is not written; errors name the field the setting came from.
func TestWorkloadSpecBuild(t *testing.T) {
	rates := func(s string) audit.Rates {
		r, err := audit.ParseRates(s)
		require.NoError(t, err)
		return r
	}
	names := []string{"A", "B", "C"}
	for _, tc := range []struct {
		name  string
		spec  WorkloadSpec
		want  []int64 // rates of the topics written, in order
		field string  // the error's field, "" when it builds
	}{
		{"equal weights", WorkloadSpec{Total: 300, RatesField: "rates"}, []int64{100, 100, 100}, ""},
		{"weights share the total", WorkloadSpec{Rates: rates("A=2,B=1"), RatesGiven: true, Total: 300, RatesField: "rates"}, []int64{200, 100}, ""},
		{"bytes per second", WorkloadSpec{Rates: rates("A=2kB/s,*=1kB/s"), RatesGiven: true, RatesField: "rates-file"}, []int64{2000, 1000, 1000}, ""},
		{"weights without a total", WorkloadSpec{Rates: rates("A=2,B=1"), RatesGiven: true, RatesField: "rates-file"}, nil, "rates-file"},
		{"unknown topic", WorkloadSpec{Rates: rates("D=1"), RatesGiven: true, Total: 1, RatesField: "rates"}, nil, "rates"},
		{"unknown keyed topic", WorkloadSpec{Total: 1, RatesField: "rates", Keys: workload.TopicKeys{ByTopic: map[string]workload.Keys{"D": {}}}}, nil, "keys"},
	} {
		w, err := tc.spec.Build(names, nil, "in the layout x")
		if tc.field != "" {
			var ke *errkind.Error
			require.ErrorAs(t, err, &ke, tc.name)
			assert.Equal(t, tc.field, ke.Field, tc.name)
			continue
		}
		require.NoError(t, err, tc.name)
		var got []int64
		for _, x := range w {
			got = append(got, x.Rate)
		}
		assert.Equal(t, tc.want, got, tc.name)
	}
}

// A layout's leader goes first in each partition's replicas; gaps and
// brokers the embedded cluster cannot have are the layout's errors.
func TestLayoutTopics(t *testing.T) {
	c := &topology.Cluster{Partitions: []topology.Partition{
		{Topic: "A", Partition: 0, Leader: 2, Replicas: []int32{1, 2}},
		{Topic: "A", Partition: 1, Leader: 3, Replicas: []int32{3, 1}},
		{Topic: "B", Partition: 0, Leader: 1, Replicas: []int32{1, 3}},
	}}
	names, a, maxID, err := LayoutTopics(c, "l.json", true)
	require.NoError(t, err)
	assert.Equal(t, []string{"A", "B"}, names)
	assert.Equal(t, [][]int32{{2, 1}, {3, 1}}, a["A"])
	assert.Equal(t, int32(3), maxID)

	for _, bad := range []*topology.Cluster{
		{},
		{Partitions: []topology.Partition{{Topic: "A", Partition: 1, Leader: 1, Replicas: []int32{1}}}},
		{Partitions: []topology.Partition{{Topic: "A", Partition: 0, Leader: 101, Replicas: []int32{101}}}},
	} {
		_, _, _, err := LayoutTopics(bad, "l.json", true)
		var ke *errkind.Error
		require.ErrorAs(t, err, &ke)
		assert.Equal(t, "layout", ke.Field)
	}
}
