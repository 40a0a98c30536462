package main

import (
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ldafwd/ldafwd/appliance"
	"github.com/ldafwd/ldafwd/classifier"
	"github.com/ldafwd/ldafwd/dataplane"
	"github.com/ldafwd/ldafwd/metrics"
	"github.com/ldafwd/ldafwd/model"
	"github.com/ldafwd/ldafwd/report"
	"github.com/rs/zerolog"
	"github.com/spf13/pflag"
)

func init() {
	register("demo", "two appliances in one process over an impaired link: estimates beside the exact truth (no root, NIC or hugepages)", runDemo)
}

func runDemo(args []string) error { return demoMain(args, os.Stdout, os.Stderr) }

func demoMain(args []string, stdout, stderr io.Writer) error {
	var (
		out                outputFlags
		lda                ldaFlags
		extra              extraSynopsisFlags
		budget             controlBudget
		microbursts        microburstFlags
		duration, interval time.Duration
		delaySpec          string
		lossSpec           string
		reorder, dup, rate float64
		flows, size        int
		seed               uint64
		mecs               []string
		conf               float64
		maxDelay           time.Duration
		verbose            bool
		synopses           string
		top                int
		copies             int
		remarkSpec         string
		dscpSpec           string
		linkLocalRate      float64
		segmentName        string
		metricsAddr        string
		queues             int
		capture            captureFlags
	)
	fs := newFlagSet("demo", stdout)
	fs.DurationVar(&duration, "duration", 10*time.Second, "how long the generator runs")
	fs.DurationVar(&interval, "interval", time.Second, "measurement interval")
	fs.StringVar(&delaySpec, "delay", "weibull:mean=50us,shape=0.7", "one-way delay of the segment per frame (constant:, exp:, uniform:, weibull:, pareto:, mix:); the segment is FIFO, so frames also queue behind slow ones")
	fs.StringVar(&lossSpec, "loss", "uniform:rate=0.001", "loss on the segment: none, uniform:rate=R, bursty:rate=R,burst=N")
	fs.Float64Var(&reorder, "reorder", 0.0001, "probability a frame is held back and overtaken by the next one")
	fs.Float64Var(&dup, "dup", 0, "probability a frame is duplicated on the segment")
	fs.StringVar(&remarkSpec, "remark", "", "DSCP remarking inside the segment, as a router does: FROM[>TO]:PROB[,…] (e.g. cs2:0.05 remarks 5 % of cs2 packets to be; cs2>af11:0.1); the generator then also sends FROM; pair with --mec c2=dscp:cs2 to see the report catch it")
	fs.StringVar(&dscpSpec, "dscp", "be", "DSCPs of the generated flows, flow f gets the (f mod n)-th: e.g. be,cs2,ef")
	fs.Float64Var(&linkLocalRate, "link-local-rate", 0, "link-local frames per second (STP BPDU, LLDP, ARP) the generator sends and the segment consumes, and as many the segment's switch originates toward ldafwd#2; the appliances forward them unmeasured (docs/mec.md)")
	fs.Float64Var(&rate, "rate", 20000, "generator packets per second (0: as fast as the appliances forward)")
	fs.IntVar(&flows, "flows", 1000, "distinct 5-tuples in the generated traffic")
	fs.IntVar(&size, "size", 128, "frame size, bytes")
	fs.Uint64Var(&seed, "seed", 1, "seed of the impairment's random choices")
	fs.StringArrayVar(&mecs, "mec", nil, "measurement class rule NAME=COND[,COND…] (repeatable; docs/mec.md)")
	fs.Float64Var(&conf, "confidence", 0.98, "confidence level of mean_ci_ns")
	fs.DurationVar(&maxDelay, "max-delay", 0, "largest one-way delay the compact synopsis encoding allows (0: from the delay model)")
	fs.BoolVar(&verbose, "verbose", false, "log the appliances' events on stderr")
	fs.StringVar(&synopses, "synopsis", "all", "synopses the appliances record and ship: lda, rda, lds, all, or a list (the LDA is always on)")
	fs.IntVar(&top, "top", 5, "LDS: flows shown per interval, largest first")
	fs.IntVar(&copies, "control-copies", 2, "send every control frame this many times (1..4): the segment loses control frames too, and one lost fragment invalidates its interval")
	fs.StringVar(&segmentName, "segment-name", "demo", "name of the measured segment: the label segment on every metric and the field segment of every report line (1..64 printable characters)")
	fs.IntVar(&queues, "queues", 1, "queues per appliance port (1..64), steered by flow hash in software as a NIC's RSS does: one sender and one receiver lane, and one worker, per queue pair at each appliance (docs/protocol.md, \"Several lanes\")")
	fs.StringVar(&metricsAddr, "metrics-addr", "", "serve Prometheus /metrics and /healthz on host:port while the demo runs: the measured direction's interval metrics, as `run` exports them (empty: off)")
	lda.register(fs)
	extra.registerSizing(fs)
	budget.register(fs)
	microbursts.register(fs)
	capture.register(fs, [2]string{"sender", "receiver"},
		"write what ldafwd#1 receives from the generator (its port a, where the measured path starts) to this pcapng file; `ldafwd analyze --sender` reads it",
		"write what ldafwd#2 receives from the segment (its port a) to this pcapng file; `ldafwd analyze --receiver` reads it")
	out.register(fs)
	if help, err := parseFlags(fs, "demo", args); help || err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErrorf("demo: unexpected arguments %q", fs.Args())
	}
	if err := out.validate(); err != nil {
		return usageErrorf("demo: %w", err)
	}
	if err := checkSegmentName(segmentName); err != nil {
		return usageErrorf("demo: %w", err)
	}
	if err := capture.validate(false); err != nil {
		return usageErrorf("demo: %w", err)
	}
	switch {
	case duration <= 0:
		return usageErrorf("demo: --duration %v: must be positive", duration)
	case interval < 10*time.Millisecond:
		return usageErrorf("demo: --interval %v: at least 10ms", interval)
	case !(reorder >= 0 && reorder < 1):
		return usageErrorf("demo: --reorder %v: a probability in [0, 1)", reorder)
	case !(dup >= 0 && dup < 1):
		return usageErrorf("demo: --dup %v: a probability in [0, 1)", dup)
	case rate < 0:
		return usageErrorf("demo: --rate %v: must be ≥ 0", rate)
	case !(linkLocalRate >= 0 && linkLocalRate <= 1e6):
		return usageErrorf("demo: --link-local-rate %v: frames per second, 0..1e6", linkLocalRate)
	case !(conf > 0 && conf < 1):
		return usageErrorf("demo: --confidence %v: between 0 and 1", conf)
	case maxDelay < 0:
		return usageErrorf("demo: --max-delay %v: must be ≥ 0", maxDelay)
	}
	delay, err := model.ParseDelay(delaySpec)
	if err != nil {
		return usageErrorf("demo: --delay: %w", err)
	}
	loss, err := model.ParseLoss(lossSpec)
	if err != nil {
		return usageErrorf("demo: --loss: %w", err)
	}
	cl, err := classifier.NewClassifierFromSpecs(mecs)
	if err != nil {
		return usageErrorf("demo: --mec: %w", err)
	}
	remarks, err := parseRemarks(remarkSpec)
	if err != nil {
		return usageErrorf("demo: --remark: %w", err)
	}
	dscps, err := parseDSCPList(dscpSpec)
	if err != nil {
		return usageErrorf("demo: --dscp: %w", err)
	}
	for _, r := range remarks {
		if !slices.Contains(dscps, r.From) {
			dscps = append(dscps, r.From) // something to remark
		}
	}
	if len(dscps) == 1 && dscps[0] == 0 {
		dscps = nil
	}
	ldaCfg, err := lda.config()
	if err != nil {
		return usageErrorf("demo: %w", err)
	}
	kinds, err := parseSynopsisList(synopses)
	if err != nil {
		return usageErrorf("demo: %w", err)
	}
	if top < 1 {
		return usageErrorf("demo: --top %d: must be ≥ 1", top)
	}
	if copies < 1 || copies > 4 {
		return usageErrorf("demo: --control-copies %d: 1..4", copies)
	}
	if queues < 1 || queues > 64 {
		return fmt.Errorf("demo: --queues %d: 1..64", queues)
	}
	if err := budget.parse(); err != nil {
		return usageErrorf("demo: %w", err)
	}
	if err := microbursts.validate(); err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	changed := map[string]bool{}
	fs.Visit(func(f *pflag.Flag) { changed[f.Name] = true })
	// Sized like `run`: the RDA and the LDS follow the traffic unless
	// --rda-*/--lds-flows say otherwise.
	syn, adapt, err := extra.synConfig(kinds, changed, ldaCfg)
	if err != nil {
		return usageErrorf("demo: %w", err)
	}
	key, err := demoKey()
	if err != nil {
		return err
	}
	w, closeReport, err := out.open(stdout)
	if err != nil {
		return err
	}
	defer closeReport()
	// The metrics see every line the report gets, as `run`'s do; the
	// demo has no port, lane or control sources of its own to export.
	m := metrics.New(segmentName, nil)
	if metricsAddr != "" {
		srv, err := m.Serve(metricsAddr)
		if err != nil {
			return fmt.Errorf("demo: --metrics-addr: %w", err)
		}
		defer srv.Close()
		fmt.Fprintf(stderr, "ldafwd demo: serving /metrics and /healthz on %s\n", srv.Addr())
	}
	log := zerolog.Nop()
	if verbose {
		log = zerolog.New(zerolog.ConsoleWriter{Out: stderr, TimeFormat: "15:04:05.000"}).With().Timestamp().Logger()
	}
	table := out.format == "table"
	if table {
		// The delay as the user wrote it, and its mean in readable units
		// (the canonical form is in ns: scale=39499.97749349529ns).
		fmt.Fprintf(stdout, "ldafwd demo: generator → ldafwd#1 → segment (delay %s, mean %v; loss %v, reorder %g) → ldafwd#2 → sink; %v intervals, %v\n",
			delaySpec, time.Duration(delay.Mean()).Round(10*time.Nanosecond), loss, reorder, interval, duration)
		fmt.Fprintf(stdout, "%-12s %-10s %10s %10s %8s  %20s %20s %16s  %s\n", "start (UTC)", "mec/syn", "sent", "received", "samples",
			"mean µs (true)", "stddev µs (true)", "lost (true)", "valid")
	}
	var repMu sync.Mutex
	var repErr error // the first report line that could not be written
	cfg := appliance.DemoConfig{
		Duration: duration, Interval: interval, Delay: delay, Loss: loss, ReorderProb: reorder, DupProb: dup,
		Remark: remarks, DSCP: dscps, LinkLocalRate: linkLocalRate,
		Rate: rate, Flows: flows, Size: size, Seed: seed, Syn: syn, Classifier: cl,
		Conf: conf, Key: key, Log: log, TopFlows: top, ControlCopies: copies, Queues: queues,
		BudgetBytes: budget.bytes, BudgetFraction: budget.fraction,
		AdaptLDA: adapt.lda, AdaptRDA: adapt.rda, AdaptLDS: adapt.lds, RDAProblemRate: adapt.problem,
		MicroburstGap: microbursts.gap, MicroburstMin: microbursts.min,
		Reports: func(r *report.Interval) {
			r.Segment = segmentName
			m.Observe(r)
			if err := w.Write(r); err != nil {
				repMu.Lock()
				if repErr == nil {
					repErr = err
					fmt.Fprintf(stderr, "ldafwd demo: writing reports: %v\n", err)
				}
				repMu.Unlock()
			}
			if table {
				fmt.Fprintln(stdout, demoRow(r))
				for _, row := range microburstRows(r) {
					fmt.Fprintln(stdout, row)
				}
			}
		},
	}
	if maxDelay > 0 {
		cfg.Bounds = appliance.DemoBounds(maxDelay)
	}
	// The captures' closing line goes to stderr even without --verbose.
	capLog := zerolog.New(zerolog.ConsoleWriter{Out: stderr, NoColor: true, TimeFormat: "15:04:05.000"}).With().Timestamp().Logger()
	tapS, tapR, closeTaps, err := capture.open("ldafwd#1 a", "ldafwd#2 a", capLog)
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	cfg.Taps = [2][2]*dataplane.Tap{{tapS, nil}, {tapR, nil}}
	m.SetState(metrics.StateRunning)
	sum, err := appliance.RunDemo(cfg)
	m.SetState(metrics.StateStopped)
	if cerr := closeTaps(); cerr != nil && err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	if err := w.Write(demoSummary(sum, conf, synopses, copies)); err != nil {
		repMu.Lock()
		if repErr == nil {
			repErr = err
		}
		repMu.Unlock()
	}

	if table {
		fmt.Fprintf(stdout, "\n%d frames generated, %d delivered, %d lost on the segment, %d dropped by the appliances\n",
			sum.Generated, sum.Sunk, sum.ImpairLost, sum.ApplianceTxDropped)
		fmt.Fprintf(stdout, "%d intervals (LDA): %d valid; loss exact in %d; true mean inside the %.0f%% bound in %d\n",
			sum.Intervals, sum.Valid, sum.LossExact, conf*100, sum.MeanInBound)
		if sum.Duplicated+sum.Remarked+sum.LinkLocalSent+sum.Injected > 0 {
			fmt.Fprintf(stdout, "inside the segment: %d duplicated, %d reordered, %d remarked; link-local: %d sent and %d consumed, %d originated; unmeasured by the appliances: %d at ldafwd#1, %d at ldafwd#2\n",
				sum.Duplicated, sum.Reordered, sum.Remarked, sum.LinkLocalSent, sum.Consumed, sum.Injected, sum.ExcludedSent, sum.ExcludedReceived)
		}
		fmt.Fprintf(stdout, "in-band control traffic: %.1f kbit per interval, every copy counted, carrying %s sent %d× (--control-copies) within --control-budget; the LDA alone: --synopsis lda\n",
			sum.ControlBytesPerInt*8/1000, synopses, copies)
	}
	repMu.Lock()
	defer repMu.Unlock()
	if repErr != nil {
		return fmt.Errorf("demo: writing reports: %w", repErr)
	}
	return nil
}

// parseRemarks parses --remark: FROM[>TO]:PROB, comma-separated; DSCPs
// by number or name (be, cs0-cs7, af11-af43, ef, va).
func parseRemarks(spec string) ([]dataplane.Remark, error) {
	var out []dataplane.Remark
	if strings.TrimSpace(spec) == "" {
		return nil, nil
	}
	for _, item := range strings.Split(spec, ",") {
		codes, p, ok := strings.Cut(strings.TrimSpace(item), ":")
		if !ok {
			return nil, fmt.Errorf("%q: want FROM[>TO]:PROB (e.g. cs2:0.05)", item)
		}
		from, to, _ := strings.Cut(codes, ">")
		if to == "" {
			to = "be"
		}
		f, err := dscpValue(from)
		if err != nil {
			return nil, err
		}
		t, err := dscpValue(to)
		if err != nil {
			return nil, err
		}
		prob, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
		if err != nil || !(prob > 0 && prob <= 1) {
			return nil, fmt.Errorf("%q: probability %q not in (0, 1]", item, p)
		}
		if f == t {
			return nil, fmt.Errorf("%q: remarks a DSCP to itself", item)
		}
		out = append(out, dataplane.Remark{From: f, To: t, Prob: prob})
	}
	return out, nil
}

// parseDSCPList parses --dscp.
func parseDSCPList(spec string) ([]uint8, error) {
	var out []uint8
	for _, s := range strings.Split(spec, ",") {
		d, err := dscpValue(s)
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}

// dscpValue reads a DSCP as the --mec syntax does (so the names agree).
func dscpValue(s string) (uint8, error) {
	r, err := classifier.ParseMEC("x=dscp:" + strings.TrimSpace(s))
	if err != nil || len(r.DSCP) != 1 || r.DSCP[0].Lo != r.DSCP[0].Hi {
		return 0, fmt.Errorf("bad DSCP %q (0-63 or be, cs0-cs7, af11-af43, ef, va)", s)
	}
	return uint8(r.DSCP[0].Lo), nil
}

// demoKey makes a throw-away HMAC key: the demo authenticates its control
// frames like a real deployment does, without a key file.
func demoKey() ([]byte, error) {
	return controlGenerateKey()
}

// demoSummary is the closing `"type":"demo_summary"` record: what the
// table's last lines say, for scripts.
func demoSummary(sum appliance.DemoSummary, conf float64, synopses string, copies int) *report.DemoSummary {
	return &report.DemoSummary{Type: "demo_summary", Generated: sum.Generated, Delivered: sum.Sunk, SegmentLost: sum.ImpairLost,
		ApplianceDropped: sum.ApplianceTxDropped, Intervals: sum.Intervals, IdleIntervals: sum.Idle, Valid: sum.Valid,
		LossExact: sum.LossExact, MeanInBound: sum.MeanInBound, Confidence: conf,
		Duplicated: sum.Duplicated, Reordered: sum.Reordered, Remarked: sum.Remarked,
		LinkLocalSent: sum.LinkLocalSent, LinkLocalConsumed: sum.Consumed, LinkLocalOriginated: sum.Injected,
		UnmeasuredSender: sum.ExcludedSent, UnmeasuredReceiver: sum.ExcludedReceived,
		ControlBytesPerInterval: sum.ControlBytesPerInt, Synopses: synopses, ControlCopies: copies}
}

// delayCell is a delay column of the tables: µs, or "-" where the JSON
// line has null (no estimate: invalid, no sample).
func delayCell(v float64, none bool, width int) string {
	if none || math.IsNaN(v) || math.IsInf(v, 0) {
		return fmt.Sprintf("%*s", width, "-")
	}
	return fmt.Sprintf("%*.2f", width, v/1e3)
}

// startCell is the interval column of the tables: its start as a UTC
// time of day (the JSON line has the interval number and start_ns), or
// "#" and the interval number when the line has no start (a failure
// reported before the interval's span was known).
func startCell(startNs, interval int64) string {
	if startNs <= 0 {
		return fmt.Sprintf("#%d", interval)
	}
	return time.Unix(0, startNs).UTC().Format("15:04:05.000")
}

func demoRow(r *report.Interval) string {
	tru := func(p *float64) string {
		if p == nil {
			return "     -"
		}
		return fmt.Sprintf("%8.2f", *p/1e3)
	}
	trueLost := "-"
	if r.TrueLost != nil {
		trueLost = fmt.Sprint(*r.TrueLost)
	}
	valid := "yes"
	if !r.Valid {
		valid = "no: " + r.Reason
	}
	noDelay := !r.Valid || r.Samples == 0
	if r.Flow != "" {
		// A flow of the LDS: indented under its interval; the flow's
		// name (up to 97 characters for IPv6) after the fixed columns,
		// so that IPv4 and IPv6 rows align.
		ok, why := "yes", ""
		if !r.Valid {
			ok, why = "no", ": "+r.Reason
		}
		return fmt.Sprintf("%-12s   flow %8d pkts  mean %s µs  lost %6d  %-3s  %s%s", "", r.Sent,
			delayCell(r.MeanNs, noDelay, 8), r.Lost, ok, r.Flow, why)
	}
	ci := "      " // no "±" without a mean
	if !noDelay {
		ci = fmt.Sprintf("±%-5.2f", r.MeanCINs/1e3)
	}
	return fmt.Sprintf("%-12s %-10s %10d %10d %8d  %s%s(%s) %s (%s) %7d (%6s)  %s",
		startCell(r.StartNs, r.Interval), r.MEC+"/"+r.Synopsis, r.Sent, r.Received, r.Samples, delayCell(r.MeanNs, noDelay, 7), ci, tru(r.TrueMeanNs),
		delayCell(r.StddevNs, noDelay || r.Synopsis == "lds", 8), tru(r.TrueStddevNs), r.Lost, trueLost, valid)
}
