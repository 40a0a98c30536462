//go:build dpdk

package dpdk

import (
	"bytes"
	"github.com/ldafwd/ldafwd/dataplane/traffic"
	"testing"
	"time"

	"github.com/ldafwd/ldafwd/dataplane"
)

// TestMixedBurst sends one burst mixing our mbufs and PacketPool frames
// (TxBurst tells them apart by address alone and copies the pooled ones
// into fresh mbufs before the cgo call) through net_ring's loopback:
// every frame comes back byte for byte in order, the pooled ones are given
// back to their pool, and our own are not copied (same mbuf); then a
// refused mixed burst.
func TestMixedBurst(t *testing.T) {
	needEAL(t)
	p, err := Open("dpdk:net_ring8", Config{Index: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	pool, err := dataplane.NewPacketPool(64, 2048)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	g := traffic.MustGen(traffic.GenConfig{Size: 100})
	out := newPackets(16)
	ours := newPackets(8)
	if p.Alloc(ours) != 8 {
		t.Fatal("alloc")
	}
	foreign := newPackets(8)
	if pool.Alloc(foreign) != 8 {
		t.Fatal("pool alloc")
	}
	handles := map[uintptr]bool{}
	for i := range out {
		q := ours[i/2]
		if i%2 == 1 {
			q = foreign[i/2]
		} else {
			handles[q.Handle] = true
		}
		q.Data = g.Frame(q.Data, uint64(i))
		out[i] = q
	}
	before := pool.Available()
	if m := p.TxBurst(out); m != 16 {
		t.Fatalf("tx took %d of 16", m)
	}
	if got := pool.Available(); got != before+8 {
		t.Fatalf("pool has %d free after tx, want %d", got, before+8)
	}
	in := newPackets(16)
	if m := p.RxBurst(in); m != 16 {
		t.Fatalf("rx %d of 16", m)
	}
	want := make([]byte, 100)
	for i, q := range in {
		if !bytes.Equal(q.Data, g.Frame(want, uint64(i))) {
			t.Fatalf("frame %d differs", i)
		}
		if i%2 == 0 && !handles[q.Handle] {
			t.Errorf("frame %d of ours came back in another mbuf (copied?)", i)
		}
	}
	if s := p.Stats(); s.TxPackets != 16 || s.TxBytes != 1600 {
		t.Errorf("stats %+v, want 16 frames of 100 bytes", s)
	}
	p.Free(in)

	// A mixed burst the port refuses (its ring full) leaves every frame
	// with the caller — the pooled ones still theirs, not freed — and the
	// mbuf copies made for them go back to our pool: 4000 refused bursts
	// of 8 copies each would exhaust the mempool if one leaked. (Same
	// port: every port opened keeps its mempool until EAL cleanup.)
	// Fill the loopback ring until it refuses.
	fill := newPackets(32)
	full := false
	for i := 0; i < 1024 && !full; i++ {
		n := p.Alloc(fill)
		for _, q := range fill[:n] {
			q.Data = g.Frame(q.Data, uint64(i))
		}
		if m := p.TxBurst(fill[:n]); m < n {
			p.Free(fill[m:n])
			full = true
		}
	}
	if !full {
		t.Fatal("the ring never refused a burst")
	}
	foreign = newPackets(8)
	if pool.Alloc(foreign) != 8 {
		t.Fatal("pool alloc")
	}
	for i, q := range foreign {
		q.Data = g.Frame(q.Data, uint64(i))
	}
	before = pool.Available()
	for i := 0; i < 4000; i++ {
		if m := p.TxBurst(foreign); m != 0 {
			t.Fatalf("a full ring took %d frames", m)
		}
	}
	if got := pool.Available(); got != before {
		t.Fatalf("pool has %d free, want %d: refused frames were freed", got, before)
	}
	one := newPackets(1)
	if p.Alloc(one) != 1 {
		t.Fatal("mempool exhausted: the copies of refused frames leaked")
	}
	p.Free(one)
	pool.Free(foreign)
	// Drain the ring.
	in = newPackets(32)
	for n := p.RxBurst(in); n > 0; n = p.RxBurst(in) {
		p.Free(in[:n])
	}
}

// TestNoSoftTimestamps: the burst helper leaves TS 0 for the consumer to
// stamp, and stamps by default.
func TestNoSoftTimestamps(t *testing.T) {
	needEAL(t)
	for _, off := range []bool{false, true} {
		a, err := Open("dpdk:net_null9", Config{NoSoftTimestamps: off})
		if err != nil {
			t.Fatal(err)
		}
		pkts := newPackets(8)
		n := a.RxBurst(pkts)
		if n == 0 {
			t.Fatal("net_null gave no frames")
		}
		for _, q := range pkts[:n] {
			if (q.TS == 0) != off {
				t.Errorf("NoSoftTimestamps=%v: TS %d", off, q.TS)
			}
		}
		a.Free(pkts[:n])
		a.Close()
	}
}

// TestTxStamper: a DPDK port is a dataplane.TxStamper and TxStampErr;
// once asked, each accepted burst's stamp lies between clock reads taken
// around the TxBurst, and its uncertainty is no wider than their gap.
func TestTxStamper(t *testing.T) {
	needEAL(t)
	a, err := Open("dpdk:net_null10", Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	var _ dataplane.TxStamper = a
	var _ dataplane.TxStamper = a.Queue(0)
	var _ dataplane.TxStampErr = a
	pkts := newPackets(8)
	first := true
	for i := 0; i < 20; i++ {
		n := a.Alloc(pkts)
		for _, q := range pkts[:n] {
			q.Data = q.Data[:60]
		}
		before := uint64(time.Now().UnixNano())
		m := a.TxBurst(pkts[:n])
		after := uint64(time.Now().UnixNano())
		a.Free(pkts[m:n])
		if m == 0 {
			t.Fatal("net_null took nothing")
		}
		ts := a.LastTxNs()
		if first {
			// Turned on by this call: the Go clock's reading.
			first = false
			if ts < before {
				t.Fatalf("first stamp %d before the burst (%d)", ts, before)
			}
			continue
		}
		e := a.LastTxErrNs()
		if ts < before || ts > after || e > after-before {
			t.Fatalf("burst %d: stamp %d ± %d outside [%d, %d]", i, ts, e, before, after)
		}
	}
}
