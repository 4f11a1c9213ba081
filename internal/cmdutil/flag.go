package cmdutil

import (
	"github.com/kplan-dev/kplan/internal/errkind"
)

// FlagError spells a domain error's field as the flag it came from: the
// domain says "brokers: want 1 to 64, got 0", the command "--brokers: want 1
// to 64, got 0". Its kind and field are the wrapped error's.
type FlagError struct {
	// Flag is the flag's name without the dashes.
	Flag string
	// Err is the domain's error.
	Err error
	msg string
}

// Error prints "--flag: message".
func (e *FlagError) Error() string { return "--" + e.Flag + ": " + e.msg }

// Unwrap returns the domain's error.
func (e *FlagError) Unwrap() error { return e.Err }

// SpellFlag returns err with its field spelled as a flag when err itself is
// an *errkind.Error naming a field. flags maps a field to its flag where the
// names differ (nil: every field is its flag's name). Any other error is
// returned unchanged: one that wraps a field error keeps its context and
// the field as the domain spells it.
func SpellFlag(err error, flags map[string]string) error {
	e, ok := err.(*errkind.Error) //nolint:errorlint // only the top of the chain: a wrapped field error keeps its context
	if !ok || e.Field == "" {
		return err
	}
	flag := e.Field
	if f, ok := flags[e.Field]; ok {
		flag = f
	}
	msg := "<nil>"
	if e.Err != nil {
		msg = e.Err.Error()
	}
	return &FlagError{Flag: flag, Err: err, msg: msg}
}
