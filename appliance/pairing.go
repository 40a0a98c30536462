package appliance

import (
	"fmt"

	"github.com/ldafwd/ldafwd/analyze"
	"github.com/ldafwd/ldafwd/control"
	"github.com/ldafwd/ldafwd/dataplane"
	"github.com/ldafwd/ldafwd/report"
	"github.com/ldafwd/ldafwd/synopsis"
)

// pairer estimates an interval's lines from the sender's bundle and the
// receiver's copy: it builds each line and what the other parts need of
// it, and holds nothing between intervals. What the lines become after
// that (held in the ledger, repaired, checked against the neighbours) is
// the coordinator's to arrange, so the estimators stay pure functions of
// the two halves and the configuration.
type pairer struct {
	cfg  *Config
	dir  string // the direction this end receives (DirectionName)
	desc string // describeConfig: on every line
	// rx is the receiver lane's port: its stamp source names the
	// receiver's share of a line's timestamp error.
	rx dataplane.Port
}

// newPairer is a's pairer. An appliance without its lanes (a bare one
// some parts' tests build) has no port to name the stamps' source.
func newPairer(a *Appliance) pairer {
	p := pairer{cfg: &a.cfg, dir: DirectionName(a.recvDir), desc: a.desc}
	if a.lanes[1] != nil {
		p.rx = a.lanes[1].Config().Rx
	}
	return p
}

// line is an empty line of interval k for class mec.
func (p *pairer) line(k uint64, startNs, endNs int64, mec int) *report.Interval {
	return &report.Interval{Interval: int64(k), StartNs: startNs, EndNs: endNs, Direction: p.dir,
		MEC: p.cfg.Classifier.Names()[mec], Synopsis: "lda", Clock: p.cfg.ClockName, Conf: p.cfg.Conf, Config: p.desc}
}

// invalidLine is r reported invalid for reason with the receiver's count
// alone, as a line held while its interval pairs.
func invalidLine(r *report.Interval, received uint64, reason report.Cause) heldLine {
	r.Received = received
	r.Invalidate(reason.Code, reason.Why)
	return heldLine{r: r}
}

// counts builds the lines of failed interval f measured by the End
// markers' per-class counts alone (pairCounts), one per class, with why
// the synopses are missing; rc is exactly f's copy (countsUsable).
func (p *pairer) counts(f *control.IntervalFailure, rc *rcopy, why report.Cause) []heldLine {
	lines := make([]heldLine, 0, len(rc.lda))
	for m := range rc.lda {
		r := p.line(f.Interval, f.StartNs, f.EndNs, m)
		if !countLine(r, f.ClassFrames, rc, m, why) {
			// countsUsable held for the copy: not reached.
			lines = append(lines, invalidLine(r, rc.lda[m].Count(), why))
			continue
		}
		lines = append(lines, heldLine{r: r, mec: m, counts: true})
	}
	return lines
}

// ldaPaired is pairer.lda's outcome: class m's LDA line (measured by the
// End markers' counts where the sender's LDA is missing: countLine) and,
// where it was estimated, the sender's compact LDA, which the crossing
// checks keep as evidence until the next interval pairs and the
// microbursts' loss times read.
type ldaPaired struct {
	line heldLine
	snd  *synopsis.CompactLDA // nil: not estimated
	// rda: the class's RDA line is paired too. Not where the sender's LDA
	// did not decode or match: its RDA, from the same copy, would not
	// either. A partial bundle may carry the class's RDA without its LDA:
	// the RDA line stands on its own then.
	rda bool
}

// lda estimates class m's LDA line and adds the delays its buckets
// showed to seen (confidenceRange). It folds rc's LDA of the class to the
// shape the sender shipped: it stays folded, and the crossing checks fold
// both intervals to a common shape.
func (p *pairer) lda(b *control.IntervalBundle, rc *rcopy, m int, seen *delaysSeen) ldaPaired {
	r := p.line(b.Interval, b.StartNs, b.EndNs, m)
	r.ControlFrames, r.ControlBytes = b.ControlFrames, b.ControlBytes
	payload, ok := b.Payloads[control.PartKey{MEC: uint16(m), Kind: control.KindLDA}]
	if !ok {
		why := partReason(b, control.PartKey{MEC: uint16(m), Kind: control.KindLDA}, "LDA for this class")
		if countLine(r, b.ClassFrames, rc, m, why) {
			return ldaPaired{line: heldLine{r: r, mec: m, counts: true}, rda: true}
		}
		return ldaPaired{line: invalidLine(r, rc.lda[m].Count(), why), rda: true}
	}
	h, body, err := parsePayload(payload)
	if err == nil && h.ControlBytes > 0 {
		// The sender's count: every copy it sent, not only what
		// arrived before the interval was complete.
		r.ControlFrames, r.ControlBytes = int(h.ControlFrames), int(h.ControlBytes)
	}
	cl := new(synopsis.CompactLDA)
	if err == nil {
		err = cl.UnmarshalBinary(body)
	}
	if err != nil {
		return ldaPaired{line: invalidLine(r, rc.lda[m].Count(), report.Cause{Code: report.Decode, Why: fmt.Sprintf("sender synopsis does not decode: %v", err)})}
	}
	if snd := cl.Config(); !snd.Equal(rc.lda[m].Config()) {
		// The sender shipped its LDA folded to this interval's
		// traffic (AdaptLDA): fold ours alike.
		f, err := rc.lda[m].Fold(snd)
		if err != nil {
			return ldaPaired{line: invalidLine(r, rc.lda[m].Count(), report.Cause{Code: report.Decode, Why: fmt.Sprintf("sender synopsis does not match ours: %v", err)})}
		}
		rc.lda[m] = f
	}
	r.Config += " lda-shipped=" + cl.Config().Shape()
	e, d, err := synopsis.EstimateLDACompactDetailed(cl, rc.lda[m], p.cfg.Conf)
	if err != nil {
		return ldaPaired{line: invalidLine(r, rc.lda[m].Count(), report.Cause{Code: report.Decode, Why: fmt.Sprintf("sender synopsis does not match ours: %v", err)})}
	}
	seen.add(&d, e.UsableBuckets)
	analyze.Fill(r, e)
	p.stamps(r, h.StampErrNs, rc)
	if why := sessionReason(h.Flags, rc); why.Code != 0 {
		r.Invalidate(why.Code, why.Why)
	}
	return ldaPaired{line: heldLine{r: r, e: &e, mec: m}, snd: cl, rda: true}
}

// rdaPaired is pairer.rda's outcome: the class's RDA line and, where it
// was estimated, what the coordinator hands on. snd is nil when the line
// was not estimated (it is invalid with its cause).
type rdaPaired struct {
	line heldLine
	// The sender's RDA as shipped, ours in its shape and the estimate's
	// statistics: the repair's request (repair.go).
	snd, own *synopsis.RDA
	st       synopsis.RDAStats
	// dec is the decode the crossing checks use, with own (nil where it
	// failed).
	dec *synopsis.RDADecoding
}

// rda estimates the RDA line of one MEC. Lost packets' cells are left
// out until the sender's timestamps for them arrive (askRepair,
// repair.go): under loss the mean is valid but bounded, and exact once
// the repair completes.
func (p *pairer) rda(b *control.IntervalBundle, rc *rcopy, m int) rdaPaired {
	r := p.line(b.Interval, b.StartNs, b.EndNs, m)
	r.Synopsis = "rda"
	payload, ok := b.Payloads[control.PartKey{MEC: uint16(m), Kind: control.KindRDA}]
	if !ok {
		return rdaPaired{line: invalidLine(r, uint64(rc.rda[m].Count()), partReason(b, control.PartKey{MEC: uint16(m), Kind: control.KindRDA}, "RDA for this class"))}
	}
	h, body, err := parsePayload(payload)
	if err == nil && h.Flags&payloadOmitted != 0 {
		return rdaPaired{line: invalidLine(r, uint64(rc.rda[m].Count()), report.Cause{Code: report.Budget, Why: budgetReason("RDA", h)})}
	}
	snd := new(synopsis.RDA)
	if err == nil {
		err = snd.UnmarshalBinary(body)
	}
	if err != nil {
		return rdaPaired{line: invalidLine(r, uint64(rc.rda[m].Count()), report.Cause{Code: report.Decode, Why: fmt.Sprintf("sender RDA does not decode: %v", err)})}
	}
	own, err := matchRDA(snd, rc.rda[m])
	if err != nil {
		return rdaPaired{line: invalidLine(r, uint64(rc.rda[m].Count()), report.Cause{Code: report.Decode, Why: fmt.Sprintf("sender RDA does not match ours: %v", err)})}
	}
	r.Config += fmt.Sprintf(" rda-shipped=%dx%d", snd.Banks(), snd.Cells())
	e, st, err := synopsis.EstimateRDA(snd, own, p.cfg.Conf)
	if err != nil {
		return rdaPaired{line: invalidLine(r, uint64(rc.rda[m].Count()), report.Cause{Code: report.Decode, Why: fmt.Sprintf("sender RDA does not match ours: %v", err)})}
	}
	out := rdaPaired{snd: snd, own: own, st: st}
	if dec, err := synopsis.DecodeRDA(snd, own); err == nil {
		out.dec = &dec
	}
	analyze.Fill(r, e)
	r.Synopsis = "rda"
	r.Extra = st.ReportFields()
	p.stamps(r, h.StampErrNs, rc)
	if why := sessionReason(h.Flags, rc); why.Code != 0 {
		r.Invalidate(why.Code, why.Why)
	}
	out.line = heldLine{r: r, e: &e, mec: m}
	return out
}

// warmupEvidence is what the interval the receiver started in can tell
// the interval after it: its sender's synopses against the receiver's
// partial copy. Their difference is mostly the frames before the
// receiver's start (sender-only); what only the receiver saw there are
// packets of the next interval that overtook the End marker. Parts that
// do not decode are left nil (the next interval then has no evidence
// from its predecessor for that class).
func (p *pairer) warmupEvidence(b *control.IntervalBundle, rc *rcopy) *evidence {
	ev := &evidence{snd: make([]*synopsis.CompactLDA, len(rc.lda)), rcv: rc.lda, rda: make([]*synopsis.RDADecoding, len(rc.lda))}
	for m := range rc.lda {
		if payload, ok := b.Payloads[control.PartKey{MEC: uint16(m), Kind: control.KindLDA}]; ok {
			cl := new(synopsis.CompactLDA)
			if _, body, err := parsePayload(payload); err == nil && cl.UnmarshalBinary(body) == nil {
				ev.snd[m] = cl
			}
		}
		if m >= len(rc.rda) {
			continue
		}
		payload, ok := b.Payloads[control.PartKey{MEC: uint16(m), Kind: control.KindRDA}]
		if !ok {
			continue
		}
		h, body, err := parsePayload(payload)
		if err != nil || h.Flags&payloadOmitted != 0 {
			continue
		}
		var snd synopsis.RDA
		if snd.UnmarshalBinary(body) != nil {
			continue
		}
		if own, err := matchRDA(&snd, rc.rda[m]); err == nil {
			if dec, err := synopsis.DecodeRDA(&snd, own); err == nil {
				ev.rda[m] = &dec
			}
		}
	}
	return ev
}

// matchRDA is our RDA in the sender's shape: the budget may have folded
// the sender's cells, and ours folds alike.
func matchRDA(snd, own *synopsis.RDA) (*synopsis.RDA, error) {
	if snd.Cells() == own.Cells() && snd.Banks() == own.Banks() {
		return own, nil
	}
	if snd.Banks() != own.Banks() {
		return nil, fmt.Errorf("%d banks, ours %d", snd.Banks(), own.Banks())
	}
	return own.Fold(snd.Cells())
}

// ldsPaired is pairer.lds's outcome: the interval's LDS lines and, where
// flows were estimated, the sender's sketch as shipped, which the
// repair of those lines starts from (ldsRepairSetUp; rc.lds is ours in
// its shape by then). snd is nil when the one line is invalid.
type ldsPaired struct {
	lines []heldLine
	snd   *synopsis.LDS
}

// lds estimates the largest flows of the interval, one line each, with
// rng the interval's confidence range (confidenceRange). It folds rc's
// LDS to the shape the sender shipped.
func (p *pairer) lds(b *control.IntervalBundle, rc *rcopy, rng DelayRange) ldsPaired {
	invalid := func(r *report.Interval, why report.Cause) ldsPaired {
		return ldsPaired{lines: []heldLine{invalidLine(r, rc.lds.Count(), why)}}
	}
	payload, ok := b.Payloads[control.PartKey{MEC: 0, Kind: control.KindLDS}]
	base := p.line(b.Interval, b.StartNs, b.EndNs, 0)
	base.Synopsis = "lds"
	if !ok {
		return invalid(base, partReason(b, control.PartKey{MEC: 0, Kind: control.KindLDS}, "LDS"))
	}
	h, body, err := parsePayload(payload)
	if err == nil && h.Flags&payloadOmitted != 0 {
		return invalid(base, report.Cause{Code: report.Budget, Why: budgetReason("LDS", h)})
	}
	snd := new(synopsis.LDS)
	if err == nil {
		err = snd.UnmarshalBinary(body)
	}
	if err == nil && snd.Rows() < rc.lds.Rows() {
		// The budget shipped fewer rows: keep ours alike.
		err = rc.lds.KeepRows(snd.Rows())
	}
	if err == nil && snd.Cols() < rc.lds.Cols() {
		// ... or folded the columns: fold ours alike.
		rc.lds, err = rc.lds.FoldCols(snd.Cols())
	}
	if err != nil {
		return invalid(base, report.Cause{Code: report.Decode, Why: fmt.Sprintf("sender LDS does not decode: %v", err)})
	}
	shape := fmt.Sprintf(" lds-shipped=%dx%d,%dnamed", snd.Rows(), snd.Cols(), snd.NamedFlows())
	if snd.Sparse() {
		shape += fmt.Sprintf(",sparse%d", snd.KnownCells())
	}
	// What other flows' packets in a flow's cells (and, with k > 1 or
	// sampled rows, a partial sample of its own) can move its mean is
	// bounded by the spread of the delays: the interval's confidence range
	// (the assumed range, widened to what its LDAs showed), not the far
	// wider range the compact encoding carries.
	rc.lds.SetBound(synopsis.LDSBound{MinDelayNs: rng.MinNs, MaxDelayNs: rng.MaxNs, Conf: p.cfg.Conf})
	flows, err := synopsis.EstimateLDSFlows(snd, rc.lds)
	if err != nil {
		return invalid(base, report.Cause{Code: report.Decode, Why: fmt.Sprintf("sender LDS does not match ours: %v", err)})
	}
	synopsis.ApplyFragments(flows)
	why := sessionReason(h.Flags, rc)
	// The largest flows by the sketch's counts are also the ones other
	// flows' packets inflate: rank those whose counts are their own first,
	// the rest (reported invalid) only to fill the lines.
	own := make([]synopsis.FlowEstimate, 0, len(flows))
	var shared []synopsis.FlowEstimate
	for _, f := range flows {
		if !rc.lds.RowsTakeAll() || countsAgree(&f) {
			own = append(own, f)
		} else {
			shared = append(shared, f)
		}
	}
	top := synopsis.TopFlows(own, p.cfg.TopFlows, synopsis.ByPackets)
	top = append(top, synopsis.TopFlows(shared, p.cfg.TopFlows-len(top), synopsis.ByPackets)...)
	out := ldsPaired{snd: snd, lines: make([]heldLine, 0, len(top))}
	for _, f := range top {
		r := p.line(b.Interval, b.StartNs, b.EndNs, 0)
		analyze.Fill(r, f.Estimate)
		r.Synopsis = "lds"
		if f.Named {
			r.Flow = analyze.FlowName(&f.Key)
		}
		p.flowStamps(r, &f, rc)
		r.Extra = map[string]any{"flow_hash": f.FlowHash, "weight": f.Weight, "held_sent": f.HeldSent, "held_received": f.HeldReceived,
			"delay_range_ns": []int64{rng.MinNs, rng.MaxNs}}
		analyze.FragmentExtra(r.Extra, &f)
		r.Config += shape
		if why.Code != 0 {
			r.Invalidate(why.Code, why.Why)
		}
		if rc.lds.RowsTakeAll() && !countsAgree(&f) {
			r.Invalidate(report.FlowShared, ReasonFlowShared)
		}
		out.lines = append(out.lines, heldLine{r: r, flow: &f})
	}
	return out
}

// countsAgree says whether a flow's estimate can be its own: the LDS
// cannot tell a cell's packets apart, but exact counts can catch a colliding
// flow. The delay samples (packets in the cells averaged) cannot exceed the
// flow's received packets; and where the counts come from the cells rather
// than from flow tables at both ends, sent (received) must equal the
// sender's (receiver's) held count wherever one is held, and a loss needs
// the sender's count to vouch for it. A repair's listed extras are in the
// receiver's held count but not in the flow's received packets
// (synopsis.EstimateLDSFlowsRepaired). Sampled rows
// scale the counts, so the caller checks only rows that take every packet.
func countsAgree(f *synopsis.FlowEstimate) bool {
	if f.Valid && f.Samples > f.Received {
		return false
	}
	if f.CountsExact {
		return true
	}
	if f.HeldSent == 0 && f.Lost > 0 {
		// Nothing vouches for sent: a colliding flow whose packets were
		// lost would show as this flow's loss.
		return false
	}
	return (f.HeldSent == 0 || f.Sent == f.HeldSent) && (f.HeldReceived == 0 || f.Received+uint64(f.RepairedExtra) == f.HeldReceived)
}
