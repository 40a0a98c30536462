package classifier

import (
	"encoding/binary"
	"math/rand/v2"
	"net"
	"testing"

	"github.com/cespare/xxhash/v2"
	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
)

// naiveIdentity is the slow reference for Parse's identity hash: gopacket
// decodes the frame and the invariant bytes are laid out field by field
// from the decoded layers, following the layout documented in parse.go.
// ok is false when gopacket could not decode the frame.
func naiveIdentity(frame []byte) (h uint64, k FlowKey, ok bool) {
	p := gopacket.NewPacket(frame, layers.LayerTypeEthernet, gopacket.Default)
	var buf [80]byte
	syn := false
	if l, _ := p.Layer(layers.LayerTypeTCP).(*layers.TCP); l != nil {
		syn = l.SYN
	}
	if ip, _ := p.Layer(layers.LayerTypeIPv4).(*layers.IPv4); ip != nil {
		buf[0] = 4
		buf[1] = byte(ip.Protocol)
		binary.BigEndian.PutUint16(buf[2:], ip.Length)
		binary.BigEndian.PutUint16(buf[4:], ip.Id)
		binary.BigEndian.PutUint16(buf[6:], uint16(ip.Flags)<<13|ip.FragOffset)
		copy(buf[8:12], ip.SrcIP.To4())
		copy(buf[12:16], ip.DstIP.To4())
		k.Proto = uint8(ip.Protocol)
		s, d := net.IP(ip.SrcIP).To16(), net.IP(ip.DstIP).To16()
		copy(k.Src[:], s)
		copy(k.Dst[:], d)
		if ip.Protocol == layers.IPProtocolTCP && ip.FragOffset == 0 && len(ip.Payload) > 13 {
			// gopacket does not decode TCP in a first fragment (MF set).
			syn = ip.Payload[13]&0x02 != 0
		}
		naiveWindow(buf[16:48], uint8(ip.Protocol), ip.Payload, ip.FragOffset != 0, syn, &k)
		return xxhash.Sum64(buf[:48]), k, true
	}
	if ip, _ := p.Layer(layers.LayerTypeIPv6).(*layers.IPv6); ip != nil {
		buf[0] = 6
		buf[1] = byte(ip.NextHeader)
		binary.BigEndian.PutUint16(buf[2:], ip.Length)
		buf[4], buf[5], buf[6] = byte(ip.FlowLabel>>16), byte(ip.FlowLabel>>8), byte(ip.FlowLabel)
		copy(buf[8:24], ip.SrcIP)
		copy(buf[24:40], ip.DstIP)
		k.IPv6 = true
		k.Proto = uint8(ip.NextHeader)
		copy(k.Src[:], ip.SrcIP)
		copy(k.Dst[:], ip.DstIP)
		naiveWindow(buf[48:80], uint8(ip.NextHeader), ip.Payload, false, syn, &k)
		return xxhash.Sum64(buf[:80]), k, true
	}
	// Non-IP: the EtherType and the payload of the last L2 layer.
	var et layers.EthernetType
	var rest []byte
	for _, l := range p.Layers() {
		switch l := l.(type) {
		case *layers.Ethernet:
			et, rest = l.EthernetType, l.Payload
		case *layers.Dot1Q:
			et, rest = l.Type, l.Payload
		}
	}
	if rest == nil {
		return 0, k, false
	}
	buf[1], buf[2] = byte(et>>8), byte(et)
	copy(buf[8:64], rest)
	return xxhash.Sum64(buf[:64]), k, true
}

// naiveWindow writes the L4 window: at most 32 bytes of the IP payload,
// checksum zeroed by protocol, TCP SYN options dropped.
func naiveWindow(w []byte, proto uint8, payload []byte, later bool, syn bool, k *FlowKey) {
	n := copy(w, payload)
	if later {
		return
	}
	csum := map[uint8][2]int{6: {16, 2}, 17: {6, 2}, 136: {6, 2}, 132: {8, 4}, 1: {2, 2}, 58: {2, 2}}
	c, ok := csum[proto]
	if !ok {
		return
	}
	if proto == 6 && syn {
		for i := 20; i < n; i++ {
			w[i] = 0
		}
	}
	for i := c[0]; i < c[0]+c[1] && i < n; i++ {
		w[i] = 0
	}
	if proto == 1 || proto == 58 {
		k.SrcPort, k.DstPort = uint16(payload[0]), uint16(payload[1])
	} else if len(payload) >= 4 {
		k.SrcPort = binary.BigEndian.Uint16(payload)
		k.DstPort = binary.BigEndian.Uint16(payload[2:])
	}
}

// randomPkt draws a valid frame description.
func randomPkt(r *rand.Rand) pkt {
	protos := []layers.IPProtocol{layers.IPProtocolTCP, layers.IPProtocolUDP, layers.IPProtocolGRE,
		layers.IPProtocolSCTP, layers.IPProtocolUDPLite, layers.IPProtocolESP}
	p := pkt{v6: r.IntN(2) == 0, ttl: uint8(1 + r.IntN(255)), tos: uint8(r.IntN(256)), ipID: uint16(r.Uint32()),
		flow: r.Uint32() & 0xfffff, sport: uint16(r.Uint32()), dport: uint16(r.Uint32()), seq: r.Uint32(),
		syn: r.IntN(4) == 0, mss: uint16(r.Uint32()), mac: byte(r.Uint32()), pad: r.IntN(20), padByte: byte(r.Uint32())}
	p.proto = protos[r.IntN(len(protos))]
	if r.IntN(4) == 0 {
		p.proto = layers.IPProtocolICMPv4
		if p.v6 {
			p.proto = layers.IPProtocolICMPv6
		}
	}
	p.payload = make([]byte, r.IntN(70))
	for i := range p.payload {
		p.payload[i] = byte(r.Uint32())
	}
	if p.v6 && len(p.payload) < 12 {
		p.payload = append(p.payload, make([]byte, 12)...) // gopacket rejects IPv6 length 0
	}
	for i := r.IntN(3); i > 0; i-- {
		p.tags = append(p.tags, uint16(r.IntN(4096)))
	}
	return p
}

// TestNaiveTwin compares Parse with the gopacket reference on random frames.
func TestNaiveTwin(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	n := 3000
	if testing.Short() {
		n = 500
	}
	for i := 0; i < n; i++ {
		p := randomPkt(r)
		f := p.frame(t)
		if !p.v6 && r.IntN(5) == 0 {
			// a fragment: MF and/or an offset, written after serializing
			binary.BigEndian.PutUint16(f[p.l3Off()+6:], uint16(r.IntN(4))<<13|uint16(r.IntN(3)))
			binary.BigEndian.PutUint16(f[p.l3Off()+10:], 0)
		}
		want, wk, ok := naiveIdentity(f)
		if !ok {
			t.Fatalf("gopacket could not decode %x", f)
		}
		m := parsed(f)
		if m.Hash != want {
			t.Fatalf("frame %d %+v: Hash %#x, naive %#x\n%x", i, p, m.Hash, want, f)
		}
		if m.Flow != wk && m.Flags&FlagFragment == 0 {
			t.Fatalf("frame %d: flow %v, naive %v", i, m.Flow, wk)
		}
	}
	// Non-IP frames.
	compared := 0
	for i := 0; i < 200; i++ {
		pl := make([]byte, r.IntN(100))
		for j := range pl {
			pl[j] = byte(r.Uint32())
		}
		f := nonIPFrame(0x88b6+uint16(r.IntN(2))*0x1000, pl)
		want, _, ok := naiveIdentity(f)
		if !ok {
			continue
		}
		compared++
		if parsed(f).Hash != want {
			t.Fatalf("non-IP frame %x: Hash differs from naive", f)
		}
	}
	if compared < 100 {
		t.Fatalf("only %d non-IP frames decoded by gopacket", compared)
	}
}
