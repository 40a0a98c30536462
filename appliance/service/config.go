package service

import (
	"errors"
	"fmt"
	"github.com/ldafwd/ldafwd/appliance"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/ldafwd/ldafwd/classifier"
	"github.com/ldafwd/ldafwd/control"
	"github.com/ldafwd/ldafwd/dataplane"
	"github.com/ldafwd/ldafwd/dataplane/afxdp"
	"github.com/ldafwd/ldafwd/synopsis"
	"github.com/rs/zerolog"
)

// Config is `ldafwd run`'s configuration: each field is the flag of the
// same name (docs/run.md), the fields below Syn are what the command
// derives from its synopsis flags, and the last ones what ValidateWiring and
// Validate derive.
type Config struct {
	PortA, PortB  string
	Segment       string // --segment-port
	SegmentName   string
	Interval      time.Duration
	MEC           []string
	Top           int
	MaxDelay      time.Duration
	MinDelay      time.Duration
	Conf          float64 // --confidence
	KeyFile       string
	Insecure      bool
	MaxSkew       time.Duration // --max-clock-skew
	MaxStampErr   time.Duration
	MetricsAddr   string
	Cores         []int
	Queues        int
	Burst         int
	Copies        int     // --control-copies
	Parity        float64 // --control-parity
	MTU           int
	Priority      control.Priority // --control-priority
	Duration      time.Duration
	StatsInterval time.Duration
	Drain         time.Duration
	IdleSleep     time.Duration
	LogLevel      string
	EAL           []string // after "--"
	ForwardOnly   bool
	FailOpen      bool              // --fail-open: afxdp: ports keep the wire up without the process (afxdp.Config.Bypass)
	Capture       Capture           // --capture-a, --capture-b and their limits
	Changed       map[string]bool   // flags set on the command line or in --config
	Origin        map[string]string // "flag\x00value" → "--config PATH:LINE", for values the file set

	// From the synopsis flags (--synopsis, --lda-*, --rda-*, --lds-*,
	// --control-budget, --microburst-*).
	Syn                          dataplane.SynConfig
	AdaptLDA, AdaptRDA, AdaptLDS bool
	AdaptSample                  bool // Adaptive.Sample
	RDAProblemRate               float64
	BudgetBytes                  int
	BudgetFraction               float64
	MicroburstGap                time.Duration
	MicroburstMin                int

	// Derived by ValidateWiring and Validate.
	Level      zerolog.Level
	Classifier *classifier.Classifier // from MEC
	Bounds     synopsis.CompactBounds // from MinDelay, MaxDelay
	Key        []byte                 // from KeyFile
}

// MaxPortFrame is the largest frame every port kind of this build can
// carry in one buffer: ring links, AF_XDP UMEM chunks and DPDK's default
// mbuf data room are all 2048 bytes. Control frames are built to --mtu,
// so --mtu may not exceed it minus the Ethernet header.
const MaxPortFrame = 2048

// ValidateWiring checks what says how the appliance is wired and
// classifies (log level, ports, segment, interval, --mec) and derives the
// classifier. Every error names the flag it is about.
func (o *Config) ValidateWiring() error {
	var err error
	if o.Level, err = zerolog.ParseLevel(o.LogLevel); err != nil || o.LogLevel == "" {
		return fmt.Errorf("--log-level %q: want trace, debug, info, warn or error", o.LogLevel)
	}
	if o.PortA == "" || o.PortB == "" {
		return errors.New("--port-a and --port-b are both required")
	}
	if o.PortA == o.PortB {
		return fmt.Errorf("--port-a and --port-b are the same port %q", o.PortA)
	}
	kindA, err := checkPortSpec("--port-a", o.PortA)
	if err != nil {
		return err
	}
	kindB, err := checkPortSpec("--port-b", o.PortB)
	if err != nil {
		return err
	}
	if kindA != kindB {
		// A frame received on one kind of port cannot be handed to the
		// other kind's transmit path (different buffer owners).
		return fmt.Errorf("--port-a %s: and --port-b %s: ports must be of one kind in this build", kindA, kindB)
	}
	if len(o.EAL) > 0 && kindA != "dpdk" {
		return fmt.Errorf("arguments after -- (%q) are DPDK EAL arguments, but no port is dpdk:", o.EAL)
	}
	if o.ForwardOnly {
		if err := checkForwardOnly(o.Changed); err != nil {
			return err
		}
	}
	if err := o.Capture.Validate(o.ForwardOnly); err != nil {
		return err
	}
	if err := CheckSegmentName(o.SegmentName); err != nil {
		return err
	}
	if !o.ForwardOnly && o.Segment != "a" && o.Segment != "b" {
		return fmt.Errorf("--segment-port %q: want a or b (the port facing the measured segment)", o.Segment)
	}
	if o.Interval < appliance.MinInterval {
		return fmt.Errorf("--interval %v: at least %v", o.Interval, appliance.MinInterval)
	}
	var rules []classifier.Rule
	for _, spec := range o.MEC {
		r, err := classifier.ParseMEC(spec)
		if err != nil {
			if where, ok := o.Origin["mec\x00"+spec]; ok {
				return fmt.Errorf("%s: --mec: %w", where, err)
			}
			return fmt.Errorf("--mec: %w", err)
		}
		rules = append(rules, r)
	}
	if o.Classifier, err = classifier.NewClassifier(rules); err != nil {
		return fmt.Errorf("--mec: %w", err)
	}
	return nil
}

// Validate checks the rest of the configuration, fills in the defaults
// that follow from others (--stats-interval, --drain) and loads the key.
// The command calls it after ValidateWiring and after setting Syn and the
// other fields its synopsis flags derive.
func (o *Config) Validate() error {
	var err error
	if o.Top < 1 {
		return fmt.Errorf("--top %d: must be ≥ 1", o.Top)
	}
	o.Bounds = synopsis.DefaultCompactBounds()
	o.Bounds.MinDelayNs, o.Bounds.MaxDelayNs = o.MinDelay.Nanoseconds(), o.MaxDelay.Nanoseconds()
	if o.MaxDelay <= o.MinDelay {
		return fmt.Errorf("--max-delay %v must exceed --min-delay %v", o.MaxDelay, o.MinDelay)
	}
	if o.MaxDelay > time.Hour || o.MinDelay < -time.Hour {
		return fmt.Errorf("--max-delay %v / --min-delay %v: beyond ±1h", o.MaxDelay, o.MinDelay)
	}
	if !(o.Conf > 0 && o.Conf < 1) {
		return fmt.Errorf("--confidence %v: must be between 0 and 1", o.Conf)
	}
	switch {
	case o.KeyFile != "" && o.Insecure:
		return errors.New("--key-file and --insecure exclude each other")
	case o.KeyFile == "" && !o.Insecure && !o.ForwardOnly:
		return errors.New("--key-file is required (ldafwd keygen --out FILE writes one; give both appliances the same file), or --insecure to run without authenticating control frames")
	case o.KeyFile != "":
		if o.Key, err = control.LoadKeyFile(o.KeyFile); err != nil {
			return fmt.Errorf("--key-file: %w", err)
		}
	}
	if o.MetricsAddr != "" {
		host, port, err := net.SplitHostPort(o.MetricsAddr)
		if err != nil {
			return fmt.Errorf("--metrics-addr %q: want host:port (e.g. 127.0.0.1:9464 or :9464): %v", o.MetricsAddr, err)
		}
		if p, err := strconv.ParseUint(port, 10, 16); err != nil || (p == 0 && host != "127.0.0.1" && host != "localhost") {
			return fmt.Errorf("--metrics-addr %q: port %q is not 1..65535", o.MetricsAddr, port)
		}
	}
	if err := checkQueues(o); err != nil {
		return err
	}
	if err := checkFailOpen(o); err != nil {
		return err
	}
	if len(o.Cores) > 2 && o.Queues == 1 {
		return fmt.Errorf("--cores %v: at most two (one worker per direction)", o.Cores)
	}
	for i, c := range o.Cores {
		if err := dataplane.CheckCore(c); err != nil {
			return fmt.Errorf("--cores: %w", err)
		}
		if i == 1 && o.Cores[0] == c && o.Queues == 1 {
			return fmt.Errorf("--cores %v: the two workers need two different CPUs", o.Cores)
		}
	}
	if o.Copies < 1 || o.Copies > appliance.MaxControlCopies {
		return fmt.Errorf("--control-copies %d: 1..%d", o.Copies, appliance.MaxControlCopies)
	}
	if o.Parity > 0.9 || o.Parity != o.Parity {
		return fmt.Errorf("--control-parity %v: a loss rate up to 0.9, 0 (from the peer's reports) or negative (none)", o.Parity)
	}
	if o.Burst < 1 || o.Burst > dataplane.MaxLaneBurst {
		return fmt.Errorf("--burst %d: want 1..%d", o.Burst, dataplane.MaxLaneBurst)
	}
	if o.MTU < control.MinMTU || o.MTU > MaxPortFrame-14 {
		return fmt.Errorf("--mtu %d: want %d..%d (control frames must fit the ports' %d-byte buffers)", o.MTU, control.MinMTU, MaxPortFrame-14, MaxPortFrame)
	}
	if o.Duration < 0 {
		return fmt.Errorf("--duration %v: must be ≥ 0 (0 runs until signalled)", o.Duration)
	}
	if o.StatsInterval == 0 {
		o.StatsInterval = o.Interval
	}
	if o.StatsInterval < 10*time.Millisecond {
		return fmt.Errorf("--stats-interval %v: at least 10ms", o.StatsInterval)
	}
	if o.MaxStampErr <= 0 {
		return fmt.Errorf("--max-stamp-err %v: must be > 0", o.MaxStampErr)
	}
	if o.MaxSkew <= 0 {
		return fmt.Errorf("--max-clock-skew %v: must be > 0", o.MaxSkew)
	}
	if o.Drain < 0 {
		return fmt.Errorf("--drain %v: must be ≥ 0", o.Drain)
	}
	if o.IdleSleep < 0 || o.IdleSleep > 100*time.Millisecond {
		return fmt.Errorf("--idle-sleep %v: want 0..100ms", o.IdleSleep)
	}
	if o.Drain == 0 {
		o.Drain = o.Interval + 2*time.Second
	}
	return nil
}

// checkFailOpen refuses --fail-open where it cannot hold. Only afxdp:
// ports can fail open: their XDP program stays in the kernel without the
// process. A DPDK port's NIC belongs to the process (nothing forwards
// when it dies: that takes the NIC's hardware bypass, docs/deploy.md),
// and ring: ports have no wire. The flag is on by default, so only an
// explicit --fail-open with those kinds is an error. Both afxdp: ports on
// one interface would make the bypass send frames back where they came
// from.
func checkFailOpen(o *Config) error {
	if !o.FailOpen {
		return nil
	}
	kind, _, _ := strings.Cut(o.PortA, ":")
	if kind != "afxdp" {
		if o.Changed["fail-open"] {
			return fmt.Errorf("--fail-open: only afxdp: ports can fail open in software; %s: ports cannot (for dpdk: use the NIC's hardware bypass, docs/deploy.md)", kind)
		}
		return nil
	}
	ia, _, _ := afxdp.ParseSpec(o.PortA)
	ib, _, _ := afxdp.ParseSpec(o.PortB)
	if ia == ib {
		return fmt.Errorf("--fail-open: --port-a and --port-b are both on %s: the bypass needs two interfaces (or --fail-open=false)", ia)
	}
	return nil
}
