package dataplane

import (
	"math"

	"github.com/ldafwd/ldafwd/classifier"
	"github.com/ldafwd/ldafwd/control"
	"github.com/ldafwd/ldafwd/ring"
)

// IntervalTruth turns an impaired link direction's TruthRecords into the
// exact truth per sender interval, the way the synopses cut the stream: the
// End markers the sender puts on the link. A packet belongs to interval k
// when it was sent after End(k−1) and before End(k) — by its place in the
// order the sender put frames on the link (TruthRecord.Seq), not by tx
// time: one transmit burst stamps all its frames alike, End marker
// included — wherever the segment delivered it:
//
//   - lost records come at admission, before End(k) is delivered: they
//     wait in a small list and are placed by tx time when End(k) arrives;
//   - a packet held back past End(k) (reordering) is delivered after it:
//     the stage puts a held packet back after ReorderDepth later frames
//     it admitted (End(k) among them) or, earlier, when its hold expires,
//     so the interval's truth is published once depth more admitted
//     frames were delivered after End(k) — their duplicates and the
//     frames the segment originated do not count: they overtake nothing
//     — and such packets count in Crossed as well as Delivered;
//   - an End marker held back is overtaken by packets of the next
//     interval: a few recent records are kept to move them across.
//
// Per class (TruthInterval.Classes), by the SENDER's class: a packet the
// stage remarked is classified with its original DSCP. Frames the
// classifier does not measure (link-local: classifier.Measure) are no
// truth packets (Excluded), nor are frames the segment originated
// (Injected); a link-local frame the segment consumed is lost only in a
// class that measures it. Duplicates are not receptions (Dups).
//
// Record runs on the receiving port's goroutine and allocates nothing;
// finished intervals are published through an SPSC ring for Next, which
// runs on any one other goroutine.
type IntervalTruth struct {
	direction uint16
	cl        *classifier.Classifier
	classes   int
	depth     int

	cur      TruthInterval // packets sent after the last End marker delivered
	pend     TruthInterval // ended, waiting until no late packet can come
	pending  bool
	endSeq   uint64        // link order (Seq) of the End marker that closed pend (the last one delivered)
	prevSeq  uint64        // Seq of the End marker before it: older packets are too late
	after    int           // admitted frames delivered since it (not duplicates or injected frames)
	lostTx   []lostRec     // lost frames not yet placed
	recent   [64]recentRec // the last records added to cur, circular
	nRecent  int           // records in recent (≤ 64)
	recentAt int           // where the next one goes
	seen     bool
	session  uint64
	lastK    uint64 // a duplicated or replayed End marker does not cut again
	out      *ring.SPSC[TruthInterval]
	one      [1]TruthInterval
	f        control.Frame
	m        classifier.Meta
	classBuf [][]ClassTruth // per-class slices handed out with published intervals, reused round-robin
	classAt  int

	auth *control.Authenticator // when set, End markers must authenticate under it
	keep bool                   // ClassTruth.Delays is kept (KeepDelays)

	// ClockOffset, when set, is what the two ends' clocks add to a
	// frame's delay as the appliances measure it: the receiver's clock's
	// offset at delivery minus the sender's at transmit (both on the link
	// clock). A simulated clock step on one end makes the delays the
	// appliances see differ from the link's; the truth follows them.
	ClockOffset func(txNs, deliverNs uint64) int64

	Overflow uint64 // lost frames beyond the list's capacity (then counted in the current interval)
	Forged   uint64 // End markers that did not authenticate (Authenticate): no cut
	TooLate  uint64 // packets delivered after their interval was published (none with Depth ≥ the stage's ReorderDepth)
	lostData uint64 // data frames lost in all, placed or not
}

type lostRec struct {
	seq uint64
	mec uint16
}

type recentRec struct {
	seq  uint64
	d    float64
	flow uint64
	mec  uint16
	dup  bool
}

// TruthInterval is the exact account of one sender interval on the link.
// Delivered, Lost, SumNs and SqNs are over every measured class; Classes
// splits them by the sender's class.
type TruthInterval struct {
	K         uint64
	Delivered uint64  // measured packets sent in the interval and delivered (duplicates not counted)
	Lost      uint64  // measured packets sent in the interval and lost (or consumed, in a class that measures link-local frames)
	Dups      uint64  // duplicate copies delivered
	Crossed   uint64  // delivered after the interval's End marker (reordered across it); in Delivered
	Excluded  uint64  // frames sent in the interval that no class measures (link-local)
	Consumed  uint64  // link-local frames the segment consumed
	Injected  uint64  // link-local frames the segment originated, delivered in the interval
	Remarked  uint64  // delivered packets the segment remarked
	SumNs     float64 // Σ delay of delivered measured packets, ns
	SqNs      float64 // Σ delay², ns²
	// Classes is per MEC (index = MEC id). The slice is the truth's own
	// and is reused 256 intervals later: copy what you keep longer.
	Classes []ClassTruth
}

// ClassTruth is one MEC's share of a TruthInterval.
type ClassTruth struct {
	Delivered, Lost, Crossed uint64
	SumNs, SqNs              float64
	// Delays: each delivered packet's delay, ns, in no order; nil unless
	// the truth keeps them (KeepDelays). The exact quantiles a trajectory
	// sample estimates are order statistics of these.
	Delays []int64
	// DelayFlows[i] is the flow hash (classifier.Meta.FlowHash) of the
	// packet of Delays[i]: a flow's exact quantiles.
	DelayFlows []uint64
}

// FlowDelays appends to dst the delays of the flow's delivered packets
// (KeepDelays) in the class.
func (c *ClassTruth) FlowDelays(dst []int64, flowHash uint64) []int64 {
	for i, f := range c.DelayFlows {
		if f == flowHash {
			dst = append(dst, c.Delays[i])
		}
	}
	return dst
}

// KeepDelays makes the truth keep every delivered packet's delay and
// flow (ClassTruth.Delays, DelayFlows), for the exact quantiles: memory
// per packet, for the demo's sample lines and flow lines.
func (t *IntervalTruth) KeepDelays() { t.keep = true }

// Mean and Stddev of the delivered frames' delays, ns.
func (t *TruthInterval) Mean() float64 { return t.SumNs / float64(t.Delivered) }
func (t *TruthInterval) Stddev() float64 {
	m := t.Mean()
	return math.Sqrt(math.Max(t.SqNs/float64(t.Delivered)-m*m, 0))
}

// Mean and Stddev of the class's delivered frames' delays, ns.
func (c *ClassTruth) Mean() float64 { return c.SumNs / float64(c.Delivered) }
func (c *ClassTruth) Stddev() float64 {
	m := c.Mean()
	return math.Sqrt(math.Max(c.SqNs/float64(c.Delivered)-m*m, 0))
}

// NewIntervalTruth tracks End markers of the given direction, one class
// (link-local frames excluded, as the default classifier does).
func NewIntervalTruth(direction uint16) (*IntervalTruth, error) {
	return NewIntervalTruthClasses(direction, nil, 0)
}

// NewIntervalTruthClasses is NewIntervalTruth with the appliances'
// classifier, so the truth is per MEC and excludes what they exclude;
// depth is the impairment stage's ReorderDepth (0: 1).
func NewIntervalTruthClasses(direction uint16, cl *classifier.Classifier, depth int) (*IntervalTruth, error) {
	r, err := ring.NewSPSC[TruthInterval](256)
	if err != nil {
		return nil, err
	}
	depth = max(depth, 1)
	t := &IntervalTruth{direction: direction, cl: cl, classes: cl.NumClasses(), depth: depth,
		lostTx: make([]lostRec, 0, 1<<16), out: r}
	// One slice per interval the ring can hold, plus the two being built.
	t.classBuf = make([][]ClassTruth, 256+2)
	for i := range t.classBuf {
		t.classBuf[i] = make([]ClassTruth, t.classes)
	}
	t.cur.Classes = t.nextClasses()
	return t, nil
}

// Authenticate makes the truth cut only at End markers whose tag verifies
// under key (an empty key: only unkeyed, insecure-mode markers), as the
// appliances' receiver does. Without it any frame that parses as an End
// of the direction cuts — a frame of another session or a user's frame
// laid out like one would cut the truth where the appliances do not.
// Call before the first Record.
func (t *IntervalTruth) Authenticate(key []byte) error {
	a, err := control.NewAuthenticator(key)
	if err != nil {
		return err
	}
	t.auth = a
	return nil
}

func (t *IntervalTruth) nextClasses() []ClassTruth {
	c := t.classBuf[t.classAt]
	t.classAt = (t.classAt + 1) % len(t.classBuf)
	clear(c)
	return c
}

// class is the sender's class of a data frame, and whether it is measured.
func (t *IntervalTruth) class(frame []byte, r *TruthRecord) (uint16, bool) {
	classifier.Parse(frame, &t.m)
	if r.Flags&TruthRemarked != 0 {
		t.m.DSCP = r.OrigDSCP
	}
	return t.cl.Measure(&t.m)
}

// Record is a TruthFunc.
func (t *IntervalTruth) Record(frame []byte, r *TruthRecord) {
	isCtl := control.IsControlFrame(frame) // priority-tagged ones too
	if r.Flags&(TruthLost|TruthConsumed) != 0 {
		if isCtl {
			return // a lost control frame is not traffic (the interval it carried fails instead)
		}
		mec, ok := t.class(frame, r)
		if r.Flags&TruthConsumed != 0 {
			t.cur.Consumed++
		}
		if !ok {
			t.cur.Excluded++
			return
		}
		t.lostData++
		if len(t.lostTx) < cap(t.lostTx) {
			t.lostTx = append(t.lostTx, lostRec{seq: r.Seq, mec: mec})
		} else {
			t.Overflow++
			t.cur.Lost++
			t.cur.Classes[mec].Lost++
		}
		return
	}
	if t.pending && r.Flags&(TruthDuplicate|TruthInjected) == 0 {
		// Only a frame the stage admitted overtakes a held one: a
		// duplicate rides behind its original, an injected frame skips
		// the line. A packet sent before End(k) comes within depth of
		// them after End(k) — a delay (however long) or a pause of the
		// sender only makes it come later, never dropped: no time limit.
		if t.after++; t.after > t.depth {
			t.publish()
		}
	}
	if isCtl {
		// Like the receiver's EndReader: a duplicated or replayed End does
		// not cut again, but a new session (sender restart) starts afresh.
		if control.ParseFrame(frame, &t.f) != nil || t.f.Type != control.TypeEnd || t.f.Direction != t.direction {
			return
		}
		if t.auth != nil && !t.auth.Verify(&t.f) {
			t.Forged++
			return
		}
		if !t.seen || t.f.Session != t.session || t.f.Interval > t.lastK {
			t.session = t.f.Session
			t.endOf(t.f.Interval, r.Seq)
		}
		return // control frames are not traffic
	}
	if r.Flags&TruthInjected != 0 {
		t.cur.Injected++
		return
	}
	mec, ok := t.class(frame, r)
	if !ok {
		t.cur.Excluded++
		return
	}
	d := float64(r.DeliverNs - r.TxNs)
	if t.ClockOffset != nil {
		d += float64(t.ClockOffset(r.TxNs, r.DeliverNs))
	}
	dup := r.Flags&TruthDuplicate != 0
	if t.seen && r.Seq < t.endSeq {
		// Sent before the last End marker, delivered after it.
		if !t.pending || r.Seq < t.prevSeq {
			t.TooLate++
			return
		}
		add(&t.pend, mec, d, t.m.FlowHash, dup, t.keep)
		if !dup {
			t.pend.Crossed++
			t.pend.Classes[mec].Crossed++
			if r.Flags&TruthRemarked != 0 {
				t.pend.Remarked++
			}
		}
		return
	}
	add(&t.cur, mec, d, t.m.FlowHash, dup, t.keep)
	if r.Flags&TruthRemarked != 0 && !dup {
		t.cur.Remarked++
	}
	t.recent[t.recentAt] = recentRec{seq: r.Seq, d: d, flow: t.m.FlowHash, mec: mec, dup: dup}
	t.recentAt = (t.recentAt + 1) % len(t.recent)
	t.nRecent = min(t.nRecent+1, len(t.recent))
}

// add counts one delivered packet (or duplicate) of class mec and flow
// flow in ti, and keeps its delay and flow with keep.
func add(ti *TruthInterval, mec uint16, d float64, flow uint64, dup, keep bool) {
	if dup {
		ti.Dups++
		return
	}
	ti.Delivered++
	ti.SumNs += d
	ti.SqNs += d * d
	c := &ti.Classes[mec]
	c.Delivered++
	c.SumNs += d
	c.SqNs += d * d
	if keep {
		c.Delays = append(c.Delays, int64(d))
		c.DelayFlows = append(c.DelayFlows, flow)
	}
}

func sub(ti *TruthInterval, mec uint16, d float64, flow uint64, dup, keep bool) {
	if dup {
		ti.Dups--
		return
	}
	ti.Delivered--
	ti.SumNs -= d
	ti.SqNs -= d * d
	c := &ti.Classes[mec]
	c.Delivered--
	c.SumNs -= d
	c.SqNs -= d * d
	if keep {
		// The packets sub moves were added last: look from the end.
		for i := len(c.Delays) - 1; i >= 0; i-- {
			if c.Delays[i] == int64(d) && c.DelayFlows[i] == flow {
				c.Delays = append(c.Delays[:i], c.Delays[i+1:]...)
				c.DelayFlows = append(c.DelayFlows[:i], c.DelayFlows[i+1:]...)
				break
			}
		}
	}
}

// endOf closes interval k at its End marker (endSeq in link order): the
// lost frames sent before it are placed, packets of the next interval
// that overtook the marker move there, and the interval waits for late
// packets before it is published.
func (t *IntervalTruth) endOf(k, endSeq uint64) {
	if t.pending {
		t.publish()
	}
	next := TruthInterval{Classes: t.nextClasses()}
	for _, r := range t.recent[:t.nRecent] { // order does not matter: sums
		if r.seq > endSeq {
			sub(&t.cur, r.mec, r.d, r.flow, r.dup, t.keep)
			add(&next, r.mec, r.d, r.flow, r.dup, t.keep)
		}
	}
	t.nRecent, t.recentAt = 0, 0
	keep := t.lostTx[:0]
	for _, l := range t.lostTx {
		if l.seq < endSeq {
			t.cur.Lost++
			t.cur.Classes[l.mec].Lost++
		} else {
			keep = append(keep, l)
		}
	}
	t.lostTx = keep
	t.cur.K = k
	t.pend, t.pending, t.prevSeq, t.endSeq, t.after = t.cur, true, t.endSeq, endSeq, 0
	t.cur = next
	t.seen, t.lastK = true, k
}

func (t *IntervalTruth) publish() {
	t.one[0] = t.pend
	t.out.EnqueueBurst(t.one[:]) // a full ring drops the newest: Next callers keep up
	t.pend, t.pending = TruthInterval{}, false
}

// LostData is the number of measured data frames the link lost so far
// (control frames and frames no class measures excluded). Read it from the
// recording goroutine, or after it has stopped.
func (t *IntervalTruth) LostData() uint64 { return t.lostData }

// Next returns the next finished interval's truth, if any.
func (t *IntervalTruth) Next() (TruthInterval, bool) {
	var o [1]TruthInterval
	if t.out.DequeueBurst(o[:]) != 1 {
		return TruthInterval{}, false
	}
	return o[0], true
}
