package dataplane_test

import (
	"github.com/ldafwd/ldafwd/dataplane/traffic"
	"testing"

	"github.com/ldafwd/ldafwd/dataplane"
)

// fwdPort gives a ring port the Forwarder capability the way the DPDK port
// has it: receive a burst and transmit it on the peer in one call, hand
// back what the peer refused, in order.
type fwdPort struct {
	dataplane.Port
	calls, refused int
	declineEvery   int // every n-th call says "not now" (ok false), as a port with frames received ahead does
}

func (p *fwdPort) ForwardTo(to dataplane.Port, kept []*dataplane.Packet) (rx int, bytes uint64, k int, ok bool) {
	p.calls++
	if p.declineEvery > 0 && p.calls%p.declineEvery == 0 {
		return 0, 0, 0, false
	}
	rx = p.Port.RxBurst(kept)
	for _, q := range kept[:rx] {
		bytes += uint64(len(q.Data))
	}
	m := to.TxBurst(kept[:rx])
	k = copy(kept, kept[m:rx])
	p.refused += k
	return rx, bytes, k, true
}

// TestLaneForwardDirect: a forwarding lane on a Forwarder port hands it
// whole bursts, and under back-pressure (a sink that drains slowly through
// a small ring) every frame still arrives once, in order; refused frames
// wait in the lane's tx buffer ahead of anything newer.
func TestLaneForwardDirect(t *testing.T) {
	for _, decline := range []int{0, 5} {
		src, err := dataplane.NewRingLink("", dataplane.LinkConfig{Size: 256, Pool: 2048, Burst: 32})
		if err != nil {
			t.Fatal(err)
		}
		dst, err := dataplane.NewRingLink("", dataplane.LinkConfig{Size: 64, Pool: 64, Burst: 32})
		if err != nil {
			t.Fatal(err)
		}
		fp := &fwdPort{Port: src.B(), declineEvery: decline}
		lane, err := dataplane.NewLane(dataplane.LaneConfig{Rx: fp, Tx: dst.A(), Burst: 32, Role: dataplane.RoleForward})
		if err != nil {
			t.Fatal(err)
		}
		gen := traffic.MustGen(traffic.GenConfig{Flows: 16, Size: 96})
		const total = 50_000
		pk := make([]*dataplane.Packet, 32)
		got := make([]*dataplane.Packet, 64)
		next, want := uint64(1), uint64(1)
		for iter := 0; want <= total && iter < 10_000_000; iter++ {
			if next <= total {
				n := src.A().Alloc(pk[:min(32, total+1-int(next))])
				for i := 0; i < n; i++ {
					pk[i].Data = gen.Frame(pk[i].Data[:cap(pk[i].Data)], next)
					next++
				}
				if m := src.A().TxBurst(pk[:n]); m < n {
					next -= uint64(n - m)
					src.A().Free(pk[m:n])
				}
			}
			lane.Poll()
			// Phases: a sink as fast as the lane (the direct path), then a
			// slower one (back-pressure), and so on.
			if (iter/500)%2 == 0 || iter%3 == 0 {
				n := dst.B().RxBurst(got)
				for _, q := range got[:n] {
					id, ok := traffic.FrameID(q.Data)
					if !ok || id != want {
						t.Fatalf("decline %d: frame id %d (ok %v), want %d", decline, id, ok, want)
					}
					want++
				}
				dst.B().Free(got[:n])
			}
		}
		if want != total+1 {
			t.Fatalf("decline %d: sink got %d of %d frames", decline, want-1, total)
		}
		s := &lane.Stats
		if s.RxFrames.Load() != total || s.TxFrames.Load() != total || s.TxDropped.Load() != 0 {
			t.Fatalf("decline %d: lane rx %d tx %d dropped %d, want %d %d 0", decline, s.RxFrames.Load(), s.TxFrames.Load(), s.TxDropped.Load(), total, total)
		}
		if fp.calls == 0 || fp.refused == 0 {
			t.Fatalf("decline %d: ForwardTo called %d times, %d frames refused: the test did not exercise the direct path under back-pressure", decline, fp.calls, fp.refused)
		}
		t.Logf("decline %d: %d ForwardTo calls, %d frames refused and sent later", decline, fp.calls, fp.refused)
	}
}
