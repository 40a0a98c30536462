package sim

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// panel is one plot: a y value per point against the loss rate.
type panel struct {
	file, title, ylabel string
	y                   func(*Point) (float64, bool)
}

func ptr(v *float64) (float64, bool) {
	if v == nil {
		return 0, false
	}
	return *v, true
}

var panels = []panel{
	{"samples", "(a) effective sample size", "samples", func(p *Point) (float64, bool) { return p.Samples, true }},
	{"mean", "(b) relative error of the mean delay", "relative error", func(p *Point) (float64, bool) { return ptr(p.MeanRelErr) }},
	{"stddev", "(c) relative error of the std-dev", "relative error", func(p *Point) (float64, bool) { return ptr(p.StddevRelErr) }},
	{"bound", "98 % Hoeffding bound (most conservative run) / true mean", "relative half-width", func(p *Point) (float64, bool) { return ptr(p.BoundRel) }},
}

// WritePlots writes PNG plots like the paper's Figs. 4–6 into dir (created
// if missing): per experiment, <exp>_samples.png, <exp>_mean.png,
// <exp>_stddev.png and <exp>_bound.png, loss rate on a log x axis and the
// value on a log y axis, one curve per series or method. Points whose value
// is zero or absent cannot be drawn on a log axis and are left out. It
// returns the files written.
func WritePlots(dir string, pts []Point) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("sim: plots: %w", err)
	}
	var exps []string
	byExp := map[string][]Point{}
	for _, p := range pts {
		if _, ok := byExp[p.Experiment]; !ok {
			exps = append(exps, p.Experiment)
		}
		byExp[p.Experiment] = append(byExp[p.Experiment], p)
	}
	var files []string
	for _, e := range exps {
		for _, pn := range panels {
			f := filepath.Join(dir, e+"_"+pn.file+".png")
			ok, err := plotPanel(f, e, pn, byExp[e])
			if err != nil {
				return files, err
			}
			if ok {
				files = append(files, f)
			}
		}
	}
	return files, nil
}

// curveName labels a point's curve: the series when every point of the
// experiment uses one method, the method when there is one series, both
// otherwise.
func curveNamer(pts []Point) func(*Point) string {
	series, methods := map[string]bool{}, map[string]bool{}
	for _, p := range pts {
		series[p.Series], methods[p.Method] = true, true
	}
	return func(p *Point) string {
		switch {
		case len(methods) == 1:
			return p.Series
		case len(series) == 1:
			return p.Method
		}
		return p.Series + " " + p.Method
	}
}

func plotPanel(file, exp string, pn panel, pts []Point) (bool, error) {
	name := curveNamer(pts)
	var order []string
	curves := map[string]plotter.XYs{}
	for i := range pts {
		p := &pts[i]
		y, ok := pn.y(p)
		if !ok || !(y > 0) || !(p.LossRate > 0) {
			continue
		}
		n := name(p)
		if _, seen := curves[n]; !seen {
			order = append(order, n)
		}
		curves[n] = append(curves[n], plotter.XY{X: p.LossRate, Y: y})
	}
	if len(order) == 0 {
		return false, nil
	}
	plt := plot.New()
	title := Titles[exp]
	if title == "" {
		title = exp
	}
	plt.Title.Text = title + "\n" + pn.title
	plt.Title.TextStyle.Font.Size = vg.Points(9)
	plt.X.Label.Text = "loss rate"
	plt.Y.Label.Text = pn.ylabel
	plt.X.Scale, plt.Y.Scale = plot.LogScale{}, plot.LogScale{}
	plt.X.Tick.Marker, plt.Y.Tick.Marker = plot.LogTicks{Prec: -1}, plot.LogTicks{Prec: -1}
	plt.Legend.Top = pn.file != "samples"
	plt.Legend.Left = true
	plt.Add(plotter.NewGrid())
	for i, n := range order {
		xy := curves[n]
		sort.Slice(xy, func(a, b int) bool { return xy[a].X < xy[b].X })
		l, s, err := plotter.NewLinePoints(xy)
		if err != nil {
			return false, fmt.Errorf("sim: plot %s: %w", file, err)
		}
		c := plotutil.Color(i)
		l.Color, s.Color = c, c
		l.Dashes = plotutil.Dashes(i)
		s.Shape = plotutil.Shape(i)
		plt.Add(l, s)
		plt.Legend.Add(n, l, s)
	}
	plt.Legend.TextStyle.Font.Size = vg.Points(8)
	plt.Legend.Padding = vg.Points(1)
	// A log axis needs a range: widen a single value to a factor 2 each way.
	for _, ax := range []*plot.Axis{&plt.X, &plt.Y} {
		if ax.Min == ax.Max {
			ax.Min, ax.Max = ax.Min/2, ax.Max*2
		}
	}
	if err := plt.Save(6*vg.Inch, 4*vg.Inch, file); err != nil {
		return false, fmt.Errorf("sim: plot %s: %w", file, err)
	}
	return true, nil
}
