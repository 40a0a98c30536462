package control

import (
	"fmt"
	"sort"

	"github.com/klauspost/reedsolomon"
)

// Reason says why an interval's synopses could not be assembled. A failed
// interval is reported invalid with this reason, never as a number.
type Reason uint8

// Failure reasons.
const (
	ReasonFragmentLost   Reason = iota + 1 // timed out with a fragment missing
	ReasonEndLost                          // timed out without an End marker from every lane
	ReasonNoHello                          // timed out before the session's Hello arrived
	ReasonConfigMismatch                   // the sender's ConfigHash differs from ours
	ReasonEvicted                          // too many intervals in flight; the oldest gave way
	ReasonOversize                         // over the fragment, part or byte limits
	ReasonInconsistent                     // fragments of one part disagree on their count
	ReasonSessionRestart                   // the sender restarted (new session id) mid-interval
)

func (r Reason) String() string {
	switch r {
	case ReasonFragmentLost:
		return "control fragment lost"
	case ReasonEndLost:
		return "end marker lost"
	case ReasonNoHello:
		return "no hello from sender"
	case ReasonConfigMismatch:
		return "sender synopsis configuration differs"
	case ReasonEvicted:
		return "evicted: too many intervals in flight"
	case ReasonOversize:
		return "control payload over the reassembly limits"
	case ReasonInconsistent:
		return "inconsistent fragments"
	case ReasonSessionRestart:
		return "sender restarted"
	}
	return "unknown"
}

// IntervalBundle is everything the sender said about one interval: its End
// markers (summed over lanes) and every announced part, reassembled.
type IntervalBundle struct {
	Session   uint64
	Direction uint16
	Interval  uint64
	StartNs   int64  // earliest lane start, ns since the Unix epoch (sender clock)
	EndNs     int64  // latest lane end
	Frames    uint64 // data frames the sender recorded, all lanes
	Bytes     uint64 // their bytes
	// ClassFrames[m] is the data frames the sender recorded in class m,
	// all lanes, from the End markers; nil when some lane's marker carried
	// no per-class counts (or the lanes disagree on the number of classes).
	ClassFrames []uint64
	Hello       *Hello // the session's configuration (shared, read-only)
	// Payloads holds one encoded synopsis per announced part. The slices
	// are owned by the bundle.
	Payloads map[PartKey][]byte
	// Missing names the announced parts a partial bundle lacks, with what
	// arrived of each ("2 of 3 fragments"). A bundle is partial when every
	// End marker and the Hello arrived but some part lost a fragment on
	// the segment (every copy of it): the parts that arrived are whole and
	// measure their classes; only the missing ones are lost. Nil when the
	// bundle is complete.
	Missing map[PartKey]string
	// ControlFrames and ControlBytes count what carried this interval on
	// the wire (Hello, End markers, fragments; Ethernet frames without FCS).
	ControlFrames int
	ControlBytes  int
}

// IntervalFailure reports an interval that cannot be assembled.
type IntervalFailure struct {
	Session   uint64
	Direction uint16
	Interval  uint64
	// StartNs and EndNs are the interval's bounds from the End markers
	// that did arrive (earliest start, latest end), 0 when none did.
	StartNs, EndNs int64
	Reason         Reason
	Detail         string // human-readable specifics (which part, how many fragments)
	// ClassFrames: as IntervalBundle's, when every lane's End marker
	// arrived with per-class counts; nil otherwise.
	ClassFrames []uint64
}

func (f *IntervalFailure) Error() string {
	if f.Detail == "" {
		return fmt.Sprintf("interval %d: %s", f.Interval, f.Reason)
	}
	return fmt.Sprintf("interval %d: %s (%s)", f.Interval, f.Reason, f.Detail)
}

// Result is one finished interval: exactly one of Bundle and Failure is set.
type Result struct {
	Bundle  *IntervalBundle
	Failure *IntervalFailure
}

// finishedMemory is how many finished interval numbers the reassembler
// remembers, and how far behind the newest interval a frame may be before
// it is late without looking: a finished interval is never reopened.
const finishedMemory = 64

// partState collects the fragments of one part: count data fragments,
// and, once a Parity frame announced them (parity.go), m parity
// fragments of shard bytes over a part of n bytes.
type partState struct {
	count uint16
	got   int
	have  []bool
	frags [][]byte

	m, n, shard int
	pgot        int
	par         [][]byte
	broken      bool // a data fragment disagrees with the parity's shard size

	// supplied: the whole part came by other means (Receiver.SupplyPart,
	// fetched from its sender) and sits in frags[0]; late fragments of
	// it are duplicates, whatever their count.
	supplied bool
}

// intervalState is one interval in flight.
type intervalState struct {
	k         uint64
	firstNs   int64
	ends      map[uint16]End
	parts     map[PartKey]*partState
	bytes     int // charged against MaxBytes
	frames    int
	wireBytes int
}

// sliceCost is what the reassembler charges per announced fragment before
// any arrives (a slice header and a flag), so a FragCount of 65535 costs
// memory budget even if no fragment follows.
const sliceCost = 24 + 1

// reassembler holds the intervals in flight of one session. The Receiver
// owns it and resets it on a session change, so its key (interval, MEC,
// kind) is implicitly also keyed by the session.
type reassembler struct {
	cfg       *ReceiverConfig
	session   uint64
	direction uint16
	hello     *Hello
	mismatch  bool // hello.ConfigHash differs from cfg.ConfigHash
	inflight  map[uint64]*intervalState
	finished  map[uint64]struct{}
	order     []uint64 // finished, oldest first (≤ finishedMemory)
	highest   uint64
	any       bool
	bytes     int
	c         *counterSet
	out       *[]Result
	codecs    map[[2]int]reedsolomon.Encoder // parity.go
}

func (a *reassembler) reset(session uint64, why Reason) {
	a.failAll(why)
	a.session = session
	a.hello = nil
	a.mismatch = false
	a.inflight = map[uint64]*intervalState{}
	a.finished = map[uint64]struct{}{}
	a.order = a.order[:0]
	a.highest, a.any = 0, false
	a.bytes = 0
}

// failAll fails every interval in flight (oldest first).
func (a *reassembler) failAll(why Reason) {
	for _, k := range a.sortedInflight() {
		a.fail(a.inflight[k], why, "")
	}
}

func (a *reassembler) sortedInflight() []uint64 {
	ks := make([]uint64, 0, len(a.inflight))
	for k := range a.inflight {
		ks = append(ks, k)
	}
	sort.Slice(ks, func(i, j int) bool { return ks[i] < ks[j] })
	return ks
}

// get returns the state of interval k, creating it; nil if k is finished
// or too far behind (late).
func (a *reassembler) get(k uint64, nowNs int64) *intervalState {
	if st := a.inflight[k]; st != nil {
		return st
	}
	if _, done := a.finished[k]; done || (a.any && k+finishedMemory < a.highest) {
		a.c.inc(cLate)
		return nil
	}
	if !a.any || k > a.highest {
		a.highest, a.any = k, true
	}
	if len(a.inflight) >= a.cfg.MaxIntervals {
		// Full: the oldest interval gives way, which is k itself when k is
		// older than everything in flight.
		ks := a.sortedInflight()
		a.c.inc(cEvicted)
		detail := fmt.Sprintf("limit %d intervals", a.cfg.MaxIntervals)
		if k < ks[0] {
			a.fail(&intervalState{k: k}, ReasonEvicted, detail)
			return nil
		}
		// The oldest has waited through MaxIntervals newer ones: what it
		// still lacks (a fragment or End the segment lost) is the cause,
		// and the report names it; the eviction is the detail.
		old := a.inflight[ks[0]]
		why, what := a.missing(old)
		if what != "" {
			detail = what + "; evicted, " + detail
		} else {
			detail = "evicted, " + detail
		}
		a.fail(old, why, detail)
	}
	st := &intervalState{k: k, firstNs: nowNs, ends: map[uint16]End{}, parts: map[PartKey]*partState{}}
	a.inflight[k] = st
	return st
}

// charge adds n bytes to st's share of the memory budget; false (and st
// failed) when the budget is exceeded.
func (a *reassembler) charge(st *intervalState, n int) bool {
	if a.bytes+n > a.cfg.MaxBytes {
		a.c.inc(cOversize)
		a.fail(st, ReasonOversize, fmt.Sprintf("limit %d bytes in flight", a.cfg.MaxBytes))
		return false
	}
	a.bytes += n
	st.bytes += n
	return true
}

func (a *reassembler) note(st *intervalState, frameLen int) {
	st.frames++
	st.wireBytes += frameLen
}

// addHello records the session's Hello and re-checks every interval.
func (a *reassembler) addHello(h *Hello, k uint64, frameLen int) {
	if st := a.inflight[k]; st != nil {
		a.note(st, frameLen)
	}
	if a.hello != nil {
		if !a.hello.sameConfig(h) {
			// A session's configuration never changes; a sender that
			// changes it without a new session id is broken. Keep the
			// first, count the rest.
			a.c.inc(cInconsistent)
		}
		return
	}
	a.hello = h
	a.mismatch = a.cfg.ConfigHash != 0 && h.ConfigHash != a.cfg.ConfigHash
	for _, k := range a.sortedInflight() {
		a.check(a.inflight[k])
	}
}

func (a *reassembler) addEnd(k uint64, e *End, nowNs int64, frameLen int) {
	if a.hello != nil && e.Lane >= a.hello.Lanes {
		a.c.inc(cBadPayload)
		return
	}
	st := a.get(k, nowNs)
	if st == nil {
		return
	}
	a.note(st, frameLen)
	if _, dup := st.ends[e.Lane]; dup {
		a.c.inc(cDuplicate)
		return
	}
	if len(st.ends) >= a.cfg.MaxParts {
		a.c.inc(cOversize)
		a.fail(st, ReasonOversize, fmt.Sprintf("more than %d lanes", a.cfg.MaxParts))
		return
	}
	if !a.charge(st, e.EndLen()) {
		return
	}
	st.ends[e.Lane] = *e
	a.check(st)
}

// part returns the interval and part state a Fragment or Parity frame f
// belongs to, creating them; a nil part when the frame is dropped (its
// counter moved) or its interval failed.
func (a *reassembler) part(f *Frame, nowNs int64, frameLen int) (*intervalState, *partState) {
	key := PartKey{MEC: f.MEC, Kind: f.Kind}
	if a.hello != nil && !a.hello.hasPart(key) {
		a.c.inc(cUnknownPart)
		return nil, nil
	}
	st := a.get(f.Interval, nowNs)
	if st == nil {
		return nil, nil
	}
	a.note(st, frameLen)
	ps := st.parts[key]
	if ps != nil && ps.supplied {
		a.c.inc(cDuplicate)
		return nil, nil
	}
	if ps == nil {
		if len(st.parts) >= a.cfg.MaxParts || int(f.FragCount) > a.cfg.MaxFragments {
			a.c.inc(cOversize)
			a.fail(st, ReasonOversize, fmt.Sprintf("part %v: %d fragments (limits: %d parts, %d fragments)", key, f.FragCount, a.cfg.MaxParts, a.cfg.MaxFragments))
			return nil, nil
		}
		if !a.charge(st, int(f.FragCount)*sliceCost) {
			return nil, nil
		}
		ps = &partState{count: f.FragCount, have: make([]bool, f.FragCount), frags: make([][]byte, f.FragCount)}
		st.parts[key] = ps
	}
	if ps.count != f.FragCount {
		a.c.inc(cInconsistent)
		a.fail(st, ReasonInconsistent, fmt.Sprintf("part %v: fragment counts %d and %d", key, ps.count, f.FragCount))
		return nil, nil
	}
	return st, ps
}

func (a *reassembler) addFragment(f *Frame, nowNs int64, frameLen int) {
	st, ps := a.part(f, nowNs, frameLen)
	if ps == nil {
		return
	}
	if ps.have[f.FragIndex] {
		a.c.inc(cDuplicate)
		return
	}
	if !a.charge(st, len(f.Payload)) {
		return
	}
	ps.have[f.FragIndex] = true
	ps.frags[f.FragIndex] = append([]byte(nil), f.Payload...)
	ps.got++
	a.rebuild(st, ps)
	if a.inflight[st.k] != st {
		return // the rebuild hit the memory limit and failed st
	}
	a.check(st)
}

// check emits st if it is complete (or fails it on a config mismatch).
func (a *reassembler) check(st *intervalState) {
	h := a.hello
	if h == nil {
		return
	}
	if a.mismatch {
		detail := ""
		if h.Config != "" && a.cfg.Config != "" {
			detail = ConfigDiff(h.Config, a.cfg.Config)
		}
		if detail == "" {
			detail = fmt.Sprintf("sender config hash %016x, ours %016x", h.ConfigHash, a.cfg.ConfigHash)
		}
		a.fail(st, ReasonConfigMismatch, detail)
		return
	}
	if len(st.ends) < int(h.Lanes) {
		return
	}
	for l := uint16(0); l < h.Lanes; l++ {
		if _, ok := st.ends[l]; !ok {
			return
		}
	}
	for _, p := range h.Parts {
		ps := st.parts[p]
		if ps == nil || ps.got < int(ps.count) {
			return
		}
	}
	// A later interval complete means the copies of every fragment of
	// the earlier ones were sent before its frames (one FIFO lane): what
	// those still lack is lost. They go out now with the parts they have,
	// not at the timeout, and before it.
	for _, k := range a.sortedInflight() {
		if k < st.k {
			a.partial(a.inflight[k])
		}
	}
	a.emit(st)
}

// partial emits st as a partial bundle if it has its Hello, every End
// marker and at least one whole part or the End markers' per-class counts
// (and fails it otherwise): the segment lost only fragments of some
// parts, and the counts still give every class's loss.
func (a *reassembler) partial(st *intervalState) bool {
	h := a.hello
	if h == nil || a.mismatch {
		return false
	}
	for l := uint16(0); l < h.Lanes; l++ {
		if _, ok := st.ends[l]; !ok {
			return false
		}
	}
	whole := 0
	for _, p := range h.Parts {
		if ps := st.parts[p]; ps != nil && ps.got == int(ps.count) {
			whole++
		}
	}
	if whole == 0 && classFrames(st.ends) == nil {
		return false
	}
	a.emit(st)
	return true
}

// classFrames sums the lanes' per-class counts; nil unless every lane
// sent them for the same number of classes.
func classFrames(ends map[uint16]End) []uint64 {
	var sum []uint64
	for _, e := range ends {
		if len(e.Classes) == 0 || (sum != nil && len(e.Classes) != len(sum)) {
			return nil
		}
		if sum == nil {
			sum = make([]uint64, len(e.Classes))
		}
		for m, c := range e.Classes {
			sum[m] += c
		}
	}
	return sum
}

// emit hands st on as a bundle of the parts that are whole, naming the
// others in Missing.
func (a *reassembler) emit(st *intervalState) {
	h := a.hello
	b := &IntervalBundle{Session: a.session, Direction: a.direction, Interval: st.k, Hello: h,
		Payloads: make(map[PartKey][]byte, len(h.Parts)), ControlFrames: st.frames, ControlBytes: st.wireBytes}
	b.StartNs, b.EndNs = st.bounds()
	b.ClassFrames = classFrames(st.ends)
	for _, e := range st.ends {
		b.Frames += e.Frames
		b.Bytes += e.Bytes
	}
	for _, p := range h.Parts {
		ps := st.parts[p]
		if ps == nil || ps.got < int(ps.count) {
			if b.Missing == nil {
				b.Missing = map[PartKey]string{}
			}
			b.Missing[p] = "no fragment"
			if ps != nil {
				b.Missing[p] = ps.held()
			}
			continue
		}
		n := 0
		for _, f := range ps.frags {
			n += len(f)
		}
		buf := make([]byte, 0, n)
		for _, f := range ps.frags {
			buf = append(buf, f...)
		}
		b.Payloads[p] = buf
	}
	a.finish(st)
	a.c.inc(cBundles)
	*a.out = append(*a.out, Result{Bundle: b})
}

func (a *reassembler) fail(st *intervalState, why Reason, detail string) {
	a.finish(st)
	a.c.inc(cFailures)
	f := &IntervalFailure{Session: a.session, Direction: a.direction, Interval: st.k, Reason: why, Detail: detail}
	f.StartNs, f.EndNs = st.bounds()
	if a.hello != nil && len(st.ends) == int(a.hello.Lanes) {
		// Every lane's End arrived (the Hello or a part did not): the
		// per-class counts still give the interval's loss.
		f.ClassFrames = classFrames(st.ends)
	}
	*a.out = append(*a.out, Result{Failure: f})
}

// bounds returns the earliest start and latest end over the End markers
// held (0, 0 without any).
func (st *intervalState) bounds() (start, end int64) {
	first := true
	for _, e := range st.ends {
		if first || e.StartNs < start {
			start = e.StartNs
		}
		if first || e.EndNs > end {
			end = e.EndNs
		}
		first = false
	}
	return start, end
}

// finish removes st from flight, frees its budget and remembers k so
// later frames for it count as late instead of reopening it.
func (a *reassembler) finish(st *intervalState) {
	delete(a.inflight, st.k)
	a.bytes -= st.bytes
	a.finished[st.k] = struct{}{}
	a.order = append(a.order, st.k)
	if len(a.order) > finishedMemory {
		delete(a.finished, a.order[0])
		a.order = append(a.order[:0], a.order[1:]...)
	}
}

// expire fails every interval whose first frame is Timeout or more old.
func (a *reassembler) expire(nowNs int64) {
	for _, k := range a.sortedInflight() {
		st := a.inflight[k]
		if nowNs-st.firstNs < a.cfg.Timeout {
			continue
		}
		a.c.inc(cTimeout)
		if a.partial(st) {
			continue
		}
		why, detail := a.missing(st)
		a.fail(st, why, detail)
	}
}

// missing names what an interval timed out waiting for.
func (a *reassembler) missing(st *intervalState) (Reason, string) {
	h := a.hello
	if h == nil {
		return ReasonNoHello, ""
	}
	for l := uint16(0); l < h.Lanes; l++ {
		if _, ok := st.ends[l]; !ok {
			return ReasonEndLost, fmt.Sprintf("lane %d of %d", l, h.Lanes)
		}
	}
	for _, p := range h.Parts {
		ps := st.parts[p]
		if ps == nil {
			return ReasonFragmentLost, fmt.Sprintf("part %v: no fragment", p)
		}
		if ps.got < int(ps.count) {
			return ReasonFragmentLost, fmt.Sprintf("part %v: %s", p, ps.held())
		}
	}
	return ReasonFragmentLost, ""
}

// held says what arrived of a part that is not whole: "2 of 3
// fragments", and with parity "2 of 5 fragments and 1 of 2 parity (any
// 5 of 7 rebuild it)".
func (ps *partState) held() string {
	if ps.m == 0 {
		return fmt.Sprintf("%d of %d fragments", ps.got, ps.count)
	}
	return fmt.Sprintf("%d of %d fragments and %d of %d parity (any %d of %d rebuild it)", ps.got, ps.count, ps.pgot, ps.m, ps.count, int(ps.count)+ps.m)
}

func (h *Hello) hasPart(p PartKey) bool {
	for _, q := range h.Parts {
		if q == p {
			return true
		}
	}
	return false
}

// sameConfig reports whether h and o announce the same configuration
// (everything but SentNs).
func (h *Hello) sameConfig(o *Hello) bool {
	if h.IntervalNs != o.IntervalNs || h.ConfigHash != o.ConfigHash || h.Lanes != o.Lanes || h.Clock != o.Clock || h.Config != o.Config ||
		len(h.MECs) != len(o.MECs) || len(h.Parts) != len(o.Parts) {
		return false
	}
	for i := range h.MECs {
		if h.MECs[i] != o.MECs[i] {
			return false
		}
	}
	for i := range h.Parts {
		if h.Parts[i] != o.Parts[i] {
			return false
		}
	}
	return true
}

// incomplete appends to dst the announced parts of interval k not yet
// whole; ok is false unless k is in flight with the Hello and every
// lane's End marker, and a frame of a later interval has arrived: the
// sender put every copy of k's fragments on its one control lane before
// any frame of a later interval, so what k still lacks then was lost (or
// reordered), not merely slow.
func (a *reassembler) incomplete(k uint64, dst []PartKey) ([]PartKey, bool) {
	st := a.inflight[k]
	h := a.hello
	if st == nil || h == nil || a.mismatch || !a.any || a.highest <= k {
		return dst, false
	}
	for l := uint16(0); l < h.Lanes; l++ {
		if _, ok := st.ends[l]; !ok {
			return dst, false
		}
	}
	for _, p := range h.Parts {
		if ps := st.parts[p]; ps == nil || ps.got < int(ps.count) {
			dst = append(dst, p)
		}
	}
	return dst, true
}

// supply completes part key of interval k in flight with payload and
// emits the interval if that made it whole.
func (a *reassembler) supply(k uint64, key PartKey, payload []byte) bool {
	st := a.inflight[k]
	if st == nil || a.hello == nil || !a.hello.hasPart(key) {
		return false
	}
	if ps := st.parts[key]; ps != nil && ps.got >= int(ps.count) {
		return false
	}
	if !a.charge(st, len(payload)+sliceCost) {
		return false
	}
	st.parts[key] = &partState{count: 1, got: 1, have: []bool{true}, frags: [][]byte{append([]byte(nil), payload...)}, supplied: true}
	a.check(st)
	return true
}
