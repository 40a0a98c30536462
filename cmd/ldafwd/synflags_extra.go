package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/ldafwd/ldafwd/analyze"
	"github.com/ldafwd/ldafwd/classifier"
	"github.com/ldafwd/ldafwd/dataplane"
	"github.com/ldafwd/ldafwd/synopsis"
	"github.com/spf13/pflag"
)

// extraSynopsisFlags size the synopses beside the LDA (RDA, LDS).
type extraSynopsisFlags struct {
	rdaBanks, rdaCells int
	rdaCache           int
	rdaPackets         uint64
	rdaProblem         float64
	ldsFlows           int
	ldsK               int
	ldsMaxLoss         int
	top                int
	// ldsAuto: analyze was given no LDS sizing flag, so each interval's
	// LDS is sized from the flows the sender saw (analyze.LDSFactory.Auto).
	ldsAuto bool
}

// register defines the sizing flags and --top (analyze's meaning).
func (e *extraSynopsisFlags) register(fs *pflag.FlagSet) {
	e.registerSizing(fs)
	fs.IntVar(&e.top, "top", 0, "LDS: report only the N largest flows per interval (0: every named flow)")
}

// registerSizing defines the RDA and LDS sizing flags. analyze, run and
// demo all call it, so the flags have one name, default and help
// everywhere; run and demo define their own --top (a live appliance
// reports a bounded number of flows).
func (e *extraSynopsisFlags) registerSizing(fs *pflag.FlagSet) {
	fs.IntVar(&e.rdaBanks, "rda-banks", 0, "RDA banks k (default 3)")
	fs.IntVar(&e.rdaCells, "rda-cells", 0, "RDA cells per bank m (default 2048: decodes a set difference of ~4300 packets; run and demo without --rda-banks/--rda-cells/--rda-expected-packets ship each interval the cells its packets need at --rda-problem-rate)")
	fs.IntVar(&e.rdaCache, "rda-cache", synopsis.DefaultRDACacheBudget, "RDA timestamp cache budget per measurement class and side, bytes (0: no cache, no repair; a live appliance sizes each class's cache to its traffic within it)")
	fs.Uint64Var(&e.rdaPackets, "rda-expected-packets", 0, "size the RDA for this many packets per interval (with --rda-problem-rate)")
	fs.Float64Var(&e.rdaProblem, "rda-problem-rate", 0.01, "expected fraction of lost + reordered packets, for RDA sizing")
	fs.IntVar(&e.ldsFlows, "lds-flows", 10000, "expected flows per interval, for LDS dimensioning (about 2 flows per counter, 4 rows; without any --lds-* flag analyze sizes each interval's LDS for the flows its sender saw, and run and demo record for 65536 flows and ship each interval sized to the flows it saw)")
	fs.IntVar(&e.ldsK, "lds-cells-per-flow", 1, "LDS virtual-LDA cells per flow k (>1 under loss where the sketch is not repaired: run and demo; analyze repairs it)")
	fs.IntVar(&e.ldsMaxLoss, "lds-max-losses-per-flow", 0, "LDS per-row sampling tuned for up to this many losses per flow (0: every row samples all)")
}

func (e *extraSynopsisFlags) rdaConfig() (synopsis.RDAConfig, error) {
	cfg := synopsis.DefaultRDAConfig()
	if e.rdaPackets > 0 {
		c, err := synopsis.SizeRDAConfig(e.rdaPackets, e.rdaProblem)
		if err != nil {
			return cfg, fmt.Errorf("--rda-expected-packets: %w", err)
		}
		cfg = c
	}
	if e.rdaBanks != 0 {
		cfg.Banks = e.rdaBanks
	}
	if e.rdaCells != 0 {
		cfg.Cells = e.rdaCells
	}
	cfg.CacheBudget = e.rdaCache // Validate refuses a negative one
	if err := cfg.Validate(); err != nil {
		return cfg, fmt.Errorf("RDA configuration: %w", err)
	}
	return cfg, nil
}

func (e *extraSynopsisFlags) ldsConfig() (synopsis.LDSConfig, error) {
	if e.ldsFlows < 1 {
		return synopsis.LDSConfig{}, fmt.Errorf("--lds-flows %d: must be ≥ 1", e.ldsFlows)
	}
	// The flow table names up to 4× the expected flows, at most the
	// table's limit (memory follows the flows observed in the appliance).
	cfg, err := synopsis.DimensionLDS(synopsis.LDSDimensioning{ExpectedFlows: e.ldsFlows, CellsPerFlow: e.ldsK,
		MaxLossesPerFlow: e.ldsMaxLoss, MaxFlows: min(4*e.ldsFlows, synopsis.MaxFlowTable)})
	if err != nil {
		return cfg, fmt.Errorf("LDS configuration: %w", err)
	}
	return cfg, nil
}

func (e *extraSynopsisFlags) factories(kinds map[string]bool, cl *classifier.Classifier) ([]analyze.SynopsisFactory, error) {
	var out []analyze.SynopsisFactory
	if e.top < 0 {
		return nil, fmt.Errorf("--top %d: must be ≥ 0", e.top)
	}
	if kinds["rda"] {
		cfg, err := e.rdaConfig()
		if err != nil {
			return nil, err
		}
		out = append(out, analyze.RDAFactory{Config: cfg})
	}
	if kinds["lds"] {
		cfg, err := e.ldsConfig()
		if err != nil {
			return nil, err
		}
		out = append(out, analyze.LDSFactory{Config: cfg, Auto: e.ldsAuto, Classifier: cl, Top: e.top})
	}
	return out, nil
}

// rdaFlagNames and ldsFlagNames are the sizing flags of each synopsis: a
// live appliance refuses them when their synopsis is off rather than
// ignore them.
var (
	rdaFlagNames = []string{"rda-banks", "rda-cells", "rda-cache", "rda-expected-packets", "rda-problem-rate"}
	ldsFlagNames = []string{"lds-flows", "lds-cells-per-flow", "lds-max-losses-per-flow"}
)

// ldsAutoFlows is the flows a live appliance's LDS is recorded for when
// --lds-flows is not given (4 rows × 8 192 columns, 0.8 MB a copy): each
// interval then ships it folded to the flows it saw (AdaptLDS). More flows
// than this share cells; a control budget of 1 % folds far below it
// anyway, so a bigger sketch would cost memory for nothing by default.
const ldsAutoFlows = 1 << 16

// adaptive says which synopses a live appliance sizes per interval from
// the traffic: those whose size flags the user left alone.
type adaptive struct {
	lda, rda, lds bool
	problem       float64
}

// synConfig is the appliance's synopsis configuration for the synopses in
// kinds (the LDA is always on). changed holds the flags the user set:
// sizing flags left alone make the shipped LDA, RDA and LDS follow the
// traffic (adaptive), given ones are overrides. Without LDA sizing flags
// the LDA is recorded at synopsis.RecordLDAConfig (lda's digest setting
// kept) and shipped folded to each interval's traffic.
func (e *extraSynopsisFlags) synConfig(kinds, changed map[string]bool, lda synopsis.LDAConfig) (dataplane.SynConfig, adaptive, error) {
	syn := dataplane.SynConfig{LDA: lda}
	ad := adaptive{problem: e.rdaProblem, lda: true}
	for _, n := range ldaSizingFlagNames {
		ad.lda = ad.lda && !changed[n]
	}
	if ad.lda {
		rec := synopsis.RecordLDAConfig()
		rec.Digest = lda.Digest
		syn.LDA = rec
	}
	if kinds["rda"] && !changed["rda-banks"] && !changed["rda-cells"] && !changed["rda-expected-packets"] {
		ad.rda = true
	}
	if kinds["lds"] && !changed["lds-flows"] {
		e.ldsFlows, ad.lds = ldsAutoFlows, true
	}
	for i, names := range [][]string{rdaFlagNames, ldsFlagNames} {
		kind := []string{"rda", "lds"}[i]
		if kinds[kind] {
			continue
		}
		for _, n := range names {
			if changed[n] {
				return syn, ad, fmt.Errorf("--%s sizes the %s, which --synopsis leaves off", n, strings.ToUpper(kind))
			}
		}
	}
	if kinds["rda"] {
		c, err := e.rdaConfig()
		if err != nil {
			return syn, ad, err
		}
		syn.RDA = &c
	}
	if kinds["lds"] {
		c, err := e.ldsConfig()
		if err != nil {
			return syn, ad, err
		}
		syn.LDS = &c
	}
	return syn, ad, nil
}

// controlBudget is --control-budget: "N%" of each interval's data bytes,
// a number of bytes per interval (k, M suffixes: ×1000, ×10^6), or "off".
type controlBudget struct {
	spec     string
	fraction float64
	bytes    int
}

const controlBudgetHelp = "control bytes per interval, all --control-copies counted: N% of the interval's data bytes (at least 16 KB, which carries the LDA and a small RDA), a byte count (k, M suffixes), or off. The LDA always goes (sized per interval, in up to a quarter of it plus what the others leave; at least 16 rows per bank); the RDA is folded to fewer cells, then the LDS names fewer flows, ships fewer rows, and is left out (reported invalid with this reason)"

func (b *controlBudget) register(fs *pflag.FlagSet) {
	fs.StringVar(&b.spec, "control-budget", "1%", controlBudgetHelp)
}

func (b *controlBudget) parse() error {
	s := strings.TrimSpace(b.spec)
	bad := fmt.Errorf("--control-budget %q: want N%% (e.g. 1%%), a byte count (e.g. 64k) or off", b.spec)
	b.fraction, b.bytes = 0, 0
	switch {
	case s == "off":
		return nil
	case strings.HasSuffix(s, "%"):
		f, err := strconv.ParseFloat(strings.TrimSuffix(s, "%"), 64)
		if err != nil || !(f > 0 && f <= 100) {
			return bad
		}
		b.fraction = f / 100
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
	b.bytes = n * mult
	return nil
}
