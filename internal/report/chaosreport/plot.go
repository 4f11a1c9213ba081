package chaosreport

import (
	"fmt"
	"image/color"
	"math"
	"path/filepath"
	"slices"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/kplan-dev/kplan/internal/chaos"
	"github.com/kplan-dev/kplan/internal/report"
)

// Plot file names writePlots writes.
const (
	PlotRecordsPerBroker = "records-per-broker.png"
	PlotLatencyCDF       = "latency-cdf.png"
	PlotThroughput       = "throughput.png"
	// PlotPrediction is written for workload runs with predictions.
	PlotPrediction = "prediction.png"
)

// writePlots writes the result's PNG plots into dir (each atomically, mode
// report.PermShared) and returns their file names.
func writePlots(dir string, res *chaos.Result) ([]string, error) {
	if len(res.Partitioners) == 0 {
		return nil, nil
	}
	var names []string
	for _, w := range []struct {
		name string
		draw func(*chaos.Result) ([][]*plot.Plot, error)
		colW vg.Length
	}{{PlotRecordsPerBroker, barPlots, 4 * vg.Inch}, {PlotLatencyCDF, cdfPlots, 4 * vg.Inch}, {PlotThroughput, throughputPlots, 9 * vg.Inch}} {
		grid, err := w.draw(res)
		if err != nil {
			return names, fmt.Errorf("plot %s: %w", w.name, err)
		}
		if err := report.WriteGridPNG(filepath.Join(dir, w.name), grid, w.colW); err != nil {
			return names, err
		}
		names = append(names, w.name)
	}
	grid, err := predictionPlots(res)
	if err != nil {
		return names, fmt.Errorf("plot %s: %w", PlotPrediction, err)
	}
	if grid != nil {
		if err := report.WriteGridPNG(filepath.Join(dir, PlotPrediction), grid, 4*vg.Inch); err != nil {
			return names, err
		}
		names = append(names, PlotPrediction)
	}
	return names, nil
}

// predictionPlots: one panel per partitioner (rows) and phase (columns)
// with a prediction, the predicted and the measured share of the bytes per
// broker side by side. nil when no phase has a prediction.
func predictionPlots(res *chaos.Result) ([][]*plot.Plot, error) {
	var phases []chaos.Phase
	for _, ph := range PredictedPhases {
		for _, p := range res.Partitioners {
			if pr := p.Phases[ph.String()]; pr != nil && pr.PredictedShare != nil {
				phases = append(phases, ph)
				break
			}
		}
	}
	if len(phases) == 0 {
		return nil, nil
	}
	var grid [][]*plot.Plot
	for _, p := range res.Partitioners {
		row := make([]*plot.Plot, len(phases))
		drawn := false
		for j, ph := range phases {
			pr := p.Phases[ph.String()]
			if pr == nil || pr.PredictedShare == nil {
				continue
			}
			pl, err := predictionPlot(p.Name, ph, pr)
			if err != nil {
				return nil, err
			}
			row[j], drawn = pl, true
		}
		if drawn {
			grid = append(grid, row)
		}
	}
	return grid, nil
}

// predictionPlot is one partitioner's predicted and measured shares in one
// phase, side by side per broker.
func predictionPlot(name string, ph chaos.Phase, pr *chaos.PhaseResult) (*plot.Plot, error) {
	pl := plot.New()
	pl.Title.Text = name + ", " + ph.String()
	if pr.MaxErrorPts != nil {
		pl.Title.Text += fmt.Sprintf(" (max error %.1f pts)", *pr.MaxErrorPts)
	}
	pl.Y.Label.Text = "share of bytes (%)"
	pl.X.Label.Text = "broker"
	pl.Y.Min = 0
	ids := brokerKeys(pr.PredictedShare, pr.MeasuredShare)
	// Head room above the tallest bar for the legend.
	hi := 0.0
	for _, id := range ids {
		hi = max(hi, pr.PredictedShare[id], pr.MeasuredShare[id])
	}
	pl.Y.Max = max(10, 100*hi*1.3)
	for k, series := range []struct {
		name string
		m    map[string]float64
	}{{"predicted", pr.PredictedShare}, {"measured", pr.MeasuredShare}} {
		vals := make(plotter.Values, len(ids))
		for i, id := range ids {
			vals[i] = 100 * series.m[id]
		}
		if err := addBars(pl, series.name, vals, k, k*14-7); err != nil {
			return nil, err
		}
	}
	names := make([]string, len(ids))
	for i, id := range ids {
		names[i] = "broker " + id
	}
	pl.NominalX(names...)
	pl.Legend.Top = true
	return pl, nil
}

// barPlots: per partitioner, records per broker before and after the kill.
func barPlots(res *chaos.Result) ([][]*plot.Plot, error) {
	var ps []*plot.Plot
	for _, p := range res.Partitioners {
		pl := plot.New()
		pl.Title.Text = p.Name
		pl.Y.Label.Text = "records"
		pl.X.Label.Text = "broker"
		var ids []int
		for _, ph := range []string{"before", "after", "recovered"} {
			if pr := p.Phases[ph]; pr != nil {
				for k := range pr.PerBroker {
					if id, err := strconv.Atoi(k); err == nil && id >= 0 && !slices.Contains(ids, id) {
						ids = append(ids, id)
					}
				}
			}
		}
		slices.Sort(ids)
		if len(ids) == 0 { // the partitioner never ran (an interrupted run)
			pl.Title.Text += " (no records)"
			ps = append(ps, pl)
			continue
		}
		shown := 0
		for j, ph := range []string{"before", "after", "recovered"} {
			pr := p.Phases[ph]
			if pr == nil {
				continue
			}
			vals := make(plotter.Values, len(ids))
			for i, id := range ids {
				vals[i] = float64(pr.PerBroker[strconv.Itoa(id)])
			}
			if err := addBars(pl, ph, vals, j, shown*14-14); err != nil {
				return nil, err
			}
			shown++
		}
		names := make([]string, len(ids))
		for i, id := range ids {
			names[i] = "broker " + strconv.Itoa(id)
		}
		pl.NominalX(names...)
		pl.Legend.Top = true
		ps = append(ps, pl)
	}
	return report.GridOf(ps, 2), nil
}

// cdfPlots: per partitioner, produce and end-to-end latency CDFs before and
// after the kill on a log scale.
func cdfPlots(res *chaos.Result) ([][]*plot.Plot, error) {
	var ps []*plot.Plot
	for _, p := range res.Partitioners {
		pl := plot.New()
		pl.Title.Text = p.Name
		pl.X.Label.Text = "latency (ms, log scale)"
		pl.Y.Label.Text = "fraction of records"
		pl.X.Scale = plot.LogScale{}
		pl.X.Tick.Marker = plot.LogTicks{Prec: -1}
		pl.Add(plotter.NewGrid())
		k := 0
		for _, ph := range []chaos.Phase{chaos.PhaseBefore, chaos.PhaseAfter} {
			for _, kind := range []string{"produce", "e2e"} {
				xs := p.Series.ProduceSamples[ph]
				if kind == "e2e" {
					xs = p.Series.E2ESamples[ph]
				}
				if len(xs) == 0 {
					continue
				}
				l, err := plotter.NewLine(cdf(xs))
				if err != nil {
					return nil, err
				}
				l.Color = plotutil.Color(int(ph))
				if kind == "e2e" {
					l.Dashes = []vg.Length{vg.Points(4), vg.Points(2)}
				}
				l.Width = vg.Points(1.5)
				pl.Add(l)
				pl.Legend.Add(ph.String()+" "+kind, l)
				k++
			}
		}
		if k == 0 {
			pl.X.Scale, pl.X.Tick.Marker = plot.LinearScale{}, plot.DefaultTicks{}
			pl.Title.Text += " (no samples)"
		} else {
			// A log axis needs a positive, non-empty range.
			pl.X.Min = math.Max(pl.X.Min, 0.01)
			pl.X.Max = math.Max(pl.X.Max, pl.X.Min*10)
		}
		pl.Legend.Top = false
		pl.Legend.Left = false
		ps = append(ps, pl)
	}
	return report.GridOf(ps, 2), nil
}

// cdf returns the empirical CDF of xs (clamped to 0.01 ms for the log axis),
// thinned to at most 2,000 points.
func cdf(xs []float64) plotter.XYs {
	s := slices.Clone(xs)
	slices.Sort(s)
	step := max(1, len(s)/2000)
	var pts plotter.XYs
	for i := 0; i < len(s); i += step {
		pts = append(pts, plotter.XY{X: math.Max(s[i], 0.01), Y: float64(i+1) / float64(len(s))})
	}
	pts = append(pts, plotter.XY{X: math.Max(s[len(s)-1], 0.01), Y: 1})
	return pts
}

// throughputPlots: acknowledged MB/s over time for every partitioner, with
// the kill marked.
func throughputPlots(res *chaos.Result) ([][]*plot.Plot, error) {
	pl := plot.New()
	pl.Title.Text = "acknowledged throughput over time (" + res.Label + ")"
	pl.X.Label.Text = "seconds since start"
	pl.Y.Label.Text = "MB/s"
	pl.Add(plotter.NewGrid())
	var ymax float64
	for i, p := range res.Partitioners {
		bucket := chaos.BucketWidth
		pts := make(plotter.XYs, len(p.Series.Buckets))
		for b, v := range p.Series.Buckets {
			pts[b] = plotter.XY{X: (float64(b) + 0.5) * bucket.Seconds(), Y: float64(v) / 1e6 / bucket.Seconds()}
			ymax = math.Max(ymax, pts[b].Y)
		}
		if len(pts) == 0 {
			continue
		}
		l, err := plotter.NewLine(pts)
		if err != nil {
			return nil, err
		}
		l.Color = plotutil.Color(i)
		l.Width = vg.Points(1)
		pl.Add(l)
		pl.Legend.Add(p.Name, l)
	}
	marked := false
	for _, p := range res.Partitioners {
		k := p.Series.KillAtS
		if p.KilledBroker < 0 || k <= 0 || (marked && !res.Sequential) {
			continue
		}
		kl, err := plotter.NewLine(plotter.XYs{{X: k, Y: 0}, {X: k, Y: math.Max(ymax, 1e-6) * 1.05}})
		if err != nil {
			return nil, err
		}
		kl.Color = color.RGBA{R: 200, A: 255}
		kl.Dashes = []vg.Length{vg.Points(3), vg.Points(3)}
		pl.Add(kl)
		if !marked {
			pl.Legend.Add(fmt.Sprintf("kill broker-%d", p.KilledBroker), kl)
		}
		marked = true
	}
	pl.Legend.Top = true
	return [][]*plot.Plot{{pl}}, nil
}

// addBars adds one series of 14-point bars to pl, in colour number
// colour, shifted by offset points, with its legend entry.
func addBars(pl *plot.Plot, name string, vals plotter.Values, colour, offset int) error {
	bars, err := plotter.NewBarChart(vals, vg.Points(14))
	if err != nil {
		return err
	}
	bars.Color = plotutil.Color(colour)
	bars.LineStyle.Width = 0
	bars.Offset = vg.Points(float64(offset))
	pl.Add(bars)
	pl.Legend.Add(name, bars)
	return nil
}
