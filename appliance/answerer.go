package appliance

import (
	"fmt"
	"math"
	"sync/atomic"
	"time"

	"github.com/ldafwd/ldafwd/control"
	"github.com/ldafwd/ldafwd/dataplane"
	"github.com/ldafwd/ldafwd/synopsis"
)

// answerer is the sender's side of the in-band exchanges: it keeps what
// each shipped interval's requests may ask for while they may come (the
// RDA timestamp caches, repair.go; the recorded RDA cells, fetch.go; the
// LDA payloads shipped, partfetch.go; the interval's control budget,
// replyFits) and answers the peer's requests from it, its replies paced
// behind each other (sendReply). Its frames leave through the shipper,
// their bytes paid from later shipments. What it needs from the other
// parts (the parity loss a reply's fragment size follows, the interval
// current at start for the caches' sizing) the coordinator hands it.
type answerer struct {
	cfg    *Config
	sender *control.Sender
	ship   *shipper
	// tscaches: each interval's RDA timestamp caches, by class, taken off
	// the sender's idle copy; spares: caches of intervals no longer open
	// to requests, for reuse.
	tscaches map[uint64][]*synopsis.TSCache
	spares   []*synopsis.TSCache
	// fulls: each interval's recorded RDA cells, by class; fullSpares:
	// their memory, for reuse.
	fulls      map[uint64][]*synopsis.RDA
	fullSpares []*synopsis.RDA
	parts      map[uint64]map[uint16][]byte // interval → class → LDA payload shipped
	// ldas: each interval's recorded LDAs, by class (ldarows.go);
	// ldaSpares: their memory, for reuse.
	ldas      map[uint64][]*synopsis.LDA
	ldaSpares []*synopsis.LDA
	// budgets: each shipped interval's control budget (bytes, all
	// copies; 0: none), while it is open to requests.
	budgets map[uint64]uint64
	paced   []pacedFrame           // reply fragments not yet due, in due order
	fragOf  map[[2]uint64]replyCut // the fragment size of each request's replies (session, id)
	// sent: the last reply to each request (session, id), for the
	// fragments a resend request asks for again; only: their selection.
	sent map[[2]uint64]*sentReply
	only []bool
	bufs [][]byte
	// gone answers membership requests about intervals whose caches are
	// no longer kept (answerMembers).
	gone *synopsis.TSCache
	// The counters of RepairCounters this side keeps.
	answered, refused, overBudget atomic.Uint64
}

// idle says whether no reply fragment waits for its time.
func (s *answerer) idle() bool { return len(s.paced) == 0 }

// retryPeriod is how often a request is sent again while no reply came,
// as a fraction of the interval; replies are paced over half of it.
func retryPeriod(interval time.Duration) time.Duration {
	return max(interval/16, 2*time.Millisecond)
}

// keepCaches takes the timestamp caches off the sender's idle copy of
// interval set.LastK (before Release resets it) and forgets those of
// intervals no longer open to requests.
func (s *answerer) keepCaches(set *dataplane.SynSet, startK uint64) {
	k := set.LastK
	if s.tscaches == nil {
		s.tscaches = map[uint64][]*synopsis.TSCache{}
	}
	var kept []*synopsis.TSCache
	for _, r := range set.RDA {
		old := r.Cache()
		if old == nil {
			kept = append(kept, nil)
			continue
		}
		var spare *synopsis.TSCache
		room := cacheRoom(old.Distinct(), set, s.cfg.Interval, startK)
		if n := len(s.spares); n > 0 {
			spare, s.spares = s.spares[n-1], s.spares[:n-1]
			spare.Reserve(room) // follows the traffic, empties
		} else {
			spare = old.EmptyLike(room)
		}
		kept = append(kept, r.SwapCache(spare))
	}
	s.tscaches[k] = kept
	s.keepCells(k, set.RDA, kept)
	for _, j := range sortedKeys(s.tscaches) {
		if cs := s.tscaches[j]; j+repairKeepIntervals < k || j > k+64 {
			for _, t := range cs {
				if t != nil && len(s.spares) < 2*len(set.RDA) {
					s.spares = append(s.spares, t)
				}
			}
			delete(s.tscaches, j)
		}
	}
}

// cacheRoom is the packets a timestamp cache of set's copy is sized for
// at its next use: the distinct packets it was offered in the interval
// just handed over (TSCache.Distinct: copies of a packet take no slot),
// extrapolated to a whole interval when the copy covered less of
// one (the copy a start cut short), so that the copy's next interval does
// not sample for a start's sake. A copy is sized only while the control
// side holds it, which is an interval behind each of the other copies:
// the copies the worker records into before the first is handed back
// keep their starting room (synopsis.TSCache.Reserve). The copies sized
// from the first startSizings intervals after a start keep at least the
// starting room: the first of them covers the time before the traffic
// began (a start cut it short, the generator may not have run yet), and
// the copy it sizes records an interval of full traffic three intervals
// later. The room is half as much again as the packets seen: Reserve
// leaves twice the room, so a copy that ends up holding two intervals
// (an End marker lost) still keeps every packet, and its cache can tell
// the neighbouring intervals which of their lost packets crossed
// (spanEvidence). A quiet copy (fewer packets than quietShare of the
// starting room) sizes the next to the starting room too.
func cacheRoom(offered uint64, set *dataplane.SynSet, interval time.Duration, startK uint64) uint64 {
	room := offered + offered/2
	iv := uint64(interval.Nanoseconds())
	if set.EndNs > set.StartNs && set.FirstK == set.LastK {
		if span := set.EndNs - set.StartNs; span < iv && room < math.MaxUint64/iv {
			room = room * iv / span
		}
	}
	if len(set.RDA) > 0 {
		start := cacheStartPackets / uint64(len(set.RDA))
		if set.LastK < startK+startSizings || offered < start/quietShare {
			room = max(room, start)
		}
	}
	return room
}

// quietShare: a copy that saw fewer packets than 1/quietShare of the
// starting room sizes the next copies to the starting room rather than
// to its traffic. A quiet class costs little whatever its caches' room
// (memory follows the traffic where it is heavy, which is where the
// caches' size costs rate), and traffic that begins after a quiet spell
// then finds room from its first interval. Sized to the quiet spell, the
// copies would sample the first two intervals of new traffic (the sizing
// follows it an interval behind), and the RDA's repair and the edge check
// refuse a sampled cache: under congestion, the spell's first intervals
// would have no verified loss. At 16 384 packets and one class: a copy
// that saw fewer than 2 048 distinct packets.
const quietShare = 8

// startSizings is how many intervals after the start size their copies
// at least to the starting room: one per buffered copy, and one more.
const startSizings = 4

// answer replies to a request for the timestamps of interval x.Interval,
// class x.MEC, from the cache kept for it.
func (s *answerer) answer(x *control.Exchange, loss float64) {
	var cache *synopsis.TSCache
	if cs := s.tscaches[x.Interval]; int(x.MEC) < len(cs) {
		cache = cs[x.MEC]
	}
	if x.Kind != control.KindRDA || x.To != s.sender.Session() || cache == nil {
		s.refused.Add(1)
		s.cfg.Log.Debug().Uint64("interval", x.Interval).Uint16("mec", x.MEC).Bool("our_session", x.To == s.sender.Session()).
			Msg("timestamp request refused: not our session, or the interval's timestamps are no longer kept")
		return
	}
	ids, version, err := synopsis.ParseTimestampRequestVersion(x.Body)
	if err != nil {
		s.refused.Add(1)
		s.cfg.Log.Debug().Err(err).Uint64("interval", x.Interval).Msg("timestamp request does not decode")
		return
	}
	// An identity recorded twice in this interval (identical frames) is
	// answered "not cached": which copy was lost is unknown (the reply
	// leaves out what TSCache.SeenOnce does not vouch for); its cells stay
	// out of the mean, as EstimateRDA does (RDAStats.Ambiguous).
	body := cache.AppendReplyVersion(nil, ids, version)
	s.replyIfFits(x, control.KindRDA, body, s.replyFrag(x, loss, 0), s.cfg.Clock(), "timestamp reply")
}

// answerCells replies to a request for interval x.Interval's RDA of class
// x.MEC folded to more cells, from the cells kept for it.
func (s *answerer) answerCells(x *control.Exchange, loss float64) {
	var full *synopsis.RDA
	if rs := s.fulls[x.Interval]; int(x.MEC) < len(rs) {
		full = rs[x.MEC]
	}
	cells, err := synopsis.ParseCellsRequest(x.Body)
	var f *synopsis.RDA
	if err == nil && full != nil {
		f, err = full.Fold(cells)
	}
	if x.Kind != control.KindRDA || x.To != s.sender.Session() || full == nil || err != nil {
		s.refused.Add(1)
		s.cfg.Log.Debug().Err(err).Uint64("interval", x.Interval).Uint16("mec", x.MEC).Bool("kept", full != nil).
			Msg("RDA cells request refused: not our session, the interval's cells are no longer kept, or a size they do not fold to")
		return
	}
	body, _ := f.AppendBinary(nil)
	s.replyIfFits(x, control.KindRDA, body, s.replyFrag(x, loss, 0), s.cfg.Clock(), "RDA cells reply")
}

// keepCells keeps the sender's recorded RDA cells of interval k (with
// the timestamp caches kept for it, whose sampling level their encoding
// states) while its caches are kept, reusing the memory of intervals no
// longer open to requests.
func (s *answerer) keepCells(k uint64, rdas []*synopsis.RDA, caches []*synopsis.TSCache) {
	if s.fulls == nil {
		s.fulls = map[uint64][]*synopsis.RDA{}
	}
	for _, j := range sortedKeys(s.fulls) {
		if rs := s.fulls[j]; j+repairKeepIntervals < k || j > k+64 {
			for _, r := range rs {
				if r != nil && len(s.fullSpares) < 2*len(rdas) {
					s.fullSpares = append(s.fullSpares, r)
				}
			}
			delete(s.fulls, j)
		}
	}
	kept := make([]*synopsis.RDA, len(rdas))
	for m, r := range rdas {
		var dst *synopsis.RDA
		if n := len(s.fullSpares); n > 0 {
			dst, s.fullSpares = s.fullSpares[n-1], s.fullSpares[:n-1]
		}
		var cache *synopsis.TSCache
		if m < len(caches) {
			cache = caches[m]
		}
		if cache == nil {
			// No timestamp cache (--rda-cache 0): the encoding says so
			// and no receiver asks for cells.
			if dst != nil {
				s.fullSpares = append(s.fullSpares, dst)
			}
			continue
		}
		kept[m] = r.CopyCells(dst, cache)
	}
	s.fulls[k] = kept
}

// pacedFrame is a reply fragment due at a time (ns, the control clock).
type pacedFrame struct {
	at    uint64
	frame []byte
	reply [2]uint64 // the request it answers: session, id
}

// keepParts keeps interval k's shipped LDA payloads for requests.
func (s *answerer) keepParts(k uint64, parts []control.Part) {
	if s.parts == nil {
		s.parts = map[uint64]map[uint16][]byte{}
	}
	m := map[uint16][]byte{}
	for _, p := range parts {
		if p.Kind == control.KindLDA {
			m[p.MEC] = p.Payload
		}
	}
	s.parts[k] = m
	for j := range s.parts {
		if j+partKeepIntervals < k || j > k+64 {
			delete(s.parts, j)
		}
	}
}

// answerPart replies to a request for interval x.Interval's LDA of class
// x.MEC with the payload shipped, its fragments paced.
func (s *answerer) answerPart(x *control.Exchange, nowNs uint64) {
	payload, ok := s.parts[x.Interval][x.MEC]
	frag, rows, err := parsePartRequest(x.Body)
	if err == nil && rows != nil && x.Kind == control.KindLDA {
		s.answerRows(x, frag, rows, nowNs)
		return
	}
	if x.Kind != control.KindLDA || x.To != s.sender.Session() || !ok || err != nil {
		s.refused.Add(1)
		s.cfg.Log.Debug().Uint64("interval", x.Interval).Uint16("mec", x.MEC).Bool("our_session", x.To == s.sender.Session()).Bool("kept", ok).
			AnErr("request", err).Msg("LDA part request refused: not our session, the part is no longer kept, or the request does not parse")
		return
	}
	s.replyIfFits(x, control.KindLDA, payload, s.replyFrag(x, 0, frag), nowNs, "LDA part reply")
}

// replyIfFits sends body as the reply to x (sendReply) if the interval's
// control budget can pay for it (replyFits); else it counts and logs the
// refusal.
func (s *answerer) replyIfFits(x *control.Exchange, kind control.Kind, body []byte, frag int, nowNs uint64, what string) {
	if ok, why := s.replyFits(x.Interval, len(body)); !ok {
		s.refused.Add(1)
		s.overBudget.Add(1)
		s.cfg.Log.Debug().Uint64("interval", x.Interval).Int("reply_bytes", len(body)).Msg(what + " not sent: " + why)
		return
	}
	s.sendReply(x, kind, body, frag, nowNs, what)
}

// sendReply sends body as the reply to x, in fragments of frag message
// bytes (0: full size) paced evenly over half a retry period behind the
// replies already waiting, so that a reply is never one burst into the
// queue that lost what it answers (the requester's next try comes after
// it). Every try of one request is cut alike: its fragments fill the same
// slots at the requester.
func (s *answerer) sendReply(x *control.Exchange, kind control.Kind, body []byte, frag int, nowNs uint64, what string) {
	if s.waitingReply(x) {
		// A retry that came before the last answer left: that answer
		// is still on its way, and a second copy behind it would only
		// push every later reply back.
		return
	}
	if frag > 0 {
		// At most MaxExchangeFragments fragments.
		frag = max(frag, (len(body)+control.MaxExchangeFragments-1)/control.MaxExchangeFragments)
	}
	frames, err := s.sender.AppendExchangeSized(s.bufs, control.TypeReply, x.Interval, x.MEC, kind, x.Session, x.ID, body, frag)
	if err != nil {
		s.refused.Add(1)
		s.cfg.Log.Warn().Err(err).Uint64("interval", x.Interval).Msg(what + " not sent")
		return
	}
	s.bufs = frames[:cap(frames)]
	s.pace(frames, [2]uint64{x.Session, uint64(x.ID)}, nowNs)
	s.answered.Add(1)
	s.keepSent(x, kind, body, frag)
}

// pace queues frames evenly over half a retry period behind the replies
// already waiting, their bytes paid from later shipments; a short reply's
// frames at most a 32nd of a retry period apart, so that a one-frame
// reply does not hold every reply behind it for half a retry period (the
// shipper paces what it injects anyway: pacing.go).
func (s *answerer) pace(frames [][]byte, reply [2]uint64, nowNs uint64) {
	rp := uint64(retryPeriod(s.cfg.Interval))
	gap := min(rp/2/uint64(len(frames)), rp/32)
	at := nowNs
	if n := len(s.paced); n > 0 {
		at = max(at, s.paced[n-1].at+gap)
	}
	for i, f := range frames {
		s.paced = append(s.paced, pacedFrame{at: at + uint64(i)*gap, frame: append([]byte(nil), f...), reply: reply})
		s.ship.paid(len(f))
	}
}

// sentReply is a reply as sent: what a resend request needs to build
// any of its fragments again, under fresh sequence numbers.
type sentReply struct {
	k    uint64
	mec  uint16
	kind control.Kind
	body []byte
	frag int
}

// maxSentReplies bounds the replies kept for resend requests: those of
// the newest intervals stay.
const maxSentReplies = 32

// keepSent keeps the reply to x for resend requests while its interval is
// open to requests (partKeepIntervals), at most maxSentReplies of them.
func (s *answerer) keepSent(x *control.Exchange, kind control.Kind, body []byte, frag int) {
	if s.sent == nil {
		s.sent = map[[2]uint64]*sentReply{}
	}
	s.sent[[2]uint64{x.Session, uint64(x.ID)}] = &sentReply{k: x.Interval, mec: x.MEC, kind: kind, body: append([]byte(nil), body...), frag: frag}
	for len(s.sent) > maxSentReplies {
		var oldest [2]uint64
		first := true
		for key, r := range s.sent {
			if first || r.k < s.sent[oldest].k || r.k == s.sent[oldest].k && key[1] < oldest[1] {
				oldest, first = key, false
			}
		}
		delete(s.sent, oldest)
	}
	for key, r := range s.sent {
		if r.k+partKeepIntervals < x.Interval || r.k > x.Interval+64 {
			delete(s.sent, key)
		}
	}
}

// resend answers a resend request: the fragments it names of our last
// reply to its request id, built again with fresh sequence numbers and
// paced like a reply. A request for a reply no longer kept, or naming
// fragments the reply does not have, is refused.
func (s *answerer) resend(x *control.Exchange, nowNs uint64) {
	if s.waitingReply(x) {
		return // the fragments it names may still be waiting to leave (sendReply)
	}
	r := s.sent[[2]uint64{x.Session, uint64(x.ID)}]
	var err error
	s.only, err = control.ParseResend(x.Body, s.only)
	var frames [][]byte
	if err == nil && r != nil && x.To == s.sender.Session() && r.k == x.Interval && r.mec == x.MEC {
		frames, err = s.sender.AppendExchangeOnly(s.bufs, control.TypeReply, r.k, r.mec, r.kind, x.Session, x.ID, r.body, r.frag, s.only)
	}
	if err != nil || len(frames) == 0 {
		s.refused.Add(1)
		s.cfg.Log.Debug().Err(err).Uint64("interval", x.Interval).Uint32("id", x.ID).Bool("kept", r != nil).
			Msg("resend request refused: not our session, the reply is no longer kept, or fragments it does not have")
		return
	}
	s.bufs = frames[:cap(frames)]
	s.pace(frames, [2]uint64{x.Session, uint64(x.ID)}, nowNs)
	s.answered.Add(1)
}

// waitingReply says whether a fragment of our answer to x's request
// (session, id) is still paced, not yet due. One due and waiting in the
// shipper does not count: a retry then queues the reply again, another
// copy of every fragment for a lossy segment; the copies wait behind the
// shipments as the first does, and expire as it does (shipper.handOver).
func (s *answerer) waitingReply(x *control.Exchange) bool {
	key := [2]uint64{x.Session, uint64(x.ID)}
	for i := range s.paced {
		if s.paced[i].reply == key {
			return true
		}
	}
	return false
}

// lossyReplyLoss is the control loss (the peer's reports, parityLoss) from
// which the RDA's replies go in short frames, as LDA parts always do.
const lossyReplyLoss = 0.05

// replyFrag is the fragment size of the reply to request x: what the
// request asked for (asked > 0), or short frames while the peer reports
// lossy control frames, and never more than the sender's fragments under
// its frame limit (pacing.go). The first try's choice holds for every
// retry of the request (kept with its interval): the fragments of every
// try must fill the same slots.
func (s *answerer) replyFrag(x *control.Exchange, loss float64, asked int) int {
	key := [2]uint64{x.Session, uint64(x.ID)}
	if f, ok := s.fragOf[key]; ok {
		return f.frag
	}
	frag := s.sender.ExchangeFragmentSize()
	switch {
	case asked > 0:
		frag = min(frag, asked)
	case loss >= lossyReplyLoss:
		frag = min(frag, partFetchFrag)
	}
	if s.fragOf == nil {
		s.fragOf = map[[2]uint64]replyCut{}
	}
	s.fragOf[key] = replyCut{k: x.Interval, frag: frag}
	for k, f := range s.fragOf {
		if f.k+partKeepIntervals < x.Interval || f.k > x.Interval+64 {
			delete(s.fragOf, k)
		}
	}
	return frag
}

// replyCut is the fragment size chosen for one request's replies.
type replyCut struct {
	k    uint64
	frag int
}

// duePaced hands the paced reply fragments that are due to the inject
// queue.
func (s *answerer) duePaced(nowNs uint64) {
	n := 0
	for n < len(s.paced) && s.paced[n].at <= nowNs {
		p := &s.paced[n]
		s.ship.queueReply(replyFrame{frame: p.frame, expires: p.at + uint64(s.cfg.Interval.Nanoseconds())})
		n++
	}
	if n > 0 {
		clear(s.paced[:n])
		s.paced = s.paced[n:]
	}
}

// keepBudget remembers interval k's control budget while its requests
// may come (as long as its timestamp caches are kept, repair.go).
func (s *answerer) keepBudget(k, budget uint64) {
	if s.budgets == nil {
		s.budgets = map[uint64]uint64{}
	}
	s.budgets[k] = budget
	for j := range s.budgets {
		if j+repairKeepIntervals < k || j > k+64 {
			delete(s.budgets, j)
		}
	}
}

// replyFits says whether a reply of body bytes about interval k may go:
// within what the interval's control budget can pay, later intervals'
// included — the exchanges' debt reaches maxDebtIntervals budgets, which
// is what a burst of loss's cells on demand take (no bound without a
// budget). What it says no to is counted (RepliesOverBudget) and logged:
// the requester's line keeps the bound it had. Loss does not refuse a
// reply: the requester retries every 1/16 interval for half an interval,
// the replier answers each retry, and the fragments of every attempt fill
// the same slots (control.Exchange), so each fragment has eight chances
// — a reply is a message sent in copies, which the budget pays for.
func (s *answerer) replyFits(k uint64, body int) (bool, string) {
	if b := s.budgets[k]; b > 0 && uint64(s.sender.ExchangeBytes(body)) > maxDebtIntervals*b {
		return false, fmt.Sprintf("larger than %d of the interval's control budgets", maxDebtIntervals)
	}
	return true, ""
}
