package appliance

import (
	"encoding/hex"
	"math"
	"testing"

	"github.com/ldafwd/ldafwd/control"
)

// TestLossFeedback: the control loss this end measures (the peer's
// numbered frames against those that arrived) is what its clock part
// reports; the peer's reports size the parity (the highest of the last
// three, at least ControlParity, none when it is negative); replies are
// held to the interval's budget and to the reported loss.
func TestLossFeedback(t *testing.T) {
	key := make([]byte, 32)
	hello := control.Hello{IntervalNs: 1e9, ConfigHash: 1, Lanes: 1, Clock: "CLOCK_REALTIME", MECs: []string{"all"},
		Parts: []control.PartKey{{MEC: 0, Kind: control.KindLDA}}}
	peer, err := control.NewSender(control.SenderConfig{Key: key, Direction: 1, Hello: hello})
	if err != nil {
		t.Fatal(err)
	}
	recv, err := control.NewReceiver(control.ReceiverConfig{Key: key, Direction: 1, MaxClockSkew: control.NoClockCheck})
	if err != nil {
		t.Fatal(err)
	}
	own, err := control.NewSender(control.SenderConfig{Key: key, Direction: 2, Hello: hello})
	if err != nil {
		t.Fatal(err)
	}
	c := &controller{a: &Appliance{receiver: recv, sender: own}}
	w, _ := peer.NewEndWriter(0)
	// 40 intervals of an End and an interval's frames (Hello, a 3 000-byte
	// part: 4 frames); every 10th frame is lost, the End markers never (the
	// first frame each interval, the one that adopts the session).
	sent, lost := 0, 0
	for k := uint64(1); k <= 40; k++ {
		fr, err := peer.AppendInterval(nil, k, int64(k+1)*1e9, []control.Part{{PartKey: hello.Parts[0], Payload: make([]byte, 3000)}})
		if err != nil {
			t.Fatal(err)
		}
		fr = append([][]byte{w.AppendEnd(nil, k, &control.End{StartNs: int64(k) * 1e9, EndNs: int64(k+1) * 1e9})}, fr...)
		for i, b := range fr {
			sent++
			if i > 0 && sent%10 == 0 {
				lost++
				continue
			}
			if err := recv.Consume(b, int64(k)*1e9); err != nil {
				t.Fatal(err)
			}
		}
		c.measureLoss()
	}
	if !c.fec.ok || math.Abs(float64(c.fec.own)/1e6-0.1) > 0.02 {
		t.Fatalf("measured %d ppm (ok %v), %d of %d frames lost", c.fec.own, c.fec.ok, lost, sent)
	}
	// What the clock part carries, the peer reads.
	part := c.clockPayload(appendPayload(nil, payloadHeader{}))
	far := &controller{a: &Appliance{cfg: Config{}}}
	far.peerClock(&control.IntervalBundle{Payloads: map[control.PartKey][]byte{clockPart: part}})
	if got := far.parityLoss(); math.Abs(got-float64(c.fec.own)/1e6) > 1e-9 {
		t.Errorf("the peer sizes parity for %v, the report said %d ppm", got, c.fec.own)
	}
	for _, ppm := range []uint64{300_000, 50_000, 20_000} {
		far.peerLoss(clockMean{lossPPM: ppm, hasLoss: true})
	}
	if got := far.parityLoss(); got != 0.3 {
		t.Errorf("parity sized for %v, want the highest of the last three reports, 0.3", got)
	}
	far.peerLoss(clockMean{lossPPM: 10_000, hasLoss: true})
	if got := far.parityLoss(); got != 0.05 {
		t.Errorf("parity sized for %v after the 30 %% report aged out, want 0.05", got)
	}
	far.a.cfg.ControlParity = 0.2
	if got := far.parityLoss(); got != 0.2 {
		t.Errorf("parity sized for %v under a floor of 0.2", got)
	}
	far.a.cfg.ControlParity = -1
	if got := far.parityLoss(); got != 0 {
		t.Errorf("parity sized for %v when off", got)
	}

	// Replies: within what the budget of the interval asked about pays,
	// later intervals' included (maxDebtIntervals budgets), whatever the
	// loss (retries are copies); no bound without a budget.
	c.fec.peer = []float64{0.35}
	ans := &answerer{sender: own}
	ans.keepBudget(7, 4000/maxDebtIntervals)
	ans.keepBudget(8, 0)
	fs := own.ExchangeFragmentSize()
	for _, tc := range []struct {
		k    uint64
		body int
		ok   bool
	}{{7, fs, true}, {7, 2 * fs, true}, {7, 3 * fs, false}, {8, 40 * fs, true}} {
		if ok, why := ans.replyFits(tc.k, tc.body); ok != tc.ok {
			t.Errorf("reply of %d bytes about interval %d: fits %v (%s), want %v", tc.body, tc.k, ok, why, tc.ok)
		}
	}
}

// TestClockPartLossGolden pins the control-loss report's bytes.
func TestClockPartLossGolden(t *testing.T) {
	for _, c := range []struct {
		m    clockMean
		want string
	}{
		// flags 2, 100 000 ppm (uvarint a0 8d 06).
		{clockMean{lossPPM: 100_000, hasLoss: true}, "02a08d06"},
		{clockMean{k: 300, meanNs: -200_000, ciNs: 1500, ok: true, lossPPM: 0, hasLoss: true}, "03ac02ffb418dc0b00"},
	} {
		got := appendClockPart(nil, c.m)
		if hex.EncodeToString(got) != c.want {
			t.Errorf("%+v: %x, want %s", c.m, got, c.want)
		}
		if m, err := parseClockPart(got); err != nil || m != c.m {
			t.Errorf("%x: %+v %v", got, m, err)
		}
	}
	for _, bad := range []string{"02", "02c1843d", "02c0843d01", "03ac02ffb418dc0b", "0280"} { // truncated, 1 000 001 ppm, a trailing byte
		b, _ := hex.DecodeString(bad)
		if _, err := parseClockPart(b); err == nil {
			t.Errorf("%q decodes", bad)
		}
	}
}
