package main

import (
	"fmt"

	"github.com/ldafwd/ldafwd/analyze"
	"github.com/ldafwd/ldafwd/appliance"
	"github.com/ldafwd/ldafwd/appliance/service"
	"github.com/ldafwd/ldafwd/classifier"
	"github.com/ldafwd/ldafwd/synopsis"
	"github.com/spf13/pflag"
)

// extraSynopsisFlags are the --rda-* and --lds-* flags
// (service.SynopsisFlags: RDAConfig, LDSConfig, SynConfig) and analyze's
// --top and --sample-*.
type extraSynopsisFlags struct {
	service.SynopsisFlags
	top int
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
	fs.IntVar(&e.RDABanks, "rda-banks", 0, "RDA banks k (default 3)")
	fs.IntVar(&e.RDACells, "rda-cells", 0, "RDA cells per bank m (default 2048: decodes a set difference of ~4300 packets; run and demo without --rda-banks/--rda-cells/--rda-expected-packets ship each interval the cells its packets need at --rda-problem-rate)")
	fs.IntVar(&e.RDACache, "rda-cache", synopsis.DefaultRDACacheBudget, "RDA timestamp cache budget per measurement class and side, bytes (0: no cache, no repair; a live appliance sizes each class's cache to its traffic within it)")
	fs.Uint64Var(&e.RDAPackets, "rda-expected-packets", 0, "size the RDA for this many packets per interval (with --rda-problem-rate)")
	fs.Float64Var(&e.RDAProblem, "rda-problem-rate", appliance.DefaultRDAProblemRate, "expected fraction of lost + reordered packets, for RDA sizing")
	fs.IntVar(&e.LDSFlows, "lds-flows", 10000, "expected flows per interval, for LDS dimensioning (about 2 flows per counter, 4 rows; without any --lds-* flag analyze sizes each interval's LDS for the flows its sender saw, and run and demo record for 65536 flows and ship each interval sized to the flows it saw)")
	fs.IntVar(&e.LDSK, "lds-cells-per-flow", 1, "LDS virtual-LDA cells per flow k (>1 under loss where the sketch is not repaired: run and demo; analyze repairs it)")
	fs.IntVar(&e.LDSMaxLoss, "lds-max-losses-per-flow", 0, "LDS per-row sampling tuned for up to this many losses per flow (0: every row samples all)")
	d := synopsis.DefaultSampleConfig()
	fs.UintVar(&e.SampleLevel, "sample-level", uint(d.Level), "sample: start each interval keeping 1 packet in 2^N (0..32) of each class, chosen alike at both ends by the packet's identity (run and demo without --sample-level/--sample-capacity ship each interval's sample at the rate its share of --control-budget carries)")
	fs.IntVar(&e.SampleCapacity, "sample-capacity", d.Capacity, "sample: most samples per class, interval and end; a fuller interval halves its sampling rate as often as needed (p99.9 needs 4603 samples at --confidence 0.98)")
}

func (e *extraSynopsisFlags) factories(kinds map[string]bool, cl *classifier.Classifier) ([]analyze.SynopsisFactory, error) {
	var out []analyze.SynopsisFactory
	if e.top < 0 {
		return nil, fmt.Errorf("--top %d: must be ≥ 0", e.top)
	}
	if kinds["rda"] {
		cfg, err := e.RDAConfig()
		if err != nil {
			return nil, err
		}
		out = append(out, analyze.RDAFactory{Config: cfg})
	}
	if kinds["lds"] {
		cfg, err := e.LDSConfig()
		if err != nil {
			return nil, err
		}
		out = append(out, analyze.LDSFactory{Config: cfg, Auto: e.ldsAuto, Classifier: cl, Top: e.top})
	}
	if kinds["sample"] {
		cfg, err := e.SampleConfig()
		if err != nil {
			return nil, err
		}
		out = append(out, analyze.SampleFactory{Config: cfg})
	}
	return out, nil
}

// controlBudget is --control-budget (service.ControlBudget: Parse).
type controlBudget struct{ service.ControlBudget }

const controlBudgetHelp = "control bytes per interval, all --control-copies counted: N% of the interval's data bytes (at least 20 KB, which carries the LDA and a small RDA with their parity), a byte count (k, M suffixes), or off. The LDA always goes (sized per interval, in up to a quarter of it plus what the others leave; at least 16 rows per bank); the RDA is folded to fewer cells, then the LDS names fewer flows, ships fewer rows, then only the largest flows' cells, and is left out (reported invalid with this reason). Requests and replies under loss (timestamps, more RDA cells) are paid from what later intervals leave unspent (the LDA's growth, then up to half of the LDS's part), up to 4 budgets carried"

func (b *controlBudget) register(fs *pflag.FlagSet) {
	fs.StringVar(&b.Spec, "control-budget", "1%", controlBudgetHelp)
}
