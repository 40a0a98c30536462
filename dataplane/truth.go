package dataplane

import (
	"encoding/binary"
	"math"

	"github.com/ldafwd/ldafwd/control"
	"github.com/ldafwd/ldafwd/ring"
)

// IntervalTruth turns an impaired link direction's TruthRecords into the
// exact truth per sender interval, the way the synopses cut the stream: the
// End markers the sender puts on the link. Delivered records come in FIFO
// order, so everything delivered between End(k−1) and End(k) was sent in
// k; lost records come at admission, so they wait in a small list and are
// placed by their tx time against End(k)'s. (With reordering enabled a
// frame held across an End marker is counted in the interval it arrived
// in — which is also where the receiver's synopsis has it.)
//
// Record runs on the receiving port's goroutine and allocates nothing;
// finished intervals are published through an SPSC ring for Next, which
// runs on any one other goroutine.
type IntervalTruth struct {
	direction uint16
	cur       TruthInterval
	lostTx    []uint64 // tx times of lost frames not yet placed
	prevEndTx uint64
	seen      bool
	session   uint64
	lastK     uint64 // a duplicated or replayed End marker does not cut again
	out       *ring.SPSC[TruthInterval]
	one       [1]TruthInterval
	f         control.Frame
	Overflow  uint64 // lost frames beyond the list's capacity (then counted in the current interval)
	lostData  uint64 // data frames lost in all, placed or not
}

// TruthInterval is the exact account of one sender interval on the link.
type TruthInterval struct {
	K         uint64
	Delivered uint64
	Lost      uint64
	Dups      uint64
	SumNs     float64 // Σ delay of delivered data frames, ns
	SqNs      float64 // Σ delay², ns²
}

// Mean and Stddev of the delivered frames' delays, ns.
func (t *TruthInterval) Mean() float64 { return t.SumNs / float64(t.Delivered) }
func (t *TruthInterval) Stddev() float64 {
	m := t.Mean()
	return math.Sqrt(math.Max(t.SqNs/float64(t.Delivered)-m*m, 0))
}

// NewIntervalTruth tracks End markers of the given direction.
func NewIntervalTruth(direction uint16) (*IntervalTruth, error) {
	r, err := ring.NewSPSC[TruthInterval](256)
	if err != nil {
		return nil, err
	}
	return &IntervalTruth{direction: direction, lostTx: make([]uint64, 0, 1<<16), out: r}, nil
}

// Record is a TruthFunc.
func (t *IntervalTruth) Record(frame []byte, r *TruthRecord) {
	isCtl := len(frame) >= 14 && binary.BigEndian.Uint16(frame[12:]) == control.EtherType
	if r.Flags&TruthLost != 0 {
		if isCtl {
			return // a lost control frame is not traffic (the interval it carried fails instead)
		}
		t.lostData++
		if len(t.lostTx) < cap(t.lostTx) {
			t.lostTx = append(t.lostTx, r.TxNs)
		} else {
			t.Overflow++
			t.cur.Lost++
		}
		return
	}
	if isCtl {
		// Like the receiver's EndReader: a duplicated or replayed End does
		// not cut again, but a new session (sender restart) starts afresh.
		if control.ParseFrame(frame, &t.f) == nil && t.f.Type == control.TypeEnd && t.f.Direction == t.direction &&
			(!t.seen || t.f.Session != t.session || t.f.Interval > t.lastK) {
			t.session = t.f.Session
			t.endOf(t.f.Interval, r.TxNs)
		}
		return // control frames are not traffic
	}
	if r.Flags&TruthDuplicate != 0 {
		t.cur.Dups++
	}
	d := float64(r.DeliverNs - r.TxNs)
	t.cur.Delivered++
	t.cur.SumNs += d
	t.cur.SqNs += d * d
}

func (t *IntervalTruth) endOf(k, endTx uint64) {
	keep := t.lostTx[:0]
	for _, tx := range t.lostTx {
		if tx < endTx {
			t.cur.Lost++
		} else {
			keep = append(keep, tx)
		}
	}
	t.lostTx = keep
	t.cur.K = k
	t.one[0] = t.cur
	t.out.EnqueueBurst(t.one[:]) // a full ring drops the oldest truth's successor: Next callers keep up
	t.cur = TruthInterval{}
	t.prevEndTx = endTx
	t.seen, t.lastK = true, k
}

// LostData is the number of data frames the link lost so far (control
// frames excluded). Read it from the recording goroutine, or after it has
// stopped.
func (t *IntervalTruth) LostData() uint64 { return t.lostData }

// Next returns the next finished interval's truth, if any.
func (t *IntervalTruth) Next() (TruthInterval, bool) {
	var o [1]TruthInterval
	if t.out.DequeueBurst(o[:]) != 1 {
		return TruthInterval{}, false
	}
	return o[0], true
}
