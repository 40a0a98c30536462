package dataplane_test

import (
	"bytes"
	"testing"

	"github.com/ldafwd/ldafwd/control"
	"github.com/ldafwd/ldafwd/dataplane"
	"github.com/ldafwd/ldafwd/dataplane/traffic"
)

// TestIntervalTruthCutsByLinkOrder: the truth cuts where the receiver
// does — at the sender's authentic End markers, by their place on the link.
// One transmit burst stamps all its frames with one time, End included:
// the frames before the End in it are the ended interval's, the ones after
// it the next's. A frame laid out as an End but tagged under another key
// (a user's frame of the same EtherType) is traffic to neither and cuts
// nothing.
func TestIntervalTruthCutsByLinkOrder(t *testing.T) {
	key := bytes.Repeat([]byte{7}, 32)
	mkEnd := func(k []byte, interval uint64) []byte {
		s, err := control.NewSender(control.SenderConfig{Key: k, MTU: 1500, Direction: 1,
			Hello: control.Hello{IntervalNs: 1e9, Lanes: 1, MECs: []string{"x"}}})
		if err != nil {
			t.Fatal(err)
		}
		w, err := s.NewEndWriter(0)
		if err != nil {
			t.Fatal(err)
		}
		return w.AppendEnd(nil, interval, &control.End{StartNs: 1, EndNs: 2})
	}
	end1, forged := mkEnd(key, 1), mkEnd(bytes.Repeat([]byte{9}, 32), 1)
	data := traffic.MustGen(traffic.GenConfig{}).Frame(nil, 1)

	tr, err := dataplane.NewIntervalTruth(1)
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Authenticate(key); err != nil {
		t.Fatal(err)
	}
	var seq uint64
	send := func(f []byte, tx uint64) {
		seq++
		tr.Record(f, &dataplane.TruthRecord{TxNs: tx, Seq: seq, DeliverNs: tx + 100})
	}
	// Interval 1: 3 frames in earlier bursts, then one burst at tx 5000
	// holding 4 frames, a forged End, 2 more frames, the End, 3 frames of
	// interval 2.
	for i := uint64(0); i < 3; i++ {
		send(data, 1000+i)
	}
	for i := 0; i < 4; i++ {
		send(data, 5000)
	}
	send(forged, 5000)
	send(data, 5000)
	send(data, 5000)
	send(end1, 5000)
	for i := 0; i < 3; i++ {
		send(data, 5000)
	}
	// More frames of interval 2 until the first is published.
	for i := uint64(0); i < 4; i++ {
		send(data, 6000+i)
	}
	got, ok := tr.Next()
	if !ok {
		t.Fatal("interval 1 not published")
	}
	if got.K != 1 || got.Delivered != 9 || got.SumNs != 900 {
		t.Errorf("interval %d: %d delivered, Σ %v ns; want interval 1: 9 delivered, Σ 900 ns", got.K, got.Delivered, got.SumNs)
	}
	if tr.Forged != 1 {
		t.Errorf("%d forged End markers counted, want 1", tr.Forged)
	}
}
