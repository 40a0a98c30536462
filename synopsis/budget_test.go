package synopsis

import (
	"bytes"
	"reflect"
	"testing"
)

// A folded RDA is the RDA built with the smaller shape from the same
// packets (the independent truth), and it still decodes the loss.
func TestRDAFoldEqualsSmallerRDA(t *testing.T) {
	for _, k := range []int{1, 3} {
		big := MustNewRDA(RDAConfig{Banks: k, Cells: 2048})
		small := MustNewRDA(RDAConfig{Banks: k, Cells: 128})
		rcv := MustNewRDA(RDAConfig{Banks: k, Cells: 2048})
		for i := uint64(1); i <= 5000; i++ {
			h, ts := Remix(i, 99), 1_000_000+i*1000
			big.Add(h, ts)
			small.Add(h, ts)
			if i%500 != 0 { // 10 lost
				rcv.Add(h, ts+40_000)
			}
		}
		if got := big.FoldTo(200); got != 128 {
			t.Fatalf("k=%d: FoldTo(200) = %d, want 128", k, got)
		}
		f, err := big.Fold(128)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(f.cells, small.cells) || f.Cells() != 128 {
			t.Fatalf("k=%d: folded cells differ from a 128-cell RDA of the same packets", k)
		}
		fr, err := rcv.Fold(128)
		if err != nil {
			t.Fatal(err)
		}
		e, st, err := EstimateRDA(f, fr, 0.98)
		if err != nil {
			t.Fatal(err)
		}
		if st.Lost != 10 || e.Lost != 10 || e.MeanNs != 40_000 {
			t.Errorf("k=%d: folded estimate lost %d (decoded %d), mean %v; want 10 lost, mean 40000", k, e.Lost, st.Lost, e.MeanNs)
		}
		for _, bad := range []int{3, 96, 4096, 1} {
			if _, err := big.Fold(bad); err == nil {
				t.Errorf("Fold(%d) of 2048 accepted", bad)
			}
		}
	}
}

// An LDS shipped with fewer rows and fewer named flows decodes to the
// receiver's copy cut to the same rows; the flows named are the largest.
func TestLDSLimitedEncoding(t *testing.T) {
	cfg := LDSConfig{Rows: 4, Cols: 300, CellsPerFlow: 2, MaxFlows: 1000}
	snd, rcv := mustLDS(t, cfg), mustLDS(t, cfg)
	for f := uint64(1); f <= 100; f++ {
		for p := uint64(0); p < f; p++ { // flow f has f packets
			h := Remix(f<<20|p, 5)
			if key := snd.AddFlowKey(Remix(f, 7), h, 1000+p, 0, 1); key != nil {
				key[0] = byte(f)
			}
			rcv.AddFlowKey(Remix(f, 7), h, 1000+p+500, 0, 1)
		}
	}
	b, err := snd.AppendBinaryLimited(nil, 2, 10)
	if err != nil {
		t.Fatal(err)
	}
	full, _ := snd.AppendBinary(nil)
	if len(b) >= len(full)/2 {
		t.Errorf("2 rows and 10 flows: %d bytes, all: %d", len(b), len(full))
	}
	var dec LDS
	if err := dec.UnmarshalBinary(b); err != nil {
		t.Fatal(err)
	}
	if dec.Rows() != 2 || dec.NamedFlows() != 10 {
		t.Fatalf("decoded %d rows, %d flows", dec.Rows(), dec.NamedFlows())
	}
	for _, e := range dec.flows.Entries(nil) {
		if e.Packets <= 90 {
			t.Errorf("flow of %d packets named; only the 10 largest (91..100) should be", e.Packets)
		}
	}
	if _, err := EstimateLDSFlows(&dec, rcv); err == nil {
		t.Error("a 2-row sender estimated against a 4-row receiver")
	}
	if err := rcv.KeepRows(2); err != nil {
		t.Fatal(err)
	}
	rcv.SetBound(LDSBound{MinDelayNs: 0, MaxDelayNs: 1000}) // every delay is 500 ns
	flows, err := EstimateLDSFlows(&dec, rcv)
	if err != nil {
		t.Fatal(err)
	}
	got := 0
	for _, f := range flows {
		if f.Estimate.Valid && f.Estimate.Lost == 0 && f.Estimate.MeanNs == 500 {
			got++
		}
	}
	if got < 90 {
		t.Errorf("%d of 100 flows measured exactly (mean 500 ns, no loss) from 2 rows", got)
	}
	if _, err := snd.AppendBinaryLimited(nil, 5, -1); err == nil {
		t.Error("5 rows of a 4-row LDS accepted")
	}
}

// A growing flow table starts small, refuses what does not fit, and after
// ReserveFlows holds every flow of the same traffic.
func TestFlowTableGrows(t *testing.T) {
	l := mustLDS(t, LDSConfig{Rows: 2, Cols: 64, MaxFlows: 100_000, FlowsGrow: true})
	run := func() {
		l.Reset()
		for f := uint64(1); f <= 10_000; f++ {
			l.AddFlowKey(Remix(f, 3), Remix(f, 4), 1, 0, 1)
		}
	}
	run()
	now, conf := l.Flows().Capacity()
	if now != flowTableStart || conf != 100_000 || l.NamedFlows() != flowTableStart {
		t.Fatalf("capacity %d of %d, %d held; want %d of 100000", now, conf, l.NamedFlows(), flowTableStart)
	}
	l.ReserveFlows()
	run()
	if l.NamedFlows() != 10_000 {
		t.Errorf("after ReserveFlows %d of 10000 flows held", l.NamedFlows())
	}
	if now, _ := l.Flows().Capacity(); now < 10_000 || now > 100_000 {
		t.Errorf("capacity %d", now)
	}
}

// A folded LDS (k = 2, so a flow's two cells may merge) still measures
// the flows exactly when they do not collide, crosses the wire folded,
// and refuses shapes it cannot fold to.
func TestLDSFoldCols(t *testing.T) {
	cfg := LDSConfig{Rows: 2, Cols: 4096, CellsPerFlow: 2, MaxFlows: 100}
	snd, rcv := mustLDS(t, cfg), mustLDS(t, cfg)
	lostOf := map[uint64]uint64{}
	for f := uint64(1); f <= 20; f++ {
		fh := Remix(f, 7)
		for p := uint64(0); p < 50*f; p++ {
			h := Remix(f<<20|p, 5)
			snd.AddFlowKey(fh, h, 1000+p, 0, 1)
			if p%97 == 3 && f%2 == 0 {
				lostOf[fh]++
				continue
			}
			rcv.AddFlowKey(fh, h, 1000+p+700, 0, 1)
		}
	}
	fs, err := snd.FoldCols(256)
	if err != nil {
		t.Fatal(err)
	}
	fr, err := rcv.FoldCols(256)
	if err != nil {
		t.Fatal(err)
	}
	b, err := fs.AppendBinary(nil)
	if err != nil {
		t.Fatal(err)
	}
	var dec LDS
	if err := dec.UnmarshalBinary(b); err != nil {
		t.Fatal(err)
	}
	if dec.Cols() != 256 || !reflect.DeepEqual(dec.cells, fs.cells) {
		t.Fatalf("folded LDS does not survive the wire: %d cols", dec.Cols())
	}
	if _, err := EstimateLDSFlows(&dec, rcv); err == nil {
		t.Error("a folded sender estimated against an unfolded receiver")
	}
	fr.SetBound(LDSBound{MinDelayNs: 0, MaxDelayNs: 1400}) // every delay is 700 ns
	flows, err := EstimateLDSFlows(&dec, fr)
	if err != nil {
		t.Fatal(err)
	}
	exact := 0
	for _, f := range flows {
		e := f.Estimate
		if e.Lost != lostOf[f.FlowHash] || e.Sent == 0 {
			t.Errorf("flow %x: sent %d lost %d, true lost %d", f.FlowHash, e.Sent, e.Lost, lostOf[f.FlowHash])
		}
		if lostOf[f.FlowHash] == 0 && e.Valid && e.MeanNs == 700 {
			exact++
		}
	}
	if len(flows) != 20 || exact != 10 {
		t.Errorf("%d flows, %d of the 10 without loss with the exact mean 700 ns", len(flows), exact)
	}
	for _, bad := range []int{0, 3, 1, 8192} {
		if _, err := snd.FoldCols(bad); err == nil {
			t.Errorf("FoldCols(%d) of 4096 accepted", bad)
		}
	}
}

// FuzzLDSFoldedUnmarshal: a folded encoding decodes only to sketches that
// re-encode to the same bytes and estimate without error.
func FuzzLDSFoldedUnmarshal(f *testing.F) {
	l, _ := NewLDS(LDSConfig{Rows: 2, Cols: 64, CellsPerFlow: 2, MaxFlows: 8})
	for i := uint64(1); i < 50; i++ {
		l.AddFlowKey(Remix(i%5, 1), Remix(i, 2), i*10, i%4*1000, 1)
	}
	for _, c := range []int{32, 8, 2} {
		g, _ := l.FoldCols(c)
		b, _ := g.AppendBinary(nil)
		f.Add(b)
	}
	// Sparse copies (version 4): one flow's cells, and none.
	for _, fl := range [][]uint64{{Remix(1, 1)}, nil} {
		var keep []uint64
		for _, h := range fl {
			keep = l.FlowCells(keep, h)
		}
		b, _ := l.AppendBinarySparse(nil, keep, 2)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var l LDS
		if err := l.UnmarshalBinary(data); err != nil {
			return
		}
		enc, err := l.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(enc, data) {
			t.Fatalf("decoded from %x, re-encodes to %x", data, enc)
		}
		var m LDS
		if err := m.UnmarshalBinary(enc); err != nil || !ldsEqual(&l, &m) || l.fold != m.fold {
			t.Fatalf("round trip: %v", err)
		}
		if _, err := EstimateLDSFlows(&l, &m); err != nil {
			t.Fatal(err)
		}
	})
}
