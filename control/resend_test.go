package control

import (
	"bytes"
	"errors"
	"slices"
	"testing"
)

// TestResendRoundTrip: a reply of which the segment lost some fragments
// is completed by the fragments a resend request names, and only those:
// the requester's ReplyMissing names them, AppendResend/ParseResend
// carry them, AppendExchangeOnly builds them with fresh sequence
// numbers, and no number goes unsent (the receiver's control-loss count
// stays at the fragments really lost).
func TestResendRoundTrip(t *testing.T) {
	s, r := liveExchangePair(t)
	const to, id = 0xABCD, 9
	body := payloadFor(9, PartKey{0, KindLDA}, 2000)
	frames, err := s.AppendExchangeSized(nil, TypeReply, 5, 0, KindLDA, to, id, body, 100)
	if err != nil {
		t.Fatal(err)
	}
	n := len(frames)
	if n != 20 {
		t.Fatalf("%d fragments for 2000 bytes at 100", n)
	}
	if _, ok := r.ReplyMissing(s.Session(), to, id, nil); ok {
		t.Fatal("a reply of which nothing arrived is reported partial")
	}
	lost := map[int]bool{0: true, 7: true, 19: true}
	for i, f := range frames {
		if !lost[i] {
			if err := r.Consume(f, 0); err != nil {
				t.Fatal(err)
			}
		}
	}
	if xs := r.Exchanges(nil); len(xs) != 0 {
		t.Fatalf("a reply missing 3 fragments completed: %d", len(xs))
	}
	miss, ok := r.ReplyMissing(s.Session(), to, id, nil)
	if !ok || len(miss) != n {
		t.Fatalf("ReplyMissing: %v %v", miss, ok)
	}
	for i, m := range miss {
		if m != lost[i] {
			t.Fatalf("fragment %d: missing %v, lost %v", i, m, lost[i])
		}
	}
	if _, ok := r.ReplyMissing(s.Session(), to, id+1, nil); ok {
		t.Fatal("another request id reported partial")
	}
	req := AppendResend(nil, miss)
	if !IsResend(req) {
		t.Fatal("IsResend false on AppendResend's body")
	}
	only, err := ParseResend(req, nil)
	if err != nil || !slices.Equal(only, miss) {
		t.Fatalf("ParseResend: %v %v", only, err)
	}
	again, err := s.AppendExchangeOnly(nil, TypeReply, 5, 0, KindLDA, to, id, body, 100, only)
	if err != nil || len(again) != len(lost) {
		t.Fatalf("AppendExchangeOnly: %d frames, %v", len(again), err)
	}
	for _, f := range again {
		if err := r.Consume(f, 0); err != nil {
			t.Fatal(err)
		}
	}
	xs := r.Exchanges(nil)
	if len(xs) != 1 || !bytes.Equal(xs[0].Body, body) || xs[0].ID != id || xs[0].Kind != KindLDA {
		t.Fatalf("after the resend: %d exchanges", len(xs))
	}
	sent, got := r.ControlFrames()
	if sent-got != uint64(len(lost)) {
		t.Fatalf("control frames: %d numbered, %d arrived: want %d lost (the first try's)", sent, got, len(lost))
	}
	if _, err := s.AppendExchangeOnly(nil, TypeReply, 5, 0, KindLDA, to, id, body, 100, only[:5]); err == nil {
		t.Fatal("a selection of the wrong length was taken")
	}
}

// TestParseResend: the bitmap's bounds.
func TestParseResend(t *testing.T) {
	for _, c := range []struct {
		name string
		body []byte
	}{
		{"empty", nil},
		{"magic", []byte{0xA8, 1, 1, 1}},
		{"version", []byte{resendMagic, 2, 1, 1}},
		{"zero count", []byte{resendMagic, resendVersion, 0}},
		{"too many", append([]byte{resendMagic, resendVersion, 0x81, 0x02}, make([]byte, 33)...)},
		{"long varint", []byte{resendMagic, resendVersion, 0x81, 0x00, 1}},
		{"short bitmap", []byte{resendMagic, resendVersion, 9, 1}},
		{"long bitmap", []byte{resendMagic, resendVersion, 8, 1, 0}},
		{"bit past count", []byte{resendMagic, resendVersion, 3, 0x09}},
		{"nothing asked", []byte{resendMagic, resendVersion, 3, 0}},
	} {
		if _, err := ParseResend(c.body, nil); !errors.Is(err, ErrResend) {
			t.Errorf("%s: %v", c.name, err)
		}
	}
	miss := make([]bool, MaxExchangeFragments)
	miss[255] = true
	got, err := ParseResend(AppendResend(nil, miss), nil)
	if err != nil || !slices.Equal(got, miss) {
		t.Fatalf("256 fragments: %v", err)
	}
}

// FuzzParseResend: no body panics ParseResend, and one it takes encodes
// back to itself.
func FuzzParseResend(f *testing.F) {
	f.Add(AppendResend(nil, []bool{true, false, true}))
	f.Add([]byte{resendMagic, resendVersion, 9, 1, 1})
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := ParseResend(b, nil)
		if err != nil {
			return
		}
		if !bytes.Equal(AppendResend(nil, got), b) {
			t.Fatalf("%x parses to %v, which encodes to %x", b, got, AppendResend(nil, got))
		}
	})
}

// TestControlFramesSettled: a frame numbered before later ones that
// arrive first (paced behind the data while the lane sent an End marker)
// is not counted lost while it is on its way: the settled count stops at
// the previous call's highest number.
func TestControlFramesSettled(t *testing.T) {
	var q seqLoss
	for seq := uint64(1); seq <= 10; seq++ {
		q.add(seq)
	}
	q.mark = q.hi // a call at 10
	// 11 and 12 are on their way; 13 … 15 (End markers) overtake them.
	for _, seq := range []uint64{13, 14, 15} {
		q.add(seq)
	}
	if s, g := q.settled(); s != 10 || g != 10 {
		t.Fatalf("settled up to 10: %d numbered, %d arrived", s, g)
	}
	q.mark = q.hi // a call at 15
	q.add(11)
	q.add(12)
	q.add(16)
	if s, g := q.settled(); s != 15 || g != 15 {
		t.Fatalf("settled up to 15: %d numbered, %d arrived", s, g)
	}
	// 17 is lost for good: it counts once the mark passes it.
	q.mark = q.hi
	q.add(18)
	q.add(19)
	q.mark = q.hi
	if s, g := q.settled(); s != 19 || g != 18 {
		t.Fatalf("settled up to 19: %d numbered, %d arrived", s, g)
	}
	// A jump past the remembered range: what arrived above the mark is
	// no longer known, and every number up to the highest counts.
	q.add(19 + 2*seenBits)
	if s, g := q.settled(); s != 19+2*seenBits || g != 19 {
		t.Fatalf("after a jump: %d numbered, %d arrived", s, g)
	}
	q.restart()
	if s, g := q.settled(); s != 0 || g != 0 {
		t.Fatalf("after a restart: %d, %d", s, g)
	}
}

// TestFrameLimit: under SetFrameLimit a part and a reply are cut into
// frames of at most the limit, parity included, and every size the
// budget counts follows; a part the limit would cut into more than
// MaxLimitedFragments takes larger fragments; lifting the limit restores
// the MTU's.
func TestFrameLimit(t *testing.T) {
	s := newTestSender(t, 1500, 1, []PartKey{{0, KindLDA}})
	s.SetLoss(0.2)
	full := s.PartBytes(3000)
	s.SetFrameLimit(128)
	if s.FrameLimit() != 128 {
		t.Fatalf("FrameLimit %d", s.FrameLimit())
	}
	p := Part{PartKey{0, KindLDA}, payloadFor(5, PartKey{0, KindLDA}, 3000)}
	frames, err := s.AppendInterval(nil, 5, 0, []Part{p})
	if err != nil {
		t.Fatal(err)
	}
	total, longest := 0, 0
	for i, f := range frames {
		total += len(f)
		if i > 0 { // the Hello is never cut
			longest = max(longest, len(f))
		}
	}
	if longest > 128 {
		t.Fatalf("a fragment of %d bytes under a 128-byte limit", longest)
	}
	if got := s.IntervalBytes(0, len(p.Payload)); got != total {
		t.Fatalf("IntervalBytes %d, frames %d bytes", got, total)
	}
	if s.PartBytes(3000) <= full {
		t.Fatalf("small frames cost %d bytes, full ones %d", s.PartBytes(3000), full)
	}
	r := newTestReceiver(t, nil)
	consumeAll(t, r, frames, 0)
	// A reply follows the limit too.
	x, err := s.AppendExchange(nil, TypeReply, 5, 0, KindLDA, 1, 1, make([]byte, 1000))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range x {
		if len(f) > 128 {
			t.Fatalf("a reply fragment of %d bytes", len(f))
		}
	}
	// A part too large for MaxLimitedFragments at the limit takes
	// larger fragments, up to the MTU's.
	k, _ := s.PartFrames(20_000)
	kBig, _ := s.PartFrames(200_000)
	s.SetFrameLimit(0)
	kMTU, _ := s.PartFrames(200_000)
	if k > MaxLimitedFragments || kBig != kMTU {
		t.Fatalf("%d data fragments for 20 000 bytes, %d for 200 000 (%d at the MTU)", k, kBig, kMTU)
	}
	if s.FrameLimit() != 0 || s.FragmentSize() != FragmentPayload(1500) || s.PartBytes(3000) != full {
		t.Fatalf("after lifting: limit %d, fragment %d", s.FrameLimit(), s.FragmentSize())
	}
	s.SetFrameLimit(10)
	if s.FrameLimit() != MinFrameLimit {
		t.Fatalf("a limit under the least: %d", s.FrameLimit())
	}
}
