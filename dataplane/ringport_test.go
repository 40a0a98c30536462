package dataplane_test

import (
	"errors"
	"fmt"
	"github.com/ldafwd/ldafwd/dataplane/traffic"
	"runtime"
	"sync"
	"testing"

	"github.com/ldafwd/ldafwd/dataplane"
	"github.com/ldafwd/ldafwd/dataplane/porttest"
)

func newLink(t testing.TB, name string, cfg dataplane.LinkConfig) *dataplane.RingLink {
	t.Helper()
	l, err := dataplane.NewRingLink(name, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.A().Close(); l.B().Close() })
	return l
}

func TestRingPortConformance(t *testing.T) {
	t.Run("link a→b and b→a", func(t *testing.T) {
		l := newLink(t, "", dataplane.LinkConfig{Size: 64})
		porttest.CheckLink(t, l.A(), l.B(), porttest.LinkOptions{Frames: 5000})
		porttest.CheckLink(t, l.B(), l.A(), porttest.LinkOptions{Frames: 5000, Burst: 7, Gen: traffic.GenConfig{Size: 1500, Flows: 3}})
	})
	t.Run("impaired link with zero delay", func(t *testing.T) {
		l := newLink(t, "", dataplane.LinkConfig{Size: 64, AtoB: &dataplane.ImpairConfig{Queue: 256}})
		porttest.CheckLink(t, l.A(), l.B(), porttest.LinkOptions{Frames: 5000})
	})
	t.Run("CheckPort a", func(t *testing.T) {
		l := newLink(t, "", dataplane.LinkConfig{Size: 64})
		porttest.CheckPort(t, l.A())
	})
	t.Run("CheckPort b impaired", func(t *testing.T) {
		l := newLink(t, "", dataplane.LinkConfig{Size: 64, AtoB: &dataplane.ImpairConfig{Queue: 64, DupProb: 0.5}})
		porttest.CheckPort(t, l.B())
	})
}

func TestOpenRingPort(t *testing.T) {
	for _, spec := range []string{"ring:", "ring:x", "ring:.a", "ring:x.c", "ring:x.", "x.ab", "ring:a:b.a"} {
		if p, err := dataplane.OpenRingPort(spec); err == nil {
			t.Errorf("OpenRingPort(%q) = %v, want an error", spec, p.Name())
		} else if !errors.Is(err, dataplane.ErrRingConfig) {
			t.Errorf("OpenRingPort(%q): %v does not wrap ErrRingConfig", spec, err)
		}
	}
	a, err := dataplane.OpenRingPort("ring:open-test.a")
	if err != nil {
		t.Fatal(err)
	}
	b, err := dataplane.OpenRingPort("open-test.b")
	if err != nil {
		t.Fatal(err)
	}
	if a.Name() != "ring:open-test.a" || b.Name() != "ring:open-test.b" {
		t.Errorf("names %q %q", a.Name(), b.Name())
	}
	if _, err := dataplane.OpenRingPort("ring:open-test.a"); err == nil {
		t.Error("second open of the same end succeeded")
	}
	porttest.CheckLink(t, a, b, porttest.LinkOptions{Frames: 100})
	porttest.CheckLink(t, b, a, porttest.LinkOptions{Frames: 100})
	a.Close()
	b.Close()
	// Both ends closed: the name is free again, for a link with another config.
	l, err := dataplane.NewRingLink("open-test", dataplane.LinkConfig{Size: 8})
	if err != nil {
		t.Fatalf("name not released after close: %v", err)
	}
	if _, err := dataplane.NewRingLink("open-test", dataplane.LinkConfig{}); err == nil {
		t.Error("duplicate link name accepted")
	}
	p, err := dataplane.OpenRingPort("ring:open-test.b")
	if err != nil || p != dataplane.Port(l.B()) {
		t.Fatalf("OpenRingPort did not return the registered link's end: %v", err)
	}
	l.A().Close()
	l.B().Close()
}

func TestRingLinkConfigErrors(t *testing.T) {
	for i, cfg := range []dataplane.LinkConfig{
		{Size: 3},
		{MTU: 10},
		{Burst: -1},
		{AtoB: &dataplane.ImpairConfig{Queue: 100}},
		{BtoA: &dataplane.ImpairConfig{ReorderProb: 1}},
		{BtoA: &dataplane.ImpairConfig{DupProb: -0.1}},
	} {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			if l, err := dataplane.NewRingLink("", cfg); err == nil {
				l.A().Close()
				l.B().Close()
				t.Errorf("config %+v accepted", cfg)
			}
		})
	}
}

// fakePort stands in for a DPDK port: its packets are not from a
// PacketPool, and it counts what is freed back to it.
type fakePort struct {
	dataplane.Port
	freed []*dataplane.Packet
}

func (f *fakePort) Free(p []*dataplane.Packet) { f.freed = append(f.freed, p...) }

func TestRingPortForeignPackets(t *testing.T) {
	l := newLink(t, "", dataplane.LinkConfig{Size: 16, MTU: 256})
	g := traffic.MustGen(traffic.GenConfig{})
	mk := func(id uint64, size int) *dataplane.Packet {
		buf := make([]byte, size)
		g.Frame(buf, id) // the frame is padded to size with zeros
		return &dataplane.Packet{Data: buf}
	}
	foreign := []*dataplane.Packet{mk(1, 200), mk(2, 300), mk(3, 200)}
	if n := l.A().TxBurst(foreign); n != 0 {
		t.Fatalf("without a peer, TxBurst took %d foreign packets", n)
	}
	peer := &fakePort{}
	l.A().SetPeer(peer)
	avail := l.Pool().Available()
	if n := l.A().TxBurst(foreign); n != 3 {
		t.Fatalf("TxBurst took %d of 3", n)
	}
	if len(peer.freed) != 3 {
		t.Fatalf("peer got %d packets back, want 3", len(peer.freed))
	}
	if st := l.A().Stats(); st.TxPackets != 2 || st.TxDropped != 1 {
		t.Errorf("stats %+v, want 2 sent and 1 (oversized) dropped", st)
	}
	in := make([]*dataplane.Packet, 4)
	if n := l.B().RxBurst(in); n != 2 {
		t.Fatalf("received %d, want 2", n)
	}
	if id, _ := traffic.FrameID(in[1].Data); id != 3 {
		t.Errorf("second frame id %d, want 3", id)
	}
	if l.Pool().Available() != avail-2 {
		t.Errorf("pool: %d available, want %d", l.Pool().Available(), avail-2)
	}
	l.B().Free(in[:2])
	if l.Pool().Available() != avail {
		t.Errorf("after Free: %d available, want %d", l.Pool().Available(), avail)
	}
	// Freeing a foreign packet on a ring port is a counted caller error.
	l.B().Free(foreign[:1])
	if st := l.B().Stats(); st.RxErrors != 1 {
		t.Errorf("RxErrors = %d after a bad Free, want 1", st.RxErrors)
	}
}

// TestRingPortHandoff sends a buffer of link 1 over link 2 (a bump in the
// wire between two ring links) and checks it returns to link 1's pool when
// freed on link 2's far end.
func TestRingPortHandoff(t *testing.T) {
	l1 := newLink(t, "", dataplane.LinkConfig{Size: 16, Pool: 32})
	l2 := newLink(t, "", dataplane.LinkConfig{Size: 16, Pool: 32})
	pk := make([]*dataplane.Packet, 4)
	n := l1.A().Alloc(pk)
	if l1.A().TxBurst(pk[:n]) != n || l1.B().RxBurst(pk) != n {
		t.Fatal("link 1 did not carry the burst")
	}
	if l2.A().TxBurst(pk[:n]) != n || l2.B().RxBurst(pk) != n {
		t.Fatal("link 2 did not carry link 1's buffers")
	}
	if l1.Pool().Available() != 32-n || l2.Pool().Available() != 32 {
		t.Fatalf("pools %d/%d before free", l1.Pool().Available(), l2.Pool().Available())
	}
	l2.B().Free(pk[:n])
	if l1.Pool().Available() != 32 {
		t.Fatalf("link 1 pool has %d of 32 after free on link 2", l1.Pool().Available())
	}
}

func BenchmarkRingLink(b *testing.B) {
	for _, impaired := range []bool{false, true} {
		for _, burst := range []int{8, 32, 64} {
			b.Run(fmt.Sprintf("impaired=%v/burst=%d", impaired, burst), func(b *testing.B) {
				cfg := dataplane.LinkConfig{Size: 1024}
				var now uint64
				if impaired {
					cfg.Clock = func() uint64 { return now }
					cfg.AtoB = &dataplane.ImpairConfig{Delay: constDelay(0), Loss: uniformLoss(0.001), ReorderProb: 0.001, DupProb: 0.001}
				}
				l := newLink(b, "", cfg)
				g := traffic.MustGen(traffic.GenConfig{})
				out := make([]*dataplane.Packet, burst)
				in := make([]*dataplane.Packet, burst)
				b.ReportAllocs()
				for b.Loop() {
					k := l.A().Alloc(out)
					for _, q := range out[:k] {
						q.Data = q.Data[:g.Size()] // frame contents do not matter to the link
					}
					took := l.A().TxBurst(out[:k])
					l.A().Free(out[took:k])
					now += 1000
					for {
						m := l.B().RxBurst(in)
						l.B().Free(in[:m])
						if m < len(in) {
							break
						}
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*burst), "ns/pkt")
			})
		}
	}
}

// TestRingLinkBidirectional runs two goroutines, one per end, each
// sending its own numbered frames and receiving the other's: every frame
// arrives once and in order in both directions at the same time.
func TestRingLinkBidirectional(t *testing.T) {
	n := 300_000
	if testing.Short() {
		n = 50_000
	}
	l := newLink(t, "", dataplane.LinkConfig{Size: 128})
	g := traffic.MustGen(traffic.GenConfig{})
	var wg sync.WaitGroup
	for _, end := range []*dataplane.RingPort{l.A(), l.B()} {
		wg.Go(func() {
			out := make([]*dataplane.Packet, 32)
			in := make([]*dataplane.Packet, 32)
			pending, sent, want := 0, 0, uint64(0)
			for sent < n || want < uint64(n) {
				if pending == 0 && sent < n {
					pending = end.Alloc(out[:min(32, n-sent)])
					for i, q := range out[:pending] {
						q.Data = g.Frame(q.Data, uint64(sent+i))
					}
				}
				took := end.TxBurst(out[:pending])
				copy(out, out[took:pending])
				pending -= took
				sent += took
				m := end.RxBurst(in)
				for _, q := range in[:m] {
					if id, _ := traffic.FrameID(q.Data); id != want {
						t.Errorf("%s: got frame %d, want %d", end.Name(), id, want)
						return
					}
					want++
				}
				end.Free(in[:m])
				if took == 0 && m == 0 {
					runtime.Gosched()
				}
			}
		})
	}
	wg.Wait()
	if l.Pool().Available() != l.Pool().Size() {
		t.Errorf("pool: %d of %d free after the run", l.Pool().Available(), l.Pool().Size())
	}
}
