package size

import (
	"context"
	"encoding/csv"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kplan-dev/kplan/internal/cmdutil"
	"github.com/kplan-dev/kplan/internal/errkind"
	"github.com/kplan-dev/kplan/internal/report"
	"github.com/kplan-dev/kplan/internal/sizing"
)

// SweepOptions are the parsed flags of `kplan size sweep`.
type SweepOptions struct {
	*Options
	Vary   string
	Values []int64
	Set    sizing.Setter
	Kind   string
	CSV    bool
	Plot   string
	// Constraints keeps every constraint's full check in each point's JSON.
	Constraints bool
}

// maxSweepPoints bounds a sweep so a typo cannot eat the machine.
const maxSweepPoints = 1_000_000

func newCmdSweep(f *cmdutil.Factory, runF func(context.Context, *SweepOptions) error) *cobra.Command {
	var c commonFlags
	var vary, plot string
	var constraints bool
	cmd := &cobra.Command{
		Use:   "sweep --vary INPUT=START:END:STEP [flags]",
		Short: "Sweep one input over a range for BroMin, BroMax and MS-CNFL",
		Long: `Vary one sizing input over a range (inclusive) and solve BroMin, BroMax and
the MS-CNFL baseline at every point, as in the paper's Figs 2-4. The range
takes the input's own units: consumers=200:600:50, max-brokers=20:60:5,
throughput=10MB/s:200MB/s:10MB/s, max-replication-latency=50ms:400ms:50ms.

--strategy selects the strategies, as for kplan size (default all three).
BroMin and BroMax are closed forms and cost well under a microsecond a point;
MS-CNFL costs --draws random draws a point, so --strategy both sweeps
100,000 points in a fraction of a second.

Output is a table, CSV (-o csv), JSON or Markdown; --plot draws the panels
(P, b, replication latency, unavailability, replicas per broker) as a PNG.
Each point of the JSON carries P, b, the binding constraint and the three
loads; --constraints adds every constraint's full check (and MS-CNFL's
distribution) to each point.`,
		Example: `  $ kplan size sweep --plan plans/raptis-simulation.yaml --vary consumers=200:600:50
  $ kplan size sweep --plan plans/raptis-simulation.yaml --vary max-brokers=20:60:5 -o csv
  $ kplan size sweep --plan plans/raptis-simulation.yaml --vary replication-factor=4:20:1 --plot fig4.png
  $ kplan size sweep --plan plans/raptis-simulation.yaml --vary max-handles=1000:100999:1 --strategy both -o csv
  $ kplan size sweep --plan plans/raptis-simulation.yaml --vary consumers=200:600:100 -o json --constraints`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			isCSV := c.output.Raw() == "csv"
			if isCSV {
				c.output.Set("table")
			}
			key, rng, ok := strings.Cut(vary, "=")
			if vary == "" {
				return errkind.Usagef("", "--vary is required, e.g. --vary consumers=200:600:50")
			}
			spec, known := specFor(key)
			if !ok || !known {
				return errkind.Usagef("", "--vary: want INPUT=START:END:STEP with INPUT one of the sizing flags (e.g. consumers), got %q", vary)
			}
			// The varied input needs no value of its own.
			if *c.in.raw[key] == "" {
				*c.in.raw[key] = strings.SplitN(rng, ":", 2)[0]
			}
			opts, err := c.options(cmd, f)
			if err != nil {
				return err
			}
			values, err := sweepValues(spec, rng)
			if err != nil {
				return errkind.Usagef("", "--vary: %w", err)
			}
			if constraints && opts.Format != report.JSON && opts.Format != report.YAML {
				return errkind.Usagef("", "--constraints: adds the checks to JSON and YAML only (use -o json or -o yaml)")
			}
			so := &SweepOptions{Options: opts, Vary: key, Values: values, Set: spec.set, CSV: isCSV, Plot: plot, Constraints: constraints}
			if runF != nil {
				return runF(cmd.Context(), so)
			}
			return runSweep(cmd.Context(), so)
		},
	}
	c.add(cmd, "all", 200)
	cmd.Flags().StringVar(&vary, "vary", "", "INPUT=START:END:STEP, the input to sweep and its range (inclusive)")
	cmd.Flags().StringVar(&plot, "plot", "", "write the paper's Figs 2-4 style panels to this PNG file")
	cmd.Flags().BoolVar(&constraints, "constraints", false, "JSON and YAML: add every constraint's full check to each point")
	return cmd
}

func sweepValues(spec inputSpec, rng string) ([]int64, error) {
	parts := strings.Split(rng, ":")
	if len(parts) != 3 {
		return nil, fmt.Errorf("range %q: want START:END:STEP", rng)
	}
	var v [3]int64
	for i, p := range parts {
		x, err := spec.parseValue(p)
		if err != nil {
			return nil, fmt.Errorf("range %q: %w", rng, err)
		}
		v[i] = x
	}
	start, end, step := v[0], v[1], v[2]
	if end < start {
		return nil, fmt.Errorf("range %q: end is below start", rng)
	}
	n := (end-start)/step + 1
	if n > maxSweepPoints {
		return nil, fmt.Errorf("range %q has %d points (max %d)", rng, n, maxSweepPoints)
	}
	out := make([]int64, n)
	for i := range out {
		// start+i*step <= end, so this cannot overflow where x += step
		// could, next to math.MaxInt64.
		out[i] = start + int64(i)*step
	}
	return out, nil
}

// SweepOutput is the JSON document of `kplan size sweep`. Schema v2: points
// carry compact results (sizing.SweepResult), not v1's full result per point.
type SweepOutput struct {
	Schema     string            `json:"schema"`
	Vary       string            `json:"vary"`
	Strategies []sizing.Strategy `json:"strategies"`
	// MSCNFL says how the baseline was drawn (when it was swept).
	MSCNFL *SweepDraws    `json:"ms_cnfl,omitempty"`
	Inputs InputsJSON     `json:"inputs"`
	Points []sizing.Point `json:"points"`
}

// SweepDraws is the MS-CNFL baseline's draws per point and seed.
type SweepDraws struct {
	Draws int    `json:"draws"`
	Seed  uint64 `json:"seed"`
}

func runSweep(_ context.Context, opts *SweepOptions) error {
	so := sizing.SweepOptions{Strategies: opts.Strategies, Draws: opts.Draws, Seed: opts.Seed, Constraints: opts.Constraints}
	pts, err := sizing.Sweep(opts.Input, opts.Set, opts.Values, so)
	if err != nil {
		return errkind.Usagef("", "--vary %s: %w", opts.Vary, err)
	}
	out := SweepOutput{Schema: "kplan.size.sweep/v2", Vary: opts.Vary, Strategies: opts.Strategies, Inputs: inputsJSON(opts.Input), Points: pts}
	if slices.Contains(opts.Strategies, sizing.StrategyMSCNFL) {
		out.MSCNFL = &SweepDraws{Draws: opts.Draws, Seed: opts.Seed}
	}
	spec, _ := specFor(opts.Vary)
	if opts.Plot != "" {
		if err := report.WritePanelsPNG(opts.Plot, sweepPanels(out, spec), 3); err != nil {
			return errkind.Usagef("", "--plot: %w", err)
		}
	}
	if opts.CSV {
		return writeSweepCSV(opts, out, spec)
	}
	return report.Render(opts.IO.Out, opts.Format, out, func() report.Document { return sweepDoc(out, spec) })
}

func valueText(spec inputSpec, v int64) string {
	switch spec.kind {
	case kindRate:
		return strconv.FormatInt(v/1_000_000, 10) + "MB/s"
	case kindDuration:
		return strconv.FormatFloat(float64(v)/1e6, 'f', -1, 64) + "ms"
	}
	return strconv.FormatInt(v, 10)
}

func cell(r sizing.SweepResult, v int64) string {
	if !r.Feasible && r.Strategy != sizing.StrategyMSCNFL {
		return "-"
	}
	return strconv.FormatInt(v, 10)
}

// strategyTitle is a strategy's name in headers and legends.
var strategyTitle = map[sizing.Strategy]string{
	sizing.StrategyBroMin: "BroMin", sizing.StrategyBroMax: "BroMax", sizing.StrategyMSCNFL: "MS-CNFL",
}

func sweepDoc(out SweepOutput, spec inputSpec) report.Document {
	header := []string{strings.ToUpper(out.Vary)}
	for _, s := range out.Strategies {
		t := strings.ToUpper(strategyTitle[s])
		header = append(header, t+" P", t+" b")
	}
	msc := slices.Index(out.Strategies, sizing.StrategyMSCNFL)
	if msc >= 0 {
		header = append(header, "MS-CNFL OK%")
	}
	sec := report.Section{Header: header, Rows: make([][]string, 0, len(out.Points))}
	for _, p := range out.Points {
		row := make([]string, 0, len(header))
		row = append(row, valueText(spec, p.Value))
		for _, r := range p.Results {
			row = append(row, cell(r, r.Partitions), cell(r, r.Brokers))
		}
		if msc >= 0 {
			row = append(row, pct(*p.Results[msc].FeasibleRate))
		}
		sec.Rows = append(sec.Rows, row)
	}
	note := "- marks an infeasible point."
	if msc >= 0 {
		note = "- marks an infeasible point; MS-CNFL P and b are the medians of its draws."
	}
	return report.Document{Title: "kplan size sweep over " + out.Vary, Sections: []report.Section{sec}, Notes: []string{note}}
}

// csvName is a strategy's column prefix in CSV.
var csvName = map[sizing.Strategy]string{sizing.StrategyBroMin: "bromin", sizing.StrategyBroMax: "bromax", sizing.StrategyMSCNFL: "ms_cnfl"}

func writeSweepCSV(opts *SweepOptions, out SweepOutput, spec inputSpec) error {
	w := csv.NewWriter(opts.IO.Out)
	header := []string{out.Vary}
	for _, s := range out.Strategies {
		n := csvName[s]
		header = append(header, n+"_feasible", n+"_partitions", n+"_brokers", n+"_replication_latency_ms", n+"_unavailability_ms", n+"_replicas_per_broker")
	}
	if err := w.Write(header); err != nil {
		return fmt.Errorf("writing csv: %w", err)
	}
	row := make([]string, 0, len(header))
	for _, p := range out.Points {
		row = append(row[:0], valueText(spec, p.Value))
		for _, r := range p.Results {
			row = append(row, strconv.FormatBool(r.Feasible), strconv.FormatInt(r.Partitions, 10), strconv.FormatInt(r.Brokers, 10),
				num(r.ReplicationLatencyMs), num(r.UnavailabilityMs), num(r.ReplicasPerBroker))
		}
		if err := w.Write(row); err != nil {
			return fmt.Errorf("writing csv: %w", err)
		}
	}
	w.Flush()
	if err := w.Error(); err != nil {
		return fmt.Errorf("writing csv: %w", err)
	}
	return nil
}

func sweepPanels(out SweepOutput, spec inputSpec) []report.Panel {
	metric := func(title, ylabel string, th float64, get func(sizing.SweepResult) float64) report.Panel {
		pn := report.Panel{Title: title, XLabel: out.Vary, YLabel: ylabel, Threshold: th}
		for i, st := range out.Strategies {
			s := report.Series{Name: strategyTitle[st]}
			for _, p := range out.Points {
				// An infeasible BroMin or BroMax point has no P or b to plot.
				if r := p.Results[i]; r.Feasible || r.Strategy == sizing.StrategyMSCNFL {
					s.X = append(s.X, xValue(spec, p.Value))
					s.Y = append(s.Y, get(r))
				}
			}
			if len(s.X) > 0 {
				pn.Series = append(pn.Series, s)
			}
		}
		return pn
	}
	in := out.Inputs
	return []report.Panel{
		metric("Partitions P", "partitions", 0, func(r sizing.SweepResult) float64 { return float64(r.Partitions) }),
		metric("Brokers b", "brokers", 0, func(r sizing.SweepResult) float64 { return float64(r.Brokers) }),
		metric("Replication latency P*r*l_r/b", "ms", float64(in.MaxReplicationLatency)/1e6, func(r sizing.SweepResult) float64 {
			return r.ReplicationLatencyMs
		}),
		metric("Unavailability P*u/b", "ms", float64(in.MaxUnavailability)/1e6, func(r sizing.SweepResult) float64 {
			return r.UnavailabilityMs
		}),
		metric("OS load P*r/b", "replicas per broker", float64(in.MaxHandles), func(r sizing.SweepResult) float64 {
			return r.ReplicasPerBroker
		}),
	}
}

func xValue(spec inputSpec, v int64) float64 {
	switch spec.kind {
	case kindRate:
		return float64(v) / 1e6
	case kindDuration:
		return float64(v) / 1e6
	}
	return float64(v)
}
