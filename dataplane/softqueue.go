package dataplane

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ldafwd/ldafwd/ring"
)

// SoftQueues turns one port into an N-queue port in software, as a NIC's
// receive-side scaling and transmit queues do in hardware: a receive
// goroutine takes every frame the port receives and steers it to rx queue
// SteerQueue(frame, N); a transmit goroutine takes the queues' frames, in
// each queue's order, round-robin onto the port. Each queue is a Port of
// its own for one lane pair (one rx user, one tx user).
//
// It exists for ports without queues of their own (ring links, and ports
// whose driver has no RSS): the demo and tests of multi-queue appliances,
// and `run --queues` on such ports. The two goroutines are the NIC's
// hardware: they cost a core's share each, so this is for correctness, not
// for speed.
//
// Timing. A queue stamps the frames it is given (TS, one clock read per
// burst, and LastTxNs: a TxStamper) as the NIC's tx queue would take them;
// when the port keeps stamps (RingPort.TxBurstStamped) the frames reach
// the wire with that stamp, so an impaired ring link delays them from the
// time the lane recorded. Received frames keep the port's rx stamp.
//
// Back-pressure. Nothing is dropped here: a full rx queue holds the
// receive goroutine (the port's own queue absorbs the rest, as a NIC's
// rx ring under pause frames), a refused tx burst waits at the head of
// its queue.
type SoftQueues struct {
	port    Port
	n       int
	rx, tx  []*ring.SPSC[*Packet]
	queues  []*QueuePort
	stamped func([]*Packet) int // port.TxBurstStamped, or nil
	clock   func() uint64
	quit    atomic.Bool
	wg      sync.WaitGroup
	started bool
	// Steered counts frames the receive goroutine put on each rx queue.
	Steered []atomic.Uint64
	// Steer picks a received frame's queue; nil: SteerQueue. Set before
	// Start (tests steer wrongly on purpose).
	Steer func(frame []byte, n int) int
}

// StampedTx is a port that can transmit frames with the transmit stamp
// they carry in TS (RingPort): SoftQueues then keeps the stamp its queue
// gave them.
type StampedTx interface {
	TxBurstStamped(pkts []*Packet) int
}

// NewSoftQueues splits port into n queues of size frames each (a power of
// two). clock stamps transmitted frames (nil: RealtimeClock; give the
// link's clock for a ring link with an injected one).
func NewSoftQueues(port Port, n, size int, clock func() uint64) (*SoftQueues, error) {
	if n < 1 || n > 64 {
		return nil, fmt.Errorf("dataplane: %d queues: 1..64", n)
	}
	if clock == nil {
		clock = RealtimeClock
	}
	s := &SoftQueues{port: port, n: n, clock: clock, Steered: make([]atomic.Uint64, n)}
	if sp, ok := port.(StampedTx); ok {
		s.stamped = sp.TxBurstStamped
	}
	for i := 0; i < n; i++ {
		rx, err := ring.NewSPSC[*Packet](size)
		if err != nil {
			return nil, err
		}
		tx, err := ring.NewSPSC[*Packet](size)
		if err != nil {
			return nil, err
		}
		s.rx, s.tx = append(s.rx, rx), append(s.tx, tx)
		s.queues = append(s.queues, &QueuePort{s: s, i: i, name: fmt.Sprintf("%s#q%d", port.Name(), i)})
	}
	return s, nil
}

// Queues are the n queue ports.
func (s *SoftQueues) Queues() []Port {
	ps := make([]Port, s.n)
	for i, q := range s.queues {
		ps[i] = q
	}
	return ps
}

// Start runs the receive and transmit goroutines.
func (s *SoftQueues) Start() {
	if s.started {
		return
	}
	s.started = true
	s.wg.Add(2)
	go s.receive()
	go s.transmit()
}

// Stop ends both goroutines after the transmit one has put out what the
// queues hold (up to a second while the port refuses it). Frames still
// on rx queues stay there (the lanes have stopped). It does not close the
// port.
func (s *SoftQueues) Stop() {
	if !s.started {
		return
	}
	s.quit.Store(true)
	s.wg.Wait()
	s.started = false
	s.quit.Store(false)
}

const softBurst = 64

func (s *SoftQueues) receive() {
	defer s.wg.Done()
	in := make([]*Packet, softBurst)
	// Per queue, the frames of this burst steered there, in order.
	out := make([][]*Packet, s.n)
	for i := range out {
		out[i] = make([]*Packet, 0, softBurst)
	}
	steer := s.Steer
	if steer == nil {
		steer = SteerQueue
	}
	idle := 0
	for !s.quit.Load() {
		m := s.port.RxBurst(in)
		if m == 0 {
			idle = softIdle(idle)
			continue
		}
		idle = 0
		for _, p := range in[:m] {
			q := steer(p.Data, s.n)
			if q < 0 || q >= s.n {
				q = 0
			}
			out[q] = append(out[q], p)
		}
		clear(in[:m])
		for q := range out {
			for sent := 0; sent < len(out[q]); {
				k := s.rx[q].EnqueueBurst(out[q][sent:])
				sent += k
				if k == 0 {
					if s.quit.Load() {
						s.port.Free(out[q][sent:])
						break
					}
					time.Sleep(10 * time.Microsecond)
				}
			}
			s.Steered[q].Add(uint64(len(out[q])))
			clear(out[q])
			out[q] = out[q][:0]
		}
	}
}

func (s *SoftQueues) transmit() {
	defer s.wg.Done()
	pend := make([][]*Packet, s.n) // per queue: taken off its ring, refused by the port so far
	buf := make([][]*Packet, s.n)
	for i := range buf {
		buf[i] = make([]*Packet, softBurst)
	}
	idle := 0
	var quitAt time.Time
	for {
		moved, held := false, false
		for q := 0; q < s.n; q++ {
			if len(pend[q]) == 0 {
				m := s.tx[q].DequeueBurst(buf[q])
				if m == 0 {
					continue
				}
				pend[q] = buf[q][:m]
			}
			var k int
			if s.stamped != nil {
				k = s.stamped(pend[q])
			} else {
				k = s.port.TxBurst(pend[q])
			}
			if k > 0 {
				moved = true
				clear(pend[q][:k])
				pend[q] = pend[q][k:]
			}
			if len(pend[q]) > 0 {
				held = true
			}
		}
		if s.quit.Load() {
			if quitAt.IsZero() {
				quitAt = time.Now()
			}
			empty := !held
			for _, r := range s.tx {
				empty = empty && r.Count() == 0
			}
			if empty || time.Since(quitAt) > time.Second {
				return
			}
		}
		if moved {
			idle = 0
		} else {
			idle = softIdle(idle)
		}
	}
}

// softIdle spins a little, then sleeps briefly: the goroutines emulate
// hardware, and must neither burn a core when idle nor add milliseconds.
func softIdle(idle int) int {
	if idle < 64 {
		return idle + 1
	}
	time.Sleep(5 * time.Microsecond)
	return idle
}

// QueuePort is one queue of a SoftQueues: RxBurst takes the frames steered
// to it, TxBurst queues frames for the wire. Alloc and Free are the
// port's (its pool must be safe for several users: a ring link's is).
type QueuePort struct {
	s      *SoftQueues
	i      int
	name   string
	lastTx uint64
	rxPkts atomic.Uint64
	txPkts atomic.Uint64
}

func (q *QueuePort) Name() string { return q.name }

func (q *QueuePort) RxBurst(pkts []*Packet) int {
	n := q.s.rx[q.i].DequeueBurst(pkts)
	if n > 0 {
		q.rxPkts.Add(uint64(n))
	}
	return n
}

func (q *QueuePort) TxBurst(pkts []*Packet) int {
	n := min(len(pkts), q.s.tx[q.i].FreeCount())
	if n == 0 {
		return 0
	}
	now := q.s.clock()
	q.lastTx = now
	for _, p := range pkts[:n] {
		p.TS = now
	}
	q.s.tx[q.i].EnqueueBulk(pkts[:n]) // cannot fail: the only producer, room counted
	q.txPkts.Add(uint64(n))
	return n
}

// LastTxNs is the stamp the last TxBurst gave its frames: exact when the
// port keeps it (a ring port); otherwise the port re-stamps on the wire
// and the measured delay includes the wait in this queue.
func (q *QueuePort) LastTxNs() uint64 { return q.lastTx }

func (q *QueuePort) Alloc(pkts []*Packet) int { return q.s.port.Alloc(pkts) }
func (q *QueuePort) Free(pkts []*Packet)      { q.s.port.Free(pkts) }

// Stats counts this queue's frames only.
func (q *QueuePort) Stats() Stats {
	return Stats{RxPackets: q.rxPkts.Load(), TxPackets: q.txPkts.Load()}
}

// Close does nothing: the SoftQueues' owner closes the port.
func (q *QueuePort) Close() error { return nil }
