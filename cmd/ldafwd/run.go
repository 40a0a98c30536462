package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/ldafwd/ldafwd/appliance"
	"github.com/ldafwd/ldafwd/appliance/service"
	"github.com/ldafwd/ldafwd/control"
	"github.com/ldafwd/ldafwd/flagfile"
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

// runOptions are the flags of `ldafwd run`: the appliance's
// configuration (service.Config) and the flag groups its synopsis
// settings are derived from.
type runOptions struct {
	cfg         service.Config
	out         outputFlags
	lda         ldaFlags
	extra       extraSynopsisFlags
	synopses    string
	budget      controlBudget
	microbursts microburstFlags
	config      string
	check       bool
}

func (o *runOptions) flags(fs *pflag.FlagSet) {
	def := synopsis.DefaultCompactBounds()
	fs.BoolVar(&o.check, "check", false, "check the flags, the --config file, the key, the --report file's directory, --metrics-addr and the ports (opened, then closed), print what would run, and exit without forwarding: 0 when all is well, 2 naming what is not")
	fs.StringVar(&o.config, "config", "", "read flags from FILE (key = value lines, keys are the long flag names, # comments, block lists for repeatable flags; docs/run.md; flags on the command line win)")
	fs.StringVar(&o.cfg.PortA, "port-a", "", "port a: dpdk:<PCI address or vdev devargs>, afxdp:<ifname>[@queue] or ring:<link>.a|b (required). afxdp: the interface is promiscuous while ldafwd runs; afxdp:<ifname> is refused when the interface has more receive queues than --queues (frames on the others would bypass the appliance), afxdp:<ifname>@<queue> only warned; offloads that change frames before XDP are warned about with the ethtool command that turns them off (docs/afxdp.md, \"Preparing the NIC\")")
	fs.StringVar(&o.cfg.PortB, "port-b", "", "port b, same forms as --port-a (required)")
	fs.StringVar(&o.cfg.Segment, "segment-port", "", "which port faces the measured segment: a or b (required)")
	fs.StringVar(&o.cfg.SegmentName, "segment-name", "default", "name of the measured segment, the same on both appliances: the label segment on every metric and the field segment of every report line (1..64 printable characters)")
	fs.DurationVar(&o.cfg.Interval, "interval", time.Second, "measurement interval, aligned to multiples since the Unix epoch (≥ 10ms; both ends must agree)")
	fs.StringArrayVar(&o.cfg.MEC, "mec", nil, "measurement class rule NAME=COND[,COND…] (repeatable; see docs/mec.md); unmatched packets go to class 'all'")
	fs.StringVar(&o.synopses, "synopsis", "all", "synopses the appliance records and ships: lda, rda, lds, all, or a list (the LDA is always on; both ends must name the same); the RDA and the LDS fit into --control-budget or are reported left out; lda alone costs the least CPU per packet")
	o.lda.register(fs)
	o.extra.registerSizing(fs)
	fs.IntVar(&o.cfg.Top, "top", 10, "LDS: flows reported per interval, largest first")
	o.budget.register(fs)
	o.microbursts.register(fs)
	fs.DurationVar(&o.cfg.MaxDelay, "max-delay", time.Duration(def.MaxDelayNs), "largest one-way delay (clock offset included) the compact LDA encoding carries: an interval with delays beyond it is invalid; each halving of the range saves a bit per LDA bucket. Per-flow bounds and crossing windows take the delays each interval shows instead (docs/lda.md, \"Delay ranges\")")
	fs.DurationVar(&o.cfg.MinDelay, "min-delay", time.Duration(def.MinDelayNs), "smallest one-way delay the compact LDA encoding carries (negative: the receiver's clock may be behind the sender's by up to this much; an interval below it is invalid, and the health check reports the clocks)")
	fs.Float64Var(&o.cfg.Conf, "confidence", 0.98, "confidence level of mean_ci_ns (0 < c < 1)")
	fs.StringVar(&o.cfg.KeyFile, "key-file", "", "pre-shared HMAC key for control frames (ldafwd keygen writes one); required unless --insecure")
	fs.BoolVar(&o.cfg.Insecure, "insecure", false, "run without authenticating control frames (anyone on the segment can forge reports); warns every interval")
	fs.DurationVar(&o.cfg.MaxStampErr, "max-stamp-err", appliance.DefaultMaxStampErr, "report an interval invalid when its timestamps may be off, on average, by more than this + 10 % of its mean delay (kernel and NIC stamps stay far below; a receiver stamping at its poll carries about half its poll gap)")
	fs.DurationVar(&o.cfg.MaxSkew, "max-clock-skew", time.Duration(control.DefaultMaxClockSkew), "how far the signed time of the frame that starts a peer's session may lie from our clock: older recordings of control frames cannot be replayed (docs/protocol.md)")
	fs.StringVar(&o.cfg.MetricsAddr, "metrics-addr", "", "serve Prometheus /metrics and /healthz on host:port (empty: off)")
	fs.IntSliceVar(&o.cfg.Cores, "cores", nil, "CPUs for the workers: none (unpinned, one worker), one, or two (one per direction), e.g. 0,1; the process's other threads keep off them")
	fs.IntVar(&o.cfg.Queues, "queues", 1, "queue pairs per port (1..64): one sender and one receiver lane and one worker per queue pair, --cores then one CPU per queue pair; dpdk: ports get that many queues with RSS, afxdp: one socket on each of the interface's queues 0..N-1 (give the interface without @queue; an interface with more receive queues than N is refused), ring: steered in software (docs/protocol.md, \"Several lanes\")")
	fs.IntVar(&o.cfg.Burst, "burst", 32, "frames per rx/tx burst (1..512)")
	fs.Float64Var(&o.cfg.Parity, "control-parity", 0, "the least frame loss rate (0 … 0.9) the Reed-Solomon parity fragments added to every synopsis part are sized for, so that any k of a part's k+m fragments rebuild it (docs/protocol.md, \"Parity\"); the sender sizes them for the control loss the peer reports when that is higher. 0: from the peer's reports alone; -1: no parity")
	fs.IntVar(&o.cfg.Copies, "control-copies", 1, "send every control frame (End marker, synopsis fragments) this many times (1..4), the copies of fragments about 10 ms apart so that one burst of loss does not take them all: on a lossy segment an interval then fails only if every copy of a frame is lost; costs that many times the control traffic. End markers (104 bytes, plus about 3 bytes a class) go at least four times")
	fs.IntVar(&o.cfg.MTU, "mtu", control.DefaultMTU, fmt.Sprintf("segment IP MTU: control frames are fragmented to it (%d..%d)", control.MinMTU, service.MaxPortFrame-14))
	fs.Var(&o.cfg.Priority, "control-priority", "802.1p priority (0..7) of the synopsis fragments, parity fragments, requests and replies: an 802.1Q tag with VLAN id 0 and this PCP after the source MAC, so that a segment whose queues honour PCP lets them pass congestion ahead of the data; End markers and Hellos stay untagged, in order with the data. none (or -1), the default, sends every control frame untagged: a port that drops tagged frames (an access port, VLAN filtering) would otherwise lose every synopsis (docs/protocol.md, \"Priority tag\")")
	fs.DurationVar(&o.cfg.Duration, "duration", 0, "stop after this long (0: run until SIGINT or SIGTERM)")
	fs.DurationVar(&o.cfg.StatsInterval, "stats-interval", 0, "cadence of the port records (0: --interval); --format table shows them at this cadence only when this flag is given, otherwise once at exit")
	fs.DurationVar(&o.cfg.Drain, "drain", 0, "on stop, how long to wait for the last interval's synopses (0: --interval + 2s)")
	fs.DurationVar(&o.cfg.IdleSleep, "idle-sleep", 0, "sleep this long when a worker finds no frames for a while (0: spin, lowest latency, a core per worker at 100%; 20us-100us on shared machines and labs)")
	fs.BoolVar(&o.cfg.ForwardOnly, "forward-only", false, "forward both directions without measuring (no synopses, no control frames): the baseline for what measuring costs; measurement flags are refused")
	fs.BoolVar(&o.cfg.FailOpen, "fail-open", true, "afxdp: ports: the interfaces' XDP programs forward frames between the two interfaces in the kernel whenever no socket of this process is bound, so the wire stays up (unmeasured) while ldafwd starts, after it stops and when it dies; the next run takes over. false: no bypass, the wire goes down with the process, and a bypass left by an earlier run is removed (docs/afxdp.md, \"Fail-open\"). dpdk: ports cannot fail open in software (the NIC's hardware bypass, docs/deploy.md)")
	registerCapture(fs, &o.cfg.Capture, [2]string{"a", "b"},
		"write what port a receives to this pcapng file (ns timestamps: the receive times the appliance measures with), off the packet path; --capture-max-bytes bounds its size",
		"write what port b receives to this pcapng file, as --capture-a")
	fs.StringVar(&o.cfg.LogLevel, "log-level", "info", "log level on stderr: trace, debug, info, warn, error")
	o.out.register(fs)
}

// parseRunArgs parses the command line and the --config file into o;
// --help goes to stdout (and returns pflag.ErrHelp).
func parseRunArgs(o *runOptions, args []string, stdout io.Writer) error {
	fs := newFlagSet("run", stdout)
	o.flags(fs)
	if err := fs.Parse(args); err != nil {
		if s := flagfile.ForError(fs, err); s != "" {
			return fmt.Errorf("%w%s", err, s)
		}
		return err
	}
	rest := fs.Args()
	if dash := fs.ArgsLenAtDash(); dash >= 0 {
		rest, o.cfg.EAL = rest[:dash], rest[dash:]
	}
	if len(rest) > 0 {
		return fmt.Errorf("unexpected arguments %q (EAL arguments go after --)", rest)
	}
	if o.config != "" {
		var err error
		if o.cfg.Origin, err = flagfile.Apply(fs, o.config); err != nil {
			return err
		}
	}
	o.cfg.Changed = map[string]bool{}
	fs.Visit(func(f *pflag.Flag) { o.cfg.Changed[f.Name] = true })
	return nil
}

// validate checks every flag and derives the appliance configuration,
// in the order of the flags; every error names the flag it is about.
func (o *runOptions) validate() error {
	if err := o.out.validate(); err != nil {
		return err
	}
	if err := o.cfg.ValidateWiring(); err != nil {
		return err
	}
	lda, err := o.lda.Config()
	if err != nil {
		return err
	}
	kinds, err := parseSynopsisList(o.synopses)
	if err != nil {
		return err
	}
	var adapt service.Adaptive
	if o.cfg.Syn, adapt, err = o.extra.SynConfig(kinds, o.cfg.Changed, lda); err != nil {
		return err
	}
	o.cfg.AdaptLDA, o.cfg.AdaptRDA, o.cfg.AdaptLDS, o.cfg.RDAProblemRate = adapt.LDA, adapt.RDA, adapt.LDS, adapt.Problem
	o.cfg.AdaptSample = adapt.Sample
	if o.cfg.Top < 1 {
		return fmt.Errorf("--top %d: must be ≥ 1", o.cfg.Top)
	}
	if err := o.budget.Parse(); err != nil {
		return err
	}
	o.cfg.BudgetBytes, o.cfg.BudgetFraction = o.budget.Bytes, o.budget.Fraction
	if err := o.microbursts.validate(); err != nil {
		return err
	}
	o.cfg.MicroburstGap, o.cfg.MicroburstMin = o.microbursts.gap, o.microbursts.min
	return o.cfg.Validate()
}

// runMain is `ldafwd run` with its context (cancelled by a signal) and
// output streams: parse → validate → read back the report file → open
// it → service.Run (ports, appliance, serve, stop and close).
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
	log := zerolog.New(stderr).Level(o.cfg.Level).With().Timestamp().Str("cmd", "run").Logger()
	if o.check {
		if err := service.Check(&o.cfg, o.out.report, o.synopses, stdout, log); err != nil {
			return usageErrorf("run --check: %w", err)
		}
		return nil
	}

	// Before opening it for append: what the last run reported, so a
	// restart after a kill reports the intervals nobody held.
	var last map[string]uint64
	if !o.cfg.ForwardOnly {
		last = service.LastReported(o.out.report, o.cfg.Interval, log)
	}
	w, closeReport, err := o.out.open(stdout)
	if err != nil {
		return fmt.Errorf("run: %w", err)
	}
	defer closeReport()
	var table io.Writer
	if o.out.format == "table" {
		table = stdout
	}
	return service.Run(ctx, &o.cfg, w, table, last, log)
}
