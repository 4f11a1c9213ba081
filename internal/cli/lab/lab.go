// Package lab implements `kplan lab`: a real Kafka KRaft cluster on this
// machine, for integration tests and for rehearsing reassignments and
// broker losses.
//
// Each subcommand is Options + NewCmdX(f, runF) + runX(ctx, opts): the
// command parses flags into the options, localkafka validates them
// (Config.Validate, once for the CLI and every other caller), and the run
// function does the work.
package lab

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	chaoslab "github.com/kplan-dev/kplan/internal/chaos/lab"
	"github.com/kplan-dev/kplan/internal/cmdutil"
	"github.com/kplan-dev/kplan/internal/errkind"
	"github.com/kplan-dev/kplan/internal/iostreams"
	"github.com/kplan-dev/kplan/internal/kafka"
	"github.com/kplan-dev/kplan/internal/localkafka"
	"github.com/kplan-dev/kplan/internal/units"
)

// NewCmdLab returns `kplan lab` and its subcommands.
func NewCmdLab(f *cmdutil.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "lab <command>",
		Short: "Run a real Kafka KRaft cluster on this machine",
		Long: `Run a real Apache Kafka cluster (KRaft, Kafka's own jars from Maven Central)
on loopback: to test kplan against real brokers, and to rehearse a
reassignment or a broker loss before doing it in production.

The lab's state (pids, ports, directories, cluster id) lives in --dir, so
every subcommand works from any later process. Fetch the jars once with
` + "`make kafka`" + ` or point --kafka-jars at a directory of Kafka's jars.`,
		Example: `  $ kplan lab up --brokers 3
  $ kplan lab status
  $ kplan lab kill broker-3
  $ kplan lab restart broker-3
  $ kplan lab elect-preferred
  $ kplan lab down`,
	}
	cmd.AddCommand(NewCmdUp(f, nil), NewCmdStatus(f, nil), NewCmdKill(f, nil), NewCmdRestart(f, nil), NewCmdElect(f, nil), NewCmdDown(f, nil), NewCmdNet(f, nil), NewCmdNetd(f))
	return cmd
}

// addDirFlag registers --dir on a subcommand. Each subcommand has its own,
// so that it stands alone; `kplan lab --dir D status` still parses, as
// cobra hands flags before the subcommand's name to the subcommand.
func addDirFlag(cmd *cobra.Command, dir *string) {
	cmd.Flags().StringVar(dir, "dir", localkafka.DefaultDir(), "lab directory (state, configs, logs, data); $KPLAN_LAB_DIR sets the default")
}

// UpOptions are the parsed flags of `kplan lab up`.
type UpOptions struct {
	IO *iostreams.IOStreams
	// Config is the lab to start; Config.JarsDir is --kafka-jars as given
	// (empty: look for them).
	Config  localkafka.Config
	Timeout time.Duration
	// Ready makes the check that the brokers answer, through the lab's
	// client properties ("" for a plaintext lab): kafka.BrokersReady.
	Ready func(clientConfig string) localkafka.Ready
	// Now is the clock for the "ready in" line.
	Now func() time.Time
}

// NewCmdUp returns `kplan lab up`. runF replaces the run function in tests.
func NewCmdUp(f *cmdutil.Factory, runF func(context.Context, *UpOptions) error) *cobra.Command {
	opts := &UpOptions{IO: f.IOStreams, Ready: readyCheck, Now: f.Now}
	var bandwidth string
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Start a lab cluster and wait until every broker answers",
		Long: `Start a lab cluster: write each node's server.properties, format its storage,
start one JVM per node and wait until every broker answers. Up to 5 brokers
every node is a combined broker and controller; beyond that 3 dedicated
controllers (ids 9001-9003) join. It prints the bootstrap servers on stdout.

--broker-bandwidth and --broker-cpu give each broker a capacity of its own
(a network namespace with a tc limit, a cgroup CPU quota); both need root.
--loopback-per-broker gives broker-N the address 127.0.0.(1+N), so that each
broker advertises a host of its own (as pods on Kubernetes have IPs).

--security secures the client listener, inter-broker traffic included:
sasl_ssl (TLS and SCRAM-SHA-512), ssl (TLS with client certificates, mTLS)
or sasl_plaintext (SCRAM without TLS). kplan makes a CA and one certificate
per node with Go's crypto (PEM, in DIR/tls), SCRAM users with random
passwords at format time, and a client.properties (mode 0600) that kplan's
--command-config and Kafka's own tools accept; its path is printed on
stderr and shown by ` + "`kplan lab status`" + `. The controllers talk over mTLS in
every secured mode (SCRAM credentials live in the metadata log they serve).

Each phase is a line on stderr. Interrupted (Ctrl-C, SIGTERM) or failed, up
stops every JVM it started and removes the namespaces and cgroups it made;
the line says in which phase and what it removed (exit 1), and lab.json
stays, claiming nothing running.`,
		Example: `  $ kplan lab up
  $ kplan lab up --brokers 6 --base-port 29092 --dir /tmp/big-lab
  $ kplan lab up --kafka-jars ~/kafka_2.13-4.3.1/libs --heap-mb 512
  $ kplan lab up --loopback-per-broker
  $ kplan lab up --brokers 5 --racks 2
  $ kplan lab up --security sasl_ssl
  $ sudo kplan lab up --broker-bandwidth 5MB/s --broker-cpu 0.5`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if bandwidth != "" {
				bps, err := units.ParseRate(bandwidth)
				if err != nil {
					return errkind.Usagef("", "--broker-bandwidth: %w", err)
				}
				opts.Config.BandwidthBps = bps
			}
			if err := opts.Config.Validate(); err != nil {
				// localkafka's fields are the flags' names.
				return cmdutil.SpellFlag(err, nil)
			}
			if opts.Timeout <= 0 {
				return errkind.Usagef("", "--timeout: want a positive duration, got %s", opts.Timeout)
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runUp(cmd.Context(), opts)
		},
	}
	fs := cmd.Flags()
	addDirFlag(cmd, &opts.Config.Dir)
	fs.IntVar(&opts.Config.Brokers, "brokers", 3, fmt.Sprintf("number of brokers, 1 to %d (combined broker+controller up to %d; beyond that 3 dedicated controllers)", localkafka.MaxBrokers, localkafka.MaxCombined))
	fs.StringVar(&opts.Config.JarsDir, "kafka-jars", "", "directory of Kafka's jars (default: $KPLAN_KAFKA_JARS, then ./.cache/kafka-*/libs)")
	fs.IntVar(&opts.Config.BasePort, "base-port", 19092, "client port of broker-1; broker-N listens on base+10*(N-1), its controller on the next port")
	fs.BoolVar(&opts.Config.FastFailover, "fast-failover", true, "broker.session.timeout.ms=3000 and heartbeat 500ms, so a killed broker is fenced in about 3s")
	fs.StringVar(&bandwidth, "broker-bandwidth", "", "limit each broker's link to this rate (e.g. 5MB/s): every broker runs in its own network namespace with a tc tbf limit; needs root and iproute2")
	fs.Float64Var(&opts.Config.CPUQuota, "broker-cpu", 0, "cap each broker JVM at this fraction of one CPU (e.g. 0.25) through a cgroup CFS quota, 0 for no cap; needs root and a cgroup cpu controller")
	fs.IntVar(&opts.Config.Racks, "racks", localkafka.DefaultRacks, "spread the brokers over this many racks, round robin (broker.rack rack-a, rack-b, ...)")
	fs.BoolVar(&opts.Config.Loopback, "loopback-per-broker", false, "broker-N listens on and advertises 127.0.0.(1+N) instead of 127.0.0.1 (controllers stay on 127.0.0.1), so each broker has a host of its own, as pods have IPs")
	fs.StringVar(&opts.Config.Security, "security", localkafka.SecurityPlaintext, "client listener security: "+strings.Join(localkafka.SecurityModes, ", ")+" (TLS material, SCRAM users and a client.properties are made in --dir)")
	fs.IntVar(&opts.Config.HeapMB, "heap-mb", localkafka.DefaultHeapMB, "heap of each broker JVM in MiB")
	fs.DurationVar(&opts.Timeout, "timeout", 120*time.Second, "give up when brokers are not ready within this time")
	return cmd
}

// runUp starts the lab and prints its bootstrap servers; each phase is a
// line on stderr. Interrupted (SIGINT or SIGTERM cancel ctx), it says in
// one line in which phase and what it stopped and removed (exit 1).
func runUp(ctx context.Context, opts *UpOptions) error {
	signalled := ctx
	ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	start := opts.Now()
	clientConfig := ""
	if localkafka.Secured(opts.Config.Security) {
		dir, err := filepath.Abs(opts.Config.Dir)
		if err != nil {
			return err
		}
		clientConfig = localkafka.ClientConfigPath(dir)
	}
	ready := opts.Ready
	if ready == nil {
		ready = readyCheck
	}
	cfg := opts.Config
	cfg.Progress = func(p localkafka.Phase) { fmt.Fprintf(opts.IO.ErrOut, "lab up: %s\n", p) }
	s, err := localkafka.Up(ctx, cfg, ready(clientConfig))
	var ue *localkafka.UpError
	if err != nil && signalled.Err() != nil && errors.As(err, &ue) {
		return upInterrupted(signalled, ue)
	}
	if err != nil {
		return cmdutil.SpellFlag(err, nil)
	}
	fmt.Fprintf(opts.IO.ErrOut, "lab up: %d brokers ready in %.1fs (dir %s)\n", len(s.Brokers()), opts.Now().Sub(start).Seconds(), s.Dir)
	if sec := s.Security; sec != nil {
		fmt.Fprintf(opts.IO.ErrOut, "client properties (%s, mode 0600): %s\n", describeSecurity(sec), sec.ClientConfig)
		if sec.ClientConfig256 != "" {
			fmt.Fprintf(opts.IO.ErrOut, "SCRAM-SHA-256 user %s: %s\n", localkafka.ClientUser256, sec.ClientConfig256)
		}
		fmt.Fprintf(opts.IO.ErrOut, "  $ kplan audit --bootstrap-server %s --command-config %s\n", s.Bootstrap()[0], sec.ClientConfig)
	}
	fmt.Fprintln(opts.IO.Out, strings.Join(s.Bootstrap(), ","))
	return nil
}

// upInterrupted is the one line of a `lab up` that a signal cut short:
// the phase, what was stopped and removed, and whether anything is left.
func upInterrupted(signalled context.Context, ue *localkafka.UpError) error {
	during := ""
	if ue.Phase != "" {
		during = " while " + string(ue.Phase)
	}
	if ue.CleanupErr != nil {
		return errkind.New(errkind.Runtime, "", "lab up interrupted (%w)%s; cleaned up: %s; but cleaning up failed: %w; run kplan lab down --dir %s",
			context.Cause(signalled), during, ue.Cleaned, ue.CleanupErr, ue.Dir)
	}
	return errkind.New(errkind.Runtime, "", "lab up interrupted (%w)%s; cleaned up: %s; nothing of the lab runs (its files stay in %s, which the next lab up clears)",
		context.Cause(signalled), during, ue.Cleaned, ue.Dir)
}

// readyCheck is the readiness check through clientConfig ("" for none).
func readyCheck(clientConfig string) localkafka.Ready { return kafka.BrokersReady(clientConfig) }

// describeSecurity says how a client authenticates to a secured lab.
func describeSecurity(sec *localkafka.Security) string {
	switch sec.Mode {
	case localkafka.SecuritySSL:
		return sec.Protocol + ", client certificate"
	default:
		return sec.Protocol + ", SCRAM-SHA-512 user " + localkafka.ClientUser
	}
}

// BrokerOptions are the parsed arguments of `kplan lab kill` and
// `kplan lab restart`.
type BrokerOptions struct {
	IO     *iostreams.IOStreams
	Dir    string
	Broker int32
	// Timeout bounds the wait for a restarted broker (restart only).
	Timeout time.Duration
	// Ready makes the check that the brokers answer, through the lab's
	// client properties (restart only).
	Ready func(clientConfig string) localkafka.Ready
}

// parseBroker fills opts.Broker from an argument such as "broker-3".
func (o *BrokerOptions) parseBroker(arg string) error {
	id, err := localkafka.ParseBroker(arg)
	if err != nil {
		return err
	}
	o.Broker = id
	return nil
}

// NewCmdKill returns `kplan lab kill`. runF replaces the run function in
// tests.
func NewCmdKill(f *cmdutil.Factory, runF func(context.Context, *BrokerOptions) error) *cobra.Command {
	opts := &BrokerOptions{IO: f.IOStreams}
	cmd := &cobra.Command{
		Use:   "kill broker-N",
		Short: "Kill a broker's JVM with SIGKILL",
		Long: `Kill a broker's JVM with SIGKILL, as a crashed machine would die: no clean
shutdown, no leadership handed over. Its partitions elect new leaders once
the controller fences it (about 3s with --fast-failover).`,
		Example: `  $ kplan lab kill broker-3
  $ kplan lab kill broker-1 --dir /tmp/big-lab`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.parseBroker(args[0]); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runKill(opts)
		},
	}
	addDirFlag(cmd, &opts.Dir)
	return cmd
}

func runKill(opts *BrokerOptions) error {
	s, n, err := labBroker(opts.Dir, opts.Broker)
	if err != nil {
		return err
	}
	if err := s.Kill(n.ID); err != nil {
		return err
	}
	fmt.Fprintf(opts.IO.ErrOut, "killed broker-%d (pid %d)\n", n.ID, n.PID)
	return nil
}

// labBroker loads the lab in dir and finds broker id.
func labBroker(dir string, id int32) (*localkafka.State, *localkafka.Node, error) {
	s, err := localkafka.Load(dir)
	if err != nil {
		return nil, nil, err
	}
	n, err := s.Node(id)
	if err != nil {
		return nil, nil, err
	}
	return s, n, nil
}

// NewCmdRestart returns `kplan lab restart`. runF replaces the run function
// in tests.
func NewCmdRestart(f *cmdutil.Factory, runF func(context.Context, *BrokerOptions) error) *cobra.Command {
	opts := &BrokerOptions{IO: f.IOStreams, Ready: readyCheck}
	cmd := &cobra.Command{
		Use:   "restart broker-N",
		Short: "Start a killed broker again and wait until it answers",
		Long: `Start a killed broker again, with its old data, and wait until every broker
answers. Its partitions catch up and rejoin the ISR; leadership stays where
the failover put it until ` + "`kplan lab elect-preferred`" + `.`,
		Example: `  $ kplan lab restart broker-3
  $ kplan lab restart broker-3 --timeout 3m`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.parseBroker(args[0]); err != nil {
				return err
			}
			if opts.Timeout <= 0 {
				return errkind.Usagef("", "--timeout: want a positive duration, got %s", opts.Timeout)
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runRestart(cmd.Context(), opts)
		},
	}
	addDirFlag(cmd, &opts.Dir)
	cmd.Flags().DurationVar(&opts.Timeout, "timeout", 90*time.Second, "give up when the broker is not ready within this time")
	return cmd
}

func runRestart(ctx context.Context, opts *BrokerOptions) error {
	s, n, err := labBroker(opts.Dir, opts.Broker)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	ready := opts.Ready
	if ready == nil {
		ready = readyCheck
	}
	if err := s.Restart(ctx, n.ID, ready(s.ClientConfig())); err != nil {
		return err
	}
	fmt.Fprintf(opts.IO.ErrOut, "broker-%d is back (pid %d)\n", n.ID, n.PID)
	return nil
}

// ElectOptions are the parsed flags of `kplan lab elect-preferred`.
type ElectOptions struct {
	IO      *iostreams.IOStreams
	Dir     string
	Timeout time.Duration
	// Version is kplan's version, for the client id.
	Version string
}

// NewCmdElect returns `kplan lab elect-preferred`. runF replaces the run
// function in tests.
func NewCmdElect(f *cmdutil.Factory, runF func(context.Context, *ElectOptions) error) *cobra.Command {
	opts := &ElectOptions{IO: f.IOStreams, Version: f.Version}
	cmd := &cobra.Command{
		Use:   "elect-preferred",
		Short: "Move every partition's leadership back to its preferred (first) replica",
		Long: `Run a preferred leader election for every partition of the lab, as
kafka-leader-election.sh --election-type PREFERRED --all-topic-partitions
does: each partition whose first replica is alive and in sync gets it back
as leader (after a restart, or after a reassignment).`,
		Example: `  $ kplan lab restart broker-3 && kplan lab elect-preferred
  $ kplan lab elect-preferred --dir /tmp/big-lab`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runElect(cmd.Context(), opts)
		},
	}
	addDirFlag(cmd, &opts.Dir)
	cmd.Flags().DurationVar(&opts.Timeout, "timeout", 30*time.Second, "give up when the election has not finished within this time")
	return cmd
}

func runElect(ctx context.Context, opts *ElectOptions) error {
	s, err := localkafka.Load(opts.Dir)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	conn, err := chaoslab.Conn(s, kafka.ConnOptions{})
	if err != nil {
		return err
	}
	cl, err := kafka.NewClient(conn.WithSeeds(s.Bootstrap()), opts.Version)
	if err != nil {
		return err
	}
	defer cl.Close()
	n, err := kafka.ElectPreferred(ctx, cl)
	if err != nil {
		return err
	}
	fmt.Fprintf(opts.IO.ErrOut, "preferred leaders elected for %d partitions\n", n)
	return nil
}

// DownOptions are the parsed flags of `kplan lab down`.
type DownOptions struct {
	IO    *iostreams.IOStreams
	Dir   string
	Grace time.Duration
	// Now is the clock for the "lab down in" line.
	Now func() time.Time
}

// NewCmdDown returns `kplan lab down`. runF replaces the run function in
// tests.
func NewCmdDown(f *cmdutil.Factory, runF func(context.Context, *DownOptions) error) *cobra.Command {
	opts := &DownOptions{IO: f.IOStreams, Now: f.Now}
	cmd := &cobra.Command{
		Use:   "down",
		Short: "Stop every JVM of the lab (SIGTERM, then SIGKILL after --grace)",
		Long: `Stop every JVM of the lab: SIGTERM, then SIGKILL after --grace. The network
namespaces and cgroups the lab made are removed; its files stay in --dir
for post-mortems, and the next ` + "`kplan lab up`" + ` there clears them.`,
		Example: `  $ kplan lab down
  $ kplan lab down --grace 0 --dir /tmp/big-lab`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if opts.Grace < 0 {
				return errkind.Usagef("", "--grace: want 0 or more, got %s", opts.Grace)
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runDown(opts)
		},
	}
	addDirFlag(cmd, &opts.Dir)
	cmd.Flags().DurationVar(&opts.Grace, "grace", 10*time.Second, "time to wait for a clean shutdown before SIGKILL")
	return cmd
}

func runDown(opts *DownOptions) error {
	s, err := localkafka.Load(opts.Dir)
	if err != nil {
		return err
	}
	start := opts.Now()
	if err := s.Down(opts.Grace); err != nil {
		return err
	}
	fmt.Fprintf(opts.IO.ErrOut, "lab down in %.1fs (files kept in %s)\n", opts.Now().Sub(start).Seconds(), s.Dir)
	return nil
}
