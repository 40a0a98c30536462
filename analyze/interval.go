package analyze

import (
	"math"

	"github.com/ldafwd/ldafwd/classifier"
	"github.com/ldafwd/ldafwd/report"
	"github.com/ldafwd/ldafwd/synopsis"
)

// intervalAcc is what one interval collects from both ends before it is
// estimated: each end's synopses, the pairing's counts by class and, with
// Truth, the exact truth. Both the whole-capture and the streaming analysis
// fill it the same way (sender packets in time order, receiver packets in
// receive order) and estimate it with the same code, so that their lines
// are the same byte for byte.
type intervalAcc struct {
	k         int32 // interval number relative to the first one measured
	snd, rcv  *side
	per       []counts
	mecTruth  []truthAcc
	flowTruth map[uint64]*truthAcc
	mecDelays [][]int64
	// flowDelays: each flow's delivered packets' delays (with Truth, a
	// sample synopsis and per-flow synopses), for the flow lines'
	// true_quantiles.
	flowDelays map[uint64][]int64
	// The interval's packets as a sample line's truth needs them (only
	// with Truth and a sample synopsis).
	sampleSent, sampleRcv []sampleRec
}

// counts are an interval's pairing counts of one class.
type counts struct{ crossed, extra, ambS, ambR uint64 }

// sampleRec is a packet as sampleTrueLost looks at it.
type sampleRec struct {
	hash    uint64
	mec     uint16
	matched bool
}

// lineMaker turns filled intervalAccs into report lines.
type lineMaker struct {
	cfg         *Config
	classes     int
	names       []string
	width       uint64
	kBase       int64
	lo, hi      int64
	keepFlows   bool
	sampleTruth bool // a sample line's truth: every delay, and the packets
	emit        func(*report.Interval)
	meta        classifier.Meta
}

func newLineMaker(cfg *Config, keepFlows bool, lo, hi int64, emit func(*report.Interval)) *lineMaker {
	e := &lineMaker{cfg: cfg, classes: cfg.Classifier.NumClasses(), names: cfg.Classifier.Names(),
		width: uint64(cfg.Interval.Nanoseconds()), lo: lo, hi: hi, keepFlows: keepFlows, emit: emit}
	e.kBase = e.kOf(uint64(lo))
	for _, f := range cfg.Extra {
		e.sampleTruth = e.sampleTruth || (cfg.Truth && f.Name() == "sample")
	}
	return e
}

// kOf is the absolute interval number of a sender timestamp.
func (e *lineMaker) kOf(ts uint64) int64 {
	if e.width == 0 {
		return 0
	}
	return int64(ts / e.width)
}

// k is the interval of a sender timestamp relative to the first measured.
func (e *lineMaker) k(ts uint64) int32 { return int32(e.kOf(ts) - e.kBase) }

func (e *lineMaker) newAcc() (*intervalAcc, error) {
	snd, err := newSide(e.cfg, e.classes)
	if err != nil {
		return nil, err
	}
	rcv, err := newSide(e.cfg, e.classes)
	if err != nil {
		return nil, err
	}
	return &intervalAcc{snd: snd, rcv: rcv, per: make([]counts, e.classes), mecTruth: make([]truthAcc, e.classes),
		flowTruth: map[uint64]*truthAcc{}, mecDelays: make([][]int64, e.classes), flowDelays: map[uint64][]int64{}}, nil
}

// reset readies a for interval k.
func (a *intervalAcc) reset(k int32) {
	a.k = k
	a.snd.reset()
	a.rcv.reset()
	clear(a.per)
	clear(a.mecTruth)
	clear(a.flowTruth)
	clear(a.flowDelays)
	for i := range a.mecDelays {
		a.mecDelays[i] = a.mecDelays[i][:0]
	}
	a.sampleSent, a.sampleRcv = a.sampleSent[:0], a.sampleRcv[:0]
}

func (e *lineMaker) metaOf(x *rec, flowHash uint64, key *classifier.FlowKey) *classifier.Meta {
	e.meta.Hash = x.hash
	if e.keepFlows {
		e.meta.FlowHash = flowHash
		e.meta.Flow = *key
	}
	return &e.meta
}

// addSender adds a sender packet (its flow hash and key when per-flow
// synopses run); matched says whether the pairing found its receiver copy,
// received at rts.
func (e *lineMaker) addSender(a *intervalAcc, x *rec, flowHash uint64, key *classifier.FlowKey, matched bool, rts uint64) {
	m := e.metaOf(x, flowHash, key)
	a.snd.add(m, x.mec, x.ts)
	if x.flags&recAmbiguous != 0 {
		a.per[x.mec].ambS++
	}
	if !e.cfg.Truth {
		return
	}
	accs := [2]*truthAcc{&a.mecTruth[x.mec], nil}
	if e.keepFlows {
		fa := a.flowTruth[flowHash]
		if fa == nil {
			fa = &truthAcc{}
			a.flowTruth[flowHash] = fa
		}
		accs[1] = fa
	}
	for _, acc := range accs {
		if acc == nil {
			continue
		}
		acc.sent++
		if matched && e.sampleTruth {
			if acc == accs[0] {
				a.mecDelays[x.mec] = append(a.mecDelays[x.mec], int64(rts-x.ts))
			} else {
				a.flowDelays[flowHash] = append(a.flowDelays[flowHash], int64(rts-x.ts))
			}
		}
		if matched {
			d := float64(int64(rts - x.ts))
			acc.matched++
			acc.sum += d
			acc.sq += d * d
		}
	}
	if e.sampleTruth {
		a.sampleSent = append(a.sampleSent, sampleRec{x.hash, x.mec, matched})
	}
}

// addReceiver adds a receiver packet.
func (e *lineMaker) addReceiver(a *intervalAcc, x *rec, flowHash uint64, key *classifier.FlowKey) {
	a.rcv.add(e.metaOf(x, flowHash, key), x.mec, x.ts)
	c := &a.per[x.mec]
	if x.flags&recCrossed != 0 {
		c.crossed++
	}
	if x.flags&recExtra != 0 {
		c.extra++
	}
	if x.flags&recAmbiguous != 0 {
		c.ambR++
	}
	if e.sampleTruth {
		a.sampleRcv = append(a.sampleRcv, sampleRec{hash: x.hash, mec: x.mec})
	}
}

// estimateLDA estimates one class's LDA line from the sender's and the
// receiver's LDAs s and r (recorded at cfg.recordLDA()): at cfg.LDA, and,
// where cfg.LDARecord is set and that sample is thin under heavy loss, at
// the recorded shape, whose sample holds every packet the configured one
// does and more (every usable bucket of the folded shape is a union of
// usable ones). It returns the estimate, the pair it came from and, when
// the recorded shape was used, the configured shape's samples.
func estimateLDA(cfg *Config, s, r *synopsis.LDA) (e synopsis.Estimate, sl, rl *synopsis.LDA, thin *uint64, err error) {
	if len(cfg.LDARecord.Banks) == 0 {
		e, err = synopsis.EstimateLDA(s, r, cfg.Conf)
		return e, s, r, nil, err
	}
	if sl, err = s.Fold(cfg.LDA); err == nil {
		rl, err = r.Fold(cfg.LDA)
	}
	if err != nil {
		return e, nil, nil, nil, err
	}
	if e, err = synopsis.EstimateLDA(sl, rl, cfg.Conf); err != nil || !synopsis.LDAThin(s.Count(), r.Count(), e.Samples) || cfg.LDARecord.Equal(cfg.LDA) {
		return e, sl, rl, nil, err
	}
	big, err := synopsis.EstimateLDA(s, r, cfg.Conf)
	if err != nil || big.Samples <= e.Samples {
		return e, sl, rl, nil, nil
	}
	n := e.Samples
	return big, s, r, &n, nil
}

// finish estimates interval a and emits its lines; bad, when set, is why
// the whole interval cannot be trusted.
func (e *lineMaker) finish(a *intervalAcc, why string, bad bool) error {
	cfg, classes, names, width := e.cfg, e.classes, e.names, e.width
	lo, hi := e.lo, e.hi
	per, mecTruth, flowTruth, mecDelays := a.per, a.mecTruth, a.flowTruth, a.mecDelays
	snd, rcv := a.snd, a.rcv
	abs := int64(a.k) + e.kBase
	start, end := abs*int64(width), (abs+1)*int64(width)
	if width == 0 {
		start, end = lo, hi+1
	}
	var total counts
	for _, c := range per {
		total.crossed += c.crossed
		total.extra += c.extra
		total.ambS += c.ambS
		total.ambR += c.ambR
	}
	var lines []*report.Interval
	// Per synopsis kind, each class's estimate and line: packets that
	// changed class inside the segment show only across classes.
	perKind := map[string]*classLines{}
	kindOf := func(kind string) *classLines {
		if perKind[kind] == nil {
			perKind[kind] = &classLines{es: make([]*synopsis.Estimate, classes), lines: make([]*report.Interval, classes)}
		}
		return perKind[kind]
	}
	for mec := 0; mec < classes; mec++ {
		base := report.Interval{Interval: abs, StartNs: start, EndNs: end, Direction: cfg.Direction, MEC: names[mec]}
		c := per[mec]
		if cfg.UseLDA {
			e, sl, rl, thin, err := estimateLDA(cfg, snd.lda[mec], rcv.lda[mec])
			if err != nil {
				return err
			}
			l := base
			fill(&l, e)
			if cfg.MicroburstGapNs > 0 && e.Valid && e.Lost > 0 {
				mb, err := synopsis.FindMicrobursts(synopsis.LDABuckets(sl), synopsis.LDABuckets(rl),
					e.MeanNs, cfg.MicroburstGapNs, max(cfg.MicroburstMin, 1))
				if err == nil {
					l.Extra = map[string]any{"microbursts": microbursts(mb)}
				}
			}
			for k, v := range e.IntegrityFields() {
				if l.Extra == nil {
					l.Extra = map[string]any{}
				}
				l.Extra[k] = v
			}
			if thin != nil {
				setExtra(&l, "lda_rows", sl.Config().Shape())
				setExtra(&l, "lda_rows_configured_samples", *thin)
			}
			addCounts(&l, c.crossed, c.extra, c.ambS, c.ambR)
			unseenExtras(&l, c.extra)
			lines = append(lines, &l)
			cl := kindOf("lda")
			cl.es[mec], cl.lines[mec] = &e, &l
		}
		for i, f := range cfg.Extra {
			if !f.PerMEC() && mec != 0 {
				continue // one sketch for all traffic: estimated once
			}
			cc := c
			if !f.PerMEC() {
				cc = total
			}
			xs, es := estimateLines(f, snd.extra[mec][i], rcv.extra[mec][i], cfg.Conf)
			for j, x := range xs {
				l := x
				if f.PerMEC() && es != nil && len(xs) == 1 {
					cl := kindOf(f.Name())
					cl.es[mec], cl.lines[mec] = &es[j], &l
				}
				l.Interval, l.StartNs, l.EndNs, l.Direction = base.Interval, base.StartNs, base.EndNs, base.Direction
				if l.MEC == "" {
					l.MEC = base.MEC
				}
				addCounts(&l, cc.crossed, cc.extra, cc.ambS, cc.ambR)
				if done, _ := l.Extra["repair_complete"].(bool); l.Synopsis == "lds" && !done {
					// A complete repair decoded and took out every
					// extra packet: none is left to hide a loss.
					unseenExtras(&l, cc.extra)
				}
				lines = append(lines, &l)
			}
		}
	}
	for _, cl := range perKind {
		for m, why := range synopsis.ClassChanges(cl.es, names) {
			// Another cause the line has leads or follows by the
			// precedence of its code (report.Code).
			if l := cl.lines[m]; why != "" && l != nil {
				l.Invalidate(report.ClassChange, why)
			}
		}
	}
	for _, l := range lines {
		// An interval the common range cuts says which part was measured.
		if width > 0 && start < lo {
			setExtra(l, "measured_from_ns", lo)
		}
		if width > 0 && end > hi+1 {
			setExtra(l, "measured_to_ns", hi+1)
		}
		if bad {
			why := why
			if !l.Valid { // the damage leads; the sentence keeps the line's own
				why += "; " + l.Reason
			}
			l.Invalidate(report.CaptureDamage, why)
		}
	}
	// The flow lines' quantiles once every cause of the sample lines is
	// known.
	FlowQuantiles(lines)
	for _, l := range lines {
		if cfg.Truth {
			acc := mecTruth[mecIndex(names, l.MEC)]
			if fh, ok := l.Extra["flow_hash"].(uint64); ok && l.Flow != "" {
				if fa := flowTruth[fh]; fa != nil {
					acc = *fa
				} else {
					acc = truthAcc{}
				}
			}
			lost := acc.sent - acc.matched
			var mean, sd float64
			if acc.matched > 0 {
				mean = acc.sum / float64(acc.matched)
				sd = math.Sqrt(math.Max(acc.sq/float64(acc.matched)-mean*mean, 0))
			}
			l.TrueMeanNs, l.TrueStddevNs, l.TrueLost = &mean, &sd, &lost
			if l.Synopsis == "sample" {
				mec := mecIndex(names, l.MEC)
				l.TrueLost = sampleTrueLost(l, uint16(mec), a.sampleSent, a.sampleRcv)
				if q := TrueQuantiles(mecDelays[mec]); q != nil {
					setExtra(l, "true_quantiles", q)
				}
			}
			if _, ok := l.Extra["quantiles"]; ok && l.Synopsis == "lds" {
				fh, _ := l.Extra["flow_hash"].(uint64)
				if q := TrueQuantiles(a.flowDelays[fh]); q != nil {
					setExtra(l, "true_quantiles", q)
				}
			}
		}
		WithdrawSample(l)
		e.emit(l)
	}
	return nil
}
