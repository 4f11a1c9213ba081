package errkind

import (
	"errors"
	"fmt"
	"io/fs"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestKindOf(t *testing.T) {
	tests := []struct {
		name  string
		err   error
		kind  Kind
		field string
	}{
		{"plain", errors.New("boom"), Runtime, ""},
		{"nil", nil, Runtime, ""},
		{"usage", Usagef("brokers", "must be 1-64, got %d", 0), Usage, "brokers"},
		{"wrapped", fmt.Errorf("lab up: %w", Refusedf("", "no --yes")), Refused, ""},
		{"outermost wins", Wrap(Runtime, "", Usagef("x", "bad")), Runtime, "x"},
		{"joined", errors.Join(errors.New("a"), Usagef("rate", "bad")), Usage, "rate"},
		// An EINVAL from the OS is a runtime error whatever its text says.
		{"os invalid argument", &fs.PathError{Op: "write", Path: "cpu.max", Err: errors.New("invalid argument")}, Runtime, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.kind, KindOf(tt.err))
			assert.Equal(t, tt.field, FieldOf(tt.err))
		})
	}
}

func TestErrorText(t *testing.T) {
	assert.Equal(t, "brokers: must be 1-64, got 0", Usagef("brokers", "must be 1-64, got %d", 0).Error())
	inner := errors.New("inner")
	err := New(Refused, "", "kill: %w", inner)
	assert.Equal(t, "kill: inner", err.Error())
	assert.ErrorIs(t, err, inner)
	assert.Nil(t, Wrap(Usage, "x", nil))
	assert.Equal(t, "usage", Usage.String())
}

func TestSilent(t *testing.T) {
	for _, k := range []Kind{Runtime, Usage, Negative, Refused} {
		t.Run(k.String(), func(t *testing.T) {
			err := Silent(k)
			assert.Equal(t, k, KindOf(err))
			assert.Equal(t, k, KindOf(fmt.Errorf("ctx: %w", err)), "wrapped")
			assert.ErrorIs(t, err, ErrSilent)
			assert.Empty(t, FieldOf(err))
		})
	}
	assert.NotErrorIs(t, Usagef("", "bad"), ErrSilent)
}

func TestErrorMessage(t *testing.T) {
	tests := []struct {
		name      string
		err       Spellable
		text, msg string
	}{
		{"field", &Error{Kind: Usage, Field: "brokers", Err: fmt.Errorf("want 1 to 64, got %d", 0)}, "brokers: want 1 to 64, got 0", "want 1 to 64, got 0"},
		{"no field", &Error{Kind: Refused, Err: errors.New("no --yes")}, "no --yes", "no --yes"},
		{"nil", &Error{Kind: Usage, Field: "x"}, "x: <nil>", "<nil>"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.text, tt.err.Error())
			assert.Equal(t, tt.msg, tt.err.ErrorMessage())
		})
	}
}
