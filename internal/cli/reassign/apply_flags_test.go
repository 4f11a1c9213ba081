package reassign_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/errkind"
)

// The flags of the staged waves, the drift guard and resume, their
// defaults, and their bad values (usage errors naming the flag).
func TestNewCmdApplyWaves(t *testing.T) {
	o, err := parseApply(t, "plan.json", "--bootstrap-server", "k:9092")
	require.NoError(t, err)
	assert.Equal(t, 5, o.MaxInflightPerBroker)
	assert.Equal(t, 50, o.MaxInflight)
	assert.False(t, o.Resume)
	assert.False(t, o.IgnoreDrift)
	o, err = parseApply(t, "plan.json", "--bootstrap-server", "k:9092", "--max-inflight-per-broker", "2", "--max-inflight", "0",
		"--resume", "--state", "s.json", "--source", "layout.json")
	require.NoError(t, err)
	assert.Equal(t, 2, o.MaxInflightPerBroker)
	assert.Equal(t, 0, o.MaxInflight)
	assert.True(t, o.Resume)
	assert.Equal(t, "s.json", o.State)
	assert.Equal(t, "layout.json", o.Source)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--max-inflight-per-broker", "-1"}, "--max-inflight-per-broker: must not be negative"},
		{[]string{"--max-inflight", "-3"}, "--max-inflight: must not be negative"},
		{[]string{"--resume", "--verify"}, "--resume: only when executing"},
		{[]string{"--source", "x.json", "--ignore-drift"}, "--source and --ignore-drift: give one"},
	} {
		_, err := parseApply(t, append([]string{"plan.json", "--bootstrap-server", "k:9092"}, tc.args...)...)
		require.Error(t, err)
		assert.Equal(t, errkind.Usage, errkind.KindOf(err))
		assert.ErrorContains(t, err, tc.want)
	}
}
