package analyze

import (
	"math"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/ldafwd/ldafwd/report"
)

// Time segments: each pass over the captures on several cores, sharing
// nothing while it runs.
//
// The captures are cut at interval boundaries C1 < C2 < … (sender clock)
// into segments, one a core at a time. A segment reads its part of each
// file, and the window's worth on either side (a view: the file's bytes
// between two records found by pcapfile.Reader.Sync), with a streamer and
// an analysis of its own, exactly the code one core runs; what it counts
// and reports is only its own: the sender packets stamped in [Cj, Cj+1),
// their intervals, the receiver packets that go to those intervals, the
// groups that open in it, the frames whose records start in its part of
// each file. Nothing crosses between the cores but the results; the
// shards' hand-over of every record (shard.go) is what stops two cores
// from doubling one when the host puts them far apart.
//
// Reading from the middle, a segment cannot know what came before its
// view: the open groups of identities seen earlier, the largest timestamp
// so far. It reads a window more than it needs (its warm-up), and three
// things tie it to the segment before, which read the same bytes with
// the whole past behind it:
//   - the grouping of every copy in the zone [Cj − tol − w, Cj − tol): the
//     digest of (identity, end, timestamp, the group's first copy) of
//     each, summed (64-bit mixes: two groupings that differ give the
//     same sum with odds of about 2^-64). Alike, the groups open after
//     the zone are alike, so are the pairs of every record the segment
//     reports;
//   - the file offset where the segment's part starts: both must read a
//     record starting exactly there (the views' starts are a search);
//   - the largest timestamp before it, which decides what is disorder.
//
// A segment also checks its own end: its view must reach a window past
// the receiver packet that opened the next segment's intervals (until
// then a receiver packet that matches nothing goes to its intervals).
// A check that fails, an error, damage or snapped frames (whose handling
// depends on the whole captures) and the pass runs again the usual way
// (one streamer, pairing on shards), whose lines are the same: the
// report is the same byte for byte however the captures were cut.

const (
	// segMinSpan: a segment spans at least this many margins (the warm-up
	// and tail it reads besides its own part, together), so that what is read
	// twice stays a small part of the work; segments added beyond one a
	// core (segLines) at least segLongSpan.
	segMinSpan  = 3
	segLongSpan = 16
	// segLines, segMax: more segments than cores when each would hold
	// more intervals than segLines (their lines wait for the segments
	// before), at most segMax.
	segLines = 4096
	segMax   = 256
	// syncLen is what a search for a record reads.
	syncLen = 128 << 10
)

// segPlan is how a pass cuts the captures: segment j owns sender
// timestamps [cuts[j], cuts[j+1]) and reads the bytes s[j], r[j].
type segPlan struct {
	cuts []int64 // MinInt64, C1, …, MaxInt64
	s, r []segBytes
	w    int64
	tol  int64
}

// segBytes is one file's bytes a segment reads (view) and counts (own).
type segBytes struct {
	viewFrom, viewTo, ownFrom, ownTo uint64
}

func (p *segPlan) n() int { return len(p.cuts) - 1 }

// zone is the grouping digest zone between segments j-1 and j.
func (p *segPlan) zone(j int) zoneDigest {
	if j <= 0 || j >= p.n() {
		return zoneDigest{}
	}
	c := p.cuts[j] - p.tol
	return zoneDigest{lo: c - p.w, hi: c}
}

// planHook, when set (by the package's tests), may change the reporting
// pass's plan, to see its checks refuse what they must.
var planHook func(p *segPlan, sender, receiver *Capture)

// segmentRuns counts the passes run in segments (tests check that forced
// cuts did run so).
var segmentRuns atomic.Int64

// split is how many segments cfg asks for, and whether it forces them
// (tests) rather than leaving them to the captures' length.
func (c *Config) split() (n int, forced bool) {
	if c.Split > 0 {
		return c.Split, true
	}
	if c.Shards == 1 {
		return 1, false
	}
	return c.shards(), false
}

// planSegments cuts the captures for a pass pairing within w with
// tolerance tol (the reporting pass: reach is the largest delay), or
// returns nil: one core, captures that cannot be read in pieces
// (compressed, not files), a whole-capture interval, or captures too
// short for the cuts to pay.
func planSegments(sender, receiver *Capture, cfg *Config, w, tol, reach int64) *segPlan {
	width := cfg.Interval.Nanoseconds()
	n, forced := cfg.split()
	if n < 2 || width <= 0 || !sender.canSplit() || !receiver.canSplit() {
		return nil
	}
	buf := make([]byte, syncLen)
	// A segment reads before its start the zone and a window to warm up
	// in; after its end a window for the groups of its last packets to
	// close, and (reporting) the largest delay for the next intervals'
	// first packets to arrive. MaxBackStep each way for disorder.
	before := 2*w + max(tol, 0) + MaxBackStep
	after := w + max(tol, 0) + min(max(reach, 0), w) + MaxBackStep
	margin := before + after
	minSpan := segMinSpan * margin
	if forced {
		minSpan = width
	}
	end := sender.fileEnd()
	_, first, ok1 := sender.syncAt(0, buf)
	_, last, ok2 := sender.syncAt(end-min(end, syncLen), buf)
	if !ok1 || !ok2 || last <= first {
		return nil
	}
	if d := int64(last - first); !forced {
		// More segments than cores where each would hold more than
		// segLines intervals' lines, as long as they stay long enough.
		n = max(n, min(int(d/width/segLines)+1, int(d/(segLongSpan*margin)), segMax))
	}
	ts := make([]int64, n+1)
	for j := 0; j <= n; j++ {
		off := end * uint64(j) / uint64(n)
		if j == n {
			off = end - min(end, syncLen)
		}
		_, t, ok := sender.syncAt(off, buf)
		if !ok {
			return nil
		}
		ts[j] = int64(t)
	}
	cuts := []int64{math.MinInt64}
	prev := ts[0]
	for j := 1; j < n; j++ {
		c := ts[j] / width * width
		if c-prev < minSpan || ts[n]-c < minSpan {
			continue
		}
		cuts = append(cuts, c)
		prev = c
	}
	if len(cuts) < 2 {
		return nil
	}
	cuts = append(cuts, math.MaxInt64)
	p := &segPlan{cuts: cuts, w: w, tol: max(tol, 0)}
	for _, c := range []*Capture{sender, receiver} {
		m := p.n()
		sb := make([]segBytes, m)
		fend := c.fileEnd()
		for j := 0; j < m; j++ {
			sb[j].viewTo = fend
			if j > 0 {
				sb[j].viewFrom = locate(c, cuts[j]-before-MaxBackStep, false, buf)
				sb[j].ownFrom = locate(c, cuts[j], false, buf)
				sb[j-1].ownTo = sb[j].ownFrom
			}
			if j < m-1 {
				sb[j].viewTo = locate(c, cuts[j+1]+after+MaxBackStep, true, buf)
			}
		}
		sb[m-1].ownTo = fend
		for j := range sb {
			b := sb[j]
			if b.viewFrom > b.ownFrom || b.ownFrom > b.ownTo || b.ownTo > b.viewTo {
				return nil
			}
		}
		if c == sender {
			p.s = sb
		} else {
			p.r = sb
		}
	}
	return p
}

// locate finds a record of c stamped before t (after: after t) by
// bisecting the file: the last one found before t, or the file's start;
// the first found after t, or the file's end. Timestamps step back by at
// most MaxBackStep, so every record stamped t+MaxBackStep or later lies
// after the first, every one stamped t-MaxBackStep or earlier before the
// second.
func locate(c *Capture, t int64, after bool, buf []byte) uint64 {
	lo, hi := uint64(0), c.fileEnd()
	best := uint64(0)
	if after {
		best = hi
	}
	for hi-lo > 64<<10 {
		mid := lo + (hi-lo)/2
		at, ts, ok := c.syncAt(mid, buf)
		switch {
		case !ok || at >= hi:
			hi = mid
		case !after && int64(ts) < t:
			best, lo = at, mid
		case after && int64(ts) > t:
			best, hi = at, mid
		case after:
			lo = mid
		default:
			hi = mid
		}
	}
	return best
}

// segViews opens segment j's views of both captures, each counting its
// own part.
func (p *segPlan) segViews(sender, receiver *Capture, j int) (sv, rv *Capture, so, ro *ownBytes, err error) {
	if sv, err = sender.view(p.s[j].viewFrom, p.s[j].viewTo); err != nil {
		return
	}
	if rv, err = receiver.view(p.r[j].viewFrom, p.r[j].viewTo); err != nil {
		return
	}
	so = &ownBytes{from: p.s[j].ownFrom, to: p.s[j].ownTo}
	ro = &ownBytes{from: p.r[j].ownFrom, to: p.r[j].ownTo}
	return
}

// start runs fn for every segment on workers goroutines, which take the
// segments in order. done[j] is closed once segment j has run, or was
// skipped after stop; wait waits for every worker.
func (p *segPlan) start(workers int, fn func(j int)) (done []chan struct{}, stop, wait func()) {
	n := p.n()
	done = make([]chan struct{}, n)
	for j := range done {
		done[j] = make(chan struct{})
	}
	var next atomic.Int64
	var stopped atomic.Bool
	var wg sync.WaitGroup
	for range min(workers, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				j := int(next.Add(1) - 1)
				if j >= n {
					return
				}
				if !stopped.Load() {
					fn(j)
				}
				close(done[j])
			}
		}()
	}
	return done, func() { stopped.Store(true) }, wg.Wait
}

// segTick sums the segments' progress for a pass's tick, which is called
// from one goroutine at a time (under mu, which the reporting pass's
// progress takes too).
type segTick struct {
	mu     sync.Mutex
	tick   func(uint64, int64)
	frames []uint64
	bytes  []int64
}

func newSegTick(tick func(uint64, int64), n int) *segTick {
	return &segTick{tick: tick, frames: make([]uint64, n), bytes: make([]int64, n)}
}

// of is segment j's tick.
func (t *segTick) of(j int) func(uint64, int64) {
	if t.tick == nil {
		return nil
	}
	return func(frames uint64, bytes int64) {
		t.mu.Lock()
		defer t.mu.Unlock()
		t.frames[j], t.bytes[j] = frames, bytes
		var f uint64
		var b int64
		for i := range t.frames {
			f, b = f+t.frames[i], b+t.bytes[i]
		}
		t.tick(f, b)
	}
}

// segCommon is what both passes check of a segment against its
// neighbours.
type segCommon struct {
	err        error
	so, ro     *ownBytes
	sEnd, rEnd *loader
	zone       [2]zoneDigest
}

// sound says whether a segment ran through: no error, no damage, no
// frame cut by the snap length (what becomes of those depends on the
// whole captures), both ends of its part of each file passed.
func (c *segCommon) sound() bool {
	if c == nil || c.err != nil {
		return false
	}
	for _, l := range []*loader{c.sEnd, c.rEnd} {
		e := l.e
		if len(l.c.Damage) > 0 || len(e.damage) > 0 || l.c.EndedEarly != nil || e.snapped > 0 {
			return false
		}
	}
	for _, o := range []*ownBytes{c.so, c.ro} {
		if !o.passed[0] || !o.passed[1] {
			return false
		}
	}
	return true
}

// meets says whether segment c read alike what b, the one before it,
// read where they meet: the zone grouped alike, c's part of each file
// starting at a record both met, with the same largest timestamp before
// it.
func (c *segCommon) meets(b *segCommon) bool {
	if b.zone[1] != c.zone[0] {
		return false
	}
	for i, o := range []*ownBytes{c.so, c.ro} {
		q := []*ownBytes{b.so, b.ro}[i]
		if !o.hit[0] || !q.hit[1] || o.maxTS[0] != q.maxTS[1] {
			return false
		}
	}
	return true
}

// ownedData adds up the segments' counts of one end.
func ownedData(parts []*segCommon, sender bool) *endData {
	var e endData
	for _, c := range parts {
		o, l := c.ro, c.rEnd
		if sender {
			o, l = c.so, c.sEnd
		}
		x := o.owned()
		e.name = l.e.name
		e.frames += x.frames
		e.control += x.control
		e.malformed += x.malformed
		e.snapped += x.snapped
		e.linkLocal += x.linkLocal
		e.disordered += x.disordered
		e.maxBackNs = max(e.maxBackNs, l.e.maxBackNs)
	}
	return &e
}

// newSegStreamer is segment j's streamer over its views: it reads and
// pairs on the segment's goroutine and digests the zones at both its
// ends. c is what the segment's neighbours check; the streamer is nil
// when the views cannot be opened (c.err says why).
func (p *segPlan) newSegStreamer(sender, receiver *Capture, cfg *Config, keepFlows bool, limit int, par pairing, j int, tick func(uint64, int64)) (c *segCommon, st *streamer) {
	c = &segCommon{}
	sv, rv, so, ro, err := p.segViews(sender, receiver, j)
	if err != nil {
		c.err = err
		return c, nil
	}
	st = newStreamer(sv, rv, cfg.Classifier, keepFlows, limit, p.w, par, 1, tick)
	st.snd.l.own, st.rcv.l.own = so, ro
	st.snd.inline, st.rcv.inline = true, true
	st.seg = &segPairing{ownLo: p.cuts[j], ownHi: p.cuts[j+1], zone: [2]zoneDigest{p.zone(j), p.zone(j + 1)}}
	c.so, c.ro, c.sEnd, c.rEnd = so, ro, st.snd.l, st.rcv.l
	return c, st
}

// runSurveySegments is runSurvey on segments; nil when they do not join
// (the caller surveys the usual way).
func runSurveySegments(p *segPlan, sender, receiver *Capture, cfg *Config, limit int, par pairing, r0 int64, rEmpty bool, tick func(uint64, int64)) *survey {
	n := p.n()
	parts := make([]*segCommon, n)
	svs := make([]*survey, n)
	ticks := newSegTick(tick, n)
	_, _, wait := p.start(cfg.shards(), func(j int) {
		c, st := p.newSegStreamer(sender, receiver, cfg, false, limit, par, j, ticks.of(j))
		if parts[j] = c; st == nil {
			return
		}
		sv := &survey{rc: rangeCount{w: p.w, r0: r0, haveR0: !rEmpty, rEmpty: rEmpty}}
		svs[j] = sv
		lo, hi := p.cuts[j], p.cuts[j+1]
		own := func(ts uint64) bool { return int64(ts) >= lo && int64(ts) < hi }
		surveyCalls(st, sv, own, p.r[j].viewTo == receiver.fileEnd())
		if c.err = st.run(); c.err != nil {
			return
		}
		c.zone = st.seg.zone
		sv.ds, sv.matched, sv.ambS, sv.ambR, sv.nonIPPairs = st.ds, st.matched, st.ambS, st.ambR, st.nonIPPairs
		sv.maxExt = max(st.snd.maxExt, st.rcv.maxExt)
		sv.peak = st.pool.peak + sv.rc.peak
	})
	wait()
	for j, c := range parts {
		if !c.sound() || j > 0 && !c.meets(parts[j-1]) {
			return nil
		}
	}
	segmentRuns.Add(1)
	out := &survey{rc: rangeCount{w: p.w}}
	out.s, out.r = ownedData(parts, true), ownedData(parts, false)
	pr := &pairer{ds: newDelayStats()}
	var peaks []int
	for _, sv := range svs {
		if sv.sN > 0 {
			if out.sN == 0 {
				out.s0 = sv.s0
			}
			out.s1 = sv.s1
		}
		if sv.rN > 0 {
			if out.rN == 0 {
				out.r0 = sv.r0
			}
			out.r1 = sv.r1
		}
		out.sN += sv.sN
		out.rN += sv.rN
		pr.merge(&pairer{ds: sv.ds, matched: sv.matched, ambS: sv.ambS, ambR: sv.ambR, nonIPPairs: sv.nonIPPairs})
		out.maxExt = max(out.maxExt, sv.maxExt)
		out.rc.sent += sv.rc.sent
		out.rc.paired += sv.rc.paired
		out.rc.head = append(out.rc.head, sv.rc.head...)
		out.rc.tail = append(out.rc.tail, sv.rc.tail...)
		peaks = append(peaks, sv.peak)
	}
	out.peak = heldAtOnce(peaks, cfg.shards())
	out.ds, out.matched, out.ambS, out.ambR, out.nonIPPairs = pr.ds, pr.matched, pr.ambS, pr.ambR, pr.nonIPPairs
	return out
}

// runReportSegments is the reporting pass on segments. Segment 0's lines
// go out as it reports them while its views have not ended (it read the
// same records as one goroutine reading the whole captures from their
// start, so they are that one's lines); every other line is held until
// its segment has run and joined the one before, which bounds the lines
// held to those of the segments running. It returns false when the
// segments do not join: the caller then runs the pass the usual way,
// skipping the lines already written (emitted).
func runReportSegments(p *segPlan, sender, receiver *Capture, cfg *Config, st *Stats, keepFlows bool, limit int, par pairing,
	lo, hi, dmin, dmax int64, sv *survey, emit func(*report.Interval), prog *Progress, tick func(uint64, int64)) (ok bool, emitted int) {
	n := p.n()
	parts := make([]*segCommon, n)
	stats := make([]Stats, n)
	peaks := make([]int, n)
	ticks := newSegTick(tick, n)
	var mu sync.Mutex // emit, emitted, held
	held := make([][]*report.Interval, n)
	intervals := uint64(0) // reported, for progress (under ticks.mu)
	done, stop, wait := p.start(cfg.shards(), func(j int) {
		c, s := p.newSegStreamer(sender, receiver, cfg, keepFlows, limit, par, j, ticks.of(j))
		if parts[j] = c; s == nil {
			return
		}
		s.seg.ownLo, s.seg.ownHi = math.MinInt64, math.MaxInt64
		var a *analysis
		lineOut := func(l *report.Interval) {
			mu.Lock()
			defer mu.Unlock()
			if j == 0 && !a.st.snd.eof && !a.st.rcv.eof {
				emit(l)
				emitted++
				return
			}
			held[j] = append(held[j], l)
		}
		segCfg := *cfg
		if cfg.Progress != nil {
			segCfg.Progress = func(Progress) {
				ticks.mu.Lock()
				defer ticks.mu.Unlock()
				intervals++
				prog.Intervals = intervals
				cfg.Progress(*prog)
			}
		}
		a = newAnalysis(&segCfg, &stats[j], keepFlows, lo, hi, dmin, dmax, p.w, sv, lineOut, new(Progress))
		a.st = s
		a.own = &segOwn{tsLo: p.cuts[j], tsHi: p.cuts[j+1], kLo: math.MinInt32, kHi: math.MaxInt32}
		if j > 0 {
			a.own.kLo = a.lm.k(uint64(p.cuts[j]))
		}
		if j < n-1 {
			a.own.kHi = a.lm.k(uint64(p.cuts[j+1]))
		}
		s.markGroup, s.onMarks = a.groupMarks, a.addMarks
		s.onSender, s.onReceiver, s.afterFeed = a.sender, a.receiver, a.closeReady
		if c.err = s.run(); c.err != nil {
			return
		}
		if c.err = a.finish(); c.err != nil {
			return
		}
		c.zone = s.seg.zone
		peaks[j] = s.pool.peak
		if j < n-1 {
			// Its views must reach a window past the receiver packet that
			// opened the next segment's intervals, or end with the files.
			sEnd, rEnd := p.s[j].viewTo == sender.fileEnd(), p.r[j].viewTo == receiver.fileEnd()
			reach := func(end bool, last int64) bool { return end || a.own.reached && a.own.reachedAt+p.w < last }
			if !(a.own.reached || sEnd && rEnd) || !reach(sEnd, s.lastS) || !reach(rEnd, s.lastR) {
				c.err = errSegmentTail
			}
		}
	})
	joined := true
	for j := range n {
		<-done[j]
		if !parts[j].sound() || j > 0 && !parts[j].meets(parts[j-1]) {
			joined = false
			stop()
			break
		}
		mu.Lock()
		for _, l := range held[j] {
			emit(l)
			emitted++
		}
		held[j] = nil
		mu.Unlock()
	}
	wait()
	if !joined {
		return false, emitted
	}
	segmentRuns.Add(1)
	for j := range n {
		x := &stats[j]
		st.TrimmedSenderBefore += x.TrimmedSenderBefore
		st.TrimmedSenderAfter += x.TrimmedSenderAfter
		st.TrimmedReceiverBefore += x.TrimmedReceiverBefore
		st.TrimmedReceiverAfter += x.TrimmedReceiverAfter
		st.Crossed += x.Crossed
		st.ExtraReceived += x.ExtraReceived
		st.Intervals += x.Intervals
	}
	st.PeakHeld = heldAtOnce(peaks, cfg.shards())
	return true, 0
}

type segError string

func (e segError) Error() string { return string(e) }

// errSegmentTail: a segment's views ended before it could tell which
// receiver packets were its own.
const errSegmentTail = segError("segment views too short")

// heldAtOnce bounds the records segments held at once: the workers
// largest of their peaks.
func heldAtOnce(peaks []int, workers int) int {
	p := slices.Clone(peaks)
	slices.Sort(p)
	n := 0
	for i := len(p) - 1; i >= 0 && i >= len(p)-workers; i-- {
		n += p[i]
	}
	return n
}
