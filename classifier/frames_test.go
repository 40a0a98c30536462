package classifier

import (
	"net"
	"testing"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
)

// pkt describes a test frame; frame() serializes it with gopacket so the
// tests never hand-assemble headers they then parse.
type pkt struct {
	v6      bool
	proto   layers.IPProtocol // TCP, UDP, ICMPv4/ICMPv6 or any other (raw payload)
	tags    []uint16          // VLAN ids, outermost first
	tpids   []layers.EthernetType
	mac     byte // last byte of both MAC addresses
	ttl     uint8
	tos     uint8 // DSCP<<2 | ECN (traffic class for IPv6)
	ipID    uint16
	flow    uint32 // IPv6 flow label
	src     net.IP
	dst     net.IP
	sport   uint16
	dport   uint16
	seq     uint32
	syn     bool
	mss     uint16 // TCP SYN MSS option
	payload []byte
	pad     int // trailing Ethernet padding bytes
	padByte byte
}

func (p pkt) frame(tb testing.TB) []byte {
	tb.Helper()
	ipType := layers.EthernetTypeIPv4
	if p.v6 {
		ipType = layers.EthernetTypeIPv6
	}
	eth := &layers.Ethernet{
		SrcMAC:       net.HardwareAddr{2, 0, 0, 0, 0, p.mac},
		DstMAC:       net.HardwareAddr{2, 0, 0, 0, 1, p.mac},
		EthernetType: ipType,
	}
	var ls []gopacket.SerializableLayer
	ls = append(ls, eth)
	next := &eth.EthernetType
	for i, vid := range p.tags {
		tpid := layers.EthernetTypeDot1Q
		if i < len(p.tpids) {
			tpid = p.tpids[i]
		}
		*next = tpid
		q := &layers.Dot1Q{VLANIdentifier: vid, Priority: uint8(i), Type: ipType}
		ls = append(ls, q)
		next = &q.Type
	}
	var nl gopacket.NetworkLayer
	ttl := p.ttl
	if ttl == 0 {
		ttl = 64
	}
	if p.v6 {
		src, dst := p.src, p.dst
		if src == nil {
			src = net.ParseIP("2001:db8::1")
		}
		if dst == nil {
			dst = net.ParseIP("2001:db8::2")
		}
		ip := &layers.IPv6{Version: 6, TrafficClass: p.tos, FlowLabel: p.flow, NextHeader: p.proto,
			HopLimit: ttl, SrcIP: src, DstIP: dst}
		ls = append(ls, ip)
		nl = ip
	} else {
		src, dst := p.src, p.dst
		if src == nil {
			src = net.IPv4(10, 0, 0, 1)
		}
		if dst == nil {
			dst = net.IPv4(10, 0, 0, 2)
		}
		ip := &layers.IPv4{Version: 4, IHL: 5, TOS: p.tos, Id: p.ipID, Flags: layers.IPv4DontFragment,
			TTL: ttl, Protocol: p.proto, SrcIP: src.To4(), DstIP: dst.To4()}
		ls = append(ls, ip)
		nl = ip
	}
	switch p.proto {
	case layers.IPProtocolTCP:
		tcp := &layers.TCP{SrcPort: layers.TCPPort(p.sport), DstPort: layers.TCPPort(p.dport),
			Seq: p.seq, Ack: 7, ACK: !p.syn, SYN: p.syn, Window: 512}
		if p.syn {
			mss := p.mss
			if mss == 0 {
				mss = 1460
			}
			tcp.Options = []layers.TCPOption{{OptionType: layers.TCPOptionKindMSS, OptionLength: 4,
				OptionData: []byte{byte(mss >> 8), byte(mss)}}}
		}
		if err := tcp.SetNetworkLayerForChecksum(nl); err != nil {
			tb.Fatal(err)
		}
		ls = append(ls, tcp)
	case layers.IPProtocolUDP:
		udp := &layers.UDP{SrcPort: layers.UDPPort(p.sport), DstPort: layers.UDPPort(p.dport)}
		if err := udp.SetNetworkLayerForChecksum(nl); err != nil {
			tb.Fatal(err)
		}
		ls = append(ls, udp)
	case layers.IPProtocolICMPv4:
		ls = append(ls, &layers.ICMPv4{TypeCode: layers.CreateICMPv4TypeCode(8, 0), Id: p.sport, Seq: p.dport})
	case layers.IPProtocolICMPv6:
		icmp := &layers.ICMPv6{TypeCode: layers.CreateICMPv6TypeCode(128, 0)}
		if err := icmp.SetNetworkLayerForChecksum(nl); err != nil {
			tb.Fatal(err)
		}
		ls = append(ls, icmp, &layers.ICMPv6Echo{Identifier: p.sport, SeqNumber: p.dport})
	}
	ls = append(ls, gopacket.Payload(p.payload))
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, ls...); err != nil {
		tb.Fatal(err)
	}
	out := append([]byte(nil), buf.Bytes()...)
	for i := 0; i < p.pad; i++ {
		out = append(out, p.padByte)
	}
	return out
}

// l3Off is where the IP header starts in p's frame.
func (p pkt) l3Off() int { return 14 + 4*len(p.tags) }

// l4Off is where the L4 header starts in p's frame (no options or
// extension headers in these frames).
func (p pkt) l4Off() int {
	if p.v6 {
		return p.l3Off() + 40
	}
	return p.l3Off() + 20
}

// basePkts are the frame kinds every identity test runs over.
func basePkts() map[string]pkt {
	pl := []byte("0123456789abcdefghijklmnopqrstuvwxyz")
	return map[string]pkt{
		"ipv4-tcp":     {proto: layers.IPProtocolTCP, ipID: 77, sport: 40000, dport: 443, seq: 1e6, payload: pl},
		"ipv4-tcp-ack": {proto: layers.IPProtocolTCP, ipID: 78, sport: 40000, dport: 443, seq: 1e6},
		"ipv4-syn":     {proto: layers.IPProtocolTCP, ipID: 79, sport: 40000, dport: 443, seq: 5, syn: true},
		"ipv4-udp":     {proto: layers.IPProtocolUDP, ipID: 80, sport: 5000, dport: 53, payload: pl[:20]},
		"ipv4-icmp":    {proto: layers.IPProtocolICMPv4, ipID: 81, sport: 9, dport: 1, payload: pl[:8]},
		"ipv4-gre":     {proto: layers.IPProtocolGRE, ipID: 82, payload: pl},
		"ipv6-tcp":     {v6: true, proto: layers.IPProtocolTCP, flow: 0x12345, sport: 40000, dport: 443, seq: 99, payload: pl},
		"ipv6-udp":     {v6: true, proto: layers.IPProtocolUDP, sport: 5000, dport: 53, payload: pl[:10]},
		"ipv6-icmpv6":  {v6: true, proto: layers.IPProtocolICMPv6, sport: 3, dport: 4, payload: pl[:4]},
		"ipv6-syn":     {v6: true, proto: layers.IPProtocolTCP, sport: 40001, dport: 443, seq: 5, syn: true},
	}
}

// l4ChecksumAt is the checksum offset inside the L4 header of p, -1 if none.
func (p pkt) l4ChecksumAt() int {
	switch p.proto {
	case layers.IPProtocolTCP:
		return 16
	case layers.IPProtocolUDP:
		return 6
	case layers.IPProtocolICMPv4, layers.IPProtocolICMPv6:
		return 2
	}
	return -1
}
