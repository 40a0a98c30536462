package sim

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"github.com/ldafwd/ldafwd/report"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// SynopsisExperiments lists the names RunSynopsisExperiment accepts: the
// RDA paper's Fig. 7 (RDA vs LDA as the set difference grows) and the LDS
// paper's Fig. 10 (per-flow error by flow size) and Fig. 12 (flow weights).
var SynopsisExperiments = []string{"rda-fig7", "lds-fig10", "lds-fig12"}

// Limits of SynopsisOptions.
const (
	synMaxRDAPackets = 20_000_000
	synMaxLDSFlows   = 2_000_000
	synMaxRuns       = 100_000
)

// SynopsisOptions steers RunSynopsisExperiment. Zero values take the
// experiment's defaults (written in the table's header lines).
type SynopsisOptions struct {
	// Packets per interval for rda-fig7; flows per interval for the LDS
	// experiments (their packets follow from the Pareto flow sizes).
	Packets int
	// Runs is the number of independent intervals per point (rda-fig7)
	// or pooled intervals (LDS).
	Runs    int
	Seed    uint64
	Workers int  // parallel intervals; 0 = GOMAXPROCS
	Quick   bool // fewer points and smaller intervals (CI, smoke runs)
	// CSV, when non-nil, receives the same rows as the table, with a
	// header line.
	CSV io.Writer
	// PlotDir, when non-empty, receives PNG plots (created if missing).
	PlotDir string
	// JSON writes one `"type":"sim"` JSON line per row to out instead of
	// the readable table.
	JSON bool
}

// RunSynopsisExperiment runs one experiment of SynopsisExperiments and
// writes its table to out (or JSON lines when o.JSON), its rows to o.CSV
// and its plots to o.PlotDir (rda-fig7_{mean,stddev,exact}.png,
// lds-fig10_median.png, lds-fig12_cdf.png).
//
// The result depends on o.Seed, o.Packets, o.Runs and o.Quick only, not on
// o.Workers: every interval has its own seed and result slot. It shares
// nothing between calls, so calls may run concurrently. Defaults with 2
// workers on the shared 2-core VM (load ≈ 11): rda-fig7 100–165 s, peak RSS
// 270 MB (200 000 packets, 20 intervals × 13 set differences × 6
// synopses); lds-fig10 ≈ 10 s; lds-fig12 ≈ 50 s, peak RSS 575 MB (8
// intervals of ≈ 1 M packets, per-flow outcomes of 8 sketches kept for
// the medians).
func RunSynopsisExperiment(name string, o SynopsisOptions, out io.Writer) error {
	if o.Packets < 0 || o.Runs < 0 || o.Workers < 0 {
		return fmt.Errorf("sim: %s: packets, runs and workers must not be negative", name)
	}
	// Limits that keep a typo from asking for tens of GB: an rda-fig7
	// interval holds ~50 bytes per packet per worker, an LDS interval of n
	// flows ~27·n packets and ~300 bytes per flow per sketch.
	limit := synMaxRDAPackets
	if strings.HasPrefix(name, "lds") {
		limit = synMaxLDSFlows
	}
	if o.Packets > limit || o.Runs > synMaxRuns {
		return fmt.Errorf("sim: %s: packets (flows for lds) %d or runs %d above the limits %d, %d", name, o.Packets, o.Runs, limit, synMaxRuns)
	}
	if o.Workers == 0 {
		o.Workers = runtime.GOMAXPROCS(0)
	}
	var t *synTable
	var err error
	switch name {
	case "rda-fig7":
		t, err = rdaFig7(o)
	case "lds-fig10":
		t, err = ldsFig10(o)
	case "lds-fig12":
		t, err = ldsFig12(o)
	default:
		return fmt.Errorf("sim: unknown synopsis experiment %q (have %s)", name, strings.Join(SynopsisExperiments, ", "))
	}
	if err != nil {
		return err
	}
	if o.JSON {
		err = t.writeJSON(out)
	} else {
		err = t.writeTable(out)
	}
	if err != nil {
		return err
	}
	if o.CSV != nil {
		if err := t.writeCSV(o.CSV); err != nil {
			return err
		}
	}
	if o.PlotDir != "" && t.plot != nil {
		if err := os.MkdirAll(o.PlotDir, 0o755); err != nil {
			return fmt.Errorf("sim: plots: %w", err)
		}
		if err := t.plot(o.PlotDir); err != nil {
			return err
		}
	}
	return nil
}

// synTable is one experiment's result: the same rows as text, CSV and
// JSON. Values are kept as float64 (NaN = not applicable) or strings.
type synTable struct {
	experiment string
	notes      []string // header lines of the readable table
	cols       []string // column names (JSON keys)
	rows       [][]any  // string, int, bool or float64 per column
	plot       func(dir string) error
}

func (t *synTable) add(vals ...any) {
	if len(vals) != len(t.cols) {
		panic(fmt.Sprintf("sim: %s row has %d values for %d columns", t.experiment, len(vals), len(t.cols)))
	}
	t.rows = append(t.rows, vals)
}

// synFmt formats a value for the table and the CSV: floats with 3
// significant digits (rel. errors down to 1e-16 must stay readable).
func synFmt(v any) string {
	switch x := v.(type) {
	case float64:
		if math.IsNaN(x) {
			return "-"
		}
		return strconv.FormatFloat(x, 'g', 3, 64)
	case bool:
		if x {
			return "yes"
		}
		return "no"
	default:
		return fmt.Sprint(x)
	}
}

func (t *synTable) writeTable(w io.Writer) error {
	for _, n := range t.notes {
		if _, err := fmt.Fprintf(w, "# %s\n", n); err != nil {
			return err
		}
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, strings.Join(t.cols, "\t")+"\t")
	for _, r := range t.rows {
		s := make([]string, len(r))
		for i, v := range r {
			s[i] = synFmt(v)
		}
		fmt.Fprintln(tw, strings.Join(s, "\t")+"\t")
	}
	return tw.Flush()
}

func (t *synTable) writeCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	_ = cw.Write(append([]string{"experiment"}, t.cols...))
	for _, r := range t.rows {
		s := []string{t.experiment}
		for _, v := range r {
			if f, ok := v.(float64); ok {
				s = append(s, strconv.FormatFloat(f, 'g', -1, 64))
				continue
			}
			s = append(s, fmt.Sprint(v))
		}
		_ = cw.Write(s)
	}
	cw.Flush()
	return cw.Error()
}

func (t *synTable) writeJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	for _, r := range t.rows {
		m := map[string]any{"type": "sim", "schema": report.SchemaVersion, "experiment": t.experiment}
		for i, v := range r {
			if f, ok := v.(float64); ok && (math.IsNaN(f) || math.IsInf(f, 0)) {
				continue // not applicable: JSON has no NaN
			}
			m[t.cols[i]] = v
		}
		if err := enc.Encode(m); err != nil {
			return err
		}
	}
	return nil
}

// synParallel runs job(i) for i in [0, n) on up to workers goroutines.
// Each worker gets its own index w so it can reuse scratch (sketches, RNG
// buffers) across its jobs; results go into slots the caller indexes by i,
// so the output does not depend on scheduling.
func synParallel(n, workers int, job func(w, i int)) {
	workers = max(1, min(workers, n))
	var wg sync.WaitGroup
	next := make(chan int)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				job(w, i)
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
}

// synQuantile is the q-quantile (nearest rank) of sorted xs; NaN if empty.
func synQuantile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return math.NaN()
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

// synCurve is one line of a plot.
type synCurve struct {
	name  string
	xy    plotter.XYs
	lines bool // line only, no point markers (CDFs with thousands of points)
}

// synPlot draws curves into file, each axis logarithmic when asked.
// Points with y ≤ floor (a log y axis cannot show 0) are lifted to floor
// so that an exact (zero) error stays visible at the bottom.
//
// legend is where the legend goes: "tl", "tr", "bl" or "br".
func synPlot(file, title, xlabel, ylabel string, logX, logY bool, floor float64, legend string, curves []synCurve) error {
	plt := plot.New()
	plt.Title.Text = title
	plt.Title.TextStyle.Font.Size = vg.Points(9)
	plt.X.Label.Text, plt.Y.Label.Text = xlabel, ylabel
	if logX {
		plt.X.Scale, plt.X.Tick.Marker = plot.LogScale{}, plot.LogTicks{Prec: 1}
	}
	if logY {
		plt.Y.Scale, plt.Y.Tick.Marker = plot.LogScale{}, plot.LogTicks{Prec: 1}
	}
	plt.Add(plotter.NewGrid())
	plt.Legend.Top, plt.Legend.Left = legend[0] == 't', legend[1] == 'l'
	plt.Legend.TextStyle.Font.Size = vg.Points(8)
	drawn := 0
	for i, c := range curves {
		var xy plotter.XYs
		for _, p := range c.xy {
			if math.IsNaN(p.Y) || (logX && !(p.X > 0)) {
				continue
			}
			if logY && !(p.Y > floor) {
				p.Y = floor
			}
			xy = append(xy, p)
		}
		if len(xy) == 0 {
			continue
		}
		sort.Slice(xy, func(a, b int) bool { return xy[a].X < xy[b].X })
		col := plotutil.Color(i)
		if c.lines {
			l, err := plotter.NewLine(xy)
			if err != nil {
				return fmt.Errorf("sim: plot %s: %w", file, err)
			}
			l.Color, l.Dashes = col, plotutil.Dashes(i)
			plt.Add(l)
			plt.Legend.Add(c.name, l)
			drawn++
			continue
		}
		l, s, err := plotter.NewLinePoints(xy)
		if err != nil {
			return fmt.Errorf("sim: plot %s: %w", file, err)
		}
		l.Color, s.Color = col, col
		l.Dashes = plotutil.Dashes(i)
		s.Shape = plotutil.Shape(i)
		plt.Add(l, s)
		plt.Legend.Add(c.name, l, s)
		drawn++
	}
	if drawn == 0 {
		return nil
	}
	if logY && plt.Y.Min == plt.Y.Max {
		plt.Y.Min, plt.Y.Max = plt.Y.Min/2, plt.Y.Max*2
	}
	if err := plt.Save(6*vg.Inch, 4*vg.Inch, file); err != nil {
		return fmt.Errorf("sim: plot %s: %w", file, err)
	}
	return nil
}

func synPlotPath(dir, name string) string { return filepath.Join(dir, name+".png") }
