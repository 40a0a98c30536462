package dataplane_test

import (
	"errors"
	"sync"
	"testing"

	"github.com/ldafwd/ldafwd/dataplane"
)

func TestPacketPool(t *testing.T) {
	for _, c := range [][2]int{{0, 2048}, {-1, 2048}, {8, 10}, {8, dataplane.MaxMTU + 1}} {
		if _, err := dataplane.NewPacketPool(c[0], c[1]); !errors.Is(err, dataplane.ErrPoolConfig) {
			t.Errorf("NewPacketPool(%d, %d): %v, want ErrPoolConfig", c[0], c[1], err)
		}
	}
	p, err := dataplane.NewPacketPool(5, 128) // rounded up to 8
	if err != nil {
		t.Fatal(err)
	}
	if p.Size() != 8 {
		t.Fatalf("Size %d, want 8", p.Size())
	}
	pk := make([]*dataplane.Packet, 10)
	if n := p.Alloc(pk); n != 8 || p.Available() != 0 {
		t.Fatalf("Alloc got %d of 8, %d left", n, p.Available())
	}
	for _, q := range pk[:8] {
		if len(q.Data) != 128 || cap(q.Data) != 128 || !dataplane.IsPooled(q) {
			t.Fatalf("buffer len %d cap %d pooled %v", len(q.Data), cap(q.Data), dataplane.IsPooled(q))
		}
	}
	pk[0].Data = pk[0].Data[:10]
	if bad := dataplane.FreePooled(pk[:8]); bad != 0 {
		t.Fatalf("FreePooled: %d bad", bad)
	}
	p.Alloc(pk[:1])
	if len(pk[0].Data) != 128 {
		t.Errorf("Alloc did not reset Data to the MTU: %d", len(pk[0].Data))
	}
	dataplane.FreePooled(pk[:1])
	// Double free into a full pool is caught and counted.
	if bad := dataplane.FreePooled(pk[:1]); bad != 1 || p.Stray() != 1 {
		t.Errorf("double free: bad %d, stray %d", bad, p.Stray())
	}
	// Foreign and forged packets are not taken.
	forged := &dataplane.Packet{Data: make([]byte, 64), Handle: pk[1].Handle}
	if dataplane.IsPooled(forged) || dataplane.IsPooled(&dataplane.Packet{}) {
		t.Error("a packet outside the pool counts as pooled")
	}
	if bad := dataplane.FreePooled([]*dataplane.Packet{forged, {}}); bad != 2 {
		t.Errorf("FreePooled of foreign packets: %d bad, want 2", bad)
	}
	// After Close the pool's packets are no longer taken back.
	p.Alloc(pk[:1])
	p.Close()
	if dataplane.IsPooled(pk[0]) || dataplane.FreePooled(pk[:1]) != 1 {
		t.Error("closed pool still takes packets back")
	}
	if a := testing.AllocsPerRun(100, func() { dataplane.FreePooled(pk[:p.Alloc(pk)]) }); a != 0 {
		t.Errorf("%v allocations per Alloc+Free", a)
	}
}

// TestPacketPoolConcurrent allocates and frees from several goroutines
// (the two ends of a link share one pool); no buffer is ever held twice.
func TestPacketPoolConcurrent(t *testing.T) {
	p, _ := dataplane.NewPacketPool(64, 64)
	defer p.Close()
	var wg sync.WaitGroup
	rounds := 20000
	if testing.Short() {
		rounds = 3000
	}
	for w := range 4 {
		wg.Go(func() {
			pk := make([]*dataplane.Packet, 8)
			for range rounds {
				n := p.Alloc(pk)
				for _, q := range pk[:n] {
					q.Data[0] = byte(w) // the race detector flags a buffer held twice
					q.Data[1] = byte(w)
					if q.Data[0] != byte(w) {
						t.Error("buffer shared between goroutines")
					}
				}
				dataplane.FreePooled(pk[:n])
			}
		})
	}
	wg.Wait()
	if p.Available() != 64 || p.Stray() != 0 {
		t.Errorf("%d of 64 free, %d stray", p.Available(), p.Stray())
	}
}

// BenchmarkImpairer runs the stage on its own (no rings): admit a burst,
// release what is due.
func BenchmarkImpairer(b *testing.B) {
	pool, _ := dataplane.NewPacketPool(8192, 256)
	defer pool.Close()
	im, _ := dataplane.NewImpairer(dataplane.ImpairConfig{
		Delay: expDelay(5000), Loss: uniformLoss(0.001), DupProb: 0.001, ReorderProb: 0.001,
	}, pool)
	pk := make([]*dataplane.Packet, 32)
	out := make([]*dataplane.Packet, 256)
	now := uint64(0)
	b.ReportAllocs()
	for b.Loop() {
		n := pool.Alloc(pk)
		for _, q := range pk[:n] {
			q.TS = now
		}
		k := im.Admit(pk[:n])
		dataplane.FreePooled(pk[k:n])
		now += 32 * 100 // 100 ns per packet: 10 Mpps
		for m := im.Release(out, now); m > 0; m = im.Release(out, now) {
			dataplane.FreePooled(out[:m])
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*32), "ns/pkt")
}
