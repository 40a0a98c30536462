//go:build dpdk

package dpdk

import (
	"github.com/ldafwd/ldafwd/dataplane/traffic"
	"testing"

	"github.com/ldafwd/ldafwd/dataplane"
)

// TestForwardTo moves frames from one net_ring loopback port to another
// with ForwardTo: every frame arrives once and in order; when the peer's
// ring is full the refused frames come back in kept, in order, and go out
// with TxBurst once there is room; the counters of both ports agree.
func TestForwardTo(t *testing.T) {
	needEAL(t)
	a, err := Open("dpdk:net_ring12", Config{Index: 0})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := Open("dpdk:net_ring13", Config{Index: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	var _ dataplane.Forwarder = a
	g := traffic.MustGen(traffic.GenConfig{Size: 100})
	buf := newPackets(32)
	// load puts frames first, first+1, … into p's loopback ring.
	load := func(p *Port, first uint64, n int) {
		t.Helper()
		for n > 0 {
			k := loopFrames(t, p, g, buf[:min(n, 32)], first)
			if m := p.TxBurst(buf[:k]); m != k {
				t.Fatalf("loading %s: ring took %d of %d", p.Name(), m, k)
			}
			first += uint64(k)
			n -= k
		}
	}
	in := newPackets(32)
	var want uint64 // next id expected out of b
	drain := func(p *Port, base uint64, upto uint64) {
		t.Helper()
		for want < upto {
			k := p.RxBurst(in)
			if k == 0 {
				t.Fatalf("%s drained at id %d, want up to %d", p.Name(), want, upto)
			}
			for _, pk := range in[:k] {
				id, _ := traffic.FrameID(pk.Data)
				if id != base+want {
					t.Fatalf("%s gave id %d, want %d", p.Name(), id, base+want)
				}
				want++
			}
			p.Free(in[:k])
		}
	}

	// Plain forwarding, varied burst sizes.
	load(a, 0, 200)
	kept := newPackets(32)
	var moved, bytes uint64
	for _, size := range []int{32, 7, 1, 32, 32, 32, 32, 32, 32, 32} {
		rx, by, k, ok := a.ForwardTo(b, kept[:size])
		if !ok || k != 0 {
			t.Fatalf("ForwardTo: ok %v, %d refused by an empty ring", ok, k)
		}
		moved += uint64(rx)
		bytes += by
	}
	if moved != 200 || bytes != 200*100 {
		t.Fatalf("forwarded %d frames (%d bytes), want 200 (20000)", moved, bytes)
	}
	drain(b, 0, 200)
	sa, sb := a.Stats(), b.Stats()
	if sa.RxPackets != 200+0 || sb.TxPackets != 200 || sb.TxBytes != 200*100 {
		t.Errorf("stats a %+v b %+v: want a rx 200, b tx 200 (20000 bytes)", sa, sb)
	}

	// Back-pressure: b's ring full of other frames; a's frames are refused
	// and kept, in order, then sent with TxBurst once b drained.
	const pre = 1 << 20
	n := 0
	for {
		k := loopFrames(t, b, g, buf, pre+uint64(n))
		m := b.TxBurst(buf[:k])
		n += m
		b.Free(buf[m:k])
		if m < k {
			break
		}
	}
	load(a, 200, 64)
	rx, _, k, ok := a.ForwardTo(b, kept)
	if !ok || rx == 0 || k != rx {
		t.Fatalf("ForwardTo into a full ring: ok %v, rx %d, kept %d (want all kept)", ok, rx, k)
	}
	for i, pk := range kept[:k] {
		if id, _ := traffic.FrameID(pk.Data); id != 200+uint64(i) {
			t.Fatalf("kept frame %d has id %d, want %d", i, id, 200+i)
		}
	}
	want = 0
	drain(b, pre, uint64(n))
	if m := b.TxBurst(kept[:k]); m != k {
		t.Fatalf("b took %d of %d kept frames after draining", m, k)
	}
	for {
		rx, _, k2, _ := a.ForwardTo(b, kept)
		if k2 != 0 {
			t.Fatalf("%d refused by a drained ring", k2)
		}
		if rx == 0 {
			break
		}
	}
	want = 200
	drain(b, 0, 264)
	if sb := b.Stats(); sb.TxPackets != 200+uint64(n)+64 || sb.TxBytes != 100*sb.TxPackets {
		t.Errorf("b stats %+v: want tx %d frames of 100 bytes (refused ones not counted)", sb, 200+n+64)
	}
}

// TestForwardToFallback: ForwardTo says ok false for a peer that is not a
// DPDK port, and while a receive-ahead burst waits (RxBurst must hand it
// over first).
func TestForwardToFallback(t *testing.T) {
	needEAL(t)
	a, err := Open("dpdk:net_ring14", Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	ring, err := dataplane.OpenRingPort("ring:fwdfallback.a")
	if err != nil {
		t.Fatal(err)
	}
	defer ring.Close()
	kept := newPackets(32)
	if _, _, _, ok := a.ForwardTo(ring, kept); ok {
		t.Error("ForwardTo a ring port: ok")
	}
	g := traffic.MustGen(traffic.GenConfig{Size: 100})
	onLcore(t, func() {
		in := newPackets(32)
		a.RxBurst(in)
		n := loopFrames(t, a, g, in[:8], 0)
		a.TxBurst(in[:n])
		if _, _, _, ok := a.ForwardTo(a, kept); ok {
			t.Error("ForwardTo with a receive-ahead burst waiting: ok")
		}
		k := a.RxBurst(in)
		a.Free(in[:k])
		if k != n {
			t.Errorf("RxBurst gave %d of the %d frames received ahead", k, n)
		}
		// One fallback is enough: a TxBurst now receives nothing ahead
		// and ForwardTo goes through.
		n = loopFrames(t, a, g, in[:8], 8)
		a.TxBurst(in[:n])
		if _, _, _, ok := a.ForwardTo(a, kept); !ok {
			t.Error("ForwardTo still falls back after the waiting burst was taken")
		}
		// (a forwards to itself: its frames are back in its ring.)
		for k := a.RxBurst(in); k > 0; k = a.RxBurst(in) {
			a.Free(in[:k])
		}
	})
}

// TestForwardToAllocs: ForwardTo allocates nothing.
func TestForwardToAllocs(t *testing.T) {
	needEAL(t)
	a, err := Open("dpdk:net_null15,copy=1", Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := Open("dpdk:net_null16", Config{Index: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	kept := newPackets(32)
	var moved int
	allocs := testing.AllocsPerRun(1000, func() {
		rx, _, k, _ := a.ForwardTo(b, kept)
		b.Free(kept[:k])
		moved += rx - k
	})
	if allocs != 0 || moved == 0 {
		t.Errorf("%v allocations per burst (want 0), %d frames moved", allocs, moved)
	}
}
