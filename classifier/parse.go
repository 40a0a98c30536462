package classifier

import (
	"encoding/binary"
	"math/bits"

	"github.com/cespare/xxhash/v2"
)

// Bounds that keep Parse O(1) on forged frames.
const (
	maxVLANTags   = 8  // 802.1Q/802.1ad/QinQ tags skipped before giving up
	maxExtHeaders = 8  // IPv6 extension headers skipped before giving up
	l4Window      = 32 // bytes of L4 header (+ payload) in the identity, bytes
	identSize     = 80 // size of the stack array the invariant bytes are gathered in
)

// Layout of the invariant bytes gathered for the identity hash. Both ends
// of a segment must gather exactly the same bytes, so this layout is part
// of the wire contract between two ldafwd versions: change it and two
// appliances of different versions no longer agree on packet identities.
//
//	IPv4 (48 bytes hashed):
//	  [0]      tagIPv4
//	  [1:9]    source, destination address
//	  [9]      protocol
//	  [10:12]  total length
//	  [12:16]  identification, flags + fragment offset
//	  [16:48]  L4 window
//	IPv6 (80 bytes hashed):
//	  [0]      tagIPv6
//	  [1:33]   source, destination address
//	  [33]     next header after the extension headers (the L4 protocol)
//	  [34:36]  payload length
//	  [36:39]  flow label (20 bits)
//	  [40:46]  fragment header: offset + M flag, identification (0 if none)
//	  [48:80]  L4 window
//	non-IP (64 bytes hashed):
//	  [0]      tagNonIP
//	  [1:3]    EtherType after the VLAN tags
//	  [3:64]   the bytes after the L2 header, zero-filled
//
// The L4 window is the first l4Window bytes after the IP header and its
// extension headers, bounded by the IP length fields (never by the frame,
// so Ethernet padding does not count), with the L4 checksum zeroed (TCP
// 16-17, UDP/UDP-Lite 6-7, ICMP/ICMPv6 2-3, SCTP 8-11; NAT and checksum
// offload may rewrite it). For a TCP SYN the window stops after the 20-byte
// fixed header: middleboxes clamp the MSS option of SYNs. Non-first
// fragments have no L4 header; their window is the first payload bytes.
const (
	tagNonIP = 0
	tagIPv4  = 4
	tagIPv6  = 6

	v4L4At  = 16
	v4Len   = v4L4At + l4Window
	v6L4At  = 48
	v6Len   = v6L4At + l4Window
	rawAt   = 3
	nonIPLn = 64
)

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
// bytes (DESIGN §2), the flow key and its hash, VLAN id, DSCP, protocol,
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
// clear so port rules never match them. Non-first fragments have ports 0.
func Parse(frame []byte, m *Meta) {
	*m = Meta{Len: uint32(len(frame))}
	var id [identSize]byte

	if len(frame) < 14 {
		// Not even an Ethernet header: hash what follows the MAC
		// addresses, if anything.
		m.Flags = FlagTruncated | FlagNonIP
		if len(frame) > 12 {
			copy(id[rawAt:nonIPLn], frame[12:])
		}
		m.Hash = xxhash.Sum64(id[:nonIPLn])
		return
	}

	off := 12
	et := binary.BigEndian.Uint16(frame[12:])
	for tags := 0; et == tpid8021Q || et == tpid8021AD || et == tpidQinQ; tags++ {
		if tags == maxVLANTags {
			m.Flags |= FlagMalformed
			break
		}
		if off+6 > len(frame) {
			m.Flags |= FlagTruncated
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
	switch {
	case m.Flags&(FlagTruncated|FlagMalformed) != 0:
		n = gatherRaw(l3, et, m, &id)
	case et == etherTypeIPv4:
		n = parseIPv4(l3, m, &id)
	case et == etherTypeIPv6:
		n = parseIPv6(l3, m, &id)
	default:
		if et == ControlEtherType {
			m.Flags |= FlagControl
		}
		if et <= 1500 && int(et) < len(l3) {
			// IEEE 802.3 length field: the rest is padding.
			l3 = l3[:et]
		}
		n = gatherRaw(l3, et, m, &id)
	}
	m.Hash = xxhash.Sum64(id[:n])
	if m.Flags&(FlagIPv4|FlagIPv6) != 0 {
		m.FlowHash = flowHash(&m.Flow)
	}
}

// gatherRaw is the identity of a frame that is not IP (or whose L2 header
// could not be walked): the EtherType and the first bytes after L2.
func gatherRaw(b []byte, et uint16, m *Meta, id *[identSize]byte) int {
	m.Flags |= FlagNonIP
	id[0] = tagNonIP
	id[1] = byte(et >> 8)
	id[2] = byte(et)
	copy(id[rawAt:nonIPLn], b)
	return nonIPLn
}

// parseIPv4 gathers an IPv4 packet's invariant bytes; b starts at the IP
// header and runs to the end of the frame.
func parseIPv4(b []byte, m *Meta, id *[identSize]byte) int {
	id[0] = tagIPv4
	if len(b) < 20 {
		// Truncated header: the invariant fields that are present,
		// zero for the rest. No flow key.
		var pad [20]byte
		copy(pad[:], b)
		gatherIPv4Header(pad[:], id)
		m.Flags |= FlagTruncated
		return v4Len
	}
	h := b[:20]
	gatherIPv4Header(h, id)
	m.Flags |= FlagIPv4
	if h[0]>>4 != 4 {
		m.Flags |= FlagMalformed
	}
	m.DSCP = h[1] >> 2
	proto := h[9]
	m.Proto = proto
	m.Flow.Proto = proto
	m.Flow.Src[10], m.Flow.Src[11] = 0xff, 0xff
	m.Flow.Dst[10], m.Flow.Dst[11] = 0xff, 0xff
	copy(m.Flow.Src[12:], h[12:16])
	copy(m.Flow.Dst[12:], h[16:20])

	ihl := int(h[0]&0x0f) * 4
	total := int(binary.BigEndian.Uint16(h[2:]))
	if ihl < 20 || total < ihl {
		m.Flags |= FlagMalformed
		return v4Len
	}
	end := total
	if end > len(b) {
		m.Flags |= FlagTruncated
		end = len(b)
	}
	if ihl > end {
		// Options cut off by the end of the frame.
		return v4Len
	}
	frag := binary.BigEndian.Uint16(h[6:]) & 0x3fff
	if frag != 0 {
		m.Flags |= FlagFragment
	}
	if frag&0x1fff != 0 {
		// Not the first fragment: no L4 header in it.
		copy(id[v4L4At:v4Len], b[ihl:end])
		return v4Len
	}
	gatherL4(proto, b[ihl:end], (*[l4Window]byte)(id[v4L4At:v4Len]), m)
	return v4Len
}

// gatherIPv4Header copies the invariant fields of a 20-byte IPv4 header:
// never TOS (DSCP/ECN), TTL or header checksum.
func gatherIPv4Header(h []byte, id *[identSize]byte) {
	_ = h[19]
	copy(id[1:9], h[12:20]) // source, destination
	id[9] = h[9]            // protocol
	copy(id[10:16], h[2:8]) // total length, identification, flags+fragment offset
}

// parseIPv6 gathers an IPv6 packet's invariant bytes; b starts at the IP
// header and runs to the end of the frame.
func parseIPv6(b []byte, m *Meta, id *[identSize]byte) int {
	id[0] = tagIPv6
	if len(b) < 40 {
		var pad [40]byte
		copy(pad[:], b)
		gatherIPv6Header(pad[:], id)
		m.Flags |= FlagTruncated
		return v6Len
	}
	h := b[:40]
	gatherIPv6Header(h, id)
	m.Flags |= FlagIPv6
	if h[0]>>4 != 6 {
		m.Flags |= FlagMalformed
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
		m.Flags |= FlagTruncated
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
			copy(id[40:46], b[off+2:off+8])
			fo := binary.BigEndian.Uint16(b[off+2:])
			if fo&0xfff9 != 0 { // offset or M flag
				m.Flags |= FlagFragment
			}
			if fo&0xfff8 != 0 {
				first = false
			}
		default:
			goto stop
		}
		if off+hl > declared {
			m.Flags |= FlagMalformed
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
	m.Flags |= FlagMalformed
stop:
	id[33] = nh
	m.Proto = nh
	m.Flow.Proto = nh
	if off > end {
		return v6Len
	}
	if !first {
		copy(id[v6L4At:v6Len], b[off:end])
		return v6Len
	}
	if isExtHeader(nh) {
		// The chain was cut off or abandoned: no L4 header.
		if m.Flags&(FlagTruncated|FlagMalformed) == 0 {
			m.Flags |= FlagMalformed
		}
		return v6Len
	}
	gatherL4(nh, b[off:end], (*[l4Window]byte)(id[v6L4At:v6Len]), m)
	return v6Len
}

func isExtHeader(nh uint8) bool {
	switch nh {
	case 0, 43, 44, 51, 60, 135, 139, 140:
		return true
	}
	return false
}

// gatherIPv6Header copies the invariant fields of a 40-byte IPv6 header:
// never traffic class or hop limit.
func gatherIPv6Header(h []byte, id *[identSize]byte) {
	_ = h[39]
	copy(id[1:33], h[8:40]) // source, destination
	id[33] = h[6]           // next header (overwritten after the extension headers)
	copy(id[34:36], h[4:6]) // payload length
	id[36] = h[1] & 0x0f    // flow label, high 4 bits
	copy(id[37:39], h[2:4]) // flow label, low 16 bits
}

// gatherL4 copies the L4 window (l4 is bounded by the IP length) with the
// checksum zeroed and fills the flow key's ports.
func gatherL4(proto uint8, l4 []byte, w *[l4Window]byte, m *Meta) {
	n := copy(w[:], l4)
	switch proto {
	case protoTCP:
		if n > 20 && l4[13]&0x02 != 0 {
			// SYN: the options (MSS) may be clamped on the way.
			clear(w[20:n])
			n = 20
		}
		zeroAt(w, 16, 2, n)
	case protoUDP, protoUDPLite:
		zeroAt(w, 6, 2, n)
	case protoSCTP:
		zeroAt(w, 8, 4, n)
	case protoICMP, protoICMPv6:
		zeroAt(w, 2, 2, n)
		if n >= 2 {
			m.Flow.SrcPort = uint16(l4[0]) // type
			m.Flow.DstPort = uint16(l4[1]) // code
		}
		return
	default:
		return
	}
	if n >= 4 {
		m.Flags |= FlagPorts
		m.Flow.SrcPort = binary.BigEndian.Uint16(l4[0:])
		m.Flow.DstPort = binary.BigEndian.Uint16(l4[2:])
	}
}

// zeroAt clears w[at:at+k] where it lies inside the first n bytes.
func zeroAt(w *[l4Window]byte, at, k, n int) {
	for i := at; i < at+k && i < n; i++ {
		w[i] = 0
	}
}

// Keys of the flow hash (arbitrary odd 64-bit constants).
const (
	fk0 = 0xa0761d6478bd642f
	fk1 = 0xe7037ed1a0b428db
	fk2 = 0x8ebc6af09c88c6e3
	fk3 = 0x589965cc75374cc3
	fk4 = 0x1d8e4e27c47d124f
)

// flowHash hashes the 5-tuple with wyhash-style multiply-fold rounds: five
// 64-bit words, no gathering, about a third of the cost of xxhash over the
// 37 key bytes. It is not meant to resist an adversary choosing flows.
func flowHash(k *FlowKey) uint64 {
	a := binary.LittleEndian.Uint64(k.Src[0:])
	b := binary.LittleEndian.Uint64(k.Src[8:])
	c := binary.LittleEndian.Uint64(k.Dst[0:])
	d := binary.LittleEndian.Uint64(k.Dst[8:])
	e := uint64(k.SrcPort)<<48 | uint64(k.DstPort)<<32 | uint64(k.Proto)<<8
	if k.IPv6 {
		e |= 1
	}
	h := mum(a^fk0, b^fk1)
	h = mum(h^c^fk2, d^fk3)
	h = mum(h^e^fk4, fk1)
	return h ^ h>>29
}

func mum(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	return hi ^ lo
}
