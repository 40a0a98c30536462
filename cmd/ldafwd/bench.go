package main

import (
	"fmt"
	"io"
	"os"
	"regexp"
	"time"

	"github.com/ldafwd/ldafwd/bench/suites"
	"github.com/ldafwd/ldafwd/report"
)

func init() {
	register("bench", "per-packet cost and forwarding rate on this machine, each against a baseline run in the same command", runBench)
}

// benchOptions are the flags of `ldafwd bench`; the suites are
// bench/suites'.
type benchOptions struct {
	out   outputFlags
	only  string
	list  bool
	quiet bool
	write string
	suites.Options
}

func runBench(args []string) error { return benchMain(args, os.Stdout, os.Stderr) }

func benchMain(args []string, stdout, stderr io.Writer) error {
	var o benchOptions
	fs := newFlagSet("bench", stdout)
	fs.StringVar(&o.only, "only", "", "run only the suites whose name matches this regular expression")
	fs.BoolVar(&o.list, "list", false, "list the suites and exit")
	fs.IntVar(&o.Rounds, "rounds", 5, "rounds per per-packet stage; stages are interleaved and the median reported")
	fs.DurationVar(&o.Duration, "duration", 3*time.Second, "duration of each forwarding run")
	fs.IntVar(&o.Frames, "frames", 4096, "distinct frames per round of the perpacket suite")
	fs.IntVar(&o.Size, "size", 128, "frame size in bytes of the perpacket and forward-ring suites (64..2048; the NIC suites send 64-byte frames)")
	fs.BoolVar(&o.quiet, "quiet", false, "no progress line on stderr (there is none when stderr is not a terminal)")
	fs.StringVar(&o.write, "write-captures", "", "write the generated captures forward-dpdk-pcap replays (IMIX, 64-byte and untagged frames of the same flows) into this directory, print their paths and exit")
	o.out.register(fs)
	if help, err := parseFlags(fs, "bench", args); help || err != nil {
		return err
	}
	if err := o.out.validate(); err != nil {
		return usageErrorf("bench: %w", err)
	}
	if fs.NArg() > 0 {
		return usageErrorf("bench: unexpected arguments %q", fs.Args())
	}
	if o.Rounds < 1 || o.Frames < 1 || o.Duration <= 0 {
		return usageErrorf("bench: --rounds, --frames and --duration must be positive")
	}
	re, err := regexp.Compile(o.only)
	if err != nil {
		return usageErrorf("bench: --only: %w", err)
	}
	if o.write != "" {
		paths, err := suites.WriteCaptures(o.write)
		if err != nil {
			return fmt.Errorf("bench: --write-captures: %w", err)
		}
		for _, p := range paths {
			fmt.Fprintln(stdout, p)
		}
		return nil
	}
	all := suites.All()
	if o.list {
		for _, s := range all {
			fmt.Fprintln(stdout, s.Name)
		}
		return nil
	}
	w, closeReport, err := o.out.open(stdout)
	if err != nil {
		return err
	}
	defer closeReport()
	// Fixed-width rows, printed as each result arrives (runs are long).
	const row = "%-30s %9s %9s  %-30s %7s\n"
	table := o.out.format == "table"
	if table {
		fmt.Fprintf(stdout, row, "name", "Mpps", "ns/pkt", "baseline", "ratio")
	}
	emit := func(b report.Bench) {
		b.Type = "bench"
		w.Write(&b)
		if table {
			ratio := "-"
			if b.Baseline != "" {
				ratio = fmt.Sprintf("%.3f", b.Ratio)
			}
			fmt.Fprintf(stdout, row, b.Name, fmt.Sprintf("%.3f", b.Mpps), fmt.Sprintf("%.2f", b.NsPerPkt), b.Baseline, ratio)
		}
	}
	ran, failed := suites.RunMatching(&o.Options, re, emit, stderr, o.quiet)
	if ran == 0 {
		return fmt.Errorf("bench: no suite matches --only %q (see --list)", o.only)
	}
	if len(failed) > 0 {
		return fmt.Errorf("bench: %d suite(s) could not run: %v", len(failed), failed)
	}
	return nil
}
