package analyze

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/ldafwd/ldafwd/classifier"
	"github.com/ldafwd/ldafwd/report"
	"github.com/ldafwd/ldafwd/synopsis"
)

// matchSlack is how far a sender copy may be stamped after the receive
// time (beyond what the clock offset seen on unambiguous packets allows)
// and still be the copy received: it absorbs timestamp resolution and
// the stamping jitter of two capture points.
const matchSlack = 100_000 // ns

// Run analyzes the sender and receiver captures and calls emit for every
// report line, in interval order.
//
// Captures that can be read twice (files) are analyzed as streams: both
// are read in time order, copies of an identity are paired within
// cfg.MaxDelay of each other, and each interval is reported as soon as
// no packet still to be read can belong to it, so memory holds the
// packets of the window and of the intervals in flight, not the captures
// (see stream.go). Others, and cfg.WholeCapture, are read whole into
// compact records first. Both give the same lines.
//
// Receiver packets are paired with sender packets by identity, first in
// first out per identity; the pairs give the common time range and each
// receiver packet its interval (see the package comment). An error is
// returned, and nothing emitted, for captures that cannot be compared:
// damaged (unless cfg.InvalidateDamaged), out of time order beyond
// MaxBackStep, without a common time range, or sharing less than
// MinMatchedShare of their packets.
func Run(sender, receiver *Capture, cfg Config, emit func(*report.Interval)) (Stats, error) {
	keepFlows, err := cfg.defaults()
	if err != nil {
		return Stats{}, err
	}
	var prog Progress
	if sender.Size() > 0 && receiver.Size() > 0 {
		prog.TotalBytes = sender.Size() + receiver.Size()
	}
	stream := !cfg.WholeCapture && sender.CanRewind() && receiver.CanRewind()
	if oracle != nil && stream {
		return oracle(sender, receiver, cfg, keepFlows, emit)
	}
	if stream {
		return runStream(sender, receiver, cfg, keepFlows, emit, &prog)
	}
	return runWhole(sender, receiver, cfg, keepFlows, emit, &prog)
}

// defaults fills in what cfg leaves unset; keepFlows says whether a
// synopsis needs each packet's flow.
func (cfg *Config) defaults() (keepFlows bool, err error) {
	if cfg.Classifier == nil {
		c, err := classifier.NewClassifier(nil)
		if err != nil {
			return false, err
		}
		cfg.Classifier = c
	}
	if !cfg.UseLDA && len(cfg.Extra) == 0 {
		return false, errors.New("no synopsis selected")
	}
	if cfg.Conf <= 0 || cfg.Conf >= 1 {
		cfg.Conf = 0.98
	}
	if cfg.Direction == "" {
		cfg.Direction = "a>b"
	}
	if cfg.UseLDA && len(cfg.LDARecord.Banks) > 0 {
		if common, err := synopsis.CommonLDAConfig(cfg.LDA, cfg.LDARecord); err != nil || !common.Equal(cfg.LDA) {
			return false, fmt.Errorf("LDA recorded at %s does not fold to %s", cfg.LDARecord.Shape(), cfg.LDA.Shape())
		}
	}
	for _, f := range cfg.Extra {
		keepFlows = keepFlows || !f.PerMEC()
	}
	return keepFlows, nil
}

// oracle, when set (by the package's tests), runs both analyses on every
// pair of captures that can stream, holds them to each other and emits
// the whole-capture analysis's lines.
var oracle func(sender, receiver *Capture, cfg Config, keepFlows bool, emit func(*report.Interval)) (Stats, error)

// runWhole is Run reading both captures whole first.
func runWhole(sender, receiver *Capture, cfg Config, keepFlows bool, emit func(*report.Interval), prog *Progress) (Stats, error) {
	var st Stats
	keys := map[uint64]classifier.FlowKey{}
	var tick func(*Capture)
	if cfg.Progress != nil {
		tick = func(c *Capture) {
			prog.Phase, prog.Frames, prog.Bytes = "sender", c.Frames, c.BytesRead()
			if c == receiver {
				prog.Phase = "receiver"
				prog.Frames += sender.Frames
				prog.Bytes += sender.BytesRead()
			}
			cfg.Progress(*prog)
		}
	}
	s, err := load(sender, cfg.Classifier, keepFlows, keys, tick)
	if err != nil {
		return st, err
	}
	r, err := load(receiver, cfg.Classifier, keepFlows, keys, tick)
	if err != nil {
		return st, err
	}
	if err := endStats(&st, s, r, cfg.InvalidateDamaged); err != nil {
		return st, err
	}

	st.SenderSnapExcluded, st.ReceiverSnapExcluded = excludeSnapped(s, r, sender.SnapLen(), receiver.SnapLen())
	if n := st.SenderSnapExcluded + st.ReceiverSnapExcluded; n > 0 {
		st.Warnings = append(st.Warnings, fmt.Sprintf("%d sender and %d receiver frames left out: their identity reaches past the snap length (%d and %d bytes) and the two ends could hash different bytes",
			st.SenderSnapExcluded, st.ReceiverSnapExcluded, sender.SnapLen(), receiver.SnapLen()))
	}
	if len(s.recs) == 0 || len(r.recs) == 0 {
		return st, fmt.Errorf("nothing to compare: %s has %d measured frames, %s %d", s.name, len(s.recs), r.name, len(r.recs))
	}

	mt := match(s, r)
	for _, x := range s.recs {
		if x.flags&recAmbiguous != 0 {
			st.SenderAmbiguous++
		}
	}
	for _, x := range r.recs {
		if x.flags&recAmbiguous != 0 {
			st.ReceiverAmbiguous++
		}
	}
	st.TruthAmbiguous = st.SenderAmbiguous
	st.Matched = uint64(mt.matched)

	// The common range, in the sender's clock: a sender packet sent before
	// lo could have reached the receiver before its capture began, one sent
	// after hi after it ended (delays as long as the longest seen).
	notSame := func(share float64) error {
		return fmt.Errorf("these captures do not see the same traffic: %.1f %% of sender packets found at the receiver (%s, %s; at least %.0f %% needed)",
			100*share, s.name, r.name, 100*MinMatchedShare)
	}
	if mt.matched == 0 {
		return st, notSame(0)
	}
	s0, s1 := int64(s.recs[0].ts), int64(s.recs[len(s.recs)-1].ts)
	r0, r1 := int64(r.recs[0].ts), int64(r.recs[len(r.recs)-1].ts)
	lo, hi := max(s0, r0-mt.dmin), min(s1, r1-mt.dmax)
	if lo > hi {
		return st, fmt.Errorf("these captures share no time range: %s spans %s, %s %s (receiver clock), and delays run %.3f..%.3f ms",
			s.name, span(s0, s1), r.name, span(r0, r1), float64(mt.dmin)/1e6, float64(mt.dmax)/1e6)
	}
	iLo := sort.Search(len(s.recs), func(i int) bool { return int64(s.recs[i].ts) >= lo })
	iHi := sort.Search(len(s.recs), func(i int) bool { return int64(s.recs[i].ts) > hi })
	var mIn int
	for i := iLo; i < iHi; i++ {
		if mt.rOf[i] >= 0 {
			mIn++
		}
	}
	st.MatchedShare = float64(mIn) / float64(max(iHi-iLo, 1))
	if st.MatchedShare < MinMatchedShare {
		return st, notSame(st.MatchedShare)
	}
	st.RangeStartNs, st.RangeEndNs = uint64(lo), uint64(hi)
	st.TrimmedSenderBefore, st.TrimmedSenderAfter = uint64(iLo), uint64(len(s.recs)-iHi)

	width := uint64(cfg.Interval.Nanoseconds())
	kOf := func(ts uint64) int64 { // absolute interval number
		if width == 0 {
			return 0
		}
		return int64(ts / width)
	}
	kBase := kOf(uint64(lo))

	// Receiver membership: a matched packet belongs to its sender copy's
	// interval; an unmatched one to the interval whose packets were last
	// arriving (where the sender's in-band End marker would put it).
	rk := make([]int32, len(r.recs)) // interval - kBase, or -1: outside the common range
	lastIn := -1
	for i, j := range mt.sOf {
		if j >= 0 && j >= int32(iLo) && j < int32(iHi) {
			lastIn = i
		}
	}
	cursor := int32(-1)
	for i := range r.recs {
		j := mt.sOf[i]
		switch {
		case j >= 0 && j >= int32(iLo) && j < int32(iHi):
			k := int32(kOf(s.recs[j].ts) - kBase)
			if k < cursor {
				r.recs[i].flags |= recCrossed
				st.Crossed++
			}
			cursor = max(cursor, k)
			rk[i] = k
		case j >= 0:
			rk[i] = -1
			if j < int32(iLo) {
				st.TrimmedReceiverBefore++
			} else {
				st.TrimmedReceiverAfter++
			}
		case cursor >= 0 && i < lastIn && int64(r.recs[i].ts)-mt.dmax >= lo && int64(r.recs[i].ts)-mt.dmin <= hi:
			// Unmatched, and sent (if it was) inside the common range
			// whatever its delay.
			rk[i] = cursor
			r.recs[i].flags |= recExtra
			st.ExtraReceived++
		default:
			rk[i] = -1
			if cursor < 0 || int64(r.recs[i].ts)-mt.dmax < lo {
				st.TrimmedReceiverBefore++
			} else {
				st.TrimmedReceiverAfter++
			}
		}
	}
	if t := st.TrimmedSenderBefore + st.TrimmedSenderAfter + st.TrimmedReceiverBefore + st.TrimmedReceiverAfter; t > 0 {
		st.Warnings = append(st.Warnings, fmt.Sprintf("measured only where both captures overlap (%s in the sender's clock): left out %d sender packets before and %d after, %d receiver packets before and %d after",
			span(lo, hi), st.TrimmedSenderBefore, st.TrimmedSenderAfter, st.TrimmedReceiverBefore, st.TrimmedReceiverAfter))
	}

	// Intervals that cannot be trusted whatever the synopses say.
	bad := map[int32]string{}
	nK := int32(kOf(uint64(hi)) - kBase)
	markFrom := func(k int32, all bool, why string) {
		last := k
		if all {
			last = nK
		}
		for k = max(k, 0); k <= last; k++ {
			if _, ok := bad[k]; !ok {
				bad[k] = why
			}
		}
	}
	for _, d := range s.damage {
		k := int32(kOf(uint64(min(max(int64(d.AfterNs), lo), hi))) - kBase)
		why := "sender capture damaged: " + d.Error()
		if d.Local {
			markFrom(k, false, why)
			markFrom(k+1, false, why)
		} else {
			markFrom(k, true, why)
		}
	}
	for _, d := range r.damage {
		p := sort.Search(len(r.recs), func(i int) bool { return r.recs[i].ts > d.AfterNs })
		k := int32(0)
		for i := p - 1; i >= 0; i-- {
			if rk[i] >= 0 && r.recs[i].flags&recCrossed == 0 {
				k = rk[i]
				break
			}
		}
		why := "receiver capture damaged: " + d.Error()
		if d.Local {
			markFrom(k, false, why)
			markFrom(k+1, false, why)
		} else {
			markFrom(k, true, why)
		}
	}
	split, edge := mt.splitAmbiguous(s, iLo, iHi, func(ts uint64) int32 { return int32(kOf(ts) - kBase) })
	for _, k := range split {
		if _, ok := bad[k]; !ok {
			bad[k] = "bit-identical packets on both sides of the interval boundary, and one of them lost: which interval lost it cannot be told"
		}
	}
	for _, k := range edge {
		if _, ok := bad[k]; !ok {
			bad[k] = "bit-identical packets on both sides of the captures' overlap edge, and one of them unpaired: whether the one inside was lost cannot be told"
		}
	}

	// Receiver packets by interval, each interval's in receive order.
	order := make([]int32, 0, len(r.recs))
	for i, k := range rk {
		if k >= 0 {
			order = append(order, int32(i))
		}
	}
	slices.SortStableFunc(order, func(a, b int32) int { return int(rk[a]) - int(rk[b]) })

	est := newLineMaker(&cfg, keepFlows, lo, hi, emit)
	acc, err := est.newAcc()
	if err != nil {
		return st, err
	}
	flowOf := func(e *endData, i int) (uint64, *classifier.FlowKey) {
		if e.flows == nil {
			return 0, nil
		}
		key := keys[e.flows[i]]
		return e.flows[i], &key
	}
	si, ri := iLo, 0
	for si < iHi || ri < len(order) {
		// The next interval either end has packets in.
		k := int32(math.MaxInt32)
		if si < iHi {
			k = est.k(s.recs[si].ts)
		}
		if ri < len(order) {
			k = min(k, rk[order[ri]])
		}
		acc.reset(k)
		for ; si < iHi && est.k(s.recs[si].ts) == k; si++ {
			fh, key := flowOf(s, si)
			j := mt.rOf[si]
			var rts uint64
			if j >= 0 {
				rts = r.recs[j].ts
			}
			est.addSender(acc, &s.recs[si], fh, key, j >= 0, rts)
		}
		for ; ri < len(order) && rk[order[ri]] == k; ri++ {
			i := int(order[ri])
			fh, key := flowOf(r, i)
			est.addReceiver(acc, &r.recs[i], fh, key)
		}
		why, isBad := bad[k]
		if err := est.finish(acc, why, isBad); err != nil {
			return st, err
		}
		st.Intervals++
		if cfg.Progress != nil {
			prog.Phase, prog.Intervals = "intervals", uint64(st.Intervals)
			cfg.Progress(*prog)
		}
	}
	return st, nil
}

// classLines are one synopsis kind's estimates and lines of an interval,
// by class.
type classLines struct {
	es    []*synopsis.Estimate
	lines []*report.Interval
}

// truthAcc accumulates exact delays of matched packets, in ns and ns².
type truthAcc struct {
	sent, matched uint64
	sum, sq       float64
}

// unseenExtras makes an LDA or LDS line's loss unknown when the pairing found
// receiver packets in its class that match no sent packet: the sketch
// counts them only where they show (an extra packet hides in a bucket that
// lost two or more), so its loss may be short by as many. The RDA decodes
// extras one by one and needs no such check.
func unseenExtras(l *report.Interval, extra uint64) {
	if extra == 0 {
		return
	}
	l.Invalidate(report.LossUnverified, fmt.Sprintf("%d received packets match no sent packet (duplicated, originated or changed inside the segment); the synopsis did not see them all, so its loss may hide as many", extra))
}

func setExtra(l *report.Interval, k string, v any) {
	if l.Extra == nil {
		l.Extra = map[string]any{}
	}
	l.Extra[k] = v
}

// addCounts puts the interval's pairing counts in a line's extra fields,
// only those that are not zero.
func addCounts(l *report.Interval, crossed, extra, ambS, ambR uint64) {
	for _, kv := range []struct {
		k string
		v uint64
	}{{"crossed", crossed}, {"extra_received", extra}, {"ambiguous_sent", ambS}, {"ambiguous_received", ambR}} {
		if kv.v == 0 {
			continue
		}
		if l.Extra == nil {
			l.Extra = map[string]any{}
		}
		l.Extra[kv.k] = kv.v
	}
}

func span(a, b int64) string {
	return fmt.Sprintf("%.6f..%.6f s", float64(a)/1e9, float64(b)/1e9)
}

// excludeSnapped drops, at both ends alike, the frames whose identity
// reaches past what both captures keep: the smaller snap length minus an
// Ethernet header and two VLAN tags (a tag pushed on the way shifts the
// receiver's bytes). Without it such a packet hashes different bytes at
// the two ends and reads as one lost packet plus one extra. Nothing is
// dropped when neither capture cut a frame.
func excludeSnapped(s, r *endData, snapS, snapR uint32) (ns, nr uint64) {
	if s.snapped == 0 && r.snapped == 0 {
		return 0, 0
	}
	limit := math.MaxInt
	for _, l := range []int{int(snapS), int(snapR), s.minSnap, r.minSnap} {
		if l > 0 {
			limit = min(limit, l)
		}
	}
	limit -= 14 + 8
	drop := func(e *endData) uint64 {
		var n uint64
		k := 0
		for i, x := range e.recs {
			if int(x.ext) > limit {
				n++
				continue
			}
			e.recs[k] = x
			if e.flows != nil {
				e.flows[k] = e.flows[i]
			}
			k++
		}
		e.recs = e.recs[:k]
		if e.flows != nil {
			e.flows = e.flows[:k]
		}
		return n
	}
	return drop(s), drop(r)
}

// endStats fills st with what reading the two captures found (counts,
// damage, disorder warnings), as both the whole-capture and the streaming
// path report it; an error ends the analysis: a capture that ended early,
// or damage without invalidate.
func endStats(st *Stats, s, r *endData, invalidate bool) error {
	st.SenderFrames, st.ReceiverFrames = s.frames, r.frames
	st.SenderControl, st.ReceiverControl = s.control, r.control
	st.SenderLinkLocal, st.ReceiverLinkLocal = s.linkLocal, r.linkLocal
	st.SenderMalformed, st.ReceiverMalformed = s.malformed, r.malformed
	st.SenderSnapped, st.ReceiverSnapped = s.snapped, r.snapped
	st.SenderDisordered, st.ReceiverDisordered = s.disordered, r.disordered
	st.MaxBackStepNs = max(s.maxBackNs, r.maxBackNs)
	st.Damage = append(append([]*DamageError(nil), s.damage...), r.damage...)
	for _, e := range []*endData{s, r} {
		if e.disordered > 0 {
			st.Warnings = append(st.Warnings, fmt.Sprintf("%s: %d records stamped before an earlier record (at most %.3f ms back): sorted by time",
				e.name, e.disordered, float64(e.maxBackNs)/1e6))
		}
		if e.endedEarly != nil && len(e.damage) == 0 {
			return e.endedEarly
		}
	}
	if len(st.Damage) > 0 {
		if !invalidate {
			more := ""
			if len(st.Damage) > 1 {
				more = fmt.Sprintf(" (and %d more damaged records)", len(st.Damage)-1)
			}
			return fmt.Errorf("%w%s", st.Damage[0], more)
		}
		for _, d := range st.Damage {
			st.Warnings = append(st.Warnings, d.Error()+": intervals it touches are reported invalid")
		}
	}
	return nil
}
