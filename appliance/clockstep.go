package appliance

import (
	"fmt"
	"slices"
	"time"

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
//   - the one it sends: its transmit stamps. The intervals its lanes
//     were in between the two readings are reported to the peer in the
//     clock part (clock.go), which goes with every interval's synopses:
//     the count of steps since the session began and the first and last
//     interval the latest one touched. A step is detected before the
//     interval it falls in ships (the control side reads the clocks
//     before it moves the lanes to the next interval), so that
//     interval's own clock part carries it. Where the peer's count
//     grows by more than one between two clock parts, every interval
//     between them is taken as touched.
//
// Steps smaller than stepMinNs are not seen: they stay inside the stamp
// uncertainty each line already carries. An interval whose clock part
// was lost with every copy (its other parts arrived) learns of a step in
// it from the next clock part's count; a line of it that goes out before
// any later clock part has arrived cannot rule a step out and has no
// delay.
const (
	stepMinNs       = 50_000
	stepReadSlackNs = 20_000
	// stepMemory is how many touched intervals each side remembers.
	stepMemory = 64
)

// stepReport is what the clock part says of the sender's clock steps:
// n steps since its session began, the latest one touching intervals
// first..last (n = 0: none).
type stepReport struct {
	n, first, last uint64
}

// stepRange is a run of intervals a step touched, and whose clock it was.
type stepRange struct {
	first, last uint64
	peer        bool  // the sender's clock (else this end's arrival stamps)
	byNs        int64 // the step, ns (0: unknown, several steps between two reports)
}

// clockSteps is the controller's watch on its clock and its record of
// the intervals steps touched.
type clockSteps struct {
	read         bool
	mono         time.Time // Config.Now at the last reading
	wall         uint64    // Config.Clock at the last reading
	epoch        uint64    // the lanes' interval at the last reading
	report       stepReport
	peerN        uint64 // the peer's step count known so far
	peerK        uint64 // the latest interval whose clock part arrived
	peerSession  uint64
	touched      []stepRange
	lost         []uint64 // intervals of the peer's session whose clock part was lost
	ownSteps     uint64
	lastStepByNs int64
	lastCopyK    uint64 // the receiver's latest copy's interval (for arrival stamps)
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
	s.lastStepByNs = step
	// The sender lanes were in prevEpoch..epoch (moveClock runs after
	// this: a step that moves the interval shows next time, in the same
	// range as the interval it lands in, which the report covers then).
	lo, hi := min(prevEpoch, epoch), max(prevEpoch, epoch)
	// A step forward may carry the lanes into the next interval at the
	// next moveClock: that one is touched too.
	hi++
	s.report = stepReport{n: s.ownSteps, first: lo, last: hi}
	// The receiver's arrival stamps: the copy in progress is the one
	// after the latest taken; the lanes may have cut one more not yet
	// taken.
	rk := s.lastCopyK
	s.mark(stepRange{first: rk, last: rk + 2, byNs: step})
	a.cfg.Log.Warn().Int64("step_ns", step).Uint64("intervals_from", rk).
		Msg("this end's clock stepped: the lines of the intervals around it have no delay (clock_step), and the peer is told of its transmit stamps")
}

// mark remembers the intervals r touched, the oldest going first.
func (s *clockSteps) mark(r stepRange) {
	s.touched = append(s.touched, r)
	if len(s.touched) > stepMemory {
		s.touched = s.touched[1:]
	}
}

// peerSteps takes the sender's step report from the clock part of
// interval k.
func (c *controller) peerSteps(session, k uint64, r stepReport) {
	s := &c.steps
	if session != s.peerSession {
		// A new session counts its steps afresh.
		s.peerSession, s.peerN, s.peerK, s.lost = session, 0, 0, s.lost[:0]
	}
	if r.n > s.peerN {
		s.mark(stepRange{first: r.first, last: r.last, peer: true})
		if r.n > s.peerN+1 && s.peerK < k {
			// Steps whose reports were lost: anywhere since the last
			// clock part that arrived.
			s.mark(stepRange{first: s.peerK + 1, last: k, peer: true})
		}
		s.peerN = r.n
	}
	s.peerK = max(s.peerK, k)
}

// unreported notes that interval k's clock part was lost.
func (s *clockSteps) unreported(session, k uint64) {
	if session != s.peerSession {
		s.peerSession, s.peerN, s.peerK, s.lost = session, 0, 0, s.lost[:0]
	}
	s.lost = append(s.lost, k)
	if len(s.lost) > stepMemory {
		s.lost = s.lost[1:]
	}
}

// clockStepLine takes the delay from a line whose interval a clock step
// touched, or whose interval's step report was lost with no later one in
// yet.
func (c *controller) clockStepLine(r *report.Interval) {
	if r.Interval < 0 || !r.DelayValid {
		return
	}
	k := uint64(r.Interval)
	if c.steps.peerK < k && slices.Contains(c.steps.lost, k) {
		r.Invalidate(report.ClockStep, "the sender's clock part of this interval was lost and no later one has arrived: a step of its clock in this interval cannot be ruled out")
		return
	}
	for _, t := range c.steps.touched {
		if k < t.first || k > t.last {
			continue
		}
		switch {
		case t.peer:
			r.Invalidate(report.ClockStep, "the sender's clock stepped during this interval (it reported so in its clock part): its transmit stamps before and after the step are on different time bases")
		default:
			r.Invalidate(report.ClockStep, fmt.Sprintf("this end's clock stepped by %.1f µs around this interval: its arrival stamps before and after the step are on different time bases", float64(t.byNs)/1e3))
		}
		return
	}
}
