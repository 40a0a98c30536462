package appliance

import (
	"testing"
	"time"

	"github.com/ldafwd/ldafwd/control"
	"github.com/ldafwd/ldafwd/dataplane"
)

// TestPacingRules: the injection gap follows the data's frame gap (two
// of them, at most maxInjectGap and interval/400) and narrows while
// control frames wait; the frame limit is the data's mean frame from the
// lossyFrameLoss on; a request asks its reply in fragments that fit
// the data's mean frame.
func TestPacingRules(t *testing.T) {
	iv := time.Second
	set := func(frames, bytes uint64) *dataplane.SynSet {
		return &dataplane.SynSet{FirstK: 5, LastK: 5, Frames: frames, Bytes: bytes}
	}
	for _, c := range []struct {
		frames uint64
		iv     time.Duration
		want   uint64
	}{
		{10_000, iv, 200_000},                // 10 kpps: 200 µs
		{1_000_000, iv, 2_000},               // 1 Mpps: 2 µs
		{100, iv, 250_000},                   // a quiet segment: maxInjectGap
		{0, iv, 250_000},                     // nothing: maxInjectGap
		{100, 10 * time.Millisecond, 25_000}, // a short interval: interval/400
	} {
		if got := injectGap(set(c.frames, 0), c.iv); got != c.want {
			t.Errorf("%d frames in %v: gap %d ns, want %d", c.frames, c.iv, got, c.want)
		}
	}
	// A copy that covered half an interval.
	half := &dataplane.SynSet{FirstK: 5, LastK: 5, StartNs: 1e9, EndNs: 1.5e9, Frames: 5_000}
	if got := injectGap(half, iv); got != 200_000 {
		t.Errorf("5 000 frames in half an interval: gap %d, want 200 000", got)
	}
	if got := paceGap(200_000, 0, iv); got != 200_000 {
		t.Errorf("nothing waiting: %d", got)
	}
	if got := paceGap(200_000, 10_000, iv); got != 25_000 {
		t.Errorf("10 000 frames waiting: %d, want 25 000 (a quarter interval for all)", got)
	}
	if got := frameLimit(0.1, set(1000, 128_000)); got != 0 {
		t.Errorf("10 %% control loss: limit %d", got)
	}
	if got := frameLimit(0.3, set(1000, 128_000)); got != 128 {
		t.Errorf("30 %% control loss, 128-byte data: limit %d", got)
	}
	if got := frameLimit(0.3, set(0, 0)); got != 0 {
		t.Errorf("no data: limit %d", got)
	}
	hello := control.Hello{IntervalNs: 1e9, ConfigHash: 1, Lanes: 1, Clock: "CLOCK_REALTIME", MECs: []string{"all"},
		Parts: []control.PartKey{{MEC: 0, Kind: control.KindLDA}}}
	s, err := control.NewSender(control.SenderConfig{Key: make([]byte, 32), Direction: 1, Hello: hello})
	if err != nil {
		t.Fatal(err)
	}
	q := &requester{sender: s}
	if got := q.replyFrag(); got != partFetchFrag {
		t.Errorf("no data seen: %d", got)
	}
	q.frame = 128
	if got := q.replyFrag(); got != 128-control.Overhead-control.ExchangeHeaderLen {
		t.Errorf("128-byte data: %d", got)
	}
	q.frame = 64
	if got := q.replyFrag(); got != control.MinFrameLimit-control.Overhead-control.ExchangeHeaderLen || got < minReplyFrag {
		t.Errorf("64-byte data: %d", got)
	}
	q.frame = 1500
	if got := q.replyFrag(); got != partFetchFrag {
		t.Errorf("1 500-byte data: %d", got)
	}
	if _, _, err := parsePartRequest(appendPartRequest(nil, q.replyFrag())); err != nil {
		t.Errorf("the request's own fragment size does not parse: %v", err)
	}
	q.frame = 128
	if _, _, err := parsePartRequest(appendPartRequest(nil, q.replyFrag())); err != nil {
		t.Errorf("the request's own fragment size does not parse: %v", err)
	}
}
