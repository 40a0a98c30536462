package appliance_test

import (
	"encoding/binary"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ldafwd/ldafwd/control"
	"github.com/ldafwd/ldafwd/dataplane"
)

// droppingPort is #2's segment port with a receive ring that overflows in
// spells: during the first fifth of every third interval it drops one
// data frame in 20 before the receiver sees it, and counts them in
// RxDropped, as an AF_XDP socket's rx_ring_full or a NIC's imissed does.
type droppingPort struct {
	dataplane.Port
	iv      time.Duration
	n       int
	dropped atomic.Uint64
	keep    []*dataplane.Packet
	one     [1]*dataplane.Packet
}

func (d *droppingPort) RxBurst(pkts []*dataplane.Packet) int {
	n := d.Port.RxBurst(pkts)
	now := time.Now().UnixNano()
	if (now/int64(d.iv))%3 != 0 || now%int64(d.iv) > int64(d.iv)/5 {
		return n
	}
	k := 0
	for _, q := range pkts[:n] {
		if len(q.Data) >= 14 && binary.BigEndian.Uint16(q.Data[12:]) != control.EtherType {
			if d.n++; d.n%20 == 0 {
				d.one[0] = q
				d.Port.Free(d.one[:])
				d.dropped.Add(1)
				continue
			}
		}
		pkts[k] = q
		k++
	}
	return k
}

func (d *droppingPort) Stats() dataplane.Stats {
	s := d.Port.Stats()
	s.RxDropped += d.dropped.Load()
	return s
}

// TestReceiverPortDropsInvalidate: frames the receiving appliance's own
// segment port drops (a full receive ring) were delivered by the segment
// and must never be reported as its loss: every line with loss around such
// drops is invalid with that reason, every valid line holds the link's
// exact truth, and intervals away from the drops stay valid.
func TestReceiverPortDropsInvalidate(t *testing.T) {
	if raceEnabled {
		t.Skip("judges loss under timing; too slow under -race")
	}
	const iv = 200 * time.Millisecond
	dp := &droppingPort{iv: iv}
	p := newPair(t, iv, 4096, nil, func(port dataplane.Port) dataplane.Port { dp.Port = port; return dp })
	p.run(12*iv, 10000, nil, nil)
	if dp.dropped.Load() == 0 {
		t.Fatal("the port never dropped")
	}
	valid := p.checkLines() // every valid line: lost and mean against the link's truth
	why := 0
	for _, r := range p.lines {
		if !r.Valid && strings.Contains(r.Reason, "segment port dropped") {
			why++
		}
	}
	t.Logf("dropped %d frames; %d lines invalid for it, %d valid intervals", dp.dropped.Load(), why, len(valid))
	if why == 0 {
		t.Error("no line names the receiving port's drops")
	}
	if len(valid) == 0 {
		t.Error("no valid interval: drops in a third of the intervals should leave others valid")
	}
}

// stallingPort is #1's segment port with a transmit side that takes
// nothing for 80 ms at the start of every third interval: longer than the
// lane's stall limit, so the sender frees the user frames waiting.
type stallingPort struct {
	dataplane.Port
	iv      time.Duration
	stalled atomic.Uint64
}

func (s *stallingPort) TxBurst(pkts []*dataplane.Packet) int {
	now := time.Now().UnixNano()
	if (now/int64(s.iv))%3 == 1 && now%int64(s.iv) < int64(80*time.Millisecond) {
		s.stalled.Add(1)
		return 0
	}
	return s.Port.TxBurst(pkts)
}

// TestSenderTxDropsNotLoss: frames the sending appliance had to drop (its
// segment port refused them past the stall limit) never entered the
// segment: the sender records a frame only once its port took it, so they
// are in no synopsis and never reported as the segment's loss — every
// valid line holds the link's truth.
func TestSenderTxDropsNotLoss(t *testing.T) {
	if raceEnabled {
		t.Skip("judges loss under timing; too slow under -race")
	}
	const iv = 300 * time.Millisecond
	sp := &stallingPort{iv: iv}
	p := newPair(t, iv, 4096, func(port dataplane.Port) dataplane.Port { sp.Port = port; return sp }, nil)
	p.run(12*iv, 10000, nil, nil)
	s1, _ := p.a1.Lanes()
	if s1.Stats.TxDropped.Load() == 0 {
		t.Fatalf("the sender dropped nothing (stalled %d bursts)", sp.stalled.Load())
	}
	valid := p.checkLines() // every valid line: lost and mean against the link's truth
	t.Logf("sender dropped %d frames; %d valid intervals", s1.Stats.TxDropped.Load(), len(valid))
	if len(valid) == 0 {
		t.Error("no valid interval: the property holds vacuously")
	}
}
