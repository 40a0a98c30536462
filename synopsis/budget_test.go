package synopsis

import (
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
			if key := snd.AddFlowKey(Remix(f, 7), h, 1000+p, 1); key != nil {
				key[0] = byte(f)
			}
			rcv.AddFlowKey(Remix(f, 7), h, 1000+p+500, 1)
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
			l.AddFlowKey(Remix(f, 3), Remix(f, 4), 1, 1)
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
