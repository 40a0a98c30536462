package dataplane_test

import (
	"encoding/binary"
	"sync/atomic"
	"testing"

	"github.com/ldafwd/ldafwd/classifier"
	"github.com/ldafwd/ldafwd/control"
	"github.com/ldafwd/ldafwd/dataplane"
	"github.com/ldafwd/ldafwd/ring"
	"github.com/ldafwd/ldafwd/synopsis"
)

// TestLaneInjectGap: with an injection gap, the sender lane puts one
// control frame on the wire per poll and never two closer than the gap
// (by its clock), whatever waits in the inject ring, while it polls more
// often than the gap; polling less often, one frame per gap since the
// last went, at most Pace a poll, none for time the ring was empty;
// without a gap, up to Pace a poll. A gap set to 0 while frames wait lets
// them go at once.
func TestLaneInjectGap(t *testing.T) {
	cl, _ := classifier.NewClassifier(nil)
	buf, err := dataplane.NewSynBuffer(dataplane.SynConfig{LDA: synopsis.DefaultLDAConfig(), Classes: 1})
	if err != nil {
		t.Fatal(err)
	}
	in, _ := dataplane.NewRingLink("", dataplane.LinkConfig{Size: 1024, Pool: 4096})
	out, _ := dataplane.NewRingLink("", dataplane.LinkConfig{Size: 4096, Pool: 4096})
	inject, _ := ring.NewSPSC[[]byte](64)
	var now, gap atomic.Uint64
	now.Store(1)
	lane, err := dataplane.NewLane(dataplane.LaneConfig{Rx: in.B(), Tx: out.A(), Role: dataplane.RoleSender,
		Classifier: cl, Buffer: buf, Epoch: new(atomic.Uint64), Inject: inject, InjectGap: &gap,
		Clock: func() uint64 { return now.Load() }})
	if err != nil {
		t.Fatal(err)
	}
	frame := make([]byte, 128)
	binary.BigEndian.PutUint16(frame[12:], control.EtherType)
	pk := make([]*dataplane.Packet, 32)
	// poll polls once at fake time t and returns the control frames that
	// came out.
	poll := func(t uint64) int {
		now.Store(t)
		lane.Poll()
		n := 0
		for k := out.B().RxBurst(pk); k > 0; k = out.B().RxBurst(pk) {
			n += k
			out.B().Free(pk[:k])
		}
		return n
	}
	for i := 0; i < 20; i++ {
		inject.EnqueueBurst([][]byte{frame})
	}
	gap.Store(100_000) // 100 µs
	var at []uint64
	for t0 := uint64(1_000_000); t0 < 1_000_000+3_000_000 && len(at) < 20; t0 += 10_000 {
		n := poll(t0)
		if n > 1 {
			t.Fatalf("%d control frames in one poll under a gap", n)
		}
		if n == 1 {
			at = append(at, t0)
		}
	}
	if len(at) != 20 {
		t.Fatalf("%d of 20 control frames went out", len(at))
	}
	for i := 1; i < len(at); i++ {
		if d := at[i] - at[i-1]; d < 100_000 {
			t.Fatalf("frames %d and %d went %d ns apart under a 100 µs gap", i-1, i, d)
		}
	}
	// Polls 250 µs apart under the 100 µs gap: two frames a poll (one
	// per gap since the last went); 700 µs apart: Pace (4), the most. The
	// first poll after the ring was empty sends one: the idle time is no
	// credit.
	if n := poll(4_500_000); n != 0 {
		t.Fatalf("%d frames from an empty ring", n)
	}
	for i := 0; i < 20; i++ {
		inject.EnqueueBurst([][]byte{frame})
	}
	for i, want := range []int{1, 2, 2, 2} {
		if n := poll(4_600_000 + uint64(i)*250_000); n != want {
			t.Fatalf("poll %d, 250 µs apart: %d frames, want %d", i, n, want)
		}
	}
	if n := poll(4_600_000 + 3*250_000 + 700_000); n != dataplane.DefaultPace {
		t.Fatalf("a poll 700 µs on: %d frames, want Pace (%d)", n, dataplane.DefaultPace)
	}
	for t0 := uint64(7_000_000); inject.Count() > 0; t0 += 1_000_000 {
		poll(t0)
	}

	// No gap: Pace (4) a poll.
	gap.Store(0)
	for i := 0; i < 8; i++ {
		inject.EnqueueBurst([][]byte{frame})
	}
	if n := poll(5_000_000); n != dataplane.DefaultPace {
		t.Fatalf("without a gap: %d frames in a poll, want %d", n, dataplane.DefaultPace)
	}
	if n := poll(5_000_001); n != dataplane.DefaultPace {
		t.Fatalf("without a gap: %d frames in the next poll, want %d", n, dataplane.DefaultPace)
	}
	if inj := lane.Stats.Injected.Load(); inj != 48 {
		t.Fatalf("%d injected, want 48", inj)
	}
}
