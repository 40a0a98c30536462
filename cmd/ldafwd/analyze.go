package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/ldafwd/ldafwd/analyze"
	"github.com/ldafwd/ldafwd/classifier"
	"github.com/ldafwd/ldafwd/progress"
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
	extra     extraSynopsisFlags
	mbGap     time.Duration
	mbMin     int
	damaged   string
	quiet     bool
}

func runAnalyze(args []string) error { return analyzeMain(args, os.Stdout, os.Stderr) }

func analyzeMain(args []string, stdout, stderr io.Writer) error {
	var o analyzeOptions
	fs := newFlagSet("analyze", stdout)
	fs.StringVar(&o.sender, "sender", "", "capture taken where the segment starts (pcap or pcapng)")
	fs.StringVar(&o.receiver, "receiver", "", "capture taken where the segment ends (pcap or pcapng)")
	fs.DurationVar(&o.interval, "interval", time.Second, "interval length, aligned to multiples since the Unix epoch; 0 = the whole capture as one interval")
	fs.StringVar(&o.synopsis, "synopsis", "lda", "synopses to compute: lda, rda, lds or all (comma-separated list allowed)")
	fs.StringArrayVar(&o.mec, "mec", nil, "measurement class rule NAME=COND[,COND…] (repeatable; see docs/mec.md); unmatched packets go to class 'all'")
	fs.BoolVar(&o.truth, "truth", false, "add exact ground truth (true_mean_ns, true_stddev_ns, true_lost) by matching packet identities")
	fs.Float64Var(&o.conf, "confidence", 0.98, "confidence level of mean_ci_ns (0 < c < 1)")
	fs.StringVar(&o.direction, "direction", "a>b", "direction label in the reports")
	fs.DurationVar(&o.mbGap, "microburst-gap", time.Millisecond, "group losses recovered from single-loss LDA buckets closer than this into microbursts (0: off)")
	fs.IntVar(&o.mbMin, "microburst-min", 5, "losses a microburst needs to be reported")
	fs.StringVar(&o.damaged, "damaged", "error", "a damaged capture (truncated, corrupt block, impossible timestamp): error = refuse it naming the file and record; invalidate = analyze around the damage and report the intervals it touches valid:false")
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
	for _, n := range ldsFlagNames {
		o.extra.ldsAuto = o.extra.ldsAuto && !fs.Changed(n)
	}
	cfg, err := o.build()
	if err != nil {
		return usageErrorf("analyze: %w", err)
	}
	snd, err := analyze.OpenCapture(o.sender)
	if err != nil {
		return fmt.Errorf("analyze: --sender: %w", err)
	}
	defer snd.Close()
	rcv, err := analyze.OpenCapture(o.receiver)
	if err != nil {
		return fmt.Errorf("analyze: --receiver: %w", err)
	}
	defer rcv.Close()

	w, closeReport, err := o.out.open(stdout)
	if err != nil {
		return err
	}
	defer closeReport()
	table := o.out.format == "table"
	if table {
		fmt.Fprintln(stdout, intervalTableHeader(o.truth))
	}
	meter := progress.New(stderr, o.quiet)
	cfg.Progress = analyze.MeterProgress(meter)
	var werr error
	st, err := analyze.Run(snd, rcv, cfg, func(r *report.Interval) {
		meter.Clear()
		if err := w.Write(r); err != nil && werr == nil {
			werr = err
		}
		if table { // rows stream as intervals close: fixed widths, no buffering
			fmt.Fprintln(stdout, intervalTableRow(r, o.truth))
			if mbs, ok := r.Extra["microbursts"].([]analyze.Microburst); ok {
				for _, m := range mbs {
					fmt.Fprintf(stdout, "%-23s   microburst %s: %d losses from %s, +%.3f ms\n", "", r.MEC, m.Losses,
						time.Unix(0, int64(m.StartNs)).UTC().Format("15:04:05.000000"), float64(m.EndNs-m.StartNs)/1e6)
				}
			}
		}
	})
	meter.Clear()
	for _, warn := range st.Warnings {
		fmt.Fprintln(stderr, "analyze: warning:", warn)
	}
	if err != nil {
		return fmt.Errorf("analyze: %w", err)
	}
	sum := analyze.NewSummary(st)
	if err := w.Write(sum); err != nil && werr == nil {
		werr = err
	}
	fmt.Fprintf(stderr, "analyze: %d intervals; sender %d frames (%d malformed, %d snapped, %d control, %d link-local not measured), receiver %d frames (%d malformed, %d snapped, %d control, %d link-local not measured)\n",
		st.Intervals, st.SenderFrames, st.SenderMalformed, st.SenderSnapped, st.SenderControl, st.SenderLinkLocal,
		st.ReceiverFrames, st.ReceiverMalformed, st.ReceiverSnapped, st.ReceiverControl, st.ReceiverLinkLocal)
	fmt.Fprintf(stderr, "analyze: %.1f %% of sender packets found at the receiver; %d crossed an interval boundary, %d received packets match no sent one; identities seen more than once: %d sent, %d received packets\n",
		100*st.MatchedShare, st.Crossed, st.ExtraReceived, st.SenderAmbiguous, st.ReceiverAmbiguous)
	return werr
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
		MicroburstGapNs: uint64(o.mbGap.Nanoseconds()), MicroburstMin: o.mbMin, InvalidateDamaged: o.damaged == "invalidate"}
	if kinds["lda"] {
		cfg.UseLDA = true
		if cfg.LDA, err = o.lda.config(); err != nil {
			return cfg, err
		}
	}
	extra, err := o.extra.factories(kinds, cl)
	if err != nil {
		return cfg, err
	}
	cfg.Extra = extra
	return cfg, nil
}

// parseSynopsisList parses --synopsis: lda, rda, lds, all, or a list.
func parseSynopsisList(s string) (map[string]bool, error) {
	kinds := map[string]bool{}
	for _, k := range strings.Split(s, ",") {
		switch k = strings.TrimSpace(k); k {
		case "lda", "rda", "lds":
			kinds[k] = true
		case "all":
			kinds["lda"], kinds["rda"], kinds["lds"] = true, true, true
		default:
			return nil, fmt.Errorf("--synopsis: unknown synopsis %q (want lda, rda, lds or all)", k)
		}
	}
	return kinds, nil
}

// The table's columns: fixed widths so that each row is printed as its
// interval closes; the LDS flow (up to 97 characters for IPv6) and the
// reason of an invalid line come after the fixed columns, so rows align.
const (
	tableCols  = "%-23s %-8s %-3s %9s %9s %7s %10s %9s %10s %8s %11s %-5s"
	truthCols  = " %12s %12s %9s"
	timeLayout = "2006-01-02 15:04:05.000" // captures may be from any day
)

func intervalTableHeader(truth bool) string {
	h := fmt.Sprintf(tableCols, "start (UTC)", "mec", "syn", "sent", "recv", "lost", "mean_us", "±ci_us", "stddev_us", "samples", "buckets", "valid")
	if truth {
		h += fmt.Sprintf(truthCols, "true_mean_us", "true_sd_us", "true_lost")
	}
	return h + " flow / reason"
}

// intervalTableRow is one row: "-" where the JSON line has null.
func intervalTableRow(r *report.Interval, truth bool) string {
	valid, why := "yes", ""
	if !r.Valid {
		valid, why = "no", ": "+r.Reason
	}
	flow := ""
	if r.Flow != "" {
		flow = " flow " + r.Flow
	}
	noDelay := !r.Valid || r.Samples == 0
	s := fmt.Sprintf(tableCols, time.Unix(0, r.StartNs).UTC().Format(timeLayout), r.MEC, r.Synopsis,
		fmt.Sprint(r.Sent), fmt.Sprint(r.Received), fmt.Sprint(r.Lost),
		usCell(r.MeanNs, noDelay), usCell(r.MeanCINs, noDelay), usCell(r.StddevNs, noDelay || r.Synopsis == "lds"),
		fmt.Sprint(r.Samples), fmt.Sprintf("%d/%d", r.Usable, r.Buckets), valid)
	if truth {
		if r.TrueMeanNs != nil {
			s += fmt.Sprintf(truthCols, fmt.Sprintf("%.3f", *r.TrueMeanNs/1e3), fmt.Sprintf("%.3f", *r.TrueStddevNs/1e3), fmt.Sprint(*r.TrueLost))
		} else {
			s += fmt.Sprintf(truthCols, "-", "-", "-")
		}
	}
	return s + flow + why
}
