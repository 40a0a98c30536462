package appliance

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/ldafwd/ldafwd/control"
	"github.com/ldafwd/ldafwd/report"
	"github.com/ldafwd/ldafwd/synopsis"
)

// The edge check: an interval's loss from its End markers' counts,
// corrected identity by identity at its two cuts (docs/lda.md, "Loss
// through a congested queue").
//
// The End markers count what the sender recorded in each class, the
// receiver's copy what it recorded between the same End markers. Their
// difference is the loss less the packets that crossed a cut: a packet of
// interval k held back past End(k) reaches the receiver's copy of k+1,
// one of k+1 that overtook End(k) its copy of k. The LDA's crossing check
// (crossing.go) finds such packets bucket by bucket, except where a loss
// of the next interval shares the bucket; under heavy loss many do, and
// without the RDA's decode (left out by the budget) the counts then stand
// only once the segment has been checked in order for many intervals
// (counts.go).
//
// Both ends keep, per interval and class, the timestamp cache of the RDA
// (every packet's identity and time while the cache is complete, level
// 0). A packet that crossed cut k arrived within the spread of the delays
// of it (the range of bucket means the LDAs showed: evidence.seen): the
// receiver lists the identities its copy of k+1 recorded in the window
// after the cut and its copy of k in the window before, and asks the sender's cache of k about the first list and its
// cache of k+1 about the second (synopsis.AppendMemberRequest). The
// replies are bitmaps; the lists travel on the request, in the other
// direction, which a segment congested one way leaves free. A packet of
// the first list that the sender recorded in k crossed into k+1 (late);
// one of the second that it recorded in k+1 overtook End(k) (early).
// With both cuts of k checked,
//
//	received(k) = copy(k) − late(k−1) + early(k−1) − early(k) + late(k)
//	lost(k)     = sent(k) − received(k)
//
// exactly, whatever the segment's order, provided:
//   - every cache involved is complete (level 0; the sender's reply says
//     so, the receiver's it checks itself);
//   - no packet crossed a cut by more than the window: the window is
//     twice the larger of the delays' spread and the furthest crossing
//     found so far (reach), plus edgeSlack; a packet found to have
//     crossed in its outer half fails the check (and widens the windows
//     after it); a copy of at most edgeWholeCopy packets is listed
//     whole;
//   - the segment duplicated nothing: the receiver's copy of k holds no
//     more repeated identities than the sender recorded in k, no
//     identity of one list is in the other copy too, and none of the
//     answers is a repeated identity;
//   - the receiving port dropped nothing around k and no packet changed
//     class (countProof's other checks, which still apply).
//
// The check is asked for a class whose counts show a difference in k or
// k+1 (a segment that loses nothing needs no correction), once the
// receiver has both copies and the sender's bundle of k+1, and it holds
// that interval's pairing until the replies came or edgeDeadline passed.
// Either copy may span two intervals (an End marker lost in every copy):
// the cut before a spanning copy is checked as soon as it comes
// (startSpanCheck), the cut after it when the next interval pairs.
//
// Not in the papers: the LDA paper takes packets crossing an interval's
// boundary as lost, and the RDA paper decodes them from the RDA. This
// check needs neither a sketch of the lost packets nor an ordered
// segment, only the caches the RDA's repair keeps anyway (paper Sec.
// VIII-A).
// Without it (an older peer refuses the request, a cache sampled at high
// rates, --synopsis lda without the RDA, the replies lost), the lines are
// checked as before. A line whose loss the check settles says
// loss_verified_by "edges", with crossed and early as the check counted.

// edgeSlack is added to twice the delays' spread for the check's window:
// a twentieth of the interval, at least 1 ms and at most 10 ms (each
// millisecond lists the packets that arrive in it, 8 bytes each). Bucket
// means lie inside the delays' range, not at its ends, and a segment may
// hold a packet back behind later ones (a second path, a reordering
// stage) further than its delays spread: the spread the LDAs show misses
// such a rare packet, and the first crossings found (reach) may
// understate it.
func edgeSlack(interval time.Duration) uint64 {
	return uint64(min(max(time.Millisecond, interval/20), 10*time.Millisecond))
}

// edgeWholeCopy is the most packets a copy may hold for the check to list
// it whole instead of the window (8 KB of request).
const edgeWholeCopy = 1024

// edgeMaxIDs bounds the identities one check lists per class (both
// windows): 512 KiB of request at most.
const edgeMaxIDs = 1 << 16

// edgeDeadline is how long a check is retried before its interval pairs
// without it.
func edgeDeadline(interval time.Duration) time.Duration { return interval }

// edgeCount is what the check of one cut found, per class: late packets
// of the interval before it that the receiver recorded after it, early
// packets of the interval after it recorded before it, and the sender's
// duplicate counts of both intervals. ok is false when the check could
// not vouch for the counts (why says so); a nil edgeCount was not asked.
type edgeCount struct {
	ok                    bool
	why                   string
	late, early           int
	dupsBefore, dupsAfter uint64
	// far: the furthest from the cut a packet found crossing it
	// arrived, ns (edgeFetcher.reach).
	far uint64
}

// edgeQuery is one membership request of a check: to the sender's cache
// of interval key.k (the interval before the cut for the late list, the
// one after it for the early list).
type edgeQuery struct {
	key         repairKey
	late        bool
	peer        uint64
	id          uint32
	ids         []uint64
	body        []byte
	first, last time.Time
	tries       int
	done        bool
	answer      *synopsis.MemberAnswer
}

// edgeCheck is the check of one cut in one class: its two queries and the
// receiver's side of them.
type edgeCheck struct {
	mec         int
	late, early *edgeQuery
	// before, after: the receiver's caches of the copies either side of
	// the cut; lateCut, earlyCut: the cut's time in the copy after it and
	// in the copy before it; half: half the window.
	before, after           *synopsis.TSCache
	lateCut, earlyCut, half uint64
	// lateWhole, earlyWhole: the list holds the whole copy (edgeWholeCopy),
	// not a window: no packet can have crossed beyond it.
	lateWhole, earlyWhole bool
}

// edgeFetcher is the receiver's side of the edge check: it starts an
// interval's checks when its bundle and copy are both here, retries
// them, and reads the replies. The checks travel with the bundle
// (waiting.edges).
type edgeFetcher struct {
	cfg *Config
	req *requester
	// seen: the latest paired interval's range of bucket means that
	// showed one (evidence.seen).
	seen DelayRange
	// reach: the furthest from its cut any packet found crossing one
	// arrived since the start, ns. The window is at least twice it: a
	// segment that holds packets back further than its delays spread
	// (a second path, a reordering stage) has shown how far, and the
	// intervals after take it in.
	reach uint64
	// unanswered: the checks in a row none of whose queries got a reply
	// (a peer that does not know the request, a reverse path that loses
	// everything); skipped: the cuts passed over since (edgeQuiet).
	unanswered, skipped int
}

// After edgeQuietAfter checks in a row that got no reply at all, only
// every edgeQuietProbe-th cut is checked, until one gets a reply: each
// check holds its interval's pairing until its deadline, and a peer that
// does not know the request (an older version) answers none.
const edgeQuietAfter, edgeQuietProbe = 3, 16

// quiet says whether the cut before interval k is passed over (edgeQuiet).
func (ef *edgeFetcher) quiet() bool {
	if ef.unanswered < edgeQuietAfter {
		return false
	}
	ef.skipped++
	return ef.skipped%edgeQuietProbe != 0
}

// start asks the checks of the cut before interval k, whose receiver
// copy rc holds the packets after the cut (frames: the sender's per
// class in k, from its End markers), with the evidence of interval k−1,
// prev, the copy before it; session is the sender's. Either copy may
// span two intervals (an End marker lost in every copy): what either
// side of the cut holds is all the check needs; across asks it of a
// spanning rc (whose first interval is k). The window follows the
// delays' spread prev's LDAs showed, or, where they showed none (its
// sender LDA lost, a spanning copy), the latest interval's that did
// (ef.seen), or the assumed range before any did. It returns the checks
// sent.
func (ef *edgeFetcher) start(k, session uint64, frames []uint64, rc *rcopy, prev *evidence, across bool, now time.Time) []*edgeCheck {
	skip := func(why string) []*edgeCheck {
		ef.cfg.Log.Debug().Uint64("interval", k).Str("why", why).Msg("edge check of the cut before this interval not asked")
		return nil
	}
	switch {
	case prev == nil || prev.caches == nil || prev.toNs == 0:
		return skip("the copy before the cut holds no timestamp cache")
	case rc.warmup || rc.active || (rc.firstK != rc.k) != across || rc.firstK != k || rc.steerWhy != "" || rc.rda == nil:
		return skip("the copy after the cut does not start at it, or holds no timestamp cache")
	case session == 0 || (frames == nil && !across):
		return skip("the sender's session or counts are unknown")
	case ef.quiet():
		return skip("the peer answered none of the last checks (an older version does not know the request)")
	}
	seen := prev.seen
	if seen == (DelayRange{}) {
		seen = ef.seen
	}
	if seen == (DelayRange{}) {
		// Nothing has shown the delays yet (the traffic starts here):
		// the assumed range, as the confidence range takes it.
		seen = ef.cfg.Assumed
	}
	window := 2*max(seen.WidthNs(), ef.reach) + edgeSlack(ef.cfg.Interval)
	tooWide := window > uint64(ef.cfg.Interval.Nanoseconds())/2
	var checks []*edgeCheck
	for m := range rc.lda {
		if m >= len(prev.caches) || m >= len(rc.rda) || m >= len(prev.rcv) || prev.rcv[m] == nil || (!across && m >= len(frames)) {
			continue
		}
		before, after := prev.caches[m], rc.rda[m].Cache()
		if !edgeCacheUsable(before) || !edgeCacheUsable(after) {
			ef.cfg.Log.Debug().Uint64("interval", k).Int("mec", m).Msg("edge check not asked: a receiver timestamp cache sampled its packets")
			continue
		}
		if !across && m < len(prev.sent) && prev.sent[m] == prev.rcv[m].Count() && frames[m] == rc.lda[m].Count() {
			continue // nothing lost or gained either side: nothing to correct
		}
		// The copies' cuts: the same flip on one lane; with several,
		// the earliest lane's start of k+1 and the latest's end of k.
		// Open on the cut's side: a packet stamped before the cut may be
		// recorded after it (stamps taken per burst, a lane's flip).
		lateEnd, earlyStart := rc.startNs+window, prev.toNs-min(prev.toNs, window)
		// A copy of few packets is listed whole: every packet that
		// crossed within an interval is then found, wherever the
		// window would have ended.
		if after.Len() <= edgeWholeCopy {
			lateEnd = math.MaxUint64
		}
		if before.Len() <= edgeWholeCopy {
			earlyStart = 0
		}
		var lateIDs, earlyIDs []uint64
		switch {
		case m < len(prev.sent) && prev.sent[m] == 0 && before.Len() == 0:
			// Nothing on either side of the cut before it in this class
			// (the traffic's onset): nothing can have crossed, and the
			// check needs no list and no round trip.
		case tooWide:
			ef.cfg.Log.Debug().Uint64("interval", k).Int("mec", m).Msg("edge check not asked: the window would span more than half an interval (the lists would hold most of the copies)")
			continue
		default:
			lateIDs = after.AppendWindow(nil, 0, lateEnd)
			earlyIDs = before.AppendWindow(nil, earlyStart, math.MaxUint64)
		}
		if len(lateIDs)+len(earlyIDs) > edgeMaxIDs {
			ef.cfg.Log.Debug().Uint64("interval", k).Int("mec", m).Int("ids", len(lateIDs)+len(earlyIDs)).Msg("edge check not asked: too many packets in the window")
			continue
		}
		ch := &edgeCheck{mec: m, before: before, after: after, lateCut: rc.startNs, earlyCut: prev.toNs, half: window / 2,
			lateWhole: lateEnd == math.MaxUint64, earlyWhole: earlyStart == 0,
			late:  &edgeQuery{key: repairKey{k: k - 1, mec: uint16(m)}, late: true, peer: session, ids: lateIDs, body: synopsis.AppendMemberRequest(nil, lateIDs), first: now},
			early: &edgeQuery{key: repairKey{k: k, mec: uint16(m)}, peer: session, ids: earlyIDs, body: synopsis.AppendMemberRequest(nil, earlyIDs), first: now}}
		// A query whose answer is known needs no round trip: an empty
		// list, or a late list about an interval whose End markers say
		// its sender recorded nothing in the class (the traffic's onset:
		// none of the list can be its).
		if len(earlyIDs) == 0 {
			ch.early.answer, ch.early.done = &synopsis.MemberAnswer{Complete: true}, true
		} else {
			ef.send(ch.early, now)
		}
		if m < len(prev.sent) && prev.sent[m] == 0 {
			ch.late.answer, ch.late.done = &synopsis.MemberAnswer{Complete: true, Once: make([]bool, len(lateIDs)), More: make([]bool, len(lateIDs))}, true
		} else {
			ef.send(ch.late, now)
		}
		checks = append(checks, ch)
	}
	return checks
}

// edgeCacheUsable: a receiver cache that holds every packet of its copy.
func edgeCacheUsable(c *synopsis.TSCache) bool {
	return c != nil && c.Level() == 0 && !c.Partial()
}

// send sends (again) q, under one request id for every try.
func (ef *edgeFetcher) send(q *edgeQuery, now time.Time) {
	if q.id == 0 {
		q.id = ef.req.nextID()
	}
	if _, _, ok := ef.req.send(q.key, control.KindRDA, q.peer, q.id, q.body, "edge check request"); !ok {
		q.done = true
		return
	}
	q.tries++
	q.last = now
	ef.req.rc.sent.Add(1)
}

// edgesFetching says whether w still waits for an edge check's reply.
func edgesFetching(w *waiting) bool { return edgeChecksOpen(w.edges) }

// openEdgeChecks is every edge check in flight: the bundles' and the
// span decisions'.
func (c *controller) openEdgeChecks() []*edgeCheck {
	var out []*edgeCheck
	for _, k := range sortedKeys(c.halves.bundles) {
		out = append(out, c.halves.bundles[k].edges...)
	}
	for _, sw := range c.spanWaits {
		out = append(out, sw.edges...)
	}
	for _, k := range sortedKeys(c.spanChecks) {
		out = append(out, c.spanChecks[k]...)
	}
	return out
}

// startSpanCheck starts, as soon as a copy spanning the intervals from
// rc.firstK on comes (rc.firstK's End marker lost in every copy), the
// edge check of the cut between it and the interval before, which waits
// for its decision: while the sender still keeps both intervals'
// timestamps. The lost End marker's failure, which decides that
// interval (spanDecide), comes later, at the reassembly timeout.
func (c *controller) startSpanCheck(rc *rcopy, now time.Time) {
	k := rc.firstK
	p := c.led.undecided(k - 1)
	if p == nil || c.spanChecks[k] != nil {
		return
	}
	if c.spanChecks == nil {
		c.spanChecks = map[uint64][]*edgeCheck{}
	}
	for j := range c.spanChecks {
		if j+spanMemory < k || j > k+spanMemory {
			delete(c.spanChecks, j) // never taken: its interval was decided otherwise
		}
	}
	if checks := c.edges.start(k, p.ev.session, nil, rc, &p.ev, true, now); len(checks) > 0 {
		c.spanChecks[k] = checks
	}
}

// edgesTick retries the pending edge queries and gives up those past
// their deadline, then decides the intervals whose span check is done.
func (c *controller) edgesTick(now time.Time) {
	defer c.spanTick(now)
	for _, ch := range c.openEdgeChecks() {
		for _, q := range []*edgeQuery{ch.late, ch.early} {
			switch {
			case q.done:
			case now.Sub(q.first) >= edgeDeadline(c.a.cfg.Interval):
				c.req.rc.givenUp.Add(1)
				q.done = true
				c.a.cfg.Log.Debug().Uint64("interval", q.key.k).Bool("late", q.late).Int("ids", len(q.ids)).Int("tries", q.tries).Msg("edge check query given up")
			case now.Sub(q.last) >= retryPeriod(c.a.cfg.Interval):
				c.edges.send(q, now)
			}
		}
	}
}

// onEdgeReply takes a reply to one of our edge queries; false when it
// answers none.
func (c *controller) onEdgeReply(x *control.Exchange) bool {
	if x.Kind != control.KindRDA {
		return false
	}
	var q *edgeQuery
	for _, ch := range c.openEdgeChecks() {
		for _, g := range []*edgeQuery{ch.late, ch.early} {
			if g.id == x.ID && g.key.k == x.Interval && g.key.mec == x.MEC && !g.done {
				q = g
			}
		}
	}
	if q == nil {
		return false
	}
	if x.Session != q.peer || x.To != c.req.sender.Session() {
		c.req.rc.stray.Add(1)
		return true
	}
	a, err := synopsis.ParseMemberReply(x.Body, q.ids)
	if err != nil {
		c.req.rc.bad.Add(1)
		c.a.cfg.Log.Debug().Err(err).Uint64("interval", x.Interval).Msg("edge check reply does not decode")
		return true
	}
	c.req.rc.accepted.Add(1)
	q.answer, q.done = &a, true
	return true
}

// stopEdges ends an interval's open edge queries at stop.
func (ef *edgeFetcher) stop(checks []*edgeCheck) {
	for _, ch := range checks {
		for _, q := range []*edgeQuery{ch.late, ch.early} {
			if !q.done {
				q.done = true
				ef.req.rc.givenUp.Add(1)
			}
		}
	}
}

// counts reads a finished check: what it found at its cut, per class of
// n (nil where not asked). The furthest crossing found widens the
// windows of the checks to come (reach).
func (ef *edgeFetcher) counts(checks []*edgeCheck, n int) []*edgeCount {
	if len(checks) == 0 {
		return nil
	}
	out := make([]*edgeCount, n)
	answered := false
	for _, ch := range checks {
		answered = answered || ch.late.answer != nil && ch.late.tries > 0 || ch.early.answer != nil && ch.early.tries > 0
		if ch.mec < n {
			out[ch.mec] = ch.count()
			ef.reach = max(ef.reach, out[ch.mec].far)
		}
	}
	if answered {
		ef.unanswered, ef.skipped = 0, 0
	} else if sent(checks) {
		ef.unanswered++
	}
	return out
}

// count is what ch found (edgeCount).
func (ch *edgeCheck) count() *edgeCount {
	l, e := ch.late.answer, ch.early.answer
	switch {
	case l == nil || e == nil:
		return &edgeCount{why: "the sender did not answer"}
	case l.Gone || e.Gone:
		return &edgeCount{why: "the sender no longer keeps the interval's timestamps"}
	case !l.Complete || !e.Complete:
		return &edgeCount{why: "the sender's timestamp cache sampled the packets"}
	}
	n := &edgeCount{ok: true, dupsBefore: l.Dups, dupsAfter: e.Dups}
	// found counts the identities of q the sender recorded; the receiver
	// must hold each only in the copy it was listed from (other: the copy
	// across the cut), at a time within the window's inner half. far is
	// the furthest from the cut any was, refused or not.
	var far uint64
	found := func(q *edgeQuery, a *synopsis.MemberAnswer, own, other *synopsis.TSCache, late bool) (int, string) {
		k, why := 0, ""
		for i, id := range q.ids {
			if !a.Once[i] && !a.More[i] {
				continue
			}
			ts, _ := own.Lookup(id)
			d := ts - min(ts, ch.lateCut)
			if !late {
				d = ch.earlyCut - min(ch.earlyCut, ts)
			}
			far = max(far, d)
			whole := (late && ch.lateWhole) || (!late && ch.earlyWhole)
			switch _, dup := other.Lookup(id); {
			case why != "":
			case a.More[i]:
				why = "an identity the sender recorded twice crossed the cut"
			case dup || !own.SeenOnce(id):
				why = "a packet that crossed the cut reached the receiver twice"
			case !whole && d > ch.half:
				why = "a packet crossed the cut by more than half the window: the window may not hold them all"
			}
			k++
		}
		return k, why
	}
	lateN, whyL := found(ch.late, l, ch.after, ch.before, true)
	earlyN, whyE := found(ch.early, e, ch.before, ch.after, false)
	switch {
	case whyL != "":
		return &edgeCount{why: whyL, far: far}
	case whyE != "":
		return &edgeCount{why: whyE, far: far}
	}
	n.late, n.early, n.far = lateN, earlyN, far
	return n
}

// edgeLoss is class m's loss in h from its End markers' counts corrected
// at both its cuts (h.ev.edges: the cut before it; next.edges: the one
// after it), with the packets found crossing each way. ok is false, with
// why, when either cut was not checked or the check cannot vouch.
func (h *heldInterval) edgeLoss(m int, next *evidence) (lost uint64, crossed, early, foreign int, why string, ok bool) {
	var start, end *edgeCount
	if m < len(h.ev.edges) {
		start = h.ev.edges[m]
	}
	if next != nil && m < len(next.edges) {
		end = next.edges[m]
	}
	switch {
	case start == nil || end == nil:
		return 0, 0, 0, 0, "", false
	case !start.ok:
		return 0, 0, 0, 0, "its start: " + start.why, false
	case !end.ok:
		return 0, 0, 0, 0, "its end: " + end.why, false
	case m >= len(h.ev.sent) || m >= len(h.ev.rcv) || h.ev.rcv[m] == nil || m >= len(h.ev.caches) || h.ev.caches[m] == nil:
		return 0, 0, 0, 0, "", false
	}
	if d := h.ev.caches[m].Dups(); d > end.dupsBefore {
		return 0, 0, 0, 0, fmt.Sprintf("the receiver recorded %d repeated identities, the sender %d: the segment duplicated packets", d, end.dupsBefore), false
	}
	recv := int64(h.ev.rcv[m].Count()) - int64(start.late) + int64(start.early) - int64(end.early) + int64(end.late)
	sent := int64(h.ev.sent[m])
	if recv < 0 || recv > sent {
		return 0, 0, 0, 0, fmt.Sprintf("corrected, the receiver recorded %d packets of the %d sent", recv, sent), false
	}
	// foreign: the packets of the copy that are its neighbours'.
	return uint64(sent - recv), end.late, start.early, start.late + end.early, "", true
}

// edgeLosses applies the edge check to h's LDA lines and lines measured
// by counts, once the next interval's evidence is known: a line whose
// loss rests on its crossing checks alone (onlyCrossingDoubt) or on the
// segment's order takes the corrected loss, when countProof's other
// checks pass; a line the LDA's own checks found exact must agree. It
// says whether the checks found a packet crossing a cut (a sign of
// disorder for the order log).
func (c *controller) edgeLosses(h *heldInterval, prev, next *evidence) (crossedAny bool) {
	for i := range h.lines {
		l := &h.lines[i]
		if l.flow != nil || !(l.counts || (l.e != nil && l.r.Synopsis == "lda")) {
			continue
		}
		lost, crossed, early, foreign, why, ok := h.edgeLoss(l.mec, next)
		if !ok {
			if why != "" && l.r.Lost > 0 {
				noteEdge(l.r, "not verified: "+why)
			}
			continue
		}
		crossedAny = crossedAny || crossed+early > 0
		if l.mec >= len(h.ev.sent) || l.r.Sent != h.ev.sent[l.mec] || l.r.Received != h.ev.rcv[l.mec].Count() {
			noteEdge(l.r, "not verified: the line does not count the End markers' packets")
			continue
		}
		v := l.r.Verdict()
		if l.r.LossValid && !v.Has(report.Crossing) && !v.Has(report.NextMissing) && !v.Has(report.PrevMissing) {
			if l.r.Lost != lost {
				noteEdge(l.r, fmt.Sprintf("disagrees: %d lost by the edges", lost))
				l.r.Invalidate(report.Crossing, fmt.Sprintf("the End markers' counts corrected at both cuts give %d lost, the LDA's crossing checks %d: one of them missed a packet crossing an End marker", lost, l.r.Lost))
				continue
			}
			noteEdge(l.r, "agrees")
			continue
		}
		// The LDA's extra packets are the neighbours' that crossed into
		// this copy when the check found at least as many (it found every
		// one, and the copy holds no duplicate).
		extras := l.e != nil && l.e.OnlyExtras && l.e.Extra <= uint64(foreign)
		if (!l.counts && !onlyDoubts(v, extras)) || len(c.countProof(h, l.mec, prev, next, true)) > 0 {
			noteEdge(l.r, "not verified: other checks doubt the loss")
			continue
		}
		l.r.Lost = lost
		if l.e != nil {
			l.e.Lost = lost
		}
		l.r.Clear(crossingDoubts...)
		if extras {
			l.r.Clear(report.Extras)
		}
		noteCrossed(l.r, crossed)
		noteEarly(l.r, early)
		noteEdge(l.r, "complete")
		l.r.Extra["loss_verified_by"] = "edges"
		l.edged = true
	}
	return crossedAny
}

// noteEdge puts what the edge check did in the line's extra fields.
func noteEdge(r *report.Interval, s string) {
	if r.Extra == nil {
		r.Extra = map[string]any{}
	}
	r.Extra["edge_check"] = s
}

// answerMembers replies to a membership request for interval
// x.Interval's packets of class x.MEC from the timestamp cache kept for
// it. Once the cache is no longer kept, the reply says so (not complete,
// no identity held) instead of leaving the check to its deadline: the
// receiver's interval pairs without waiting for it.
func (s *answerer) answerMembers(x *control.Exchange, loss float64) {
	var cache *synopsis.TSCache
	if cs := s.tscaches[x.Interval]; int(x.MEC) < len(cs) {
		cache = cs[x.MEC]
	}
	ids, err := synopsis.ParseMemberRequest(x.Body)
	if x.Kind != control.KindRDA || x.To != s.sender.Session() || err != nil {
		s.refused.Add(1)
		s.cfg.Log.Debug().Err(err).Uint64("interval", x.Interval).Uint16("mec", x.MEC).
			Msg("edge check request refused: not our session, or it does not decode")
		return
	}
	if cache == nil {
		s.cfg.Log.Debug().Uint64("interval", x.Interval).Uint16("mec", x.MEC).Uints64("kept", sortedKeys(s.tscaches)).
			Msg("edge check request about an interval whose timestamps are not kept: answered so")
		cache = s.noCache()
	}
	s.replyIfFits(x, control.KindRDA, cache.AppendMemberReply(nil, ids), s.replyFrag(x, loss, 0), s.cfg.Clock(), "edge check reply")
}

// noCache is an empty cache that says it is not complete, for answering a
// membership request about an interval whose cache is no longer kept.
func (s *answerer) noCache() *synopsis.TSCache {
	if s.gone == nil {
		s.gone = synopsis.GoneTSCache()
	}
	return s.gone
}

// copyCaches is rc's timestamp caches per class (nil without the RDA).
func copyCaches(rc *rcopy) []*synopsis.TSCache {
	if rc.rda == nil {
		return nil
	}
	cs := make([]*synopsis.TSCache, len(rc.rda))
	for m, r := range rc.rda {
		cs[m] = r.Cache()
	}
	return cs
}

// onlyDoubts says whether every cause v holds that leaves the loss
// inexact is a crossing doubt, or with extras the Extras cause (which
// the edge check answers too), and there is one.
func onlyDoubts(v report.Verdict, extras bool) bool {
	doubt := false
	for _, cause := range v.Causes() {
		switch {
		case slices.Contains(crossingDoubts, cause.Code), extras && cause.Code == report.Extras:
			doubt = true
		case cause.Code.Scope()&report.ScopeLoss != 0:
			return false
		}
	}
	return doubt
}

// spanWait is interval k−1's decision against the receiver copy spanning
// k and k+1 (k's End marker lost in every copy), waiting for the edge
// check of the cut between them (spanDecide).
type spanWait struct {
	k     uint64
	span  *rcopy
	edges []*edgeCheck
}

// spanTick decides the intervals whose span check is done (all of them
// at stop: a zero now).
func (c *controller) spanTick(now time.Time) {
	left := c.spanWaits[:0]
	decided := false
	for _, sw := range c.spanWaits {
		if now.IsZero() {
			c.edges.stop(sw.edges)
		}
		if edgeChecksOpen(sw.edges) {
			left = append(left, sw)
			continue
		}
		c.decideSpan(sw)
		decided = true
	}
	clear(c.spanWaits[len(left):])
	c.spanWaits = left
	if decided {
		c.flush()
	}
}

// decideSpan decides interval sw.k−1 with the spanning copy's evidence
// and the edge check of the cut between them.
func (c *controller) decideSpan(sw *spanWait) {
	if p := c.led.undecided(sw.k - 1); p != nil {
		ev := spanEvidence(sw.span)
		ev.edges = c.edges.counts(sw.edges, len(sw.span.lda))
		c.decide(p, ev)
	}
}

// edgeChecksOpen says whether a query of checks still waits for a reply.
func edgeChecksOpen(checks []*edgeCheck) bool {
	for _, ch := range checks {
		if !ch.late.done || !ch.early.done {
			return true
		}
	}
	return false
}

// spanWaiting says whether interval k's decision waits for a span check.
func (c *controller) spanWaiting(k uint64) bool {
	for _, sw := range c.spanWaits {
		if sw.k == k+1 {
			return true
		}
	}
	return false
}

// sent says whether any query of checks went out (one answered without a
// round trip proves nothing of the peer).
func sent(checks []*edgeCheck) bool {
	for _, ch := range checks {
		if ch.late.tries > 0 || ch.early.tries > 0 {
			return true
		}
	}
	return false
}
