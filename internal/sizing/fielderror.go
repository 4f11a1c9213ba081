package sizing

import "github.com/kplan-dev/kplan/internal/errkind"

// ErrorKind makes an input out of range a usage error.
func (e *FieldError) ErrorKind() errkind.Kind { return errkind.Usage }

// ErrorField returns the input the error is about (e.g. "max-brokers").
func (e *FieldError) ErrorField() string { return e.Field }

// ErrorMessage returns the message without the field, for the CLI to put
// the flag (or the plan's file line) in its place (errkind.Spellable).
func (e *FieldError) ErrorMessage() string { return e.Msg }
