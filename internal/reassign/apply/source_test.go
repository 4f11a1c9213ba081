package apply

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/topology"
)

// TestSourceJSON: the hand-written sidecar is what encoding/json writes
// for the same Source (compacted), and decodes back to it, for layouts and
// plans sorted or not, with racks that need escaping.
func TestSourceJSON(t *testing.T) {
	c := &topology.Cluster{
		Brokers: []topology.Broker{{ID: 1, Rack: `r"1<&>`}, {ID: 2, Rack: "é\n"}, {ID: 3}, {ID: 4, Missing: true}},
		Partitions: []topology.Partition{
			{Topic: "a", Partition: 0, Replicas: []int32{1, 2}},
			{Topic: "a", Partition: 1, Replicas: []int32{2, 3}},
			{Topic: "b.x_y-z", Partition: 0, Replicas: []int32{3, 1}},
			{Topic: "c", Partition: 7, Replicas: []int32{4, 1}},
		},
	}
	plan := []topology.Partition{
		{Topic: "a", Partition: 1, Replicas: []int32{3, 1}},
		{Topic: "b.x_y-z", Partition: 0, Replicas: []int32{1, 2}},
		{Topic: "c", Partition: 7, Replicas: []int32{1, 2}},
		{Topic: "gone", Partition: 0, Replicas: []int32{1, 2}},
	}
	reversed := func(ps []topology.Partition) []topology.Partition {
		r := slices.Clone(ps)
		slices.Reverse(r)
		return r
	}
	for _, tc := range []struct {
		name        string
		parts, plan []topology.Partition
		empty       bool
	}{
		{name: "sorted", parts: c.Partitions, plan: plan},
		{name: "layout unsorted", parts: reversed(c.Partitions), plan: plan},
		{name: "plan unsorted", parts: c.Partitions, plan: reversed(plan)},
		{name: "empty plan", parts: c.Partitions, empty: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cc := *c
			cc.Partitions = tc.parts
			s := NewSource(&cc, tc.plan)
			if tc.empty {
				assert.Empty(t, s.Partitions)
			} else {
				require.Len(t, s.Partitions, 3, "every plan partition the layout holds")
			}
			got := s.appendJSON(nil)
			want, err := json.Marshal(s)
			require.NoError(t, err)
			var compact bytes.Buffer
			require.NoError(t, json.Compact(&compact, got))
			assert.Equal(t, string(want), compact.String())
			var back Source
			dec := json.NewDecoder(bytes.NewReader(got))
			dec.DisallowUnknownFields()
			require.NoError(t, dec.Decode(&back))
			assert.Equal(t, *s, back)
			assert.Equal(t, s.Digest, back.digestOf())
		})
	}
}

// TestMatchPlan: the merge pass over sorted inputs finds what the map
// finds, on random layouts and plans (some keys absent, some twice).
func TestMatchPlan(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for range 200 {
		var parts, plan []topology.Partition
		for tp := range 1 + rng.IntN(4) {
			for p := range 1 + rng.IntN(6) {
				k := topology.Partition{Topic: string(rune('a' + tp)), Partition: int32(p)}
				if rng.IntN(4) > 0 {
					parts = append(parts, k)
				}
				switch rng.IntN(5) {
				case 0:
				case 1:
					plan = append(plan, k, k)
				default:
					plan = append(plan, k)
				}
			}
		}
		got := matchPlan(parts, plan)
		shuffled := slices.Clone(parts)
		rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		viaMap := matchPlan(shuffled, plan)
		for i := range plan {
			if (got[i] < 0) != (viaMap[i] < 0) {
				t.Fatalf("plan[%d] %v: merge %d, map %d", i, plan[i].Key(), got[i], viaMap[i])
			}
			if got[i] >= 0 {
				assert.Equal(t, plan[i].Key(), parts[got[i]].Key())
				assert.Equal(t, plan[i].Key(), shuffled[viaMap[i]].Key())
			}
		}
	}
}
