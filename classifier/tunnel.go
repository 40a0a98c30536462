package classifier

import "encoding/binary"

// Tunnels. A tunnel endpoint often writes a constant outer IPv4
// identification (0 is common) and the outer L4 window of a VXLAN or
// Geneve packet ends inside the inner Ethernet header, so the outer
// identity alone gives every packet of an inner flow of one length the
// same hash: an LDA bucket and the RDA then count them as one multiset and
// analyze pairs them first in first out, whatever their real order. Parse
// therefore reads through one level of GRE, VXLAN, Geneve or MPLS to the
// inner IPv4/IPv6 packet and hashes its identity (the plain-packet layout
// of parse.go, inner IP ID, flow label, L4 window and all) together with
// the outer one:
//
//	tunnel (6 words, 48 bytes):
//	  [0]      tagTunnel
//	  [1]      encapsulation: encGRE, encVXLAN, encGeneve, encMPLS
//	  [8:16]   the outer identity, as for a plain packet (MPLS: 0)
//	  [16:24]  the inner packet's identity, as for a plain packet
//	  [24:48]  zero
//
// MPLS leaves out the outer part: the label stack is all there is before
// the inner packet, and label-switching routers swap labels and decrement
// the MPLS TTL, so none of it is invariant. The inner packet's own TTL,
// header checksum and traffic class are left out as in any packet; its
// MAC addresses and VLAN tags (VXLAN, Geneve, GRE carrying Ethernet) too.
//
// Reading through is bounded and never trusts a length it has not checked
// against the bytes the outer packet holds: a tunnel header that is cut
// off, has reserved bits or a version set, an unknown payload type, more
// than maxMPLSLabels labels, or an inner header that is not a whole IPv4
// or IPv6 header (or is malformed) leaves the frame with its outer
// identity, as before. Only the first fragment of an outer packet has a
// tunnel header; later fragments keep their outer identity. A tunnel
// inside the tunnel is not followed (one level). The flow key, flags and
// class stay the outer packet's: only Meta.Hash changes.
//
// The fast paths (parseFast, parseRaw) decline UDP to the VXLAN and
// Geneve ports and the MPLS EtherTypes, so every tunneled frame takes the
// general path; GRE is an IP protocol they never took. The DPDK C loop
// repeats this walk and hash (ldaf_tunnel, dpdk/measure.h): a change here
// is a change there, which package dpdk's FuzzIdentC and TestIdentCGolden
// (on testdata/identity.golden) catch.
const (
	tagTunnel = 7

	encGRE    = 1
	encVXLAN  = 2
	encGeneve = 3
	encMPLS   = 4

	protoGRE = 47

	portVXLAN  = 4789
	portGeneve = 6081

	etherTypeMPLS      = 0x8847
	etherTypeMPLSMulti = 0x8848
	etherTypeTEB       = 0x6558 // transparent Ethernet bridging: an Ethernet frame

	maxMPLSLabels = 8
)

// Little-endian 16-bit views of the VXLAN and Geneve ports as the fast
// paths' L4 word holds a big-endian destination port.
const (
	portVXLANLE  = portVXLAN>>8 | portVXLAN&0xff<<8
	portGeneveLE = portGeneve>>8 | portGeneve&0xff<<8
)

// tunnelPort reports whether a UDP destination port is one Parse reads
// through.
func tunnelPort(p uint16) bool { return p == portVXLAN || p == portGeneve }

// InnerL3 finds the encapsulated packet Parse reads through in an IP
// packet's L4 bytes (proto the IP protocol, l4 bounded by the IP length)
// or, for an MPLS EtherType et, in the bytes after the L2 header (l4 then
// the label stack; proto unused). It returns the encapsulation (0: none),
// the offset of the inner IP header in l4 and its EtherType. cut is true
// when the bytes end inside a header that would have told: the frame was
// cut (a capture's snap length) before the inner packet's position was
// known, so whether another copy of it reads through cannot be told from
// this one.
func InnerL3(et uint16, proto uint8, l4 []byte) (enc uint8, off int, innerET uint16, cut bool) {
	if et == etherTypeMPLS || et == etherTypeMPLSMulti {
		return mplsInner(l4)
	}
	if et != etherTypeIPv4 && et != etherTypeIPv6 {
		return 0, 0, 0, false
	}
	switch proto {
	case protoGRE:
		return greInner(l4)
	case protoUDP:
		if len(l4) < 4 {
			return 0, 0, 0, len(l4) < 4
		}
		dport := binary.BigEndian.Uint16(l4[2:])
		if !tunnelPort(dport) {
			return 0, 0, 0, false
		}
		if len(l4) < 8 {
			return 0, 0, 0, true
		}
		if ul := int(binary.BigEndian.Uint16(l4[4:])); ul >= 8 && ul < len(l4) {
			l4 = l4[:ul] // the UDP length bounds the tunnel too
		} else if ul < 8 {
			return 0, 0, 0, false
		}
		if dport == portVXLAN {
			return vxlanInner(l4)
		}
		return geneveInner(l4)
	}
	return 0, 0, 0, false
}

// greInner: RFC 2784/2890 GRE, version 0, with optional checksum, key and
// sequence number; no routing (the R bit, long deprecated) and no
// reserved bits.
func greInner(b []byte) (uint8, int, uint16, bool) {
	if len(b) < 4 {
		return 0, 0, 0, true
	}
	fl := binary.BigEndian.Uint16(b[0:])
	if fl&0x4fff != 0 {
		return 0, 0, 0, false
	}
	hl := 4
	for _, bit := range [3]uint16{0x8000, 0x2000, 0x1000} { // C, K, S
		if fl&bit != 0 {
			hl += 4
		}
	}
	if len(b) < hl {
		return 0, 0, 0, true
	}
	return payloadInner(encGRE, b, hl, binary.BigEndian.Uint16(b[2:]))
}

// vxlanInner: RFC 7348, an 8-byte header after UDP with the I flag (a
// valid VNI) set, then an Ethernet frame.
func vxlanInner(b []byte) (uint8, int, uint16, bool) {
	if len(b) < 16 {
		return 0, 0, 0, true
	}
	if b[8]&0x08 == 0 {
		return 0, 0, 0, false
	}
	return payloadInner(encVXLAN, b, 16, etherTypeTEB)
}

// geneveInner: RFC 8926, version 0, 8 bytes plus the options after UDP,
// carrying Ethernet, IPv4 or IPv6.
func geneveInner(b []byte) (uint8, int, uint16, bool) {
	if len(b) < 16 {
		return 0, 0, 0, true
	}
	if b[8]>>6 != 0 {
		return 0, 0, 0, false
	}
	hl := 16 + int(b[8]&0x3f)*4
	if len(b) < hl {
		return 0, 0, 0, true
	}
	return payloadInner(encGeneve, b, hl, binary.BigEndian.Uint16(b[10:]))
}

// mplsInner: up to maxMPLSLabels labels to the bottom of the stack, then
// IPv4 or IPv6 by the first nibble (RFC 3032 carries no payload type; a
// pseudowire's control word or Ethernet starts otherwise and is left
// alone).
func mplsInner(b []byte) (uint8, int, uint16, bool) {
	off := 0
	for n := 0; ; n++ {
		if n == maxMPLSLabels {
			return 0, 0, 0, false
		}
		if off+4 > len(b) {
			return 0, 0, 0, true
		}
		bos := b[off+2]&1 != 0
		off += 4
		if bos {
			break
		}
	}
	if off >= len(b) {
		return 0, 0, 0, true
	}
	switch b[off] >> 4 {
	case 4:
		return encMPLS, off, etherTypeIPv4, false
	case 6:
		return encMPLS, off, etherTypeIPv6, false
	}
	return 0, 0, 0, false
}

// payloadInner is the inner IP header's position for a tunnel payload of
// type pt at b[hl:]: IPv4 or IPv6 directly, or behind an Ethernet header
// and up to maxVLANTags tags.
func payloadInner(enc uint8, b []byte, hl int, pt uint16) (uint8, int, uint16, bool) {
	switch pt {
	case etherTypeIPv4, etherTypeIPv6:
		if hl >= len(b) {
			return 0, 0, 0, true
		}
		return enc, hl, pt, false
	case etherTypeTEB:
	default:
		return 0, 0, 0, false
	}
	off := hl + 12
	for tags := 0; ; tags++ {
		if off+2 >= len(b) { // nothing after the EtherType either
			return 0, 0, 0, true
		}
		et := binary.BigEndian.Uint16(b[off:])
		switch et {
		case etherTypeIPv4, etherTypeIPv6:
			return enc, off + 2, et, false
		case tpid8021Q, tpid8021AD, tpidQinQ:
			if tags == maxVLANTags {
				return 0, 0, 0, false
			}
			off += 4
		default:
			return 0, 0, 0, false
		}
	}
}

// tunnelHash is the identity of a frame whose outer packet (EtherType et,
// IP protocol proto, L4 bytes l4, outer identity outer) carries a tunnel
// Parse reads through (the layout above); ok is false, and the outer
// identity stays, for every other frame.
func tunnelHash(et uint16, proto uint8, l4 []byte, outer uint64) (uint64, bool) {
	enc, off, iet, _ := InnerL3(et, proto, l4)
	if enc == 0 {
		return 0, false
	}
	inner := l4[off:]
	var id ident
	var m Meta // scratch: the inner flow key is not kept
	var f uint16
	n := v4Words
	switch {
	case iet == etherTypeIPv4 && len(inner) >= 20 && inner[0]>>4 == 4:
		f, _ = parseIPv4(inner, &m, &id)
	case iet == etherTypeIPv6 && len(inner) >= 40 && inner[0]>>4 == 6:
		f, _ = parseIPv6(inner, &m, &id)
		n = v6Words
	default:
		return 0, false
	}
	if f&FlagMalformed != 0 {
		return 0, false
	}
	if enc == encMPLS {
		outer = 0
	}
	return sum64v4(tagTunnel|uint64(enc)<<8, outer, sum64Words(&id, n), 0, 0, 0), true
}

// InnerAt is where, in frame, the inner IP header starts that Parse reads
// through (tunnel.go), with its EtherType; at is 0 when Parse keeps the
// frame's outer identity. cut is true when the frame ends (shorter than
// its IP length says, or an MPLS frame, which has no length) inside a
// header that would have told: a capture that kept more of the same
// packet could read through where this copy could not. For offline
// consumers (analyze's snap-length rule); not for the hot path.
func InnerAt(frame []byte) (at int, et uint16, cut bool) {
	if len(frame) < 14 {
		return 0, 0, false
	}
	off := 12
	et = binary.BigEndian.Uint16(frame[12:])
	for tags := 0; et == tpid8021Q || et == tpid8021AD || et == tpidQinQ; tags++ {
		if tags == maxVLANTags || off+6 > len(frame) {
			return 0, 0, false
		}
		et = binary.BigEndian.Uint16(frame[off+4:])
		off += 4
	}
	l3 := frame[off+2:]
	var m Meta
	var id ident
	var f uint16
	var l4 []byte
	switch et {
	case etherTypeIPv4:
		f, l4 = parseIPv4(l3, &m, &id)
	case etherTypeIPv6:
		f, l4 = parseIPv6(l3, &m, &id)
	case etherTypeMPLS, etherTypeMPLSMulti:
		l4, f = l3, FlagTruncated
	default:
		return 0, 0, false
	}
	if l4 == nil || f&FlagMalformed != 0 {
		return 0, 0, false
	}
	enc, o, iet, c := InnerL3(et, m.Proto, l4)
	if c {
		return 0, 0, f&FlagTruncated != 0
	}
	if enc == 0 {
		return 0, 0, false
	}
	return cap(frame) - cap(l4) + o, iet, false
}
