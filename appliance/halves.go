package appliance

import (
	"time"

	"github.com/ldafwd/ldafwd/control"
)

// halves holds the two halves of each interval the receiver pairs while
// they wait for each other: the receiver's copies, cloned off the double
// buffer, and the sender's reassembled bundles. It also keeps, for a few
// intervals, each copy that spans more than one interval (an End marker
// was lost): the lost End's failure comes at the reassembly timeout, and
// the interval before it takes its crossing evidence from that copy
// (spanEvidence). The coordinator pairs, fetches and fails what it
// holds, and takes a pair out once its lines are built.
type halves struct {
	copies  map[uint64]*rcopy
	bundles map[uint64]*waiting
	spans   map[uint64]*rcopy // by the first interval the copy holds
}

func newHalves() halves {
	return halves{copies: map[uint64]*rcopy{}, bundles: map[uint64]*waiting{}, spans: map[uint64]*rcopy{}}
}

// keep holds the receiver copy rc until it pairs. When a copy of rc's
// interval is held already (a second cut of the same interval: the
// sender restarted within it) it holds neither anew and returns the
// held one, for the caller to mark and report.
func (h *halves) keep(rc *rcopy) (old *rcopy) {
	if rc.firstK < rc.k && !rc.warmup {
		h.spans[rc.firstK] = rc
	}
	for k := range h.spans {
		// Both ways: numbers that went back (a peer restarted with
		// another --interval, a clock stepped back) must not leave
		// copies that a later interval of the same number would take.
		if k+spanMemory < rc.k || k > rc.k+spanMemory {
			delete(h.spans, k)
		}
	}
	if old := h.copies[rc.k]; old != nil {
		return old
	}
	h.copies[rc.k] = rc
	return nil
}

// spanMemory is how many intervals a spanning copy is kept for the lost
// End marker's failure (which comes at the reassembly timeout, a few
// intervals of 1 s later, more of shorter ones).
const spanMemory = 16

// spanning is the receiver copy that holds interval k with the interval
// after it (k's End marker was lost), nil if none has come.
func (h *halves) spanning(k uint64) *rcopy { return h.spans[k] }

// addBundle holds the sender's bundle until its copy comes (received at
// at; zero at stop, where nothing waits any more).
func (h *halves) addBundle(b *control.IntervalBundle, at time.Time) {
	h.bundles[b.Interval] = &waiting{b: b, at: at}
}

// paired takes interval k's halves out: its lines are built.
func (h *halves) paired(k uint64) {
	delete(h.copies, k)
	delete(h.bundles, k)
}

// waits says whether a half of interval k is waiting.
func (h *halves) waits(k uint64) bool { return h.copies[k] != nil || h.bundles[k] != nil }

// idle says whether nothing waits to pair.
func (h *halves) idle() bool { return len(h.copies) == 0 && len(h.bundles) == 0 }

// oldest is the oldest interval below lim a half of which is waiting
// and that skip does not pass over (lim if none).
func (h *halves) oldest(lim uint64, skip func(uint64) bool) uint64 {
	for k := range h.copies {
		if k < lim && !skip(k) {
			lim = k
		}
	}
	for k := range h.bundles {
		if k < lim && !skip(k) {
			lim = k
		}
	}
	return lim
}
