package report

import (
	"fmt"
	"os"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// Series is one named line of a panel.
type Series struct {
	Name string
	X, Y []float64
}

// Panel is one chart of a figure.
type Panel struct {
	Title  string
	XLabel string
	YLabel string
	Series []Series
	// Threshold, when non-zero, is drawn as a dashed horizontal line.
	Threshold float64
}

// WritePanelsPNG draws panels in a grid of cols columns and writes a PNG to
// path atomically (a temp file renamed into place).
func WritePanelsPNG(path string, panels []Panel, cols int) error {
	if len(panels) == 0 {
		return fmt.Errorf("plot %s: nothing to draw", path)
	}
	rows := (len(panels) + cols - 1) / cols
	grid := make([][]*plot.Plot, rows)
	for i := range grid {
		grid[i] = make([]*plot.Plot, cols)
	}
	for i, pn := range panels {
		p := plot.New()
		p.Title.Text = pn.Title
		p.X.Label.Text = pn.XLabel
		p.Y.Label.Text = pn.YLabel
		p.Legend.Top = true
		p.Add(plotter.NewGrid())
		for j, s := range pn.Series {
			pts := make(plotter.XYs, len(s.X))
			for k := range s.X {
				pts[k].X, pts[k].Y = s.X[k], s.Y[k]
			}
			l, err := plotter.NewLine(pts)
			if err != nil {
				return fmt.Errorf("plot %s: %w", path, err)
			}
			l.Color = plotutil.Color(j)
			l.Dashes = plotutil.Dashes(j)
			l.Width = vg.Points(1.5)
			p.Add(l)
			p.Legend.Add(s.Name, l)
		}
		if pn.Threshold != 0 && len(pn.Series) > 0 && len(pn.Series[0].X) > 0 {
			xs := pn.Series[0].X
			th, err := plotter.NewLine(plotter.XYs{{X: xs[0], Y: pn.Threshold}, {X: xs[len(xs)-1], Y: pn.Threshold}})
			if err != nil {
				return fmt.Errorf("plot %s: %w", path, err)
			}
			th.Dashes = []vg.Length{vg.Points(2), vg.Points(2)}
			p.Add(th)
			p.Legend.Add("threshold", th)
		}
		grid[i/cols][i%cols] = p
	}
	return WriteGridPNG(path, grid, 4*vg.Inch)
}

// GridOf lays plots out in rows of at most cols (the last row padded with
// nil cells).
func GridOf(ps []*plot.Plot, cols int) [][]*plot.Plot {
	cols = max(1, min(cols, len(ps)))
	var grid [][]*plot.Plot
	for i := 0; i < len(ps); i += cols {
		row := make([]*plot.Plot, cols)
		copy(row, ps[i:min(i+cols, len(ps))])
		grid = append(grid, row)
	}
	return grid
}

// WriteGridPNG draws a grid of plots (nil cells stay empty), each cell colW
// wide and 3 inches high, and writes it as a PNG to path atomically with
// mode PermShared. It is kplan's one PNG writer.
func WriteGridPNG(path string, grid [][]*plot.Plot, colW vg.Length) error {
	if len(grid) == 0 || len(grid[0]) == 0 {
		return fmt.Errorf("plot %s: nothing to draw", path)
	}
	rows, cols := len(grid), len(grid[0])
	img := vgimg.New(vg.Length(cols)*colW, vg.Length(rows)*3*vg.Inch)
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: rows, Cols: cols, PadX: vg.Millimeter * 4, PadY: vg.Millimeter * 4, PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 2}
	canvases := plot.Align(grid, tiles, dc)
	for r := range grid {
		for c := range grid[r] {
			if grid[r][c] != nil {
				grid[r][c].Draw(canvases[r][c])
			}
		}
	}
	return writeAtomic(path, func(f *os.File) error {
		_, err := vgimg.PngCanvas{Canvas: img}.WriteTo(f)
		return err
	})
}
