package classifier

import (
	"encoding/binary"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
)

// Golden identity hashes: fixed frames and the packet identity (Meta.Hash)
// each must get. The sender's and the receiver's appliance hash every
// packet independently and the synopses only match when they agree, so
// two versions must compute the same hash; a change to the hash that keeps
// every in-process test green would still break a mixed pair. If it
// changes on purpose, the synopses' wire version must change with it.

// goldenFrame builds an Ethernet frame: MACs, tags (TPID, TCI pairs), the
// EtherType and the payload.
func goldenFrame(tags []uint16, et uint16, payload []byte) []byte {
	b := []byte{0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb}
	for i := 0; i+1 < len(tags); i += 2 {
		b = binary.BigEndian.AppendUint16(b, tags[i])
		b = binary.BigEndian.AppendUint16(b, tags[i+1])
	}
	b = binary.BigEndian.AppendUint16(b, et)
	return append(b, payload...)
}

// goldenIPv4UDP: IPv4 (ID, TTL, DSCP as given) / UDP 1000→2000 / 18 bytes.
func goldenIPv4UDP(id uint16, ttl, tos byte) []byte {
	ip := []byte{0x45, tos, 0, 46, byte(id >> 8), byte(id), 0x40, 0, ttl, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2}
	udp := []byte{0x03, 0xe8, 0x07, 0xd0, 0, 26, 0, 0}
	pay := []byte("golden payload 123")
	return append(append(ip, udp...), pay...)
}

func goldenIPv6TCP() []byte {
	ip := []byte{0x60, 0, 0, 0, 0, 32, 6, 64}
	ip = append(ip, []byte{0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}...)
	ip = append(ip, []byte{0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2}...)
	tcp := []byte{0x1f, 0x90, 0x00, 0x50, 0, 0, 0, 1, 0, 0, 0, 0, 0x50, 0x18, 0xff, 0xff, 0, 0, 0, 0}
	return append(append(ip, tcp...), []byte("GET / HTTP/1.1\r\n")[:12]...)
}

var goldenFrames = []struct {
	name  string
	frame []byte
	hash  uint64
}{
	{"ipv4 udp", goldenFrame(nil, 0x0800, goldenIPv4UDP(0x1234, 64, 0)), 0x8cac22e67b14b3e4},
	// TTL and DSCP change in transit: the same identity.
	{"ipv4 udp, ttl and dscp rewritten", goldenFrame(nil, 0x0800, goldenIPv4UDP(0x1234, 3, 0xb8)), 0x8cac22e67b14b3e4},
	{"ipv4 udp, another ip id", goldenFrame(nil, 0x0800, goldenIPv4UDP(0x1235, 64, 0)), 0xe9e5af2b13bddb60},
	// VLAN tags (added or rewritten by switches) are not part of it.
	{"ipv4 udp behind three vlan tags", goldenFrame([]uint16{0x88a8, 100, 0x8100, 10, 0x9100, 7}, 0x0800, goldenIPv4UDP(0x1234, 64, 0)), 0x8cac22e67b14b3e4},
	{"ipv6 tcp", goldenFrame(nil, 0x86dd, goldenIPv6TCP()), 0xd297ca70edc9a5f4},
	{"arp-like non-ip", goldenFrame(nil, 0x0806, []byte("who has 10.0.0.2? tell 10.0.0.1, padded out")), 0x009df9bf4d2db21d},
	{"control ethertype", goldenFrame(nil, 0x88b5, []byte("LD\x01\x02 a control frame's first bytes......")), 0xada514b2ad4d5080},
	// Tunnels (tunnel.go): the outer identity and the inner packet's,
	// outer IP identification 0 (encapsulate, tunnel_test.go).
	{"gre (key) over ipv4 carrying ipv4 udp", encapsulate(encGRE, false, goldenFrame(nil, 0x0800, goldenIPv4UDP(0x1234, 64, 0))), 0xf827cec63b777157},
	{"gre (key) over ipv6 carrying ipv6 tcp", encapsulate(encGRE, true, goldenFrame(nil, 0x86dd, goldenIPv6TCP())), 0xe96938782c1d014c},
	{"vxlan over ipv4 carrying ipv4 udp", encapsulate(encVXLAN, false, goldenFrame(nil, 0x0800, goldenIPv4UDP(0x1234, 64, 0))), 0xd2860fc6b25074da},
	{"vxlan over ipv6 carrying ipv6 tcp", encapsulate(encVXLAN, true, goldenFrame(nil, 0x86dd, goldenIPv6TCP())), 0x8341e484f674bd28},
	{"geneve (one option) over ipv4 carrying ipv6 tcp", encapsulate(encGeneve, false, goldenFrame(nil, 0x86dd, goldenIPv6TCP())), 0x644196c3c1ff48c3},
	{"geneve (one option) over ipv6 carrying ipv4 udp", encapsulate(encGeneve, true, goldenFrame(nil, 0x0800, goldenIPv4UDP(0x1234, 64, 0))), 0x5e30e560a2fce3ab},
	{"mpls (two labels) carrying ipv4 udp", encapsulate(encMPLS, false, goldenFrame(nil, 0x0800, goldenIPv4UDP(0x1234, 64, 0))), 0xfb09b5870cc52231},
	{"mpls (two labels) carrying ipv6 tcp", encapsulate(encMPLS, false, goldenFrame(nil, 0x86dd, goldenIPv6TCP())), 0xcef41763302b8113},
	// The edges of reading through: optional headers, inner tags, inner
	// fragments and options, and the frames that keep the outer identity.
	{"gre (checksum, key, sequence) over ipv4 carrying ipv4 udp", goldenGRECKS(), 0x32cd3e53d89c9abd},
	{"vxlan carrying a tagged ethernet frame with ipv4 udp", goldenVXLANTagged(), 0x0b153370b83c22f7},
	{"vxlan carrying an ipv4 later fragment", encapsulate(encVXLAN, false, goldenFrame(nil, 0x0800, goldenIPv4Frag())), 0xbcac39ce5bb279fa},
	{"geneve carrying ipv4 udp with options", encapsulate(encGeneve, false, goldenFrame(nil, 0x0800, goldenIPv4Options())), 0x60a88a81efcc41b0},
	{"mpls (two labels) carrying ipv4 tcp syn", encapsulate(encMPLS, false, goldenFrame(nil, 0x0800, goldenIPv4SYN())), 0x1f12a8e07edbaaad},
	{"vxlan carrying ipv6 with a hop-by-hop header", encapsulate(encVXLAN, false, goldenFrame(nil, 0x86dd, goldenIPv6HopByHop())), 0xd75d9e3116397d61},
	{"vxlan whose udp length ends inside the inner ip header", goldenVXLANShortUDP(), 0x4624a545755919de},
	{"vxlan carrying vxlan: the inner one not followed", goldenVXLANInVXLAN(), 0xf3db93d8a30f4315},
	{"vxlan without the I flag: the outer identity", goldenVXLANNoI(), 0x4d5da4a66b2bc82c},
	{"gre in an outer later fragment: the outer identity", goldenGRELaterFragment(), 0x47cabbf7d925f02c},
	{"mpls pseudowire with a control word: the raw identity", goldenMPLSControlWord(), 0xc12e7c7621f187e4},
}

// goldenGRECKS: GRE with checksum, key and sequence number (12 bytes).
func goldenGRECKS() []byte {
	g := encapsulate(encGRE, false, goldenFrame(nil, 0x0800, goldenIPv4UDP(0x1234, 64, 0)))
	g = append(append(cloneB(g[:14+20+4]), 0xab, 0xcd, 0, 0), g[14+20+4:]...) // checksum word before the key
	g = append(append(cloneB(g[:14+20+12]), 0, 0, 0, 7), g[14+20+12:]...)     // sequence number 7 after it
	g[14+20] |= 0x90                                                          // C and S
	binary.BigEndian.PutUint16(g[16:], uint16(len(g)-14))
	return g
}

// goldenVXLANTagged: VXLAN whose inner Ethernet frame has an 802.1Q tag.
func goldenVXLANTagged() []byte {
	return encapsulate(encVXLAN, false, goldenFrame([]uint16{0x8100, 5}, 0x0800, goldenIPv4UDP(0x1234, 64, 0)))
}

// goldenVXLANShortUDP: VXLAN whose UDP length ends 10 bytes into the
// inner IP header: the length bounds the walk through the tunnel
// headers, the inner packet is read to the outer packet's end.
func goldenVXLANShortUDP() []byte {
	g := encapsulate(encVXLAN, false, goldenFrame(nil, 0x0800, goldenIPv4UDP(0x1234, 64, 0)))
	binary.BigEndian.PutUint16(g[14+20+4:], 8+8+14+10)
	return g
}

// goldenVXLANInVXLAN: VXLAN whose inner packet is itself VXLAN (its UDP
// checksum set): one level is read, the inner UDP checksum left out.
func goldenVXLANInVXLAN() []byte {
	in := encapsulate(encVXLAN, false, goldenFrame(nil, 0x0800, goldenIPv4UDP(0x1234, 64, 0)))
	return encapsulate(encVXLAN, false, in)
}

// goldenVXLANNoI: VXLAN without the I flag, which Parse does not read.
func goldenVXLANNoI() []byte {
	g := encapsulate(encVXLAN, false, goldenFrame(nil, 0x0800, goldenIPv4UDP(0x1234, 64, 0)))
	g[14+20+8] = 0
	return g
}

// goldenGRELaterFragment: GRE in an outer IPv4 fragment at offset 8
// bytes: no GRE header there.
func goldenGRELaterFragment() []byte {
	g := encapsulate(encGRE, false, goldenFrame(nil, 0x0800, goldenIPv4UDP(0x1234, 64, 0)))
	g[14+7] = 1
	return g
}

// goldenMPLSControlWord: an Ethernet pseudowire behind one label, with a
// control word (first nibble 0), which Parse does not read.
func goldenMPLSControlWord() []byte {
	inner := goldenFrame(nil, 0x0800, goldenIPv4UDP(0x1234, 64, 0))
	b := goldenFrame(nil, etherTypeMPLS, []byte{0x00, 0x01, 0x01, 64, 0, 0, 0, 9})
	return append(b, inner...)
}

// goldenIPv4Frag: the second fragment of goldenIPv4UDP's datagram.
func goldenIPv4Frag() []byte {
	b := goldenIPv4UDP(0x4321, 64, 0)
	b[6], b[7] = 0, 2 // offset 16 bytes, last fragment
	return b
}

// goldenIPv4Options: goldenIPv4UDP with a 4-byte option (IHL 6).
func goldenIPv4Options() []byte {
	b := goldenIPv4UDP(0x1234, 64, 0)
	b = append(append(cloneB(b[:20]), 0x94, 0x04, 0, 0), b[20:]...) // router alert
	b[0] = 0x46
	binary.BigEndian.PutUint16(b[2:], uint16(len(b)))
	return b
}

// goldenIPv4SYN: IPv4 / TCP SYN with an MSS option.
func goldenIPv4SYN() []byte {
	ip := []byte{0x45, 0, 0, 44, 0x56, 0x78, 0x40, 0, 64, 6, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2}
	tcp := []byte{0x9c, 0x40, 0x00, 0x50, 0, 0, 0x10, 0, 0, 0, 0, 0, 0x60, 0x02, 0xff, 0xff, 0xab, 0xcd, 0, 0, 2, 4, 0x05, 0xb4}
	return append(ip, tcp...)
}

// goldenIPv6HopByHop: goldenIPv6TCP behind an 8-byte hop-by-hop header.
func goldenIPv6HopByHop() []byte {
	b := goldenIPv6TCP()
	hbh := []byte{b[6], 0, 1, 4, 0, 0, 0, 0}
	b = append(append(cloneB(b[:40]), hbh...), b[40:]...)
	b[6] = 0
	binary.BigEndian.PutUint16(b[4:], uint16(len(b)-40))
	return b
}

func TestGoldenIdentityHash(t *testing.T) {
	for _, g := range goldenFrames {
		for _, lv := range []Level{LevelIdentity, LevelFlowKey, LevelFull} {
			var m Meta
			ParseLevel(g.frame, &m, lv)
			if m.Hash != g.hash {
				t.Errorf("%s (level %d): identity %#016x, golden %#016x", g.name, lv, m.Hash, g.hash)
			}
		}
	}
}

var updateGolden = flag.Bool("update-golden", false, "rewrite testdata/identity.golden from goldenFrames")

// goldenFile is where goldenFrames are written for other implementations
// of the identity to hold themselves against (package dpdk's C path: its
// TestIdentCGolden): one vector a line, name, identity and frame (hex),
// separated by tabs.
const goldenFile = "testdata/identity.golden"

func goldenText() string {
	var b strings.Builder
	b.WriteString("# The packet identity (classifier.Meta.Hash) of fixed frames: name, identity, frame (hex),\n")
	b.WriteString("# tab-separated. Written from goldenFrames in golden_test.go by\n")
	b.WriteString("#   go test ./classifier -run TestGoldenFile -update-golden\n")
	for _, g := range goldenFrames {
		fmt.Fprintf(&b, "%s\t%016x\t%x\n", g.name, g.hash, g.frame)
	}
	return b.String()
}

// TestGoldenFile: testdata/identity.golden holds goldenFrames exactly.
func TestGoldenFile(t *testing.T) {
	want := goldenText()
	if *updateGolden {
		if err := os.WriteFile(goldenFile, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(goldenFile)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Fatalf("%s differs from goldenFrames: rerun with -update-golden if the table changed on purpose", goldenFile)
	}
}
