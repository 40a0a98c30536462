package appliance

import (
	"math"
	"sort"

	"github.com/ldafwd/ldafwd/report"
	"github.com/ldafwd/ldafwd/synopsis"
)

// Microbursts live (Config.MicroburstGap): every interval's losses whose
// send times are known are grouped into bursts, as `analyze
// --microburst-gap` does offline, and listed in the line's extra
// "microbursts" (report.Microburst). Two sources, one per line:
//
//   - The LDA line: the buckets that lost exactly one packet give its
//     send time, T_A − (T_B − n·d̄) (synopsis.SingleLossTimes, after the
//     Varghese/Kompella slides "Detecting microbursts"), off by the spread
//     of the bucket's n received delays around the mean d̄. The sender
//     ships its LDA compact, with the timestamp sums only modulo a window
//     that grows with the bucket's count and the delay span; a loss is
//     placed only where one time in the window's residue class falls in
//     the interval (synopsis.CompactSingleLossTimes), the others are
//     counted in microburst_losses_unplaced. The line need not be valid
//     (its loss may be unproven yet), only have a mean. Only single-loss buckets
//     speak: a burst that puts several losses in one bucket shows fewer
//     losses than it had.
//   - The RDA line, when its decode and its repair completed (repair.go):
//     the lost identities the RDA decoded and the sender timestamps its
//     reply returned — every lost packet, at its exact send time. Packets the
//     decode names lost that crossed the interval's boundary (arrived
//     after its end, or overtook its start) are not losses and are left
//     out; when they cannot all be named, the line lists no bursts.
//
// Both run on the controller goroutine, off the hot path.

// microburstSource values: where a line's microbursts come from.
const (
	microburstFromLDA = "lda-single-loss-buckets"
	microburstFromRDA = "rda-repair"
)

// microburstSlack widens the interval's span in which a loss time from
// the compact LDA is looked for: the sender lane flips its synopses at
// the first burst after the interval clock moved, so its stamps may lie
// a little outside the nominal span.
func (c *controller) microburstSlack() uint64 {
	return uint64(max(c.a.cfg.Interval/50, 2e6))
}

// ldaMicrobursts lists the microbursts of an LDA line (estimate e, the
// sender's compact copy snd, ours rcv) in its extra.
func (c *controller) ldaMicrobursts(r *report.Interval, e *synopsis.Estimate, snd *synopsis.CompactLDA, rcv *synopsis.LDA, startNs, endNs int64) {
	cfg := &c.a.cfg
	// Not only valid estimates: an LDA alone cannot prove a lossy
	// interval's loss (late packets could hide behind it) until the RDA
	// or the next interval does, after this; the loss times need only a
	// mean delay from usable buckets.
	if cfg.MicroburstGap <= 0 || e.Lost == 0 || e.Samples == 0 || math.IsNaN(e.MeanNs) || math.IsInf(e.MeanNs, 0) {
		return
	}
	slack := c.microburstSlack()
	lo, hi := uint64(startNs)-slack, uint64(endNs)+slack
	losses, unplaced, err := synopsis.CompactSingleLossTimes(nil, snd, rcv, e.MeanNs, lo, hi)
	if err != nil {
		return
	}
	setMicrobursts(r, losses, uint64(cfg.MicroburstGap.Nanoseconds()), cfg.MicroburstMin, microburstFromLDA)
	r.Extra["microburst_losses_unplaced"] = unplaced
	// How far a placed time may be off: the bucket's n received delays'
	// deviations from the mean add up, about √n·σ — for the bucket with
	// the most received packets, with σ the line's own estimate.
	var n uint64
	for _, l := range losses {
		n = max(n, l.Received)
	}
	if !math.IsNaN(e.StddevNs) && !math.IsInf(e.StddevNs, 0) {
		r.Extra["microburst_time_sd_ns"] = math.Sqrt(float64(n)) * e.StddevNs
	}
}

// noteRepairTimes keeps, for the RDA line rp repaired completely, the
// lost packets' send times the reply returned (ids[i] at ts[i] where
// ok[i]); the line's microbursts are found when it goes out, after the
// crossing checks (rdaMicrobursts).
func (c *controller) noteRepairTimes(rp *repair, ts []uint64, ok []bool) {
	if c.a.cfg.MicroburstGap <= 0 {
		return
	}
	rp.lossIDs, rp.lossNs = rp.lossIDs[:0], rp.lossNs[:0]
	for i, v := range ok {
		if v {
			rp.lossIDs = append(rp.lossIDs, rp.ids[i])
			rp.lossNs = append(rp.lossNs, ts[i])
		}
	}
	c.led.noteTimed(rp.r, rp)
}

// rdaMicrobursts lists the microbursts of a repaired RDA line as it goes
// out: the lost packets of rp, the repair that timed them (nil: none),
// without those that crossed the interval's boundary.
func (c *controller) rdaMicrobursts(r *report.Interval, rp *repair) {
	if rp == nil {
		return
	}
	if r.Extra["rda_repair"] != "complete" || r.Extra["rda_decode_complete"] != true {
		return // not every lost packet decoded, or not every one timed
	}
	crossed := map[uint64]bool{}
	if crossedBoundary(r) {
		m := int(rp.key.mec)
		for _, j := range []uint64{rp.key.k + 1, rp.key.k - 1} {
			if ev := c.led.evidenceOf(j); ev != nil && m < len(ev.rda) && ev.rda[m] != nil {
				for _, id := range ev.rda[m].Extra {
					crossed[id] = true
				}
			}
		}
	}
	losses := make([]synopsis.LossTime, 0, len(rp.lossIDs))
	left := 0
	for i, id := range rp.lossIDs {
		if crossed[id] {
			left++
			continue
		}
		losses = append(losses, synopsis.LossTime{SendNs: rp.lossNs[i], ID: id, Estimates: 1})
	}
	n1, _ := r.Extra["crossed"].(int)
	n2, _ := r.Extra["early"].(int)
	if left != n1+n2 {
		return // some crossed packet not named: its "loss" would be listed
	}
	sort.Slice(losses, func(a, b int) bool { return losses[a].SendNs < losses[b].SendNs })
	setMicrobursts(r, losses, uint64(c.a.cfg.MicroburstGap.Nanoseconds()), c.a.cfg.MicroburstMin, microburstFromRDA)
}

// setMicrobursts groups losses (sorted by send time) into the line's
// microbursts.
func setMicrobursts(r *report.Interval, losses []synopsis.LossTime, gapNs uint64, minLosses int, source string) {
	mb := synopsis.DetectMicrobursts(losses, gapNs, minLosses)
	out := make([]report.Microburst, len(mb))
	for i, m := range mb {
		out[i] = report.Microburst{StartNs: m.StartNs, EndNs: m.EndNs, Losses: m.Losses}
	}
	if r.Extra == nil {
		r.Extra = map[string]any{}
	}
	r.Extra["microbursts"] = out
	r.Extra["microburst_source"] = source
	r.Extra["microburst_losses_timed"] = len(losses)
}
