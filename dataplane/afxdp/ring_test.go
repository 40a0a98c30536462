package afxdp

import "testing"

// TestRing checks the index arithmetic of a producer and a consumer view
// of one ring, including wrap-around of the free-running u32 indices.
func TestRing(t *testing.T) {
	var prod, cons, flags uint32
	prod, cons = 1<<32-3, 1<<32-3 // about to wrap
	p := ring{producer: &prod, consumer: &cons, flags: &flags, mask: 7, size: 8, cachedProd: prod, cachedCons: cons, addrs: make([]uint64, 8)}
	c := ring{producer: &prod, consumer: &cons, flags: &flags, mask: 7, size: 8, cachedProd: prod, cachedCons: cons, addrs: p.addrs}
	var next, want uint64
	for round := 0; round < 10; round++ {
		k := p.reserve(5)
		for i := uint32(0); i < k; i++ {
			p.addrs[(p.cachedProd+i)&p.mask] = next
			next++
		}
		p.submit(k)
		if got := p.pending(); got > 8 {
			t.Fatalf("pending %d > size", got)
		}
		n := c.peek(3)
		for i := uint32(0); i < n; i++ {
			if a := c.addrs[(c.cachedCons+i)&c.mask]; a != want {
				t.Fatalf("round %d: got %d, want %d", round, a, want)
			}
			want++
		}
		c.release(n)
	}
	if p.reserve(100) > 8 {
		t.Fatal("reserved more than the ring holds")
	}
	if want == 0 {
		t.Fatal("nothing went through")
	}
}
