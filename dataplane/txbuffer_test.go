package dataplane

import (
	"math/rand/v2"
	"testing"

	"github.com/ldafwd/ldafwd/classifier"
)

// txSlot is the naive twin of one txBuffer slot: the buffer is checked
// against a plain slice of these after every operation.
type txSlot struct {
	p        *Packet
	len      uint32
	mec      uint16
	rec, own bool
}

func (b *txBuffer) slots() []txSlot {
	var s []txSlot
	for i := 0; i < b.n; i++ {
		s = append(s, txSlot{b.pkts[i], b.meta[i].Len, b.mec[i], b.rec[i], b.own[i]})
	}
	return s
}

// TestTxBufferInStep drives a txBuffer with random operations and checks
// that its five arrays move together, as a slice of slot structs would,
// and that no slot past the last holds a packet.
func TestTxBufferInStep(t *testing.T) {
	const size = 40
	b := newTxBuffer(size)
	var want []txSlot
	r := rand.New(rand.NewPCG(1, 2))
	newPkt := func() *Packet { return &Packet{Data: make([]byte, 1)} }
	for step := 0; step < 20000; step++ {
		room := size - b.n
		switch op := r.IntN(6); {
		case op == 0 && room > 0:
			p, rec, own := newPkt(), r.IntN(2) == 0, r.IntN(2) == 0
			b.push(p, rec, own)
			want = append(want, txSlot{p: p, rec: rec, own: own})
		case op == 1 && room > 0:
			ps := make([]*Packet, 1+r.IntN(room))
			for i := range ps {
				ps[i] = newPkt()
			}
			b.pushForwarded(ps)
			for _, p := range ps {
				want = append(want, txSlot{p: p})
			}
		case op == 2 && room > 0:
			// A sender's burst, some of it blocked (set to nil).
			ps := make([]*Packet, 1+r.IntN(room))
			for i := range ps {
				ps[i] = newPkt()
			}
			pkts, meta, mec, rec := b.open(ps)
			var kept []txSlot
			var blocked []*Packet
			for i := range pkts {
				meta[i] = classifier.Meta{Len: r.Uint32()}
				mec[i], rec[i] = uint16(r.IntN(8)), r.IntN(2) == 0
				if r.IntN(4) == 0 {
					pkts[i] = nil
					blocked = append(blocked, ps[i])
					continue
				}
				kept = append(kept, txSlot{ps[i], meta[i].Len, mec[i], rec[i], false})
			}
			n := len(ps)
			if len(blocked) > 0 {
				var free []*Packet
				free, n = b.dropNil(ps, nil)
				if len(free) != len(blocked) || n != len(kept) {
					t.Fatalf("dropNil freed %d kept %d, want %d and %d", len(free), n, len(blocked), len(kept))
				}
				for i := range free {
					if free[i] != blocked[i] {
						t.Fatal("dropNil freed the wrong packets")
					}
				}
			}
			b.commit(n)
			want = append(want, kept...)
		case op == 3 && b.n > 0:
			i := r.IntN(b.n + 1)
			b.removeFront(i)
			want = append([]txSlot(nil), want[i:]...)
		case op == 4 && room > 0:
			ps := make([]*Packet, 1+r.IntN(min(room, 8)))
			var front []txSlot
			for i := range ps {
				ps[i] = newPkt()
				front = append(front, txSlot{p: ps[i], own: true})
			}
			b.insertOwnFront(ps)
			want = append(front, want...)
		case op == 5 && r.IntN(8) == 0:
			b.reset()
			want = nil
		}
		got := b.slots()
		if len(got) != len(want) {
			t.Fatalf("step %d: %d slots, want %d", step, len(got), len(want))
		}
		for i := range got {
			g, w := got[i], want[i]
			// A slot the lane never filled Meta/MEC for (push,
			// pushForwarded, insertOwnFront) carries whatever was there:
			// only frames, rec and own are compared for those.
			if g.p != w.p || g.rec != w.rec || g.own != w.own || (w.len != 0 || w.mec != 0) && (g.len != w.len || g.mec != w.mec) {
				t.Fatalf("step %d slot %d: %+v, want %+v", step, i, g, w)
			}
		}
		for i := b.n; i < size; i++ {
			if b.pkts[i] != nil {
				t.Fatalf("step %d: slot %d past the last holds a packet", step, i)
			}
		}
		if b.full() != (b.n == size) {
			t.Fatal("full wrong")
		}
	}
}
