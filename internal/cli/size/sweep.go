package size

import (
	"context"
	"encoding/csv"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kplan-dev/kplan/internal/cmdutil"
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
}

// maxSweepPoints bounds a sweep so a typo cannot eat the machine.
const maxSweepPoints = 1_000_000

func newCmdSweep(f *cmdutil.Factory, runF func(context.Context, *SweepOptions) error) *cobra.Command {
	var c commonFlags
	var vary, plot string
	cmd := &cobra.Command{
		Use:   "sweep --vary INPUT=START:END:STEP [flags]",
		Short: "Sweep one input over a range for BroMin, BroMax and MS-CNFL",
		Long: `Vary one sizing input over a range (inclusive) and solve BroMin, BroMax and
the MS-CNFL baseline at every point, as in the paper's Figs 2-4. The range
takes the input's own units: consumers=200:600:50, max-brokers=20:60:5,
throughput=10MB/s:200MB/s:10MB/s, max-replication-latency=50ms:400ms:50ms.
Output is a table, CSV (-o csv), JSON or Markdown; --plot draws the panels
(P, b, replication latency, unavailability, replicas per broker) as a PNG.`,
		Example: `  $ kplan size sweep --plan plans/raptis-simulation.yaml --vary consumers=200:600:50
  $ kplan size sweep --plan plans/raptis-simulation.yaml --vary max-brokers=20:60:5 -o csv
  $ kplan size sweep --plan plans/raptis-simulation.yaml --vary replication-factor=4:20:1 --plot fig4.png`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			isCSV := c.output.Raw() == "csv"
			if isCSV {
				c.output.Set("table")
			}
			key, rng, ok := strings.Cut(vary, "=")
			if vary == "" {
				return cmdutil.UsageErrorf("--vary is required, e.g. --vary consumers=200:600:50")
			}
			spec, known := specFor(key)
			if !ok || !known {
				return cmdutil.UsageErrorf("--vary: want INPUT=START:END:STEP with INPUT one of the sizing flags (e.g. consumers), got %q", vary)
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
				return cmdutil.UsageErrorf("--vary: %w", err)
			}
			so := &SweepOptions{Options: opts, Vary: key, Values: values, Set: spec.set, CSV: isCSV, Plot: plot}
			if runF != nil {
				return runF(cmd.Context(), so)
			}
			return runSweep(cmd.Context(), so)
		},
	}
	c.add(cmd, 200)
	cmd.Flags().StringVar(&vary, "vary", "", "INPUT=START:END:STEP, the input to sweep and its range (inclusive)")
	cmd.Flags().StringVar(&plot, "plot", "", "write the paper's Figs 2-4 style panels to this PNG file")
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
	out := make([]int64, 0, n)
	for x := start; x <= end; x += step {
		out = append(out, x)
	}
	return out, nil
}

// SweepOutput is the JSON document of `kplan size sweep`.
type SweepOutput struct {
	Schema string         `json:"schema"`
	Vary   string         `json:"vary"`
	Inputs InputsJSON     `json:"inputs"`
	Points []sizing.Point `json:"points"`
}

func runSweep(_ context.Context, opts *SweepOptions) error {
	pts, err := sizing.Sweep(opts.Input, opts.Set, opts.Values, opts.Draws, opts.Seed)
	if err != nil {
		return cmdutil.UsageErrorf("--vary %s: %w", opts.Vary, err)
	}
	out := SweepOutput{Schema: "kplan.size.sweep/v1", Vary: opts.Vary, Inputs: inputsJSON(opts.Input), Points: pts}
	spec, _ := specFor(opts.Vary)
	if opts.Plot != "" {
		if err := report.WritePanelsPNG(opts.Plot, sweepPanels(out, spec), 3); err != nil {
			return err
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

func cell(r sizing.Result, v int64) string {
	if !r.Feasible && r.Strategy != sizing.StrategyMSCNFL {
		return "-"
	}
	return strconv.FormatInt(v, 10)
}

func sweepDoc(out SweepOutput, spec inputSpec) report.Document {
	sec := report.Section{Header: []string{strings.ToUpper(out.Vary), "BROMIN P", "BROMIN b", "BROMAX P", "BROMAX b", "MS-CNFL P", "MS-CNFL b", "MS-CNFL OK%"}}
	for _, p := range out.Points {
		row := []string{valueText(spec, p.Value)}
		for _, r := range p.Results {
			row = append(row, cell(r, r.Partitions), cell(r, r.Brokers))
		}
		if len(p.Results) > 2 && p.Results[2].MSCNFL != nil {
			row = append(row, pct(p.Results[2].MSCNFL.FeasibleRate))
		}
		sec.Rows = append(sec.Rows, row)
	}
	return report.Document{Title: "kplan size sweep over " + out.Vary, Sections: []report.Section{sec},
		Notes: []string{"- marks an infeasible point; MS-CNFL P and b are the medians of its draws."}}
}

func writeSweepCSV(opts *SweepOptions, out SweepOutput, spec inputSpec) error {
	w := csv.NewWriter(opts.IO.Out)
	header := []string{out.Vary}
	for _, s := range []string{"bromin", "bromax", "ms_cnfl"} {
		header = append(header, s+"_feasible", s+"_partitions", s+"_brokers", s+"_replication_latency_ms", s+"_unavailability_ms", s+"_replicas_per_broker")
	}
	_ = w.Write(header)
	for _, p := range out.Points {
		row := []string{valueText(spec, p.Value)}
		for _, r := range p.Results {
			row = append(row, strconv.FormatBool(r.Feasible), strconv.FormatInt(r.Partitions, 10), strconv.FormatInt(r.Brokers, 10),
				num(r.Constraints[sizing.ReplicationLatency].Value), num(r.Constraints[sizing.Unavailability].Value), num(r.Constraints[sizing.OSLoad].Value))
		}
		_ = w.Write(row)
	}
	w.Flush()
	return w.Error()
}

func sweepPanels(out SweepOutput, spec inputSpec) []report.Panel {
	names := []string{"BroMin", "BroMax", "MS-CNFL"}
	metric := func(title, ylabel string, th float64, get func(sizing.Result) (float64, bool)) report.Panel {
		pn := report.Panel{Title: title, XLabel: out.Vary, YLabel: ylabel, Threshold: th}
		for i, name := range names {
			s := report.Series{Name: name}
			for _, p := range out.Points {
				if i >= len(p.Results) {
					continue
				}
				if y, ok := get(p.Results[i]); ok {
					s.X = append(s.X, xValue(spec, p.Value))
					s.Y = append(s.Y, y)
				}
			}
			if len(s.X) > 0 {
				pn.Series = append(pn.Series, s)
			}
		}
		return pn
	}
	feasible := func(r sizing.Result) bool { return r.Feasible || r.Strategy == sizing.StrategyMSCNFL }
	in := out.Inputs
	return []report.Panel{
		metric("Partitions P", "partitions", 0, func(r sizing.Result) (float64, bool) { return float64(r.Partitions), feasible(r) }),
		metric("Brokers b", "brokers", 0, func(r sizing.Result) (float64, bool) { return float64(r.Brokers), feasible(r) }),
		metric("Replication latency P*r*l_r/b", "ms", float64(in.MaxReplicationLatency)/1e6, func(r sizing.Result) (float64, bool) {
			return r.Constraints[sizing.ReplicationLatency].Value, feasible(r)
		}),
		metric("Unavailability P*u/b", "ms", float64(in.MaxUnavailability)/1e6, func(r sizing.Result) (float64, bool) {
			return r.Constraints[sizing.Unavailability].Value, feasible(r)
		}),
		metric("OS load P*r/b", "replicas per broker", float64(in.MaxHandles), func(r sizing.Result) (float64, bool) {
			return r.Constraints[sizing.OSLoad].Value, feasible(r)
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
