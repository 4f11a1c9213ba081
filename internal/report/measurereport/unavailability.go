package measurereport

import (
	"bytes"
	"errors"
	"fmt"
	"image/color"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/kplan-dev/kplan/internal/measure"
	"github.com/kplan-dev/kplan/internal/measure/experiment"
	"github.com/kplan-dev/kplan/internal/report"
)

// UnavailPlot is the plot --report writes.
const UnavailPlot = "unavailability.png"

func unavailP(p *float64) string {
	if p == nil {
		return "-"
	}
	return fmt.Sprintf("%.2g", *p)
}

func unavailCI(ci []float64) string {
	if len(ci) != 2 {
		return "-"
	}
	return fmt.Sprintf("[%.4g, %.4g]", ci[0], ci[1])
}

// UnavailabilityDocument is the human form.
func UnavailabilityDocument(r *experiment.UnavailabilityResult) report.Document {
	runs := report.Section{Title: "Unavailability after each kill (ms from the kill)",
		Header: []string{"partitions", "run", "all available", "first", "median", "p90", "probe lag"}}
	for _, u := range r.Runs {
		runs.Rows = append(runs.Rows, []string{strconv.Itoa(u.Partitions), strconv.Itoa(u.Repeat),
			fmt.Sprintf("%.0f", u.AllMS), fmt.Sprintf("%.0f", u.FirstMS), fmt.Sprintf("%.0f", u.MedianMS), fmt.Sprintf("%.0f", u.P90MS), fmt.Sprintf("%.0f", u.ProbeLagMS)})
	}
	runs.Notes = []string{fmt.Sprintf("%s; broker %d killed (active controller: %s), replication factor %d.", r.Label, r.Victim, experiment.UnavailController(r.Controller), r.ReplicationFactor),
		"Probe: " + experiment.UnavailMethod + "."}
	d := report.Document{Title: "kplan measure unavailability", Sections: []report.Section{runs}}
	if r.Partial {
		d.Notes = append(d.Notes, "PARTIAL: the measurement stopped early; the runs above are those that finished.")
	}
	if r.Fit == nil {
		d.Notes = append(d.Notes, "No fit: "+r.FitError)
		return d
	}
	f := r.Fit
	fit := report.Section{Title: "Fit: unavailability = detection + u × partitions led (least squares over every run)",
		Header: []string{"figure", "value", "std error", "95% interval", "p"}}
	se := func(p *float64) string {
		if p == nil {
			return "-"
		}
		return fmt.Sprintf("%.3g", *p)
	}
	fit.Rows = [][]string{
		{"detection (intercept), ms", fmt.Sprintf("%.4g", f.DetectionMS), se(f.DetectionSEMS), unavailCI(f.DetectionCI95MS), ""},
		{"u (slope), ms per partition", fmt.Sprintf("%.4g", f.UPerPartitionMS), se(f.USEMS), unavailCI(f.UCI95MS), unavailP(f.UP)},
		{"R²", fmt.Sprintf("%.4f", f.R2), "", "", ""},
		{"residual sum of squares: constant", fmt.Sprintf("%.4g", f.ConstantRSS), "", "", ""},
		{"residual sum of squares: line", fmt.Sprintf("%.4g", f.LinearRSS), "", "", ""},
	}
	if f.QuadraticRSS != nil {
		fit.Rows = append(fit.Rows, []string{"residual sum of squares: quadratic", fmt.Sprintf("%.4g", *f.QuadraticRSS), "", "", unavailP(f.QuadraticP)},
			[]string{"quadratic: a + b N + c N²", fmt.Sprintf("%.4g %+.4g N %+.3g N²", f.Quadratic[0], f.Quadratic[1], f.Quadratic[2]), "", "", ""})
	}
	if f.LackOfFitP != nil {
		fit.Rows = append(fit.Rows, []string{"lack of fit (means vs repeats' spread)", "", "", "", unavailP(f.LackOfFitP)})
	}
	res := make([]string, len(f.Residuals))
	for i, x := range f.Residuals {
		res[i] = fmt.Sprintf("%d:%+.0f", r.Runs[i].Partitions, x)
	}
	fit.Notes = []string{"Verdict: " + f.Verdict + ": " + f.Why + ".", "Residuals (N:ms): " + strings.Join(res, " ")}
	plan := report.Section{Title: "For kplan size (plan file lines)", Header: []string{"line"}}
	for _, l := range r.PlanLines {
		plan.Rows = append(plan.Rows, []string{l})
	}
	d.Sections = append(d.Sections, fit, plan)
	return d
}

// WriteUnavailabilityReport writes the plot, result.json and report.md into dir and
// returns their names.
func WriteUnavailabilityReport(r *experiment.UnavailabilityResult, dir string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("--report: %w", err)
	}
	var names []string
	if err := unavailWritePlot(r, filepath.Join(dir, UnavailPlot)); err != nil {
		return names, err
	}
	names = append(names, UnavailPlot)
	var js, md bytes.Buffer
	if err := report.WriteJSON(&js, r); err != nil {
		return names, err
	}
	if err := report.WriteFileAtomic(filepath.Join(dir, "result.json"), js.Bytes()); err != nil {
		return names, err
	}
	names = append(names, "result.json")
	if err := report.WriteMarkdown(&md, UnavailabilityDocument(r)); err != nil {
		return names, err
	}
	fmt.Fprintf(&md, "\n![unavailability against partitions led](%s)\n", UnavailPlot)
	if err := report.WriteFileAtomic(filepath.Join(dir, "report.md"), md.Bytes()); err != nil {
		return names, err
	}
	return append(names, "report.md"), nil
}

// unavailWritePlot draws every run's unavailability (all partitions) and
// per-partition median against the partitions led, with the fitted line
// (and the quadratic when the verdict is curved): on a linear axis, and
// beside it on a logarithmic one, where the small counts stand apart.
func unavailWritePlot(r *experiment.UnavailabilityResult, path string) error {
	if len(r.Runs) == 0 {
		return errors.New("plot: no runs to draw")
	}
	var row []*plot.Plot
	for _, logX := range []bool{false, true} {
		p, err := unavailPlotPanel(r, logX)
		if err != nil {
			return fmt.Errorf("plot: %w", err)
		}
		row = append(row, p)
	}
	return report.WriteGridPNG(path, [][]*plot.Plot{row}, 5*vg.Inch)
}

// unavailPlotPanel is one panel of unavailWritePlot.
func unavailPlotPanel(r *experiment.UnavailabilityResult, logX bool) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("Unavailability, broker %d killed (RF %d)", r.Victim, r.ReplicationFactor)
	if r.Fit != nil {
		p.Title.Text += ": " + r.Fit.Verdict
	}
	p.X.Label.Text = "partitions led by the killed broker"
	if logX {
		p.Title.Text = "the same, partitions on a log scale"
		p.X.Label.Text += " (log scale)"
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	}
	p.Y.Label.Text = "seconds from the kill"
	p.Add(plotter.NewGrid())
	all := make(plotter.XYs, len(r.Runs))
	med := make(plotter.XYs, len(r.Runs))
	xmin, xmax, ymax := math.Inf(1), 0.0, 0.0
	for i, u := range r.Runs {
		all[i] = plotter.XY{X: float64(u.Partitions), Y: u.AllMS / 1000}
		med[i] = plotter.XY{X: float64(u.Partitions), Y: u.MedianMS / 1000}
		xmin = math.Min(xmin, float64(u.Partitions))
		xmax = math.Max(xmax, float64(u.Partitions))
		ymax = math.Max(ymax, u.AllMS/1000)
	}
	if err := addUnavailRuns(p, all, med); err != nil {
		return nil, err
	}
	if f := r.Fit; f != nil {
		y, err := addUnavailFit(p, f, xmin, xmax, logX)
		if err != nil {
			return nil, err
		}
		ymax = math.Max(ymax, y)
	}
	p.Y.Min = 0
	p.Y.Max = math.Max(ymax*1.45, 0.001) // room for the legend above the points
	if !logX {
		p.X.Min = 0
	} else if xmax <= xmin {
		p.X.Max = xmin * 10 // a log axis needs a range
	}
	p.Legend.Top = true
	p.Legend.Left = true
	return p, nil
}

// addUnavailRuns adds every run's points: all partitions writable, and
// the per-partition median.
func addUnavailRuns(p *plot.Plot, all, med plotter.XYs) error {
	sAll, err := plotter.NewScatter(all)
	if err != nil {
		return err
	}
	sAll.Color = plotutil.Color(0)
	sAll.Shape = draw.CircleGlyph{}
	sAll.Radius = vg.Points(3)
	sMed, err := plotter.NewScatter(med)
	if err != nil {
		return err
	}
	sMed.Color = plotutil.Color(2)
	sMed.Shape = draw.CrossGlyph{}
	sMed.Radius = vg.Points(3)
	p.Add(sAll, sMed)
	p.Legend.Add("all partitions writable", sAll)
	p.Legend.Add("per-partition median", sMed)
	return nil
}

// addUnavailFit adds the fitted line (and the quadratic when the verdict
// is curved) over [0, xmax], or [xmin, xmax] on a log axis, and returns
// the line's highest point.
func addUnavailFit(p *plot.Plot, f *measure.UnavailFit, xmin, xmax float64, logX bool) (float64, error) {
	const steps = 100
	fit := make(plotter.XYs, steps+1)
	quad := make(plotter.XYs, steps+1)
	for i := range fit {
		x := xmax * float64(i) / steps
		if logX {
			x = xmin * math.Pow(xmax/xmin, float64(i)/steps)
		}
		fit[i] = plotter.XY{X: x, Y: (f.DetectionMS + f.UPerPartitionMS*x) / 1000}
		if len(f.Quadratic) == 3 {
			quad[i] = plotter.XY{X: x, Y: (f.Quadratic[0] + f.Quadratic[1]*x + f.Quadratic[2]*x*x) / 1000}
		}
	}
	l, err := plotter.NewLine(fit)
	if err != nil {
		return 0, err
	}
	l.Color = color.RGBA{R: 200, A: 255}
	l.Width = vg.Points(1.5)
	p.Add(l)
	p.Legend.Add(fmt.Sprintf("fit: %.0f ms + %.3g ms × N (R² %.2f)", f.DetectionMS, f.UPerPartitionMS, f.R2), l)
	if f.Verdict == measure.VerdictCurved && len(f.Quadratic) == 3 {
		q, err := plotter.NewLine(quad)
		if err != nil {
			return 0, err
		}
		q.Color = plotutil.Color(1)
		q.Dashes = []vg.Length{vg.Points(4), vg.Points(2)}
		p.Add(q)
		p.Legend.Add("quadratic", q)
	}
	ymax := 0.0
	for _, xy := range fit {
		ymax = math.Max(ymax, xy.Y)
	}
	return ymax, nil
}

// WriteElectionTime sets election-time in the plan file at path, atomically.
func WriteElectionTime(r *experiment.UnavailabilityResult, path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("--out-plan: %w", err)
	}
	out, err := measure.SetElectionTime(data, r.ElectionTime, r.ElectionComment())
	if err != nil {
		return fmt.Errorf("--out-plan: %s: %w", path, err)
	}
	return report.WriteFileAtomic(path, out)
}

// WriteUnavailabilityPlan prints what a remote run will do.
func WriteUnavailabilityPlan(out io.Writer, p experiment.UnavailabilityPlan) {
	fmt.Fprintf(out, "kplan measure unavailability plan\ncluster:  %s (brokers %v)\nkill:     broker %d, advertised as %s:%d, with %s: %s\n",
		p.Label, p.Brokers, p.Victim.ID, p.Victim.Host, p.Victim.Port, p.Killer, p.Target)
	for i, s := range p.Steps {
		fmt.Fprintf(out, "  %d. %s\n", i+1, s)
	}
	what := "deleted at the end"
	if p.Keep {
		what = "kept (--keep)"
	}
	fmt.Fprintf(out, "topics:   %s-N-RUNID for N in %s, led by broker %d, replication factor %d (%s)\nruns:     %d kills per count, each restored\n",
		p.Topic, experiment.JoinCounts(p.Counts), p.Victim.ID, p.ReplicationFactor, what, p.Repeat)
}
