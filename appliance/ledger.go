package appliance

import (
	"math"
	"sort"
	"time"

	"github.com/ldafwd/ldafwd/report"
)

// ledger keeps the fate of every report line between the moment it is
// built and the moment it goes out: it remembers which intervals have
// their lines (claim), holds the lines of the interval being paired
// (open, hold, close), keeps paired intervals waiting for their next
// interval's evidence (waits) and the lines of later intervals behind them
// (queued), and hands each line out exactly once, in interval order
// (release). It decides nothing about a line's content: the coordinator
// settles a waiting interval (decide) and marks it decided; the ledger
// only says when its lines may go.
type ledger struct {
	// done: the intervals that have their lines, so that a second
	// verdict on one is not reported again; doneK is their order, to
	// forget the oldest beyond claimMemory.
	done  map[uint64]bool
	doneK []uint64
	// open: an interval is being paired; its lines (held) and its
	// evidence (ev) stay here until close.
	open bool
	held []heldLine
	ev   evidence
	// Paired intervals wait for the next one (crossing.go); lines of
	// later intervals wait in queued behind them so reports stay in
	// interval order.
	waits  map[uint64]*heldInterval
	queued []*report.Interval
	// recent: the evidence of intervals already released, for a
	// predecessor that pairs late.
	recent map[uint64]*evidence
	// nextDue is the next interval the liveness check may declare silent
	// (0: none yet; math.MaxUint64: none any more, after the stop); the
	// lines after an interval nothing came for wait for it (silentHole).
	nextDue uint64
	// stopping: the stop is collecting every line; nothing is released
	// until it is done, when the release puts them in order.
	stopping bool
	// What the timestamp exchange did to a line, kept with the line
	// until it goes out (gone): repaired, the repair whose reply made
	// the line's mean exact, for the crossing checks that may come after
	// it (crossedInto); timed, the repair that gave the line's losses
	// their send times, for its microbursts (rdaMicrobursts).
	repaired map[*report.Interval]*repair
	timed    map[*report.Interval]*repair
}

func newLedger() ledger {
	return ledger{done: map[uint64]bool{}, waits: map[uint64]*heldInterval{}, recent: map[uint64]*evidence{}}
}

// claimMemory is how many reported intervals claim remembers (done,
// doneK): a verdict on an older one can no longer be told from a first
// one. Every loop over interval numbers is bounded by it.
const claimMemory = 256

// claim marks interval k reported and says whether it was free.
func (l *ledger) claim(k uint64) bool {
	if l.done[k] {
		return false
	}
	l.done[k] = true
	l.doneK = append(l.doneK, k)
	if len(l.doneK) > claimMemory {
		delete(l.done, l.doneK[0])
		l.doneK = l.doneK[1:]
	}
	return true
}

// claimed says whether interval k has its lines (as far as the claim
// memory reaches).
func (l *ledger) claimed(k uint64) bool { return l.done[k] }

// claimedSpan is the oldest and newest claimed interval in
// [top−claimMemory, top); hi ≤ lo when there are not two.
func (l *ledger) claimedSpan(top uint64) (lo, hi uint64) {
	lo, hi = uint64(math.MaxUint64), 0
	for _, k := range l.doneK {
		if k < top && k+claimMemory >= top {
			lo, hi = min(lo, k), max(hi, k)
		}
	}
	return lo, hi
}

// begin opens the interval being paired with its evidence so far: every
// line until close is held for it.
func (l *ledger) begin(ev evidence) {
	l.open = true
	l.ev = ev
}

// pairing says whether an interval is open (begin … close).
func (l *ledger) pairing() bool { return l.open }

// building is the evidence of the open interval, filled as it pairs.
func (l *ledger) building() *evidence { return &l.ev }

// hold keeps a line of the open interval.
func (l *ledger) hold(h heldLine) { l.held = append(l.held, h) }

// last is the line held last.
func (l *ledger) last() *heldLine { return &l.held[len(l.held)-1] }

// lastHeld are the n lines held last.
func (l *ledger) lastHeld(n int) []heldLine { return l.held[len(l.held)-n:] }

// close ends the open interval k: its lines wait, with its evidence, for
// the next interval's.
func (l *ledger) close(k uint64, at time.Time) *heldInterval {
	l.open = false
	h := &heldInterval{k: k, lines: l.held, ev: l.ev, at: at}
	l.held, l.ev = nil, evidence{}
	l.waits[k] = h
	return h
}

// waiting is interval k waiting for its next interval's evidence, nil if
// it does not wait.
func (l *ledger) waiting(k uint64) *heldInterval { return l.waits[k] }

// undecided is interval k when it waits and is not decided yet.
func (l *ledger) undecided(k uint64) *heldInterval {
	if h := l.waits[k]; h != nil && !h.decided {
		return h
	}
	return nil
}

// waitingKeys are the waiting intervals in increasing order.
func (l *ledger) waitingKeys() []uint64 { return sortedKeys(l.waits) }

// oldestUndecided is the oldest waiting interval not decided yet,
// math.MaxUint64 when none.
func (l *ledger) oldestUndecided() uint64 {
	lim := uint64(math.MaxUint64)
	for k, h := range l.waits {
		if !h.decided && k < lim {
			lim = k
		}
	}
	return lim
}

// evidenceOf is the paired evidence of interval k, still waiting or
// recently released; nil when k never paired (its synopses failed, or it
// is the interval the receiver started in).
func (l *ledger) evidenceOf(k uint64) *evidence {
	if w := l.waits[k]; w != nil {
		return &w.ev
	}
	return l.recent[k]
}

// recentEvidence is the evidence of interval k once released (or
// recorded by remember), nil if none.
func (l *ledger) recentEvidence(k uint64) *evidence { return l.recent[k] }

// remember keeps evidence of interval k that has no waiting lines (the
// receiver's warm-up interval) for its next interval.
func (l *ledger) remember(k uint64, ev *evidence) { l.recent[k] = ev }

// queue keeps a line of an interval that is not paired, to go out in
// interval order.
func (l *ledger) queue(r *report.Interval) { l.queued = append(l.queued, r) }

// silentHole is the oldest interval from nextDue below min(lim, top)
// (and within the claim memory) that nothing claimed, that is not
// waiting for its next, and no half of which is waiting (halves: those
// hold the lines after them already); math.MaxUint64 when there is none,
// or when no interval is due. The liveness check will declare it silent,
// and the lines of later intervals wait for that line, so that each
// direction's lines stay in interval order.
func (l *ledger) silentHole(lim, top uint64, halves func(uint64) bool) uint64 {
	if l.nextDue == 0 {
		return math.MaxUint64
	}
	for k := l.nextDue; k < min(lim, top) && k < l.nextDue+claimMemory; k++ {
		if !l.claimed(k) && !halves(k) && l.waiting(k) == nil {
			return k
		}
	}
	return math.MaxUint64
}

// declareDue passes nextDue on to end, handing declare each interval on
// the way that nothing claimed and no half of which waits (halves);
// nextDue stays at the interval being declared until declare returns, as
// the release declare may cause reads it.
func (l *ledger) declareDue(end uint64, halves func(uint64) bool, declare func(k uint64)) {
	for ; l.nextDue < end; l.nextDue++ {
		k := l.nextDue
		if l.claimed(k) || halves(k) {
			continue
		}
		declare(k)
	}
}

// noteRepaired keeps rp as the repair that made r's mean exact.
func (l *ledger) noteRepaired(r *report.Interval, rp *repair) {
	if l.repaired == nil {
		l.repaired = map[*report.Interval]*repair{}
	}
	l.repaired[r] = rp
}

// takeRepaired is the repair that made r's mean exact (nil: none), which
// r no longer keeps.
func (l *ledger) takeRepaired(r *report.Interval) *repair {
	rp := l.repaired[r]
	delete(l.repaired, r)
	return rp
}

// repairedBy says whether rp is the repair that made r's mean exact.
func (l *ledger) repairedBy(r *report.Interval, rp *repair) bool { return l.repaired[r] == rp }

// noteTimed keeps rp as the repair that gave r's losses their send times.
func (l *ledger) noteTimed(r *report.Interval, rp *repair) {
	if l.timed == nil {
		l.timed = map[*report.Interval]*repair{}
	}
	l.timed[r] = rp
}

// gone forgets what r kept as it goes out, handing back the repair that
// timed its losses (nil: none).
func (l *ledger) gone(r *report.Interval) (timed *repair) {
	delete(l.repaired, r)
	timed = l.timed[r]
	delete(l.timed, r)
	return timed
}

// outgoing is what release hands out: the lines of a decided interval
// (h) or one queued line (r).
type outgoing struct {
	k uint64
	h *heldInterval
	r *report.Interval
}

// release takes out, in interval order, the decided intervals and the
// queued lines older than lim that are not held behind a hole (hole <
// k < top); held lines come first within an interval (they claimed it).
// What it returns has left the ledger: each line comes out once.
func (l *ledger) release(lim, hole, top uint64) []outgoing {
	held := func(k uint64) bool { return k > hole && k < top }
	var items []outgoing
	for k, h := range l.waits {
		if h.decided && k < lim && !held(k) {
			items = append(items, outgoing{k: k, h: h})
			delete(l.waits, k)
			l.recent[k] = &h.ev
		}
	}
	sort.Slice(items, func(i, j int) bool { return items[i].k < items[j].k })
	rest := l.queued[:0]
	for _, r := range l.queued {
		if k := uint64(r.Interval); k < lim && !held(k) {
			items = append(items, outgoing{k: k, r: r})
		} else {
			rest = append(rest, r)
		}
	}
	for i := len(rest); i < len(l.queued); i++ {
		l.queued[i] = nil
	}
	l.queued = rest
	sort.SliceStable(items, func(i, j int) bool { return items[i].k < items[j].k })
	return items
}

// forget keeps the evidence of the few newest released intervals that a
// predecessor paired late may still want.
func (l *ledger) forget() {
	var newest uint64
	for k := range l.recent {
		newest = max(newest, k)
	}
	for k, ev := range l.recent {
		if k+4 < newest {
			delete(l.recent, k)
		} else if k+1 < newest {
			// The receiver RDAs (with their timestamp caches) serve
			// only the next interval's crossedInto and edge check.
			ev.own, ev.caches = nil, nil
		}
	}
}
