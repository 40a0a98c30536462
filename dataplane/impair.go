package dataplane

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync/atomic"

	"github.com/ldafwd/ldafwd/classifier"
)

// DelayModel draws one-way delays, ns, for a batch of packets. It is the
// batch half of model.Delay (constant, Weibull, Pareto, two-mode mix…):
// any model.Delay plugs in. One dynamic call per burst, none per packet.
type DelayModel interface {
	Fill(r *rand.Rand, dst []float64) // ns, ≥ 0
}

// LossModel decides loss for the next len(lost) packets in order; any
// model.Loss (uniform, bursty episodes) plugs in. It may keep state
// between calls, so one LossModel serves one link direction.
type LossModel interface {
	Fill(r *rand.Rand, lost []bool)
}

// Truth flags: what the impairment stage did to a packet.
const (
	TruthLost       uint8 = 1 << iota // dropped by the loss model; DeliverNs is 0
	TruthDuplicate                    // a copy the stage made (the original is recorded too)
	TruthReordered                    // held back and overtaken by ≥ 1 later packet
	TruthDupSkipped                   // duplication was drawn but the pool or queue had no room
	TruthRemarked                     // the stage rewrote its DSCP; TruthRecord.OrigDSCP has the sender's
	TruthConsumed                     // a link-local frame the segment consumed (ConsumeLinkLocal); DeliverNs is 0
	TruthInjected                     // a link-local frame the segment originated (InjectEveryNs): no sender sent it
)

// TruthRecord is the exact account of one packet on an impaired link
// direction. Records come in delivery order for delivered packets and at
// admission for lost ones.
type TruthRecord struct {
	ID   uint64 // 8 bytes little-endian at ImpairConfig.IDOffset, 0 when not configured
	TxNs uint64 // when the frame was handed to TxBurst, ns on the link clock
	// Seq is the frame's place in the order the sender put frames on the
	// link (1 for the first admitted; an injected frame takes the last
	// admitted one's, a duplicate its original's). A transmit burst
	// stamps all its frames with one TxNs: Seq is what orders them.
	Seq       uint64
	DeliverNs uint64 // when it became receivable (its rx timestamp), ns; 0 if lost
	Len       uint32 // frame length, bytes
	Flags     uint8
	OrigDSCP  uint8 // the DSCP the frame had when sent (TruthRemarked)
}

// TruthFunc receives every TruthRecord, on the receiving port's goroutine,
// with the frame bytes (valid only during the call). It must not block or
// retain frame; TruthLog.Record is one that allocates nothing.
type TruthFunc func(frame []byte, r *TruthRecord)

// ImpairConfig describes what one link direction does to frames. The zero
// value (with Queue defaulted) is a perfect wire with zero delay.
type ImpairConfig struct {
	Delay DelayModel // nil: zero delay
	Loss  LossModel  // nil: no loss
	// ReorderProb is the probability a packet is held back, [0, 1). One
	// packet is held at a time: while one waits no other is chosen, so the
	// realised rate is about p/(1+p·k) — ImpairStats.Reordered has the truth.
	ReorderProb  float64
	ReorderDepth int       // k: later packets that overtake a held one; default 1
	MaxHoldNs    uint64    // release a held packet this long after its own delivery time even if fewer than k overtook it; default 1 ms
	DupProb      float64   // probability a delivered packet is followed by a copy, [0, 1)
	Seed         uint64    // seeds the stage's PCG generator: same seed, same frames → same decisions
	Queue        int       // delay-line capacity in packets (power of two); default 4096
	IDOffset     int       // TruthRecord.ID offset in the frame; < 0 or beyond the frame: ID 0
	Truth        TruthFunc // optional per-packet truth hook

	// Remark rewrites the DSCP of delivered IPv4/IPv6 packets (untagged) as
	// a router inside the segment may: each rule applies to packets whose
	// DSCP is From, with probability Prob; the IPv4 header checksum is
	// fixed. The first rule for a DSCP applies.
	Remark []Remark
	// ConsumeLinkLocal drops every link-local frame (classifier's
	// FlagLinkLocal: STP, LLDP, ARP…) as the segment's switches and
	// routers do: TruthConsumed, not lost.
	ConsumeLinkLocal bool
	// CalmUntilNs > 0 passes every frame stamped (Packet.TS) before it
	// with its delay alone: no loss, reordering, duplicate or remark. A
	// test's segment can so start in order and turn bad later, as a
	// segment congests after a calm start.
	CalmUntilNs uint64
	// InjectEveryNs > 0 makes the segment originate a link-local frame
	// toward the receiver this often (an STP BPDU, LLDP and an ARP request
	// in turn), as its switches do: TruthInjected.
	InjectEveryNs uint64
}

// Remark is one DSCP rewrite rule of the impairment stage.
type Remark struct {
	From, To uint8 // DSCP values, 0-63
	Prob     float64
}

// ErrImpairConfig is wrapped by NewImpairer for a bad config.
var ErrImpairConfig = errors.New("dataplane: bad impairment config")

// Default impairment sizes.
const (
	DefaultImpairQueue = 4096
	DefaultMaxHoldNs   = 1_000_000 // 1 ms
	impairBatch        = 64        // packets per model Fill call
)

// ImpairStats are the aggregate truth of one direction: counters since the
// stage was created. Delivered = Admitted − Lost + Duplicated − Pending.
type ImpairStats struct {
	Admitted   uint64  // packets offered to the stage (sent on the link)
	Lost       uint64  // dropped by the loss model
	Duplicated uint64  // copies made
	DupSkipped uint64  // duplications drawn but not made (no buffer or queue room)
	Reordered  uint64  // delivered after ≥ 1 packet admitted later than it
	Delivered  uint64  // released to the receiver (copies included)
	DelaySumNs uint64  // Σ (DeliverNs − TxNs) over delivered packets, ns (wraps like the synopses)
	DelaySqSum float64 // Σ (DeliverNs − TxNs)², ns²
	MaxDelayNs uint64
	PendingNow uint64 // in the delay line or held at the last publication
	Remarked   uint64 // delivered packets whose DSCP the stage rewrote
	Consumed   uint64 // link-local frames the stage consumed (not in Lost)
	Injected   uint64 // link-local frames the stage originated (in Delivered)
}

// entry is one packet in the delay line.
type entry struct {
	p       *Packet
	tx      uint64
	seq     uint64 // TruthRecord.Seq
	deliver uint64
	flags   uint8
	orig    uint8 // DSCP before a remark
}

// Impairer is the impairment stage of one link direction: a delay line in
// which every admitted packet waits until the clock passes its delivery
// time. It is not safe for concurrent use: one goroutine admits and
// releases (the receiving port's). Stats may be read from any goroutine.
//
// Delivery times: a packet admitted with tx time t and a drawn delay d is
// due at max(t+d, due time of the packet before it), so without reordering
// the direction is FIFO — like a real wire, a later frame never overtakes
// an earlier one, and a long delay pushes the ones behind it (queueing).
// A packet chosen for reordering is held aside and re-enters the line after
// ReorderDepth later packets (or MaxHoldNs after its own due time), at the
// max of its own due time and the line's last one.
type Impairer struct {
	cfg  ImpairConfig
	pool *PacketPool // where duplicates come from; nil: no duplication
	rng  *rand.Rand

	line       []entry // power of two
	mask       uint64
	head, tail uint64 // line[head&mask] is the next to release; tail is the next free
	last       uint64 // due time of the newest entry, ns

	held     entry
	holding  bool
	heldLeft int // later packets still to overtake the held one
	heldPass int // later packets that did overtake it

	reorderThr, dupThr uint64 // probabilities scaled to 2^64
	remark             [64]remarkRule
	remarking          bool
	nextInject         uint64 // when the next link-local frame is due, ns; 0: not yet started
	injectN            uint64
	meta               classifier.Meta

	delays [impairBatch]float64
	lost   [impairBatch]bool
	one    [1]*Packet
	rec    TruthRecord // passed to cfg.Truth; a local would escape (one allocation per packet)

	st  ImpairStats // owned by the stage goroutine
	pub struct {    // published copy for Stats
		admitted, lost, dup, dupSkipped, reordered, delivered, sum, sq, max, pending atomic.Uint64
		remarked, consumed, injected                                                 atomic.Uint64
	}
}

// remarkRule is Remark indexed by the DSCP it applies to.
type remarkRule struct {
	to  uint8
	thr uint64 // Prob scaled to 2^64; 0: no rule
}

// NewImpairer validates cfg and returns a stage with an empty delay line.
// pool supplies buffers for duplicates (nil disables duplication).
func NewImpairer(cfg ImpairConfig, pool *PacketPool) (*Impairer, error) {
	if cfg.Queue == 0 {
		cfg.Queue = DefaultImpairQueue
	}
	if cfg.Queue < 2 || cfg.Queue > 1<<24 || cfg.Queue&(cfg.Queue-1) != 0 {
		return nil, fmt.Errorf("%w: queue %d is not a power of two in [2, 2^24]", ErrImpairConfig, cfg.Queue)
	}
	if !(cfg.ReorderProb >= 0 && cfg.ReorderProb < 1) {
		return nil, fmt.Errorf("%w: reorder probability %g outside [0, 1)", ErrImpairConfig, cfg.ReorderProb)
	}
	if !(cfg.DupProb >= 0 && cfg.DupProb < 1) {
		return nil, fmt.Errorf("%w: duplication probability %g outside [0, 1)", ErrImpairConfig, cfg.DupProb)
	}
	if cfg.ReorderDepth < 0 || cfg.ReorderDepth > cfg.Queue/2 {
		return nil, fmt.Errorf("%w: reorder depth %d outside [0, queue/2]", ErrImpairConfig, cfg.ReorderDepth)
	}
	if cfg.ReorderDepth == 0 {
		cfg.ReorderDepth = 1
	}
	if cfg.MaxHoldNs == 0 {
		cfg.MaxHoldNs = DefaultMaxHoldNs
	}
	if (cfg.DupProb > 0 || cfg.InjectEveryNs > 0) && pool == nil {
		return nil, fmt.Errorf("%w: duplication and injection need a packet pool", ErrImpairConfig)
	}
	im := &Impairer{
		cfg:        cfg,
		pool:       pool,
		rng:        rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15)),
		line:       make([]entry, cfg.Queue),
		mask:       uint64(cfg.Queue - 1),
		reorderThr: probThreshold(cfg.ReorderProb),
		dupThr:     probThreshold(cfg.DupProb),
	}
	for i := len(cfg.Remark) - 1; i >= 0; i-- { // the first rule for a DSCP wins
		r := cfg.Remark[i]
		if r.From > 63 || r.To > 63 || !(r.Prob >= 0 && r.Prob <= 1) {
			return nil, fmt.Errorf("%w: remark %d->%d with probability %g (DSCP 0-63, probability [0, 1])", ErrImpairConfig, r.From, r.To, r.Prob)
		}
		thr := probThreshold(r.Prob)
		if r.Prob >= 1 {
			thr = math.MaxUint64
		}
		im.remark[r.From] = remarkRule{to: r.To, thr: thr}
		im.remarking = im.remarking || thr != 0
	}
	return im, nil
}

func probThreshold(p float64) uint64 {
	if p <= 0 {
		return 0
	}
	return uint64(p * (1 << 64))
}

// Space is how many packets Admit is guaranteed to take: every admitted
// packet may need two line entries (itself and a duplicate) and one entry
// stays free for a held packet's return.
func (im *Impairer) Space() int {
	free := len(im.line) - int(im.tail-im.head) - 1
	if free < 0 {
		return 0
	}
	return free / 2
}

// Pending is the number of packets in the delay line or held back.
func (im *Impairer) Pending() int {
	n := int(im.tail - im.head)
	if im.holding {
		n++
	}
	return n
}

func (im *Impairer) push(e entry) {
	if e.deliver < im.last {
		e.deliver = im.last
	}
	im.last = e.deliver
	im.line[im.tail&im.mask] = e
	im.tail++
}

func (im *Impairer) id(data []byte) uint64 {
	o := im.cfg.IDOffset
	if o < 0 || o+8 > len(data) {
		return 0
	}
	return binary.LittleEndian.Uint64(data[o:])
}

// Admit takes pkts into the delay line; each packet's TS must hold its tx
// time (ns on the link clock). It takes at most Space packets and returns
// how many it took; the caller keeps the rest. Lost packets are freed to
// their pool here. Admit allocates nothing.
func (im *Impairer) Admit(pkts []*Packet) int {
	n := min(len(pkts), im.Space())
	for off := 0; off < n; off += impairBatch {
		im.admitBatch(pkts[off:min(n, off+impairBatch)])
	}
	im.publish()
	return n
}

func (im *Impairer) admitBatch(pkts []*Packet) {
	k := len(pkts)
	if im.cfg.Delay != nil {
		im.cfg.Delay.Fill(im.rng, im.delays[:k])
	}
	if im.cfg.Loss != nil {
		im.cfg.Loss.Fill(im.rng, im.lost[:k])
	}
	for i, p := range pkts {
		im.st.Admitted++
		if im.cfg.ConsumeLinkLocal {
			if classifier.Parse(p.Data, &im.meta); im.meta.Flags&classifier.FlagLinkLocal != 0 {
				im.st.Consumed++
				if im.cfg.Truth != nil {
					im.rec = TruthRecord{ID: im.id(p.Data), TxNs: p.TS, Seq: im.st.Admitted, Len: uint32(len(p.Data)), Flags: TruthConsumed}
					im.cfg.Truth(p.Data, &im.rec)
				}
				im.one[0] = p
				FreePooled(im.one[:])
				continue
			}
		}
		calm := p.TS < im.cfg.CalmUntilNs
		if im.cfg.Loss != nil && im.lost[i] && !calm {
			im.st.Lost++
			if im.cfg.Truth != nil {
				im.rec = TruthRecord{ID: im.id(p.Data), TxNs: p.TS, Seq: im.st.Admitted, Len: uint32(len(p.Data)), Flags: TruthLost}
				im.cfg.Truth(p.Data, &im.rec)
			}
			im.one[0] = p
			FreePooled(im.one[:])
			continue
		}
		var d uint64
		if im.cfg.Delay != nil {
			d = nanos(im.delays[i])
		}
		e := entry{p: p, tx: p.TS, seq: im.st.Admitted, deliver: p.TS + d}
		if im.remarking && !calm {
			if orig, ok := im.remarkFrame(p.Data); ok {
				e.flags, e.orig = TruthRemarked, orig
				im.st.Remarked++
			}
		}
		if im.reorderThr != 0 && !im.holding && !calm && im.rng.Uint64() < im.reorderThr {
			im.held, im.holding, im.heldLeft, im.heldPass = e, true, im.cfg.ReorderDepth, 0
			continue
		}
		im.push(e)
		if im.dupThr != 0 && !calm && im.rng.Uint64() < im.dupThr {
			im.duplicate(e)
		}
		if im.holding {
			im.heldPass++
			if im.heldLeft--; im.heldLeft == 0 {
				im.releaseHeld()
			}
		}
	}
}

// duplicate puts a copy of e's frame right behind it in the line.
func (im *Impairer) duplicate(e entry) {
	if im.pool.Alloc(im.one[:]) != 1 {
		im.st.DupSkipped++
		return
	}
	c := im.one[0]
	c.Data = c.Data[:copy(c.Data, e.p.Data)]
	c.TS = e.tx
	im.st.Duplicated++
	im.push(entry{p: c, tx: e.tx, seq: e.seq, deliver: e.deliver, flags: TruthDuplicate | e.flags&TruthRemarked, orig: e.orig})
}

// remarkFrame applies the remark rule for the frame's DSCP, if any and if
// drawn, to an untagged IPv4 or IPv6 frame, and returns the DSCP it had.
func (im *Impairer) remarkFrame(b []byte) (uint8, bool) {
	if len(b) < 14+40 {
		return 0, false
	}
	switch binary.BigEndian.Uint16(b[12:]) {
	case 0x0800:
		ihl := int(b[14]&0x0f) * 4
		if b[14]>>4 != 4 || ihl < 20 || len(b) < 14+ihl {
			return 0, false
		}
		d := b[15] >> 2
		r := im.remark[d]
		if r.thr == 0 || im.rng.Uint64() > r.thr {
			return 0, false
		}
		b[15] = r.to<<2 | b[15]&3
		h := b[14 : 14+ihl]
		h[10], h[11] = 0, 0
		binary.BigEndian.PutUint16(h[10:], ipChecksum(h))
		return d, true
	case 0x86DD:
		if b[14]>>4 != 6 {
			return 0, false
		}
		tc := b[14]<<4 | b[15]>>4
		d := tc >> 2
		r := im.remark[d]
		if r.thr == 0 || im.rng.Uint64() > r.thr {
			return 0, false
		}
		tc = r.to<<2 | tc&3
		b[14] = 0x60 | tc>>4
		b[15] = tc<<4 | b[15]&0x0f
		return d, true
	}
	return 0, false
}

// ipChecksum is the RFC 1071 checksum of an IPv4 header whose checksum
// field is zero.
func ipChecksum(h []byte) uint16 {
	var s uint32
	for i := 0; i+1 < len(h); i += 2 {
		s += uint32(h[i])<<8 | uint32(h[i+1])
	}
	for s>>16 != 0 {
		s = s&0xffff + s>>16
	}
	return ^uint16(s)
}

// inject originates one link-local frame (BPDU, LLDP, ARP request in
// turn) due at now, if the pool has a buffer, and returns it.
func (im *Impairer) inject(now uint64) *Packet {
	if im.pool.Alloc(im.one[:]) != 1 {
		return nil
	}
	p := im.one[0]
	im.injectN++
	p.Data = LinkLocalFrame(p.Data[:cap(p.Data)], im.injectN)
	p.TS = now
	return p
}

// LinkLocalFrame writes the i-th of the frames a switch or router on a
// link originates into buf (≥ 64 bytes) and returns it: an STP
// configuration BPDU (i%3 == 0), LLDP (1) or an ARP request (2), distinct
// per i (a counter in the payload).
func LinkLocalFrame(buf []byte, i uint64) []byte {
	b := buf[:64]
	clear(b)
	copy(b[6:], []byte{0x02, 0x53, 0x57, 0, 0, 1}) // the segment's switch
	switch i % 3 {
	case 0:
		copy(b, []byte{0x01, 0x80, 0xC2, 0, 0, 0})
		binary.BigEndian.PutUint16(b[12:], 39) // 802.3 length: LLC + BPDU
		copy(b[14:], []byte{0x42, 0x42, 0x03, 0, 0, 0, 0})
	case 1:
		copy(b, []byte{0x01, 0x80, 0xC2, 0, 0, 0x0E})
		binary.BigEndian.PutUint16(b[12:], 0x88CC)
		copy(b[14:], []byte{0x02, 0x07, 0x04, 0x02, 0x53, 0x57, 0, 0, 1}) // chassis id TLV
	default:
		copy(b, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
		binary.BigEndian.PutUint16(b[12:], 0x0806)
		copy(b[14:], []byte{0, 1, 8, 0, 6, 4, 0, 1}) // Ethernet/IPv4 request
	}
	binary.BigEndian.PutUint64(b[48:], i)
	return b
}

func (im *Impairer) releaseHeld() {
	e := im.held
	if im.heldPass > 0 {
		e.flags |= TruthReordered
	}
	im.holding = false
	im.held = entry{}
	im.push(e)
}

// nanos converts a model sample to integer ns, rounding, clamped to
// [0, 2^62] so tx+delay cannot wrap (NaN and negatives become 0).
func nanos(ns float64) uint64 {
	if !(ns > 0) {
		return 0
	}
	if ns >= 1<<62 {
		return 1 << 62
	}
	return uint64(math.Round(ns))
}

// Release moves the packets due by now (ns, same clock as the tx times)
// into out, in delivery order, sets each one's TS to its delivery time (the
// moment it arrived, like a NIC hardware timestamp), records its truth, and
// returns how many it moved. A held packet whose hold expired re-enters
// the line first.
func (im *Impairer) Release(out []*Packet, now uint64) int {
	if im.holding && now >= im.held.deliver+im.cfg.MaxHoldNs && im.tail-im.head < uint64(len(im.line)) {
		im.releaseHeld()
		im.publish()
	}
	n := 0
	if im.cfg.InjectEveryNs > 0 && now != math.MaxUint64 && len(out) > 0 {
		if im.nextInject == 0 {
			im.nextInject = now + im.cfg.InjectEveryNs
		} else if now >= im.nextInject {
			im.nextInject = now + im.cfg.InjectEveryNs
			if p := im.inject(now); p != nil {
				out[0] = p
				n = 1
				im.st.Injected++
				im.st.Delivered++
				if im.cfg.Truth != nil {
					im.rec = TruthRecord{ID: im.id(p.Data), TxNs: now, Seq: im.st.Admitted, DeliverNs: now, Len: uint32(len(p.Data)), Flags: TruthInjected}
					im.cfg.Truth(p.Data, &im.rec)
				}
			}
		}
	}
	for n < len(out) && im.head != im.tail {
		e := &im.line[im.head&im.mask]
		if e.deliver > now {
			break
		}
		p := e.p
		p.TS = e.deliver
		out[n] = p
		n++
		d := e.deliver - e.tx
		im.st.Delivered++
		im.st.DelaySumNs += d
		im.st.DelaySqSum += float64(d) * float64(d)
		im.st.MaxDelayNs = max(im.st.MaxDelayNs, d)
		if e.flags&TruthReordered != 0 {
			im.st.Reordered++
		}
		if im.cfg.Truth != nil {
			im.rec = TruthRecord{ID: im.id(p.Data), TxNs: e.tx, Seq: e.seq, DeliverNs: e.deliver, Len: uint32(len(p.Data)), Flags: e.flags, OrigDSCP: e.orig}
			im.cfg.Truth(p.Data, &im.rec)
		}
		*e = entry{}
		im.head++
	}
	if n > 0 {
		im.publish() // an empty poll changes nothing: skip the atomic stores
	}
	return n
}

// Flush releases everything regardless of time (a held packet too), for a
// link being shut down: the truth of every admitted packet is then
// recorded. It returns how many it moved into out; call until 0.
func (im *Impairer) Flush(out []*Packet) int {
	if im.holding && im.tail-im.head < uint64(len(im.line)) {
		im.releaseHeld()
	}
	return im.Release(out, math.MaxUint64)
}

// NextDue is the due time of the next packet in the line, ns, and false
// when the line is empty (a held packet is not counted).
func (im *Impairer) NextDue() (uint64, bool) {
	if im.head == im.tail {
		return 0, false
	}
	return im.line[im.head&im.mask].deliver, true
}

func (im *Impairer) publish() {
	s := &im.st
	im.pub.admitted.Store(s.Admitted)
	im.pub.lost.Store(s.Lost)
	im.pub.dup.Store(s.Duplicated)
	im.pub.dupSkipped.Store(s.DupSkipped)
	im.pub.reordered.Store(s.Reordered)
	im.pub.delivered.Store(s.Delivered)
	im.pub.sum.Store(s.DelaySumNs)
	im.pub.sq.Store(math.Float64bits(s.DelaySqSum))
	im.pub.max.Store(s.MaxDelayNs)
	im.pub.pending.Store(uint64(im.Pending()))
	im.pub.remarked.Store(s.Remarked)
	im.pub.consumed.Store(s.Consumed)
	im.pub.injected.Store(s.Injected)
}

// Stats returns the counters as of the last Admit or Release. Each field
// is exact at that moment; fields are not read as one atomic snapshot, so
// while the link runs they may come from two neighbouring bursts.
func (im *Impairer) Stats() ImpairStats {
	return ImpairStats{
		Admitted:   im.pub.admitted.Load(),
		Lost:       im.pub.lost.Load(),
		Duplicated: im.pub.dup.Load(),
		DupSkipped: im.pub.dupSkipped.Load(),
		Reordered:  im.pub.reordered.Load(),
		Delivered:  im.pub.delivered.Load(),
		DelaySumNs: im.pub.sum.Load(),
		DelaySqSum: math.Float64frombits(im.pub.sq.Load()),
		MaxDelayNs: im.pub.max.Load(),
		PendingNow: im.pub.pending.Load(),
		Remarked:   im.pub.remarked.Load(),
		Consumed:   im.pub.consumed.Load(),
		Injected:   im.pub.injected.Load(),
	}
}
