//go:build dpdk

package dpdk

import (
	"github.com/ldafwd/ldafwd/dataplane/traffic"
	"testing"

	"github.com/ldafwd/ldafwd/dataplane"
)

// onLcore runs f on a goroutine locked to its thread and registered as an
// EAL lcore (RegisterThread), as a dataplane.Worker runs its lanes.
func onLcore(t *testing.T, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		if _, err := RegisterThread(-1); err != nil {
			t.Error(err)
			return
		}
		defer UnregisterThread()
		f()
	}()
	<-done
}

// loopFrames allocates n frames on p carrying ids next, next+1, …
func loopFrames(t *testing.T, p *Port, g *traffic.Gen, pkts []*dataplane.Packet, next uint64) int {
	t.Helper()
	n := p.Alloc(pkts)
	for i, q := range pkts[:n] {
		q.Data = g.Frame(q.Data, next+uint64(i))
	}
	return n
}

// TestRxAhead runs net_ring's loopback (what a port transmits it
// receives) on a registered lcore, where every TxBurst also receives the
// next burst ahead: every frame comes back exactly once and in order,
// whatever slice sizes RxBurst is given, the rx counters count frames as
// RxBurst hands them over, and a TxBurst the ring refuses leaves the
// refused frames with the caller (sent again later, never lost or
// duplicated).
func TestRxAhead(t *testing.T) {
	needEAL(t)
	g := traffic.MustGen(traffic.GenConfig{Size: 100})
	onLcore(t, func() {
		p, err := Open("dpdk:net_ring9", Config{Index: 2, Burst: 32})
		if err != nil {
			t.Error(err)
			return
		}
		defer p.Close()
		q := p.Queue(0)
		in := newPackets(32)
		if n := p.RxBurst(in); n != 0 { // the receiving lcore is now this one
			t.Errorf("empty ring gave %d frames", n)
			return
		}
		var sent, got, handed uint64
		check := func(k int) bool {
			for _, pk := range in[:k] {
				id, ok := traffic.FrameID(pk.Data)
				if !ok || id != got || pk.Port != 2 || len(pk.Data) != 100 {
					t.Errorf("frame %d: id %d (ok %v), port %d, %d bytes; want id %d of port 2, 100 bytes",
						got, id, ok, pk.Port, len(pk.Data), got)
					return false
				}
				got++
			}
			p.Free(in[:k])
			handed += uint64(k)
			return true
		}
		out := newPackets(32)
		sizes := []int{32, 5, 1, 32, 7, 32, 31, 2}
		for round := 0; round < 64; round++ {
			n := loopFrames(t, p, g, out, sent)
			if m := p.TxBurst(out[:n]); m != n {
				t.Errorf("round %d: ring took %d of %d", round, m, n)
				return
			}
			sent += uint64(n)
			if q.c.ahead_n == 0 {
				t.Errorf("round %d: TxBurst on the receiving lcore received nothing ahead", round)
				return
			}
			// Take them back in pieces of varying size.
			for got < sent {
				k := p.RxBurst(in[:sizes[(round+int(got))%len(sizes)]])
				if k == 0 {
					t.Errorf("round %d: %d frames of %d came back", round, got, sent)
					return
				}
				if !check(k) {
					return
				}
			}
			if s := p.Stats(); s.RxPackets != handed || s.RxBytes != 100*handed || s.TxPackets != sent {
				t.Errorf("round %d: stats %+v, want rx %d (%d bytes), tx %d", round, s, handed, 100*handed, sent)
				return
			}
		}

		// Back-pressure: transmit without receiving until the ring refuses;
		// the refused frames stay ours and go again once there is room.
		var pending []*dataplane.Packet
		refused := false
		for i := 0; i < 4096/32 && !refused; i++ {
			n := loopFrames(t, p, g, out, sent)
			m := p.TxBurst(out[:n])
			sent += uint64(m)
			if m < n {
				refused = true
				pending = append(pending, out[m:n]...)
			}
		}
		if !refused {
			t.Error("the ring never refused a burst")
			return
		}
		for len(pending) > 0 || got < sent {
			k := p.RxBurst(in)
			if !check(k) {
				return
			}
			if len(pending) > 0 {
				m := p.TxBurst(pending)
				// The refused frames keep their ids: they are the next
				// ones in order after everything the ring took.
				sent += uint64(m)
				pending = pending[m:]
			}
			if k == 0 && len(pending) == 0 && got < sent {
				t.Errorf("ring drained with %d of %d frames back", got, sent)
				return
			}
		}
		if got != sent {
			t.Errorf("%d frames back of %d sent", got, sent)
		}
		if s := p.Stats(); s.TxPackets != sent || s.TxBytes != 100*sent || s.RxPackets != got {
			t.Errorf("stats %+v, want tx %d (%d bytes), rx %d: refused frames counted?", s, sent, 100*sent, got)
		}
	})
}

// TestRxAheadOtherLcore: a TxBurst on another registered thread than the
// one that received on the queue last (two workers, one per direction,
// sharing a port) never receives ahead, even when it got the same lcore id
// (these run one after the other, so EAL hands out the same id); the
// receiver then gets the frames itself.
func TestRxAheadOtherLcore(t *testing.T) {
	needEAL(t)
	p, err := Open("dpdk:net_ring10", Config{Index: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	g := traffic.MustGen(traffic.GenConfig{Size: 100})
	in := newPackets(32)
	onLcore(t, func() { p.RxBurst(in) })
	onLcore(t, func() {
		out := newPackets(16)
		n := loopFrames(t, p, g, out, 0)
		if m := p.TxBurst(out[:n]); m != n {
			t.Errorf("ring took %d of %d", m, n)
		}
		if a := p.Queue(0).c.ahead_n; a != 0 {
			t.Errorf("a TxBurst on another lcore received %d frames ahead", a)
		}
	})
	onLcore(t, func() {
		if k := p.RxBurst(in); k != 16 {
			t.Errorf("receiver got %d of 16", k)
		}
		p.Free(in[:16])
	})
}

// TestRxAheadOff: Config.NoRxAhead keeps TxBurst to transmitting; Close
// frees a burst received ahead that nobody took.
func TestRxAheadOff(t *testing.T) {
	needEAL(t)
	g := traffic.MustGen(traffic.GenConfig{Size: 100})
	for _, off := range []bool{true, false} {
		onLcore(t, func() {
			p, err := Open("dpdk:net_ring11", Config{NoRxAhead: off})
			if err != nil {
				t.Error(err)
				return
			}
			defer p.Close()
			in := newPackets(32)
			p.RxBurst(in)
			out := newPackets(8)
			n := loopFrames(t, p, g, out, 0)
			p.TxBurst(out[:n])
			if a := p.Queue(0).c.ahead_n; (a == 0) != off {
				t.Errorf("NoRxAhead=%v: %d frames received ahead", off, a)
			}
			if s := p.Stats(); s.RxPackets != 0 {
				t.Errorf("NoRxAhead=%v: %d frames counted before RxBurst handed them over", off, s.RxPackets)
			}
		})
	}
}

// TestRxAheadAllocs: the receive-ahead path (TxBurst receiving, RxBurst
// handing over from Go) allocates nothing.
func TestRxAheadAllocs(t *testing.T) {
	needEAL(t)
	onLcore(t, func() {
		a, err := Open("dpdk:net_null17,copy=1", Config{})
		if err != nil {
			t.Error(err)
			return
		}
		defer a.Close()
		b, err := Open("dpdk:net_null18,copy=1", Config{Index: 1})
		if err != nil {
			t.Error(err)
			return
		}
		defer b.Close()
		pkts := newPackets(32)
		ahead := 0
		allocs := testing.AllocsPerRun(1000, func() {
			for _, d := range [2][2]*Port{{a, b}, {b, a}} {
				n := d[0].RxBurst(pkts)
				m := d[1].TxBurst(pkts[:n])
				d[0].Free(pkts[m:n])
				if d[1].Queue(0).c.ahead_n != 0 {
					ahead++
				}
			}
		})
		if allocs != 0 || ahead == 0 {
			t.Errorf("%v allocations per poll (want 0); received ahead in %d bursts", allocs, ahead)
		}
	})
}
