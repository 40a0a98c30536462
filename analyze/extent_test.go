package analyze

import (
	"encoding/binary"
	"testing"
)

// vxlanFrame is an IPv4/UDP/VXLAN frame carrying an inner untagged
// Ethernet IPv4/UDP packet with pay payload bytes, behind tags VLAN tags.
func vxlanFrame(tags, pay int, dport uint16) []byte {
	inner := make([]byte, 14+20+8+pay)
	binary.BigEndian.PutUint16(inner[12:], 0x0800)
	ip := inner[14:]
	ip[0], ip[9] = 0x45, 17
	binary.BigEndian.PutUint16(ip[2:], uint16(20+8+pay))
	binary.BigEndian.PutUint16(ip[4:], 77)
	binary.BigEndian.PutUint16(ip[20+4:], uint16(8+pay))
	f := make([]byte, 12, 128)
	for i := 0; i < tags; i++ {
		f = append(f, 0x81, 0x00, 0, byte(i))
	}
	f = append(f, 0x08, 0x00)
	outer := make([]byte, 20+8+8)
	outer[0], outer[9] = 0x45, 17
	binary.BigEndian.PutUint16(outer[2:], uint16(20+8+8+len(inner)))
	binary.BigEndian.PutUint16(outer[20+2:], dport)
	binary.BigEndian.PutUint16(outer[20+4:], uint16(8+8+len(inner)))
	outer[28] = 0x08 // VXLAN I flag
	return append(append(f, outer...), inner...)
}

// TestIdentityExtentTunnel: a VXLAN packet's identity reaches through the
// outer headers (20 + 8 + 8), the inner Ethernet header (14) and the inner
// packet's own identity (20 + 32); whatever tags were pushed outside; a
// frame cut inside the tunnel headers has an unknown extent, while the
// same frame to another port is an ordinary UDP packet.
func TestIdentityExtentTunnel(t *testing.T) {
	for tags := 0; tags < 3; tags++ {
		f := vxlanFrame(tags, 64, 4789)
		if got, want := identityExtent(f), 20+8+8+14+20+32; got != want {
			t.Errorf("%d tags: extent %d, want %d", tags, got, want)
		}
		l3 := 14 + 4*tags
		if got := identityExtent(f[:l3+20+12]); got != extentUnknown {
			t.Errorf("%d tags, cut in the VXLAN header: extent %d, want unknown", tags, got)
		}
		if got := identityExtent(f[:l3+20+8+8+14+10]); got != 20+8+8+14+20+32 {
			t.Errorf("%d tags, cut in the inner header: extent %d, want the whole", tags, got)
		}
		g := vxlanFrame(tags, 64, 53)
		if got := identityExtent(g[:l3+20+12]); got != 20+32 {
			t.Errorf("%d tags, plain UDP cut: extent %d, want 52", tags, got)
		}
	}
}
