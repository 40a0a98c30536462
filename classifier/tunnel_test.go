package classifier

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/cespare/xxhash/v2"
	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
)

// tunnelEncs are the encapsulations Parse reads through.
var tunnelEncs = []struct {
	name string
	enc  uint8
}{{"gre", encGRE}, {"vxlan", encVXLAN}, {"geneve", encGeneve}, {"mpls", encMPLS}}

// encapsulate wraps an inner Ethernet frame (untagged, IPv4 or IPv6) in
// enc over an outer IPv4 (or IPv6) header whose identification is always
// 0, as many tunnel endpoints write it: GRE with a key, carrying the inner
// IP packet; VXLAN and Geneve (with one 4-byte option) carrying the whole
// inner Ethernet frame; MPLS with two labels carrying the inner IP packet.
// Written byte by byte, apart from the parser.
func encapsulate(enc uint8, outerV6 bool, inner []byte) []byte {
	innerET := binary.BigEndian.Uint16(inner[12:])
	innerIP := inner[14:]
	eth := []byte{0x02, 0, 0, 0, 0, 0x0b, 0x02, 0, 0, 0, 0, 0x0a, 0, 0}
	if enc == encMPLS {
		binary.BigEndian.PutUint16(eth[12:], etherTypeMPLS)
		labels := []byte{0x00, 0x01, 0x00, 64, 0x00, 0x02, 0x01, 64} // label 16 then 32 (bottom), TTL 64
		return append(append(eth, labels...), innerIP...)
	}
	var proto byte
	var tun []byte
	switch enc {
	case encGRE:
		proto = protoGRE
		tun = []byte{0x20, 0x00, byte(innerET >> 8), byte(innerET), 0, 0, 0x12, 0x34} // K bit, key 0x1234
		tun = append(tun, innerIP...)
	case encVXLAN, encGeneve:
		proto = protoUDP
		port := uint16(portVXLAN)
		hdr := []byte{0x08, 0, 0, 0, 0x00, 0x10, 0x20, 0} // I flag, VNI 0x001020
		if enc == encGeneve {
			port = portGeneve
			hdr = []byte{0x01, 0, 0x65, 0x58, 0x00, 0x10, 0x20, 0, 0x01, 0x02, 0x03, 0x00} // one 4-byte option (empty)
		}
		udp := make([]byte, 8, 8+len(hdr)+len(inner))
		binary.BigEndian.PutUint16(udp[0:], 49152+uint16(len(innerIP)%1000)) // an endpoint's entropy port
		binary.BigEndian.PutUint16(udp[2:], port)
		binary.BigEndian.PutUint16(udp[4:], uint16(8+len(hdr)+len(inner)))
		binary.BigEndian.PutUint16(udp[6:], 0xbeef)
		tun = append(append(udp, hdr...), inner...)
	}
	if outerV6 {
		binary.BigEndian.PutUint16(eth[12:], etherTypeIPv6)
		ip := make([]byte, 40)
		ip[0] = 0x60
		binary.BigEndian.PutUint16(ip[4:], uint16(len(tun)))
		ip[6], ip[7] = proto, 64
		ip[8], ip[9], ip[23] = 0x20, 0x01, 1
		ip[24], ip[25], ip[39] = 0x20, 0x01, 2
		return append(append(eth, ip...), tun...)
	}
	binary.BigEndian.PutUint16(eth[12:], etherTypeIPv4)
	ip := []byte{0x45, 0, 0, 0, 0, 0, 0x40, 0, 64, proto, 0, 0, 192, 0, 2, 1, 192, 0, 2, 2}
	binary.BigEndian.PutUint16(ip[2:], uint16(20+len(tun)))
	return append(append(eth, ip...), tun...)
}

// innerFlows is inner traffic of one length per protocol: four flows,
// each packet's IP identification (IPv4) or payload (IPv6 UDP) or
// sequence number (TCP) its own, drawn from a small range so that some
// packets repeat exactly, as real traffic does.
func innerFlows(tb testing.TB, v6 bool, proto layers.IPProtocol, n int, r *rand.Rand) [][]byte {
	out := make([][]byte, 0, n)
	for i := 0; i < n; i++ {
		pl := make([]byte, 40)
		binary.BigEndian.PutUint16(pl, uint16(r.IntN(512)))
		p := pkt{v6: v6, proto: proto, ipID: uint16(r.IntN(512)), sport: 1000 + uint16(i%4), dport: 53,
			seq: uint32(r.IntN(512)), flow: 7, payload: pl}
		out = append(out, p.frame(tb))
	}
	return out
}

// dupCount counts the packets whose identity occurs more than once.
func dupCount(hs []uint64) int {
	seen := map[uint64]int{}
	for _, h := range hs {
		seen[h]++
	}
	n := 0
	for _, c := range seen {
		if c > 1 {
			n += c
		}
	}
	return n
}

// outerIdentity is the identity the frame had before Parse read through
// tunnels: the plain layout of its outermost packet (untagged frames only).
func outerIdentity(frame []byte) uint64 {
	var id ident
	var m Meta
	et := binary.BigEndian.Uint16(frame[12:])
	switch et {
	case etherTypeIPv4:
		parseIPv4(frame[14:], &m, &id)
		return sum64Words(&id, v4Words)
	case etherTypeIPv6:
		parseIPv6(frame[14:], &m, &id)
		return sum64Words(&id, v6Words)
	}
	return sum64Words(&id, gatherRaw(frame[14:], et, &id))
}

// TestTunnelSharesNoMoreIdentities: the same inner traffic, plain and in
// each tunnel (outer IP ID 0), shares exactly as many identities in the
// tunnel as without it; the outer identity alone shared far more.
func TestTunnelSharesNoMoreIdentities(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, innerV6 := range []bool{false, true} {
		for _, proto := range []layers.IPProtocol{layers.IPProtocolUDP, layers.IPProtocolTCP} {
			inner := innerFlows(t, innerV6, proto, 2000, r)
			plain := make([]uint64, len(inner))
			for i, f := range inner {
				plain[i] = parsed(f).Hash
			}
			for _, e := range tunnelEncs {
				for _, outerV6 := range []bool{false, true} {
					if e.enc == encMPLS && outerV6 {
						continue // no outer IP
					}
					name := fmt.Sprintf("%s outer-v6=%v inner-v6=%v %v", e.name, outerV6, innerV6, proto)
					tun, old := make([]uint64, len(inner)), make([]uint64, len(inner))
					for i, f := range inner {
						g := encapsulate(e.enc, outerV6, f)
						tun[i] = parsed(g).Hash
						for _, lv := range []Level{LevelIdentity, LevelFlowKey} {
							var m Meta
							if ParseLevel(g, &m, lv); m.Hash != tun[i] {
								t.Fatalf("%s: level %d identity %#x, Parse %#x", name, lv, m.Hash, tun[i])
							}
						}
						old[i] = outerIdentity(g)
						if tun[i] == plain[i] || tun[i] == old[i] {
							t.Fatalf("%s: tunneled identity %#x is the inner (%#x) or the outer (%#x) one", name, tun[i], plain[i], old[i])
						}
					}
					p, q, o := dupCount(plain), dupCount(tun), dupCount(old)
					if q != p {
						t.Errorf("%s: %d packets share an identity in the tunnel, %d without it", name, q, p)
					}
					t.Logf("%s: shared identities plain %d, tunneled %d, outer identity alone %d", name, p, q, o)
					if e.enc != encMPLS && o <= p {
						// The test itself: the outer identity must have been
						// worse. (Not for MPLS: its raw layout reached the
						// inner header behind two labels, but covered the
						// labels and the MPLS TTL, which change.)
						t.Errorf("%s: the outer identity shares only %d (plain %d): the test shows nothing", name, o, p)
					}
				}
			}
		}
	}
}

// TestTunnelNaive holds the tunneled identity against a reference built
// on gopacket's decoding of the tunnel: the outer identity and the inner
// one (naiveIdentity, twin_test.go) in the layout of tunnel.go.
func TestTunnelNaive(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, innerV6 := range []bool{false, true} {
		for _, proto := range []layers.IPProtocol{layers.IPProtocolUDP, layers.IPProtocolTCP} {
			for _, f := range innerFlows(t, innerV6, proto, 20, r) {
				for _, e := range tunnelEncs {
					g := encapsulate(e.enc, false, f)
					p := gopacket.NewPacket(g, layers.LayerTypeEthernet, gopacket.Default)
					var ips []gopacket.Layer
					for _, l := range p.Layers() {
						if l.LayerType() == layers.LayerTypeIPv4 || l.LayerType() == layers.LayerTypeIPv6 {
							ips = append(ips, l)
						}
					}
					want := 2
					if e.enc == encMPLS {
						want = 1
					}
					if len(ips) != want {
						t.Fatalf("%s: gopacket decoded %d IP layers of %x", e.name, len(ips), g)
					}
					innerLayer := ips[len(ips)-1]
					innerBytes := append(append([]byte(nil), innerLayer.LayerContents()...), innerLayer.LayerPayload()...)
					et := uint16(etherTypeIPv4)
					if innerLayer.LayerType() == layers.LayerTypeIPv6 {
						et = etherTypeIPv6
					}
					innerH, _, ok := naiveIdentity(goldenFrame(nil, et, innerBytes))
					if !ok {
						t.Fatalf("%s: inner not decoded", e.name)
					}
					var outerH uint64
					if e.enc != encMPLS {
						// The outer identity from the outer layer's bytes alone.
						outer := ips[0].(*layers.IPv4)
						cut := append(append([]byte(nil), outer.Contents...), outer.Payload...)
						var buf [48]byte
						buf[0], buf[1] = 4, byte(outer.Protocol)
						copy(buf[2:8], cut[2:8])
						copy(buf[8:16], cut[12:20])
						var k FlowKey
						naiveWindow(buf[16:48], uint8(outer.Protocol), outer.Payload, false, false, &k)
						outerH = xxhash.Sum64(buf[:])
					}
					var lay [48]byte
					lay[0], lay[1] = tagTunnel, e.enc
					binary.LittleEndian.PutUint64(lay[8:], outerH)
					binary.LittleEndian.PutUint64(lay[16:], innerH)
					if got, want := parsed(g).Hash, xxhash.Sum64(lay[:]); got != want {
						t.Fatalf("%s inner-v6=%v %v: Hash %#x, reference %#x\n%x", e.name, innerV6, proto, got, want, g)
					}
				}
			}
		}
	}
}

// TestTunnelInvariant: what routers change on the outer path (outer TTL,
// DSCP/ECN, the outer header checksum, the outer UDP checksum, the MPLS
// TTL and labels) leaves the identity alone; the inner IP identification
// or flow label changes it.
func TestTunnelInvariant(t *testing.T) {
	for _, innerV6 := range []bool{false, true} {
		p := pkt{v6: innerV6, proto: layers.IPProtocolUDP, ipID: 4242, flow: 0x54321, sport: 1, dport: 2, payload: make([]byte, 64)}
		inner := p.frame(t)
		for _, e := range tunnelEncs {
			for _, outerV6 := range []bool{false, true} {
				if e.enc == encMPLS && outerV6 {
					continue
				}
				name := fmt.Sprintf("%s outer-v6=%v inner-v6=%v", e.name, outerV6, innerV6)
				g := encapsulate(e.enc, outerV6, inner)
				h := parsed(g).Hash
				if h == outerIdentity(g) {
					t.Fatalf("%s: not read through", name)
				}
				mut := func(what string, f func(b []byte), same bool) {
					b := cloneB(g)
					f(b)
					if got := parsed(b).Hash; (got == h) != same {
						t.Errorf("%s: %s: identity %#x, was %#x (want same %v)", name, what, got, h, same)
					}
				}
				switch {
				case e.enc == encMPLS:
					mut("MPLS TTL", func(b []byte) { b[17]--; b[21]-- }, true)
					mut("MPLS labels", func(b []byte) { b[15] ^= 0x5a; b[19] ^= 0xa5 }, true)
				case outerV6:
					mut("outer hop limit and traffic class", func(b []byte) { b[21]--; b[14] ^= 0x0f; b[15] ^= 0xf0 }, true)
				default:
					mut("outer TTL, DSCP and checksum", func(b []byte) { b[22]--; b[15] ^= 0xff; b[24] ^= 0x5a }, true)
				}
				if e.enc == encVXLAN || e.enc == encGeneve {
					l4 := 14 + 20
					if outerV6 {
						l4 = 14 + 40
					}
					mut("outer UDP checksum", func(b []byte) { b[l4+6] ^= 0xff }, true)
				}
				// The inner IP header is the last len(inner)-14 bytes.
				at := len(g) - (len(inner) - 14)
				if innerV6 {
					mut("inner flow label", func(b []byte) { b[at+3] ^= 1 }, false)
				} else {
					mut("inner IP ID", func(b []byte) { b[at+5] ^= 1 }, false)
				}
				mut("inner L4 window", func(b []byte) { b[len(b)-64] ^= 1 }, false)
			}
		}
	}
}

// TestTunnelFallback: a tunnel header Parse cannot read, or an inner
// packet that is not a whole IP header, leaves the outer identity.
func TestTunnelFallback(t *testing.T) {
	inner := pkt{proto: layers.IPProtocolUDP, ipID: 9, sport: 1, dport: 2, payload: make([]byte, 40)}.frame(t)
	fix4 := func(b []byte) []byte { // outer IPv4 total length after a cut
		binary.BigEndian.PutUint16(b[16:], uint16(len(b)-14))
		return b
	}
	cases := []struct {
		name  string
		enc   uint8
		mod   func(b []byte) []byte
		outer bool // still the outer identity (false: read through)
	}{
		{"gre version 1", encGRE, func(b []byte) []byte { b[35] |= 1; return b }, true},
		{"gre routing bit", encGRE, func(b []byte) []byte { b[34] |= 0x40; return b }, true},
		{"gre unknown payload", encGRE, func(b []byte) []byte { b[36], b[37] = 0x88, 0x0b; return b }, true},
		{"gre header cut", encGRE, func(b []byte) []byte { return fix4(b[:14+20+6]) }, true},
		{"gre inner header cut", encGRE, func(b []byte) []byte { return fix4(b[:14+20+8+19]) }, true},
		{"gre inner not ipv4", encGRE, func(b []byte) []byte { b[42] = 0x55; return b }, true},
		{"gre inner bad ihl", encGRE, func(b []byte) []byte { b[42] = 0x44; return b }, true},
		{"gre checksum+seq", encGRE, func(b []byte) []byte {
			// C and S set: 8 more header bytes than the frame has room
			// for in the same place; the inner header moves.
			x := append(append(cloneB(b[:42]), 0, 0, 0, 0, 0, 0, 0, 0), b[42:]...)
			x[34] |= 0x90
			return fix4(x)
		}, false},
		{"vxlan without I flag", encVXLAN, func(b []byte) []byte { b[42] = 0; return b }, true},
		{"vxlan header cut", encVXLAN, func(b []byte) []byte { return fix4(b[:14+20+12]) }, true},
		{"vxlan inner not ip", encVXLAN, func(b []byte) []byte { b[50+12], b[50+13] = 0x88, 0xcc; return b }, true},
		{"vxlan udp length short", encVXLAN, func(b []byte) []byte { binary.BigEndian.PutUint16(b[38:], 7); return b }, true},
		{"vxlan inner vlan", encVXLAN, func(b []byte) []byte {
			x := append(append(cloneB(b[:50+12]), 0x81, 0x00, 0x00, 0x05), b[50+12:]...)
			binary.BigEndian.PutUint16(x[38:], uint16(len(x)-34))
			return fix4(x)
		}, false},
		{"geneve version 1", encGeneve, func(b []byte) []byte { b[42] |= 0x40; return b }, true},
		{"geneve options past the end", encGeneve, func(b []byte) []byte { b[42] |= 0x3f; return fix4(b[:14+20+8+8+40]) }, true},
		{"geneve unknown protocol", encGeneve, func(b []byte) []byte { b[44] = 0x12; return b }, true},
		{"mpls nine labels", encMPLS, func(b []byte) []byte {
			var ls []byte
			for i := 0; i < 9; i++ {
				ls = append(ls, 0, 0x01, 0, 64)
			}
			ls[len(ls)-2] |= 1
			return append(append(cloneB(b[:14]), ls...), b[22:]...)
		}, true},
		{"mpls eight labels", encMPLS, func(b []byte) []byte {
			var ls []byte
			for i := 0; i < 8; i++ {
				ls = append(ls, 0, 0x01, 0, 64)
			}
			ls[len(ls)-2] |= 1
			return append(append(cloneB(b[:14]), ls...), b[22:]...)
		}, false},
		{"mpls no bottom of stack", encMPLS, func(b []byte) []byte { b[20] &^= 1; return b[:22] }, true},
		{"mpls pseudowire control word", encMPLS, func(b []byte) []byte { b[22] = 0; return b }, true},
	}
	for _, c := range cases {
		g := c.mod(encapsulate(c.enc, false, inner))
		m := parsed(g)
		if got := m.Hash == outerIdentity(g); got != c.outer {
			t.Errorf("%s: outer identity %v, want %v (%x)", c.name, got, c.outer, g)
		}
	}
}

// TestTunnelZeroAllocs: reading through a tunnel allocates nothing.
func TestTunnelZeroAllocs(t *testing.T) {
	inner4 := pkt{proto: layers.IPProtocolTCP, ipID: 9, sport: 1, dport: 2, payload: make([]byte, 40)}.frame(t)
	inner6 := pkt{v6: true, proto: layers.IPProtocolUDP, sport: 1, dport: 2, payload: make([]byte, 40)}.frame(t)
	var m Meta
	for _, e := range tunnelEncs {
		for _, in := range [][]byte{inner4, inner6} {
			g := encapsulate(e.enc, false, in)
			if n := testing.AllocsPerRun(100, func() { Parse(g, &m) }); n != 0 {
				t.Errorf("%s: Parse allocates %v per frame", e.name, n)
			}
		}
	}
}

// tunnelSeeds are fuzz seeds: every encapsulation over IPv4 and IPv6
// carrying IPv4 and IPv6.
func tunnelSeeds(tb testing.TB) [][]byte {
	inner4 := pkt{proto: layers.IPProtocolTCP, ipID: 9, sport: 1, dport: 2, payload: make([]byte, 40)}.frame(tb)
	inner6 := pkt{v6: true, proto: layers.IPProtocolUDP, sport: 1, dport: 2, payload: make([]byte, 40)}.frame(tb)
	var out [][]byte
	for _, e := range tunnelEncs {
		for _, in := range [][]byte{inner4, inner6} {
			out = append(out, encapsulate(e.enc, false, in))
			if e.enc != encMPLS {
				out = append(out, encapsulate(e.enc, true, in))
			}
		}
	}
	return out
}

// FuzzTunnel: Parse of a tunneled frame (the seeds, mutated) never
// panics and writes what Parse always does; reading through changes only
// the identity, never the flow key, flags or class; a frame cut short
// anywhere still parses; InnerL3 never points outside its bytes.
func FuzzTunnel(f *testing.F) {
	for _, s := range tunnelSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		var a, b Meta
		Parse(frame, &a)
		checkMetaInvariants(t, frame, &a)
		b = Meta{Hash: 1, Flags: 0xffff}
		Parse(frame, &b)
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("not deterministic:\n%+v\n%+v", a, b)
		}
		if len(frame) >= 14 {
			et := binary.BigEndian.Uint16(frame[12:])
			for _, proto := range []uint8{protoGRE, protoUDP} {
				enc, off, iet, _ := InnerL3(et, proto, frame[14:])
				if enc != 0 && (off < 0 || off >= len(frame)-14 || (iet != etherTypeIPv4 && iet != etherTypeIPv6)) {
					t.Fatalf("InnerL3: enc %d off %d et %#x of %d bytes", enc, off, iet, len(frame)-14)
				}
			}
		}
		if len(frame) > 20 {
			Parse(frame[:len(frame)/2], &b)
		}
	})
}
