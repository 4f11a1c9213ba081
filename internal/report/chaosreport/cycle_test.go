package chaosreport

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/kplan-dev/kplan/internal/chaos"
)

func TestCycleLine(t *testing.T) {
	ms := 3130.4
	tests := []struct {
		name string
		res  *chaos.Result
		want string
	}{
		{"kill, two producers", &chaos.Result{KilledBroker: 1, FailoverMS: &ms, Partitioners: []chaos.PartitionerResult{
			{Sent: 10, Acked: 9, Lost: 1, Duplicates: 2, NeverAcked: 1}, {Sent: 5, Acked: 5}}},
			"chaos: cycle 2/20: killed broker 1, failover 3130 ms, records sent 15, acked 14, lost 1, duplicates 2, never acked 1"},
		{"no kill", &chaos.Result{KilledBroker: -1, Partitioners: []chaos.PartitionerResult{{Sent: 3, Acked: 3}}},
			"chaos: cycle 2/20: no kill, records sent 3, acked 3, lost 0, duplicates 0, never acked 0"},
		{"kill, failover not timed", &chaos.Result{KilledBroker: 3},
			"chaos: cycle 2/20: killed broker 3, records sent 0, acked 0, lost 0, duplicates 0, never acked 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, CycleLine(2, 20, tt.res))
		})
	}
}
