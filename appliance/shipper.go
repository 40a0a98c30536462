package appliance

import (
	"math"
	"sync/atomic"
	"time"

	"github.com/ldafwd/ldafwd/control"
	"github.com/ldafwd/ldafwd/dataplane"
	"github.com/ldafwd/ldafwd/ring"
)

// shipper is the sending half of the control side: it encodes each of the
// sender lanes' idle copies within the control budget (budget.go), cuts
// it into control frames ControlCopies times, spaces the copies
// (dueCopies) and hands every frame to the inject ring. The exchanges'
// requests and replies leave through it too (queue), and their bytes
// are paid from later shipments' budgets (paid, debt). What it needs
// from the other parts (the clock part's content, whether this end's
// clock stepped, the interval's budget) the coordinator hands it with
// each copy (shipIn).
type shipper struct {
	cfg    *Config
	sender *control.Sender
	inject *ring.SPSC[[]byte]
	bufs   [][]byte
	// pending: frames waiting for room in the inject ring, in order.
	pending [][]byte
	// replies: the answerer's due reply frames, which go only when no
	// pending frame waits and the ring holds few frames (handOver).
	replies  []replyFrame
	replyBuf [][]byte
	// handed counts the frames ever handed to the inject ring, and
	// shipLast is what it was when the last pending frame went: the lane
	// has taken every pending frame off the ring once handed minus the
	// ring's count reaches it (dueCopies).
	handed, shipLast uint64
	// expired counts the reply frames dropped unsent (replyFrame.expires);
	// read by RepairCounters from any goroutine.
	expired atomic.Uint64
	// later holds the second and further copies of the shipped intervals'
	// frames until their time (copySpacing apart): a burst of loss that
	// takes one copy of a fragment then rarely takes the others.
	later   []laterFrame
	first   bool   // the next shipped sender interval is the session's first
	shipped uint64 // last sender interval handed to the inject ring
	// exchanged: bytes of requests and replies this appliance sent since
	// it last shipped an interval; the next shipment takes them off its
	// control budget, carrying what it cannot pay in debt.
	exchanged, debt int
}

func newShipper(cfg *Config, sender *control.Sender, inject *ring.SPSC[[]byte]) shipper {
	return shipper{cfg: cfg, sender: sender, inject: inject, first: true}
}

// shipIn is what the coordinator hands a shipment beside the sender's
// copy: what the other parts know of it.
type shipIn struct {
	budget  uint64    // the interval's control budget, all copies (budgetFor); 0: none
	stepped bool      // this end's clock stepped within the copy's intervals (clockstep.go)
	clock   clockMean // the clock part's content (clock.go, fec.go)
}

// queue appends a frame to those waiting for the inject ring.
func (s *shipper) queue(f []byte) { s.pending = append(s.pending, f) }

// replyFrame is a reply fragment due to leave and when it is no longer
// worth sending (ns).
type replyFrame struct {
	frame   []byte
	expires uint64
}

// replyRingDepth is the most frames the inject ring holds when a reply
// frame is handed to it: replies wait in the shipper behind the
// shipments, and a shipment made while they flow waits behind at most
// this many of them in the ring. The lane injects a frame per gap of
// the data's (pacing.go), at most a few a poll: what the control traffic
// can take is bounded, and the requests for what is lost grow with the
// loss. Queued ahead of the shipments, replies would delay the LDAs past
// the receiver's wait, which then asks for more: under a congested
// segment's loss no interval would be measured again.
const replyRingDepth = 16

// queueReply appends a due reply frame to those waiting behind the
// pending frames.
func (s *shipper) queueReply(f replyFrame) { s.replies = append(s.replies, f) }

// paid counts the bytes of a request or reply sent, to be paid from the
// next shipment's budget.
func (s *shipper) paid(n int) { s.exchanged += n }

// idle says whether nothing waits to be sent: no frame pending, no reply,
// no later copy.
func (s *shipper) idle() bool { return len(s.pending) == 0 && len(s.replies) == 0 && len(s.later) == 0 }

// handOver moves the pending frames into the inject ring, as many as it
// takes, numbering each as it goes (control.SenderConfig.NumberAtSend):
// the frames then leave in the order of their numbers whatever order
// they were built in (paced replies, spaced copies), and the receiver's
// replay window only has to span the ring and the End markers the lanes
// send past it, not every frame built and held back meanwhile.
//
// The reply frames go after every pending frame, and only while the ring
// holds fewer than replyRingDepth frames; one queued longer than its
// expiry is dropped and counted (every request it answers has been given
// up by then).
func (s *shipper) handOver(nowNs uint64) {
	if len(s.pending) > 0 {
		n := s.give(s.pending, s.inject.FreeCount())
		clear(s.pending[:n])
		s.pending = s.pending[n:]
		s.shipLast = s.handed
		if len(s.pending) > 0 {
			return
		}
	}
	drop := 0
	for drop < len(s.replies) && s.replies[drop].expires <= nowNs {
		drop++
	}
	if drop > 0 {
		s.expired.Add(uint64(drop))
		clear(s.replies[:drop])
		s.replies = s.replies[drop:]
	}
	if room := replyRingDepth - s.inject.Count(); room > 0 && len(s.replies) > 0 {
		s.replyBuf = s.replyBuf[:0]
		for _, r := range s.replies[:min(room, len(s.replies))] {
			s.replyBuf = append(s.replyBuf, r.frame)
		}
		n := s.give(s.replyBuf, room)
		clear(s.replyBuf)
		clear(s.replies[:n])
		s.replies = s.replies[n:]
	}
}

// give numbers the first frames of fs, at most room (the ring's free
// slots or fewer), and enqueues them; it returns how many went.
func (s *shipper) give(fs [][]byte, room int) int {
	n := min(len(fs), room)
	for _, f := range fs[:n] {
		if err := s.sender.Number(f); err != nil {
			s.cfg.Log.Error().Err(err).Msg("numbering a control frame") // we built it: cannot happen
		}
	}
	// Only this goroutine enqueues: the ring's room can only have grown
	// since it was read, so all n go (a frame numbered and not sent
	// would only read as one lost).
	n = s.inject.EnqueueBurst(fs[:n])
	s.handed += uint64(n)
	return n
}

// shipment is one sender copy on its way: the parts encoded so far and
// what one copy of them may still spend.
type shipment struct {
	s     *shipper
	set   *dataplane.SynSet
	flags uint64
	stamp uint64 // the copy's mean timestamp error (payloadHeader.StampErrNs)
	// budget is the interval's, all copies (0: none); copies is
	// ControlCopies; end is one End marker's bytes with this copy's class
	// counts, and extraEnds the End markers beyond copies.
	budget            uint64
	copies, end       int
	extraEnds         int
	perCopy           int // what one copy of everything but the extra End markers may take
	owed              int // the debt one copy pays (per copy)
	exchanged         int // exchange bytes this shipment pays for (for the log)
	parts             []control.Part
	hdrLens           []int
	got               shipped
	left              room // what one copy may still spend after the LDA
	ldsReserve        int  // wire bytes kept for the LDS header
	total, frameCount int  // bytes and frames of every copy (settle)
}

// send encodes one sender copy within the control budget and queues its
// control frames, ControlCopies times. It returns the parts shipped (nil
// when they could not be encoded), for the LDA part exchange to keep.
func (s *shipper) send(set *dataplane.SynSet, nowNs int64, in shipIn) []control.Part {
	sh := s.plan(set, in)
	if !sh.encodeLDAs() {
		return nil
	}
	// The clock part after the LDAs: growLDA finds those first.
	ch := sh.hdr(0, sh.flags)
	sh.add(int(clockPart.MEC), clockPart.Kind, appendClockPart(ch, in.clock), len(ch))
	sh.leftAfterLDA()
	sh.encodeRDAs()
	sh.encodeSamples()
	sh.ldsPaysDebt()
	if !sh.encodeLDS() {
		return nil
	}
	if s.cfg.AdaptLDA && sh.budget > 0 {
		s.growLDA(set.LDA, sh.parts, sh.hdrLens, sh.perCopy-sh.owed, sh.got.ldaRows)
	}
	sh.settle()
	sh.log()
	s.frame(set.LastK, nowNs, sh.copies, sh.parts)
	return sh.parts
}

// plan starts a shipment: the payload flags, the budget per copy, and
// the exchanges' debt it pays.
func (s *shipper) plan(set *dataplane.SynSet, in shipIn) *shipment {
	sh := &shipment{s: s, set: set, budget: in.budget, copies: s.cfg.ControlCopies}
	if set.Merged {
		sh.flags |= payloadMerged
	}
	if s.first {
		sh.flags |= payloadPartial
		s.first = false
	}
	if in.stepped {
		sh.flags |= payloadClockStep
	}
	if set.Frames > 0 {
		sh.stamp = (set.StampErrNs + set.Frames - 1) / set.Frames
	}
	// The End marker as the lane sent it, with this copy's class counts
	// (IntervalBytes estimates them); it goes endCopies times, the rest
	// copies times: what one copy of the rest may take is the budget less
	// the End markers beyond those copies.
	counts := make([]uint64, len(set.LDA))
	for m, l := range set.LDA {
		counts[m] = l.Count()
	}
	sh.end = s.sender.EndBytesWith(counts)
	sh.extraEnds = endCopies(sh.copies) - sh.copies
	sh.perCopy = (int(sh.budget) - sh.extraEnds*sh.end) / sh.copies
	sh.parts = make([]control.Part, 0, 2*len(set.LDA)+1)
	sh.hdrLens = make([]int, 0, cap(sh.parts))
	// The exchanges this appliance sent since the last shipment
	// (timestamp and cells requests and replies, repair.go and fetch.go)
	// are paid from what the shipments leave unspent: while a debt is
	// owed the LDA does not grow into what the others leave, and once more
	// than one budget is owed the LDS's part pays too (it degrades
	// gracefully; the RDA's decode, all or nothing, keeps its share). The
	// LDA's and the RDA's shares stay as they are: the budget splits
	// between them and the LDS at power-of-two folds, so a share cut by a
	// few hundred bytes can hand the RDA a fold that leaves the LDS
	// nothing. Exchanges happen only under loss; up to maxDebtIntervals
	// budgets are carried.
	sh.exchanged = s.exchanged
	s.exchanged = 0
	if sh.budget > 0 {
		s.debt = min(s.debt+sh.exchanged, maxDebtIntervals*int(sh.budget))
		sh.owed = (s.debt + sh.copies - 1) / sh.copies
	}
	return sh
}

// hdr is a payload header of this shipment.
func (sh *shipment) hdr(frames, fl uint64) []byte {
	return appendPayload(nil, payloadHeader{StampErrNs: sh.stamp, Frames: frames, Flags: fl, Budget: sh.budget})
}

// add appends a part with the length of its payload header.
func (sh *shipment) add(m int, kind control.Kind, p []byte, hdrLen int) {
	sh.parts = append(sh.parts, control.Part{PartKey: control.PartKey{MEC: uint16(m), Kind: kind}, Payload: p})
	sh.hdrLens = append(sh.hdrLens, hdrLen)
}

// fail logs a part that could not be encoded: the interval is not shipped.
func (sh *shipment) fail(what string, err error) {
	sh.s.cfg.Log.Error().Err(err).Uint64("interval", sh.set.LastK).Msg("encoding the sender " + what)
}

// encodeLDAs encodes every class's LDA, folded to its share of the
// budget with AdaptLDA; false when one does not encode.
func (sh *shipment) encodeLDAs() bool {
	s, set := sh.s, sh.set
	ldaLeft := 0 // payload bytes the LDAs of the classes still to encode may take; 0: no limit
	if sh.budget > 0 && len(set.LDA) > 0 {
		perCopy := float64(sh.perCopy - s.sender.IntervalBytes(1))
		fs := float64(s.sender.FragmentSize())
		// Fragment headers cost control.Overhead per FragmentSize bytes.
		ldaLeft = max(1, int(ldaBudgetShare*perCopy*fs/(fs+float64(s.sender.FragmentOverhead()))))
	}
	// The classes share the LDA's part of the budget by need: the
	// quietest first, each taking at most an even split of what is still
	// unspent, so what a class with few packets leaves goes to the busy
	// ones (an even split per class would cut the busiest class's LDA to
	// a fraction of the share as soon as a few rules are configured).
	sh.got.ldaRows = make([]string, len(set.LDA))
	ldaParts := make([][]byte, len(set.LDA))
	ldaHdr := make([]int, len(set.LDA))
	for i, m := range byPackets(len(set.LDA), func(m int) uint64 { return set.LDA[m].Count() }) {
		l := set.LDA[m]
		p := sh.hdr(l.Count(), sh.flags)
		n := len(p)
		if s.cfg.AdaptLDA {
			limit := 0
			if ldaLeft > 0 {
				limit = max(1, ldaLeft/(len(set.LDA)-i)-n)
			}
			l = s.adaptLDA(l, limit)
		}
		sh.got.ldaRows[m] = l.Config().Shape()
		p, err := l.AppendCompact(p, s.cfg.Bounds)
		if err != nil {
			sh.fail("LDA", err)
			return false
		}
		ldaParts[m], ldaHdr[m] = p, n
		if ldaLeft > 0 {
			ldaLeft = max(1, ldaLeft-len(p))
		}
	}
	for m := range set.LDA {
		sh.add(m, control.KindLDA, ldaParts[m], ldaHdr[m])
	}
	return true
}

// leftAfterLDA sets what one copy may still spend after the LDA, the
// clock part, the Hello and the End marker, less the room the LDS's
// header needs.
func (sh *shipment) leftAfterLDA() {
	s := sh.s
	sh.left = noLimit
	if sh.budget > 0 {
		sizes := make([]int, len(sh.parts))
		for i := range sh.parts {
			sizes[i] = len(sh.parts[i].Payload)
		}
		// What the LDA's share paid is spent, whether or not the LDA
		// would have filled it.
		sh.left = within(sh.perCopy - s.sender.IntervalBytes(1, sizes...))
	}
	// The LDS part goes in any case, if only as a header saying it was
	// left out: keep room for that much.
	if sh.set.LDS != nil && sh.left.limited {
		sh.ldsReserve = s.wireOf(len(sh.hdr(sh.set.LDS.Count(), sh.flags|payloadOmitted)))
		sh.left = sh.left.less(sh.ldsReserve)
	}
}

// encodeRDAs encodes every class's RDA, each folded to its share of
// what is left or left out.
func (sh *shipment) encodeRDAs() {
	s, set := sh.s, sh.set
	if set.RDA == nil {
		return
	}
	// The RDA goes before the LDS: its mean stands losses, and
	// sized to the traffic it rarely needs all of its share.
	// By need, as the LDAs: the quietest class first, each at most
	// an even split of what is left.
	rdaParts := make([][]byte, len(set.RDA))
	for i, m := range byPackets(len(set.RDA), func(m int) uint64 { return uint64(set.RDA[m].Count()) }) {
		r := set.RDA[m]
		share := sh.left.split(len(set.RDA) - i)
		if s.cfg.AdaptRDA {
			r = s.adaptRDA(r)
		}
		p, cells := s.encodeRDA(r, sh.hdr(uint64(r.Count()), sh.flags), share)
		if cells == 0 {
			p = sh.hdr(uint64(r.Count()), sh.flags|payloadOmitted)
			sh.got.omitted = append(sh.got.omitted, "rda/"+s.cfg.Classifier.Names()[m])
		}
		sh.got.rdaCells = max(sh.got.rdaCells, cells)
		rdaParts[m] = p
		sh.left = sh.left.less(s.wireOf(len(p)))
	}
	for m, r := range set.RDA {
		sh.add(m, control.KindRDA, rdaParts[m], len(sh.hdr(uint64(r.Count()), sh.flags)))
	}
}

// encodeSamples encodes every class's sample after the RDA, before the
// LDS: the sample's own share of the budget, cut to a deeper level to
// fit (sample.go).
func (sh *shipment) encodeSamples() {
	if sh.set.Sample == nil {
		return
	}
	smp, smpHdr, spent := sh.s.sampleParts(sh.set, sh.hdr, sh.flags, sh.left, sh.perCopy, &sh.got.omitted)
	for m := range smp {
		sh.add(m, control.KindSample, smp[m], smpHdr[m])
	}
	sh.left = sh.left.less(spent)
}

// ldsPaysDebt takes what more than one budget owed off the LDS's part,
// down to ldsDebtFloor of it: the intervals that owe are the lossy ones,
// where the per-flow view matters most, and a sparse copy carries the
// largest flows in a few KB.
func (sh *shipment) ldsPaysDebt() {
	if sh.s.debt > int(sh.budget) && sh.left.limited {
		keep := int(ldsDebtFloor * float64(max(sh.left.bytes, 0)))
		sh.left = sh.left.less(min(sh.owed, max(sh.left.bytes-keep, 0)))
	}
}

// encodeLDS encodes the LDS within what is left, or its header saying it
// was left out; false when it does not encode.
func (sh *shipment) encodeLDS() bool {
	s, set := sh.s, sh.set
	if set.LDS == nil {
		return true
	}
	h := sh.hdr(set.LDS.Count(), sh.flags)
	sh.left = sh.left.less(-sh.ldsReserve) // the header's room goes back to it
	l := set.LDS
	if s.cfg.AdaptLDS {
		l = s.adaptLDS(l)
	}
	p, rows, cols, named, err := s.encodeLDS(l, h, sh.left)
	if err != nil {
		sh.fail("LDS", err)
		return false
	}
	if rows == 0 {
		p = sh.hdr(set.LDS.Count(), sh.flags|payloadOmitted)
		sh.got.omitted = append(sh.got.omitted, "lds")
	}
	sh.got.ldsRows, sh.got.ldsCols, sh.got.named = rows, cols, named
	sh.add(0, control.KindLDS, p, len(h))
	return true
}

// settle counts what every copy costs into the payloads (fixed width,
// so the sizes do not change) and pays the debt from what the budget
// left unspent.
func (sh *shipment) settle() {
	s := sh.s
	sizes := make([]int, len(sh.parts))
	frames := 2 // Hello, End marker
	for i := range sh.parts {
		sizes[i] = len(sh.parts[i].Payload)
		d, p := s.sender.PartFrames(sizes[i])
		frames += d + p
	}
	// End markers go endCopies times, the rest copies times.
	sh.total = sh.copies*(s.sender.IntervalBytes(1, sizes...)-s.sender.EndBytes()+sh.end) + sh.extraEnds*sh.end
	sh.frameCount = sh.copies*frames + sh.extraEnds
	if sh.budget > 0 {
		s.debt = max(0, s.debt-max(0, int(sh.budget)-sh.total))
	}
	for i := range sh.parts {
		patchPayloadCounts(sh.parts[i].Payload, sh.hdrLens[i], uint32(min(sh.total, math.MaxUint32)), uint32(sh.frameCount))
	}
}

// log says, at debug level, what the budget cut or left out.
func (sh *shipment) log() {
	s, got := sh.s, &sh.got
	if len(got.omitted) > 0 || sh.budget > 0 && uint64(sh.total) > sh.budget {
		s.cfg.Log.Debug().Uint64("interval", sh.set.LastK).Uint64("budget", sh.budget).Int("control_bytes", sh.total).Float64("parity_loss", s.sender.Loss()).
			Strs("lda_rows", got.ldaRows).Int("rda_cells", got.rdaCells).Int("lds_rows", got.ldsRows).Int("lds_cols", got.ldsCols).Int("lds_named", got.named).
			Strs("left_out", got.omitted).Int("exchanged", sh.exchanged).Int("debt", s.debt).Msg("control budget")
	}
}

// frame cuts interval k's parts into control frames, copies times: the
// first copy is pending at once, the others wait for their time (later).
//
// ControlCopies sends the whole interval (Hello and fragments) more
// than once, each copy with fresh sequence numbers: the receiver keeps
// the first of every fragment and counts the rest as duplicates, so an
// interval fails only if every copy of some fragment is lost.
// Every copy of the earlier intervals goes before this one's first
// frame, due or not: the receiver takes an interval complete after it
// as proof that what the earlier ones still lack was lost
// (control.IntervalBundle.Missing). Only a control side a whole
// interval behind has copies left here.
func (s *shipper) frame(k uint64, nowNs int64, copies int, parts []control.Part) {
	for _, l := range s.later {
		s.pending = append(s.pending, l.frame)
	}
	clear(s.later)
	s.later = s.later[:0]
	for copyN := 0; copyN < copies; copyN++ {
		frames, err := s.sender.AppendInterval(s.bufs, k, nowNs, parts)
		if err != nil {
			s.cfg.Log.Error().Err(err).Uint64("interval", k).Msg("building control frames")
			return
		}
		s.bufs = frames[:cap(frames)]
		for _, f := range frames {
			// The lane copies each frame into a port buffer when it sends
			// it; until then the frame must not change, so it gets its own.
			f = append([]byte(nil), f...)
			if copyN == 0 {
				s.pending = append(s.pending, f)
			} else {
				s.later = append(s.later, laterFrame{copyN: copyN, frame: f})
			}
		}
	}
	s.shipped = k
}

// laterFrame is a control frame copy to send at its time (ns; 0 until
// the first copy has been handed to the lane, see dueCopies).
type laterFrame struct {
	at    uint64
	copyN int
	frame []byte
}

// copySpacing is how far apart the copies of an interval's frames leave
// (--control-copies): sent back to back, one burst of loss takes every
// copy of a fragment (a switch's buffer overflowing drops a run of
// frames); 10 ms apart, or a twentieth of the interval if shorter, the
// copies fall in different bursts. The receiver waits for fragments far
// longer (its pairing timeout).
func (s *shipper) copySpacing() time.Duration {
	return min(10*time.Millisecond, s.cfg.Interval/20)
}

// dueCopies moves the later copies whose time has come (in the order
// they were made) to the frames waiting for the inject ring. A copy's
// time counts from when the lane took every frame before it off the
// inject ring, not from when it was made: the first copy may wait behind
// other frames (exchanges under loss), and copies that waited together
// would leave together.
func (s *shipper) dueCopies(nowNs uint64) {
	if len(s.pending) == 0 && s.handed-uint64(s.inject.Count()) >= s.shipLast {
		for i := range s.later {
			if s.later[i].at == 0 {
				s.later[i].at = nowNs + uint64(s.later[i].copyN)*uint64(s.copySpacing())
			}
		}
	}
	n := 0
	for n < len(s.later) && s.later[n].at != 0 && s.later[n].at <= nowNs {
		s.pending = append(s.pending, s.later[n].frame)
		n++
	}
	if n > 0 {
		clear(s.later[:n])
		s.later = s.later[n:]
	}
}
