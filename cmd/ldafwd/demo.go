package main

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	"github.com/ldafwd/ldafwd/appliance/demo"
	"github.com/ldafwd/ldafwd/appliance/service"
	"github.com/ldafwd/ldafwd/classifier"
	"github.com/ldafwd/ldafwd/control"
	"github.com/ldafwd/ldafwd/dataplane"
	"github.com/ldafwd/ldafwd/model"
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
		parity             float64
		priority           control.Priority
		remarkSpec         string
		dscpSpec           string
		linkLocalRate      float64
		segmentName        string
		metricsAddr        string
		queues             int
		capture            service.Capture
		simulated          bool
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
	fs.DurationVar(&maxDelay, "max-delay", 0, "largest one-way delay the compact LDA encoding carries (0: 1s, or more where the delay model's tail needs it); per-flow bounds take the delays each interval shows, not this (docs/lda.md, \"Delay ranges\")")
	fs.BoolVar(&verbose, "verbose", false, "log the appliances' events on stderr")
	fs.StringVar(&synopses, "synopsis", "all", "synopses the appliances record and ship: lda, rda, lds, all, or a list (the LDA is always on)")
	fs.IntVar(&top, "top", 5, "LDS: flows shown per interval, largest first")
	fs.Var(&priority, "control-priority", "802.1p priority (0..7) of the synopsis fragments, parity fragments, requests and replies, as ldafwd run's (none, the default: untagged). The demo's segment has one queue, so the tag changes no frame's fate; it runs the tagged frames end to end")
	fs.Float64Var(&parity, "control-parity", 0, "the least frame loss rate (0 … 0.9) the Reed-Solomon parity fragments added to every synopsis part are sized for, so that any k of a part's k+m fragments rebuild it (docs/protocol.md, \"Parity\"); the sender sizes them for the control loss the peer reports when that is higher. 0: from the peer's reports alone; -1: no parity")
	fs.IntVar(&copies, "control-copies", 2, "send every control frame this many times (1..4), the copies of synopsis fragments about 10 ms apart: the segment loses control frames too, and one lost fragment invalidates its interval")
	fs.StringVar(&segmentName, "segment-name", "demo", "name of the measured segment: the label segment on every metric and the field segment of every report line (1..64 printable characters)")
	fs.IntVar(&queues, "queues", 1, "queues per appliance port (1..64), steered by flow hash in software as a NIC's RSS does: one sender and one receiver lane, and one worker, per queue pair at each appliance (docs/protocol.md, \"Several lanes\")")
	fs.BoolVar(&simulated, "simulated-time", false, "run on simulated time: one thread drives the generator, the segment, both appliances' lanes and control sides in 10 µs steps of a simulated clock, so the same --seed and flags print the same reports byte for byte, whatever the machine's load (not with --queues > 1, --capture-*, --rate 0)")
	fs.StringVar(&metricsAddr, "metrics-addr", "", "serve Prometheus /metrics and /healthz on host:port while the demo runs: the measured direction's interval metrics, as ldafwd run exports them (empty: off)")
	lda.register(fs)
	extra.registerSizing(fs)
	budget.register(fs)
	microbursts.register(fs)
	registerCapture(fs, &capture, [2]string{"sender", "receiver"},
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
	if err := service.CheckSegmentName(segmentName); err != nil {
		return usageErrorf("demo: %w", err)
	}
	if err := capture.Validate(false); err != nil {
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
	remarks, err := dataplane.ParseRemarks(remarkSpec)
	if err != nil {
		return usageErrorf("demo: --remark: %w", err)
	}
	dscps, err := dataplane.ParseDSCPList(dscpSpec)
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
	ldaCfg, err := lda.Config()
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
	if parity > 0.9 || parity != parity {
		return usageErrorf("demo: --control-parity %v: a loss rate up to 0.9, 0 (from the peer's reports) or negative (none)", parity)
	}
	if queues < 1 || queues > 64 {
		return fmt.Errorf("demo: --queues %d: 1..64", queues)
	}
	if err := budget.Parse(); err != nil {
		return usageErrorf("demo: %w", err)
	}
	if simulated {
		// Refused before any capture file is created (RunDemo refuses
		// them too).
		switch {
		case queues > 1:
			return usageErrorf("demo: --simulated-time: not with --queues %d (their steering runs on threads of its own)", queues)
		case capture.A != "" || capture.B != "":
			return usageErrorf("demo: --simulated-time: not with --capture-sender/--capture-receiver (their writers run on threads of their own)")
		case rate == 0:
			return usageErrorf("demo: --simulated-time: not with --rate 0 (on simulated time forwarding takes no time: give a rate)")
		}
	}
	if err := microbursts.validate(); err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	changed := map[string]bool{}
	fs.Visit(func(f *pflag.Flag) { changed[f.Name] = true })
	// Sized like `run`: the RDA and the LDS follow the traffic unless
	// --rda-*/--lds-flows say otherwise.
	syn, adapt, err := extra.SynConfig(kinds, changed, ldaCfg)
	if err != nil {
		return usageErrorf("demo: %w", err)
	}
	key, err := demoKey()
	if err != nil {
		return err
	}
	if simulated {
		key = simulatedKey(seed)
	}
	w, closeReport, err := out.open(stdout)
	if err != nil {
		return err
	}
	defer closeReport()
	cfg := demo.Config{
		Duration: duration, Interval: interval, Delay: delay, Loss: loss, ReorderProb: reorder, DupProb: dup,
		Remark: remarks, DSCP: dscps, LinkLocalRate: linkLocalRate,
		Rate: rate, Flows: flows, Size: size, Seed: seed, Syn: syn, Classifier: cl,
		Conf: conf, Key: key, TopFlows: top, ControlCopies: copies, ControlParity: parity, ControlPriority: priority, Queues: queues,
		BudgetBytes: budget.Bytes, BudgetFraction: budget.Fraction,
		AdaptLDA: adapt.LDA, AdaptRDA: adapt.RDA, AdaptLDS: adapt.LDS, AdaptSample: adapt.Sample, RDAProblemRate: adapt.Problem,
		MicroburstGap: microbursts.gap, MicroburstMin: microbursts.min, SimulatedTime: simulated,
	}
	if maxDelay > 0 {
		cfg.Bounds = demo.Bounds(maxDelay)
	}
	var table io.Writer
	if out.format == "table" {
		table = stdout
	}
	return service.RunDemo(cfg, service.DemoOutput{W: w, Table: table, Stderr: stderr, SegmentName: segmentName,
		MetricsAddr: metricsAddr, Verbose: verbose, DelaySpec: delaySpec, Synopses: synopses, Capture: capture})
}

// demoKey makes a throw-away HMAC key: the demo authenticates its control
// frames like a real deployment does, without a key file.
func demoKey() ([]byte, error) {
	return controlGenerateKey()
}

// simulatedKey is the demo's key on simulated time, where every random
// choice comes from --seed: the key too. It authenticates nothing outside
// this one process, as the throw-away key does not either.
func simulatedKey(seed uint64) []byte {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], seed)
	k := sha256.Sum256(append([]byte("ldafwd demo --simulated-time key "), b[:]...))
	return k[:]
}
