package classifier

import (
	"encoding/binary"
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
