package faulter

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/chaos"
	"github.com/kplan-dev/kplan/internal/errkind"
	"github.com/kplan-dev/kplan/internal/localkafka"
)

func TestCondition(t *testing.T) {
	tests := []struct {
		f    chaos.Fault
		want localkafka.Condition
	}{
		{chaos.Fault{Kind: chaos.FaultDelay, Delay: 100 * time.Millisecond, Jitter: 10 * time.Millisecond}, localkafka.Condition{Delay: 100 * time.Millisecond, Jitter: 10 * time.Millisecond}},
		{chaos.Fault{Kind: chaos.FaultLoss, Loss: 0.1}, localkafka.Condition{Loss: 0.1}},
		{chaos.Fault{Kind: chaos.FaultPartition}, localkafka.Partition()},
	}
	for _, tc := range tests {
		got, err := condition(tc.f)
		require.NoError(t, err, tc.f.Kind)
		assert.Equal(t, tc.want, got, tc.f.Kind)
		assert.NoError(t, got.Validate(), tc.f.Kind)
	}
	_, err := condition(chaos.Fault{Kind: "corrupt"})
	assert.Equal(t, errkind.Usage, errkind.KindOf(err))
	assert.ErrorContains(t, err, "corrupt")
}
