package classifier

import (
	"encoding/binary"
	"reflect"
	"testing"

	"github.com/google/gopacket/layers"
)

// malformed is the table of broken frames; it doubles as the FuzzParse seed
// corpus. want, when non-zero, is a set of flags Parse must report.
type malformed struct {
	name  string
	frame []byte
	want  uint16
}

func cloneB(b []byte) []byte { return append([]byte(nil), b...) }

// ipv6Ext builds an IPv6 frame whose payload is ext (extension headers and
// L4 bytes, assembled by the caller) with first next header nh.
func ipv6Ext(tb testing.TB, nh uint8, ext []byte) []byte {
	p := pkt{v6: true, proto: layers.IPProtocol(nh), payload: ext}
	return p.frame(tb)
}

func malformedFrames(tb testing.TB) []malformed {
	var out []malformed
	add := func(name string, f []byte, want uint16) { out = append(out, malformed{name, f, want}) }

	add("empty", nil, FlagTruncated|FlagNonIP)
	add("one-byte", []byte{0xff}, FlagTruncated|FlagNonIP)
	add("13-bytes", make([]byte, 13), FlagTruncated|FlagNonIP)

	v4 := pkt{proto: layers.IPProtocolTCP, ipID: 1, sport: 1, dport: 2, payload: []byte("payload")}
	f := v4.frame(tb)
	for ihl := 0; ihl < 5; ihl++ {
		g := cloneB(f)
		g[14] = 0x40 | byte(ihl)
		add("ipv4-ihl-"+string(rune('0'+ihl)), g, FlagIPv4|FlagMalformed)
	}
	g := cloneB(f)
	g[14] = 0x4f // IHL 60 > total length
	add("ipv4-ihl-15", g, FlagIPv4|FlagMalformed)
	g = cloneB(f)
	binary.BigEndian.PutUint16(g[16:], 19)
	add("ipv4-total-19", g, FlagIPv4|FlagMalformed)
	g = cloneB(f)
	binary.BigEndian.PutUint16(g[16:], 1500)
	add("ipv4-total-beyond-frame", g, FlagIPv4|FlagTruncated|FlagPorts)
	g = cloneB(f)
	g[14] = 0x65
	add("ipv4-version-6", g, FlagIPv4|FlagMalformed|FlagPorts)
	g = cloneB(f)
	binary.BigEndian.PutUint16(g[20:], 0x2000|100) // MF + offset 800
	add("ipv4-non-first-fragment", g, FlagIPv4|FlagFragment)
	g = cloneB(f)
	binary.BigEndian.PutUint16(g[20:], 0x2000) // MF, first fragment
	add("ipv4-first-fragment", g, FlagIPv4|FlagFragment|FlagPorts)

	// IPv4 options: IHL 6, options cut off by the total length.
	g = append(cloneB(f[:34]), 1, 1, 1, 0)
	g = append(g, f[34:]...)
	g[14] = 0x46
	binary.BigEndian.PutUint16(g[16:], uint16(len(g)-14))
	add("ipv4-options", g, FlagIPv4|FlagPorts)
	h := cloneB(g)
	binary.BigEndian.PutUint16(h[16:], 22)
	add("ipv4-options-cut", h, FlagIPv4|FlagMalformed)

	// IPv6 extension headers.
	tcp := pkt{v6: true, proto: layers.IPProtocolTCP, sport: 1, dport: 2}.frame(tb)[54:]
	hbh := func(next uint8) []byte { return []byte{next, 0, 1, 4, 0, 0, 0, 0} } // 8 bytes, PadN
	ext := append(hbh(60), hbh(6)...)
	ext = append(ext, tcp...)
	add("ipv6-hbh-destopts-tcp", ipv6Ext(tb, 0, ext), FlagIPv6|FlagPorts)
	var loop []byte
	for i := 0; i < 20; i++ {
		loop = append(loop, hbh(0)...) // a chain that never ends
	}
	add("ipv6-ext-loop", ipv6Ext(tb, 0, loop), FlagIPv6|FlagMalformed)
	long := []byte{6, 200, 0, 0, 0, 0, 0, 0} // claims 1608 bytes
	add("ipv6-ext-too-long", ipv6Ext(tb, 60, append(long, tcp...)), FlagIPv6|FlagMalformed)
	add("ipv6-ext-only", ipv6Ext(tb, 60, []byte{0, 0}), FlagIPv6|FlagMalformed)
	frag := func(next uint8, off uint16, more bool, id uint32) []byte {
		b := []byte{next, 0, 0, 0, 0, 0, 0, 0}
		v := off << 3
		if more {
			v |= 1
		}
		binary.BigEndian.PutUint16(b[2:], v)
		binary.BigEndian.PutUint32(b[4:], id)
		return b
	}
	add("ipv6-first-fragment", ipv6Ext(tb, 44, append(frag(6, 0, true, 7), tcp...)), FlagIPv6|FlagFragment|FlagPorts)
	add("ipv6-non-first-fragment", ipv6Ext(tb, 44, append(frag(60, 100, false, 7), tcp...)), FlagIPv6|FlagFragment)
	add("ipv6-atomic-fragment", ipv6Ext(tb, 44, append(frag(6, 0, false, 7), tcp...)), FlagIPv6|FlagPorts)
	ah := []byte{6, 1, 0, 0, 0, 0, 0, 1, 0, 0, 0, 2} // AH, payload len 1 → 12 bytes
	add("ipv6-ah-tcp", ipv6Ext(tb, 51, append(ah, tcp...)), FlagIPv6|FlagPorts)
	v6 := pkt{v6: true, proto: layers.IPProtocolUDP, sport: 1, dport: 2, payload: []byte("x")}.frame(tb)
	g = cloneB(v6)
	g[14] = 0x45
	add("ipv6-version-4", g, FlagIPv6|FlagMalformed|FlagPorts)

	// VLAN tags.
	tags := make([]uint16, maxVLANTags+1)
	add("too-many-vlan-tags", pkt{proto: layers.IPProtocolUDP, tags: tags}.frame(tb), FlagMalformed|FlagNonIP)
	add("vlan-cut", pkt{proto: layers.IPProtocolUDP, tags: []uint16{1, 2}}.frame(tb)[:17], FlagTruncated|FlagNonIP)

	// Every truncation of every valid frame kind.
	kinds := basePkts()
	kinds["vlan-qinq"] = pkt{proto: layers.IPProtocolUDP, tags: []uint16{5, 6}, tpids: []layers.EthernetType{0x88a8}, payload: []byte("abc")}
	for _, name := range sortedNames(kinds) {
		p := kinds[name]
		full := p.frame(tb)
		// gopacket pads to the 60-byte Ethernet minimum: cut inside the
		// IP packet only.
		end := p.l3Off() + int(binary.BigEndian.Uint16(full[p.l3Off()+2:]))
		if p.v6 {
			end = p.l3Off() + 40 + int(binary.BigEndian.Uint16(full[p.l3Off()+4:]))
		}
		for k := 0; k < end; k++ {
			add(name+"-cut", full[:k], FlagTruncated)
		}
	}
	return out
}

func TestParseMalformed(t *testing.T) {
	for _, tt := range malformedFrames(t) {
		t.Run(tt.name, func(t *testing.T) {
			m := parsed(tt.frame)
			if m.Flags&tt.want != tt.want {
				t.Errorf("flags %#x, want at least %#x", m.Flags, tt.want)
			}
			// Exact flags for the hand-made entries (not the cut series).
			if len(tt.name) < 4 || tt.name[len(tt.name)-4:] != "-cut" {
				if m.Flags != tt.want {
					t.Errorf("flags %#x, want exactly %#x", m.Flags, tt.want)
				}
			}
			checkMetaInvariants(t, tt.frame, &m)
		})
	}
}

// Specific identity properties of the malformed set.
func TestParseMalformedIdentity(t *testing.T) {
	fr := map[string][]byte{}
	for _, m := range malformedFrames(t) {
		if _, ok := fr[m.name]; !ok {
			fr[m.name] = m.frame
		}
	}
	h := func(n string) uint64 { return parsed(fr[n]).Hash }
	if h("ipv6-first-fragment") == h("ipv6-non-first-fragment") {
		t.Error("first and non-first fragment share an identity")
	}
	// A cut frame hashes the invariant bytes that are there: cut inside
	// the L4 window it is another identity, cut after it (a short capture
	// snaplen) it keeps the full frame's identity.
	p := basePkts()["ipv4-tcp"]
	full := p.frame(t)
	if parsed(full[:p.l4Off()+l4Window-1]).Hash == parsed(full).Hash {
		t.Error("frame cut inside the L4 window has the full frame's identity")
	}
	cut := parsed(full[:p.l4Off()+l4Window])
	if cut.Hash != parsed(full).Hash || cut.Flags&FlagTruncated == 0 {
		t.Errorf("frame cut after the L4 window: flags %#x, identity changed %v", cut.Flags, cut.Hash != parsed(full).Hash)
	}
	// A truncated IPv4 header still ignores TTL.
	a := cloneB(full[:14+12])
	b := cloneB(a)
	b[14+8]--
	if parsed(a).Hash != parsed(b).Hash {
		t.Error("truncated IPv4 header: TTL changed the identity")
	}
}

// checkMetaInvariants asserts what must hold for any frame.
func checkMetaInvariants(t *testing.T, frame []byte, m *Meta) {
	t.Helper()
	ip := m.Flags & (FlagIPv4 | FlagIPv6)
	if ip == FlagIPv4|FlagIPv6 {
		t.Fatalf("both IPv4 and IPv6: %#x", m.Flags)
	}
	if ip != 0 && m.Flags&FlagNonIP != 0 {
		t.Fatalf("IP and non-IP: %#x", m.Flags)
	}
	if ip == 0 && m.Flags&(FlagPorts|FlagFragment) != 0 {
		t.Fatalf("ports/fragment without IP: %#x", m.Flags)
	}
	if m.Flags&FlagControl != 0 && (m.EtherType != ControlEtherType || m.Flags&FlagNonIP == 0) {
		t.Fatalf("control flag on EtherType %#x flags %#x", m.EtherType, m.Flags)
	}
	if m.Len != uint32(len(frame)) {
		t.Fatalf("Len %d of %d", m.Len, len(frame))
	}
	if ip != 0 {
		if m.FlowHash != flowHash(&m.Flow) || m.Proto != m.Flow.Proto || m.Flow.IPv6 != (ip == FlagIPv6) {
			t.Fatalf("flow %+v hash %#x", m.Flow, m.FlowHash)
		}
	} else if m.FlowHash != 0 || m.Flow != (FlowKey{}) || m.DSCP != 0 || m.Proto != 0 {
		t.Fatalf("non-IP meta with flow data: %+v", m)
	}
	if m.Flags&FlagPorts == 0 && m.Flow.Proto != protoICMP && m.Flow.Proto != protoICMPv6 &&
		(m.Flow.SrcPort != 0 || m.Flow.DstPort != 0) {
		t.Fatalf("ports without FlagPorts: %+v", m.Flow)
	}
	if m.VLAN > 4095 {
		t.Fatalf("VLAN %d", m.VLAN)
	}
}

// FuzzParse: Parse never panics, is deterministic (also into a dirty
// Meta), keeps its flags consistent, ignores MAC addresses, and ignores
// bytes after the IP packet when it is not truncated.
func FuzzParse(f *testing.F) {
	for _, m := range malformedFrames(f) {
		f.Add(m.frame)
	}
	for _, name := range sortedNames(basePkts()) {
		f.Add(basePkts()[name].frame(f))
	}
	for _, s := range tunnelSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		var a Meta
		Parse(frame, &a)
		checkMetaInvariants(t, frame, &a)
		b := Meta{Hash: 1, FlowHash: 2, Flow: FlowKey{Src: [16]byte{9}, SrcPort: 3, IPv6: true}, VLAN: 4, EtherType: 5, DSCP: 6, Proto: 7, Flags: 0xffff, Len: 8}
		Parse(frame, &b)
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("not deterministic / not every field written:\n%+v\n%+v", a, b)
		}
		if len(frame) >= 12 {
			g := cloneB(frame)
			for i := 0; i < 12; i++ {
				g[i] ^= 0x5a
			}
			Parse(g, &b)
			if !reflect.DeepEqual(a, b) {
				t.Fatalf("MAC addresses changed the meta")
			}
		}
		if at := l3At(frame); a.Flags&(FlagIPv4|FlagIPv6) != 0 && at >= 0 {
			// TTL/hop limit, DSCP/ECN and the IPv4 header checksum are
			// not part of the identity.
			g := cloneB(frame)
			if a.Flags&FlagIPv4 != 0 {
				g[at+1] ^= 0xff // TOS
				g[at+8]--       // TTL
				g[at+10] ^= 0x5a
			} else {
				g[at] ^= 0x0f // traffic class, high nibble
				g[at+1] ^= 0xf0
				g[at+7]-- // hop limit
			}
			Parse(g, &b)
			if b.Hash != a.Hash || b.Flow != a.Flow || b.FlowHash != a.FlowHash {
				t.Fatalf("TTL/DSCP/checksum changed the identity")
			}
		}
		if a.Flags&(FlagIPv4|FlagIPv6) != 0 && a.Flags&FlagTruncated == 0 {
			g := append(cloneB(frame), 0xff, 0xee, 0, 1, 2, 3, 4)
			Parse(g, &b)
			b.Len = a.Len
			if !reflect.DeepEqual(a, b) {
				t.Fatalf("trailing bytes changed an untruncated IP packet's meta:\n%+v\n%+v", a, b)
			}
		}
	})
}

// l3At finds the IP header behind up to maxVLANTags tags, written apart
// from Parse; -1 if the frame has no complete IP header there.
func l3At(f []byte) int {
	at := 12
	for n := 0; n <= maxVLANTags && at+2 <= len(f); n++ {
		et := binary.BigEndian.Uint16(f[at:])
		switch et {
		case 0x8100, 0x88a8, 0x9100:
			at += 4
			continue
		case 0x0800:
			if at+2+20 <= len(f) {
				return at + 2
			}
		case 0x86dd:
			if at+2+40 <= len(f) {
				return at + 2
			}
		}
		return -1
	}
	return -1
}
