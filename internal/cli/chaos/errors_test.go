package chaos

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/chaos"
	"github.com/kplan-dev/kplan/internal/cmdutil"
	"github.com/kplan-dev/kplan/internal/errkind"
)

// Regression: errors were re-formatted with %s (dropping the chain) and
// classified by their text.
func TestMapErr(t *testing.T) {
	inner := errors.New("root cause")
	for _, tc := range []struct {
		name    string
		err     error
		cluster string
		want    string
		code    int
	}{
		{"usage field", errkind.Usagef("kill", "broker-9: no such broker (brokers [1 2 3]): %w", inner), "embedded", "--kill: broker-9: no such broker", cmdutil.ExitUsage},
		{"refused, allow", errkind.Refusedf(chaos.FieldAllowUnavailable, "2 partitions are under-replicated: %w", inner), "lab", "; pass --allow-unavailable to kill anyway", cmdutil.ExitRefused},
		{"refused, rf embedded", errkind.Refusedf(chaos.FieldReplicationFactor, "no replica: %w", inner), "embedded", "no replica: root cause; use --replication-factor 2", cmdutil.ExitRefused},
		{"refused, rf lab", errkind.Refusedf(chaos.FieldReplicationFactor, "no replica: %w", inner), "lab", "use --replication-factor 2 or --allow-unavailable", cmdutil.ExitRefused},
		{"runtime", errkindless(inner), "embedded", "kafka: root cause", cmdutil.ExitRuntime},
	} {
		err := mapErr(tc.err, &Options{Cluster: tc.cluster})
		require.Error(t, err, tc.name)
		assert.ErrorContains(t, err, tc.want, tc.name)
		assert.ErrorIs(t, err, inner, "%s: the chain is kept", tc.name)
		assert.Equal(t, tc.code, cmdutil.ExitCode(err), tc.name)
	}
	err := mapErr(context.Canceled, &Options{})
	assert.ErrorIs(t, err, context.Canceled)
	assert.ErrorContains(t, err, "interrupted; the partial result was printed")
}

func errkindless(err error) error { return errors.Join(errors.New("kafka: root cause"), err) }
