package dataplane

import (
	"testing"

	"github.com/ldafwd/ldafwd/synopsis"
)

// TestSynBufferSlack: the control side may be a whole interval late
// without an overrun; two intervals late, the worker keeps recording into
// its copy and marks it merged instead of overwriting a copy being read.
func TestSynBufferSlack(t *testing.T) {
	d, err := NewSynBuffer(SynConfig{LDA: synopsis.DefaultLDAConfig(), Classes: 1})
	if err != nil {
		t.Fatal(err)
	}
	d.Begin(10, 0)
	if !d.Flip(10, 1) || !d.Flip(11, 2) {
		t.Fatal("two flips without a drain must succeed (one spare copy)")
	}
	a := d.Active()
	if d.Flip(12, 3) || !a.Merged || d.Overruns() != 1 {
		t.Fatal("a third flip with two copies undrained must be an overrun that merges")
	}
	for _, want := range []uint64{10, 11} {
		s, ok := d.Idle()
		if !ok || s.LastK != want {
			t.Fatalf("idle copy %v %d, want interval %d", ok, s.LastK, want)
		}
		d.Release()
	}
	if _, ok := d.Idle(); ok {
		t.Fatal("nothing more to drain")
	}
	if !d.Flip(13, 4) {
		t.Fatal("after draining, flipping works again")
	}
	// The copy begun after interval 11 took the overrun: it covers 12..13.
	if s, _ := d.Idle(); s.FirstK != 12 || s.LastK != 13 || !s.Merged {
		t.Fatalf("merged copy covers %d..%d merged=%v, want 12..13", s.FirstK, s.LastK, s.Merged)
	}
}
