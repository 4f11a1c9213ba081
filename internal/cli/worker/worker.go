// Package worker is `kplan worker`: one producing process of a distributed
// chaos run (internal/chaos.RunWorker), started by an operator, a script
// or a Kubernetes Indexed Job next to the coordinator's `kplan chaos
// --workers N`.
package worker

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kplan-dev/kplan/internal/chaos"
	"github.com/kplan-dev/kplan/internal/chaos/dist"
	"github.com/kplan-dev/kplan/internal/cli/target"
	"github.com/kplan-dev/kplan/internal/cmdutil"
	"github.com/kplan-dev/kplan/internal/errkind"
	"github.com/kplan-dev/kplan/internal/iostreams"
)

// IndexEnv is the environment variable --index defaults to: the index a
// Kubernetes Indexed Job gives each of its pods.
const IndexEnv = "JOB_COMPLETION_INDEX"

// Options are `kplan worker`'s options once parsed.
type Options struct {
	IO      *iostreams.IOStreams
	Version string
	Now     func() time.Time
	// Worker is the run to join (its Conn set from the connection flags).
	Worker chaos.Worker
}

type rawFlags struct {
	target    target.Options
	index     int
	clockSkew time.Duration
}

// NewCmdWorker returns `kplan worker`. runF replaces the run function in
// tests; getenv reads the environment (nil: os.Getenv).
func NewCmdWorker(f *cmdutil.Factory, runF func(context.Context, *Options) error, getenv func(string) string) *cobra.Command {
	if getenv == nil {
		getenv = os.Getenv
	}
	opts := &Options{IO: f.IOStreams, Version: f.Version, Now: f.Now}
	var raw rawFlags
	cmd := &cobra.Command{
		Use:   "worker --run ID --bootstrap-server HOST:PORT [--index I] [flags]",
		Short: "Produce for a distributed chaos run coordinated through Kafka",
		Long: `Join a distributed chaos run as one of its N workers. The coordinator
(kplan chaos --workers N --run ID) creates the run's topics
kplan-run-ID-control and kplan-run-ID-results and publishes the plan there:
which partitioners write which topics, at what rate per worker, and when
each phase starts (absolute times on the coordinator's clock).

The worker reads the plan, produces with kplan's experiment producers from
the first phase on, switches phases at their start times, and after each
phase publishes per producer: records and bytes per broker, the produce
latency histogram (HdrHistogram's encoding) and the sequence numbers
acknowledged. Every record carries the run id, the worker's producer index
and its sequence number, so the coordinator's checking consumer counts
loss and duplicates over every worker's records.

A phase the worker learns of later than its start plus the plan's guard
(or joins after) is reported missed with the reason; the coordinator names
it. The worker exits when the run ends (0), when the coordinator's
heartbeat misses the plan's deadline (1), or on Ctrl-C after publishing
what it measured. It creates and deletes no topic.

A worker may start before its coordinator: it waits --join-timeout for
the plan. --index defaults to $JOB_COMPLETION_INDEX.`,
		Example: `  $ kplan worker --run r42 --index 0 --bootstrap-server k1:9092
  $ kplan worker --run r42 --index 2 --bootstrap-server k1:9092 --command-config client.properties`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := raw.complete(cmd, opts, getenv); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runWorker(cmd.Context(), opts)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&opts.Worker.Run, "run", "", "the run's id, as the coordinator printed it")
	fs.IntVar(&raw.index, "index", 0, "this worker's index, 0 to N-1 (default $"+IndexEnv+")")
	fs.DurationVar(&opts.Worker.JoinTimeout, "join-timeout", 10*time.Minute, "wait this long for the coordinator's plan")
	fs.DurationVar(&raw.clockSkew, "clock-skew", 0, "pretend this machine's clock is off by this much (to test the clock correction)")
	_ = fs.MarkHidden("clock-skew")
	raw.target.AddFlags(fs, target.Conn, target.Notes{})
	return cmd
}

// complete parses and checks the flags.
func (r *rawFlags) complete(cmd *cobra.Command, opts *Options, getenv func(string) string) error {
	if opts.Worker.Run == "" {
		return errkind.Usagef("", "--run: required (the id the coordinator printed)")
	}
	if err := dist.CheckRunID(opts.Worker.Run); err != nil {
		return cmdutil.SpellFlag(err, nil)
	}
	idx := r.index
	if !cmd.Flags().Changed("index") {
		env := getenv(IndexEnv)
		if env == "" {
			return errkind.Usagef("", "--index: required (or $%s, as a Kubernetes Indexed Job sets it)", IndexEnv)
		}
		n, err := strconv.Atoi(strings.TrimSpace(env))
		if err != nil {
			return errkind.Usagef("", "$%s: %q is not an index", IndexEnv, env)
		}
		idx = n
	}
	if idx < 0 || idx >= dist.MaxProducers {
		return errkind.Usagef("", "--index: %d, want 0 to %d", idx, dist.MaxProducers-1)
	}
	opts.Worker.Index = idx
	if skew := r.clockSkew; skew != 0 {
		now := opts.Now
		if now == nil {
			now = time.Now
		}
		opts.Now = func() time.Time { return now().Add(skew) }
	}
	if opts.Worker.JoinTimeout <= 0 {
		return errkind.Usagef("", "--join-timeout: want a positive duration, got %s", opts.Worker.JoinTimeout)
	}
	if !r.target.Live() {
		return errkind.Usagef("", "--bootstrap-server: required")
	}
	if err := r.target.Validate(); err != nil {
		return err
	}
	conn, err := r.target.ConnOptions()
	if err != nil {
		return err
	}
	opts.Worker.Conn = conn
	return nil
}

func runWorker(ctx context.Context, opts *Options) error {
	w := opts.Worker
	w.Version = opts.Version
	w.Now = opts.Now
	errOut := opts.IO.ErrOut
	w.Log = func(s string) { fmt.Fprintf(errOut, "worker %d: %s\n", w.Index, s) }
	out, err := chaos.RunWorker(ctx, &w)
	if out != nil {
		fmt.Fprintf(opts.IO.Out, "worker %d of %d, run %s: %d records sent; phases reported: %s; missed: %s\n",
			w.Index, out.Workers, w.Run, out.Sent, list(out.Reported), list(out.Missed))
	}
	if f := errkind.FieldOf(err); f == chaos.FieldWorkerIndex || f == chaos.FieldWorkerRun {
		return cmdutil.SpellFlag(err, nil)
	}
	// Other fields are the plan's ("plan.acks"): the coordinator's, not a
	// flag of this command.
	return err
}

func list(xs []string) string {
	if len(xs) == 0 {
		return "none"
	}
	return strings.Join(xs, ", ")
}

// PrintCommands prints the kplan worker command of each of n workers of
// run (--workers-on none), after a line naming verb (chaos, measure): the
// operator starts them, before or after that line, on any machine that
// reaches the cluster.
func PrintCommands(w io.Writer, verb, run string, n int, seeds []string, commandConfig string) {
	fmt.Fprintf(w, "%s: run %s: waiting for %d workers; start each with:\n", verb, run, n)
	cc := ""
	if commandConfig != "" {
		cc = " --command-config " + ShellQuote(commandConfig)
	}
	bs := "" // none: the command config's bootstrap.servers
	if len(seeds) > 0 {
		bs = " --bootstrap-server " + ShellQuote(strings.Join(seeds, ","))
	}
	for i := range n {
		fmt.Fprintf(w, "  kplan worker --run %s --index %d%s%s\n", run, i, bs, cc)
	}
}

// ShellQuote quotes s for a POSIX shell when it holds anything but
// letters, digits and -_.,:/@=.
func ShellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.,:/@=") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
