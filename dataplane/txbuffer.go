package dataplane

import "github.com/ldafwd/ldafwd/classifier"

// txBuffer is a lane's transmit buffer: the frames waiting for TxBurst, in
// order, and for each slot what the lane needs when its frame goes out.
// The slots are parallel arrays rather than an array of structs because
// TxBurst takes the frames as one []*Packet and the sender records a
// transmitted range straight from the Meta, MEC and record arrays
// (SynSet.recordTx). Only these methods move or add slots, and each keeps
// the five arrays in step; the lane reads them directly.
//
// Slot i of [0, n): pkts[i] is the frame; meta[i] and mec[i] its parse and
// measurement class (a sender fills them on receive and records them on
// transmission); rec[i] says to record it on transmission; own[i] that it
// was allocated from the tx port (a control frame the appliance
// originates), so a dropped one goes back there. Slots past n hold nil
// frames: the buffer keeps no packet it no longer owns.
type txBuffer struct {
	pkts []*Packet
	meta []classifier.Meta
	mec  []uint16
	rec  []bool
	own  []bool
	n    int
}

func newTxBuffer(size int) txBuffer {
	return txBuffer{
		pkts: make([]*Packet, size),
		meta: make([]classifier.Meta, size),
		mec:  make([]uint16, size),
		rec:  make([]bool, size),
		own:  make([]bool, size),
	}
}

// full reports whether every slot is taken.
func (b *txBuffer) full() bool { return b.n == len(b.pkts) }

// push appends one frame.
func (b *txBuffer) push(p *Packet, record, own bool) {
	b.pkts[b.n] = p
	b.rec[b.n] = record
	b.own[b.n] = own
	b.n++
}

// pushForwarded appends frames that are forwarded only: neither recorded
// nor the lane's own. There must be room for them.
func (b *txBuffer) pushForwarded(ps []*Packet) {
	t := b.n
	copy(b.pkts[t:], ps)
	clear(b.rec[t : t+len(ps)])
	clear(b.own[t : t+len(ps)])
	b.n = t + len(ps)
}

// open returns the arrays of the n slots past the last one, with ps
// copied into them and own cleared, for a sender to fill in Meta, MEC and
// record; commit then takes them in. There must be room for them.
func (b *txBuffer) open(ps []*Packet) (pkts []*Packet, meta []classifier.Meta, mec []uint16, rec []bool) {
	t, n := b.n, len(ps)
	pkts = b.pkts[t : t+n]
	copy(pkts, ps)
	clear(b.own[t : t+n])
	return pkts, b.meta[t : t+n], b.mec[t : t+n], b.rec[t : t+n]
}

// commit takes in the first n slots open returned.
func (b *txBuffer) commit(n int) { b.n += n }

// dropNil removes, from the n slots open returned, those whose frame the
// caller set to nil, keeping the order of the rest; it appends their
// packets (ps, as given to open) to free and returns it with the number of
// slots kept, for commit.
func (b *txBuffer) dropNil(ps []*Packet, free []*Packet) ([]*Packet, int) {
	t, n := b.n, len(ps)
	j := t
	for i := t; i < t+n; i++ {
		if b.pkts[i] == nil {
			free = append(free, ps[i-t])
			continue
		}
		b.pkts[j], b.meta[j], b.mec[j], b.rec[j] = b.pkts[i], b.meta[i], b.mec[i], b.rec[i]
		j++
	}
	clear(b.pkts[j : t+n])
	return free, j - t
}

// removeFront drops the first i slots (their packets are the caller's),
// keeping the rest in order.
func (b *txBuffer) removeFront(i int) {
	rest := copy(b.pkts, b.pkts[i:b.n])
	copy(b.meta, b.meta[i:b.n])
	copy(b.mec, b.mec[i:b.n])
	copy(b.rec, b.rec[i:b.n])
	copy(b.own, b.own[i:b.n])
	clear(b.pkts[rest:b.n])
	b.n = rest
}

// insertOwnFront puts own frames ps back at the front, unrecorded, ahead
// of the slots held (which move back, in order). There must be room.
func (b *txBuffer) insertOwnFront(ps []*Packet) {
	i, n := len(ps), b.n
	copy(b.pkts[i:], b.pkts[:n])
	copy(b.meta[i:], b.meta[:n])
	copy(b.mec[i:], b.mec[:n])
	copy(b.rec[i:], b.rec[:n])
	copy(b.own[i:], b.own[:n])
	copy(b.pkts, ps)
	for j := 0; j < i; j++ {
		b.rec[j], b.own[j] = false, true
	}
	b.n = n + i
}

// reset empties the buffer (its packets are the caller's: sent or freed).
func (b *txBuffer) reset() {
	clear(b.pkts[:b.n])
	b.n = 0
}
