package control

import (
	"bufio"
	"os"
	"strings"
	"testing"
)

// TestDefaultSrcMAC: the default source address is locally administered
// unicast, carries the session's low 24 bits, is what a sender without
// SrcMAC puts in its frames, and no vendor of Wireshark's table (where
// installed) claims it.
func TestDefaultSrcMAC(t *testing.T) {
	for _, session := range []uint64{1, 0xdeadbeefcafe, 0xffffffffffffffff, 0x0260_8c00_0000} {
		m := DefaultSrcMAC(session)
		if m[0]&1 != 0 || m[0]&2 == 0 {
			t.Errorf("session %#x: %x is not locally administered unicast", session, m)
		}
		if [3]byte(m[:3]) != SrcMACPrefix || m[3] != byte(session>>16) || m[4] != byte(session>>8) || m[5] != byte(session) {
			t.Errorf("session %#x: %x", session, m)
		}
	}
	s := newTestSenderKey(t, DefaultMTU, 1, nil, nil, 0xabcdef123456)
	if s.cfg.SrcMAC != DefaultSrcMAC(0xabcdef123456) {
		t.Errorf("sender's source %x, want %x", s.cfg.SrcMAC, DefaultSrcMAC(0xabcdef123456))
	}

	f, err := os.Open("/usr/share/wireshark/manuf")
	if err != nil {
		t.Skip("no Wireshark vendor table to check against")
	}
	defer f.Close()
	prefix := "02:4C:44"
	entries := 0
	for sc := bufio.NewScanner(f); sc.Scan(); {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		entries++
		oui := strings.ToUpper(strings.ReplaceAll(strings.Fields(line)[0], "-", ":"))
		oui, _, _ = strings.Cut(oui, "/")
		// An entry claims our addresses when one is a prefix of the other.
		if strings.HasPrefix(oui, prefix) || strings.HasPrefix(prefix, oui) {
			t.Errorf("Wireshark's manuf names %s: %q", prefix, line)
		}
	}
	if entries < 1000 {
		t.Fatalf("read only %d vendor entries", entries)
	}
}
