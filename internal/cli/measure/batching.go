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
	"github.com/spf13/pflag"

	chaoslab "github.com/kplan-dev/kplan/internal/chaos/lab"
	clitarget "github.com/kplan-dev/kplan/internal/cli/target"
	"github.com/kplan-dev/kplan/internal/cmdutil"
	"github.com/kplan-dev/kplan/internal/errkind"
	"github.com/kplan-dev/kplan/internal/iostreams"
	"github.com/kplan-dev/kplan/internal/loadgen"
	"github.com/kplan-dev/kplan/internal/measure"
	"github.com/kplan-dev/kplan/internal/measure/experiment"
	"github.com/kplan-dev/kplan/internal/report"
	"github.com/kplan-dev/kplan/internal/report/measurereport"
	"github.com/kplan-dev/kplan/internal/units"
)

// BatchingOptions are `kplan measure batching`'s flags, checked: the
// flags of the study bind straight into the experiment.Batching action it
// configures (Conn, Version, Now, the cells, objective, acks, record size,
// rate, durations, buffer and scratch topic); the rest is the command's
// own. The action's Cluster and Progress are set when it runs.
type BatchingOptions struct {
	experiment.Batching

	IO *iostreams.IOStreams
	// Lab is true for --cluster lab; LabDir its directory ("": default).
	Lab    bool
	LabDir string
	// Yes allows writing to a cluster that is not the lab.
	Yes bool

	ReportDir string
	ApplyTo   string
	Format    report.Format
}

// batchingFlags are the flags parsed, not bound, into BatchingOptions.
type batchingFlags struct {
	lingers, sizes, acks, cluster string
	// target is --bootstrap-server, --command-config, --timeout, --lab-dir.
	target clitarget.Options
	output cmdutil.OutputFlag
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
	opts := &BatchingOptions{}
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
			if err := c.options(f, opts); err != nil {
				return err
			}
			if runF != nil {
				return runF(opts)
			}
			return runBatching(cmd.Context(), opts)
		},
	}
	c.add(cmd.Flags(), opts)
	cmdutil.AddOutputFlag(cmd, &c.output)
	return cmd
}

// add declares the flags of `kplan measure batching` on fs, bound to c
// and opts.
func (c *batchingFlags) add(fs *pflag.FlagSet, opts *BatchingOptions) {
	fs.StringVar(&c.lingers, "linger", batchDefaultLingers, "lingers to sweep, comma-separated whole milliseconds (linger.ms)")
	fs.StringVar(&c.sizes, "batch-size", batchDefaultSizes, "batch sizes to sweep, comma-separated: records per batch (10) or bytes with a unit (16KiB)")
	fs.DurationVar(&opts.Objective, "latency-objective", 100*time.Millisecond, "end-to-end latency objective of the violation rate and timely throughput")
	fs.StringVar(&opts.Rate, "rate", "1000/s", "offered rate: records per second (1000/s), bytes per second (1MB/s) or unlimited")
	fs.StringVar(&c.acks, "acks", "all", "producer acks: 0, 1 or all (idempotent)")
	fs.IntVar(&opts.RecordSize, "record-size", 512, "record value size in bytes (at least 28)")
	fs.DurationVar(&opts.CellDuration, "cell-duration", 3*time.Second, "how long each cell produces")
	fs.DurationVar(&opts.Warmup, "warmup", time.Second, "how long each cell produces before it is measured (its records are not counted)")
	fs.DurationVar(&opts.DeliveryTimeout, "delivery-timeout", 10*time.Second, "each record's delivery timeout (delivery.timeout.ms); records not acknowledged by then count as lost")
	fs.DurationVar(&opts.DrainTimeout, "drain-timeout", 10*time.Second, "longest wait after each cell for the consumer to read its records back")
	fs.IntVar(&opts.MaxBuffered, "max-buffered-records", 10000, "producer's cap on buffered plus unacknowledged records (bounds --rate unlimited)")
	fs.StringVar(&opts.TopicPrefix, "topic", "kplan-batching", "scratch topic name prefix")
	fs.IntVar(&opts.Partitions, "partitions", 1, "partitions of the scratch topic")
	fs.IntVar(&opts.ReplicationFactor, "replication-factor", 0, "replication factor of the scratch topic (default: 3, or the brokers if fewer)")
	fs.BoolVar(&opts.Keep, "keep", false, "keep the scratch topic")
	fs.StringVar(&c.cluster, "cluster", "", "lab: the running kplan lab (else --bootstrap-server)")
	c.target.AddFlags(fs, clitarget.Conn|clitarget.LabDir, clitarget.Notes{Bootstrap: "needs --yes: the study creates a topic and writes"})
	fs.BoolVar(&opts.Yes, "yes", false, "create the scratch topic and write to a cluster that is not the kplan lab")
	fs.StringVar(&opts.ReportDir, "report", "", "write result.json, report.md and heatmap.png into this directory")
	fs.StringVar(&opts.ApplyTo, "apply-to", "", "write the recommended linger.ms, batch.size and acks into this producer properties file")
}

// batchFlagOf spells the domain's fields as flags.
var batchFlagOf = map[string]string{}

func (c *batchingFlags) options(f *cmdutil.Factory, opts *BatchingOptions) error {
	opts.IO, opts.Version, opts.Now, opts.LabDir = f.IOStreams, f.Version, f.Now, c.target.LabDir
	var err error
	if opts.Format, err = c.output.Format(); err != nil {
		return err
	}
	if err := c.sweep(opts); err != nil {
		return err
	}
	if err := checkBatchValues(opts); err != nil {
		return err
	}
	if err := c.target.Validate(); err != nil {
		return err
	}
	switch {
	case c.cluster != "" && c.cluster != "lab":
		return errkind.Usagef("", "--cluster: unknown cluster %q (want lab, or --bootstrap-server)", c.cluster)
	case c.cluster == "lab" && c.target.BootstrapServers != "":
		return errkind.Usagef("", "--bootstrap-server: not with --cluster lab (the lab knows its own addresses)")
	case c.cluster == "lab":
		opts.Lab = true
	case c.target.LabDir != "":
		return errkind.Usagef("", "--lab-dir: only with --cluster lab")
	case !c.target.Live():
		return errkind.Usagef("", "--cluster lab or --bootstrap-server: give one (the cluster to measure)")
	}
	// Once: every client of the study is built from the resolved options.
	if opts.Conn, err = c.target.ConnOptions(); err != nil {
		return err
	}
	if c.target.CommandConfig != "" {
		props, _ := opts.Conn.Properties()
		if !opts.Lab && c.target.BootstrapServers == "" && props.BootstrapServers == "" {
			return errkind.Usagef("", "--bootstrap-server: no address given (nor bootstrap.servers in --command-config)")
		}
	}
	if err := batchCheckOutDir("report", opts.ReportDir, true); err != nil {
		return err
	}
	if err := batchCheckOutDir("apply-to", opts.ApplyTo, false); err != nil {
		return err
	}
	if !opts.Lab && !opts.Yes {
		return errkind.Refusedf("", "--yes: not given: the study creates a scratch topic on %s and writes %d cells x %s to it; kplan does that to a cluster that is not the kplan lab only with --yes",
			batchClusterName(opts), len(opts.Cells), opts.CellDuration)
	}
	return nil
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
	if opts.RecordSize < loadgen.EnvelopeLen || opts.RecordSize > 1<<20 {
		return errkind.Usagef("", "--record-size: want %d to %d bytes (a record carries a %d B header), got %d", loadgen.EnvelopeLen, 1<<20, loadgen.EnvelopeLen, opts.RecordSize)
	}
	if opts.Cells, err = measure.BatchGrid(lingers, sizes, opts.RecordSize); err != nil {
		return cmdutil.SpellFlag(err, batchFlagOf)
	}
	if opts.Acks, err = loadgen.ParseAcks(strings.TrimSpace(c.acks)); err != nil {
		return cmdutil.SpellFlag(err, batchFlagOf)
	}
	if opts.RatePerSecond, err = measure.BatchRecordsPerSecond(opts.Rate, opts.RecordSize, units.ParseRate); err != nil {
		return cmdutil.SpellFlag(err, batchFlagOf)
	}
	return nil
}

// checkBatchValues checks the durations, the buffer and the topic's shape.
func checkBatchValues(opts *BatchingOptions) error {
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"latency-objective", opts.Objective}, {"cell-duration", opts.CellDuration}, {"delivery-timeout", opts.DeliveryTimeout}, {"drain-timeout", opts.DrainTimeout}} {
		if d.v <= 0 {
			return errkind.Usagef("", "--%s: want a positive duration, got %s", d.name, d.v)
		}
	}
	if opts.Warmup < 0 {
		return errkind.Usagef("", "--warmup: must not be negative, got %s", opts.Warmup)
	}
	if opts.MaxBuffered < 1 {
		return errkind.Usagef("", "--max-buffered-records: want at least 1, got %d", opts.MaxBuffered)
	}
	if opts.Partitions < 1 || opts.Partitions > 1000 {
		return errkind.Usagef("", "--partitions: want 1 to 1000, got %d", opts.Partitions)
	}
	if opts.ReplicationFactor < 0 || opts.ReplicationFactor > 32 {
		return errkind.Usagef("", "--replication-factor: want 1 to 32 (or 0 for the default), got %d", opts.ReplicationFactor)
	}
	if strings.TrimSpace(opts.TopicPrefix) == "" || strings.ContainsAny(opts.TopicPrefix, " /\\") {
		return errkind.Usagef("", "--topic: want a topic name prefix, got %q", opts.TopicPrefix)
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
			return errkind.Usagef("", "--%s: %s is a directory", flag, path)
		}
		p = filepath.Dir(path)
		st, err := os.Stat(p)
		if err != nil || !st.IsDir() {
			return errkind.Usagef("", "--%s: directory %s does not exist", flag, p)
		}
		return nil
	}
	for {
		st, err := os.Stat(p)
		switch {
		case err == nil && st.IsDir():
			return nil
		case err == nil:
			return errkind.Usagef("", "--%s: %s is not a directory", flag, p)
		case !errors.Is(err, fs.ErrNotExist):
			return errkind.Usagef("", "--%s: %w", flag, err)
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
			return errkind.Wrap(errkind.Usage, "", fmt.Errorf("--cluster lab: %w", err))
		}
		conn = l.Conn().WithSeeds(l.Seeds())
		l.Close()
	}
	stderr := opts.IO.ErrOut
	a := opts.Batching // a copy: the options stay as parsed
	a.Conn, a.Cluster = conn, batchClusterName(opts)
	a.Progress = func(format string, args ...any) { fmt.Fprintf(stderr, format+"\n", args...) }
	study, err := a.Run(ctx)
	switch {
	case study == nil:
		return err
	case !study.Complete:
		if len(study.Cells) > 0 {
			fmt.Fprintf(stderr, "measure batching: stopped after %d of %d cells; the cells measured so far:\n", len(study.Cells), len(opts.Cells))
			_ = report.Render(opts.IO.Out, opts.Format, study, func() report.Document { return measurereport.BatchDocument(study) })
		}
		return err
	}
	if rerr := report.Render(opts.IO.Out, opts.Format, study, func() report.Document { return measurereport.BatchDocument(study) }); rerr != nil {
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
		if err := measurereport.WriteBatchReport(opts.ReportDir, study); err != nil {
			return fmt.Errorf("--report: %w", err)
		}
		fmt.Fprintf(opts.IO.ErrOut, "measure batching: wrote %s\n", opts.ReportDir)
	}
	if opts.ApplyTo != "" {
		if study.Recommended == nil {
			return errkind.New(errkind.Negative, "", "--apply-to: nothing written to %s: no cell delivered a record", opts.ApplyTo)
		}
		if err := measurereport.WriteBatchProperties(opts.ApplyTo, study); err != nil {
			return fmt.Errorf("--apply-to: %w", err)
		}
		fmt.Fprintf(opts.IO.ErrOut, "measure batching: wrote linger.ms, batch.size and acks to %s\n", opts.ApplyTo)
	}
	return nil
}
