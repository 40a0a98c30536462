package sim

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/ldafwd/ldafwd/progress"
	"github.com/ldafwd/ldafwd/report"
)

// Command is `ldafwd sim` after its flags are checked: which experiments,
// with which options, and where the results go.
type Command struct {
	Names      []string // experiments, as ExperimentNames returns them
	Options    Options
	SynPackets int // RDA/LDS experiments: --packets when given (0: their own)
	SynRuns    int // and --runs
	Workers    int
	CSV, Plot  string // --csv file, --plot directory ("" none)
	Quick      bool
	Claims     bool   // check the paper's claims after the tables
	Table      bool   // print tables on stdout (else JSON lines)
	Report     string // --report file
	Quiet      bool   // no progress line on a terminal stderr
}

// Run runs the experiments in order, writing points and claims to w, the
// tables to stdout and progress to stderr; an interrupt (SIGINT) stops it.
// Unless c.Quiet, a terminal stderr also shows the point running, of how
// many, and the time left at the pace of the points done.
func (c *Command) Run(ctx context.Context, w *report.Writer, stdout, stderr io.Writer) error {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt)
	defer stop()
	start := time.Now()
	meter := progress.New(stderr, c.Quiet)
	defer func() { meter.Clear() }()
	var all []Point
	for _, name := range c.Names {
		t0 := time.Now()
		meter = progress.New(stderr, c.Quiet) // each experiment's own ETA
		if containsName(SynopsisExperiments, name) {
			// RDA vs LDA (RDA Fig. 7) and the LDS per-flow experiments
			// (LDS Figs. 10, 12): their own tables, CSV and plots.
			so := SynopsisOptions{Packets: c.SynPackets, Runs: c.SynRuns, Seed: c.Options.Seed, Workers: c.Workers,
				Quick: c.Quick, PlotDir: c.Plot, JSON: !c.Table}
			run := func(csv io.Writer) error {
				so.CSV = csv
				if c.Table || c.Report == "" {
					return RunSynopsisExperiment(name, so, stdout)
				}
				// JSON lines to stdout and to --report.
				f, err := os.OpenFile(c.Report, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
				if err != nil {
					return fmt.Errorf("--report: %w", err)
				}
				defer f.Close()
				return RunSynopsisExperiment(name, so, io.MultiWriter(stdout, f))
			}
			meter.Set("sim: %s running (%.0f s so far)", name, meter.Elapsed().Seconds())
			var err error
			if c.CSV != "" {
				err = writeFileWith(strings.TrimSuffix(c.CSV, ".csv")+"-"+name+".csv", run)
			} else {
				err = run(nil)
			}
			meter.Clear()
			if err != nil {
				return fmt.Errorf("sim: %s: %w", name, err)
			}
			fmt.Fprintf(stderr, "sim: %s done in %.1fs\n", name, time.Since(t0).Seconds())
			continue
		}
		var pts []Point
		progress := func(exp string, done, total int, s *Scenario) {
			meter.Clear()
			defer meterPoint(meter, exp, done, total, s)
			if done == 0 {
				fmt.Fprintf(stderr, "sim: %s: %d points × %d runs × %d packets…\n", exp, total, s.Runs, s.Packets)
			}
		}
		err := RunExperiments(ctx, []string{name}, c.Options, c.Workers, progress, func(p Point) error {
			pts = append(pts, p)
			return w.Write(&p)
		})
		meter.Clear()
		if err != nil {
			return err
		}
		fmt.Fprintf(stderr, "sim: %s done in %.1fs\n", name, time.Since(t0).Seconds())
		if c.Table {
			if err := WriteTable(stdout, pts); err != nil {
				return err
			}
			fmt.Fprintln(stdout)
		}
		all = append(all, pts...)
	}
	if c.Table && len(all) > 0 {
		if err := WriteSummary(stdout, all); err != nil {
			return err
		}
		fmt.Fprintln(stdout)
	}
	if c.Claims && len(all) > 0 {
		cs := CheckClaims(all, c.Options.Confidence)
		for i := range cs {
			if err := w.Write(&cs[i]); err != nil {
				return err
			}
		}
		if c.Table && len(cs) > 0 {
			fmt.Fprintf(stdout, "Paper claims (ToN LDA Sec. IV) at N=%d, %d counters, %d runs per point:\n", c.Options.Packets, c.Options.Counters, c.Options.Runs)
			if err := WriteClaims(stdout, cs); err != nil {
				return err
			}
		}
	} else if c.Table && c.Quick && len(all) > 0 {
		fmt.Fprintf(stdout, "Quick run (N=%d, %d runs per point, claims not checked): averages over few runs are noisy; `make accuracy` runs the paper's N = 5 000 000 sweeps and checks its claims.\n",
			c.Options.Packets, c.Options.Runs)
	}
	if c.CSV != "" {
		if err := writeFileWith(c.CSV, func(f io.Writer) error { return WriteCSV(f, all) }); err != nil {
			return fmt.Errorf("sim: --csv: %w", err)
		}
	}
	if c.Plot != "" && len(all) > 0 {
		// The synopsis experiments wrote their own plots above.
		files, err := WritePlots(c.Plot, all)
		if err != nil {
			return fmt.Errorf("sim: --plot: %w", err)
		}
		fmt.Fprintf(stderr, "sim: wrote %d plots to %s\n", len(files), c.Plot)
	}
	if len(all) > 0 {
		fmt.Fprintf(stderr, "sim: %d points in %.1fs\n", len(all), time.Since(start).Seconds())
	}
	return nil
}

// meterPoint draws which point of an experiment runs and the time left
// at the pace of the points done so far.
func meterPoint(m *progress.Meter, exp string, done, total int, s *Scenario) {
	left, ok := m.ETA(float64(done), float64(total))
	m.Set("sim: %s: point %d/%d (%s, loss %g) %s", exp, done+1, total, s.Series, s.LossRate, progress.FormatETA(left, ok))
}

// ExperimentNames expands --experiment (all, custom, the figures, the
// RDA/LDS experiments) into the experiments to run, each once, in order.
// report and format are --report and --format: the RDA/LDS experiments
// write JSON lines to a report file only in json mode.
func ExperimentNames(experiments []string, report, format string) ([]string, error) {
	var names []string
	seen := map[string]bool{}
	for _, e := range experiments {
		e = strings.ToLower(strings.TrimSpace(e))
		list := []string{e}
		if e == "all" {
			list = Experiments
		} else if !containsName(Experiments, e) && !containsName(SynopsisExperiments, e) && e != "custom" {
			return nil, fmt.Errorf("--experiment %q: want %s, all, custom, or %s", e, strings.Join(Experiments, ", "),
				strings.Join(SynopsisExperiments, ", "))
		}
		for _, n := range list {
			if !seen[n] {
				seen[n] = true
				names = append(names, n)
			}
		}
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("--experiment: none given")
	}
	for _, n := range names {
		if containsName(SynopsisExperiments, n) && report != "" && format != "json" {
			return nil, fmt.Errorf("--report with %s needs --format json (its table is not JSON lines)", n)
		}
	}
	return names, nil
}

func containsName(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

func writeFileWith(path string, fn func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := fn(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
