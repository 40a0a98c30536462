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
// Records go to the shards in batches, copied (each shard keeps its own
// records, so that none moves between cores but in the batches), each
// batch stamped with the time of the last record fed (its now). A shard
// adds each record to its group (closing the groups whose window ended
// before it), closes the groups whose window ended before the batch's
// now, and sends the batch back with the records whose group is closed,
// paired, each end's in the order it was fed them, and the marks of the
// groups it closed. The streamer numbers each end's records as it feeds
// them and hands them on in that order, taking each from the shard that
// has it: the same records, in the same order, as one pairer hands on,
// a few batches later (which only holds intervals open a little longer).
// The synopses are filled on the streamer's goroutine, as without shards.

const (
	// shardBatchLen bounds a batch's records (all shards together).
	shardBatchLen = 2048
	// shardAhead bounds the batches sent and not yet acknowledged by
	// every shard.
	shardAhead = 4
	// shardSpan: a batch covers at most the window over this much, so
	// that the records held for the batches in flight stay a small,
	// steady part of the window's, however fast the shards go.
	shardSpan = 64
)

// shardBatch goes to a shard with records to pair (copies: the shard
// keeps its own) and comes back with the records the shard hands back,
// paired, each end's in its order.
type shardBatch struct {
	id         uint64
	recs       []srec
	now        int64
	end        bool // the last: close every group
	outS, outR []srec
	refs       int // ends whose records are still to be handed on
}

type shardAck struct {
	b     *shardBatch
	marks []badMark
}

// shardOut is what one shard handed back and the streamer has not yet
// handed on, for one end.
type shardOut struct {
	q   ring[*shardBatch]
	pos int
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
	out      [][2]shardOut   // per shard and end (0 receiver, 1 sender)
	span     int64
	id       uint64 // the batch being filled; 1 is the first
	first    int64  // the time of its first record
	count    int    // its records
	acked    []uint64
	ackedAll uint64         // every batch up to it is acknowledged by every shard
	seq      [2]uint64      // per end: the next record's place
	next     [2]uint64      // per end: the place of the next record to hand on
	ts       [2]ring[int64] // per end: the timestamps of the records not yet handed on
	marks    []badMark
	wg       sync.WaitGroup
	stopped  bool
}

func newShardSet(n int, p *pairer) *shardSet {
	sh := &shardSet{main: p, span: max(p.w/shardSpan, 1), id: 1, acked: make([]uint64, n)}
	for i := 0; i < n; i++ {
		q := &pairer{w: p.w, par: p.par, ds: newDelayStats(), markGroup: p.markGroup}
		sh.pairers = append(sh.pairers, q)
		sh.in = append(sh.in, make(chan *shardBatch, shardAhead+1))
		sh.acks = append(sh.acks, make(chan shardAck, shardAhead+1))
		sh.free = append(sh.free, nil)
		sh.out = append(sh.out, [2]shardOut{})
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
			x := pool.get()
			*x = b.recs[j]
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
			b.outS = append(b.outS, *x) // the copy takes its flow
			x.fk = nil
			pool.put(x)
		}
		for rq.n > 0 && (b.end || rq.front().closeAt < b.now) {
			x := rq.pop()
			b.outR = append(b.outR, *x)
			x.fk = nil
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
	return &shardBatch{recs: make([]srec, 0, 2*shardBatchLen/len(sh.acked)+16)}
}

func endIndex(sender bool) int {
	if sender {
		return 1
	}
	return 0
}

// dispatch puts a copy of x, fed at t, in its shard's batch.
func (sh *shardSet) dispatch(x *srec, t int64, sender bool) {
	if sh.count == 0 {
		sh.first = t
	}
	e := endIndex(sender)
	x.seq, x.sender = sh.seq[e], sender
	sh.seq[e]++
	sh.ts[e].push(t)
	b := sh.cur[shardOf(x.hash, len(sh.cur))]
	b.recs = append(b.recs, *x)
	sh.count++
	if sh.count >= shardBatchLen || t-sh.first > sh.span {
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

func (sh *shardSet) take(i int, a shardAck) {
	b := a.b
	sh.acked[i] = b.id
	sh.marks = append(sh.marks, a.marks...)
	clear(b.recs)
	b.recs = b.recs[:0]
	b.refs = 2
	sh.out[i][0].q.push(b)
	sh.out[i][1].q.push(b)
}

// head is the next record shard i hands back for end e, nil if none yet.
func (sh *shardSet) head(i, e int) *srec {
	o := &sh.out[i][e]
	for o.q.n > 0 {
		b := o.q.front()
		l := b.outR
		if e == 1 {
			l = b.outS
		}
		if o.pos < len(l) {
			return &l[o.pos]
		}
		o.q.pop()
		o.pos = 0
		if b.refs--; b.refs == 0 {
			b.outS, b.outR = b.outS[:0], b.outR[:0]
			sh.free[i] = append(sh.free[i], b)
		}
	}
	return nil
}

// drain hands on, each end in its order, the records the shards handed
// back; a record whose shard has not handed it back yet holds its end's.
// The marks of the groups the shards closed come first.
func (sh *shardSet) drain(s *streamer) {
	if len(sh.marks) > 0 && s.onMarks != nil {
		s.onMarks(sh.marks)
	}
	sh.marks = sh.marks[:0]
	for e := 1; e >= 0; e-- {
		for {
			var x *srec
			for i := range sh.out {
				if h := sh.head(i, e); h != nil && h.seq == sh.next[e] {
					x = h
					sh.out[i][e].pos++
					break
				}
			}
			if x == nil {
				break
			}
			sh.next[e]++
			sh.ts[e].pop()
			if e == 1 {
				s.onSender(x)
			} else {
				s.onReceiver(x)
			}
			s.pool.putPart(x) // the batch's copy goes no further
		}
	}
}

// unhanded is how many records of one end were fed and not yet handed
// on, and the oldest one's timestamp.
func (sh *shardSet) unhanded(sender bool) (n int, oldest int64) {
	q := &sh.ts[endIndex(sender)]
	if q.n > 0 {
		oldest = q.front()
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
