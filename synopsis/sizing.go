package synopsis

import (
	"math"
	"math/bits"
	"sort"
)

// SizingAlpha is α in the ToN paper's p = α·m/(L+1) (Sec. III-D, eq. 2).
// α = 0.5 maximises the paper's lower bound E[S] ≥ α(1−α)·m/(L+1)·R; it
// also maximises the expected number of packets behind the std-dev
// estimate, p·R·e^(−2pL/m) (a collapsed row is usable only when both of its
// rows saw no loss), whereas the mean's expected effective sample size
// p·R·e^(−pL/m) peaks at α = 1. docs/accuracy.md measured α ∈ [0.5, 1] at
// the paper's parameters: α = 0.5 keeps the std-dev within the paper's
// 10 %, α = 1 buys a ≈ 10 % smaller mean error; the paper's α stays.
const SizingAlpha = 0.5

// SampleLog2 is the k of the bank sampling probability 2^-k that best
// approximates the paper's p* = α·rows/(L+1), L = expectedPackets·loss
// (Sec. III-D), capped to [0, LDAMaxSampleLog2].
//
// The LDA picks a packet's bank from the leading zeros of its hash (Sec.
// III-B), so p must be a power of two. Of the two powers of two around p*
// this takes the one with the larger W(p) = p·e^(−p(L+1)/(α·rows)), the
// function that peaks exactly at p = p*: for α = 1 it is the expected
// effective sample size of the mean, p·R·e^(−pL/m); for α = ½ the expected
// packets in usable collapsed rows behind the std-dev, p·R·e^(−2pL/m).
// The two candidates tie at p*/2^-k = 1/ln 2 ≈ 1.44, within 2 % of the
// geometric mean √2, so this is in effect rounding to the nearest power of
// two in log scale: 2^-k/p* ∈ [0.69, 1.44] and W is never more than 8 %
// below W(p*) (rounding down, as SizeLDA did before, loses up to 18 % of W;
// for α = ½ it left an effective α of 0.25…0.5 and up to 36 % fewer
// effective samples for the mean than α = ½ itself).
func SampleLog2(expectedPackets uint64, loss float64, rows int, alpha float64) uint8 {
	if !(loss > 0) { // also NaN
		loss = 0
	}
	if loss > 1 {
		loss = 1
	}
	if !(alpha > 0) || rows < 1 {
		return 0
	}
	lost := float64(expectedPackets) * loss
	scale := alpha * float64(rows) / (lost + 1) // p*
	if scale >= 1 {
		return 0
	}
	k := int(math.Floor(-math.Log2(scale))) // 2^-k ≥ p* > 2^-(k+1)
	if k >= LDAMaxSampleLog2 {
		return LDAMaxSampleLog2
	}
	w := func(k int) float64 { p := math.Ldexp(1, -k); return p * math.Exp(-p/scale) }
	if w(k+1) > w(k) {
		k++
	}
	return uint8(k)
}

// SizeLDA returns an LDA configuration for expectedPackets packets per
// interval with counters buckets in all, one bank tuned for each design
// loss rate (fraction, e.g. 0.005), as in the paper's Sec. IV-B (e.g.
// 1024 counters and rates {0.005, 0.1} give two banks of 512).
//
// Each bank has m = counters/len(lossRates) rows rounded down to a power of
// two (at least 2) and sampling probability 2^-k = SampleLog2(…,
// SizingAlpha), the power of two best approximating p = α·m/(L+1) with
// L = expectedPackets·loss, capped at 1. Rates that land on the same k
// share one bank (a packet can go to only one bank of a given rate) with
// their rows added. No loss rates means one bank tuned for loss 0 (p = 1).
// Banks come out in increasing k. Digest is on; when every k > 0 the LDA
// adds LDACoverRows cover buckets for the packets no bank samples.
//
// Departures from the paper: p is a power of two, rounded as SampleLog2
// explains (up to a factor 1.44 above or 0.69 below the paper's p; until
// this revision SizeLDA rounded down, up to a factor 2 below). With several
// banks, bank j samples 2^-k_j minus what the banks with larger k take
// (disjoint sample sets, Sec. III-B), slightly less than p_j; for rates a
// factor ≥ 4 apart this is at most a quarter.
func SizeLDA(expectedPackets uint64, lossRates []float64, counters int) LDAConfig {
	if len(lossRates) == 0 {
		lossRates = []float64{0}
	}
	n := len(lossRates)
	if counters < 2*n {
		counters = 2 * n
	}
	rows := floorPow2(counters / n)
	// k per design loss rate, then group equal k.
	ks := make(map[uint8]int) // k → number of loss rates tuned to it
	for _, loss := range lossRates {
		ks[SampleLog2(expectedPackets, loss, rows, SizingAlpha)]++
	}
	cfg := LDAConfig{Digest: true}
	for k, c := range ks {
		r := floorPow2(counters * c / n)
		if r > LDAMaxRows {
			r = LDAMaxRows
		}
		cfg.Banks = append(cfg.Banks, BankConfig{Rows: r, SampleLog2: k})
	}
	sort.Slice(cfg.Banks, func(i, j int) bool { return cfg.Banks[i].SampleLog2 < cfg.Banks[j].SampleLog2 })
	return cfg
}

// floorPow2 is the largest power of two ≤ n, at least 2, at most
// LDAMaxRows.
func floorPow2(n int) int {
	if n < 2 {
		return 2
	}
	if n > LDAMaxRows {
		return LDAMaxRows
	}
	return 1 << (bits.Len(uint(n)) - 1)
}

// Default LDA shape: see DefaultLDAConfig.
const (
	DefaultLDABanks     = 8
	DefaultLDARows      = 128
	DefaultLDASampleGap = 2 // SampleLog2 of bank j is j·DefaultLDASampleGap
)

// DefaultLDAConfig is the LDA used when nobody tuned one: 1024 buckets
// (the paper's budget) as 8 banks of 128 rows sampling with probabilities
// 2^0, 2^-2, …, 2^-14 (bank j takes 3/4 of 2^-2j; the last takes 2^-14),
// with digests (LDAConfig.Digest). Bank 0 takes every packet the others do
// not, so every packet is in some bucket and no cover buckets are needed.
//
// Why: a bank is most useful when it loses about one packet per bucket
// (λ·loss ≈ 1, λ = packets per bucket; eq. 2 with α = 0.5), i.e. when it
// samples 2^-k ≈ m/L with L = lost packets per interval. From a few
// thousand packets at 0 % loss (L ≈ 0: bank 0 keeps 3/4 of all packets)
// to tens of millions at 5 % (L ≈ 2.5·10^6: k ≈ 14) the right k spans
// 0 … 14; banks every 2 in k put the best bank within a factor 2 of the
// optimum λ at every (N, loss), and its neighbours still contribute. The
// price against a single bank tuned for the true (N, loss) is about 4× fewer
// effective samples (≈ 2× the error); against the paper's 2×512 bank tuned
// for 0.005 and 0.1 it is far better whenever N or the loss differ from
// what that LDA was tuned for. Measured in lda_test.go (TestLDADefaultRange)
// and docs/lda.md.
func DefaultLDAConfig() LDAConfig {
	cfg := LDAConfig{Banks: make([]BankConfig, DefaultLDABanks), Digest: true}
	for j := range cfg.Banks {
		cfg.Banks[j] = BankConfig{Rows: DefaultLDARows, SampleLog2: uint8(j * DefaultLDASampleGap)}
	}
	return cfg
}

// LDARecordRows is the rows per bank the appliance records each class's
// LDA with when no LDA sizing is given (RecordLDAConfig); LDAShipFloorRows
// is the fewest it ships per bank.
const (
	LDARecordRows    = 1024
	LDAShipFloorRows = 16
)

// RecordLDAConfig is the LDA a live appliance records when no LDA sizing
// is given: DefaultLDAConfig's banks with LDARecordRows rows each. Every
// interval the sender ships it folded to the rows its banks' packets fill
// (LDA.ShipRows, LDA.Fold) and the receiver folds its own copy alike, so
// the rows follow the traffic: from LDAShipFloorRows per bank (a few
// packets) up to 1024 rows in every bank (tens of millions of packets per
// interval: bank 7 then records thousands). Why 1024: the per-packet
// cost hardly moves (a packet touches one bucket; bank 0, which takes 3/4
// of the packets, is 24 KiB, and the other banks are touched ever more
// rarely), while eight times the default's rows keep a bank's buckets
// usable at eight times the losses (docs/lda.md, "Sizing per interval").
func RecordLDAConfig() LDAConfig {
	cfg := DefaultLDAConfig()
	for j := range cfg.Banks {
		cfg.Banks[j].Rows = LDARecordRows
	}
	return cfg
}
