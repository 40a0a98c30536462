package appliance

import (
	"fmt"
	"math"
	"sort"
	"sync/atomic"
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
// reports. Everything here runs on one goroutine; Stop talks to it through
// atomics and channels only.
type controller struct {
	a        *Appliance
	bufs     [][]byte
	pending  [][]byte
	results  []control.Result
	rcopies  map[uint64]*rcopy
	bundles  map[uint64]*waiting
	first    bool // the next shipped sender interval is the session's first
	frozen   atomic.Bool
	shipped  atomic.Uint64 // last sender interval handed to the inject ring
	settled  atomic.Bool   // nothing queued to send, nothing waiting to pair
	scratch  []byte
	cl       synopsis.CompactLDA
	reported atomic.Uint64   // interval lines emitted
	movedAt  atomic.Int64    // when the interval clock last moved, ns (time.Now)
	done     map[uint64]bool // intervals already reported: one line per interval and MEC
	doneK    []uint64        // their order, to forget old ones
	nextDue  uint64          // the next interval the liveness check may declare silent
	pairing  bool            // pair is running: emit holds lines for the cross-class pass
	held     []heldLine
}

// heldLine is a line pair has built, with the estimate behind it (nil for
// lines without one).
type heldLine struct {
	r   *report.Interval
	e   *synopsis.Estimate
	mec int
}

// rcopy is the receiver's copy of one interval, cloned off the double
// buffer so the worker can reuse it at once.
type rcopy struct {
	k              uint64
	lda            []*synopsis.LDA
	rda            []*synopsis.RDA // nil without RDA
	lds            *synopsis.LDS   // nil without LDS
	merged         bool
	warmup         bool // the receiver's first copy: from its start to the first End marker
	frames         uint64
	stamps         rxStamps // the receiver's timestamp error (stamps.go)
	startNs, endNs uint64
	at             time.Time
}

type waiting struct {
	b  *control.IntervalBundle
	at time.Time
}

func newController(a *Appliance) *controller {
	return &controller{a: a, rcopies: map[uint64]*rcopy{}, bundles: map[uint64]*waiting{}, first: true, done: map[uint64]bool{}}
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

func (c *controller) run() {
	defer close(c.a.done)
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-c.a.stop:
			c.step(time.Now())
			c.final()
			return
		case <-tick.C:
			c.step(time.Now())
		}
	}
}

// finishBy freezes the interval clock one interval ahead, so the sender
// closes the current interval now, and waits until it is shipped and the
// peer's intervals are paired, or the deadline.
func (c *controller) finishBy(deadline time.Time) {
	c.frozen.Store(true)
	last := c.a.epoch.Load()
	// First let the sender lane catch up with the clock as it stands (a
	// descheduled worker may not have closed last−1 yet): moving the clock
	// twice before it polls would merge two intervals.
	for c.shipped.Load()+1 < last && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	// Two End markers within a few ms would make the peer's receiver flip
	// twice before its control side has taken the first copy (it drains
	// every ms): an overrun that merges the last two intervals. Leave the
	// last natural flip some room.
	for time.Since(time.Unix(0, c.movedAt.Load())) < minFlipGap && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	c.a.epoch.Store(last + 1)
	// Settled must hold for a while: the peer's last End marker and
	// synopses may still be on the segment when ours are out.
	var quietSince time.Time
	for time.Now().Before(deadline) {
		if c.shipped.Load() >= last && c.settled.Load() {
			if quietSince.IsZero() {
				quietSince = time.Now()
			} else if time.Since(quietSince) >= settleQuiet {
				return
			}
		} else {
			quietSince = time.Time{}
		}
		time.Sleep(time.Millisecond)
	}
}

func (c *controller) step(now time.Time) {
	a := c.a
	nowNs := a.cfg.Clock()
	if !c.frozen.Load() {
		if k := nowNs / uint64(a.cfg.Interval.Nanoseconds()); k > a.epoch.Load() {
			a.epoch.Store(k)
			c.movedAt.Store(now.UnixNano())
		}
	}
	// Sender: encode every copy the worker has handed over.
	for {
		set, ok := a.sbuf.Idle()
		if !ok {
			break
		}
		c.ship(set, int64(nowNs))
		a.sbuf.Release()
	}
	if len(c.pending) > 0 {
		n := a.inject.EnqueueBurst(c.pending)
		for i := 0; i < n; i++ {
			c.pending[i] = nil
		}
		c.pending = c.pending[n:]
	}
	// Receiver: control frames the worker stripped.
	for {
		f, _, ok := a.toCtl.Get()
		if !ok {
			break
		}
		a.receiver.Consume(f, int64(nowNs)) // rejects are counted by the Receiver
		a.toCtl.Done()
	}
	for {
		set, ok := a.rbuf.Idle()
		if !ok {
			break
		}
		rc := &rcopy{k: set.LastK, merged: set.Merged, warmup: set.FirstK == 0, frames: set.Frames, startNs: set.StartNs, endNs: set.EndNs, at: now,
			stamps: rxStamps{errNs: set.StampErrNs, polled: set.PollStamped}}
		for _, l := range set.LDA {
			rc.lda = append(rc.lda, l.Clone())
		}
		for _, r := range set.RDA {
			rc.rda = append(rc.rda, r.Clone())
		}
		if set.LDS != nil {
			rc.lds = set.LDS.Clone()
		}
		if old, dup := c.rcopies[rc.k]; dup {
			old.merged = true // cannot happen with a monotonic End guard; never pair it
		} else {
			c.rcopies[rc.k] = rc
		}
		a.rbuf.Release()
	}
	a.receiver.Expire(int64(nowNs))
	c.results = a.receiver.Results(c.results[:0])
	for _, r := range c.results {
		switch {
		case r.Bundle != nil:
			c.bundles[r.Bundle.Interval] = &waiting{b: r.Bundle, at: now}
		case r.Failure != nil:
			f := r.Failure
			c.invalid(f.Interval, 0, 0, c.rcopies[f.Interval], f.Reason.String())
			delete(c.rcopies, f.Interval)
		}
	}
	for k, w := range c.bundles {
		if rc, ok := c.rcopies[k]; ok {
			c.pair(w.b, rc)
			delete(c.rcopies, k)
			delete(c.bundles, k)
		} else if now.Sub(w.at) > endGrace {
			c.invalid(k, w.b.StartNs, w.b.EndNs, nil, "end marker lost in the segment: the receiver could not cut this interval")
			delete(c.bundles, k)
		}
	}
	for k, rc := range c.rcopies {
		if now.Sub(rc.at) > a.cfg.PairTimeout {
			if rc.warmup {
				delete(c.rcopies, k)
				continue
			}
			c.invalid(k, 0, 0, rc, "no synopses from the sender for this interval (control frames lost or sender stopped)")
			delete(c.rcopies, k)
		}
	}
	c.silent(nowNs)
	c.settled.Store(len(c.pending) == 0 && a.inject.Count() == 0 && len(c.rcopies) == 0 && len(c.bundles) == 0)
}

// silent reports, by our own clock, every interval that ended more than a
// pairing timeout ago without anything from the sender — no End marker, no
// synopsis, no failure — so that a dead peer or a segment that drops
// control frames shows as invalid lines every interval, not as silence.
// The interval current at start is warm-up and never declared.
func (c *controller) silent(nowNs uint64) {
	iv := uint64(c.a.cfg.Interval.Nanoseconds())
	kNow := nowNs / iv
	if c.nextDue == 0 {
		c.nextDue = kNow + 1
		return
	}
	lag := uint64(c.a.cfg.PairTimeout.Nanoseconds())/iv + 2
	for ; c.nextDue+lag < kNow; c.nextDue++ {
		k := c.nextDue
		if c.done[k] || c.rcopies[k] != nil || c.bundles[k] != nil {
			continue
		}
		c.invalid(k, int64(k*iv), int64((k+1)*iv), nil, "nothing from the sender for this interval (peer down, or the segment drops control frames)")
	}
}

// ship encodes one sender copy and queues its control frames.
func (c *controller) ship(set *dataplane.SynSet, nowNs int64) {
	a := c.a
	var flags uint64
	if set.Merged {
		flags |= payloadMerged
	}
	if c.first {
		flags |= payloadPartial
		c.first = false
	}
	stamp := uint64(0)
	if set.Frames > 0 {
		stamp = (set.StampErrNs + set.Frames - 1) / set.Frames
	}
	parts := make([]control.Part, 0, len(set.LDA))
	for m, l := range set.LDA {
		p := appendPayload(nil, payloadHeader{StampErrNs: stamp, Frames: l.Count(), Flags: flags})
		p, err := l.AppendCompact(p, a.cfg.Bounds)
		if err != nil {
			a.cfg.Log.Error().Err(err).Uint64("interval", set.LastK).Msg("encoding the sender LDA")
			return
		}
		parts = append(parts, control.Part{PartKey: control.PartKey{MEC: uint16(m), Kind: control.KindLDA}, Payload: p})
		if set.RDA != nil {
			q := appendPayload(nil, payloadHeader{StampErrNs: stamp, Frames: uint64(set.RDA[m].Count()), Flags: flags})
			if q, err = set.RDA[m].AppendBinary(q); err != nil {
				a.cfg.Log.Error().Err(err).Uint64("interval", set.LastK).Msg("encoding the sender RDA")
				return
			}
			parts = append(parts, control.Part{PartKey: control.PartKey{MEC: uint16(m), Kind: control.KindRDA}, Payload: q})
		}
	}
	if set.LDS != nil {
		q := appendPayload(nil, payloadHeader{StampErrNs: stamp, Frames: set.LDS.Packets(), Flags: flags})
		q, err := set.LDS.AppendBinary(q)
		if err != nil {
			a.cfg.Log.Error().Err(err).Uint64("interval", set.LastK).Msg("encoding the sender LDS")
			return
		}
		parts = append(parts, control.Part{PartKey: control.PartKey{MEC: 0, Kind: control.KindLDS}, Payload: q})
	}
	// ControlCopies sends the whole interval (Hello and fragments) more
	// than once, each copy with fresh sequence numbers: the receiver keeps
	// the first of every fragment and counts the rest as duplicates, so an
	// interval fails only if every copy of some fragment is lost.
	for copyN := 0; copyN < a.cfg.ControlCopies; copyN++ {
		frames, err := a.sender.AppendInterval(c.bufs, set.LastK, nowNs, parts)
		if err != nil {
			a.cfg.Log.Error().Err(err).Uint64("interval", set.LastK).Msg("building control frames")
			return
		}
		c.bufs = frames[:cap(frames)]
		for _, f := range frames {
			// The lane copies each frame into a port buffer when it sends
			// it; until then the frame must not change, so it gets its own.
			c.pending = append(c.pending, append([]byte(nil), f...))
		}
	}
	c.shipped.Store(set.LastK)
}

// pair estimates one interval from the sender's bundle and the
// receiver's copy, one report line per MEC.
func (c *controller) pair(b *control.IntervalBundle, rc *rcopy) {
	a := c.a
	if !c.claim(b.Interval) {
		return
	}
	if rc.warmup {
		// From the receiver's start to the first End marker: not an
		// interval of the measurement at all (both sides started in the
		// middle of one). Not reported.
		a.cfg.Log.Debug().Uint64("interval", b.Interval).Msg("warm-up interval not reported")
		return
	}
	c.pairing = true
	defer c.release()
	for m := range rc.lda {
		r := c.line(b.Interval, b.StartNs, b.EndNs, m)
		r.ControlFrames, r.ControlBytes = b.ControlFrames, b.ControlBytes
		payload, ok := b.Payloads[control.PartKey{MEC: uint16(m), Kind: control.KindLDA}]
		if !ok {
			c.emitInvalid(r, rc.lda[m].Count(), "no LDA for this class in the sender's synopses")
			continue
		}
		h, body, err := parsePayload(payload)
		if err == nil {
			err = c.cl.UnmarshalBinary(body)
		}
		if err != nil {
			c.emitInvalid(r, rc.lda[m].Count(), fmt.Sprintf("sender synopsis does not decode: %v", err))
			continue
		}
		e, err := synopsis.EstimateLDACompact(&c.cl, rc.lda[m], a.cfg.Conf)
		if err != nil {
			c.emitInvalid(r, rc.lda[m].Count(), fmt.Sprintf("sender synopsis does not match ours: %v", err))
			continue
		}
		analyze.Fill(r, e)
		c.stamps(r, h.StampErrNs, rc)
		if why := sessionReason(h.Flags, rc); why != "" {
			r.Valid, r.Reason = false, why
		}
		c.hold(r, e, m)
		if rc.rda != nil {
			c.pairRDA(b, rc, m)
		}
	}
	if rc.lds != nil {
		c.pairLDS(b, rc)
	}
}

// sessionReason says why a paired interval cannot be trusted as one
// interval (sender restart, sender overrun, merged receiver copy), or "".
func sessionReason(flags uint64, rc *rcopy) string {
	switch {
	case flags&payloadPartial != 0:
		return "sender restarted: first interval of its new session is partial"
	case flags&payloadMerged != 0:
		return "sender's control side fell behind: its copy spans several intervals"
	case rc.merged:
		return "receiver's copy spans more than this interval (it started mid-interval, or an end marker was lost)"
	}
	return ""
}

// pairRDA reports the RDA line of one MEC. Lost packets' cells are left
// out (their sender timestamps would need a round trip, docs/rda.md), so
// under loss the mean is valid but bounded, not exact.
func (c *controller) pairRDA(b *control.IntervalBundle, rc *rcopy, m int) {
	a := c.a
	r := c.line(b.Interval, b.StartNs, b.EndNs, m)
	r.Synopsis = "rda"
	payload, ok := b.Payloads[control.PartKey{MEC: uint16(m), Kind: control.KindRDA}]
	if !ok {
		c.emitInvalid(r, uint64(rc.rda[m].Count()), "no RDA for this class in the sender's synopses")
		return
	}
	h, body, err := parsePayload(payload)
	var snd synopsis.RDA
	if err == nil {
		err = snd.UnmarshalBinary(body)
	}
	if err != nil {
		c.emitInvalid(r, uint64(rc.rda[m].Count()), fmt.Sprintf("sender RDA does not decode: %v", err))
		return
	}
	e, st, err := synopsis.EstimateRDA(&snd, rc.rda[m], a.cfg.Conf)
	if err != nil {
		c.emitInvalid(r, uint64(rc.rda[m].Count()), fmt.Sprintf("sender RDA does not match ours: %v", err))
		return
	}
	analyze.Fill(r, e)
	r.Synopsis = "rda"
	r.Extra = st.ReportFields()
	c.stamps(r, h.StampErrNs, rc)
	if why := sessionReason(h.Flags, rc); why != "" {
		r.Valid, r.Reason = false, why
	}
	c.hold(r, e, m)
}

// hold keeps a paired line with its estimate until release.
func (c *controller) hold(r *report.Interval, e synopsis.Estimate, mec int) {
	c.held = append(c.held, heldLine{r: r, e: &e, mec: mec})
}

// release ends pair: packets that changed class inside the segment show
// only across the interval's classes (synopsis.ClassChanges), so every
// line of the interval waits for that pass, then all go out in order.
func (c *controller) release() {
	c.pairing = false
	names := c.a.cfg.Classifier.Names()
	for _, kind := range []string{"lda", "rda"} {
		es := make([]*synopsis.Estimate, len(names))
		lines := make([]*report.Interval, len(names))
		for _, h := range c.held {
			if h.e != nil && h.r.Synopsis == kind && h.mec < len(es) {
				es[h.mec], lines[h.mec] = h.e, h.r
			}
		}
		for m, why := range synopsis.ClassChanges(es, names) {
			// Another cause already named (a session's partial interval)
			// stays; the estimator's own (extra packets) gives way to the cause found.
			if r := lines[m]; why != "" && r != nil && (r.Valid || r.Reason == es[m].Reason) {
				r.Valid, r.Reason = false, why
			}
		}
	}
	held := c.held
	c.held = c.held[:0]
	for _, h := range held {
		c.emit(h.r)
	}
}

// pairLDS reports the largest flows of the interval, one line each.
func (c *controller) pairLDS(b *control.IntervalBundle, rc *rcopy) {
	a := c.a
	payload, ok := b.Payloads[control.PartKey{MEC: 0, Kind: control.KindLDS}]
	base := c.line(b.Interval, b.StartNs, b.EndNs, 0)
	base.Synopsis = "lds"
	if !ok {
		c.emitInvalid(base, rc.lds.Packets(), "no LDS in the sender's synopses")
		return
	}
	h, body, err := parsePayload(payload)
	var snd synopsis.LDS
	if err == nil {
		err = snd.UnmarshalBinary(body)
	}
	if err != nil {
		c.emitInvalid(base, rc.lds.Packets(), fmt.Sprintf("sender LDS does not decode: %v", err))
		return
	}
	flows, err := synopsis.EstimateLDSFlows(&snd, rc.lds)
	if err != nil {
		c.emitInvalid(base, rc.lds.Packets(), fmt.Sprintf("sender LDS does not match ours: %v", err))
		return
	}
	why := sessionReason(h.Flags, rc)
	for _, f := range synopsis.TopFlows(flows, a.cfg.TopFlows, synopsis.ByPackets) {
		r := c.line(b.Interval, b.StartNs, b.EndNs, 0)
		analyze.Fill(r, f.Estimate)
		r.Synopsis = "lds"
		if f.Named {
			r.Flow = analyze.FlowName(&f.Key)
		}
		c.stamps(r, h.StampErrNs, rc)
		r.Extra = map[string]any{"flow_hash": f.FlowHash, "weight": f.Weight, "held_sent": f.HeldSent, "held_received": f.HeldReceived}
		if why != "" {
			r.Valid, r.Reason = false, why
		}
		c.emit(r)
	}
}

func (c *controller) line(k uint64, startNs, endNs int64, mec int) *report.Interval {
	a := c.a
	return &report.Interval{Interval: int64(k), StartNs: startNs, EndNs: endNs, Direction: DirectionName(a.recvDir),
		MEC: a.cfg.Classifier.Names()[mec], Synopsis: "lda", Clock: a.cfg.ClockName, Conf: a.cfg.Conf}
}

// invalid reports interval k invalid for every MEC, with what is known.
func (c *controller) invalid(k uint64, startNs, endNs int64, rc *rcopy, reason string) {
	if rc != nil && rc.warmup {
		return // the receiver's warm-up copy: not an interval of the measurement
	}
	if !c.claim(k) {
		return
	}
	for m := 0; m < c.a.cfg.Syn.Classes; m++ {
		r := c.line(k, startNs, endNs, m)
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

func (c *controller) emitInvalid(r *report.Interval, received uint64, reason string) {
	r.Received, r.Valid, r.Reason = received, false, reason
	c.emit(r)
}

// claim marks interval k reported and says whether it was free: a second
// verdict on the same interval (e.g. a failure after a restart's partial
// interval) is logged, not reported again.
func (c *controller) claim(k uint64) bool {
	if c.done[k] {
		c.a.cfg.Log.Debug().Uint64("interval", k).Msg("interval already reported")
		return false
	}
	c.done[k] = true
	c.doneK = append(c.doneK, k)
	if len(c.doneK) > 256 {
		delete(c.done, c.doneK[0])
		c.doneK = c.doneK[1:]
	}
	return true
}

func (c *controller) emit(r *report.Interval) {
	if c.pairing {
		c.held = append(c.held, heldLine{r: r})
		return
	}
	c.reported.Add(1)
	if c.a.cfg.Reports != nil {
		c.a.cfg.Reports(r)
	}
}

// final reports what is still waiting when the appliance stops, oldest
// first.
func (c *controller) final() {
	// Intervals the control receiver still holds incomplete fail now (it
	// would have failed them at its timeout); pair what completed.
	c.a.receiver.Expire(math.MaxInt64)
	c.results = c.a.receiver.Results(c.results[:0])
	for _, r := range c.results {
		switch {
		case r.Bundle != nil:
			if rc, ok := c.rcopies[r.Bundle.Interval]; ok {
				c.pair(r.Bundle, rc)
				delete(c.rcopies, r.Bundle.Interval)
			} else {
				c.bundles[r.Bundle.Interval] = &waiting{b: r.Bundle}
			}
		case r.Failure != nil:
			f := r.Failure
			c.invalid(f.Interval, 0, 0, c.rcopies[f.Interval], f.Reason.String())
			delete(c.rcopies, f.Interval)
		}
	}
	var ks []uint64
	for k := range c.rcopies {
		ks = append(ks, k)
	}
	sort.Slice(ks, func(i, j int) bool { return ks[i] < ks[j] })
	for _, k := range ks {
		rc := c.rcopies[k]
		if rc.warmup {
			continue
		}
		c.invalid(k, 0, 0, rc, "stopped before the sender's synopses for this interval arrived")
	}
	for k, w := range c.bundles {
		c.invalid(k, w.b.StartNs, w.b.EndNs, nil, "stopped before the receiver cut this interval")
	}
}
