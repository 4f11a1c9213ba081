// Package errkind is kplan's one error system: it gives errors a kind
// (usage, negative result, refused, runtime) and the field they are about,
// through types that errors.As finds. Domain packages and commands return
// these; cmdutil.ExitCode maps a kind to an exit code (Silent errors exit
// without a message) and cmdutil.Spell spells a field as its flag. Nothing
// here matches message text.
package errkind

import (
	"errors"
	"fmt"
)

// Kind says what sort of failure an error is; internal/cmdutil maps each kind
// to one exit code.
type Kind int

const (
	// Runtime is a failure of the environment or of Kafka (exit 1). It is the
	// kind of every error that says nothing else.
	Runtime Kind = iota
	// Usage is bad usage or bad input: a flag, file, line or field is wrong
	// (exit 2).
	Usage
	// Negative is a negative answer that was still printed: an infeasible
	// sizing, or findings at or above --fail-on (exit 3).
	Negative
	// Refused is a destructive action refused for safety (exit 4).
	Refused
)

// String names the kind.
func (k Kind) String() string {
	switch k {
	case Usage:
		return "usage"
	case Negative:
		return "negative"
	case Refused:
		return "refused"
	default:
		return "runtime"
	}
}

// Kinded is implemented by every error type that knows its kind; KindOf finds
// the outermost one in a chain with errors.As.
type Kinded interface {
	error
	ErrorKind() Kind
}

// Fielded is implemented by every error type that names the input field it is
// about, spelled as the domain spells it (e.g. "brokers", "broker-cpu"); the
// CLI turns the field into its flag.
type Fielded interface {
	error
	ErrorField() string
}

// Spellable is implemented by Fielded errors whose text is "field:
// message" (or the message alone without a field): ErrorMessage returns the
// message alone, so that the CLI can print the flag (or the file line) that
// set the field in the field's place. An error whose text puts its field
// elsewhere (a file position first, say) does not implement it.
type Spellable interface {
	Fielded
	ErrorMessage() string
}

// Error is an error of a kind, optionally about one field.
type Error struct {
	Kind  Kind
	Field string
	Err   error
}

// Error prints "field: message", or the message alone without a field.
func (e *Error) Error() string {
	if e.Field == "" {
		return e.ErrorMessage()
	}
	return e.Field + ": " + e.ErrorMessage()
}

// ErrorMessage prints the message without the field.
func (e *Error) ErrorMessage() string {
	if e.Err == nil {
		return "<nil>"
	}
	return e.Err.Error()
}

// Unwrap returns the wrapped error.
func (e *Error) Unwrap() error { return e.Err }

// ErrorKind returns e's kind.
func (e *Error) ErrorKind() Kind { return e.Kind }

// ErrorField returns the field e is about, or "".
func (e *Error) ErrorField() string { return e.Field }

// New returns an error of kind about field ("" for none), formatted like
// fmt.Errorf (so %w wraps).
func New(kind Kind, field, format string, a ...any) error {
	return &Error{Kind: kind, Field: field, Err: fmt.Errorf(format, a...)}
}

// Wrap gives err a kind and a field; nil stays nil.
func Wrap(kind Kind, field string, err error) error {
	if err == nil {
		return nil
	}
	return &Error{Kind: kind, Field: field, Err: err}
}

// ErrSilent is the error of a silent exit: the command already printed its
// result (an infeasible sizing, audit findings, a plan still in progress),
// so kplan prints nothing more and only exits with its kind's code.
var ErrSilent = errors.New("silent exit")

// Silent returns an error of kind that prints nothing: the command printed
// its own output and only the exit code is left to say.
// errors.Is(err, ErrSilent) tells it apart.
func Silent(kind Kind) error { return &Error{Kind: kind, Err: ErrSilent} }

// Usagef is New(Usage, field, ...).
func Usagef(field, format string, a ...any) error { return New(Usage, field, format, a...) }

// Refusedf is New(Refused, field, ...).
func Refusedf(field, format string, a ...any) error { return New(Refused, field, format, a...) }

// KindOf returns the kind of the outermost Kinded error in err's chain, or
// Runtime when there is none.
func KindOf(err error) Kind {
	var k Kinded
	if errors.As(err, &k) {
		return k.ErrorKind()
	}
	return Runtime
}

// FieldOf returns the field of the outermost Fielded error in err's chain
// that names one, or "".
func FieldOf(err error) string {
	for err != nil {
		if f, ok := err.(Fielded); ok && f.ErrorField() != "" { //nolint:errorlint // walks the chain one link at a time, skipping links without a field
			return f.ErrorField()
		}
		switch u := err.(type) { //nolint:errorlint // the walk itself
		case interface{ Unwrap() error }:
			err = u.Unwrap()
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				if f := FieldOf(e); f != "" {
					return f
				}
			}
			return ""
		default:
			return ""
		}
	}
	return ""
}
