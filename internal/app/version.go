package app

import (
	"context"
	"fmt"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kplan-dev/kplan/internal/cmdutil"
	"github.com/kplan-dev/kplan/internal/iostreams"
	"github.com/kplan-dev/kplan/internal/report"
)

// VersionSchema versions the JSON of `kplan version`.
const VersionSchema = "kplan.version/v1"

// VersionOptions are the parsed flags of `kplan version`.
type VersionOptions struct {
	IO     *iostreams.IOStreams
	Format report.Format
	// Info is what to print; the command fills it from the build.
	Info VersionInfo
}

// VersionInfo is the JSON of `kplan version`.
type VersionInfo struct {
	Schema string `json:"schema"`
	// Version is kplan's version.
	Version string `json:"version"`
	// Go is the Go toolchain kplan was built with ("" when unknown).
	Go string `json:"go,omitempty"`
	// FranzGo is the franz-go module version ("" when unknown).
	FranzGo string `json:"franz_go,omitempty"`
}

// buildInfo returns the versions kplan was built with.
func buildInfo(version string) VersionInfo {
	v := VersionInfo{Schema: VersionSchema, Version: version}
	if bi, ok := debug.ReadBuildInfo(); ok {
		v.Go = strings.TrimPrefix(bi.GoVersion, "go")
		for _, d := range bi.Deps {
			if d.Path == "github.com/twmb/franz-go" {
				v.FranzGo = d.Version
			}
		}
	}
	return v
}

func newVersionCmd(f *cmdutil.Factory, runF func(context.Context, *VersionOptions) error) *cobra.Command {
	opts := &VersionOptions{IO: f.IOStreams}
	var out cmdutil.OutputFlag
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print kplan's version and the versions it was built with",
		Example: `  $ kplan version
  $ kplan version -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var err error
			if opts.Format, err = out.Format(); err != nil {
				return err
			}
			opts.Info = buildInfo(f.Version)
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runVersion(opts)
		},
	}
	cmdutil.AddOutputFlag(cmd, &out)
	return cmd
}

// runVersion prints the versions: as lines "kplan X", "go Y", "franz-go Z"
// in a table, as a document otherwise.
func runVersion(opts *VersionOptions) error {
	v := opts.Info
	if opts.Format != report.Table {
		return report.Render(opts.IO.Out, opts.Format, v, v.doc)
	}
	for _, r := range v.rows() {
		fmt.Fprintf(opts.IO.Out, "%s %s\n", r[0], r[1])
	}
	return nil
}

func (v VersionInfo) rows() [][]string {
	rows := [][]string{{"kplan", v.Version}}
	if v.Go != "" {
		rows = append(rows, []string{"go", v.Go})
	}
	if v.FranzGo != "" {
		rows = append(rows, []string{"franz-go", v.FranzGo})
	}
	return rows
}

func (v VersionInfo) doc() report.Document {
	return report.Document{Title: "kplan " + v.Version, Sections: []report.Section{{Header: []string{"COMPONENT", "VERSION"}, Rows: v.rows()}}}
}
