package appliance

import (
	"fmt"
	"math"

	"github.com/ldafwd/ldafwd/control"
	"github.com/ldafwd/ldafwd/report"
	"github.com/ldafwd/ldafwd/synopsis"
)

// Loss from the End markers' counts.
//
// A segment that drops a large share of its packets drops synopsis
// fragments too, and a class whose LDA did not arrive has no delay. Its
// loss does not need the synopsis: every sender lane's End marker carries
// the frames it recorded in each class (control.End.Classes), and the
// receiver's copy counts what it recorded in each class between the same
// End markers. sent − received is the class's loss exactly when no packet
// crossed one of the interval's End markers (reordered past it, or
// overtaking it), none was duplicated and none changed class inside the
// segment: the checks the synopses make for a measured line. Without the
// interval's own synopses, the line's loss stands when
//
//   - the receiver recorded no more than the sender in this class;
//   - the intervals before and after it, where the receiver has their
//     counts, recorded no more than their senders in this class (a packet
//     that crossed shows there as an extra one, unless a loss hides it;
//     a neighbour whose End marker was lost in every copy is not
//     checked, as one whose loss hides the packet is not: the order
//     checks below bound both);
//   - no interval in the last orderMemory intervals showed a packet
//     crossing an End marker, a duplicate, extra packets or a class
//     change, and at least orderChecksNeeded(conf) intervals were checked
//     since the receiver started (the segment keeps order, as a queue
//     does);
//   - the receiving port dropped nothing around the interval.
//
// Otherwise the loss is reported with a cause of loss scope (crossing,
// extras, next_missing, prev_missing, receiver_drops). Either way the line
// has no delay (synopsis_lost) and is not valid: loss_valid says whether
// its sent, received and lost are exact.

// orderMemory is how many intervals after the last sign of disorder (a
// crossing, a duplicate, extra packets, a class change) lines measured by
// counts alone are not trusted.
const orderMemory = 64

// orderChecksNeeded is how many intervals the crossing checks must have
// found in order before counts alone are trusted at confidence conf.
//
// A segment that puts a packet across an End marker with probability p
// per interval passes n checks in a row and then crosses the interval
// whose loss rests on counts alone with probability (1−p)^n·p, which is
// largest at p = 1/(n+1), where it is n^n/(n+1)^(n+1) (a little above
// 1/(e·(n+1))). Holding that to 1 − conf, whatever p the segment has,
// takes the smallest such n: 18 intervals at the default 0.98, 36 at 0.99.
// (Each check is taken as seeing a crossing when there is one: a check
// counts only where it ran for every class.) One check let a segment
// reordering 5 % of its packets through: a packet crossed into the next
// interval, whose own loss hid it, and the line said lost 8 where 7 were.
func orderChecksNeeded(conf float64) int {
	if conf <= 0 || conf >= 1 {
		return 1
	}
	n := 1
	for n < 1<<20 && math.Exp(float64(n)*math.Log(float64(n))-float64(n+1)*math.Log(float64(n+1))) > 1-conf {
		n++
	}
	return n
}

// countsUsable says whether rc is exactly one interval's copy whose class
// counts can stand against one interval's End markers.
func countsUsable(rc *rcopy, sent []uint64, m int) bool {
	return rc != nil && sent != nil && m < len(sent) && m < len(rc.lda) &&
		!rc.warmup && !rc.merged && !rc.active && rc.firstK == rc.k
}

// countLine fills r, class m's line whose synopsis is missing (why), from
// the End markers' per-class counts and the receiver's copy. It reports
// false, touching nothing, when the counts cannot stand for the interval:
// the caller reports the line as before. Whether the loss is exact is
// decided with the interval's neighbours (countProof, from decide).
func countLine(r *report.Interval, sent []uint64, rc *rcopy, m int, why report.Cause) bool {
	if !countsUsable(rc, sent, m) {
		return false
	}
	recv := rc.lda[m].Count()
	r.Sent, r.Received = sent[m], recv
	if recv <= sent[m] {
		r.Lost = sent[m] - recv
	}
	if r.Extra == nil {
		r.Extra = map[string]any{}
	}
	r.Extra["loss_from"] = "end_markers"
	r.Invalidate(report.SynopsisLost, why.Why+"; sent, received and lost from the End markers' per-class counts")
	if sent[m] == 0 && recv == 0 {
		// Nothing to measure, as a synopsis line without packets says.
		r.Invalidate(report.NoPackets, "no packets in the interval")
	}
	return true
}

// countProof says why class m's sent − received in interval h, from the
// End markers' counts and the receiver's copy, may not be its loss (nil:
// it is): the receiver recorded more than the sender in this class, in
// another class of the interval (packets changing class) or, bucket by
// bucket where the neighbour's LDA arrived, else in total, in the class
// in a neighbouring interval (a packet that crossed an End marker); the
// segment showed disorder within the last orderMemory intervals or has
// not been checked in order orderChecksNeeded times; the receiving port
// dropped frames around it. edged: the edge check counted the packets
// that crossed either cut (edges.go), so neither the neighbours nor the
// segment's order need to show that none did, and sent − received is
// not the loss there.
func (c *controller) countProof(h *heldInterval, m int, prev, next *evidence, edged bool) []report.Cause {
	ev := &h.ev
	if ev.sent == nil || m >= len(ev.sent) || m >= len(ev.rcv) || ev.rcv[m] == nil {
		return []report.Cause{{Code: report.Crossing, Why: "the End markers carried no per-class counts"}}
	}
	var why []report.Cause
	add := func(code report.Code, format string, args ...any) {
		why = append(why, report.Cause{Code: code, Why: fmt.Sprintf(format, args...)})
	}
	names := c.a.cfg.Classifier.Names()
	if recv, sent := ev.rcv[m].Count(), ev.sent[m]; recv > sent && !edged {
		add(report.Extras, "the receiver recorded %d packets of this class, the sender %d: duplicates, or packets that crossed the interval's boundary or changed class", recv, sent)
	}
	for o, sent := range ev.sent {
		if o != m && o < len(ev.rcv) && ev.rcv[o] != nil && ev.rcv[o].Count() > sent {
			add(report.ClassChange, "the receiver recorded %d packets of class %s in this interval, its sender %d: packets may have changed class inside the segment, this class's loss among them", ev.rcv[o].Count(), names[o], sent)
			break
		}
	}
	for _, n := range []struct {
		ev   *evidence
		code report.Code
		what string
	}{{prev, report.PrevMissing, "previous"}, {next, report.NextMissing, "next"}} {
		switch {
		case edged:
		case n.ev != nil && n.ev.nothing:
			// The receiver recorded nothing after this interval: nothing crossed.
		case n.ev == nil || n.ev.sent == nil || m >= len(n.ev.sent) || m >= len(n.ev.rcv) || n.ev.rcv[m] == nil:
			// The neighbour's counts are missing (every copy of its End
			// marker lost, its copy merged with the next, a restart):
			// nothing to check here. A present neighbour is no stronger
			// where a loss in it can hide the crossed packet, the case
			// the order checks below are sized for: a segment that
			// passed them crosses this interval with probability at
			// most 1 − conf, neighbour or not.
		case m < len(n.ev.snd) && n.ev.snd[m] != nil:
			// Its LDA arrived: a packet of this interval that crossed
			// into it is an extra packet in one of its buckets (hidden
			// only by a loss in the same bucket).
			if e, err := synopsis.EstimateLDACompact(n.ev.snd[m], n.ev.rcv[m], c.a.cfg.Conf); err != nil || e.Extra > 0 {
				add(report.Crossing, "the %s interval's synopsis shows packets its sender did not record in this class: some may be this interval's, crossed", n.what)
			}
		case n.ev.rcv[m].Count() > n.ev.sent[m]:
			add(report.Crossing, "the receiver recorded %d packets of this class in the %s interval, its sender %d: some may be this interval's, crossed", n.ev.rcv[m].Count(), n.what, n.ev.sent[m])
		}
	}
	if doubt := c.order.doubt(h.k, c.a.cfg.Conf); doubt != nil && !edged {
		why = append(why, *doubt)
	}
	if rx := c.drops.around(h.k); rx > 0 {
		add(report.ReceiverDrops, "the receiving appliance's segment port dropped %d frames around this interval (its receive ring was full: the worker fell behind); they would count as the segment's loss", rx)
	}
	return why
}

// countsLoss settles the loss of h's lines from the End markers' counts
// (countProof), once the next interval is known: a line measured by
// counts gets the causes that leave its loss inexact; an LDA line whose
// synopses could not check it for crossings (a neighbour's synopsis lost,
// lossy buckets in both) has those causes answered by the counts when they
// prove the loss, which must then agree with its own.
func (c *controller) countsLoss(h *heldInterval, prev, next *evidence) {
	for i := range h.lines {
		l := &h.lines[i]
		switch {
		case l.flow != nil, l.edged:
		case l.counts:
			for _, why := range c.countProof(h, l.mec, prev, next, false) {
				l.r.Invalidate(why.Code, why.Why)
			}
		case l.e != nil && l.r.Synopsis == "lda" && onlyCrossingDoubt(l.r.Verdict()):
			if len(c.countProof(h, l.mec, prev, next, false)) > 0 || l.mec >= len(h.ev.sent) ||
				l.r.Sent != h.ev.sent[l.mec] || l.r.Received != h.ev.rcv[l.mec].Count() || l.r.Lost != l.r.Sent-min(l.r.Sent, l.r.Received) {
				continue
			}
			l.r.Clear(crossingDoubts...)
			if l.r.Extra == nil {
				l.r.Extra = map[string]any{}
			}
			l.r.Extra["loss_verified_by"] = "end_markers"
		}
	}
}

// crossingDoubts are the causes the End markers' counts can answer: the
// synopses could not tell packets crossing an End marker from losses.
var crossingDoubts = []report.Code{report.NextMissing, report.PrevMissing, report.Crossing}

// onlyCrossingDoubt says whether every cause v holds that leaves the loss
// inexact is a crossing doubt (and there is one).
func onlyCrossingDoubt(v report.Verdict) bool { return onlyDoubts(v, false) }

// orderLog is what the decided intervals showed of the segment's order,
// for the loss from counts (countProof): the last interval with a sign of
// disorder, and how many intervals were checked in order since the
// receiver started. The coordinator hands it each decided interval.
type orderLog struct {
	disorderSeen bool
	lastDisorder uint64
	checks       int
}

// note remembers what decided interval h showed of the segment's order:
// a sign of disorder in any of its lines (packets found crossing an End
// marker, duplicates, extra packets, a class change seen rather than only
// suspected beside a class that could not be decoded), or, where its
// crossing checks ran for every class (inOrder) and found none, one more
// interval checked in order.
func (o *orderLog) note(h *heldInterval, inOrder bool) {
	disorder := false
	for _, l := range h.lines {
		if l.flow != nil {
			continue
		}
		if v := l.r.Verdict(); v.Has(report.Session) || v.Has(report.PeerMismatch) {
			// A copy that spans more or less than the interval (an End
			// marker lost in every copy, a restart) shows the other
			// interval's packets as extras or losses: no sign of the
			// segment's order, and no check of it either.
			return
		}
		if l.e != nil && l.e.Extra > 0 {
			disorder = true
		}
		for _, key := range []string{"crossed", "early", "duplicates"} {
			if n, ok := l.r.Extra[key].(int); ok && n > 0 {
				disorder = true
			}
		}
		v := l.r.Verdict()
		if (v.Has(report.ClassChange) && !l.unseenMove) || v.Has(report.ExtrasUnchecked) || (v.Has(report.Extras) && !l.counts) {
			disorder = true
		}
	}
	switch {
	case disorder:
		o.disorderSeen, o.lastDisorder = true, max(o.lastDisorder, h.k)
	case inOrder:
		o.checks++
	}
}

// doubt says why the segment's order does not let counts alone stand for
// interval k at confidence conf (nil: it does): disorder within the last
// orderMemory intervals, or too few intervals checked in order yet.
func (o *orderLog) doubt(k uint64, conf float64) *report.Cause {
	switch {
	case o.disorderSeen && (o.lastDisorder >= k || k-o.lastDisorder < orderMemory):
		return &report.Cause{Code: report.Crossing, Why: fmt.Sprintf("the segment reordered, duplicated or remarked packets within the last %d intervals (last in interval %d): packets that crossed this interval's End markers could hide behind losses", orderMemory, o.lastDisorder)}
	case o.checks < orderChecksNeeded(conf):
		return &report.Cause{Code: report.Crossing, Why: fmt.Sprintf("too few intervals have been checked for packets crossing their End markers yet (%d of %d): some could hide behind losses", o.checks, orderChecksNeeded(conf))}
	}
	return nil
}

// pairCounts reports an interval whose synopses failed to assemble but
// whose every End marker arrived with per-class counts (f.ClassFrames) as
// a paired one without synopses: one line per class measured by counts,
// held like a paired interval's so that its neighbours check it and it
// checks them. It reports false, doing nothing, where the counts cannot
// stand (another cause: a configuration mismatch or a restart, or a
// receiver copy that is not exactly this interval's).
func (c *controller) pairCounts(f *control.IntervalFailure, rc *rcopy) bool {
	switch f.Reason {
	case control.ReasonFragmentLost, control.ReasonNoHello, control.ReasonEvicted:
	default:
		return false
	}
	if f.ClassFrames == nil || rc == nil || rc.k != f.Interval || len(f.ClassFrames) != len(rc.lda) || !countsUsable(rc, f.ClassFrames, 0) {
		return false
	}
	if !c.claim(f.Interval) {
		c.emitCopy(f.Interval, rc, recut)
		return true
	}
	why := c.failureReason(f)
	n := len(rc.lda)
	c.led.begin(evidence{snd: make([]*synopsis.CompactLDA, n), rcv: rc.lda, rda: make([]*synopsis.RDADecoding, n), own: make([]*synopsis.RDA, n), sent: f.ClassFrames,
		caches: copyCaches(rc), toNs: rc.endNs, session: f.Session})
	for _, l := range c.pr.counts(f, rc, why) {
		c.led.hold(l)
	}
	c.release(f.Interval)
	return true
}
