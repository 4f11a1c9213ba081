package measure

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kplan-dev/kplan/internal/chaos/killers"
	clitarget "github.com/kplan-dev/kplan/internal/cli/target"
	"github.com/kplan-dev/kplan/internal/cmdutil"
	"github.com/kplan-dev/kplan/internal/errkind"
	"github.com/kplan-dev/kplan/internal/iostreams"
	"github.com/kplan-dev/kplan/internal/measure"
	"github.com/kplan-dev/kplan/internal/measure/experiment"
	"github.com/kplan-dev/kplan/internal/report"
)

// DefaultUnavailCounts is --partitions' default: the counts seed 002's
// linear model is checked over.
const DefaultUnavailCounts = "1,10,100,1000"

// UnavailabilityOptions are `kplan measure unavailability`'s parsed
// flags: the flags of the measurement bind straight into the
// experiment.Unavailability action it configures (Counts, Repeat,
// ReplicationFactor, Broker, Topic, Keep, Yes, AllowUnavailable, the
// timeouts, Conn's --command-config and bootstrap servers, Version and
// Now); the rest is the command's own. The action's cluster, admin client
// and callbacks are set when it runs.
type UnavailabilityOptions struct {
	experiment.Unavailability

	IO *iostreams.IOStreams
	// ClusterKind is "lab" or "remote" (--bootstrap-server with a killer).
	ClusterKind string
	LabDir      string
	// Killer is a remote cluster's killer, checked; nil on the lab.
	Killer *killers.Spec

	ReportDir string
	OutPlan   string
	Format    report.Format
}

// NewCmdUnavailability returns `kplan measure unavailability`. runF
// replaces the run in tests.
func NewCmdUnavailability(f *cmdutil.Factory, runF func(*UnavailabilityOptions) error) *cobra.Command {
	var c unavailFlags
	opts := &UnavailabilityOptions{}
	cmd := &cobra.Command{
		Use:   "unavailability [--cluster lab | --bootstrap-server HOST:PORT --killer KIND --yes] [flags]",
		Short: "Time how long a killed broker's partitions stay unwritable against how many it led",
		Long: `For each count N of --partitions, create a scratch topic of N partitions all
led by one broker (explicit assignment, replication factor
--replication-factor, the victim first), wait until every replica is in
sync, kill the victim and time, per partition, from the kill until an
acks=all write to it is acknowledged again. The unavailability for N is the
time until all N partitions accepted a write; the per-partition median is
reported beside it. The broker is then restarted, the cluster waited for
until it is back in every ISR and leadership moved back, --repeat times per
count; the topic is deleted at the end (unless --keep), also on error and
Ctrl-C.

The probe: one franz-go producer, acks=all, idempotence off, one record per
partition produced right after the kill and retried every 25ms (retry
backoff and metadata min age 25ms, each request bounded by
--request-timeout) until acknowledged; a partition is available again at
its record's acknowledgement. The times are as good as that resolution.

Over every run, a least-squares line unavailability = detection + u x N is
fitted (seed 002's model: detection time plus u per partition led), with
the standard errors and 95% intervals of both, R², the residuals, and its
comparison with a constant and a quadratic (t test of the slope, F test of
the quadratic term, lack-of-fit test against the repeats' spread): the
verdict says whether the linear model holds. The plan-file line for ` + "`kplan\nsize`" + ` (election-time, u) is printed; --out-plan FILE writes it into an
existing plan. --report DIR writes unavailability.png (points and fitted
line), result.json and report.md.

The victim is --broker, or the highest broker id that is not the active
KRaft controller (killing the controller also elects a new one). On the lab
(--cluster lab, the default) a kill is SIGKILL of the broker's JVM. Any
other cluster (--bootstrap-server, TLS and SASL from --command-config)
needs a killer as ` + "`kplan chaos`" + ` spells it (--killer exec with --kill-cmd and
--restore-cmd, docker with --container-template, chaos-mesh with its
flags) and --yes: without it kplan prints the plan and exits 4.`,
		Example: `  $ kplan measure unavailability --cluster lab
  $ kplan measure unavailability --cluster lab --partitions 1,10,50 --repeat 1 -o json
  $ kplan measure unavailability --cluster lab --report out/unavail --out-plan plans/lab-measured.yaml
  $ kplan measure unavailability --bootstrap-server localhost:19092 --killer docker --container-template kafka-{id} --broker 3 --yes
  $ kplan measure unavailability --bootstrap-server kafka-1.example:9092 --command-config client.properties --killer exec --kill-cmd 'ssh {host} sudo systemctl kill -s KILL kafka' --restore-cmd 'ssh {host} sudo systemctl start kafka' --yes`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := c.options(cmd, f, opts); err != nil {
				return err
			}
			if runF != nil {
				return runF(opts)
			}
			return runUnavailability(cmd.Context(), opts)
		},
	}
	c.add(cmd.Flags(), opts)
	cmdutil.AddOutputFlag(cmd, &c.out)
	return cmd
}

// unavailFlags are the flags parsed, not bound, into UnavailabilityOptions.
type unavailFlags struct {
	counts, cluster, bootstrap string
	broker                     int
	kf                         clitarget.KillerFlags
	out                        cmdutil.OutputFlag
}

// add declares the flags of `kplan measure unavailability` on fs, bound to
// c and opts.
func (c *unavailFlags) add(fs *pflag.FlagSet, opts *UnavailabilityOptions) {
	fs.StringVar(&c.counts, "partitions", DefaultUnavailCounts, "partition counts the victim leads, comma-separated")
	fs.IntVar(&opts.Repeat, "repeat", 3, "kills per partition count")
	fs.IntVar(&opts.ReplicationFactor, "replication-factor", 2, "replication factor of the scratch topics (2 or more; at most the brokers)")
	fs.IntVar(&c.broker, "broker", -1, "broker to kill; -1 chooses the highest id that is not the active controller")
	fs.StringVar(&opts.Topic, "topic", "kplan-unavail", "scratch topics' name prefix: PREFIX-N-RUNID")
	fs.BoolVar(&opts.Keep, "keep", false, "keep the scratch topics (default: deleted at the end)")
	fs.BoolVar(&opts.AllowUnavailable, "allow-unavailable", false, "kill even when a partition of another topic would lose its last in-sync replica")
	fs.DurationVar(&opts.FailoverTimeout, "failover-timeout", 2*time.Minute, "longest wait after a kill for every partition to accept a write")
	fs.DurationVar(&opts.RequestTimeout, "request-timeout", 2*time.Second, "bound on each probe request and dial")
	fs.StringVar(&c.cluster, "cluster", "lab", "lab (the running kplan lab); --bootstrap-server replaces it")
	clitarget.LabDirVar(fs, &opts.LabDir, "")
	clitarget.CommandConfigVar(fs, &opts.Conn.CommandConfig, "the addresses are the lab's or --bootstrap-server's")
	fs.StringVar(&opts.ReportDir, "report", "", "write unavailability.png, result.json and report.md into this directory")
	fs.StringVar(&opts.OutPlan, "out-plan", "", "set election-time (u) in this existing plan file (written atomically)")
	fs.BoolVar(&opts.Yes, "yes", false, "kill brokers of a --bootstrap-server cluster (without it kplan prints the plan and exits 4)")
	clitarget.BootstrapVar(fs, &c.bootstrap, "with --killer and --yes; --command-config for TLS and SASL")
	c.kf.AddFlags(fs, "required: every kill is restored")
}

// options checks the flags into opts; every error is a usage error naming
// its flag.
func (c *unavailFlags) options(cmd *cobra.Command, f *cmdutil.Factory, opts *UnavailabilityOptions) error {
	opts.IO, opts.Version, opts.Now = f.IOStreams, f.Version, f.Now
	if opts.Now == nil {
		opts.Now = time.Now
	}
	var err error
	if opts.Format, err = c.out.Format(); err != nil {
		return err
	}
	if opts.Counts, err = measure.ParsePartitionCounts(c.counts); err != nil {
		return cmdutil.SpellFlag(err, nil)
	}
	if err := unavailCheckValues(opts, c.broker); err != nil {
		return err
	}
	if opts.Conn.CommandConfig != "" {
		// Once: every client of the run is built from the resolved options.
		if opts.Conn, err = clitarget.Resolve(opts.Conn); err != nil {
			return err // it names --command-config
		}
	}
	if opts.OutPlan != "" {
		if err := unavailCheckPlan(opts.OutPlan); err != nil {
			return err
		}
	}
	if err := unavailCheckReport(opts.ReportDir); err != nil {
		return err
	}
	if err := clitarget.CheckLabDir(cmd.Flags(), opts.LabDir); err != nil {
		return err
	}
	return c.clusterOptions(cmd, opts)
}

// clusterOptions checks the cluster's flags: --cluster lab, or
// --bootstrap-server with a killer (checked by killers.Spec).
func (c *unavailFlags) clusterOptions(cmd *cobra.Command, opts *UnavailabilityOptions) error {
	remote := cmd.Flags().Changed("bootstrap-server")
	switch {
	case remote && cmd.Flags().Changed("cluster"):
		return errkind.Usagef("", "--bootstrap-server: not with --cluster (the lab knows its own addresses)")
	case remote:
		opts.ClusterKind = "remote"
		if opts.Conn.BootstrapServers = strings.TrimSpace(c.bootstrap); opts.Conn.BootstrapServers == "" {
			return errkind.Usagef("", "--bootstrap-server: no address given")
		}
		if cmd.Flags().Changed("lab-dir") {
			return errkind.Usagef("", "--lab-dir: only with --cluster lab")
		}
		c.kf.Spec.RequiredWith = "--bootstrap-server (" + killers.Kinds + ")"
		c.kf.Spec.RestoreNeeded = "--killer exec (every kill is restored before the next)"
		spec, err := c.kf.Options(cmd.Flags().Changed, func(n string) string { return "--" + n })
		if err != nil {
			return errkind.Wrap(errkind.Usage, "", cmdutil.SpellFlag(err, nil))
		}
		opts.Killer = &spec
	case c.cluster == "lab":
		opts.ClusterKind = "lab"
		// The lab kills its own brokers.
		for _, n := range slices.Insert(clitarget.KillerFlagNames(), 2, "yes") {
			if cmd.Flags().Changed(n) {
				return errkind.Usagef("", "--%s: needs --bootstrap-server (the lab kills its own brokers)", n)
			}
		}
	default:
		return errkind.Usagef("", "--cluster: unknown cluster %q (want lab, or --bootstrap-server with --killer)", c.cluster)
	}
	return nil
}

// unavailCheckValues checks the counts' settings and sets opts.Broker.
func unavailCheckValues(opts *UnavailabilityOptions, broker int) error {
	if opts.Repeat < 1 || opts.Repeat > 100 {
		return errkind.Usagef("", "--repeat: want 1 to 100, got %d", opts.Repeat)
	}
	if opts.ReplicationFactor < 2 || opts.ReplicationFactor > 16 {
		return errkind.Usagef("", "--replication-factor: want 2 to 16, got %d (with 1 a killed leader's partitions have no replica to elect)", opts.ReplicationFactor)
	}
	if broker < -1 || broker > 1<<31-1 {
		return errkind.Usagef("", "--broker: %d is not a broker id", broker)
	}
	opts.Broker = int32(broker)
	if err := unavailTopicPrefix(opts.Topic); err != nil {
		return err
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"failover-timeout", opts.FailoverTimeout}, {"request-timeout", opts.RequestTimeout}} {
		if d.v <= 0 {
			return errkind.Usagef("", "--%s: must be positive, got %v", d.name, d.v)
		}
	}
	return nil
}

// unavailCheckReport refuses a --report that is a file, or whose parent
// is one.
func unavailCheckReport(dir string) error {
	if dir == "" {
		return nil
	}
	if st, err := os.Stat(dir); err == nil && !st.IsDir() {
		return errkind.Usagef("", "--report: %s is not a directory", dir)
	} else if err != nil && !errors.Is(err, os.ErrNotExist) {
		return errkind.Usagef("", "--report: %w", err)
	} else if err != nil {
		if st, perr := os.Stat(filepath.Dir(filepath.Clean(dir))); perr == nil && !st.IsDir() {
			return errkind.Usagef("", "--report: %s is not a directory", filepath.Dir(dir))
		}
	}
	return nil
}

// unavailTopicPrefix checks --topic: the scratch topics' names must be
// legal Kafka topic names (at most 249 of [a-zA-Z0-9._-]).
func unavailTopicPrefix(p string) error {
	if p == "" {
		return errkind.Usagef("", "--topic: empty prefix")
	}
	if len(p) > 200 {
		return errkind.Usagef("", "--topic: %d characters, want at most 200", len(p))
	}
	for _, r := range p {
		if !unavailTopicRune(r) {
			return errkind.Usagef("", "--topic: %q has %q (Kafka topic names take letters, digits, '.', '_' and '-')", p, r)
		}
	}
	return nil
}

// unavailTopicRune reports whether r may be in a Kafka topic name.
func unavailTopicRune(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-'
}

// unavailCheckPlan reads --out-plan before anything runs: it must be an
// existing, readable plan file with no more than one election-time line.
func unavailCheckPlan(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return errkind.Usagef("", "--out-plan: %w", err)
	}
	if _, err := measure.SetElectionTime(data, "1ms", ""); err != nil {
		return errkind.Usagef("", "--out-plan: %s: %w", path, err)
	}
	return nil
}
