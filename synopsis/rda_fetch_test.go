package synopsis

import (
	"bytes"
	"errors"
	"testing"
)

// TestCellsRequest: requests round trip; malformed ones fail with
// ErrBadEncoding.
func TestCellsRequest(t *testing.T) {
	for _, n := range []int{2, 64, 2048, RDAMaxCells} {
		b := AppendCellsRequest(nil, n)
		if !IsCellsRequest(b) || IsCellsRequest(AppendTimestampRequest(nil, []uint64{1})) {
			t.Fatal("IsCellsRequest confuses the request kinds")
		}
		got, err := ParseCellsRequest(b)
		if err != nil || got != n {
			t.Fatalf("%d cells: got %d, %v", n, got, err)
		}
	}
	for _, b := range [][]byte{nil, {'F'}, {'F', 1}, {'F', 2, 64}, {'Q', 1, 64}, {'F', 1, 1}, {'F', 1, 64, 0},
		{'F', 1, 0x80, 0}, AppendCellsRequest(nil, RDAMaxCells+1)} {
		if _, err := ParseCellsRequest(b); !errors.Is(err, ErrBadEncoding) {
			t.Fatalf("% x: %v", b, err)
		}
	}
}

// TestCopyCellsFold: the kept copy, folded, encodes exactly as the
// recorded RDA folded alike, sampling level included, and decodes
// against the receiver's copy folded to the same cells.
func TestCopyCellsFold(t *testing.T) {
	cfg := RDAConfig{Banks: 3, Cells: 1024, CacheBudget: TSCacheMinBudget}
	snd, _ := NewRDA(cfg)
	rcv, _ := NewRDA(cfg)
	for i := uint64(1); i <= 5000; i++ {
		h := Remix(i, 99)
		snd.Add(h, 1_000_000+i*100)
		if i%10 != 0 {
			rcv.Add(h, 1_050_000+i*100)
		}
	}
	kept := snd.CopyCells(nil, snd.Cache())
	for _, m := range []int{64, 256, 1024} {
		a, _ := snd.Fold(m)
		b, _ := kept.Fold(m)
		ea, _ := a.AppendBinary(nil)
		eb, _ := b.AppendBinary(nil)
		if !bytes.Equal(ea, eb) {
			t.Fatalf("%d cells: the kept copy encodes differently", m)
		}
	}
	b, _ := kept.Fold(1024)
	wire, _ := b.AppendBinary(nil)
	var remote RDA
	if err := remote.UnmarshalBinary(wire); err != nil {
		t.Fatal(err)
	}
	dec, err := DecodeRDA(&remote, rcv)
	if err != nil || !dec.Complete || len(dec.Lost) != 500 {
		t.Fatalf("decode of the fetched cells: complete %v, %d lost, %v", dec.Complete, len(dec.Lost), err)
	}
	small, _ := kept.Fold(64)
	wire, _ = small.AppendBinary(nil)
	_ = remote.UnmarshalBinary(wire)
	own, _ := rcv.Fold(64)
	if dec, _ := DecodeRDA(&remote, own); dec.Complete {
		t.Fatal("3×64 cells decoded 500 lost packets: the test does not need the fetch")
	}
	// The copy reuses dst's memory and shares no cells with the source.
	again := snd.CopyCells(kept, nil)
	if again != kept || again.Cache() != nil {
		t.Fatal("CopyCells into dst")
	}
	snd.Reset()
	if again.Count() != 5000 {
		t.Fatal("the copy shares cells with the source")
	}
}

func FuzzCellsRequest(f *testing.F) {
	f.Add(AppendCellsRequest(nil, 256))
	f.Add([]byte{'F', 1, 0x80, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		n, err := ParseCellsRequest(b)
		if err != nil {
			if !errors.Is(err, ErrBadEncoding) {
				t.Fatal(err)
			}
			return
		}
		if !bytes.Equal(AppendCellsRequest(nil, n), b) {
			t.Fatal("round trip changed the bytes")
		}
	})
}
