package synopsis

import (
	"reflect"
	"testing"
)

// holdBack records one packet as package dpdk's measuring fast path does
// in C when every row takes every packet and a flow has one cell per row:
// a packet of a flow the table holds (from this packet on) goes to its
// slot's held-back sums, any other to its cells. It is written from the
// flowSlot contract, not from Add, so that SettleFlows is checked against
// Add by the test below.
func holdBack(l *LDS, fh, h, ts, errNs uint64, weight uint32) {
	w := uint64(max(weight, 1))
	l.packets++
	l.lastTs = ts
	t := l.flows
	t.observe(fh, h, weight)
	if i := t.find(fh); i >= 0 && t.slots[i].weight != 0 && t.slots[i].hash == fh {
		s := &t.slots[i]
		s.accSum += w * ts
		s.accCount += w
		s.accDigest ^= h
		s.accErr += w * errNs
		l.held = true
		return
	}
	fx := Remix(fh, SaltLDSRow)
	for r := 0; r < l.rows; r++ {
		c := &l.cells[uint64(r)*l.cols+l.flowBase(fx, r)]
		c.sum += w * ts
		c.count += w
		c.digest ^= h
		c.errSum += w * errNs
	}
}

// TestLDSSettleFlows: packets held back in the flow table's slots and then
// settled leave the LDS exactly as Add leaves it (cells, counters, flow
// table), with a table that refuses flows (their packets go to the cells
// at once), a Grow while packets are held back (they move with their
// slots), weights and stamp errors; every reader of the cells settles
// first (Clone, Merge, the encoding, Bucket).
func TestLDSSettleFlows(t *testing.T) {
	cfg := LDSConfig{Rows: 4, Cols: 257, MaxFlows: 300, FlowsGrow: true}
	mk := func() *LDS {
		l, err := NewLDS(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	add := func(l *LDS, rec func(l *LDS, fh, h, ts, errNs uint64, w uint32), seed uint64) {
		for i := uint64(0); i < 20000; i++ {
			fh := Remix(i*i%911, seed) | 1 // 911 flows, Zipf-ish reuse
			h := Remix(i, seed^0x5eed)
			rec(l, fh, h, 1_000_000+i*137, i%5*11, uint32(i%3))
			if i == 7000 {
				l.ReserveFlows() // grows the table under held-back sums
			}
		}
	}
	goAdd := func(l *LDS, fh, h, ts, errNs uint64, w uint32) { l.AddFlowKey(fh, h, ts, errNs, w) }

	want, got := mk(), mk()
	add(want, goAdd, 1)
	add(got, holdBack, 1)
	if got.flows.Refused() == 0 || got.flows.Len() == 0 {
		t.Fatalf("flows %d held, %d refused: want both", got.flows.Len(), got.flows.Refused())
	}
	if reflect.DeepEqual(want, got) {
		t.Fatal("nothing held back")
	}
	got.SettleFlows()
	if !reflect.DeepEqual(want, got) {
		t.Fatal("settled LDS differs from Add's")
	}
	got.SettleFlows() // nothing left: a no-op
	if !reflect.DeepEqual(want, got) {
		t.Fatal("second SettleFlows changed the LDS")
	}

	// Readers settle first.
	readers := map[string]func(l *LDS) any{
		"Clone": func(l *LDS) any { return l.Clone() },
		"AppendBinary": func(l *LDS) any {
			b, err := l.AppendBinary(nil)
			if err != nil {
				t.Fatal(err)
			}
			return b
		},
		"Merge": func(l *LDS) any {
			m := mk()
			add(m, holdBack, 2)
			if err := m.Merge(l); err != nil {
				t.Fatal(err)
			}
			return m
		},
		"Bucket": func(l *LDS) any {
			var s [3]uint64
			for c := 0; c < int(l.cols); c++ {
				a, b, d := l.Bucket(2, c)
				s[0], s[1], s[2] = s[0]+a, s[1]+b, s[2]^d
			}
			return s
		},
	}
	for name, read := range readers {
		ref, held := mk(), mk()
		add(ref, goAdd, 1)
		add(held, holdBack, 1)
		if name == "Merge" {
			// The reference merges into a copy that added by Add too.
			m := mk()
			add(m, goAdd, 2)
			if err := m.Merge(ref); err != nil {
				t.Fatal(err)
			}
			m.flows.scratch = nil
			r := read(held).(*LDS)
			r.flows.scratch = nil
			if !reflect.DeepEqual(m, r) {
				t.Errorf("%s: differs from Add's", name)
			}
			continue
		}
		if !reflect.DeepEqual(read(ref), read(held)) {
			t.Errorf("%s: differs from Add's", name)
		}
	}
}
