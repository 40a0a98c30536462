package demo

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/ldafwd/ldafwd/appliance"
	"github.com/ldafwd/ldafwd/dataplane"
	"github.com/ldafwd/ldafwd/report"
)

// The demo on simulated time (Config.SimulatedTime). One goroutine
// moves a SimClock in fixed ticks and, every tick, in a fixed order: the
// generator sends the frames its rate schedule has due (none while a
// traffic hook pauses it), every worker of both appliances runs one turn
// of its loop (Worker.Turn: each lane polled once), the sink takes what
// reached it, every simControlEvery the two control sides step (as their
// goroutines' tickers make them live), and the report lines whose truth
// has come are handed on. Stop's phases
// run on the same ticks. There is no other goroutine, no sleep, no wall
// clock read and no random choice not drawn from the seed (the impairment
// stage's, the sessions' ids): the same seed and configuration give the
// same reports, byte for byte.
//
// Fixed ticks rather than an event queue: the lanes, the ring links and
// the control side are written as pollers (they look at their rings and
// the clock whenever they are called), so the simulation calls them as a
// busy worker would. The tick does not quantise any measured delay: the
// generator's frames leave at the tick they are due and the sender lane
// forwards them in the same tick (its transmit stamp is that time), and
// the impairment stage stamps each arrival with its exact due time, not
// the tick it is read in. What the tick sets is how often the lanes look
// at their rings, as a live worker's idle sleep (20 µs in the demo) does:
// 10 µs keeps the simulated polls at least as frequent as live ones; a
// simulated second is 100 000 turns of four lanes, and TestSimProperty's
// thousand runs of four or five short intervals take 80–90 s of CPU.
const (
	simTick         = 10 * time.Microsecond
	simControlEvery = time.Millisecond // the control goroutine's ticker
	// SimStartNs is where simulated time starts (ns since the Unix
	// epoch; tests place intervals by it): a fixed date
	// (2026-01-01T00:00:00Z, a whole second, so intervals of whole
	// milliseconds start on a boundary), so that report times are the
	// same from run to run.
	SimStartNs uint64 = 1_767_225_600_000_000_000
	// truthWait bounds how long a report line waits for its interval's
	// truth, which is final only a few frames after its End marker (a
	// packet held back across it may still come).
	truthWait = 100 * time.Millisecond
)

// simLine is a report line waiting for its interval's truth, since at
// (simulated ns).
type simLine struct {
	r  *report.Interval
	at uint64
}

// simWorld is what Run's setup gives the simulation to drive.
type simWorld struct {
	linkLocal func(elapsed time.Duration) // send the link-local frames due
	frames    func(want int) bool         // send up to want frames; true: the link refused some
	generated func() uint64               // frames sent so far
	sink      func() int                  // take one burst off the downstream link
	drained   func() bool                 // every frame sent has left the segment
	lines     func(final bool)            // hand on the lines whose truth has come (final: all)
	drain     time.Duration               // Stop's drain
	// restart builds appliance #1 anew, as after a crash (a new session,
	// the same configuration), and hands it to Run too.
	restart func() (*appliance.Appliance, error)
}

// simUnsupported names what the simulated demo does not do: it is refused,
// never ignored. (A traffic hook's pauses it does; the malformed frames a
// hook asks for it refuses when asked, in simulateDemo: which elapsed
// times ask for them is the hook's to say.)
func simUnsupported(cfg *Config) error {
	if cfg.ClockStepAt > 0 && cfg.Queues > 1 {
		return errors.New("demo: a clock step with several queues is not supported (the lanes' truths do not follow it)")
	}
	var no []string
	if cfg.Queues > 1 {
		no = append(no, fmt.Sprintf("%d queues (their steering runs on goroutines of its own)", cfg.Queues))
	}
	for _, p := range cfg.Taps {
		if p[0] != nil || p[1] != nil {
			no = append(no, "captures (their writers run on goroutines of their own)")
			break
		}
	}
	if cfg.Rate <= 0 {
		no = append(no, "rate 0 (as fast as the appliances forward: on simulated time forwarding takes no time)")
	}
	if len(no) > 0 {
		return fmt.Errorf("demo: on simulated time: not supported: %s", strings.Join(no, "; "))
	}
	return nil
}

// simulateDemo runs the started-to-stopped part of Run on simulated
// time: the generator for cfg.Duration, the drain of the segment (2 s at
// most, as live), then Stop of ldafwd#1 and of ldafwd#2 in turn. It
// returns the two stops' errors (none on simulated time: the workers
// never start, so none fails to) and its own.
func simulateDemo(cfg *Config, clk *appliance.SimClock, a1, a2 *appliance.Appliance, w simWorld) (err1, err2, err error) {
	if err := a2.StartSimulated(); err != nil {
		return nil, nil, fmt.Errorf("demo: appliance #2: %w", err)
	}
	if err := a1.StartSimulated(); err != nil {
		return nil, nil, fmt.Errorf("demo: appliance #1: %w", err)
	}
	origin := clk.Clock()
	end := origin + uint64(cfg.Duration)
	nextCtl := origin + uint64(simControlEvery)
	// paused is how long the traffic hook has paused the generator: the
	// rate schedule skips it, as live (no backlog burst after a pause).
	var paused time.Duration
	restarted := cfg.RestartAt <= 0
	var hookErr error
	tick := func() {
		now := clk.Clock()
		pause := false
		if now < end && cfg.Traffic != nil {
			var bad bool
			pause, bad = cfg.Traffic(time.Duration(now - origin))
			if bad && hookErr == nil {
				hookErr = errors.New("demo: on simulated time: not supported: malformed frames (a traffic hook asked for them)")
			}
			if pause {
				paused += simTick
			}
		}
		if now < end && !pause {
			// The rate schedule, as live: frame n is due at n/Rate.
			elapsed := time.Duration(now-origin) - paused
			due := uint64(cfg.Rate*elapsed.Seconds()) + 1
			w.linkLocal(elapsed)
			for sent := w.generated(); sent < due; {
				// A full link or an empty pool: the rest goes next tick.
				if w.frames(int(min(due-sent, 32))) || w.generated() == sent {
					break
				}
				sent = w.generated()
			}
		}
		a1.SimTurn()
		a2.SimTurn()
		for w.sink() > 0 {
		}
		if now >= nextCtl {
			nextCtl += uint64(simControlEvery)
			t := clk.Now()
			a1.SimStep(t)
			a2.SimStep(t)
		}
		w.lines(false)
		clk.Advance(simTick)
	}
	for now := clk.Clock(); now < end; now = clk.Clock() {
		if !restarted && time.Duration(now-origin) >= cfg.RestartAt {
			// The sender appliance dies without a graceful stop of its
			// interval (Stop with no drain, as live), and comes back with
			// a new session; the generator goes on meanwhile.
			restarted = true
			a1.SimStop(0)
			for !a1.SimStopped() {
				tick()
			}
			var err error
			if a1, err = w.restart(); err != nil {
				return nil, nil, fmt.Errorf("demo: restarting appliance #1: %w", err)
			}
			if err := a1.StartSimulated(); err != nil {
				return nil, nil, fmt.Errorf("demo: restarting appliance #1: %w", err)
			}
			continue
		}
		tick()
		if hookErr != nil {
			return nil, nil, hookErr
		}
	}
	// Let the segment drain, then stop both appliances gracefully.
	for deadline := clk.Clock() + uint64(2*time.Second); clk.Clock() < deadline && !w.drained(); {
		tick()
	}
	limit := clk.Clock() + uint64(4*w.drain+10*time.Second) // Stop's phases all have deadlines well inside
	for _, a := range []*appliance.Appliance{a1, a2} {
		a.SimStop(w.drain)
		for !a.SimStopped() {
			if clk.Clock() > limit {
				return nil, nil, fmt.Errorf("demo: on simulated time: an appliance's stop did not end by %v", time.Duration(limit-origin))
			}
			tick()
		}
	}
	w.lines(true)
	return nil, nil, nil
}

// simSession is appliance #n's session id on simulated time, drawn from
// the seed (splitmix64): the session is in every control frame, and every
// random choice of a simulated run comes from its seed. Never 0, which
// would draw a random one.
func simSession(seed uint64, n uint64) uint64 {
	z := seed + n*0x9e3779b97f4a7c15
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return (z ^ z>>31) | 1
}

// stampedPort is a port whose transmit stamps (dataplane.TxStamper) are
// moved by what a stepped clock adds at that time.
type stampedPort struct {
	dataplane.Port
	st  dataplane.TxStamper
	off func(ns uint64) int64
}

func (p *stampedPort) LastTxNs() uint64 {
	ns := p.st.LastTxNs()
	return uint64(int64(ns) + p.off(ns))
}

// steppedStamps wraps p, when it stamps what it transmits, so that its
// stamps carry what off says a stepped clock adds at their time.
func steppedStamps(p dataplane.Port, off func(ns uint64) int64) dataplane.Port {
	st, ok := p.(dataplane.TxStamper)
	if !ok {
		return p
	}
	return &stampedPort{Port: p, st: st, off: off}
}
