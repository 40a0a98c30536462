package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/ldafwd/ldafwd/analyze"
	"github.com/ldafwd/ldafwd/appliance/service"
	"github.com/ldafwd/ldafwd/classifier"
	"github.com/ldafwd/ldafwd/report"
)

func init() {
	register("analyze", "offline: two captures of the same traffic at the two ends → delay and loss reports", runAnalyze)
}

// analyzeOptions are the parsed and validated flags of `ldafwd analyze`.
type analyzeOptions struct {
	out       outputFlags
	sender    string
	receiver  string
	interval  time.Duration
	synopsis  string
	mec       []string
	truth     bool
	conf      float64
	direction string
	lda       ldaFlags
	ldaAuto   bool // no LDA sizing flag: record larger (analyze.Config.RecordLDALarger)
	extra     extraSynopsisFlags
	mbGap     time.Duration
	mbMin     int
	damaged   string
	quiet     bool
	maxDelay  time.Duration
	whole     bool
}

func runAnalyze(args []string) error { return analyzeMain(args, os.Stdout, os.Stderr) }

func analyzeMain(args []string, stdout, stderr io.Writer) error {
	var o analyzeOptions
	fs := newFlagSet("analyze", stdout)
	fs.StringVar(&o.sender, "sender", "", "capture taken where the segment starts (pcap or pcapng)")
	fs.StringVar(&o.receiver, "receiver", "", "capture taken where the segment ends (pcap or pcapng)")
	fs.DurationVar(&o.interval, "interval", time.Second, "interval length, aligned to multiples since the Unix epoch; 0 = the whole capture as one interval")
	fs.StringVar(&o.synopsis, "synopsis", "lda", "synopses to compute: lda, rda, lds, sample (delay quantiles from a trajectory sample, docs/sample.md) or all (comma-separated list allowed)")
	fs.StringArrayVar(&o.mec, "mec", nil, "measurement class rule NAME=COND[,COND…] (repeatable; see docs/mec.md); unmatched packets go to class 'all'")
	fs.BoolVar(&o.truth, "truth", false, "add exact ground truth (true_mean_ns, true_stddev_ns, true_lost) by matching packet identities")
	fs.Float64Var(&o.conf, "confidence", 0.98, "confidence level of mean_ci_ns (0 < c < 1)")
	fs.StringVar(&o.direction, "direction", "a>b", "direction label in the reports")
	fs.DurationVar(&o.mbGap, "microburst-gap", time.Millisecond, "group losses recovered from single-loss LDA buckets closer than this into microbursts (0: off)")
	fs.IntVar(&o.mbMin, "microburst-min", 5, "losses a microburst needs to be reported")
	fs.StringVar(&o.damaged, "damaged", "error", "a damaged capture (truncated, corrupt block, impossible timestamp): error = refuse it naming the file and record; invalidate = analyze around the damage and report the intervals it touches valid:false")
	fs.DurationVar(&o.maxDelay, "max-delay", analyze.DefaultMaxDelay*time.Nanosecond, "largest one-way delay, clock offset between the two captures included: copies of a packet further apart are different packets; memory grows with it")
	fs.BoolVar(&o.whole, "whole-capture", false, "read both captures whole into memory before pairing instead of streaming them (memory grows with the captures)")
	fs.BoolVar(&o.quiet, "quiet", false, "no progress line on stderr (there is none when stderr is not a terminal)")
	o.lda.register(fs)
	o.extra.register(fs)
	o.out.register(fs)
	if help, err := parseFlags(fs, "analyze", args); help || err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErrorf("analyze: unexpected arguments %q", fs.Args())
	}
	o.extra.ldsAuto = true
	for _, n := range service.LDSFlagNames {
		o.extra.ldsAuto = o.extra.ldsAuto && !fs.Changed(n)
	}
	o.ldaAuto = true
	for _, n := range service.LDASizingFlagNames {
		o.ldaAuto = o.ldaAuto && !fs.Changed(n)
	}
	cfg, err := o.build()
	if err != nil {
		return usageErrorf("analyze: %w", err)
	}
	var table io.Writer
	if o.out.format == "table" {
		table = stdout
	}
	open := func() (*report.Writer, func() error, error) { return o.out.open(stdout) }
	return analyze.RunFiles(o.sender, o.receiver, cfg, open, table, stderr, o.quiet)
}

func (o *analyzeOptions) build() (analyze.Config, error) {
	var cfg analyze.Config
	if err := o.out.validate(); err != nil {
		return cfg, err
	}
	if o.sender == "" || o.receiver == "" {
		return cfg, errors.New("--sender and --receiver are both required")
	}
	if o.interval < 0 {
		return cfg, fmt.Errorf("--interval %v: must be ≥ 0", o.interval)
	}
	if o.maxDelay <= 0 {
		return cfg, fmt.Errorf("--max-delay %v: must be > 0", o.maxDelay)
	}
	if o.mbGap < 0 || o.mbMin < 1 {
		return cfg, fmt.Errorf("--microburst-gap must be ≥ 0 and --microburst-min ≥ 1")
	}
	if !(o.conf > 0 && o.conf < 1) {
		return cfg, fmt.Errorf("--confidence %v: must be between 0 and 1", o.conf)
	}
	kinds, err := parseSynopsisList(o.synopsis)
	if err != nil {
		return cfg, err
	}
	var rules []classifier.Rule
	for _, spec := range o.mec {
		r, err := classifier.ParseMEC(spec)
		if err != nil {
			return cfg, fmt.Errorf("--mec: %w", err)
		}
		rules = append(rules, r)
	}
	cl, err := classifier.NewClassifier(rules)
	if err != nil {
		return cfg, fmt.Errorf("--mec: %w", err)
	}
	if o.damaged != "error" && o.damaged != "invalidate" {
		return cfg, fmt.Errorf("--damaged %q: want error or invalidate", o.damaged)
	}
	cfg = analyze.Config{Interval: o.interval, Classifier: cl, Truth: o.truth, Conf: o.conf, Direction: o.direction,
		MicroburstGapNs: uint64(o.mbGap.Nanoseconds()), MicroburstMin: o.mbMin, InvalidateDamaged: o.damaged == "invalidate",
		MaxDelay: o.maxDelay, WholeCapture: o.whole}
	if kinds["lda"] {
		cfg.UseLDA = true
		if cfg.LDA, err = o.lda.Config(); err != nil {
			return cfg, err
		}
		if o.ldaAuto {
			cfg.RecordLDALarger()
		}
	}
	extra, err := o.extra.factories(kinds, cl)
	if err != nil {
		return cfg, err
	}
	cfg.Extra = extra
	return cfg, nil
}

// parseSynopsisList parses --synopsis: lda, rda, lds, sample, all, or a
// list (the same for analyze, run and demo).
func parseSynopsisList(s string) (map[string]bool, error) {
	kinds := map[string]bool{}
	want := "lda, rda, lds, sample or all"
	for _, k := range strings.Split(s, ",") {
		switch k = strings.TrimSpace(k); k {
		case "lda", "rda", "lds", "sample":
			kinds[k] = true
		case "all":
			kinds["lda"], kinds["rda"], kinds["lds"], kinds["sample"] = true, true, true, true
		default:
			return nil, fmt.Errorf("--synopsis: unknown synopsis %q (want %s)", k, want)
		}
	}
	return kinds, nil
}
