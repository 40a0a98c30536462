package synopsis

import (
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
)

// TestFlowTableExact: with HoldRate 1 and room to spare the table counts
// every flow's packets exactly, whatever the probe collisions.
func TestFlowTableExact(t *testing.T) {
	ft, err := NewFlowTable(1000, 0)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 1))
	truth := map[uint64]uint64{}
	// Flow hashes that share their low bits force long probe sequences.
	for i := 0; i < 20000; i++ {
		f := uint64(rng.IntN(900))<<20 | 7
		var key FlowKeyBytes
		key[0] = byte(f >> 20)
		ft.Observe(f, rng.Uint64(), &key, 3)
		truth[f]++
	}
	if ft.Len() != len(truth) || ft.Missed() != 0 || ft.Refused() != 0 {
		t.Fatalf("len %d (want %d) missed %d refused %d", ft.Len(), len(truth), ft.Missed(), ft.Refused())
	}
	for f, n := range truth {
		e, ok := ft.Lookup(f)
		if !ok || e.Packets != n || e.Weight != 3 || e.Key[0] != byte(f>>20) {
			t.Fatalf("flow %x: %+v ok=%v, want %d packets", f, e, ok, n)
		}
	}
	es := ft.Entries(nil)
	for i := 1; i < len(es); i++ {
		if es[i-1].FlowHash >= es[i].FlowHash {
			t.Fatal("Entries not in flow-hash order")
		}
	}
	if _, ok := ft.Lookup(12345); ok {
		t.Fatal("found a flow never seen")
	}
}

// When full, new flows are refused and counted; held flows keep counting.
func TestFlowTableOverflow(t *testing.T) {
	ft, _ := NewFlowTable(10, 1)
	for f := uint64(1); f <= 15; f++ {
		for range 3 {
			ft.Observe(f, f, nil, 0)
		}
	}
	if ft.Len() != 10 || ft.Refused() != 15 || ft.Missed() != 15 {
		t.Fatalf("len %d refused %d missed %d, want 10 15 15", ft.Len(), ft.Refused(), ft.Missed())
	}
	if e, _ := ft.Lookup(3); e.Packets != 3 || e.Weight != 1 {
		t.Fatalf("held flow %+v", e)
	}
	var zero FlowTable
	zero.Observe(1, 1, nil, 1)
	if zero.Missed() != 1 || zero.Len() != 0 {
		t.Fatal("zero table")
	}
	if _, err := NewFlowTable(-1, 1); err == nil {
		t.Fatal("negative capacity accepted")
	}
	if _, err := NewFlowTable(1, 1.5); err == nil {
		t.Fatal("hold rate 1.5 accepted")
	}
}

// Sample-and-hold: a flow of n packets is held with probability
// 1-(1-p)^n, and sender and receiver admit it at the same packet.
func TestFlowTableSampleAndHold(t *testing.T) {
	const p = 0.01
	s, _ := NewFlowTable(100000, p)
	r, _ := NewFlowTable(100000, p)
	rng := rand.New(rand.NewPCG(2, 2))
	sizes := []int{1, 10, 100, 1000}
	const perSize = 2000
	for si, n := range sizes {
		for j := range perSize {
			f := uint64(si*perSize+j) + 1
			for range n {
				h := rng.Uint64()
				s.Observe(f, h, nil, 1)
				r.Observe(f, h, nil, 1)
			}
		}
	}
	for si, n := range sizes {
		held := 0
		for j := range perSize {
			f := uint64(si*perSize+j) + 1
			a, okA := s.Lookup(f)
			b, okB := r.Lookup(f)
			if okA != okB || a.Packets != b.Packets {
				t.Fatalf("sender and receiver disagree on flow %d: %+v %+v", f, a, b)
			}
			if okA {
				held++
			}
		}
		want := 1 - math.Pow(1-p, float64(n))
		got := float64(held) / perSize
		sd := math.Sqrt(want * (1 - want) / perSize)
		if math.Abs(got-want) > 4*sd+1e-9 {
			t.Errorf("flows of %d packets held %.4f, want %.4f ± %.4f", n, got, want, 4*sd)
		}
	}
}

func TestFlowTableMerge(t *testing.T) {
	a, _ := NewFlowTable(4, 1)
	b, _ := NewFlowTable(4, 1)
	for f := uint64(1); f <= 3; f++ {
		a.Observe(f, 0, nil, 1)
	}
	for f := uint64(2); f <= 6; f++ {
		b.Observe(f, 0, nil, 2)
	}
	a.Merge(b)
	// b (capacity 4) holds 2..5 and refused 6. a holds 1,2,3, takes 4 from
	// b and refuses 5: two refusals, two packets missed in all.
	if a.Len() != 4 || a.Refused() != 2 || a.Missed() != 2 {
		t.Fatalf("len %d refused %d missed %d", a.Len(), a.Refused(), a.Missed())
	}
	if e, _ := a.Lookup(2); e.Packets != 2 || e.Weight != 1 {
		t.Fatalf("merged flow 2: %+v", e)
	}
	c := a.Clone()
	a.Reset()
	if a.Len() != 0 || c.Len() != 4 {
		t.Fatal("Clone shares state or Reset left flows")
	}
}

func TestFlowTableObserveAllocs(t *testing.T) {
	ft, _ := NewFlowTable(1000, 0.5)
	key := FlowKeyBytes{1}
	var i uint64
	if n := testing.AllocsPerRun(1000, func() {
		i++
		ft.Observe(i%2000, i*0x9e3779b97f4a7c15, &key, 1)
	}); n != 0 {
		t.Fatalf("Observe allocates %v", n)
	}
}

func TestPackFlowKey(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	for i := range 1000 {
		var src, dst [16]byte
		v6 := i%2 == 0
		for j := range src {
			src[j], dst[j] = byte(rng.Uint32()), byte(rng.Uint32())
		}
		if !v6 {
			src = [16]byte{10: 0xff, 11: 0xff, 12: src[12], 13: src[13], 14: src[14], 15: src[15]}
			dst = [16]byte{10: 0xff, 11: 0xff, 12: dst[12], 13: dst[13], 14: dst[14], 15: dst[15]}
		}
		sp, dp, proto := uint16(rng.Uint32()), uint16(rng.Uint32()), uint8(rng.Uint32())
		k := PackFlowKey(src, dst, sp, dp, proto, v6)
		s2, d2, sp2, dp2, p2, v62 := UnpackFlowKey(&k)
		if s2 != src || d2 != dst || sp2 != sp || dp2 != dp || p2 != proto || v62 != v6 {
			t.Fatalf("round trip %d differs", i)
		}
		if !v6 && [26]byte(k[14:]) != [26]byte{} {
			t.Fatalf("IPv4 key uses more than 14 bytes: %x", k)
		}
	}
}

// TestLDSAddFlowKeyIsAddFlow: filling the key slot AddFlowKey returns
// leaves the LDS (cells, flow table, keys) exactly as AddFlow with the key
// does, under sampling and overflow, and the slot is offered once per held
// flow, on its first held packet.
func TestLDSAddFlowKeyIsAddFlow(t *testing.T) {
	cfg, err := DimensionLDS(LDSDimensioning{ExpectedFlows: 300})
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxFlows, cfg.HoldRate = 300, 0.5
	a, err := NewLDS(cfg)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := NewLDS(cfg)
	rng := rand.New(rand.NewPCG(3, 4))
	offered := map[uint64]int{}
	for i := 0; i < 50000; i++ {
		f := uint64(rng.IntN(2000))*0x9e3779b97f4a7c15 | 1
		h, ts := rng.Uint64(), uint64(1e18)+uint64(i)*100
		key := PackFlowKey([16]byte{15: byte(f)}, [16]byte{14: byte(f >> 8)}, uint16(f>>16), 80, 6, false)
		a.AddFlow(f, h, ts, 0, 2, &key)
		if k := b.AddFlowKey(f, h, ts, 0, 2); k != nil {
			if *k != (FlowKeyBytes{}) {
				t.Fatal("key slot not zeroed")
			}
			*k = key
			offered[f]++
		}
	}
	ea, _ := a.AppendBinary(nil)
	eb, _ := b.AppendBinary(nil)
	if string(ea) != string(eb) || !reflect.DeepEqual(a.Flows().Entries(nil), b.Flows().Entries(nil)) {
		t.Fatal("AddFlowKey + fill differs from AddFlow")
	}
	if len(offered) != b.Flows().Len() || b.Flows().Len() == 0 || b.Flows().Missed() == 0 {
		t.Fatalf("%d flows offered a key slot, %d held, %d missed", len(offered), b.Flows().Len(), b.Flows().Missed())
	}
	for f, n := range offered {
		if n != 1 {
			t.Fatalf("flow %x offered its key slot %d times", f, n)
		}
	}
}
