package appliance

import (
	"fmt"

	"github.com/ldafwd/ldafwd/analyze"
	"github.com/ldafwd/ldafwd/control"
	"github.com/ldafwd/ldafwd/dataplane"
	"github.com/ldafwd/ldafwd/report"
	"github.com/ldafwd/ldafwd/synopsis"
)

// The trajectory sample live (docs/sample.md): each lane records every
// class's sample at both ends (dataplane.SynSet.Sample); the sender ships
// it each interval as a part of kind control.KindSample, cut to a deeper
// level when it does not fit its share of the control budget; the
// receiver matches it with its own copy (analyze.SampleLine, the code
// offline analyze reports through) and reports one "sample" line per
// class with the delay quantiles and their bounds.

// sampleBudgetShare is the part of one copy's control budget the
// samples of all classes may take (Config.AdaptSample), after the LDA and
// the RDA, before the LDS, which gets what they leave. A quarter, as the
// LDA's. Measured on the demo's mix (docs/sample.md, "Sizing live"): at
// 20 kpps the 1 % budget is at its 20 KB floor and the quarter carries
// about 485 samples an interval (the p99 bounded, just); at 100 kpps
// what the RDA leaves binds (sampleLeftShare) and carries about 1 100.
const sampleBudgetShare = 0.25

// sampleLeftShare is the most of what the RDA left that the samples may
// take where the LDS runs: it keeps the rest, at least a fifth. The
// samples fill their share to the byte (Sample.CutToCount), so without
// it a link where the RDA leaves less than the samples' share (100 kpps
// of the demo's mix) ships no LDS at all; with it, the LDS there still
// carries its largest flows' cells. At the demo's 20 kpps the quarter
// binds first.
const sampleLeftShare = 0.8

// sampleParts encodes each class's sample (set.Sample) for one copy
// within left: with AdaptSample the
// samples take at most sampleBudgetShare of perCopy and, beside an LDS,
// sampleLeftShare of left, the quietest class first, each at most an
// even split of what is still unspent, and a sample that does not fit is
// cut to the most samples that fit (encodeSample); without it they go as
// recorded. A sample whose header alone does not fit is left out
// (payloadOmitted). It returns each class's payload and header length
// and the wire bytes spent.
func (s *shipper) sampleParts(set *dataplane.SynSet, hdr func(frames, flags uint64) []byte, flags uint64, left room, perCopy int, omitted *[]string) (parts [][]byte, hdrLens []int, spent int) {
	n := len(set.Sample)
	parts, hdrLens = make([][]byte, n), make([]int, n)
	share := noLimit // fixed by the flags: as recorded, whatever it costs
	if s.cfg.AdaptSample && left.limited {
		most := left.bytes
		if set.LDS != nil {
			most = int(sampleLeftShare * float64(max(left.bytes, 0)))
		}
		share = within(max(0, min(most, int(sampleBudgetShare*float64(perCopy)))))
	}
	for i, m := range byPackets(n, func(m int) uint64 { return set.Sample[m].Offered() }) {
		p := set.Sample[m]
		h := hdr(p.Offered(), flags)
		hdrLens[m] = len(h)
		q, err := s.encodeSample(p, h, share.split(n-i))
		if err != nil || q == nil {
			if err != nil {
				s.cfg.Log.Error().Err(err).Uint64("interval", set.LastK).Msg("encoding the sender sample")
			}
			q = hdr(p.Offered(), flags|payloadOmitted)
			*omitted = append(*omitted, "sample/"+s.cfg.Classifier.Names()[m])
		}
		parts[m] = q
		w := s.wireOf(len(q))
		spent += w
		if share.limited {
			share = within(max(0, share.bytes-w))
		}
	}
	return parts, hdrLens, spent
}

// encodeSample appends p to prefix within limit, cutting p in place while it does not fit (p is the idle copy,
// reset when the shipment is done): to as many samples as the limit holds
// at the encoding's cost a sample (Sample.CutToCount: the packets of the
// whole interval with the smallest selection values, a uniform sample of
// that size), then by a sixty-fourth at a time. It returns nil when even
// an empty sample does not fit.
func (s *shipper) encodeSample(p *synopsis.Sample, prefix []byte, limit room) ([]byte, error) {
	prefix = prefix[:len(prefix):len(prefix)]
	for {
		q, err := p.AppendBinary(prefix)
		if err != nil {
			return nil, err
		}
		w := s.wireOf(len(q))
		if limit.fits(w) {
			return q, nil
		}
		n := p.Len()
		if n == 0 || p.Threshold() <= 1 {
			return nil, nil
		}
		// The payload the limit holds, fragment headers and parity taken
		// in proportion; less the header's bytes, about sampleHeaderBytes.
		fixed := float64(len(prefix) + sampleHeaderBytes)
		per := max(float64(len(q))-fixed, 1) / float64(n)
		space := float64(len(q))*float64(limit.bytes)/float64(w) - fixed
		keep := min(int(max(space, 0)/per), n-max(1, n/64))
		if err := p.CutToCount(keep); err != nil {
			return nil, err
		}
		if p.Len() >= n {
			return nil, nil // ties at the lowest threshold: cannot shrink
		}
	}
}

// sampleHeaderBytes is about what a sample's encoding takes beside its
// samples (Sample.AppendBinary): magic, threshold, counters, the first
// stamp, the digest width and the Rice parameter.
const sampleHeaderBytes = 24

// sample estimates class m's sample line of the bundle's interval:
// the sender's shipped sample against the receiver's copy.
func (p *pairer) sample(b *control.IntervalBundle, rc *rcopy, m int) heldLine {
	r := p.line(b.Interval, b.StartNs, b.EndNs, m)
	own := rc.sample[m]
	conf := p.cfg.Conf
	fail := func(why report.Cause) heldLine {
		l, e := analyze.SampleFailed(*r, conf, why)
		l.Received = own.Offered()
		return heldLine{r: &l, e: &e, mec: m}
	}
	key := control.PartKey{MEC: uint16(m), Kind: control.KindSample}
	payload, ok := b.Payloads[key]
	if !ok {
		return fail(partReason(b, key, "sample for this class"))
	}
	h, body, err := parsePayload(payload)
	if err == nil && h.Flags&payloadOmitted != 0 {
		return fail(report.Cause{Code: report.Budget, Why: budgetReason("sample", h)})
	}
	var snd synopsis.Sample
	if err == nil {
		err = snd.UnmarshalBinary(body)
	}
	if err != nil {
		return fail(report.Cause{Code: report.Decode, Why: fmt.Sprintf("sender sample does not decode: %v", err)})
	}
	l, e := analyze.SampleLine(*r, &snd, own, len(body), conf)
	// The quantiles' bounds are widened by each end's largest stamp
	// uncertainty (the samples carry it), not by the average the mean's
	// are: the line states those.
	l.TxStampErrNs, l.RxStampErrNs = float64(snd.StampErrNs()), float64(own.StampErrNs())
	l.StampSource = stampSource(p.rx, rc.stamps.polled, rc.frames)
	if h.ControlBytes > 0 {
		l.ControlFrames, l.ControlBytes = int(h.ControlFrames), int(h.ControlBytes)
	}
	if why := sessionReason(h.Flags, rc); why.Code != 0 {
		l.Invalidate(why.Code, why.Why)
	}
	return heldLine{r: &l, e: &e, mec: m}
}

// sampleLoss settles the loss of h's sample lines once the next
// interval's evidence has settled the class's LDA line (decide): a
// sampled packet that crossed the interval's boundary (reordered past an
// End marker either way) is a loss in this interval's sample and an extra
// in its neighbour's, so a sample line's lost is exact only where it is 0
// or where the class's LDA line vouches for its loss with no crossing.
// Otherwise the line's loss is not valid (code crossing); its quantiles
// stand (a crossed packet is missing from them, docs/sample.md).
func (c *controller) sampleLoss(h *heldInterval) {
	for i := range h.lines {
		l := &h.lines[i]
		if l.r.Synopsis != "sample" || l.e == nil || !l.r.LossValid || l.r.Lost == 0 {
			continue
		}
		var lda *report.Interval
		for j := range h.lines {
			if o := h.lines[j].r; o.Synopsis == "lda" && o.Flow == "" && h.lines[j].mec == l.mec {
				lda = o
				break
			}
		}
		crossed := 0
		if lda != nil {
			for _, f := range []string{"crossed", "early"} {
				if n, ok := lda.Extra[f].(int); ok {
					crossed += n
				}
			}
		}
		switch {
		case lda == nil || !lda.LossValid:
			why := "the class's loss could not be checked for packets that crossed the interval's boundaries"
			if lda != nil && lda.Reason != "" {
				why += " (its LDA line: " + lda.Reason + ")"
			}
			l.r.Invalidate(report.Crossing, why)
		case crossed > 0:
			l.r.Invalidate(report.Crossing, fmt.Sprintf("%d packets of the class crossed the interval's boundary: the sample's lost may count sampled ones among them", crossed))
		}
	}
}

// flowQuantiles puts the flows' sampled delay quantiles on h's LDS
// lines (analyze.FlowQuantiles) when h goes out: every cause of its
// sample lines is known by then, the clock step that out would find
// included.
func (c *controller) flowQuantiles(h *heldInterval) {
	rs := make([]*report.Interval, 0, len(h.lines))
	for _, l := range h.lines {
		if l.r.Synopsis == "sample" {
			c.clockStepLine(l.r)
		}
		rs = append(rs, l.r)
	}
	analyze.FlowQuantiles(rs)
}
