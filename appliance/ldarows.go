package appliance

import (
	"encoding/binary"
	"math"
	"math/bits"
	"time"

	"github.com/ldafwd/ldafwd/control"
	"github.com/ldafwd/ldafwd/report"
	"github.com/ldafwd/ldafwd/synopsis"
)

// Fetching an interval's LDA at a larger shape (docs/lda.md, "More rows
// under heavy loss"). The sender ships each interval's LDA folded to
// about one packet per bucket within the control budget
// (synopsis.LDA.ShipRows), before it can know the interval's loss. Under
// heavy loss that shape keeps a thin sample: a bucket is usable only if
// none of its packets was lost, so a bucket of λ packets is usable with
// probability (1−L)^λ, and a bank of n packets in r rows keeps about
// n(1−L)e^(−L·n/r) of them. At half the packets lost, a bank sized for one
// packet a bucket keeps 30 % of its packets, and the banks that hold
// several a bucket keep almost none. The bound's std-dev is the sample's
// (eq. 1 of the paper takes σ̂ for σ): a sample of a few hundred that
// holds none of a thin tail of the delays reads a narrow σ and a mean off
// by the tail's share. The sender records at the configured shape (by
// default 8 × 1024 rows), which under the same loss keeps two or three
// times the sample.
//
// So the receiver, pairing an interval whose End markers' counts show
// heavy loss, asks in-band for the sender's recorded LDA folded to the
// rows that loss makes worth having:
//
//   - Asked for a class whose loss (sent against received, the LDAs'
//     exact counts) and shipped LDA's sample are synopsis.LDAThin, and
//     for which the sender
//     recorded more rows than it shipped (the receiver records the same
//     shape: both ends run one configuration).
//   - The rows asked (ldaFetchRows): from the shipped shape, bank by bank
//     doubled where the expected sample gains most per row added, up to
//     rowsFetchGrowth times the shipped rows (the reply's bytes grow about
//     with its rows) and the recorded rows; asked only when that gains at
//     least a quarter more samples. A bank never shrinks: the crossing
//     checks fold neighbouring intervals to their common shape, and keep
//     at least the shipped one.
//   - The request is a part request (partfetch.go) of version 2 that
//     names the rows per bank; the sender answers from the recorded LDA
//     it keeps for partKeepIntervals intervals (as long as the shipped
//     parts: an interval whose part was lost asks for more rows only
//     once the part came), folded to those rows
//     and encoded as the shipped part was, behind the shipped part's
//     payload header, in short paced fragments (sendReply). It refuses a
//     reply the budget cannot pay (replyFits).
//   - Retried every 2·retryPeriod (the reply is tens of short frames
//     into a lossy segment, each try's filling the same slots), given up
//     an interval after the first try: eight tries, and at 40 % frame
//     loss a fragment then misses every one of them with probability
//     7·10⁻⁴. The interval then pairs with the shipped LDA. Its lines wait
//     for the next interval in any case (crossing.go), and for the fetch
//     only when its reply was lost.
//   - A reply is accepted once, from the session asked, for our session
//     and the request's id, only if it parses as a payload holding an LDA
//     of exactly the rows asked. Folding is exact, so the receiver folds
//     its own copy to that shape (pairer.lda) and every usable bucket of
//     the shipped shape is the union of usable ones of the larger: the
//     sample can only grow.
//
// The line says what the fetch did: lda_rows_fetch (complete, no reply,
// stopped, not sent), lda_rows_fetch_shipped (the shape shipped) and
// lda_rows_fetch_shipped_samples (the samples it gave), the rows asked
// (lda-shipped= in config is then the fetched shape the estimate used),
// tries and bytes.

// Where it asks is synopsis.LDAThin: at least 10 % lost, fewer than 1 000
// samples. Below that loss a bucket per packet keeps at least 90 % of the
// packets, and the reply's bytes, paid from the next intervals' budget,
// would cost the other synopses more than the LDA gains.
const (
	// rowsFetchGrowth caps the rows asked at this many times the rows
	// shipped: a reply costs about as many bytes per row as the shipment.
	rowsFetchGrowth = 2
	// rowsFetchGain is the least expected gain in samples worth a
	// request: 25 %.
	rowsFetchGain = 1.25
)

// partRowsVersion is the version of a part request that names rows per
// bank (appendRowsRequest).
const partRowsVersion = 2

// maxRowsLog2 bounds each bank's rows a request may name (2^30).
const maxRowsLog2 = 30

// appendRowsRequest is the body of a request for an interval's recorded
// LDA folded to rows[j] rows in bank j (each a power of two), replied in
// fragments of frag body bytes: magic, version 2, frag (uvarint), the
// number of banks, then each bank's log2 of its rows (a byte each).
func appendRowsRequest(dst []byte, frag int, rows []int) []byte {
	dst = append(dst, partRequestMagic, partRowsVersion)
	dst = binary.AppendUvarint(dst, uint64(frag))
	dst = append(dst, byte(len(rows)))
	for _, r := range rows {
		dst = append(dst, byte(bits.Len(uint(r))-1))
	}
	return dst
}

// parseRowsTail reads what follows the fragment size in a version-2 part
// request: the banks' rows, 1…synopsis.LDAMaxBanks banks, each 2^0…
// 2^maxRowsLog2 rows, nothing after them.
func parseRowsTail(b []byte) ([]int, error) {
	if len(b) < 1 || int(b[0]) < 1 || int(b[0]) > synopsis.LDAMaxBanks || len(b) != 1+int(b[0]) {
		return nil, errPartRequest
	}
	rows := make([]int, b[0])
	for j, l := range b[1:] {
		if l > maxRowsLog2 {
			return nil, errPartRequest
		}
		rows[j] = 1 << l
	}
	return rows, nil
}

// expectedSamples is the sample a bank of n packets in r rows keeps when a
// share loss of the packets is lost independently: n(1−L)e^(−L·n/r)
// (the packets per bucket are about Poisson(n/r), and a bucket counts
// only when none of its packets was lost).
func expectedSamples(n uint64, r int, loss float64) float64 {
	if r <= 0 || n == 0 {
		return 0
	}
	x := float64(n)
	return x * (1 - loss) * math.Exp(-loss*x/float64(r))
}

// ldaFetchRows is the rows per bank to ask for: from shipped, the bank
// whose doubling adds the most expected samples per row added, while the
// total stays within limit rows and each bank within recorded; n[j] is
// bank j's packets at the sender. It returns the rows and the expected
// samples at the shipped and at the asked shapes.
func ldaFetchRows(n []uint64, shipped, recorded []int, loss float64, limit int) (rows []int, before, after float64) {
	rows = append([]int(nil), shipped...)
	total := 0
	for j, r := range rows {
		total += r
		before += expectedSamples(n[j], r, loss)
	}
	after = before
	for {
		best, bestRate := -1, 0.0
		for j, r := range rows {
			if 2*r > recorded[j] || total+r > limit {
				continue
			}
			// Less than a hundredth of a sample per row is not worth
			// its bytes.
			gain := expectedSamples(n[j], 2*r, loss) - expectedSamples(n[j], r, loss)
			if rate := gain / float64(r); rate > max(bestRate, 0.01) {
				best, bestRate = j, rate
			}
		}
		if best < 0 {
			return rows, before, after
		}
		after += expectedSamples(n[best], 2*rows[best], loss) - expectedSamples(n[best], rows[best], loss)
		total += rows[best]
		rows[best] *= 2
	}
}

// rowsFetch is one class's request for interval k's LDA at more rows.
type rowsFetch struct {
	key            repairKey
	peer           uint64
	id             uint32
	rows           []int // asked, per bank
	want           synopsis.LDAConfig
	shipped        string // the shipped shape (LDAConfig.Shape)
	shippedSamples uint64
	body           []byte
	first, last    time.Time
	tries          int
	reqBytes       int
	repBytes       int
	got            []byte // the reply: payload header and LDA encoding
	done           bool
	status         string
}

// rowsFetcher is the receiver's side of the LDA rows exchange: it asks
// for a larger LDA of the classes whose loss thinned the shipped one's
// sample, retries and gives up, and keeps what each fetch did until its
// line is built. An interval's fetches travel with its bundle
// (waiting.rows), as the cells fetches do.
type rowsFetcher struct {
	cfg     *Config
	req     *requester
	fetched map[repairKey]*rowsFetch // finished, until their line takes them (fields)
}

// start asks for a larger LDA of every class of interval b.Interval that
// needs one (above) against the receiver's copy rc; it returns the
// fetches sent.
func (rf *rowsFetcher) start(b *control.IntervalBundle, rc *rcopy, now time.Time) []*rowsFetch {
	if rc.warmup || rc.merged || rc.steerWhy != "" || b.Session == 0 {
		// The receiver's first copy has no LDA line; a copy that is not
		// exactly the interval's would not be valid at any shape.
		return nil
	}
	var fs []*rowsFetch
	for m := range rc.lda {
		if f := rf.need(b, rc, m); f != nil {
			f.first = now
			fs = append(fs, f)
			rf.send(f, now)
		}
	}
	return fs
}

// need is class m's fetch if it needs one, else nil.
func (rf *rowsFetcher) need(b *control.IntervalBundle, rc *rcopy, m int) *rowsFetch {
	payload, ok := b.Payloads[control.PartKey{MEC: uint16(m), Kind: control.KindLDA}]
	if !ok {
		return nil
	}
	h, body, err := parsePayload(payload)
	if err != nil || h.Flags&payloadOmitted != 0 || sessionReason(h.Flags, rc).Code != 0 {
		return nil
	}
	var cl synopsis.CompactLDA
	if cl.UnmarshalBinary(body) != nil {
		return nil
	}
	own := rc.lda[m]
	snd, rec := cl.Config(), own.Config()
	sent, got := cl.Count(), own.Count()
	if snd.Equal(rec) || !synopsis.LDAThin(sent, got, 0) {
		return nil
	}
	loss := 1 - float64(got)/float64(sent)
	folded, err := own.Fold(snd)
	if err != nil {
		return nil
	}
	e, err := synopsis.EstimateLDACompact(&cl, folded, rf.cfg.Conf)
	if err != nil || !synopsis.LDAThin(sent, got, e.Samples) {
		return nil
	}
	n := make([]uint64, len(snd.Banks))
	shipped := make([]int, len(snd.Banks))
	recorded := make([]int, len(snd.Banks))
	limit := 0
	for j, bk := range snd.Banks {
		for r := 0; r < bk.Rows; r++ {
			n[j] += cl.BucketCount(j, r)
		}
		shipped[j], recorded[j] = bk.Rows, rec.Banks[j].Rows
		limit += rowsFetchGrowth * bk.Rows
	}
	rows, before, after := ldaFetchRows(n, shipped, recorded, loss, limit)
	if after < rowsFetchGain*before {
		return nil
	}
	return &rowsFetch{key: repairKey{k: b.Interval, mec: uint16(m)}, peer: b.Session, rows: rows, want: snd.WithRows(rows),
		shipped: snd.Shape(), shippedSamples: e.Samples, body: appendRowsRequest(nil, rf.req.replyFrag(), rows)}
}

// send sends (again) f's request, under one request id for every try.
func (rf *rowsFetcher) send(f *rowsFetch, now time.Time) {
	if f.id == 0 {
		f.id = rf.req.nextID()
	}
	_, bytes, ok := rf.req.send(f.key, control.KindLDA, f.peer, f.id, f.body, "LDA rows request")
	if !ok {
		f.done, f.status = true, "not sent"
		return
	}
	f.reqBytes += bytes
	f.tries++
	f.last = now
	rf.req.rc.sent.Add(1)
}

// rowsFetching says whether w still waits for a larger LDA.
func rowsFetching(w *waiting) bool {
	for _, f := range w.rows {
		if !f.done {
			return true
		}
	}
	return false
}

// rowsTick retries the pending rows requests and gives up those past
// their deadline, in interval order.
func (c *controller) rowsTick(now time.Time) {
	for _, k := range sortedKeys(c.halves.bundles) {
		for _, f := range c.halves.bundles[k].rows {
			switch {
			case f.done:
			case now.Sub(f.first) >= c.a.cfg.Interval:
				c.req.rc.givenUp.Add(1)
				f.done, f.status = true, "no reply"
			case now.Sub(f.last) >= 2*retryPeriod(c.a.cfg.Interval):
				c.rows.send(f, now)
			}
		}
	}
}

// onRowsReply takes a reply to one of our rows requests; false when it
// answers none (it may answer a part request: partfetch.go).
func (c *controller) onRowsReply(x *control.Exchange) bool {
	w := c.halves.bundles[x.Interval]
	if w == nil || x.Kind != control.KindLDA {
		return false
	}
	var f *rowsFetch
	for _, g := range w.rows {
		if g.key.mec == x.MEC && g.id == x.ID && !g.done {
			f = g
		}
	}
	if f == nil {
		return false
	}
	if x.Session != f.peer || x.To != c.req.sender.Session() {
		c.req.rc.stray.Add(1)
		return true
	}
	_, body, err := parsePayload(x.Body)
	var cl synopsis.CompactLDA
	if err == nil {
		err = cl.UnmarshalBinary(body)
	}
	if err != nil || !cl.Config().Equal(f.want) {
		c.req.rc.bad.Add(1)
		c.a.cfg.Log.Debug().Err(err).Uint64("interval", x.Interval).Msg("LDA rows reply does not decode as the rows asked")
		return true
	}
	c.req.rc.accepted.Add(1)
	f.repBytes += x.Bytes
	f.got = x.Body
	f.done, f.status = true, "complete"
	return true
}

// applyRows puts each class's fetched LDA in the bundle in place of the
// shipped one (pair then folds the receiver's copy to it), and keeps what
// each fetch did for its line (fields).
func (rf *rowsFetcher) apply(w *waiting) {
	for _, f := range w.rows {
		if f.got != nil {
			w.b.Payloads[control.PartKey{MEC: f.key.mec, Kind: control.KindLDA}] = f.got
		}
		if rf.fetched == nil {
			rf.fetched = map[repairKey]*rowsFetch{}
		}
		rf.fetched[f.key] = f
		for key := range rf.fetched {
			if key.k+64 < f.key.k {
				delete(rf.fetched, key) // an interval whose line was never built (a recut copy)
			}
		}
	}
	w.rows = nil
}

// stop ends an interval's open rows fetches at stop.
func (rf *rowsFetcher) stop(fs []*rowsFetch) {
	for _, f := range fs {
		if !f.done {
			f.done, f.status = true, "stopped"
			rf.req.rc.givenUp.Add(1)
		}
	}
}

// fields adds what fetching class m's LDA of interval k at more rows did
// to its line's extra, and forgets it.
func (rf *rowsFetcher) fields(k uint64, m int, r *report.Interval) {
	key := repairKey{k: k, mec: uint16(m)}
	f := rf.fetched[key]
	if f == nil {
		return
	}
	delete(rf.fetched, key)
	if r.Extra == nil {
		r.Extra = map[string]any{}
	}
	extra := r.Extra
	extra["lda_rows_fetch"] = f.status
	extra["lda_rows_fetch_shipped"] = f.shipped
	extra["lda_rows_fetch_shipped_samples"] = f.shippedSamples
	extra["lda_rows_fetch_rows"] = f.want.Shape()
	extra["lda_rows_fetch_tries"] = f.tries
	extra["lda_rows_fetch_request_bytes"] = f.reqBytes
	extra["lda_rows_fetch_reply_bytes"] = f.repBytes
}

// keepLDAs keeps the sender's recorded LDAs of interval k while a
// receiver may ask for them at more rows, reusing the memory of intervals
// no longer open to requests.
func (s *answerer) keepLDAs(k uint64, ldas []*synopsis.LDA) {
	if s.ldas == nil {
		s.ldas = map[uint64][]*synopsis.LDA{}
	}
	for _, j := range sortedKeys(s.ldas) {
		if j+partKeepIntervals < k || j > k+64 {
			for _, l := range s.ldas[j] {
				if l != nil && len(s.ldaSpares) < 2*len(ldas) {
					s.ldaSpares = append(s.ldaSpares, l)
				}
			}
			delete(s.ldas, j)
		}
	}
	kept := make([]*synopsis.LDA, len(ldas))
	for m, l := range ldas {
		if l == nil {
			continue
		}
		var dst *synopsis.LDA
		if n := len(s.ldaSpares); n > 0 {
			dst, s.ldaSpares = s.ldaSpares[n-1], s.ldaSpares[:n-1]
		}
		kept[m] = l.CopyInto(dst)
	}
	s.ldas[k] = kept
}

// answerRows replies to a request for interval x.Interval's LDA of class
// x.MEC at rows per bank: the recorded LDA folded to them, encoded behind
// the shipped part's payload header, its fragments paced.
func (s *answerer) answerRows(x *control.Exchange, frag int, rows []int, nowNs uint64) {
	var full *synopsis.LDA
	if ls := s.ldas[x.Interval]; int(x.MEC) < len(ls) {
		full = ls[x.MEC]
	}
	shipped, ok := s.parts[x.Interval][x.MEC]
	var body []byte
	var err error
	if ok && full != nil {
		var h []byte
		if _, b, perr := parsePayload(shipped); perr == nil {
			h = shipped[:len(shipped)-len(b)]
		} else {
			err = perr
		}
		var f *synopsis.LDA
		if err == nil && len(rows) == full.NumBanks() {
			f, err = full.Fold(full.Config().WithRows(rows))
		} else if err == nil {
			err = errPartRequest
		}
		if err == nil {
			body, err = f.AppendCompact(append([]byte(nil), h...), s.cfg.Bounds)
		}
	}
	if x.To != s.sender.Session() || !ok || full == nil || err != nil {
		s.refused.Add(1)
		s.cfg.Log.Debug().Err(err).Uint64("interval", x.Interval).Uint16("mec", x.MEC).Bool("kept", ok && full != nil).
			Msg("LDA rows request refused: not our session, the interval's LDA is no longer kept, or rows it does not fold to")
		return
	}
	s.replyIfFits(x, control.KindLDA, body, s.replyFrag(x, 0, frag), nowNs, "LDA rows reply")
}
