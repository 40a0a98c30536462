package dataplane_test

import (
	"github.com/ldafwd/ldafwd/dataplane/traffic"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ldafwd/ldafwd/classifier"
	"github.com/ldafwd/ldafwd/dataplane"
	"github.com/ldafwd/ldafwd/ring"
	"github.com/ldafwd/ldafwd/synopsis"
)

// bigRefuser is a tx port that never takes a frame longer than 1000 bytes
// (a port whose MTU the appliance's fragments exceed) and takes the rest.
type bigRefuser struct {
	dataplane.Port
	dataRefused int  // TxBurst calls that took no frame while a user's frame waited
	full        bool // takes nothing at all
}

func (b *bigRefuser) TxBurst(pkts []*dataplane.Packet) int {
	if b.full {
		return 0
	}
	n := 0
	for n < len(pkts) && len(pkts[n].Data) <= 1000 {
		n++
	}
	if n == 0 {
		for _, p := range pkts {
			if len(p.Data) <= 1000 {
				b.dataRefused++
				break
			}
		}
		return 0
	}
	return b.Port.TxBurst(pkts[:n])
}

// TestLaneRefusedOwnFramesWaitOnce: a tx port that refuses every control
// fragment but takes the users' frames holds the users' frames up once
// (the wait that tells a refusing port from a full one), not once per
// fragment: after the first, a fragment as long is set aside at once.
// Every user frame goes through.
func TestLaneRefusedOwnFramesWaitOnce(t *testing.T) {
	cl, _ := classifier.NewClassifier(nil)
	syn := dataplane.SynConfig{LDA: synopsis.DefaultLDAConfig(), Classes: 1}
	buf, err := dataplane.NewSynBuffer(syn)
	if err != nil {
		t.Fatal(err)
	}
	in, _ := dataplane.NewRingLink("", dataplane.LinkConfig{Size: 1024, Pool: 4096})
	out, _ := dataplane.NewRingLink("", dataplane.LinkConfig{Size: 4096, Pool: 4096})
	inject, _ := ring.NewSPSC[[]byte](64)
	tx := &bigRefuser{Port: out.A()}
	var now, tick atomic.Uint64
	now.Store(1)
	epoch := new(atomic.Uint64)
	lane, err := dataplane.NewLane(dataplane.LaneConfig{Rx: in.B(), Tx: tx, Role: dataplane.RoleSender,
		Classifier: cl, Buffer: buf, Epoch: epoch, Inject: inject, Clock: func() uint64 { return now.Add(tick.Load()) }})
	if err != nil {
		t.Fatal(err)
	}
	gen := traffic.MustGen(traffic.GenConfig{Flows: 16})
	pk := make([]*dataplane.Packet, 8)
	const fragments = 20
	var sent, got uint64
	frag := make([]byte, 1200)
	for step := 0; step < 400; step++ {
		// 1 ms of fake time per step: the probe wait (5 ms by default)
		// is 5 steps.
		now.Add(1_000_000)
		if step%10 == 0 && step/10 < fragments {
			inject.EnqueueBurst([][]byte{frag})
		}
		n := in.A().Alloc(pk)
		for i := 0; i < n; i++ {
			sent++
			pk[i].Data = gen.Frame(pk[i].Data[:cap(pk[i].Data)], sent)
		}
		in.A().TxBurst(pk[:n])
		lane.Poll()
		for {
			k := out.B().RxBurst(pk)
			if k == 0 {
				break
			}
			got += uint64(k)
			out.B().Free(pk[:k])
		}
	}
	lane.Drain()
	for k := out.B().RxBurst(pk); k > 0; k = out.B().RxBurst(pk) {
		got += uint64(k)
		out.B().Free(pk[:k])
	}
	if got != sent {
		t.Errorf("%d user frames sent, %d went out", sent, got)
	}
	if d := lane.Stats.ControlDropped.Load(); d != fragments {
		t.Errorf("%d fragments dropped as refused, want %d", d, fragments)
	}
	// The first fragment holds the data for the probe wait (5 steps) and
	// each later one only for the poll that finds it refused.
	if tx.dataRefused > 5+fragments+2 {
		t.Errorf("users' frames held up in %d polls for %d refused fragments: each fragment waited", tx.dataRefused, fragments)
	}
	t.Logf("users' frames held up in %d polls for %d refused fragments", tx.dataRefused, fragments)

	// Then the port fills and takes nothing: a fragment as long as the
	// refused ones is not set aside (nothing behind it goes either), and
	// everything waits out the stall limit and is dropped, as any frame.
	tx.full = true
	tick.Store(1_000_000) // the clock moves 1 ms per reading
	inject.EnqueueBurst([][]byte{frag})
	n := in.A().Alloc(pk)
	for i := 0; i < n; i++ {
		pk[i].Data = gen.Frame(pk[i].Data[:cap(pk[i].Data)], uint64(i))
	}
	in.A().TxBurst(pk[:n])
	done := make(chan struct{})
	go func() {
		for lane.Poll() {
		}
		lane.Drain()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Drain never returned on a full port")
	}
	if d := lane.Stats.TxDropped.Load(); d != uint64(n) {
		t.Errorf("full port: %d users' frames dropped at the stall limit, want %d", d, n)
	}
}
