package appliance

import (
	"bytes"
	"encoding/hex"
	"testing"

	"github.com/ldafwd/ldafwd/control"
	"github.com/ldafwd/ldafwd/report"
	"github.com/rs/zerolog"
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
	f.Add(appendClockPart(nil, clockMean{lossPPM: 100_000, hasLoss: true}))
	f.Add(appendClockPart(nil, clockMean{k: 300, meanNs: -200_000, ciNs: 1500, ok: true, lossPPM: 1e6, hasLoss: true}))
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

// TestClockLine: the controller keeps its newest valid whole-class LDA
// mean (the busiest class's within an interval) for its clock part, takes
// the peer's newest from the peer's clock part (ignoring a malformed
// one), and puts θ = (d_fwd − d_rev)/2 ± (ci_fwd + ci_rev)/2 on valid
// lines within maxClockAge intervals of the peer's mean.
func TestClockLine(t *testing.T) {
	var logBuf bytes.Buffer
	c := &controller{a: &Appliance{cfg: Config{Log: zerolog.New(&logBuf)}}}
	line := func(k int64, mec string, recv uint64, mean, ci float64, valid bool) *report.Interval {
		return &report.Interval{Interval: k, MEC: mec, Synopsis: "lda", Valid: valid, Samples: recv, Received: recv, MeanNs: mean, MeanCINs: ci}
	}
	r := line(10, "all", 100, 800e3, 2e3, true)
	c.clockLine(r)
	if r.Extra != nil {
		t.Errorf("an estimate without the peer's mean: %v", r.Extra)
	}
	c.clockLine(line(10, "voice", 500, 810e3, 3e3, true))
	c.clockLine(line(11, "all", 900, 1, 1, false))               // invalid: not taken
	c.clockLine(&report.Interval{Interval: 12, Synopsis: "rda"}) // not an LDA line
	if got := c.clk.own; !got.ok || got.k != 10 || got.meanNs != 810e3 || got.ciNs != 3e3 {
		t.Errorf("own mean %+v, want interval 10's busiest class (810 µs ± 3 µs)", got)
	}
	body := appendClockPart(appendPayload(nil, payloadHeader{}), clockMean{})
	if got := c.clockPayload(appendPayload(nil, payloadHeader{})); bytes.Equal(got, body) {
		t.Errorf("the clock part ships no mean: %x", got)
	}
	peer := func(m clockMean) *control.IntervalBundle {
		return &control.IntervalBundle{Interval: m.k, Payloads: map[control.PartKey][]byte{clockPart: appendClockPart(appendPayload(nil, payloadHeader{}), m)}}
	}
	c.peerClock(&control.IntervalBundle{Payloads: map[control.PartKey][]byte{}}) // an older peer: no clock part
	c.peerClock(&control.IntervalBundle{Payloads: map[control.PartKey][]byte{clockPart: {payloadVersion, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 7}}})
	if c.clk.peer.ok || !bytes.Contains(logBuf.Bytes(), []byte("clock part does not decode")) {
		t.Fatalf("peer %+v after no part and a malformed one; log %s", c.clk.peer, logBuf.Bytes())
	}
	c.peerClock(peer(clockMean{k: 9, meanNs: 200e3, ciNs: 1e3, ok: true}))
	c.peerClock(peer(clockMean{k: 8, meanNs: 1, ciNs: 1, ok: true})) // older: kept out
	c.peerClock(peer(clockMean{}))                                   // none: keeps the last
	r = line(11, "all", 100, 800e3, 2e3, true)
	c.clockLine(r)
	if r.Extra["clock_offset_ns"] != 300e3 || r.Extra["clock_offset_ci_ns"] != 1.5e3 || r.Extra["clock_offset_interval"] != uint64(9) || r.Extra["clock_reverse_mean_ns"] != 200e3 {
		t.Errorf("extra %v, want offset 300000 ± 1500 from interval 9", r.Extra)
	}
	r = line(9+maxClockAge+1, "all", 100, 800e3, 2e3, true)
	c.clockLine(r)
	if r.Extra != nil {
		t.Errorf("an estimate from a mean %d intervals old: %v", maxClockAge+1, r.Extra)
	}
}
