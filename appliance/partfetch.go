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

// Fetching a lost LDA part (docs/protocol.md, "LDA part on demand"). An
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
//     size of the reply: partFetchFrag bytes, short frames that a full
//     queue of small frames still takes.
//   - The sender keeps the payload it shipped for each class's LDA for
//     partKeepIntervals intervals and answers with those bytes, paced
//     evenly over half the retry period so that the reply is not one
//     burst into the queue that lost the part.
//   - The requester retries every repairRetry; the fragments of every try
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

// partFetchFrag is the body bytes per fragment of a part reply: frames of
// about 330 bytes on the wire.
const partFetchFrag = 256

// partRequestMagic and partRequestVersion open a part request's body.
const (
	partRequestMagic   = 0xA7
	partRequestVersion = 1
)

var errPartRequest = errors.New("part request does not parse")

// appendPartRequest is the body of a request for a part, replied in
// fragments of frag body bytes: magic, version, frag (uvarint).
func appendPartRequest(dst []byte, frag int) []byte {
	dst = append(dst, partRequestMagic, partRequestVersion)
	return binary.AppendUvarint(dst, uint64(frag))
}

// parsePartRequest returns the reply fragment size a part request asks
// for: 64 … 65535 bytes in its shortest uvarint, nothing after it (one
// encoding per request).
func parsePartRequest(b []byte) (int, error) {
	if len(b) < 3 || b[0] != partRequestMagic || b[1] != partRequestVersion {
		return 0, errPartRequest
	}
	v, n := binary.Uvarint(b[2:])
	if n <= 0 || 2+n != len(b) || n != len(binary.AppendUvarint(nil, v)) || v < 64 || v > 65535 {
		return 0, errPartRequest
	}
	return int(v), nil
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

// partFetchState is the receiver's side of the LDA part exchange: the
// fetches of the intervals still open and what they did for the lines
// (the sender's side is the answerer's).
type partFetchState struct {
	fetches map[repairKey]*partFetch // by interval and class
	scratch []control.PartKey
}

// startPartFetch asks for class mec's LDA of interval k from peer, once.
func (c *controller) startPartFetch(k uint64, mec uint16, peer uint64, now time.Time) {
	if c.pf.fetches == nil {
		c.pf.fetches = map[repairKey]*partFetch{}
	}
	key := repairKey{k: k, mec: mec}
	if c.pf.fetches[key] != nil || peer == 0 {
		return
	}
	f := &partFetch{key: key, peer: peer, first: now, body: appendPartRequest(nil, partFetchFrag)}
	c.reqID++
	f.id = c.reqID
	c.pf.fetches[key] = f
	c.sendPartFetch(f, now)
}

func (c *controller) sendPartFetch(f *partFetch, now time.Time) {
	_, bytes, ok := c.sendExchangeRequest(f.key, control.KindLDA, f.peer, f.id, f.body, "LDA part request")
	if !ok {
		f.done, f.status = true, "not sent"
		return
	}
	f.reqBytes += bytes
	f.tries++
	f.last = now
	c.rc.sent.Add(1)
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
	for _, k := range sortedKeys(c.rcopies) {
		rc := c.rcopies[k]
		if rc.warmup || c.bundles[k] != nil {
			continue
		}
		var ok bool
		if c.pf.scratch, ok = c.a.receiver.Incomplete(k, c.pf.scratch[:0]); !ok {
			continue
		}
		for _, p := range c.pf.scratch {
			if p.Kind == control.KindLDA {
				c.startPartFetch(k, p.MEC, peer, now)
			}
		}
	}
	for _, k := range sortedKeys(c.bundles) {
		w := c.bundles[k]
		if rc := c.rcopies[k]; w.b.Session != peer || rc != nil && rc.warmup {
			continue
		}
		c.pf.scratch = c.pf.scratch[:0]
		for p := range w.b.Missing {
			if p.Kind == control.KindLDA {
				c.pf.scratch = append(c.pf.scratch, p)
			}
		}
		slices.SortFunc(c.pf.scratch, func(x, y control.PartKey) int { return int(x.MEC) - int(y.MEC) })
		for _, p := range c.pf.scratch {
			c.startPartFetch(k, p.MEC, peer, now)
		}
	}
}

// partTick retries the fetches still open and gives up those past their
// deadline; it forgets the records of intervals long reported.
func (c *controller) partTick(now time.Time) {
	keys := make([]repairKey, 0, len(c.pf.fetches))
	for key := range c.pf.fetches {
		keys = append(keys, key)
	}
	slices.SortFunc(keys, func(x, y repairKey) int {
		if x.k != y.k {
			return cmp.Compare(x.k, y.k)
		}
		return cmp.Compare(x.mec, y.mec)
	})
	for _, key := range keys {
		f := c.pf.fetches[key]
		switch {
		case f.done:
			if now.Sub(f.first) > 4*c.a.cfg.PairTimeout {
				delete(c.pf.fetches, key) // its interval was reported long ago
			}
		case now.Sub(f.first) >= c.a.cfg.Interval:
			c.rc.givenUp.Add(1)
			f.done, f.status = true, "no reply"
		case now.Sub(f.last) >= c.repairRetry():
			c.sendPartFetch(f, now)
		}
	}
}

// onPartReply takes a reply to one of our part requests; it says whether
// x was one (a reply of kind LDA).
func (c *controller) onPartReply(x *control.Exchange) bool {
	if x.Kind != control.KindLDA {
		return false
	}
	f := c.pf.fetches[repairKey{k: x.Interval, mec: x.MEC}]
	if f == nil || f.done || f.id != x.ID || x.Session != f.peer || x.To != c.a.sender.Session() {
		c.rc.stray.Add(1)
		return true
	}
	if _, _, err := parsePayload(x.Body); err != nil {
		c.rc.bad.Add(1)
		c.a.cfg.Log.Debug().Err(err).Uint64("interval", x.Interval).Msg("LDA part reply does not parse")
		return true
	}
	c.rc.accepted.Add(1)
	f.repBytes += x.Bytes
	f.done, f.status = true, "complete"
	key := control.PartKey{MEC: x.MEC, Kind: control.KindLDA}
	if w := c.bundles[x.Interval]; w != nil {
		// The interval went out partial meanwhile: complete its bundle.
		if _, missing := w.b.Missing[key]; missing && w.b.Session == f.peer {
			w.b.Payloads[key] = x.Body
			delete(w.b.Missing, key)
			if len(w.b.Missing) == 0 {
				w.b.Missing = nil
			}
		}
		return true
	}
	c.a.receiver.SupplyPart(x.Interval, key, x.Body)
	return true
}

// partFetching says whether interval k still waits for an LDA part.
func (c *controller) partFetching(k uint64) bool {
	for key, f := range c.pf.fetches {
		if key.k == k && !f.done {
			return true
		}
	}
	return false
}

// stopPartFetches ends the open fetches at stop.
func (c *controller) stopPartFetches() {
	for _, f := range c.pf.fetches {
		if !f.done {
			f.done, f.status = true, "stopped"
			c.rc.givenUp.Add(1)
		}
	}
}

// partFields adds what fetching class m's LDA part of interval k did to
// its line.
func (c *controller) partFields(k uint64, m int, r *report.Interval) {
	f := c.pf.fetches[repairKey{k: k, mec: uint16(m)}]
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
