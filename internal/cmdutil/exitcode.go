// Package cmdutil holds what every kplan command shares: the exit codes and
// the mapping of errkind kinds onto them, the hook that spells an error's
// field as its flag, the command factory, and the output flag.
package cmdutil

import (
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

// ExitCode maps an error to kplan's exit code: nil is ExitOK, any other
// error exits with the code of its kind (errkind.KindOf: the outermost
// errkind.Kinded in its chain, else errkind.Runtime). A silent error
// (errkind.Silent) exits with its kind's code too; internal/app prints no
// message for it.
func ExitCode(err error) int {
	if err == nil {
		return ExitOK
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
