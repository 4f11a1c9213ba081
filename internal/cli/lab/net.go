package lab

import (
	"context"
	"fmt"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/kplan-dev/kplan/internal/cmdutil"
	"github.com/kplan-dev/kplan/internal/errkind"
	"github.com/kplan-dev/kplan/internal/iostreams"
	"github.com/kplan-dev/kplan/internal/localkafka"
	"github.com/kplan-dev/kplan/internal/units"
)

// NetOptions are the parsed flags of `kplan lab net`.
type NetOptions struct {
	IO  *iostreams.IOStreams
	Dir string
	// Path is --broker N or --clients; Set is false with --clear alone.
	Path    localkafka.NetPath
	HasPath bool
	Cond    localkafka.Condition
	Clear   bool
	Timeout time.Duration
}

// NewCmdNet returns `kplan lab net`. runF replaces the run function in
// tests.
func NewCmdNet(f *cmdutil.Factory, runF func(context.Context, *NetOptions) error) *cobra.Command {
	opts := &NetOptions{IO: f.IOStreams}
	var broker int32
	var clients bool
	var delay, jitter, loss, rate string
	cmd := &cobra.Command{
		Use:   "net (--broker N | --clients) [--delay D] [--jitter J] [--loss P] [--rate R] | --clear",
		Short: "Delay, drop or slow a broker's traffic or the clients' path to the brokers",
		Long: `Put a network condition on one path of the lab, as seed 003's testbed did with
tc netem: --broker N is every packet broker N's JVM sends (to clients, to
the other brokers, to the controllers); --clients is every packet a process
that is not a lab JVM (kplan's producers and consumers, Kafka's tools)
sends to a broker's client port: the broker-bound direction only.

--delay holds each packet (with --jitter, for delay±jitter, uniform, never
reordered), --loss drops a share at random (100% is a partition), --rate
limits the path with an HTB class on lo. A new condition on a path replaces
its old one; --clear removes one path's (with --broker or --clients) or all.
` + "`kplan lab status`" + ` shows the conditions in force; ` + "`kplan lab down`" + ` removes them.

Needs root, iptables and tc, and a lab without --broker-bandwidth. Where
the kernel has tc netem, delay, jitter and loss are netem qdiscs; without
it (CONFIG_NET_SCH_NETEM unset), loss is iptables' statistic match and
delay an NFQUEUE that a kplan process (` + "`kplan lab netd`" + `) serves. Every
rule lives in the lab's own iptables chain KPLAN-<hash>.`,
		Example: `  $ sudo kplan lab net --clients --delay 30ms --jitter 5ms
  $ sudo kplan lab net --broker 2 --loss 5%
  $ sudo kplan lab net --broker 2 --loss 100%
  $ sudo kplan lab net --broker 3 --rate 10MB/s
  $ sudo kplan lab net --clear --clients
  $ sudo kplan lab net --clear`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := opts.parse(cmd, broker, clients, delay, jitter, loss, rate); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runNet(cmd.Context(), opts)
		},
	}
	addDirFlag(cmd, &opts.Dir)
	fs := cmd.Flags()
	fs.Int32Var(&broker, "broker", 0, "the path of broker N: every packet its JVM sends")
	fs.BoolVar(&clients, "clients", false, "the clients' path: packets from non-lab processes to the brokers' client ports")
	fs.StringVar(&delay, "delay", "", "hold each packet this long (e.g. 30ms), at most 10s")
	fs.StringVar(&jitter, "jitter", "", "vary the delay uniformly by up to this much (e.g. 5ms); needs --delay")
	fs.StringVar(&loss, "loss", "", "drop this share of packets at random (e.g. 5%; 100% is a partition)")
	fs.StringVar(&rate, "rate", "", "limit the path to this rate (e.g. 10MB/s)")
	fs.BoolVar(&opts.Clear, "clear", false, "remove the path's condition (with --broker or --clients), or every condition")
	fs.DurationVar(&opts.Timeout, "timeout", 30*time.Second, "give up when the condition is not in force within this time")
	return cmd
}

// parse checks the flags and fills opts; errors name the flag.
func (o *NetOptions) parse(cmd *cobra.Command, broker int32, clients bool, delay, jitter, loss, rate string) error {
	fs := cmd.Flags()
	if fs.Changed("broker") && clients {
		return errkind.Usagef("", "--broker and --clients: give one path")
	}
	switch {
	case fs.Changed("broker"):
		if broker < 1 {
			return errkind.Usagef("", "--broker: want a broker id (1 or more), got %d", broker)
		}
		o.Path, o.HasPath = localkafka.BrokerPath(broker), true
	case clients:
		o.Path, o.HasPath = localkafka.ClientsPath(), true
	}
	var err error
	if delay != "" {
		if o.Cond.Delay, err = units.ParseDuration(delay); err != nil {
			return errkind.Usagef("", "--delay: %w", err)
		}
	}
	if jitter != "" {
		if o.Cond.Jitter, err = units.ParseDuration(jitter); err != nil {
			return errkind.Usagef("", "--jitter: %w", err)
		}
	}
	if loss != "" {
		if o.Cond.Loss, err = localkafka.ParseLoss(loss); err != nil {
			return errkind.Usagef("", "--loss: %w", err)
		}
	}
	if rate != "" {
		if o.Cond.Rate, err = units.ParseRate(rate); err != nil {
			return errkind.Usagef("", "--rate: %w", err)
		}
	}
	if o.Timeout <= 0 {
		return errkind.Usagef("", "--timeout: want a positive duration, got %s", o.Timeout)
	}
	if o.Clear {
		if !o.Cond.Zero() {
			return errkind.Usagef("", "--clear: takes no --delay, --jitter, --loss or --rate")
		}
		return nil
	}
	if !o.HasPath {
		return errkind.Usagef("", "--broker: give a path, --broker N or --clients (or --clear)")
	}
	if err := o.Cond.Validate(); err != nil {
		return cmdutil.SpellFlag(err, nil)
	}
	return nil
}

func runNet(ctx context.Context, opts *NetOptions) error {
	s, err := localkafka.Load(opts.Dir)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	switch {
	case opts.Clear && opts.HasPath:
		err = s.ClearNetCondition(ctx, opts.Path)
	case opts.Clear:
		err = s.ClearNetConditions(ctx)
	default:
		err = s.SetNetCondition(ctx, opts.Path, opts.Cond)
	}
	if err != nil {
		return cmdutil.SpellFlag(err, nil)
	}
	nc := s.NetConditions()
	if nc == nil {
		fmt.Fprintln(opts.IO.ErrOut, "no network conditions in force")
		return nil
	}
	for _, c := range nc.Conds {
		fmt.Fprintf(opts.IO.ErrOut, "%s: %s\n", c.Path, c.Condition)
	}
	fmt.Fprintf(opts.IO.ErrOut, "mechanism: %s (iptables chain %s)\n", nc.Mechanism, nc.Chain)
	return nil
}

// NewCmdNetd returns the hidden `kplan lab netd`: the process that holds
// queued packets for their delay (started by `kplan lab net`).
func NewCmdNetd(f *cmdutil.Factory) *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:     "netd",
		Short:   "Serve the lab's delay queues (started by kplan lab net)",
		Example: `  $ kplan lab netd --dir /tmp/kplan-lab-0`,
		Hidden:  true,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return RunNetd(cmd.Context(), dir)
		},
	}
	addDirFlag(cmd, &dir)
	return cmd
}

// RunNetd runs netd for the lab in dir until SIGTERM or SIGINT: it says
// "ready" on stdout once it serves its queues, then closes stdout.
func RunNetd(ctx context.Context, dir string) error {
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	return localkafka.RunNetd(ctx, dir, localkafka.NetdReady)
}
