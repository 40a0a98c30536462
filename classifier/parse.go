package classifier

import (
	"encoding/binary"
	"math/bits"
)

// Bounds that keep Parse O(1) on forged frames.
const (
	maxVLANTags   = 8  // 802.1Q/802.1ad/QinQ tags skipped before giving up
	maxExtHeaders = 8  // IPv6 extension headers skipped before giving up
	l4Window      = 32 // bytes of L4 header (+ payload) in the identity
)

// The invariant bytes of a packet are gathered as little-endian 64-bit
// words (ident) and hashed with XXH64 (sum64Words, equal to
// xxhash.Sum64 over the same bytes). Both ends of a segment must gather
// exactly the same bytes, so this layout is part of the contract between
// two ldafwd versions: change it and appliances of different versions no
// longer agree on packet identities. Byte i of the layout is byte i%8 of
// word i/8; multi-byte fields keep their wire (big-endian) byte order.
//
//	IPv4 (6 words, 48 bytes):
//	  [0]      tagIPv4
//	  [1]      protocol
//	  [2:8]    total length, identification, flags + fragment offset
//	  [8:16]   source, destination address
//	  [16:48]  L4 window
//	IPv6 (10 words, 80 bytes):
//	  [0]      tagIPv6
//	  [1]      next header after the extension headers (the L4 protocol)
//	  [2:4]    payload length
//	  [4:7]    flow label (20 bits, high 4 bits of [4] zero)
//	  [8:40]   source, destination address
//	  [40:46]  fragment header: offset + M flag, identification (0 if none)
//	  [48:80]  L4 window
//	tunneled (GRE, VXLAN, Geneve, MPLS): tunnel.go
//	non-IP (8 words, 64 bytes):
//	  [0]      tagNonIP
//	  [1:3]    EtherType after the VLAN tags
//	  [8:64]   the first 56 bytes after the L2 header, zero-filled
//
// Never gathered: MAC addresses, VLAN tags, DSCP/ECN (traffic class),
// TTL (hop limit), the IPv4 header checksum, IPv4 options and IPv6
// extension headers (routers may change both; only the fragment header's
// offset and identification are kept).
//
// The L4 window is the first l4Window bytes after the IP header and its
// extension headers, bounded by the IP length fields (never by the frame,
// so Ethernet padding does not count; missing bytes are zero), with the L4
// checksum zeroed (TCP 16-17, UDP/UDP-Lite 6-7, ICMP/ICMPv6 2-3, SCTP
// 8-11; NAT and checksum offload may rewrite it). For a TCP SYN the window
// stops after the 20-byte fixed header: middleboxes clamp the MSS option
// of SYNs. Non-first fragments have no L4 header; their window is the
// first payload bytes as they are.
//
// Why words and not a byte array: gathering with byte-sized stores and
// then hashing with 8-byte loads stalls on store forwarding; building
// the words in registers and running XXH64 on them directly makes Parse
// cost little more than the hash itself (BenchmarkMeasure).
const (
	tagNonIP = 0
	tagIPv4  = 4
	tagIPv6  = 6

	v4Words    = 6
	v6Words    = 10
	nonIPWords = 8
)

// ident holds the invariant words of one packet.
type ident [v6Words]uint64

// EtherTypes and TPIDs Parse knows.
const (
	etherTypeIPv4 = 0x0800
	etherTypeIPv6 = 0x86DD
	tpid8021Q     = 0x8100
	tpid8021AD    = 0x88A8
	tpidQinQ      = 0x9100
)

// IP protocol numbers with a port pair and a known checksum position.
const (
	protoICMP    = 1
	protoTCP     = 6
	protoUDP     = 17
	protoICMPv6  = 58
	protoSCTP    = 132
	protoUDPLite = 136
)

// Parse fills m from one Ethernet frame: the identity hash over invariant
// bytes, the flow key and its hash, VLAN id, DSCP, protocol,
// flags and length. Every field of m is overwritten.
//
// Parse never allocates and never panics: a truncated or malformed frame
// still gets a hash of the invariant bytes that are present (missing bytes
// count as zero) and FlagTruncated or FlagMalformed. Its cost is bounded
// (at most maxVLANTags tags and maxExtHeaders IPv6 extension headers are
// walked), whatever the frame claims.
//
// Flow key: the 5-tuple. Ports are valid for TCP, UDP, UDP-Lite and SCTP
// (FlagPorts). For ICMP and ICMPv6 SrcPort holds the type and DstPort the
// code, so echo traffic and errors are separate flows; FlagPorts stays
// clear so port rules never match them. Non-first fragments have ports 0,
// so the fragments of one datagram fall into two flows (first, rest).
//
// Flags: FlagIPv4/FlagIPv6 mean the fixed IP header was all there, so
// Flow, DSCP and Proto are valid; an IP header cut short gets neither (but
// its identity still uses the IP layout) and FlagTruncated. FlagNonIP
// means the identity is the raw layout: not IPv4/IPv6, or the VLAN tags
// could not be walked (too many, or cut off). FlagControl marks EtherType
// 0x88B5 (ldafwd control frames, docs/protocol.md). FlagLinkLocal marks a frame
// the segment's own devices originate or consume (linklocal.go): a test of
// the destination MAC's group bit and of the IP destination the fast path
// already holds in a register.
func Parse(frame []byte, m *Meta) {
	// Most frames are untagged IPv4 or IPv6 carrying TCP or UDP, whole,
	// unfragmented, without options or extension headers: those take a
	// straight-line path that never builds the ident array (parseFast);
	// everything else, and anything it is unsure of, the general one.
	parseFast(frame, m, LevelFull, true)
}

// ParseLean is Parse for a consumer that reads only the identity: on the
// IP fast path (untagged IPv4/IPv6 carrying TCP/UDP, the common frame) it
// writes m.Hash, m.Flags and m.Len and leaves the flow key, its hash,
// VLAN, EtherType, DSCP and Proto as they were; every other frame gets
// every field, as from Parse. A measuring lane with only the default MEC
// and no LDS reads nothing more, and the flow key's stores and hash are
// about a fifth of Parse's instructions (docs/performance.md).
func ParseLean(frame []byte, m *Meta) {
	parseFast(frame, m, LevelIdentity, true)
}

// ParseNoFlowHash is Parse for a consumer that classifies but keeps no
// per-flow synopsis (MEC rules without the LDS): on the IP fast path it
// writes every field but the flow hash, and sets m.FlowHash to 0 ("no
// flow hash", as for a non-IP frame); every other frame gets every field,
// as from Parse. The flow hash is the one 64×64→128-bit multiply (three
// for IPv6) and the reloads of the key it hashes, ~20 instructions.
func ParseNoFlowHash(frame []byte, m *Meta) {
	parseFast(frame, m, LevelFlowKey, true)
}

// ParseLevel is Parse, ParseNoFlowHash or ParseLean as level says, for a
// caller that picks one at run time (a lane, by what its synopses read):
// parseFast takes the level as an argument either way, so this costs what
// the three do.
func ParseLevel(frame []byte, m *Meta, level Level) {
	parseFast(frame, m, level, true)
}

// MinFastLen is the shortest frame the IP fast path of ParseLevel (and
// Parse, ParseLean, ParseNoFlowHash) takes: a shorter frame gets every
// field of Meta whatever the level, from the non-IP fast path or the
// general one. A caller parsing bursts may hand such frames to ParseShort
// directly, one call fewer per frame (a lane's parse loop).
const MinFastLen = 14 + 40 + l4Window

// ParseShort is Parse (at any level) for a frame shorter than MinFastLen;
// for a longer one it is still right, only without the IP fast path.
func ParseShort(frame []byte, m *Meta) { parseRaw(frame, m, true) }

// Level is how much of Meta a parse writes on the IP fast path; every
// other frame gets every field whatever the level.
type Level uint8

const (
	LevelIdentity Level = iota // Hash, Flags, Len (ParseLean)
	LevelFlowKey               // every field, FlowHash 0 (ParseNoFlowHash)
	LevelFull                  // every field (Parse)
)

// parseFast handles the common frame in about half the instructions of
// parseGeneral and fills m exactly as parseGeneral would
// (TestParseFastIsGeneral, FuzzParse): untagged IPv4 with a 20-byte header,
// not a fragment, or IPv6 without extension headers, carrying TCP or UDP
// (not to the VXLAN or Geneve port: tunnel.go) with at least l4Window bytes of L4 inside the IP length, the frame at
// least as long as that length (and, through parseRaw, untagged non-IP
// frames other than MPLS). Every other frame it declines: with general set the general
// path parses it, without it reports false having written nothing. On the
// IP path it writes what level says (Level): two well-predicted
// branches, as parseFast is a call (too big to inline) whose level is a
// constant at each call site.
func parseFast(frame []byte, m *Meta, level Level, general bool) bool {
	if len(frame) < MinFastLen {
		// Too short for the IP fast path (also covers IPv4's
		// 14+20+l4Window); still the common case for minimum-size
		// non-IP frames (net_null's, LLDP, pause frames).
		return parseRaw(frame, m, general)
	}
	switch binary.BigEndian.Uint16(frame[12:]) {
	case etherTypeIPv4:
		h := frame[14:]
		h = h[:20+l4Window]                    // len(frame) ≥ 86 guarantees it; hoists the bounds checks
		x := binary.LittleEndian.Uint64(h[0:]) // version+IHL, TOS, total length, identification, flags+fragment offset
		total := int(x>>24&0xff | x>>8&0xff00)
		proto := h[9]
		if x&0xff != 0x45 || x>>48&0xff3f != 0 ||
			total < 20+l4Window || total > len(frame)-14 ||
			(proto != protoTCP && proto != protoUDP) {
			return decline(frame, m, general)
		}
		l4 := h[20:]
		w0, w1, w2, w3 := binary.LittleEndian.Uint64(l4[0:]), binary.LittleEndian.Uint64(l4[8:]), binary.LittleEndian.Uint64(l4[16:]), binary.LittleEndian.Uint64(l4[24:])
		if proto == protoUDP {
			if d := uint16(w0 >> 16); d == portVXLANLE || d == portGeneveLE {
				return decline(frame, m, general) // a tunnel (tunnel.go)
			}
			w0 &= maskUDPCsum
		} else if l4[13]&0x02 != 0 { // TCP SYN (the window is longer than 20 bytes here)
			w2 &= maskTCPSyn
			w3 = 0
		} else {
			w2 &= maskTCPCsum
		}
		addrs := binary.LittleEndian.Uint64(h[12:]) // source, destination
		// Every field is stored once: a composite literal would be built
		// on the stack and copied.
		m.Hash = sum64v4(x&^0xffff|uint64(proto)<<8|tagIPv4, addrs, w0, w1, w2, w3)
		// Link-local (linklocal.go) only ever goes to a group MAC: the
		// unicast frame pays one byte test.
		f := FlagIPv4 | FlagPorts
		if frame[0]&1 != 0 {
			f |= groupV4(frame, uint32(addrs>>32))
		}
		m.Flags = f
		m.Len = uint32(len(frame))
		if level == LevelIdentity {
			return true
		}
		m.Flow.Src = [16]byte{}
		m.Flow.Dst = [16]byte{}
		binary.LittleEndian.PutUint64(m.Flow.Src[8:], 0xffff<<16|addrs<<32)
		binary.LittleEndian.PutUint64(m.Flow.Dst[8:], 0xffff<<16|addrs&^0xffffffff)
		m.Flow.SrcPort = bits.ReverseBytes16(uint16(w0)) // big-endian on the wire
		m.Flow.DstPort = bits.ReverseBytes16(uint16(w0 >> 16))
		m.Flow.Proto = proto
		m.Flow.IPv6 = false
		m.VLAN = 0
		m.EtherType = etherTypeIPv4
		m.DSCP = uint8(x>>10) & 0x3f
		m.Proto = proto
		m.FlowHash = 0
		if level == LevelFull {
			m.FlowHash = flowHash(&m.Flow)
		}
		return true
	case etherTypeIPv6:
		h := frame[14:]
		h = h[:40+l4Window]
		x := binary.LittleEndian.Uint64(h[0:]) // version, traffic class, flow label, payload length, next header, hop limit
		declared := 40 + int(x>>40&0xff|x>>24&0xff00)
		nh := uint8(x >> 48)
		if x&0xf0 != 0x60 || declared < 40+l4Window || declared > len(frame)-14 ||
			(nh != protoTCP && nh != protoUDP) {
			return decline(frame, m, general)
		}
		l4 := h[40:]
		w0, w1, w2, w3 := binary.LittleEndian.Uint64(l4[0:]), binary.LittleEndian.Uint64(l4[8:]), binary.LittleEndian.Uint64(l4[16:]), binary.LittleEndian.Uint64(l4[24:])
		if nh == protoUDP {
			if d := uint16(w0 >> 16); d == portVXLANLE || d == portGeneveLE {
				return decline(frame, m, general) // a tunnel (tunnel.go)
			}
			w0 &= maskUDPCsum
		} else if l4[13]&0x02 != 0 {
			w2 &= maskTCPSyn
			w3 = 0
		} else {
			w2 &= maskTCPCsum
		}
		a0, a1, a2, a3 := binary.LittleEndian.Uint64(h[8:]), binary.LittleEndian.Uint64(h[16:]), binary.LittleEndian.Uint64(h[24:]), binary.LittleEndian.Uint64(h[32:])
		// The layout's word 5 (fragment header) is zero: there is none.
		m.Hash = sum64v6(tagIPv6|uint64(nh)<<8|(x>>32&0xffff)<<16|(x>>8&0x0f)<<32|(x>>16&0xffff)<<40,
			a0, a1, a2, a3, w0, w1, w2, w3)
		f := FlagIPv6 | FlagPorts
		if frame[0]&1 != 0 {
			f |= groupV6(frame, bits.ReverseBytes16(uint16(a2)))
		}
		m.Flags = f
		m.Len = uint32(len(frame))
		if level == LevelIdentity {
			return true
		}
		binary.LittleEndian.PutUint64(m.Flow.Src[0:], a0)
		binary.LittleEndian.PutUint64(m.Flow.Src[8:], a1)
		binary.LittleEndian.PutUint64(m.Flow.Dst[0:], a2)
		binary.LittleEndian.PutUint64(m.Flow.Dst[8:], a3)
		m.Flow.SrcPort = bits.ReverseBytes16(uint16(w0)) // big-endian on the wire
		m.Flow.DstPort = bits.ReverseBytes16(uint16(w0 >> 16))
		m.Flow.Proto = nh
		m.Flow.IPv6 = true
		m.VLAN = 0
		m.EtherType = etherTypeIPv6
		m.DSCP = uint8(x<<2)&0x3c | uint8(x>>14)&0x03 // traffic class >> 2
		m.Proto = nh
		m.FlowHash = 0
		if level == LevelFull {
			m.FlowHash = flowHash(&m.Flow)
		}
		return true
	}
	return parseRaw(frame, m, general)
}

// decline is parseFast's exit for a frame it does not take: with general
// set the general path parses it (Parse, ParseLean: the fast path's body
// is then the callee itself, so the one-call wrappers inline into their
// callers); without, the Meta is left as it was (the tests).
func decline(frame []byte, m *Meta, general bool) bool {
	if general {
		parseGeneral(frame, m)
	}
	return false
}

// parseRaw is the fast path of an untagged frame that is neither IPv4,
// IPv6 nor VLAN-tagged: the raw identity layout (gatherRaw) from
// registers, every Meta field written as the general path writes it, and
// true. Every other frame it hands to decline (with general, the general
// path parses it) and reports false. Why a fast path for non-IP frames:
// DPDK's net_null, the vdev the DPDK benchmark runs on
// (docs/performance.md), produces 64-byte all-zero frames (EtherType 0),
// and the general path costs several times the IP fast path on them
// (bench/instr_test.go counts both). Not inlined: its 56-byte buffer
// would grow the IP fast path's frame. It declines by itself so that
// parseFast's caller has nothing left to do after the call: parseFast
// then keeps its arguments in registers on the short-frame path.
//
//go:noinline
func parseRaw(frame []byte, m *Meta, general bool) bool {
	if len(frame) < 14 {
		return decline(frame, m, general)
	}
	et := binary.BigEndian.Uint16(frame[12:])
	n := len(frame) - 14
	flags := FlagNonIP
	if et <= 1500 {
		// An IEEE 802.3 length field, no EtherType: the rest is padding,
		// and none of the EtherType tests below can match.
		if int(et) < n {
			n = int(et)
		}
	} else {
		switch et {
		case etherTypeIPv4, etherTypeIPv6, tpid8021Q, tpid8021AD, tpidQinQ,
			etherTypeMPLS, etherTypeMPLSMulti: // MPLS: a tunnel (tunnel.go)
			return decline(frame, m, general)
		}
		if linkLocalEtherType(et) {
			flags |= FlagLinkLocal
		}
		if et == ControlEtherType {
			flags |= FlagControl
		}
	}
	if frame[0]&1 != 0 && macLinkLocal(frame) {
		flags |= FlagLinkLocal
	}
	// Every field but the hash before the hash's call: only m is live
	// across it.
	m.FlowHash = 0
	m.Flow = FlowKey{}
	m.VLAN, m.EtherType, m.DSCP, m.Proto = 0, et, 0, 0
	m.Flags, m.Len = flags, uint32(len(frame))
	w0 := tagNonIP | uint64(binary.LittleEndian.Uint16(frame[12:]))<<8 // the EtherType's wire bytes at [1:3]
	if n >= 56 {
		b := frame[14 : 14+56]
		m.Hash = sum64v8(w0, binary.LittleEndian.Uint64(b[0:]), binary.LittleEndian.Uint64(b[8:]), binary.LittleEndian.Uint64(b[16:]), binary.LittleEndian.Uint64(b[24:]), binary.LittleEndian.Uint64(b[32:]), binary.LittleEndian.Uint64(b[40:]), binary.LittleEndian.Uint64(b[48:]))
		return true
	}
	var pad [56]byte
	if n > 0 { // a copy of nothing is still a call of memmove
		copy(pad[:], frame[14:14+n])
	}
	m.Hash = sum64v8(w0, binary.LittleEndian.Uint64(pad[0:]), binary.LittleEndian.Uint64(pad[8:]), binary.LittleEndian.Uint64(pad[16:]), binary.LittleEndian.Uint64(pad[24:]), binary.LittleEndian.Uint64(pad[32:]), binary.LittleEndian.Uint64(pad[40:]), binary.LittleEndian.Uint64(pad[48:]))
	return true
}

// parseGeneral is Parse for every frame: VLAN tags, options, extension
// headers, fragments, other protocols, truncated and malformed frames.
func parseGeneral(frame []byte, m *Meta) {
	*m = Meta{Len: uint32(len(frame))}
	var id ident

	if len(frame) < 14 {
		// Not even an Ethernet header: hash what follows the MAC
		// addresses, if anything.
		m.Flags = FlagTruncated | FlagNonIP | linkLocalGeneral(frame, m, 0)
		var rest []byte
		if len(frame) > 12 {
			rest = frame[12:]
		}
		m.Hash = sum64Words(&id, gatherRaw(rest, 0, &id))
		return
	}

	// Flags build up in a register: read-modify-writes of m.Flags in
	// memory made a store-forwarding chain through the whole parse.
	var flags uint16
	off := 12
	et := binary.BigEndian.Uint16(frame[12:])
	for tags := 0; et == tpid8021Q || et == tpid8021AD || et == tpidQinQ; tags++ {
		if tags == maxVLANTags {
			flags |= FlagMalformed
			break
		}
		if off+6 > len(frame) {
			flags |= FlagTruncated
			break
		}
		if tags == 0 {
			m.VLAN = binary.BigEndian.Uint16(frame[off+2:]) & 0x0fff
		}
		et = binary.BigEndian.Uint16(frame[off+4:])
		off += 4
	}
	off += 2 // past the EtherType: start of L3
	m.EtherType = et
	if off > len(frame) {
		off = len(frame)
	}
	l3 := frame[off:]

	var n int
	var l4 []byte // the L4 bytes of an IP packet that has them (tunnel.go)
	switch {
	case flags&(FlagTruncated|FlagMalformed) != 0:
		n = gatherRaw(l3, et, &id)
		flags |= FlagNonIP
	case et == etherTypeIPv4:
		n = v4Words
		var f uint16
		f, l4 = parseIPv4(l3, m, &id)
		flags |= f
	case et == etherTypeIPv6:
		n = v6Words
		var f uint16
		f, l4 = parseIPv6(l3, m, &id)
		flags |= f
	default:
		if et == ControlEtherType {
			flags |= FlagControl
		}
		if linkLocalEtherType(et) {
			flags |= FlagLinkLocal
		}
		if et <= 1500 && int(et) < len(l3) {
			// IEEE 802.3 length field: the rest is padding.
			l3 = l3[:et]
		}
		n = gatherRaw(l3, et, &id)
		flags |= FlagNonIP
		if et == etherTypeMPLS || et == etherTypeMPLSMulti {
			l4 = l3
		}
	}
	flags |= linkLocalGeneral(frame, m, flags)
	m.Flags = flags
	m.Hash = sum64Words(&id, n)
	if l4 != nil && flags&FlagMalformed == 0 {
		if h, ok := tunnelHash(et, m.Proto, l4, m.Hash); ok {
			m.Hash = h
		}
	}
	if flags&(FlagIPv4|FlagIPv6) != 0 {
		m.FlowHash = flowHash(&m.Flow)
	}
}

// le64 loads 8 bytes little-endian. Hot paths call
// binary.LittleEndian.Uint64 directly: an inlined le64 leaves a NOP (its
// inline mark) per load, the load itself carrying Uint64's position.
func le64(b []byte) uint64 { return binary.LittleEndian.Uint64(b) }

// load4 loads the 32-byte window at the start of b into w; bytes past the
// end of b count as zero. The common case (32 bytes there) is inlined.
func load4(w []uint64, b []byte) {
	if len(b) < 32 || len(w) < 4 {
		load4Short(w, b)
		return
	}
	w[0], w[1], w[2], w[3] = le64(b[0:8]), le64(b[8:16]), le64(b[16:24]), le64(b[24:32])
}

func load4Short(w []uint64, b []byte) {
	var pad [32]byte
	copy(pad[:], b)
	w[0], w[1], w[2], w[3] = le64(pad[0:]), le64(pad[8:]), le64(pad[16:]), le64(pad[24:])
}

// gatherRaw is the identity of a frame that is not IP (or whose L2 header
// could not be walked): the EtherType and the first bytes after L2.
func gatherRaw(b []byte, et uint16, id *ident) int {
	id[0] = tagNonIP | uint64(et>>8)<<8 | uint64(et&0xff)<<16
	var pad [56]byte
	copy(pad[:], b)
	for i := 0; i < 7; i++ {
		id[1+i] = le64(pad[8*i:])
	}
	return nonIPWords
}

// parseIPv4 gathers an IPv4 packet's invariant words; b starts at the IP
// header and runs to the end of the frame. l4 is the L4 header and payload
// (bounded by the total length) when the packet has them whole enough to
// gather, for tunnelHash; nil otherwise.
func parseIPv4(b []byte, m *Meta, id *ident) (f uint16, l4 []byte) {
	if len(b) < 20 {
		// Truncated header: the invariant fields that are present,
		// zero for the rest. No flow key.
		var pad [20]byte
		copy(pad[:], b)
		gatherIPv4Header(pad[:], id)
		f |= FlagTruncated
		return f, nil
	}
	h := b[:20]
	gatherIPv4Header(h, id)
	f |= FlagIPv4
	if h[0]>>4 != 4 {
		f |= FlagMalformed
	}
	m.DSCP = h[1] >> 2
	proto := h[9]
	m.Proto = proto
	m.Flow.Proto = proto
	// IPv4-mapped addresses, one 8-byte store each: bytes 10-11 0xff,
	// 12-15 the address (bytes 0-9 are already zero).
	binary.LittleEndian.PutUint64(m.Flow.Src[8:], 0xffff<<16|uint64(binary.LittleEndian.Uint32(h[12:]))<<32)
	binary.LittleEndian.PutUint64(m.Flow.Dst[8:], 0xffff<<16|uint64(binary.LittleEndian.Uint32(h[16:]))<<32)

	ihl := int(h[0]&0x0f) * 4
	total := int(binary.BigEndian.Uint16(h[2:]))
	if ihl < 20 || total < ihl {
		f |= FlagMalformed
		return f, nil
	}
	end := total
	if end > len(b) {
		f |= FlagTruncated
		end = len(b)
	}
	if ihl > end {
		// Options cut off by the end of the frame.
		return f, nil
	}
	frag := binary.BigEndian.Uint16(h[6:]) & 0x3fff
	if frag != 0 {
		f |= FlagFragment
	}
	if frag&0x1fff != 0 {
		// Not the first fragment: no L4 header in it.
		load4(id[2:6], b[ihl:end])
		return f, nil
	}
	l4 = b[ihl:end]
	return f | gatherL4(proto, l4, id[2:6], m), l4
}

// gatherIPv4Header gathers the invariant fields of a 20-byte IPv4 header:
// never TOS (DSCP/ECN), TTL or header checksum.
func gatherIPv4Header(h []byte, id *ident) {
	_ = h[19]
	// bytes 2-7: total length, identification, flags+fragment offset
	id[0] = le64(h[0:])&^0xffff | uint64(h[9])<<8 | tagIPv4
	id[1] = le64(h[12:]) // source, destination
}

// parseIPv6 gathers an IPv6 packet's invariant words; b starts at the IP
// header and runs to the end of the frame. l4 is as parseIPv4's.
func parseIPv6(b []byte, m *Meta, id *ident) (f uint16, l4 []byte) {
	if len(b) < 40 {
		var pad [40]byte
		copy(pad[:], b)
		gatherIPv6Header(pad[:], pad[6], id)
		f |= FlagTruncated
		return f, nil
	}
	h := b[:40]
	f |= FlagIPv6
	if h[0]>>4 != 6 {
		f |= FlagMalformed
	}
	m.DSCP = (h[0]&0x0f)<<2 | h[1]>>6 // traffic class >> 2
	m.Flow.IPv6 = true
	copy(m.Flow.Src[:], h[8:24])
	copy(m.Flow.Dst[:], h[24:40])

	// declared is where the payload length says the packet ends; end is
	// where the bytes we have end.
	declared := 40 + int(binary.BigEndian.Uint16(h[4:]))
	end := declared
	if end > len(b) {
		f |= FlagTruncated
		end = len(b)
	}
	nh := h[6]
	off := 40
	first := true // false once a fragment header says "not the first"
	walked := 0
	for ; walked <= maxExtHeaders; walked++ {
		var hl int
		switch nh {
		case 0, 43, 60, 135, 139, 140: // hop-by-hop, routing, dest opts, mobility, HIP, shim6
			if off+2 > end {
				goto stop
			}
			hl = (int(b[off+1]) + 1) * 8
		case 51: // AH: length in 4-octet units, minus 2
			if off+2 > end {
				goto stop
			}
			hl = (int(b[off+1]) + 2) * 4
		case 44: // fragment
			hl = 8
			if off+8 > end {
				goto stop
			}
			// offset + M flag, identification
			id[5] = le64(b[off:]) >> 16
			fo := binary.BigEndian.Uint16(b[off+2:])
			if fo&0xfff9 != 0 { // offset or M flag
				f |= FlagFragment
			}
			if fo&0xfff8 != 0 {
				first = false
			}
		default:
			goto stop
		}
		if off+hl > declared {
			f |= FlagMalformed
			goto stop
		}
		nh = b[off]
		off += hl
		if !first {
			// What follows a non-first fragment header is the middle
			// of the payload, not more headers.
			goto stop
		}
	}
	// Too many extension headers (or a loop of them): give up on L4.
	f |= FlagMalformed
stop:
	gatherIPv6Header(h, nh, id)
	m.Proto = nh
	m.Flow.Proto = nh
	if off > end {
		return f, nil
	}
	if !first {
		load4(id[6:10], b[off:end])
		return f, nil
	}
	if isExtHeader(nh) {
		// The chain was cut off or abandoned: no L4 header.
		if f&(FlagTruncated|FlagMalformed) == 0 {
			f |= FlagMalformed
		}
		return f, nil
	}
	l4 = b[off:end]
	return f | gatherL4(nh, l4, id[6:10], m), l4
}

func isExtHeader(nh uint8) bool {
	switch nh {
	case 0, 43, 44, 51, 60, 135, 139, 140:
		return true
	}
	return false
}

// gatherIPv6Header gathers the invariant fields of a 40-byte IPv6 header
// with nh, the protocol after the extension headers: never traffic class
// or hop limit.
func gatherIPv6Header(h []byte, nh uint8, id *ident) {
	_ = h[39]
	x := le64(h[0:])
	id[0] = tagIPv6 | uint64(nh)<<8 |
		(x>>32&0xffff)<<16 | // payload length
		(x>>8&0x0f)<<32 | (x>>16&0xffff)<<40 // flow label
	id[1], id[2], id[3], id[4] = le64(h[8:]), le64(h[16:]), le64(h[24:]), le64(h[32:])
}

// Masks that zero L4 checksums (and SYN options) in the window's words;
// word i holds window bytes 8i..8i+7, byte j of a word in bits 8j..8j+7.
const (
	maskTCPCsum = 0xffffffff_ffff0000 // word 2, bytes 16-17
	maskTCPSyn  = 0x00000000_ffff0000 // word 2: keep bytes 18-19 only; word 3 cleared
	maskUDPCsum = 0x0000ffff_ffffffff // word 0, bytes 6-7
	maskICMP    = 0xffffffff_0000ffff // word 0, bytes 2-3
	maskSCTP    = 0xffffffff_00000000 // word 1, bytes 8-11
)

// gatherL4 gathers the L4 window (l4 is bounded by the IP length) with
// the checksum zeroed and fills the flow key's ports.
func gatherL4(proto uint8, l4 []byte, w []uint64, m *Meta) uint16 {
	_ = w[3]
	load4(w, l4)
	switch proto {
	case protoTCP:
		if len(l4) > 20 && l4[13]&0x02 != 0 {
			// SYN: the options (MSS) may be clamped on the way.
			w[2] &= maskTCPSyn
			w[3] = 0
		} else {
			w[2] &= maskTCPCsum
		}
	case protoUDP, protoUDPLite:
		w[0] &= maskUDPCsum
	case protoSCTP:
		w[1] &= maskSCTP
	case protoICMP, protoICMPv6:
		w[0] &= maskICMP
		if len(l4) >= 2 {
			m.Flow.SrcPort = uint16(l4[0]) // type
			m.Flow.DstPort = uint16(l4[1]) // code
		}
		return 0
	default:
		return 0
	}
	if len(l4) < 4 {
		return 0
	}
	m.Flow.SrcPort = binary.BigEndian.Uint16(l4[0:])
	m.Flow.DstPort = binary.BigEndian.Uint16(l4[2:])
	return FlagPorts
}

// XXH64 primes.
const (
	prime1 uint64 = 11400714785074694791
	prime2 uint64 = 14029467366897019727
	prime3 uint64 = 1609587929392839161
	prime4 uint64 = 9650029242287828579
)

// sum64Words is XXH64 with seed 0 over the first n words of w read as
// 8n little-endian bytes: the same value as xxhash.Sum64 over those bytes
// (TestSum64WordsIsXXH64), computed from registers. n is 6, 8 or 10: XXH64
// takes another path below 32 bytes, which this never needs.
func sum64Words(w *ident, n int) uint64 {
	// Straight-line code per size: the generic stripe loop kept the
	// accumulators in memory and ran ~60% slower than the assembly
	// xxhash.Sum64 (BenchmarkHashParts).
	v1 := round(6983438078262162902, w[0]) // seed 0: v1 = prime1 + prime2 mod 2^64
	v2 := round(prime2, w[1])
	v3 := round(0, w[2])
	v4 := round(7046029288634856825, w[3]) // v4 = -prime1 mod 2^64
	var t0, t1 uint64                      // tail words after the stripes
	switch n {
	case v4Words:
		t0, t1 = w[4], w[5]
	case nonIPWords:
		v1, v2, v3, v4 = round(v1, w[4]), round(v2, w[5]), round(v3, w[6]), round(v4, w[7])
	default: // v6Words
		v1, v2, v3, v4 = round(v1, w[4]), round(v2, w[5]), round(v3, w[6]), round(v4, w[7])
		t0, t1 = w[8], w[9]
	}
	h := bits.RotateLeft64(v1, 1) + bits.RotateLeft64(v2, 7) + bits.RotateLeft64(v3, 12) + bits.RotateLeft64(v4, 18)
	h = mergeRound(h, v1)
	h = mergeRound(h, v2)
	h = mergeRound(h, v3)
	h = mergeRound(h, v4)
	h += uint64(n) * 8
	if n != nonIPWords {
		h ^= round(0, t0)
		h = bits.RotateLeft64(h, 27)*prime1 + prime4
		h ^= round(0, t1)
		h = bits.RotateLeft64(h, 27)*prime1 + prime4
	}
	h ^= h >> 33
	h *= prime2
	h ^= h >> 29
	h *= prime3
	h ^= h >> 32
	return h
}

// sum64v4 is sum64Words for the six IPv4 words, taken in registers.
//
// sum64v4, sum64v6 and sum64v8 repeat XXH64's fold and merge on purpose,
// and write its rounds out rather than calling round, mergeRound and
// avalanche: the compiler will not inline the shared helper, and the call
// with its reloads costs about a tenth of the fast path's per-packet
// instructions (ParseLean + LDA.Add under callgrind: bench/instr_test.go);
// each inlined small helper still leaves a NOP (its inline mark) in the
// code, 13 to 17 per hash. TestSum64WordsIsXXH64 and the parse tests
// check all three against xxhash.Sum64.
func sum64v4(w0, w1, w2, w3, w4, w5 uint64) uint64 {
	v1 := bits.RotateLeft64(6983438078262162902+w0*prime2, 31) * prime1
	v2 := bits.RotateLeft64(prime2+w1*prime2, 31) * prime1
	v3 := bits.RotateLeft64(w2*prime2, 31) * prime1
	v4 := bits.RotateLeft64(7046029288634856825+w3*prime2, 31) * prime1
	h := bits.RotateLeft64(v1, 1) + bits.RotateLeft64(v2, 7) + bits.RotateLeft64(v3, 12) + bits.RotateLeft64(v4, 18)
	h = (h^bits.RotateLeft64(v1*prime2, 31)*prime1)*prime1 + prime4
	h = (h^bits.RotateLeft64(v2*prime2, 31)*prime1)*prime1 + prime4
	h = (h^bits.RotateLeft64(v3*prime2, 31)*prime1)*prime1 + prime4
	h = (h^bits.RotateLeft64(v4*prime2, 31)*prime1)*prime1 + prime4
	h += v4Words * 8
	h ^= bits.RotateLeft64(w4*prime2, 31) * prime1
	h = bits.RotateLeft64(h, 27)*prime1 + prime4
	h ^= bits.RotateLeft64(w5*prime2, 31) * prime1
	h = bits.RotateLeft64(h, 27)*prime1 + prime4
	h ^= h >> 33
	h *= prime2
	h ^= h >> 29
	h *= prime3
	return h ^ h>>32
}

// sum64v6 is sum64Words for the ten IPv6 words of a packet without a
// fragment header (word 5 zero), taken in registers: w0..w4 are layout
// words 0-4, l0..l3 the L4 window (words 6-9).
func sum64v6(w0, w1, w2, w3, w4, l0, l1, l2, l3 uint64) uint64 {
	v1 := bits.RotateLeft64(6983438078262162902+w0*prime2, 31) * prime1
	v1 = bits.RotateLeft64(v1+w4*prime2, 31) * prime1
	v2 := bits.RotateLeft64(prime2+w1*prime2, 31) * prime1
	v2 = bits.RotateLeft64(v2, 31) * prime1 // word 5 is zero
	v3 := bits.RotateLeft64(w2*prime2, 31) * prime1
	v3 = bits.RotateLeft64(v3+l0*prime2, 31) * prime1
	v4 := bits.RotateLeft64(7046029288634856825+w3*prime2, 31) * prime1
	v4 = bits.RotateLeft64(v4+l1*prime2, 31) * prime1
	h := bits.RotateLeft64(v1, 1) + bits.RotateLeft64(v2, 7) + bits.RotateLeft64(v3, 12) + bits.RotateLeft64(v4, 18)
	h = (h^bits.RotateLeft64(v1*prime2, 31)*prime1)*prime1 + prime4
	h = (h^bits.RotateLeft64(v2*prime2, 31)*prime1)*prime1 + prime4
	h = (h^bits.RotateLeft64(v3*prime2, 31)*prime1)*prime1 + prime4
	h = (h^bits.RotateLeft64(v4*prime2, 31)*prime1)*prime1 + prime4
	h += v6Words * 8
	h ^= bits.RotateLeft64(l2*prime2, 31) * prime1
	h = bits.RotateLeft64(h, 27)*prime1 + prime4
	h ^= bits.RotateLeft64(l3*prime2, 31) * prime1
	h = bits.RotateLeft64(h, 27)*prime1 + prime4
	h ^= h >> 33
	h *= prime2
	h ^= h >> 29
	h *= prime3
	return h ^ h>>32
}

// sum64v8 is sum64Words for the eight words of the raw (non-IP) layout,
// taken in registers.
func sum64v8(w0, w1, w2, w3, w4, w5, w6, w7 uint64) uint64 {
	v1 := bits.RotateLeft64(6983438078262162902+w0*prime2, 31) * prime1
	v1 = bits.RotateLeft64(v1+w4*prime2, 31) * prime1
	v2 := bits.RotateLeft64(prime2+w1*prime2, 31) * prime1
	v2 = bits.RotateLeft64(v2+w5*prime2, 31) * prime1
	v3 := bits.RotateLeft64(w2*prime2, 31) * prime1
	v3 = bits.RotateLeft64(v3+w6*prime2, 31) * prime1
	v4 := bits.RotateLeft64(7046029288634856825+w3*prime2, 31) * prime1
	v4 = bits.RotateLeft64(v4+w7*prime2, 31) * prime1
	h := bits.RotateLeft64(v1, 1) + bits.RotateLeft64(v2, 7) + bits.RotateLeft64(v3, 12) + bits.RotateLeft64(v4, 18)
	h = (h^bits.RotateLeft64(v1*prime2, 31)*prime1)*prime1 + prime4
	h = (h^bits.RotateLeft64(v2*prime2, 31)*prime1)*prime1 + prime4
	h = (h^bits.RotateLeft64(v3*prime2, 31)*prime1)*prime1 + prime4
	h = (h^bits.RotateLeft64(v4*prime2, 31)*prime1)*prime1 + prime4
	h += nonIPWords * 8
	h ^= h >> 33
	h *= prime2
	h ^= h >> 29
	h *= prime3
	return h ^ h>>32
}

func round(acc, input uint64) uint64 {
	acc += input * prime2
	acc = bits.RotateLeft64(acc, 31)
	return acc * prime1
}

func mergeRound(acc, val uint64) uint64 {
	val = round(0, val)
	acc ^= val
	return acc*prime1 + prime4
}

// Keys of the flow hash (arbitrary odd 64-bit constants).
const (
	fk0 = 0xa0761d6478bd642f
	fk1 = 0xe7037ed1a0b428db
	fk2 = 0x8ebc6af09c88c6e3
	fk3 = 0x589965cc75374cc3
	fk4 = 0x1d8e4e27c47d124f
)

// Hash is the flow hash Parse stores in Meta.FlowHash for this key, for
// components that hold FlowKeys and need to find the flow's hash again.
func (k *FlowKey) Hash() uint64 { return flowHash(k) }

// flowHash hashes the 5-tuple with wyhash-style multiply-fold rounds on
// 64-bit words: no gathering, one 128-bit multiply for an IPv4 key and
// three for IPv6, a fraction of the cost of xxhash over the 37 key bytes.
// It is a pure function of the key (so any component can recompute it
// from a FlowKey) but is not meant to resist an adversary choosing flows.
func flowHash(k *FlowKey) uint64 {
	e := uint64(k.SrcPort)<<48 | uint64(k.DstPort)<<32 | uint64(k.Proto)<<8
	var h uint64
	if !k.IPv6 {
		// IPv4-mapped: only bytes 12-15 of each address vary.
		a := uint64(binary.LittleEndian.Uint32(k.Src[12:]))<<32 | uint64(binary.LittleEndian.Uint32(k.Dst[12:]))
		h = mum(a^fk0, e^fk1)
	} else {
		e |= 1
		a := binary.LittleEndian.Uint64(k.Src[0:])
		b := binary.LittleEndian.Uint64(k.Src[8:])
		c := binary.LittleEndian.Uint64(k.Dst[0:])
		d := binary.LittleEndian.Uint64(k.Dst[8:])
		h = mum(a^fk0, b^fk1)
		h = mum(h^c^fk2, d^fk3)
		h = mum(h^e^fk4, fk1)
	}
	return h ^ h>>29
}

func mum(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	return hi ^ lo
}

// ParseFastOnly is ParseLevel's fast paths alone (the IP one and the
// untagged non-IP one): it reports whether they took frame, having filled
// m as ParseLevel would at level; for every other frame (the general
// path's) it reports false and writes nothing. For tests of other
// implementations of the fast path (package dpdk's, in C), which must
// take exactly the frames it takes and hash them alike.
func ParseFastOnly(frame []byte, m *Meta, level Level) bool {
	return parseFast(frame, m, level, false)
}
