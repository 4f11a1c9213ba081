// Package app builds kplan's root command, runs it, and turns errors into
// exit codes. It is the only place the process's exit status is decided.
package app

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/kplan-dev/kplan/internal/cmdutil"
	"github.com/kplan-dev/kplan/internal/errkind"
	"github.com/kplan-dev/kplan/internal/iostreams"
)

// version is set at link time: -ldflags "-X github.com/kplan-dev/kplan/internal/app.version=v1.2.3".
var version = ""

// Version returns kplan's version: the link-time value, else the module
// version from the build info, else "dev".
func Version() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

// Main runs kplan with the process's arguments and streams and returns the
// exit code.
func Main() int {
	tuneGC()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	f := &cmdutil.Factory{IOStreams: iostreams.System(), Version: Version(), Now: time.Now}
	return Run(ctx, f, os.Args[1:])
}

// Run executes kplan with args and returns the exit code; errors are printed
// to f.IOStreams.ErrOut as one line.
func Run(ctx context.Context, f *cmdutil.Factory, args []string) int {
	root, stopProfile := newRootCmd(f)
	return execute(ctx, f, root, stopProfile, args)
}

// execute runs root with args, finishes a --cpu-profile, prints the error
// and maps it to the exit code by its type.
func execute(ctx context.Context, f *cmdutil.Factory, root *cobra.Command, stopProfile func() error, args []string) int {
	if args == nil {
		// cobra reads os.Args for nil args: in a test, the test binary's
		// own command line. No args means none.
		args = []string{}
	}
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if perr := stopProfile(); err == nil {
		err = perr
	}
	if err == nil {
		return cmdutil.ExitOK
	}
	if !errors.Is(err, errkind.ErrSilent) {
		fmt.Fprintf(f.IOStreams.ErrOut, "kplan: %s\n", oneLine(err.Error()))
	}
	return cmdutil.ExitCode(err)
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\n", " ")), " ")
}

// NewRootCmd returns the kplan command tree.
func NewRootCmd(f *cmdutil.Factory) *cobra.Command {
	root, _ := newRootCmd(f)
	return root
}

// newRootCmd returns the command tree and the function that finishes a
// --cpu-profile, to call once the command has run (even when it failed).
func newRootCmd(f *cmdutil.Factory) (*cobra.Command, func() error) {
	root := &cobra.Command{
		Use:   "kplan <command> [flags]",
		Short: "Size, audit, rebalance and fault-test Apache Kafka clusters",
		Long: `kplan sizes topics from first principles, audits where a layout skews broker
load, plans the fewest replica moves that fix it, and measures what really
happens when a leader broker dies.

` + cmdutil.ExitCodesHelp,
		Example: `  $ kplan size --plan plans/raptis-prototype.yaml
  $ kplan size --throughput 100MB/s --consumers 40 --replication-factor 3 --max-brokers 16 -o json`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       f.Version,
	}
	root.SetIn(f.IOStreams.In)
	root.SetOut(f.IOStreams.Out)
	root.SetErr(f.IOStreams.ErrOut)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		return errkind.Wrap(errkind.Usage, "", err)
	})
	root.SetVersionTemplate("kplan {{.Version}}\n")
	stopProfile := addProfileFlag(root)

	for _, c := range verbs(f) {
		root.AddCommand(c)
	}
	root.AddCommand(newVersionCmd(f, nil))
	// cobra adds these on Execute; adding them now lets typeUsageErrors
	// reach them too (cobra then keeps the ones it finds).
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	typeUsageErrors(root)
	hideGroupUseLine(root)
	return root, stopProfile
}

// gcPercent is kplan's garbage collector target when GOGC is not set: the
// heap may grow to five times its live data between collections instead of
// twice. kplan is a batch command whose big inputs (a 2M-partition layout)
// stay live until it exits, so the default target spends a large part of
// the run re-scanning them; see docs/BENCHMARKS.md ("GOGC") for the
// figures. GOGC in the environment wins, as for any Go program.
const gcPercent = 400

// tuneGC sets gcPercent unless GOGC is set.
func tuneGC() {
	if _, ok := os.LookupEnv("GOGC"); !ok {
		debug.SetGCPercent(gcPercent)
	}
}
