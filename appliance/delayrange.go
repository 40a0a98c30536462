package appliance

import (
	"fmt"
	"math"

	"github.com/ldafwd/ldafwd/synopsis"
)

// Two delay ranges, kept apart (docs/lda.md, "Delay ranges"):
//
//   - The wire range (Config.Bounds, --min-delay/--max-delay, default
//     −10 ms … 1 s): what the compact LDA encoding carries without
//     aliasing. It must hold whatever the path does — the sender cannot
//     know the delays — so it is wide; it costs bits, not precision.
//   - The confidence range of an interval: what a flow's LDS bound (the
//     share of its cells other flows hold, times the spread of delays)
//     and the crossing windows (how long after an End marker a packet
//     that crossed it can arrive) take as the spread of delays. Using the
//     wire range there would widen both a thousandfold. It is the
//     assumed range (Config.Assumed, a LAN segment's −10 µs … 1 ms by
//     default), widened to the range of bucket means the interval's own
//     LDAs showed (synopsis.LDADiagnostics.MinMeanNs/MaxMeanNs): on a
//     quiet segment every bound is what it was with a 1 ms wire range;
//     when a queue builds up, the range follows it instead of the
//     interval going invalid.
//
// Departure from the papers: the LDA paper ships full 40-bit timestamp
// sums and assumes no delay range; the LDS paper states no bound on a
// flow's mean at all. The wire range is this implementation's (the
// compact encoding), and so is the confidence range. The latter is not a
// proof: a bucket mean lies within the delays' range, but a packet no
// sparse bank sampled may lie beyond every bucket mean (the maximum delay
// needs Ω(N) space, LDA paper Sec. II). The sparsely sampled banks hold a
// packet or two per bucket, so on a congested path, where delays move
// with the queue rather than jump packet by packet, the observed range
// comes close to the true one (TestDemoCongestedDefaults checks the flow
// lines against the truth there).

// DelayRange is a range of one-way delays (receiver stamp minus sender
// stamp, clock offset included), ns.
type DelayRange struct {
	MinNs, MaxNs int64
}

// DefaultAssumedDelay is the confidence range before an interval shows a
// wider one: a LAN or data-centre segment (−10 µs of clock offset, 1 ms of
// queueing), the wire range these bounds used to share.
var DefaultAssumedDelay = DelayRange{MinNs: -10_000, MaxNs: 1_000_000}

// WidthNs is MaxNs − MinNs, 0 for an empty range.
func (r DelayRange) WidthNs() uint64 {
	if r.MaxNs <= r.MinNs {
		return 0
	}
	return uint64(r.MaxNs) - uint64(r.MinNs)
}

// Within clamps r into the wire range b: delays beyond it make the
// interval invalid anyway.
func (r DelayRange) Within(b synopsis.CompactBounds) DelayRange {
	r.MinNs = min(max(r.MinNs, b.MinDelayNs), b.MaxDelayNs)
	r.MaxNs = max(min(r.MaxNs, b.MaxDelayNs), r.MinNs)
	return r
}

// wire is the wire range b as a DelayRange.
func wire(b synopsis.CompactBounds) DelayRange {
	return DelayRange{MinNs: b.MinDelayNs, MaxNs: b.MaxDelayNs}
}

// widen returns r widened to hold [lo, hi] (ns, rounded outwards).
func (r DelayRange) widen(lo, hi float64) DelayRange {
	if l := math.Floor(lo); l < float64(r.MinNs) && l >= math.MinInt64 {
		r.MinNs = int64(l)
	}
	if h := math.Ceil(hi); h > float64(r.MaxNs) && h < math.MaxInt64 {
		r.MaxNs = int64(h)
	}
	return r
}

func (r DelayRange) String() string {
	return fmt.Sprintf("%d…%d ns", r.MinNs, r.MaxNs)
}

// delaysSeen gathers the bucket means an interval's LDAs showed, over
// its classes.
type delaysSeen struct {
	lo, hi float64 // ns
	any    bool    // some class had a usable bucket
}

// add takes one class's estimate diagnostics (usable: its usable buckets).
func (s *delaysSeen) add(d *synopsis.LDADiagnostics, usable int) {
	if usable == 0 {
		return
	}
	if !s.any {
		s.lo, s.hi, s.any = d.MinMeanNs, d.MaxMeanNs, true
		return
	}
	s.lo, s.hi = min(s.lo, d.MinMeanNs), max(s.hi, d.MaxMeanNs)
}

// observed is the range of the bucket means seen, rounded outwards (zero
// when none was).
func (s delaysSeen) observed() DelayRange {
	if !s.any {
		return DelayRange{}
	}
	return DelayRange{MinNs: int64(math.Floor(s.lo)), MaxNs: int64(math.Ceil(s.hi))}
}

// rangeOf is an interval's confidence range: assumed, clamped into the
// wire range bounds, widened to the bucket means seen (which the sender's
// wire range held: a usable bucket's mean decoded within it). ok is false
// when no class had a usable bucket: nothing showed the delays.
func (s delaysSeen) rangeOf(assumed DelayRange, bounds synopsis.CompactBounds) (r DelayRange, ok bool) {
	r = assumed.Within(bounds)
	if !s.any {
		return r, false
	}
	return r.widen(s.lo, s.hi), true
}
