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
		{"usage", UsageErrorf("--flag: bad"), ExitUsage},
		{"wrapped usage", fmt.Errorf("ctx: %w", UsageErrorf("bad")), ExitUsage},
		{"usage nil", Usage(nil), ExitOK},
		{"refused", RefusedErrorf("no"), ExitRefused},
		{"silent findings", SilentExit(ExitFindings), ExitFindings},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, ExitCode(tt.err))
		})
	}
	assert.ErrorIs(t, SilentExit(3), ErrSilent)
	assert.Equal(t, "--flag: bad", UsageErrorf("--flag: %s", "bad").Error())
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

func TestSpellFlag(t *testing.T) {
	tests := []struct {
		name  string
		err   error
		flags map[string]string
		want  string
		code  int
	}{
		{"usage field", errkind.Usagef("brokers", "want 1 to 64, got %d", 0), nil, "--brokers: want 1 to 64, got 0", ExitUsage},
		{"renamed", errkind.Usagef("dir", "not empty"), map[string]string{"dir": "lab-dir"}, "--lab-dir: not empty", ExitUsage},
		{"runtime field", errkind.Wrap(errkind.Runtime, "broker-cpu", errors.New("write cpu.max: invalid argument")), nil, "--broker-cpu: write cpu.max: invalid argument", ExitRuntime},
		{"no field", errkind.Usagef("", "no broker-9"), nil, "no broker-9", ExitUsage},
		{"wrapped keeps its context", fmt.Errorf("starting: %w", errkind.Usagef("brokers", "bad")), nil, "starting: brokers: bad", ExitUsage},
		{"plain", errors.New("boom"), nil, "boom", ExitRuntime},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := SpellFlag(tt.err, tt.flags)
			assert.EqualError(t, got, tt.want)
			assert.Equal(t, tt.code, ExitCode(got))
			assert.ErrorIs(t, got, tt.err)
			assert.Equal(t, errkind.FieldOf(tt.err), errkind.FieldOf(got), "the field stays the domain's")
		})
	}
	assert.NoError(t, SpellFlag(nil, nil))
}
