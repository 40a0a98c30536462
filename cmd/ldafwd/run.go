package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/ldafwd/ldafwd/appliance"
	"github.com/ldafwd/ldafwd/classifier"
	"github.com/ldafwd/ldafwd/control"
	"github.com/ldafwd/ldafwd/dataplane"
	"github.com/ldafwd/ldafwd/metrics"
	"github.com/ldafwd/ldafwd/report"
	"github.com/ldafwd/ldafwd/synopsis"
	"github.com/rs/zerolog"
	"github.com/spf13/pflag"
)

func init() {
	register("run", "the appliance: forward between two ports and measure delay and loss over the segment", runRun)
}

// runRun is `ldafwd run`: SIGINT, SIGTERM and SIGHUP cancel the context,
// which stops the appliance gracefully (the last interval is flushed and
// reported; docs/run.md). SIGHUP stops like SIGTERM — the report file is
// opened in append mode, so a rotated file is picked up by a restart. The
// signal handlers are removed at the first signal, so a second one ends
// the process at once (an impatient operator's Ctrl-C during the drain).
func runRun(args []string) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	go func() {
		<-ctx.Done()
		stop()
	}()
	return runMain(ctx, args, os.Stdout, os.Stderr)
}

// runOptions are the flags of `ldafwd run`, and what validate derives
// from them.
type runOptions struct {
	out           outputFlags
	queues        int
	lda           ldaFlags
	extra         extraSynopsisFlags
	synopses      string
	top           int
	budget        controlBudget
	microbursts   microburstFlags
	adapt         adaptive
	portA, portB  string
	segment       string
	segmentName   string
	interval      time.Duration
	mec           []string
	maxDelay      time.Duration
	minDelay      time.Duration
	conf          float64
	keyFile       string
	insecure      bool
	maxSkew       time.Duration
	maxStampErr   time.Duration
	metricsAddr   string
	cores         []int
	burst         int
	copies        int
	mtu           int
	duration      time.Duration
	statsInterval time.Duration
	drain         time.Duration
	idleSleep     time.Duration
	logLevel      string
	config        string
	eal           []string // after "--"
	forwardOnly   bool
	capture       captureFlags
	changed       map[string]bool   // flags set on the command line or in --config
	origin        map[string]string // "flag\x00value" → "--config PATH:LINE", for values the file set

	// Derived by validate.
	level zerolog.Level
	cl    *classifier.Classifier
	syn   dataplane.SynConfig
	bnds  synopsis.CompactBounds
	key   []byte
}

// maxPortFrame is the largest frame every port kind of this build can
// carry in one buffer: ring links, AF_XDP UMEM chunks and DPDK's default
// mbuf data room are all 2048 bytes. Control frames are built to --mtu,
// so --mtu may not exceed it minus the Ethernet header.
const maxPortFrame = 2048

func (o *runOptions) flags(fs *pflag.FlagSet) {
	def := synopsis.DefaultCompactBounds()
	fs.StringVar(&o.config, "config", "", "read flags from FILE (key = value lines, keys are the long flag names, # comments, block lists for repeatable flags; docs/run.md; flags on the command line win)")
	fs.StringVar(&o.portA, "port-a", "", "port a: dpdk:<PCI address or vdev devargs>, afxdp:<ifname>[@queue] or ring:<link>.a|b (required)")
	fs.StringVar(&o.portB, "port-b", "", "port b, same forms as --port-a (required)")
	fs.StringVar(&o.segment, "segment-port", "", "which port faces the measured segment: a or b (required)")
	fs.StringVar(&o.segmentName, "segment-name", "default", "name of the measured segment, the same on both appliances: the label segment on every metric and the field segment of every report line (1..64 printable characters)")
	fs.DurationVar(&o.interval, "interval", time.Second, "measurement interval, aligned to multiples since the Unix epoch (≥ 10ms; both ends must agree)")
	fs.StringArrayVar(&o.mec, "mec", nil, "measurement class rule NAME=COND[,COND…] (repeatable; see docs/mec.md); unmatched packets go to class 'all'")
	fs.StringVar(&o.synopses, "synopsis", "all", "synopses the appliance records and ships: lda, rda, lds, all, or a list (the LDA is always on; both ends must name the same); the RDA and the LDS fit into --control-budget or are reported left out; lda alone costs the least CPU per packet")
	o.lda.register(fs)
	o.extra.registerSizing(fs)
	fs.IntVar(&o.top, "top", 10, "LDS: flows reported per interval, largest first")
	o.budget.register(fs)
	o.microbursts.register(fs)
	fs.DurationVar(&o.maxDelay, "max-delay", time.Duration(def.MaxDelayNs), "largest one-way delay (clock offset included) the compact synopsis encoding must carry")
	fs.DurationVar(&o.minDelay, "min-delay", time.Duration(def.MinDelayNs), "smallest one-way delay (may be negative: receiver clock behind the sender's)")
	fs.Float64Var(&o.conf, "confidence", 0.98, "confidence level of mean_ci_ns (0 < c < 1)")
	fs.StringVar(&o.keyFile, "key-file", "", "pre-shared HMAC key for control frames (ldafwd keygen writes one); required unless --insecure")
	fs.BoolVar(&o.insecure, "insecure", false, "run without authenticating control frames (anyone on the segment can forge reports); warns every interval")
	fs.DurationVar(&o.maxStampErr, "max-stamp-err", appliance.DefaultMaxStampErr, "report an interval invalid when its timestamps may be off, on average, by more than this + 10 % of its mean delay (kernel and NIC stamps stay far below; a receiver stamping at its poll carries about half its poll gap)")
	fs.DurationVar(&o.maxSkew, "max-clock-skew", time.Duration(control.DefaultMaxClockSkew), "how far the signed time of the frame that starts a peer's session may lie from our clock: older recordings of control frames cannot be replayed (docs/protocol.md)")
	fs.StringVar(&o.metricsAddr, "metrics-addr", "", "serve Prometheus /metrics and /healthz on host:port (empty: off)")
	fs.IntSliceVar(&o.cores, "cores", nil, "CPUs for the workers: none (unpinned, one worker), one, or two (one per direction), e.g. 0,1")
	fs.IntVar(&o.queues, "queues", 1, "queue pairs per port (1..64): one sender and one receiver lane and one worker per queue pair, --cores then one CPU per queue pair; dpdk: ports get that many queues with RSS, ring: steered in software (docs/protocol.md, \"Several lanes\")")
	fs.IntVar(&o.burst, "burst", 32, "frames per rx/tx burst (1..512)")
	fs.IntVar(&o.copies, "control-copies", 1, "send every control frame (End marker, synopsis fragments) this many times (1..4): on a lossy segment an interval then fails only if every copy of a frame is lost; costs that many times the control traffic")
	fs.IntVar(&o.mtu, "mtu", control.DefaultMTU, fmt.Sprintf("segment IP MTU: control frames are fragmented to it (%d..%d)", control.MinMTU, maxPortFrame-14))
	fs.DurationVar(&o.duration, "duration", 0, "stop after this long (0: run until SIGINT or SIGTERM)")
	fs.DurationVar(&o.statsInterval, "stats-interval", 0, "cadence of the port records (0: --interval)")
	fs.DurationVar(&o.drain, "drain", 0, "on stop, how long to wait for the last interval's synopses (0: --interval + 2s)")
	fs.DurationVar(&o.idleSleep, "idle-sleep", 0, "sleep this long when a worker finds no frames for a while (0: spin, lowest latency, a core per worker at 100%; 20us-100us on shared machines and labs)")
	fs.BoolVar(&o.forwardOnly, "forward-only", false, "forward both directions without measuring (no synopses, no control frames): the baseline for what measuring costs; measurement flags are refused")
	o.capture.register(fs, [2]string{"a", "b"},
		"write what port a receives to this pcapng file (ns timestamps: the receive times the appliance measures with), off the packet path; --capture-max-bytes bounds its size",
		"write what port b receives to this pcapng file, as --capture-a")
	fs.StringVar(&o.logLevel, "log-level", "info", "log level on stderr: trace, debug, info, warn, error")
	o.out.register(fs)
}

// parseRunArgs parses the command line and the --config file into o;
// --help goes to stdout (and returns pflag.ErrHelp).
func parseRunArgs(o *runOptions, args []string, stdout io.Writer) error {
	fs := newFlagSet("run", stdout)
	o.flags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	rest := fs.Args()
	if dash := fs.ArgsLenAtDash(); dash >= 0 {
		rest, o.eal = rest[:dash], rest[dash:]
	}
	if len(rest) > 0 {
		return fmt.Errorf("unexpected arguments %q (EAL arguments go after --)", rest)
	}
	if o.config != "" {
		var err error
		if o.origin, err = applyConfigFile(fs, o.config); err != nil {
			return err
		}
	}
	o.changed = map[string]bool{}
	fs.Visit(func(f *pflag.Flag) { o.changed[f.Name] = true })
	return nil
}

// applyConfigFile sets every flag the file names that the command line
// did not set. The format is ldafwd's own, line-based (not YAML, though a
// simple YAML mapping of scalars and block lists reads the same):
//
//   - one "key = value", "key: value" or "key value" per line; keys are
//     long flag names (a leading "--" is allowed); a bare key sets a
//     boolean flag;
//   - '#' at the start of a line, or after a space or tab outside quotes,
//     starts a comment that runs to the end of the line; blank lines and
//     "---" are skipped;
//   - a value may be quoted ("…" with Go escapes, or '…');
//   - a repeatable flag (--mec, --cores) may appear on several lines, or
//     as a block list: the key alone ("mec:"), then one "- value" line
//     per item; a flow list ("mec: [a, b]") is refused, because a MEC
//     rule holds commas.
//
// Errors name the file and line. It returns where each value it set came
// from ("--config PATH:LINE", keyed by flag name and value), so that a
// value found wrong later (a --mec rule) is reported with its line.
func applyConfigFile(fs *pflag.FlagSet, path string) (map[string]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--config: %w", err)
	}
	origin := map[string]string{}
	onCmdLine := map[string]bool{}
	fs.Visit(func(f *pflag.Flag) { onCmdLine[f.Name] = true })
	set := func(where, key, val string) error {
		if onCmdLine[key] {
			return nil // the command line wins
		}
		if err := fs.Set(key, unquote(val)); err != nil {
			return fmt.Errorf("%s: --%s: %w", where, key, err)
		}
		origin[key+"\x00"+unquote(val)] = where
		return nil
	}
	listKey := "" // the key of the block list being read
	for i, line := range strings.Split(string(b), "\n") {
		where := fmt.Sprintf("--config %s:%d", path, i+1)
		line, err := stripComment(line)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") || line == "---" {
			continue
		}
		if line == "-" || strings.HasPrefix(line, "- ") {
			if listKey == "" {
				return nil, fmt.Errorf("%s: list item %q outside a list (put the key alone on the line before, e.g. \"mec:\")", where, line)
			}
			if err := set(where, listKey, strings.TrimSpace(line[1:])); err != nil {
				return nil, err
			}
			continue
		}
		listKey = ""
		key, val, ok := cutConfigLine(line)
		key = strings.TrimPrefix(key, "--")
		f := fs.Lookup(key)
		switch {
		case key == "":
			return nil, fmt.Errorf("%s: %q is not key = value", where, line)
		case f == nil:
			return nil, fmt.Errorf("%s: unknown key %q (keys are the long flag names of ldafwd run)", where, key)
		case key == "config":
			return nil, fmt.Errorf("%s: a config file cannot name another", where)
		case ok && val == "" && strings.HasSuffix(line, ":") && isListFlag(f):
			listKey = key
			continue
		case !ok && f.Value.Type() != "bool" || ok && val == "":
			return nil, fmt.Errorf("%s: key %q needs a value", where, key)
		case isListFlag(f) && strings.HasPrefix(val, "[") && strings.HasSuffix(val, "]"):
			return nil, fmt.Errorf("%s: %s: a flow list [a, b] is not read (a MEC rule holds commas): one value per line (%s = …, repeated) or a block list (%s: alone, then - … lines)", where, key, key, key)
		}
		if !ok {
			val = "true"
		}
		if err := set(where, key, val); err != nil {
			return nil, err
		}
	}
	return origin, nil
}

// stripComment cuts a comment off a config line: '#' at its start or
// after a space or tab, outside quotes. A quote left open is an error.
func stripComment(line string) (string, error) {
	var q byte // the open quote, or 0
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case q != 0:
			if c == '\\' && q == '"' {
				i++ // an escaped character, a quote among them
			} else if c == q {
				q = 0
			}
		case c == '"' || c == '\'':
			// A quote opens a quoted value only at a value's start: after
			// "=", ":", a space, or at the line's start.
			if i == 0 || strings.ContainsRune(" \t=:", rune(line[i-1])) {
				q = c
			}
		case c == '#' && (i == 0 || line[i-1] == ' ' || line[i-1] == '\t'):
			return line[:i], nil
		}
	}
	if q != 0 {
		return "", fmt.Errorf("quote %c not closed", q)
	}
	return line, nil
}

// isListFlag reports whether f takes several values (--mec, --cores…).
func isListFlag(f *pflag.Flag) bool {
	t := f.Value.Type()
	return strings.HasSuffix(t, "Array") || strings.HasSuffix(t, "Slice")
}

func cutConfigLine(line string) (key, val string, ok bool) {
	i := strings.IndexAny(line, "=:")
	if j := strings.IndexAny(line, " \t"); i < 0 || (j >= 0 && j < i && strings.TrimSpace(line[j:i]) != "") {
		// "key value" or a bare key.
		if j < 0 {
			return line, "", false
		}
		return line[:j], strings.TrimSpace(line[j:]), true
	}
	return strings.TrimSpace(line[:i]), strings.TrimSpace(line[i+1:]), true
}

func unquote(s string) string {
	if len(s) >= 2 && (s[0] == '"' && s[len(s)-1] == '"' || s[0] == '\'' && s[len(s)-1] == '\'') {
		if u, err := strconv.Unquote(`"` + s[1:len(s)-1] + `"`); err == nil {
			return u
		}
		return s[1 : len(s)-1]
	}
	return s
}

// validate checks every flag and derives the appliance configuration.
// Every error names the flag it is about.
func (o *runOptions) validate() error {
	if err := o.out.validate(); err != nil {
		return err
	}
	var err error
	if o.level, err = zerolog.ParseLevel(o.logLevel); err != nil || o.logLevel == "" {
		return fmt.Errorf("--log-level %q: want trace, debug, info, warn or error", o.logLevel)
	}
	if o.portA == "" || o.portB == "" {
		return errors.New("--port-a and --port-b are both required")
	}
	if o.portA == o.portB {
		return fmt.Errorf("--port-a and --port-b are the same port %q", o.portA)
	}
	kindA, err := checkPortSpec("--port-a", o.portA)
	if err != nil {
		return err
	}
	kindB, err := checkPortSpec("--port-b", o.portB)
	if err != nil {
		return err
	}
	if kindA != kindB {
		// A frame received on one kind of port cannot be handed to the
		// other kind's transmit path (different buffer owners).
		return fmt.Errorf("--port-a %s: and --port-b %s: ports must be of one kind in this build", kindA, kindB)
	}
	if len(o.eal) > 0 && kindA != "dpdk" {
		return fmt.Errorf("arguments after -- (%q) are DPDK EAL arguments, but no port is dpdk:", o.eal)
	}
	if o.forwardOnly {
		if err := checkForwardOnly(o.changed); err != nil {
			return err
		}
	}
	if err := o.capture.validate(o.forwardOnly); err != nil {
		return err
	}
	if err := checkSegmentName(o.segmentName); err != nil {
		return err
	}
	if !o.forwardOnly && o.segment != "a" && o.segment != "b" {
		return fmt.Errorf("--segment-port %q: want a or b (the port facing the measured segment)", o.segment)
	}
	if o.interval < 10*time.Millisecond {
		return fmt.Errorf("--interval %v: at least 10ms", o.interval)
	}
	var rules []classifier.Rule
	for _, spec := range o.mec {
		r, err := classifier.ParseMEC(spec)
		if err != nil {
			if where, ok := o.origin["mec\x00"+spec]; ok {
				return fmt.Errorf("%s: --mec: %w", where, err)
			}
			return fmt.Errorf("--mec: %w", err)
		}
		rules = append(rules, r)
	}
	if o.cl, err = classifier.NewClassifier(rules); err != nil {
		return fmt.Errorf("--mec: %w", err)
	}
	lda, err := o.lda.config()
	if err != nil {
		return err
	}
	kinds, err := parseSynopsisList(o.synopses)
	if err != nil {
		return err
	}
	if o.syn, o.adapt, err = o.extra.synConfig(kinds, o.changed, lda); err != nil {
		return err
	}
	if o.top < 1 {
		return fmt.Errorf("--top %d: must be ≥ 1", o.top)
	}
	if err := o.budget.parse(); err != nil {
		return err
	}
	if err := o.microbursts.validate(); err != nil {
		return err
	}
	o.bnds = synopsis.DefaultCompactBounds()
	o.bnds.MinDelayNs, o.bnds.MaxDelayNs = o.minDelay.Nanoseconds(), o.maxDelay.Nanoseconds()
	if o.maxDelay <= o.minDelay {
		return fmt.Errorf("--max-delay %v must exceed --min-delay %v", o.maxDelay, o.minDelay)
	}
	if o.maxDelay > time.Hour || o.minDelay < -time.Hour {
		return fmt.Errorf("--max-delay %v / --min-delay %v: beyond ±1h", o.maxDelay, o.minDelay)
	}
	if !(o.conf > 0 && o.conf < 1) {
		return fmt.Errorf("--confidence %v: must be between 0 and 1", o.conf)
	}
	switch {
	case o.keyFile != "" && o.insecure:
		return errors.New("--key-file and --insecure exclude each other")
	case o.keyFile == "" && !o.insecure && !o.forwardOnly:
		return errors.New("--key-file is required (ldafwd keygen --out FILE writes one; give both appliances the same file), or --insecure to run without authenticating control frames")
	case o.keyFile != "":
		if o.key, err = control.LoadKeyFile(o.keyFile); err != nil {
			return fmt.Errorf("--key-file: %w", err)
		}
	}
	if o.metricsAddr != "" {
		host, port, err := net.SplitHostPort(o.metricsAddr)
		if err != nil {
			return fmt.Errorf("--metrics-addr %q: want host:port (e.g. 127.0.0.1:9464 or :9464): %v", o.metricsAddr, err)
		}
		if p, err := strconv.ParseUint(port, 10, 16); err != nil || (p == 0 && host != "127.0.0.1" && host != "localhost") {
			return fmt.Errorf("--metrics-addr %q: port %q is not 1..65535", o.metricsAddr, port)
		}
	}
	if err := checkQueues(o); err != nil {
		return err
	}
	if len(o.cores) > 2 && o.queues == 1 {
		return fmt.Errorf("--cores %v: at most two (one worker per direction)", o.cores)
	}
	for i, c := range o.cores {
		if err := dataplane.CheckCore(c); err != nil {
			return fmt.Errorf("--cores: %w", err)
		}
		if i == 1 && o.cores[0] == c && o.queues == 1 {
			return fmt.Errorf("--cores %v: the two workers need two different CPUs", o.cores)
		}
	}
	if o.copies < 1 || o.copies > 4 {
		return fmt.Errorf("--control-copies %d: 1..4", o.copies)
	}
	if o.burst < 1 || o.burst > 512 {
		return fmt.Errorf("--burst %d: want 1..512", o.burst)
	}
	if o.mtu < control.MinMTU || o.mtu > maxPortFrame-14 {
		return fmt.Errorf("--mtu %d: want %d..%d (control frames must fit the ports' %d-byte buffers)", o.mtu, control.MinMTU, maxPortFrame-14, maxPortFrame)
	}
	if o.duration < 0 {
		return fmt.Errorf("--duration %v: must be ≥ 0 (0 runs until signalled)", o.duration)
	}
	if o.statsInterval == 0 {
		o.statsInterval = o.interval
	}
	if o.statsInterval < 10*time.Millisecond {
		return fmt.Errorf("--stats-interval %v: at least 10ms", o.statsInterval)
	}
	if o.maxStampErr <= 0 {
		return fmt.Errorf("--max-stamp-err %v: must be > 0", o.maxStampErr)
	}
	if o.maxSkew <= 0 {
		return fmt.Errorf("--max-clock-skew %v: must be > 0", o.maxSkew)
	}
	if o.drain < 0 {
		return fmt.Errorf("--drain %v: must be ≥ 0", o.drain)
	}
	if o.idleSleep < 0 || o.idleSleep > 100*time.Millisecond {
		return fmt.Errorf("--idle-sleep %v: want 0..100ms", o.idleSleep)
	}
	if o.drain == 0 {
		o.drain = o.interval + 2*time.Second
	}
	return nil
}

// runMain is `ldafwd run` with its context (cancelled by a signal) and
// output streams: parse → validate → open ports → build the appliance →
// run → stop and close, in that order (STYLE.md: l2fwd's order).
func runMain(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	var o runOptions
	if err := parseRunArgs(&o, args, stdout); err != nil {
		if errors.Is(err, errHelp) {
			return nil
		}
		return usageErrorf("run: %w (ldafwd run --help lists the flags)", err)
	}
	// Everything validate refuses is the command line's or the --config
	// file's fault: exit status 2, which the systemd unit does not
	// restart on. Failures after it (ports, sinks) exit 1.
	if err := o.validate(); err != nil {
		return usageErrorf("run: %w", err)
	}
	log := zerolog.New(stderr).Level(o.level).With().Timestamp().Str("cmd", "run").Logger()

	// Before opening it for append: what the last run reported, so a
	// restart after a kill reports the intervals nobody held.
	var last map[string]uint64
	if !o.forwardOnly {
		last = lastReported(o.out.report, o.interval, log)
	}
	w, closeReport, err := o.out.open(stdout)
	if err != nil {
		return fmt.Errorf("run: %w", err)
	}
	defer closeReport()

	ports, err := openPorts(&o, log)
	if err != nil {
		return fmt.Errorf("run: %w", err)
	}
	defer func() {
		if cerr := ports.close(); cerr != nil && err == nil {
			err = fmt.Errorf("run: closing ports: %w", cerr)
		}
	}()

	segment := o.segment
	if o.forwardOnly {
		segment = "none" // nothing is measured
	}
	info := map[string]string{"segment_port": segment, "port_a": o.portA, "port_b": o.portB}
	if o.insecure {
		info["insecure"] = "true" // control frames unauthenticated: shown by ldafwd_info and /healthz
	}
	m := metrics.New(o.segmentName, info)
	var out runOutput
	out.init(&o, w, stdout, m, log)
	tapA, tapB, closeTaps, err := o.capture.open(o.portA, o.portB, log)
	if err != nil {
		return fmt.Errorf("run: %w", err)
	}
	defer func() {
		if cerr := closeTaps(); cerr != nil && err == nil {
			err = fmt.Errorf("run: %w", cerr)
		}
	}()
	if o.forwardOnly {
		f, err := newForwardOnly(&o, ports)
		if err != nil {
			return fmt.Errorf("run: %w", err)
		}
		m.SetSources(metrics.Sources{
			Ports: map[string]dataplane.Port{"a": ports.a, "b": ports.b},
			Lanes: map[string]*dataplane.LaneStats{"forward_ab": &f.lanes[0].Stats, "forward_ba": &f.lanes[1].Stats},
		})
		log.Info().Msg("forwarding only: nothing is measured")
		return serve(ctx, &o, f, ports, &out, m, log)
	}
	qa, qb, stopQueues, err := ports.queues(o.queues)
	if err != nil {
		return fmt.Errorf("run: %w", err)
	}
	defer stopQueues()
	a, err := appliance.New(appliance.Config{
		Name: "ldafwd", PortA: ports.a, PortB: ports.b, Segment: o.segment, Interval: o.interval, Syn: o.syn,
		Classifier: o.cl, Key: o.key, Insecure: o.insecure, MTU: o.mtu, Bounds: o.bnds, Conf: o.conf, Burst: o.burst,
		Cores: o.cores, IdleSleep: o.idleSleep, Reports: out.interval, Log: log, ControlCopies: o.copies, TopFlows: o.top,
		BudgetBytes: o.budget.bytes, BudgetFraction: o.budget.fraction,
		AdaptLDA: o.adapt.lda, AdaptRDA: o.adapt.rda, AdaptLDS: o.adapt.lds, RDAProblemRate: o.adapt.problem,
		OnWorkerStart: ports.onWorkerStart, OnWorkerExit: ports.onWorkerExit, MaxClockSkew: o.maxSkew, MaxStampErr: o.maxStampErr,
		LastReported: last, MicroburstGap: o.microbursts.gap, MicroburstMin: o.microbursts.min, QueuesA: qa, QueuesB: qb,
		TapA: tapA, TapB: tapB,
	})
	if err != nil {
		return fmt.Errorf("run: %w", err)
	}
	sender, receiver := a.Lanes()
	lanes := map[string]*dataplane.LaneStats{"sender": &sender.Stats, "receiver": &receiver.Stats}
	for q, p := range a.QueueLanes()[1:] {
		// Queue 0's lanes keep the names one queue has; the others' carry
		// their queue number.
		lanes[fmt.Sprintf("sender_q%d", q+1)], lanes[fmt.Sprintf("receiver_q%d", q+1)] = &p[0].Stats, &p[1].Stats
	}
	m.SetSources(metrics.Sources{
		Ports:    map[string]dataplane.Port{"a": ports.a, "b": ports.b},
		Lanes:    lanes,
		Control:  a.ControlCounters,
		Captures: captureSources(tapA, tapB),
	})
	tapA.Start()
	tapB.Start()
	return serve(ctx, &o, a, ports, &out, m, log)
}

// runner is what serve runs: the appliance, or the forward-only lanes.
type runner interface {
	Start() error
	Stop(drain time.Duration) error
}

// serve runs r until the context is cancelled or --duration passes,
// printing the port records every --stats-interval and at the end.
func serve(ctx context.Context, o *runOptions, a runner, ports *portSet, out *runOutput, m *metrics.Metrics, log zerolog.Logger) error {
	var srv *metrics.Server
	var err error
	if o.metricsAddr != "" {
		if srv, err = m.Serve(o.metricsAddr); err != nil {
			return fmt.Errorf("run: --metrics-addr: %w", err)
		}
		log.Info().Str("addr", srv.Addr().String()).Msg("serving /metrics and /healthz")
		defer srv.Close()
	}

	if err := a.Start(); err != nil {
		m.SetState(metrics.StateStopped)
		return fmt.Errorf("run: %w", err)
	}
	m.SetState(metrics.StateRunning)
	start := time.Now()
	var wdC <-chan time.Time
	if src, ok := a.(peerSource); ok {
		wd := newWatchdog(o, src, out, m, log, start)
		out.setWatchdog(wd)
		t := time.NewTicker(max(o.interval/2, 5*time.Millisecond))
		defer t.Stop()
		wdC = t.C
		defer func() { out.setWatchdog(nil) }()
	}
	var deadline <-chan time.Time
	if o.duration > 0 {
		t := time.NewTimer(o.duration)
		defer t.Stop()
		deadline = t.C
	}
	stats := time.NewTicker(o.statsInterval)
	defer stats.Stop()
	// --insecure warns every interval, but at most once a second so a
	// 1 ms interval does not turn the log into nothing else.
	var insecureC <-chan time.Time
	if o.insecure {
		warn := time.NewTicker(max(o.interval, time.Second))
		defer warn.Stop()
		insecureC = warn.C
		log.Warn().Msg(insecureWarning)
	}
	if l, ok := a.(interface {
		Lanes() (sender, receiver *dataplane.Lane)
	}); ok {
		snd, rcv := l.Lanes()
		// The sender lane receives on the port facing away from the
		// segment, the receiver lane on the segment port.
		out.excluded = func() [2]uint64 {
			x := [2]uint64{snd.Stats.Excluded.Load(), rcv.Stats.Excluded.Load()}
			if o.segment == "a" {
				x[0], x[1] = x[1], x[0]
			}
			return x
		}
	}
	prev := [2]dataplane.Stats{ports.a.Stats(), ports.b.Stats()}
	prevAt := start
loop:
	for {
		select {
		case <-ctx.Done():
			log.Info().Msg("signalled: stopping")
			break loop
		case <-deadline:
			log.Info().Dur("duration", o.duration).Msg("duration reached: stopping")
			break loop
		case <-insecureC:
			log.Warn().Msg(insecureWarning)
		case now := <-wdC:
			out.watchdog().check(now)
		case now := <-stats.C:
			cur := [2]dataplane.Stats{ports.a.Stats(), ports.b.Stats()}
			out.ports(cur, prev, now.Sub(start), now.Sub(prevAt), false)
			prev, prevAt = cur, now
		}
	}
	m.SetState(metrics.StateStopping)
	stopErr := a.Stop(o.drain)
	elapsed := time.Since(start)
	out.ports([2]dataplane.Stats{ports.a.Stats(), ports.b.Stats()}, [2]dataplane.Stats{}, elapsed, elapsed, true)
	m.SetState(metrics.StateStopped)
	if stopErr != nil {
		return fmt.Errorf("run: %w", stopErr)
	}
	return out.err()
}

const insecureWarning = "--insecure: control frames are not authenticated; anyone on the segment can forge these reports"

// runOutput writes the reports: JSON lines (stdout in json mode and
// --report), the table (table mode), the metrics, and the --insecure
// warning. interval runs on the appliance's control goroutine, ports on
// main's; mu orders their table lines.
type runOutput struct {
	o     *runOptions
	w     *report.Writer
	table io.Writer // nil in json mode
	m     *metrics.Metrics
	log   zerolog.Logger

	excluded func() [2]uint64 // per port: link-local frames received there and left unmeasured
	wd       *watchdog        // the peer watchdog while serving (under mu)

	mu     sync.Mutex
	header bool
	werr   error
	lost   uint64 // report lines the sink refused
}

func (r *runOutput) init(o *runOptions, w *report.Writer, stdout io.Writer, m *metrics.Metrics, log zerolog.Logger) {
	r.o, r.w, r.m, r.log = o, w, m, log
	if o.out.format == "table" {
		r.table = stdout
	}
}

func (r *runOutput) interval(iv *report.Interval) {
	iv.Segment = r.o.segmentName
	r.m.Observe(iv)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.wd != nil {
		r.wd.observe(iv)
	}
	if err := r.w.Write(iv); err != nil {
		r.sinkFailed(err)
	}
	if r.table != nil {
		if !r.header {
			fmt.Fprintf(r.table, "%-12s %-5s %-8s %-3s %9s %9s %7s %10s %9s %10s %8s %s\n",
				"start (UTC)", "dir", "mec", "syn", "sent", "recv", "lost", "mean_us", "±ci_us", "stddev_us", "samples", "valid")
			r.header = true
		}
		fmt.Fprintln(r.table, runRow(iv))
		for _, row := range microburstRows(iv) {
			fmt.Fprintln(r.table, row)
		}
	}
}

// runRow is a table row of run: the interval's start as a time of day,
// "-" where the JSON line has null, the LDS flow (up to 97 characters
// for IPv6) after the fixed columns so that rows align, then the reason.
func runRow(iv *report.Interval) string {
	noDelay := !iv.Valid || iv.Samples == 0
	ok, why := "yes", ""
	if !iv.Valid {
		ok, why = "no", ": "+iv.Reason
	}
	flow := ""
	if iv.Flow != "" {
		flow = " flow " + iv.Flow
	}
	return fmt.Sprintf("%-12s %-5s %-8s %-3s %9d %9d %7d %10s %9s %10s %8d %s%s%s", startCell(iv.StartNs, iv.Interval), iv.Direction, iv.MEC, iv.Synopsis,
		iv.Sent, iv.Received, iv.Lost, usCell(iv.MeanNs, noDelay), usCell(iv.MeanCINs, noDelay), usCell(iv.StddevNs, noDelay || iv.Synopsis == "lds"),
		iv.Samples, ok, flow, why)
}

// usCell is a delay in µs with 3 decimals, or "-" for none.
func usCell(ns float64, none bool) string {
	if none {
		return "-"
	}
	return fmt.Sprintf("%.3f", ns/1e3)
}

func (r *runOutput) setWatchdog(w *watchdog) {
	r.mu.Lock()
	r.wd = w
	r.mu.Unlock()
}

func (r *runOutput) watchdog() *watchdog {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.wd
}

// status writes the watchdog's verdict: a JSON line, and a table line.
func (r *runOutput) status(st *report.Status) {
	st.Segment = r.o.segmentName
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.w.Write(st); err != nil {
		r.sinkFailed(err)
	}
	if r.table != nil {
		fmt.Fprintf(r.table, "status %s", st.Status)
		for _, p := range st.Problems {
			fmt.Fprintf(r.table, "; %s: %s", p.Check, p.Reason)
		}
		fmt.Fprintln(r.table)
	}
}

// ports writes one port record per port: counters since start, rates over
// the last tick (over the whole run for the final record).
func (r *runOutput) ports(cur, prev [2]dataplane.Stats, elapsed, tick time.Duration, final bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, name := range []string{"a", "b"} {
		c, p := cur[i], prev[i]
		rec := &report.Port{Type: "port", Segment: r.o.segmentName, Port: name, Name: []string{r.o.portA, r.o.portB}[i], RxPackets: c.RxPackets, TxPackets: c.TxPackets,
			RxDropped: c.RxDropped, TxDropped: c.TxDropped, ElapsedS: elapsed.Seconds(), Final: final}
		if r.excluded != nil {
			rec.Excluded = r.excluded()[i]
		}
		if s := tick.Seconds(); s > 0 {
			rec.RxMpps = float64(c.RxPackets-p.RxPackets) / s / 1e6
			rec.TxMpps = float64(c.TxPackets-p.TxPackets) / s / 1e6
		}
		if err := r.w.Write(rec); err != nil {
			r.sinkFailed(err)
		}
		if r.table != nil {
			fin := ""
			if final {
				fin = " (final)"
			}
			fmt.Fprintf(r.table, "port %s %-24s rx %d (%.3f Mpps) tx %d (%.3f Mpps) rx_dropped %d tx_dropped %d at %.1fs%s\n",
				name, rec.Name, rec.RxPackets, rec.RxMpps, rec.TxPackets, rec.TxMpps, rec.RxDropped, rec.TxDropped, rec.ElapsedS, fin)
		}
	}
}

// sinkFailed handles a report line that could not be written (mu held):
// logged at once (then every 100th time), /healthz degraded, and the
// run's exit status an error. The line itself is not half-written
// (lineFile); forwarding and measurement go on.
func (r *runOutput) sinkFailed(err error) {
	r.lost++
	if r.werr == nil {
		r.werr = fmt.Errorf("writing reports: %w", err)
	}
	if r.lost == 1 || r.lost%100 == 0 {
		r.log.Error().Err(err).Uint64("lines_lost", r.lost).Msg("report sink failing: interval lines are being lost")
	}
	r.m.SetProblem(fmt.Sprintf("report sink failing (%d lines lost): %v", r.lost, err))
}

func (r *runOutput) err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.werr
}
