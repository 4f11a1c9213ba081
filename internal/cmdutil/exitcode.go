// Package cmdutil holds what every kplan command shares: exit codes and the
// errors that carry them, the command factory, and the output flag.
package cmdutil

import (
	"errors"
	"fmt"

	"github.com/kplan-dev/kplan/internal/errkind"
)

// Exit codes of kplan. They are the only ones the binary returns; `kplan
// --help` documents them and internal/app maps errors onto them.
const (
	// ExitOK means success.
	ExitOK = 0
	// ExitRuntime means a runtime or Kafka error.
	ExitRuntime = 1
	// ExitUsage means bad usage or bad input: a flag, file, line or field is wrong.
	ExitUsage = 2
	// ExitFindings means the result is a negative answer: an infeasible
	// sizing, or audit findings at or above --fail-on. Output is still printed.
	ExitFindings = 3
	// ExitRefused means a destructive action was refused for safety.
	ExitRefused = 4
)

// ExitCodesHelp is the exit-code table shown in `kplan --help`.
const ExitCodesHelp = `Exit codes:
  0  success
  1  runtime or Kafka error
  2  bad usage or bad input (the message names the flag, file, line or field)
  3  negative result: infeasible sizing, or findings at or above --fail-on
  4  refused for safety (a destructive action without --yes, or a pre-check failed)`

// ExitError is an error that carries the exit code kplan should return.
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit code %d", e.Code)
	}
	return e.Err.Error()
}

func (e *ExitError) Unwrap() error { return e.Err }

// UsageErrorf returns an error that exits with ExitUsage. Name the flag,
// file, line or field in the message.
func UsageErrorf(format string, a ...any) error {
	return &ExitError{Code: ExitUsage, Err: fmt.Errorf(format, a...)}
}

// Usage wraps err so that it exits with ExitUsage; nil stays nil.
func Usage(err error) error {
	if err == nil {
		return nil
	}
	return &ExitError{Code: ExitUsage, Err: err}
}

// RefusedErrorf returns an error that exits with ExitRefused.
func RefusedErrorf(format string, a ...any) error {
	return &ExitError{Code: ExitRefused, Err: fmt.Errorf(format, a...)}
}

// ErrSilent exits with the code it carries without printing anything more:
// the command already printed its result (e.g. an infeasible sizing).
var ErrSilent = errors.New("silent exit")

// SilentExit returns an error that makes kplan exit with code after the
// command has printed its own output.
func SilentExit(code int) error {
	return &ExitError{Code: code, Err: ErrSilent}
}

// ExitCode maps an error to kplan's exit code.
func ExitCode(err error) int {
	if err == nil {
		return ExitOK
	}
	var ee *ExitError
	if errors.As(err, &ee) {
		return ee.Code
	}
	return KindExit(errkind.KindOf(err))
}

// KindExit maps an error kind to its exit code.
func KindExit(k errkind.Kind) int {
	switch k {
	case errkind.Usage:
		return ExitUsage
	case errkind.Negative:
		return ExitFindings
	case errkind.Refused:
		return ExitRefused
	default:
		return ExitRuntime
	}
}
