package measure

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	chaoslab "github.com/kplan-dev/kplan/internal/chaos/lab"
	clitarget "github.com/kplan-dev/kplan/internal/cli/target"
	"github.com/kplan-dev/kplan/internal/cmdutil"
	"github.com/kplan-dev/kplan/internal/errkind"
	"github.com/kplan-dev/kplan/internal/iostreams"
	"github.com/kplan-dev/kplan/internal/kafka"
	"github.com/kplan-dev/kplan/internal/loadgen"
	"github.com/kplan-dev/kplan/internal/measure"
	"github.com/kplan-dev/kplan/internal/measure/experiment"
	"github.com/kplan-dev/kplan/internal/report"
	"github.com/kplan-dev/kplan/internal/units"
)

// BatchingOptions are `kplan measure batching`'s flags, checked.
type BatchingOptions struct {
	IO      *iostreams.IOStreams
	Version string
	Now     func() time.Time

	// Lab is true for --cluster lab; LabDir its directory ("": default).
	Lab    bool
	LabDir string
	// Conn is --bootstrap-server, --command-config and --timeout.
	Conn kafka.ConnOptions
	// Yes allows writing to a cluster that is not the lab.
	Yes bool

	Cells      []measure.BatchCell
	Objective  time.Duration
	Acks       loadgen.Acks
	RecordSize int
	// Rate as given, and in records/s (0: unlimited).
	Rate          string
	RatePerSecond float64
	CellDuration  time.Duration
	// Warmup is produced before each cell's measurement.
	Warmup time.Duration
	// DeliveryTimeout and DrainTimeout bound each cell's end.
	DeliveryTimeout time.Duration
	DrainTimeout    time.Duration
	MaxBuffered     int

	TopicPrefix       string
	Partitions        int
	ReplicationFactor int
	Keep              bool

	ReportDir string
	ApplyTo   string
	Format    report.Format
}

type batchingFlags struct {
	lingers, sizes, rate, acks, cluster, topic, reportDir, applyTo string
	objective, cellDuration, warmup, deliveryTimeout, drainTimeout time.Duration
	// target is --bootstrap-server, --command-config, --timeout, --lab-dir.
	target                                  clitarget.Options
	recordSize, maxBuffered, partitions, rf int
	keep, yes                               bool
	output                                  cmdutil.OutputFlag
}

// Batching defaults.
const (
	batchDefaultLingers = "0,5ms,20ms,100ms"
	batchDefaultSizes   = "1,4,10,100"
)

// NewCmdBatching returns `kplan measure batching`. runF replaces the run
// in tests.
func NewCmdBatching(f *cmdutil.Factory, runF func(*BatchingOptions) error) *cobra.Command {
	var c batchingFlags
	cmd := &cobra.Command{
		Use:   "batching --latency-objective 100ms (--cluster lab | --bootstrap-server HOST:PORT --yes) [flags]",
		Short: "Sweep producer linger and batch size and pick the highest timely throughput",
		Long: `Seed 003's batching study on a live cluster. For every cell of
--linger x --batch-size, one producer writes --record-size records at --rate
with --acks for --cell-duration to a scratch topic, and one consumer reads
them back. Each record carries a sequence number and the time Produce was
called; the consumer's receipt time minus that time (one process, one clock)
is the record's end-to-end latency.

Each cell starts a new producer and produces for --warmup before it is
measured. Per cell: the latency distribution (p50, p99, max, and the mean beside them:
the mean hides the tail), the violation rate (records later than
--latency-objective), the loss rate (records the consumer never read, by
sequence number, over records sent), the producer's throughput (records sent
over the cell's duration) and the timely throughput, throughput x (1 -
violation rate) x (1 - loss rate). The recommendation is the cell with the
highest timely throughput; beside it stands the cell a mean-latency criterion
would pick (batch as much as possible while the mean meets the objective).

--batch-size takes records per batch (1,4,10: seed 003's spatial batch size)
or bytes with a unit (16KiB: Kafka's batch.size). N records map onto franz-go
as ProducerBatchMaxBytes = the batch header (65 B as franz-go counts it) plus
the wire size of N records of --record-size (the value plus about 10 B each),
so that N fit and N+1 do not (exact while N is below the record size; the
rec/batch column shows what the brokers acknowledged); compression is off so
the bound holds. franz-go refuses batches under 512 B: a batch of 1 record
needs --record-size 437 or more.
--linger is franz-go's ProducerLinger, Kafka's linger.ms, in whole ms.

The cluster: --cluster lab (the running kplan lab, secured or not), or any
cluster by --bootstrap-server [--command-config] with --yes, since the study
creates a topic and writes to it. The scratch topic, PREFIX-TIME-RANDOM
(--topic), is deleted at the end, on error and on Ctrl-C, unless --keep.

--report DIR writes result.json, report.md and heatmap.png (linger x batch
size, colour = timely throughput, each cell annotated with its p99).
--apply-to FILE writes the recommended linger.ms, batch.size and acks into a
producer properties file (other lines kept), with a comment saying what was
measured. Network conditions come from outside: kplan lab net --clients
--delay 30ms or --loss 5% degrades the path between clients and brokers.`,
		Example: `  $ kplan measure batching --cluster lab --latency-objective 100ms
  $ kplan measure batching --cluster lab --linger 0,5ms,20ms,100ms --batch-size 1,4,10,100 --rate 2000/s --report out/batching
  $ kplan measure batching --cluster lab --batch-size 16KiB,64KiB,256KiB --rate 5MB/s --acks 1 -o markdown
  $ kplan measure batching --cluster lab --acks 0 --batch-size 1,2,4,10 --linger 5ms -o json
  $ kplan measure batching --bootstrap-server k1:9093 --command-config client.properties --yes --apply-to producer.properties`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts, err := c.options(cmd, f)
			if err != nil {
				return err
			}
			if runF != nil {
				return runF(opts)
			}
			return runBatching(cmd.Context(), opts)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&c.lingers, "linger", batchDefaultLingers, "lingers to sweep, comma-separated whole milliseconds (linger.ms)")
	fs.StringVar(&c.sizes, "batch-size", batchDefaultSizes, "batch sizes to sweep, comma-separated: records per batch (10) or bytes with a unit (16KiB)")
	fs.DurationVar(&c.objective, "latency-objective", 100*time.Millisecond, "end-to-end latency objective of the violation rate and timely throughput")
	fs.StringVar(&c.rate, "rate", "1000/s", "offered rate: records per second (1000/s), bytes per second (1MB/s) or unlimited")
	fs.StringVar(&c.acks, "acks", "all", "producer acks: 0, 1 or all (idempotent)")
	fs.IntVar(&c.recordSize, "record-size", 512, "record value size in bytes (at least 28)")
	fs.DurationVar(&c.cellDuration, "cell-duration", 3*time.Second, "how long each cell produces")
	fs.DurationVar(&c.warmup, "warmup", time.Second, "how long each cell produces before it is measured (its records are not counted)")
	fs.DurationVar(&c.deliveryTimeout, "delivery-timeout", 10*time.Second, "each record's delivery timeout (delivery.timeout.ms); records not acknowledged by then count as lost")
	fs.DurationVar(&c.drainTimeout, "drain-timeout", 10*time.Second, "longest wait after each cell for the consumer to read its records back")
	fs.IntVar(&c.maxBuffered, "max-buffered-records", 10000, "producer's cap on buffered plus unacknowledged records (bounds --rate unlimited)")
	fs.StringVar(&c.topic, "topic", "kplan-batching", "scratch topic name prefix")
	fs.IntVar(&c.partitions, "partitions", 1, "partitions of the scratch topic")
	fs.IntVar(&c.rf, "replication-factor", 0, "replication factor of the scratch topic (default: 3, or the brokers if fewer)")
	fs.BoolVar(&c.keep, "keep", false, "keep the scratch topic")
	fs.StringVar(&c.cluster, "cluster", "", "lab: the running kplan lab (else --bootstrap-server)")
	c.target.AddFlags(fs, clitarget.Conn|clitarget.LabDir, clitarget.Notes{Bootstrap: "needs --yes: the study creates a topic and writes"})
	fs.BoolVar(&c.yes, "yes", false, "create the scratch topic and write to a cluster that is not the kplan lab")
	fs.StringVar(&c.reportDir, "report", "", "write result.json, report.md and heatmap.png into this directory")
	fs.StringVar(&c.applyTo, "apply-to", "", "write the recommended linger.ms, batch.size and acks into this producer properties file")
	cmdutil.AddOutputFlag(cmd, &c.output)
	return cmd
}

// batchFlagOf spells the domain's fields as flags.
var batchFlagOf = map[string]string{}

func (c *batchingFlags) options(cmd *cobra.Command, f *cmdutil.Factory) (*BatchingOptions, error) {
	opts := &BatchingOptions{IO: f.IOStreams, Version: f.Version, Now: f.Now, LabDir: c.target.LabDir, Yes: c.yes,
		Objective: c.objective, RecordSize: c.recordSize, Rate: c.rate, CellDuration: c.cellDuration, Warmup: c.warmup,
		DeliveryTimeout: c.deliveryTimeout, DrainTimeout: c.drainTimeout, MaxBuffered: c.maxBuffered,
		TopicPrefix: c.topic, Partitions: c.partitions, ReplicationFactor: c.rf, Keep: c.keep,
		ReportDir: c.reportDir, ApplyTo: c.applyTo}
	var err error
	if opts.Format, err = c.output.Format(); err != nil {
		return nil, err
	}
	if err := c.sweep(opts); err != nil {
		return nil, err
	}
	if err := c.checkValues(); err != nil {
		return nil, err
	}
	if err := c.target.Validate(); err != nil {
		return nil, err
	}
	switch {
	case c.cluster != "" && c.cluster != "lab":
		return nil, cmdutil.UsageErrorf("--cluster: unknown cluster %q (want lab, or --bootstrap-server)", c.cluster)
	case c.cluster == "lab" && c.target.BootstrapServers != "":
		return nil, cmdutil.UsageErrorf("--bootstrap-server: not with --cluster lab (the lab knows its own addresses)")
	case c.cluster == "lab":
		opts.Lab = true
	case c.target.LabDir != "":
		return nil, cmdutil.UsageErrorf("--lab-dir: only with --cluster lab")
	case !c.target.Live():
		return nil, cmdutil.UsageErrorf("--cluster lab or --bootstrap-server: give one (the cluster to measure)")
	}
	// Once: every client of the study is built from the resolved options.
	if opts.Conn, err = c.target.ConnOptions(); err != nil {
		return nil, err
	}
	if c.target.CommandConfig != "" {
		props, _ := opts.Conn.Properties()
		if !opts.Lab && c.target.BootstrapServers == "" && props.BootstrapServers == "" {
			return nil, cmdutil.UsageErrorf("--bootstrap-server: no address given (nor bootstrap.servers in --command-config)")
		}
	}
	if err := batchCheckOutDir("report", c.reportDir, true); err != nil {
		return nil, err
	}
	if err := batchCheckOutDir("apply-to", c.applyTo, false); err != nil {
		return nil, err
	}
	if !opts.Lab && !c.yes {
		return nil, errkind.Refusedf("", "--yes: not given: the study creates a scratch topic on %s and writes %d cells x %s to it; kplan does that to a cluster that is not the kplan lab only with --yes",
			batchClusterName(opts), len(opts.Cells), c.cellDuration)
	}
	return opts, nil
}

// sweep parses the grid, the acks and the rate into opts.
func (c *batchingFlags) sweep(opts *BatchingOptions) error {
	lingers, err := measure.ParseLingers(c.lingers)
	if err != nil {
		return cmdutil.SpellFlag(err, batchFlagOf)
	}
	sizes, err := measure.ParseBatchSizes(c.sizes)
	if err != nil {
		return cmdutil.SpellFlag(err, batchFlagOf)
	}
	if c.recordSize < loadgen.EnvelopeLen || c.recordSize > 1<<20 {
		return cmdutil.UsageErrorf("--record-size: want %d to %d bytes (a record carries a %d B header), got %d", loadgen.EnvelopeLen, 1<<20, loadgen.EnvelopeLen, c.recordSize)
	}
	if opts.Cells, err = measure.BatchGrid(lingers, sizes, c.recordSize); err != nil {
		return cmdutil.SpellFlag(err, batchFlagOf)
	}
	if opts.Acks, err = loadgen.ParseAcks(strings.TrimSpace(c.acks)); err != nil {
		return cmdutil.SpellFlag(err, batchFlagOf)
	}
	if opts.RatePerSecond, err = measure.BatchRecordsPerSecond(c.rate, c.recordSize, units.ParseRate); err != nil {
		return cmdutil.SpellFlag(err, batchFlagOf)
	}
	return nil
}

// checkValues checks the durations, the buffer and the topic's shape.
func (c *batchingFlags) checkValues() error {
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"latency-objective", c.objective}, {"cell-duration", c.cellDuration}, {"delivery-timeout", c.deliveryTimeout}, {"drain-timeout", c.drainTimeout}} {
		if d.v <= 0 {
			return cmdutil.UsageErrorf("--%s: want a positive duration, got %s", d.name, d.v)
		}
	}
	if c.warmup < 0 {
		return cmdutil.UsageErrorf("--warmup: must not be negative, got %s", c.warmup)
	}
	if c.maxBuffered < 1 {
		return cmdutil.UsageErrorf("--max-buffered-records: want at least 1, got %d", c.maxBuffered)
	}
	if c.partitions < 1 || c.partitions > 1000 {
		return cmdutil.UsageErrorf("--partitions: want 1 to 1000, got %d", c.partitions)
	}
	if c.rf < 0 || c.rf > 32 {
		return cmdutil.UsageErrorf("--replication-factor: want 1 to 32 (or 0 for the default), got %d", c.rf)
	}
	if strings.TrimSpace(c.topic) == "" || strings.ContainsAny(c.topic, " /\\") {
		return cmdutil.UsageErrorf("--topic: want a topic name prefix, got %q", c.topic)
	}
	return nil
}

// batchCheckOutDir refuses, before anything runs, an output path whose
// directory is missing or a file (dir: the path itself is a directory to
// make, whose nearest existing ancestor must be a directory).
func batchCheckOutDir(flag, path string, dir bool) error {
	if path == "" {
		return nil
	}
	p := path
	if !dir {
		if st, err := os.Stat(path); err == nil && st.IsDir() {
			return cmdutil.UsageErrorf("--%s: %s is a directory", flag, path)
		}
		p = filepath.Dir(path)
		st, err := os.Stat(p)
		if err != nil || !st.IsDir() {
			return cmdutil.UsageErrorf("--%s: directory %s does not exist", flag, p)
		}
		return nil
	}
	for {
		st, err := os.Stat(p)
		switch {
		case err == nil && st.IsDir():
			return nil
		case err == nil:
			return cmdutil.UsageErrorf("--%s: %s is not a directory", flag, p)
		case !errors.Is(err, fs.ErrNotExist):
			return cmdutil.UsageErrorf("--%s: %w", flag, err)
		}
		parent := filepath.Dir(p)
		if parent == p {
			return nil
		}
		p = parent
	}
}

func batchClusterName(o *BatchingOptions) string {
	if o.Lab {
		return "lab"
	}
	if o.Conn.BootstrapServers != "" {
		return o.Conn.BootstrapServers
	}
	return "the --command-config cluster"
}

// runBatching resolves the cluster, runs the experiment.Batching action,
// prints the study and writes its files.
func runBatching(ctx context.Context, opts *BatchingOptions) error {
	conn := opts.Conn
	if opts.Lab {
		l, err := chaoslab.New(opts.LabDir, conn, opts.Version)
		if err != nil {
			return cmdutil.Usage(fmt.Errorf("--cluster lab: %w", err))
		}
		conn = l.Conn().WithSeeds(l.Seeds())
		l.Close()
	}
	stderr := opts.IO.ErrOut
	a := &experiment.Batching{Conn: conn, Cluster: batchClusterName(opts), Version: opts.Version, Now: opts.Now,
		Cells: opts.Cells, Objective: opts.Objective, Acks: opts.Acks, RecordSize: opts.RecordSize,
		Rate: opts.Rate, RatePerSecond: opts.RatePerSecond, CellDuration: opts.CellDuration, Warmup: opts.Warmup,
		DeliveryTimeout: opts.DeliveryTimeout, DrainTimeout: opts.DrainTimeout, MaxBuffered: opts.MaxBuffered,
		TopicPrefix: opts.TopicPrefix, Partitions: opts.Partitions, ReplicationFactor: opts.ReplicationFactor, Keep: opts.Keep,
		Progress: func(format string, args ...any) { fmt.Fprintf(stderr, format+"\n", args...) }}
	study, err := a.Run(ctx)
	switch {
	case study == nil:
		return err
	case !study.Complete:
		if len(study.Cells) > 0 {
			fmt.Fprintf(stderr, "measure batching: stopped after %d of %d cells; the cells measured so far:\n", len(study.Cells), len(opts.Cells))
			_ = report.Render(opts.IO.Out, opts.Format, study, func() report.Document { return batchDocument(study) })
		}
		return err
	}
	if rerr := report.Render(opts.IO.Out, opts.Format, study, func() report.Document { return batchDocument(study) }); rerr != nil {
		return errors.Join(rerr, err)
	}
	if werr := writeBatchFiles(opts, study); werr != nil {
		return errors.Join(werr, err)
	}
	return err
}

// writeBatchFiles writes --report and --apply-to.
func writeBatchFiles(opts *BatchingOptions, study *measure.BatchStudy) error {
	if opts.ReportDir != "" {
		if err := writeBatchReport(opts.ReportDir, study); err != nil {
			return fmt.Errorf("--report: %w", err)
		}
		fmt.Fprintf(opts.IO.ErrOut, "measure batching: wrote %s\n", opts.ReportDir)
	}
	if opts.ApplyTo != "" {
		if study.Recommended == nil {
			return errkind.New(errkind.Negative, "", "--apply-to: nothing written to %s: no cell delivered a record", opts.ApplyTo)
		}
		old, err := os.ReadFile(opts.ApplyTo)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("--apply-to: %w", err)
		}
		props, err := measure.BatchProperties(string(old), study)
		if err != nil {
			return fmt.Errorf("--apply-to: %w", err)
		}
		if err := report.WriteFileAtomic(opts.ApplyTo, []byte(props)); err != nil {
			return fmt.Errorf("--apply-to: %w", err)
		}
		fmt.Fprintf(opts.IO.ErrOut, "measure batching: wrote linger.ms, batch.size and acks to %s\n", opts.ApplyTo)
	}
	return nil
}
