package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/ldafwd/ldafwd/synopsis"
	"github.com/spf13/pflag"
)

// errHelp is pflag's "help requested" error: --help prints usage and exits 0.
var errHelp = pflag.ErrHelp

// ldaFlags size the LDA; shared by analyze, run and demo so that both ends
// of a segment can be given the same configuration the same way.
type ldaFlags struct {
	counters int
	expected uint64
	losses   []float64
	banks    string
	digest   bool
}

// ldaSizingFlagNames are the flags that fix the LDA's shape: given any,
// a live appliance records and ships that shape every interval; without,
// it records synopsis.RecordLDAConfig and ships it folded to the traffic
// (synConfig).
var ldaSizingFlagNames = []string{"lda-counters", "lda-expected-packets", "lda-loss-rates", "lda-banks"}

func (l *ldaFlags) register(fs *pflag.FlagSet) {
	fs.IntVar(&l.counters, "lda-counters", 0, "LDA size in (timestamp sum, count) counters; with --lda-expected-packets/--lda-loss-rates sizes banks by p = αm/(L+1)")
	fs.Uint64Var(&l.expected, "lda-expected-packets", 0, "expected packets per interval, for LDA sizing")
	fs.Float64SliceVar(&l.losses, "lda-loss-rates", nil, "design loss rates, one LDA bank tuned for each (e.g. 0.005,0.1)")
	fs.StringVar(&l.banks, "lda-banks", "", "explicit LDA banks ROWS:LOG2INVP[,…], e.g. 512:3,512:7 (rows a power of two; bank sampled with p = 2^-LOG2INVP); this flag or the other --lda-* sizing flags fix the shape: without them run and demo record 8 banks × 1024 rows and ship each interval folded to its traffic")
	fs.BoolVar(&l.digest, "lda-digest", true, "keep a per-bucket digest of the packet identities, so that buckets whose counts match but packet sets differ are discarded and packets only the receiver saw make the loss count invalid (both ends must agree)")
}

// config turns the flags into an LDA configuration: explicit banks win,
// then sizing from expected packets and loss rates, else the default that
// works untuned from thousands to tens of millions of packets per interval.
func (l *ldaFlags) config() (synopsis.LDAConfig, error) {
	var cfg synopsis.LDAConfig
	switch {
	case l.banks != "":
		if l.counters != 0 || l.expected != 0 || l.losses != nil {
			return cfg, fmt.Errorf("--lda-banks excludes --lda-counters, --lda-expected-packets and --lda-loss-rates")
		}
		for _, b := range strings.Split(l.banks, ",") {
			rows, lg, ok := strings.Cut(strings.TrimSpace(b), ":")
			r, err1 := strconv.Atoi(rows)
			k, err2 := strconv.ParseUint(lg, 10, 8)
			if !ok || err1 != nil || err2 != nil {
				return cfg, fmt.Errorf("--lda-banks: bad bank %q (want ROWS:LOG2INVP, e.g. 512:3)", b)
			}
			cfg.Banks = append(cfg.Banks, synopsis.BankConfig{Rows: r, SampleLog2: uint8(k)})
		}
	case l.counters != 0 || l.expected != 0 || l.losses != nil:
		counters, expected, losses := l.counters, l.expected, l.losses
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
	cfg.Digest = l.digest
	if _, err := synopsis.NewLDA(cfg); err != nil {
		return cfg, fmt.Errorf("LDA configuration: %w", err)
	}
	return cfg, nil
}
