package classifier

import (
	"encoding/binary"
	"net"
	"net/netip"
	"sort"
	"testing"

	"github.com/cespare/xxhash/v2"
	"github.com/google/gopacket/layers"
)

func parsed(frame []byte) Meta {
	var m Meta
	Parse(frame, &m)
	return m
}

func sortedNames(m map[string]pkt) []string {
	var s []string
	for k := range m {
		s = append(s, k)
	}
	sort.Strings(s)
	return s
}

// TestHashInvariant proves the identity survives everything a router,
// switch or NIC may change between the two ends of a segment.
func TestHashInvariant(t *testing.T) {
	mutations := []struct {
		name string
		mut  func(p *pkt)
		raw  func(p pkt, f []byte) []byte // byte-level change after serializing
	}{
		{name: "ttl-decrement", mut: func(p *pkt) { p.ttl = 63 }},
		{name: "ttl-1", mut: func(p *pkt) { p.ttl = 1 }},
		{name: "dscp", mut: func(p *pkt) { p.tos = 46 << 2 }},
		{name: "ecn-ce", mut: func(p *pkt) { p.tos |= 3 }},
		{name: "mac-rewrite", mut: func(p *pkt) { p.mac = 0xee }},
		{name: "vlan-push", mut: func(p *pkt) { p.tags = []uint16{100} }},
		{name: "qinq-88a8", mut: func(p *pkt) {
			p.tags = []uint16{200, 100}
			p.tpids = []layers.EthernetType{0x88a8, layers.EthernetTypeDot1Q}
		}},
		{name: "qinq-9100", mut: func(p *pkt) {
			p.tags = []uint16{300, 200, 100}
			p.tpids = []layers.EthernetType{0x9100, 0x88a8, layers.EthernetTypeDot1Q}
		}},
		{name: "padding-zero", mut: func(p *pkt) { p.pad = 30 }},
		{name: "padding-junk", mut: func(p *pkt) { p.pad = 12; p.padByte = 0xa5 }},
		{name: "ipv4-header-checksum", raw: func(p pkt, f []byte) []byte {
			if !p.v6 {
				f[p.l3Off()+10] ^= 0x5a
				f[p.l3Off()+11] ^= 0x33
			}
			return f
		}},
		{name: "l4-checksum", raw: func(p pkt, f []byte) []byte {
			if at := p.l4ChecksumAt(); at >= 0 {
				f[p.l4Off()+at] ^= 0xff
				f[p.l4Off()+at+1] ^= 0x01
			}
			return f
		}},
		{name: "syn-mss-clamp", mut: func(p *pkt) { p.mss = 1400 }},
	}
	for _, name := range sortedNames(basePkts()) {
		base := basePkts()[name]
		bm := parsed(base.frame(t))
		if bm.Flags&(FlagIPv4|FlagIPv6) == 0 || bm.Flags&(FlagTruncated|FlagMalformed|FlagNonIP) != 0 {
			t.Fatalf("%s: base frame flags %#x", name, bm.Flags)
		}
		for _, mu := range mutations {
			t.Run(name+"/"+mu.name, func(t *testing.T) {
				p := base
				p.tags = append([]uint16(nil), base.tags...)
				if mu.mut != nil {
					mu.mut(&p)
				}
				f := p.frame(t)
				if mu.raw != nil {
					f = mu.raw(p, f)
				}
				m := parsed(f)
				if m.Hash != bm.Hash {
					t.Errorf("Hash changed: %#x -> %#x", bm.Hash, m.Hash)
				}
				if m.Flow != bm.Flow || m.FlowHash != bm.FlowHash {
					t.Errorf("flow changed: %v -> %v", bm.Flow, m.Flow)
				}
			})
		}
	}
}

// TestHashDistinguishes proves different packets get different identities.
func TestHashDistinguishes(t *testing.T) {
	mutations := []struct {
		name string
		v4   bool // only meaningful for IPv4
		mut  func(p *pkt)
	}{
		{name: "ip-id", v4: true, mut: func(p *pkt) { p.ipID++ }},
		{name: "sport", mut: func(p *pkt) { p.sport++ }},
		{name: "dport", mut: func(p *pkt) { p.dport ^= 0x100 }},
		{name: "seq", mut: func(p *pkt) { p.seq++ }},
		{name: "payload-byte", mut: func(p *pkt) {
			p.payload = append([]byte(nil), p.payload...)
			if len(p.payload) > 0 {
				p.payload[0] ^= 1
			}
		}},
		{name: "longer", mut: func(p *pkt) { p.payload = append(append([]byte(nil), p.payload...), 'x') }},
		{name: "src", mut: func(p *pkt) {
			if p.v6 {
				p.src = net.ParseIP("2001:db8::99")
			} else {
				p.src = net.IPv4(10, 9, 9, 9)
			}
		}},
		{name: "dst", mut: func(p *pkt) {
			if p.v6 {
				p.dst = net.ParseIP("2001:db8::98")
			} else {
				p.dst = net.IPv4(10, 9, 9, 8)
			}
		}},
		{name: "proto", mut: func(p *pkt) {
			if p.proto == layers.IPProtocolGRE {
				p.proto = layers.IPProtocolESP
			} else {
				p.proto = layers.IPProtocolGRE
			}
		}},
	}
	for _, name := range sortedNames(basePkts()) {
		base := basePkts()[name]
		bm := parsed(base.frame(t))
		for _, mu := range mutations {
			p := base
			mu.mut(&p)
			f := p.frame(t)
			if mu.v4 && p.v6 {
				continue
			}
			// A mutation that leaves the frame identical is not a test.
			if string(f) == string(base.frame(t)) {
				continue
			}
			t.Run(name+"/"+mu.name, func(t *testing.T) {
				if m := parsed(f); m.Hash == bm.Hash {
					t.Errorf("Hash unchanged %#x", m.Hash)
				}
			})
		}
	}
	// IPv6 flow label is part of the identity.
	p := basePkts()["ipv6-udp"]
	a := parsed(p.frame(t))
	p.flow = 0xabcde
	if b := parsed(p.frame(t)); a.Hash == b.Hash {
		t.Error("IPv6 flow label not in the identity")
	}
}

// TestParseFields checks the Meta fields against what the frame was built from.
func TestParseFields(t *testing.T) {
	tests := []struct {
		name  string
		p     pkt
		flags uint16
		flow  string
		vlan  uint16
		dscp  uint8
		proto uint8
	}{
		{"v4-tcp", pkt{proto: layers.IPProtocolTCP, sport: 1234, dport: 80, tos: 46<<2 | 1, tags: []uint16{42, 7},
			tpids: []layers.EthernetType{0x88a8}}, FlagIPv4 | FlagPorts, "6 10.0.0.1:1234>10.0.0.2:80", 42, 46, 6},
		{"v4-udp", pkt{proto: layers.IPProtocolUDP, sport: 53, dport: 40000}, FlagIPv4 | FlagPorts,
			"17 10.0.0.1:53>10.0.0.2:40000", 0, 0, 17},
		{"v4-icmp", pkt{proto: layers.IPProtocolICMPv4}, FlagIPv4, "1 10.0.0.1:8>10.0.0.2:0", 0, 0, 1},
		{"v4-gre", pkt{proto: layers.IPProtocolGRE, payload: []byte{1, 2, 3, 4, 5}}, FlagIPv4,
			"47 10.0.0.1:0>10.0.0.2:0", 0, 0, 47},
		{"v6-tcp", pkt{v6: true, proto: layers.IPProtocolTCP, sport: 443, dport: 5001, tos: 10 << 2, tags: []uint16{4095}},
			FlagIPv6 | FlagPorts, "6 [2001:db8::1]:443>[2001:db8::2]:5001", 4095, 10, 6},
		{"v6-icmp", pkt{v6: true, proto: layers.IPProtocolICMPv6}, FlagIPv6, "58 [2001:db8::1]:128>[2001:db8::2]:0", 0, 0, 58},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := tt.p.frame(t)
			m := parsed(f)
			if m.Flags != tt.flags {
				t.Errorf("flags %#x, want %#x", m.Flags, tt.flags)
			}
			if got := m.Flow.String(); got != tt.flow {
				t.Errorf("flow %q, want %q", got, tt.flow)
			}
			if m.VLAN != tt.vlan || m.DSCP != tt.dscp || m.Proto != tt.proto {
				t.Errorf("vlan %d dscp %d proto %d, want %d %d %d", m.VLAN, m.DSCP, m.Proto, tt.vlan, tt.dscp, tt.proto)
			}
			if m.Len != uint32(len(f)) {
				t.Errorf("Len %d, want %d", m.Len, len(f))
			}
			want := uint16(layers.EthernetTypeIPv4)
			if tt.p.v6 {
				want = uint16(layers.EthernetTypeIPv6)
			}
			if m.EtherType != want {
				t.Errorf("EtherType %#x", m.EtherType)
			}
			if m.FlowHash == 0 || m.FlowHash != m.Flow.Hash() {
				t.Errorf("FlowHash %#x", m.FlowHash)
			}
		})
	}
}

func TestFlowHashDistinguishes(t *testing.T) {
	seen := map[uint64]FlowKey{}
	var k FlowKey
	for i := 0; i < 20000; i++ {
		a := netip.AddrFrom4([4]byte{10, byte(i >> 8), byte(i), 1}).As16()
		k = FlowKey{Src: a, Dst: a, SrcPort: uint16(i * 7), DstPort: 80, Proto: 6}
		k.Dst[15] = 2
		h := flowHash(&k)
		if old, ok := seen[h]; ok {
			t.Fatalf("flowHash collision %v %v", old, k)
		}
		seen[h] = k
	}
	k2 := k
	k2.IPv6 = true
	if flowHash(&k) == flowHash(&k2) {
		t.Error("IPv6 bit not in flow hash")
	}
}

// nonIPFrame is an LLDP-like frame.
func nonIPFrame(et uint16, payload []byte) []byte {
	f := make([]byte, 14, 14+len(payload))
	copy(f, []byte{1, 0x80, 0xc2, 0, 0, 0xe, 2, 0, 0, 0, 0, 1})
	binary.BigEndian.PutUint16(f[12:], et)
	return append(f, payload...)
}

func TestNonIPAndControl(t *testing.T) {
	pl := []byte("lldp-ish payload bytes")
	a := parsed(nonIPFrame(0x88cc, pl))
	if a.Flags != FlagNonIP|FlagLinkLocal || a.EtherType != 0x88cc || a.FlowHash != 0 {
		t.Errorf("non-IP meta %+v", a)
	}
	// MAC rewrite and VLAN push keep the identity.
	f := nonIPFrame(0x88cc, pl)
	f[0], f[11] = 9, 9
	tagged := append(append(append([]byte(nil), f[:12]...), 0x81, 0, 0, 5), f[12:]...)
	if parsed(f).Hash != a.Hash || parsed(tagged).Hash != a.Hash {
		t.Error("non-IP identity changed with MAC/VLAN")
	}
	if b := parsed(nonIPFrame(0x88cc, []byte("lldp-ish payload byteZ"))); b.Hash == a.Hash {
		t.Error("non-IP payload change not seen")
	}
	if b := parsed(nonIPFrame(0x88cd, pl)); b.Hash == a.Hash {
		t.Error("EtherType not in non-IP identity")
	}
	c := parsed(nonIPFrame(ControlEtherType, pl))
	if c.Flags != FlagControl|FlagNonIP|FlagLinkLocal { // nonIPFrame's MAC is LLDP's
		t.Errorf("control flags %#x", c.Flags)
	}
	// 802.3 length field: bytes beyond the length are padding.
	l := parsed(nonIPFrame(5, []byte("abcde")))
	lp := parsed(nonIPFrame(5, []byte("abcdeXXXXXX")))
	if l.Hash != lp.Hash {
		t.Error("802.3 padding changed the identity")
	}
}

func TestParseZeroAllocs(t *testing.T) {
	var frames [][]byte
	for _, name := range sortedNames(basePkts()) {
		frames = append(frames, basePkts()[name].frame(t))
	}
	frames = append(frames, nonIPFrame(0x88cc, []byte("x")), []byte{1, 2, 3})
	var m Meta
	for _, f := range frames {
		if n := testing.AllocsPerRun(100, func() { Parse(f, &m) }); n != 0 {
			t.Errorf("Parse allocates %v per frame", n)
		}
	}
}

// TestSum64WordsIsXXH64 pins the register XXH64 to the xxhash package.
func TestSum64WordsIsXXH64(t *testing.T) {
	var w ident
	var b [len(w) * 8]byte
	x := uint64(0x243f6a8885a308d3)
	for trial := 0; trial < 200; trial++ {
		for i := range w {
			x = x*6364136223846793005 + 1442695040888963407
			w[i] = x
			if trial%3 == 0 {
				w[i] &= 0xff // mostly-zero words too
			}
			binary.LittleEndian.PutUint64(b[8*i:], w[i])
		}
		for _, n := range []int{v4Words, nonIPWords, v6Words} {
			if got, want := sum64Words(&w, n), xxhash.Sum64(b[:8*n]); got != want {
				t.Fatalf("n=%d: sum64Words %#x, xxhash %#x", n, got, want)
			}
		}
	}
}
