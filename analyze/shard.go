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
// of the last record fed (its now). A shard adds each record to its group
// (closing the groups whose window ended before it), then closes the
// groups whose window ended before the batch's now, and acknowledges the
// batch. A record is handed on once its batch and every earlier one is
// acknowledged by every shard and its group's window ended before the
// acknowledged now: its group is then closed and paired. Handing on later
// than one pairer would only holds intervals open a little longer.

const (
	// shardBatchLen bounds a batch's records (all shards together).
	shardBatchLen = 2048
	// shardAhead bounds the batches sent and not yet acknowledged by
	// every shard.
	shardAhead = 4
	// shardSpan: a batch covers at most the window over this much, so
	// that the records held for the batches in flight stay a small part
	// of the window's, however fast the shards go.
	shardSpan = 64
)

type shardRec struct {
	x      *srec
	sender bool
}

type shardBatch struct {
	id   uint64
	recs []shardRec
	now  int64
	end  bool // the last: close every group
}

type shardAck struct {
	b     *shardBatch // done with: the streamer reuses it
	marks []badMark
}

// shardSet is the shards of one streamer's run; every method but the
// shards' own loop runs on the streamer's goroutine.
type shardSet struct {
	main    *pairer // the streamer's: the shards' results are merged into it
	pairers []*pairer
	in      []chan *shardBatch
	acks    []chan shardAck
	free    [][]*shardBatch // per shard, batches to fill
	cur     []*shardBatch   // per shard, the batch being filled
	span    int64
	id      uint64 // the batch being filled; 1 is the first
	first   int64  // the time of its first record
	count   int    // its records
	acked   []uint64
	// ackedAll: every batch up to it is acknowledged by every shard;
	// nowAcked is its now. nows holds the nows of the batches after it
	// that are sent.
	ackedAll uint64
	nowAcked int64
	nows     ring[int64]
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
		sh.cur = append(sh.cur, sh.batch(i))
	}
	for i := 0; i < n; i++ {
		sh.wg.Add(1)
		go sh.loop(sh.pairers[i], sh.in[i], sh.acks[i])
	}
	return sh
}

// loop is a shard's goroutine: it pairs the batches it is sent, in order.
func (sh *shardSet) loop(p *pairer, in <-chan *shardBatch, acks chan<- shardAck) {
	defer sh.wg.Done()
	for b := range in {
		for _, r := range b.recs {
			t := int64(r.x.ts)
			p.closeBefore(t)
			p.add(r.x, t, r.sender)
		}
		if b.end {
			p.closeAll()
		} else {
			p.closeBefore(b.now)
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
	return &shardBatch{recs: make([]shardRec, 0, 2*shardBatchLen/len(sh.acked)+16)}
}

// dispatch puts x, fed at t, in its shard's batch.
func (sh *shardSet) dispatch(x *srec, t int64, sender bool) {
	if sh.count == 0 {
		sh.first = t
	}
	x.batch = sh.id
	b := sh.cur[shardOf(x.hash, len(sh.cur))]
	b.recs = append(b.recs, shardRec{x, sender})
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
	sh.nows.push(now)
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
	for ; sh.ackedAll < all; sh.ackedAll++ {
		sh.nowAcked = sh.nows.pop()
	}
}

func (sh *shardSet) take(i int, a shardAck) {
	sh.acked[i] = a.b.id
	sh.marks = append(sh.marks, a.marks...)
	clear(a.b.recs)
	a.b.recs = a.b.recs[:0]
	sh.free[i] = append(sh.free[i], a.b)
}

// takeMarks returns the marks acknowledged since the last call.
func (sh *shardSet) takeMarks() []badMark {
	m := sh.marks
	sh.marks = sh.marks[:0]
	return m
}

// finish sends what is left, lets every shard close its groups, waits
// for them and merges what they learnt into the streamer's pairer.
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
