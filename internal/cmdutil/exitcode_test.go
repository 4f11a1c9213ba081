package cmdutil

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/kplan-dev/kplan/internal/errkind"
)

func TestExitCode(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want int
	}{
		{"nil", nil, ExitOK},
		{"plain", errors.New("boom"), ExitRuntime},
		{"runtime", errkind.New(errkind.Runtime, "", "boom"), ExitRuntime},
		{"usage", errkind.Usagef("", "--flag: bad"), ExitUsage},
		{"usage with a field", errkind.Usagef("brokers", "bad"), ExitUsage},
		{"negative", errkind.New(errkind.Negative, "", "infeasible"), ExitFindings},
		{"refused", errkind.Refusedf("", "no"), ExitRefused},
		{"wrapped usage", fmt.Errorf("ctx: %w", errkind.Usagef("", "bad")), ExitUsage},
		{"wrapped refused", fmt.Errorf("ctx: %w", errkind.Refusedf("yes", "no")), ExitRefused},
		{"Wrap usage", errkind.Wrap(errkind.Usage, "", errors.New("bad")), ExitUsage},
		{"Wrap nil", errkind.Wrap(errkind.Usage, "", nil), ExitOK},
		{"outermost kind wins", errkind.Wrap(errkind.Refused, "", errkind.Usagef("x", "bad")), ExitRefused},
		{"joined", errors.Join(errors.New("a"), errkind.Usagef("rate", "bad")), ExitUsage},
		{"spelled keeps its kind", SpellFlag(errkind.Refusedf("yes", "needed"), nil), ExitRefused},
		{"silent runtime", errkind.Silent(errkind.Runtime), ExitRuntime},
		{"silent usage", errkind.Silent(errkind.Usage), ExitUsage},
		{"silent findings", errkind.Silent(errkind.Negative), ExitFindings},
		{"silent refused", errkind.Silent(errkind.Refused), ExitRefused},
		{"wrapped silent", fmt.Errorf("ctx: %w", errkind.Silent(errkind.Negative)), ExitFindings},
		// The deprecated wrappers left for cli/chaos and cli/measure.
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, ExitCode(tt.err))
		})
	}
}

// Every kind has its own code, and the help lists each of them.
func TestKindExit(t *testing.T) {
	want := map[errkind.Kind]int{errkind.Runtime: ExitRuntime, errkind.Usage: ExitUsage, errkind.Negative: ExitFindings, errkind.Refused: ExitRefused}
	for k, code := range want {
		assert.Equal(t, code, KindExit(k), k.String())
		assert.Contains(t, ExitCodesHelp, fmt.Sprintf("\n  %d  ", code), k.String())
	}
	assert.Equal(t, ExitRuntime, KindExit(errkind.Kind(99)), "an unknown kind is a runtime error")
}

func TestOutputFlag(t *testing.T) {
	var o OutputFlag
	o.Set("json")
	f, err := o.Format()
	assert.NoError(t, err)
	assert.Equal(t, "json", string(f))
	o.Set("xml")
	_, err = o.Format()
	assert.Equal(t, ExitUsage, ExitCode(err))
	assert.Contains(t, err.Error(), "--output")
}
