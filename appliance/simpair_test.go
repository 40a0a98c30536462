package appliance_test

import (
	"time"

	"github.com/ldafwd/ldafwd/appliance"
	"github.com/ldafwd/ldafwd/dataplane"
	"github.com/ldafwd/ldafwd/dataplane/traffic"
)

// simPairStart is where a pair's simulated clock starts: a fixed date
// (2026-01-01T00:00:00Z, a whole second) so that intervals start on a
// boundary and report times repeat from run to run.
const simPairStart uint64 = 1_767_225_600_000_000_000

const (
	simPairTick    = 10 * time.Microsecond // how often the lanes look at their rings (a live worker's idle sleep is 20 µs)
	simPairControl = time.Millisecond      // the control goroutine's ticker
)

// simRun is run on simulated time (the pair was made with pairOpts.clk):
// one goroutine moves the clock in ticks and, every tick, sends the
// frames each generator's rate schedule has due, turns both appliances'
// workers once, empties both sinks, and every millisecond steps both
// control sides; then the segment drains and each appliance stops with
// the same drain as run's. Nothing waits on the host: the same pair
// gives the same lines, however loaded the machine is. It returns the
// frames sent each way.
func (p *pair) simRun(d time.Duration, rate float64) (up, down uint64) {
	clk := p.clk
	if err := p.a2.StartSimulated(); err != nil {
		p.t.Fatal(err)
	}
	if err := p.a1.StartSimulated(); err != nil {
		p.t.Fatal(err)
	}
	gen, _ := traffic.NewGen(traffic.GenConfig{Flows: 40, Size: 128})
	pk := make([]*dataplane.Packet, 64)
	ports := [2]*dataplane.RingPort{p.l0.A(), p.l2.B()} // up sends a→b, down b→a
	id0 := [2]uint64{1, 1 << 40}
	var ids, sent [2]uint64 // frames due so far, and taken, per generator
	origin := clk.Clock()
	end := origin + uint64(d)
	nextCtl := origin + uint64(simPairControl)
	tick := func() {
		now := clk.Clock()
		if now < end {
			due := uint64(rate * time.Duration(now-origin).Seconds())
			for i, port := range ports {
				for ids[i] < due {
					n := port.Alloc(pk[:min(uint64(32), due-ids[i])])
					if n == 0 {
						break // the pool is empty: the rest goes next tick
					}
					for j := range n {
						pk[j].Data = gen.Frame(pk[j].Data[:cap(pk[j].Data)], id0[i]+ids[i]+uint64(j))
					}
					m := port.TxBurst(pk[:n])
					if m < n { // the ring is full: lost, as a NIC drops them
						port.Free(pk[m:n])
						p.lostIn[i].Add(uint64(n - m))
					}
					sent[i] += uint64(m)
					ids[i] += uint64(n)
				}
			}
		}
		p.a1.SimTurn()
		p.a2.SimTurn()
		for p.sinkBurst(p.l2.B(), &p.gotDown, true, pk) > 0 {
		}
		for p.sinkBurst(p.l0.A(), &p.gotUp, false, pk) > 0 {
		}
		if now >= nextCtl {
			nextCtl += uint64(simPairControl)
			t := clk.Now()
			p.a1.SimStep(t)
			p.a2.SimStep(t)
		}
		clk.Advance(simPairTick)
	}
	for clk.Clock() < end {
		tick()
	}
	for deadline := clk.Clock() + uint64(2*time.Second); clk.Clock() < deadline; {
		if p.gotDown.Load() >= sent[0] && p.gotUp.Load() >= sent[1] {
			break
		}
		tick()
	}
	drain := p.iv + time.Second
	limit := clk.Clock() + uint64(4*drain+10*time.Second) // Stop's phases all have deadlines well inside
	for _, a := range []*appliance.Appliance{p.a1, p.a2} {
		a.SimStop(drain)
		for !a.SimStopped() {
			if clk.Clock() > limit {
				p.t.Fatalf("an appliance's stop did not end by %v", time.Duration(limit-origin))
			}
			tick()
		}
	}
	return sent[0], sent[1]
}
