package dataplane_test

import (
	"bytes"
	"testing"

	"github.com/ldafwd/ldafwd/classifier"
	"github.com/ldafwd/ldafwd/dataplane"
	"github.com/ldafwd/ldafwd/synopsis"
)

// Two lanes' copies of an interval merge into exactly the copy one lane
// recording every frame would hold; lanes that disagree on the interval
// (one lane's End lost: its copy spans two) give one copy marked Merged
// that covers both intervals. The LDS's per-packet stamp errors merge too:
// a flow's stamp bound must not depend on how frames spread over queues.
func TestMergedBuffer(t *testing.T) {
	rda := synopsis.DefaultRDAConfig()
	lds := synopsis.LDSConfig{Rows: 2, Cols: 64, CellsPerFlow: 2, MaxFlows: 32}
	cfg := dataplane.SynConfig{LDA: synopsis.DefaultLDAConfig(), RDA: &rda, LDS: &lds, Classes: 1}
	lanes := []*dataplane.SynBuffer{must(dataplane.NewSynBuffer(cfg)), must(dataplane.NewSynBuffer(cfg))}
	ref := must(dataplane.NewSynBuffer(cfg))
	m, err := dataplane.NewMergedBuffer(cfg, lanes)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range append(lanes, ref) {
		d.Begin(10, 1000)
	}
	var meta classifier.Meta
	rec := func(k uint64, skipFlip1 bool) {
		for i := uint64(1); i <= 500; i++ {
			meta.Hash = synopsis.Remix(i*0x9e3779b97f4a7c15+k, 1) | 1
			meta.FlowHash = synopsis.Remix(i%7, 2) | 1
			meta.Len = 100
			ts, stampErr := k*1e9+i*1000, i%5*3000
			lanes[i%2].Active().Record(&meta, 0, ts, stampErr)
			ref.Active().Record(&meta, 0, ts, stampErr)
		}
		lanes[0].Flip(k, k*1e9+9e8)
		if !skipFlip1 {
			lanes[1].Flip(k, k*1e9+9e8)
		}
		ref.Flip(k, k*1e9+9e8)
	}
	rec(10, false)
	got, ok := m.Idle()
	want, _ := ref.Idle()
	if !ok {
		t.Fatal("no merged copy of interval 10")
	}
	if got.FirstK != 10 || got.LastK != 10 || got.Merged || got.Frames != want.Frames || got.Bytes != want.Bytes {
		t.Fatalf("merged %d..%d merged=%v frames %d bytes %d, want 10..10 false %d %d", got.FirstK, got.LastK, got.Merged, got.Frames, got.Bytes, want.Frames, want.Bytes)
	}
	gb, _ := got.LDA[0].AppendBinary(nil)
	wb, _ := want.LDA[0].AppendBinary(nil)
	if !bytes.Equal(gb, wb) {
		t.Error("merged LDA differs from one lane's")
	}
	if gr, wr := got.RDA[0].Clone(), want.RDA[0].Clone(); gr.Subtract(wr) != nil || gr.Count() != 0 {
		t.Error("merged RDA differs from one lane's")
	}
	gs, _ := got.LDS.AppendBinary(nil)
	ws, _ := want.LDS.AppendBinary(nil)
	if !bytes.Equal(gs, ws) {
		t.Error("merged LDS (stamp errors included) differs from one lane's")
	}
	m.Release()
	ref.Release()

	// Lane 1 misses its cut of 11: nothing until it cuts 12, then one
	// copy of 11..12, Merged.
	rec(11, true)
	if _, ok := m.Idle(); ok {
		t.Fatal("a merged copy before lane 1 handed one over")
	}
	rec(12, false)
	got, ok = m.Idle()
	if !ok || got.FirstK != 11 || got.LastK != 12 || !got.Merged || got.Frames != 1000 {
		t.Fatalf("ok=%v copy %d..%d merged=%v frames %d: want 11..12, merged, 1000 frames", ok, got.FirstK, got.LastK, got.Merged, got.Frames)
	}
	m.Release()
	if _, ok := m.Idle(); ok {
		t.Error("a copy left after the merged one")
	}
}
