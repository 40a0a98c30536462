package analyze

import "sync"

// Sharded pairing. The pairing's cost is its groups: an identity table
// and records a window (a second, at default flags) old, which do not fit
// the CPU's caches. With shards, the streamer's goroutine still merges
// the two ends in time order and hands records on in that order, but each
// record's group is kept and paired by the shard its identity hash falls
// in, on a goroutine of its own. A group holds copies of one identity
// only, so which shard pairs it changes nothing: each shard sees its
// identities' records in the same order as one pairer would, closes their
// groups by the same rule (the window ended before a later record), and
// pairs them with the same code. What the shards learn is merged where
// the order does not matter: counts add up, smallest and largest delays
// combine, and the marks of uncertain groups (an interval spoilt, a rank,
// the same sentence for each rank) make the same verdict in any order.
//
// Records go to the shards in batches, each batch stamped with the time
// of the last record fed (its now). What crosses between the cores is
// only what pairing reads and writes, 24 bytes a record there, 16 back: the
// streamer keeps every record it fed, in its end's order, in a queue of
// its own; a shard gets each record's timestamp, identity, flags and
// place in its end's order, pairs its own copy, and hands back each
// record's place, flags and pairing. A shard adds each record to its
// group (closing the groups whose window ended before it), closes the
// groups whose window ended before the batch's now, and sends the batch
// back with the records whose group is closed and the marks of the groups
// it closed. The streamer writes what came back into its queued records
// and hands them on from the front of each end's queue once paired: the
// same records, in the same order, as one pairer hands on, a few batches
// later (which only holds intervals open a little longer). The synopses
// are filled on the streamer's goroutine, as without shards.

const (
	// shardBatchLen bounds a batch's records (all shards together).
	shardBatchLen = 2048
	// shardAhead bounds the batches sent and not yet acknowledged by
	// every shard.
	shardAhead = 4
	// shardSpan: a batch is sent before it is full once it covers the
	// window over this much, so that with a long window the records held
	// for the batches in flight stay a small part of the window's.
	shardSpan = 64
	// shardMinSpan (ns) and shardMinBatch: but not before it covers this
	// long and holds this many records. Each batch wakes every shard and
	// waits for its answer: with a short window (--max-delay of a few
	// ms) a window/64 batch held a few records, at a few thousand
	// packets a second a few dozen, and the two cores spent their time
	// handing batches over, running slower than one. The records the
	// batches in flight hold stay bounded by shardAhead × shardBatchLen
	// whatever the rate; at a low rate they are held back longer in
	// capture time (under a second at 3 000 packets a second), which only
	// delays when an interval is reported.
	shardMinSpan  = 10_000_000
	shardMinBatch = shardBatchLen / 2
)

// shardIn is what a shard pairs of a record.
type shardIn struct {
	ts, hash uint64
	seq      uint32 // its place in its end's order (modulo 2^32)
	flags    uint8
	sender   bool
}

// shardRes is what a shard hands back of a record: its place, its flags
// (now marked ambiguous or not) and its pairing.
type shardRes struct {
	peerTs uint64
	seq    uint32
	flags  uint8
	paired bool
}

// shardBatch goes to a shard with records to pair and comes back with
// the pairing of the records whose group it closed, each end's in order.
type shardBatch struct {
	id         uint64
	recs       []shardIn
	now        int64
	end        bool // the last: close every group
	outS, outR []shardRes
}

type shardAck struct {
	b     *shardBatch
	marks []badMark
}

// fedRing is one end's records fed and not yet handed on, in order: the
// front's place is next. Records are kept by value, so that handing them
// on reads the queue in order; a slot keeps the flowPart it last held
// for the next record it takes.
type fedRing struct {
	ring[srec]
	next uint32 // the front's place
}

// push puts a copy of x at the back; x takes the slot's old flowPart.
func (q *fedRing) push(x *srec) {
	y := q.grow()
	fk := y.fk
	*y = *x
	x.fk = fk
}

func (q *fedRing) at(i int) *srec { return q.ptr(i) }

func (q *fedRing) pop() {
	q.drop()
	q.next++
}

// shardSet is the shards of one streamer's run; every method but the
// shards' own loop runs on the streamer's goroutine.
type shardSet struct {
	main     *pairer // the streamer's: the shards' results are merged into it
	pairers  []*pairer
	in       []chan *shardBatch
	acks     []chan shardAck
	free     [][]*shardBatch // per shard, batches to fill
	cur      []*shardBatch   // per shard, the batch being filled
	span     int64
	id       uint64 // the batch being filled; 1 is the first
	first    int64  // the time of its first record
	count    int    // its records
	acked    []uint64
	ackedAll uint64     // every batch up to it is acknowledged by every shard
	fed      [2]fedRing // per end (0 receiver, 1 sender)
	marks    []badMark
	wg       sync.WaitGroup
	stopped  bool
}

func newShardSet(n int, p *pairer) *shardSet {
	sh := &shardSet{main: p, span: max(p.w/shardSpan, shardMinSpan), id: 1, acked: make([]uint64, n)}
	for i := 0; i < n; i++ {
		q := &pairer{w: p.w, par: p.par, ds: newDelayStats(), markGroup: p.markGroup}
		sh.pairers = append(sh.pairers, q)
		sh.in = append(sh.in, make(chan *shardBatch, shardAhead+1))
		sh.acks = append(sh.acks, make(chan shardAck, shardAhead+1))
		sh.free = append(sh.free, nil)
		sh.cur = append(sh.cur, sh.batch(i))
	}
	for i := 0; i < n; i++ {
		sh.wg.Add(1)
		go sh.loop(sh.pairers[i], sh.in[i], sh.acks[i])
	}
	return sh
}

// loop is a shard's goroutine: it pairs the batches it is sent, in order,
// and hands back each record once its group is closed.
func (sh *shardSet) loop(p *pairer, in <-chan *shardBatch, acks chan<- shardAck) {
	defer sh.wg.Done()
	var pool srecPool
	var sq, rq ring[*srec]
	for b := range in {
		for j := range b.recs {
			r := &b.recs[j]
			x := pool.get()
			x.ts, x.hash, x.flags, x.seq, x.sender = r.ts, r.hash, r.flags, uint64(r.seq), r.sender
			t := int64(x.ts)
			p.closeBefore(t)
			p.add(x, t, x.sender)
			if x.sender {
				sq.push(x)
			} else {
				rq.push(x)
			}
		}
		if b.end {
			p.closeAll()
		} else {
			p.closeBefore(b.now)
		}
		for sq.n > 0 && (b.end || sq.front().closeAt < b.now) {
			x := sq.pop()
			b.outS = append(b.outS, shardRes{x.peerTs, uint32(x.seq), x.flags, x.paired})
			pool.put(x)
		}
		for rq.n > 0 && (b.end || rq.front().closeAt < b.now) {
			x := rq.pop()
			b.outR = append(b.outR, shardRes{x.peerTs, uint32(x.seq), x.flags, x.paired})
			pool.put(x)
		}
		var marks []badMark
		if len(p.marks) > 0 {
			marks = append(marks, p.marks...)
			p.marks = p.marks[:0]
		}
		acks <- shardAck{b, marks}
	}
}

// shardOf is the shard of an identity hash among n: its high bits (the
// identity table indexes with the low ones).
func shardOf(h uint64, n int) int { return int((h >> 32) * uint64(n) >> 32) }

func (sh *shardSet) batch(i int) *shardBatch {
	if k := len(sh.free[i]); k > 0 {
		b := sh.free[i][k-1]
		sh.free[i] = sh.free[i][:k-1]
		return b
	}
	return &shardBatch{recs: make([]shardIn, 0, 2*shardBatchLen/len(sh.acked)+16)}
}

func endIndex(sender bool) int {
	if sender {
		return 1
	}
	return 0
}

// dispatch queues x, fed at t, at its end and puts what pairing needs of
// it in its shard's batch. x takes a flowPart from the queue in exchange
// for its own: the pool keeps it.
func (sh *shardSet) dispatch(x *srec, t int64, sender bool) {
	if sh.count == 0 {
		sh.first = t
	}
	q := &sh.fed[endIndex(sender)]
	seq := q.next + uint32(q.n)
	q.push(x)
	b := sh.cur[shardOf(x.hash, len(sh.cur))]
	b.recs = append(b.recs, shardIn{x.ts, x.hash, seq, x.flags, sender})
	sh.count++
	if sh.count >= shardBatchLen || t-sh.first > sh.span && sh.count >= shardMinBatch {
		sh.flush(t, false)
	}
}

// flush sends the batches being filled, stamped now, to every shard.
func (sh *shardSet) flush(now int64, end bool) {
	sh.poll(false)
	for sh.id-1-sh.ackedAll >= shardAhead {
		sh.poll(true)
	}
	for i, b := range sh.cur {
		b.id, b.now, b.end = sh.id, now, end
		sh.in[i] <- b
		sh.cur[i] = sh.batch(i)
	}
	sh.id++
	sh.count = 0
}

// poll takes the acknowledgements that have come; with wait, it waits for
// one from a shard that holds back ackedAll first.
func (sh *shardSet) poll(wait bool) {
	if wait {
		for i, a := range sh.acked {
			if a == sh.ackedAll {
				sh.take(i, <-sh.acks[i])
				break
			}
		}
	}
	for i := range sh.acks {
		for more := true; more; {
			select {
			case a := <-sh.acks[i]:
				sh.take(i, a)
			default:
				more = false
			}
		}
	}
	all := sh.acked[0]
	for _, a := range sh.acked[1:] {
		all = min(all, a)
	}
	sh.ackedAll = all
}

// take writes what shard i handed back into the queued records; its batch
// is free again.
func (sh *shardSet) take(i int, a shardAck) {
	b := a.b
	sh.acked[i] = b.id
	sh.marks = append(sh.marks, a.marks...)
	for e, out := range [2][]shardRes{b.outR, b.outS} {
		q := &sh.fed[e]
		for _, r := range out {
			x := q.at(int(r.seq - q.next))
			x.flags, x.paired, x.peerTs, x.back = r.flags, r.paired, r.peerTs, true
		}
	}
	b.recs, b.outS, b.outR = b.recs[:0], b.outS[:0], b.outR[:0]
	sh.free[i] = append(sh.free[i], b)
}

// drain hands on, each end in its order, the records the shards handed
// back; a record its shard has not handed back yet holds its end's.
// The marks of the groups the shards closed come first.
func (sh *shardSet) drain(s *streamer) {
	if len(sh.marks) > 0 && s.onMarks != nil {
		s.onMarks(sh.marks)
	}
	sh.marks = sh.marks[:0]
	for e := 1; e >= 0; e-- {
		q := &sh.fed[e]
		for q.n > 0 {
			x := q.at(0)
			if !x.back {
				break
			}
			if e == 1 {
				s.onSender(x)
			} else {
				s.onReceiver(x)
			}
			q.pop()
		}
	}
}

// unhanded is how many records of one end were fed and not yet handed
// on, and the oldest one's timestamp.
func (sh *shardSet) unhanded(sender bool) (n int, oldest int64) {
	q := &sh.fed[endIndex(sender)]
	if q.n > 0 {
		oldest = int64(q.at(0).ts)
	}
	return q.n, oldest
}

// finish sends what is left, lets every shard close its groups and hand
// back every record, waits for them and merges what they learnt into the
// streamer's pairer.
func (sh *shardSet) finish(now int64) {
	sh.flush(now, true)
	for sh.ackedAll < sh.id-1 {
		sh.poll(true)
	}
	for _, p := range sh.pairers {
		sh.main.merge(p)
	}
	sh.stop()
}

// stop ends the shards' goroutines (on an error, whatever they hold).
func (sh *shardSet) stop() {
	if sh.stopped {
		return
	}
	sh.stopped = true
	for _, c := range sh.in {
		close(c)
	}
	sh.wg.Wait()
}
