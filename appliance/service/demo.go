package service

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/ldafwd/ldafwd/appliance"
	"github.com/ldafwd/ldafwd/appliance/demo"
	"github.com/ldafwd/ldafwd/dataplane"
	"github.com/ldafwd/ldafwd/metrics"
	"github.com/ldafwd/ldafwd/report"
	"github.com/rs/zerolog"
)

// DemoOutput is where `ldafwd demo` writes, and what its table and
// summary say about the flags.
type DemoOutput struct {
	W           *report.Writer // JSON lines: stdout in json mode, --report
	Table       io.Writer      // the table (nil: json mode)
	Stderr      io.Writer      // --verbose log, the metrics address, sink errors
	SegmentName string
	MetricsAddr string // serve /metrics and /healthz here while the demo runs ("" off)
	Verbose     bool   // log the appliances' events on Stderr
	DelaySpec   string // --delay as written
	Synopses    string // --synopsis as written
	// Capture: --capture-sender writes what ldafwd#1 receives from the
	// generator (its port a, where the measured path starts),
	// --capture-receiver what ldafwd#2 receives from the segment (its
	// port a); `ldafwd analyze` pairs the two.
	Capture Capture
}

// RunDemo is `ldafwd demo` after its flags are checked: two appliances
// over the impaired segment cfg describes (demo.Run), every
// interval line to the report, the metrics and the table beside the
// truth, then the "demo_summary" record and the table's closing lines.
func RunDemo(cfg demo.Config, o DemoOutput) error {
	appliance.TuneGC() // start-up buffers are most of the heap: see there
	// The metrics see every line the report gets, as `run`'s do; the
	// demo has no port, lane or control sources of its own to export.
	m := metrics.New(o.SegmentName, nil)
	if o.MetricsAddr != "" {
		srv, err := m.Serve(o.MetricsAddr)
		if err != nil {
			return fmt.Errorf("demo: --metrics-addr: %w", err)
		}
		defer srv.Close()
		fmt.Fprintf(o.Stderr, "ldafwd demo: serving /metrics and /healthz on %s\n", srv.Addr())
	}
	log := zerolog.Nop()
	if o.Verbose {
		log = zerolog.New(zerolog.ConsoleWriter{Out: o.Stderr, TimeFormat: "15:04:05.000"}).With().Timestamp().Logger()
	}
	table := o.Table != nil
	if table {
		// The delay as the user wrote it, and its mean in readable units
		// (the canonical form is in ns: scale=39499.97749349529ns).
		fmt.Fprintf(o.Table, "ldafwd demo: generator → ldafwd#1 → segment (delay %s, mean %v; loss %v, reorder %g) → ldafwd#2 → sink; %v intervals, %v\n",
			o.DelaySpec, time.Duration(cfg.Delay.Mean()).Round(10*time.Nanosecond), cfg.Loss, cfg.ReorderProb, cfg.Interval, cfg.Duration)
		fmt.Fprintf(o.Table, "%-12s %-10s %10s %10s %8s  %20s %20s %16s  %s\n", "start (UTC)", "mec/syn", "sent", "received", "samples",
			"mean µs (true)", "stddev µs (true)", "lost (true)", "valid")
	}
	var repMu sync.Mutex
	var repErr error // the first report line that could not be written
	cfg.Log = log
	cfg.Reports = func(r *report.Interval) {
		r.Segment = o.SegmentName
		m.Observe(r)
		if err := o.W.Write(r); err != nil {
			repMu.Lock()
			if repErr == nil {
				repErr = err
				fmt.Fprintf(o.Stderr, "ldafwd demo: writing reports: %v\n", err)
			}
			repMu.Unlock()
		}
		if table {
			fmt.Fprintln(o.Table, report.DemoRow(r))
			for _, row := range report.MicroburstRows(r) {
				fmt.Fprintln(o.Table, row)
			}
		}
	}
	// The captures' closing line goes to stderr even without --verbose.
	capLog := zerolog.New(zerolog.ConsoleWriter{Out: o.Stderr, NoColor: true, TimeFormat: "15:04:05.000"}).With().Timestamp().Logger()
	tapS, tapR, closeTaps, err := o.Capture.Open("ldafwd#1 a", "ldafwd#2 a", capLog)
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	cfg.Taps = [2][2]*dataplane.Tap{{tapS, nil}, {tapR, nil}}
	m.SetState(metrics.StateRunning)
	sum, err := demo.Run(cfg)
	m.SetState(metrics.StateStopped)
	if cerr := closeTaps(); cerr != nil && err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	if err := o.W.Write(demoSummary(sum, cfg.Conf, o.Synopses, cfg.ControlCopies)); err != nil {
		repMu.Lock()
		if repErr == nil {
			repErr = err
		}
		repMu.Unlock()
	}

	if table {
		fmt.Fprintf(o.Table, "\n%d frames generated, %d delivered, %d lost on the segment, %d dropped by the appliances\n",
			sum.Generated, sum.Sunk, sum.ImpairLost, sum.ApplianceTxDropped)
		fmt.Fprintf(o.Table, "%d intervals (LDA): %d valid; loss exact in %d; true mean inside the %.0f%% bound in %d\n",
			sum.Intervals, sum.Valid, sum.LossExact, cfg.Conf*100, sum.MeanInBound)
		if sum.Duplicated+sum.Remarked+sum.LinkLocalSent+sum.Injected > 0 {
			fmt.Fprintf(o.Table, "inside the segment: %d duplicated, %d reordered, %d remarked; link-local: %d sent and %d consumed, %d originated; unmeasured by the appliances: %d at ldafwd#1, %d at ldafwd#2\n",
				sum.Duplicated, sum.Reordered, sum.Remarked, sum.LinkLocalSent, sum.Consumed, sum.Injected, sum.ExcludedSent, sum.ExcludedReceived)
		}
		fmt.Fprintf(o.Table, "in-band control traffic: %.1f kbit per interval, every copy counted, carrying %s sent %d× (--control-copies) within --control-budget; the LDA alone: --synopsis lda\n",
			sum.ControlBytesPerInt*8/1000, o.Synopses, cfg.ControlCopies)
	}
	repMu.Lock()
	defer repMu.Unlock()
	if repErr != nil {
		return fmt.Errorf("demo: writing reports: %w", repErr)
	}
	return nil
}

// demoSummary is the closing `"type":"demo_summary"` record: what the
// table's last lines say, for scripts.
func demoSummary(sum demo.Summary, conf float64, synopses string, copies int) *report.DemoSummary {
	return &report.DemoSummary{Type: "demo_summary", Generated: sum.Generated, Delivered: sum.Sunk, SegmentLost: sum.ImpairLost,
		ApplianceDropped: sum.ApplianceTxDropped, Intervals: sum.Intervals, IdleIntervals: sum.Idle, Valid: sum.Valid,
		LossExact: sum.LossExact, MeanInBound: sum.MeanInBound, Confidence: conf,
		Duplicated: sum.Duplicated, Reordered: sum.Reordered, Remarked: sum.Remarked,
		LinkLocalSent: sum.LinkLocalSent, LinkLocalConsumed: sum.Consumed, LinkLocalOriginated: sum.Injected,
		UnmeasuredSender: sum.ExcludedSent, UnmeasuredReceiver: sum.ExcludedReceived,
		ControlBytesPerInterval: sum.ControlBytesPerInt, Synopses: synopses, ControlCopies: copies}
}
