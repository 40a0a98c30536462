//go:build dpdk

package dpdk

import (
	"sync"
	"testing"

	"github.com/ldafwd/ldafwd/dataplane"
)

// TestSplitWorkers is ldafwd run with two cores: one worker receives on a
// port's queue while another transmits on the same queue (and allocates
// control frames there), concurrently. The two sides must not share C
// scratch space: afterwards every mbuf of both pools is back, none lost,
// none freed twice. (Before the scratch arrays were split this lost
// hundreds of mbufs per run.)
func TestSplitWorkers(t *testing.T) {
	needEAL(t)
	a, err := Open("dpdk:net_null19,copy=1", Config{Index: 0})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := Open("dpdk:net_null20,copy=1", Config{Index: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	a0, b0 := a.availMbufs(), b.availMbufs()
	iters := 20000
	if testing.Short() {
		iters = 2000
	}
	var wg sync.WaitGroup
	// Worker 1: a → b (receives on a, transmits on b). Worker 2: b → a,
	// and allocates frames on a now and then, as a sender lane's End
	// markers do. Each worker's transmissions go out on the other's rx
	// port.
	for _, d := range [2][2]*Port{{a, b}, {b, a}} {
		rx, tx := d[0], d[1]
		wg.Add(1)
		go func() {
			defer wg.Done()
			onLcore(t, func() {
				pkts := newPackets(32)
				own := newPackets(4)
				for i := 0; i < iters; i++ {
					if i%2 == 1 { // the forwarding lane's path
						_, _, k, _ := rx.ForwardTo(tx, pkts)
						m := tx.TxBurst(pkts[:k])
						rx.Free(pkts[m:k])
					} else {
						n := rx.RxBurst(pkts)
						m := tx.TxBurst(pkts[:n])
						rx.Free(pkts[m:n])
					}
					if i%8 == 0 {
						k := tx.Alloc(own)
						for _, p := range own[:k] {
							p.Data = p.Data[:64]
						}
						m := tx.TxBurst(own[:k])
						tx.Free(own[m:k])
					}
				}
			})
		}()
	}
	wg.Wait()
	if a1, b1 := a.availMbufs(), b.availMbufs(); a1 != a0 || b1 != b0 {
		t.Errorf("free mbufs: a %d → %d, b %d → %d (lost or freed twice)", a0, a1, b0, b1)
	}
	var _ dataplane.Port = a
}
