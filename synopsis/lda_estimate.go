package synopsis

import (
	"fmt"
	"math"
	"math/bits"
	"strings"

	"github.com/ldafwd/ldafwd/report"
)

// DefaultConfidence is the confidence level of MeanCINs when the caller
// passes 0 (the ToN paper's 98 %).
const DefaultConfidence = 0.98

// ldaMinStddevRows is the fewest usable collapsed rows behind a std-dev
// estimate. Eq. 5 averages one squared ±1-signed sum per collapsed row;
// with fewer rows its variance is so large that the derived confidence
// bound would be a guess.
const ldaMinStddevRows = 4

// ldaStddevWeightK is K in the collapsed-row weight c/(c+K) of the
// std-dev estimator: (κ−3)/2 for a delay kurtosis κ ≈ 19 (Weibull with
// shape ≈ 0.7, the paper's delay model; exponential is 9 → 3). Any K keeps
// the estimator unbiased; it only moves its variance.
const ldaStddevWeightK = 8

// LDADiagnostics says why buckets were not used (beyond Estimate's
// UsableBuckets/TotalBuckets).
type LDADiagnostics struct {
	EmptyBuckets       int // both sides counted 0 packets (neither usable nor lost)
	CountMismatch      int // counts differ: a loss (or reorder) hit the bucket
	DigestMismatch     int // counts equal, digests differ (packet sets differ: as many extra packets as lost ones)
	ImplausibleBuckets int // compact encoding only: delay sum outside the stated bounds
	// BelowMinBuckets are the ImplausibleBuckets whose sum lies below the
	// minimum (delays under --min-delay: the receiver's clock behind the
	// sender's by more than it allows); the others lie above the maximum.
	BelowMinBuckets int
	UsableRowPairs  int // collapsed rows (2i, 2i+1) behind the std-dev

	// ExtraBuckets are buckets (cover buckets included) that prove the
	// receiver recorded packets the sender did not: more packets at the
	// receiver, or equal counts with different digests. ExtraMin is a
	// lower bound on those packets (receiver − sender count, or 1 per
	// digest mismatch). Extras in a bucket that lost more packets than it
	// gained are invisible: ExtraMin is a lower bound, and 0 does not
	// prove there were none (docs/lda.md, "Integrity").
	ExtraBuckets int
	ExtraMin     uint64
	// ExtraMissProb is the probability that one more packet only the
	// receiver recorded would have gone unseen: the share of the hash
	// space whose bucket lost at least two packets more than it gained
	// (an extra packet there leaves the receiver's count below the
	// sender's, which looks like loss). It is what a valid line's loss
	// count rests on: with no extra packet detected, each one that exists
	// hid with this probability. 0 without loss.
	ExtraMissProb float64
	// MinMeanNs and MaxMeanNs are the smallest and largest delay mean
	// (ns) of the usable buckets, 0 when none is usable: the range of
	// delays the interval showed. Every bucket mean lies within the range
	// of the packets' delays, and the sparsely sampled banks' buckets hold
	// a packet or two each, so this approaches the range of the delays
	// themselves (a lower bound on it: the extremes of unsampled packets
	// are not seen). The appliance widens the delay range its per-flow
	// bounds assume by it (docs/lda.md, "Delay ranges").
	MinMeanNs, MaxMeanNs float64
	// PureExtras: buckets with exactly one packet more at the receiver
	// whose digest difference decodes (DigestMixInverse) to an identity
	// that hashes to that very bucket: most likely exactly one extra
	// packet and no loss. Full sender encoding only (a compact one carries
	// too few digest bits to decode).
	PureExtras int
}

// noteExtra records what one bucket pair says about extra packets: sc and
// rc are the sender's and the receiver's counts, digDiffer whether their
// digests (as far as compared) differ.
func (d *LDADiagnostics) noteExtra(sc, rc uint64, digDiffer bool, mass float64) {
	if sc >= rc+2 {
		d.ExtraMissProb += mass
	}
	switch {
	case rc > sc:
		d.ExtraBuckets++
		d.ExtraMin += rc - sc
	case rc == sc && sc > 0 && digDiffer:
		d.ExtraBuckets++
		d.ExtraMin++
	}
}

// bucketMass is, per cell (banks, then cover buckets), the probability
// that a random packet identity lands in it.
func (c *LDAConfig) bucketMass() []float64 {
	m := make([]float64, c.TotalRows()+c.coverRows())
	offs := make([]int, len(c.Banks))
	off := 0
	for i, b := range c.Banks {
		offs[i] = off
		off += b.Rows
	}
	bankMass := make([]float64, len(c.Banks))
	cover := 0.0
	for lz := 0; lz <= 64; lz++ {
		p := math.Ldexp(1, -min(lz+1, 64)) // P(leading zeros = lz)
		best := -1
		for i, b := range c.Banks {
			if int(b.SampleLog2) <= lz && (best < 0 || b.SampleLog2 > c.Banks[best].SampleLog2) {
				best = i
			}
		}
		if best >= 0 {
			bankMass[best] += p
		} else {
			cover += p
		}
	}
	for i, b := range c.Banks {
		for r := 0; r < b.Rows; r++ {
			m[offs[i]+r] = bankMass[i] / float64(b.Rows)
		}
	}
	for r := c.TotalRows(); r < len(m); r++ {
		m[r] = cover / float64(len(m)-c.TotalRows())
	}
	return m
}

// cellOf returns the cell index identity h lands in under l's
// configuration (the same as Add), or −1 for a zero-value LDA.
func (l *LDA) cellOf(h uint64) int {
	s := l.sel[bits.LeadingZeros64(h)]
	if s.mask == 0 {
		return -1
	}
	return int(s.off + uint32(h)&s.mask)
}

// ldaBucketPair is one bucket seen from both ends.
type ldaBucketPair struct {
	usable bool   // both ends agree (count, digest); empty buckets agree too
	count  uint64 // packets (equal at both ends when usable)
	delay  uint64 // T_B − T_A, wrap-around: the exact sum of the bucket's delays as int64
}

// EstimateLDA combines the sender's and the receiver's LDA of one interval
// into mean delay, std-dev, loss and their quality (ToN paper Sec. III-D,
// III-E). conf is the confidence level of MeanCINs in (0,1); 0 means
// DefaultConfidence. It returns an error only when the configurations
// differ (wrapping ErrConfigMismatch); every other problem gives
// Valid=false with a Reason.
func EstimateLDA(sender, receiver *LDA, conf float64) (Estimate, error) {
	e, _, err := EstimateLDADetailed(sender, receiver, conf)
	return e, err
}

// EstimateLDADetailed is EstimateLDA plus the bucket diagnostics.
func EstimateLDADetailed(sender, receiver *LDA, conf float64) (Estimate, LDADiagnostics, error) {
	if !sender.cfg.equal(receiver.cfg) {
		return Estimate{Synopsis: "lda"}, LDADiagnostics{}, fmt.Errorf("%w: LDA sender %v, receiver %v", ErrConfigMismatch, sender.cfg, receiver.cfg)
	}
	var d LDADiagnostics
	n := receiver.cfg.TotalRows()
	pairs := make([]ldaBucketPair, n)
	mass := receiver.cfg.bucketMass()
	for i := range receiver.cells {
		a, b := sender.cells[i], receiver.cells[i]
		d.noteExtra(a.count, b.count, a.dig != b.dig, mass[i])
		if b.count == a.count+1 && receiver.cellOf(DigestMixInverse(b.dig-a.dig)) == i {
			d.PureExtras++
		}
		if i >= n {
			continue // cover bucket: integrity only
		}
		switch {
		case a.count != b.count:
			d.CountMismatch++
		case a.count == 0:
			d.EmptyBuckets++
			pairs[i].usable = true // agrees (nothing on either side): a collapsed row may still use its twin
		case a.dig != b.dig:
			d.DigestMismatch++
		default:
			pairs[i] = ldaBucketPair{usable: true, count: a.count, delay: b.sum - a.sum}
		}
	}
	e := ldaEstimate(&receiver.cfg, pairs, sender.offered, receiver.offered, conf, 0, &d)
	return e, d, nil
}

// ldaEstimate is the estimator proper, shared by the full and the compact
// sender encodings. pairs is indexed like LDA.cells. meanErrNs is a
// deterministic bound on the error of the bucket delay sums per packet
// (the compact encoding's rounding), added to MeanCINs.
func ldaEstimate(cfg *LDAConfig, pairs []ldaBucketPair, sent, received uint64, conf, meanErrNs float64, d *LDADiagnostics) Estimate {
	e := Estimate{Synopsis: "lda", Sent: sent, Received: received, TotalBuckets: len(pairs),
		Extra: d.ExtraMin, ExtraBuckets: d.ExtraBuckets, ExtraMissProb: d.ExtraMissProb}
	if sent >= received {
		e.Lost = sent - received
	}
	if conf == 0 {
		conf = DefaultConfidence
	}
	e.Conf = conf

	// Mean (Sec. III-D): D = (T_B − T_A)/S over usable buckets. The sum of
	// differences is taken in uint64 (wrap-around) and only then read as
	// int64: exact while the true delay sum fits in 63 bits.
	var sumDelay, s uint64
	for _, p := range pairs {
		if p.usable && p.count > 0 {
			m := float64(int64(p.delay)) / float64(p.count)
			if e.UsableBuckets == 0 {
				d.MinMeanNs, d.MaxMeanNs = m, m
			}
			d.MinMeanNs, d.MaxMeanNs = min(d.MinMeanNs, m), max(d.MaxMeanNs, m)
			e.UsableBuckets++
			sumDelay += p.delay
			s += p.count
		}
	}
	e.Samples = s
	if s > 0 {
		e.MeanNs = float64(int64(sumDelay)) / float64(s)
	}

	// Std-dev (Sec. III-E): collapse rows 2i and 2i+1 of each bank, the
	// lowest row bit being the ±1 sign s_x. Departures from the paper:
	//  1. A collapsed row is usable when both of its rows agree (equal
	//     counts, one of them possibly 0) and it is not empty (the paper
	//     asks only for equal summed counts). Without reordering the two
	//     are the same, and it lets the compact encoding, which only
	//     reconstructs agreeing buckets, share this code.
	//  2. Eq. 5 is applied to centered values: Y = Σ s_x (w_x − D) =
	//     (d_odd − D·c_odd) − (d_even − D·c_even), and σ² = ΣY²/S̃.
	//     E[Y²] = Σ (w_x − μ)² (cross terms vanish as in eq. 4), so this is
	//     eq. 5 with eq. 3 (σ² = F − μ²; eq. 3 as printed is garbled) with the
	//     μ² subtracted inside the square instead of after it. The paper's
	//     F − μ² cancels catastrophically when μ ≫ σ (a long but steady
	//     path); the centered form does not. lda_test.go pins both.
	//  3. Each collapsed row i gives an unbiased Y_i²/c̃_i of σ². Eq. 5
	//     weights them by c̃_i, so with banks of very different rates the
	//     few rows of the busiest bank dominate (64 rows → ±9 % σ even
	//     without loss). Var(Y²/c) = 2σ⁴ + (κ−3)σ⁴/c (κ: kurtosis), so the
	//     weight c/(c+K), K ≈ (κ−3)/2, is near optimal: ∝ c for small c as
	//     in eq. 5, equal for large c. K = ldaStddevWeightK.
	var sumY2, sumW float64
	var sTilde uint64
	off := 0
	for _, b := range cfg.Banks {
		for r := 0; r+1 < b.Rows; r += 2 {
			pe, po := pairs[off+r], pairs[off+r+1]
			if !pe.usable || !po.usable || pe.count+po.count == 0 {
				continue
			}
			y := (float64(int64(po.delay)) - e.MeanNs*float64(po.count)) -
				(float64(int64(pe.delay)) - e.MeanNs*float64(pe.count))
			c := float64(pe.count + po.count)
			sumY2 += y * y / (c + ldaStddevWeightK) // weight c/(c+K) times Y²/c
			sumW += c / (c + ldaStddevWeightK)
			sTilde += pe.count + po.count
			d.UsableRowPairs++
		}
		off += b.Rows
	}
	e.StddevSamples = sTilde
	if sTilde > 0 {
		e.StddevNs = math.Sqrt(sumY2 / sumW)
	}
	confOK := conf > 0 && conf < 1
	if !confOK {
		e.Conf = 0 // keep every float finite (reports are JSON); Reason names the bad value
	}
	if s > 0 && e.StddevNs > 0 && confOK {
		// Eq. 1 solved for the half-width εμ at confidence conf:
		// 2·exp(−ε²Sμ²/2σ²) = 1−conf  ⇒  εμ = σ·sqrt(2·ln(2/(1−conf))/S).
		e.MeanCINs = e.StddevNs * math.Sqrt(2*math.Log(2/(1-conf))/float64(s))
	}
	e.MeanCINs += meanErrNs

	switch {
	case !confOK:
		e.Reason, e.Code = fmt.Sprintf("confidence %v not in (0,1)", conf), report.Decode
	case received > sent:
		e.Reason, e.Code = fmt.Sprintf("receiver recorded %d packets, sender %d: reordering across the interval boundary or duplication", received, sent), report.ExtrasUnchecked
	case d.ExtraMin > 0:
		e.Reason, e.Code = ExtraReason(d.ExtraMin, d.ExtraBuckets), report.ExtrasUnchecked
	case d.ImplausibleBuckets > 0:
		e.Reason, e.Code = boundsReason(d.ImplausibleBuckets-d.BelowMinBuckets, d.BelowMinBuckets), report.DelayAboveMax
		if d.BelowMinBuckets > 0 {
			e.Code = report.DelayBelowMin // the clock's cause leads
		}
	case s == 0 && sent == 0:
		e.Reason, e.Code = "no packets in the interval", report.NoPackets
	case s == 0:
		e.Reason, e.Code = fmt.Sprintf("no usable bucket (%d of %d buckets hit by loss): loss too high for this LDA configuration", d.CountMismatch, len(pairs)), report.FewSamples
	case d.UsableRowPairs < ldaMinStddevRows:
		e.Reason, e.Code = fmt.Sprintf("only %d usable collapsed rows, need %d for a std-dev and confidence bound", d.UsableRowPairs, ldaMinStddevRows), report.FewSamples
	default:
		e.Valid = true
	}
	e.OnlyExtras = !e.Valid && confOK && cfg.Digest && (received > sent || d.ExtraMin > 0) &&
		d.ImplausibleBuckets == 0 && s > 0 && d.UsableRowPairs >= ldaMinStddevRows
	if e.OnlyExtras {
		// Every delay check passed: the extras leave the loss unknown,
		// not the delay. Otherwise the checks after the extras' did not
		// run (ExtrasUnchecked).
		e.Code = report.Extras
	}
	return e
}

// ExtraReason is the Reason of an estimate whose buckets prove that the
// receiver recorded at least extraMin packets (in extraBuckets buckets)
// that the sender did not record in this class: its loss cannot be counted
// (each extra packet hides one lost one from Sent − Received).
func ExtraReason(extraMin uint64, extraBuckets int) string {
	return fmt.Sprintf("receiver saw ≥%d packets (in %d buckets) the sender did not record in this class: duplicated, injected or remarked inside the segment, or reordered across the interval boundary; loss cannot be counted", extraMin, extraBuckets)
}

// ReasonDelayAboveMax and ReasonDelayBelowMin start the reasons of an
// interval whose delays crossed the compact encoding's bounds; the
// appliance's clock check looks for the second.
const (
	ReasonDelayAboveMax = "delays above --max-delay"
	ReasonDelayBelowMin = "delays below --min-delay"
)

// boundsReason names the bound the violating buckets crossed: above the
// maximum (raise --max-delay), below the minimum (the receiver's clock is
// behind the sender's by more than --min-delay allows: sync the clocks,
// or lower --min-delay), or both.
func boundsReason(above, below int) string {
	var parts []string
	if below > 0 {
		parts = append(parts, fmt.Sprintf("%s in %d buckets (the receiver's clock is behind the sender's by more than --min-delay allows: sync the clocks, or lower --min-delay)", ReasonDelayBelowMin, below))
	}
	if above > 0 {
		parts = append(parts, fmt.Sprintf("%s in %d buckets (raise --max-delay, or sync the clocks if the receiver's runs ahead)", ReasonDelayAboveMax, above))
	}
	return strings.Join(parts, "; ") + ": their delay sums fall outside the compact encoding's bounds"
}
