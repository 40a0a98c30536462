package classifier

import (
	"encoding/binary"
	"net"
	"testing"

	"github.com/google/gopacket/layers"
)

// l2Frame is a frame to dst with EtherType (or 802.3 length) et and a
// 46-byte payload: what switches send among themselves.
func l2Frame(dst [6]byte, et uint16) []byte {
	f := make([]byte, 14+46)
	copy(f, dst[:])
	copy(f[6:], []byte{0x02, 0, 0, 0, 0x77, 1})
	binary.BigEndian.PutUint16(f[12:], et)
	for i := 14; i < len(f); i++ {
		f[i] = byte(i * 7)
	}
	if et <= 1500 {
		f[14], f[15], f[16] = 0x42, 0x42, 0x03 // LLC: STP's DSAP/SSAP, UI
	}
	return f
}

// withMAC sets f's destination MAC.
func withMAC(f []byte, dst [6]byte) []byte { copy(f, dst[:]); return f }

// groupMAC gives an IP frame built by pkt (its IP header at l3) the
// destination MAC its multicast or broadcast destination maps to (RFC
// 1112, RFC 2464), as every sender does; unicast destinations keep pkt's.
func groupMAC(f []byte, l3 int) []byte {
	if binary.BigEndian.Uint16(f[l3-2:]) == 0x86DD {
		if d := f[l3+24:]; d[0] == 0xff {
			copy(f, []byte{0x33, 0x33, d[12], d[13], d[14], d[15]})
		}
		return f
	}
	d := f[l3+16:]
	switch {
	case d[0]&0xf0 == 0xe0:
		copy(f, []byte{0x01, 0x00, 0x5e, d[1] & 0x7f, d[2], d[3]})
	case d[0] == 255 && d[1] == 255 && d[2] == 255 && d[3] == 255:
		copy(f, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	}
	return f
}

// icmpv6 is an IPv6 ICMPv6 frame to dst with the given type.
func icmpv6(tb testing.TB, dst string, typ byte, tags ...uint16) []byte {
	p := pkt{v6: true, proto: layers.IPProtocolICMPv6, dst: net.ParseIP(dst), src: net.ParseIP("fe80::1"), ttl: 255,
		payload: make([]byte, 24), tags: tags}
	f := groupMAC(p.frame(tb), p.l3Off())
	f[p.l4Off()] = typ
	return f
}

// TestLinkLocal holds Parse's FlagLinkLocal to the list in linklocal.go,
// on frames built field by field (gopacket for the IP ones), on every
// parse path: Parse, ParseLean, ParseNoFlowHash and the general path.
func TestLinkLocal(t *testing.T) {
	stp := [6]byte{0x01, 0x80, 0xC2, 0, 0, 0}
	mac := func(last byte) [6]byte { return [6]byte{0x01, 0x80, 0xC2, 0, 0, last} }
	uni := [6]byte{0x02, 0, 0, 0, 1, 2}
	pl := make([]byte, 64) // long enough for the IP fast path
	v4 := func(proto layers.IPProtocol, dst string, tags ...uint16) []byte {
		p := pkt{proto: proto, dst: net.ParseIP(dst), sport: 5353, dport: 5353, payload: pl, tags: tags}
		return groupMAC(p.frame(t), p.l3Off())
	}
	v6 := func(proto layers.IPProtocol, dst string) []byte {
		p := pkt{v6: true, proto: proto, dst: net.ParseIP(dst), sport: 547, dport: 547, payload: pl}
		return groupMAC(p.frame(t), p.l3Off())
	}
	tagged := func(f []byte, vid uint16) []byte {
		out := append(append([]byte(nil), f[:12]...), 0x81, 0, byte(vid>>8), byte(vid))
		return append(out, f[12:]...)
	}
	cases := []struct {
		name string
		f    []byte
		want bool
	}{
		{"STP BPDU (802.3 LLC)", l2Frame(stp, 38), true},
		{"STP BPDU VLAN-tagged (PVST-like)", tagged(l2Frame(stp, 38), 10), true},
		{"PAUSE", l2Frame(mac(1), 0x8808), true},
		{"LACP", l2Frame(mac(2), 0x8809), true},
		{"802.1X EAPOL", l2Frame(mac(3), 0x888E), true},
		{"LLDP", l2Frame(mac(0xE), 0x88CC), true},
		{"01:80:C2:00:00:0F, unknown EtherType", l2Frame(mac(0xF), 0x1234), true},
		{"LLDP to a unicast MAC", l2Frame(uni, 0x88CC), true},
		{"slow protocols to a unicast MAC", l2Frame(uni, 0x8809), true},
		{"EAPOL to a unicast MAC", l2Frame(uni, 0x888E), true},
		{"MAC control to a unicast MAC", l2Frame(uni, 0x8808), true},
		{"CDP (SNAP)", l2Frame([6]byte{0x01, 0x00, 0x0C, 0xCC, 0xCC, 0xCC}, 60), true},
		{"PVST+", l2Frame([6]byte{0x01, 0x00, 0x0C, 0xCC, 0xCC, 0xCD}, 60), true},
		{"ARP broadcast", l2Frame([6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, 0x0806), true},
		{"ARP reply", l2Frame(uni, 0x0806), true},
		{"ARP VLAN-tagged", tagged(l2Frame(uni, 0x0806), 7), true},
		{"OSPF hello 224.0.0.5", v4(89, "224.0.0.5"), true},
		{"VRRP 224.0.0.18", v4(112, "224.0.0.18"), true},
		{"mDNS UDP 224.0.0.251 (fast path)", v4(layers.IPProtocolUDP, "224.0.0.251"), true},
		{"mDNS UDP 224.0.0.251 tagged", v4(layers.IPProtocolUDP, "224.0.0.251", 5), true},
		{"DHCP UDP 255.255.255.255", v4(layers.IPProtocolUDP, "255.255.255.255"), true},
		{"IGMP report to 239.1.2.3", v4(2, "239.1.2.3"), true},
		{"IPv6 UDP to ff02::1:2 (fast path)", v6(layers.IPProtocolUDP, "ff02::1:2"), true},
		{"IPv6 UDP to ff12::1 (transient, link scope)", v6(layers.IPProtocolUDP, "ff12::1"), true},
		{"IPv6 OSPFv3 to ff02::5", v6(89, "ff02::5"), true},
		{"NDP NS to solicited-node", icmpv6(t, "ff02::1:ff00:2", 135), true},
		{"NDP NS unicast (NUD)", icmpv6(t, "fe80::2", 135), true},
		{"NDP NA unicast tagged", icmpv6(t, "2001:db8::2", 136, 9), true},
		{"RA", icmpv6(t, "2001:db8::2", 134), true},
		{"MLDv1 report to ff05::3", icmpv6(t, "ff05::3", 131), true},
		{"MLDv2 report", icmpv6(t, "2001:db8::2", 143), true},
		{"MRD advertisement", icmpv6(t, "2001:db8::2", 151), true},
		{"IPv4 to a unicast MAC of 01:80:C2:00:00:00", withMAC(v4(layers.IPProtocolUDP, "10.0.0.2"), stp), true},

		{"01:80:C2:00:00:10 (not reserved)", l2Frame(mac(0x10), 0x1234), false},
		{"01:00:0C:CC:CC:CE", l2Frame([6]byte{0x01, 0x00, 0x0C, 0xCC, 0xCC, 0xCE}, 60), false},
		{"unknown EtherType, unicast", l2Frame(uni, 0x1234), false},
		{"RARP", l2Frame(uni, 0x8035), false},
		{"IPv4 UDP unicast", v4(layers.IPProtocolUDP, "10.0.0.2"), false},
		{"IPv4 UDP to 239.1.2.3", withMAC(v4(layers.IPProtocolUDP, "239.1.2.3"), [6]byte{0x01, 0x00, 0x5E, 1, 2, 3}), false},
		{"IPv4 UDP to 224.0.1.1 (NTP, routable)", v4(layers.IPProtocolUDP, "224.0.1.1"), false},
		{"IPv4 UDP to 10.255.255.255 (directed broadcast)", v4(layers.IPProtocolUDP, "10.255.255.255"), false},
		{"IPv4 UDP to 169.254.1.1", v4(layers.IPProtocolUDP, "169.254.1.1"), false},
		{"IPv4 OSPF unicast", v4(89, "10.0.0.2"), false},
		{"IPv6 UDP to ff05::1:3", v6(layers.IPProtocolUDP, "ff05::1:3"), false},
		{"IPv6 UDP to fe80::2", v6(layers.IPProtocolUDP, "fe80::2"), false},
		{"IPv6 UDP to ff0e::1", v6(layers.IPProtocolUDP, "ff0e::1"), false},
		// IP link-local destinations are recognised on group MACs only
		// (linklocal.go): a unicast MAC never carries them.
		{"IPv4 OSPF to 224.0.0.5 on a unicast MAC", withMAC(v4(89, "224.0.0.5"), uni), false},
		{"IPv6 UDP to ff02::1 on a unicast MAC", withMAC(v6(layers.IPProtocolUDP, "ff02::1"), uni), false},
		{"ICMPv6 echo", icmpv6(t, "2001:db8::2", 128), false},
		{"ICMPv6 destination unreachable", icmpv6(t, "2001:db8::2", 1), false},
		{"ICMPv6 type 138 (router renumbering)", icmpv6(t, "2001:db8::2", 138), false},
	}
	for _, c := range cases {
		var m Meta
		for _, p := range []struct {
			name  string
			parse func([]byte, *Meta)
		}{{"Parse", Parse}, {"ParseLean", ParseLean}, {"ParseNoFlowHash", ParseNoFlowHash}, {"general", parseGeneral}} {
			m = Meta{}
			p.parse(c.f, &m)
			if got := m.Flags&FlagLinkLocal != 0; got != c.want {
				t.Errorf("%s: %s: link-local %v, want %v (flags %#x)", c.name, p.name, got, c.want, m.Flags)
			}
		}
	}
}

// TestMeasureLinkLocal: without a linklocal:yes rule a link-local frame is
// measured in no class; with one it is measured in that class only (and
// the first such rule that matches wins); ordinary rules never take it,
// and Classify never returns a linklocal rule.
func TestMeasureLinkLocal(t *testing.T) {
	ospf := parsed(groupMAC(pkt{proto: 89, dst: net.ParseIP("224.0.0.5"), tos: 48 << 2, payload: make([]byte, 40)}.frame(t), 14))
	arp := parsed(l2Frame([6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, 0x0806))
	user := parsed(pkt{proto: layers.IPProtocolUDP, tos: 48 << 2, sport: 1, dport: 2, payload: make([]byte, 64)}.frame(t))
	for _, tc := range []struct {
		specs           []string
		ospf, arp, user int // MEC id, -1: not measured
	}{
		{nil, -1, -1, 0},
		{[]string{"nc=dscp:cs6"}, -1, -1, 1},
		{[]string{"nc=dscp:cs6", "ll=linklocal:yes"}, 2, 2, 1},
		{[]string{"ll=linklocal:yes", "nc=dscp:cs6"}, 1, 1, 2},
		{[]string{"ospf=linklocal:yes,proto:ospf", "nc=dscp:cs6"}, 1, -1, 2},
		{[]string{"ospf=linklocal:yes,proto:ospf", "ll=linklocal:YES"}, 1, 2, 0},
	} {
		for _, linear := range []bool{false, true} {
			c, err := NewClassifierFromSpecs(tc.specs)
			if err != nil {
				t.Fatal(err)
			}
			if linear {
				c.tab = nil
			}
			for _, x := range []struct {
				name string
				m    Meta
				want int
			}{{"ospf", ospf, tc.ospf}, {"arp", arp, tc.arp}, {"user", user, tc.user}} {
				mec, ok := c.Measure(&x.m)
				got := int(mec)
				if !ok {
					got = -1
				}
				if got != x.want {
					t.Errorf("%v linear=%v %s: Measure %d,%v, want %d", tc.specs, linear, x.name, mec, ok, x.want)
				}
				if cl := c.Classify(&x.m); cl != 0 && c.rules[cl-1].linkLocal {
					t.Errorf("%v %s: Classify returned linklocal rule %d", tc.specs, x.name, cl)
				}
			}
			if c.MeasuresLinkLocal() != (tc.ospf > 0 || tc.arp > 0) {
				t.Errorf("%v: MeasuresLinkLocal %v", tc.specs, c.MeasuresLinkLocal())
			}
		}
	}
	var nilC *Classifier
	if _, ok := nilC.Measure(&arp); ok {
		t.Error("nil classifier measures ARP")
	}
	if mec, ok := nilC.Measure(&user); !ok || mec != 0 {
		t.Error("nil classifier does not measure user traffic in all")
	}
	for _, bad := range []string{"x=linklocal:no", "x=linklocal:", "x=linklocal:yes,linklocal:yes"} {
		if _, err := ParseMEC(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	r, err := ParseMEC("ll=linklocal:yes,proto:ospf")
	if err != nil || !r.LinkLocal || r.String() != "ll=proto:ospf,linklocal:yes" {
		t.Errorf("ParseMEC/String: %+v %v %q", r, err, r.String())
	}
}

// TestMeasureZeroAllocs pins Measure, link-local or not.
func TestMeasureZeroAllocs(t *testing.T) {
	c, err := NewClassifierFromSpecs([]string{"ospf=linklocal:yes,proto:ospf", "v=dscp:ef"})
	if err != nil {
		t.Fatal(err)
	}
	arp := parsed(l2Frame([6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, 0x0806))
	user := parsed(pkt{proto: layers.IPProtocolUDP, sport: 1, dport: 2, payload: make([]byte, 64)}.frame(t))
	if n := testing.AllocsPerRun(100, func() { c.Measure(&arp); c.Measure(&user) }); n != 0 {
		t.Errorf("Measure allocates %v", n)
	}
	f := l2Frame([6]byte{0x01, 0x80, 0xC2, 0, 0, 0}, 38)
	var m Meta
	if n := testing.AllocsPerRun(100, func() { Parse(f, &m) }); n != 0 {
		t.Errorf("Parse of a BPDU allocates %v", n)
	}
}
