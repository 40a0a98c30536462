package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/ldafwd/ldafwd/model"
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

	return (&sim.Command{Names: names, Options: o.opts, SynPackets: synPackets, SynRuns: synRuns, Workers: o.workers,
		CSV: o.csv, Plot: o.plot, Quick: o.quick, Claims: o.claims, Table: table, Report: o.out.report, Quiet: o.quiet}).Run(ctx, w, stdout, stderr)
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
	return sim.ExperimentNames(o.experiments, o.out.report, o.out.format)
}
