package classifier

import (
	"net/netip"
	"strconv"
)

// Flag bits in Meta.Flags describe what Parse found in a frame.
const (
	FlagIPv4      uint16 = 1 << iota // an IPv4 header was parsed
	FlagIPv6                         // an IPv6 header was parsed
	FlagPorts                        // Flow.SrcPort/DstPort are valid (TCP, UDP, SCTP, UDP-Lite)
	FlagFragment                     // IP fragment (not the first, or more-fragments set)
	FlagTruncated                    // the frame ended before a header it announced
	FlagMalformed                    // a header field was impossible (bad IHL, bad length…)
	FlagNonIP                        // not IPv4/IPv6: identity hashes the bytes after L2
	FlagControl                      // EtherType 0x88B5: an ldafwd control frame
	FlagLinkLocal                    // link-local: originated or consumed by the segment's own devices (linklocal.go); not measured by default
)

// ControlEtherType is the EtherType of ldafwd control frames (IEEE 802
// local experimental EtherType 1): docs/protocol.md.
const ControlEtherType = 0x88B5

// FlowKey is the 5-tuple that names a flow. IPv4 addresses are
// stored as IPv4-mapped IPv6 addresses in the 16-byte arrays.
type FlowKey struct {
	Src, Dst         [16]byte
	SrcPort, DstPort uint16
	Proto            uint8
	IPv6             bool
}

// String renders the key as the reports write it (docs/reports.md): "proto src:port>dst:port",
// IPv6 addresses in brackets. It allocates; never call it on the hot path.
func (k FlowKey) String() string {
	return strconv.Itoa(int(k.Proto)) + " " + k.hostPort(k.Src, k.SrcPort) + ">" + k.hostPort(k.Dst, k.DstPort)
}

func (k FlowKey) hostPort(a [16]byte, p uint16) string {
	addr := netip.AddrFrom16(a)
	if !k.IPv6 {
		addr = addr.Unmap()
		return addr.String() + ":" + strconv.Itoa(int(p))
	}
	return "[" + addr.String() + "]:" + strconv.Itoa(int(p))
}

// Meta is what Parse extracts from one frame, once, for every synopsis and
// the MEC classifier. It is plain data so a worker can keep a preallocated
// array of them per burst.
type Meta struct {
	Hash      uint64  // packet identity over invariant bytes (parse.go)
	FlowHash  uint64  // hash of Flow; 0 for non-IP frames
	Flow      FlowKey // valid when FlagIPv4 or FlagIPv6 is set
	VLAN      uint16  // outermost VLAN id, 0 when untagged
	EtherType uint16  // EtherType after all VLAN tags
	DSCP      uint8
	Proto     uint8 // IP protocol / IPv6 next header after extension headers
	Flags     uint16
	Len       uint32 // frame length in bytes
}

// IdentityRevision names the packet identity's layout (which bytes Meta.Hash
// covers): 2 reads through GRE, VXLAN, Geneve and MPLS to the inner packet
// (tunnel.go); 1 stopped at the outer header. It changes whenever Hash of
// any frame would.
const IdentityRevision = 2
