package experiment

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/errkind"
)

func TestUnavailAssignment(t *testing.T) {
	got := UnavailAssignment(2, []int32{1, 2, 3}, 4, 2)
	assert.Equal(t, [][]int32{{2, 1}, {2, 3}, {2, 1}, {2, 3}}, got)
	got = UnavailAssignment(1, []int32{1, 2, 3}, 2, 3)
	assert.Equal(t, [][]int32{{1, 2, 3}, {1, 3, 2}}, got)
}

func TestUnavailVictim(t *testing.T) {
	tests := []struct {
		want, controller int32
		brokers          []int32
		out              int32
		err              string
	}{
		{-1, 3, []int32{1, 2, 3}, 2, ""},
		{-1, 1, []int32{1, 2, 3}, 3, ""},
		{-1, -1, []int32{1, 2, 3}, 3, ""},
		{-1, 5, []int32{5}, 5, ""},
		{2, 2, []int32{1, 2, 3}, 2, ""},
		{7, 2, []int32{1, 2, 3}, -1, "broker: 7 is not a broker of the cluster"},
	}
	for _, tc := range tests {
		got, err := UnavailVictim(tc.want, tc.brokers, tc.controller)
		if tc.err != "" {
			assert.ErrorContains(t, err, tc.err)
			assert.Equal(t, errkind.Usage, errkind.KindOf(err))
			assert.Equal(t, "broker", errkind.FieldOf(err))
			continue
		}
		require.NoError(t, err)
		assert.Equal(t, tc.out, got)
	}
}
