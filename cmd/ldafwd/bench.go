package main

import (
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"time"

	"github.com/ldafwd/ldafwd/bench"
	"github.com/ldafwd/ldafwd/progress"
	"github.com/ldafwd/ldafwd/report"
)

func init() {
	register("bench", "per-packet cost and forwarding rate on this machine, each against a baseline run in the same command", runBench)
}

// benchOptions are the flags of `ldafwd bench`.
type benchOptions struct {
	out      outputFlags
	only     string
	rounds   int
	duration time.Duration
	frames   int
	size     int
	list     bool
	quiet    bool
}

// benchSuite produces bench records; suites register themselves here
// (per-packet stages below; forwarding suites in bench_forward*.go).
type benchSuite struct {
	name string
	run  func(o *benchOptions, emit func(report.Bench)) error
}

var benchSuites []benchSuite

func registerBench(name string, run func(o *benchOptions, emit func(report.Bench)) error) {
	benchSuites = append(benchSuites, benchSuite{name, run})
}

func runBench(args []string) error { return benchMain(args, os.Stdout, os.Stderr) }

func benchMain(args []string, stdout, stderr io.Writer) error {
	var o benchOptions
	fs := newFlagSet("bench", stdout)
	fs.StringVar(&o.only, "only", "", "run only the suites whose name matches this regular expression")
	fs.BoolVar(&o.list, "list", false, "list the suites and exit")
	fs.IntVar(&o.rounds, "rounds", 5, "rounds per per-packet stage; stages are interleaved and the median reported")
	fs.DurationVar(&o.duration, "duration", 3*time.Second, "duration of each forwarding run")
	fs.IntVar(&o.frames, "frames", 4096, "distinct frames per per-packet round")
	fs.IntVar(&o.size, "size", 128, "frame size in bytes")
	fs.BoolVar(&o.quiet, "quiet", false, "no progress line on stderr (there is none when stderr is not a terminal)")
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
	if o.rounds < 1 || o.frames < 1 || o.duration <= 0 {
		return usageErrorf("bench: --rounds, --frames and --duration must be positive")
	}
	re, err := regexp.Compile(o.only)
	if err != nil {
		return usageErrorf("bench: --only: %w", err)
	}
	sort.SliceStable(benchSuites, func(i, j int) bool { return benchSuites[i].name < benchSuites[j].name })
	if o.list {
		for _, s := range benchSuites {
			fmt.Fprintln(stdout, s.name)
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
	meter, running := progress.New(stderr, o.quiet), ""
	emit := func(b report.Bench) {
		meter.Clear()
		defer meter.Set("%s; last done: %s", running, b.Name)
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
	ran := 0
	var failed []string
	for _, s := range benchSuites {
		if !re.MatchString(s.name) {
			continue
		}
		ran++
		running = fmt.Sprintf("bench: running suite %s (%.0f s so far)", s.name, meter.Elapsed().Seconds())
		meter.Set("%s", running)
		err := s.run(&o, emit)
		meter.Clear()
		if err != nil {
			// One suite that cannot run here (no DPDK, not root) does not
			// hide the others; it is reported and makes the exit status 1.
			fmt.Fprintf(stderr, "bench: %s: %v\n", s.name, err)
			failed = append(failed, s.name)
		}
	}
	if ran == 0 {
		return fmt.Errorf("bench: no suite matches --only %q (see --list)", o.only)
	}
	if len(failed) > 0 {
		return fmt.Errorf("bench: %d suite(s) could not run: %v", len(failed), failed)
	}
	return nil
}

func init() { registerBench("perpacket", benchPerPacket) }

// benchPerPacket measures the per-packet cost in one run: the full
// per-packet measurement (identity hash + MEC classify + synopsis update)
// against the identity hash alone, and their ratio. Every record also carries, in extra, its ratio to bare
// XXH64 over invariant bytes gathered beforehand (pkt-xxhash-window), the
// stricter yardstick earlier rounds held the code to (docs/performance.md).
func benchPerPacket(o *benchOptions, emit func(report.Bench)) error {
	frames, err := bench.Frames(o.frames, o.size, 1024)
	if err != nil {
		return err
	}
	stages, err := bench.PerPacketStages(frames)
	if err != nil {
		return err
	}
	ms := bench.Compare(stages, frames, o.rounds)
	xx, _ := bench.Find(ms, "xxhash-window")
	id, _ := bench.Find(ms, "identity-hash")
	for _, m := range ms {
		b := report.Bench{Name: "pkt-" + m.Name, Mpps: m.Mpps, NsPerPkt: m.NsPerPkt,
			Extra: map[string]any{"rounds_ns_per_pkt": m.Rounds}}
		switch m.Name {
		case "xxhash-window":
		case "identity-hash":
			// What locating and gathering the invariant bytes add to
			// hashing them.
			b.Baseline, b.Ratio = "pkt-xxhash-window", m.NsPerPkt/xx.NsPerPkt
		default:
			b.Baseline, b.Ratio = "pkt-identity-hash", m.NsPerPkt/id.NsPerPkt
			b.Extra["ratio_xxhash_window"] = m.NsPerPkt / xx.NsPerPkt
		}
		emit(b)
	}
	return nil
}
