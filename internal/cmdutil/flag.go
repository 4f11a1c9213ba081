package cmdutil

import (
	"github.com/kplan-dev/kplan/internal/errkind"
)

// FlagError is a domain error as the command line tells it: the field
// spelled as the flag (or the file line) that set it, then the domain's
// message. The domain says "brokers: want 1 to 64, got 0", the command
// "--brokers: want 1 to 64, got 0". Its kind and field are the wrapped
// error's.
type FlagError struct {
	// Where spells the field: "--brokers", or "plan.yaml:3: brokers" for
	// a value a file set.
	Where string
	// Err is the domain's error.
	Err error
	msg string
}

// Error prints "where: message".
func (e *FlagError) Error() string { return e.Where + ": " + e.msg }

// Unwrap returns the domain's error.
func (e *FlagError) Unwrap() error { return e.Err }

// Spell is kplan's one field-to-flag hook: it returns err with its field
// spelled as where(field) when err itself is an errkind.Spellable error
// naming a field (an *errkind.Error, a *reassign.TargetError, a
// *sizing.FieldError). where is the command's mapping from the domain's
// field to the flag or file line that set it (FlagOf builds the usual one).
// Any other error is returned unchanged: one that wraps a field error keeps
// its context and the field as the domain spells it. The kind (so the exit
// code) and the chain are kept: errors.Is and errors.As see err through the
// result, and errkind.FieldOf still returns the domain's field.
func Spell(err error, where func(field string) string) error {
	e, ok := err.(errkind.Spellable) //nolint:errorlint // only the top of the chain: a wrapped field error keeps its context
	if !ok || e.ErrorField() == "" {
		return err
	}
	return &FlagError{Where: where(e.ErrorField()), Err: err, msg: e.ErrorMessage()}
}

// FlagOf returns the field-to-flag mapping of a command whose flags are
// named as the domain's fields ("brokers" is --brokers), but for those in
// rename, which maps a field to its flag's name without the dashes where
// the two differ. nil renames nothing.
func FlagOf(rename map[string]string) func(field string) string {
	return func(field string) string {
		if f, ok := rename[field]; ok {
			return "--" + f
		}
		return "--" + field
	}
}

// SpellFlag is Spell(err, FlagOf(rename)): a field error spelled as its
// flag.
func SpellFlag(err error, rename map[string]string) error {
	return Spell(err, FlagOf(rename))
}
