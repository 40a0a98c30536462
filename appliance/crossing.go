package appliance

import (
	"fmt"
	"strings"
	"time"

	"github.com/ldafwd/ldafwd/report"
	"github.com/ldafwd/ldafwd/synopsis"
)

// A packet the segment holds back past the sender's End marker of
// interval k reaches the receiver after it has cut k: the receiver
// records it in k+1. Interval k alone cannot tell it from a loss; k+1's
// synopses can (synopsis.MatchLDACompactCrossing, MatchRDACrossing). So a
// paired interval's lines wait until the next interval is paired, get
// the crossing correction, then the cross-class pass, and go out: one
// interval of added latency. Lines of later intervals reported meanwhile
// (failures, timeouts) wait behind them, so reports stay in interval
// order.
//
// When the next interval's synopses never come (the peer stopped or
// restarted, its control frames were lost, the pair timed out), a line
// with loss is invalid with ReasonNextMissing: its loss may count packets
// that arrived late. A line without loss is kept: a packet that crossed
// would have shown as a loss. At a graceful stop the receiver's copy in
// progress is the next interval's receiver side; the sender recorded
// nothing the receiver can match there, but every packet of it that a
// single loss of k explains is a crossing, and when all are, k's loss is
// exact (decideAtStop).

// ReasonNextMissing is the reason of a line with loss whose next interval
// could not be checked for packets that arrived after the interval's end.
const ReasonNextMissing = "next interval missing: packets reordered past the interval's end could not be told from losses"

var nextMissing = report.Cause{Code: report.NextMissing, Why: ReasonNextMissing}

// evidence is what one paired interval offers to the crossing check of
// the interval before it (and needs from the one after it), per MEC: the
// sender's compact LDA (nil where it did not decode or match), the
// receiver's LDA and the RDA decode (nil without).
type evidence struct {
	snd []*synopsis.CompactLDA
	rcv []*synopsis.LDA
	rda []*synopsis.RDADecoding
	// sent: the sender's frames per MEC from the End markers
	// (IntervalBundle.ClassFrames), nil where they carried none.
	sent []uint64
	// own: the receiver's RDA per MEC in the shape decoded (with its
	// timestamp cache), for the delays of packets that crossed into a
	// neighbouring interval (crossedInto); nil where not paired.
	own []*synopsis.RDA
	// senderless: the receiver's copy in progress at stop, matched
	// against an empty sender: unmatched packets there may be the
	// sender's next interval, not k's.
	senderless bool
	// nothing: the receiver recorded nothing after the interval's End
	// marker until it stopped: nothing crossed.
	nothing bool
	// span: a receiver copy holding the next two intervals (an End marker
	// lost), matched by no sender side (spanEvidence).
	span *spanCopy
	// delay: the interval's confidence range (confidenceRange); zero
	// where it did not pair (warm-up, span evidence of its own).
	delay DelayRange
	// caches: the receiver copy's timestamp caches per class (nil without
	// the RDA), toNs its end cut, for the edge check of the cut after it;
	// edges: what the edge check of the cut before it found (edges.go).
	caches []*synopsis.TSCache
	toNs   uint64
	edges  []*edgeCount
	// session: the sender's, whose caches the edge check asks.
	session uint64
	// seen: the range of the bucket means the interval's LDAs showed
	// (zero: none), the edge check's measure of the delays' spread.
	seen DelayRange
}

// rdaUnsettled replaces synopsis.CrossingRDAAdvice in an LDA line's
// reason when the appliance records the RDA: its decode would tell the
// crossing packets from losses, and this interval's rda line says why it
// did not here (left out by the control budget, a fragment lost, too many
// differences to decode).
const rdaUnsettled = "the RDA tells them apart; this interval's rda line says why it did not"

// windowNs is how far from an End marker a packet of this interval that
// crossed it can arrive: the spread of its delays, the confidence range's
// width (the wire range's where none is known).
func (ev *evidence) windowNs(b synopsis.CompactBounds) uint64 {
	if w := ev.delay.WidthNs(); w > 0 {
		return w
	}
	return wire(b).WidthNs()
}

// heldInterval is a paired interval's lines waiting for the next
// interval's evidence.
type heldInterval struct {
	k       uint64
	lines   []heldLine
	ev      evidence
	at      time.Time
	decided bool // the crossing check is done: the lines may go out
}

// overdue decides the intervals that waited longer than the next one can
// take to pair: they go out with ReasonNextMissing where they have loss.
func (c *controller) overdue(now time.Time) {
	limit := c.a.cfg.PairTimeout + c.a.cfg.Interval
	late := false
	for _, k := range c.led.waitingKeys() {
		if c.spanWaiting(k) {
			continue // decided at its edge check's reply or deadline (spanTick)
		}
		if h := c.led.undecided(k); h != nil && now.Sub(h.at) > limit {
			c.decide(h, nil)
			late = true
		}
	}
	if late {
		c.flush()
	}
}

// decide applies the next interval's evidence (nil: it will not come)
// to h's lines: the crossing checks (checkCrossings), then the checks
// across lines and intervals — the repaired RDA lines' crossed packets,
// the receiver port's drops, the class changes, the segment's order, the
// counts' proof, the sample's loss.
func (c *controller) decide(h *heldInterval, next *evidence) {
	h.decided = true
	prev := c.led.evidenceOf(h.k - 1)
	inOrder := h.checkCrossings(prev, next, &c.a.cfg)
	c.crossedInto(h)
	c.receiverDropped(h)
	c.classChanges(h, prev, next)
	if c.edgeLosses(h, prev, next) {
		inOrder = false
	}
	c.order.note(h, inOrder)
	c.countsLoss(h, prev, next)
	c.sampleLoss(h) // sample.go
}

// checkCrossings corrects each of h's lines for the packets that crossed
// the interval's End markers, with the evidence of the intervals before
// (prev) and after it (next; nil: it will not come), or marks the line
// whose correction cannot be made. It reads and changes h's lines alone,
// and says whether the interval was checked in order: every class's
// crossing check ran and found nothing crossed.
func (h *heldInterval) checkCrossings(prev, next *evidence, cfg *Config) (inOrder bool) {
	win := h.ev.windowNs(cfg.Bounds)
	classes := len(h.ev.rcv)
	known := make([]bool, classes)
	xs := make([]synopsis.LDACrossing, classes)
	why := make([]report.Cause, classes)
	for m := 0; m < classes; m++ {
		known[m], xs[m], why[m] = h.ldaCrossing(m, next)
	}
	all := synopsis.LDACrossing{AllExtrasCrossed: true}
	allKnown := true
	for m := range xs {
		all.Crossed += xs[m].Crossed
		all.AllExtrasCrossed = all.AllExtrasCrossed && xs[m].AllExtrasCrossed
		allKnown = allKnown && known[m]
	}
	for i := range h.lines {
		l := &h.lines[i]
		switch {
		case l.counts:
			// Settled by countsLoss below.
		case l.flow != nil:
			// The LDS holds every class: any class's crossing may be in a flow.
			if !allKnown {
				missing(l.r, nil, nextMissing)
				continue
			}
			// Checked while the flow's loss is still known (a line
			// invalid for its delay alone included).
			fs := []synopsis.FlowEstimate{*l.flow}
			fs[0].Valid = l.r.LossValid
			all.ApplyFlows(fs)
			if l.r.LossValid && !fs[0].Valid {
				l.r.Invalidate(fs[0].Code, fs[0].Reason)
			}
		case l.e == nil || l.mec >= classes:
		case l.r.Synopsis == "lda":
			if l.e.OnlyExtras && l.r.Verdict().Has(report.Extras) {
				// Invalid for packets the receiver recorded that the
				// sender did not (its delay passed every check): that
				// cause goes when the RDA names each of them (a
				// neighbour's packet that crossed the boundary, or the
				// segment's second copy of a packet) and k's loss. Any
				// other cause of the line stays.
				if lost, crossed, dups, ok := h.rdaExtras(l.mec, prev, next, l.e, win); ok {
					noteCrossed(l.r, crossed)
					recv := l.e.Sent - lost
					p := linePatch{received: &recv, lost: &lost, lift: report.Extras, set: map[string]any{"loss_verified_by": "rda"}}
					if dups > 0 {
						p.set["duplicates"] = dups
					}
					p.apply(l.r, l.e)
				}
				continue
			}
			if l.e.Lost == 0 {
				// A packet that crossed would show here as a loss (or as
				// an extra, which invalidates the line already).
				continue
			}
			if lost, crossed, ok := h.rdaLoss(l.mec, prev, next, l.e, win); ok {
				// The RDA decoded both intervals' differences identity by
				// identity: k's loss is exact, crossings and extras hidden
				// in the LDA's lossy buckets included.
				noteCrossed(l.r, crossed)
				p := linePatch{lost: &lost, set: map[string]any{"loss_verified_by": "rda"}}
				p.apply(l.r, l.e)
				continue
			}
			x := xs[l.mec]
			noteCrossed(l.r, x.Crossed)
			if known[l.mec] {
				saved := lossOpen(l.e)
				wasValid := l.e.Valid
				x.Apply(l.e)
				if b, why := h.ldaEarly(l.mec, prev); why.Code != 0 {
					missing(l.r, l.e, why)
				} else {
					b.ApplyEarly(l.e)
					noteEarly(l.r, b.Crossed)
				}
				if l.e.Valid && l.e.Lost > 0 {
					if why := h.movedAcross(l.mec, prev, known, xs, cfg.Classifier.Names()); why != "" {
						l.e.Valid, l.e.Code, l.e.Reason = false, report.Crossing, why
					}
				}
				// Without the RDA's decode, an extra packet (a duplicate,
				// an injected frame) hidden in a bucket that lost two or
				// more would leave the loss short: the line stands only
				// while that is no likelier than its mean's miss.
				l.e.RequireLossVerified(1 - cfg.Conf)
				if cfg.Syn.RDA != nil {
					// The RDA is recorded but did not settle this
					// interval (rdaLoss above): not "--synopsis all".
					l.e.Reason = strings.Replace(l.e.Reason, synopsis.CrossingRDAAdvice, rdaUnsettled, 1)
				}
				carry(l.r, l.e, wasValid)
				lossClose(l.e, saved)
				continue
			}
			lost := l.e.Lost - min(l.e.Lost, uint64(x.Crossed))
			p := linePatch{lost: &lost}
			p.apply(l.r, l.e)
			missing(l.r, l.e, why[l.mec])
		case l.r.Synopsis == "rda":
			if l.e.Lost == 0 {
				continue
			}
			if next != nil && next.nothing {
				continue
			}
			dk := h.ev.rda[l.mec]
			var dk1 *synopsis.RDADecoding
			if next != nil && l.mec < len(next.rda) {
				dk1 = next.rda[l.mec]
			}
			saved := lossOpen(l.e)
			wasValid := l.e.Valid
			switch crossed, ok := bySpan(dk, l.mec, next, false, win); {
			case dk != nil && dk1 != nil:
				noteCrossed(l.r, synopsis.MatchRDACrossing(*dk, *dk1))
				synopsis.ApplyRDACrossing(l.e, *dk, *dk1)
			case ok:
				noteCrossed(l.r, crossed)
				l.e.Lost -= min(l.e.Lost, uint64(crossed))
			default:
				missing(l.r, l.e, nextMissing)
				lossClose(l.e, saved)
				continue
			}
			if l.e.Lost > 0 {
				var dp *synopsis.RDADecoding
				if prev != nil && l.mec < len(prev.rda) {
					dp = prev.rda[l.mec]
				}
				if early, ok := bySpan(dk, l.mec, prev, true, win); ok {
					// The previous interval's receiver copy also held the
					// one before it (a lost End marker): its cache tells.
					noteEarly(l.r, early)
					l.e.Lost -= min(l.e.Lost, uint64(early))
				} else if dp == nil {
					missing(l.r, l.e, prevMissing)
					lossClose(l.e, saved)
					continue
				} else {
					// Packets of k that overtook its start marker: decoded
					// as extra in k-1 (ApplyRDACrossing with the roles
					// turned).
					noteEarly(l.r, synopsis.MatchRDACrossing(*dk, *dp))
					synopsis.ApplyRDAEarly(l.e, *dk, *dp)
				}
			}
			carry(l.r, l.e, wasValid)
			lossClose(l.e, saved)
		}
	}
	return next != nil && allKnown && all.Crossed == 0
}

// receiverDropped makes h's lines with loss invalid when the
// receiver's segment port dropped frames around h before the receiver
// saw them (counted at h's copy, or at the copy before it, whose count
// includes frames of h that arrived right after its flip): the segment
// delivered them, and they would look exactly like its loss. A line
// without loss is unaffected. (The sender records a frame only once its
// port has taken it, so frames the sender could not transmit are in no
// synopsis and need no such rule.)
func (c *controller) receiverDropped(h *heldInterval) {
	rx := c.drops.around(h.k)
	if rx == 0 {
		return
	}
	why := fmt.Sprintf("the receiving appliance's segment port dropped %d frames around this interval (its receive ring was full: the worker fell behind); they would count as the segment's loss", rx)
	for i := range h.lines {
		l := &h.lines[i]
		lost := l.r.Lost
		if l.flow != nil {
			lost = l.flow.Lost
		}
		if lost > 0 {
			invalidate(l.r, l.e, report.Cause{Code: report.ReceiverDrops, Why: why})
		}
	}
}

// rdaLoss is interval h's loss in class m as the RDA decodes it: the
// packets only h's sender recorded, less those decoded as extra in the
// next interval (they arrived after h's end) or in the previous one
// (they overtook h's start marker). ok only when all three decodes are
// complete and the RDA recorded the packets the LDA line e counts (equal
// sent and received). crossed counts both kinds.
func (h *heldInterval) rdaLoss(m int, prev, next *evidence, e *synopsis.Estimate, win uint64) (lost uint64, crossed int, ok bool) {
	if next == nil || m >= len(h.ev.rda) || h.ev.rda[m] == nil || !h.ev.rda[m].Complete {
		return 0, 0, false
	}
	dk := h.ev.rda[m]
	crossed, ok = earlyPrev(dk, m, prev, win)
	if !ok {
		return 0, 0, false
	}
	if !next.nothing {
		n, ok := crossedNext(dk, m, next, win)
		if !ok {
			return 0, 0, false
		}
		crossed += n
	}
	same := false
	for _, l := range h.lines {
		if l.flow == nil && l.e != nil && l.mec == m && l.r.Synopsis == "rda" {
			// Banks that disagree after repair mean a corrupted synopsis:
			// its decode vouches for nothing.
			same = l.e.Sent == e.Sent && l.e.Received == e.Received && l.e.Code != report.BanksDisagree
		}
	}
	if !same || crossed > len(dk.Lost) {
		return 0, 0, false
	}
	return uint64(len(dk.Lost) - crossed), crossed, true
}

// rdaExtras vouches for an LDA line invalid only for extra packets
// (Estimate.OnlyExtras): ok when k's RDA decode, complete, names every
// packet the receiver recorded that k's sender did not as a packet of the
// previous or next interval that crossed the boundary (decoded lost
// there) or as the segment's second copy of a packet (the receiver's
// cache saw it twice: TSCache.LaterCopy), and rdaLoss gives k's exact
// loss. dups counts the copies.
func (h *heldInterval) rdaExtras(m int, prev, next *evidence, e *synopsis.Estimate, win uint64) (lost uint64, crossed, dups int, ok bool) {
	lost, crossed, ok = h.rdaLoss(m, prev, next, e, win)
	if !ok || m >= len(h.ev.own) || h.ev.own[m] == nil {
		return 0, 0, 0, false
	}
	dk, cache := h.ev.rda[m], h.ev.own[m].Cache()
	neighbourLost := map[uint64]bool{}
	for _, ev := range []*evidence{prev, next} {
		if ev == nil || ev.nothing || m >= len(ev.rda) || ev.rda[m] == nil {
			continue // no decode (a spanning copy): its extras stay unexplained
		}
		for _, id := range ev.rda[m].Lost { // complete: rdaLoss checked
			neighbourLost[id] = true
		}
	}
	for _, id := range dk.Extra {
		switch _, dup, complete := cache.LaterCopy(id); {
		case dup && complete:
			dups++
		case neighbourLost[id]:
			crossed++
		default:
			return 0, 0, 0, false
		}
	}
	return lost, crossed, dups, true
}

// spanCopy marks the evidence of a receiver copy that holds two
// intervals (the first one's End marker was lost): no sender side matches
// it, but its receiver timestamp caches hold every packet that arrived
// between the End markers around it.
type spanCopy struct {
	fromNs, toNs uint64 // the copy's cuts: the End markers before and after it arrived
}

// spanEvidence is the crossing evidence of a receiver copy spanning a lost
// End marker, for the intervals before and after it (bySpan).
func spanEvidence(rc *rcopy) *evidence {
	return &evidence{snd: make([]*synopsis.CompactLDA, len(rc.lda)), rcv: rc.lda, rda: make([]*synopsis.RDADecoding, len(rc.lda)), own: rc.rda,
		span: &spanCopy{fromNs: rc.startNs, toNs: rc.endNs}, caches: copyCaches(rc), toNs: rc.endNs, edges: rc.edges}
}

// bySpan counts the packets of dk's interval decoded lost that reached
// the receiver in a spanning copy (ev.span): after the interval's end when
// the copy follows it (within windowNs, the spread of the interval's
// delays, after the copy's start), or, early, before its start marker
// when the copy precedes it (within the window before the copy's end). A
// lost identity the copy's cache holds outside that window is another
// packet with the same identity: this one was lost. ok is false when it
// cannot tell: no span, dk incomplete, a sampled cache that may not hold
// an identity, or an identity the cache saw twice.
func bySpan(dk *synopsis.RDADecoding, m int, ev *evidence, early bool, windowNs uint64) (n int, ok bool) {
	if ev == nil || ev.span == nil || dk == nil || !dk.Complete || m >= len(ev.own) || ev.own[m] == nil {
		return 0, false
	}
	cache := ev.own[m].Cache()
	if cache == nil || cache.Partial() {
		return 0, false
	}
	lv := cache.Level()
	for _, id := range dk.Lost {
		if !synopsis.Covers(id, lv) || !cache.SeenOnce(id) {
			return 0, false
		}
		ts, held := cache.Lookup(id)
		switch {
		case !held:
		case !early && ts <= ev.span.fromNs+windowNs:
			n++
		case early && ts+windowNs >= ev.span.toNs:
			n++
		}
	}
	return n, true
}

// crossedNext counts the packets of dk's interval decoded lost that
// arrived after its end: decoded extra in the next interval, or found in
// the spanning copy after it. ok is false when next cannot tell.
func crossedNext(dk *synopsis.RDADecoding, m int, next *evidence, windowNs uint64) (int, bool) {
	if n, ok := bySpan(dk, m, next, false, windowNs); ok {
		return n, true
	}
	if dk == nil || next == nil || m >= len(next.rda) || next.rda[m] == nil || !next.rda[m].Complete {
		return 0, false
	}
	return synopsis.MatchRDACrossing(*dk, *next.rda[m]), true
}

// earlyPrev counts the packets of dk's interval decoded lost that
// overtook its start marker: decoded extra in the previous interval, or
// found in the spanning copy before it.
func earlyPrev(dk *synopsis.RDADecoding, m int, prev *evidence, windowNs uint64) (int, bool) {
	if n, ok := bySpan(dk, m, prev, true, windowNs); ok {
		return n, true
	}
	if dk == nil || prev == nil || m >= len(prev.rda) || prev.rda[m] == nil || !prev.rda[m].Complete {
		return 0, false
	}
	return synopsis.MatchRDACrossing(*dk, *prev.rda[m]), true
}

// ReasonPrevMissing is the reason of a line with loss whose previous
// interval could not be checked for packets that overtook this
// interval's start marker (an End marker the segment held back behind
// data): such a packet reaches the receiver in the previous interval and
// looks lost in this one.
const ReasonPrevMissing = "previous interval missing: packets that overtook this interval's start marker could not be told from losses"

var prevMissing = report.Cause{Code: report.PrevMissing, Why: ReasonPrevMissing}

// ldaEarly matches class m's single losses of h against the previous
// interval's single extras: packets of h that overtook h's start marker
// (End of h-1) and reached the receiver before it. The match is the
// forward one with the roles of the intervals turned, so its Apply makes
// h invalid where such packets could hide. why has a code when the
// previous interval cannot be checked.
func (h *heldInterval) ldaEarly(m int, prev *evidence) (x synopsis.LDACrossing, why report.Cause) {
	if prev == nil || m >= len(prev.snd) || m >= len(prev.rcv) || prev.snd[m] == nil || prev.rcv[m] == nil || h.ev.snd[m] == nil {
		return x, prevMissing
	}
	x, err := synopsis.MatchLDACompactCrossing(h.ev.snd[m], h.ev.rcv[m], prev.snd[m], prev.rcv[m])
	if err != nil {
		return x, report.Cause{Code: report.PrevMissing, Why: fmt.Sprintf("packets that overtook this interval's start marker could not be told from losses: %v", err)}
	}
	return x, report.Cause{}
}

// movedAcross says why class m's loss in h, standing on the LDA's own
// crossing checks, cannot be claimed ("" when it can): a packet of m
// held back past h's End marker (or overtaking h's start marker) that
// the segment also remarked reaches the receiver in the neighbour
// interval as an extra packet of another class, where m's crossing
// checks do not look and h's own classes show nothing. So every other
// class's extras in the next interval must be its own packets of h that
// arrived after h's end (xs, known: the next interval's match per
// class), and in the previous interval its own packets of h that
// overtook h's start. The RDA's decodes name such packets instead
// (classMoves).
func (h *heldInterval) movedAcross(m int, prev *evidence, known []bool, xs []synopsis.LDACrossing, names []string) string {
	for o := range xs {
		if o == m || o >= len(names) {
			continue
		}
		if !known[o] || !xs[o].AllExtrasCrossed {
			return fmt.Sprintf("the next interval's receiver saw packets of class %s that are not its own packets of this interval arriving after its end, or could not be checked for them: some may be this class's packets that arrived after its end remarked inside the segment; loss cannot be counted", names[o])
		}
		if x, why := h.ldaEarly(o, prev); why.Code != 0 || !x.AllExtrasCrossed {
			return fmt.Sprintf("the previous interval's receiver saw packets of class %s that are not its own packets of this interval overtaking its start marker, or could not be checked for them: some may be this class's packets that overtook it remarked inside the segment; loss cannot be counted", names[o])
		}
	}
	return ""
}

// noteEarly puts the packets found to have overtaken the interval's start
// marker in the line's extra fields ("early").
func noteEarly(r *report.Interval, n int) {
	if n == 0 {
		return
	}
	if r.Extra == nil {
		r.Extra = map[string]any{}
	}
	r.Extra["early"] = n
}

// ldaCrossing matches class m's single losses of h against the next
// interval's single extras. known is false (with the reason) when the
// match cannot vouch for h's loss; Crossed is still a lower bound then.
func (h *heldInterval) ldaCrossing(m int, next *evidence) (known bool, x synopsis.LDACrossing, why report.Cause) {
	if next != nil && next.nothing {
		return true, synopsis.LDACrossing{AllExtrasCrossed: true}, report.Cause{}
	}
	if next == nil || m >= len(next.snd) || m >= len(next.rcv) || next.rcv[m] == nil {
		return false, x, nextMissing
	}
	if h.ev.snd[m] == nil || next.snd[m] == nil {
		return false, x, report.Cause{Code: report.NextMissing, Why: ReasonNextMissing + " (the next interval's sender LDA of this class did not decode or match)"}
	}
	x, err := synopsis.MatchLDACompactCrossing(h.ev.snd[m], h.ev.rcv[m], next.snd[m], next.rcv[m])
	if err != nil {
		return false, x, report.Cause{Code: report.NextMissing, Why: fmt.Sprintf("packets reordered past the interval's end could not be told from losses: %v", err)}
	}
	if next.senderless && !x.AllExtrasCrossed {
		return false, x, report.Cause{Code: report.NextMissing, Why: ReasonNextMissing + " (its sender synopses never came, and the receiver got packets after this interval's end that are not its losses)"}
	}
	return true, x, report.Cause{}
}

// noteCrossed puts the packets found to have arrived after the
// interval's end in the line's extra fields ("crossed"): they are in
// sent − received but not in lost.
func noteCrossed(r *report.Interval, n int) {
	if n == 0 {
		return
	}
	if r.Extra == nil {
		r.Extra = map[string]any{}
	}
	r.Extra["crossed"] = n
}

// carry carries a corrected estimate into its line, with the cause the
// correction found; a cause the line already names (a session's, a
// timestamp's) leads or follows it by its code's precedence.
func carry(r *report.Interval, e *synopsis.Estimate, wasValid bool) {
	r.Lost = e.Lost
	if wasValid && !e.Valid {
		r.Invalidate(e.Code, e.Reason)
	}
}

// missing makes a line with loss invalid for its loss: it may include
// packets that arrived after the interval's end (or before its start).
func missing(r *report.Interval, e *synopsis.Estimate, why report.Cause) {
	if r.Lost > 0 {
		invalidate(r, e, why)
	}
}

// lossOpen opens e, invalid for its delay alone (its code's scope), for
// the loss checks that follow, which check only a valid estimate: the
// line's loss is checked whatever its delay (loss_valid). It returns e's
// own cause for lossClose to put back.
func lossOpen(e *synopsis.Estimate) (saved report.Cause) {
	if !e.Valid && e.Code.Scope() == report.ScopeDelay {
		saved = report.Cause{Code: e.Code, Why: e.Reason}
		e.Valid, e.Reason, e.Code = true, "", 0
	}
	return saved
}

// lossClose puts back e's own cause that lossOpen took, unless a loss
// check made e invalid meanwhile (the line holds both causes then).
func lossClose(e *synopsis.Estimate, saved report.Cause) {
	if saved.Code != 0 && e.Valid {
		e.Valid, e.Reason, e.Code = false, saved.Why, saved.Code
	}
}

// nextCopy decides interval k, when it waits, with the receiver's copy
// of what arrived after its End marker (rc) alone: that copy's sender
// synopses will not come (a failure, a timeout, a second cut of k after a
// sender restart).
func (c *controller) nextCopy(k uint64, rc *rcopy) {
	if h := c.led.undecided(k); h != nil && rc != nil && !rc.warmup {
		c.decide(h, senderless(h, rc))
	}
}

// decideAtStop decides every interval still waiting when the appliance
// stops. The newest may be checked against the receiver's copy in
// progress (act, nil when it holds no frame): what arrived after the last
// End marker.
func (c *controller) decideAtStop(act *rcopy) {
	lastK := c.a.rbuf.Active().FirstK // the interval after the last End marker
	for _, k := range c.led.waitingKeys() {
		h := c.led.undecided(k)
		if h == nil {
			continue
		}
		next := h.k + 1
		switch {
		case c.halves.copies[next] != nil:
			c.decide(h, senderless(h, c.halves.copies[next]))
		case c.halves.bundles[next] != nil || next != lastK:
			c.decide(h, nil)
		case act == nil:
			c.decide(h, &evidence{nothing: true})
		default:
			c.decide(h, senderless(h, act))
		}
	}
}

// senderless is the evidence of the receiver's copy in progress against
// an empty sender with h's encoding.
func senderless(h *heldInterval, act *rcopy) *evidence {
	ev := &evidence{snd: make([]*synopsis.CompactLDA, len(h.ev.snd)), rcv: act.lda, rda: make([]*synopsis.RDADecoding, len(h.ev.rda)), senderless: true}
	for m, s := range h.ev.snd {
		if s == nil || m >= len(act.lda) {
			continue
		}
		z := act.lda[m].Clone()
		z.Reset()
		b, err := z.AppendCompact(nil, s.Bounds())
		var cz synopsis.CompactLDA
		if err == nil && cz.UnmarshalBinary(b) == nil {
			ev.snd[m] = &cz
		}
	}
	for m := range h.ev.rda {
		if m >= len(act.rda) {
			continue
		}
		z := act.rda[m].Clone()
		z.Reset()
		if dec, err := synopsis.DecodeRDA(z, act.rda[m]); err == nil {
			ev.rda[m] = &dec
		}
	}
	return ev
}

// silentHole is the oldest interval below lim the liveness check will
// declare silent (controller.silent: a pairing timeout and two intervals
// after it ended), which the lines of later intervals wait for
// (ledger.silentHole). Lines numbered from top on are not held: only
// numbers our own clock could give count (as in silentAtStop), and a
// peer of another --interval numbers its intervals far beyond ours.
// hole is math.MaxUint64 when there is none.
func (c *controller) silentHole(lim uint64) (hole, top uint64) {
	iv := uint64(c.a.cfg.Interval.Nanoseconds())
	top = c.a.cfg.Clock()/iv + 2 + uint64(c.a.cfg.MaxClockSkew.Nanoseconds())/iv
	return c.led.silentHole(lim, top, c.halves.waits), top
}

// flush reports, in interval order, the decided intervals and the queued
// lines older than the oldest interval still waiting for its next.
func (c *controller) flush() {
	if c.led.stopping {
		return
	}
	lim := c.led.oldestUndecided()
	// An older interval whose receiver copy or sender bundle is still
	// waiting for its other half (or for its failure to be declared) will
	// be reported later: nothing newer goes out before it.
	lim = c.halves.oldest(lim, c.led.claimed)
	// An interval whose RDA line waits for the sender's timestamps goes
	// out when they come or at the request's deadline (repair.go).
	lim = c.rep.before(lim)
	// An interval the control receiver is still reassembling (a fragment
	// or an End marker late or lost) gets its bundle or its failure at the
	// reassembly timeout: the lines after it wait for its line. At the
	// start this is the interval whose End marker passed before this
	// receiver was there but whose fragments came after.
	for k, ok := c.a.receiver.OldestInFlight(0); ok && k < lim; k, ok = c.a.receiver.OldestInFlight(k + 1) {
		if !c.led.claimed(k) {
			lim = k
			break
		}
	}
	// An interval nothing came for goes out when the liveness check
	// declares it silent: the lines after it wait for it.
	hole, top := c.silentHole(lim)
	for _, it := range c.led.release(lim, hole, top) {
		if it.h != nil {
			c.flowQuantiles(it.h) // sample.go
			for _, l := range it.h.lines {
				c.out(l.r)
			}
			continue
		}
		c.out(it.r)
	}
	c.led.forget()
}
