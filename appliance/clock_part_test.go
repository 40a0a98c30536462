package appliance

import (
	"encoding/hex"
	"testing"
)

// TestClockPartGolden pins the clock part's body (docs/protocol.md): a
// peer of another build decodes these bytes.
func TestClockPartGolden(t *testing.T) {
	for _, c := range []struct {
		m    clockMean
		want string
	}{
		{clockMean{}, "00"},
		// flags 1, interval 300 (uvarint ac02), mean −200000 ns
		// (zig-zag 399999: ff b4 18), ci 1500 ns (dc 0b).
		{clockMean{k: 300, meanNs: -200_000, ciNs: 1500, ok: true}, "01ac02ffb418dc0b"},
		{clockMean{k: 1, meanNs: 800_000.4, ciNs: 0.2, ok: true}, "010180d46101"},
	} {
		got := appendClockPart(nil, c.m)
		if hex.EncodeToString(got) != c.want {
			t.Errorf("%+v: %x, want %s", c.m, got, c.want)
		}
		m, err := parseClockPart(got)
		if err != nil || m.ok != c.m.ok || m.k != c.m.k {
			t.Errorf("%x: %+v %v", got, m, err)
		}
	}
	for _, bad := range []string{"", "02", "0001", "01", "01ac02", "01ac02ffb418", "01ac02ffb418dc0b00", "03ac02ffb418dc0b"} {
		b, _ := hex.DecodeString(bad)
		if _, err := parseClockPart(b); err == nil {
			t.Errorf("%q decodes", bad)
		}
	}
}

// FuzzParseClockPart: any bytes decode or fail without panicking; what
// decodes re-encodes to the same bytes when canonical, and always to a
// body that decodes the same.
func FuzzParseClockPart(f *testing.F) {
	f.Add(appendClockPart(nil, clockMean{}))
	f.Add(appendClockPart(nil, clockMean{k: 300, meanNs: -200_000, ciNs: 1500, ok: true}))
	f.Add([]byte{1, 0x80})
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := parseClockPart(b)
		if err != nil {
			return
		}
		again := appendClockPart(nil, m)
		m2, err := parseClockPart(again)
		if err != nil || m2 != m {
			t.Fatalf("%x → %+v → %x → %+v %v", b, m, again, m2, err)
		}
		if len(again) > len(b) {
			t.Fatalf("%x re-encoded longer: %x", b, again)
		}
	})
}
