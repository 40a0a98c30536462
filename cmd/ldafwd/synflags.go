package main

import (
	"github.com/ldafwd/ldafwd/appliance/service"
	"github.com/spf13/pflag"
)

// errHelp is pflag's "help requested" error: --help prints usage and exits 0.
var errHelp = pflag.ErrHelp

// ldaFlags are the --lda-* flags (service.LDAFlags: Config).
type ldaFlags struct{ service.LDAFlags }

func (l *ldaFlags) register(fs *pflag.FlagSet) {
	fs.IntVar(&l.Counters, "lda-counters", 0, "LDA size in (timestamp sum, count) counters; with --lda-expected-packets/--lda-loss-rates sizes banks by p = αm/(L+1)")
	fs.Uint64Var(&l.Expected, "lda-expected-packets", 0, "expected packets per interval, for LDA sizing")
	fs.Float64SliceVar(&l.Losses, "lda-loss-rates", nil, "design loss rates, one LDA bank tuned for each (e.g. 0.005,0.1)")
	fs.StringVar(&l.Banks, "lda-banks", "", "explicit LDA banks ROWS:LOG2INVP[,…], e.g. 512:3,512:7 (rows a power of two; bank sampled with p = 2^-LOG2INVP); this flag or the other --lda-* sizing flags fix the shape: without them run and demo record 8 banks × 1024 rows and ship each interval folded to its traffic, and analyze records 8 × 1024 rows and estimates at 8 × 128, or at 8 × 1024 where heavy loss leaves too few samples")
	fs.BoolVar(&l.Digest, "lda-digest", true, "keep a per-bucket digest of the packet identities, so that buckets whose counts match but packet sets differ are discarded and packets only the receiver saw make the loss count invalid (both ends must agree)")
}
