package chaos

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/errkind"
)

// CheckKill refuses a kill that leaves a partition under its topic's
// min.insync.replicas as it refuses one that leaves it offline: a dry run
// used to say "checks: passed" and the kill let no acks=all record through.
func TestCheckKill(t *testing.T) {
	for _, tc := range []struct {
		name  string
		parts []PartitionState
		want  string // "" passes
	}{
		{"healthy", []PartitionState{{Name: "a/0", Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}, MinISR: 2}}, ""},
		{"under-replicated", []PartitionState{{Name: "a/0", Replicas: []int32{1, 2}, ISR: []int32{2}}}, "1 partitions are under-replicated before the kill (a/0)"},
		{"last in-sync replica", []PartitionState{{Name: "a/0", Replicas: []int32{1}, ISR: []int32{1}}}, "killing broker 1 leaves 1 partitions with no in-sync replica (a/0)"},
		{"below min.insync.replicas", []PartitionState{
			{Name: "b/1", Replicas: []int32{1, 2}, ISR: []int32{1, 2}, MinISR: 2},
			{Name: "b/0", Replicas: []int32{2, 1}, ISR: []int32{2, 1}, MinISR: 2},
			{Name: "c/0", Replicas: []int32{2, 3}, ISR: []int32{2, 3}, MinISR: 2},
		}, "killing broker 1 leaves 2 partitions below min.insync.replicas, where acks=all writes fail (b/0 (1 in sync, min.insync.replicas 2), b/1 (1 in sync, min.insync.replicas 2))"},
		{"min unknown", []PartitionState{{Name: "a/0", Replicas: []int32{1, 2}, ISR: []int32{1, 2}}}, ""},
		{"victim not in sync set", []PartitionState{{Name: "a/0", Replicas: []int32{2, 3}, ISR: []int32{2, 3}, MinISR: 2}}, ""},
		// Replication factor below min.insync.replicas fails acks=all
		// already; the kill does not cause it.
		{"rf below min", []PartitionState{{Name: "a/0", Replicas: []int32{1, 2}, ISR: []int32{1, 2}, MinISR: 3}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckKill(tc.parts, 1)
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			assert.Equal(t, errkind.Refused, errkind.KindOf(err))
		})
	}
}
