package appliance

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ldafwd/ldafwd/control"
	"github.com/ldafwd/ldafwd/report"
	"github.com/rs/zerolog"
)

// TestStartedBetweenEndAndFragments: the receiver starts just after the
// End marker of the interval before its own passed, and that interval's
// fragments come after (one of them lost). Its failure comes at the
// reassembly timeout, after the receiver's first interval has its line:
// that line waits for it, and the earlier interval is reported first,
// as one that ended before the receiver ran (not_running), so each
// direction's lines stay in interval order. Before, the failure's
// control_lost line came after the later interval's.
func TestStartedBetweenEndAndFragments(t *testing.T) {
	const sec = uint64(time.Second)
	var clk atomic.Uint64
	var lines atomic.Int64
	var log strings.Builder
	const k0 = 1_796_217_034 // the receiver's first interval
	clk.Store(k0*sec + 5*uint64(time.Millisecond))
	c := numbersController(t, &clk, &lines, &log)
	var got []*report.Interval
	c.a.cfg.Reports = func(r *report.Interval) { got = append(got, r) }

	// The peer: the same configuration, the other end of the segment.
	peer := stoppedAppliance(t, "a", &clk, zerolog.Nop(), nil)
	parts := []control.Part{{PartKey: control.PartKey{MEC: 0, Kind: control.KindLDA}, Payload: make([]byte, 4000)}, {PartKey: clockPart, Payload: make([]byte, 40)}}
	frames, err := peer.sender.AppendInterval(nil, k0-1, int64(k0*sec), parts)
	if err != nil {
		t.Fatal(err)
	}
	if len(frames) < 3 {
		t.Fatalf("%d frames: the interval must have fragments to lose one", len(frames))
	}
	// The End marker passed before the start; every frame but the last
	// comes after it, numbered as the peer's shipper numbers a frame it
	// hands to its lane.
	for _, f := range frames[:len(frames)-1] {
		if err := peer.sender.Number(f); err != nil {
			t.Fatal(err)
		}
		if err := c.a.receiver.Consume(f, int64(clk.Load())); err != nil {
			t.Fatal(err)
		}
	}
	step := func() {
		now := time.Unix(0, int64(clk.Load()))
		c.receiveSide(now, clk.Load())
		c.flush()
	}
	step()
	if n, _ := c.a.receiver.InFlight(); n != 1 {
		t.Fatalf("%d intervals being reassembled, want k0−1's", n)
	}
	// The receiver's first interval gets its line (invalid here: how
	// matters not, only when it goes out).
	c.invalid(k0, int64(k0*sec), int64((k0+1)*sec), nil, silentCause)
	if len(got) != 0 {
		t.Fatalf("interval %d went out while %d, before it, is still being reassembled", got[0].Interval, k0-1)
	}
	clk.Add(uint64(c.a.cfg.PairTimeout) + sec/10)
	step()
	if len(got) != 2 || got[0].Interval != k0-1 || got[1].Interval != k0 {
		var ks []int64
		for _, r := range got {
			ks = append(ks, r.Interval)
		}
		t.Fatalf("lines of intervals %v, want %d then %d", ks, k0-1, k0)
	}
	if got[0].ReasonCode != report.NotRunning.String() {
		t.Errorf("interval %d, which ended before the receiver started: %s (%s), want %s", k0-1, got[0].ReasonCode, got[0].Reason, report.NotRunning)
	}
}
