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

// TestIntervalTruthHeldPacketAcrossEnd: a packet the stage held back
// across an End marker comes after it, behind the End marker's
// duplicate, the frames the segment originated meanwhile, and after
// however long its own delay: it is the ended interval's (Delivered and
// Crossed), never dropped as too late. Only frames the stage admitted
// count toward its release (ReorderDepth of them): here 1, the End
// marker itself.
func TestIntervalTruthHeldPacketAcrossEnd(t *testing.T) {
	mkEnd := func(interval uint64) []byte {
		s, err := control.NewSender(control.SenderConfig{Insecure: true, MTU: 1500, Direction: 1,
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
	end1 := mkEnd(1)
	data := traffic.MustGen(traffic.GenConfig{}).Frame(nil, 1)
	injected := dataplane.LinkLocalFrame(make([]byte, 64), 1)
	for _, c := range []struct {
		name  string
		dup   bool   // the End marker was duplicated
		inj   int    // frames the segment originated before the held packet
		delay uint64 // the held packet's delay, ns
	}{
		{"after an injected frame", false, 1, 300_000},
		{"after the End marker's duplicate", true, 0, 300_000},
		{"after both", true, 2, 300_000},
		{"with a long delay", false, 5, 50_000_000},
	} {
		t.Run(c.name, func(t *testing.T) {
			tr, err := dataplane.NewIntervalTruthClasses(1, nil, 1)
			if err != nil {
				t.Fatal(err)
			}
			rec := func(f []byte, seq, tx, deliver uint64, flags uint8) {
				tr.Record(f, &dataplane.TruthRecord{TxNs: tx, Seq: seq, DeliverNs: deliver, Flags: flags})
			}
			// Interval 1: seqs 1..9, the 10th held back; End at 11.
			for i := uint64(1); i <= 9; i++ {
				rec(data, i, 1000*i, 1000*i+100, 0)
			}
			rec(end1, 11, 11_000, 11_100, 0)
			if c.dup {
				rec(end1, 11, 11_000, 11_100, dataplane.TruthDuplicate)
			}
			for i := 0; i < c.inj; i++ {
				at := 11_200 + uint64(i)*c.delay/uint64(c.inj+1)
				rec(injected, 11, at, at, dataplane.TruthInjected)
			}
			rec(data, 10, 10_000, 10_000+c.delay, dataplane.TruthReordered)
			// Interval 2 goes on.
			for i := uint64(12); i <= 20; i++ {
				rec(data, i, 1000*i, 10_000+c.delay+1000*i, 0)
			}
			got, ok := tr.Next()
			if !ok {
				t.Fatal("interval 1 not published")
			}
			if want := 900 + float64(c.delay); got.K != 1 || got.Delivered != 10 || got.Crossed != 1 || got.SumNs != want || tr.TooLate != 0 {
				t.Errorf("interval %d: %d delivered (%d crossed), Σ %v ns, %d too late; want interval 1: 10 delivered (1 crossed), Σ %v ns, none too late",
					got.K, got.Delivered, got.Crossed, got.SumNs, tr.TooLate, want)
			}
		})
	}
}
