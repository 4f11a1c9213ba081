// Package measure is `kplan measure`: the sizing model's inputs measured on
// a live cluster (the root command), broker-loss unavailability against the
// partitions a broker led (`measure unavailability`), and seed 003's
// batching study (`measure batching`).
package measure

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kplan-dev/kplan/internal/chaos"
	"github.com/kplan-dev/kplan/internal/chaos/chaosmesh"
	"github.com/kplan-dev/kplan/internal/chaos/dist"
	chaoslab "github.com/kplan-dev/kplan/internal/chaos/lab"
	clitarget "github.com/kplan-dev/kplan/internal/cli/target"
	"github.com/kplan-dev/kplan/internal/cli/worker"
	"github.com/kplan-dev/kplan/internal/cmdutil"
	"github.com/kplan-dev/kplan/internal/errkind"
	"github.com/kplan-dev/kplan/internal/iostreams"
	"github.com/kplan-dev/kplan/internal/kafka"
	"github.com/kplan-dev/kplan/internal/loadgen"
	"github.com/kplan-dev/kplan/internal/localkafka"
	"github.com/kplan-dev/kplan/internal/measure"
	"github.com/kplan-dev/kplan/internal/measure/experiment"
	"github.com/kplan-dev/kplan/internal/report"
	"github.com/kplan-dev/kplan/internal/report/measurereport"
	"github.com/kplan-dev/kplan/internal/units"
)

// ScratchPrefix starts the name of every topic measure creates.
const ScratchPrefix = experiment.ScratchPrefix

// Options are the parsed flags of `kplan measure`: the flags of the
// measurement bind straight into the experiment.Inputs action it
// configures (acks, record sizes, durations, the l_r and u settings, the
// plan's requirements, Keep); the rest is the command's own. The
// action's ReplicationFactor is 0 here for min(3, brokers) and its
// Requirements.MaxBrokers 0 for the cluster's brokers; its Measurer,
// Info, Topics, Date, Command, Host, Cores and Progress are set when it
// runs.
type Options struct {
	experiment.Inputs

	IO  *iostreams.IOStreams
	Now func() time.Time
	// Version is kplan's, for the client id.
	Version string
	// Args is the command line, stated in the plan.
	Args []string

	Conn   kafka.ConnOptions
	Lab    bool
	LabDir string
	Out    string
	Format report.Format
	Yes    bool

	MaxHandles int64

	// KubeWorkers, when set (--workers-on kubernetes), places the Tp
	// workers as an Indexed Job, created before the run and deleted at the
	// end (its Bootstrap and Files set when the cluster is known).
	KubeWorkers *chaosmesh.WorkersOptions
}

// rawFlags are the flags parsed, not bound, into Options.
type rawFlags struct {
	target       clitarget.Options
	cluster      string
	output       cmdutil.OutputFlag
	acks         string
	electionTime string
	throughput   string
	maxL, maxU   string
	// --workers-on and the Job's placement.
	workersOn, image, namespace, kubeconfig, kubeContext string
}

// NewCmdMeasure returns `kplan measure` and its subcommands.
func NewCmdMeasure(f *cmdutil.Factory) *cobra.Command {
	return newCmdMeasure(f, nil)
}

// newCmdMeasure is NewCmdMeasure with the run function replaceable in
// tests.
func newCmdMeasure(f *cmdutil.Factory, runF func(context.Context, *Options) error) *cobra.Command {
	var r rawFlags
	opts := &Options{}
	cmd := &cobra.Command{
		Use:   "measure (--bootstrap-server HOST:PORT | --cluster lab) [--out plans/NAME.yaml] [flags]",
		Short: "Measure the sizing model's inputs on a live cluster",
		Long: `Measure the inputs kplan size needs (Raptis et al., seed 002) on a live
cluster and write them as a plan file:

  Tp    partition-produce-rate   one partition, one producer as fast as it can
  Tc    partition-consume-rate   one partition, one consumer from the start
  l_r   replication-latency      acks=all minus acks=1, paired samples
  u     election-time            preferred elections of many partitions, per partition
  Hmax  max-handles              the lab brokers' limits, or --max-handles

Every key of the plan carries a comment: how it was measured, over how many
samples, with its spread, and the client settings. The requirements (c, r,
B, L, U and, with --throughput, T) come from flags with defaults; give T to
kplan size (kplan size --plan FILE --throughput 50MB/s).

Scratch topics named kplan-measure-* are created (replication factor
--replication-factor, default min(3, brokers)) and deleted at the end, also
on error and Ctrl-C, unless --keep. On a cluster that is not the local kplan
lab, kplan prints what it will create and write and needs --yes.

u here is a cheap estimate that stops no broker; kplan measure
unavailability fits u from broker kills and is the better number.

--workers N measures Tp with N kplan worker processes instead of one
producer here: one client's own CPU and network can be what limits a
single producer, not the partition. kplan prints the kplan worker command
of each (start them on machines that reach the cluster, before or after
this line; --run fixes the run's id), creates the run's control and
results topics (kplan-run-ID-*), starts the phase when every worker has
joined, adds up the bytes the workers' producers had acknowledged window
by window, and deletes the run's topics at the end. A worker that misses
the phase fails the measurement: a partial Tp is not written.
--workers-on kubernetes --namespace NS --image IMAGE runs the workers as an
Indexed Job kplan creates before and deletes after the run (as kplan chaos
does; docs/chaos.md has the Role it needs).`,
		Example: `  $ kplan measure --cluster lab --out plans/lab-measured.yaml
  $ kplan size --plan plans/lab-measured.yaml --throughput 50MB/s
  $ kplan measure --bootstrap-server 127.0.0.1:19092 --duration 5s -o json
  $ kplan measure --cluster lab --acks 1 --record-size 512 --election-partitions 0 --election-time 25ms
  $ kplan measure --bootstrap-server kafka-1:9093 --command-config client.properties --max-handles 30000 --out plans/prod.yaml --yes
  $ kplan measure --cluster lab --workers 2 --run tp2 --out plans/lab-2workers.yaml
  $ kplan measure --bootstrap-server kafka-1:9092 --max-handles 30000 --workers 8 --workers-on kubernetes --namespace kafka --image ghcr.io/kplan-dev/kplan:v1 --yes`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := r.options(cmd, f, opts); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runMeasure(cmd.Context(), opts)
		},
	}
	r.add(cmd.Flags(), opts)
	cmdutil.AddOutputFlag(cmd, &r.output)
	cmd.AddCommand(NewCmdUnavailability(f, nil), NewCmdBatching(f, nil))
	return cmd
}

// add declares the flags of `kplan measure` on fs, bound to r and opts.
func (r *rawFlags) add(fs *pflag.FlagSet, opts *Options) {
	r.target.AddFlags(fs, clitarget.Conn|clitarget.LabDir, clitarget.Notes{})
	fs.StringVar(&r.cluster, "cluster", "", "lab: measure the running kplan lab (its addresses and, when secured, its client.properties)")
	fs.StringVar(&opts.Out, "out", "", "write the plan file (YAML) here, atomically")
	fs.BoolVar(&opts.Yes, "yes", false, "create scratch topics and write on a cluster that is not the local kplan lab")
	fs.BoolVar(&opts.Keep, "keep", false, "keep the scratch topics (default: deleted at the end)")
	fs.StringVar(&r.acks, "acks", "all", "Tp's producer acks: all (idempotent), 1 or 0")
	fs.IntVar(&opts.RecordSize, "record-size", 1024, "Tp's and Tc's record size in bytes")
	fs.DurationVar(&opts.Duration, "duration", 10*time.Second, "how long Tp's producer and Tc's consumer run each")
	fs.DurationVar(&opts.Window, "window", time.Second, "window of Tp's and Tc's rate samples")
	fs.DurationVar(&opts.Linger, "linger", 10*time.Millisecond, "Tp's producer linger (franz-go's default)")
	fs.IntVar(&opts.Workers, "workers", 0, "measure Tp with N kplan worker processes (one producer each, started with the printed kplan worker commands, on any machines that reach the cluster) instead of one producer in this process: the partition's rate when one client cannot saturate it")
	fs.StringVar(&opts.RunID, "run", "", "with --workers: the run's id, which the workers join (default: a new one, printed)")
	fs.StringVar(&r.workersOn, "workers-on", worker.OnNone, "with --workers: where the workers run: none prints the kplan worker command of each, to start yourself; kubernetes creates an Indexed Job of them (with --namespace, --image) and deletes it at the end")
	fs.StringVar(&r.image, "image", "", "with --workers-on kubernetes: kplan's container image the workers' pods run (its entrypoint kplan)")
	fs.StringVar(&r.namespace, "namespace", "", "with --workers-on kubernetes: the namespace of the workers' Job and Secret")
	fs.StringVar(&r.kubeconfig, "kubeconfig", "", "with --workers-on kubernetes: kubeconfig file (default: $KUBECONFIG, ~/.kube/config, or in-cluster)")
	fs.StringVar(&r.kubeContext, "context", "", "with --workers-on kubernetes: kubeconfig context (default: the current one)")
	fs.IntVar(&opts.ReplicationSamples, "replication-samples", 200, "l_r: pairs of records (one at acks=all, one at acks=1)")
	fs.DurationVar(&opts.ReplicationInterval, "replication-interval", 10*time.Millisecond, "l_r: pause between pairs")
	fs.IntVar(&opts.ReplicationRecordSize, "replication-record-size", 100, "l_r: record size in bytes")
	fs.IntVar(&opts.ElectionPartitions, "election-partitions", 100, "u: partitions whose leadership moves in each round (0: do not measure u)")
	fs.IntVar(&opts.ElectionRounds, "election-rounds", 3, "u: rounds of leadership moves")
	fs.StringVar(&r.electionTime, "election-time", "", "u to write when --election-partitions 0, e.g. 25ms")
	fs.Int64Var(&opts.MaxHandles, "max-handles", 0, "Hmax: partition replicas per broker (required on a cluster that is not the local lab, whose limits kplan cannot read)")
	fs.IntVar(&opts.ReplicationFactor, "replication-factor", 0, "the scratch topics' replication factor and the plan's r (default min(3, brokers))")
	fs.StringVar(&r.throughput, "throughput", "", "the plan's T, e.g. 50MB/s (default: none, give it to kplan size)")
	fs.Int64Var(&opts.Requirements.Consumers, "consumers", 1, "the plan's c: consumers in the consumer group")
	fs.Int64Var(&opts.Requirements.MaxBrokers, "max-brokers", 0, "the plan's B (default: the cluster's brokers)")
	fs.StringVar(&r.maxL, "max-replication-latency", "200ms", "the plan's L: replication latency threshold")
	fs.StringVar(&r.maxU, "max-unavailability", "2s", "the plan's U: unavailability threshold")
}

// MaxRecordSize bounds --record-size and --replication-record-size.
const MaxRecordSize = 1 << 20

func (r *rawFlags) options(cmd *cobra.Command, f *cmdutil.Factory, opts *Options) error {
	opts.IO, opts.Now, opts.Version, opts.LabDir, opts.Args = f.IOStreams, f.Now, f.Version, r.target.LabDir, commandLine(cmd)
	var err error
	if opts.Format, err = r.output.Format(); err != nil {
		return err
	}
	if opts.Lab, err = r.target.LabOrLive(r.cluster); err != nil {
		return err
	}
	if err := r.target.Validate(); err != nil {
		return err
	}
	if opts.Conn, err = r.target.ConnOptions(); err != nil { // read once
		return err
	}
	switch r.acks {
	case "all", "-1":
		opts.Acks = loadgen.AcksAll
	case "1":
		opts.Acks = loadgen.AcksLeader
	case "0":
		opts.Acks = loadgen.AcksNone
	default:
		return errkind.Usagef("", "--acks: want all, 1 or 0, got %q", r.acks)
	}
	if err := checkValues(cmd, opts); err != nil {
		return err
	}
	if err := checkWorkers(cmd, opts); err != nil {
		return err
	}
	if err := r.kubeWorkers(cmd, opts); err != nil {
		return err
	}
	if err := r.requirements(opts); err != nil {
		return err
	}
	if opts.Out != "" {
		if err := checkOutDir(opts.Out); err != nil {
			return err
		}
	}
	return nil
}

// checkValues checks the measurements' settings and the plan's counts.
func checkValues(cmd *cobra.Command, opts *Options) error {
	checks := []struct {
		ok   bool
		flag string
		msg  string
	}{
		{opts.RecordSize >= 1 && opts.RecordSize <= MaxRecordSize, "record-size", fmt.Sprintf("want 1 to %d bytes, got %d", MaxRecordSize, opts.RecordSize)},
		{opts.ReplicationRecordSize >= 1 && opts.ReplicationRecordSize <= MaxRecordSize, "replication-record-size", fmt.Sprintf("want 1 to %d bytes, got %d", MaxRecordSize, opts.ReplicationRecordSize)},
		{opts.Window >= time.Millisecond, "window", fmt.Sprintf("want at least 1ms, got %s", opts.Window)},
		{opts.Duration >= measure.MinWindows*opts.Window && opts.Duration <= 24*time.Hour, "duration", fmt.Sprintf("want at least %d --window (%s: %d of warm-up, %d counted) and at most 24h, got %s", measure.MinWindows, opts.Window, measure.WarmupWindows, measure.CountedWindows, opts.Duration)},
		{opts.Linger >= 0, "linger", fmt.Sprintf("must not be negative, got %s", opts.Linger)},
		{opts.ReplicationSamples >= 1 && opts.ReplicationSamples <= 1_000_000, "replication-samples", fmt.Sprintf("want 1 to 1000000, got %d", opts.ReplicationSamples)},
		{opts.ReplicationInterval >= 0, "replication-interval", fmt.Sprintf("must not be negative, got %s", opts.ReplicationInterval)},
		{opts.ElectionPartitions >= 0 && opts.ElectionPartitions <= 10_000, "election-partitions", fmt.Sprintf("want 0 (do not measure) to 10000, got %d", opts.ElectionPartitions)},
		{opts.ElectionRounds >= 1 && opts.ElectionRounds <= 1000, "election-rounds", fmt.Sprintf("want 1 to 1000, got %d", opts.ElectionRounds)},
		{opts.MaxHandles >= 0, "max-handles", fmt.Sprintf("want a positive number, got %d", opts.MaxHandles)},
		{opts.ReplicationFactor >= 0 && opts.ReplicationFactor <= 64, "replication-factor", fmt.Sprintf("want 1 to 64, got %d", opts.ReplicationFactor)},
		{opts.Requirements.Consumers >= 1, "consumers", fmt.Sprintf("want at least 1, got %d", opts.Requirements.Consumers)},
		{opts.Requirements.MaxBrokers >= 0, "max-brokers", fmt.Sprintf("want a positive number, got %d", opts.Requirements.MaxBrokers)},
	}
	for _, c := range checks {
		if !c.ok {
			return errkind.Usagef("", "--%s: %s", c.flag, c.msg)
		}
	}
	if cmd.Flags().Changed("max-handles") && opts.MaxHandles == 0 {
		return errkind.Usagef("", "--max-handles: want a positive number, got 0")
	}
	if cmd.Flags().Changed("replication-factor") && opts.ReplicationFactor == 0 {
		return errkind.Usagef("", "--replication-factor: want 1 to 64, got 0")
	}
	if cmd.Flags().Changed("max-brokers") && opts.Requirements.MaxBrokers == 0 {
		return errkind.Usagef("", "--max-brokers: want a positive number, got 0")
	}
	return nil
}

// checkWorkers checks --workers and --run.
func checkWorkers(cmd *cobra.Command, opts *Options) error {
	if opts.Workers == 0 {
		if cmd.Flags().Changed("run") {
			return errkind.Usagef("", "--run: only with --workers")
		}
		return nil
	}
	switch {
	case opts.Workers < 0 || opts.Workers > dist.MaxProducers:
		return errkind.Usagef("", "--workers: want 1 to %d, got %d", dist.MaxProducers, opts.Workers)
	case opts.Acks == loadgen.AcksNone:
		return errkind.Usagef("", "--acks: 0 with --workers: workers count what the brokers acknowledged (give all or 1)")
	case opts.Window < chaos.BucketWidth || opts.Window%chaos.BucketWidth != 0:
		return errkind.Usagef("", "--window: %s with --workers: want a multiple of %s (the workers report bytes per %s)", opts.Window, chaos.BucketWidth, chaos.BucketWidth)
	}
	if opts.RunID != "" {
		if err := dist.CheckRunID(opts.RunID); err != nil {
			return errkind.Usagef("", "--run: %w", err)
		}
	}
	return nil
}

// kubeWorkers reads --workers-on and the Job's flags into
// opts.KubeWorkers (nil for --workers-on none); the run's id is picked now
// when --run is not given, since the Job is named after it.
func (r *rawFlags) kubeWorkers(cmd *cobra.Command, opts *Options) error {
	kube := []string{"image", "namespace", "kubeconfig", "context"}
	switch {
	case r.workersOn == worker.OnNone:
		if cmd.Flags().Changed("workers-on") && opts.Workers == 0 {
			return errkind.Usagef("", "--workers-on: only with --workers")
		}
		for _, name := range kube {
			if cmd.Flags().Changed(name) {
				return errkind.Usagef("", "--%s: only with --workers-on %s", name, worker.OnKubernetes)
			}
		}
		return nil
	case r.workersOn != worker.OnKubernetes:
		return errkind.Usagef("", "--workers-on: %q, want none (start the printed kplan worker commands yourself) or kubernetes (an Indexed Job)", r.workersOn)
	case opts.Workers == 0:
		return errkind.Usagef("", "--workers-on: only with --workers")
	}
	if opts.RunID == "" {
		opts.RunID = chaos.NewRunID(opts.Now(), rand.New(rand.NewPCG(uint64(opts.Now().UnixNano()), uint64(os.Getpid())))) //nolint:gosec // a run id, not a secret
	}
	o := &chaosmesh.WorkersOptions{Kubeconfig: r.kubeconfig, Context: r.kubeContext, Namespace: r.namespace, Image: r.image, Run: opts.RunID, Workers: opts.Workers}
	if err := o.CheckFlags(); err != nil {
		return cmdutil.SpellFlag(err, nil)
	}
	opts.KubeWorkers = o
	return nil
}

// requirements parses the plan's T, L, U and a given u into opts.
func (r *rawFlags) requirements(opts *Options) error {
	var err error
	if r.throughput != "" {
		if opts.Requirements.Throughput, err = units.ParseRate(r.throughput); err != nil {
			return errkind.Usagef("", "--throughput: %w", err)
		}
	}
	pos := func(flag, text string) (time.Duration, error) {
		d, err := units.ParseDuration(text)
		if err != nil {
			return 0, errkind.Usagef("", "--%s: %w", flag, err)
		}
		if d <= 0 {
			return 0, errkind.Usagef("", "--%s: must be positive, got %s", flag, text)
		}
		return d, nil
	}
	if opts.Requirements.MaxReplicationLatency, err = pos("max-replication-latency", r.maxL); err != nil {
		return err
	}
	if opts.Requirements.MaxUnavailability, err = pos("max-unavailability", r.maxU); err != nil {
		return err
	}
	if r.electionTime != "" {
		if opts.ElectionPartitions != 0 {
			return errkind.Usagef("", "--election-time: only with --election-partitions 0 (u is measured otherwise)")
		}
		if opts.ElectionTime, err = pos("election-time", r.electionTime); err != nil {
			return err
		}
	}
	return nil
}

// commandLine is the command as typed, for the plan's comment: the flags
// given, in order of their names (no flag holds a secret).
func commandLine(cmd *cobra.Command) []string {
	out := []string{"kplan", "measure"}
	cmd.Flags().Visit(func(fl *pflag.Flag) {
		out = append(out, "--"+fl.Name, fl.Value.String())
	})
	return out
}

// checkOutDir refuses an --out whose directory does not exist, before any
// cluster is touched.
func checkOutDir(path string) error {
	dir := filepath.Dir(path)
	st, err := os.Stat(dir)
	if err != nil {
		return errkind.Usagef("", "--out: directory %s: %w", dir, err)
	}
	if !st.IsDir() {
		return errkind.Usagef("", "--out: %s is not a directory", dir)
	}
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return errkind.Usagef("", "--out: %s is a directory", path)
	}
	return nil
}

// target is the cluster measured, resolved.
type target struct {
	conn  kafka.ConnOptions
	state *localkafka.State // the local lab's, when it is the lab
	label string
}

// seeds are the cluster's bootstrap servers as given (none when only the
// command config names them).
func (t target) seeds() []string {
	var out []string
	for s := range strings.SplitSeq(t.conn.BootstrapServers, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// resolve finds the cluster: --cluster lab reads the lab's state; a
// --bootstrap-server cluster is the lab when its cluster id is the lab's.
func resolve(opts *Options) (target, error) {
	if opts.Lab {
		s, err := chaoslab.Load(opts.LabDir)
		if err != nil {
			return target{}, errkind.Wrap(errkind.KindOf(err), "", fmt.Errorf("--cluster lab: %w", err))
		}
		conn, err := chaoslab.Conn(s, opts.Conn) // the lab's client.properties, read once
		if err != nil {
			return target{}, err
		}
		conn = conn.WithSeeds(s.Bootstrap())
		return target{conn: conn, state: s, label: "kplan lab " + s.Dir + " (" + strings.Join(s.Bootstrap(), ",") + ")"}, nil
	}
	conn, err := opts.Conn.Resolve() // resolved by the options: not read again
	if err != nil {
		return target{}, err
	}
	t := target{conn: conn, label: opts.Conn.BootstrapServers}
	if t.label == "" {
		t.label = "bootstrap.servers of " + opts.Conn.CommandConfig
	}
	if s, err := chaoslab.Load(opts.LabDir); err == nil {
		t.state = s // confirmed by cluster id once connected
	}
	return t, nil
}

func runMeasure(ctx context.Context, opts *Options) (retErr error) {
	t, err := resolve(opts)
	if err != nil {
		return err
	}
	progress := func(format string, a ...any) { fmt.Fprintf(opts.IO.ErrOut, "measure: "+format+"\n", a...) }
	m := loadgen.NewMeasurer(t.conn, opts.Version)
	defer m.Close()
	info, err := m.Info(ctx)
	if err != nil {
		return err
	}
	if t.state != nil && !opts.Lab && t.state.ClusterID != info.ClusterID {
		t.state = nil
	}
	in, err := inputs(opts, t, m, info, progress)
	if err != nil {
		return err
	}
	var kube *chaosmesh.Workers
	if opts.KubeWorkers != nil {
		if kube, err = worker.NewKube(*opts.KubeWorkers, t.conn, t.seeds()); err != nil {
			return err
		}
		worker.WriteKubePlan(opts.IO.ErrOut, "measure", kube)
	}
	handles, err := readHandles(opts, t.state)
	if err != nil {
		return err
	}
	if t.state == nil && !opts.Yes {
		p := in.Planned(t.label)
		if err := report.Render(opts.IO.Out, opts.Format, p, func() report.Document { return measurereport.PlannedDocument(p) }); err != nil {
			return err
		}
		return errkind.Refusedf("", "--yes: not given: %s is not the local kplan lab; kplan creates topics and writes there only with --yes (the plan is above)", t.label)
	}
	if kube != nil {
		// On success, error and Ctrl-C: the Job (its pods with it) and the
		// Secret go.
		defer func() {
			if err := worker.StopKube(ctx, opts.IO.ErrOut, "measure", kube, nil, retErr == nil); err != nil && retErr == nil {
				retErr = err
			}
		}()
		if err := worker.StartKube(ctx, opts.IO.ErrOut, "measure", kube); err != nil {
			return err
		}
		in.OnRun = func(run string) {
			progress("run %s: waiting for %d workers (job/%s)", run, in.Workers, kube.Job().Name)
		}
		in.JoinCheck = kube.Stuck
	}
	plan, runErr := in.Run(ctx)
	if plan == nil {
		return cmdutil.SpellFlag(runErr, nil)
	}
	plan.Handles = handles
	plan.Machine.KafkaVersion = kafkaVersion(t.state, info.VersionGuess)
	plan.Machine.Cluster = t.label
	if opts.Out != "" {
		if err := report.WriteFileAtomic(opts.Out, plan.YAML()); err != nil {
			return errkind.Wrap(errkind.Runtime, "", fmt.Errorf("--out: %w", err))
		}
		progress("wrote %s", opts.Out)
	}
	if err := report.Render(opts.IO.Out, opts.Format, plan, func() report.Document { return measurereport.PlanDocument(plan) }); err != nil {
		return err
	}
	return runErr
}

// inputs checks the replication factor against the cluster and builds the
// experiment.Inputs action.
func inputs(opts *Options, t target, m *loadgen.Measurer, info loadgen.ClusterInfo, progress func(string, ...any)) (*experiment.Inputs, error) {
	if len(info.Brokers) == 0 {
		return nil, errkind.New(errkind.Runtime, "", "the cluster lists no brokers")
	}
	rf := opts.ReplicationFactor
	if rf == 0 {
		rf = min(3, len(info.Brokers))
	}
	if rf > len(info.Brokers) {
		return nil, errkind.Usagef("", "--replication-factor: %d is more than the cluster's %d brokers", rf, len(info.Brokers))
	}
	if rf < 2 && opts.ElectionPartitions > 0 {
		return nil, errkind.Usagef("", "--election-partitions: leadership cannot move with replication factor 1 (give --election-partitions 0 and --election-time D)")
	}
	host, _ := os.Hostname()
	in := opts.Inputs // a copy: the options stay as parsed
	in.Measurer, in.Info, in.Topics, in.ReplicationFactor = m, info, experiment.NewInputTopics(opts.Now()), rf
	in.Date, in.Command, in.Host, in.Cores, in.Progress = opts.Now(), strings.Join(opts.Args, " "), host, runtime.NumCPU(), progress
	if in.Workers > 0 {
		in.Conn, in.Version = t.conn, opts.Version
		in.OnRun = func(run string) {
			worker.PrintCommands(opts.IO.ErrOut, "measure", run, in.Workers, t.seeds(), t.conn.CommandConfig)
		}
	}
	return &in, nil
}

// readHandles is Hmax: --max-handles, else the lab brokers' limits.
func readHandles(opts *Options, lab *localkafka.State) (measure.Handles, error) {
	if opts.MaxHandles > 0 {
		return measure.Handles{Value: opts.MaxHandles, Given: true}, nil
	}
	if lab == nil {
		return measure.Handles{}, errkind.Usagef("", "--max-handles: required on a cluster that is not the local kplan lab (kplan cannot read its brokers' limits)")
	}
	var open int64
	for _, n := range lab.Brokers() {
		text, err := os.ReadFile(fmt.Sprintf("/proc/%d/limits", n.PID))
		if err != nil {
			return measure.Handles{}, errkind.Usagef("", "--max-handles: required: broker %d's limits are not readable: %w", n.ID, err)
		}
		v, err := measure.ParseOpenFiles(string(text))
		if err != nil {
			return measure.Handles{}, errkind.Usagef("", "--max-handles: required: broker %d's limits: %w", n.ID, err)
		}
		if open == 0 || v < open {
			open = v
		}
	}
	text, err := os.ReadFile("/proc/sys/vm/max_map_count")
	if err != nil {
		return measure.Handles{}, errkind.Usagef("", "--max-handles: required: vm.max_map_count is not readable: %w", err)
	}
	maps, err := measure.ParseMaxMapCount(string(text))
	if err != nil {
		return measure.Handles{}, errkind.Usagef("", "--max-handles: required: vm.max_map_count: %w", err)
	}
	h, err := measure.HandlesOf(open, maps)
	if err != nil {
		return measure.Handles{}, errkind.Usagef("", "--max-handles: required: %w", err)
	}
	return h, nil
}

// kafkaVersion reads the lab's jars' version, else franz-go's guess.
func kafkaVersion(lab *localkafka.State, guess string) string {
	if lab != nil {
		if ms, _ := filepath.Glob(filepath.Join(lab.JarsDir, "kafka_2.13-*.jar")); len(ms) > 0 {
			slices.Sort(ms)
			v := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(ms[0]), "kafka_2.13-"), ".jar")
			if v != "" && !strings.ContainsAny(v, "-") {
				return v + " (the lab's jars)"
			}
		}
	}
	if guess == "" {
		return ""
	}
	return guess + " (guessed by franz-go from the brokers' ApiVersions)"
}
