package appliance

import (
	"errors"
	"time"
)

// SimClock is a simulated clock: time moves only when its driver moves
// it, and by one nanosecond at every Clock reading. Its Clock and Now feed
// an appliance's Config.Clock and Config.Now (and a ring link's
// LinkConfig.Clock) so that lanes, links and control sides read one time.
// One goroutine owns it: whoever drives the simulation.
//
// Why a reading moves it: two readings of a real clock are never equal,
// and what is done after a reading is stamped later. The impairment
// stage's truth places a frame before or after an End marker by their
// transmit times; a sender lane sends an interval's last frames and then
// its End marker in two transmit calls, and on a clock that stood still
// through a tick both would read the same time, putting the frames after
// the marker.
type SimClock struct {
	ns   uint64 // the latest reading
	tick uint64 // where the driver has moved the clock to
}

// NewSimClock starts a simulated clock at startNs (ns since the Unix
// epoch, as the wall clock's readings are).
func NewSimClock(startNs uint64) *SimClock { return &SimClock{ns: startNs, tick: startNs} }

// Clock is the time in ns since the Unix epoch; each reading is 1 ns
// later than the one before.
func (c *SimClock) Clock() uint64 {
	c.ns++
	return c.ns
}

// Now is the time as a time.Time (no monotonic reading: there is no
// other clock to be monotonic against). It does not move the clock.
func (c *SimClock) Now() time.Time { return time.Unix(0, int64(c.ns)) }

// Advance moves the clock d on from where the driver last moved it (or
// to the latest reading, if the readings have run past that).
func (c *SimClock) Advance(d time.Duration) {
	c.tick += uint64(d)
	c.ns = max(c.ns, c.tick)
}

// simDrive is the state of an appliance driven on simulated time: its
// workers are never started (the driver calls Worker.Turn), its control
// side has no goroutine (the driver calls SimStep at the control side's
// cadence), and Stop is a sequence of phases the driver's steps advance
// (SimStop, then SimStep until SimStopped) instead of messages to a
// control goroutine.
type simDrive struct {
	cur      *phase // Stop's phase in progress
	stopping bool
	stage    int // of the stop: which phase comes next
	drain    time.Duration
	deadline time.Time
	stopped  bool
}

// errSimStop is Stop's error for an appliance on simulated time: its
// driver stops it (SimStop), on its own goroutine and its own time.
var errSimStop = errors.New("appliance: on simulated time, the driver stops the appliance (SimStop)")

// StartSimulated is Start for an appliance on simulated time: the interval
// clock and the control side start at the clock's time, and nothing
// runs until the driver turns the workers and steps the control side.
func (a *Appliance) StartSimulated() error {
	a.life.Lock()
	defer a.life.Unlock()
	if a.state != stateNew {
		return errors.New("appliance: already started or stopped")
	}
	a.sim = &simDrive{}
	now := a.cfg.Clock()
	a.epoch.Store(now / uint64(a.cfg.Interval.Nanoseconds()))
	a.ctl.startAt(now)
	a.state = stateRunning
	return nil
}

// SimTurn is one iteration of every worker's loop (Worker.Turn): until
// the stop has finished the workers.
func (a *Appliance) SimTurn() {
	if a.sim.stopped {
		return
	}
	for _, w := range a.workers {
		w.Turn()
	}
}

// SimStep is one step of the control side at now, as the control
// goroutine's ticker gives it, then the stop's phase in progress, and the
// next phases of the stop as each ends.
func (a *Appliance) SimStep(now time.Time) {
	d := a.sim
	if d.stopped {
		return
	}
	a.ctl.step(now)
	if d.cur != nil && d.cur.advance(now) {
		d.cur = nil
	}
	for d.stopping && d.cur == nil && !d.stopped {
		// Stop's sequence (Stop says why each part is there): a phase
		// runs once as it arrives, then after every step.
		switch d.stage {
		case 0:
			d.deadline = now.Add(d.drain)
			d.cur = a.ctl.finish(d.deadline)
		case 1:
			d.cur = a.ctl.awaitPeerEnd(d.deadline)
		case 2:
			for _, w := range a.workers {
				w.EndInterval()
			}
			d.cur = a.ctl.awaitIntervalsEnded()
		default:
			for _, w := range a.workers {
				w.Finish()
			}
			// The workers are gone: the control side may read the
			// receiver's active copy.
			a.ctl.step(now)
			a.ctl.final()
			d.stopped = true
			a.logStopped()
			continue
		}
		d.stage++
		if d.cur != nil && d.cur.advance(now) {
			d.cur = nil
		}
	}
}

// SimStop begins Stop(drain) on simulated time: the next SimStep starts
// its phases; SimStopped says when it is done.
func (a *Appliance) SimStop(drain time.Duration) {
	a.life.Lock()
	a.state = stateStopped
	a.life.Unlock()
	a.sim.stopping, a.sim.drain = true, drain
}

// SimStopped reports whether the stop SimStop began has finished.
func (a *Appliance) SimStopped() bool { return a.sim.stopped }
