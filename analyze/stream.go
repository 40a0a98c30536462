package analyze

import (
	"fmt"
	"math"
	"slices"
	"unsafe"

	"github.com/ldafwd/ldafwd/classifier"
	"github.com/ldafwd/ldafwd/report"
)

// DefaultMaxDelay is Config.MaxDelay when it is not set.
const DefaultMaxDelay = 1_000_000_000 // ns

// The streaming analysis reads both captures in time order, merged, and
// pairs copies of an identity that lie within the window of each other
// (the largest one-way delay, clock offset included, plus matchSlack):
// what it holds is the packets of that window and of the intervals not
// yet estimated, not the captures.
//
// It reads the captures twice. The first pass (the survey) learns what
// the whole-capture analysis knows before it reports anything: the
// counts, the damage, the smallest and largest delays, hence the common
// time range, and the share of sender packets found at the receiver.
// The second pass pairs again with those known and estimates each
// interval as soon as no packet still to be read can belong to it. A
// survey whose pairing depended on what it was learning (a receiver clock
// behind the sender's, non-IP frames paired by the delays IP packets
// show) or that must leave snap-cut packets out is repeated with what it
// learnt, so that the numbers are exact, not estimates.

// srec is a record in flight. It fills one 64-byte cache line: the
// pairing reads each record again a window after it was fed, when it has
// left the CPU's caches, and with shards every record is copied into its
// end's queue. Its flow (the flow hash and key, 48 bytes) is kept out
// of line, only when a per-flow synopsis runs.
type srec struct {
	rec
	// closeAt is when its group closes (the group's first copy plus the
	// window): once a later record is fed the record can be handed on,
	// with no need to look at the group again.
	closeAt int64
	peerTs  uint64 // the paired copy's timestamp
	// With shards: its place in its end's order, and which end.
	seq uint64
	// fk is its flow, only with per-flow synopses. A record keeps its
	// flowPart in the pool; a copy of it that goes on (into a shard
	// set's queue, a pending receiver) takes it and gives the record the
	// one it had, so that no two records share one.
	fk     *flowPart
	k      int32 // pending receiver: the interval it goes to
	paired bool
	sender bool
	back   bool // with shards: its shard handed its pairing back
}

// flowPart is a record's flow, for the per-flow synopses.
type flowPart struct {
	hash uint64
	key  classifier.FlowKey
}

// flowOf is x's flow hash and key (zero and nil without per-flow
// synopses).
func flowOf(x *srec) (uint64, *classifier.FlowKey) {
	if x.fk == nil {
		return 0, nil
	}
	return x.fk.hash, &x.fk.key
}

// group is the copies of one identity at both ends within the window of
// its first copy, each end's in time order.
type group struct {
	hash  uint64
	first int64
	s, r  []*srec
}

// groupTable maps an identity to its open group: open addressing on the
// identity (already a uniform hash), deletion by moving back the entries
// after it, so that a table that sees every packet inserted and deleted
// never fills with tombstones as a Go map's probe sequences do.
type groupTable struct {
	slots []gslot
	n     int
}

// gslot holds the identity beside its group, so that a probe reads one
// cache line rather than a group per step.
type gslot struct {
	h uint64
	g *group
}

func (t *groupTable) get(h uint64) *group {
	if t.n == 0 {
		return nil
	}
	m := uint64(len(t.slots) - 1)
	for i := h & m; ; i = (i + 1) & m {
		sl := &t.slots[i]
		if sl.g == nil || sl.h == h {
			return sl.g
		}
	}
}

func (t *groupTable) put(g *group) {
	if 2*(t.n+1) > len(t.slots) {
		old := t.slots
		t.slots, t.n = make([]gslot, max(1024, 2*len(old))), 0
		for _, x := range old {
			if x.g != nil {
				t.put(x.g)
			}
		}
	}
	m := uint64(len(t.slots) - 1)
	i := g.hash & m
	for t.slots[i].g != nil {
		i = (i + 1) & m
	}
	t.slots[i] = gslot{g.hash, g}
	t.n++
}

// del removes g if it is the open group of its identity.
func (t *groupTable) del(g *group) {
	m := uint64(len(t.slots) - 1)
	i := g.hash & m
	for t.slots[i].g != g {
		if t.slots[i].g == nil {
			return
		}
		i = (i + 1) & m
	}
	t.slots[i] = gslot{}
	t.n--
	// Move back the entries that probed past the freed slot.
	for j := (i + 1) & m; t.slots[j].g != nil; j = (j + 1) & m {
		home := t.slots[j].h & m
		if (j > i && (home <= i || home > j)) || (j < i && home <= i && home > j) {
			t.slots[i], t.slots[j] = t.slots[j], gslot{}
			i = j
		}
	}
}

// endStream reads one capture's records in time order: a record is handed
// out once no record still to be read can be stamped before it (disorder
// is bounded by MaxBackStep, larger steps back are refused by the loader).
// Records wait in a ring sorted by time: in a capture in time order each
// goes at the end, and a late one moves back only past the few it is
// late for.
type endStream struct {
	l        *loader
	wait     ring[*srec]
	eof      bool
	limit    int // identity extent past which a record is left out (snap length)
	excluded uint64
	maxExt   int // largest identity extent of a record read
	keepFlow bool
	pool     *srecPool
	err      error // sticky: the loader's refusal

	// The capture is read and parsed ahead, on its own goroutine, in
	// batches: reading and parsing take a core of their own while the
	// pairing runs on another.
	ahead        chan *batch
	free         chan *batch
	stop         chan struct{}
	cur          *batch
	at           int
	maxTS        uint64 // the loader's largest timestamp as of the last record taken
	frames       uint64 // the capture's frames and bytes read, as of the last batch
	bytes        int64
	onBatch      func()
	readerExited chan struct{}
	// inline: the capture is read on the caller's goroutine (a segment's,
	// segment.go: each core then reads and pairs its own records).
	inline bool
}

// loaded is one record as the reader hands it over (32 bytes: every byte
// of it crosses from the reader's core to the pairing's, so a record's
// flow goes in a slice of its own, and only when it is kept).
type loaded struct {
	r     rec
	maxTS uint64
}

type batch struct {
	recs   []loaded
	flows  []flowPart // recs[i]'s flow, with keepFlow
	frames uint64
	bytes  int64
	end    bool  // the capture is read (and the loader finished)
	err    error // the loader's refusal
}

const (
	batchLen   = 4096
	batchAhead = 4
)

// start reads ahead on a goroutine until the capture ends, the loader
// refuses it, or close.
func (e *endStream) start() {
	if e.ahead != nil || e.inline {
		return
	}
	e.ahead, e.free = make(chan *batch, batchAhead), make(chan *batch, batchAhead+2)
	e.stop, e.readerExited = make(chan struct{}), make(chan struct{})
	for range batchAhead + 2 {
		b := &batch{recs: make([]loaded, 0, batchLen)}
		if e.keepFlow {
			b.flows = make([]flowPart, 0, batchLen)
		}
		e.free <- b
	}
	go func() {
		defer close(e.readerExited)
		for {
			var b *batch
			select {
			case b = <-e.free:
			case <-e.stop:
				return
			}
			e.fill(b)
			select {
			case e.ahead <- b:
			case <-e.stop:
				return
			}
			if b.end || b.err != nil {
				return
			}
		}
	}()
}

// fill reads the next batch of records into b.
func (e *endStream) fill(b *batch) {
	b.recs, b.flows, b.end, b.err = b.recs[:0], b.flows[:0], false, nil
	for len(b.recs) < batchLen {
		r, fh, key, ok, err := e.l.next()
		if err != nil {
			b.err = err
			break
		}
		if !ok {
			e.l.finish()
			b.end = true
			break
		}
		b.recs = append(b.recs, loaded{r: r, maxTS: e.l.maxTS})
		if e.keepFlow {
			b.flows = append(b.flows, flowPart{fh, *key})
		}
	}
	b.frames, b.bytes = e.l.c.Frames, e.l.c.BytesRead()
}

// close stops the reader and waits for it: the capture is then the
// caller's again (to rewind it).
func (e *endStream) close() {
	if e.stop == nil {
		return
	}
	close(e.stop)
	<-e.readerExited
	e.stop = nil
}

// next is the loader's next record, from the batches read ahead; ok is
// false at the end of the capture.
func (e *endStream) next() (x *loaded, ok bool, err error) {
	for e.cur == nil || e.at == len(e.cur.recs) {
		if e.cur != nil {
			if e.cur.err != nil {
				return nil, false, e.cur.err
			}
			if e.cur.end {
				return nil, false, nil
			}
			if !e.inline {
				e.free <- e.cur
			}
		}
		if e.inline {
			if e.cur == nil {
				e.cur = &batch{recs: make([]loaded, 0, batchLen)}
				if e.keepFlow {
					e.cur.flows = make([]flowPart, 0, batchLen)
				}
			}
			e.fill(e.cur)
			e.at = 0
		} else {
			e.cur, e.at = <-e.ahead, 0
		}
		e.frames, e.bytes = e.cur.frames, e.cur.bytes
		if e.onBatch != nil {
			e.onBatch()
		}
	}
	x = &e.cur.recs[e.at]
	e.at++
	e.maxTS = x.maxTS
	return x, true, nil
}

// lastFlow is the flow of the record next returned last (keepFlow).
func (e *endStream) lastFlow() flowPart { return e.cur.flows[e.at-1] }

// done says the capture is read and every record handed out.
func (e *endStream) done() bool { return e.eof && e.wait.n == 0 }

// peek returns the next record in time order (nil at the end).
func (e *endStream) peek() (*srec, error) {
	if e.err != nil {
		return nil, e.err
	}
	for {
		if e.wait.n > 0 && (e.eof || e.wait.front().ts+MaxBackStep < e.maxTS) {
			return e.wait.front(), nil
		}
		if e.eof {
			return nil, nil
		}
		l, ok, err := e.next()
		if err != nil {
			e.err = err
			return nil, err
		}
		if !ok {
			e.eof = true
			continue
		}
		e.maxExt = max(e.maxExt, int(l.r.ext))
		if int(l.r.ext) > e.limit {
			e.excluded++
			continue
		}
		x := e.pool.get()
		x.rec = l.r
		if e.keepFlow {
			*e.pool.part(x) = e.lastFlow()
		}
		e.wait.push(x)
		// Only past strictly later records: equal stamps keep file order.
		for i := e.wait.n - 1; i > 0 && x.ts < e.wait.at(i-1).ts; i-- {
			e.wait.swap(i, i-1)
		}
	}
}

func (e *endStream) pop() *srec { return e.wait.pop() }

// ring is a FIFO queue that grows by doubling and never moves what it
// holds otherwise.
type ring[T any] struct {
	buf     []T
	head, n int
}

func (r *ring[T]) push(x T) { *r.grow() = x }

// grow makes room for one more at the back and returns its slot, which
// holds whatever it held last (the zero value, unless a drop left it).
func (r *ring[T]) grow() *T {
	if r.n == len(r.buf) {
		nb := make([]T, max(64, 2*len(r.buf)))
		for i := 0; i < r.n; i++ {
			nb[i] = r.at(i)
		}
		r.buf, r.head = nb, 0
	}
	r.n++
	return r.ptr(r.n - 1)
}

func (r *ring[T]) at(i int) T { return r.buf[(r.head+i)&(len(r.buf)-1)] }

func (r *ring[T]) ptr(i int) *T { return &r.buf[(r.head+i)&(len(r.buf)-1)] }

func (r *ring[T]) swap(i, j int) {
	m := len(r.buf) - 1
	a, b := &r.buf[(r.head+i)&m], &r.buf[(r.head+j)&m]
	*a, *b = *b, *a
}

func (r *ring[T]) front() T { return r.buf[r.head] }

func (r *ring[T]) pop() T {
	var zero T
	x := r.buf[r.head]
	r.buf[r.head] = zero
	r.drop()
	return x
}

// drop removes the front and leaves its slot as it is, for a grow to hand
// out again.
func (r *ring[T]) drop() {
	r.head = (r.head + 1) & (len(r.buf) - 1)
	r.n--
}

// srecPool recycles records, with their flowParts: a long capture
// allocates only what is in flight at once. held counts the records out
// of the pool, peak its largest value.
type srecPool struct {
	free       []*srec
	held, peak int
}

func (p *srecPool) get() *srec {
	p.held++
	p.peak = max(p.peak, p.held)
	if n := len(p.free); n > 0 {
		x := p.free[n-1]
		p.free = p.free[:n-1]
		return x
	}
	return &srec{}
}

// put takes x back; a flowPart it still owns stays with it.
func (p *srecPool) put(x *srec) {
	p.held--
	*x = srec{fk: x.fk}
	p.free = append(p.free, x)
}

// part is a flowPart for x, which it then owns.
func (p *srecPool) part(x *srec) *flowPart {
	if x.fk == nil {
		x.fk = new(flowPart)
	}
	return x.fk
}

// pairing is what the pairing of copies within an identity needs to know
// of the whole captures: the tolerance for a receiver copy stamped before
// its sender copy, and for non-IP frames the largest delay IP packets show
// (known false: none seen, pair without it).
type pairing struct {
	tol   int64
	dmax  int64
	known bool
}

// delayStats are the delays the groups show, as match computes them.
type delayStats struct {
	dmin, dmax int64 // unambiguous IP pairs
	umin, umax int64 // unambiguous pairs of any kind
	fmin       int64 // first copy against first copy
	pmin, pmax int64 // every pair made
}

func newDelayStats() delayStats {
	return delayStats{dmin: math.MaxInt64, dmax: math.MinInt64, umin: math.MaxInt64, umax: math.MinInt64,
		fmin: math.MaxInt64, pmin: math.MaxInt64, pmax: math.MinInt64}
}

// pairer groups copies by identity within the window and pairs each
// group once it is closed. The streamer has one, or with shards one per
// shard, each pairing the identities whose hash falls in it (shard.go).
type pairer struct {
	w          int64
	par        pairing
	groups     groupTable
	gq         ring[*group]
	gfree      []*group
	ds         delayStats
	matched    uint64
	ambS, ambR uint64
	nonIPPairs bool // a non-IP group had copies at both ends

	// markGroup, when set, turns a closed group whose pairing is uncertain
	// into the marks of the intervals it spoils (appended to marks). It
	// only reads what does not change during the pass: shards call it.
	markGroup func(g *group, dst []badMark) []badMark
	marks     []badMark

	// seg is set when the pairer reads a segment of the captures
	// (segment.go): it counts only the groups that open in the segment,
	// and digests how it grouped the copies of each zone.
	seg *segPairing
}

// segPairing is a segment's part of pairing: the groups it counts (first
// copy in [ownLo, ownHi)) and the two zones whose grouping its
// neighbours must have seen alike.
type segPairing struct {
	ownLo, ownHi int64
	zone         [2]zoneDigest
}

// zoneDigest sums a digest of every copy stamped in [lo, hi): its
// identity, end, timestamp and the first copy of its group. Two readings
// of the captures that agree on it grouped the zone's copies alike, so
// their groups (each within the window of its first copy) are alike from
// the zone on.
type zoneDigest struct {
	lo, hi int64
	sum, n uint64
}

func (z *zoneDigest) add(h uint64, first, t int64, sender bool) {
	if t < z.lo || t >= z.hi {
		return
	}
	v := h ^ uint64(first)*0x9e3779b97f4a7c15 ^ uint64(t)*0xbf58476d1ce4e5b9
	if sender {
		v = ^v
	}
	v ^= v >> 31
	v *= 0x94d049bb133111eb
	v ^= v >> 29
	z.sum += v
	z.n++
}

// closeBefore closes the groups whose window ended before t.
func (p *pairer) closeBefore(t int64) {
	for p.gq.n > 0 && p.gq.front().first+p.w < t {
		p.closeGroup()
	}
}

// closeAll closes every open group.
func (p *pairer) closeAll() {
	for p.gq.n > 0 {
		p.closeGroup()
	}
}

// add puts x, stamped t, into the open group of its identity, or opens
// one; the groups whose window ended before t must be closed first.
func (p *pairer) add(x *srec, t int64, sender bool) {
	g := p.groups.get(x.hash)
	if g == nil {
		if n := len(p.gfree); n > 0 {
			g, p.gfree = p.gfree[n-1], p.gfree[:n-1]
		} else {
			g = &group{}
		}
		g.hash, g.first = x.hash, t
		p.groups.put(g)
		p.gq.push(g)
	}
	x.closeAt = g.first + p.w
	if p.seg != nil {
		p.seg.zone[0].add(x.hash, g.first, t, sender)
		p.seg.zone[1].add(x.hash, g.first, t, sender)
	}
	if sender {
		g.s = append(g.s, x)
	} else {
		g.r = append(g.r, x)
	}
}

// merge adds what o learnt to p (shards' pairers at the end of a pass):
// counts add up, extremes combine.
func (p *pairer) merge(o *pairer) {
	a, b := &p.ds, &o.ds
	a.dmin, a.dmax = min(a.dmin, b.dmin), max(a.dmax, b.dmax)
	a.umin, a.umax = min(a.umin, b.umin), max(a.umax, b.umax)
	a.fmin = min(a.fmin, b.fmin)
	a.pmin, a.pmax = min(a.pmin, b.pmin), max(a.pmax, b.pmax)
	p.matched += o.matched
	p.ambS += o.ambS
	p.ambR += o.ambR
	p.nonIPPairs = p.nonIPPairs || o.nonIPPairs
}

// streamer merges the two ends, groups copies by identity within the
// window and hands records on in time order once their group is closed.
type streamer struct {
	pairer
	snd, rcv *endStream
	pool     srecPool
	sq, rq   ring[*srec]
	// lastS, lastR: the timestamp of the last record fed from each end.
	lastS, lastR int64
	fedS, fedR   bool
	now          int64 // the last record fed: groups that closed before it are closed
	ended        bool  // every record fed and every group closed
	// shards, when more than one, pair on goroutines of their own
	// (shard.go); sh is their state during run.
	shards int
	sh     *shardSet

	onMarks    func(marks []badMark)
	onSender   func(x *srec) (keep bool)
	onReceiver func(x *srec) (keep bool)
	afterFeed  func() error
}

func newStreamer(sender, receiver *Capture, cl *classifier.Classifier, keepFlows bool, limit int, w int64, par pairing, shards int, tick func(frames uint64, bytes int64)) *streamer {
	s := &streamer{pairer: pairer{w: w, par: par, ds: newDelayStats()}, shards: shards}
	s.snd = &endStream{l: newLoader(sender, cl, nil), limit: limit, keepFlow: keepFlows, pool: &s.pool}
	s.rcv = &endStream{l: newLoader(receiver, cl, nil), limit: limit, keepFlow: keepFlows, pool: &s.pool}
	if tick != nil {
		on := func() { tick(s.snd.frames+s.rcv.frames, s.snd.bytes+s.rcv.bytes) }
		s.snd.onBatch, s.rcv.onBatch = on, on
	}
	return s
}

// run feeds every record. A refusal of the sender's capture (disorder)
// comes first, as in the whole-capture analysis, which reads it first.
// Both captures are the caller's again when it returns.
func (s *streamer) run() error {
	s.snd.start()
	s.rcv.start()
	defer s.snd.close()
	defer s.rcv.close()
	if s.shards > 1 {
		s.sh = newShardSet(s.shards, &s.pairer)
		defer s.sh.stop()
	}
	var rErr error
	for {
		xs, err := s.snd.peek()
		if err != nil {
			return err
		}
		var xr *srec
		if rErr == nil {
			if xr, err = s.rcv.peek(); err != nil {
				rErr = err
				xr = nil
			}
		}
		if rErr != nil {
			// The receiver is refused; the sender's own refusal, if any,
			// is the one to report.
			for {
				_, ok, err := s.snd.next()
				if err != nil {
					return err
				}
				if !ok {
					return rErr
				}
			}
		}
		if xs == nil && xr == nil {
			break
		}
		if xs != nil && (xr == nil || xs.ts <= xr.ts) {
			s.feed(s.snd.pop(), true)
		} else {
			s.feed(s.rcv.pop(), false)
		}
		if s.afterFeed != nil {
			if err := s.afterFeed(); err != nil {
				return err
			}
		}
	}
	if s.sh != nil {
		// The last window's groups close a batch's span at a time (as
		// they would if records went on), so that their records come back
		// and are handed on a few at a time, not all in the last batch.
		for t := s.now + s.sh.span; t-s.sh.span <= s.now+s.w; t += s.sh.span {
			s.sh.flush(t, false)
			s.sh.drain(s)
			if s.afterFeed != nil {
				if err := s.afterFeed(); err != nil {
					return err
				}
			}
		}
		s.sh.finish(s.now)
	} else {
		s.closeAll()
	}
	s.ended = true
	s.drain()
	if s.afterFeed != nil {
		return s.afterFeed()
	}
	return nil
}

func (s *streamer) feed(x *srec, sender bool) {
	t := int64(x.ts)
	s.now = t
	if sender {
		s.lastS, s.fedS = t, true
	} else {
		s.lastR, s.fedR = t, true
	}
	if s.sh != nil {
		// Its end's queue keeps a copy and its shard pairs it: the
		// record is free again at once.
		s.sh.dispatch(x, t, sender)
		s.pool.put(x)
		// Held: the streamer's records and those fed and not handed on.
		s.pool.peak = max(s.pool.peak, s.pool.held+s.sh.fed[0].n+s.sh.fed[1].n)
		s.sh.drain(s)
		return
	}
	s.closeBefore(t)
	s.add(x, t, sender)
	if sender {
		s.sq.push(x)
	} else {
		s.rq.push(x)
	}
	s.drain()
}

// drain hands on the records at the front of each end whose group is
// closed.
func (s *streamer) drain() {
	if s.sh != nil {
		s.sh.drain(s)
		return
	}
	if len(s.marks) > 0 && s.onMarks != nil {
		s.onMarks(s.marks)
	}
	s.marks = s.marks[:0]
	for s.sq.n > 0 && (s.ended || s.sq.front().closeAt < s.now) {
		x := s.sq.pop()
		if !s.onSender(x) {
			s.pool.put(x)
		}
	}
	for s.rq.n > 0 && (s.ended || s.rq.front().closeAt < s.now) {
		x := s.rq.pop()
		if !s.onReceiver(x) {
			s.pool.put(x)
		}
	}
}

// unhanded is how many records of one end were fed and not yet handed
// on, and the oldest one's timestamp.
func (s *streamer) unhanded(sender bool) (n int, oldest int64) {
	if s.sh != nil {
		return s.sh.unhanded(sender)
	}
	q := &s.rq
	if sender {
		q = &s.sq
	}
	if q.n > 0 {
		oldest = int64(q.front().ts)
	}
	return q.n, oldest
}

// closeGroup pairs the oldest open group's copies as match does: the
// first walk's ambiguity and delays, then first in first out.
func (p *pairer) closeGroup() {
	p.touchAhead()
	g := p.gq.pop()
	p.groups.del(g)
	p.pair(g)
	// Its copies know when it closed (closeAt): the group is free for
	// another identity.
	clear(g.s)
	clear(g.r)
	g.s, g.r = g.s[:0], g.r[:0]
	p.gfree = append(p.gfree, g)
}

// touchAhead prefetches, in stages, what closing the groups ahead of
// the front will read. They were written a window ago (a second, at
// default flags) and have left the CPU's caches, and each is a chain of
// dependent loads — the group, its copies' slice, their records, its
// identity table slot — that would otherwise miss one after the other
// as each group closes. The group closeAhead places behind the front is
// fetched; by the time it is closeAhead/2 behind, its slices and slot;
// at closeAhead/4, its records.
func (p *pairer) touchAhead() {
	n := p.gq.n
	if n > closeAhead {
		prefetch(uintptr(unsafe.Pointer(p.gq.at(closeAhead))))
	}
	if n > closeAhead/2 {
		g := p.gq.at(closeAhead / 2)
		prefetch(uintptr(unsafe.Pointer(&p.groups.slots[g.hash&uint64(len(p.groups.slots)-1)])))
		if len(g.s) > 0 {
			prefetch(uintptr(unsafe.Pointer(&g.s[0])))
		}
		if len(g.r) > 0 {
			prefetch(uintptr(unsafe.Pointer(&g.r[0])))
		}
	}
	if n > closeAhead/4 {
		g := p.gq.at(closeAhead / 4)
		for _, x := range g.s {
			prefetch(uintptr(unsafe.Pointer(x)))
		}
		for _, x := range g.r {
			prefetch(uintptr(unsafe.Pointer(x)))
		}
	}
}

// closeAhead is how many groups ahead of the one closing touchAhead
// starts fetching.
const closeAhead = 16

// pair pairs a closed group's copies.
func (p *pairer) pair(g *group) {
	// A segment counts only the groups that open in it (segment.go); its
	// records are paired all the same.
	var dummy delayStats
	ds, counts := &p.ds, true
	if p.seg != nil && (g.first < p.seg.ownLo || g.first >= p.seg.ownHi) {
		ds, counts = &dummy, false
	}
	gs, gr := g.s, g.r
	if len(gs) > 1 {
		for _, x := range gs {
			x.flags |= recAmbiguous
		}
		if counts {
			p.ambS += uint64(len(gs))
		}
	}
	if len(gr) > 1 {
		for _, x := range gr {
			x.flags |= recAmbiguous
		}
		if counts {
			p.ambR += uint64(len(gr))
		}
	}
	if len(gs) == 0 || len(gr) == 0 {
		return
	}
	d := int64(gr[0].ts) - int64(gs[0].ts)
	ds.fmin = min(ds.fmin, d)
	if len(gs) == 1 && len(gr) == 1 {
		ds.umin, ds.umax = min(ds.umin, d), max(ds.umax, d)
		if gs[0].flags&recNonIP == 0 {
			ds.dmin, ds.dmax = min(ds.dmin, d), max(ds.dmax, d)
		}
	}
	nonIP := gs[0].flags&recNonIP != 0
	p.nonIPPairs = p.nonIPPairs || (nonIP && counts)
	k := 0
	for _, j := range gr {
		for nonIP && p.par.known && k < len(gs) && int64(j.ts)-int64(gs[k].ts) > p.par.dmax+matchSlack {
			k++ // too old to be this copy, or any later one
		}
		if k == len(gs) {
			break
		}
		i := gs[k]
		if int64(i.ts) > int64(j.ts)+p.par.tol {
			continue // sent after it was received: not this copy
		}
		i.paired, i.peerTs = true, j.ts
		j.paired, j.peerTs = true, i.ts
		d := int64(j.ts) - int64(i.ts)
		ds.pmin, ds.pmax = min(ds.pmin, d), max(ds.pmax, d)
		if counts {
			p.matched++
		}
		k++
	}
	uncertain := false
	if len(gs) > 1 && k > 0 {
		for _, x := range gs {
			uncertain = uncertain || !x.paired
		}
		for _, x := range gr {
			uncertain = uncertain || !x.paired
		}
	}
	if uncertain && p.markGroup != nil {
		p.marks = p.markGroup(g, p.marks)
	}
}

// final is the pairing and delays the whole captures give, as match
// settles them: unambiguous IP pairs, else unambiguous pairs of any kind,
// else (known false) every pair made with the first copies' tolerance.
func (ds delayStats) final() (dmin, dmax int64, par pairing) {
	known := true
	switch {
	case ds.dmin <= ds.dmax:
		dmin, dmax = ds.dmin, ds.dmax
	case ds.umin <= ds.umax:
		dmin, dmax = ds.umin, ds.umax
	default:
		dmin, dmax, known = ds.fmin, math.MaxInt64/4, false
	}
	par = pairing{tol: max(0, -dmin) + matchSlack, dmax: dmax, known: known}
	if !known {
		dmin, dmax = ds.pmin, ds.pmax
	}
	return dmin, dmax, par
}

// rangeCount counts the sender's packets (and those paired) inside the
// common range [lo, hi] before lo and hi are known: lo lies within the
// window around the receiver's first record and hi within the window
// before its last, so only the records near those two are kept, each
// with whether it paired; the others are counted.
type rangeCount struct {
	w              int64
	r0             int64
	haveR0         bool
	sent, paired   uint64 // surely inside
	head, tail     []tsPaired
	rEnded, rEmpty bool
	peak           int // most records kept at once
}

type tsPaired struct {
	ts     int64
	paired bool
}

func (c *rangeCount) add(ts int64, paired bool, rLast int64, haveRLast bool) {
	switch {
	case c.rEmpty:
		return // nothing to compare: refused anyway
	case !c.haveR0:
		c.head = append(c.head, tsPaired{ts, paired})
		return
	case ts < c.r0-c.w:
		return // before lo, surely
	case ts <= c.r0+c.w:
		c.head = append(c.head, tsPaired{ts, paired})
		c.peak = max(c.peak, len(c.head)+len(c.tail))
		return
	case c.rEnded && ts > rLast+c.w:
		return // after hi, surely
	}
	c.tail = append(c.tail, tsPaired{ts, paired})
	c.peak = max(c.peak, len(c.head)+len(c.tail))
	c.settle(rLast, haveRLast)
}

// settle counts the kept records that are surely before hi now that the
// receiver has been read up to rLast.
func (c *rangeCount) settle(rLast int64, haveRLast bool) {
	if !haveRLast {
		return
	}
	n := 0
	for n < len(c.tail) && c.tail[n].ts <= rLast-c.w {
		c.sent++
		if c.tail[n].paired {
			c.paired++
		}
		n++
	}
	if n > 0 {
		c.tail = c.tail[:copy(c.tail, c.tail[n:])]
	}
}

// share counts inside [lo, hi].
func (c *rangeCount) share(lo, hi int64) (in, paired uint64) {
	in, paired = c.sent, c.paired
	for _, l := range [][]tsPaired{c.head, c.tail} {
		for _, x := range l {
			if x.ts >= lo && x.ts <= hi {
				in++
				if x.paired {
					paired++
				}
			}
		}
	}
	return in, paired
}

// survey is what the first pass learns.
type survey struct {
	s, r           *endData // counts and damage; no records
	sN, rN         uint64   // measured records (after snap exclusion)
	s0, s1, r0, r1 int64
	ds             delayStats
	matched        uint64
	ambS, ambR     uint64
	nonIPPairs     bool
	maxExt         int
	sExcl, rExcl   uint64
	rc             rangeCount
	peak           int
}

func runSurvey(sender, receiver *Capture, cfg *Config, keepFlows bool, limit int, w int64, par pairing, tick func(uint64, int64)) (*survey, error) {
	if err := sender.Rewind(); err != nil {
		return nil, err
	}
	if err := receiver.Rewind(); err != nil {
		return nil, err
	}
	sv := &survey{rc: rangeCount{w: w}}
	st := newStreamer(sender, receiver, cfg.Classifier, false, limit, w, par, cfg.shards(), tick)
	surveyCalls(st, sv, nil, true)
	// The receiver's first record is known before any sender record is
	// handed on: ask for it before the first feed.
	st.snd.start()
	st.rcv.start()
	if x, err := st.rcv.peek(); err == nil {
		if x != nil {
			sv.rc.r0, sv.rc.haveR0 = int64(x.ts), true
		} else {
			sv.rc.rEmpty = true
		}
	}
	if err := st.run(); err != nil {
		return nil, err
	}
	sv.s, sv.r = st.snd.l.e, st.rcv.l.e
	sv.ds, sv.matched, sv.ambS, sv.ambR, sv.nonIPPairs = st.ds, st.matched, st.ambS, st.ambR, st.nonIPPairs
	sv.maxExt = max(st.snd.maxExt, st.rcv.maxExt)
	sv.sExcl, sv.rExcl = st.snd.excluded, st.rcv.excluded
	sv.peak = st.pool.peak + sv.rc.peak
	return sv, nil
}

// surveyCalls sets st's calls to count into sv: every record, or with
// own only the records it owns (a segment's). rEnds says the receiver's
// records read end where its capture does.
func surveyCalls(st *streamer, sv *survey, own func(ts uint64) bool, rEnds bool) {
	// rSeen is the latest receiver timestamp read: its last record is
	// stamped no earlier. A record waiting to be fed counts, so that a gap
	// in the receiver's capture does not keep the sender's records.
	rSeen := func() (int64, bool) {
		if st.rcv.wait.n > 0 {
			return max(st.lastR, int64(st.rcv.wait.at(st.rcv.wait.n-1).ts)), true
		}
		return st.lastR, st.fedR
	}
	st.onSender = func(x *srec) bool {
		if own != nil && !own(x.ts) {
			return false
		}
		if sv.sN == 0 {
			sv.s0 = int64(x.ts)
		}
		sv.sN++
		sv.s1 = int64(x.ts)
		rl, ok := rSeen()
		sv.rc.add(int64(x.ts), x.paired, rl, ok)
		return false
	}
	st.onReceiver = func(x *srec) bool {
		if own != nil && !own(x.ts) {
			return false
		}
		if sv.rN == 0 {
			sv.r0 = int64(x.ts)
		}
		sv.rN++
		sv.r1 = int64(x.ts)
		return false
	}
	st.afterFeed = func() error {
		if st.rcv.done() && rEnds {
			sv.rc.rEnded = true
		}
		rl, ok := rSeen()
		sv.rc.settle(rl, ok)
		return nil
	}
}

// snapLimit is excludeSnapped's limit: the identity extent past which a
// record is left out at both ends (math.MaxInt: none).
func snapLimit(s, r *endData, snapS, snapR uint32) int {
	if s.snapped == 0 && r.snapped == 0 {
		return math.MaxInt
	}
	limit := math.MaxInt
	for _, l := range []int{int(snapS), int(snapR), s.minSnap, r.minSnap} {
		if l > 0 {
			limit = min(limit, l)
		}
	}
	return limit - (14 + 8)
}

// runStream is Run reading the captures as streams (see above).
func runStream(sender, receiver *Capture, cfg Config, keepFlows bool, emit func(*report.Interval), prog *Progress) (Stats, error) {
	var st Stats
	w := cfg.MaxDelay.Nanoseconds()
	if w <= 0 {
		w = DefaultMaxDelay
	}
	w += matchSlack
	pass := 0
	var readBefore uint64 // frames of the passes before this one
	var tick func(uint64, int64)
	if cfg.Progress != nil {
		prog.Passes = 2
		tick = func(frames uint64, bytes int64) {
			prog.Pass = pass
			prog.Phase = "survey"
			if pass >= prog.Passes {
				prog.Phase = "report"
			}
			prog.Frames, prog.Bytes = frames, bytes
			prog.Read = readBefore + prog.Frames
			cfg.Progress(*prog)
		}
	}
	nextPass := func() {
		readBefore += sender.Frames + receiver.Frames
		pass++
		prog.Passes = max(prog.Passes, pass+1)
	}

	// The survey, repeated while what it learnt changes how it pairs.
	limit := math.MaxInt
	par := pairing{tol: matchSlack, dmax: math.MaxInt64 / 4}
	var sv *survey
	for {
		if pass > 0 {
			nextPass()
		} else {
			pass = 1
		}
		var err error
		sv = nil
		if limit == math.MaxInt {
			if p := planSegments(sender, receiver, &cfg, w, par.tol, 0); p != nil {
				if r0, rEmpty, err := firstStamp(receiver, &cfg); err == nil {
					sv = runSurveySegments(p, sender, receiver, &cfg, limit, par, r0, rEmpty, tick)
				}
			}
		}
		if sv == nil {
			if sv, err = runSurvey(sender, receiver, &cfg, keepFlows, limit, w, par, tick); err != nil {
				return Stats{}, err
			}
		}
		if pass == 1 {
			if err := endStats(&st, sv.s, sv.r, cfg.InvalidateDamaged); err != nil {
				return st, err
			}
			if l := snapLimit(sv.s, sv.r, sender.SnapLen(), receiver.SnapLen()); l < sv.maxExt {
				limit = l
				continue
			}
		}
		if sv.sN == 0 || sv.rN == 0 {
			break // refused below
		}
		_, _, want := sv.ds.final()
		if want == par || (want.tol == par.tol && (!want.known || !sv.nonIPPairs)) {
			break
		}
		par = want
	}
	st.SenderSnapExcluded, st.ReceiverSnapExcluded = sv.sExcl, sv.rExcl
	if n := st.SenderSnapExcluded + st.ReceiverSnapExcluded; n > 0 {
		st.Warnings = append(st.Warnings, fmt.Sprintf("%d sender and %d receiver frames left out: their identity reaches past the snap length (%d and %d bytes) and the two ends could hash different bytes",
			st.SenderSnapExcluded, st.ReceiverSnapExcluded, sender.SnapLen(), receiver.SnapLen()))
	}
	if sv.sN == 0 || sv.rN == 0 {
		return st, fmt.Errorf("nothing to compare: %s has %d measured frames, %s %d", sv.s.name, sv.sN, sv.r.name, sv.rN)
	}
	st.SenderAmbiguous, st.ReceiverAmbiguous = sv.ambS, sv.ambR
	st.TruthAmbiguous = st.SenderAmbiguous
	st.Matched = sv.matched
	dmin, dmax, par := sv.ds.final()
	notSame := func(share float64) error {
		return fmt.Errorf("these captures do not see the same traffic: %.1f %% of sender packets found at the receiver (%s, %s; at least %.0f %% needed)",
			100*share, sv.s.name, sv.r.name, 100*MinMatchedShare)
	}
	if sv.matched == 0 {
		return st, notSame(0)
	}
	s0, s1, r0, r1 := sv.s0, sv.s1, sv.r0, sv.r1
	lo, hi := max(s0, r0-dmin), min(s1, r1-dmax)
	if lo > hi {
		return st, fmt.Errorf("these captures share no time range: %s spans %s, %s %s (receiver clock), and delays run %.3f..%.3f ms",
			sv.s.name, span(s0, s1), sv.r.name, span(r0, r1), float64(dmin)/1e6, float64(dmax)/1e6)
	}
	in, paired := sv.rc.share(lo, hi)
	st.MatchedShare = float64(paired) / float64(max(in, 1))
	if st.MatchedShare < MinMatchedShare {
		return st, notSame(st.MatchedShare)
	}
	st.RangeStartNs, st.RangeEndNs = uint64(lo), uint64(hi)
	peak := sv.peak

	// The pass that reports.
	nextPass()
	prog.Passes = pass
	if err := sender.Rewind(); err != nil {
		return st, err
	}
	if err := receiver.Rewind(); err != nil {
		return st, err
	}
	if p := planSegments(sender, receiver, &cfg, w, par.tol, dmax); p != nil && limit == math.MaxInt && len(st.Damage) == 0 {
		if planHook != nil {
			planHook(p, sender, receiver)
		}
		ok, emitted := runReportSegments(p, sender, receiver, &cfg, &st, keepFlows, limit, par, lo, hi, dmin, dmax, sv, emit, prog, tick)
		if ok {
			st.PeakHeld, st.Segments = max(peak, st.PeakHeld), p.n()
			return trimWarning(st, lo, hi), nil
		}
		// Again the usual way (st is as it was): the lines written are
		// the first it writes.
		if emitted > 0 {
			out := emit
			emit = func(l *report.Interval) {
				if emitted > 0 {
					emitted--
					return
				}
				out(l)
			}
		}
		if err := sender.Rewind(); err != nil {
			return st, err
		}
		if err := receiver.Rewind(); err != nil {
			return st, err
		}
	}
	a := newAnalysis(&cfg, &st, keepFlows, lo, hi, dmin, dmax, w, sv, emit, prog)
	a.st = newStreamer(sender, receiver, cfg.Classifier, keepFlows, limit, w, par, cfg.shards(), tick)
	a.st.markGroup, a.st.onMarks = a.groupMarks, a.addMarks
	a.st.onSender, a.st.onReceiver, a.st.afterFeed = a.sender, a.receiver, a.closeReady
	if err := a.st.run(); err != nil {
		return st, err
	}
	if err := a.finish(); err != nil {
		return st, err
	}
	st.PeakHeld = max(peak, a.st.pool.peak)
	return trimWarning(st, lo, hi), nil
}

// trimWarning adds the warning of what was left out of the common range.
func trimWarning(st Stats, lo, hi int64) Stats {
	if t := st.TrimmedSenderBefore + st.TrimmedSenderAfter + st.TrimmedReceiverBefore + st.TrimmedReceiverAfter; t > 0 {
		st.Warnings = append(st.Warnings, fmt.Sprintf("measured only where both captures overlap (%s in the sender's clock): left out %d sender packets before and %d after, %d receiver packets before and %d after",
			span(lo, hi), st.TrimmedSenderBefore, st.TrimmedSenderAfter, st.TrimmedReceiverBefore, st.TrimmedReceiverAfter))
	}
	return st
}

// firstStamp is the timestamp of the receiver's first record in time
// order (rEmpty: it has none), as the survey's range count wants it
// before any sender record: read from the capture's start.
func firstStamp(receiver *Capture, cfg *Config) (r0 int64, rEmpty bool, err error) {
	if err := receiver.Rewind(); err != nil {
		return 0, false, err
	}
	var pool srecPool
	e := &endStream{l: newLoader(receiver, cfg.Classifier, nil), limit: math.MaxInt, pool: &pool}
	e.start()
	defer e.close()
	x, err := e.peek()
	if err != nil || x == nil {
		return 0, x == nil, err
	}
	return int64(x.ts), false, nil
}

// badMark says that intervals from..to cannot be trusted and why; of two
// marks on one interval the one of lower rank wins, as the first reason
// set does in the whole-capture analysis (sender damage, receiver damage,
// then bit-identical packets, each in its order).
type badMark struct {
	from, to int32
	rank     uint64
	why      string
}

const (
	rankSenderDamage uint64 = iota << 40
	rankReceiverDamage
	rankSplit
	rankEdge
)

// analysis is the reporting pass's state.
type analysis struct {
	cfg        *Config
	stats      *Stats
	st         *streamer
	lm         *lineMaker
	lo, hi     int64
	dmin, dmax int64
	w          int64
	nK         int32
	open       []*intervalAcc // by interval, ascending
	free       []*intervalAcc
	cursor     int32
	pending    []*srec // unmatched receiver packets waiting for a later paired one
	rDamage    []rDamage
	rDone      bool
	marks      []badMark
	prog       *Progress
	err        error // the first error of a callback that cannot return one

	// own, in a segment (segment.go), is what the segment reports: the
	// others' packets still pass through it, to keep its state as the
	// analysis of the whole captures would, but count nowhere.
	own *segOwn
}

// segOwn is the part of the analysis a segment reports: sender packets
// stamped in [tsLo, tsHi) and the intervals [kLo, kHi) they fall in, with
// every receiver packet that goes to one of those intervals (or, left
// out, would have gone). reachedAt is the receiver timestamp at which
// the intervals after the segment's began to receive packets (the
// cursor reached kHi): receiver packets after it that match nothing are
// the next segment's.
type segOwn struct {
	tsLo, tsHi int64
	kLo, kHi   int32
	reached    bool
	reachedAt  int64
}

func (a *analysis) ownTs(ts int64) bool { return a.own == nil || ts >= a.own.tsLo && ts < a.own.tsHi }
func (a *analysis) ownK(k int32) bool   { return a.own == nil || k >= a.own.kLo && k < a.own.kHi }

type rDamage struct {
	d    *DamageError
	rank uint64
}

func newAnalysis(cfg *Config, st *Stats, keepFlows bool, lo, hi, dmin, dmax, w int64, sv *survey, emit func(*report.Interval), prog *Progress) *analysis {
	a := &analysis{cfg: cfg, stats: st, lo: lo, hi: hi, dmin: dmin, dmax: dmax, w: w, cursor: -1, prog: prog}
	a.lm = newLineMaker(cfg, keepFlows, lo, hi, emit)
	a.nK = a.lm.k(uint64(hi))
	for i, d := range sv.s.damage {
		k := a.lm.k(uint64(min(max(int64(d.AfterNs), lo), hi)))
		a.markDamage(k, d, "sender capture damaged: ", rankSenderDamage+uint64(i))
	}
	for i, d := range sv.r.damage {
		a.rDamage = append(a.rDamage, rDamage{d, rankReceiverDamage + uint64(i)})
	}
	slices.SortStableFunc(a.rDamage, func(x, y rDamage) int {
		switch {
		case x.d.AfterNs < y.d.AfterNs:
			return -1
		case x.d.AfterNs > y.d.AfterNs:
			return 1
		}
		return 0
	})
	return a
}

func (a *analysis) markDamage(k int32, d *DamageError, prefix string, rank uint64) {
	why := prefix + d.Error()
	if d.Local {
		a.mark(k, k, rank, why)
		a.mark(k+1, k+1, rank, why)
	} else {
		a.mark(k, a.nK, rank, why)
	}
}

func (a *analysis) mark(from, to int32, rank uint64, why string) {
	from = max(from, 0)
	if from > to {
		return
	}
	a.marks = append(a.marks, badMark{from, to, rank, why})
}

// bad is why interval k cannot be trusted, if it cannot.
func (a *analysis) bad(k int32) (string, bool) {
	best := -1
	for i, m := range a.marks {
		if k >= m.from && k <= m.to && (best < 0 || m.rank < a.marks[best].rank) {
			best = i
		}
	}
	if best < 0 {
		return "", false
	}
	return a.marks[best].why, true
}

func (a *analysis) inRange(ts uint64) bool { return int64(ts) >= a.lo && int64(ts) <= a.hi }

// groupMarks appends the marks of a closed group whose pairing is
// uncertain: its sender copies' intervals. It reads only what does not
// change during the pass, so shards call it on their own goroutines.
func (a *analysis) groupMarks(g *group, dst []badMark) []badMark {
	first, across, outside := int32(-1), false, false
	var ks []int32
	for _, x := range g.s {
		if !a.inRange(x.ts) {
			outside = true
			continue
		}
		k := a.lm.k(x.ts)
		if first < 0 {
			first = k
		} else if k != first {
			across = true
		}
		ks = append(ks, k)
	}
	var rank uint64
	var why string
	switch {
	case across:
		rank, why = rankSplit, "bit-identical packets on both sides of the interval boundary, and one of them lost: which interval lost it cannot be told"
	case outside:
		rank, why = rankEdge, "bit-identical packets on both sides of the captures' overlap edge, and one of them unpaired: whether the one inside was lost cannot be told"
	default:
		return dst
	}
	for _, k := range ks {
		if k >= 0 {
			dst = append(dst, badMark{k, k, rank, why})
		}
	}
	return dst
}

// addMarks takes the marks of uncertain groups. Their order does not
// matter: marks of one rank say the same.
func (a *analysis) addMarks(marks []badMark) { a.marks = append(a.marks, marks...) }

// acc is interval k's accumulator, opened when its first packet comes.
func (a *analysis) acc(k int32) (*intervalAcc, error) {
	i, found := slices.BinarySearchFunc(a.open, k, func(x *intervalAcc, k int32) int { return int(x.k) - int(k) })
	if found {
		return a.open[i], nil
	}
	var x *intervalAcc
	if n := len(a.free); n > 0 {
		x, a.free = a.free[n-1], a.free[:n-1]
	} else {
		var err error
		if x, err = a.lm.newAcc(); err != nil {
			return nil, err
		}
	}
	x.reset(k)
	a.open = slices.Insert(a.open, i, x)
	return x, nil
}

func (a *analysis) sender(x *srec) bool {
	st := a.stats
	if !a.ownTs(int64(x.ts)) {
		return false
	}
	switch {
	case int64(x.ts) < a.lo:
		st.TrimmedSenderBefore++
		return false
	case int64(x.ts) > a.hi:
		st.TrimmedSenderAfter++
		return false
	}
	acc, err := a.acc(a.lm.k(x.ts))
	if err != nil {
		a.fail(err)
		return false
	}
	fh, key := flowOf(x)
	a.lm.addSender(acc, &x.rec, fh, key, x.paired, x.peerTs)
	return false
}

func (a *analysis) receiver(x *srec) bool {
	st := a.stats
	for len(a.rDamage) > 0 && a.rDamage[0].d.AfterNs < x.ts {
		a.receiverDamage()
	}
	ts := int64(x.ts)
	switch {
	case x.paired && a.inRange(x.peerTs):
		k := a.lm.k(x.peerTs)
		a.resolve(true)
		crossed := k < a.cursor
		a.cursor = max(a.cursor, k)
		if a.own != nil && !a.own.reached && a.cursor >= a.own.kHi {
			a.own.reached, a.own.reachedAt = true, ts
		}
		if !a.ownK(k) {
			break
		}
		if crossed {
			x.flags |= recCrossed
			st.Crossed++
		}
		a.add(x, k)
	case x.paired:
		if !a.ownTs(int64(x.peerTs)) {
			break
		}
		if int64(x.peerTs) < a.lo {
			st.TrimmedReceiverBefore++
		} else {
			st.TrimmedReceiverAfter++
		}
	case a.cursor >= 0 && ts-a.dmax >= a.lo && ts-a.dmin <= a.hi:
		// Unmatched, and sent (if it was) inside the common range
		// whatever its delay: it goes where the latest packets went,
		// once a later packet shows the range goes on.
		// (A copy: with shards, x is not the pool's. The copy takes
		// x's flow and gives x the one it had.)
		y := a.st.pool.get()
		yfk := y.fk
		*y = *x
		x.fk = yfk
		y.k = a.cursor
		a.pending = append(a.pending, y)
		return false
	case !a.ownK(a.cursor):
	default:
		if a.cursor < 0 || ts-a.dmax < a.lo {
			st.TrimmedReceiverBefore++
		} else {
			st.TrimmedReceiverAfter++
		}
	}
	return false
}

func (a *analysis) add(x *srec, k int32) {
	acc, err := a.acc(k)
	if err != nil {
		a.fail(err)
		return
	}
	fh, key := flowOf(x)
	a.lm.addReceiver(acc, &x.rec, fh, key)
}

// resolve settles the pending unmatched receiver packets: into their
// interval as extra when a paired packet inside the range follows them
// (in), left out after the range otherwise.
func (a *analysis) resolve(in bool) {
	st := a.stats
	for _, x := range a.pending {
		if !a.ownK(x.k) {
			// Another segment's.
		} else if in {
			x.flags |= recExtra
			st.ExtraReceived++
			a.add(x, x.k)
		} else if a.cursor < 0 || int64(x.ts)-a.dmax < a.lo {
			st.TrimmedReceiverBefore++
		} else {
			st.TrimmedReceiverAfter++
		}
		a.st.pool.put(x)
	}
	clear(a.pending)
	a.pending = a.pending[:0]
}

// receiverDamage marks the intervals the first remaining receiver damage
// touches: the one the receiver's packets were going to when it happened.
func (a *analysis) receiverDamage() {
	d := a.rDamage[0]
	a.rDamage = a.rDamage[1:]
	a.markDamage(max(a.cursor, 0), d.d, "receiver capture damaged: ", d.rank)
}

func (a *analysis) fail(err error) {
	if a.err == nil {
		a.err = err
	}
}

// closeReady estimates the intervals no packet still to come can belong
// to: every sender packet of theirs handed on, the receiver read past
// them by the window, and a later interval's packets received (an
// unmatched packet goes to the latest interval seen).
func (a *analysis) closeReady() error {
	if a.err != nil {
		return a.err
	}
	s := a.st
	nS, oldS := s.unhanded(true)
	nR, oldR := s.unhanded(false)
	sDone := s.snd.done() && nS == 0
	rDone := s.rcv.done() && nR == 0
	if rDone && !a.rDone {
		a.rDone = true
		a.resolve(false)
		for len(a.rDamage) > 0 {
			a.receiverDamage()
		}
	}
	for len(a.open) > 0 {
		x := a.open[0]
		k := x.k
		if !sDone || !a.rDone {
			if !sDone {
				minS := s.lastS
				if nS > 0 {
					minS = oldS
				}
				if !s.fedS || a.lm.k(uint64(max(minS, 0))) <= k {
					return nil
				}
			}
			if !a.rDone {
				if a.lm.width == 0 || a.cursor <= k {
					return nil
				}
				minR := s.lastR
				if nR > 0 {
					minR = oldR
				}
				if !s.fedR || minR-a.w < a.endOf(k) {
					return nil
				}
			}
		}
		why, bad := a.bad(k)
		if err := a.lm.finish(x, why, bad); err != nil {
			return err
		}
		a.open = a.open[1:]
		a.free = append(a.free, x)
		// Marks of intervals reported are done with: bit-identical
		// packets across boundaries recur through a long capture.
		a.marks = slices.DeleteFunc(a.marks, func(m badMark) bool { return m.to <= k })
		a.stats.Intervals++
		if a.cfg.Progress != nil {
			a.prog.Intervals = uint64(a.stats.Intervals)
			a.prog.Frames = a.st.snd.frames + a.st.rcv.frames
			a.cfg.Progress(*a.prog)
		}
	}
	return nil
}

// endOf is where interval k ends (sender clock, ns).
func (a *analysis) endOf(k int32) int64 {
	return (int64(k) + a.lm.kBase + 1) * int64(a.lm.width)
}

// finish estimates what is left once both captures are read.
func (a *analysis) finish() error {
	if a.err != nil {
		return a.err
	}
	if !a.rDone {
		a.rDone = true
		a.resolve(false)
		for len(a.rDamage) > 0 {
			a.receiverDamage()
		}
	}
	st := a.st
	nS, _ := st.unhanded(true)
	nR, _ := st.unhanded(false)
	if nS > 0 || nR > 0 {
		return fmt.Errorf("internal error: %d sender and %d receiver records not handed on", nS, nR)
	}
	return a.closeReady()
}
