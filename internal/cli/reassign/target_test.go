package reassign

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/kplan-dev/kplan/internal/cmdutil"
	"github.com/kplan-dev/kplan/internal/reassign"
)

// The planner names fields; only the command line spells them as flags, and
// a fault of the layout itself names the input file, never a flag.
func TestTargetErrorSpelling(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		from string
		want string
		code int
	}{
		{"flag", &reassign.TargetError{Field: "brokers", Msg: "no target brokers"}, "x.json", "--brokers: no target brokers", cmdutil.ExitUsage},
		{"layout", &reassign.TargetError{Msg: "2 target brokers cannot hold replication factor 3"}, "x.json", "x.json: 2 target brokers cannot hold replication factor 3", cmdutil.ExitUsage},
		{"live layout", &reassign.TargetError{Msg: "partition t-0 has no replicas"}, "", "partition t-0 has no replicas", cmdutil.ExitUsage},
		{"other", errors.New("boom"), "x.json", "boom", cmdutil.ExitRuntime},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := targetError(tc.err, tc.from)
			assert.EqualError(t, err, tc.want)
			assert.Equal(t, tc.code, cmdutil.ExitCode(err))
			assert.ErrorIs(t, err, tc.err)
		})
	}
}
