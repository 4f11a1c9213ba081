package chaos

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestISRReport(t *testing.T) {
	tests := []struct {
		name  string
		live  []int32
		parts []partMeta
		whole bool
		say   string
	}{
		{"whole", []int32{1, 2, 3}, []partMeta{{leader: 1, replicas: []int32{1, 2}, isr: []int32{2, 1}}}, true,
			"every broker ([1 2 3]) is back in every ISR (1 partitions)"},
		{"out of an isr", []int32{1, 2, 3}, []partMeta{{leader: 1, replicas: []int32{1, 2}, isr: []int32{1}}, {leader: 2, replicas: []int32{2, 3}, isr: []int32{2, 3}}}, false,
			"1 of 2 partitions are under-replicated (t/0)"},
		{"broker down", []int32{1, 2}, []partMeta{{leader: 1, replicas: []int32{1, 3}, isr: []int32{1}}}, false,
			"brokers [3] are not in the metadata; 1 of 1 partitions are under-replicated (t/0)"},
		{"down, no partition of its own", []int32{1, 2}, []partMeta{{leader: 1, replicas: []int32{1, 2}, isr: []int32{1, 2}}}, false,
			"brokers [3] are not in the metadata"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep := isrReport([]int32{1, 2, 3}, &clusterMeta{brokers: tt.live, topics: map[string][]partMeta{"t": tt.parts}})
			assert.Equal(t, tt.whole, rep.Whole())
			assert.Equal(t, tt.say, rep.String())
		})
	}
}
