package synopsis

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/ldafwd/ldafwd/report"
)

// SampleMatch is the sender's and the receiver's samples of one interval
// paired by digest (MatchSamples).
type SampleMatch struct {
	// Threshold both samples were cut to: the lower of the two ends'
	// (Sample.Threshold); Level is its level (SampleThresholdLevel).
	Threshold uint64
	Level     uint8
	// DigestBits: the digest width the pairing compared (the shipped
	// sample's, 32 between two samples of this process).
	DigestBits uint8
	// Sent: the sender's samples at Level whose digest no other sender
	// sample shares; Lost: of them, those whose digest the receiver's
	// sample lacks; Received = Sent − Lost, each paired with exactly one
	// receiver sample.
	Sent, Received, Lost uint64
	// Extra: receiver samples whose digest no sender sample has
	// (duplicated, injected or changed inside the segment, or sent in
	// another interval). They pair with nothing and move nothing.
	Extra uint64
	// AmbiguousSent, AmbiguousReceived: samples whose digest is held more
	// than once at either end (a packet duplicated inside the segment, two
	// packets colliding on the digest): which copy pairs with which
	// cannot be told, so these samples are left out of Sent, Received,
	// Lost and the delays, and counted here.
	AmbiguousSent, AmbiguousReceived uint64
	// DelaysNs: the exact one-way delay (receive − send stamp) of each
	// received sample, ascending.
	DelaysNs []int64
	// StampErrNs: the sum of both ends' stamp uncertainty bounds, by which
	// each delay may be off.
	StampErrNs uint64
	// OfferedSent, OfferedReceived: the packets each end offered its
	// sample (sampled or not).
	OfferedSent, OfferedReceived uint64
	// FlowDelays: where the receiver's sample tracks flows (TrackFlows),
	// each received sample's delay with the flow the receiver recorded it
	// under and its selection bits, ascending by delay; nil otherwise.
	// The sender ships no flows: a delay is of a delivered packet, which
	// the receiver parsed.
	FlowDelays []report.FlowDelay
}

// SampleKeepsSelect says whether a sample at threshold t keeps the
// packet whose remixed identity's top 32 bits are sel
// (report.FlowDelay.Select): a set of samples at one threshold can be cut
// to a lower one.
func SampleKeepsSelect(sel uint32, t uint64) bool { return uint64(sel) < t }

// LossRate is the sample's loss ratio Lost/Sent (NaN without samples).
func (m *SampleMatch) LossRate() float64 {
	if m.Sent == 0 {
		return math.NaN()
	}
	return float64(m.Lost) / float64(m.Sent)
}

// MatchSamples pairs the sender's sample with the receiver's by digest
// (the shipped sample's digest bits). Both are cut to the lower of their
// two thresholds first; an end that must be cut has to know its full
// remixed identities, so an end decoded from the wire (UnmarshalBinary)
// at the higher threshold is an error (the other end's sample is sparser
// than the shipped one: raise its capacity). A sample that overflowed (Overflow) is not uniform over its
// interval and is an error too. It allocates the delays and two sorted
// copies of the digests: for the control side.
func MatchSamples(sender, receiver *Sample) (SampleMatch, error) {
	var m SampleMatch
	if sender.overflow > 0 || receiver.overflow > 0 {
		return m, fmt.Errorf("sample full at level %d (%d sender and %d receiver packets not held): not a uniform sample of the interval; raise the capacity",
			SampleMaxLevel, sender.overflow, receiver.overflow)
	}
	m.Threshold = min(sender.thresh, receiver.thresh)
	m.Level = SampleThresholdLevel(m.Threshold)
	m.DigestBits = sampleMaxDigestBits
	for _, x := range []struct {
		p    *Sample
		name string
	}{{sender, "sender"}, {receiver, "receiver"}} {
		if x.p.decoded && x.p.thresh > m.Threshold {
			return m, fmt.Errorf("%w: the %s's decoded sample keeps 1 packet in %.4g, the other end's 1 in %.4g: it cannot be cut to the sparser rate (give the sparser end more capacity)",
				ErrConfigMismatch, x.name, SampleAll/float64(x.p.thresh), SampleAll/float64(m.Threshold))
		}
		if x.p.decoded && len(x.p.ents) > 0 { // an empty one ships no width
			m.DigestBits = min(m.DigestBits, x.p.digestBits)
		}
	}
	mask := uint32(uint64(1)<<m.DigestBits - 1)
	m.StampErrNs = sender.errNs + receiver.errNs
	m.OfferedSent, m.OfferedReceived = sender.offered, receiver.offered
	// dig keeps an end's entries at threshold m.Threshold, sorted by
	// digest then stamp, with their selection bits and flows (the
	// receiver's, when it tracks them).
	type dEntry struct {
		d       uint32 // the digest
		sel     uint32 // the selection bits (0 in a decoded sample)
		ts, flo uint64
	}
	dig := func(p *Sample) []dEntry {
		out := make([]dEntry, 0, len(p.ents))
		for i, e := range p.ents {
			if p.decoded || sampleKept(e.s, m.Threshold) {
				x := dEntry{d: uint32(e.s) & mask, sel: uint32(e.s >> 32), ts: e.ts}
				if p.flows != nil {
					x.flo = p.flows[i]
				}
				out = append(out, x)
			}
		}
		slices.SortFunc(out, func(a, b dEntry) int {
			if c := cmp.Compare(a.d, b.d); c != 0 {
				return c
			}
			return cmp.Compare(a.ts, b.ts)
		})
		return out
	}
	s, r := dig(sender), dig(receiver)
	m.DelaysNs = make([]int64, 0, min(len(s), len(r)))
	flows := receiver.flows != nil && !receiver.decoded
	if flows {
		m.FlowDelays = make([]report.FlowDelay, 0, min(len(s), len(r)))
	}
	run := func(x []dEntry, i int) int { // entries from i sharing x[i]'s digest
		j := i + 1
		for j < len(x) && x[j].d == x[i].d {
			j++
		}
		return j - i
	}
	for i, j := 0, 0; i < len(s) || j < len(r); {
		switch {
		case j == len(r) || (i < len(s) && s[i].d < r[j].d):
			a := run(s, i)
			if a == 1 {
				m.Sent++
				m.Lost++
			} else {
				m.AmbiguousSent += uint64(a)
			}
			i += a
		case i == len(s) || r[j].d < s[i].d:
			b := run(r, j)
			m.Extra += uint64(b)
			j += b
		default:
			a, b := run(s, i), run(r, j)
			if a == 1 && b == 1 {
				m.Sent++
				m.Received++
				d := int64(r[j].ts - s[i].ts)
				m.DelaysNs = append(m.DelaysNs, d)
				if flows {
					m.FlowDelays = append(m.FlowDelays, report.FlowDelay{FlowHash: r[j].flo, Select: r[j].sel, DelayNs: d})
				}
			} else {
				m.AmbiguousSent += uint64(a)
				m.AmbiguousReceived += uint64(b)
			}
			i += a
			j += b
		}
	}
	slices.Sort(m.DelaysNs)
	slices.SortStableFunc(m.FlowDelays, func(a, b report.FlowDelay) int { return cmp.Compare(a.DelayNs, b.DelayNs) })
	return m, nil
}

// SampleQuantiles are the quantiles a sample line reports: p50, p90, p99,
// p99.9.
var SampleQuantiles = []float64{0.5, 0.9, 0.99, 0.999}

// Quantile is one delay quantile estimated from a sample with a
// distribution-free confidence interval.
type Quantile struct {
	P float64 // the quantile's probability, e.g. 0.99
	// Valid: the sample bounds the quantile at the confidence asked. Not
	// valid: Reason says why and the numbers are zero.
	Valid  bool
	Reason string
	// EstimateNs is the sample's ⌈nP⌉-th smallest delay; LoNs and HiNs the
	// LoRank-th and HiRank-th smallest (1-based), widened by the stamps'
	// uncertainty: the true quantile lies in [LoNs, HiNs] with at least
	// the confidence asked.
	EstimateNs, LoNs, HiNs int64
	LoRank, HiRank         int
}

// QuantileRanks returns the ranks (1-based order statistics) of a
// distribution-free confidence interval of the p-quantile from n
// independent draws: with B ~ Binomial(n, p) the number of draws at or
// below the quantile, lo is the largest rank with P(B ≤ lo−1) ≤ (1−conf)/2
// and hi the smallest with P(B ≥ hi) ≤ (1−conf)/2, so that
// P(X_(lo) ≤ q_p ≤ X_(hi)) ≥ conf for any distribution, continuous or
// not. okLo (okHi) is false when no rank in 1..n is far enough below
// (above): n is too small for that side at this confidence.
func QuantileRanks(n int, p, conf float64) (lo, hi int, okLo, okHi bool) {
	if n < 1 || !(p > 0 && p < 1) || !(conf > 0 && conf < 1) {
		return 0, 0, false, false
	}
	// A tail within 1e-9 of its share counts as within it: exact ties
	// (P(B ≥ 1) = 0.05 for n = 1, p = 0.05, conf = 0.9) must not turn on
	// the last bit of 1 − conf.
	tail := (1 - conf) / 2 * (1 + 1e-9)
	b := newBinom(n, p)
	end := b.start + len(b.pmf) // P(B ≥ end) and P(B < start) are ~0
	// lo−1 is the largest k with P(B ≤ k) ≤ tail; P(B ≤ start−1) ~ 0.
	for k := min(n-1, end-1); k >= max(b.start-1, 0); k-- {
		if b.cdf(k) <= tail {
			lo, okLo = k+1, true
			break
		}
	}
	// hi is the smallest u with P(B ≥ u) = P(B > u−1) ≤ tail; below
	// start that tail is ~1.
	for u := max(b.start, 1); u <= min(n, end); u++ {
		if b.sf(u-1) <= tail {
			hi, okHi = u, true
			break
		}
	}
	return lo, hi, okLo, okHi
}

// binom holds Binomial(n, p)'s probabilities where they are not
// negligible: pmf[i] = P(B = start+i), found by walking out from the mode;
// outside the window every term is below 1e-40 of the mode's, so the CDF
// there is 0 or 1 to within n·1e-40.
type binom struct {
	start int
	pmf   []float64
	// left[i] = P(B ≤ start+i); right[i] = P(B ≥ start+i), each summed
	// from its own tail so that small tails keep their precision.
	left, right []float64
}

func newBinom(n int, p float64) *binom {
	q := 1 - p
	mode := int(math.Floor(float64(n+1) * p))
	mode = min(max(mode, 0), n)
	lg := func(x int) float64 { v, _ := math.Lgamma(float64(x) + 1); return v }
	logAt := func(k int) float64 {
		return lg(n) - lg(k) - lg(n-k) + float64(k)*math.Log(p) + float64(n-k)*math.Log(q)
	}
	pm := math.Exp(logAt(mode))
	const negligible = 1e-40
	var down []float64 // pmf(mode−1), pmf(mode−2), …
	for k, v := mode, pm; k > 0; k-- {
		v *= float64(k) / float64(n-k+1) * q / p // pmf(k−1) from pmf(k)
		if v < pm*negligible {
			break
		}
		down = append(down, v)
	}
	var up []float64 // pmf(mode+1), …
	for k, v := mode, pm; k < n; k++ {
		v *= float64(n-k) / float64(k+1) * p / q // pmf(k+1) from pmf(k)
		if v < pm*negligible {
			break
		}
		up = append(up, v)
	}
	b := &binom{start: mode - len(down)}
	for i := len(down) - 1; i >= 0; i-- {
		b.pmf = append(b.pmf, down[i])
	}
	b.pmf = append(b.pmf, pm)
	b.pmf = append(b.pmf, up...)
	b.left = make([]float64, len(b.pmf))
	b.right = make([]float64, len(b.pmf))
	var acc float64
	for i, v := range b.pmf {
		acc += v
		b.left[i] = acc
	}
	acc = 0
	for i := len(b.pmf) - 1; i >= 0; i-- {
		acc += b.pmf[i]
		b.right[i] = acc
	}
	return b
}

// cdf is P(B ≤ k).
func (b *binom) cdf(k int) float64 {
	switch i := k - b.start; {
	case i < 0:
		return 0
	case i >= len(b.pmf):
		return 1
	default:
		return min(b.left[i], 1)
	}
}

// sf is P(B > k).
func (b *binom) sf(k int) float64 {
	switch i := k + 1 - b.start; {
	case i <= 0:
		return 1
	case i >= len(b.pmf):
		return 0
	default:
		return min(b.right[i], 1)
	}
}

// MinSamplesFor is the smallest sample that bounds the p-quantile on both
// sides at conf (QuantileRanks finds both ranks): P(B = 0) and P(B = n)
// both at most (1−conf)/2.
func MinSamplesFor(p, conf float64) int {
	tail := (1 - conf) / 2
	worst := max(p, 1-p) // the side that runs out first
	return int(math.Ceil(math.Log(tail) / math.Log(worst)))
}

// EstimateQuantiles estimates each probability in ps from the ascending
// delays of a sample (SampleMatch.DelaysNs) with its distribution-free
// confidence interval at conf, widened by errNs at both ends (the stamps'
// uncertainty). A quantile the sample cannot bound is not valid and says
// how many samples it needs.
//
// The ranks assume independent draws from the delays' distribution. A
// trajectory sample is a uniform random subset of a finite interval's
// packets (drawn without replacement), whose count below a quantile is
// hypergeometric rather than binomial and less spread out, so the
// intervals are if anything conservative there (TestSampleCoverage
// measures it).
func EstimateQuantiles(delays []int64, ps []float64, conf float64, errNs uint64) []Quantile {
	n := len(delays)
	out := make([]Quantile, len(ps))
	e := int64(min(errNs, math.MaxInt64/4))
	for i, p := range ps {
		q := &out[i]
		q.P = p
		if n == 0 {
			q.Reason = "no delay sampled"
			continue
		}
		lo, hi, okLo, okHi := QuantileRanks(n, p, conf)
		if !okLo || !okHi {
			q.Reason = fmt.Sprintf("%d samples cannot bound p%s at %g (%d needed)", n, PercentileName(p), conf, MinSamplesFor(p, conf))
			continue
		}
		k := QuantileRank(n, p)
		q.Valid = true
		q.LoRank, q.HiRank = lo, hi
		q.EstimateNs = delays[k-1]
		q.LoNs, q.HiNs = delays[lo-1]-e, delays[hi-1]+e
	}
	return out
}

// QuantileRank is the rank (1-based) of the p-quantile's estimate among n
// values: ⌈np⌉, at least 1 (a product within 1e-9 of an integer is that
// integer: 0.9 × 1000 is 900, not the float's 900.0000000000001).
func QuantileRank(n int, p float64) int {
	k := int(math.Ceil(float64(n)*p - 1e-9))
	return min(max(k, 1), n)
}

// PercentileName renders p as a percentile without trailing zeros: 0.5
// "50", 0.999 "99.9".
func PercentileName(p float64) string {
	return fmt.Sprint(math.Round(p*1e6) / 1e4)
}
