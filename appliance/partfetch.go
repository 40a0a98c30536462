package appliance

import (
	"cmp"
	"encoding/binary"
	"errors"
	"slices"
	"time"

	"github.com/ldafwd/ldafwd/control"
	"github.com/ldafwd/ldafwd/report"
)

// Fetching a lost LDA part (docs/protocol.md, "3.4 Request (type 4) and Reply (type 5)"). An
// interval's LDA goes once per --control-copies right after its End
// marker, with parity sized from the control loss the peer reported for
// earlier intervals. When a segment turns congested the first intervals
// into it are shipped with too little parity, and a queue kept full by
// small frames refuses a burst of full-size fragments far more often
// than the traffic: the interval's loss is still exact (the End markers'
// counts) but its delay is lost with the part. The receiver therefore
// asks for the part itself, in-band, once the interval's End markers are
// all in and the part is still not whole:
//
//   - Asked for each class's LDA the control.Receiver lists as incomplete
//     (Receiver.Incomplete: every End marker of the interval is in, and a
//     frame of a later interval, which the sender sent after every copy
//     of the part), or the moment a partial bundle lacks it.
//     The request (a control.TypeRequest of kind LDA) names the fragment
//     size of the reply: at most partFetchFrag bytes, and frames no
//     larger than the data's mean frame (requester.replyFrag), short
//     frames that a full queue of small frames still takes.
//   - The sender keeps the payload it shipped for each class's LDA for
//     partKeepIntervals intervals and answers with those bytes, paced
//     evenly over half the retry period so that the reply is not one
//     burst into the queue that lost the part, and its lane injects them
//     one at a time (pacing.go).
//   - The requester retries every retryPeriod; the fragments of every try
//     fill the same slots (control.Exchange), so each has several chances.
//     It gives up an interval after the first try (16 tries: at 40 %
//     frame loss a fragment then fails every one of them with
//     probability 4·10⁻⁷), sooner at stop; the interval's lines wait for
//     the next interval in any case (crossing.go), and for the part only
//     when its fragments were lost.
//   - A reply is accepted once, only from the sender session asked, for
//     our session and the request's id, and only if it parses as a
//     payload. It completes the part in the reassembly (SupplyPart), or in
//     the partial bundle when that was already out.
//
// The line says what the fetch did: lda_fetch (complete, no reply,
// stopped), lda_fetch_tries and lda_fetch_reply_bytes.

// partKeepIntervals is how many newer intervals the sender ships while it
// still answers a request for interval k's LDA: the request comes
// once a frame of interval k+1 came, retried for an interval.
const partKeepIntervals = 4

// partFetchFrag is the most body bytes per fragment of a reply the
// requests ask for: frames of about 330 bytes on the wire.
const partFetchFrag = 256

// partRequestMagic and partRequestVersion open a part request's body.
const (
	partRequestMagic   = 0xA7
	partRequestVersion = 1
)

// minReplyFrag is the fewest body bytes per reply fragment a request may
// ask for: requester.replyFrag asks for 46 at control.MinFrameLimit.
const minReplyFrag = 32

var errPartRequest = errors.New("part request does not parse")

// appendPartRequest is the body of a request for a part, replied in
// fragments of frag body bytes: magic, version, frag (uvarint).
func appendPartRequest(dst []byte, frag int) []byte {
	dst = append(dst, partRequestMagic, partRequestVersion)
	return binary.AppendUvarint(dst, uint64(frag))
}

// parsePartRequest returns the reply fragment size a part request asks
// for: 32 … 65535 bytes in its shortest uvarint; a version-1 request
// ends there and asks for the part shipped (rows nil), a version-2 one
// names the rows per bank of the recorded LDA it asks for
// (appendRowsRequest). One encoding per request.
func parsePartRequest(b []byte) (frag int, rows []int, err error) {
	if len(b) < 3 || b[0] != partRequestMagic || b[1] != partRequestVersion && b[1] != partRowsVersion {
		return 0, nil, errPartRequest
	}
	v, n := binary.Uvarint(b[2:])
	if n <= 0 || n != len(binary.AppendUvarint(nil, v)) || v < minReplyFrag || v > 65535 {
		return 0, nil, errPartRequest
	}
	tail := b[2+n:]
	if b[1] == partRequestVersion {
		if len(tail) != 0 {
			return 0, nil, errPartRequest
		}
		return int(v), nil, nil
	}
	if rows, err = parseRowsTail(tail); err != nil {
		return 0, nil, err
	}
	return int(v), rows, nil
}

// partFetch is one class's request for interval k's LDA part.
type partFetch struct {
	key      repairKey
	peer     uint64 // the sender session asked
	id       uint32
	body     []byte
	first    time.Time
	last     time.Time
	tries    int
	reqBytes int
	repBytes int
	done     bool
	status   string // complete, no reply, stopped
}

// partFetcher is the receiver's side of the LDA part exchange: the
// fetches of the intervals still open and what they did for the lines
// (the sender's side is the answerer's). A reply it accepts comes back
// to the coordinator as a partReply to put where the interval's parts
// are; what a fetch did goes into the line the coordinator hands it
// (fields).
type partFetcher struct {
	cfg     *Config
	req     *requester
	fetches map[repairKey]*partFetch // by interval and class
}

// start asks for class mec's LDA of interval k from peer, once.
func (p *partFetcher) start(k uint64, mec uint16, peer uint64, now time.Time) {
	if p.fetches == nil {
		p.fetches = map[repairKey]*partFetch{}
	}
	key := repairKey{k: k, mec: mec}
	if p.fetches[key] != nil || peer == 0 {
		return
	}
	f := &partFetch{key: key, peer: peer, first: now, body: appendPartRequest(nil, p.req.replyFrag())}
	f.id = p.req.nextID()
	p.fetches[key] = f
	p.send(f, now)
}

func (p *partFetcher) send(f *partFetch, now time.Time) {
	_, bytes, ok := p.req.send(f.key, control.KindLDA, f.peer, f.id, f.body, "LDA part request")
	if !ok {
		f.done, f.status = true, "not sent"
		return
	}
	f.reqBytes += bytes
	f.tries++
	f.last = now
	p.req.rc.sent.Add(1)
}

// askParts starts the fetches of the LDA parts still missing from the
// intervals whose End markers are all in, partFetchGrace after the
// receiver's copy of each was cut, and of the partial bundles.
func (c *controller) askParts(now time.Time) {
	peer, ok := c.a.receiver.Session()
	if !ok {
		return
	}
	// In interval and class order: on simulated time a run replays
	// byte for byte.
	for _, k := range sortedKeys(c.halves.copies) {
		rc := c.halves.copies[k]
		if rc.warmup || c.halves.bundles[k] != nil {
			continue
		}
		var ok bool
		if c.partKeys, ok = c.a.receiver.Incomplete(k, c.partKeys[:0]); !ok {
			continue
		}
		for _, p := range c.partKeys {
			if p.Kind == control.KindLDA {
				c.parts.start(k, p.MEC, peer, now)
			}
		}
	}
	for _, k := range sortedKeys(c.halves.bundles) {
		w := c.halves.bundles[k]
		if rc := c.halves.copies[k]; w.b.Session != peer || rc != nil && rc.warmup {
			continue
		}
		c.partKeys = c.partKeys[:0]
		for p := range w.b.Missing {
			if p.Kind == control.KindLDA {
				c.partKeys = append(c.partKeys, p)
			}
		}
		slices.SortFunc(c.partKeys, func(x, y control.PartKey) int { return int(x.MEC) - int(y.MEC) })
		for _, p := range c.partKeys {
			c.parts.start(k, p.MEC, peer, now)
		}
	}
}

// tick retries the fetches still open and gives up those past their
// deadline; it forgets the records of intervals long reported.
func (p *partFetcher) tick(now time.Time) {
	keys := make([]repairKey, 0, len(p.fetches))
	for key := range p.fetches {
		keys = append(keys, key)
	}
	slices.SortFunc(keys, func(x, y repairKey) int {
		if x.k != y.k {
			return cmp.Compare(x.k, y.k)
		}
		return cmp.Compare(x.mec, y.mec)
	})
	for _, key := range keys {
		f := p.fetches[key]
		switch {
		case f.done:
			if now.Sub(f.first) > 4*p.cfg.PairTimeout {
				delete(p.fetches, key) // its interval was reported long ago
			}
		case now.Sub(f.first) >= p.cfg.Interval:
			p.req.rc.givenUp.Add(1)
			f.done, f.status = true, "no reply"
		case now.Sub(f.last) >= retryPeriod(p.cfg.Interval):
			p.send(f, now)
		}
	}
}

// partReply is an LDA part a fetch brought back, for the coordinator to
// put where interval k's parts are.
type partReply struct {
	k    uint64
	key  control.PartKey
	peer uint64 // the sender session it came from
	body []byte
}

// onReply takes a reply to one of our part requests: ours says whether
// x was one (a reply of kind LDA), got is the part when it was accepted.
func (p *partFetcher) onReply(x *control.Exchange) (got *partReply, ours bool) {
	if x.Kind != control.KindLDA {
		return nil, false
	}
	f := p.fetches[repairKey{k: x.Interval, mec: x.MEC}]
	if f == nil || f.done || f.id != x.ID || x.Session != f.peer || x.To != p.req.sender.Session() {
		p.req.rc.stray.Add(1)
		return nil, true
	}
	if _, _, err := parsePayload(x.Body); err != nil {
		p.req.rc.bad.Add(1)
		p.cfg.Log.Debug().Err(err).Uint64("interval", x.Interval).Msg("LDA part reply does not parse")
		return nil, true
	}
	p.req.rc.accepted.Add(1)
	f.repBytes += x.Bytes
	f.done, f.status = true, "complete"
	return &partReply{k: x.Interval, key: control.PartKey{MEC: x.MEC, Kind: control.KindLDA}, peer: f.peer, body: x.Body}, true
}

// onPartReply takes a reply to one of our part requests (partFetcher.onReply)
// and puts the part it brought where its interval's parts are; it says
// whether x was one.
func (c *controller) onPartReply(x *control.Exchange) bool {
	got, ours := c.parts.onReply(x)
	if got == nil {
		return ours
	}
	if w := c.halves.bundles[got.k]; w != nil {
		// The interval went out partial meanwhile: complete its bundle.
		if _, missing := w.b.Missing[got.key]; missing && w.b.Session == got.peer {
			w.b.Payloads[got.key] = got.body
			delete(w.b.Missing, got.key)
			if len(w.b.Missing) == 0 {
				w.b.Missing = nil
			}
		}
		return true
	}
	c.a.receiver.SupplyPart(got.k, got.key, got.body)
	return true
}

// fetching says whether interval k still waits for an LDA part.
func (p *partFetcher) fetching(k uint64) bool {
	for key, f := range p.fetches {
		if key.k == k && !f.done {
			return true
		}
	}
	return false
}

// stop ends the open fetches at stop.
func (p *partFetcher) stop() {
	for _, f := range p.fetches {
		if !f.done {
			f.done, f.status = true, "stopped"
			p.req.rc.givenUp.Add(1)
		}
	}
}

// fields adds what fetching class m's LDA part of interval k did to its
// line r.
func (p *partFetcher) fields(k uint64, m int, r *report.Interval) {
	f := p.fetches[repairKey{k: k, mec: uint16(m)}]
	if f == nil {
		return
	}
	if r.Extra == nil {
		r.Extra = map[string]any{}
	}
	r.Extra["lda_fetch"] = f.status
	r.Extra["lda_fetch_tries"] = f.tries
	r.Extra["lda_fetch_request_bytes"] = f.reqBytes
	r.Extra["lda_fetch_reply_bytes"] = f.repBytes
}
