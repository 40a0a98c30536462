package afxdp

import (
	"errors"
	"fmt"
	"strings"

	"github.com/ldafwd/ldafwd/dataplane"
)

// Queues is n AF_XDP sockets on queues 0..n-1 of one interface, one Port
// each (Queue(q)), for n lanes on n workers: lane q receives from and
// transmits on queue q of both its ports, so no frame crosses cores.
//
// Steering. The XDP program redirects a frame to the socket of the queue
// it arrived on: the kernel refuses an AF_XDP socket a frame that arrived
// on another queue (xsk_rcv_check: -EINVAL, the frame is dropped), in copy
// and zero-copy mode alike, so the program cannot move frames between
// queues. Which queue a frame arrives on is the NIC's RSS (configure the
// Toeplitz key and an equal table: docs/afxdp.md) or, on veth, the queue
// the peer transmitted on: veth hands a frame to the peer's rx queue of
// its tx queue, and an AF_XDP socket in copy mode transmits on the queue
// it is bound to. Between two appliances over veth each lane's frames and
// End markers therefore stay on the lane's queue.
//
// As a dataplane.Port, Queues is queue 0 for bursts and the whole
// interface for Stats (the sum over its queues) and Close (all of them).
type Queues struct {
	name string
	qs   []*Port
}

var _ dataplane.Port = (*Queues)(nil)

// OpenQueues opens queues 0..n-1 of the interface of spec ("afxdp:eth1";
// a spec naming a queue is refused), queue q with port index
// cfg.Index+q, so indices cfg.Index..cfg.Index+n-1 must be free.
func OpenQueues(spec string, n int, cfg Config) (*Queues, error) {
	ifname, _, err := ParseSpec(spec)
	if err != nil {
		return nil, err
	}
	if strings.Contains(spec, "@") {
		return nil, fmt.Errorf("%w %q: with %d queues give the interface only (afxdp:%s): its queues 0..%d are opened", ErrBadSpec, spec, n, ifname, n-1)
	}
	if n < 1 || int(cfg.Index)+n > 256 {
		return nil, fmt.Errorf("afxdp: %s: %d queues from port index %d: want 1..%d", spec, n, cfg.Index, 256-int(cfg.Index))
	}
	if nq := rxQueues(ifname); nq > 0 && nq < n {
		return nil, fmt.Errorf("afxdp: %s: %d queues wanted, but %s has %d rx queues (ethtool -L, or ip link add … numrxqueues %d numtxqueues %d for veth)", spec, n, ifname, nq, n, n)
	}
	m := &Queues{name: "afxdp:" + ifname}
	for q := 0; q < n; q++ {
		c := cfg
		c.Index = cfg.Index + uint8(q)
		p, err := Open(fmt.Sprintf("afxdp:%s@%d", ifname, q), c)
		if err != nil {
			m.Close()
			return nil, err
		}
		m.qs = append(m.qs, p)
	}
	return m, nil
}

// Len is the number of queues.
func (m *Queues) Len() int { return len(m.qs) }

// Queue is the port of queue q.
func (m *Queues) Queue(q int) *Port { return m.qs[q] }

// Name is "afxdp:<ifname>".
func (m *Queues) Name() string { return m.name }

// RxBurst receives from queue 0.
func (m *Queues) RxBurst(pkts []*dataplane.Packet) int { return m.qs[0].RxBurst(pkts) }

// TxBurst transmits on queue 0.
func (m *Queues) TxBurst(pkts []*dataplane.Packet) int { return m.qs[0].TxBurst(pkts) }

// Alloc allocates from queue 0.
func (m *Queues) Alloc(pkts []*dataplane.Packet) int { return m.qs[0].Alloc(pkts) }

// Free frees to queue 0 (only its packets: use the queue that gave them).
func (m *Queues) Free(pkts []*dataplane.Packet) { m.qs[0].Free(pkts) }

// Stats sums the counters of every queue.
func (m *Queues) Stats() dataplane.Stats {
	var s dataplane.Stats
	for _, p := range m.qs {
		t := p.Stats()
		s.RxPackets += t.RxPackets
		s.TxPackets += t.TxPackets
		s.RxBytes += t.RxBytes
		s.TxBytes += t.TxBytes
		s.RxDropped += t.RxDropped
		s.TxDropped += t.TxDropped
		s.RxErrors += t.RxErrors
	}
	return s
}

// ZeroCopy says whether every queue is bound zero-copy.
func (m *Queues) ZeroCopy() bool {
	for _, p := range m.qs {
		if !p.ZeroCopy() {
			return false
		}
	}
	return len(m.qs) > 0
}

// XDPMode is the program's attach mode ("driver" or "generic").
func (m *Queues) XDPMode() string { return m.qs[0].XDPMode() }

// Close closes every queue, last first.
func (m *Queues) Close() error {
	var err error
	for i := len(m.qs) - 1; i >= 0; i-- {
		err = errors.Join(err, m.qs[i].Close())
	}
	return err
}
