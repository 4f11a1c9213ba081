// Package chaos wires `kplan chaos`: kill a broker while producers using
// different partitioners write, and measure skew, latency and loss before
// and after. The experiment itself lives in internal/chaos.
package chaos

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	goio "io"
	"math"
	"math/rand/v2"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"gopkg.in/yaml.v3"

	"github.com/kplan-dev/kplan/internal/audit"
	"github.com/kplan-dev/kplan/internal/chaos"
	"github.com/kplan-dev/kplan/internal/chaos/chaosmesh"
	"github.com/kplan-dev/kplan/internal/chaos/embedded"
	chaoslab "github.com/kplan-dev/kplan/internal/chaos/lab"
	"github.com/kplan-dev/kplan/internal/chaos/lab/faulter"
	clitarget "github.com/kplan-dev/kplan/internal/cli/target"
	"github.com/kplan-dev/kplan/internal/cli/worker"
	"github.com/kplan-dev/kplan/internal/cmdutil"
	"github.com/kplan-dev/kplan/internal/errkind"
	"github.com/kplan-dev/kplan/internal/iostreams"
	"github.com/kplan-dev/kplan/internal/loadgen"
	"github.com/kplan-dev/kplan/internal/report"
	"github.com/kplan-dev/kplan/internal/report/chaosreport"
	"github.com/kplan-dev/kplan/internal/units"
	"github.com/kplan-dev/kplan/internal/workload"
)

// Options are the parsed flags of `kplan chaos`.
type Options struct {
	IO *iostreams.IOStreams

	// Config is the experiment; its Assignment is nil when it is to be
	// built from Partitions and ReplicationFactor over the cluster's brokers.
	Config            chaos.Config
	Partitions        int
	ReplicationFactor int
	// Cluster is "embedded" or "lab".
	Cluster string
	// Brokers is the embedded cluster's size.
	Brokers int
	// LabDir is the lab's state directory ("" for the default).
	LabDir string
	// Repeat runs the whole experiment this many times.
	Repeat int
	// ReportDir, when set, receives report.md, result.json and plots.
	ReportDir string
	Format    report.Format
	// Progress shows a progress line on stderr.
	Progress bool
	// Verbose adds notes only worth reading when looking closely.
	Verbose bool
	// Remote, when set, is a cluster reached by --bootstrap-server with a
	// killer; Cluster is then "remote".
	Remote *RemoteOptions
	// KubeWorkers, when set, places a distributed run's workers on
	// Kubernetes (--workers-on kubernetes): an Indexed Job created before
	// the run and deleted after it. Its cluster addresses and client
	// settings are filled in when the run starts.
	KubeWorkers *chaosmesh.WorkersOptions
	// Workload, when set, says how the workload's rates and keys apply
	// (--layout, --topics). With --layout Config.Workload is already built;
	// with --topics (Config.Existing) it is built at run time from the
	// cluster's topics matching Workload.Topics.
	Workload *WorkloadSpec
}

// flags holds the raw flag values.
type flags struct {
	kill, fault, slow, recommendBy, partitioners, topic, assignment, rate, acks, cluster, labDir, reportDir, file, commandConfig string
	workload, layout, rates, ratesFile, keys, topics                                                                             string
	// workloadFrom is --workload-from: a kplan observe snapshot, read as
	// the layout and the rates file; scale is --scale.
	workloadFrom                                              string
	scale                                                     float64
	partitions, rf, recordSize, brokers, repeat               int
	records                                                   int64
	warmup, phase, failoverTimeout, objective, minAge, maxAge time.Duration
	restore, sequential, allowUnavailable                     bool
	seed                                                      uint64
	sqfSlack                                                  int64
	kip794Timeout                                             time.Duration
	maxBuffered, stick                                        int
	consumeAfter, verbose                                     bool
	// workers, runID and workersOn are --workers, --run and --workers-on:
	// a distributed run.
	workers          int
	runID, workersOn string
	// image is --image: kplan's image for --workers-on kubernetes.
	image  string
	output cmdutil.OutputFlag
	origin map[string]string
	remote remoteFlags
}

// fileKeys are the flags an experiment file may set: all but --workload
// (--file) itself.
func fileKeys(cmd *cobra.Command) map[string]bool {
	keys := map[string]bool{}
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		// --yes and --dry-run are the operator's answer for this run, not
		// part of an experiment.
		if f.Name != "file" && f.Name != "workload" && f.Name != "help" && f.Name != "yes" && f.Name != "dry-run" {
			keys[f.Name] = true
		}
	})
	return keys
}

// NewCmdChaos returns `kplan chaos`. runF replaces the run function in tests.
func NewCmdChaos(f *cmdutil.Factory, runF func(context.Context, *Options) error) *cobra.Command {
	var c flags
	cmd := &cobra.Command{
		Use:   "chaos --kill TARGET|--fault FAULT|--slow BROKER:SLOWNESS [--layout FILE [--rates ...] | --workload FILE.yaml] [flags]",
		Short: "Kill a broker under load and compare partitioners' skew, latency and loss before and after",
		Long: `Kill a broker while one producer per partitioner writes to its own topic
(all topics with the same replica assignment), and measure per partitioner and
phase: records per broker and their skew (max/mean, CV, Jain's index) over the
brokers leading the topic, throughput, produce and end-to-end latency
percentiles with the violation rate against --latency-objective, timely
throughput, a Kolmogorov-Smirnov test of before against after, and, after
consuming every record back, acknowledged records lost, duplicates and
records never acknowledged.

Phases: warm-up, before, kill, failover (until every partition has a live
leader and every producer had an acknowledgement from a partition the killed
broker led), after, and with --restore a restart of the broker, a preferred
leader election and a recovered phase.

By default the cluster is embedded in the process (franz-go's kfake, brokers
numbered 1..N, Kafka's election rule restored): it is a simulation and every
output says so. --cluster lab runs against the real brokers of ` + "`kplan lab`" + `
(kill = SIGKILL of the broker's JVM) after safety checks.

--bootstrap-server HOST:PORT[,...] --killer KIND runs the same experiment
against any Kafka cluster kplan reaches (TLS, mTLS and SASL from
--command-config), killing brokers with:
  chaos-mesh  a Chaos Mesh PodChaos on Kubernetes (--pod-naming strimzi,
              bitnami, statefulset or --pod-template; --namespace)
  docker      docker kill --signal KILL of --container-template, checked
              first with docker inspect; restored with docker start
  exec        any command: --kill-cmd and --restore-cmd with {id}, {host}
              and {port} (e.g. ssh {host} sudo systemctl kill -s KILL kafka)
Before killing, the killer checks that its target is the broker Kafka
advertises, and the safety checks refuse a kill that would leave a
partition with no in-sync replica (--allow-unavailable overrides).
Experiment topics are created with an explicit assignment on the cluster's
broker ids, named PREFIX-PARTITIONER (--topic), deleted at the end unless
--keep-topics. --dry-run prints the plan (the killer's command or
manifest, the partitions losing their leader and the leaders Kafka would
elect) and changes nothing; without --yes kplan prints the plan and exits
4. ` + "`kplan chaos cleanup`" + ` deletes Chaos Mesh objects a killed kplan left.

Targets: broker-N, leader-of:TOPIC/P, busiest (most leaders of the experiment
topics), none (no kill: a steady-state measurement), each (every broker in
turn, one run each: on a real cluster the broker is restarted, back in every
ISR and the preferred leaders elected before the next kill; the report sets
per kill and partitioner each survivor's measured share beside the predicted
one, with both max/mean).

Network faults: --fault degrades one broker's network instead of (or
before) a kill: delay:TARGET:DELAY[:JITTER] (delay:broker-2:100ms,
delay:broker-2:100ms:20ms), loss:TARGET:PERCENT% (loss:broker-2:10%) or
partition:TARGET (partition:broker-2), TARGET as --kill takes it. After the
before phase kplan injects it and measures a fault phase (each broker's
share of the records, latency, loss) with it in force; a --kill comes after
that phase, with the fault still in force. --restore clears it before the
recovered phase; otherwise it is cleared when the run ends, also on error
and Ctrl-C (a second Ctrl-C leaves it, and the result says so). The lab
injects it in its brokers' network (` + "`kplan lab net`" + `); a --bootstrap-server
cluster with --killer chaos-mesh through a Chaos Mesh NetworkChaos naming
the broker's pod (--dry-run prints it); the embedded cluster cannot. There
is no predicted share under a fault: the audit's model knows layouts, not
slow brokers.

Slow broker: --slow broker-N:bandwidth=RATE (what the broker sends capped,
e.g. broker-2:bandwidth=2MB/s), broker-N:delay=DURATION or
broker-N:cpu=PERCENT% (its JVM held to that share of one CPU, e.g. 20%;
the lab only, through a cgroup of its own) runs the same thing as a fault
without a kill: each partitioner is measured at rest (nothing slow, the
before phase) and slow (the fault phase), and the report sets side by
side, per partitioner and phase, each broker's share, throughput, produce
and end-to-end p50/p99/p99.9, timely throughput and loss.
chaos/slow-broker-4.yaml is the experiment on a 4-broker lab.

Recommendation: every result ends with the partitioner to use for this
cluster and workload by --objective (throughput, p99: the produce p99, or
timely: timely throughput), judged in the fault (slow) phase, else after
the kill, else before, with its margin over the runner-up (how many times
better), with --repeat N >= 2 the margin's 95% confidence interval, and
what it costs at rest against the best there.

Workloads: --layout FILE (any layout ` + "`kplan audit --from`" + ` reads) runs the
layout's topics instead of the one-topic experiment: each partitioner writes
every topic of the layout through a producer of its own per topic, on
topics created with the layout's exact replica assignment, partitions in
order, the layout's current leader moved first (so Kafka's preferred leader
is the layout's leader). Side by side each partitioner gets its own copies,
PREFIX-PARTITIONER-TOPIC; with --sequential they write PREFIX-TOPIC one
after another. --rates A=2MB/s,B=1MB/s (or --rates-file, the syntax of
` + "`kplan audit --rates`" + `) sets each topic's rate: rates in bytes/s are used as
they are, relative weights (A=2,B=1) share --rate, which is then the total
per partitioner; topics not named take "*=" or are not written; without
--rates every topic weighs 1. --keys zipf:1.1:1000 (or A=zipf:1.1:1000,B=none)
gives the records keys: none, uniform:N or zipf:S:N. On the embedded
cluster --brokers defaults to the largest broker id of the layout.
--topics REGEX writes the existing topics matching it, as they are, on the
lab or a --bootstrap-server cluster (with --sequential; kplan's records
carry a header and the loss check counts only them). Before running, kplan
predicts each broker's share of the bytes with the audit's model for every
partitioner and phase, and the report sets it beside the measured share.

--workload-from SNAPSHOT replays what kplan observe --out saw: the
snapshot's topics are created with their assignment (the observed leader
first) and each is written at its observed bytes/s; --scale 0.1 writes a
tenth of it (every producer uses --record-size, not the observed
bytes/record). It is --layout SNAPSHOT --rates-file SNAPSHOT in one flag.

--workload NAME.yaml reads an experiment whose keys are these flags' names
(rates and keys may also be mappings of topic to value, and a relative
layout or rates-file path is read from the file's directory); flags given
on the command line override it. --file is another name for --workload.

Ctrl-C stops the experiment: the producers stop, a killed broker is
restarted when --restore was given, the records are read back for the loss
check and the partial result is printed. A second Ctrl-C cuts that cleanup
short.`,
		Example: `  $ kplan chaos --kill broker-3
  $ kplan chaos --kill broker-3 --report out/chaos
  $ kplan chaos --cluster lab --workload chaos/failover-5.yaml --kill each
  $ kplan chaos --kill busiest --partitioner roundrobin,node --acks 1 --phase-duration 20s -o json
  $ kplan chaos --workload chaos/u2-acks-all.yaml --repeat 5 --sequential
  $ kplan chaos --layout testdata/layouts/thesis-6-4.json --rates A=2,B=1 --rate 300kB/s --kill busiest --partitioner roundrobin,node,sqf,sqf-shared
  $ kplan chaos --layout testdata/layouts/thesis-6-4.json --rates A=200kB/s,B=100kB/s --keys A=zipf:1.1:1000,B=none --partitioner hash,random --kill broker-2 --report out/keys
  $ kplan chaos --cluster lab --topics '^orders-' --sequential --rate 1MB/s --kill busiest --restore
  $ kplan chaos --cluster lab --workload-from observed.json --scale 0.1 --kill busiest --partitioner roundrobin,node
  $ kplan chaos --cluster lab --kill broker-2 --restore --report out/lab-chaos
  $ kplan chaos --cluster lab --fault delay:broker-2:200ms --partitioner roundrobin,sqf
  $ kplan chaos --cluster lab --fault loss:broker-2:10% --kill broker-3 --restore
  $ kplan chaos --cluster lab --slow broker-2:bandwidth=2MB/s --rate unlimited --partitioner default,kip794,node,sqf
  $ kplan chaos --cluster lab --workload chaos/slow-broker-4.yaml --repeat 3 --objective p99
  $ kplan chaos --bootstrap-server my-cluster-kafka-bootstrap:9092 --killer chaos-mesh --namespace kafka --fault partition:broker-2 --dry-run
  $ kplan chaos --cluster lab --kill none --sequential --rate unlimited --partitioner default,node,sqf --stick 64 --repeat 8
  $ kplan chaos --bootstrap-server my-cluster-kafka-bootstrap:9093 --command-config client.properties --killer chaos-mesh --pod-naming strimzi --strimzi-cluster my-cluster --namespace kafka --kill broker-3 --dry-run
  $ kplan chaos --bootstrap-server localhost:19092 --killer docker --container-template kafka-{id} --kill broker-3 --restore --yes
  $ kplan chaos --bootstrap-server kafka-1.example:9092 --killer exec --kill-cmd 'ssh {host} sudo systemctl kill -s KILL kafka' --restore-cmd 'ssh {host} sudo systemctl start kafka' --kill busiest --restore --yes
  $ kplan chaos cleanup --namespace kafka`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts, err := c.options(cmd, f)
			if err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runChaos(cmd.Context(), opts)
		},
	}
	c.add(cmd.Flags())
	cmdutil.AddOutputFlag(cmd, &c.output)
	cmd.AddCommand(newCmdCleanup(f, nil))
	return cmd
}

// add declares the flags of `kplan chaos` on fs, bound to c.
func (c *flags) add(fs *pflag.FlagSet) {
	d := chaos.Defaults()
	fs.StringVar(&c.kill, "kill", "", "broker to kill: broker-N, leader-of:TOPIC/P, busiest, each (every broker in turn) or none (required unless --fault)")
	fs.StringVar(&c.fault, "fault", "", "network fault to inject after the before phase, instead of or before the kill: delay:TARGET:DELAY[:JITTER], loss:TARGET:PERCENT% or partition:TARGET (lab, or chaos-mesh's NetworkChaos)")
	fs.StringVar(&c.slow, "slow", "", "slow-broker experiment, no kill: broker-N:bandwidth=RATE (what it sends capped, e.g. 2MB/s), broker-N:delay=DURATION or broker-N:cpu=PERCENT% (lab only), in force after the at-rest phase (lab, or chaos-mesh's NetworkChaos)")
	fs.StringVar(&c.recommendBy, "objective", string(chaos.ByThroughput), "the recommendation's objective: throughput, p99 (produce p99) or timely (timely throughput)")
	fs.StringVar(&c.partitioners, "partitioner", strings.Join(d.Partitioners, ","), "partitioners to compare, comma-separated: roundrobin, default, random, hash, leastbackup, node, sqf, sqf-shared (one sqf shared by every producer of the run), kip794 (the Java producer's default)")
	fs.StringVar(&c.topic, "topic", d.Topic, "topic name prefix: each partitioner writes to PREFIX-NAME")
	fs.IntVar(&c.partitions, "partitions", 3, "partitions per experiment topic (replicas placed round the brokers: partition p led by the p-th broker)")
	fs.IntVar(&c.rf, "replication-factor", 2, "replication factor of the experiment topics")
	fs.StringVar(&c.assignment, "assignment", "", `explicit replica assignment, e.g. "1,2;2,3;3,1" (overrides --partitions and --replication-factor)`)
	fs.StringVar(&c.rate, "rate", "100kB/s", "each producer's rate (e.g. 100kB/s, 5MB/s) or unlimited; with a workload's relative --rates, the total they share per partitioner")
	fs.Int64Var(&c.records, "records", 0, "end each measured phase once every producer sent this many records in it (instead of --phase-duration)")
	fs.IntVar(&c.recordSize, "record-size", d.RecordSize, "record value size in bytes")
	fs.DurationVar(&c.warmup, "warmup", d.Warmup, "warm-up before the measured phases")
	fs.DurationVar(&c.phase, "phase-duration", d.Phase, "duration of each measured phase (before, after, recovered)")
	fs.DurationVar(&c.failoverTimeout, "failover-timeout", d.FailoverTimeout, "longest wait for failover before the after phase starts anyway")
	fs.DurationVar(&c.objective, "latency-objective", d.Objective, "latency objective for the violation rate and timely throughput")
	fs.StringVar(&c.acks, "acks", "all", "producer acks: all (idempotent) or 1")
	fs.BoolVar(&c.restore, "restore", false, "restart the killed broker after the after phase, elect preferred leaders and measure a recovered phase")
	fs.BoolVar(&c.sequential, "sequential", false, "run the partitioners one after another, each with its own kill, instead of side by side")
	fs.BoolVar(&c.allowUnavailable, "allow-unavailable", false, "kill a real broker even when partitions are under-replicated or would lose their last in-sync replica")
	fs.IntVar(&c.repeat, "repeat", 1, "repeat the whole experiment and report means with 99% confidence intervals")
	fs.StringVar(&c.reportDir, "report", "", "write report.md, result.json and PNG plots into this directory")
	fs.StringVar(&c.workload, "workload", "", "read the experiment from a YAML file whose keys are flag names (rates and keys may be mappings of topic to value)")
	fs.StringVar(&c.file, "file", "", "another name for --workload")
	_ = fs.MarkHidden("file")
	fs.StringVar(&c.layout, "layout", "", "run a workload on this layout's topics (any layout kplan audit --from reads), created with its replica assignment, the layout's leader first")
	fs.StringVar(&c.rates, "rates", "", "workload: rate per topic, topic=2MB/s,... or relative weights topic=2,... sharing --rate; *=rate for the others; or a kplan observe --out snapshot's file name (default: every topic weighs 1)")
	fs.StringVar(&c.ratesFile, "rates-file", "", "workload: file of topic=rate lines (# comments) or a kplan observe --out snapshot, as kplan audit --rates-file")
	fs.StringVar(&c.keys, "keys", "", "workload: record keys, none, uniform:N or zipf:S:N for every topic, or per topic A=zipf:1.1:1000,B=none (default: none)")
	fs.StringVar(&c.workloadFrom, "workload-from", "", "replay a kplan observe --out snapshot: its topics created with their assignment, each written at its observed bytes/s (as --layout FILE --rates-file FILE)")
	fs.Float64Var(&c.scale, "scale", 1, "with rates in bytes/s (--workload-from, or --rates A=2MB/s): multiply every topic's rate by this (e.g. 0.1 to rehearse a tenth of production)")
	fs.StringVar(&c.topics, "topics", "", "workload: write the existing topics matching this regular expression as they are (lab or --bootstrap-server, with --sequential)")
	fs.StringVar(&c.cluster, "cluster", "embedded", "embedded (simulated, in process) or lab (the running kplan lab)")
	fs.IntVar(&c.brokers, "brokers", 3, "brokers of the embedded cluster")
	clitarget.LabDirVar(fs, &c.labDir, "")
	fs.BoolVar(&c.consumeAfter, "consume-after", false, "consume the records back only after the run: no end-to-end latency, but the checking consumer stays off the brokers' links while throughput is measured")
	fs.Int64Var(&c.sqfSlack, "sqf-slack", d.SQFSlack, "sqf's slack in records: brokers whose in-flight records are within it of the least are served round robin (0: pure shortest queue)")
	fs.DurationVar(&c.kip794Timeout, "kip794-availability-timeout", d.KIP794Timeout, "kip794: leave out a partition whose leader made no progress for longer than this (the Java producer's partitioner.availability.timeout.ms; 0, Kafka's default, disables it)")
	fs.IntVar(&c.stick, "stick", d.Stick, "node and sqf: records sent in a row to each partition they choose (1: a choice per record, as in the thesis)")
	fs.IntVar(&c.maxBuffered, "max-buffered-records", d.MaxBufferedRecords, "each producer's cap on buffered plus unacknowledged records (franz-go's default); with --rate unlimited it bounds batch sizes")
	fs.Uint64Var(&c.seed, "seed", d.Seed, "random seed")
	fs.DurationVar(&c.minAge, "metadata-min-age", d.MetadataMinAge, "clients' metadata min age: how soon they can learn a leader moved (franz-go's default is 5s)")
	fs.DurationVar(&c.maxAge, "metadata-max-age", d.MetadataMaxAge, "clients' metadata max age: the periodic refresh")
	clitarget.CommandConfigVar(fs, &c.commandConfig, "the experiment's clients use it with the cluster's own addresses")
	fs.BoolVar(&c.verbose, "verbose", false, "also print notes only worth reading closely (the checking consumer's re-reads)")
	fs.IntVar(&c.workers, "workers", 0, "produce from N kplan worker processes coordinated through the cluster (the run's topics kplan-run-ID-*) instead of from this process")
	fs.StringVar(&c.runID, "run", "", "with --workers: the run's id, which the workers join (default: a new one, printed)")
	fs.StringVar(&c.workersOn, "workers-on", workersOnNone, "with --workers: where the workers run: none prints the kplan worker command of each, to start yourself; kubernetes creates an Indexed Job of them (with --namespace, --image) and deletes it at the end")
	fs.StringVar(&c.image, "image", "", "with --workers-on kubernetes: kplan's container image the workers' pods run (its entrypoint kplan)")
	c.remote.add(fs)
}

// where names a flag for error messages: the file line it came from, or the flag.
func (c *flags) where(name string) string {
	if o, ok := c.origin[name]; ok {
		return o
	}
	return "--" + name
}

func (c *flags) options(cmd *cobra.Command, f *cmdutil.Factory) (*Options, error) {
	if err := c.readFile(cmd); err != nil {
		return nil, err
	}
	opts := &Options{IO: f.IOStreams, Config: chaos.Defaults(), Cluster: c.cluster, Brokers: c.brokers, LabDir: c.labDir,
		Repeat: c.repeat, ReportDir: c.reportDir, Partitions: c.partitions, ReplicationFactor: c.rf,
		Progress: f.IOStreams.IsStderrTTY(), Verbose: c.verbose}
	var err error
	if opts.Format, err = c.output.Format(); err != nil {
		return nil, err
	}
	cfg := &opts.Config
	cfg.Version, cfg.Conn.CommandConfig = f.Version, c.commandConfig
	given := func(name string) bool {
		_, inFile := c.origin[name]
		return cmd.Flags().Changed(name) || inFile
	}
	for _, step := range []func() error{
		func() error { return c.replayOptions(given) },
		func() error { return c.resolveCommandConfig(cfg) },
		func() error { return c.faultOptions(cfg) },
		func() error { return c.clusterOptions(cmd) },
		func() error { return c.topicOptions(cmd, cfg, given) },
		func() error { return cmdutil.Spell(c.bind(cfg), c.where) },
		func() error { return c.workerOptions(cmd, cfg) },
	} {
		if err := step(); err != nil {
			return nil, err
		}
	}
	if c.layout != "" || c.topics != "" {
		if err := c.workloadOptions(cmd, opts, given); err != nil {
			return nil, err
		}
	}
	// One check of everything but what needs the cluster (the ring
	// assignment over its brokers, the existing topics), its fields
	// spelled as the flags (or file lines) that set them.
	camp := opts.campaign()
	if err := camp.Validate(); err != nil {
		return nil, cmdutil.Spell(err, c.where)
	}
	now := time.Now
	if f.Now != nil {
		now = f.Now
	}
	rng := rand.New(rand.NewPCG(uint64(now().UnixNano()), uint64(os.Getpid()))) //nolint:gosec // a run id, not a secret
	if opts.KubeWorkers, err = c.kubeWorkerOptions(given, cfg, now(), rng); err != nil {
		return nil, err
	}
	if opts.Remote, err = c.remote.options(cmd, c, camp); err != nil {
		return nil, err
	}
	if opts.Remote != nil {
		opts.Cluster = "remote"
	}
	if cfg.Fault != nil && opts.Cluster == "embedded" {
		return nil, errkind.Usagef("", "%s: the embedded cluster is simulated and has no network to degrade (use --cluster lab, or --bootstrap-server with --killer chaos-mesh)", c.where(c.faultFlag()))
	}
	if c.topics != "" && opts.Cluster == "embedded" {
		return nil, errkind.Usagef("", "%s: existing topics only on --cluster lab or a --bootstrap-server cluster (the embedded cluster has none)", c.where("topics"))
	}
	return opts, nil
}

// faultFlag is the flag that set the experiment's fault.
func (c *flags) faultFlag() string {
	if c.slow != "" {
		return "slow"
	}
	return "fault"
}

// readFile reads --workload (or --file) into the flags not set on the
// command line, noting where each came from.
func (c *flags) readFile(cmd *cobra.Command) error {
	c.origin = map[string]string{}
	fileFlag, path := "workload", c.workload
	switch {
	case c.workload != "" && c.file != "":
		return errkind.Usagef("", "--workload and --file: give one (--file is another name for --workload)")
	case c.file != "":
		fileFlag, path = "file", c.file
	}
	if path == "" {
		return nil
	}
	return loadFile(cmd, fileFlag, path, fileKeys(cmd), c.origin)
}

// resolveCommandConfig reads --command-config now, once: a bad file is the
// user's input, not a runtime error after the cluster started, and every
// client of the run is built from the resolved options.
func (c *flags) resolveCommandConfig(cfg *chaos.Config) error {
	if c.commandConfig == "" {
		return nil
	}
	var err error
	cfg.Conn, err = clitarget.Resolve(cfg.Conn)
	return err
}

// clusterOptions checks --cluster and --brokers.
func (c *flags) clusterOptions(cmd *cobra.Command) error {
	switch c.cluster {
	case "embedded":
		if c.brokers < 1 || c.brokers > 100 {
			return errkind.Usagef("", "%s: want 1 to 100 brokers, got %d", c.where("brokers"), c.brokers)
		}
	case "lab":
		if cmd.Flags().Changed("bootstrap-server") {
			return errkind.Usagef("", "--bootstrap-server: not with --cluster lab (the lab knows its own addresses)")
		}
	default:
		return errkind.Usagef("", "%s: unknown cluster %q (want embedded or lab)", c.where("cluster"), c.cluster)
	}
	return nil
}

// topicOptions reads the one-topic experiment's flags (--partitioner,
// --topic, --assignment, --partitions, --replication-factor, --rate),
// refusing those a workload replaces, and the workload's flags without one.
func (c *flags) topicOptions(cmd *cobra.Command, cfg *chaos.Config, given func(string) bool) error {
	cfg.Partitioners = nil
	for _, p := range strings.Split(c.partitioners, ",") {
		if p = strings.TrimSpace(p); p != "" {
			cfg.Partitioners = append(cfg.Partitioners, p)
		}
	}
	cfg.Topic = c.topic
	workload := c.layout != "" || c.topics != ""
	if workload {
		w := "layout"
		if c.layout == "" {
			w = "topics"
		}
		for _, n := range []string{"assignment", "partitions", "replication-factor"} {
			if given(n) {
				return errkind.Usagef("", "%s and %s: give one (a workload's topics have their own layout)", c.where(w), c.where(n))
			}
		}
	}
	for _, n := range []string{"rates", "rates-file", "keys"} {
		if !workload && given(n) {
			return errkind.Usagef("", "%s: needs a workload: --layout FILE or --topics REGEX", c.where(n))
		}
	}
	var err error
	if c.assignment != "" {
		if cfg.Assignment, err = chaos.ParseAssignment(c.assignment); err != nil {
			return cmdutil.Spell(err, c.where)
		}
	} else if !workload {
		cfg.Assignment = nil
		if c.cluster == "embedded" && !cmd.Flags().Changed("bootstrap-server") && c.rf > c.brokers {
			return errkind.Usagef("", "%s: %d is more than the %d brokers", c.where("replication-factor"), c.rf, c.brokers)
		}
	}
	switch strings.ToLower(strings.TrimSpace(c.rate)) {
	case "unlimited", "0", "none":
		cfg.Rate = 0
	default:
		if cfg.Rate, err = units.ParseRate(c.rate); err != nil {
			return errkind.Usagef("", "%s: %w", c.where("rate"), err)
		}
	}
	return nil
}

// bind copies the flags Config.Validate checks into cfg.
func (c *flags) bind(cfg *chaos.Config) error {
	cfg.Records, cfg.RecordSize = c.records, c.recordSize
	cfg.Warmup, cfg.Phase, cfg.FailoverTimeout, cfg.Objective = c.warmup, c.phase, c.failoverTimeout, c.objective
	cfg.MetadataMinAge, cfg.MetadataMaxAge = c.minAge, c.maxAge
	switch c.acks {
	case "all", "-1":
		cfg.Acks = loadgen.AcksAll
	case "1":
		cfg.Acks = loadgen.AcksLeader
	default:
		return errkind.Usagef("acks", "want all or 1, got %q", c.acks)
	}
	cfg.Restore, cfg.Sequential, cfg.AllowUnavailable, cfg.Seed = c.restore, c.sequential, c.allowUnavailable, c.seed
	var err error
	if cfg.RecommendBy, err = chaos.ParseRecommendBy(c.recommendBy); err != nil {
		return err
	}
	cfg.SQFSlack, cfg.ConsumeAfter, cfg.MaxBufferedRecords, cfg.Stick = c.sqfSlack, c.consumeAfter, c.maxBuffered, c.stick
	cfg.KIP794Timeout = c.kip794Timeout
	return nil
}

// workerOptions reads --workers, --run and --workers-on.
func (c *flags) workerOptions(cmd *cobra.Command, cfg *chaos.Config) error {
	if c.workers == 0 {
		for _, name := range []string{"run", "workers-on", "image"} {
			if _, inFile := c.origin[name]; cmd.Flags().Changed(name) || inFile {
				return errkind.Usagef("", "%s: only with --workers", c.where(name))
			}
		}
		return nil
	}
	switch {
	case c.workers < 0:
		return errkind.Usagef("", "%s: want a positive number of workers, got %d", c.where("workers"), c.workers)
	case c.workersOn != workersOnNone && c.workersOn != workersOnKubernetes:
		return errkind.Usagef("", "%s: %q, want none (start the printed kplan worker commands yourself) or kubernetes (an Indexed Job)", c.where("workers-on"), c.workersOn)
	case c.repeat > 1:
		return errkind.Usagef("", "%s: one run at a time with --workers (not with --repeat)", c.where("repeat"))
	case cfg.Target.Kind == chaos.TargetEach:
		return errkind.Usagef("", "%s: each kills every broker in a run of its own: one run at a time with --workers", c.where("kill"))
	}
	cfg.Workers, cfg.RunID = c.workers, c.runID
	return nil
}

// faultOptions reads --kill, --fault and --slow: one of them is required;
// --fault alone means no kill, --slow never kills.
func (c *flags) faultOptions(cfg *chaos.Config) error {
	if c.slow != "" {
		return c.slowOptions(cfg)
	}
	if c.fault != "" {
		f, err := chaos.ParseFault(c.fault)
		if err != nil {
			return cmdutil.Spell(err, c.where)
		}
		cfg.Fault = &f
	}
	switch {
	case c.kill == "" && cfg.Fault == nil:
		return errkind.Usagef("", "--kill: required (broker-N, leader-of:TOPIC/P, busiest or none), or --fault, or --slow")
	case c.kill == "":
		cfg.Target = chaos.Target{Kind: chaos.TargetNone}
		return nil
	}
	var err error
	if cfg.Target, err = chaos.ParseTarget(c.kill); err != nil {
		return cmdutil.Spell(err, c.where)
	}
	return nil
}

// slowOptions reads --slow: a slow broker (a network fault spelled for a
// slow-broker experiment), with no kill and no other fault.
func (c *flags) slowOptions(cfg *chaos.Config) error {
	if c.fault != "" {
		return errkind.Usagef("", "%s and %s: give one (--slow is a bandwidth cap or a delay as a fault, without a kill)", c.where("slow"), c.where("fault"))
	}
	if c.kill != "" && c.kill != "none" {
		return errkind.Usagef("", "%s and %s: a slow-broker experiment kills nothing (use --fault with --kill to slow a broker, then kill one)", c.where("slow"), c.where("kill"))
	}
	f, err := chaos.ParseSlow(c.slow)
	if err != nil {
		return cmdutil.Spell(err, c.where)
	}
	cfg.Fault, cfg.Slow, cfg.Target = &f, true, chaos.Target{Kind: chaos.TargetNone}
	return nil
}

// workloadOptions reads the workload flags (--layout or --topics, --rates
// or --rates-file, --keys) into opts: Config.Workload from the layout now,
// or Config.Existing and opts.Workload for the topics found at run time.
func (c *flags) workloadOptions(cmd *cobra.Command, opts *Options, given func(string) bool) error {
	cfg := &opts.Config
	if c.layout != "" && c.topics != "" {
		return errkind.Usagef("", "%s and %s: give one (a layout's topics are created, --topics writes existing ones)", c.where("layout"), c.where("topics"))
	}
	spec, err := c.workloadSpec(cfg.Rate, given)
	if err != nil {
		return err
	}
	if c.topics != "" {
		if spec.Topics, err = regexp.Compile(c.topics); err != nil {
			return errkind.Usagef("", "%s: %w", c.where("topics"), err)
		}
		if !c.sequential {
			return errkind.Usagef("", "%s: needs --sequential (existing topics are written as they are, one partitioner after another)", c.where("topics"))
		}
		cfg.Existing = true
		cfg.Assignment = nil // read from the cluster by the experiment
		opts.Workload = spec
		return nil
	}
	embedded := c.cluster == "embedded" && !cmd.Flags().Changed("bootstrap-server")
	names, assignments, maxID, err := loadLayout(c.layout, c.where("layout"), embedded)
	if err != nil {
		return err
	}
	if embedded {
		if !given("brokers") {
			opts.Brokers = int(maxID)
		} else if int32(c.brokers) < maxID {
			return errkind.Usagef("", "%s: %d brokers, but %s names broker %d", c.where("brokers"), c.brokers, c.where("layout"), maxID)
		}
	}
	if cfg.Workload, err = spec.Build(names, assignments, "in the layout "+c.layout); err != nil {
		return errkind.Wrap(errkind.Usage, "", cmdutil.Spell(err, c.where))
	}
	cfg.Rate = chaos.TotalRate(cfg.Workload)
	cfg.Assignment = nil
	opts.Workload = spec
	return nil
}

// workloadSpec reads --rates or --rates-file and --keys; total is --rate.
func (c *flags) workloadSpec(total int64, given func(string) bool) (*WorkloadSpec, error) {
	spec := &WorkloadSpec{WorkloadSpec: chaos.WorkloadSpec{Total: total, RatesField: "rates"}, where: c.where}
	var err error
	switch {
	case c.rates != "" && c.ratesFile != "":
		return nil, errkind.Usagef("", "%s and %s: give one, not both", c.where("rates"), c.where("rates-file"))
	case c.rates != "":
		if spec.Rates, err = audit.ParseRatesArg(c.rates, os.ReadFile); err != nil {
			return nil, errkind.Usagef("", "%s: %w", c.where("rates"), err)
		}
		spec.RatesGiven = true
	case c.ratesFile != "":
		spec.RatesField = "rates-file"
		data, err := os.ReadFile(c.ratesFile)
		if err != nil {
			return nil, errkind.Usagef("", "%s: %w", c.where("rates-file"), err)
		}
		if spec.Rates, err = audit.ParseRatesFile(data, c.ratesFile); err != nil {
			return nil, errkind.Usagef("", "%s: %w", c.where("rates-file"), err)
		}
		spec.RatesGiven = true
	}
	if given("scale") {
		switch {
		case !(c.scale > 0) || math.IsInf(c.scale, 0):
			return nil, errkind.Usagef("", "%s: want a positive factor, got %v", c.where("scale"), c.scale)
		case !spec.RatesGiven || !spec.Rates.BytesPerSecond:
			return nil, errkind.Usagef("", "%s: scales rates in bytes/s (--workload-from, or --rates A=2MB/s); relative weights share --rate", c.where("scale"))
		}
		spec.Rates = scaleRates(spec.Rates, c.scale)
	}
	if spec.RatesGiven && spec.Rates.BytesPerSecond && given("rate") {
		return nil, errkind.Usagef("", "%s and %s: rates in bytes/s are each topic's own; --rate is the total that relative weights (A=2,B=1) share", c.where(spec.RatesField), c.where("rate"))
	}
	if c.keys == "" {
		spec.Keys = workload.TopicKeys{}
	} else if spec.Keys, err = workload.ParseTopicKeys(c.keys); err != nil {
		return nil, cmdutil.Spell(err, c.where)
	}
	return spec, nil
}

// flagName spells a field as its flag.
var flagName = cmdutil.FlagOf(nil)

// mapKeys are the keys whose value may be a mapping of topic to value in an
// experiment file, joined as TOPIC=VALUE,... (the flag's own syntax).
var mapKeys = map[string]bool{"rates": true, "keys": true}

// pathKeys are the keys naming files: a relative path in an experiment file
// is read from the file's directory.
var pathKeys = map[string]bool{"layout": true, "rates-file": true}

// loadFile reads an experiment file into every flag not set on the command
// line. Keys are flag names; a list value (partitioner) is joined with
// commas, a mapping (rates, keys) as TOPIC=VALUE pairs. Unknown keys are
// errors naming file:line. fileFlag is the flag that named the file
// (workload or file).
func loadFile(cmd *cobra.Command, fileFlag, path string, allowed map[string]bool, origin map[string]string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return errkind.Usagef("", "--%s: %w", fileFlag, err)
	}
	var doc yaml.Node
	if err := yaml.NewDecoder(bytes.NewReader(data)).Decode(&doc); err != nil {
		return errkind.Usagef("", "%s: %w", path, err)
	}
	if len(doc.Content) == 0 {
		return errkind.Usagef("", "%s: empty experiment file", path)
	}
	m := doc.Content[0]
	if m.Kind != yaml.MappingNode {
		return errkind.Usagef("", "%s:%d: an experiment file is a mapping of flag names to values", path, m.Line)
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		loc := fmt.Sprintf("%s:%d", path, k.Line)
		if seen[k.Value] {
			return errkind.Usagef("", "%s: duplicate key %q", loc, k.Value)
		}
		seen[k.Value] = true
		fl := cmd.Flags().Lookup(k.Value)
		if fl == nil || !allowed[k.Value] {
			return errkind.Usagef("", "%s: unknown key %q", loc, k.Value)
		}
		val, err := fileValue(path, loc, k, v)
		if err != nil {
			return err
		}
		if fl.Changed {
			continue // the command line overrides the file
		}
		if err := fl.Value.Set(val); err != nil {
			return errkind.Usagef("", "%s: %s: %w", loc, k.Value, err)
		}
		origin[k.Value] = fmt.Sprintf("%s:%d: %s", path, k.Line, k.Value)
	}
	return nil
}

// fileValue is an experiment file's value as the flag takes it: a scalar as
// it is (a relative path from the file's directory), a list joined with
// commas, a mapping (rates, keys) as TOPIC=VALUE pairs.
func fileValue(path, loc string, k, v *yaml.Node) (string, error) {
	switch v.Kind {
	case yaml.ScalarNode:
		val := v.Value
		if pathKeys[k.Value] && val != "" && !filepath.IsAbs(val) {
			val = filepath.Join(filepath.Dir(path), val)
		}
		return val, nil
	case yaml.SequenceNode:
		parts := make([]string, 0, len(v.Content))
		for _, e := range v.Content {
			if e.Kind != yaml.ScalarNode {
				return "", errkind.Usagef("", "%s: %s: want a value or a list of values", loc, k.Value)
			}
			parts = append(parts, e.Value)
		}
		return strings.Join(parts, ","), nil
	case yaml.MappingNode:
		if !mapKeys[k.Value] {
			return "", errkind.Usagef("", "%s: %s: want a value or a list of values", loc, k.Value)
		}
		parts := make([]string, 0, len(v.Content)/2)
		for j := 0; j+1 < len(v.Content); j += 2 {
			tk, tv := v.Content[j], v.Content[j+1]
			if tk.Kind != yaml.ScalarNode || tv.Kind != yaml.ScalarNode || tk.Value == "" {
				return "", errkind.Usagef("", "%s:%d: %s: want TOPIC: VALUE entries", path, tk.Line, k.Value)
			}
			if strings.ContainsAny(tk.Value, ",=") || strings.Contains(tv.Value, ",") {
				return "", errkind.Usagef("", "%s:%d: %s: %s: a topic or value with ',' or '='", path, tk.Line, k.Value, tk.Value)
			}
			parts = append(parts, tk.Value+"="+tv.Value)
		}
		return strings.Join(parts, ","), nil
	}
	return "", errkind.Usagef("", "%s: %s: want a value or a list of values", loc, k.Value)
}

// openCluster starts or opens the cluster of one run; a lab sets cfg.Conn
// to its own client settings (a secured lab's client.properties, unless
// --command-config).
func openCluster(opts *Options, cfg *chaos.Config) (chaos.Cluster, error) {
	if opts.Cluster == "lab" {
		c, err := chaoslab.New(opts.LabDir, opts.Config.Conn, opts.Config.Version)
		if err != nil {
			return nil, errkind.Wrap(errkind.Usage, "", fmt.Errorf("--cluster lab: %w", err))
		}
		cfg.Conn = c.Conn()
		if opts.Config.Fault != nil {
			return faulter.New(c), nil // the lab's network conditions (kplan lab net)
		}
		return c, nil
	}
	return embedded.NewCluster(opts.Brokers, opts.Config.Version)
}

// campaign is the action the options describe.
func (opts *Options) campaign() *chaos.Campaign {
	return &chaos.Campaign{
		Config: opts.Config, Partitions: opts.Partitions, ReplicationFactor: opts.ReplicationFactor, Repeat: opts.Repeat,
		Open: func(_ context.Context, cfg *chaos.Config) (chaos.Cluster, error) { return openCluster(opts, cfg) },
		Existing: func(ctx context.Context, c chaos.Cluster, cfg chaos.Config) ([]chaos.WorkloadTopic, error) {
			return existingWorkload(ctx, c, cfg, opts.Workload)
		},
		CheckBrokers: opts.Cluster == "lab",
		ISRWait:      isrWait,
	}
}

func runChaos(ctx context.Context, opts *Options) (retErr error) {
	io := opts.IO
	camp := opts.campaign()
	cfg := &camp.Config
	var kube *chaosmesh.Workers
	if opts.KubeWorkers != nil {
		var err error
		if kube, err = newKubeWorkers(opts); err != nil {
			return err
		}
		worker.WriteKubePlan(io.ErrOut, "chaos", kube)
	}
	if opts.Remote != nil {
		rcl, done, err := prepareRemote(ctx, opts, camp)
		if err == nil && done && kube != nil {
			err = dryRunKube(ctx, opts, kube)
		}
		if err != nil || done {
			return err
		}
		defer rcl.Close()
		camp.Shared = true
		camp.Open = func(context.Context, *chaos.Config) (chaos.Cluster, error) { return rcl, nil }
		// On success, error and Ctrl-C: the killer's objects and the
		// experiment topics go.
		defer func() {
			if err := cleanupRemote(ctx, rcl, opts, cfg.Abort); err != nil && retErr == nil {
				retErr = err
			}
		}()
	}
	if opts.ReportDir != "" {
		if err := os.MkdirAll(opts.ReportDir, 0o755); err != nil {
			return errkind.Usagef("", "--report: %w", err)
		}
	}
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	done := make(chan struct{})
	defer close(done)
	cfg.Abort = cmdutil.SecondInterrupt(sigs, done, func() {
		fmt.Fprintln(io.ErrOut, "\nchaos: interrupted; stopping the producers and cleaning up (interrupt again to cut the cleanup short)")
	})
	progress(opts, camp)
	switch {
	case kube != nil:
		// On success, error and Ctrl-C: the Job (its pods with it) and
		// the Secret go.
		defer func() {
			if err := worker.StopKube(ctx, io.ErrOut, "chaos", kube, cfg.Abort, retErr == nil); err != nil && retErr == nil {
				retErr = err
			}
		}()
		if err := worker.StartKube(ctx, io.ErrOut, "chaos", kube); err != nil {
			return err
		}
		cfg.OnRun = func(run string, _ []string) {
			fmt.Fprintf(io.ErrOut, "chaos: run %s: waiting for %d workers (job/%s)\n", run, cfg.Workers, kube.Job().Name)
		}
		cfg.JoinCheck = kube.Stuck
	case cfg.Workers > 0:
		cfg.OnRun = func(run string, seeds []string) {
			worker.PrintCommands(io.ErrOut, "chaos", run, cfg.Workers, seeds, cfg.Conn.CommandConfig)
		}
	}
	out, runErr := camp.Run(ctx)
	if out.ISR != nil {
		fmt.Fprintln(io.ErrOut, "chaos: "+out.ISR.String())
	}
	if len(out.Runs) == 0 {
		return mapErr(runErr, opts)
	}
	if err := renderCampaign(io.Out, io.ErrOut, opts, out); err != nil {
		return err
	}
	return mapErr(runErr, opts)
}

// progress sets the campaign's progress hooks: a progress line on a
// terminal, and a line per run when there are several.
func progress(opts *Options, camp *chaos.Campaign) {
	w := opts.IO.ErrOut
	if opts.Progress {
		camp.Config.Progress = func(p chaos.Progress) {
			who := ""
			if p.Partitioner != "" {
				who = p.Partitioner + " "
			}
			fmt.Fprintf(w, "\r\033[Kchaos: %sphase %-9s  records sent %-9d  elapsed %s", who, p.Phase, p.Sent, p.Elapsed.Round(100*time.Millisecond))
		}
	}
	camp.OnRun = func(i, n int, res *chaos.Result) {
		if opts.Progress {
			fmt.Fprint(w, "\r\033[K")
		}
		if res != nil && n > 1 {
			fmt.Fprintln(w, chaosreport.CycleLine(i, n, res))
		}
	}
}

// renderCampaign prints a campaign's result (the run, the summary of repeated
// runs, or the kills of --kill each) and writes the --report directory.
func renderCampaign(out, errOut goio.Writer, opts *Options, cr chaos.CampaignResult) error {
	if err := chaosreport.WriteCampaign(out, opts.Format, cr, opts.Verbose); err != nil {
		return err
	}
	if opts.ReportDir == "" {
		return nil
	}
	files, err := chaosreport.WriteReport(opts.ReportDir, cr, opts.Verbose)
	if err != nil {
		return err
	}
	fmt.Fprintf(errOut, "report written to %s (%s)\n", opts.ReportDir, strings.Join(files, ", "))
	return nil
}

// isrWait bounds the wait for a restarted broker to be back in every ISR.
const isrWait = chaos.DefaultISRWait

// mapErr spells the experiment's errors for the command line: a field
// becomes its flag, a refusal says which flag would change the answer. The
// kind (and so the exit code) and the chain are kept.
func mapErr(err error, opts *Options) error {
	var ke *errkind.Error
	switch {
	case err == nil:
		return nil
	case errors.Is(err, context.Canceled):
		return fmt.Errorf("interrupted; the partial result was printed: %w", err)
	case !errors.As(err, &ke) || ke.Field == "":
		return err
	case ke.Kind == errkind.Refused && ke.Field == chaos.FieldAllowUnavailable:
		return errkind.Wrap(ke.Kind, "", fmt.Errorf("%w; pass %s to kill anyway", ke.Err, flagName(ke.Field)))
	case ke.Kind == errkind.Refused && ke.Field == chaos.FieldReplicationFactor:
		how := "use " + flagName(ke.Field) + " 2"
		if opts.Cluster == "lab" || opts.Cluster == "remote" {
			how += " or " + flagName(chaos.FieldAllowUnavailable)
		}
		return errkind.Wrap(ke.Kind, "", fmt.Errorf("%w; %s", ke.Err, how))
	}
	return cmdutil.SpellFlag(err, nil)
}

// replayOptions reads --workload-from SNAPSHOT as --layout SNAPSHOT
// --rates-file SNAPSHOT: kplan observe's snapshot is a layout (every
// verb's --from reads it) and carries each topic's observed bytes/s.
func (c *flags) replayOptions(given func(string) bool) error {
	if c.workloadFrom == "" {
		if given("scale") && c.rates == "" && c.ratesFile == "" {
			return errkind.Usagef("", "%s: needs rates in bytes/s to scale (--workload-from, or --rates A=2MB/s)", c.where("scale"))
		}
		return nil
	}
	for _, n := range []string{"layout", "rates", "rates-file", "topics"} {
		if given(n) {
			return errkind.Usagef("", "%s and %s: give one (the snapshot is the layout and the rates)", c.where("workload-from"), c.where(n))
		}
	}
	c.layout, c.ratesFile = c.workloadFrom, c.workloadFrom
	if c.origin == nil {
		c.origin = map[string]string{}
	}
	// Errors about the layout or its rates name the flag the user gave.
	c.origin["layout"], c.origin["rates-file"] = c.where("workload-from"), c.where("workload-from")
	return nil
}

// scaleRates multiplies every rate of r by f, never to 0 B/s (which would
// mean unlimited): a positive rate stays at least 1 B/s.
func scaleRates(r audit.Rates, f float64) audit.Rates {
	out := audit.Rates{ByTopic: make(map[string]float64, len(r.ByTopic)), Default: r.Default * f, BytesPerSecond: r.BytesPerSecond}
	for t, v := range r.ByTopic {
		if v > 0 {
			v = max(1, v*f)
		}
		out.ByTopic[t] = v
	}
	if r.Default > 0 {
		out.Default = max(1, out.Default)
	}
	return out
}
