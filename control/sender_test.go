package control

import "testing"

// TestSessionMAC: the default source address is locally administered and
// unicast (bits 1 and 0 of the first octet), under the fixed 02:4c:44
// prefix, and carries the session's low 24 bits.
func TestSessionMAC(t *testing.T) {
	m := SessionMAC(0x1122334455667788)
	if m[0]&2 == 0 || m[0]&1 != 0 {
		t.Fatalf("%x: not a locally administered unicast address", m)
	}
	if m != [6]byte{0x02, 0x4c, 0x44, 0x66, 0x77, 0x88} {
		t.Fatalf("%x", m)
	}
	s := newTestSenderKey(t, DefaultMTU, 1, nil, nil, 0xABCDEF)
	if s.cfg.SrcMAC != SessionMAC(0xABCDEF) {
		t.Fatalf("sender's default source %x", s.cfg.SrcMAC)
	}
}
