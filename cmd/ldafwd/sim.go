package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/ldafwd/ldafwd/model"
	"github.com/ldafwd/ldafwd/progress"
	"github.com/ldafwd/ldafwd/sim"
)

func init() {
	register("sim", "accuracy experiments of the LDA paper (Figs. 4–6): LDA vs exact truth and active probes", runSim)
}

// simOptions are the parsed flags of `ldafwd sim`.
type simOptions struct {
	out         outputFlags
	experiments []string
	opts        sim.Options
	mean        string
	delay       string
	workers     int
	csv         string
	plot        string
	quick       bool
	claims      bool
	quiet       bool
}

// Quick mode: small enough for `make demo` (a few seconds on 2 cores),
// large enough that the table tells the same story as the full run.
const (
	quickPackets = 1_000_000
	quickRuns    = 5
)

var quickLosses = []float64{0.001, 0.01, 0.05, 0.2}

func runSim(args []string) error { return simMain(context.Background(), args, os.Stdout, os.Stderr) }

func simMain(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o := simOptions{opts: sim.DefaultOptions()}
	def := sim.DefaultOptions()
	fs := newFlagSet("sim", stdout)
	fs.StringSliceVar(&o.experiments, "experiment", []string{"all"}, "experiments to run: fig4, fig5, fig6, all (the three), custom, or the RDA/LDS ones: rda-fig7, lds-fig10, lds-fig12 (comma-separated list allowed)")
	fs.IntVar(&o.opts.Packets, "packets", def.Packets, "packets per interval N (the paper's 10 Gb/s link for 1 s)")
	fs.IntVar(&o.opts.Runs, "runs", def.Runs, "runs per point; each run draws new packet identities and losses over the same delay trace")
	fs.IntVar(&o.opts.Counters, "counters", def.Counters, "LDA counters (buckets) over all banks, a power of two")
	fs.Uint64Var(&o.opts.Seed, "seed", def.Seed, "seed of every random choice; equal seeds give equal tables")
	fs.Float64SliceVar(&o.opts.Losses, "losses", def.Losses, "loss rates to sweep (the x axis)")
	fs.StringVar(&o.mean, "mean", "0.2us", "mean delay every distribution is scaled to (ns, us, ms, s)")
	fs.Float64Var(&o.opts.Alpha, "alpha", def.Alpha, "α of the bank tuning p = α·m/(L+1)")
	fs.StringSliceVar(&o.opts.Series, "series", nil, "fig4: keep only the delay distributions whose name contains one of these (e.g. weibull)")
	fs.Float64Var(&o.opts.Burst, "burst", def.Burst, "fig6: mean loss-episode length, packets")
	fs.Float64SliceVar(&o.opts.ProbeRates, "probe-rates", def.ProbeRates, "fig6: Poisson active-probe rates, Hz")
	fs.Float64Var(&o.opts.Confidence, "confidence", def.Confidence, "confidence level of the Hoeffding bound")
	fs.StringVar(&o.delay, "delay", "", "custom: delay model, e.g. weibull:mean=50us,shape=0.7 or mix:p=0.99;exp:20us;constant:2ms (default Weibull β=0.6 at --mean)")
	fs.StringVar(&o.opts.LossKind, "loss-kind", def.LossKind, "custom: loss process swept over --losses: uniform or bursty (episodes of --burst packets)")
	fs.Float64SliceVar(&o.opts.DesignLosses, "design-losses", def.DesignLosses, "fig6 and custom: design loss rates of the multi-bank LDA, one bank each of counters/len rows (paper: 0.005,0.1)")
	fs.IntVar(&o.workers, "workers", 0, "goroutines running runs in parallel (0 = one per CPU)")
	fs.StringVar(&o.csv, "csv", "", "also write every point to this CSV file")
	fs.StringVar(&o.plot, "plot", "", "write PNG plots like Figs. 4–6 (log axes) into this directory")
	fs.BoolVar(&o.quick, "quick", false, fmt.Sprintf("small demo run: %d packets, %d runs, losses %v unless given explicitly", quickPackets, quickRuns, quickLosses))
	fs.BoolVar(&o.claims, "claims", true, "check the paper's claims (stated for N = 5 000 000 and 1024 counters) after the tables; --quick turns this off unless --claims is given")
	fs.BoolVar(&o.quiet, "quiet", false, "no progress line on stderr (there is none when stderr is not a terminal)")
	o.out.register(fs)
	if help, err := parseFlags(fs, "sim", args); help || err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErrorf("sim: unexpected arguments %q", fs.Args())
	}
	// The RDA/LDS experiments have their own sizes (packets per interval
	// for rda-fig7, flows for lds-*): they take --packets/--runs only when
	// given.
	synPackets, synRuns := 0, 0
	if fs.Changed("packets") {
		synPackets = o.opts.Packets
	}
	if fs.Changed("runs") {
		synRuns = o.opts.Runs
	}
	if o.quick {
		if !fs.Changed("packets") {
			o.opts.Packets = quickPackets
		}
		if !fs.Changed("runs") {
			o.opts.Runs = quickRuns
		}
		if !fs.Changed("losses") {
			o.opts.Losses = append([]float64(nil), quickLosses...)
		}
		if !fs.Changed("claims") {
			o.claims = false
		}
	}
	names, err := o.validate()
	if err != nil {
		return usageErrorf("sim: %w", err)
	}

	w, closeReport, err := o.out.open(stdout)
	if err != nil {
		return err
	}
	defer closeReport()
	table := o.out.format == "table"

	ctx, stop := signal.NotifyContext(ctx, os.Interrupt)
	defer stop()
	start := time.Now()
	meter := progress.New(stderr, o.quiet)
	defer meter.Clear()
	var all []sim.Point
	for _, name := range names {
		t0 := time.Now()
		meter = progress.New(stderr, o.quiet) // each experiment's own ETA
		if contains(sim.SynopsisExperiments, name) {
			// RDA vs LDA (RDA Fig. 7) and the LDS per-flow experiments
			// (LDS Figs. 10, 12): their own tables, CSV and plots.
			so := sim.SynopsisOptions{Packets: synPackets, Runs: synRuns, Seed: o.opts.Seed, Workers: o.workers,
				Quick: o.quick, PlotDir: o.plot, JSON: !table}
			run := func(csv io.Writer) error {
				so.CSV = csv
				if table || o.out.report == "" {
					return sim.RunSynopsisExperiment(name, so, stdout)
				}
				// JSON lines to stdout and to --report.
				f, err := os.OpenFile(o.out.report, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
				if err != nil {
					return fmt.Errorf("--report: %w", err)
				}
				defer f.Close()
				return sim.RunSynopsisExperiment(name, so, io.MultiWriter(stdout, f))
			}
			meter.Set("sim: %s running (%.0f s so far)", name, meter.Elapsed().Seconds())
			var err error
			if o.csv != "" {
				err = writeFileWith(strings.TrimSuffix(o.csv, ".csv")+"-"+name+".csv", run)
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
		var pts []sim.Point
		progress := func(exp string, done, total int, s *sim.Scenario) {
			meter.Clear()
			defer simProgress(meter, exp, done, total, s)
			if done == 0 {
				fmt.Fprintf(stderr, "sim: %s: %d points × %d runs × %d packets…\n", exp, total, s.Runs, s.Packets)
			}
		}
		err := sim.RunExperiments(ctx, []string{name}, o.opts, o.workers, progress, func(p sim.Point) error {
			pts = append(pts, p)
			return w.Write(&p)
		})
		meter.Clear()
		if err != nil {
			return err
		}
		fmt.Fprintf(stderr, "sim: %s done in %.1fs\n", name, time.Since(t0).Seconds())
		if table {
			if err := sim.WriteTable(stdout, pts); err != nil {
				return err
			}
			fmt.Fprintln(stdout)
		}
		all = append(all, pts...)
	}
	if table && len(all) > 0 {
		if err := sim.WriteSummary(stdout, all); err != nil {
			return err
		}
		fmt.Fprintln(stdout)
	}
	if o.claims && len(all) > 0 {
		cs := sim.CheckClaims(all, o.opts.Confidence)
		for i := range cs {
			if err := w.Write(&cs[i]); err != nil {
				return err
			}
		}
		if table && len(cs) > 0 {
			fmt.Fprintf(stdout, "Paper claims (ToN LDA Sec. IV) at N=%d, %d counters, %d runs per point:\n", o.opts.Packets, o.opts.Counters, o.opts.Runs)
			if err := sim.WriteClaims(stdout, cs); err != nil {
				return err
			}
		}
	} else if table && o.quick && len(all) > 0 {
		fmt.Fprintf(stdout, "Quick run (N=%d, %d runs per point, claims not checked): averages over few runs are noisy; `make accuracy` runs the paper's N = 5 000 000 sweeps and checks its claims.\n",
			o.opts.Packets, o.opts.Runs)
	}
	if o.csv != "" {
		if err := writeFileWith(o.csv, func(f io.Writer) error { return sim.WriteCSV(f, all) }); err != nil {
			return fmt.Errorf("sim: --csv: %w", err)
		}
	}
	if o.plot != "" {
		files, err := sim.WritePlots(o.plot, all)
		if err != nil {
			return fmt.Errorf("sim: --plot: %w", err)
		}
		fmt.Fprintf(stderr, "sim: wrote %d plots to %s\n", len(files), o.plot)
	}
	if len(all) > 0 {
		fmt.Fprintf(stderr, "sim: %d points in %.1fs\n", len(all), time.Since(start).Seconds())
	}
	return nil
}

// simProgress draws which point of an experiment runs and the time left
// at the pace of the points done so far.
func simProgress(m *progress.Meter, exp string, done, total int, s *sim.Scenario) {
	left, ok := m.ETA(float64(done), float64(total))
	m.Set("sim: %s: point %d/%d (%s, loss %g) %s", exp, done+1, total, s.Series, s.LossRate, progress.FormatETA(left, ok))
}

// validate checks every flag and returns the experiments to run.
func (o *simOptions) validate() ([]string, error) {
	if err := o.out.validate(); err != nil {
		return nil, err
	}
	mean, err := model.ParseDuration(o.mean)
	if err != nil {
		return nil, fmt.Errorf("--mean: %w", err)
	}
	o.opts.MeanNs = mean
	if o.delay != "" {
		d, err := model.ParseDelay(o.delay)
		if err != nil {
			return nil, fmt.Errorf("--delay: %w", err)
		}
		o.opts.Delay = d
	}
	if o.workers < 0 || o.workers > 1024 {
		return nil, fmt.Errorf("--workers %d outside [0, 1024]", o.workers)
	}
	if err := o.opts.Validate(); err != nil {
		return nil, err
	}
	var names []string
	seen := map[string]bool{}
	for _, e := range o.experiments {
		e = strings.ToLower(strings.TrimSpace(e))
		list := []string{e}
		if e == "all" {
			list = sim.Experiments
		} else if !contains(sim.Experiments, e) && !contains(sim.SynopsisExperiments, e) && e != "custom" {
			return nil, fmt.Errorf("--experiment %q: want %s, all, custom, or %s", e, strings.Join(sim.Experiments, ", "),
				strings.Join(sim.SynopsisExperiments, ", "))
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
		if contains(sim.SynopsisExperiments, n) && o.out.report != "" && o.out.format != "json" {
			return nil, fmt.Errorf("--report with %s needs --format json (its table is not JSON lines)", n)
		}
	}
	return names, nil
}

func contains(xs []string, x string) bool {
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
