package dataplane_test

import (
	"github.com/ldafwd/ldafwd/dataplane/traffic"
	"testing"

	"github.com/ldafwd/ldafwd/classifier"
	"github.com/ldafwd/ldafwd/control"
	"github.com/ldafwd/ldafwd/dataplane"
	"github.com/ldafwd/ldafwd/synopsis"
)

// A receiver lane of queue 1 of 2 samples the first frame of each burst
// against the steering: frames of flows steered to queue 0 are counted
// in its copy's Misrouted, its own are not; the check allocates nothing.
func TestLaneQueueSteeringCheck(t *testing.T) {
	cl, _ := classifier.NewClassifier(nil)
	syn := dataplane.SynConfig{LDA: synopsis.DefaultLDAConfig(), Classes: 1}
	rbuf, _ := dataplane.NewSynBuffer(syn)
	l1, _ := dataplane.NewRingLink("", dataplane.LinkConfig{Size: 1024, Pool: 4096})
	l2, _ := dataplane.NewRingLink("", dataplane.LinkConfig{Size: 1024, Pool: 4096})
	endr, _ := control.NewEndReader(nil, true, 1)
	endr.OnlyLane(1)
	rcv, err := dataplane.NewLane(dataplane.LaneConfig{Rx: l1.B(), Tx: l2.A(), Role: dataplane.RoleReceiver, Classifier: cl, Buffer: rbuf,
		EndReader: endr, Queue: 1, Queues: 2})
	if err != nil {
		t.Fatal(err)
	}
	gen := traffic.MustGen(traffic.GenConfig{Flows: 64})
	buf := make([]byte, 256)
	var own, other uint64 // ids of a flow on queue 1 and one on queue 0
	for id := uint64(1); own == 0 || other == 0; id++ {
		if dataplane.SteerQueue(gen.Frame(buf, id), 2) == 1 {
			own = id
		} else {
			other = id
		}
	}
	pk := make([]*dataplane.Packet, 8)
	burst := func(id uint64) {
		n := l1.A().Alloc(pk)
		for i := 0; i < n; i++ {
			pk[i].Data = gen.Frame(pk[i].Data[:cap(pk[i].Data)], id)
		}
		l1.A().TxBurst(pk[:n])
		rcv.Poll()
		rcv.Drain()
		for k := l2.B().RxBurst(pk); k > 0; k = l2.B().RxBurst(pk) {
			l2.B().Free(pk[:k])
		}
	}
	if a := testing.AllocsPerRun(100, func() { burst(own) }); a != 0 {
		t.Errorf("%.1f allocations per burst", a)
	}
	if m := rbuf.Active().Misrouted; m != 0 {
		t.Errorf("own flow's bursts: %d misrouted, want 0", m)
	}
	for i := 0; i < 5; i++ {
		burst(other)
	}
	if m, s := rbuf.Active().Misrouted, rcv.Stats.Misrouted.Load(); m != 5 || s != 5 {
		t.Errorf("5 bursts of a flow steered to queue 0: misrouted %d (lane counter %d), want 5", m, s)
	}
}
