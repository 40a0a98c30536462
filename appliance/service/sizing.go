package service

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/ldafwd/ldafwd/dataplane"
	"github.com/ldafwd/ldafwd/synopsis"
)

// LDAFlags are the --lda-* flags that size the LDA; analyze, run and demo
// share them so that both ends of a segment can be given the same
// configuration the same way.
type LDAFlags struct {
	Counters int
	Expected uint64
	Losses   []float64
	Banks    string
	Digest   bool
}

// LDASizingFlagNames are the flags that fix the LDA's shape: given any,
// a live appliance records and ships that shape every interval; without,
// it records synopsis.RecordLDAConfig and ships it folded to the traffic
// (SynConfig).
var LDASizingFlagNames = []string{"lda-counters", "lda-expected-packets", "lda-loss-rates", "lda-banks"}

// Config turns the flags into an LDA configuration: explicit banks win,
// then sizing from expected packets and loss rates, else the default that
// works untuned from thousands to tens of millions of packets per interval.
func (l *LDAFlags) Config() (synopsis.LDAConfig, error) {
	var cfg synopsis.LDAConfig
	switch {
	case l.Banks != "":
		if l.Counters != 0 || l.Expected != 0 || l.Losses != nil {
			return cfg, fmt.Errorf("--lda-banks excludes --lda-counters, --lda-expected-packets and --lda-loss-rates")
		}
		for _, b := range strings.Split(l.Banks, ",") {
			rows, lg, ok := strings.Cut(strings.TrimSpace(b), ":")
			r, err1 := strconv.Atoi(rows)
			k, err2 := strconv.ParseUint(lg, 10, 8)
			if !ok || err1 != nil || err2 != nil {
				return cfg, fmt.Errorf("--lda-banks: bad bank %q (want ROWS:LOG2INVP, e.g. 512:3)", b)
			}
			cfg.Banks = append(cfg.Banks, synopsis.BankConfig{Rows: r, SampleLog2: uint8(k)})
		}
	case l.Counters != 0 || l.Expected != 0 || l.Losses != nil:
		counters, expected, losses := l.Counters, l.Expected, l.Losses
		if counters == 0 {
			counters = 1024
		}
		if expected == 0 {
			expected = 1_000_000
		}
		if losses == nil {
			losses = []float64{0.005, 0.1}
		}
		for _, p := range losses {
			if !(p >= 0 && p < 1) {
				return cfg, fmt.Errorf("--lda-loss-rates: %v is not a loss rate in [0, 1)", p)
			}
		}
		if counters < 2*len(losses) {
			return cfg, fmt.Errorf("--lda-counters %d: need at least 2 per bank", counters)
		}
		cfg = synopsis.SizeLDA(expected, losses, counters)
	default:
		cfg = synopsis.DefaultLDAConfig()
	}
	cfg.Digest = l.Digest
	if _, err := synopsis.NewLDA(cfg); err != nil {
		return cfg, fmt.Errorf("LDA configuration: %w", err)
	}
	return cfg, nil
}

// SynopsisFlags are the --rda-* and --lds-* flags that size the synopses
// beside the LDA.
type SynopsisFlags struct {
	RDABanks, RDACells int
	RDACache           int
	RDAPackets         uint64
	RDAProblem         float64
	LDSFlows           int
	LDSK               int
	LDSMaxLoss         int
	// SampleLevel, SampleCapacity: --sample-level and --sample-capacity
	// (synopsis.SampleConfig).
	SampleLevel    uint
	SampleCapacity int
}

// SampleConfig is the trajectory sample's configuration from
// --sample-level and --sample-capacity.
func (e *SynopsisFlags) SampleConfig() (synopsis.SampleConfig, error) {
	if e.SampleLevel > synopsis.SampleMaxLevel {
		return synopsis.SampleConfig{}, fmt.Errorf("--sample-level %d: the sample level is at most %d", e.SampleLevel, synopsis.SampleMaxLevel)
	}
	cfg := synopsis.SampleConfig{Level: uint8(e.SampleLevel), Capacity: e.SampleCapacity}
	if err := cfg.Validate(); err != nil {
		return cfg, fmt.Errorf("--sample-level/--sample-capacity: %w", err)
	}
	return cfg, nil
}

func (e *SynopsisFlags) RDAConfig() (synopsis.RDAConfig, error) {
	cfg := synopsis.DefaultRDAConfig()
	if e.RDAPackets > 0 {
		c, err := synopsis.SizeRDAConfig(e.RDAPackets, e.RDAProblem)
		if err != nil {
			return cfg, fmt.Errorf("--rda-expected-packets: %w", err)
		}
		cfg = c
	}
	if e.RDABanks != 0 {
		cfg.Banks = e.RDABanks
	}
	if e.RDACells != 0 {
		cfg.Cells = e.RDACells
	}
	cfg.CacheBudget = e.RDACache // Validate refuses a negative one
	if err := cfg.Validate(); err != nil {
		return cfg, fmt.Errorf("RDA configuration: %w", err)
	}
	return cfg, nil
}

func (e *SynopsisFlags) LDSConfig() (synopsis.LDSConfig, error) {
	if e.LDSFlows < 1 {
		return synopsis.LDSConfig{}, fmt.Errorf("--lds-flows %d: must be ≥ 1", e.LDSFlows)
	}
	// The flow table names up to 4× the expected flows, at most the
	// table's limit (memory follows the flows observed in the appliance).
	cfg, err := synopsis.DimensionLDS(synopsis.LDSDimensioning{ExpectedFlows: e.LDSFlows, CellsPerFlow: e.LDSK,
		MaxLossesPerFlow: e.LDSMaxLoss, MaxFlows: min(4*e.LDSFlows, synopsis.MaxFlowTable)})
	if err != nil {
		return cfg, fmt.Errorf("LDS configuration: %w", err)
	}
	return cfg, nil
}

// RDAFlagNames and LDSFlagNames are the sizing flags of each synopsis: a
// live appliance refuses them when their synopsis is off rather than
// ignore them.
var (
	RDAFlagNames    = []string{"rda-banks", "rda-cells", "rda-cache", "rda-expected-packets", "rda-problem-rate"}
	LDSFlagNames    = []string{"lds-flows", "lds-cells-per-flow", "lds-max-losses-per-flow"}
	SampleFlagNames = []string{"sample-level", "sample-capacity"}
)

// LDSAutoFlows is the flows a live appliance's LDS is recorded for when
// --lds-flows is not given (4 rows × 8 192 columns, 0.8 MB a copy): each
// interval then ships it folded to the flows it saw (AdaptLDS). More flows
// than this share cells; a control budget of 1 % folds far below it
// anyway, so a bigger sketch would cost memory for nothing by default.
const LDSAutoFlows = 1 << 16

// Adaptive says which synopses a live appliance sizes per interval from
// the traffic: those whose size flags the user left alone.
type Adaptive struct {
	LDA, RDA, LDS bool
	// Sample: the shipped sample's level follows its share of the control
	// budget (neither --sample-level nor --sample-capacity given).
	Sample  bool
	Problem float64
}

// SynConfig is the appliance's synopsis configuration for the synopses in
// kinds (the LDA is always on). changed holds the flags the user set:
// sizing flags left alone make the shipped LDA, RDA and LDS follow the
// traffic (Adaptive), given ones are overrides. Without LDA sizing flags
// the LDA is recorded at synopsis.RecordLDAConfig (lda's digest setting
// kept) and shipped folded to each interval's traffic.
func (e *SynopsisFlags) SynConfig(kinds, changed map[string]bool, lda synopsis.LDAConfig) (dataplane.SynConfig, Adaptive, error) {
	syn := dataplane.SynConfig{LDA: lda}
	ad := Adaptive{Problem: e.RDAProblem, LDA: true}
	for _, n := range LDASizingFlagNames {
		ad.LDA = ad.LDA && !changed[n]
	}
	if ad.LDA {
		rec := synopsis.RecordLDAConfig()
		rec.Digest = lda.Digest
		syn.LDA = rec
	}
	if kinds["rda"] && !changed["rda-banks"] && !changed["rda-cells"] && !changed["rda-expected-packets"] {
		ad.RDA = true
	}
	if kinds["lds"] && !changed["lds-flows"] {
		e.LDSFlows, ad.LDS = LDSAutoFlows, true
	}
	for i, names := range [][]string{RDAFlagNames, LDSFlagNames, SampleFlagNames} {
		kind := []string{"rda", "lds", "sample"}[i]
		if kinds[kind] {
			continue
		}
		for _, n := range names {
			if changed[n] {
				what := strings.ToUpper(kind)
				if kind == "sample" {
					what = "trajectory sample"
				}
				return syn, ad, fmt.Errorf("--%s sizes the %s, which --synopsis leaves off", n, what)
			}
		}
	}
	if kinds["rda"] {
		c, err := e.RDAConfig()
		if err != nil {
			return syn, ad, err
		}
		syn.RDA = &c
	}
	if kinds["lds"] {
		c, err := e.LDSConfig()
		if err != nil {
			return syn, ad, err
		}
		syn.LDS = &c
	}
	if kinds["sample"] {
		c, err := e.SampleConfig()
		if err != nil {
			return syn, ad, err
		}
		syn.Sample = &c
		ad.Sample = !changed["sample-level"] && !changed["sample-capacity"]
	}
	return syn, ad, nil
}

// ControlBudget is --control-budget: "N%" of each interval's data bytes,
// a number of bytes per interval (k, M suffixes: ×1000, ×10^6), or "off".
type ControlBudget struct {
	Spec     string
	Fraction float64
	Bytes    int
}

// Parse reads Spec into Fraction or Bytes.
func (b *ControlBudget) Parse() error {
	s := strings.TrimSpace(b.Spec)
	bad := fmt.Errorf("--control-budget %q: want N%% (e.g. 1%%), a byte count (e.g. 64k) or off", b.Spec)
	b.Fraction, b.Bytes = 0, 0
	switch {
	case s == "off":
		return nil
	case strings.HasSuffix(s, "%"):
		f, err := strconv.ParseFloat(strings.TrimSuffix(s, "%"), 64)
		if err != nil || !(f > 0 && f <= 100) {
			return bad
		}
		b.Fraction = f / 100
		return nil
	}
	mult := 1
	switch {
	case strings.HasSuffix(s, "k"), strings.HasSuffix(s, "K"):
		mult, s = 1000, s[:len(s)-1]
	case strings.HasSuffix(s, "M"):
		mult, s = 1_000_000, s[:len(s)-1]
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > 1<<30/mult {
		return bad
	}
	b.Bytes = n * mult
	return nil
}
