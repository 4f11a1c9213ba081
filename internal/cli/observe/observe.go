// Package observe implements `kplan observe`: sample a live cluster's
// offsets, log-dir sizes and consumer groups' committed offsets over a
// window and report the loads they imply (internal/observe), optionally
// writing a snapshot that loads as a layout and as rates.
package observe

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/spf13/cobra"

	chaoslab "github.com/kplan-dev/kplan/internal/chaos/lab"
	"github.com/kplan-dev/kplan/internal/cli/target"
	"github.com/kplan-dev/kplan/internal/clock"
	"github.com/kplan-dev/kplan/internal/cmdutil"
	"github.com/kplan-dev/kplan/internal/errkind"
	"github.com/kplan-dev/kplan/internal/iostreams"
	"github.com/kplan-dev/kplan/internal/kafka"
	"github.com/kplan-dev/kplan/internal/observe"
	"github.com/kplan-dev/kplan/internal/report"
	"github.com/kplan-dev/kplan/internal/report/observereport"
	"github.com/kplan-dev/kplan/internal/topology"
)

// Options are the parsed flags of `kplan observe`.
type Options struct {
	IO      *iostreams.IOStreams
	Version string
	// Conn is the cluster, resolved once (--cluster lab: the lab's
	// addresses and client.properties).
	Conn kafka.ConnOptions
	// Lab is true for --cluster lab; LabDir is --lab-dir.
	Lab    bool
	LabDir string
	// Topics keeps the topics it matches (--topics; "" keeps all but
	// Kafka's internal topics).
	Topics *regexp.Regexp
	Plan   observe.Plan
	// Out, when set, receives the snapshot (layout and loads).
	Out    string
	Format report.Format
	// Clock times the samples (nil: the wall clock).
	Clock clock.Clock
	// wrap, in tests, wraps the sampler (to see the raw samples).
	wrap func(observe.Sampler) observe.Sampler
}

type rawFlags struct {
	target  target.Options
	cluster string
	topics  string
	output  cmdutil.OutputFlag
}

// NewCmdObserve returns `kplan observe`. runF replaces the run function in
// tests.
func NewCmdObserve(f *cmdutil.Factory, runF func(context.Context, *Options) error) *cobra.Command {
	opts := &Options{IO: f.IOStreams, Version: f.Version}
	var raw rawFlags
	cmd := &cobra.Command{
		Use:   "observe (--bootstrap-server HOST:PORT | --cluster lab) [--window 60s] [--samples N] [--out FILE] [flags]",
		Short: "Observe a live cluster's per-partition rates, bytes on disk and readers",
		Long: `Observe what a live cluster carries, with nothing installed on the brokers:
kplan samples it --samples times (default 2) spread over --window (default
60s) and reports

- per partition: the produce rate in records/s (log end offsets) and bytes/s
  (the leader's size on disk, DescribeLogDirs), bytes/record, the bytes of
  each replica, local against remote bytes where tiered storage moved
  records off the brokers (ListOffsets earliest-local against earliest);
- per topic: the same summed, and the consumer groups reading it;
- per consumer group and topic: the fetch rate (committed offset deltas) in
  records/s and, at each partition's bytes/record, bytes/s, and the lag;
- per broker: bytes on disk, bytes in (producers to its leaders plus
  replication into its followers) and bytes out (consumer groups from its
  leaders plus replication to their followers);
- per log dir: replicas and bytes.

Rates are over the whole window; with three samples or more the tables add
the least and most of the intervals between samples. A cluster without
traffic in the window is said to have none (traffic: false in JSON) rather
than shown with rates of zero; an idle topic is marked idle.

--out writes a snapshot: a layout (Kafka's reassignment JSON with leaders,
ISR and each partition's size_bytes) that every verb reading --from loads,
with the observed loads under "observe" (schema observe_schema: 1); kplan
audit and kplan chaos read its per-topic produce rates with --rates FILE
or --rates-file FILE. kplan observe needs only Describe on the cluster, topics and groups.
A line per sample goes to stderr.`,
		Example: `  $ kplan observe --cluster lab --window 10s --samples 3
  $ kplan observe --bootstrap-server k1:9092 --window 2m --topics '^orders' -o json
  $ kplan observe --bootstrap-server k1:9092 --command-config client.properties --out /tmp/observed.json
  $ kplan audit --from /tmp/observed.json --rates /tmp/observed.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := raw.complete(opts); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runObserve(cmd.Context(), opts)
		},
	}
	fs := cmd.Flags()
	raw.target.AddFlags(fs, target.Conn|target.LabDir, target.Notes{})
	fs.StringVar(&raw.cluster, "cluster", "", "lab: observe the running kplan lab (its addresses and, when secured, its client.properties)")
	fs.DurationVar(&opts.Plan.Window, "window", 60*time.Second, "time from the first sample to the last")
	fs.IntVar(&opts.Plan.Samples, "samples", 2, "samples spread evenly over --window (2 or more)")
	fs.StringVar(&raw.topics, "topics", "", "only topics matching this regular expression (default: all but Kafka's internal topics)")
	fs.StringVar(&opts.Out, "out", "", "also write the snapshot (a layout with sizes, and the observed loads) to this JSON file, atomically")
	cmdutil.AddOutputFlag(cmd, &raw.output)
	return cmd
}

// complete parses raw into opts and validates them.
func (r *rawFlags) complete(opts *Options) error {
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
	if err := opts.Plan.Validate(); err != nil {
		return errkind.Wrap(errkind.Usage, "", cmdutil.SpellFlag(err, nil))
	}
	if r.topics != "" {
		if opts.Topics, err = regexp.Compile(r.topics); err != nil {
			return errkind.Usagef("", "--topics: %w", err)
		}
	}
	opts.LabDir = r.target.LabDir
	if opts.Conn, err = r.target.ConnOptions(); err != nil { // read once
		return err
	}
	return nil
}

// filter is the topic filter for the kafka package (nil: all but the
// internal topics).
func (o *Options) filter() func(string) bool {
	if o.Topics == nil {
		return nil
	}
	return o.Topics.MatchString
}

// conn is the connection: the lab's for --cluster lab.
func (o *Options) conn() (kafka.ConnOptions, string, error) {
	if !o.Lab {
		label := o.Conn.BootstrapServers
		if label == "" {
			label = "bootstrap.servers of " + o.Conn.CommandConfig
		}
		return o.Conn, label, nil
	}
	s, err := chaoslab.Load(o.LabDir)
	if err != nil {
		return kafka.ConnOptions{}, "", errkind.Wrap(errkind.KindOf(err), "", fmt.Errorf("--cluster lab: %w", err))
	}
	conn, err := chaoslab.Conn(s, o.Conn)
	if err != nil {
		return kafka.ConnOptions{}, "", err
	}
	return conn.WithSeeds(s.Bootstrap()), "kplan lab " + s.Dir + " (" + strings.Join(s.Bootstrap(), ",") + ")", nil
}

func runObserve(ctx context.Context, opts *Options) error {
	conn, label, err := opts.conn()
	if err != nil {
		return err
	}
	adm := kafka.NewAdmin(conn, opts.Version)
	defer adm.Close()
	if _, err := adm.Client(); err != nil {
		return errkind.Wrap(errkind.Usage, "", err) // a bad --command-config or address
	}
	before, err := snapshot(ctx, adm, opts, label)
	if err != nil {
		return err
	}
	topics := topicNames(before)
	if len(topics) == 0 {
		if opts.Topics != nil {
			return errkind.Usagef("", "--topics: no topic of %s matches %q", label, opts.Topics)
		}
		return fmt.Errorf("%s has no topic to observe", label)
	}
	var sampler observe.Sampler = adminSampler{adm: adm, topics: topics, filter: opts.filter()}
	if opts.wrap != nil {
		sampler = opts.wrap(sampler)
	}
	var first observe.Sample
	samples, err := observe.Run(ctx, sampler, opts.Clock, opts.Plan, func(i int, s observe.Sample) {
		if i == 0 {
			first = s
		}
		fmt.Fprintln(opts.IO.ErrOut, observereport.Progress(i, opts.Plan.Samples, first, s))
	})
	if err != nil {
		return err
	}
	layout, err := snapshot(ctx, adm, opts, label)
	if err != nil {
		return err
	}
	res, err := observe.Compute(layout, samples)
	if err != nil {
		return err
	}
	if opts.Out != "" {
		var b bytes.Buffer
		if err := observe.WriteSnapshot(&b, layout, res); err != nil {
			return err
		}
		if err := report.WriteFileAtomic(opts.Out, b.Bytes()); err != nil {
			return errkind.Usagef("", "--out: %w", err)
		}
	}
	return report.Render(opts.IO.Out, opts.Format, res, func() report.Document { return observereport.Document(res) })
}

// snapshot reads the layout of the topics opts keeps.
func snapshot(ctx context.Context, adm *kafka.Admin, opts *Options, label string) (*topology.Cluster, error) {
	c, err := adm.Snapshot(ctx, opts.filter())
	if err != nil {
		if errors.Is(err, kafka.ErrUnreachable) || errors.Is(err, kafka.ErrAuth) {
			return nil, err // already one line saying which
		}
		return nil, fmt.Errorf("reading the cluster at %s: %w", label, err)
	}
	return c, nil
}

func topicNames(c *topology.Cluster) []string {
	var out []string
	for i := range c.Partitions {
		if t := c.Partitions[i].Topic; len(out) == 0 || out[len(out)-1] != t {
			out = append(out, t)
		}
	}
	return out
}

// adminSampler reads a sample through the admin client: offsets first
// (the sample's time is taken just before), then log dirs, then groups.
type adminSampler struct {
	adm    *kafka.Admin
	topics []string
	filter func(string) bool
}

// Sample implements observe.Sampler.
func (a adminSampler) Sample(ctx context.Context) (observe.Sample, error) {
	offs, err := a.adm.ListOffsets(ctx, a.topics)
	if err != nil {
		return observe.Sample{}, err
	}
	reps, err := a.adm.ReplicaDirs(ctx, a.filter)
	if err != nil {
		return observe.Sample{}, err
	}
	committed, _, err := a.adm.CommittedOffsets(ctx, a.filter)
	if err != nil {
		return observe.Sample{}, err
	}
	return ToSample(offs, reps, committed), nil
}

// ToSample converts the admin client's typed results into a sample.
func ToSample(offs []kafka.PartitionOffsets, reps []kafka.ReplicaDir, committed []kafka.GroupOffset) observe.Sample {
	var s observe.Sample
	for _, o := range offs {
		s.Offsets = append(s.Offsets, observe.PartitionOffsets{Topic: o.Topic, Partition: o.Partition, End: o.End, Start: o.Start, LocalStart: o.LocalStart})
	}
	for _, r := range reps {
		s.Replicas = append(s.Replicas, observe.ReplicaSize{Topic: r.Topic, Partition: r.Partition, Broker: r.Broker, Dir: r.Dir, Bytes: r.Bytes})
	}
	for _, c := range committed {
		s.Committed = append(s.Committed, observe.Committed{Group: c.Group, Topic: c.Topic, Partition: c.Partition, Offset: c.Offset})
	}
	return s
}
