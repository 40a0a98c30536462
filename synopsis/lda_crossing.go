package synopsis

import (
	"fmt"

	"github.com/ldafwd/ldafwd/report"
)

// LDACrossing is what MatchLDACrossing found between two consecutive
// intervals k and k+1.
type LDACrossing struct {
	// Crossed: packets the sender recorded in interval k that reached the
	// receiver only in interval k+1 (left before End(k), arrived after
	// it). Each looks lost in k and extra in k+1; subtract Crossed from
	// k's Lost. Found bucket by bucket: a bucket of k with exactly one
	// packet fewer at the receiver and the same bucket of k+1 with exactly
	// one more, whose digest differences are equal (FineComb). A crossing
	// packet that shares its bucket with another loss or extra is not
	// found, so Crossed is a lower bound and k's corrected loss an upper
	// bound. Apply handles both cases it cannot resolve: k+1 extras left
	// unexplained, and Hidden buckets where a crossing packet may sit
	// behind k+1's own losses.
	Crossed int
	// Hidden: buckets where k lost packets (not a matched crossing) and
	// k+1 lost some too. A packet of k that arrived in k+1 and fell into
	// such a bucket is invisible there: k+1's bucket then lost two and
	// gained one, which its counts show as one loss. The bucket's digests
	// cannot tell (the compact encoding sends too few bits to decode a
	// difference of several packets), so k's loss is not proven.
	Hidden int
	// SingleLoss: buckets of k with exactly one packet fewer at the
	// receiver; SingleExtra: buckets of k+1 with exactly one more.
	SingleLoss, SingleExtra int
	// AllExtrasCrossed: every bucket of k+1 that proves extra packets is a
	// matched crossing (k+1's extras are exactly the Crossed packets,
	// as far as the buckets show).
	AllExtrasCrossed bool
	// DigestBits compared per bucket (64 for full sender LDAs; the
	// compact encoding's DigestBits otherwise): a false match has
	// probability 2^-DigestBits per pair of candidate buckets.
	DigestBits int
}

// MatchLDACrossing matches the single-loss buckets of interval k (sender
// sk, receiver rk) against the single-extra buckets of interval k+1 (sk1,
// rk1): a packet in flight across the boundary between k and k+1. All
// four must share one configuration with digests on. With full sender
// LDAs the matched digest difference must also decode (DigestMixInverse)
// to an identity that lands in that bucket.
//
// Use: estimate k and k+1 as usual; then x.Apply(&e_k) (and
// x.ApplyFlows for k's LDS flow lines). Interval k+1 keeps its estimate:
// its extras are real packets it received that its sender did not record
// in it.
func MatchLDACrossing(sk, rk, sk1, rk1 *LDA) (LDACrossing, error) {
	for _, l := range []*LDA{rk, sk1, rk1} {
		if !sk.cfg.equal(l.cfg) {
			return LDACrossing{}, fmt.Errorf("%w: LDA crossing: %v vs %v", ErrConfigMismatch, sk.cfg, l.cfg)
		}
	}
	if !sk.cfg.Digest {
		return LDACrossing{}, fmt.Errorf("%w: LDA crossing needs digests", ErrBadConfig)
	}
	sc, sd := ldaCountsDigests(sk)
	sc1, sd1 := ldaCountsDigests(sk1)
	return matchCrossing(sc, sd, rk, sc1, sd1, rk1, 64), nil
}

// MatchLDACompactCrossing is MatchLDACrossing with the senders' LDAs in
// compact form (as the receiving appliance has them). Digest differences
// are compared on the DigestBits the senders sent. Intervals shipped at
// different shapes of one recording configuration are compared folded to
// their common shape (foldToCommon).
func MatchLDACompactCrossing(sk *CompactLDA, rk *LDA, sk1 *CompactLDA, rk1 *LDA) (LDACrossing, error) {
	sk, rk, sk1, rk1, err := foldToCommon(sk, rk, sk1, rk1)
	if err != nil {
		return LDACrossing{}, err
	}
	if !sk.cfg.equal(rk.cfg) || !sk1.cfg.equal(rk.cfg) || !rk1.cfg.equal(rk.cfg) || len(sk.counts) != len(rk.cells) || len(sk1.counts) != len(rk.cells) {
		return LDACrossing{}, fmt.Errorf("%w: LDA crossing: configurations differ", ErrConfigMismatch)
	}
	if sk.digests == nil || sk1.digests == nil || sk.digestBits != sk1.digestBits {
		return LDACrossing{}, fmt.Errorf("%w: LDA crossing needs digests (sent with %d and %d bits)", ErrBadConfig, sk.digestBits, sk1.digestBits)
	}
	return matchCrossing(sk.counts, sk.digests, rk, sk1.counts, sk1.digests, rk1, int(sk.digestBits)), nil
}

func ldaCountsDigests(l *LDA) (counts, digs []uint64) {
	counts = make([]uint64, len(l.cells))
	digs = make([]uint64, len(l.cells))
	for i, c := range l.cells {
		counts[i], digs[i] = c.count, c.dig
	}
	return counts, digs
}

// matchCrossing: sc/sd are the senders' counts and (low bits bits of)
// digests, cell-indexed like rk.cells.
func matchCrossing(sc, sd []uint64, rk *LDA, sc1, sd1 []uint64, rk1 *LDA, bits int) LDACrossing {
	x := LDACrossing{DigestBits: bits, AllExtrasCrossed: true}
	w := uint(bits)
	for i := range rk.cells {
		r, r1 := rk.cells[i], rk1.cells[i]
		loss := sc[i] == r.count+1
		extra := r1.count == sc1[i]+1
		if loss {
			x.SingleLoss++
		}
		if extra {
			x.SingleExtra++
		}
		lossDiff := lowBits(sd[i]-lowBits(r.dig, w), w)
		extraDiff := lowBits(lowBits(r1.dig, w)-sd1[i], w)
		matched := loss && extra && lossDiff == extraDiff && lossDiff != 0
		if matched && bits == 64 && rk.cellOf(DigestMixInverse(lossDiff)) != i {
			matched = false
		}
		if matched {
			x.Crossed++
			continue
		}
		if sc[i] > r.count && sc1[i] > r1.count {
			x.Hidden++
		}
		// Any other bucket of k+1 proving extras leaves them unexplained.
		if r1.count > sc1[i] || (r1.count == sc1[i] && r1.count > 0 && lowBits(r1.dig, w) != sd1[i]) {
			x.AllExtrasCrossed = false
		}
	}
	return x
}

// Apply corrects e, interval k's estimate, for the packets that crossed
// into k+1: Lost less Crossed. When k+1 shows extra packets that no
// single-loss bucket of k explains, some of them may be k's packets that
// crossed unseen (sharing a bucket with another loss), so k's loss cannot
// be proven and e becomes invalid with that reason; likewise when a loss
// of k shares its bucket with losses of k+1 (Hidden), where a crossing
// packet leaves no trace. The RDA, decoding both intervals' differences
// identity by identity, resolves both cases; the appliance prefers it
// when it has it.
func (x LDACrossing) Apply(e *Estimate) {
	x.apply(e, "next", "arrived after its end")
}

// ApplyEarly is Apply for a match made with the intervals' roles turned
// (MatchLDACrossing(sk, rk, sPrev, rPrev): k's single losses against the
// previous interval's single extras): packets of k that overtook k's
// start marker, an End marker the segment held back behind data, and
// reached the receiver in k-1.
func (x LDACrossing) ApplyEarly(e *Estimate) {
	x.apply(e, "previous", "overtook its start marker")
}

// apply is Apply and ApplyEarly: other is the interval matched against
// ("next", "previous"), how what such a packet of this interval did.
func (x LDACrossing) apply(e *Estimate, other, how string) {
	e.Lost -= min(e.Lost, uint64(x.Crossed))
	switch {
	case !e.Valid || e.Lost == 0:
	case !x.AllExtrasCrossed:
		e.Valid, e.Code = false, report.Crossing
		e.Reason = fmt.Sprintf("the %s interval's receiver saw packets its sender did not record that are not this interval's single losses: some of this interval's packets may have %s; loss cannot be counted", other, how)
	case x.Hidden > 0:
		e.Valid, e.Code = false, report.Crossing
		e.Reason = fmt.Sprintf("loss not verifiable: %d of this interval's lossy buckets lost packets in the %s interval too, where a packet of this interval that %s would leave no trace (%s)", x.Hidden, other, how, CrossingRDAAdvice)
	}
}

// CrossingRDAAdvice ends the reason of a loss the LDA's crossing check
// cannot verify: the remedy where the RDA is not recorded. A caller that
// records the RDA, whose decode did not settle this interval, replaces it
// with its own account.
const CrossingRDAAdvice = "the RDA tells them apart: --synopsis all"

// ApplyFlows carries the crossing evidence of a class's LDA over to the
// LDS flow lines of interval k in the same class: a packet that crossed
// into k+1 looks lost in its flow, and the LDA cannot say which flow. When
// packets crossed (or k+1's extras are unexplained), every valid flow line
// with a loss becomes invalid; lines without loss are unaffected (a
// crossing packet would have shown as one).
func (x LDACrossing) ApplyFlows(flows []FlowEstimate) {
	if x.Crossed == 0 && x.AllExtrasCrossed {
		return
	}
	for i := range flows {
		if f := &flows[i]; f.Valid && f.Lost > 0 {
			f.Valid, f.Code = false, report.Crossing
			f.Reason = fmt.Sprintf("%d packets of this interval arrived after its end (found by the LDA; more may be hidden): this flow's loss may include them", x.Crossed)
		}
	}
}

// MatchRDACrossing counts the identities decoded as lost in interval k
// (decK) and as extra in interval k+1 (decK1): packets in flight across
// the boundary. Subtract the count from k's Lost. Exact when both decodes
// are complete.
func MatchRDACrossing(decK, decK1 RDADecoding) int {
	lost := make(map[uint64]struct{}, len(decK.Lost))
	for _, id := range decK.Lost {
		lost[id] = struct{}{}
	}
	n := 0
	for _, id := range decK1.Extra {
		if _, ok := lost[id]; ok {
			n++
		}
	}
	return n
}

// ApplyRDACrossing corrects e, interval k's RDA estimate, for the packets
// that crossed into k+1 (decK and decK1: DecodeRDA of intervals k and
// k+1): Lost less MatchRDACrossing. When k+1's decode is incomplete, some
// of k's "lost" packets may sit undecoded in k+1, so e becomes invalid.
//
// When k's own decode is incomplete, an extra of k+1 that matches none of
// k's decoded losses may be one of k's undecoded ones: e is then invalid
// too, unless every extra of k+1 was matched.
func ApplyRDACrossing(e *Estimate, decK, decK1 RDADecoding) {
	applyRDACrossing(e, decK, decK1,
		"the next interval's RDA decode is incomplete: some of this interval's packets may have arrived after its end; loss cannot be counted",
		"this interval's RDA decode is incomplete and the next interval received packets its sender did not record: some may be this interval's undecoded packets that arrived after its end; loss cannot be counted")
}

// ApplyRDAEarly is ApplyRDACrossing with the roles turned: it corrects e,
// interval k's RDA estimate, for the packets of k that overtook its start
// marker into k−1 (decPrev: DecodeRDA of k−1), with reasons that say so.
func ApplyRDAEarly(e *Estimate, decK, decPrev RDADecoding) {
	applyRDACrossing(e, decK, decPrev,
		"the previous interval's RDA decode is incomplete: some of this interval's packets may have overtaken its start marker; loss cannot be counted",
		"this interval's RDA decode is incomplete and the previous interval received packets its sender did not record: some may be this interval's undecoded packets that overtook its start marker; loss cannot be counted")
}

func applyRDACrossing(e *Estimate, decK, decK1 RDADecoding, whyOther, whyOwn string) {
	n := MatchRDACrossing(decK, decK1)
	e.Lost -= min(e.Lost, uint64(n))
	switch {
	case !e.Valid:
	case !decK1.Complete:
		e.Valid, e.Reason, e.Code = false, whyOther, report.Crossing
	case !decK.Complete && e.Lost > 0 && len(decK1.Extra) > n:
		e.Valid, e.Reason, e.Code = false, whyOwn, report.Crossing
	}
}
