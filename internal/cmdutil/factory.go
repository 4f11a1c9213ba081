package cmdutil

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/kplan-dev/kplan/internal/errkind"
	"github.com/kplan-dev/kplan/internal/iostreams"
	"github.com/kplan-dev/kplan/internal/report"
)

// Factory carries what commands need from the outside world, injected so
// tests can replace it: streams, the version string and the clock.
type Factory struct {
	IOStreams *iostreams.IOStreams
	// Version is kplan's version, e.g. "0.1.0" or "dev".
	Version string
	// Now returns the current time; tests pin it.
	Now func() time.Time
}

// NewTestFactory returns a Factory over test buffers with a fixed clock.
func NewTestFactory() *Factory {
	ios, _, _, _ := iostreams.Test()
	return &Factory{
		IOStreams: ios,
		Version:   "test",
		Now:       func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) },
	}
}

// OutputFlag is the -o/--output flag every verb shares.
type OutputFlag struct {
	raw string
}

// AddOutputFlag registers -o/--output on cmd.
func AddOutputFlag(cmd *cobra.Command, o *OutputFlag) {
	cmd.Flags().StringVarP(&o.raw, "output", "o", "table", "output format: table, json, yaml or markdown")
	_ = cmd.RegisterFlagCompletionFunc("output", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return []string{"table", "json", "yaml", "markdown"}, cobra.ShellCompDirectiveNoFileComp
	})
}

// Format validates and returns the chosen format (an errkind.Usage error
// names the flag).
func (o *OutputFlag) Format() (report.Format, error) {
	f, err := report.ParseFormat(o.raw)
	if err != nil {
		return "", errkind.Usagef("", "--output: %w", err)
	}
	return f, nil
}

// Raw returns the value as given, before validation (for verbs that accept
// an extra format such as csv).
func (o *OutputFlag) Raw() string { return o.raw }

// Set sets the raw value, for tests and plan files.
func (o *OutputFlag) Set(s string) { o.raw = s }
