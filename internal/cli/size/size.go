package size

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/kplan-dev/kplan/internal/cmdutil"
	"github.com/kplan-dev/kplan/internal/errkind"
	"github.com/kplan-dev/kplan/internal/iostreams"
	"github.com/kplan-dev/kplan/internal/report"
	"github.com/kplan-dev/kplan/internal/sizing"
)

// Options are the parsed flags of `kplan size`.
type Options struct {
	IO *iostreams.IOStreams

	Input    sizing.Input
	Strategy string
	// Strategies are the strategies Strategy names, in output order.
	Strategies []sizing.Strategy
	Seed       uint64
	Draws      int
	Metadata   sizing.Metadata
	Cores      int64
	Format     report.Format
}

// commonFlags are the flags size and size sweep share besides the inputs.
type commonFlags struct {
	in       *inputs
	output   cmdutil.OutputFlag
	strategy string
	compat   string
	seed     uint64
	draws    int
	metadata string
	cores    int64
}

// planKeys are the keys a plan file may hold: every input and the options.
var planKeys = func() map[string]bool {
	m := map[string]bool{"strategy": true, "compat": true, "seed": true, "draws": true, "metadata": true, "cores-per-broker": true}
	for _, s := range specs {
		m[s.flag] = true
	}
	return m
}()

// strategyNames maps each --strategy value to the strategies it runs, in
// output order; size and size sweep take the same values.
var strategyNames = map[string][]sizing.Strategy{
	"bromin":  {sizing.StrategyBroMin},
	"bromax":  {sizing.StrategyBroMax},
	"both":    {sizing.StrategyBroMin, sizing.StrategyBroMax},
	"ms-cnfl": {sizing.StrategyMSCNFL},
	"all":     {sizing.StrategyBroMin, sizing.StrategyBroMax, sizing.StrategyMSCNFL},
}

const strategyUsage = "bromin, bromax, both (bromin and bromax), ms-cnfl or all (the three)"

func (c *commonFlags) add(cmd *cobra.Command, defaultStrategy string, defaultDraws int) {
	c.in = newInputs()
	fs := cmd.Flags()
	c.in.addFlags(fs)
	fs.StringVar(&c.strategy, "strategy", defaultStrategy, strategyUsage)
	fs.StringVar(&c.compat, "compat", "", "throughput rounding: empty for the paper's ceil(T/Tp), kafka-hdd for the authors' code (T/Tp rounded half to even)")
	fs.Uint64Var(&c.seed, "seed", 1, "random seed for ms-cnfl")
	fs.IntVar(&c.draws, "draws", defaultDraws, "ms-cnfl draws")
	fs.StringVar(&c.metadata, "metadata", "kraft", "metadata system for partition-count warnings: kraft or zookeeper")
	fs.Int64Var(&c.cores, "cores-per-broker", 0, "cores per broker, for per-core partition guidance (0: unknown)")
	cmdutil.AddOutputFlag(cmd, &c.output)
}

func (c *commonFlags) options(cmd *cobra.Command, f *cmdutil.Factory) (*Options, error) {
	if err := loadPlan(cmd, c.in, planKeys); err != nil {
		return nil, err
	}
	opts := &Options{IO: f.IOStreams, Strategy: c.strategy, Seed: c.seed, Draws: c.draws, Cores: c.cores}
	var err error
	if opts.Format, err = c.output.Format(); err != nil {
		return nil, err
	}
	var ok bool
	if opts.Strategies, ok = strategyNames[c.strategy]; !ok {
		return nil, errkind.Usagef("", "%s: unknown strategy %q (want %s)", c.in.where("strategy"), c.strategy, strategyUsage)
	}
	switch c.compat {
	case "", "paper":
		c.compat = ""
	case string(sizing.CompatKafkaHDD):
	default:
		return nil, errkind.Usagef("", "%s: unknown compat %q (want kafka-hdd)", c.in.where("compat"), c.compat)
	}
	switch sizing.Metadata(c.metadata) {
	case sizing.KRaft, sizing.ZooKeeper:
		opts.Metadata = sizing.Metadata(c.metadata)
	default:
		return nil, errkind.Usagef("", "%s: unknown metadata system %q (want kraft or zookeeper)", c.in.where("metadata"), c.metadata)
	}
	if c.draws < 1 || c.draws > 10_000_000 {
		return nil, errkind.Usagef("", "%s: want 1 to 10000000 draws, got %d", c.in.where("draws"), c.draws)
	}
	if c.cores < 0 {
		return nil, errkind.Usagef("", "%s: must not be negative", c.in.where("cores-per-broker"))
	}
	if opts.Input, err = c.in.build(c.compat); err != nil {
		return nil, err
	}
	return opts, nil
}

// NewCmdSize returns `kplan size`. runF replaces the run function in tests.
func NewCmdSize(f *cmdutil.Factory, runF func(context.Context, *Options) error) *cobra.Command {
	var c commonFlags
	cmd := &cobra.Command{
		Use:   "size [flags]",
		Short: "Size a topic's partitions and brokers (BroMin, BroMax, MS-CNFL)",
		Long: `Size a topic from first principles with the integer programme of Raptis et
al. (FGCS 2024): the most partitions P on b brokers such that

  throughput           P >= max(T/Tp, T/Tc, c)
  OS load              P*r <= b*Hmax
  replication latency  P*r*l_r <= b*L
  unavailability       P*u <= b*U
  brokers              r <= b <= B

BroMin uses the fewest brokers, BroMax all B of them; both are exact (closed
form, integer arithmetic) and equal the paper's Algorithms 1 and 2. kplan says
which constraint binds, every constraint's slack, and, when no layout fits,
the smallest single change that makes one fit (exit code 3).

Rates take kB/s, MB/s, GB/s (powers of 1000) or KiB/s, MiB/s, GiB/s; durations
take Go syntax (5ms, 2s). A --plan YAML file takes the flag names as keys;
flags given on the command line override it.`,
		Example: `  $ kplan size --plan plans/raptis-prototype.yaml
  $ kplan size --plan plans/raptis-prototype.yaml --replication-factor 5 --strategy bromax -o json
  $ kplan size --throughput 100MB/s --consumers 400 --replication-factor 3 --max-brokers 16 \
      --partition-produce-rate 10MB/s --partition-consume-rate 20MB/s --max-handles 30000 \
      --replication-latency 5ms --max-replication-latency 200ms --election-time 25ms --max-unavailability 2s
  $ kplan size --plan plans/raptis-prototype.yaml --strategy ms-cnfl --seed 7 --draws 10000
  $ kplan size sweep --plan plans/raptis-simulation.yaml --vary consumers=200:600:50 --plot sweep.png`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts, err := c.options(cmd, f)
			if err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runSize(cmd.Context(), opts)
		},
	}
	c.add(cmd, "both", 1000)
	cmd.AddCommand(newCmdSweep(f, nil))
	return cmd
}

// Output is the JSON document of `kplan size`.
type Output struct {
	Schema  string          `json:"schema"`
	Inputs  InputsJSON      `json:"inputs"`
	Summary string          `json:"summary"`
	Results []sizing.Result `json:"results"`
}

// InputsJSON is the inputs in exact units: bytes per second and
// nanoseconds, named after the flags.
type InputsJSON struct {
	Throughput             int64  `json:"throughput_bytes_per_sec"`
	Consumers              int64  `json:"consumers"`
	ReplicationFactor      int64  `json:"replication_factor"`
	MaxBrokers             int64  `json:"max_brokers"`
	PartitionProduceRate   int64  `json:"partition_produce_rate_bytes_per_sec"`
	PartitionConsumeRate   int64  `json:"partition_consume_rate_bytes_per_sec"`
	MaxHandles             int64  `json:"max_handles"`
	ReplicationLatency     int64  `json:"replication_latency_ns"`
	MaxReplicationLatency  int64  `json:"max_replication_latency_ns"`
	ElectionTime           int64  `json:"election_time_ns"`
	MaxUnavailability      int64  `json:"max_unavailability_ns"`
	RecordSize             int64  `json:"record_size_bytes,omitempty"`
	ConsumerProcessingTime int64  `json:"consumer_processing_time_ns,omitempty"`
	Compat                 string `json:"compat,omitempty"`
}

func inputsJSON(in sizing.Input) InputsJSON {
	return InputsJSON{
		Throughput: in.Throughput, Consumers: in.Consumers, ReplicationFactor: in.ReplicationFactor, MaxBrokers: in.MaxBrokers,
		PartitionProduceRate: in.PartitionProduceRate, PartitionConsumeRate: in.PartitionConsumeRate, MaxHandles: in.MaxHandles,
		ReplicationLatency: int64(in.ReplicationLatency), MaxReplicationLatency: int64(in.MaxReplicationLatency),
		ElectionTime: int64(in.ElectionTime), MaxUnavailability: int64(in.MaxUnavailability),
		RecordSize: in.RecordSize, ConsumerProcessingTime: int64(in.ConsumerProcessingTime), Compat: string(in.Compat),
	}
}

func solveAll(opts *Options) []sizing.Result {
	out := make([]sizing.Result, 0, len(opts.Strategies))
	for _, s := range opts.Strategies {
		if s == sizing.StrategyMSCNFL {
			out = append(out, sizing.SolveMSCNFL(opts.Input, opts.Draws, opts.Seed))
		} else {
			out = append(out, sizing.Solve(opts.Input, s))
		}
	}
	for i := range out {
		if out[i].Feasible && out[i].Strategy != sizing.StrategyMSCNFL {
			cc := sizing.CheckCluster(opts.Input, out[i], opts.Metadata, opts.Cores)
			out[i].Cluster = &cc
		}
	}
	return out
}

func runSize(_ context.Context, opts *Options) error {
	out := Output{Schema: "kplan.size/v1", Inputs: inputsJSON(opts.Input), Summary: summary(opts.Input), Results: solveAll(opts)}
	if err := report.Render(opts.IO.Out, opts.Format, out, func() report.Document { return sizeDoc(out) }); err != nil {
		return err
	}
	for _, r := range out.Results {
		// ms-cnfl is a baseline: its draws violating constraints is the point,
		// not a sizing failure.
		if !r.Feasible && r.Strategy != sizing.StrategyMSCNFL {
			return errkind.Silent(errkind.Negative)
		}
	}
	return nil
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "NO"
}

func num(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// pct formats a share as a percentage with at most two decimals.
func pct(share float64) string { return strconv.FormatFloat(math.Round(share*1e4)/1e2, 'f', -1, 64) }

func fixed2(f float64) string { return strconv.FormatFloat(f, 'f', 2, 64) }

var constraintOrder = []sizing.Constraint{sizing.Throughput, sizing.OSLoad, sizing.ReplicationLatency, sizing.Unavailability, sizing.Brokers}

// sizeDoc is the text and Markdown of `kplan size`: the summary of every
// strategy, then one section per strategy.
func sizeDoc(out Output) report.Document {
	doc := report.Document{Title: "kplan size: " + out.Summary}
	doc.Sections = append(doc.Sections, summarySection(out))
	for _, r := range out.Results {
		doc.Sections = append(doc.Sections, strategySection(r))
	}
	return doc
}

// summarySection lists each strategy's size and binding constraint.
func summarySection(out Output) report.Section {
	sum := report.Section{Header: []string{"STRATEGY", "FEASIBLE", "PARTITIONS", "BROKERS", "PER BROKER", "BINDING"}}
	for _, r := range out.Results {
		p, b, per := strconv.FormatInt(r.Partitions, 10), strconv.FormatInt(r.Brokers, 10), fixed2(r.PartitionsPerBroker)
		if !r.Feasible && r.Strategy != sizing.StrategyMSCNFL {
			p, b, per = "-", "-", "-"
		}
		sum.Rows = append(sum.Rows, []string{string(r.Strategy), yesNo(r.Feasible), p, b, per, string(r.Binding)})
	}
	return sum
}

// strategySection lists r's constraints, then its reason, fixes, draws
// and cluster as notes.
func strategySection(r sizing.Result) report.Section {
	sec := report.Section{Title: constraintsTitle(r), Header: []string{"CONSTRAINT", "VALUE", "LIMIT", "SLACK", "UNIT", "OK", "BINDING"}}
	for _, name := range constraintOrder {
		c := r.Constraints[name]
		op := "<="
		if c.Bound == "min" {
			op = ">="
		}
		bind := ""
		if c.Binding {
			bind = "binding"
		}
		sec.Rows = append(sec.Rows, []string{string(name), num(c.Value), op + " " + num(c.Threshold), num(c.Slack), c.Unit, yesNo(c.Satisfied), bind})
	}
	if r.Reason != "" {
		sec.Notes = append(sec.Notes, r.Reason)
	}
	for _, fx := range r.Fixes {
		sec.Notes = append(sec.Notes, "  "+fx.String())
	}
	if m := r.MSCNFL; m != nil {
		sec.Notes = append(sec.Notes, drawsNotes(m)...)
	}
	if cc := r.Cluster; cc != nil {
		sec.Notes = append(sec.Notes, fmt.Sprintf("cluster: %d partition replicas, %d per broker; OS needs open files >= %d and vm.max_map_count >= %d",
			cc.PartitionReplicas, cc.ReplicasPerBroker, cc.MinOpenFiles, cc.MinMaxMapCount))
		for _, w := range cc.Warnings {
			sec.Notes = append(sec.Notes, "warning: "+w)
		}
	}
	return sec
}

// constraintsTitle says at which size r's constraints are evaluated.
func constraintsTitle(r sizing.Result) string {
	title := fmt.Sprintf("%s: constraints at P=%d, b=%d (P >= %d from %s)", r.Strategy, r.Partitions, r.Brokers, r.MinPartitions, r.MinBound)
	switch {
	case r.Strategy == sizing.StrategyMSCNFL:
		title = fmt.Sprintf("ms-cnfl: constraints at the median draw P=%d, b=%d", r.Partitions, r.Brokers)
	case !r.Feasible:
		title = fmt.Sprintf("%s: infeasible; constraints at the minimum P=%d on all b=%d brokers", r.Strategy, r.MinPartitions, r.Brokers)
		if r.Brokers == 0 {
			title = fmt.Sprintf("%s: infeasible; constraints at the minimum P=%d on all brokers", r.Strategy, r.MinPartitions)
		}
	}
	return title
}

// drawsNotes summarize ms-cnfl's draws and each constraint's violation rate.
func drawsNotes(m *sizing.MSCNFLResult) []string {
	names := make([]string, 0, len(m.ViolationRate))
	for k := range m.ViolationRate {
		names = append(names, string(k))
	}
	sort.Strings(names)
	line := "violation rate:"
	for _, n := range names {
		line += fmt.Sprintf(" %s %s%%", n, pct(m.ViolationRate[sizing.Constraint(n)]))
	}
	return []string{
		fmt.Sprintf("%d draws (seed %d): P min/p50/mean/max %d/%d/%s/%d, b %d/%d/%s/%d, all constraints met in %s%% of draws",
			m.Draws, m.Seed, m.Partitions.Min, m.Partitions.P50, num(m.Partitions.Mean), m.Partitions.Max,
			m.Brokers.Min, m.Brokers.P50, num(m.Brokers.Mean), m.Brokers.Max, pct(m.FeasibleRate)),
		line,
	}
}
