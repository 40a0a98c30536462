package appliance

import (
	"fmt"
	"time"

	"github.com/ldafwd/ldafwd/control"
	"github.com/ldafwd/ldafwd/report"
)

// Clock steps.
//
// Every stamp comes from Config.Clock (CLOCK_REALTIME by default), which
// an NTP or PTP daemon may step: chrony's makestep, a VM resumed, an
// operator's date. A one-way delay is the receiver's stamp minus the
// sender's, so a step of either clock inside an interval mixes two time
// bases in its sums: the line's mean moves by the step times the share of
// its packets stamped after it, and no synopsis can see it.
//
// Each appliance watches its own clock against the control side's
// (Config.Now: Go's monotonic clock, which a daemon slews like the
// realtime clock but never steps). At every control step it reads the
// monotonic clock, the stamping clock, then the monotonic clock again;
// where the two clocks moved apart by more than stepMinNs since the last
// reading, the stamping clock stepped in between. (A pair of readings
// more than stepReadSlackNs apart, a preempted read, is skipped: the
// next one measures across it.)
//
// A step on this end touches two directions:
//   - the one it receives: its arrival stamps. The lines of the
//     interval whose copy was in progress, and of the one on each side
//     of it (the lanes cut copies a little before the control side takes
//     them), lose their delay (clock_step);
//   - the one it sends: its transmit stamps. Every part this end ships
//     for an interval the step may have touched (the intervals its lanes
//     were in between the two readings, and the next) carries the
//     payload flag payloadClockStep; the peer takes the delay from the
//     lines of an interval any of whose parts carries it. A step is read
//     before the control side moves the lanes to the next interval, so
//     it is known before its interval ships; and since every part of the
//     interval carries the flag (an LDA part fetched on demand too),
//     whatever part a line is measured from tells it.
//
// Steps smaller than stepMinNs are not seen: they stay inside the stamp
// uncertainty each line already carries.
const (
	stepMinNs       = 50_000
	stepReadSlackNs = 20_000
	// stepMemory is how many touched intervals each side remembers.
	stepMemory = 64
)

// stepRange is a run of intervals a step touched, and whose clock it was.
type stepRange struct {
	first, last uint64
	peer        bool  // the sender's clock (else this end's arrival stamps)
	byNs        int64 // the step, ns (0: the sender's, whose size it does not say)
}

// clockSteps is the controller's watch on its clock and its record of
// the intervals steps touched.
type clockSteps struct {
	read      bool
	mono      time.Time   // Config.Now at the last reading
	wall      uint64      // Config.Clock at the last reading
	epoch     uint64      // the lanes' interval at the last reading
	sent      []stepRange // this end's steps, by the intervals of its lanes (payloadClockStep)
	touched   []stepRange // the lines' intervals whose delay a step took
	ownSteps  uint64
	lastCopyK uint64 // the receiver's latest copy's interval (for arrival stamps)
}

// watchClock reads both clocks and, where the stamping clock stepped
// since the last reading, records the intervals it touched.
func (c *controller) watchClock() {
	a := c.a
	m1 := a.cfg.Now()
	wall := a.cfg.Clock()
	m2 := a.cfg.Now()
	if d := m2.Sub(m1); d < 0 || d > stepReadSlackNs {
		return
	}
	s := &c.steps
	epoch := a.epoch.Load()
	if !s.read {
		s.read, s.mono, s.wall, s.epoch = true, m1, wall, epoch
		return
	}
	dMono := m1.Sub(s.mono).Nanoseconds()
	dWall := int64(wall - s.wall)
	prevEpoch := s.epoch
	s.mono, s.wall, s.epoch = m1, wall, epoch
	step := dWall - dMono
	if step > -stepMinNs && step < stepMinNs {
		return
	}
	s.ownSteps++
	// The sender lanes were in prevEpoch..epoch; a step forward may carry
	// them into the next interval at the next moveClock (it runs after
	// this): that one is touched too.
	lo, hi := min(prevEpoch, epoch), max(prevEpoch, epoch)+1
	s.sent = append(s.sent, stepRange{first: lo, last: hi, byNs: step})
	if len(s.sent) > stepMemory {
		s.sent = s.sent[1:]
	}
	// The receiver's arrival stamps: the copy in progress is the one
	// after the latest taken; the lanes may have cut one more not yet
	// taken.
	rk := s.lastCopyK
	s.mark(stepRange{first: rk, last: rk + 2, byNs: step})
	a.cfg.Log.Warn().Int64("step_ns", step).Uint64("intervals_from", rk).
		Msg("this end's clock stepped: the lines of the intervals around it have no delay (clock_step), and the peer is told of its transmit stamps with the synopses")
}

// mark remembers the intervals r touched, the oldest going first.
func (s *clockSteps) mark(r stepRange) {
	s.touched = append(s.touched, r)
	if len(s.touched) > stepMemory {
		s.touched = s.touched[1:]
	}
}

// sentStepped says whether a step of this end's clock may have touched
// one of the intervals first..last its lanes recorded (a copy spanning
// several after an overrun; first 0: last alone).
func (s *clockSteps) sentStepped(first, last uint64) bool {
	if first == 0 || first > last {
		first = last
	}
	for _, r := range s.sent {
		if r.first <= last && first <= r.last {
			return true
		}
	}
	return false
}

// peerStepped marks interval k's lines when any of the sender's parts of
// it says its clock stepped (payloadClockStep).
func (c *controller) peerStepped(b *control.IntervalBundle) {
	for _, p := range b.Payloads {
		if h, _, err := parsePayload(p); err == nil && h.Flags&payloadClockStep != 0 {
			c.steps.mark(stepRange{first: b.Interval, last: b.Interval, peer: true})
			return
		}
	}
}

// clockStepLine takes the delay from a line whose interval a clock step
// touched.
func (c *controller) clockStepLine(r *report.Interval) {
	if r.Interval < 0 || !r.DelayValid {
		return
	}
	k := uint64(r.Interval)
	for _, t := range c.steps.touched {
		if k < t.first || k > t.last {
			continue
		}
		switch {
		case t.peer:
			r.Invalidate(report.ClockStep, "the sender's clock stepped during this interval (its synopses say so): its transmit stamps before and after the step are on different time bases")
		default:
			r.Invalidate(report.ClockStep, fmt.Sprintf("this end's clock stepped by %.1f µs around this interval: its arrival stamps before and after the step are on different time bases", float64(t.byNs)/1e3))
		}
		return
	}
}
