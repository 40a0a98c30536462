package control

import (
	"bytes"
	"errors"
	"testing"
)

// newNumberingSender is a Sender that numbers at send (NumberAtSend),
// keyed or not.
func newNumberingSender(t testing.TB, key []byte) *Sender {
	t.Helper()
	s, err := NewSender(SenderConfig{Key: key, Insecure: len(key) == 0, MTU: MinMTU, Session: 0x5EC, Direction: 1, NumberAtSend: true,
		Hello: Hello{IntervalNs: 1e9, ConfigHash: 77, Lanes: 2, Clock: "CLOCK_REALTIME", MECs: []string{"all", "voice"}, Parts: twoParts}})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestNumberAtSend: frames built under NumberAtSend take no number (End
// markers written meanwhile keep theirs consecutive) and carry the
// placeholder, untagged (the tag is computed once, by Number); Number gives each the next number and a tag that
// verifies, so the receiver takes frames built in one order and sent in
// another as a frame sequence without gaps: no frame too old, none
// counted lost, every interval complete.
func TestNumberAtSend(t *testing.T) {
	for _, key := range [][]byte{testKey, nil} {
		s := newNumberingSender(t, key)
		r := newTestReceiver(t, func(c *ReceiverConfig) { c.Key, c.Insecure = key, len(key) == 0 })
		s.SetFrameLimit(MinFrameLimit) // many frames: 58 bytes each
		s.SetLoss(0.3)                 // and parity for the small part
		// Build eight intervals' frames and a reply first, send them
		// newest first: numbered at build, the oldest would arrive
		// thousands of numbers behind the newest.
		const n = 8
		var built [][][]byte
		for k := uint64(5); k < 5+n; k++ {
			fr, err := s.AppendInterval(nil, k, int64(k+1)*1e9, makeParts(k, twoParts, 120000, 3000))
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range fr {
				var p Frame
				if err := ParseFrame(f, &p); err != nil || p.Seq != 1 || p.Flags&FlagInsecure == 0 || !bytes.Equal(p.Tag, make([]byte, TagLen)) {
					t.Fatalf("built frame: seq %d, flags %x, tag % x, %v; want the placeholder 1, unkeyed", p.Seq, p.Flags, p.Tag, err)
				}
			}
			built = append(built, cloneFrames(fr))
		}
		rep, err := s.AppendExchange(nil, TypeReply, 6, 0, KindRDA, 0xABC, 9, bytes.Repeat([]byte{7}, 3000))
		if err != nil {
			t.Fatal(err)
		}
		if got := s.seq.Load(); got != 0 {
			t.Fatalf("building took %d sequence numbers, want none", got)
		}
		if n*len(built[0]) <= ReplayWindow+len(built[0]) {
			t.Fatalf("an interval of %d frames does not test the window", len(built[0]))
		}
		var sent int
		send := func(fs [][]byte, now int64) {
			for _, f := range fs {
				if err := s.Number(f); err != nil {
					t.Fatal(err)
				}
				if err := r.Consume(f, now); err != nil {
					t.Fatalf("key %v: consume: %v", key != nil, err)
				}
				sent++
			}
		}
		for i := n - 1; i >= 0; i-- {
			k := uint64(5 + i)
			var ends [][]byte
			for l := uint16(0); l < 2; l++ {
				w, _ := s.NewEndWriter(l)
				ends = append(ends, w.AppendEnd(nil, k, &End{StartNs: int64(k) * 1e9, EndNs: int64(k+1) * 1e9}))
			}
			consumeAll(t, r, ends, int64(k+1)*1e9)
			sent += len(ends)
			send(built[i], int64(k+1)*1e9)
			if i == 1 {
				send(cloneFrames(rep), int64(k+1)*1e9)
			}
		}
		if c := r.Counters(); c.TooOld != 0 || c.Replayed != 0 || c.Accepted != uint64(sent) || c.Bundles != n {
			t.Fatalf("key %v: counters %+v, %d sent", key != nil, c, sent)
		}
		if snt, got := r.ControlFrames(); snt != got || snt != uint64(sent) {
			t.Fatalf("key %v: control frames %d sent, %d got, want %d both", key != nil, snt, got, sent)
		}
	}
}

// TestNumberNotAFrame: Number leaves what does not parse alone.
func TestNumberNotAFrame(t *testing.T) {
	s := newNumberingSender(t, testKey)
	for _, tt := range malformedFrames(t) {
		b := bytes.Clone(tt.b)
		if err := s.Number(b); err == nil || !bytes.Equal(b, tt.b) {
			t.Fatalf("%s: Number: %v, changed %v", tt.name, err, !bytes.Equal(b, tt.b))
		}
	}
	if err := s.Number(nil); !errors.Is(err, ErrTruncated) {
		t.Fatalf("nil: %v", err)
	}
}

func cloneFrames(fs [][]byte) [][]byte {
	out := make([][]byte, len(fs))
	for i, f := range fs {
		out[i] = bytes.Clone(f)
	}
	return out
}
