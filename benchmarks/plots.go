package main

// Plots, drawn with gonum/plot: per suite, one tile per group and
// operation with the time per operation against size for every
// implementation (log scales, bars from the fastest to the slowest run),
// and one chart of each implementation's ratio to the baseline; for the
// capacity suite, the bytes obtained per tier.

import (
	"errors"
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// writePlots draws every plot into dir and returns their file names by
// key (suite, suite-ratio).
func writePlots(dir, format string, res *Results) (map[string]string, error) {
	files := map[string]string{}
	var errs []error
	save := func(key string, plots []*plot.Plot, cols int, tileW, tileH vg.Length) {
		if len(plots) == 0 {
			return
		}
		name := key + "." + format
		if err := saveTiles(filepath.Join(dir, name), format, plots, cols, tileW, tileH); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
			return
		}
		files[key] = name
	}
	for _, s := range res.Suites {
		if s.Name == "capacity" {
			if p := capacityPlot(res); p != nil {
				save("capacity", []*plot.Plot{p}, 1, 5*vg.Inch, 3.5*vg.Inch)
			}
			continue
		}
		views := groupViews(res, s.Name)
		colors := implColors(views)
		var tiles []*plot.Plot
		for _, v := range views {
			for _, op := range v.ops {
				p, err := timePlot(res, v, op, colors)
				if err != nil {
					errs = append(errs, fmt.Errorf("%s %s: %w", v.name, op, err))
				}
				if p != nil {
					tiles = append(tiles, p)
				}
			}
		}
		save(s.Name, tiles, 3, 4.2*vg.Inch, 3.2*vg.Inch)
		p, err := ratioPlot(res, views, colors)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s ratios: %w", s.Name, err))
		}
		if p != nil {
			save(s.Name+"-ratio", []*plot.Plot{p}, 1, 10*vg.Inch, 4.5*vg.Inch)
		}
	}
	return files, errors.Join(errs...)
}

// implColors gives every implementation of a suite one color and glyph
// in all its tiles.
func implColors(views []*groupView) map[string]int {
	m := map[string]int{}
	for _, v := range views {
		for _, im := range v.impls {
			if _, ok := m[im.Name]; !ok {
				m[im.Name] = len(m)
			}
		}
	}
	return m
}

func style(p *plot.Plot) {
	p.Title.TextStyle.Font.Size = vg.Points(10)
	p.Legend.TextStyle.Font.Size = vg.Points(7)
	p.Legend.Top, p.Legend.Left = true, true
	p.Legend.ThumbnailWidth = vg.Points(12)
	p.X.Label.TextStyle.Font.Size = vg.Points(8)
	p.Y.Label.TextStyle.Font.Size = vg.Points(8)
	p.X.Tick.Label.Font.Size = vg.Points(7)
	p.Y.Tick.Label.Font.Size = vg.Points(7)
	p.Add(plotter.NewGrid())
}

// errPoints are medians with their spread, for YErrorBars.
type errPoints struct {
	plotter.XYs
	plotter.YErrors
}

// timePlot draws one operation of a group: ns/op against size.
func timePlot(res *Results, v *groupView, op string, colors map[string]int) (*plot.Plot, error) {
	ix := newIndex(res)
	p := plot.New()
	style(p)
	p.Title.Text = v.name + " " + op
	p.X.Label.Text = "entries"
	p.Y.Label.Text = "time per operation (ns)"
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	var ticks []plot.Tick
	for _, n := range v.sizes {
		ticks = append(ticks, plot.Tick{Value: float64(n), Label: sizeName(n)})
	}
	p.X.Tick.Marker = plot.ConstantTicks(ticks)
	drawn := 0
	for _, im := range v.impls {
		var pts errPoints
		for _, n := range v.sizes {
			c := ix.get(v.name, op, n, im.Name)
			if c == nil || c.Status != StatusOK || !(c.Median > 0) || !(c.Min > 0) {
				continue
			}
			pts.XYs = append(pts.XYs, plotter.XY{X: float64(n), Y: c.Median})
			pts.YErrors = append(pts.YErrors, struct{ Low, High float64 }{c.Median - c.Min, c.Max - c.Median})
		}
		if len(pts.XYs) == 0 {
			continue
		}
		col := plotutil.Color(colors[im.Name])
		line, points, err := plotter.NewLinePoints(pts.XYs)
		if err != nil {
			return nil, err
		}
		line.Color, points.Color = col, col
		points.Shape = plotutil.Shape(colors[im.Name])
		if im.Role == RoleNaive {
			line.Dashes = []vg.Length{vg.Points(3), vg.Points(2)}
		}
		bars, err := plotter.NewYErrorBars(pts)
		if err != nil {
			return nil, err
		}
		bars.Color = col
		p.Add(line, points, bars)
		p.Legend.Add(im.Name, line, points)
		drawn++
	}
	if drawn == 0 {
		return nil, nil
	}
	widenLog(&p.X, float64(v.sizes[0]), float64(v.sizes[len(v.sizes)-1]))
	decades(&p.Y, p.Y.Min, p.Y.Max)
	return p, nil
}

// widenLog pads a log axis by a factor of two on each side, which also
// makes a range of one value (one size) visible.
func widenLog(a *plot.Axis, lo, hi float64) {
	if !(lo > 0) || !(hi > 0) {
		return
	}
	a.Min, a.Max = lo/2, hi*2
}

// decades widens a log axis to whole powers of ten, so that it always
// carries labelled ticks.
func decades(a *plot.Axis, lo, hi float64) {
	if !(lo > 0) || !(hi > 0) {
		return
	}
	a.Min = math.Pow(10, math.Floor(math.Log10(lo)))
	a.Max = math.Pow(10, math.Ceil(math.Log10(hi)))
	if a.Max <= a.Min {
		a.Max = a.Min * 10
	}
}

// ratioPlot draws every non-baseline implementation's ratio to the
// primary baseline, one column per case.
func ratioPlot(res *Results, views []*groupView, colors map[string]int) (*plot.Plot, error) {
	ix := newIndex(res)
	type col struct {
		group, op string
		size      int
	}
	var cols []col
	var labels []string
	for _, v := range views {
		if len(v.baselines) == 0 {
			continue
		}
		for _, op := range v.ops {
			for _, n := range v.sizes {
				cols = append(cols, col{v.name, op, n})
				labels = append(labels, v.name+" "+op+" "+sizeName(n))
			}
		}
	}
	if len(cols) == 0 {
		return nil, nil
	}
	p := plot.New()
	style(p)
	p.Title.Text = "time relative to the baseline (below 1: faster)"
	p.Y.Label.Text = "ratio to the baseline"
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	p.NominalX(labels...)
	p.X.Tick.Label.Rotation = math.Pi / 4
	p.X.Tick.Label.XAlign = draw.XRight
	p.X.Tick.Label.YAlign = draw.YTop
	var names []string
	for _, v := range views {
		for _, im := range v.impls {
			if !slices.Contains(v.baselines[:min(1, len(v.baselines))], im.Name) && !slices.Contains(names, im.Name) {
				names = append(names, im.Name)
			}
		}
	}
	lo, hi := 1.0, 1.0
	drawn := 0
	for k, name := range names {
		var xys plotter.XYs
		for i, c := range cols {
			v := views[slices.IndexFunc(views, func(v *groupView) bool { return v.name == c.group })]
			cr := ix.get(c.group, c.op, c.size, name)
			if cr == nil {
				continue
			}
			r := ix.ratio(cr, v.baselines[0])
			if math.IsNaN(r) || !(r > 0) || math.IsInf(r, 0) {
				continue
			}
			// Spread the implementations of one column a little apart.
			off := (float64(k) - float64(len(names)-1)/2) * 0.08
			xys = append(xys, plotter.XY{X: float64(i) + off, Y: r})
			lo, hi = min(lo, r), max(hi, r)
		}
		if len(xys) == 0 {
			continue
		}
		s, err := plotter.NewScatter(xys)
		if err != nil {
			return nil, err
		}
		s.Color = plotutil.Color(colors[name])
		s.Shape = plotutil.Shape(colors[name])
		s.Radius = vg.Points(2.5)
		p.Add(s)
		p.Legend.Add(name, s)
		drawn++
	}
	if drawn == 0 {
		return nil, nil
	}
	one := plotter.NewFunction(func(float64) float64 { return 1 })
	one.Color = color.Gray{Y: 90}
	one.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	p.Add(one)
	decades(&p.Y, lo, hi)
	p.X.Min, p.X.Max = -0.6, float64(len(cols))-0.4
	return p, nil
}

// capacityPlot draws the GiB obtained per tier.
func capacityPlot(res *Results) *plot.Plot {
	var vals plotter.Values
	var names []string
	for _, c := range res.Cases {
		if c.Suite == "capacity" && c.Status == StatusOK {
			vals = append(vals, c.Metrics["GiB"])
			names = append(names, c.Op)
		}
	}
	if len(vals) == 0 {
		return nil
	}
	p := plot.New()
	style(p)
	p.Title.Text = "capacity: memory obtained per tier"
	p.Y.Label.Text = "GiB"
	bars, err := plotter.NewBarChart(vals, vg.Points(30))
	if err != nil {
		return nil
	}
	bars.Color = plotutil.Color(0)
	p.Add(bars)
	p.NominalX(names...)
	p.Y.Min = 0
	return p
}

// saveTiles draws plots in a grid of cols columns into file.
func saveTiles(file, format string, plots []*plot.Plot, cols int, tileW, tileH vg.Length) (err error) {
	defer func() {
		// gonum/plot panics on some degenerate data; one bad plot must not
		// end the report.
		if p := recover(); p != nil {
			err = fmt.Errorf("drawing: %v", p)
		}
	}()
	cols = min(cols, len(plots))
	rows := (len(plots) + cols - 1) / cols
	w, h := vg.Length(cols)*tileW, vg.Length(rows)*tileH
	var c interface {
		vg.CanvasWriterTo
	}
	switch format {
	case "png":
		c = vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(110))}
	default:
		c = vgsvg.New(w, h)
	}
	dc := draw.New(c)
	grid := make([][]*plot.Plot, rows)
	for r := range grid {
		grid[r] = make([]*plot.Plot, cols)
		for k := range cols {
			if i := r*cols + k; i < len(plots) {
				grid[r][k] = plots[i]
			}
		}
	}
	tiles := draw.Tiles{Rows: rows, Cols: cols, PadX: vg.Millimeter * 4, PadY: vg.Millimeter * 4,
		PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 2}
	canvases := plot.Align(grid, tiles, dc)
	for r := range grid {
		for k, p := range grid[r] {
			if p != nil {
				p.Draw(canvases[r][k])
			}
		}
	}
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if _, err := c.WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
