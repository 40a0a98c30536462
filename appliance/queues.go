package appliance

import (
	"fmt"

	"github.com/ldafwd/ldafwd/control"
	"github.com/ldafwd/ldafwd/dataplane"
)

// Multi-queue appliances. With N queues per port the appliance runs N
// sender lanes and N receiver lanes, queue q's pair on worker q: every
// frame is received, measured and transmitted on one core. Each lane
// records into its own double buffer; the control side merges the N
// copies of an interval (dataplane.MergedBuffer: the synopses are sums)
// before it encodes or pairs them, so the wire format, the reports and
// everything downstream of the merge are those of one lane. The Hello
// announces N lanes; each sender lane sends its own End marker, and each
// receiver lane cuts at the peer's End of the same lane number, which the
// steering brings to its queue (docs/protocol.md, "Several lanes").

// synBuffer is the control side's view of one role's synopses: the one
// lane's SynBuffer, or the MergedBuffer of every queue's lane.
type synBuffer interface {
	Idle() (*dataplane.SynSet, bool)
	Release()
	Active() *dataplane.SynSet
	Overruns() uint64
}

// queueCount checks the queue configuration and returns the number of
// queue pairs (1 without queues).
func queueCount(cfg *Config) (int, error) {
	n := len(cfg.QueuesA)
	if n == 0 && len(cfg.QueuesB) == 0 {
		return 1, nil
	}
	if n != len(cfg.QueuesB) || n < 2 {
		return 0, fmt.Errorf("appliance: %d queues on port a, %d on port b: want as many, at least 2", n, len(cfg.QueuesB))
	}
	if n > 64 {
		return 0, fmt.Errorf("appliance: %d queues: at most 64", n)
	}
	for i := 0; i < n; i++ {
		if cfg.QueuesA[i] == nil || cfg.QueuesB[i] == nil {
			return 0, fmt.Errorf("appliance: queue %d missing", i)
		}
	}
	if len(cfg.Cores) != 0 && len(cfg.Cores) != n {
		return 0, fmt.Errorf("appliance: %d cores for %d queue pairs: one core per queue pair (or none)", len(cfg.Cores), n)
	}
	return n, nil
}

// newBuffers makes the lanes' double buffers (sender, receiver: one per
// queue) and the control side's view of them.
func (a *Appliance) newBuffers(syn dataplane.SynConfig, nq int) (sbufs, rbufs []*dataplane.SynBuffer, err error) {
	for q := 0; q < nq; q++ {
		s, err := dataplane.NewSynBuffer(syn)
		if err != nil {
			return nil, nil, err
		}
		r, err := dataplane.NewSynBuffer(syn)
		if err != nil {
			return nil, nil, err
		}
		sbufs, rbufs = append(sbufs, s), append(rbufs, r)
	}
	if nq == 1 {
		// One lane: the control side reads its buffers directly, as
		// before queues existed.
		a.sbuf, a.rbuf = sbufs[0], rbufs[0]
		return sbufs, rbufs, nil
	}
	if a.sbuf, err = dataplane.NewMergedBuffer(syn, sbufs); err != nil {
		return nil, nil, err
	}
	if a.rbuf, err = dataplane.NewMergedBuffer(syn, rbufs); err != nil {
		return nil, nil, err
	}
	return sbufs, rbufs, nil
}

// QueueLanes returns every queue's sender and receiver lane (one pair
// without queues).
func (a *Appliance) QueueLanes() [][2]*dataplane.Lane { return a.qlanes }

// Queues is the number of queue pairs (lanes per direction).
func (a *Appliance) Queues() int { return len(a.qlanes) }

// laneTotals are the sender and receiver lanes' counters summed over the
// queues (the lanes' own with one queue).
func (a *Appliance) laneTotals() (s, r *dataplane.LaneStats) {
	if len(a.qlanes) == 1 {
		return &a.lanes[0].Stats, &a.lanes[1].Stats
	}
	s, r = new(dataplane.LaneStats), new(dataplane.LaneStats)
	for _, p := range a.qlanes {
		p[0].Stats.AddTo(s)
		p[1].Stats.AddTo(r)
	}
	return s, r
}

// LaneTotals are the sender and receiver counters summed over the
// queues.
func (a *Appliance) LaneTotals() (sender, receiver *dataplane.LaneStats) { return a.laneTotals() }

// steering checks that the per-lane cut of interval b can be trusted: the
// sender cuts with as many lanes as we have queues, and no sampled frame
// reached a receiver lane of another queue than the steering gives. If
// not, every line of the interval is invalid with the reason (rc.steerWhy,
// sessionReason): a frame on the wrong lane may be cut into the wrong
// interval at one end, which the RDA's crossing repair does not expect.
func (c *controller) steering(b *control.IntervalBundle, rc *rcopy) {
	n := c.a.Queues()
	switch {
	case b.Hello != nil && int(b.Hello.Lanes) != n:
		rc.steerWhy = fmt.Sprintf("sender cuts intervals with %d lanes, this receiver has %d queues: give both ends the same --queues", b.Hello.Lanes, n)
	case rc.misrouted > 0:
		rc.steerWhy = fmt.Sprintf("%d sampled frames reached a queue their flow hash does not steer to: the two ends steer differently, so the per-lane cut may put a frame in different intervals", rc.misrouted)
	}
}
