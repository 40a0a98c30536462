package appliance

import (
	"fmt"
	"strings"

	"github.com/ldafwd/ldafwd/report"
	"github.com/ldafwd/ldafwd/synopsis"
)

// Per-flow repair live (docs/lds.md, "Repair"). A packet lost in the
// segment spoils its LDS cells: the sender's cell holds it, the
// receiver's does not, and the estimator leaves the cell out, so a lossy
// flow's cells are unusable. The RDA of the same interval names the lost
// packets (and those only the receiver saw); with each one's timestamp,
// flow hash and weight, synopsis.LDS.Remove takes it out of the sketch
// that holds it, and the cell again holds, at both ends, exactly the
// packets that crossed the segment: its delay sum is theirs and the flow's
// mean is exact up to collisions, as offline (analyze does the same from
// both captures).
//
//   - The lost packets' timestamps and flow hashes come in the RDA
//     repair's reply (repair.go; the sender's timestamp cache keeps flow
//     hashes when the LDS is on, wire version 2). Their weight is their
//     class's: both ends classify alike (the hello checks it).
//   - The extra packets' come from the receiver's own RDA cache, without
//     a round trip.
//   - The interval's LDS lines wait (they are held with the RDA lines)
//     until every class's exchange has finished — reply, give-up or stop
//     — and are then estimated again from the repaired copies. Whatever
//     the repair could not place (an RDA that did not decode, a sampled or
//     ambiguous cache, no reply, a request too large to send) still spoils
//     its cells as before: a partial repair only makes fewer cells usable,
//     never a wrong cell usable (synopsis.EstimateLDSFlowsRepaired).
//   - The lines say what was done in "repair" ("complete: …", "partial:
//     …", "none: …") and "repair_complete", with the flow's
//     "repaired_lost" and "repaired_extra": the fields offline analyze
//     reports.
//
// A packet that crossed the interval's boundary is lost here and extra in
// the neighbouring interval: taking it out of this interval's sender
// sketch leaves the cells with the packets both ends recorded in the
// interval, so the flow's mean is over those (one packet of a flow's
// hundreds, at an interval's edge).

// ldsRepairer gathers, for each interval's LDS lines, the packets the
// RDA named lost or extra (from the decodes, the receiver's cache and the
// timestamp replies) until every class's exchange has ended, and then
// estimates the flows again. It holds the lines' flows but does not write
// the lines: the coordinator does, from what outcome returns
// (ldsRepairApply).
type ldsRepairer struct {
	cfg   *Config
	fixes map[uint64]*ldsFix // by interval, while an exchange is pending
}

// ldsFix is one interval's LDS lines waiting for the exchanges of its
// classes.
type ldsFix struct {
	k        uint64
	snd, own *synopsis.LDS
	lines    []ldsFixLine
	waiting  map[uint16]bool // classes whose exchange is pending
	rep      synopsis.LDSRepair
	// unplaced counts the decoded packets the repair could not place, by
	// cause; undecoded counts classes whose set difference did not decode.
	unplaced  map[string]int
	undecoded int
}

type ldsFixLine struct {
	l heldLine
	// plain is the line's estimator cause before the repair (0: none):
	// only that cause can the repair lift.
	plain report.Code
}

// ldsRepairSetUp starts the repair of interval k's LDS lines (the last n
// lines held) from snd (the sender's sketch as shipped) and own (ours, in
// the same shape), with the RDA decodes of the classes just paired
// (the ledger's open interval). Lines are repaired at once when no
// exchange is pending, otherwise when the last one finishes (ldsRepairDone).
func (c *controller) ldsRepairSetUp(k uint64, snd, own *synopsis.LDS, n int) {
	ev := c.led.building()
	if len(ev.rda) == 0 || n == 0 {
		return // no RDA: nothing names the lost packets
	}
	asked := make([]int, len(ev.rda))
	for m := range asked {
		asked[m] = -1
		if rp := c.rep.pending(k, uint16(m)); rp != nil {
			asked[m] = len(rp.ids)
		}
	}
	if f := c.lds.setUp(k, snd, own, c.led.lastHeld(n), ev, asked); f != nil {
		c.ldsRepairApply(f)
	}
}

// setUp starts the repair of interval k's LDS lines from snd and own
// with the RDA decodes and receiver caches of ev; asked[m] is how many
// lost packets class m's pending timestamp request asked for (-1: none
// pending). It returns the repair when no exchange is pending (ready to
// apply), else nil: lost and done finish it.
func (l *ldsRepairer) setUp(k uint64, snd, own *synopsis.LDS, lines []heldLine, ev *evidence, asked []int) *ldsFix {
	f := &ldsFix{k: k, snd: snd, own: own, waiting: map[uint16]bool{}, unplaced: map[string]int{}}
	for _, hl := range lines {
		f.lines = append(f.lines, ldsFixLine{l: hl, plain: hl.flow.Code})
	}
	for m := range ev.rda {
		dec := ev.rda[m]
		if dec == nil {
			f.undecoded++
			continue
		}
		if !dec.Complete {
			f.undecoded++
		}
		w := l.cfg.Classifier.Weight(uint16(m))
		var cache *synopsis.TSCache
		if m < len(ev.own) && ev.own[m] != nil {
			cache = ev.own[m].Cache()
		}
		for _, id := range dec.Extra {
			switch {
			case cache == nil || !cache.TracksFlows():
				f.unplaced["no receiver cache"]++
			default:
				ts, fh, ok := cache.LookupFlow(id)
				// A packet the segment duplicated is extra once: its
				// second copy is what the sender did not send, and goes
				// out (the first copy is the packet, as both ends'
				// delays count it).
				later, dup, complete := cache.LaterCopy(id)
				if dup {
					ts = later
				}
				switch {
				case !ok:
					f.unplaced["sampled receiver cache"]++
				case !complete:
					f.unplaced["ambiguous receiver cache"]++ // a copy's timestamp was not kept: this one may be another copy's
				case fh != 0: // 0: no flow, not in the LDS
					f.rep.Extra = append(f.rep.Extra, synopsis.LDSPacket{FlowHash: fh, Hash: id, Ts: ts, Weight: w})
				}
			}
		}
		if len(dec.Lost) == 0 {
			continue
		}
		if asked[m] >= 0 {
			f.waiting[uint16(m)] = true
			if d := len(dec.Lost) - asked[m]; d > 0 {
				f.unplaced["sampled sender cache"] += d // not asked for
			}
			continue
		}
		f.unplaced["not asked"] += len(dec.Lost)
	}
	if len(f.waiting) == 0 {
		return f
	}
	if l.fixes == nil {
		l.fixes = map[uint64]*ldsFix{}
	}
	l.fixes[k] = f
	return nil
}

// ldsLost adds the lost packets a reply placed (ts, fh, ok as decoded for
// rp.ids; flows: the reply carried flow hashes) to the LDS repair of rp's
// interval.
func (c *controller) ldsLost(rp *repair, ts, fh []uint64, ok []bool, flows bool) {
	if f := c.lds.lost(rp, ts, fh, ok, flows); f != nil {
		c.ldsRepairApply(f)
	}
}

// lost places the lost packets of rp's reply; it returns the interval's
// repair when that was its last pending exchange.
func (l *ldsRepairer) lost(rp *repair, ts, fh []uint64, ok []bool, flows bool) *ldsFix {
	f := l.fixes[rp.key.k]
	if f == nil || !f.waiting[rp.key.mec] {
		return nil
	}
	w := l.cfg.Classifier.Weight(rp.key.mec)
	for i, id := range rp.ids {
		switch {
		case !ok[i]:
			f.unplaced["not in the sender's reply"]++
		case !flows:
			f.unplaced["reply without flows"]++
		case fh[i] != 0:
			f.rep.Lost = append(f.rep.Lost, synopsis.LDSPacket{FlowHash: fh[i], Hash: id, Ts: ts[i], Weight: w})
		}
	}
	delete(f.waiting, rp.key.mec) // done does not count it again
	if len(f.waiting) == 0 {
		delete(l.fixes, f.k)
		return f
	}
	return nil
}

// ldsRepairDone is told every finished exchange (reply, give-up, stop):
// one without a usable reply leaves its class's lost packets unplaced.
func (c *controller) ldsRepairDone(rp *repair) {
	if f := c.lds.done(rp); f != nil {
		c.ldsRepairApply(f)
	}
}

// done counts rp's class's lost packets unplaced unless its reply placed
// them (lost); it returns the interval's repair when that was its last
// pending exchange.
func (l *ldsRepairer) done(rp *repair) *ldsFix {
	f := l.fixes[rp.key.k]
	if f == nil || !f.waiting[rp.key.mec] {
		return nil
	}
	delete(f.waiting, rp.key.mec)
	f.unplaced["no reply"] += len(rp.ids)
	if len(f.waiting) == 0 {
		delete(l.fixes, f.k)
		return f
	}
	return nil
}

// outcome estimates the flows again from f's repaired sketches: the
// status for the lines and each flow's repaired estimate by flow hash
// (nil when nothing was taken out, or the estimate failed).
func (f *ldsFix) outcome() (status string, byFlow map[uint64]*synopsis.FlowEstimate) {
	unplaced := 0
	for _, n := range f.unplaced {
		unplaced += n
	}
	f.rep.Complete = unplaced == 0 && f.undecoded == 0
	status = fmt.Sprintf("complete: %d lost and %d extra packets taken out", len(f.rep.Lost), len(f.rep.Extra))
	if !f.rep.Complete {
		var why []string
		if f.undecoded > 0 {
			why = append(why, fmt.Sprintf("the set difference of %d classes did not decode", f.undecoded))
		}
		for _, cause := range []string{"not asked", "no reply", "not in the sender's reply", "reply without flows", "sampled sender cache",
			"no receiver cache", "sampled receiver cache", "ambiguous receiver cache"} {
			if n := f.unplaced[cause]; n > 0 {
				why = append(why, fmt.Sprintf("%d packets unplaced (%s)", n, cause))
			}
		}
		status = fmt.Sprintf("partial: %s; %d lost and %d extra packets taken out", strings.Join(why, ", "), len(f.rep.Lost), len(f.rep.Extra))
	}
	if len(f.rep.Lost)+len(f.rep.Extra) > 0 {
		flows, err := synopsis.EstimateLDSFlowsRepaired(f.snd, f.own, f.rep)
		if err != nil {
			status, f.rep.Complete = "none: "+err.Error(), false
		} else {
			synopsis.ApplyFragments(flows)
			byFlow = make(map[uint64]*synopsis.FlowEstimate, len(flows))
			for i := range flows {
				byFlow[flows[i].FlowHash] = &flows[i]
			}
		}
	}
	return status, byFlow
}

// ldsRepairApply updates f's held lines from the flows estimated again
// (outcome): only their delay fields, their counts and the validity the
// estimator gave them change (linePatch).
func (c *controller) ldsRepairApply(f *ldsFix) {
	status, byFlow := f.outcome()
	for _, fl := range f.lines {
		fe := byFlow[fl.l.flow.FlowHash]
		p := f.patch(fl, status, fe)
		p.apply(fl.l.r, nil)
		if fe != nil {
			c.pr.stampLimit(fl.l.r) // the repaired cells' stamps may be worse
			*fl.l.flow = *fe        // the crossing checks (crossing.go) read it
		}
	}
}

// patch is what the repair changes in flow line fl: its status, and with
// the flow estimated again (fe; nil: not) its delay, stamps and counts.
// The repaired estimate averages other cells, whose stamps bound it (its
// MeanCINs includes them): the line's stamp figures follow. The packets
// taken out carry no stamp error here (ErrNs 0: the caches keep
// timestamps only), so their share stays in the cells and the figure can
// only be wider than the remaining packets'. The estimator's own cause
// goes when the estimate is valid; another (a session's) stays.
func (f *ldsFix) patch(fl ldsFixLine, status string, fe *synopsis.FlowEstimate) linePatch {
	p := linePatch{set: map[string]any{"repair": status, "repair_complete": f.rep.Complete}}
	if fe == nil {
		return p
	}
	if fe.RepairedLost > 0 {
		p.set["repaired_lost"] = fe.RepairedLost
	}
	if fe.RepairedExtra > 0 {
		p.set["repaired_extra"] = fe.RepairedExtra
	}
	p.delay = &delayFields{mean: fe.MeanNs, stddev: fe.StddevNs, ci: fe.MeanCINs, samples: fe.Samples, usable: fe.UsableBuckets, buckets: fe.TotalBuckets}
	p.stamps = &stampFigures{tx: fe.TxStampErrNs, rx: fe.RxStampErrNs, sum: fe.StampErrNs}
	p.received, p.lost = &fe.Received, &fe.Lost
	switch {
	case !fe.Valid:
		p.add = []report.Cause{{Code: fe.Code, Why: fe.Reason}}
	case fl.plain != 0 && fl.l.r.Verdict().Has(fl.plain):
		p.lift = fl.plain
		if f.own.RowsTakeAll() && !countsAgree(fe) {
			p.add = []report.Cause{{Code: report.FlowShared, Why: ReasonFlowShared}}
		}
	}
	return p
}

// ReasonFlowShared is the reason of an LDS line whose flow's cells hold
// other flows' packets too (countsAgree).
const ReasonFlowShared = "the flow's cells hold other flows' packets too (the LDS is small for this traffic, or the control budget folded it): its counts and delay are not its own"
