package appliance

import (
	"testing"
	"time"

	"github.com/ldafwd/ldafwd/report"
	"github.com/rs/zerolog"
)

// TestWatchClock: the stamping clock against the monotonic one. Drift
// under stepMinNs is no step; a step forward or back marks the receiver's
// copies around it and goes in the report the peer gets; a preempted pair
// of readings is skipped. A line of a marked interval loses its delay,
// others keep it.
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
	if c.steps.ownSteps != 1 || c.steps.report != (stepReport{n: 1, first: 7, last: 8}) {
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
	if c.steps.ownSteps != 2 || c.steps.report != (stepReport{n: 2, first: 7, last: 10}) {
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

// TestPeerSteps: the peer's step reports, in order, lost, and across a
// new session.
func TestPeerSteps(t *testing.T) {
	c := newController(&Appliance{})
	c.peerSteps(1, 10, stepReport{})
	c.peerSteps(1, 11, stepReport{n: 1, first: 11, last: 12})
	c.peerSteps(1, 12, stepReport{n: 1, first: 11, last: 12}) // the same step again
	if got := c.steps.touched; len(got) != 1 || got[0] != (stepRange{first: 11, last: 12, peer: true}) {
		t.Fatalf("one step: %+v", got)
	}
	// Intervals 13–15's clock parts lost; two steps since: 13..16 taken.
	c.peerSteps(1, 16, stepReport{n: 3, first: 15, last: 16})
	if got := c.steps.touched; len(got) != 3 || got[2] != (stepRange{first: 13, last: 16, peer: true}) {
		t.Fatalf("steps whose reports were lost: %+v", got)
	}
	// A new session counts afresh.
	c.peerSteps(2, 30, stepReport{n: 1, first: 29, last: 30})
	if got := c.steps.touched; len(got) != 4 || got[3] != (stepRange{first: 29, last: 30, peer: true}) {
		t.Fatalf("new session: %+v", got)
	}

	// Interval 31's clock part lost: its line has no delay until a later
	// clock part's count rules a step out.
	c.steps.unreported(2, 31)
	delayValid := func(k int64) bool {
		r := &report.Interval{Interval: k}
		r.SetVerdict(report.Verdict{})
		c.clockStepLine(r)
		return r.DelayValid
	}
	if delayValid(31) {
		t.Error("interval 31's clock part lost, no later one: delay claimed")
	}
	c.peerSteps(2, 32, stepReport{n: 1, first: 29, last: 30})
	if !delayValid(31) {
		t.Error("interval 32's clock part says no step since: 31's delay refused")
	}
	if delayValid(30) {
		t.Error("interval 30 touched by the step: delay claimed")
	}
}
