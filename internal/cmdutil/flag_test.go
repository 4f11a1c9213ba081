package cmdutil

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/kplan-dev/kplan/internal/errkind"
)

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

// msgError is a Spellable error of another type than errkind.Error, as the
// domain's own field errors (reassign.TargetError, sizing.FieldError) are.
type msgError struct{ field, msg string }

func (e *msgError) Error() string {
	if e.field == "" {
		return e.msg
	}
	return e.field + ": " + e.msg
}
func (e *msgError) ErrorKind() errkind.Kind { return errkind.Usage }
func (e *msgError) ErrorField() string      { return e.field }
func (e *msgError) ErrorMessage() string    { return e.msg }

// posError names a field but prints its position first, as
// topology.LoadError does: it is not Spellable, so Spell leaves it alone.
type posError struct{ field string }

func (e *posError) Error() string           { return "x.json:3: " + e.field + ": bad" }
func (e *posError) ErrorKind() errkind.Kind { return errkind.Usage }
func (e *posError) ErrorField() string      { return e.field }

func TestSpell(t *testing.T) {
	// where spells a field as the file line that set it, else its flag,
	// as `kplan size --plan` and `kplan chaos --file` do.
	origin := map[string]string{"rate": "exp.yaml:4: rate"}
	where := func(field string) string {
		if o, ok := origin[field]; ok {
			return o
		}
		return FlagOf(map[string]string{"dir": "lab-dir"})(field)
	}
	tests := []struct {
		name string
		err  error
		want string
		code int
	}{
		{"file line", errkind.Usagef("rate", "want a rate, got %q", "x"), `exp.yaml:4: rate: want a rate, got "x"`, ExitUsage},
		{"flag", errkind.Usagef("brokers", "bad"), "--brokers: bad", ExitUsage},
		{"renamed flag", errkind.Refusedf("dir", "not a lab"), "--lab-dir: not a lab", ExitRefused},
		{"another spellable type", &msgError{"cell-size", "must be positive"}, "--cell-size: must be positive", ExitUsage},
		{"not spellable", &posError{"brokers"}, "x.json:3: brokers: bad", ExitUsage},
		{"no field", &msgError{"", "2 brokers cannot hold 3 replicas"}, "2 brokers cannot hold 3 replicas", ExitUsage},
		{"silent", errkind.Silent(errkind.Negative), "silent exit", ExitFindings},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Spell(tt.err, where)
			assert.EqualError(t, got, tt.want)
			assert.Equal(t, tt.code, ExitCode(got))
			assert.ErrorIs(t, got, tt.err)
			assert.Equal(t, errkind.FieldOf(tt.err), errkind.FieldOf(got))
		})
	}
}

func TestFlagOf(t *testing.T) {
	for _, tt := range []struct {
		rename      map[string]string
		field, want string
	}{
		{nil, "brokers", "--brokers"},
		{map[string]string{"dir": "lab-dir"}, "dir", "--lab-dir"},
		{map[string]string{"dir": "lab-dir"}, "brokers", "--brokers"},
	} {
		assert.Equal(t, tt.want, FlagOf(tt.rename)(tt.field), tt.field)
	}
}
