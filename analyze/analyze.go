package analyze

import (
	"errors"
	"math"
	"time"

	"github.com/ldafwd/ldafwd/classifier"
	"github.com/ldafwd/ldafwd/report"
	"github.com/ldafwd/ldafwd/synopsis"
)

// Config says what to compute from a pair of captures.
type Config struct {
	Interval   time.Duration // 0: the whole capture is one interval
	LDA        synopsis.LDAConfig
	UseLDA     bool
	Extra      []SynopsisFactory // RDA, LDS… (see synopses.go)
	Classifier *classifier.Classifier
	Truth      bool    // add exact ground truth from matching identities
	Conf       float64 // confidence of mean_ci_ns, e.g. 0.98
	Direction  string  // report's "direction", e.g. "a>b"
	// Microbursts: losses recovered from single-loss LDA buckets (Varghese
	// slides) closer than MicroburstGapNs are grouped; groups of at least
	// MicroburstMin are reported in the LDA line's extra. Gap 0: off.
	MicroburstGapNs uint64
	MicroburstMin   int
}

// Stats counts what happened to the frames of both captures.
type Stats struct {
	SenderFrames, ReceiverFrames       uint64
	SenderMalformed, ReceiverMalformed uint64 // truncated or malformed headers (still measured)
	SenderControl, ReceiverControl     uint64 // ldafwd control frames, not measured
	SenderSnapped, ReceiverSnapped     uint64 // records cut by the snap length
	Intervals                          int
	TruthAmbiguous                     uint64 // identities seen twice at the sender within an interval
	Warnings                           []string
}

// side is one end's synopses for one interval: one set per MEC.
type side struct {
	lda    []*synopsis.LDA
	extra  [][]SideSynopsis // [mec][factory]; a global factory's instance is shared by every mec
	frames uint64
}

func newSide(cfg *Config, classes int) (*side, error) {
	s := &side{}
	global := make([]SideSynopsis, len(cfg.Extra))
	for i, f := range cfg.Extra {
		if !f.PerMEC() {
			x, err := f.New()
			if err != nil {
				return nil, err
			}
			global[i] = x
		}
	}
	for i := 0; i < classes; i++ {
		if cfg.UseLDA {
			l, err := synopsis.NewLDA(cfg.LDA)
			if err != nil {
				return nil, err
			}
			s.lda = append(s.lda, l)
		}
		var ex []SideSynopsis
		for j, f := range cfg.Extra {
			if !f.PerMEC() {
				ex = append(ex, global[j])
				continue
			}
			x, err := f.New()
			if err != nil {
				return nil, err
			}
			ex = append(ex, x)
		}
		s.extra = append(s.extra, ex)
	}
	return s, nil
}

func (s *side) add(m *classifier.Meta, mec uint16, ts uint64) {
	if s.lda != nil {
		s.lda[mec].Add(m.Hash, ts)
	}
	for _, x := range s.extra[mec] {
		x.Add(m, mec, ts)
	}
	s.frames++
}

func (s *side) reset() {
	for _, l := range s.lda {
		l.Reset()
	}
	// Shared instances are reset once per MEC; Reset is idempotent.
	for _, ex := range s.extra {
		for _, x := range ex {
			x.Reset()
		}
	}
	s.frames = 0
}

// truthInterval is the exact truth for the packets the sender sent in one
// interval: kept until the receiver has been read one interval further, so
// that packets crossing the interval edge are matched too.
type truthInterval struct {
	k         int64
	sent      map[uint64]sentPacket // identity → what the sender saw; removed when matched
	dupes     uint64
	pending   []*report.Interval // reports waiting for this truth
	mecTruth  []truthAcc         // per MEC
	flowTruth map[uint64]*truthAcc
}

type sentPacket struct {
	ts   uint64 // ns
	mec  uint16
	flow uint64 // flow hash
}

// truthAcc accumulates exact delays of matched packets, in ns and ns².
type truthAcc struct {
	sent, matched uint64
	sum, sq       float64
}

// Run analyzes the sender and receiver captures and calls emit for every
// report line, in interval order. Damaged or unreadable frames are counted,
// not fatal; only unreadable files are errors (returned by OpenCapture).
func Run(sender, receiver *Capture, cfg Config, emit func(*report.Interval)) (Stats, error) {
	var st Stats
	if cfg.Classifier == nil {
		c, err := classifier.NewClassifier(nil)
		if err != nil {
			return st, err
		}
		cfg.Classifier = c
	}
	if !cfg.UseLDA && len(cfg.Extra) == 0 {
		return st, errors.New("no synopsis selected")
	}
	if cfg.Conf <= 0 || cfg.Conf >= 1 {
		cfg.Conf = 0.98
	}
	if cfg.Direction == "" {
		cfg.Direction = "a>b"
	}
	classes := cfg.Classifier.NumClasses()
	names := cfg.Classifier.Names()
	snd, err := newSide(&cfg, classes)
	if err != nil {
		return st, err
	}
	rcv, err := newSide(&cfg, classes)
	if err != nil {
		return st, err
	}
	width := uint64(cfg.Interval.Nanoseconds())
	intervalOf := func(ts uint64) int64 {
		if width == 0 {
			return 0
		}
		return int64(ts / width)
	}

	var prevTruth, curTruth *truthInterval
	newTruth := func(k int64) *truthInterval {
		if !cfg.Truth {
			return nil
		}
		return &truthInterval{k: k, sent: make(map[uint64]sentPacket), mecTruth: make([]truthAcc, classes), flowTruth: map[uint64]*truthAcc{}}
	}
	flushTruth := func(t *truthInterval) {
		if t == nil {
			return
		}
		// Whatever the sender sent in t.k and nobody received by the end of
		// t.k+1 counts as lost: one-way delays longer than an interval are
		// outside what the truth (and the synopses) can pair.
		for _, r := range t.pending {
			acc := t.mecTruth[mecIndex(names, r.MEC)]
			if fh, ok := r.Extra["flow_hash"].(uint64); ok && r.Flow != "" {
				if fa := t.flowTruth[fh]; fa != nil {
					acc = *fa
				} else {
					acc = truthAcc{}
				}
			}
			lost := acc.sent - acc.matched
			var mean, sd float64
			if acc.matched > 0 {
				mean = acc.sum / float64(acc.matched)
				v := acc.sq/float64(acc.matched) - mean*mean
				sd = math.Sqrt(math.Max(v, 0))
			}
			r.TrueMeanNs, r.TrueStddevNs, r.TrueLost = &mean, &sd, &lost
			emit(r)
		}
		st.TruthAmbiguous += t.dupes
	}

	firstTS, lastTS := uint64(math.MaxUint64), uint64(0)
	span := func(ts uint64) {
		firstTS, lastTS = min(firstTS, ts), max(lastTS, ts)
	}
	var meta classifier.Meta
	for {
		sts, sok := sender.Peek()
		rts, rok := receiver.Peek()
		if !sok && !rok {
			break
		}
		// The next interval is the earliest one either capture has a frame in.
		var k int64
		switch {
		case sok && rok:
			k = min(intervalOf(sts), intervalOf(rts))
		case sok:
			k = intervalOf(sts)
		default:
			k = intervalOf(rts)
		}
		if cfg.Truth {
			prevTruth, curTruth = curTruth, newTruth(k)
			if prevTruth != nil && prevTruth.k != k-1 {
				// A gap: the previous interval can have no more receptions.
				flushTruth(prevTruth)
				prevTruth = nil
			}
		}
		// Both ends' frames of interval k: the sender's go into the sender
		// synopses (and the truth's sent set), the receiver's into the
		// receiver's (and are matched against the sent sets).
		counts := [2]*endCounts{
			{&st.SenderFrames, &st.SenderControl, &st.SenderMalformed},
			{&st.ReceiverFrames, &st.ReceiverControl, &st.ReceiverMalformed},
		}
		for end, c := range [2]*Capture{sender, receiver} {
			for {
				ts, ok := c.Peek()
				if !ok || intervalOf(ts) != k {
					break
				}
				frame, ts, _ := c.Next()
				span(ts)
				mec, ok := counts[end].parse(frame, &meta, cfg.Classifier)
				if !ok {
					continue // a control frame: not traffic
				}
				if end == 0 {
					snd.add(&meta, mec, ts)
					curTruth.sentFrame(&meta, mec, ts)
				} else {
					rcv.add(&meta, mec, ts)
					if !curTruth.receivedFrame(&meta, ts) {
						prevTruth.receivedFrame(&meta, ts)
					}
				}
			}
		}

		// Estimate interval k for every MEC and synopsis.
		start, end := int64(0), int64(0)
		if width > 0 {
			start, end = k*int64(width), (k+1)*int64(width)
		}
		var lines []*report.Interval
		for mec := 0; mec < classes; mec++ {
			base := report.Interval{Interval: k, StartNs: start, EndNs: end, Direction: cfg.Direction, MEC: names[mec]}
			if cfg.UseLDA {
				e, err := synopsis.EstimateLDA(snd.lda[mec], rcv.lda[mec], cfg.Conf)
				if err != nil {
					return st, err
				}
				r := base
				fill(&r, e)
				if cfg.MicroburstGapNs > 0 && e.Valid && e.Lost > 0 {
					mb, err := synopsis.FindMicrobursts(synopsis.LDABuckets(snd.lda[mec]), synopsis.LDABuckets(rcv.lda[mec]),
						e.MeanNs, cfg.MicroburstGapNs, max(cfg.MicroburstMin, 1))
					if err == nil {
						r.Extra = map[string]any{"microbursts": microbursts(mb)}
					}
				}
				lines = append(lines, &r)
			}
			for i, f := range cfg.Extra {
				if !f.PerMEC() && mec != 0 {
					continue // one sketch for all traffic: estimated once
				}
				for _, r := range f.Estimate(snd.extra[mec][i], rcv.extra[mec][i], cfg.Conf) {
					rr := r
					rr.Interval, rr.StartNs, rr.EndNs, rr.Direction = base.Interval, base.StartNs, base.EndNs, base.Direction
					if rr.MEC == "" {
						rr.MEC = base.MEC
					}
					lines = append(lines, &rr)
				}
			}
		}
		if width == 0 {
			// One interval over the whole capture: report its real span.
			for _, r := range lines {
				r.StartNs, r.EndNs = int64(firstTS), int64(lastTS)+1
			}
		}
		st.Intervals++
		if cfg.Truth {
			curTruth.pending = append(curTruth.pending, lines...)
			if prevTruth != nil {
				flushTruth(prevTruth)
				prevTruth = nil
			}
		} else {
			for _, r := range lines {
				emit(r)
			}
		}
		snd.reset()
		rcv.reset()
	}
	if cfg.Truth && curTruth != nil {
		flushTruth(curTruth)
	}
	st.SenderSnapped, st.ReceiverSnapped = sender.Truncated, receiver.Truncated
	for _, c := range []*Capture{sender, receiver} {
		if c.EndedEarly != nil {
			st.Warnings = append(st.Warnings, c.EndedEarly.Error())
		}
	}
	return st, nil
}

func mecIndex(names []string, name string) int {
	for i, n := range names {
		if n == name {
			return i
		}
	}
	return 0
}

// fill copies an Estimate into a report line.
func fill(r *report.Interval, e synopsis.Estimate) {
	r.Synopsis = e.Synopsis
	r.Sent, r.Received, r.Lost = e.Sent, e.Received, e.Lost
	r.MeanNs, r.StddevNs, r.MeanCINs, r.Conf = e.MeanNs, e.StddevNs, e.MeanCINs, e.Conf
	r.Samples, r.Usable, r.Buckets = e.Samples, e.UsableBuckets, e.TotalBuckets
	r.Valid, r.Reason = e.Valid, e.Reason
}

// Fill is fill for other packages (the appliance reports the same fields).
func Fill(r *report.Interval, e synopsis.Estimate) { fill(r, e) }

// Microburst is one burst of losses in a report's extra.
type Microburst struct {
	StartNs uint64 `json:"start_ns"`
	EndNs   uint64 `json:"end_ns"`
	Losses  int    `json:"losses"`
}

func microbursts(in []synopsis.Microburst) []Microburst {
	out := make([]Microburst, len(in))
	for i, m := range in {
		out[i] = Microburst{StartNs: m.StartNs, EndNs: m.EndNs, Losses: m.Losses}
	}
	return out
}

// endCounts are one end's frame counters in Stats.
type endCounts struct{ frames, control, malformed *uint64 }

// parse classifies one frame and counts it; ok is false for control frames.
func (c *endCounts) parse(frame []byte, m *classifier.Meta, cl *classifier.Classifier) (mec uint16, ok bool) {
	classifier.Parse(frame, m)
	*c.frames++
	if m.Flags&classifier.FlagControl != 0 {
		*c.control++
		return 0, false
	}
	if m.Flags&(classifier.FlagTruncated|classifier.FlagMalformed) != 0 {
		*c.malformed++
	}
	return cl.Measure(m) // link-local frames no MEC claims are not measured
}

// sentFrame records a frame the sender sent in t's interval (nil t: no
// truth kept). A second frame with the same identity is counted, not kept.
func (t *truthInterval) sentFrame(m *classifier.Meta, mec uint16, ts uint64) {
	if t == nil {
		return
	}
	if _, dup := t.sent[m.Hash]; dup {
		t.dupes++
		return
	}
	t.sent[m.Hash] = sentPacket{ts: ts, mec: mec, flow: m.FlowHash}
	t.mecTruth[mec].sent++
	fa := t.flowTruth[m.FlowHash]
	if fa == nil {
		fa = &truthAcc{}
		t.flowTruth[m.FlowHash] = fa
	}
	fa.sent++
}

// receivedFrame matches a received frame against t's sent set and
// accumulates its exact delay; false when t did not send it.
func (t *truthInterval) receivedFrame(m *classifier.Meta, ts uint64) bool {
	if t == nil {
		return false
	}
	sp, ok := t.sent[m.Hash]
	if !ok {
		return false
	}
	delete(t.sent, m.Hash)
	d := float64(int64(ts - sp.ts))
	for _, a := range [2]*truthAcc{&t.mecTruth[sp.mec], t.flowTruth[sp.flow]} {
		a.matched++
		a.sum += d
		a.sq += d * d
	}
	return true
}
