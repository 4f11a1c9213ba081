// Package iostreams carries the standard streams a command writes to, so
// commands never touch os.Stdout directly and tests can capture everything.
package iostreams

import (
	"bytes"
	"io"
	"os"

	"golang.org/x/term"
)

// IOStreams holds the input, output and error streams of one command run.
// Data goes to Out, progress and diagnostics to ErrOut.
type IOStreams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer

	outTTY bool
	errTTY bool
}

// System returns the process's own streams, detecting terminals.
func System() *IOStreams {
	return &IOStreams{
		In:     os.Stdin,
		Out:    os.Stdout,
		ErrOut: os.Stderr,
		outTTY: term.IsTerminal(int(os.Stdout.Fd())),
		errTTY: term.IsTerminal(int(os.Stderr.Fd())),
	}
}

// Test returns streams backed by buffers, for tests: in, out, errOut.
func Test() (*IOStreams, *bytes.Buffer, *bytes.Buffer, *bytes.Buffer) {
	in, out, errOut := &bytes.Buffer{}, &bytes.Buffer{}, &bytes.Buffer{}
	return &IOStreams{In: in, Out: out, ErrOut: errOut}, in, out, errOut
}

// IsStdoutTTY reports whether Out is a terminal.
func (s *IOStreams) IsStdoutTTY() bool { return s.outTTY }

// IsStderrTTY reports whether ErrOut is a terminal (progress goes there).
func (s *IOStreams) IsStderrTTY() bool { return s.errTTY }

// SetStdoutTTY overrides terminal detection for Out, for tests.
func (s *IOStreams) SetStdoutTTY(v bool) { s.outTTY = v }

// SetStderrTTY overrides terminal detection for ErrOut, for tests.
func (s *IOStreams) SetStderrTTY(v bool) { s.errTTY = v }
