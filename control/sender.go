package control

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/klauspost/reedsolomon"
)

// SenderConfig configures one sending session (one measured direction).
type SenderConfig struct {
	// Key is the pre-shared HMAC key; nil or empty means insecure mode,
	// which must be asked for explicitly with Insecure.
	Key      []byte
	Insecure bool
	// MTU is the segment port's IP-layer MTU (bytes); 0 means DefaultMTU.
	// Every frame is at most EthHeaderLen+MTU bytes.
	MTU int
	// Session is the session id; 0 draws a random one (the normal case:
	// a fresh id per start is how the receiver notices a restart).
	Session   uint64
	Direction uint16
	// SrcMAC is the source address of control frames; the zero value uses
	// DefaultSrcMAC(Session).
	SrcMAC [6]byte
	// Priority tags the synopsis fragments, parity fragments, requests
	// and replies with an 802.1p priority (VLAN id 0); NoPriority, the
	// zero value, sends them untagged. End markers and Hellos always go
	// untagged (Priority's comment says why). Tagged frames carry
	// VLANTagLen bytes fewer payload, so they still fit the MTU.
	Priority Priority
	// Hello is the configuration announced to the receiver. SentNs is set
	// per transmission.
	Hello Hello
	// NumberAtSend leaves the frames AppendInterval and AppendExchange*
	// build without a sequence number or a tag of their own (they carry 1,
	// flagged insecure with a zero tag, which a receiver drops); the
	// caller numbers and tags each with Number as it hands it to the lane. A caller that holds frames back
	// (paced replies, spaced copies) must: numbered when built, a frame
	// sent after frames built later reaches the receiver behind the
	// newest number it saw by every frame built meanwhile, and past
	// ReplayWindow it is dropped (TooOld) and counted lost.
	NumberAtSend bool
}

// Sender builds the control frames of one session: a Hello and the
// synopsis fragments per interval (AppendInterval, control goroutine), and
// End markers (EndWriter, one per worker). Its methods other than
// NewEndWriter and Session are for one goroutine only.
type Sender struct {
	cfg      SenderConfig
	auth     *Authenticator
	seq      atomic.Uint64 // last sequence number handed out; shared with EndWriters
	fragSize int           // payload bytes per fragment at this MTU, priority tag counted
	// limit: payload bytes per fragment under SetFrameLimit (0: fragSize).
	limit   int
	scratch []byte
	// Parity (parity.go): the loss rate it is sized for, the codes built
	// and the parity shards' buffer.
	loss   float64
	codecs map[[2]int]reedsolomon.Encoder
	parBuf []byte
}

// NewSender validates cfg and returns a Sender. A Hello that does not fit
// in one frame at cfg.MTU is an error.
func NewSender(cfg SenderConfig) (*Sender, error) {
	auth, err := newAuthenticatorMode(cfg.Key, cfg.Insecure)
	if err != nil {
		return nil, err
	}
	if cfg.MTU == 0 {
		cfg.MTU = DefaultMTU
	}
	if cfg.MTU < MinMTU || cfg.MTU > 9216 {
		return nil, fmt.Errorf("control: MTU %d outside %d..9216", cfg.MTU, MinMTU)
	}
	if cfg.Session == 0 {
		var b [8]byte
		for cfg.Session == 0 {
			if _, err := rand.Read(b[:]); err != nil {
				return nil, fmt.Errorf("control: session id: %w", err)
			}
			cfg.Session = binary.BigEndian.Uint64(b[:])
		}
	}
	if cfg.SrcMAC == ([6]byte{}) {
		cfg.SrcMAC = DefaultSrcMAC(cfg.Session)
	}
	cfg.Hello.MECs = append([]string(nil), cfg.Hello.MECs...)
	cfg.Hello.Parts = append([]PartKey(nil), cfg.Hello.Parts...)
	p, err := cfg.Hello.AppendBinary(nil)
	if err != nil {
		return nil, err
	}
	if cfg.Priority > PCP(MaxPCP) {
		return nil, fmt.Errorf("control: priority %d outside none, 0..%d", int(cfg.Priority)-1, MaxPCP)
	}
	s := &Sender{cfg: cfg, auth: auth, fragSize: FragmentPayload(cfg.MTU) - cfg.Priority.TagBytes()}
	if len(p) > FragmentPayload(cfg.MTU) {
		return nil, fmt.Errorf("control: hello is %d bytes, more than one frame holds at MTU %d (%d): fewer or shorter MEC names", len(p), cfg.MTU, FragmentPayload(cfg.MTU))
	}
	return s, nil
}

// FragmentPayload is the synopsis bytes one untagged fragment carries at
// an IP-layer MTU: everything after the Ethernet header but the control
// header and tag. A priority-tagged fragment carries VLANTagLen bytes
// fewer (Sender.FragmentSize).
func FragmentPayload(mtu int) int { return mtu - HeaderLen - TagLen }

// FragmentOverhead is what each fragment, parity fragment, request or
// reply of this Sender adds to its payload (bytes): Overhead, plus the
// priority tag when it has one.
func (s *Sender) FragmentOverhead() int { return Overhead + s.cfg.Priority.TagBytes() }

// Priority returns the priority the Sender tags its fragments with.
func (s *Sender) Priority() Priority { return s.cfg.Priority }

// Session returns the session id.
func (s *Sender) Session() uint64 { return s.cfg.Session }

// FragmentSize returns the payload bytes per synopsis, parity, request
// and reply fragment: what the MTU holds, or less under SetFrameLimit.
func (s *Sender) FragmentSize() int {
	if s.limit > 0 {
		return min(s.limit, s.fragSize)
	}
	return s.fragSize
}

// MinFrameLimit is the smallest frame SetFrameLimit cuts fragments to
// (Ethernet bytes without FCS): the overhead and 58 bytes of payload.
const MinFrameLimit = Overhead + 58

// MaxLimitedFragments is the most fragments a part is cut into under a
// frame limit: a larger part takes larger fragments (at most the MTU's),
// well within a receiver's ReceiverConfig.MaxFragments.
const MaxLimitedFragments = 128

// SetFrameLimit cuts the synopsis, parity, request and reply fragments
// built from then on into frames of at most n bytes (Ethernet, no FCS;
// at least MinFrameLimit, and never more than the MTU allows); n ≤ 0
// lifts the limit. A queue kept full by small frames takes a frame about
// their size far more often than a full-size one (appliance/pacing.go).
// End markers and the Hello are never cut. PartBytes, IntervalBytes and
// ExchangeBytes follow the limit.
func (s *Sender) SetFrameLimit(n int) {
	if n <= 0 {
		s.limit = 0
		return
	}
	s.limit = max(n, MinFrameLimit) - s.FragmentOverhead()
}

// FrameLimit returns the limit SetFrameLimit set (Ethernet bytes; 0:
// none).
func (s *Sender) FrameLimit() int {
	if s.limit == 0 {
		return 0
	}
	return s.limit + s.FragmentOverhead()
}

// nextSeq hands out the next frame sequence number. It is shared by the
// control goroutine and every EndWriter, hence atomic (one add per frame,
// not per packet).
func (s *Sender) nextSeq() uint64 { return s.seq.Add(1) }

// buildSeq is the sequence number a frame gets when built: the next one,
// or the placeholder 1 under NumberAtSend (Number replaces it).
func (s *Sender) buildSeq() uint64 {
	if s.cfg.NumberAtSend {
		return 1
	}
	return s.nextSeq()
}

// unkeyed writes the placeholder frames of NumberAtSend: flagged
// insecure with a zero tag, so that the tag is computed once, by Number.
var unkeyed = &Authenticator{}

// buildAuth is what tags a frame when built: the session's key, or
// nothing under NumberAtSend (Number tags it).
func (s *Sender) buildAuth() *Authenticator {
	if s.cfg.NumberAtSend {
		return unkeyed
	}
	return s.auth
}

// Number gives f, a frame this Sender built, the session's next sequence
// number, its key's flags and the tag that goes with them, in place.
// Under SenderConfig.NumberAtSend every frame the control goroutine
// builds must pass through it, in the order the frames are sent; it is
// for that goroutine only. An f that does not parse as a control frame is
// left alone and the error returned.
func (s *Sender) Number(f []byte) error {
	var fr Frame
	if err := ParseFrame(f, &fr); err != nil {
		return err
	}
	binary.BigEndian.PutUint64(fr.Authed[24:32], s.nextSeq())
	fl := fr.Authed[4] &^ FlagInsecure
	if s.auth.Insecure() {
		fl |= FlagInsecure
	}
	fr.Authed[4] = fl
	s.auth.appendTag(fr.Tag[:0], fr.Authed) // Tag's capacity is TagLen: written in place
	return nil
}

// Part is one per-interval payload to send: an encoded synopsis of one MEC.
type Part struct {
	PartKey
	Payload []byte
}

// ErrPartTooLarge is returned when a payload needs more than 65535
// fragments.
var ErrPartTooLarge = errors.New("control: payload needs more than 65535 fragments")

// AppendInterval builds the frames that carry interval k after its End
// markers: a Hello, then every part in order, each cut into fragments of at
// most FragmentSize bytes (an empty payload is one empty fragment) and
// followed by its parity fragments at the loss rate set by SetLoss
// (parity.go). The
// frames are written into bufs, reusing each buffer's capacity; the
// returned slice holds exactly the frames to transmit, in order, and aliases
// bufs. nowNs stamps the Hello. Parts must be those announced in the Hello.
func (s *Sender) AppendInterval(bufs [][]byte, k uint64, nowNs int64, parts []Part) ([][]byte, error) {
	if err := s.checkParts(parts); err != nil {
		return bufs[:0], err
	}
	n := 1
	for _, p := range parts {
		c, m, _, _ := s.layout(len(p.Payload))
		if c > 0xFFFF {
			return bufs[:0], ErrPartTooLarge
		}
		n += c + m
	}
	for len(bufs) < n {
		bufs = append(bufs, nil)
	}
	bufs = bufs[:n]
	hello := s.cfg.Hello
	hello.SentNs = nowNs
	var err error
	if s.scratch, err = hello.AppendBinary(s.scratch[:0]); err != nil {
		return bufs[:0], err
	}
	h := Header{Type: TypeHello, Session: s.cfg.Session, Interval: k, Seq: s.buildSeq(), FragCount: 1, Direction: s.cfg.Direction}
	if bufs[0], err = AppendFrame(bufs[0][:0], s.buildAuth(), s.cfg.SrcMAC, &h, s.scratch); err != nil {
		return bufs[:0], err
	}
	i := 1
	for _, p := range parts {
		c, m, chunk, shard := s.layout(len(p.Payload))
		for f := 0; f < c; f++ {
			lo := f * chunk
			hi := min(lo+chunk, len(p.Payload))
			h := Header{Type: TypeFragment, Kind: p.Kind, MEC: p.MEC, Session: s.cfg.Session, Interval: k,
				Seq: s.buildSeq(), FragIndex: uint16(f), FragCount: uint16(c), Direction: s.cfg.Direction}
			if bufs[i], err = AppendFramePriority(bufs[i][:0], s.buildAuth(), s.cfg.SrcMAC, &h, p.Payload[lo:hi], s.cfg.Priority); err != nil {
				return bufs[:0], err
			}
			i++
		}
		if m == 0 {
			continue
		}
		par, err := s.parityShards(p.Payload, c, m, chunk, shard)
		if err != nil {
			return bufs[:0], err
		}
		for j, sh := range par {
			s.scratch = appendParityPayload(s.scratch[:0], m, len(p.Payload), sh)
			h := Header{Type: TypeParity, Kind: p.Kind, MEC: p.MEC, Session: s.cfg.Session, Interval: k,
				Seq: s.buildSeq(), FragIndex: uint16(j), FragCount: uint16(c), Direction: s.cfg.Direction}
			if bufs[i], err = AppendFramePriority(bufs[i][:0], s.buildAuth(), s.cfg.SrcMAC, &h, s.scratch, s.cfg.Priority); err != nil {
				return bufs[:0], err
			}
			i++
		}
	}
	return bufs, nil
}

// ErrPartsMismatch is returned by AppendInterval when the parts are not
// exactly those the Hello announces: the receiver would otherwise wait for
// a part that never comes and report the interval as lost.
var ErrPartsMismatch = errors.New("control: parts differ from those the hello announces")

// checkParts requires parts to be a permutation of the Hello's parts. It is
// quadratic in the (small) number of parts and allocates nothing.
func (s *Sender) checkParts(parts []Part) error {
	want := s.cfg.Hello.Parts
	if len(parts) != len(want) {
		return ErrPartsMismatch
	}
	for i, p := range parts {
		if !s.cfg.Hello.hasPart(p.PartKey) {
			return ErrPartsMismatch
		}
		for _, q := range parts[:i] {
			if q.PartKey == p.PartKey {
				return ErrPartsMismatch
			}
		}
	}
	return nil
}

// IntervalBytes returns the control bytes one interval costs on the wire
// (Ethernet frames without FCS, as Overhead counts them) for the given
// payload sizes and lanes End markers: one Hello, lanes End frames and the
// fragments, parity included at the loss rate set by SetLoss. It is
// computed from the same rules as AppendInterval, and the tests check the
// two agree; the End frames' per-class counts, whose size depends on the
// counts, are estimated (EndBytes).
func (s *Sender) IntervalBytes(lanes int, payloadSizes ...int) int {
	hello, _ := s.cfg.Hello.AppendBinary(nil)
	total := Overhead + len(hello) + lanes*s.EndBytes()
	for _, n := range payloadSizes {
		total += s.PartBytes(n)
	}
	return total
}

// EndBytes estimates one End frame of this session (bytes): with its
// per-class counts at 3 bytes a class (up to 2 097 151 frames of a class
// an interval, a lane), when they fit the MTU.
func (s *Sender) EndBytes() int {
	n := len(s.cfg.Hello.MECs)
	if n == 0 || n > MaxEndClasses {
		return EndFrameLen
	}
	withCounts := EndFrameLen + uvarintLen(uint64(n)) + 3*n
	if withCounts-EthHeaderLen > s.cfg.MTU {
		return EndFrameLen
	}
	return withCounts
}

// EndBytesWith is the exact size of this session's End frame carrying
// the per-class counts classes (bytes), by AppendEnd's rule: without the
// counts when they do not fit the MTU or MaxEndClasses.
func (s *Sender) EndBytesWith(classes []uint64) int {
	e := End{Classes: classes}
	if len(classes) > MaxEndClasses || e.EndLen() > s.cfg.MTU-HeaderLen-TagLen {
		return EndFrameLen
	}
	return Overhead + e.EndLen()
}

// EndFrameLenFor is the largest End frame with per-class counts for
// classes classes (bytes): what a lane's End buffer must hold.
func EndFrameLenFor(classes int) int {
	if classes <= 0 {
		return EndFrameLen
	}
	return Overhead + EndPayloadLen + binary.MaxVarintLen16 + min(classes, MaxEndClasses)*binary.MaxVarintLen64
}

// EndWriter builds End markers for one sender lane (a worker and its
// transmit queue). Each worker owns one: it holds its own HMAC state, so
// AppendEnd takes no lock and allocates nothing.
type EndWriter struct {
	s    *Sender
	auth *Authenticator
	lane uint16
	pay  [MaxEndPayloadLen]byte
}

// NewEndWriter returns the EndWriter for lane (0 ≤ lane < Hello.Lanes). It
// is safe to call from any goroutine.
func (s *Sender) NewEndWriter(lane uint16) (*EndWriter, error) {
	if lane >= s.cfg.Hello.Lanes {
		return nil, fmt.Errorf("control: lane %d, session has %d", lane, s.cfg.Hello.Lanes)
	}
	auth, err := NewAuthenticator(s.cfg.Key)
	if err != nil {
		return nil, err
	}
	return &EndWriter{s: s, auth: auth, lane: lane}, nil
}

// AppendEnd appends the End marker of interval k for this lane to dst
// (e.Lane is overwritten with the writer's lane). Per-class counts
// (e.Classes) go when they fit the MTU and MaxEndClasses, else the marker
// carries the lane's total alone. It does not allocate when dst has
// EndFrameLenFor(len(e.Classes)) bytes of room; workers call it once an
// interval into a preallocated frame buffer. It cannot fail: the header
// it builds is always valid.
func (w *EndWriter) AppendEnd(dst []byte, k uint64, e *End) []byte {
	e.Lane = w.lane
	p := w.pay[:0]
	if len(e.Classes) > MaxEndClasses || e.EndLen() > w.s.cfg.MTU-HeaderLen-TagLen {
		classes := e.Classes
		e.Classes = nil
		p = e.AppendBinary(p)
		e.Classes = classes
	} else {
		p = e.AppendBinary(p)
	}
	h := Header{Type: TypeEnd, Session: w.s.cfg.Session, Interval: k, Seq: w.s.nextSeq(), FragCount: 1, Direction: w.s.cfg.Direction}
	out, _ := AppendFrame(dst, w.auth, w.s.cfg.SrcMAC, &h, p)
	return out
}
