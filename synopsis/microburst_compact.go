package synopsis

import (
	"errors"
	"math"
	"sort"
)

// CompactSingleLossTimes is SingleLossTimes for the live appliance, whose
// receiver has the sender's LDA only in compact form (CompactLDA). The
// compact encoding sends a bucket's timestamp sum T_A only modulo
// W = 2^(v+r) (lda_compact.go: enough for the bucket's delay sum, which
// lies within count·span), so the send time of a bucket's one lost packet,
//
//	a_l = T_A − (T_B − n·d̄),
//
// is known only modulo W. It is placed when exactly one value congruent
// to it lies in [loNs, hiNs] — the span in which the sender recorded the
// interval's packets, with some slack — that is, when W exceeds that span:
// buckets of large counts, or a wide delay span (the sum's window grows
// with both). The others are counted in unplaced and left out: a loss time
// is never guessed among several. A bucket with full 64-bit sums is always
// placed. The error of a placed time is that of SingleLossTimes (the
// bucket's n received delays' spread around d̄, about √n·σ) plus the
// sum's rounding, at most count·MeanResolutionNs.
//
// Each packet of an LDA is in at most one bank, so every single-loss
// bucket is a distinct lost packet; ID is 0 (16 digest bits do not name a
// packet). The result is sorted by SendNs.
func CompactSingleLossTimes(dst []LossTime, sender *CompactLDA, receiver *LDA, meanDelayNs float64, loNs, hiNs uint64) (out []LossTime, unplaced int, err error) {
	if !sender.cfg.equal(receiver.cfg) || len(sender.counts) != len(receiver.cells) {
		return dst, 0, errBucketShape
	}
	if sender.folded {
		return dst, 0, errLDACompactFolded
	}
	if math.IsNaN(meanDelayNs) || math.IsInf(meanDelayNs, 0) {
		return dst, 0, errors.New("synopsis: mean delay must be finite")
	}
	if hiNs < loNs {
		return dst, 0, errors.New("synopsis: loss time range ends before it starts")
	}
	start := len(dst)
	rows := receiver.cfg.TotalRows()
	for i := 0; i < rows; i++ {
		cA, rb := sender.counts[i], receiver.cells[i]
		if cA != rb.count+1 {
			continue
		}
		// Σ send stamps of the received packets, estimated; wrap-around
		// arithmetic as in SingleLossTimes.
		base := rb.sum - uint64(int64(math.Round(float64(rb.count)*meanDelayNs)))
		r, v, _ := ldaSumShape(cA, sender.span, sender.resolution, sender.guard)
		var a uint64
		if v >= 64 {
			a = sender.sums[i] - base
		} else {
			w := uint64(1) << (v + r)
			x := (sender.sums[i]<<r - base) & (w - 1)
			a = loNs + (x-loNs)&(w-1) // the first value ≡ x (mod w) at or after loNs
			if a > hiNs || hiNs-a >= w {
				unplaced++ // none in range, or several
				continue
			}
		}
		dst = append(dst, LossTime{SendNs: a, Estimates: 1, Received: rb.count})
	}
	out = dst[start:]
	sort.Slice(out, func(a, b int) bool { return out[a].SendNs < out[b].SendNs })
	return dst, unplaced, nil
}
