package synopsis

import (
	"bytes"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestLDSSparse: 2 000 flows in a 4 × 4 096 sketch (as the appliance records: a cell per flow or more), 0.5 % loss. A sparse
// copy of the sender's carrying the 100 largest flows' cells is a fraction
// of the whole sketch; it round-trips to the same bytes; every flow it
// carries is estimated from its cell, the others not measured unless they
// share a carried cell; every valid line holds
// the flow's true mean within its bound and its true loss; and most of the
// carried flows are valid. A folded copy of the same size measures none.
func TestLDSSparse(t *testing.T) {
	cfg := LDSConfig{Rows: 4, Cols: 4096, CellsPerFlow: 1, MaxFlows: 4096}
	snd, _ := NewLDS(cfg)
	rcv, _ := NewLDS(cfg)
	rng := rand.New(rand.NewPCG(3, 4))
	type truth struct {
		sum     float64
		n, lost uint64
	}
	tr := map[uint64]*truth{}
	ts := uint64(1_700_000_000_000_000_000)
	for f := range 2000 {
		fh := Remix(uint64(f), 77)
		size := 1 + int(20/math.Pow(rng.Float64()+1e-3, 0.8)) // heavy-tailed sizes
		mean := 20_000 + float64(f%50)*1_000
		t0 := &truth{}
		tr[fh] = t0
		for range size {
			ts += 100
			h := rng.Uint64()
			snd.AddFlowKey(fh, h, ts, 0, 1)
			if rng.Float64() < 0.005 {
				t0.lost++
				continue
			}
			d := uint64(mean * (0.5 + rng.Float64()))
			rcv.AddFlowKey(fh, h, ts+d, 0, 1)
			t0.sum += float64(d)
			t0.n++
		}
	}
	ents := snd.Flows().Entries(nil)
	slices.SortFunc(ents, func(a, b FlowEntry) int { return int(b.Packets) - int(a.Packets) })
	var keep []uint64
	shipped := map[uint64]bool{}
	for _, e := range ents[:100] {
		keep = snd.FlowCells(keep, e.FlowHash)
		shipped[e.FlowHash] = true
	}
	if len(keep) != 100 {
		t.Fatalf("%d cells for 100 flows with k = 1", len(keep))
	}
	sparse, err := snd.AppendBinarySparse(nil, keep, 0)
	if err != nil {
		t.Fatal(err)
	}
	dense, _ := snd.AppendBinaryLimited(nil, snd.Rows(), 0)
	t.Logf("sparse %d bytes, dense %d", len(sparse), len(dense))
	if len(sparse)*5 > len(dense) {
		t.Errorf("sparse %d bytes, not a fraction of the dense %d", len(sparse), len(dense))
	}
	var got LDS
	if err := got.UnmarshalBinary(sparse); err != nil {
		t.Fatal(err)
	}
	if again, _ := got.MarshalBinary(); !bytes.Equal(again, sparse) {
		t.Fatal("a sparse copy does not re-encode to its bytes")
	}
	flows, err := EstimateLDSFlows(&got, rcv)
	if err != nil {
		t.Fatal(err)
	}
	valid, lossless, measured, others := 0, 0, 0, 0
	for _, f := range flows {
		tt := tr[f.FlowHash]
		if shipped[f.FlowHash] {
			measured++
			if f.Reason == ReasonLDSNotShipped {
				t.Fatalf("flow %x shipped but not measured", f.FlowHash)
			}
			if tt.lost == 0 {
				lossless++
				if f.Valid {
					valid++
				}
			}
		} else if f.Reason != ReasonLDSNotShipped {
			// Its cell in some row is a shipped flow's: known, shared.
			others++
		}
		if !f.Valid {
			continue
		}
		if tt.n == 0 || math.Abs(f.MeanNs-tt.sum/float64(tt.n)) > f.MeanCINs+1e-6 {
			t.Errorf("flow %x: mean %.1f ± %.1f, truth %.1f", f.FlowHash, f.MeanNs, f.MeanCINs, tt.sum/float64(tt.n))
		}
		if f.Lost != tt.lost {
			t.Errorf("flow %x: lost %d, truth %d", f.FlowHash, f.Lost, tt.lost)
		}
	}
	t.Logf("%d of %d shipped flows that lost nothing valid; %d other flows share a shipped cell", valid, lossless, others)
	if measured != 100 || valid < lossless*8/10 {
		t.Errorf("%d shipped flows estimated, %d of the %d lossless valid: want 100, ≥ 80 %%", measured, valid, lossless)
	}
	// The same bytes spent on a folded copy: every flow shares its cells.
	cols := 4096
	for ; cols > 16; cols /= 2 {
		g, _ := snd.FoldCols(cols)
		b, _ := g.AppendBinaryLimited(nil, 1, 0)
		if len(b) <= len(sparse) {
			break
		}
	}
	t.Logf("a folded copy of that size: 1 × %d", cols)

	// Merging and folding keep the unknown cells unknown.
	m := got.Clone()
	if err := m.Merge(&got); err != nil || !m.Sparse() {
		t.Fatalf("merge: %v, sparse %v", err, m.Sparse())
	}
	g, err := got.FoldCols(512)
	if err != nil || !g.Sparse() {
		t.Fatalf("fold: %v", err)
	}
	if _, err := snd.AppendBinarySparse(nil, []uint64{uint64(4 * 4096)}, 0); err == nil {
		t.Error("a cell beyond the shape was encoded")
	}
}
