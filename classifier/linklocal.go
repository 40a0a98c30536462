package classifier

import (
	"encoding/binary"
	"math/bits"
)

// Link-local frames are the ones a measured segment's own devices
// originate or consume: a switch sends and eats STP BPDUs, LLDP and LACP,
// a router answers ARP and speaks OSPF to 224.0.0.5. Measured, they break
// the measurement of the user's traffic: a BPDU the segment injects toward
// the receiver is a packet the sender never recorded (the interval goes
// invalid), an ARP request the segment's router answers instead of
// forwarding reads as a loss. Parse marks them FlagLinkLocal and
// Classifier.Measure leaves them out unless a rule with linklocal:yes
// claims them. The list (docs/mec.md keeps the same one):
//
//	destination MAC 01:80:C2:00:00:00-0F  IEEE 802.1 reserved: STP/RSTP/MSTP, PAUSE/PFC,
//	                                      LACP/marker/OAM, 802.1X, LLDP, PTP peer delay;
//	                                      no 802.1D bridge forwards them
//	destination MAC 01:00:0C:CC:CC:CC/CD  Cisco CDP, VTP, DTP, PAgP, UDLD; PVST+ BPDUs
//	EtherType 0x0806 ARP                  a router in the segment answers and originates
//	                                      ARP on its own interfaces, never forwards it
//	EtherType 0x8808 MAC control          PAUSE/PFC, consumed by the next port
//	EtherType 0x8809 slow protocols       LACP, marker, EFM OAM
//	EtherType 0x888E EAPOL                802.1X, between a port and its authenticator
//	EtherType 0x88CC LLDP                 any destination (some devices send LLDP to
//	                                      01:80:C2:00:00:03 or :00)
//	IPv4 to 224.0.0.0/24 (group MAC)      local network control block: OSPF, VRRP,
//	                                      RIPv2, PIM, HSRP, IGMPv3 reports, mDNS;
//	                                      never routed (RFC 5771)
//	IPv4 to 255.255.255.255 (group MAC)   limited broadcast (DHCP): never routed, a
//	                                      DHCP relay in the segment consumes it
//	IPv4 protocol 2 (IGMP)                any destination: snooping switches and
//	                                      multicast routers consume reports and
//	                                      originate queries
//	IPv6 to ffX2::/16 (group MAC)         link-local scope multicast (ff02::1, ff02::2,
//	                                      solicited-node, OSPFv3, DHCPv6, mDNS, MLDv2
//	                                      reports); never routed
//	ICMPv6 types 130-137, 141-143,        MLD and NDP (RS, RA, NS, NA, redirect), inverse
//	148-149, 151-153                      ND, SEND, multicast router discovery: also
//	                                      when unicast (a router's own NUD probes)
//
// Left measured on purpose: link-local unicast (169.254.0.0/16, fe80::/10)
// and ordinary multicast. Between two hosts across a bridged segment they
// are the user's traffic; a router in the segment that receives them is
// their destination, as it would be for any unicast addressed to it.

// macLinkLocal reports whether a frame's destination MAC (the first 6
// bytes; len(frame) ≥ 6) is an IEEE 802.1 reserved address or one of
// Cisco's two link-local multicast addresses.
func macLinkLocal(frame []byte) bool {
	d := uint64(binary.BigEndian.Uint32(frame))<<16 | uint64(binary.BigEndian.Uint16(frame[4:]))
	return d&^0xf == 0x0180C2000000 || d&^1 == 0x01000CCCCCCC
}

// The destination tests run only for a frame sent to a group MAC (I/G bit
// set): every link-local destination above is multicast or broadcast, and
// IP multicast and broadcast always go to group MACs (RFC 1112, RFC 2464),
// so the common unicast frame pays one byte test. The protocol tests
// (IGMP, ICMPv6 types) run on every frame the general path parses: NDP
// probes a router's unicast address too.

// groupV4 is the fast path's test of an untagged IPv4 frame to a group
// MAC; dst is the destination address as loaded little-endian. Not
// inlined: it keeps the unicast path's registers free.
//
//go:noinline
func groupV4(frame []byte, dst uint32) uint16 {
	if macLinkLocal(frame) || linkLocalV4(bits.ReverseBytes32(dst)) {
		return FlagLinkLocal
	}
	return 0
}

// groupV6 is groupV4 for IPv6; first is the destination's first two bytes.
//
//go:noinline
func groupV6(frame []byte, first uint16) uint16 {
	if macLinkLocal(frame) || linkLocalV6(first) {
		return FlagLinkLocal
	}
	return 0
}

// linkLocalEtherType reports whether a non-IP EtherType is one a segment's
// devices speak among themselves.
func linkLocalEtherType(et uint16) bool {
	switch et {
	case 0x0806, 0x8808, 0x8809, 0x888E, 0x88CC:
		return true
	}
	return false
}

// linkLocalV4 reports whether an IPv4 destination (big-endian) is in
// 224.0.0.0/24 or the limited broadcast.
func linkLocalV4(dst uint32) bool {
	return dst>>8 == 0xE00000 || dst == 0xFFFFFFFF
}

// linkLocalV6 reports whether an IPv6 destination's first two bytes (big
// endian) are a multicast address of link-local scope, ffX2::.
func linkLocalV6(first uint16) bool {
	return first&0xFF0F == 0xFF02
}

// icmpv6LinkLocal has bit t-128 set for the ICMPv6 types that never
// leave a link: MLD (130-132, 143), NDP (133-137), inverse ND (141, 142),
// SEND (148, 149), multicast router discovery (151-153).
const icmpv6LinkLocal = 1<<(130-128) | 1<<(131-128) | 1<<(132-128) | 1<<(133-128) | 1<<(134-128) |
	1<<(135-128) | 1<<(136-128) | 1<<(137-128) | 1<<(141-128) | 1<<(142-128) | 1<<(143-128) |
	1<<(148-128) | 1<<(149-128) | 1<<(151-128) | 1<<(152-128) | 1<<(153-128)

func linkLocalICMPv6(typ uint16) bool {
	return typ >= 128 && typ < 160 && icmpv6LinkLocal&(1<<(typ-128)) != 0
}

// linkLocalGeneral is FlagLinkLocal for a frame parseGeneral filled m
// from (flags: what it found) by the MAC and IP destinations (group MACs
// only), IGMP, or the ICMPv6 type (m.Flow.SrcPort, 0 when the packet
// carried none). EtherTypes are tested where the general path sees them.
func linkLocalGeneral(frame []byte, m *Meta, flags uint16) uint16 {
	if len(frame) >= 6 && frame[0]&1 != 0 {
		if macLinkLocal(frame) ||
			flags&FlagIPv4 != 0 && linkLocalV4(binary.BigEndian.Uint32(m.Flow.Dst[12:])) ||
			flags&FlagIPv6 != 0 && linkLocalV6(binary.BigEndian.Uint16(m.Flow.Dst[0:])) {
			return FlagLinkLocal
		}
	}
	if flags&FlagIPv4 != 0 && m.Proto == 2 ||
		flags&FlagIPv6 != 0 && m.Proto == protoICMPv6 && linkLocalICMPv6(m.Flow.SrcPort) {
		return FlagLinkLocal
	}
	return 0
}
