package appliance

import (
	"sort"
	"time"

	"github.com/ldafwd/ldafwd/control"
	"github.com/ldafwd/ldafwd/synopsis"
)

// Fetching more RDA cells (docs/rda.md, "More cells on demand"). The RDA
// shipped at an interval's end is folded to what the control budget
// leaves, before the sender can know the interval's loss: sized for
// --rda-problem-rate of its packets, it decodes a typical interval, and a
// burst of loss beyond it leaves the decode incomplete. Its decode is all
// or nothing, so a few cells too few cost the exact mean, the exact loss
// and the neighbours' crossing checks. The sender records at the
// configured size (--rda-cells) and keeps each interval's cells as long
// as its timestamp caches (repair.go); the receiver, pairing an interval
// whose shipped RDA does not decode, asks in-band (a control.TypeRequest
// whose body is a synopsis cells request) for the sender's RDA folded to
// the cells the interval's count difference needs, and pairs the interval
// with the cells of the reply. So the cells follow each interval's own
// loss, a burst costs cells only in the interval it hit, and a loss-free
// interval costs nothing beyond what is shipped.
//
//   - Asked only for a class whose shipped copy does not decode, whose
//     sender keeps a timestamp cache (its encoding says so: a sender
//     without one, or an older build, is never asked) and recorded more
//     cells than it shipped.
//   - The cells asked: SizeRDA for the count difference plus 16 at 1 %
//     failure, rounded up to a fold of the recorded size and at least
//     twice the shipped cells. If those do not decode either, twice
//     as many are asked, up to the recorded size.
//   - A request is retried every 2·retryPeriod (a reply is tens of
//     frames the sender paces out, and it answers every try); at
//     repairDeadlineOf after the first the interval pairs with what it has (the shipped copy or the
//     largest fetched one). The interval's lines wait for the next
//     interval in any case (crossing.go), so this adds no latency to the
//     reports unless the peer does not answer.
//   - The reply is accepted once, only from the session asked, for our
//     session and the request's id, only if it decodes as an RDA of the
//     cells asked with the shipped copy's banks.
//
// What it cost is reported on the RDA line (rda_fetch_*), apart from the
// budget the shipped synopses keep to: it is paid only under loss, in
// proportion to it (about 1.3 cells of ~23 bytes per lost or reordered
// packet, rounded up to a power-of-two fold).

// fetch is one class's request for more cells of an interval.
type fetch struct {
	key      repairKey
	peer     uint64
	id       uint32
	payload  []byte // the shipped part: payload header and RDA encoding
	hdrLen   int    // bytes of payload before the RDA encoding
	banks    int
	shipped  int // cells per bank shipped
	recorded int // cells per bank the sender recorded (ours, by configuration)
	target   int // cells per bank asked
	own      *synopsis.RDA
	dec      int // set difference the shipped copy implies (the count difference)
	body     []byte
	first    time.Time
	last     time.Time
	tries    int
	reqBytes int
	repBytes int
	frames   int
	got      []byte // the newest fetched encoding (nil: none yet)
	dbg      []int64
	gotCells int
	done     bool
	status   string
}

// cellFetcher is the receiver's side of the RDA cells exchange: it asks
// for more cells of the classes whose shipped RDA does not decode, retries
// and gives up, and keeps what each fetch did until its RDA line is built.
// The fetches of an interval travel with its bundle (waiting.fetches):
// the coordinator hands them over, and puts the cells a fetch brought into
// the bundle (cellPatch).
type cellFetcher struct {
	cfg     *Config
	req     *requester
	fetched map[repairKey]*fetch // finished fetches, until their RDA line takes them (fields)
}

// start asks for more cells of every class of interval b.Interval whose
// shipped RDA does not decode against the receiver's copy rc; it returns
// the fetches sent (the interval then waits: fetching).
func (cf *cellFetcher) start(b *control.IntervalBundle, rc *rcopy, now time.Time) []*fetch {
	if rc.rda == nil || rc.merged || rc.steerWhy != "" || b.Session == 0 {
		// A copy that is not the interval's (a lost End marker, steering
		// that differs at the two ends): more cells would not make it
		// decode, nor the line valid. The receiver's first copy (warmup)
		// is asked for: its decode is the evidence of the next
		// interval's packets that overtook its start.
		return nil
	}
	var fs []*fetch
	for m := range rc.rda {
		key := control.PartKey{MEC: uint16(m), Kind: control.KindRDA}
		payload, ok := b.Payloads[key]
		if !ok {
			continue
		}
		h, body, err := parsePayload(payload)
		if err != nil || h.Flags&payloadOmitted != 0 || !rc.warmup && sessionReason(h.Flags, rc).Code != 0 {
			continue
		}
		var snd synopsis.RDA
		if snd.UnmarshalBinary(body) != nil || !snd.HasRemoteCache() {
			continue
		}
		recorded := rc.rda[m].Cells()
		if snd.Cells() >= recorded || snd.Banks() != rc.rda[m].Banks() {
			continue
		}
		own, err := matchRDA(&snd, rc.rda[m])
		if err != nil {
			continue
		}
		dec, err := synopsis.DecodeRDA(&snd, own)
		if err != nil || dec.Complete {
			continue
		}
		diff := int(snd.Count()) - int(own.Count())
		if diff < 0 {
			diff = -diff
		}
		f := &fetch{key: repairKey{k: b.Interval, mec: uint16(m)}, peer: b.Session, payload: payload, hdrLen: len(payload) - len(body),
			banks: snd.Banks(), shipped: snd.Cells(), recorded: recorded, own: rc.rda[m], dec: diff, first: now}
		f.target = fetchCells(f.banks, diff, 2*f.shipped, recorded, rc.rda[m])
		if f.target <= f.shipped {
			continue
		}
		fs = append(fs, f)
		cf.send(f, now, true)
	}
	return fs
}

// fetchCells is the cells per bank to ask for a set difference of about
// d: SizeRDA's at 1 % failure for d + 16 (the count difference misses
// reordered packets, which cancel in it: rare, and a fold that still does
// not decode asks again for twice the cells), at least least, rounded up
// to a fold of the recorded RDA r (at most its cells).
func fetchCells(banks, d, least, recorded int, r *synopsis.RDA) int {
	need, err := synopsis.SizeRDA(d+16, banks, 0.01)
	if err != nil {
		need = recorded
	}
	need = max(need, least)
	m := recorded
	for m%2 == 0 && m/2 >= need {
		m /= 2
	}
	if got := r.FoldTo(m); got > 0 {
		return got
	}
	return recorded
}

// send sends f's request; fresh: for f.target cells, under a new
// request id (else a retry of the last).
func (cf *cellFetcher) send(f *fetch, now time.Time, fresh bool) {
	if fresh {
		f.id = cf.req.nextID()
		f.body = synopsis.AppendCellsRequest(nil, f.target)
	}
	n, bytes, ok := cf.req.send(f.key, control.KindRDA, f.peer, f.id, f.body, "RDA cells request")
	if !ok {
		f.done, f.status = true, "not sent"
		return
	}
	f.reqBytes += bytes
	f.frames += n
	f.tries++
	f.last = now
	cf.req.rc.sent.Add(1)
}

// fetching says whether w still waits for cells.
func fetching(w *waiting) bool {
	for _, f := range w.fetches {
		if !f.done {
			return true
		}
	}
	return false
}

// fetchTick retries the pending cells requests and gives up those past
// their deadline, in interval order; it says whether an interval may now
// pair.
func (c *controller) fetchTick(now time.Time) bool {
	ready := false
	for _, k := range sortedKeys(c.halves.bundles) {
		ready = c.cells.tick(c.halves.bundles[k].fetches, now) || ready
	}
	return ready
}

// tick retries one interval's pending requests and gives up those past
// their deadline; it says whether one was given up.
func (cf *cellFetcher) tick(fs []*fetch, now time.Time) bool {
	ready := false
	for _, f := range fs {
		switch {
		case f.done:
		case now.Sub(f.first) >= repairDeadlineOf(cf.cfg.Interval):
			cf.req.rc.givenUp.Add(1)
			f.done = true
			if f.got == nil {
				f.status = "no reply"
			} else {
				f.status = "incomplete"
			}
			ready = true
		case now.Sub(f.last) >= 2*retryPeriod(cf.cfg.Interval):
			cf.send(f, now, false)
		}
	}
	return ready
}

// onFetchReply applies a reply to a pending cells request of its
// interval's bundle; false when it answers none.
func (c *controller) onFetchReply(x *control.Exchange, now time.Time) bool {
	w := c.halves.bundles[x.Interval]
	if w == nil {
		return false
	}
	return c.cells.onReply(x, w.fetches, now)
}

// onReply applies a reply to one of fs, an interval's fetches; false when
// it answers none.
func (cf *cellFetcher) onReply(x *control.Exchange, fs []*fetch, now time.Time) bool {
	var f *fetch
	for _, g := range fs {
		if g.key.mec == x.MEC && g.id == x.ID && !g.done {
			f = g
		}
	}
	if f == nil {
		return false
	}
	if x.Kind != control.KindRDA || x.Session != f.peer || x.To != cf.req.sender.Session() {
		cf.req.rc.stray.Add(1)
		return true
	}
	var snd synopsis.RDA
	if err := snd.UnmarshalBinary(x.Body); err != nil || snd.Cells() != f.target || snd.Banks() != f.banks {
		cf.req.rc.bad.Add(1)
		cf.cfg.Log.Debug().Err(err).Uint64("interval", x.Interval).Msg("RDA cells reply does not decode as the cells asked")
		return true
	}
	cf.req.rc.accepted.Add(1)
	f.repBytes += x.Bytes
	f.frames += x.Frames
	f.got, f.gotCells = x.Body, f.target
	own, err := matchRDA(&snd, f.own)
	complete := false
	if err == nil {
		if dec, err := synopsis.DecodeRDA(&snd, own); err == nil {
			complete = dec.Complete
		}
	}
	switch {
	case complete:
		f.done, f.status = true, "complete"
	case f.target >= f.recorded:
		f.done, f.status = true, "incomplete"
	case now.Sub(f.first) >= repairDeadlineOf(cf.cfg.Interval):
		f.done, f.status = true, "incomplete"
	default:
		// Still too few: twice as many (a new request id).
		f.target = fetchCells(f.banks, 0, 2*f.target, f.recorded, f.own)
		cf.send(f, now, true)
	}
	return true
}

// cellPatch is the cells a fetch brought: the RDA part of its class in
// the bundle, in place of the shipped one.
type cellPatch struct {
	key     control.PartKey
	payload []byte
}

// applyFetches puts each class's fetched cells in the bundle in place of
// the shipped ones (pair then decodes them); the cell fetcher keeps what
// each fetch did for the RDA line (fields).
func (c *controller) applyFetches(w *waiting, rc *rcopy) {
	for _, p := range c.cells.finish(w.fetches, rc.warmup) {
		w.b.Payloads[p.key] = p.payload
	}
	w.fetches = nil
}

// finish ends an interval's fetches as it pairs: the cells each brought,
// and, unless the copy is the receiver's first (it has no RDA line:
// warmupEvidence), what each did, for its line.
func (cf *cellFetcher) finish(fs []*fetch, warmup bool) []cellPatch {
	var ps []cellPatch
	for _, f := range fs {
		if f.got != nil {
			p := append(append([]byte(nil), f.payload[:f.hdrLen]...), f.got...)
			ps = append(ps, cellPatch{key: control.PartKey{MEC: f.key.mec, Kind: control.KindRDA}, payload: p})
		}
		if warmup {
			continue
		}
		if cf.fetched == nil {
			cf.fetched = map[repairKey]*fetch{}
		}
		cf.fetched[f.key] = f
	}
	return ps
}

// fields adds what fetching more cells did to class m's RDA line of
// interval k, and forgets it.
func (cf *cellFetcher) fields(k uint64, m int, extra map[string]any) {
	key := repairKey{k: k, mec: uint16(m)}
	f := cf.fetched[key]
	if f == nil {
		return
	}
	delete(cf.fetched, key)
	extra["rda_fetch"] = f.status
	extra["rda_fetch_shipped_cells"] = f.shipped
	extra["rda_fetch_cells"] = f.gotCells
	extra["rda_fetch_tries"] = f.tries
	extra["rda_fetch_request_bytes"] = f.reqBytes
	extra["rda_fetch_reply_bytes"] = f.repBytes
	extra["rda_fetch_frames"] = f.frames
}

// pairFetchedAtStop pairs, oldest first, the intervals still waiting for
// cells when the appliance stops, with what they have.
func (c *controller) pairFetchedAtStop() {
	var ks []uint64
	for k, w := range c.halves.bundles {
		if _, ok := c.halves.copies[k]; ok && (w.fetches != nil || w.rows != nil || w.edges != nil || c.parts.fetching(k)) {
			ks = append(ks, k)
		}
	}
	c.parts.stop()
	sort.Slice(ks, func(i, j int) bool { return ks[i] < ks[j] })
	for _, k := range ks {
		w := c.halves.bundles[k]
		c.cells.stop(w.fetches)
		c.rows.stop(w.rows)
		c.edges.stop(w.edges)
		c.applyFetches(w, c.halves.copies[k])
		c.rows.apply(w)
		c.halves.copies[k].edges = c.edges.counts(w.edges, len(c.halves.copies[k].lda))
		w.edges = nil
		c.pair(w.b, c.halves.copies[k])
		c.halves.paired(k)
	}
}

// stop ends an interval's open fetches at stop.
func (cf *cellFetcher) stop(fs []*fetch) {
	for _, f := range fs {
		if !f.done {
			f.done, f.status = true, "stopped"
			cf.req.rc.givenUp.Add(1)
		}
	}
}
