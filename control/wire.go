package control

import (
	"encoding/binary"
	"errors"
)

// Wire constants. docs/protocol.md specifies the format byte by byte; the
// offsets below are that specification in code.
const (
	// EtherType is the EtherType of every control frame (IEEE 802 local
	// experimental EtherType 1); it equals classifier.ControlEtherType. It is
	// repeated here so that this package (and its fuzz targets) import
	// nothing from the dataplane side.
	EtherType = 0x88B5

	// Magic is the first two bytes after the EtherType: "LD".
	Magic uint16 = 0x4C44
	// Version is the protocol version this package writes and accepts.
	// Version 2 added the Parity frame (parity.go).
	Version uint8 = 2

	// EthHeaderLen is the untagged Ethernet header this package writes:
	// destination MAC, source MAC, EtherType (bytes).
	EthHeaderLen = 14
	// HeaderLen is the control header after the EtherType (bytes).
	HeaderLen = 40
	// TagLen is the HMAC-SHA256 tag truncated to 128 bits (bytes), as in
	// RFC 4868's HMAC-SHA-256-128: a forger's chance per attempt is 2^-128,
	// far below anything an attacker on a link can try, and the 16 bytes
	// saved per frame count against the 36 kbit/interval budget.
	TagLen = 16
	// Overhead is what every control frame adds to its payload (bytes):
	// Ethernet header, control header and tag. FCS, preamble and the
	// inter-frame gap are not counted (docs/protocol.md gives both).
	Overhead = EthHeaderLen + HeaderLen + TagLen

	// DefaultMTU is the IP-layer MTU of a standard Ethernet port (bytes):
	// everything after the Ethernet header must fit in it.
	DefaultMTU = 1500
	// MinMTU is the smallest MTU a Sender accepts: a header, a tag and room
	// for the largest fixed payload (the End marker) and a useful Hello.
	MinMTU = 256

	// MaxVLANTags is how many VLAN tags ParseFrame skips before the
	// EtherType: as many as the classifier skips.
	MaxVLANTags = 8

	// EndPayloadLen is the size of an End marker's fixed payload (bytes):
	// the payload of an End without per-class counts.
	EndPayloadLen = 34
	// EndFrameLen is the size of a whole End frame without per-class
	// counts (bytes).
	EndFrameLen = Overhead + EndPayloadLen
	// MaxEndClasses is how many per-class frame counts an End marker
	// carries at most; a lane with more classes sends none (End.Classes).
	MaxEndClasses = 1024
	// MaxEndPayloadLen bounds an End payload with per-class counts: the
	// fixed part, the class count and MaxEndClasses uvarints of at most
	// 10 bytes. What a sender sends is also bounded by its MTU.
	MaxEndPayloadLen = EndPayloadLen + binary.MaxVarintLen16 + MaxEndClasses*binary.MaxVarintLen64
	// MaxEndFrameLen is the largest End frame (bytes).
	MaxEndFrameLen = Overhead + MaxEndPayloadLen
)

// DstMAC is the destination of every control frame: a locally administered
// (bit 1) group (bit 0) address, 03:4C:44:41:00:01 ("LDA", 0x0001). A group
// address is flooded by learning bridges in the measured segment, so the
// frame follows the data path without either end knowing the other's MAC,
// and no NIC accepts it as unicast by mistake. It is not in the
// 01:80:C2:00:00:0x range that 802.1D bridges must not forward.
var DstMAC = [6]byte{0x03, 0x4C, 0x44, 0x41, 0x00, 0x01}

// SrcMACPrefix is the first three bytes of DefaultSrcMAC: 02 (locally
// administered, unicast) then 4C:44 ("LD", as in DstMAC). Fixed rather than
// drawn from the session id: Wireshark's vendor table (manuf) names a few
// 02:xx:xx prefixes that predate the local bit's meaning (02:60:8C "3Com",
// 02:A0:C9 "Intel", 19 in all), and a random second and third byte would
// now and then make a capture call the appliance a 3Com card. 02:4C:44 is
// not among them.
var SrcMACPrefix = [3]byte{0x02, 0x4C, 0x44}

// DefaultSrcMAC is the source address of control frames when the sender
// is given none: SrcMACPrefix then the low 24 bits of the session id, so
// the two ends of a segment (different sessions) differ, and a restart
// (a new session) shows as a new address.
func DefaultSrcMAC(session uint64) [6]byte {
	return [6]byte{SrcMACPrefix[0], SrcMACPrefix[1], SrcMACPrefix[2], byte(session >> 16), byte(session >> 8), byte(session)}
}

// Type is the control frame type (header byte 3).
type Type uint8

// Control frame types.
const (
	TypeHello    Type = 1 // session setup: carries the sender's configuration
	TypeEnd      Type = 2 // End-of-interval marker, sent in the data path
	TypeFragment Type = 3 // one fragment of one encoded synopsis
	// TypeRequest and TypeReply are the two-way exchange (exchange.go): a
	// direction's receiver asks its sender (request), the sender answers
	// (reply). Each rides, fragmented, as a frame of the session of the
	// direction it travels in.
	TypeRequest Type = 4
	TypeReply   Type = 5
	// TypeParity is one Reed-Solomon parity fragment of a part
	// (parity.go): any FragCount of the part's data and parity fragments
	// rebuild it.
	TypeParity Type = 6
)

func (t Type) String() string {
	switch t {
	case TypeHello:
		return "hello"
	case TypeEnd:
		return "end"
	case TypeFragment:
		return "fragment"
	case TypeRequest:
		return "request"
	case TypeReply:
		return "reply"
	case TypeParity:
		return "parity"
	}
	return "unknown"
}

// Kind says which synopsis a fragment carries (header byte 5).
type Kind uint8

// Synopsis kinds. KindMeta is any other per-interval payload (and the value
// in Hello and End headers).
const (
	KindMeta Kind = 0
	KindLDA  Kind = 1
	KindRDA  Kind = 2
	KindLDS  Kind = 3
	// KindSample: a class's trajectory sample (docs/sample.md). A sender
	// announces it only when it records one, so a build without it still
	// pairs with configurations that leave it out.
	KindSample Kind = 4
	maxKind         = KindSample
)

func (k Kind) String() string {
	switch k {
	case KindMeta:
		return "meta"
	case KindLDA:
		return "lda"
	case KindRDA:
		return "rda"
	case KindLDS:
		return "lds"
	case KindSample:
		return "sample"
	}
	return "unknown"
}

// FlagInsecure (header byte 4, bit 0) marks a frame written without a key:
// its tag is sixteen zero bytes and authenticates nothing. A keyed receiver
// rejects such frames; see Authenticator.
const FlagInsecure uint8 = 1 << 0

// knownFlags are the flag bits this version defines; any other bit set is a
// malformed header (a later version must bump Version to use them).
const knownFlags = FlagInsecure

// Errors from ParseFrame and the payload decoders. They are created once so
// the End-frame path can return them without allocating.
var (
	ErrNotControl = errors.New("control: not a control frame (EtherType is not 0x88B5)")
	ErrTruncated  = errors.New("control: frame truncated")
	ErrBadMagic   = errors.New("control: bad magic")
	ErrBadVersion = errors.New("control: unsupported protocol version")
	ErrBadHeader  = errors.New("control: malformed header (type, flags, kind, sequence or fragment fields)")
	ErrBadPayload = errors.New("control: malformed payload")
)

// Header is the fixed 40-byte control header (docs/protocol.md).
type Header struct {
	Type      Type
	Flags     uint8
	Kind      Kind
	MEC       uint16 // index into the session's Hello.MECs (0 for Hello/End)
	Session   uint64 // random per sender start; a new value means a restart
	Interval  uint64 // interval number k (Hello: the sender's current interval)
	Seq       uint64 // per session, 1, 2, 3… over every control frame
	FragIndex uint16 // 0-based; 0 for Hello and End
	FragCount uint16 // ≥ 1; 1 for Hello and End
	Direction uint16 // which measured direction this session reports on
	// PayloadLen is filled in by AppendFrame from the payload and checked
	// by ParseFrame against the frame length.
	PayloadLen uint16
}

// Frame is a parsed control frame. Its slices alias the parsed buffer and
// are valid only as long as that buffer is.
type Frame struct {
	Header
	SrcMAC  [6]byte
	Payload []byte // PayloadLen bytes
	Tag     []byte // TagLen bytes
	// Authed is the control header and payload: the bytes the tag covers.
	// The Ethernet header (MACs, VLAN tags) is left out on purpose: bridges
	// and VLAN rewriting in the segment may change it.
	Authed []byte
}

// ParseFrame parses an Ethernet frame b into f without allocating. It
// checks EtherType, magic, version, the header fields and the lengths, but
// not the tag (Authenticator.Verify does that). Up to MaxVLANTags
// 802.1Q/802.1ad/QinQ (0x9100) tags before the EtherType are skipped, since
// switches in the segment may add them; the classifier skips as many, so a
// frame it marks as control is parsed here too. Bytes after the tag (padding, a kept FCS) are ignored: they are
// not authenticated and nothing reads them. On error f is unspecified.
func ParseFrame(b []byte, f *Frame) error {
	if len(b) < EthHeaderLen {
		return ErrTruncated
	}
	copy(f.SrcMAC[:], b[6:12])
	off := 12
	et := binary.BigEndian.Uint16(b[off:])
	for tags := 0; tags < MaxVLANTags && (et == 0x8100 || et == 0x88A8 || et == 0x9100); tags++ {
		off += 4
		if len(b) < off+2 {
			return ErrTruncated
		}
		et = binary.BigEndian.Uint16(b[off:])
	}
	if et != EtherType {
		return ErrNotControl
	}
	h := b[off+2:]
	if len(h) < HeaderLen {
		return ErrTruncated
	}
	if binary.BigEndian.Uint16(h[0:]) != Magic {
		return ErrBadMagic
	}
	if h[2] != Version {
		return ErrBadVersion
	}
	f.Type = Type(h[3])
	f.Flags = h[4]
	f.Kind = Kind(h[5])
	f.MEC = binary.BigEndian.Uint16(h[6:])
	f.Session = binary.BigEndian.Uint64(h[8:])
	f.Interval = binary.BigEndian.Uint64(h[16:])
	f.Seq = binary.BigEndian.Uint64(h[24:])
	f.FragIndex = binary.BigEndian.Uint16(h[32:])
	f.FragCount = binary.BigEndian.Uint16(h[34:])
	f.Direction = binary.BigEndian.Uint16(h[36:])
	f.PayloadLen = binary.BigEndian.Uint16(h[38:])
	if !f.Header.valid() {
		return ErrBadHeader
	}
	n := HeaderLen + int(f.PayloadLen)
	if len(h) < n+TagLen {
		return ErrTruncated
	}
	if f.Type == TypeEnd && !validEndLen(int(f.PayloadLen)) {
		return ErrBadPayload
	}
	if (f.Type == TypeRequest || f.Type == TypeReply) && f.PayloadLen < ExchangeHeaderLen {
		return ErrBadPayload
	}
	if f.Type == TypeParity && f.PayloadLen <= ParityHeaderLen {
		return ErrBadPayload
	}
	f.Authed = h[:n:n]
	f.Payload = h[HeaderLen:n:n]
	f.Tag = h[n : n+TagLen : n+TagLen]
	return nil
}

// valid reports whether the fields a parser can check on their
// own are consistent. AppendFrame refuses what ParseFrame would reject, so a
// sender cannot emit a frame its peer drops as malformed.
func (h *Header) valid() bool {
	if h.Flags&^knownFlags != 0 || h.Kind > maxKind || h.Seq == 0 {
		return false
	}
	switch h.Type {
	case TypeHello, TypeEnd:
		return h.Kind == KindMeta && h.MEC == 0 && h.FragIndex == 0 && h.FragCount == 1
	case TypeFragment, TypeRequest, TypeReply:
		return h.FragCount >= 1 && h.FragIndex < h.FragCount
	case TypeParity:
		// FragCount is the part's data fragments k, FragIndex the parity
		// index j; j < m and k + m ≤ MaxShards are checked with the
		// payload, which carries m.
		return h.FragCount >= 1 && int(h.FragCount)+int(h.FragIndex) < MaxShards
	}
	return false
}

// AppendFrame appends a complete control frame to dst: Ethernet header
// (DstMAC, src, EtherType), h with PayloadLen set from payload, payload and
// the tag computed by a (all zero with FlagInsecure when a has no key). It
// does not allocate when dst has room for Overhead+len(payload) more bytes.
// It returns dst unchanged and ErrBadHeader if h is not a valid header or
// payload is longer than 65535 bytes. a must not be used concurrently.
func AppendFrame(dst []byte, a *Authenticator, src [6]byte, h *Header, payload []byte) ([]byte, error) {
	return AppendFramePriority(dst, a, src, h, payload, NoPriority)
}

// AppendFramePriority is AppendFrame with an 802.1p priority tag (VLAN id
// 0, PCP p) after the source MAC when p is tagged: VLANTagLen bytes more,
// outside what the tag authenticates. An End marker is never tagged (it
// must stay in the data's queue): tagging one is ErrBadHeader.
func AppendFramePriority(dst []byte, a *Authenticator, src [6]byte, h *Header, payload []byte, p Priority) ([]byte, error) {
	if len(payload) > 0xFFFF || (p.Tagged() && h.Type == TypeEnd) {
		return dst, ErrBadHeader
	}
	hh := *h
	hh.PayloadLen = uint16(len(payload))
	hh.Flags &^= FlagInsecure
	if a.Insecure() {
		hh.Flags |= FlagInsecure
	}
	if !hh.valid() || (hh.Type == TypeEnd && !validEndLen(len(payload))) ||
		((hh.Type == TypeRequest || hh.Type == TypeReply) && len(payload) < ExchangeHeaderLen) ||
		(hh.Type == TypeParity && len(payload) <= ParityHeaderLen) {
		return dst, ErrBadHeader
	}
	dst = appendEthHeader(dst, src, p)
	authStart := len(dst)
	dst = hh.append(dst)
	dst = append(dst, payload...)
	dst = a.appendTag(dst, dst[authStart:])
	return dst, nil
}

// append writes the 40-byte header.
func (h *Header) append(dst []byte) []byte {
	dst = binary.BigEndian.AppendUint16(dst, Magic)
	dst = append(dst, Version, byte(h.Type), h.Flags, byte(h.Kind))
	dst = binary.BigEndian.AppendUint16(dst, h.MEC)
	dst = binary.BigEndian.AppendUint64(dst, h.Session)
	dst = binary.BigEndian.AppendUint64(dst, h.Interval)
	dst = binary.BigEndian.AppendUint64(dst, h.Seq)
	dst = binary.BigEndian.AppendUint16(dst, h.FragIndex)
	dst = binary.BigEndian.AppendUint16(dst, h.FragCount)
	dst = binary.BigEndian.AppendUint16(dst, h.Direction)
	dst = binary.BigEndian.AppendUint16(dst, h.PayloadLen)
	return dst
}

// End is the payload of an End-of-interval marker: what one sender lane (a
// worker and its transmit queue) recorded in interval k. The receiver
// cross-checks Frames against its own counts; StartNs/EndNs bound the
// interval on the sender's clock. Classes, when present, are the frames
// the lane recorded in each measurement class: with the receiver's own
// counts they give each class's loss even when every synopsis fragment of
// the interval is lost (the End markers are the interval's most robust
// frames: they go several times, in the data path).
type End struct {
	StartNs int64  // interval start, ns since the Unix epoch (sender clock)
	EndNs   int64  // interval end, ns since the Unix epoch (sender clock)
	Frames  uint64 // data frames this lane sent (and recorded) in the interval
	Bytes   uint64 // their bytes
	Lane    uint16 // the lane (worker / tx queue) that emitted the marker
	// Classes[m] is the data frames this lane recorded in class m; nil
	// when the marker carries no per-class counts (more classes than
	// MaxEndClasses or than the MTU holds). Their sum is Frames.
	Classes []uint64
}

// validEndLen says whether n bytes can be an End payload: the fixed part
// alone, or with a class count and at least one count.
func validEndLen(n int) bool {
	return n == EndPayloadLen || (n >= EndPayloadLen+2 && n <= MaxEndPayloadLen)
}

// EndLen is the size of e's payload (bytes).
func (e *End) EndLen() int {
	if len(e.Classes) == 0 {
		return EndPayloadLen
	}
	n := EndPayloadLen + uvarintLen(uint64(len(e.Classes)))
	for _, c := range e.Classes {
		n += uvarintLen(c)
	}
	return n
}

func uvarintLen(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}

// AppendBinary appends the End payload: 34 bytes, then, when e has
// per-class counts, their number and each count as uvarints. It does not
// allocate when dst has room.
func (e *End) AppendBinary(dst []byte) []byte {
	dst = binary.BigEndian.AppendUint64(dst, uint64(e.StartNs))
	dst = binary.BigEndian.AppendUint64(dst, uint64(e.EndNs))
	dst = binary.BigEndian.AppendUint64(dst, e.Frames)
	dst = binary.BigEndian.AppendUint64(dst, e.Bytes)
	dst = binary.BigEndian.AppendUint16(dst, e.Lane)
	if len(e.Classes) > 0 {
		dst = binary.AppendUvarint(dst, uint64(len(e.Classes)))
		for _, c := range e.Classes {
			dst = binary.AppendUvarint(dst, c)
		}
	}
	return dst
}

// UnmarshalBinary decodes an End payload; on error e is unchanged.
// Per-class counts must be canonical, exactly fill the payload and sum to
// Frames: a marker whose counts disagree with its own total is malformed.
func (e *End) UnmarshalBinary(p []byte) error {
	return e.unmarshal(p, true)
}

// unmarshalFixed decodes an End payload as UnmarshalBinary does, checking
// the per-class counts the same way but leaving e.Classes nil: it does
// not allocate (a receiving worker's check of an End in the hot path).
func (e *End) unmarshalFixed(p []byte) error {
	return e.unmarshal(p, false)
}

func (e *End) unmarshal(p []byte, keep bool) error {
	if !validEndLen(len(p)) {
		return ErrBadPayload
	}
	start := int64(binary.BigEndian.Uint64(p[0:]))
	end := int64(binary.BigEndian.Uint64(p[8:]))
	if end < start {
		return ErrBadPayload
	}
	frames := binary.BigEndian.Uint64(p[16:])
	var classes []uint64
	if rest := p[EndPayloadLen:]; len(rest) > 0 {
		n, w := binary.Uvarint(rest)
		if w <= 0 || n == 0 || n > MaxEndClasses || uvarintLen(n) != w {
			return ErrBadPayload
		}
		rest = rest[w:]
		if keep {
			classes = make([]uint64, n)
		}
		var sum uint64
		for i := uint64(0); i < n; i++ {
			c, w := binary.Uvarint(rest)
			if w <= 0 || uvarintLen(c) != w {
				return ErrBadPayload
			}
			rest = rest[w:]
			if keep {
				classes[i] = c
			}
			if sum+c < sum {
				return ErrBadPayload
			}
			sum += c
		}
		if len(rest) != 0 || sum != frames {
			return ErrBadPayload
		}
	}
	e.StartNs, e.EndNs = start, end
	e.Frames = frames
	e.Bytes = binary.BigEndian.Uint64(p[24:])
	e.Lane = binary.BigEndian.Uint16(p[32:])
	e.Classes = classes
	return nil
}
