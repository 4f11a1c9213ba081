package reassign_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/errkind"
)

// The guarded apply's flags: their defaults and their bad values (usage
// errors naming the flag).
func TestNewCmdApplyGuard(t *testing.T) {
	o, err := parseApply(t, "plan.json", "--bootstrap-server", "k:9092")
	require.NoError(t, err)
	assert.Nil(t, o.Rule, "no guard without --latency-objective")
	o, err = parseApply(t, "plan.json", "--bootstrap-server", "k:9092", "--throttle", "50MB/s", "--latency-objective", "p99=200ms")
	require.NoError(t, err)
	require.NotNil(t, o.Rule)
	assert.Equal(t, 200*time.Millisecond, o.Rule.Objective)
	assert.Equal(t, int64(1_000_000), o.Rule.Min)
	assert.Equal(t, int64(200_000_000), o.Rule.Max, "4 times --throttle")
	assert.Equal(t, 5*time.Second, o.Rule.Period)
	assert.Equal(t, 10*time.Second, o.Rule.Ramp, "raises ramped over Kafka's default quota span")
	assert.Equal(t, int64(512_000), o.CanaryRate)
	o, err = parseApply(t, "plan.json", "--bootstrap-server", "k:9092", "--throttle", "10MB/s", "--latency-objective", "150ms",
		"--min-throttle", "2MB/s", "--max-throttle", "80MB/s", "--canary-rate", "1MB/s", "--canary-window", "3s", "--throttle-ramp", "0")
	require.NoError(t, err)
	assert.Negative(t, o.Rule.Ramp, "--throttle-ramp 0: raises at once")
	assert.Equal(t, 150*time.Millisecond, o.Rule.Objective)
	assert.Equal(t, int64(2_000_000), o.Rule.Min)
	assert.Equal(t, int64(80_000_000), o.Rule.Max)
	assert.Equal(t, 3*time.Second, o.Rule.Period)
	assert.Equal(t, int64(1_000_000), o.CanaryRate)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--latency-objective", "p99=200ms"}, "--throttle: the adaptive throttle starts from it"},
		{[]string{"--throttle", "10MB/s", "--latency-objective", "p95=200ms"}, "--latency-objective: only p99 is guarded"},
		{[]string{"--throttle", "10MB/s", "--latency-objective", "fast"}, "--latency-objective: \"fast\" is not a duration"},
		{[]string{"--throttle", "10MB/s", "--latency-objective", "-5ms"}, "--latency-objective: must be positive"},
		{[]string{"--throttle", "10MB/s", "--latency-objective", "200ms", "--no-wait"}, "--latency-objective and --no-wait"},
		{[]string{"--throttle", "10MB/s", "--latency-objective", "200ms", "--verify"}, "--latency-objective: only when executing"},
		{[]string{"--throttle", "10MB/s", "--latency-objective", "200ms", "--min-throttle", "20MB/s"}, "--throttle: 10000000 bytes/s is outside"},
		{[]string{"--throttle", "10MB/s", "--latency-objective", "200ms", "--max-throttle", "5MB/s"}, "--throttle: 10000000 bytes/s is outside --min-throttle 1000000 and --max-throttle 5000000"},
		{[]string{"--throttle", "10MB/s", "--latency-objective", "200ms", "--min-throttle", "8MB/s", "--max-throttle", "5MB/s"}, "--max-throttle: 5000000 bytes/s is below --min-throttle"},
		{[]string{"--throttle", "10MB/s", "--latency-objective", "200ms", "--canary-rate", "fast"}, "--canary-rate:"},
		{[]string{"--throttle", "10MB/s", "--latency-objective", "200ms", "--canary-rate", "100B/s"}, "--canary-rate: at least one record"},
		{[]string{"--throttle", "10MB/s", "--latency-objective", "200ms", "--canary-window", "0s"}, "--canary-window: must be positive"},
		{[]string{"--throttle", "10MB/s", "--latency-objective", "200ms", "--throttle-ramp", "-1s"}, "--throttle-ramp: must be 0 or positive"},
		{[]string{"--throttle-ramp", "5s"}, "--throttle-ramp: only with --latency-objective"},
		{[]string{"--canary-rate", "1MB/s"}, "--canary-rate: only with --latency-objective"},
		{[]string{"--max-throttle", "1MB/s"}, "--max-throttle: only with --latency-objective"},
	} {
		_, err := parseApply(t, append([]string{"plan.json", "--bootstrap-server", "k:9092"}, tc.args...)...)
		require.Error(t, err, tc.args)
		assert.Equal(t, errkind.Usage, errkind.KindOf(err), tc.args)
		assert.ErrorContains(t, err, tc.want, tc.args)
	}
}
