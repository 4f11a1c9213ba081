package measurereport

import (
	"fmt"
	"image/color"
	"math"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/palette/moreland"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/kplan-dev/kplan/internal/measure"
	"github.com/kplan-dev/kplan/internal/report"
)

// batchGrid is the study's cells laid out for the heatmap: columns are
// batch sizes, rows lingers, both in the order given; NaN where a cell
// was not measured.
type batchGrid struct {
	sizes   []measure.BatchSize
	lingers []string
	z       [][]float64 // [row][col] timely throughput, records/s
	label   [][]string
}

func (g batchGrid) Dims() (c, r int)   { return len(g.sizes), len(g.lingers) }
func (g batchGrid) Z(c, r int) float64 { return g.z[r][c] }
func (g batchGrid) X(c int) float64    { return float64(c) }
func (g batchGrid) Y(r int) float64    { return float64(r) }

func newBatchGrid(s *measure.BatchStudy) batchGrid {
	var g batchGrid
	for _, c := range s.Cells {
		if !slices.Contains(g.sizes, c.BatchSize) {
			g.sizes = append(g.sizes, c.BatchSize)
		}
		if !slices.Contains(g.lingers, c.Linger) {
			g.lingers = append(g.lingers, c.Linger)
		}
	}
	g.z = make([][]float64, len(g.lingers))
	g.label = make([][]string, len(g.lingers))
	for r := range g.lingers {
		g.z[r] = make([]float64, len(g.sizes))
		g.label[r] = make([]string, len(g.sizes))
		for c := range g.z[r] {
			g.z[r][c] = math.NaN()
		}
	}
	for i, c := range s.Cells {
		r, col := slices.Index(g.lingers, c.Linger), slices.Index(g.sizes, c.BatchSize)
		g.z[r][col] = c.Timely
		l := fmt.Sprintf("p99 %.1f ms\n%.0f/s", c.Latency.P99, c.Timely)
		if c.LossRate > 0 {
			l += fmt.Sprintf("\nloss %.1f%%", 100*c.LossRate)
		}
		if s.Recommended != nil && s.Recommended.Cell == i {
			l = "[best]\n" + l
		}
		if s.MeanChoice != nil && s.MeanChoice.Cell == i {
			l = "[mean]\n" + l
		}
		g.label[r][col] = l
	}
	return g
}

// writeBatchHeatmap draws linger (rows) x batch size (columns), colour =
// timely throughput, each cell annotated with its p99 and timely
// throughput, the recommended and the mean-latency cells marked.
func writeBatchHeatmap(path string, s *measure.BatchStudy) error {
	g := newBatchGrid(s)
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, row := range g.z {
		for _, z := range row {
			if !math.IsNaN(z) {
				lo, hi = math.Min(lo, z), math.Max(hi, z)
			}
		}
	}
	if hi <= lo {
		hi = lo + 1
	}
	cm := moreland.SmoothBlueRed()
	cm.SetMin(lo)
	cm.SetMax(hi)
	h := plotter.NewHeatMap(g, cm.Palette(64))
	h.Min, h.Max = lo, hi
	h.NaN = color.Gray{Y: 0xdd}

	p := plot.New()
	p.Title.Text = fmt.Sprintf("Timely throughput (records/s; blue %.0f to red %.0f), objective %s, acks %s", lo, hi, s.Objective, s.Acks)
	p.X.Label.Text = "batch size (records per batch, or bytes)"
	p.Y.Label.Text = "linger"
	p.Add(h)
	var xs plotter.XYs
	var labels []string
	var xt, yt []plot.Tick
	for c, sz := range g.sizes {
		xt = append(xt, plot.Tick{Value: float64(c), Label: batchSizeLabel(sz)})
	}
	for r, l := range g.lingers {
		yt = append(yt, plot.Tick{Value: float64(r), Label: l})
		for c := range g.sizes {
			if g.label[r][c] != "" {
				xs = append(xs, plotter.XY{X: float64(c), Y: float64(r)})
				labels = append(labels, g.label[r][c])
			}
		}
	}
	p.X.Tick.Marker = plot.ConstantTicks(xt)
	p.Y.Tick.Marker = plot.ConstantTicks(yt)
	p.X.Min, p.X.Max = -0.5, float64(len(g.sizes))-0.5
	p.Y.Min, p.Y.Max = -0.5, float64(len(g.lingers))-0.5
	lb, err := plotter.NewLabels(plotter.XYLabels{XYs: xs, Labels: labels})
	if err != nil {
		return fmt.Errorf("heatmap: %w", err)
	}
	for i := range lb.TextStyle {
		lb.TextStyle[i].XAlign = -0.5
		lb.TextStyle[i].YAlign = -0.5
		lb.TextStyle[i].Font.Size = vg.Points(8)
	}
	p.Add(lb)
	colW := vg.Length(max(6, 1.6*float64(len(g.sizes)))) * vg.Inch
	return report.WriteGridPNG(path, [][]*plot.Plot{{p}}, colW)
}
