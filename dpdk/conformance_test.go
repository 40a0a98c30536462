//go:build dpdk

package dpdk

import (
	"bytes"
	"github.com/ldafwd/ldafwd/dataplane/traffic"
	"testing"

	"github.com/ldafwd/ldafwd/dataplane"
	"github.com/ldafwd/ldafwd/dataplane/porttest"
)

func TestCheckPortNull(t *testing.T) {
	needEAL(t)
	p, err := Open("dpdk:net_null5", Config{})
	if err != nil {
		t.Fatal(err)
	}
	porttest.CheckPort(t, p)
}

// TestCheckLinkRing runs the link conformance check over net_ring, whose
// one ring is both its tx and its rx queue.
func TestCheckLinkRing(t *testing.T) {
	needEAL(t)
	p, err := Open("dpdk:net_ring5", Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	frames := 10000
	if testing.Short() {
		frames = 2000
	}
	porttest.CheckLink(t, p, p, porttest.LinkOptions{Frames: frames})
}

// TestPooledHandoff transmits packets of a dataplane PacketPool (as a ring
// port would hand over): they are copied into mbufs, given back to their
// pool, and come out of net_ring byte for byte.
func TestPooledHandoff(t *testing.T) {
	needEAL(t)
	p, err := Open("dpdk:net_ring6", Config{Index: 7})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	pool, err := dataplane.NewPacketPool(64, 2048)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	out := newPackets(16)
	n := pool.Alloc(out)
	if n != 16 {
		t.Fatalf("pool alloc %d", n)
	}
	g := traffic.MustGen(traffic.GenConfig{Size: 128})
	for i, q := range out {
		q.Data = g.Frame(q.Data, uint64(i))
	}
	before := pool.Available()
	if m := p.TxBurst(out); m != 16 {
		t.Fatalf("tx took %d of 16", m)
	}
	if got := pool.Available(); got != before+16 {
		t.Fatalf("pool has %d free after tx, want %d: pooled frames not given back", got, before+16)
	}
	in := newPackets(16)
	if m := p.RxBurst(in); m != 16 {
		t.Fatalf("rx %d of 16", m)
	}
	want := make([]byte, 128)
	for i, q := range in {
		if !bytes.Equal(q.Data, g.Frame(want, uint64(i))) {
			t.Fatalf("frame %d differs", i)
		}
	}
	p.Free(in)
}
