// Package audit implements `kplan audit`.
package audit

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kplan-dev/kplan/internal/audit"
	"github.com/kplan-dev/kplan/internal/cli/source"
	"github.com/kplan-dev/kplan/internal/cmdutil"
	"github.com/kplan-dev/kplan/internal/errkind"
	"github.com/kplan-dev/kplan/internal/iostreams"
	"github.com/kplan-dev/kplan/internal/observe"
	"github.com/kplan-dev/kplan/internal/report"
	"github.com/kplan-dev/kplan/internal/report/observereport"
	"github.com/kplan-dev/kplan/internal/topology"
	"github.com/kplan-dev/kplan/internal/workload"
)

// Options are the parsed flags of `kplan audit`.
type Options struct {
	IO     *iostreams.IOStreams
	Source source.Options
	By     audit.By
	FailOn audit.Severity
	Format report.Format
	// WhatIf lists brokers to simulate losing; WhatIfAll every broker.
	WhatIf    []int32
	WhatIfAll bool
	// SaveSnapshot, when set, receives the layout read (leaders, ISR) as JSON.
	SaveSnapshot string
	// Rates are the producers' per-topic rates for the predicted load;
	// RatesGiven is false when every topic weighs the same.
	Rates      audit.Rates
	RatesGiven bool
	// Keys are the record keys per topic (--keys); Saturated predicts the
	// shared SQF with full queues (--saturated).
	Keys      workload.TopicKeys
	KeysGiven bool
	Saturated bool
	// MaxOverlaps is how many overlapping pairs to list (0: all); the
	// count is always exact.
	MaxOverlaps int
	// FailoverThreshold is the excess of leaders on the busiest survivor
	// of the worst loss above which the audit warns.
	FailoverThreshold int
	// MinInsync is min.insync.replicas for the pair loss (0: Kafka's
	// default, 1).
	MinInsync int
	// RatesFlag names the flag the rates came from, for errors.
	RatesFlag string
	// Observed is the kplan observe snapshot whose loads are audited on
	// the layout (--observed, or --from when it is a snapshot);
	// LoadTolerance the band above the mean past which a broker is a
	// finding.
	Observed      string
	LoadTolerance float64
	f             *cmdutil.Factory
}

// failoverTopics is how many topics the text lists under each worst loss;
// -o json lists them all.
const failoverTopics = 10

// NewCmdAudit returns `kplan audit`. runF replaces the run function in tests.
func NewCmdAudit(f *cmdutil.Factory, runF func(context.Context, *Options) error) *cobra.Command {
	opts := &Options{IO: f.IOStreams, f: f}
	var raw rawFlags
	cmd := &cobra.Command{
		Use:   "audit (--from FILE | --bootstrap-server HOST:PORT) [flags]",
		Short: "Find where a layout skews broker load: max groups, overlaps, spreads",
		Long: `Audit a cluster layout for what skews broker load (Burato 2019, ch. 3):

- node-topic max groups: topics grouped by the set of brokers that lead them;
- partial overlaps between groups, where a broker's load depends on the
  producers' relative rates, with the brokers each pair shares: always
  counted exactly (overlap_count), the first --max-overlaps listed;
- the brokers touched by more than one group;
- leader and replica counts per broker and their skew (max/mean);
- topics spread unevenly over their leader brokers (thesis Fig 3.8), topics
  on one broker, offline and under-replicated partitions, racks holding two
  replicas of a partition, replication factors above the brokers that are
  up (a live cluster lists them; a broker named only by replicas is down).

The layout comes from a file (Kafka's reassignment JSON, with optional
"leader" and "isr" per partition, or kafka-topics --describe output) or from
a live cluster. --fail-on makes kplan exit 3 when a finding is at or above
that severity. --what-if broker-3 (or all) simulates losing brokers: each
partition a lost broker led elects its first replica in assignment order
that is alive and in sync, or goes offline when none is; -o json lists
every such election, to check against a real kill partition by partition.

The predicted load is each broker's expected share of the records when
producers write each topic at its rate (--rates, --rates-file; default:
every topic weighs 1) under partition round robin (the thesis's default
partitioner) and the thesis's Node partitioner (round robin over a topic's
leader brokers). Every other partitioner kplan chaos runs equals one of the
two in expectation; the notes under the table (predicted_equivalents in
JSON) say which and why: default, random, hash and leastbackup balance
partitions like roundrobin, sqf with one producer per topic (and
sqf-shared while producers are rate-capped) balances brokers like node.
--keys (none, uniform:N or zipf:S:N, for every topic or
as TOPIC=SPEC,...) gives hash and default keyed records, hashed by murmur2
as Kafka does, and --saturated predicts sqf-shared (one SQF for every
producer, thesis Fig 6.7) with its queues full, balancing the combined
flow; with either, every partitioner kplan chaos runs gets its own column.

--what-if with --rates (or --keys, --saturated) also predicts the load per
broker after each loss under every partitioner kplan chaos runs, on the
leaders Kafka elects: the numbers kplan chaos prints as predicted for its
after phase when it kills that broker. Max/mean is taken over the live
brokers leading a partition of a topic written at a positive rate (the
leaders chaos measures), so a lost broker does not count.

The failover section (failover in JSON) is always there: for the worst
loss of one broker and, with two racks or more, of every broker of one
rack, the busiest survivor's leaders against the optimum, ceil(online
partitions / survivors), the least any replica order of the same replica
sets could give it; the excess between them, the partitions the loss takes
offline, each topic's own worst excess (the first 10 in text, all in JSON),
and the predicted load after that loss under round robin (franz-go's
default for keyless records) at --rates, every topic weighing 1 without
them. An excess above --failover-threshold (default 1 leader) is a warning.
With a replication factor of 3 or more it also names the worst pair of
brokers lost together: the partitions it leaves with fewer in-sync replicas
than min.insync.replicas (--min-insync for every topic; by default each
topic's own as a live cluster reports it, Kafka's default 1 for a layout
file), and whether a placement could avoid
them (not when RF - 2 < min ISR: some pair always holds two replicas).`,
		Example: `  $ kplan audit --from testdata/layouts/thesis-fig3.3.json
  $ kplan audit --from testdata/layouts/kafkakit-optimize-input.json -o json
  $ kafka-topics.sh --bootstrap-server k1:9092 --describe | kplan audit --from -
  $ kplan audit --from testdata/layouts/kafkakit-optimize-input.json --what-if all
  $ kplan audit --from testdata/layouts/kafkakit-optimize-input.json --what-if broker-1760 -o json
  $ kplan generate layout --brokers 1000 --topics 30000 --partitions 2000000 --replication-factor 3 --scatter 1 --out /tmp/scattered.json
  $ kplan audit --from /tmp/scattered.json --max-overlaps 100
  $ kplan audit --from testdata/layouts/thesis-6.4.json --rates A=30MB/s,B=20MB/s
  $ kplan audit --from testdata/layouts/thesis-6-4.json --rates A=2,B=1 --what-if broker-2
  $ kplan audit --from testdata/layouts/thesis-6-4.json --rates A=2,B=1 --keys A=zipf:1.2:1000,B=uniform:100 --saturated
  $ kplan audit --bootstrap-server 127.0.0.1:19092 --by replicas --fail-on warning
  $ kplan observe --cluster lab --window 30s --out observed.json && kplan audit --from observed.json --rates observed.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := opts.complete(cmd, &raw); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runAudit(cmd.Context(), opts)
		},
	}
	addFlags(cmd, opts, &raw)
	return cmd
}

// rawFlags are the flags of `kplan audit` as typed, before complete parses
// them into Options.
type rawFlags struct {
	out                                cmdutil.OutputFlag
	by, failOn, rates, ratesFile, keys string
	whatIf                             []string
}

// addFlags declares the flags of `kplan audit` on cmd, into opts and raw.
func addFlags(cmd *cobra.Command, opts *Options, raw *rawFlags) {
	source.AddFlags(cmd, &opts.Source)
	cmd.Flags().StringVar(&raw.by, "by", "leaders", "group topics by their leader brokers or by every replica's broker: leaders or replicas")
	cmd.Flags().StringVar(&opts.SaveSnapshot, "save-snapshot", "", "also write the layout read (with leaders and ISR) to this JSON file, to audit offline later with --from")
	cmd.Flags().StringSliceVar(&raw.whatIf, "what-if", nil, "simulate losing brokers: broker-N (repeatable, comma list) or all")
	cmd.Flags().StringVar(&raw.rates, "rates", "", "producers' rate per topic for the predicted load: topic=100MB/s,... or relative weights topic=3,...; *=rate for the others; or a kplan observe --out snapshot's file name (default: every topic weighs 1)")
	cmd.Flags().StringVar(&raw.ratesFile, "rates-file", "", "file of topic=rate lines for the predicted load (# comments), or a kplan observe --out snapshot: its observed bytes/s per topic")
	cmd.Flags().StringVar(&raw.keys, "keys", "", "record keys for the predicted load of hash and default: none, uniform:N or zipf:S:N for every topic, or TOPIC=SPEC,... (*=SPEC for the others)")
	cmd.Flags().BoolVar(&opts.Saturated, "saturated", false, "predict sqf-shared with producers writing as fast as they can (queues full: the combined flow is balanced); default: rate-capped, as node")
	cmd.Flags().IntVar(&opts.MaxOverlaps, "max-overlaps", audit.MaxOverlaps, "list at most this many overlapping pairs of max groups (0: all); overlap_count always counts them all")
	cmd.Flags().IntVar(&opts.FailoverThreshold, "failover-threshold", audit.DefaultFailoverThreshold, "warn when the busiest survivor of the worst broker or rack loss leads more than this many partitions above the optimum, ceil(online partitions / survivors)")
	cmd.Flags().IntVar(&opts.MinInsync, "min-insync", 0, "min.insync.replicas every topic is judged against for the worst pair of broker losses (default: each topic's own, read from a live cluster; Kafka's default, 1, for --from)")
	cmd.Flags().StringVar(&opts.Observed, "observed", "", "a kplan observe --out snapshot whose observed loads (disk, bytes in, bytes out per broker, and after each broker's loss) are audited on this layout (default: --from, when it is one)")
	cmd.Flags().Float64Var(&opts.LoadTolerance, "load-tolerance", audit.DefaultLoadTolerance, "with observed loads: warn about brokers above the mean by more than this fraction in disk, bytes in or bytes out")
	cmd.Flags().StringVar(&raw.failOn, "fail-on", "", "exit 3 when any finding is at or above this severity: info, warning or error")
	cmdutil.AddOutputFlag(cmd, &raw.out)
}

// complete parses raw and the flags cmd was given into o and validates them.
func (o *Options) complete(cmd *cobra.Command, raw *rawFlags) error {
	var err error
	if o.Format, err = raw.out.Format(); err != nil {
		return err
	}
	switch raw.by {
	case "leaders":
		o.By = audit.ByLeaders
	case "replicas":
		o.By = audit.ByReplicas
	default:
		return errkind.Usagef("", "--by: want leaders or replicas, got %q", raw.by)
	}
	switch raw.failOn {
	case "", "never":
	case "info", "warning", "error":
		o.FailOn = audit.Severity(raw.failOn)
	default:
		return errkind.Usagef("", "--fail-on: want info, warning or error, got %q", raw.failOn)
	}
	if err := o.parseWhatIf(raw.whatIf); err != nil {
		return err
	}
	if cmd.Flags().Changed("min-insync") && o.MinInsync < 1 {
		return errkind.Usagef("", "--min-insync: want 1 or more, got %d", o.MinInsync)
	}
	if !(o.LoadTolerance >= 0) || math.IsInf(o.LoadTolerance, 0) {
		return errkind.Usagef("", "--load-tolerance: want a fraction of 0 or more, got %v", o.LoadTolerance)
	}
	if o.FailoverThreshold < 0 {
		return errkind.Usagef("", "--failover-threshold: want 0 or more leaders, got %d", o.FailoverThreshold)
	}
	if o.MaxOverlaps < 0 {
		return errkind.Usagef("", "--max-overlaps: want 0 (all) or more, got %d", o.MaxOverlaps)
	}
	if err := o.Source.Validate(); err != nil {
		return err
	}
	if err := o.parseRates(raw.rates, raw.ratesFile); err != nil {
		return err
	}
	if cmd.Flags().Changed("keys") {
		if o.Keys, err = workload.ParseTopicKeys(raw.keys); err != nil {
			if errkind.FieldOf(err) == workload.FieldKeys {
				return cmdutil.SpellFlag(err, nil)
			}
			return errkind.Usagef("", "--keys: %w", err)
		}
		o.KeysGiven = true
	}
	return nil
}

// parseWhatIf parses --what-if: broker-N or all.
func (o *Options) parseWhatIf(whatIf []string) error {
	for _, w := range whatIf {
		if w == "all" {
			o.WhatIfAll = true
			continue
		}
		id, err := strconv.ParseInt(strings.TrimPrefix(w, "broker-"), 10, 32)
		if err != nil || id < 0 {
			return errkind.Usagef("", "--what-if: %q is not broker-N or all", w)
		}
		o.WhatIf = append(o.WhatIf, int32(id))
	}
	return nil
}

// parseRates parses --rates or --rates-file into o.Rates; every topic
// weighs the same without either.
func (o *Options) parseRates(rates, ratesFile string) error {
	var err error
	o.Rates = audit.EqualRates()
	switch {
	case rates != "" && ratesFile != "":
		return errkind.Usagef("", "--rates and --rates-file: give one, not both")
	case rates != "":
		if o.Rates, err = audit.ParseRatesArg(rates, os.ReadFile); err != nil {
			return errkind.Usagef("", "--rates: %w", err)
		}
		o.RatesGiven, o.RatesFlag = true, "--rates"
	case ratesFile != "":
		data, err := os.ReadFile(ratesFile)
		if err != nil {
			return errkind.Usagef("", "--rates-file: %w", err)
		}
		if o.Rates, err = audit.ParseRatesFile(data, ratesFile); err != nil {
			return errkind.Usagef("", "--rates-file: %w", err)
		}
		o.RatesGiven, o.RatesFlag = true, "--rates-file"
	}
	return nil
}

func runAudit(ctx context.Context, opts *Options) error {
	c, err := opts.Source.Load(ctx, opts.f)
	if err != nil {
		return err
	}
	if err := checkTopics(c, opts); err != nil {
		return err
	}
	if err := saveSnapshot(c, opts.SaveSnapshot); err != nil {
		return err
	}
	r := audit.RunWith(c, audit.Options{By: opts.By, ListOverlaps: opts.MaxOverlaps})
	po := audit.PredictOptions{Keys: opts.Keys}
	if opts.Saturated {
		po.Shares.Regime = audit.Saturated
	}
	predicting := opts.RatesGiven || opts.KeysGiven || opts.Saturated
	if predicting {
		if err := r.AddPredictionWith(c, opts.Rates, opts.RatesGiven, po); err != nil {
			return err
		}
	}
	if err := addWhatIf(&r, c, opts, predicting, po); err != nil {
		return err
	}
	fo := failoverOptions(ctx, c, opts)
	if err := r.AddFailover(c, fo); err != nil {
		return err
	}
	if err := addObserved(&r, c, opts); err != nil {
		return err
	}
	if err := report.Render(opts.IO.Out, opts.Format, r, func() report.Document { return doc(r) }); err != nil {
		return err
	}
	if opts.FailOn != "" && r.AtLeast(opts.FailOn) {
		return errkind.Silent(errkind.Negative)
	}
	return nil
}

// checkTopics fails when --rates or --keys names a topic c does not have.
func checkTopics(c *topology.Cluster, opts *Options) error {
	for _, t := range slices.Sorted(maps.Keys(opts.Rates.ByTopic)) {
		if !hasTopic(c, t) {
			return errkind.Usagef("", "%s: no topic %q in this layout", opts.RatesFlag, t)
		}
	}
	for _, t := range slices.Sorted(maps.Keys(opts.Keys.ByTopic)) {
		if !hasTopic(c, t) {
			return errkind.Usagef("", "--keys: no topic %q in this layout", t)
		}
	}
	return nil
}

// saveSnapshot writes c to path (--save-snapshot) when path is set.
func saveSnapshot(c *topology.Cluster, path string) error {
	if path == "" {
		return nil
	}
	var b bytes.Buffer
	if err := topology.WriteSnapshot(&b, c); err != nil {
		return err
	}
	if err := report.WriteFileAtomic(path, b.Bytes()); err != nil {
		return errkind.Usagef("", "--save-snapshot: %w", err)
	}
	return nil
}

// addWhatIf adds to r the losses --what-if simulates and, when predicting,
// the load after each.
func addWhatIf(r *audit.Report, c *topology.Cluster, opts *Options, predicting bool, po audit.PredictOptions) error {
	if !opts.WhatIfAll && len(opts.WhatIf) == 0 {
		return nil
	}
	for _, id := range opts.WhatIf {
		if _, ok := c.Broker(id); !ok {
			return errkind.Usagef("", "--what-if: no broker-%d in this layout", id)
		}
	}
	lost := opts.WhatIf
	if opts.WhatIfAll {
		lost = nil
	}
	r.AddWhatIf(c, opts.By, lost)
	if predicting {
		if err := r.AddLossPredictions(c, opts.Rates, opts.RatesGiven, po, lost); err != nil {
			return err
		}
	}
	return nil
}

// failoverOptions are the options of the failover section, with each
// topic's min.insync.replicas read from a live cluster when needed.
func failoverOptions(ctx context.Context, c *topology.Cluster, opts *Options) audit.FailoverOptions {
	fo := audit.FailoverOptions{Rates: opts.Rates, RatesGiven: opts.RatesGiven, Threshold: opts.FailoverThreshold, MinInsync: opts.MinInsync}
	if opts.MinInsync == 0 && opts.Source.From == "" && maxRF(c) >= 3 {
		// The pair loss judges each topic by its own min.insync.replicas. A
		// user allowed to describe topics but not their configs still gets
		// the audit, judged by Kafka's default, and a line saying so.
		var err error
		if fo.MinInsyncByTopic, err = opts.Source.MinInsync(ctx, opts.f, topicNames(c)); err != nil {
			fmt.Fprintf(opts.IO.ErrOut, "warning: reading min.insync.replicas: %v; the worst pair of broker losses is judged by Kafka's default, %d (--min-insync sets it)\n", err, audit.DefaultMinInsync)
		}
	}
	return fo
}

// maxRF is the largest replication factor in c.
func maxRF(c *topology.Cluster) int {
	rf := 0
	for i := range c.Partitions {
		rf = max(rf, len(c.Partitions[i].Replicas))
	}
	return rf
}

// topicNames lists c's topics in order.
func topicNames(c *topology.Cluster) []string {
	var out []string
	for i := range c.Partitions {
		if t := c.Partitions[i].Topic; len(out) == 0 || out[len(out)-1] != t {
			out = append(out, t)
		}
	}
	return out
}

func hasTopic(c *topology.Cluster, name string) bool {
	for i := range c.Partitions {
		if c.Partitions[i].Topic == name {
			return true
		}
	}
	return false
}

func ints[T ~int | ~int32](v []T) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = strconv.Itoa(int(x))
	}
	return strings.Join(s, ",")
}

func doc(r audit.Report) report.Document {
	d := report.Document{Title: fmt.Sprintf("kplan audit: %d brokers, %d topics, %d partitions; groups by %s", r.Brokers, r.Topics, r.Partitions, r.By)}
	d.Sections = append(d.Sections, groupsSection(r), overlapsSection(r))
	if len(r.BrokerGroups) > 0 {
		d.Sections = append(d.Sections, brokerGroupsSection(r))
	}
	d.Sections = append(d.Sections, loadSection(r))
	if len(r.Predicted) > 0 {
		d.Sections = append(d.Sections, predictedSection(r))
	}
	if len(r.WhatIf) > 0 {
		d.Sections = append(d.Sections, whatIfSection(r))
	}
	for _, l := range r.PredictedAfterLoss {
		d.Sections = append(d.Sections, lossSection(r, l))
	}
	if r.Failover != nil {
		d.Sections = append(d.Sections, failoverSections(r)...)
	}
	if r.Observed != nil {
		d.Sections = append(d.Sections, observedSection(r.Observed))
	}
	d.Sections = append(d.Sections, findingsSection(r))
	return d
}

// observedSection is the observed loads on the layout: per broker, then
// the skews and the worst loss.
func observedSection(o *audit.ObservedLoad) report.Section {
	s := report.Section{Title: fmt.Sprintf("Observed load (kplan observe, %.0f s window; findings above the mean by more than %.0f%%)", o.WindowSeconds, 100*o.Tolerance),
		Header: []string{"BROKER", "LEADERS", "ON DISK", "BYTES IN/S", "BYTES OUT/S"}}
	for _, b := range o.Brokers {
		s.Rows = append(s.Rows, []string{strconv.Itoa(int(b.Broker)), strconv.Itoa(b.Leaders), observereport.Bytes(b.Bytes), observereport.Rate(b.BytesIn), observereport.Rate(b.BytesOut)})
	}
	s.Rows = append(s.Rows, []string{"max/mean", "", skewCell(o.Disk), skewCell(o.In), skewCell(o.Out)})
	if w := o.WorstLoss; w != nil {
		s.Notes = append(s.Notes, fmt.Sprintf("worst loss by bytes out: broker %d; its survivors' bytes out max/mean %.3f (busiest broker %d, %s), bytes in max/mean %.3f",
			w.Broker, w.Out.MaxOverMean, w.Out.Busiest, observereport.Rate(w.Out.Max), w.In.MaxOverMean))
	} else if o.LossNote != "" {
		s.Notes = append(s.Notes, "losses: "+o.LossNote)
	}
	s.Notes = append(s.Notes, "the snapshot's per-partition rates and consumers on this layout's leaders and replicas: in = producers to its leaders + replication into its followers; out = consumers from its leaders + replication to their followers")
	return s
}

func skewCell(k audit.LoadSkew) string {
	if k.Mean == 0 {
		return "-"
	}
	return fmt.Sprintf("%.3f (%d)", k.MaxOverMean, k.Busiest)
}

// groupsSection lists the max groups.
func groupsSection(r audit.Report) report.Section {
	groups := report.Section{Title: fmt.Sprintf("Max groups (%d)", len(r.MaxGroups)), Header: []string{"GROUP", "BROKERS", "TOPICS"}}
	for _, g := range r.MaxGroups {
		groups.Rows = append(groups.Rows, []string{strconv.Itoa(g.ID), ints(g.Brokers), strings.Join(g.Topics, ",")})
	}
	return groups
}

// overlapsSection lists the partial overlaps between max groups.
func overlapsSection(r audit.Report) report.Section {
	ovTitle := fmt.Sprintf("Partial overlaps (%d)", r.OverlapCount)
	if r.OverlapsTruncated {
		ovTitle = fmt.Sprintf("Partial overlaps (%d, the first %d listed; --max-overlaps 0 lists all)", r.OverlapCount, len(r.Overlaps))
	}
	ov := report.Section{Title: ovTitle, Header: []string{"GROUPS", "SHARED BROKERS"}}
	for _, o := range r.Overlaps {
		ov.Rows = append(ov.Rows, []string{ints(o.Groups[:]), ints(o.SharedBrokers)})
	}
	if r.OverlapCount == 0 {
		ov.Header, ov.Notes = nil, []string{"none: every pair of max groups is identical or disjoint"}
	}
	return ov
}

// brokerGroupsSection lists the brokers in more than one max group.
func brokerGroupsSection(r audit.Report) report.Section {
	bv := report.Section{Title: "Brokers in more than one group", Header: []string{"BROKER", "GROUPS"}}
	for _, b := range r.BrokerGroups {
		bv.Rows = append(bv.Rows, []string{strconv.Itoa(int(b.Broker)), ints(b.Groups)})
	}
	return bv
}

// loadSection lists leaders and replicas per broker and their skew.
func loadSection(r audit.Report) report.Section {
	ld := report.Section{Title: "Load per broker", Header: []string{"BROKER", "RACK", "LEADERS", "REPLICAS"}}
	for _, l := range r.Load {
		ld.Rows = append(ld.Rows, []string{strconv.Itoa(int(l.Broker)), l.Rack, strconv.Itoa(l.Leaders), strconv.Itoa(l.Replicas)})
	}
	ld.Notes = []string{
		fmt.Sprintf("leaders: %d-%d per broker, mean %g, max/mean %g", r.LeaderSkew.Min, r.LeaderSkew.Max, r.LeaderSkew.Mean, r.LeaderSkew.MaxOverMean),
		fmt.Sprintf("replicas: %d-%d per broker, mean %g, max/mean %g", r.ReplicaSkew.Min, r.ReplicaSkew.Max, r.ReplicaSkew.Mean, r.ReplicaSkew.MaxOverMean),
	}
	return ld
}

// whatIfSection lists what each simulated broker loss does (--what-if).
func whatIfSection(r audit.Report) report.Section {
	wi := report.Section{Title: "What if a broker is lost", Header: []string{"LOST", "LEADERS MOVED", "OFFLINE", "ONE ISR LEFT", "BUSIEST", "LEADERS MAX/MEAN", "TOPICS ON NEW BROKERS", "NEW OVERLAPS"}}
	for _, w := range r.WhatIf {
		wi.Rows = append(wi.Rows, []string{fmt.Sprintf("broker-%d", w.Broker), strconv.Itoa(w.LeadersMoved), strconv.Itoa(w.OfflineCount),
			strconv.Itoa(w.SingleISRCount), fmt.Sprintf("broker-%d (%d)", w.BusiestBroker, w.LeadersMax), strconv.FormatFloat(w.LeadersMaxOverMean, 'f', -1, 64),
			strconv.Itoa(w.TopicsGainingBrokers), strconv.Itoa(w.NewOverlaps)})
	}
	wi.Notes = []string{"each partition the lost broker led elects its first replica in assignment order that is alive and in sync",
		"leaders moved: partitions that elect a new leader; offline: those left with no live in-sync replica, not counted as moved (-o json lists each one's new leader under elections)",
		"new overlaps: pairs of max groups that share a broker after the loss although none of their topics shared a leader broker before"}
	return wi
}

// findingsSection lists the findings, or none.
func findingsSection(r audit.Report) report.Section {
	fs := report.Section{Title: fmt.Sprintf("Findings (%d)", len(r.Findings)), Header: []string{"SEVERITY", "RULE", "SUBJECT", "MESSAGE"}}
	for _, f := range r.Findings {
		fs.Rows = append(fs.Rows, []string{string(f.Severity), f.Rule, f.Subject, f.Message})
	}
	if len(r.Findings) == 0 {
		fs.Header, fs.Notes = nil, []string{"none"}
	}
	return fs
}

// loadUnit formats a predicted load in the rates' unit.
func loadUnit(r audit.Report) func(float64) string {
	if r.RatesBytesPerSecond {
		return func(x float64) string { return strconv.FormatFloat(x/1e6, 'g', 4, 64) + "MB/s" }
	}
	return func(x float64) string { return strconv.FormatFloat(x, 'g', 4, 64) }
}

// assumptions are the notes on keys and the shared SQF's regime.
func assumptions(r audit.Report) []string {
	var notes []string
	if r.Keys != "" {
		notes = append(notes, "keys: "+r.Keys+" (hash, default and kip794 send keyed records by murmur2, as Kafka does)")
	}
	if r.SQFSharedRegime != "" {
		notes = append(notes, "sqf-shared: "+r.SQFSharedRegime+" (--saturated)")
	}
	return notes
}

func predictedSection(r audit.Report) report.Section {
	title := "Predicted load per broker (every topic weighs 1)"
	unit := loadUnit(r)
	if r.Rates == "given" {
		title = "Predicted load per broker at the given rates"
	}
	sec := report.Section{Title: title, Header: []string{"BROKER"}}
	for _, p := range r.Predicted {
		sec.Header = append(sec.Header, strings.ToUpper(p.Partitioner))
	}
	for i := range r.Predicted[0].Brokers {
		row := []string{strconv.Itoa(int(r.Predicted[0].Brokers[i].Broker))}
		for _, p := range r.Predicted {
			b := p.Brokers[i]
			row = append(row, fmt.Sprintf("%s (%.1f%%)", unit(b.Load), 100*b.Share))
		}
		sec.Rows = append(sec.Rows, row)
	}
	for _, p := range r.Predicted {
		sec.Notes = append(sec.Notes, fmt.Sprintf("%s: busiest broker %d, max/mean %g", p.Partitioner, p.BusiestBroker, p.MaxOverMean))
	}
	sec.Notes = append(sec.Notes, "roundrobin spreads a topic over its writable partitions, node over the brokers leading it")
	for _, e := range r.PredictedEquivalents {
		sec.Notes = append(sec.Notes, fmt.Sprintf("%s equals %s in expectation: %s", e.Partitioner, e.Equals, e.Why))
	}
	if len(r.PredictedEquivalents) == 0 {
		for _, p := range r.Predicted {
			sec.Notes = append(sec.Notes, p.Partitioner+": "+p.Basis)
		}
	}
	sec.Notes = append(sec.Notes, assumptions(r)...)
	return sec
}

// lossSection is the predicted load per broker under every partitioner
// after one loss: brokers as rows, the lost one marked, max/mean last.
func lossSection(r audit.Report, l audit.LossPrediction) report.Section {
	unit := loadUnit(r)
	rates := "at the given rates"
	if r.Rates != "given" {
		rates = "every topic weighs 1"
	}
	sec := report.Section{Title: fmt.Sprintf("Predicted load per broker after losing broker %d (%s)", l.Lost, rates), Header: []string{"BROKER"}}
	for _, p := range l.Predictions {
		sec.Header = append(sec.Header, strings.ToUpper(p.Partitioner))
	}
	for i, b := range l.Predictions[0].Brokers {
		row := []string{strconv.Itoa(int(b.Broker))}
		for _, p := range l.Predictions {
			if b.Broker == l.Lost {
				row = append(row, "lost")
				continue
			}
			row = append(row, fmt.Sprintf("%s (%.1f%%)", unit(p.Brokers[i].Load), 100*p.Brokers[i].Share))
		}
		sec.Rows = append(sec.Rows, row)
	}
	row := []string{"max/mean"}
	for _, p := range l.Predictions {
		row = append(row, strconv.FormatFloat(p.MaxOverMean, 'f', -1, 64))
	}
	sec.Rows = append(sec.Rows, row)
	sec.Notes = append(sec.Notes,
		fmt.Sprintf("leaders elected as in the what-if above; shares and max/mean over the live leaders of the written topics, brokers %s: kplan chaos's predicted shares for its after phase", ints(l.SkewBrokers)))
	for _, p := range l.Predictions {
		sec.Notes = append(sec.Notes, p.Partitioner+": "+p.Basis)
	}
	sec.Notes = append(sec.Notes, assumptions(r)...)
	return sec
}

// failoverSections are the worst broker and rack loss, one row each, then
// the topics furthest above their optimum under each.
func failoverSections(r audit.Report) []report.Section {
	f := r.Failover
	unit := loadUnit(r)
	if f.RatesBytesPerSecond != r.RatesBytesPerSecond {
		unit = loadUnit(audit.Report{RatesBytesPerSecond: f.RatesBytesPerSecond})
	}
	sec := report.Section{Title: "Failover: the worst loss", Header: []string{"DOMAIN", "LOST", "SURVIVORS", "LEADERS MOVED", "OFFLINE", "BUSIEST", "OPTIMUM", "EXCESS", "ROUNDROBIN MAX/MEAN"}}
	var topics []report.Section
	for _, w := range []*audit.WorstFailover{f.Broker, f.Rack} {
		if w == nil {
			continue
		}
		l := w.Worst
		lost := fmt.Sprintf("broker-%d", l.Lost[0])
		if l.Domain == audit.DomainRack {
			lost = fmt.Sprintf("%s (%d %s)", l.Rack, len(l.Lost), plural(len(l.Lost), "broker", "brokers"))
		}
		sec.Rows = append(sec.Rows, []string{string(l.Domain), lost, strconv.Itoa(l.Survivors), strconv.Itoa(l.Moved), strconv.Itoa(l.Offline),
			fmt.Sprintf("broker-%d (%d)", l.Busiest, l.BusiestLeaders), strconv.Itoa(l.Optimum), strconv.Itoa(l.Excess),
			fmt.Sprintf("%g (broker-%d: %s, mean %s)", w.RoundRobin.MaxOverMean, w.RoundRobin.Busiest, unit(w.RoundRobin.Max), unit(w.RoundRobin.Mean))})
		if len(w.Topics) == 0 {
			continue
		}
		title := fmt.Sprintf("Failover per topic, %s losses: %d %s above the optimum", l.Domain, len(w.Topics), plural(len(w.Topics), "topic", "topics"))
		if len(w.Topics) > failoverTopics {
			title += fmt.Sprintf(" (the first %d; -o json lists all)", failoverTopics)
		}
		ts := report.Section{Title: title, Header: []string{"TOPIC", "LOST", "BUSIEST", "OPTIMUM", "EXCESS"}}
		for _, t := range w.Topics[:min(len(w.Topics), failoverTopics)] {
			lost := "broker-" + ints(t.Lost)
			if t.Rack != "" {
				lost = t.Rack
			}
			ts.Rows = append(ts.Rows, []string{t.Topic, lost, fmt.Sprintf("broker-%d (%d)", t.Busiest, t.BusiestLeaders), strconv.Itoa(t.Optimum), strconv.Itoa(t.Excess)})
		}
		ts.Notes = []string{"each topic's own worst loss; its optimum is ceil(its online partitions / the survivors holding one of its replicas)"}
		topics = append(topics, ts)
	}
	if len(sec.Rows) == 0 {
		sec.Header, sec.Notes = nil, []string{"no live broker to lose"}
		return []report.Section{sec}
	}
	rates := "at the given rates"
	if f.Rates != "given" {
		rates = "every topic weighs 1 (no --rates given)"
	}
	sec.Notes = []string{
		"the loss (of a broker, or of every broker of a rack) leaving its busiest survivor furthest above the optimum, ceil(online partitions / survivors): the least any replica order of the same replica sets could give it",
		"each partition the loss leads elects its first replica in assignment order that is alive and in sync; offline: none is left",
		"roundrobin max/mean: the predicted load after that loss under round robin (franz-go's default for keyless records), " + rates + ", over the live leaders of the written topics",
		fmt.Sprintf("a warning when the excess is above %d (--failover-threshold)", f.Threshold),
	}
	out := append([]report.Section{sec}, topics...)
	if p := f.Pair; p != nil {
		out = append(out, pairSection(p))
	}
	return out
}

// pairSection is the worst pair of broker losses for min ISR.
func pairSection(p *audit.PairLoss) report.Section {
	sec := report.Section{Title: "Failover: the worst pair of broker losses, " + p.MinInsyncText(),
		Header: []string{"LOST", "UNDER MIN ISR", "OFFLINE", "ALREADY UNDER", "UNAVOIDABLE", "AVOIDABLE", "LEAST ANY PLACEMENT"}}
	unavoidable := 0
	for _, u := range p.Unavoidable {
		unavoidable += u.Partitions
	}
	sec.Rows = [][]string{{fmt.Sprintf("broker-%d,broker-%d", p.Lost[0], p.Lost[1]), strconv.Itoa(p.UnderMinISR), strconv.Itoa(p.Offline),
		strconv.Itoa(p.AlreadyUnder), strconv.Itoa(unavoidable), strconv.Itoa(p.Avoidable), strconv.Itoa(p.LeastAnyPlacement)}}
	sec.Notes = []string{fmt.Sprintf("of %d pairs of live brokers, the one leaving the most partitions with fewer in-sync replicas than min.insync.replicas (acks=all writes to them fail)", p.Pairs)}
	if p.UnderMinISR == 0 {
		sec.Rows[0][0] = "none"
		sec.Notes[0] = fmt.Sprintf("none of the %d pairs of live brokers leaves a partition with fewer in-sync replicas than %s (--min-insync)", p.Pairs, p.MinInsyncText())
	}
	for _, u := range p.Unavoidable {
		sec.Notes = append(sec.Notes, fmt.Sprintf("%d %s unavoidable with RF %d and min ISR %d: some pair of brokers always holds two of their replicas, whatever the placement",
			u.Partitions, plural(u.Partitions, "partition", "partitions"), u.RF, u.MinInsync))
	}
	if p.Avoidable > 0 {
		sec.Notes = append(sec.Notes, fmt.Sprintf("%d avoidable: their replication factor survives two losses, their ISR is short already", p.Avoidable))
	}
	sec.Notes = append(sec.Notes, "least any placement: the mean over all pairs for these replication factors with full ISRs, which the worst pair can never be below")
	if len(p.Examples) > 0 {
		sec.Notes = append(sec.Notes, "e.g. "+strings.Join(p.Examples, ", "))
	}
	return sec
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// addObserved audits the observed loads of --observed, or of --from when it
// is a kplan observe snapshot, on c.
func addObserved(r *audit.Report, c *topology.Cluster, opts *Options) error {
	path, flag := opts.Observed, "--observed"
	if path == "" {
		path, flag = opts.Source.From, "--from"
	}
	if path == "" || path == "-" {
		return nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return errkind.Usagef("", "%s: %w", flag, err)
	}
	if opts.Observed == "" && !observe.MayBeSnapshot(data) {
		return nil // a layout, which --from already read: no loads in it
	}
	obs, err := observe.ReadSnapshot(data, path)
	if err != nil {
		return errkind.Usagef("", "%s: %w", flag, err)
	}
	if obs == nil {
		if opts.Observed != "" {
			return errkind.Usagef("", "--observed: %s is not a snapshot of kplan observe (--out): no observe_schema", path)
		}
		return nil
	}
	r.AddObserved(c, obs, opts.LoadTolerance)
	return nil
}
