package control

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// The two-way exchange (docs/protocol.md §3.4). Control frames of a
// session flow one way, sender → receiver. The receiver of direction D
// needs something only D's sender holds (the RDA's timestamps of the
// packets lost in the segment), so it asks with a Request, and the sender
// answers with a Reply. Each appliance is the sender of the other
// direction, so a Request travels as a frame of the requester's own
// sending session (direction D′, toward the peer), a Reply as a frame of
// the replier's (direction D): both pass the peer Receiver's checks — tag,
// direction, live session, replay window — exactly like the other frames
// of that session, and a replayed one is dropped by its sequence number.
// Neither kind carries a time, so neither can start a session.
//
// Every fragment's payload begins with ExchangeHeaderLen bytes: the
// session the message is addressed to (the Request: the sender session
// whose interval it asks about; the Reply: the requester's session it
// answers) and the request id. A message is addressed to one session of
// the peer: a Request or Reply recorded in an earlier session of either
// end names a session that is no longer live and is refused by the
// caller (Exchange.To), besides being dropped as a retired session's frame.

// ExchangeHeaderLen is the prefix of every Request and Reply fragment's
// payload: the addressed session (8) and the request id (4).
const ExchangeHeaderLen = 12

// Exchange limits: one message is at most MaxExchangeFragments
// fragments; the receiver holds at most MaxExchangesInFlight messages
// being reassembled (the oldest gives way, counted as Evicted).
const (
	MaxExchangeFragments = 256
	MaxExchangesInFlight = 16
)

// Exchange is one reassembled Request or Reply.
type Exchange struct {
	Type     Type   // TypeRequest or TypeReply
	Session  uint64 // the session whose frames carried it (the peer's sending session)
	To       uint64 // the session it is addressed to (one of ours)
	ID       uint32 // request id; a Reply repeats its Request's
	Interval uint64 // the interval it is about (the measured direction's numbering)
	MEC      uint16
	Kind     Kind
	Body     []byte // the message, owned by the Exchange
	Frames   int    // frames that carried it
	Bytes    int    // their bytes (Ethernet frames without FCS)
}

// ExchangeFragmentSize is the message bytes one Request or Reply fragment
// carries.
func (s *Sender) ExchangeFragmentSize() int { return s.FragmentSize() - ExchangeHeaderLen }

// exchangeFragment is the message bytes per fragment for
// AppendExchangeSized's frag: ExchangeFragmentSize when frag ≤ 0, else
// frag, at most what the MTU holds (a frag chosen under a frame limit
// holds for every try of its message, whatever the limit is then).
func (s *Sender) exchangeFragment(frag int) int {
	if frag <= 0 {
		return s.ExchangeFragmentSize()
	}
	return min(frag, s.fragSize-ExchangeHeaderLen)
}

// AppendExchange builds the frames of one Request or Reply (t) about
// interval k, class mec, synopsis kind, addressed to session to with
// request id: body cut into fragments of ExchangeFragmentSize bytes (an
// empty body is one empty fragment), each with fresh sequence numbers of
// this session. Frames are written into bufs like AppendInterval. A retry
// is the same call again: new sequence numbers, the same content.
func (s *Sender) AppendExchange(bufs [][]byte, t Type, k uint64, mec uint16, kind Kind, to uint64, id uint32, body []byte) ([][]byte, error) {
	return s.AppendExchangeSized(bufs, t, k, mec, kind, to, id, body, 0)
}

// AppendExchangeSized is AppendExchange with frag body bytes per
// fragment (frag ≤ 0: ExchangeFragmentSize; at most what the MTU holds).
// Short frames cross a congested byte-limited queue where full-size ones
// are refused: a queue kept full by small frames rarely has a whole MTU
// free. Every try of one message must use the same frag, so that its
// fragments fill the same slots at the receiver.
func (s *Sender) AppendExchangeSized(bufs [][]byte, t Type, k uint64, mec uint16, kind Kind, to uint64, id uint32, body []byte, frag int) ([][]byte, error) {
	return s.AppendExchangeOnly(bufs, t, k, mec, kind, to, id, body, frag, nil)
}

// AppendExchangeOnly is AppendExchangeSized building only the fragments
// i with only[i] (nil: all; otherwise one entry per fragment the message
// takes), each with a fresh sequence number: the fragments a resend
// request names (ParseResend). No sequence number goes unsent, so the
// receiver's count of lost control frames stays true.
func (s *Sender) AppendExchangeOnly(bufs [][]byte, t Type, k uint64, mec uint16, kind Kind, to uint64, id uint32, body []byte, frag int, only []bool) ([][]byte, error) {
	if t != TypeRequest && t != TypeReply {
		return bufs[:0], ErrBadHeader
	}
	fs := s.exchangeFragment(frag)
	n := 1
	if len(body) > 0 {
		n = (len(body) + fs - 1) / fs
	}
	if n > MaxExchangeFragments {
		return bufs[:0], fmt.Errorf("control: %v of %d bytes needs %d fragments, at most %d", t, len(body), n, MaxExchangeFragments)
	}
	if only != nil && len(only) != n {
		return bufs[:0], fmt.Errorf("control: %v of %d bytes takes %d fragments, %d selected from", t, len(body), n, len(only))
	}
	out := 0
	for i := 0; i < n; i++ {
		if only != nil && !only[i] {
			continue
		}
		if out == len(bufs) {
			bufs = append(bufs, nil)
		}
		lo := i * fs
		hi := min(lo+fs, len(body))
		s.scratch = binary.BigEndian.AppendUint64(s.scratch[:0], to)
		s.scratch = binary.BigEndian.AppendUint32(s.scratch, id)
		s.scratch = append(s.scratch, body[lo:hi]...)
		h := Header{Type: t, Kind: kind, MEC: mec, Session: s.cfg.Session, Interval: k, Seq: s.buildSeq(),
			FragIndex: uint16(i), FragCount: uint16(n), Direction: s.cfg.Direction}
		var err error
		if bufs[out], err = AppendFramePriority(bufs[out][:0], s.buildAuth(), s.cfg.SrcMAC, &h, s.scratch, s.cfg.Priority); err != nil {
			return bufs[:0], err
		}
		out++
	}
	return bufs[:out], nil
}

// ExchangeBytes is what one message of n body bytes costs on the wire
// (Ethernet frames without FCS), as AppendExchange builds it.
func (s *Sender) ExchangeBytes(n int) int { return s.ExchangeBytesSized(n, 0) }

// ExchangeBytesSized is ExchangeBytes for AppendExchangeSized's frag.
func (s *Sender) ExchangeBytesSized(n, frag int) int {
	fs := s.exchangeFragment(frag)
	c := 1
	if n > 0 {
		c = (n + fs - 1) / fs
	}
	return c*(s.FragmentOverhead()+ExchangeHeaderLen) + n
}

type exchangeKey struct {
	session  uint64
	typ      Type
	to       uint64
	id       uint32
	interval uint64
	mec      uint16
	kind     Kind
}

type exchangeState struct {
	frags  [][]byte
	have   int
	frames int
	bytes  int
	first  int64
	seq    uint64 // arrival order, for eviction
}

// exchangeAsm reassembles Requests and Replies; bounded by
// MaxExchangesInFlight messages of MaxExchangeFragments fragments each.
// Fragments of a retry (the same message under new sequence numbers) fill
// the same slots, so a message completes from any mix of attempts.
type exchangeAsm struct {
	inflight map[exchangeKey]*exchangeState
	out      []Exchange
	n        uint64
}

// add takes one authentic, fresh Request or Reply fragment.
func (x *exchangeAsm) add(f *Frame, nowNs int64, frameLen int, c *counterSet) {
	if len(f.Payload) < ExchangeHeaderLen || f.FragCount > MaxExchangeFragments {
		c.inc(cBadPayload)
		return
	}
	key := exchangeKey{session: f.Session, typ: f.Type, to: binary.BigEndian.Uint64(f.Payload), id: binary.BigEndian.Uint32(f.Payload[8:]),
		interval: f.Interval, mec: f.MEC, kind: f.Kind}
	if x.inflight == nil {
		x.inflight = map[exchangeKey]*exchangeState{}
	}
	st := x.inflight[key]
	if st == nil {
		if len(x.inflight) >= MaxExchangesInFlight {
			var oldK exchangeKey
			var old *exchangeState
			for k, s := range x.inflight {
				if old == nil || s.seq < old.seq {
					oldK, old = k, s
				}
			}
			delete(x.inflight, oldK)
			c.inc(cEvicted)
		}
		x.n++
		st = &exchangeState{frags: make([][]byte, f.FragCount), first: nowNs, seq: x.n}
		x.inflight[key] = st
	}
	if int(f.FragCount) != len(st.frags) {
		c.inc(cInconsistent)
		return
	}
	st.frames++
	st.bytes += frameLen
	if st.frags[f.FragIndex] != nil {
		c.inc(cDuplicate)
		return
	}
	st.frags[f.FragIndex] = append(make([]byte, 0, len(f.Payload)-ExchangeHeaderLen+1), f.Payload[ExchangeHeaderLen:]...)
	st.have++
	if st.have < len(st.frags) {
		return
	}
	delete(x.inflight, key)
	var body []byte
	for _, p := range st.frags {
		body = append(body, p...)
	}
	if body == nil {
		body = []byte{}
	}
	c.inc(cExchanges)
	x.out = append(x.out, Exchange{Type: key.typ, Session: key.session, To: key.to, ID: key.id, Interval: key.interval,
		MEC: key.mec, Kind: key.kind, Body: body, Frames: st.frames, Bytes: st.bytes})
}

// expire forgets messages incomplete for longer than timeout (their
// requester retries or gives up on its own deadline).
func (x *exchangeAsm) expire(nowNs, timeout int64) {
	for k, s := range x.inflight {
		if nowNs-s.first > timeout {
			delete(x.inflight, k)
		}
	}
}

// Exchanges appends the Requests and Replies completed since the last
// call to dst and forgets them.
func (r *Receiver) Exchanges(dst []Exchange) []Exchange {
	dst = append(dst, r.xasm.out...)
	clear(r.xasm.out)
	r.xasm.out = r.xasm.out[:0]
	return dst
}

// ReplyMissing reports the reply to request id that session from (the
// peer's sending session) is sending us (addressed to session to) as far
// as it has arrived: its fragment count, and missing[i] true for each
// fragment not yet in (dst reused). ok is false when no fragment of it is
// being reassembled (none came, it completed, or it expired): the
// requester then asks again whole. A retry that names the missing
// fragments (AppendResend) costs the peer those alone.
func (r *Receiver) ReplyMissing(from, to uint64, id uint32, dst []bool) (missing []bool, ok bool) {
	for k, st := range r.xasm.inflight {
		if k.typ != TypeReply || k.session != from || k.to != to || k.id != id {
			continue
		}
		missing = dst[:0]
		for _, f := range st.frags {
			missing = append(missing, f == nil)
		}
		return missing, true
	}
	return dst[:0], false
}

// Resend (docs/protocol.md §3.4): a Request of KindMeta, under the id of
// an earlier request whose reply came in part, asks for that reply's
// missing fragments alone. Its body is resendMagic, resendVersion, the
// reply's fragment count (uvarint, 1 … MaxExchangeFragments, shortest
// encoding) and a bitmap of that many bits, fragment i in bit i%8 of byte
// i/8, set for each fragment to send again; at least one is set and the
// bits past the count are zero.
const (
	resendMagic   = 0xA9
	resendVersion = 1
)

// ErrResend is the error of a resend body that does not parse.
var ErrResend = errors.New("control: resend request does not parse")

// AppendResend appends the body of a resend request for the fragments
// missing[i] of a reply of len(missing) fragments.
func AppendResend(dst []byte, missing []bool) []byte {
	dst = append(dst, resendMagic, resendVersion)
	dst = binary.AppendUvarint(dst, uint64(len(missing)))
	for i := 0; i < len(missing); i += 8 {
		var b byte
		for j := 0; j < 8 && i+j < len(missing); j++ {
			if missing[i+j] {
				b |= 1 << j
			}
		}
		dst = append(dst, b)
	}
	return dst
}

// IsResend says whether a request's body is a resend request (its magic
// and version); ParseResend checks the rest.
func IsResend(body []byte) bool {
	return len(body) >= 2 && body[0] == resendMagic && body[1] == resendVersion
}

// ParseResend decodes a resend body into the fragments to send again
// (dst reused).
func ParseResend(body []byte, dst []bool) ([]bool, error) {
	if !IsResend(body) {
		return dst[:0], ErrResend
	}
	v, n := binary.Uvarint(body[2:])
	if n <= 0 || n != len(binary.AppendUvarint(nil, v)) || v < 1 || v > MaxExchangeFragments {
		return dst[:0], ErrResend
	}
	bits := body[2+n:]
	count := int(v)
	if len(bits) != (count+7)/8 {
		return dst[:0], ErrResend
	}
	if r := count % 8; r != 0 && bits[len(bits)-1]>>r != 0 {
		return dst[:0], ErrResend
	}
	out := dst[:0]
	any := false
	for i := 0; i < count; i++ {
		set := bits[i/8]&(1<<(i%8)) != 0
		any = any || set
		out = append(out, set)
	}
	if !any {
		return out[:0], ErrResend
	}
	return out, nil
}
