package appliance

import (
	"testing"
	"time"

	"github.com/ldafwd/ldafwd/control"
	"github.com/ldafwd/ldafwd/report"
	"github.com/rs/zerolog"
)

// TestWatchClock: the stamping clock against the monotonic one. Drift
// under stepMinNs is no step; a step forward or back marks the receiver's
// copies around it and the intervals whose parts tell the peer; a
// preempted pair of readings is skipped. A line of a marked interval
// loses its delay, others keep it.
func TestWatchClock(t *testing.T) {
	var mono, wall uint64 = 1e9, 5e9
	var monoJump uint64 // added between the two monotonic readings of one watch
	reads := 0
	a := &Appliance{cfg: Config{
		Now: func() time.Time {
			reads++
			if reads%2 == 0 {
				mono += monoJump
			}
			return time.Unix(0, int64(mono))
		},
		Clock: func() uint64 { return wall },
		Log:   zerolog.Nop(),
	}}
	c := newController(a)
	tick := func(d, step int64) {
		mono += uint64(d)
		wall = uint64(int64(wall) + d + step)
		c.watchClock()
	}
	a.epoch.Store(7)
	c.steps.lastCopyK = 40
	tick(0, 0)
	tick(1e6, 20_000) // 20 µs: inside the readings' noise
	if c.steps.ownSteps != 0 || len(c.steps.touched) != 0 {
		t.Fatalf("a 20 µs drift taken for a step: %+v", c.steps)
	}
	tick(1e6, -2e6)
	if c.steps.ownSteps != 1 || len(c.steps.sent) != 1 || c.steps.sent[0].first != 7 || c.steps.sent[0].last != 8 {
		t.Fatalf("step back of 2 ms: %+v", c.steps)
	}
	if got := c.steps.touched; len(got) != 1 || got[0].first != 40 || got[0].last != 42 || got[0].peer || got[0].byNs != -2e6 {
		t.Fatalf("receiver's intervals touched: %+v", got)
	}
	monoJump = 1e6 // the reader was preempted between the monotonic readings
	tick(1e6, 5e6)
	if c.steps.ownSteps != 1 {
		t.Fatalf("a preempted reading counted: %+v", c.steps)
	}
	monoJump = 0
	a.epoch.Store(9)
	tick(1e6, 0) // measures across the skipped reading, from interval 7 on: the 5 ms step
	if c.steps.ownSteps != 2 || len(c.steps.sent) != 2 || c.steps.sent[1].first != 7 || c.steps.sent[1].last != 10 {
		t.Fatalf("step forward of 5 ms across a skipped reading: %+v", c.steps)
	}

	for k, want := range map[int64]bool{39: true, 40: false, 42: false, 43: true} {
		r := &report.Interval{Interval: k}
		r.SetVerdict(report.Verdict{})
		c.clockStepLine(r)
		if r.DelayValid != want {
			t.Errorf("interval %d: delay valid %v, want %v (%s)", k, r.DelayValid, want, r.Reason)
		}
	}
}

// TestPeerSteps: the parts of the intervals a step touched carry the
// flag, whatever copy (an overrun's) covers them; the receiver takes the
// delay from an interval any of whose parts carries it, and from no other.
func TestPeerSteps(t *testing.T) {
	var s clockSteps
	s.sent = []stepRange{{first: 11, last: 12}, {first: 20, last: 20}}
	for _, tc := range []struct {
		first, last uint64
		want        bool
	}{{0, 10, false}, {0, 11, true}, {10, 10, false}, {12, 12, true}, {13, 19, false}, {13, 25, true}, {9, 11, true}} {
		if got := s.sentStepped(tc.first, tc.last); got != tc.want {
			t.Errorf("copy of %d..%d: stepped %v, want %v", tc.first, tc.last, got, tc.want)
		}
	}

	c := newController(&Appliance{})
	part := func(flags uint64) []byte { return appendPayload(nil, payloadHeader{Frames: 10, Flags: flags}) }
	c.peerStepped(&control.IntervalBundle{Interval: 30, Payloads: map[control.PartKey][]byte{
		{MEC: 0, Kind: control.KindLDA}: part(0), {MEC: 0, Kind: control.KindRDA}: part(payloadClockStep)}})
	c.peerStepped(&control.IntervalBundle{Interval: 31, Payloads: map[control.PartKey][]byte{
		{MEC: 0, Kind: control.KindLDA}: part(0)}})
	for k, want := range map[int64]bool{30: false, 31: true} {
		r := &report.Interval{Interval: k}
		r.SetVerdict(report.Verdict{})
		c.clockStepLine(r)
		if r.DelayValid != want {
			t.Errorf("interval %d: delay valid %v, want %v (%s)", k, r.DelayValid, want, r.Reason)
		}
	}
}
