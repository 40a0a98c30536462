package appliance

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/ldafwd/ldafwd/analyze"
	"github.com/ldafwd/ldafwd/control"
	"github.com/ldafwd/ldafwd/dataplane"
	"github.com/ldafwd/ldafwd/report"
	"github.com/ldafwd/ldafwd/synopsis"
)

// controller is the appliance's control goroutine: it moves the interval
// clock, encodes the sender's idle synopses and queues them for in-band
// transmission, feeds stripped control frames to the control.Receiver,
// pairs each reassembled sender interval with the receiver's own copy and
// reports. Everything here runs on one goroutine; Stop talks to it only
// through messages: phases (await) while the workers run, then a.stop.
type controller struct {
	a *Appliance
	// baseGap: the injection gap the data's frame rate gives (pacing.go),
	// from the last shipment.
	baseGap uint64
	// pr estimates each paired interval's lines (pairing.go).
	pr pairer
	// ship encodes the sender's copies and sends every control frame
	// (shipper.go).
	ship    shipper
	results []control.Result
	// halves holds the receiver copies and sender bundles waiting for
	// each other (halves.go).
	halves  halves
	frozen  bool        // finish owns the interval clock: step no longer moves it
	settled bool        // nothing queued to send, nothing waiting to pair
	movedAt time.Time   // when the interval clock last moved
	phases  chan *phase // Stop's requests (await)
	peer    uint64      // the peer's session we last logged
	// led keeps every line from the moment it is built until it goes out
	// (ledger.go).
	led ledger
	// lastRange is the confidence range of the latest interval whose
	// LDAs showed its delays (confidenceRange); zero before the first.
	lastRange DelayRange
	startNs   uint64 // our clock at Start
	startK    uint64 // the interval current at Start, by our clock
	resume    uint64 // the interval after the last one an earlier run reported; 0: none (notRunning)
	// drops counts the frames the segment port dropped before the
	// receiver saw them, per receiver copy (rxdrops.go).
	drops rxDrops
	// order is what the decided intervals showed of the segment's order,
	// for lines measured by the End markers' counts alone (counts.go).
	order orderLog
	// ans answers the peer's requests (we are its sender: answerer.go).
	ans answerer
	// rep asks for the timestamps of RDA lines' lost packets (repair.go).
	rep repairer
	// cells asks for more RDA cells where the shipped ones do not decode
	// (fetch.go).
	cells cellFetcher
	// rows asks for a larger LDA where loss thinned the shipped one's
	// sample (ldarows.go).
	rows rowsFetcher
	// edges checks each cut's crossing packets against the sender's
	// timestamp caches (edges.go); spanWaits: the intervals whose
	// decision against a spanning copy waits for it.
	edges     edgeFetcher
	spanWaits []*spanWait
	// spanChecks: the edge checks started when a spanning copy came, by
	// the interval whose End marker was lost, until spanDecide takes
	// them.
	spanChecks map[uint64][]*edgeCheck
	lds        ldsRepairer // LDS lines waiting for their interval's exchanges (lds_repair.go)
	xs         []control.Exchange
	// req sends the receiver's requests (requester.go).
	req requester
	// parts fetches the LDA parts lost on the segment (partfetch.go);
	// partKeys is askParts' scratch.
	parts    partFetcher
	partKeys []control.PartKey
	clk      clockState // the two directions' means for the clock offset (clock.go)
	steps    clockSteps // this end's clock steps and the peer's (clockstep.go)
	fec      fecState   // the control loss reported both ways, sizing parity (fec.go)
}

// heldLine is a line pair has built, with the estimate behind it (nil for
// lines without one) or, for an LDS line, its flow's estimate.
type heldLine struct {
	r    *report.Interval
	e    *synopsis.Estimate
	flow *synopsis.FlowEstimate
	mec  int
	// counts: the line's loss comes from the End markers' per-class
	// counts (countLine); the neighbours check it when it is decided.
	counts bool
	// unseenMove: the line's class change is only possible, not seen (a
	// class beside it could not be decoded: undecodedMoves); it is no
	// sign of the segment's disorder (orderLog.note).
	unseenMove bool
	// edged: the edge check settled the line's loss (edges.go); the
	// counts' neighbour and order checks do not apply to it.
	edged bool
}

// rcopy is the receiver's copy of one interval, cloned off the double
// buffer so the worker can reuse it at once.
type rcopy struct {
	k              uint64
	firstK         uint64 // the first interval it holds (< k: an End marker was lost, or an overrun)
	lda            []*synopsis.LDA
	rda            []*synopsis.RDA    // nil without RDA
	lds            *synopsis.LDS      // nil without LDS
	sample         []*synopsis.Sample // per MEC; nil without a sample
	merged         bool
	misrouted      uint64 // sampled frames the receiver's lanes got on the wrong queue
	steerWhy       string // why the per-lane cut cannot be trusted (queues.go), or ""
	warmup         bool   // the receiver's first copy: from its start to the first End marker
	active         bool   // the copy in progress at stop: no End marker closed it
	frames         uint64
	stamps         rxStamps // the receiver's timestamp error (stamps.go)
	startNs, endNs uint64
	at             time.Time
	// edges: what the edge check of the cut before this copy found, per
	// class (edges.go); nil where it was not asked.
	edges []*edgeCount
}

type waiting struct {
	b  *control.IntervalBundle
	at time.Time
	// The requests for more RDA cells (fetch.go): asked once the
	// receiver's copy is there, pending while any is not done.
	asked   bool
	fetches []*fetch
	// The requests for a larger LDA (ldarows.go), asked once no LDA part
	// of the interval is being fetched.
	rowsAsked bool
	rows      []*rowsFetch
	// The edge check of the cut before this interval (edges.go), asked
	// with the fetches once the previous interval paired.
	edgesAsked bool
	edges      []*edgeCheck
}

func newController(a *Appliance) *controller {
	c := &controller{a: a, phases: make(chan *phase), halves: newHalves(), led: newLedger(),
		ship:  newShipper(&a.cfg, a.sender, a.inject),
		drops: newRxDrops(), pr: newPairer(a)}
	c.ans = answerer{cfg: &a.cfg, sender: a.sender, ship: &c.ship}
	c.req = requester{cfg: &a.cfg, sender: a.sender, receiver: a.receiver, ship: &c.ship}
	c.parts = partFetcher{cfg: &a.cfg, req: &c.req}
	c.cells = cellFetcher{cfg: &a.cfg, req: &c.req}
	c.rows = rowsFetcher{cfg: &a.cfg, req: &c.req}
	c.edges = edgeFetcher{cfg: &a.cfg, req: &c.req}
	c.rep = repairer{cfg: &a.cfg, req: &c.req}
	c.lds = ldsRepairer{cfg: &a.cfg}
	return c
}

// startAt records the start (Start, before the controller runs): the
// interval the receiver starts in, and where an earlier run's reports
// ended.
func (c *controller) startAt(nowNs uint64) {
	c.startNs = nowNs
	c.drops.start(c.a.segPort.Stats().RxDropped)
	c.startK = nowNs / uint64(c.a.cfg.Interval.Nanoseconds())
	c.led.nextDue = c.startK
	if last, ok := c.a.cfg.LastReported[DirectionName(c.a.recvDir)]; ok && last < math.MaxUint64 {
		c.resume = last + 1
	}
}

// endGrace is how long a complete bundle waits for the receiver's copy
// of its interval (the worker flips at the End marker, which precedes the
// fragments, so the copy is normally there already).
const endGrace = 200 * time.Millisecond

// settleQuiet is how long Stop waits with nothing to send or pair before
// it stops: long enough for a peer's last control frames in flight.
const settleQuiet = 100 * time.Millisecond

// minFlipGap is the least time between two End markers the appliance
// sends; intervals are never shorter (Config.Interval ≥ 10 ms).
const minFlipGap = 20 * time.Millisecond

// run is the control goroutine: a step every ms, Stop's phases between
// steps, and the final report when a.stop closes (the workers are gone).
// A run on simulated time has no control goroutine: its driver calls
// step and advance itself (simulated.go).
func (c *controller) run() {
	defer close(c.a.done)
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	var cur *phase
	for {
		select {
		case <-c.a.stop:
			c.step(c.a.now())
			c.final()
			return
		case p := <-c.phases:
			cur = p
		case <-tick.C:
			c.step(c.a.now())
		}
		if cur != nil && cur.advance(c.a.now()) {
			cur = nil
		}
	}
}

// A phase is one part of Stop run on the control goroutine: next runs after
// every step (and once on arrival) until it returns true or the deadline
// passes; then reply closes. late tells next that this is its last call, to
// finish what must be finished.
type phase struct {
	deadline time.Time
	next     func(now time.Time, late bool) bool
	reply    chan struct{}
}

// advance runs the phase's next once at now and reports whether the
// phase has ended (its reply is then closed).
func (p *phase) advance(now time.Time) bool {
	if late := !now.Before(p.deadline); p.next(now, late) || late {
		close(p.reply)
		return true
	}
	return false
}

// await hands a phase to the control goroutine and waits for it to end.
// A nil phase has nothing to wait for.
func (c *controller) await(p *phase) {
	if p == nil {
		return
	}
	c.phases <- p
	<-p.reply
}

func newPhase(deadline time.Time, next func(now time.Time, late bool) bool) *phase {
	return &phase{deadline: deadline, next: next, reply: make(chan struct{})}
}

// finish freezes the interval clock one interval ahead, so the sender
// closes the current interval now, and ends once that interval is shipped
// and the peer's intervals are paired, or at the deadline.
func (c *controller) finish(deadline time.Time) *phase {
	var last uint64
	stage := 0
	var quiet time.Time
	return newPhase(deadline, func(now time.Time, late bool) bool {
		switch stage {
		case 0:
			c.frozen = true
			last = c.a.epoch.Load()
			stage = 1
			fallthrough
		case 1:
			// First let the sender lane catch up with the clock as it
			// stands (a descheduled worker may not have closed last−1
			// yet): moving the clock twice before it polls would merge
			// two intervals.
			if c.ship.shipped+1 < last && !late {
				return false
			}
			stage = 2
			fallthrough
		case 2:
			// Two End markers within a few ms would make the peer's
			// receiver flip twice before its control side has taken the
			// first copy (it drains every ms): an overrun that merges the
			// last two intervals. Leave the last natural flip some room.
			if now.Sub(c.movedAt) < minFlipGap && !late {
				return false
			}
			c.a.epoch.Store(last + 1)
			stage = 3
			return false
		default:
			// Settled must hold for a while: the peer's last End marker
			// and synopses may still be on the segment when ours are out.
			return c.quietFor(now, &quiet, c.ship.shipped >= last)
		}
	})
}

// awaitPeerEnd lets the receiver's interval in progress end the normal
// way, so it can be reported valid: while the peer is sending End markers,
// it waits (up to the deadline, and one interval and a grace at most) for
// the next one, then for its synopses to pair. nil: no peer ever cut an
// interval here, nothing to wait for.
func (c *controller) awaitPeerEnd(deadline time.Time) *phase {
	flips := &c.a.lanes[1].Stats.Flips
	f0 := flips.Load()
	if f0 == 0 {
		return nil
	}
	limit := c.a.now().Add(c.a.cfg.Interval + endGrace)
	ended := false
	var quiet time.Time
	return newPhase(deadline, func(now time.Time, late bool) bool {
		if !ended {
			if flips.Load() == f0 {
				return now.After(limit) // the peer is gone or stopping too
			}
			ended = true
		}
		return c.quietFor(now, &quiet, true)
	})
}

// awaitIntervalsEnded waits, up to closeWait, until every worker has ended
// its lanes' interval (Worker.EndInterval) and the controller has nothing
// left to send or pair.
func (c *controller) awaitIntervalsEnded() *phase {
	return newPhase(c.a.now().Add(closeWait), func(time.Time, bool) bool {
		for _, w := range c.a.workers {
			if !w.IntervalEnded() {
				return false
			}
		}
		return c.settled
	})
}

// quietFor reports whether the controller has been settled (and cond held)
// for settleQuiet; since holds when that began.
func (c *controller) quietFor(now time.Time, since *time.Time, cond bool) bool {
	if !cond || !c.settled {
		*since = time.Time{}
		return false
	}
	if since.IsZero() {
		*since = now
		return false
	}
	return now.Sub(*since) >= settleQuiet
}

// step is one turn of the control loop: the interval clock, then the
// sender's side, the receiver's, the pairing of the two, and the liveness
// checks.
func (c *controller) step(now time.Time) {
	c.watchClock() // before moveClock: a step is known before its interval ships
	nowNs := c.a.cfg.Clock()
	c.moveClock(now, nowNs)
	c.sendSide(nowNs)
	c.receiveSide(now, nowNs)
	c.pairSide(now)
	c.silent(nowNs)
	c.overdue(now)
	c.settled = c.ship.idle() && c.ans.idle() && c.a.inject.Count() == 0 && c.halves.idle() && !c.rep.waiting()
}

// moveClock advances the interval clock the sender lanes read, unless
// finish has frozen it.
func (c *controller) moveClock(now time.Time, nowNs uint64) {
	a := c.a
	if c.frozen {
		return
	}
	if k := nowNs / uint64(a.cfg.Interval.Nanoseconds()); k > a.epoch.Load() {
		a.epoch.Store(k)
		c.movedAt = now
	}
}

// sendSide encodes every copy the sender lanes have handed over and
// queues the frames for injection.
func (c *controller) sendSide(nowNs uint64) {
	a := c.a
	for {
		set, ok := a.sbuf.Idle()
		if !ok {
			break
		}
		c.shipCopy(set, int64(nowNs))
		c.ans.keepCaches(set, c.startK)
		c.ans.keepLDAs(set.LastK, set.LDA)
		if set.LDS != nil {
			set.LDS.ReserveFlows()
		}
		a.sbuf.Release()
	}
	c.ship.dueCopies(nowNs)
	c.ans.duePaced(nowNs)
	c.ship.handOver(nowNs)
	c.ship.dueCopies(nowNs) // schedules what waited for the frames just handed over
	backlog := len(c.ship.pending) + len(c.ship.replies) + len(c.ship.later) + a.inject.Count() + len(c.ans.paced)
	a.injectGap.Store(paceGap(c.baseGap, backlog, a.cfg.Interval))
}

// shipCopy hands one sender copy to the shipper with what the other
// parts know of it, and keeps its LDA parts for the part exchange.
func (c *controller) shipCopy(set *dataplane.SynSet, nowNs int64) {
	stepped := c.steps.sentStepped(set.FirstK, set.LastK)
	budget := c.ship.budgetFor(set.Bytes)
	// Parity for the loss the peer reported (fec.go): every size the
	// shipper counts (IntervalBytes, wireOf) counts it.
	c.measureLoss()
	c.a.sender.SetLoss(c.parityLoss())
	c.a.sender.SetFrameLimit(frameLimit(c.parityLoss(), set))
	c.baseGap = injectGap(set, c.a.cfg.Interval)
	c.ans.keepBudget(set.LastK, budget)
	in := shipIn{budget: budget, stepped: stepped, clock: c.clockMean()}
	if parts := c.ship.send(set, nowNs, in); parts != nil {
		c.ans.keepParts(set.LastK, parts) // a lost LDA part is fetched on demand (partfetch.go)
	}
}

// receiveSide takes what the receiver lanes handed over: the control
// frames they stripped (fed to the control.Receiver), the repair exchange,
// and the copies of their synopses at each End marker; it collects the
// sender's reassembled intervals and failures.
func (c *controller) receiveSide(now time.Time, nowNs uint64) {
	a := c.a
	for _, q := range a.toCtl {
		for {
			f, ts, ok := q.Get()
			if !ok {
				break
			}
			// The frame's receive time, as the worker's End check saw it: both
			// apply the session rule to the same times.
			a.receiver.Consume(f, int64(ts)) // rejects are counted by the Receiver
			q.Done()
		}
	}
	// Requests from the peer (we are their sender) and replies to ours.
	c.exchanges(now)
	for {
		set, ok := a.rbuf.Idle()
		if !ok {
			break
		}
		c.takeCopy(now, set)
		a.rbuf.Release()
	}
	if s, ok := a.receiver.Session(); ok && s != c.peer {
		// The survivor of a peer restart says so: its reports around the
		// restart are invalid, and the operator should know why.
		ev := a.cfg.Log.Warn()
		msg := "peer restarted: following its new session"
		if c.peer == 0 {
			ev, msg = a.cfg.Log.Info(), "peer session adopted"
		}
		ev.Uint64("session", s).Uint64("previous", c.peer).Str("direction", DirectionName(a.recvDir)).Msg(msg)
		c.peer = s
	}
	a.receiver.Expire(int64(nowNs))
	c.results = a.receiver.Results(c.results[:0])
	for _, r := range c.results {
		switch {
		case r.Bundle != nil:
			c.halves.addBundle(r.Bundle, now)
		case r.Failure != nil:
			c.failed(r.Failure)
		}
	}
}

// failed reports an interval the control receiver failed to reassemble:
// measured by its End markers' counts where they stand (pairCounts),
// else invalid with the failure's cause.
func (c *controller) failed(f *control.IntervalFailure) {
	c.spanDecide(f.Interval, f.Session, c.a.now())
	rc := c.halves.copies[f.Interval]
	defer delete(c.halves.copies, f.Interval) // the copy leaves halves once its lines are built
	// An interval measured by its counts is the evidence its predecessor
	// waits for, as a paired one is; otherwise its receiver copy is.
	if c.pairCounts(f, rc) {
		return
	}
	why := c.failureReason(f)
	if rc == nil && f.Interval < c.startK && why.Code == report.ControlLost {
		// It ended before we started (its End marker passed while no
		// receiver was there); what came of it is fragments (as
		// unpaired).
		why = notRunning
	}
	c.nextCopy(f.Interval-1, rc)
	c.invalid(f.Interval, 0, 0, rc, why)
}

// takeCopy clones the receiver lanes' idle copy (so the worker can reuse
// it at once) and keeps it for pairing.
func (c *controller) takeCopy(now time.Time, set *dataplane.SynSet) {
	rc := &rcopy{k: set.LastK, firstK: set.FirstK, merged: set.Merged, misrouted: set.Misrouted, warmup: set.FirstK == 0, frames: set.Frames, startNs: set.StartNs, endNs: set.EndNs, at: now,
		stamps: rxStamps{errNs: set.StampErrNs, polled: set.PollStamped}}
	c.drops.note(rc.k, c.a.segPort.Stats().RxDropped)
	if f := meanFrame(set); f > 0 {
		c.req.frame = f
	}
	c.steps.lastCopyK = max(c.steps.lastCopyK, rc.k)
	for _, l := range set.LDA {
		rc.lda = append(rc.lda, l.Clone())
	}
	for _, r := range set.RDA {
		rc.rda = append(rc.rda, r.Clone())
		// The timestamp cache follows the packets of the last
		// interval, not its 16 MiB budget.
		c.reserveCache(r, set) // repair.go
	}
	if set.LDS != nil {
		rc.lds = set.LDS.Clone()
		set.LDS.ReserveFlows()
	}
	for _, p := range set.Sample {
		rc.sample = append(rc.sample, p.Clone())
	}
	if rc.firstK < rc.k && !rc.warmup {
		c.startSpanCheck(rc, now)
	}
	if old := c.halves.keep(rc); old != nil {
		// A second cut of the same interval: the sender restarted
		// within it (its new session's first End has the old one's
		// number). Neither copy is one interval; the new one's frames
		// are reported at once, the old one is marked.
		old.merged = true
		c.emitCopy(rc.k, rc, recut)
	} else {
		// When interval k paired already and its lines wait for the next
		// interval's evidence, this copy is a second cut of k (the sender
		// restarted within it): it holds what arrived after k's first End
		// marker, the packets of k that crossed it among them. k+1's copy
		// is no evidence for k then, and it may pair before this copy's
		// sender synopses come: k is decided with this copy now.
		c.nextCopy(rc.k, rc)
	}
}

// sortedKeys are m's keys in increasing order.
func sortedKeys[V any](m map[uint64]V) []uint64 {
	ks := make([]uint64, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// pairSide pairs each sender interval with the receiver's copy of it, and
// reports invalid what waited too long for its other half: a bundle
// without a copy (End marker lost), a copy without a bundle (synopses
// lost, sender gone).
func (c *controller) pairSide(now time.Time) {
	// Bundles without a copy first: one whose End marker was lost needs
	// the copy after it before that copy pairs (spanning).
	// In interval order: an interval decided before its predecessor
	// paired would find no previous evidence (prev_missing), and a map's
	// order changes from run to run.
	c.askParts(now)
	for _, k := range sortedKeys(c.halves.bundles) {
		if _, ok := c.halves.copies[k]; !ok {
			c.unpaired(k, c.halves.bundles[k], now)
		}
	}
	for _, k := range sortedKeys(c.halves.bundles) {
		w, ok := c.halves.bundles[k]
		if !ok {
			continue
		}
		if rc, ok := c.halves.copies[k]; ok {
			if !w.asked {
				w.asked = true
				w.fetches = c.cells.start(w.b, rc, now)
			}
			if !w.rowsAsked && !c.parts.fetching(k) {
				// Once its LDA part is here: a part fetched on demand
				// may complete a bundle that went out without it.
				w.rowsAsked = true
				w.rows = c.rows.start(w.b, rc, now)
			}
			if !w.edgesAsked && !rc.warmup {
				if prev := c.led.evidenceOf(k - 1); prev != nil {
					w.edgesAsked = true
					w.edges = c.edges.start(w.b.Interval, w.b.Session, w.b.ClassFrames, rc, prev, false, now)
				} else if c.halves.bundles[k-1] != nil && c.halves.copies[k-1] != nil {
					// The previous interval pairs first (its fetches
					// are bounded): its copy's caches are half the
					// check of the cut between them.
					continue
				}
			}
			if fetching(w) || rowsFetching(w) || c.parts.fetching(k) || edgesFetching(w) {
				continue
			}
			c.applyFetches(w, rc)
			c.rows.apply(w)
			rc.edges = c.edges.counts(w.edges, len(rc.lda))
			w.edges = nil
			c.pair(w.b, rc)
			if h := c.led.waiting(k); h != nil && rc.firstK < rc.k && !rc.warmup {
				// The copy holds the interval before this one too (its
				// End marker was lost): matched against this interval's
				// sender alone it proves nothing to the next interval;
				// its timestamp caches do (spanEvidence).
				rng, seen := h.ev.delay, h.ev.seen
				h.ev = *spanEvidence(rc)
				h.ev.delay, h.ev.seen = rng, seen
			}
			c.halves.paired(k)
		}
	}
	for _, k := range sortedKeys(c.halves.copies) {
		rc, ok := c.halves.copies[k]
		if !ok {
			continue
		}
		if c.halves.bundles[k] != nil {
			// Its bundle is here and fetching more cells (bounded by the
			// fetch deadline): a partial bundle arrives only at the
			// pairing timeout, and its fetches run past it.
			continue
		}
		if now.Sub(rc.at) > c.a.cfg.PairTimeout {
			if rc.warmup {
				c.invalidCopy(k, 0, 0, rc, warmup)
				delete(c.halves.copies, k)
				continue
			}
			c.nextCopy(k-1, rc)
			c.invalid(k, 0, 0, rc, report.Cause{Code: report.ControlLost, Why: "no synopses from the sender for this interval (control frames lost or sender stopped)"})
			delete(c.halves.copies, k)
		}
	}
}

// unpaired reports bundle k invalid when its receiver copy has not come
// within endGrace: its End marker was lost (or passed before we started).
// A lost End marker's interval waits, up to an interval more, for the
// receiver's next copy, which holds k's packets with the next interval's:
// its timestamp caches tell k−1's crossing check which of k−1's lost
// packets arrived after its end (spanEvidence), and the edge check of the
// cut between k−1 and it counts them (edges.go).
func (c *controller) unpaired(k uint64, w *waiting, now time.Time) {
	if now.Sub(w.at) <= endGrace {
		return
	}
	why := report.Cause{Code: report.ControlLost, Why: "end marker lost in the segment: the receiver could not cut this interval"}
	if w.b.EndNs < int64(c.startNs) {
		// The sender ended it before we started: its End marker passed
		// while no receiver was there to cut.
		why = notRunning
	} else if c.halves.spanning(k) != nil {
		c.spanDecide(k, w.b.Session, now)
	} else if now.Sub(w.at) <= c.a.cfg.Interval+endGrace && !c.led.stopping {
		return
	}
	c.invalid(k, w.b.StartNs, w.b.EndNs, nil, why)
	delete(c.halves.bundles, k)
}

// spanDecide decides interval k−1, still waiting for its next interval,
// with the receiver copy that spans k (k's End marker was lost), if one
// came: before k is reported invalid, which would decide it without.
// The decision waits for the edge check of the cut between k−1 and the
// spanning copy (session: the sender's), which needs only what either
// side of the cut holds (spanWait).
func (c *controller) spanDecide(k, session uint64, now time.Time) {
	span := c.halves.spanning(k)
	if span == nil {
		return
	}
	p := c.led.undecided(k - 1)
	if p == nil {
		return
	}
	sw := &spanWait{k: k, span: span}
	if checks, ok := c.spanChecks[k]; ok {
		sw.edges = checks
		delete(c.spanChecks, k)
	} else if !c.led.stopping {
		sw.edges = c.edges.start(k, session, nil, span, &p.ev, true, now)
	}
	if len(sw.edges) == 0 {
		c.decideSpan(sw)
		return
	}
	c.spanWaits = append(c.spanWaits, sw)
}

// silent reports, by our own clock, every interval that ended more than a
// pairing timeout ago without anything from the sender — no End marker, no
// synopsis, no failure — so that a dead peer or a segment that drops
// control frames shows as invalid lines every interval, not as silence.
// The interval current at start is declared too when nothing claimed it
// (no End marker came to cut a warm-up copy): a restarted receiver's
// first line must follow the gap it reports (notRunning) without a hole.
//
// One step declares at most claimMemory intervals one by one: beyond
// that the claim memory cannot tell which were reported. A longer gap
// (our clock stepped forward, or the process was stopped for a while) is
// one line per class spanning it, so a clock step of days does not turn
// into millions of lines. A clock stepped back declares nothing until it
// is past nextDue again.
func (c *controller) silent(nowNs uint64) {
	iv := uint64(c.a.cfg.Interval.Nanoseconds())
	kNow := nowNs / iv
	if c.led.nextDue == 0 {
		c.led.nextDue = kNow + 1
		return
	}
	lag := uint64(c.a.cfg.PairTimeout.Nanoseconds())/iv + 2
	if kNow <= lag {
		return
	}
	end := kNow - lag // exclusive
	if end > c.led.nextDue+claimMemory {
		from, to := c.led.nextDue, end-claimMemory
		n := to - from
		c.a.cfg.Log.Warn().Uint64("from", from).Uint64("to", to-1).Uint64("intervals", n).Str("direction", DirectionName(c.a.recvDir)).
			Msg("this end's clock jumped ahead (stepped, or the process was stopped): one line spans the intervals it skipped")
		c.invalidCopy(from, int64(from*iv), int64(to*iv), nil,
			report.Cause{Code: report.Silent, Why: fmt.Sprintf("%s (one line for intervals %d to %d: %d intervals; this end's clock jumped ahead, or the appliance was stopped meanwhile)", silentCause.Why, from, to-1, n)})
		c.led.nextDue = to
	}
	c.led.declareDue(end, c.halves.waits, func(k uint64) {
		c.invalid(k, int64(k*iv), int64((k+1)*iv), nil, silentCause)
	})
}

var silentCause = report.Cause{Code: report.Silent, Why: "nothing from the sender for this interval (peer down, or the segment drops control frames)"}

// silentAtStop declares, when the appliance stops, the intervals silent
// would have declared had it run on: those before the newest one
// reported that nothing claimed (a sender killed and restarted leaves a
// few between the interval it died in and its new session's first).
//
// Only numbers our own clock could have given count: a peer of another
// --interval or another clock numbers its intervals far from ours (a
// 500 ms sender's numbers are twice a 1 s receiver's), and the span from
// our last declared interval to such a number is billions of intervals.
// Reported intervals count up to the one current now (plus the one
// finish froze ahead, and what --max-clock-skew lets a peer's clock be
// ahead) and at most claimMemory before it; from the oldest of them (or
// nextDue) to the newest, the ones not reported are declared: older ones
// the claim memory can no longer tell from reported ones.
func (c *controller) silentAtStop() {
	iv := uint64(c.a.cfg.Interval.Nanoseconds())
	skew := c.a.cfg.MaxClockSkew.Nanoseconds()
	if skew == 0 {
		skew = control.DefaultMaxClockSkew
	}
	top := c.a.cfg.Clock()/iv + 2 + uint64(skew)/iv // exclusive
	lo, hi := c.led.claimedSpan(top)
	if hi <= lo {
		return
	}
	for k := max(lo, c.led.nextDue); k < hi; k++ { // fewer than claimMemory

		if !c.led.claimed(k) {
			c.invalid(k, int64(k*iv), int64((k+1)*iv), nil, silentCause)
		}
	}
}

// pair estimates one interval from the sender's bundle and the
// receiver's copy, one report line per MEC.
func (c *controller) pair(b *control.IntervalBundle, rc *rcopy) {
	c.peerClock(b)
	c.peerStepped(b)
	if rc.warmup {
		// From the receiver's start to the first End marker: the copy
		// misses the frames before our start. Reported invalid, so a
		// restarted receiver's first interval is never missing. Its
		// synopses still show the next interval's packets that overtook
		// the End marker: kept as that interval's previous evidence.
		c.led.remember(b.Interval, c.pr.warmupEvidence(b, rc))
		c.invalidCopy(b.Interval, b.StartNs, b.EndNs, rc, warmup)
		return
	}
	if !c.claim(b.Interval) {
		c.emitCopy(b.Interval, rc, recut)
		return
	}
	c.steering(b, rc)
	c.led.begin(evidence{snd: make([]*synopsis.CompactLDA, len(rc.lda)), rcv: rc.lda, rda: make([]*synopsis.RDADecoding, len(rc.lda)), own: make([]*synopsis.RDA, len(rc.lda)), sent: b.ClassFrames,
		caches: copyCaches(rc), toNs: rc.endNs, edges: rc.edges, session: b.Session})
	defer c.release(b.Interval)
	var seen delaysSeen
	for m := range rc.lda {
		out := c.pr.lda(b, rc, m, &seen)
		r := out.line.r
		c.parts.fields(b.Interval, m, r)
		c.rows.fields(b.Interval, m, r)
		c.led.hold(out.line)
		if out.snd != nil {
			c.led.building().snd[m] = out.snd // kept until the next interval is paired
			c.ldaMicrobursts(r, c.led.last().e, out.snd, rc.lda[m], b.StartNs, b.EndNs)
		}
		if out.rda && rc.rda != nil {
			c.pairRDA(b, rc, m)
		}
	}
	for m := range rc.sample {
		c.led.hold(c.pr.sample(b, rc, m)) // sample.go
	}
	ev := c.led.building()
	ev.delay = c.confidenceRange(seen)
	ev.seen = seen.observed()
	if ev.seen != (DelayRange{}) {
		c.edges.seen = ev.seen
	}
	if rc.lds != nil {
		c.pairLDS(b, rc, ev.delay)
	}
}

// pairRDA holds class m's RDA line (pairer.rda), hands its decode to the
// crossing checks and, estimated, gives it the cells fetched for it and
// asks for its lost packets' timestamps.
func (c *controller) pairRDA(b *control.IntervalBundle, rc *rcopy, m int) {
	out := c.pr.rda(b, rc, m)
	c.led.hold(out.line)
	if out.snd == nil {
		return
	}
	if out.dec != nil {
		ev := c.led.building()
		ev.rda[m] = out.dec
		ev.own[m] = out.own
	}
	r := out.line.r
	c.cells.fields(b.Interval, m, r.Extra)
	if rc.steerWhy != "" {
		// Steering that differs at the two ends (queues.go) is not a
		// reason the repair removes: asking would let it revalidate the
		// line.
		return
	}
	c.askRepair(b.Interval, m, b.Session, out.snd, out.own, &out.st, r, c.led.last().e)
}

// pairLDS holds the interval's LDS lines (pairer.lds) and starts their
// repair from the RDA decodes of the classes just paired.
func (c *controller) pairLDS(b *control.IntervalBundle, rc *rcopy, rng DelayRange) {
	out := c.pr.lds(b, rc, rng)
	for _, l := range out.lines {
		c.led.hold(l)
	}
	if out.snd != nil {
		c.ldsRepairSetUp(b.Interval, out.snd, rc.lds, len(out.lines)) // lds_repair.go
	}
}

// confidenceRange is the delay range the interval's per-flow bounds and
// crossing windows take (delayrange.go): the assumed range widened to
// the bucket means its LDAs showed. When none showed any (no LDA
// decoded, or every bucket lost a packet), the latest interval's range
// that did stands in: the queue that interval saw is the best guess at
// this one's.
func (c *controller) confidenceRange(seen delaysSeen) DelayRange {
	r, ok := seen.rangeOf(c.a.cfg.Assumed, c.a.cfg.Bounds)
	switch {
	case ok:
		c.lastRange = r
	case c.lastRange != DelayRange{}:
		r = c.lastRange
	}
	return r
}

// partReason is the cause of a line whose part the sender's bundle
// lacks: lost on the segment (a partial bundle: the other parts measure
// their lines), or never sent. Its scope is both: the line has the
// receiver's count alone, no sender's.
func partReason(b *control.IntervalBundle, key control.PartKey, what string) report.Cause {
	if detail, lost := b.Missing[key]; lost {
		return report.Cause{Code: report.FragmentLost, Why: fmt.Sprintf("%s: the sender's %s (%s; the parts that arrived are measured)", control.ReasonFragmentLost, what, detail)}
	}
	return report.Cause{Code: report.FragmentLost, Why: "no " + what + " in the sender's synopses"}
}

// failureReason is the report cause of a control failure. A
// configuration mismatch names the settings that differ, in the reason and
// in the log: the operator's fix is in it.
func (c *controller) failureReason(f *control.IntervalFailure) report.Cause {
	switch f.Reason {
	case control.ReasonSessionRestart:
		return report.Cause{Code: report.Session, Why: f.Reason.String()}
	case control.ReasonConfigMismatch:
	default:
		return report.Cause{Code: report.ControlLost, Why: f.Reason.String()}
	}
	why := report.Cause{Code: report.PeerMismatch, Why: f.Reason.String() + ": " + f.Detail}
	pm := &PeerMismatch{At: c.a.now(), Interval: f.Interval, Detail: f.Detail}
	for _, item := range strings.Split(f.Detail, "; ") {
		if name, _, ok := strings.Cut(item, ": sender "); ok {
			pm.Settings = append(pm.Settings, name)
		}
	}
	c.a.peerConfig.Store(pm)
	c.a.cfg.Log.Error().Uint64("interval", f.Interval).Str("differs", f.Detail).Msg("the sender's synopsis configuration differs from ours: give both ends the same --synopsis, sizing, --mec and --interval")
	return why
}

// sessionReason says why a paired interval cannot be trusted as one
// interval (sender restart, sender overrun, merged receiver copy: code
// session; the ends steer differently: peer_mismatch), or the zero Cause.
func sessionReason(flags uint64, rc *rcopy) report.Cause {
	session := func(why string) report.Cause { return report.Cause{Code: report.Session, Why: why} }
	switch {
	case flags&payloadPartial != 0 && rc.merged:
		// A killed sender sent no End marker for the interval it died
		// in: the receiver's copy ran on to the new session's first.
		return session("sender restarted: first interval of its new session is partial, and the receiver's copy also holds what arrived since the old session's last end marker")
	case flags&payloadPartial != 0:
		return session("sender restarted: first interval of its new session is partial")
	case flags&payloadMerged != 0:
		return session("sender's control side fell behind: its copy spans several intervals")
	case rc.merged:
		return session("receiver's copy spans more than this interval (it started mid-interval, or an end marker was lost)")
	case rc.steerWhy != "":
		return report.Cause{Code: report.PeerMismatch, Why: rc.steerWhy}
	}
	return report.Cause{}
}

// release ends pair: the interval's lines wait for the next interval's
// synopses (crossing.go), then for the cross-class pass (classChanges).
func (c *controller) release(k uint64) {
	h := c.led.close(k, c.a.now())
	if p := c.led.undecided(k - 1); p != nil {
		c.decide(p, &h.ev)
	}
	if n := c.led.waiting(k + 1); n != nil {
		c.decide(h, &n.ev)
	} else if ev := c.led.recentEvidence(k + 1); ev != nil {
		c.decide(h, ev)
	}
	c.flush()
}

// classMoves counts, from the RDA decodes, the packets that changed
// class inside the segment around interval k: out[m], identities decoded
// lost in class m of k that the receiver recorded as extra in another
// class of k, k-1 or k+1 (a remarked packet, possibly also reordered
// past an End marker); in[m], identities decoded extra in class m of k
// that are lost in another class of k, k-1 or k+1. known is false when
// any class's decode of k is missing or incomplete: the decodes cannot
// then name every move, and the estimates' heuristic decides
// (synopsis.ClassChanges). A neighbour is searched when every class's
// decode of it is complete. One that is not (never paired, a spanning
// copy, a partial decode) cannot show a packet of k that moved class and
// crossed that boundary: where k shows moves of its own (the segment
// remarks), known is false then too; where it shows none, the
// neighbour's lines answer for their own crossings.
func classMoves(prev, cur, next *evidence) (out, in []int, known bool) {
	complete := func(ev *evidence) bool {
		if ev == nil || len(ev.rda) == 0 || (cur != nil && len(ev.rda) != len(cur.rda)) {
			return false
		}
		for _, d := range ev.rda {
			if d == nil || !d.Complete {
				return false
			}
		}
		return true
	}
	if !complete(cur) {
		return nil, nil, false
	}
	searched := []*evidence{cur}
	unsearched := false
	for _, ev := range []*evidence{prev, next} {
		switch {
		case ev != nil && ev.nothing: // nothing recorded after k: nothing crossed
		case complete(ev):
			searched = append(searched, ev)
		default:
			unsearched = true
		}
	}
	lostIn := map[uint64][]int{}  // identity → classes it was decoded lost in
	extraIn := map[uint64][]int{} // identity → classes it was decoded extra in
	for _, ev := range searched {
		for m, d := range ev.rda {
			for _, id := range d.Lost {
				lostIn[id] = append(lostIn[id], m)
			}
			for _, id := range d.Extra {
				extraIn[id] = append(extraIn[id], m)
			}
		}
	}
	other := func(cs []int, m int) bool {
		for _, o := range cs {
			if o != m {
				return true
			}
		}
		return false
	}
	classes := len(cur.rda)
	out, in = make([]int, classes), make([]int, classes)
	moves := 0
	for m, d := range cur.rda {
		for _, id := range d.Lost {
			if other(extraIn[id], m) {
				out[m]++
				moves++
			}
		}
		for _, id := range d.Extra {
			if other(lostIn[id], m) {
				in[m]++
				moves++
			}
		}
	}
	if unsearched && moves > 0 {
		return nil, nil, false
	}
	return out, in, true
}

// classChanges: packets that changed class inside the segment show only
// across the interval's classes, so every line of the interval waits for
// that pass. Where every class's RDA decode of the interval and of its
// neighbours is complete, the decodes name each packet that moved
// (classMoves) and exactly the classes it left and entered are invalid;
// otherwise the estimates' heuristic (synopsis.ClassChanges) marks every
// class with extras and every class with loss beside them, and a loss
// the RDA vouches for is not claimed beside a class whose decode could
// not show what moved into it (undecodedMoves).
func (c *controller) classChanges(h *heldInterval, prev, next *evidence) {
	names := c.a.cfg.Classifier.Names()
	if len(names) < 2 {
		return
	}
	held, cur := h.lines, &h.ev
	if out, in, known := classMoves(prev, cur, next); known {
		for _, l := range held {
			if l.flow != nil || l.e == nil || l.mec >= len(out) || (l.r.Synopsis != "lda" && l.r.Synopsis != "rda") {
				continue
			}
			if why := movedReason(names, l.mec, out[l.mec], in[l.mec]); why != "" {
				l.r.Invalidate(report.ClassChange, why)
			}
		}
		return
	}
	whys := map[string][]string{}
	for _, kind := range []string{"lda", "rda"} {
		es := make([]*synopsis.Estimate, len(names))
		lines := make([]*report.Interval, len(names))
		for _, l := range held {
			if l.e != nil && l.r.Synopsis == kind && l.mec < len(es) {
				es[l.mec], lines[l.mec] = l.e, l.r
			}
		}
		whys[kind] = synopsis.ClassChanges(es, names)
		for m, why := range whys[kind] {
			// Another cause already named (a session's partial interval)
			// leads; the estimator's own (extra packets) and the crossing
			// checks' follow the cause found (report.Code's precedence).
			if r := lines[m]; why != "" && r != nil {
				r.Invalidate(report.ClassChange, why)
			}
		}
	}
	// The suspicion is about the class's packets, not about one
	// synopsis: where one kind shows the extras another class's loss may
	// be and the other kind cannot (its part of that class was lost on
	// the segment, so its heuristic saw no extras there), the class's
	// lines of both kinds are suspect. Without this an RDA line of a
	// class that lost packets to remarking stayed valid, its loss counting
	// the remarked packets, whenever the RDA of the class they moved into
	// was lost.
	for _, l := range held {
		if l.flow != nil || l.e == nil || (l.r.Synopsis != "lda" && l.r.Synopsis != "rda") || l.r.Verdict().Has(report.ClassChange) {
			continue
		}
		other := "rda"
		if l.r.Synopsis == "rda" {
			other = "lda"
		}
		if w := whys[other]; l.mec < len(w) && w[l.mec] != "" {
			l.r.Invalidate(report.ClassChange, w[l.mec])
		}
	}
	c.unsentExtras(held, cur, names)
	c.undecodedMoves(h, prev, next)
}

// unsentExtras: a class whose synopses were all lost shows its extras to
// neither heuristic; its End-marker count does: more packets recorded in it
// than its sender sent may be another class's loss, moved.
func (c *controller) unsentExtras(held []heldLine, cur *evidence, names []string) {
	if cur == nil || cur.sent == nil {
		return
	}
	seen := make([]bool, len(names))
	for _, l := range held {
		if l.flow == nil && l.e != nil && l.mec < len(seen) {
			seen[l.mec] = true
		}
	}
	for o, sent := range cur.sent {
		if o >= len(seen) || seen[o] || o >= len(cur.rcv) || cur.rcv[o] == nil || cur.rcv[o].Count() <= sent {
			continue
		}
		why := fmt.Sprintf("the receiver recorded %d packets of class %s in this interval, its sender %d (its synopses were lost): packets may have changed class inside the segment, this class's loss among them",
			cur.rcv[o].Count(), names[o], sent)
		for _, l := range held {
			if l.flow != nil || l.e == nil || l.mec == o || (l.r.Synopsis != "lda" && l.r.Synopsis != "rda") {
				continue
			}
			if l.e.Lost > 0 || l.e.Sent > l.e.Received {
				l.r.Invalidate(report.ClassChange, why)
			}
		}
	}
}

// undecodedMoves: the heuristic sees only the extras a decode named. A
// class whose RDA decode of interval k, k-1 or k+1 is missing or
// incomplete may hold any number of packets the segment remarked out of
// another class of k (moved, or moved and reordered past an End marker)
// without one of them showing: an incomplete decode lists only some of
// its identities, and a receiver-only packet hides from its residual
// cells (ResidualExtraCells) wherever it shares a cell with more
// undecoded lost ones. Those packets are counted lost in the class they
// left, so a loss the RDA vouches for (an RDA line, or an LDA line whose
// loss the RDA verified) is not claimed beside such a class, unless the
// End markers' per-class counts prove it (countProof) and it is theirs.
// An LDA line that stands on its own checks keeps them: without the RDA
// it is judged as without it configured.
func (c *controller) undecodedMoves(h *heldInterval, prev, next *evidence) {
	if c.a.cfg.Syn.RDA == nil {
		return
	}
	names := c.a.cfg.Classifier.Names()
	classes := min(len(names), len(h.ev.rda))
	// where[m]: the first of k, k-1, k+1 in which class m's decode
	// could not show what moved into it ("" where every one could).
	where := make([]string, classes)
	for _, n := range []struct {
		ev   *evidence
		what string
	}{{&h.ev, "this interval"}, {prev, "the previous interval"}, {next, "the next interval"}} {
		// A neighbour never paired leaves the lines with loss invalid
		// already (the crossing checks need its decode of the same
		// class); one where the receiver recorded nothing holds nothing.
		if n.ev == nil || n.ev.nothing {
			continue
		}
		for m := 0; m < classes; m++ {
			if m < len(n.ev.rcv) && n.ev.rcv[m] != nil && n.ev.rcv[m].Count() == 0 {
				continue // the receiver recorded nothing in the class there (a quiet class whose RDA the budget left out)
			}
			if where[m] == "" && (m >= len(n.ev.rda) || n.ev.rda[m] == nil || !n.ev.rda[m].Complete) {
				where[m] = n.what
			}
		}
	}
	for i := range h.lines {
		l := &h.lines[i]
		if l.flow != nil || l.counts || l.e == nil || l.mec >= classes || !l.r.LossValid || l.r.Lost == 0 {
			continue
		}
		if l.r.Synopsis != "rda" && (l.r.Synopsis != "lda" || l.r.Extra["loss_verified_by"] != "rda") {
			continue
		}
		o := -1
		for m := range where {
			if m != l.mec && where[m] != "" {
				o = m
				break
			}
		}
		if o < 0 || c.countsProveLoss(h, l, prev, next) {
			continue
		}
		l.unseenMove = true
		l.r.Invalidate(report.ClassChange, fmt.Sprintf("class %s's RDA decode of %s is missing or incomplete: packets remarked out of class %s inside the segment could be there unseen, and the %d lost here may be among them",
			names[o], where[o], names[l.mec], l.r.Lost))
	}
}

// countsProveLoss says whether the End markers' per-class counts prove
// line l's loss: nothing casts doubt on them (countProof) and l's sent,
// received and lost are theirs.
func (c *controller) countsProveLoss(h *heldInterval, l *heldLine, prev, next *evidence) bool {
	m := l.mec
	if m >= len(h.ev.sent) || m >= len(h.ev.rcv) || h.ev.rcv[m] == nil || len(c.countProof(h, m, prev, next, false)) > 0 {
		return false
	}
	sent, recv := h.ev.sent[m], h.ev.rcv[m].Count()
	return l.r.Sent == sent && l.r.Received == recv && sent >= recv && l.r.Lost == sent-recv
}

// movedReason is the reason of class m's lines when the RDA decodes
// found out packets of m recorded in another class and in packets of
// another class recorded in m ("" when neither).
func movedReason(names []string, m, out, in int) string {
	if out == 0 && in == 0 {
		return ""
	}
	why := "packets changed class inside the segment (DSCP remarked, VLAN retagged?):"
	if out > 0 {
		why += fmt.Sprintf(" %d sent in class %s were recorded in another class (counted lost here)", out, names[m])
	}
	if out > 0 && in > 0 {
		why += ";"
	}
	if in > 0 {
		why += fmt.Sprintf(" %d recorded in class %s were sent in another class", in, names[m])
	}
	return why
}

// ReasonWarmup is the reason of the interval a receiver started in: its
// copy lacks the frames before the start. Not a fault of the segment.
const ReasonWarmup = "receiver started during this interval: its copy misses the frames before its start"

var warmup = report.Cause{Code: report.Warmup, Why: ReasonWarmup}

// ReasonStopped is the reason of the receiver's interval in progress when
// the appliance stops: the sender's End marker for it never came.
const ReasonStopped = "stopped before the sender's end marker of this interval arrived"

var stopped = report.Cause{Code: report.Stopped, Why: ReasonStopped}

// invalid reports interval k invalid for every MEC, with what is known.
// The receiver's warm-up copy is reported with ReasonWarmup whatever
// reason is given: its own is the first cause.
func (c *controller) invalid(k uint64, startNs, endNs int64, rc *rcopy, reason report.Cause) {
	if rc != nil && rc.warmup {
		reason = warmup
	}
	c.invalidCopy(k, startNs, endNs, rc, reason)
}

func (c *controller) invalidCopy(k uint64, startNs, endNs int64, rc *rcopy, reason report.Cause) {
	if !c.claim(k) {
		c.emitCopy(k, rc, recut)
		return
	}
	for m := 0; m < c.a.cfg.Syn.Classes; m++ {
		r := c.pr.line(k, startNs, endNs, m)
		var recv uint64
		if rc != nil {
			recv = rc.lda[m].Count()
			if startNs == 0 {
				r.StartNs, r.EndNs = int64(rc.startNs), int64(rc.endNs)
			}
		}
		c.emitInvalid(r, recv, reason)
	}
}

// ReasonNotRunning is the reason of an interval that ended while no
// receiver ran (the appliance was down, killed or restarting): nobody
// held a copy of its frames. A restarted receiver reports these from the
// last interval its --report file holds (Config.LastReported).
const ReasonNotRunning = "receiver was not running when this interval ended: no copy of it"

var notRunning = report.Cause{Code: report.NotRunning, Why: ReasonNotRunning}

// MaxNotRunning bounds the intervals a restarted receiver reports one by
// one for the time it was down (an hour of 1 s intervals); a longer gap
// is one line per class spanning all of it, so a receiver down for days
// does not spend its start writing millions of lines.
const MaxNotRunning = 3600

// notRunning reports, before k (the first interval this run reports),
// the intervals since the last one an earlier run reported, invalid with
// ReasonNotRunning. Interval numbers are the sender's clock in units of
// the interval, not a per-session count: a sender that restarted meanwhile
// numbers them alike, and the gap is the same. Intervals from our start
// on are this run's own: at most the one current at start is left to the
// other paths (a sender clock slightly ahead ends it before we start).
// Numbers that did not move forward (a clock stepped back, a file of
// another setup) are logged and no gap is invented.
func (c *controller) notRunning(k uint64) {
	from := c.resume
	c.resume = 0
	to := min(k, c.startK+1) // exclusive
	log, dir := c.a.cfg.Log, DirectionName(c.a.recvDir)
	if to <= from {
		if k+1 < from {
			log.Warn().Uint64("last_reported", from-1).Uint64("first", k).Str("direction", dir).
				Msg("the first interval of this run is before the last one the report file holds (clock stepped back, or another setup's file): no gap reported")
		}
		return
	}
	iv := uint64(c.a.cfg.Interval.Nanoseconds())
	n := to - from
	log.Warn().Uint64("from", from).Uint64("to", to-1).Uint64("intervals", n).Str("direction", dir).
		Msg("receiver was not running: the intervals since the last reported one are reported invalid")
	if n > MaxNotRunning {
		log.Warn().Uint64("intervals", n).Int("max", MaxNotRunning).Str("direction", dir).
			Msg("receiver was down too long for a line per interval: one line spans the whole gap")
		c.invalidCopy(from, int64(from*iv), int64(to*iv), nil,
			report.Cause{Code: report.NotRunning, Why: fmt.Sprintf("%s (one line for intervals %d to %d: %d intervals)", ReasonNotRunning, from, to-1, n)})
		return
	}
	for j := from; j < to; j++ {
		c.invalidCopy(j, int64(j*iv), int64((j+1)*iv), nil, notRunning)
	}
}

// ReasonRecut is the reason of a receiver copy of an interval that already
// has its line: the sender restarted within the interval, and its new
// session cut it again. Reported so its frames are in some line.
const ReasonRecut = "second cut of an interval already reported (sender restarted within it)"

var recut = report.Cause{Code: report.Recut, Why: ReasonRecut}

// emitCopy reports the frames of rc as interval k, invalid, without
// claiming k (it has its line already); nothing for a copy without frames.
func (c *controller) emitCopy(k uint64, rc *rcopy, reason report.Cause) {
	// The second cut holds what arrived after k's first End marker: the
	// packets of k that crossed it are there, not in k+1.
	c.nextCopy(k, rc)
	if rc == nil || rc.frames == 0 {
		return
	}
	for m := 0; m < c.a.cfg.Syn.Classes; m++ {
		r := c.pr.line(k, int64(rc.startNs), int64(rc.endNs), m)
		c.emitInvalid(r, rc.lda[m].Count(), reason)
	}
}

func (c *controller) emitInvalid(r *report.Interval, received uint64, reason report.Cause) {
	r.Received = received
	r.Invalidate(reason.Code, reason.Why)
	c.emit(r)
}

// claim marks interval k reported and says whether it was free: a second
// verdict on the same interval (e.g. a failure after a restart's partial
// interval) is logged, not reported again.
func (c *controller) claim(k uint64) bool {
	if c.resume != 0 {
		c.notRunning(k)
	}
	if !c.led.claim(k) {
		c.a.cfg.Log.Debug().Uint64("interval", k).Msg("interval already reported")
		return false
	}
	return true
}

func (c *controller) emit(r *report.Interval) {
	if c.led.pairing() {
		c.led.hold(heldLine{r: r})
		return
	}
	if p := c.led.undecided(uint64(r.Interval) - 1); p != nil && !c.spanWaiting(p.k) {
		// The next interval is reported without pairing: its synopses
		// will not come to check the waiting one. (One whose next copy
		// spans it is decided with that copy: spanTick.)
		c.decide(p, nil)
	}
	c.led.queue(r)
	c.flush()
}

// out hands one line to the report sink.
func (c *controller) out(r *report.Interval) {
	timed := c.led.gone(r)
	analyze.WithdrawSample(r) // a cause decide found may have made its quantiles untrusted
	c.rdaMicrobursts(r, timed)
	c.clockStepLine(r)
	c.clockLine(r)
	if c.a.cfg.Insecure {
		// Anyone on the segment could have forged this line's inputs.
		if r.Extra == nil {
			r.Extra = map[string]any{}
		}
		r.Extra["insecure"] = true
	}
	if c.a.cfg.Reports != nil {
		c.a.cfg.Reports(r)
	}
}

// final reports what is still waiting when the appliance stops, oldest
// first.
func (c *controller) final() {
	// Collect every line first: the flush at the end puts them in order.
	c.led.stopping = true
	// Intervals the control receiver still holds incomplete fail now (it
	// would have failed them at its timeout); pair what completed.
	c.a.receiver.Expire(math.MaxInt64)
	c.results = c.a.receiver.Results(c.results[:0])
	for _, r := range c.results {
		switch {
		case r.Bundle != nil:
			if rc, ok := c.halves.copies[r.Bundle.Interval]; ok {
				c.pair(r.Bundle, rc)
				delete(c.halves.copies, r.Bundle.Interval)
			} else {
				c.halves.addBundle(r.Bundle, time.Time{})
			}
		case r.Failure != nil:
			c.failed(r.Failure) // as step does
		}
	}
	c.pairFetchedAtStop()
	c.spanTick(time.Time{})
	act := c.activeCopy()
	c.decideAtStop(act)
	// Oldest first, whatever holds them.
	type left struct {
		k  uint64
		rc *rcopy
		w  *waiting
	}
	var ls []left
	for k, rc := range c.halves.copies {
		ls = append(ls, left{k: k, rc: rc})
	}
	for k, w := range c.halves.bundles {
		ls = append(ls, left{k: k, w: w})
	}
	if act != nil {
		ls = append(ls, left{k: act.k, rc: act})
	}
	sort.SliceStable(ls, func(i, j int) bool { return ls[i].k < ls[j].k })
	for _, l := range ls {
		switch {
		case l.w != nil:
			c.invalid(l.k, l.w.b.StartNs, l.w.b.EndNs, nil, report.Cause{Code: report.Stopped, Why: "stopped before the receiver cut this interval"})
		case l.rc.active:
			c.invalid(l.k, 0, 0, l.rc, stopped)
		default:
			c.invalid(l.k, 0, 0, l.rc, report.Cause{Code: report.Stopped, Why: "stopped before the sender's synopses for this interval arrived"})
		}
	}
	c.silentAtStop()
	c.abandonRepairs()
	c.led.stopping = false
	// Nothing is declared silent after this: no line waits for an
	// interval to be (silentHole).
	c.led.nextDue = math.MaxUint64
	c.flush()
}

// activeCopy clones the receiver's copy in progress at stop (the workers
// have stopped: nothing writes it any more), or nil when it holds nothing.
// Its interval is the one after the last End marker; for a receiver that
// never saw one, the interval current by our clock.
func (c *controller) activeCopy() *rcopy {
	a := c.a
	set := a.rbuf.Active()
	if set.Frames == 0 {
		return nil
	}
	k := set.FirstK
	if k == 0 {
		k = a.cfg.Clock() / uint64(a.cfg.Interval.Nanoseconds())
	}
	rc := &rcopy{k: k, warmup: set.FirstK == 0, frames: set.Frames, startNs: set.StartNs, endNs: a.cfg.Clock(), active: true}
	for _, l := range set.LDA {
		rc.lda = append(rc.lda, l.Clone())
	}
	for _, r := range set.RDA {
		rc.rda = append(rc.rda, r.Clone())
	}
	return rc
}
