package appliance

import (
	"cmp"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/ldafwd/ldafwd/control"
	"github.com/ldafwd/ldafwd/dataplane"
	"github.com/ldafwd/ldafwd/report"
	"github.com/ldafwd/ldafwd/synopsis"
)

// RDA repair under loss (docs/rda.md, "Exchange"). The sender's RDA
// copy that crosses the wire has no timestamps, so the cells of packets
// lost in the segment cannot be repaired from it: the receiver would need
// their sender timestamps. Each appliance is the sender of the other
// direction, so the receiver asks in-band: a control.TypeRequest with the
// lost identities, sent as a frame of its own sending session toward the
// peer; the peer's controller answers from the timestamp cache it kept for
// that interval with a control.TypeReply of its sending session. The
// receiver feeds the reply into its copy of the sender's RDA and estimates
// again: with every lost packet's timestamp the mean is exact.
//
//   - The sender keeps each interval's RDA timestamp caches (one per
//     class, taken off the idle copy without a copy of the table) until
//     two more intervals are shipped: interval k answers while k+1 and
//     k+2 are shipped, which covers the receiver's hold of k (it waits for
//     k+1 to pair, crossing.go) and its deadline.
//   - The receiver asks only when the sender's wire copy says it has a
//     cache (RDAStats.MissingSender: lost identities the sender's sampled
//     cache holds). An older sender, or one without a cache, is never
//     asked: the line stays valid with its bound, as without the exchange.
//   - A request is retried every retryPeriod until repairDeadlineOf after
//     the first, then given up ("no reply"); the line is never held past
//     that deadline (its hold for the next interval is longer anyway).
//     Forwarding never waits on any of it: the frames go through the
//     sender lane's inject ring like every control frame.
//   - A reply is accepted once, only from the sender session asked, only
//     for our session and the request's id, and only if it decodes
//     against the request (synopsis.ParseReply's check binds it to the
//     ids). Replays are dropped by the control receiver's replay window.
//
// Departure from the paper (Sec. VIII-A): the paper ships the receiver's
// RDA to the sender and always asks for the reordered packets'
// timestamps; here the sender ships, extra packets are repaired from the
// receiver's own cache, and the one request/response is made only for
// lost packets, so a loss-free interval costs no round trip.

// repairKeepIntervals is how many newer intervals the sender ships while
// it still answers requests for interval k. A receiver asks about the cut
// before interval k (the edge check) once k and k−1 have paired, and an
// interval pairs after its own fetches and its predecessor: under heavy
// loss of control frames (a congested segment's first intervals, each
// with cells, rows and parts to fetch again) that chain has taken four
// intervals, so the caches outlive it by one.
const repairKeepIntervals = 5

// repairDeadlineOf is when a request is given up after its first try,
// as a fraction of the interval (retryPeriod is how often it is tried).
func repairDeadlineOf(interval time.Duration) time.Duration { return interval / 2 }

// RepairCounters count the exchange at one appliance: as a sender (the
// requests it answered or refused) and as a receiver (what it asked and
// what came back).
type RepairCounters struct {
	RequestsAnswered uint64 // replies sent
	RequestsRefused  uint64 // requests for another session, an interval no longer kept, not decoding, or over budget
	// RepliesOverBudget: of RequestsRefused, those whose reply would be
	// larger than the interval's control budget (fec.go).
	RepliesOverBudget uint64
	RequestsSent      uint64 // request messages sent, retries included
	RepliesAccepted   uint64
	RepliesStray      uint64 // replies to no pending request (late, duplicate, another session's)
	RepliesBad        uint64 // replies that do not decode against their request
	GivenUp           uint64 // requests that reached their deadline without a reply
	// RepliesExpired: reply frames dropped unsent, queued behind the
	// shipments for an interval (every request they answer given up).
	RepliesExpired uint64
}

// Each calls fn with a stable snake_case name and the value of every
// counter, so exporters (Prometheus: ldafwd_exchange_<name>_total) need no
// list of their own.
func (c RepairCounters) Each(fn func(name string, v uint64)) {
	for _, x := range []struct {
		n string
		v uint64
	}{
		{"requests_answered", c.RequestsAnswered}, {"requests_refused", c.RequestsRefused},
		{"replies_over_budget", c.RepliesOverBudget}, {"replies_expired", c.RepliesExpired},
		{"requests_sent", c.RequestsSent}, {"replies_accepted", c.RepliesAccepted}, {"replies_stray", c.RepliesStray},
		{"replies_bad", c.RepliesBad}, {"given_up", c.GivenUp},
	} {
		fn(x.n, x.v)
	}
}

// repairCounters are the requester's counters; the answerer keeps the
// answering side's.
type repairCounters struct {
	sent, accepted, stray, bad, givenUp atomic.Uint64
}

// RepairCounters returns a snapshot of the exchange counters.
func (a *Appliance) RepairCounters() RepairCounters {
	r, s := &a.ctl.req.rc, &a.ctl.ans
	return RepairCounters{RequestsAnswered: s.answered.Load(), RequestsRefused: s.refused.Load(), RequestsSent: r.sent.Load(),
		RepliesAccepted: r.accepted.Load(), RepliesStray: r.stray.Load(), RepliesBad: r.bad.Load(), GivenUp: r.givenUp.Load(), RepliesOverBudget: s.overBudget.Load(),
		RepliesExpired: a.ctl.ship.expired.Load()}
}

type repairKey struct {
	k   uint64
	mec uint16
}

// repair is one RDA line waiting for the sender's timestamps.
type repair struct {
	key      repairKey
	peer     uint64 // the sender session asked
	id       uint32
	ids      []uint64
	lost     int    // lost packets decoded (ids are those the sender's sampled cache holds)
	body     []byte // the request message
	snd, own *synopsis.RDA
	r        *report.Interval
	e        *synopsis.Estimate
	// estCode and estReason are the estimator's own cause at the ask
	// (the RDA's estimate before the line's other checks: stamps,
	// session, class changes): only that cause can a repair lift.
	// cleared: the repair lifted it (unrepair puts it back).
	estCode   report.Code
	estReason string
	cleared   bool
	first     time.Time
	last      time.Time
	tries     int
	reqBytes  int
	reqFrames int
	// pre is the line's delay fields before the repair, put back when
	// packets turn out to have crossed the interval's boundary
	// (unrepaired).
	pre delayFields
	// The lost packets' send times from a complete reply, for the line's
	// microbursts (microburst.go).
	lossIDs, lossNs []uint64
}

// delayFields are what a repair changes in a line.
type delayFields struct {
	mean, stddev, ci float64
	samples          uint64
	usable, buckets  int
	extra            map[string]any // the rda_* fields
}

// reserveCache sizes r's timestamp cache (a receiver copy's) for its
// next use (cacheRoom).
func (c *controller) reserveCache(r *synopsis.RDA, set *dataplane.SynSet) {
	if cache := r.Cache(); cache != nil {
		cache.Reserve(cacheRoom(cache.Distinct(), set, c.a.cfg.Interval, c.startK))
	}
}

// exchanges handles the requests and replies the control receiver
// reassembled.
func (c *controller) exchanges(now time.Time) {
	c.xs = c.a.receiver.Exchanges(c.xs[:0])
	changed := false
	for i := range c.xs {
		x := &c.xs[i]
		switch x.Type {
		case control.TypeRequest:
			// We are the sender the peer asks: the answerer replies.
			if x.Kind == control.KindMeta && control.IsResend(x.Body) {
				c.ans.resend(x, c.a.cfg.Clock())
			} else if synopsis.IsMemberRequest(x.Body) {
				c.ans.answerMembers(x, c.parityLoss())
			} else if x.Kind == control.KindLDA {
				c.ans.answerPart(x, c.a.cfg.Clock())
			} else if synopsis.IsCellsRequest(x.Body) {
				c.ans.answerCells(x, c.parityLoss())
			} else {
				c.ans.answer(x, c.parityLoss())
			}
		case control.TypeReply:
			if !c.onRowsReply(x) && !c.onPartReply(x) && !c.onFetchReply(x, now) && !c.onEdgeReply(x) {
				changed = c.onReply(x) || changed
			}
		}
		x.Body = nil
	}
	c.fetchTick(now)
	c.rowsTick(now)
	c.edgesTick(now)
	c.parts.tick(now)
	if c.repairTick(now) || changed {
		c.flush()
	}
}

// repairer is the receiver's side of the timestamp repair: it asks the
// sender for the timestamps of an RDA line's lost packets, retries, gives
// up at the deadline and accepts the one reply that answers. It owns the
// pending requests and never edits a line: when a request ends (a reply
// accepted, its deadline, the stop) it hands back a repairEnd, which the
// coordinator applies to the line (finishRepair).
type repairer struct {
	cfg     *Config
	req     *requester
	repairs map[repairKey]*repair
}

// repairEnd is how one request ended: the reply (nil when none came),
// the timestamps it brought and the status for the line.
type repairEnd struct {
	rp     *repair
	x      *control.Exchange
	found  int
	status string
	// From an accepted reply: each asked identity's timestamp, its flow
	// hash and whether the sender had it; flows says the reply carries
	// flow hashes.
	ts, fh []uint64
	ok     []bool
	flows  bool
}

// askRepair starts the exchange for the RDA line r (estimate e) of
// class m in interval k when its sender copy lacks lost packets'
// timestamps the sender can supply.
func (c *controller) askRepair(k uint64, m int, peer uint64, snd, own *synopsis.RDA, st *synopsis.RDAStats, r *report.Interval, e *synopsis.Estimate) {
	if note := c.rep.ask(k, m, peer, snd, own, st, r, e, c.a.now()); note != "" {
		r.Extra["rda_repair"] = note
	}
}

// ask asks for the timestamps of line r's lost packets (st.MissingSender)
// when there are any and the sender can supply them; it returns why it
// did not ask when the line should say so ("" otherwise).
func (q *repairer) ask(k uint64, m int, peer uint64, snd, own *synopsis.RDA, st *synopsis.RDAStats, r *report.Interval, e *synopsis.Estimate, now time.Time) string {
	if len(st.MissingSender) == 0 || peer == 0 {
		return ""
	}
	if q.repairs == nil {
		q.repairs = map[repairKey]*repair{}
	}
	ids := append([]uint64(nil), st.MissingSender...)
	rp := &repair{key: repairKey{k: k, mec: uint16(m)}, peer: peer, id: q.req.nextID(), ids: ids, lost: st.Lost, body: synopsis.AppendTimestampRequest(nil, ids),
		snd: snd, own: own, r: r, e: e, first: now}
	if e != nil && !e.Valid {
		rp.estCode, rp.estReason = e.Code, e.Reason
	}
	if len(rp.body) > control.MaxExchangeFragments*q.req.sender.ExchangeFragmentSize() {
		// More lost packets than one request carries: the line keeps
		// its bound.
		return fmt.Sprintf("not asked: %d lost packets are more than one request carries", len(ids))
	}
	rp.pre = delayOf(r)
	rp.pre.extra = st.ReportFields()
	q.repairs[rp.key] = rp
	q.send(rp, now)
	return ""
}

func (q *repairer) send(rp *repair, now time.Time) {
	n, bytes, ok := q.req.send(rp.key, control.KindRDA, rp.peer, rp.id, rp.body, "timestamp request")
	if !ok {
		return
	}
	rp.reqBytes += bytes
	rp.reqFrames += n
	rp.tries++
	rp.last = now
	q.req.rc.sent.Add(1)
}

// repairTick retries the pending requests and gives up those past their
// deadline; it says whether any line was finished.
func (c *controller) repairTick(now time.Time) bool {
	ends := c.rep.tick(now)
	for _, end := range ends {
		c.finishRepair(end.rp, nil, 0, end.status)
	}
	return len(ends) > 0
}

// tick retries the pending requests, in interval and class order, and
// ends those past their deadline.
func (q *repairer) tick(now time.Time) []repairEnd {
	var ends []repairEnd
	for _, key := range q.keys() {
		rp := q.repairs[key]
		switch {
		case now.Sub(rp.first) >= repairDeadlineOf(q.cfg.Interval):
			q.req.rc.givenUp.Add(1)
			ends = append(ends, repairEnd{rp: rp, status: "no reply"})
			delete(q.repairs, key)
		case now.Sub(rp.last) >= retryPeriod(q.cfg.Interval):
			q.send(rp, now)
		}
	}
	return ends
}

// abandonRepairs gives up every pending request (the appliance stops).
func (c *controller) abandonRepairs() {
	for _, end := range c.rep.abandon() {
		c.finishRepair(end.rp, nil, 0, end.status)
	}
}

// abandon ends every pending request, in interval and class order.
func (q *repairer) abandon() []repairEnd {
	var ends []repairEnd
	for _, key := range q.keys() {
		q.req.rc.givenUp.Add(1)
		ends = append(ends, repairEnd{rp: q.repairs[key], status: "no reply"})
		delete(q.repairs, key)
	}
	return ends
}

// onReply applies a reply to its pending request; it says whether a line
// was finished.
func (c *controller) onReply(x *control.Exchange) bool {
	end := c.rep.onReply(x)
	if end == nil {
		return false
	}
	if end.status == "complete" {
		c.noteRepairTimes(end.rp, end.ts, end.ok)
	}
	c.ldsLost(end.rp, end.ts, end.fh, end.ok, end.flows)
	c.finishRepair(end.rp, x, x.Frames, end.status)
	return true
}

// onReply accepts a reply to its pending request and ends the request;
// nil when it answers none (stray) or does not decode against it (bad).
func (q *repairer) onReply(x *control.Exchange) *repairEnd {
	key := repairKey{k: x.Interval, mec: x.MEC}
	rp := q.repairs[key]
	if rp == nil || x.Kind != control.KindRDA || x.Session != rp.peer || x.To != q.req.sender.Session() || x.ID != rp.id {
		q.req.rc.stray.Add(1)
		return nil
	}
	end := &repairEnd{rp: rp, x: x, ts: make([]uint64, len(rp.ids)), fh: make([]uint64, len(rp.ids)), ok: make([]bool, len(rp.ids))}
	var err error
	end.flows, err = synopsis.ParseReplyFlows(x.Body, rp.ids, end.ts, end.fh, end.ok)
	if err != nil {
		q.req.rc.bad.Add(1)
		q.cfg.Log.Debug().Err(err).Uint64("interval", x.Interval).Msg("timestamp reply does not decode")
		return nil
	}
	for _, v := range end.ok {
		if v {
			end.found++
		}
	}
	if err := rp.snd.AddRemoteTimestamps(x.Body, rp.ids); err != nil {
		q.req.rc.bad.Add(1)
		return nil
	}
	q.req.rc.accepted.Add(1)
	// Complete: a timestamp for every lost packet decoded. The caches
	// sample when an interval outgrows them (TSCache), and then only the
	// sampled lost packets are asked for: partial.
	end.status = "complete"
	if end.found < rp.lost {
		end.status = fmt.Sprintf("partial: %d of %d", end.found, rp.lost)
	}
	delete(q.repairs, key)
	return end
}

// pending is the request for class mec of interval k still waiting, nil
// if none.
func (q *repairer) pending(k uint64, mec uint16) *repair {
	return q.repairs[repairKey{k: k, mec: mec}]
}

// waiting says whether any request waits.
func (q *repairer) waiting() bool { return len(q.repairs) > 0 }

// finishRepair puts the outcome into the line: with a reply, the
// estimate again with the returned timestamps (only the delay fields and
// the RDA's own fields change: loss, crossings and reasons found since
// stay), and in any case what the exchange cost. Each change is a patch
// (patch.go), applied in turn: the crossing check after a reply reads the
// line as the reply left it.
func (c *controller) finishRepair(rp *repair, x *control.Exchange, replyFrames int, status string) {
	if x != nil {
		if p, ok := rp.replied(c.a.cfg.Conf); ok {
			p.apply(rp.r, rp.e)
			c.led.noteRepaired(rp.r, rp)
		}
		if crossedBoundary(rp.r) && c.led.repairedBy(rp.r, rp) {
			// The crossing checks ran before the reply came (crossedInto).
			c.led.takeRepaired(rp.r)
			p := c.settleCrossed(rp)
			p.apply(rp.r, rp.e)
		}
	}
	p := rp.cost(x, replyFrames, status)
	p.apply(rp.r, rp.e)
	c.ldsRepairDone(rp)
}

// replied is the line's estimate again with the timestamps of the reply
// fed into the sender's RDA (false: the estimator failed; the line
// stays). The line's bound keeps the stamps' own uncertainty: the repair
// makes the estimate exact over the stamps taken, not the stamps exact.
// A repair that made the line valid lifts the estimator's own cause (too
// few usable cells), which it answered; another cause (uncertain stamps,
// a session's partial interval, packets that changed class) stays.
func (rp *repair) replied(conf float64) (linePatch, bool) {
	e2, st2, err := synopsis.EstimateRDA(rp.snd, rp.own, conf)
	if err != nil {
		return linePatch{}, false
	}
	p := linePatch{delay: &delayFields{mean: e2.MeanNs, stddev: e2.StddevNs, ci: e2.MeanCINs, samples: e2.Samples, usable: e2.UsableBuckets, buckets: e2.TotalBuckets},
		set: st2.ReportFields()}
	if _, still := p.set["rda_note"]; !still {
		p.unset = []string{"rda_note"}
	}
	switch {
	case !e2.Valid:
		p.add = []report.Cause{{Code: e2.Code, Why: e2.Reason}}
	case rp.estCode != 0 && rp.r.Verdict().Has(rp.estCode):
		p.lift = rp.estCode
		rp.cleared = true
	}
	return p, true
}

// cost is what the exchange cost, and how it ended, for the line's
// extra fields.
func (rp *repair) cost(x *control.Exchange, replyFrames int, status string) linePatch {
	replyBytes := 0
	if x != nil {
		replyBytes = x.Bytes
	}
	return linePatch{set: map[string]any{
		"rda_repair": status, "rda_repair_asked": len(rp.ids), "rda_repair_tries": rp.tries,
		"rda_repair_request_bytes": rp.reqBytes, "rda_repair_reply_bytes": replyBytes, "rda_repair_frames": rp.reqFrames + replyFrames,
	}}
}

// settleCrossed is what a repaired line whose packets crossed its
// boundary becomes: its exact mean with the crossed packets' delays
// included when their timestamps are at hand (includeCrossed), else the
// estimate from before the repair (unrepaired).
func (c *controller) settleCrossed(rp *repair) linePatch {
	if p, ok := c.includeCrossed(rp); ok {
		return p
	}
	return rp.unrepaired()
}

// before is the oldest interval with a pending repair (lines of it and
// after it wait) if older than lim, else lim.
func (q *repairer) before(lim uint64) uint64 {
	for key := range q.repairs {
		lim = min(lim, key.k)
	}
	return lim
}

// ReasonExactCrossed is the reason of an RDA line whose mean is exact
// over the packets both ends recorded in the interval, with packets of
// the interval that crossed its boundary left out and no bound for them.
const ReasonExactCrossed = "RDA mean exact only over the packets recorded within the interval: packets that crossed its boundary are left out, and there is no bound for them"

// repairCrossedNote says why a completed repair did not make the mean
// exact.
const repairCrossedNote = "packets crossed the interval's boundary: the repaired cells hold the packets both ends recorded in the interval, not those that arrived after its end (or overtook its start), so the mean keeps its bound"

// crossedBoundary says whether the crossing checks found packets of the
// interval that arrived after its end or overtook its start.
func crossedBoundary(r *report.Interval) bool {
	n1, _ := r.Extra["crossed"].(int)
	n2, _ := r.Extra["early"].(int)
	return n1 > 0 || n2 > 0
}

// crossedInto settles the RDA lines of h whose interval has packets
// crossing its boundary (a packet that arrived after the End marker is
// decoded lost here and extra in the next interval; one that overtook the
// previous End marker is lost here and extra in the previous interval).
// The repair took them out of this interval's cells with their sender
// timestamps, so the repaired mean is exact over the packets both ends
// recorded in the interval — but the interval's packets include the
// crossed ones (the truth counts a packet in the interval it was sent in).
// Their receiver timestamps are in the neighbouring interval's receiver
// cache: with both, their delays go into the mean and it is exact over
// the interval's packets (includeCrossed). Without them (a neighbour not
// paired, a sampled or ambiguous cache) the line keeps the estimate and
// bound it had before the repair. Departure from the paper, whose
// exchange assumes one closed interval per side.
//
// A mean exact without a repair, because one bank's usable cells hold
// every matched packet (rda_mean_exact), lacks the crossed packets too and
// has no bound to fall back to: such a line is invalid.
func (c *controller) crossedInto(h *heldInterval) {
	for i := range h.lines {
		l := &h.lines[i]
		if l.flow != nil || l.r.Synopsis != "rda" || !crossedBoundary(l.r) {
			continue
		}
		if rp := c.led.takeRepaired(l.r); rp != nil {
			p := c.settleCrossed(rp)
			p.apply(rp.r, rp.e)
			continue
		}
		if _, note := l.r.Extra["rda_crossed_included"]; !note && l.r.DelayValid && estimateExact(l.r) {
			p := linePatch{add: []report.Cause{{Code: report.ExactCrossed, Why: ReasonExactCrossed}}}
			p.apply(l.r, l.e)
		}
	}
}

// includeCrossed is rp's repaired, exact mean with the delays of the
// packets of its interval that crossed its boundary added; false when
// some timestamp is not at hand.
func (c *controller) includeCrossed(rp *repair) (linePatch, bool) {
	r, k, m := rp.r, rp.key.k, int(rp.key.mec)
	if r.Extra["rda_exact"] != true || !estimateExact(r) || r.Samples == 0 {
		return linePatch{}, false
	}
	self := c.led.evidenceOf(k)
	if self == nil || m >= len(self.rda) || self.rda[m] == nil {
		return linePatch{}, false
	}
	lost := map[uint64]bool{}
	for _, id := range self.rda[m].Lost {
		lost[id] = true
	}
	var sum float64
	n := 0
	for _, j := range []uint64{k + 1, k - 1} {
		ev := c.led.evidenceOf(j)
		var extra []uint64
		if ev != nil && m < len(ev.rda) && ev.rda[m] != nil {
			extra = ev.rda[m].Extra
		}
		for _, id := range extra {
			if !lost[id] {
				continue
			}
			if m >= len(ev.own) || ev.own[m] == nil || ev.own[m].Cache() == nil || !ev.own[m].Cache().SeenOnce(id) {
				return linePatch{}, false
			}
			tR, okR := ev.own[m].Cache().Lookup(id)
			tS, okS := rp.snd.Cache().Lookup(id)
			if !okR || !okS {
				return linePatch{}, false
			}
			sum += float64(int64(tR - tS))
			n++
		}
	}
	want, _ := r.Extra["crossed"].(int)
	early, _ := r.Extra["early"].(int)
	if n == 0 || n != want+early {
		return linePatch{}, false
	}
	d := delayOf(r)
	N := float64(r.Samples)
	d.mean, d.samples = (r.MeanNs*N+sum)/(N+float64(n)), r.Samples+uint64(n)
	return linePatch{delay: &d, set: map[string]any{"rda_crossed_included": n}}, true
}

// estimateExact says whether r's estimate claims the exact mean: a bound
// of nothing but the stamps' own uncertainty.
func estimateExact(r *report.Interval) bool { return r.MeanCINs <= r.StampErrNs }

// unrepaired is the line's estimate from before the repair: the cause
// the repair lifted comes back, and a mean exact before the repair only
// by one bank's cells is invalid (see crossedInto).
func (rp *repair) unrepaired() linePatch {
	pre := rp.pre
	p := linePatch{delay: &pre, set: map[string]any{"rda_repair_note": repairCrossedNote}}
	for k, v := range pre.extra {
		p.set[k] = v
	}
	if _, was := pre.extra["rda_note"]; !was {
		p.unset = []string{"rda_note"}
	}
	delayValid := rp.r.DelayValid
	if rp.cleared {
		p.add = append(p.add, report.Cause{Code: rp.estCode, Why: rp.estReason})
		delayValid = delayValid && rp.estCode.Scope()&report.ScopeDelay == 0
	}
	if delayValid && pre.ci <= 0 {
		// Exact (a bound of nothing but the stamps') before the repair.
		p.add = append(p.add, report.Cause{Code: report.ExactCrossed, Why: ReasonExactCrossed})
	}
	return p
}

// keys are the pending requests' keys by interval, then class: requests
// retried and lines given up in one step go in that order, not the map's
// (a run on simulated time replays bit for bit; live, the frames' order on
// the wire is the same from run to run too).
func (q *repairer) keys() []repairKey {
	ks := make([]repairKey, 0, len(q.repairs))
	for k := range q.repairs {
		ks = append(ks, k)
	}
	slices.SortFunc(ks, func(a, b repairKey) int {
		if a.k != b.k {
			return cmp.Compare(a.k, b.k)
		}
		return cmp.Compare(a.mec, b.mec)
	})
	return ks
}
