package synopsis

import (
	"fmt"

	"github.com/ldafwd/ldafwd/report"
)

// LDSPacket is one packet as an LDS placed it: what it takes to take the
// packet out again (Remove). The sender of an appliance keeps it beside the
// timestamp its RDA cache holds; offline analysis has it from the capture.
type LDSPacket struct {
	FlowHash, Hash, Ts uint64
	// ErrNs is the stamp uncertainty Add was given, 0 when the caller no
	// longer knows it: the packet's share of its cells' stamp error then
	// stays, which only widens the flows' StampErrNs, never narrows it.
	ErrNs  uint64
	Weight uint32 // 0 means 1, as in Add
}

// Remove takes one packet out of the sketch: the exact inverse of Add with
// the same arguments (cell sums and counts wrap back, the digest XORs the
// identity out, the stamp error comes off). The flow table and Packets are left alone: they count
// what was offered. A packet that was never added leaves cells that no
// longer match the other side's, which the estimator then refuses, so a
// wrong repair cannot pass for a right one. On a folded copy (FoldCols)
// the packet's recorded cell is found in the recorded columns and taken
// out of the folded cell that merged it.
func (l *LDS) Remove(p LDSPacket) {
	l.SettleFlows()
	w := uint64(p.Weight)
	if w == 0 {
		w = 1
	}
	wts, werr := w*p.Ts, w*p.ErrNs
	fx := Remix(p.FlowHash, SaltLDSRow)
	px0 := Remix(p.Hash, SaltLDSCell)
	for r := 0; r < l.rows && r < maxLDSRows; r++ {
		px := ldsRowHash(px0, r)
		if px>>32 >= l.thr[r] {
			continue
		}
		recorded := l.cols << l.fold
		c := ldsFastRange(ldsRowHash(fx, r)>>32, recorded) + ldsFastRange(px&0xffffffff, l.k)
		if c >= recorded {
			c -= recorded
		}
		cell := &l.cells[uint64(r)*l.cols+(c>>l.fold)]
		cell.sum -= wts
		cell.count -= w
		cell.digest ^= p.Hash
		// Saturating: an ErrNs larger than the one added cannot make the
		// cells' stamp error wrap to a huge figure (or to a small one).
		cell.errSum -= min(cell.errSum, werr)
	}
}

// LDSRepair is the set difference of an interval as far as it is known:
// the packets only the sender recorded (Lost: lost in the segment) and
// those only the receiver recorded (Extra), each as its own end placed it.
// Complete says the lists are the whole difference (the RDA decoded
// completely and every identity was placed).
type LDSRepair struct {
	Lost, Extra []LDSPacket
	Complete    bool
}

// EstimateLDSFlowsRepaired is EstimateLDSFlows after taking the repair's
// lost packets out of a copy of the sender's sketch and its extra packets
// out of a copy of the receiver's. A cell that lost packets then holds, at
// both ends, exactly the packets that crossed the segment, and its delay
// sum is theirs: a lossy flow's cells become usable again and its mean is
// exact up to collisions, as without loss. (The LDS paper's cells are
// unusable after any loss, Sec. 2.3.2; this is the RDA's repair, Sec.
// VIII-A of its paper, applied to the LDS.) A packet the repair does not
// list still spoils its cells as before — the counts or digests differ —
// so a partial repair only makes fewer cells usable, never a wrong cell
// usable; undecoded extras still invalidate the sketch.
//
// Sizes and losses (Sent, Received, Lost, CountsExact) come from the
// sketches as recorded, except that the listed extras are not the flow's
// packets: with exact counts they come off the flow's received packets
// (the receiver's table counted them), and without, Received and Lost are
// the count-min estimates against the receiver's sketch without them. A
// listed extra is a duplicate, an injected packet or a neighbouring
// interval's, never the packet the flow lost: counted as received, it
// would cancel that loss in the flow's cells and the repaired line would
// claim lost 0, its cells now clean. Where the receiver's table still
// holds more of the flow than its sender sent, extras the repair did not
// list are left in it: the loss is not claimed (Extras).
// FlowEstimate.RepairedLost and RepairedExtra count the flow's packets
// the repair took out. Neither LDS is changed.
func EstimateLDSFlowsRepaired(sender, receiver *LDS, rep LDSRepair) ([]FlowEstimate, error) {
	plain, err := EstimateLDSFlows(sender, receiver)
	if err != nil || len(rep.Lost)+len(rep.Extra) == 0 {
		return plain, err
	}
	rs, rr := sender.Clone(), receiver.Clone()
	perFlow := map[uint64][2]int{}
	for _, p := range rep.Lost {
		rs.Remove(p)
		c := perFlow[p.FlowHash]
		c[0]++
		perFlow[p.FlowHash] = c
	}
	for _, p := range rep.Extra {
		rr.Remove(p)
		c := perFlow[p.FlowHash]
		c[1]++
		perFlow[p.FlowHash] = c
	}
	// The receiver's flow table counted the extras taken out: they no
	// longer count as the flow's packets in its cells.
	fixed, err := estimateLDSFlows(rs, rr, func(h uint64) uint64 { return uint64(perFlow[h][1]) })
	if err != nil {
		return nil, err
	}
	if len(fixed) != len(plain) {
		return nil, fmt.Errorf("%w: repaired LDS lists %d flows, the recorded one %d", ErrBadConfig, len(fixed), len(plain))
	}
	// The count-min sizes and losses: the sender's sketch as recorded
	// against the receiver's without the listed extras.
	counted := plain
	if len(rep.Extra) > 0 {
		if counted, err = estimateLDSFlows(sender, rr, func(h uint64) uint64 { return uint64(perFlow[h][1]) }); err != nil {
			return nil, err
		}
		if len(counted) != len(plain) {
			return nil, fmt.Errorf("%w: repaired LDS lists %d flows, the recorded one %d", ErrBadConfig, len(counted), len(plain))
		}
	}
	for i := range plain {
		p, f := &plain[i], &fixed[i]
		if f.Sent == 0 && !f.Valid && p.Sent > 0 {
			// The repair took out every packet the flow sent: all lost.
			f.Reason, f.Code = "every packet of the flow lost: no delay to measure", report.AllLost
		}
		q := &counted[i]
		f.Sent, f.Received, f.Lost, f.CountsExact = q.Sent, q.Received, q.Lost, p.CountsExact
		c := perFlow[f.FlowHash]
		f.RepairedLost, f.RepairedExtra = c[0], c[1]
		if !f.CountsExact {
			continue
		}
		f.Sent = p.Sent
		if left := f.HeldReceived - min(f.HeldReceived, uint64(c[1])); left <= f.Sent && uint64(c[1]) <= f.HeldReceived {
			// The listed extras are not the flow's traffic: the
			// receiver's table counted them as received.
			f.Received, f.Lost = left, f.Sent-left
			continue
		}
		f.Received, f.Lost = p.Received, p.Lost
		why := fmt.Sprintf("the receiver's flow table counted %d packets of the flow, its sender %d, and the repair listed %d of them as extra: others it did not list may hide this flow's losses, so its loss cannot be counted", f.HeldReceived, f.Sent, c[1])
		switch {
		case f.Valid:
			f.Valid, f.Code, f.Reason = false, report.Extras, why
		case f.Code.Scope()&report.ScopeLoss == 0:
			// Invalid for its delay alone, the loss still claimed: one
			// code must now leave both unknown.
			f.Code, f.Reason = report.ExtrasUnchecked, why+"; "+f.Reason
		}
	}
	return fixed, nil
}

// SizeLDSConfig sizes an LDS for an interval in which the sender saw
// senderFlows flows and the receiver receiverFlows (offline analysis, where
// the whole interval is known before the sketch is built; the receiver
// takes the sender's config, so both ends agree): DimensionLDS for the
// sender's flows with k = 1 and every row sampling every packet, and a
// flow table that holds every flow of both ends from its first packet, so
// counts are exact. k = 1 suits a repaired sketch: a loss no longer spoils
// a cell, so the k-cell virtual LDA that confines a loss to one cell of a
// flow only spreads its packets thinner.
func SizeLDSConfig(senderFlows, receiverFlows int) (LDSConfig, error) {
	if senderFlows < 0 || receiverFlows < 0 {
		return LDSConfig{}, fmt.Errorf("%w: SizeLDSConfig(%d, %d)", ErrBadConfig, senderFlows, receiverFlows)
	}
	return DimensionLDS(LDSDimensioning{ExpectedFlows: max(senderFlows, 1), CellsPerFlow: 1,
		MaxFlows: min(max(senderFlows+receiverFlows, 16), MaxFlowTable)})
}
