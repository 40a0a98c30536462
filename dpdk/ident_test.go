//go:build dpdk

package dpdk

import (
	"encoding/binary"
	"encoding/hex"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/ldafwd/ldafwd/classifier"
	"github.com/ldafwd/ldafwd/synopsis"
)

// identSeeds are frames of every kind the fast paths and the general path
// see: IPv4 and IPv6 TCP (SYN and not) and UDP, multicast and link-local
// destinations, non-IP frames long and short, 802.3 lengths, VLAN tags,
// link-local and control EtherTypes, fragments, options, truncated and
// malformed headers.
func identSeeds() [][]byte {
	var out [][]byte
	eth := func(dst0 byte, et uint16, payload []byte) []byte {
		f := make([]byte, 14, 14+len(payload))
		f[0], f[5], f[6], f[11] = dst0, 2, 0x02, 1
		binary.BigEndian.PutUint16(f[12:], et)
		return append(f, payload...)
	}
	v4 := func(proto byte, total int, frag uint16, ihl byte, dst [4]byte, l4 []byte) []byte {
		h := make([]byte, 20, 20+len(l4))
		h[0] = 0x40 | ihl
		h[1] = 0xb8
		binary.BigEndian.PutUint16(h[2:], uint16(total))
		binary.BigEndian.PutUint16(h[4:], 0x1234)
		binary.BigEndian.PutUint16(h[6:], frag)
		h[8], h[9] = 64, proto
		copy(h[12:], []byte{10, 0, 0, 1})
		copy(h[16:], dst[:])
		return append(h, l4...)
	}
	v6 := func(nh byte, plen int, dst0 byte, l4 []byte) []byte {
		h := make([]byte, 40, 40+len(l4))
		h[0], h[1], h[2], h[3] = 0x6a, 0xbc, 0xde, 0xf0
		binary.BigEndian.PutUint16(h[4:], uint16(plen))
		h[6], h[7] = nh, 64
		h[8], h[23] = 0x20, 1
		h[24], h[25], h[39] = dst0, 0x02, 2
		return append(h, l4...)
	}
	l4 := func(n int, flags byte) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(i*7 + 3)
		}
		if n > 13 {
			b[13] = flags
		}
		return b
	}
	uni, mc, ll := [4]byte{10, 0, 0, 2}, [4]byte{239, 1, 2, 3}, [4]byte{224, 0, 0, 5}
	for _, proto := range []byte{6, 17, 1, 132} {
		for _, fl := range []byte{0x10, 0x02} {
			out = append(out, eth(0, 0x0800, v4(proto, 20+64, 0, 5, uni, l4(64, fl))))
			out = append(out, eth(0, 0x86DD, v6(proto, 64, 0x20, l4(64, fl))))
		}
	}
	out = append(out,
		eth(1, 0x0800, v4(17, 84, 0, 5, mc, l4(64, 0))),      // IPv4 multicast
		eth(1, 0x0800, v4(17, 84, 0, 5, ll, l4(64, 0))),      // IPv4 link-local multicast
		eth(0x01, 0x86DD, v6(17, 64, 0xff, l4(64, 0))),       // IPv6 multicast ff02::
		eth(0, 0x0800, v4(6, 84, 0x2000, 5, uni, l4(64, 0))), // first fragment
		eth(0, 0x0800, v4(6, 84, 0x0010, 5, uni, l4(64, 0))), // later fragment
		eth(0, 0x0800, v4(6, 88, 0, 6, uni, l4(68, 0))),      // options
		eth(0, 0x0800, v4(6, 40, 0, 5, uni, l4(20, 0))),      // short L4 (general path)
		eth(0, 0x0800, v4(6, 200, 0, 5, uni, l4(64, 0))),     // truncated
		eth(0, 0x0800, v4(6, 84, 0, 5, uni, l4(64, 0))[:30]), // cut header
		eth(0, 0x86DD, v6(0, 64, 0x20, l4(64, 0))),           // extension header
		eth(0, 0x8100, append([]byte{0, 5, 0x08, 0}, v4(6, 84, 0, 5, uni, l4(64, 0))...)),
		eth(0, 0x0806, l4(46, 0)),                                            // ARP
		eth(0, 0x88B5, l4(60, 0)),                                            // control
		eth(0x03, 0x8100, append([]byte{0xC0, 0, 0x88, 0xB5}, l4(60, 0)...)), // priority-tagged control (PCP 6, VID 0)
		eth(0, 0x88CC, l4(60, 0)),                                            // LLDP
		eth(1, 0x0042, l4(60, 0)),                                            // 802.3 length, group MAC
		eth(0, 0x1234, l4(60, 0)),                                            // other EtherType
		eth(0, 0x1234, l4(20, 0)),                                            // short other
		eth(0, 0, make([]byte, 50)),                                          // net_null's frame
		make([]byte, 64),
		make([]byte, 13),
		nil,
	)
	// Tunnels the identity reads through (classifier/tunnel.go): UDP to
	// the VXLAN and Geneve ports (an Ethernet frame inside), GRE (the IP
	// packet), MPLS; over IPv4 and IPv6, carrying IPv4 UDP and IPv6 TCP;
	// and a VXLAN header the parser does not read (no I flag).
	in4, in6 := v4(17, 84, 0, 5, uni, l4(64, 0)), v6(6, 64, 0x20, l4(64, 0x10))
	for _, in := range [][]byte{in4, in6} {
		iet := uint16(0x0800)
		if in[0]>>4 == 6 {
			iet = 0x86DD
		}
		innerEth := eth(0, iet, in)
		for _, port := range []uint16{4789, 6081} {
			hdr := []byte{0x08, 0, 0, 0, 0, 0x10, 0x20, 0}
			if port == 6081 {
				hdr = []byte{0, 0, 0x65, 0x58, 0, 0x10, 0x20, 0}
			}
			u := make([]byte, 8, 16+len(innerEth))
			binary.BigEndian.PutUint16(u[0:], 50000)
			binary.BigEndian.PutUint16(u[2:], port)
			binary.BigEndian.PutUint16(u[4:], uint16(16+len(innerEth)))
			u = append(append(u, hdr...), innerEth...)
			out = append(out, eth(0, 0x0800, v4(17, 20+len(u), 0x4000, 5, uni, u)), eth(0, 0x86DD, v6(17, len(u), 0x20, u)))
			if port == 4789 && iet == 0x0800 {
				v := append([]byte(nil), u...)
				v[8] = 0
				out = append(out, eth(0, 0x0800, v4(17, 20+len(v), 0, 5, uni, v)))
			}
		}
		gre := append([]byte{0, 0, byte(iet >> 8), byte(iet)}, in...)
		out = append(out, eth(0, 0x0800, v4(47, 20+len(gre), 0, 5, uni, gre)), eth(0, 0x86DD, v6(47, len(gre), 0x20, gre)))
		for _, et := range []uint16{0x8847, 0x8848} {
			out = append(out, eth(0, et, append([]byte{0, 1, 1, 64}, in...)))
		}
	}
	stp := eth(1, 0x0026, l4(50, 0))
	copy(stp, []byte{0x01, 0x80, 0xC2, 0, 0, 0})
	out = append(out, stp)
	// Short, tagged and odd frames the C path takes or leaves.
	tag := func(vid byte, et uint16) []byte { return []byte{0, vid, byte(et >> 8), byte(et)} }
	qinq := func(et uint16, payload []byte) []byte {
		b := append(tag(7, 0x8100), tag(9, et)...)
		return eth(0, 0x88A8, append(b, payload...))
	}
	var nine []byte
	for i := 0; i < 8; i++ {
		nine = append(nine, tag(byte(i), 0x8100)...)
	}
	nine = append(nine, tag(9, 0x0800)...)
	icmp6 := func(typ byte) []byte { b := l4(24, 0); b[0] = typ; return v6(58, 24, 0x20, b) }
	out = append(out,
		eth(0, 0x0800, v4(6, 46, 0, 5, uni, l4(26, 0x10))),                           // 60 bytes TCP
		eth(0, 0x0800, v4(6, 46, 0, 5, uni, l4(26, 0x02))),                           // 60 bytes TCP SYN
		eth(0, 0x0800, v4(6, 40, 0, 5, uni, l4(20, 0x02))),                           // SYN, window ≤ 20: no SYN mask
		eth(0, 0x0800, v4(17, 46, 0, 5, uni, l4(26, 0))),                             // 60 bytes UDP
		eth(0, 0x0800, append(v4(17, 28, 0, 5, uni, l4(8, 0)), make([]byte, 18)...)), // UDP, Ethernet padding
		eth(0, 0x0800, v4(17, 22, 0, 5, uni, l4(2, 0))),                              // UDP cut to 2 bytes by the IP length
		eth(0, 0x86DD, v6(6, 24, 0x20, l4(24, 0x10))),                                // 78 bytes TCP/IPv6
		eth(0, 0x86DD, v6(17, 8, 0x20, l4(8, 0))),                                    // UDP/IPv6, 8 bytes
		eth(0, 0x8100, append(tag(5, 0x0800), v4(17, 46, 0, 5, uni, l4(26, 0))...)),  // tagged, 64 bytes
		eth(0, 0x8100, append(tag(5, 0x86DD), v6(17, 64, 0x20, l4(64, 0))...)),       // tagged IPv6
		qinq(0x0800, v4(6, 84, 0, 5, uni, l4(64, 0x10))),                             // QinQ IPv4
		qinq(0x86DD, v6(6, 24, 0x20, l4(24, 0x10))),                                  // QinQ IPv6, short
		qinq(0x1234, l4(40, 0)),                                                      // QinQ non-IP
		qinq(0x88B5, l4(40, 0)),                                                      // QinQ control
		qinq(0x0806, l4(28, 0)),                                                      // QinQ ARP
		eth(0, 0x8100, append(nine, v4(6, 84, 0, 5, uni, l4(64, 0))...)),             // nine tags
		eth(0, 0x8100, []byte{0, 5}),                                                 // tag cut short
		eth(0, 0x0800, v4(1, 28, 0, 5, uni, l4(8, 0))),                               // ICMP echo
		eth(0, 0x0800, v4(132, 48, 0, 5, uni, l4(28, 0))),                            // SCTP
		eth(0, 0x0800, v4(136, 48, 0, 5, uni, l4(28, 0))),                            // UDP-Lite
		eth(0, 0x0800, v4(2, 28, 0, 5, uni, l4(8, 0))),                               // IGMP
		eth(0, 0x0800, v4(99, 28, 0, 5, uni, l4(8, 0))),                              // other protocol
		eth(0, 0x0800, v4(6, 84, 0x2000, 7, uni, l4(56, 0))),                         // options, first fragment
		eth(0, 0x0800, v4(17, 40, 0x0003, 5, uni, l4(20, 0))),                        // later UDP fragment
		eth(0, 0x86DD, icmp6(128)),                                                   // ICMPv6 echo
		eth(0, 0x86DD, icmp6(135)),                                                   // NDP neighbor solicitation
		eth(0, 0x86DD, v6(58, 1, 0x20, []byte{135})),                                 // ICMPv6 cut to one byte
		eth(0, 0x0800, v4(6, 46, 0, 5, uni, l4(26, 0)))[:50],                         // truncated short TCP
	)
	// One 802.1Q tag: the straight-line path's, short windows included.
	tagged := func(ip []byte) []byte {
		et := uint16(0x0800)
		if ip[0]>>4 == 6 {
			et = 0x86DD
		}
		return eth(0, 0x8100, append(tag(5, et), ip...))
	}
	vx := append(make([]byte, 8), l4(40, 0)...)
	vx[2], vx[3], vx[5] = 0x12, 0xB5, 48 // UDP to 4789, no inner frame it reads
	out = append(out,
		tagged(v4(6, 41, 0, 5, uni, l4(21, 0x02))),                                 // SYN, 21-byte window: masked
		tagged(v4(6, 40, 0, 5, uni, l4(20, 0x02))),                                 // SYN, 20-byte window: not
		tagged(v4(17, 20, 0, 5, uni, nil)),                                         // no L4 byte
		tagged(v4(17, 23, 0, 5, uni, l4(3, 0))),                                    // 3 L4 bytes
		tagged(v4(17, 84, 0x4000, 5, uni, l4(64, 0))),                              // DF, whole window
		tagged(v4(17, 84, 0x2000, 5, uni, l4(64, 0))),                              // first fragment
		tagged(v4(6, 46, 0, 5, uni, l4(40, 0x10))),                                 // IP length short of the frame
		tagged(v4(17, 68, 0, 5, uni, vx)),                                          // VXLAN port
		tagged(v6(17, 48, 0x20, vx)),                                               // VXLAN port over IPv6
		tagged(v6(6, 0, 0x20, nil)),                                                // IPv6, no payload
		tagged(v6(17, 64, 0xff, l4(64, 0))),                                        // IPv6 multicast ff02::
		tagged(v6(6, 24, 0x20, l4(24, 0x02))),                                      // IPv6 SYN, 24-byte window
		eth(1, 0x8100, append(tag(5, 0x0800), v4(17, 46, 0, 5, mc, l4(26, 0))...)), // tagged multicast
		eth(0, 0x8100, append(tag(5, 0x8100), tag(6, 0x0800)...)),                  // two 802.1Q tags, cut
		eth(0, 0x8100, append(append(tag(5, 0x8100), tag(6, 0x0800)...), v4(17, 46, 0, 5, uni, l4(26, 0))...)), // two 802.1Q tags
		tagged(v4(17, 46, 0, 5, uni, l4(26, 0)))[:40],                                                          // tagged, truncated
		tagged(v4(6, 84, 0, 5, uni, l4(64, 0)))[:17],                                                           // tag cut
	)
	return out
}

// FuzzIdentC feeds arbitrary frames to the C path's identity (ldaf_ident,
// measure.h) and to the Go parser (classifier.ParseLevel): C must take
// exactly the frames a sender lane records as they are (no truncated,
// malformed, control or link-local flag) but for the ones it leaves to
// the Go lane by design (goOnly), and hash them alike. That includes
// everything classifier's fast paths take (ParseFastOnly).
func FuzzIdentC(f *testing.F) {
	for _, s := range identSeeds() {
		f.Add(s)
	}
	_, golden, _ := goldenIdentities(f)
	for _, s := range golden {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		if len(frame) > 65535 {
			frame = frame[:65535] // an mbuf's data_len
		}
		checkIdent(t, frame)
	})
}

const identSpecial = classifier.FlagTruncated | classifier.FlagMalformed | classifier.FlagControl | classifier.FlagLinkLocal

func checkIdent(t *testing.T, frame []byte) {
	t.Helper()
	h, ok := cIdent(frame)
	// The identity depends on the frame alone, not on what may be read
	// past it: with no room past the frame, the straight-line path is
	// taken by fewer frames.
	if h0, ok0 := cIdentRoom(frame, 0); h0 != h || ok0 != ok {
		t.Fatalf("frame %x: C hash %#x %v with no room past it, %#x %v with room", frame, h0, ok0, h, ok)
	}
	var full classifier.Meta
	classifier.ParseLevel(frame, &full, classifier.LevelIdentity)
	want := full.Flags&identSpecial == 0 && !goOnly(frame)
	if ok != want {
		t.Fatalf("frame %x: C takes it %v, want %v (Go flags %#x)", frame, ok, want, full.Flags)
	}
	if ok && h != full.Hash {
		t.Fatalf("frame %x: C hash %#x, Go %#x (flags %#x)", frame, h, full.Hash, full.Flags)
	}
	if ok {
		// The flow the LDS records it in (ldaf_flow), and the key its
		// flow table keeps.
		classifier.ParseLevel(frame, &full, classifier.LevelFull)
		fh, key := cFlow(frame)
		var want synopsis.FlowKeyBytes
		if full.FlowHash != 0 {
			f := &full.Flow
			want = synopsis.PackFlowKey(f.Src, f.Dst, f.SrcPort, f.DstPort, f.Proto, f.IPv6)
		}
		if fh != full.FlowHash || key != want {
			t.Fatalf("frame %x: C flow %#x key %x, Go %#x key %x", frame, fh, key, full.FlowHash, want)
		}
	}
	// The measuring loop's identity and flow in one walk (ldaf_ident_flow)
	// agree with the two apart, with room past the frame and without.
	for _, slack := range []int{identSlack, 0} {
		h2, ok2, fh2, key2 := cIdentFlow(frame, slack)
		if h2 != h || ok2 != ok {
			t.Fatalf("frame %x (room %d): ldaf_ident_flow %#x %v, ldaf_ident %#x %v", frame, slack, h2, ok2, h, ok)
		}
		if ok {
			fh, key := cFlow(frame)
			if fh2 != fh || key2 != key {
				t.Fatalf("frame %x (room %d): ldaf_ident_flow's flow %#x key %x, ldaf_flow's %#x key %x", frame, slack, fh2, key2, fh, key)
			}
		}
	}
	var m classifier.Meta
	if classifier.ParseFastOnly(frame, &m, classifier.LevelIdentity) && m.Flags&identSpecial == 0 && !ok {
		t.Fatalf("frame %x: Go's fast path takes it, C does not", frame)
	}
}

// goOnly reports whether C leaves frame to the Go lane although the Go
// parser flags nothing a lane decides about: IPv6 extension headers, the
// outer packet's or, in a tunnel the parser reads through (GRE, VXLAN,
// Geneve, MPLS: classifier/tunnel.go), the inner packet's. (It also
// reports true for some frames the parser flags truncated or malformed,
// which C leaves anyway.)
func goOnly(frame []byte) bool {
	be := binary.BigEndian.Uint16
	if len(frame) < 14 {
		return true
	}
	off, et := 12, be(frame[12:])
	for tags := 0; et == 0x8100 || et == 0x88A8 || et == 0x9100; tags++ {
		if tags == 8 || off+6 > len(frame) {
			return true
		}
		et = be(frame[off+4:])
		off += 4
	}
	h := frame[off+2:]
	// innerExt: the tunnel in the outer packet's L4 bytes l4 (bounded by
	// its IP length; for MPLS the bytes after the L2 header) carries IPv6
	// with an extension header.
	innerExt := func(proto uint8, l4 []byte) bool {
		enc, at, iet, _ := classifier.InnerL3(et, proto, l4)
		if enc == 0 || iet != 0x86DD {
			return false
		}
		in := l4[at:] // to the outer packet's end, whatever the UDP length
		return len(in) >= 40 && in[0]>>4 == 6 && extHeader(in[6])
	}
	switch et {
	case 0x8847, 0x8848:
		return innerExt(0, h)
	case 0x0800:
		if len(h) < 20 {
			return true
		}
		ihl, total := int(h[0]&15)*4, int(be(h[2:]))
		if ihl < 20 || total < ihl || total > len(h) {
			return true
		}
		return be(h[6:])&0x1fff == 0 && innerExt(h[9], h[ihl:total])
	case 0x86DD:
		if len(h) < 40 || 40+int(be(h[4:])) > len(h) {
			return true
		}
		return extHeader(h[6]) || innerExt(h[6], h[40:40+int(be(h[4:]))])
	}
	return false
}

// extHeader: an IPv6 next header that is an extension header.
func extHeader(nh uint8) bool {
	switch nh {
	case 0, 43, 44, 51, 60, 135, 139, 140:
		return true
	}
	return false
}

// TestIdentCSeeds runs FuzzIdentC's seeds and checks that C takes the
// common frames itself: IPv4/IPv6 TCP and UDP, whole windows and 64-byte
// frames, untagged, 802.1Q- and QinQ-tagged, and non-IP frames.
func TestIdentCSeeds(t *testing.T) {
	taken := 0
	for _, s := range identSeeds() {
		checkIdent(t, s)
		if _, ok := cIdent(s); ok {
			taken++
		}
	}
	// The 16 IP frames of the first loop, multicast, fragment and option
	// frames, non-IP ones, and of the short and tagged ones all but the
	// control, link-local, IGMP, NDP, nine-tag and cut ones.
	if taken < 45 {
		t.Errorf("C took %d seed frames, want at least 45", taken)
	}
}

// TestIdentCTaggedControl: a priority-tagged control frame (802.1Q tag,
// VLAN id 0, before EtherType 0x88B5) is left to the Go lane by the C fast
// path, and the Go parser marks it control, so the receiving lane strips
// it like an untagged one.
func TestIdentCTaggedControl(t *testing.T) {
	f := make([]byte, 18, 18+60)
	f[0], f[6] = 0x03, 0x02
	binary.BigEndian.PutUint16(f[12:], 0x8100)
	binary.BigEndian.PutUint16(f[14:], 6<<13)
	binary.BigEndian.PutUint16(f[16:], 0x88B5)
	f = append(f, make([]byte, 60)...)
	if _, ok := cIdent(f); ok {
		t.Fatal("C fast path took a tagged control frame")
	}
	var m classifier.Meta
	classifier.ParseLevel(f, &m, classifier.LevelIdentity)
	if m.Flags&classifier.FlagControl == 0 {
		t.Fatalf("Go parser flags %#x: not control", m.Flags)
	}
}

// goldenIdentities are classifier's golden vectors
// (classifier/testdata/identity.golden): fixed frames, tunneled ones
// among them, and the identity the Go parser must give each.
func goldenIdentities(tb testing.TB) (names []string, frames [][]byte, hashes []uint64) {
	b, err := os.ReadFile("../classifier/testdata/identity.golden")
	if err != nil {
		tb.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if l == "" || l[0] == '#' {
			continue
		}
		f := strings.Split(l, "\t")
		if len(f) != 3 {
			tb.Fatalf("golden line %q", l)
		}
		h, err1 := strconv.ParseUint(f[1], 16, 64)
		fr, err2 := hex.DecodeString(f[2])
		if err1 != nil || err2 != nil {
			tb.Fatalf("golden line %q: %v %v", l, err1, err2)
		}
		names, frames, hashes = append(names, f[0]), append(frames, fr), append(hashes, h)
	}
	if len(frames) == 0 {
		tb.Fatal("no golden vectors")
	}
	return names, frames, hashes
}

// TestIdentCGolden: the C path gives classifier's golden vectors their
// golden identity, tunnels included; of them it leaves to the Go lane
// only the control frame, the ARP frame (link-local) and the tunnel
// carrying IPv6 with an extension header.
func TestIdentCGolden(t *testing.T) {
	names, frames, hashes := goldenIdentities(t)
	left := 0
	for i, f := range frames {
		checkIdent(t, f)
		h, ok := cIdent(f)
		if !ok {
			left++
			t.Logf("left to Go: %s", names[i])
			continue
		}
		if h != hashes[i] {
			t.Errorf("%s: C identity %#016x, golden %#016x", names[i], h, hashes[i])
		}
	}
	if left != 3 {
		t.Errorf("C left %d golden frames to Go, want 3 (control, ARP, inner IPv6 extension header)", left)
	}
}

// TestIdentCTunnels: C reads through every tunnel seed (UDP to the VXLAN
// and Geneve ports, GRE, MPLS) as the Go parser does, to an identity that
// is not the outer packet's.
func TestIdentCTunnels(t *testing.T) {
	n := 0
	for _, s := range identSeeds() {
		if len(s) < 14 {
			continue
		}
		at, _, _ := classifier.InnerAt(s)
		if at == 0 {
			continue
		}
		n++
		checkIdent(t, s)
		h, ok := cIdent(s)
		if !ok {
			t.Errorf("C fast path left tunnel frame %x to Go", s)
			continue
		}
		var outer classifier.Meta
		classifier.ParseLevel(s[:at], &outer, classifier.LevelIdentity) // the outer headers alone
		if h == outer.Hash {
			t.Errorf("tunnel frame %x: C did not read through", s)
		}
	}
	if n < 16 {
		t.Fatalf("%d tunnel seeds, want at least 16", n)
	}
}
