package topology

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestElectAfterLoss(t *testing.T) {
	deadSet := func(ids ...int32) func(int32) bool {
		return func(b int32) bool {
			for _, id := range ids {
				if id == b {
					return true
				}
			}
			return false
		}
	}
	tests := []struct {
		name string
		p    Partition
		dead []int32
		want int32
	}{
		{"live leader keeps it", Partition{Replicas: []int32{1, 2, 3}, Leader: 2}, []int32{1}, 2},
		{"first live replica in assignment order", Partition{Replicas: []int32{3, 1, 2}, Leader: 3}, []int32{3}, 1},
		{"skips replicas out of the ISR", Partition{Replicas: []int32{3, 1, 2}, Leader: 3, ISR: []int32{3, 2}}, []int32{3}, 2},
		{"skips offline replicas", Partition{Replicas: []int32{3, 1, 2}, Leader: 3, Offline: []int32{1}}, []int32{3}, 2},
		{"no live in-sync replica: offline", Partition{Replicas: []int32{3, 1}, Leader: 3, ISR: []int32{3}}, []int32{3}, NoLeader},
		{"every replica dead", Partition{Replicas: []int32{3, 1}, Leader: 3}, []int32{1, 3}, NoLeader},
		{"already offline, replica back", Partition{Replicas: []int32{3, 1}, Leader: NoLeader}, []int32{3}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, ElectAfterLoss(&tt.p, deadSet(tt.dead...)))
		})
	}
}
