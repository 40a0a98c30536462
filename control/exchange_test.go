package control

import (
	"bytes"
	"errors"
	"testing"
)

// liveExchangePair is a Sender at MTU 300 of one LDA part and a Receiver
// whose session with it is live (through an interval's End and Hello),
// for requests and replies to pass.
func liveExchangePair(t testing.TB) (*Sender, *Receiver) {
	t.Helper()
	s := newTestSender(t, 300, 1, []PartKey{{0, KindLDA}})
	r := newTestReceiver(t, nil)
	consumeAll(t, r, intervalFrames(t, s, 5, []Part{{PartKey{0, KindLDA}, payloadFor(5, PartKey{0, KindLDA}, 10)}}), 0)
	return s, r
}

// TestExchangeRoundTrip: a request of several fragments, sent as frames
// of the requester's session, reassembles at the peer's Receiver in any
// order; a retry (same message, new sequence numbers) completes again,
// a replayed frame is dropped by the replay window, and a frame of a
// session the Receiver does not follow (or a forged one) never gets in.
func TestExchangeRoundTrip(t *testing.T) {
	s, r := liveExchangePair(t)
	body := payloadFor(9, PartKey{1, KindRDA}, 1000)
	frames, err := s.AppendExchange(nil, TypeRequest, 5, 1, KindRDA, 0xABCD, 7, body)
	if err != nil {
		t.Fatal(err)
	}
	if len(frames) < 4 {
		t.Fatalf("%d frames for 1000 bytes at MTU 300", len(frames))
	}
	total := 0
	for _, f := range frames {
		total += len(f)
	}
	if got := s.ExchangeBytes(len(body)); got != total {
		t.Fatalf("ExchangeBytes %d, frames %d bytes", got, total)
	}
	for i := len(frames) - 1; i >= 0; i-- { // reversed
		if err := r.Consume(frames[i], 0); err != nil {
			t.Fatal(err)
		}
	}
	xs := r.Exchanges(nil)
	if len(xs) != 1 {
		t.Fatalf("%d exchanges", len(xs))
	}
	x := xs[0]
	if x.Type != TypeRequest || x.Session != s.Session() || x.To != 0xABCD || x.ID != 7 || x.Interval != 5 || x.MEC != 1 || x.Kind != KindRDA ||
		!bytes.Equal(x.Body, body) || x.Frames != len(frames) || x.Bytes != total {
		t.Fatalf("exchange %+v", x)
	}
	// A replay of the same frames: every one dropped, nothing completes.
	for _, f := range frames {
		if err := r.Consume(f, 0); !errors.Is(err, ErrReplayed) {
			t.Fatalf("replayed frame: %v", err)
		}
	}
	if xs := r.Exchanges(nil); len(xs) != 0 {
		t.Fatalf("a replay completed %d exchanges", len(xs))
	}
	// A retry is new frames: it completes again (the replier answers
	// again; the requester accepts one reply).
	retry, _ := s.AppendExchange(nil, TypeRequest, 5, 1, KindRDA, 0xABCD, 7, body)
	consumeAll(t, r, retry, 0)
	if xs := r.Exchanges(nil); len(xs) != 1 || !bytes.Equal(xs[0].Body, body) {
		t.Fatalf("retry: %d exchanges", len(xs))
	}
	// An empty reply is one fragment.
	rep, _ := s.AppendExchange(nil, TypeReply, 5, 0, KindRDA, 0x1234, 8, nil)
	consumeAll(t, r, rep, 0)
	if xs := r.Exchanges(nil); len(xs) != 1 || xs[0].Type != TypeReply || len(xs[0].Body) != 0 || len(rep) != 1 {
		t.Fatalf("empty reply: %+v", xs)
	}
	// Another session's request (never adopted: no End or Hello) and a
	// forged one are refused.
	other := newTestSenderKey(t, 300, 1, nil, testKey, 0)
	of, _ := other.AppendExchange(nil, TypeRequest, 5, 0, KindRDA, 0xABCD, 1, []byte("x"))
	if err := r.Consume(of[0], 0); !errors.Is(err, ErrNoFreshHello) {
		t.Fatalf("request of an unknown session: %v", err)
	}
	forged := append([]byte(nil), rep[0]...)
	forged[len(forged)-1] ^= 1
	if err := r.Consume(forged, 0); !errors.Is(err, ErrBadTag) {
		t.Fatalf("forged reply: %v", err)
	}
	if c := r.Counters(); c.Exchanges != 3 {
		t.Fatalf("exchanges counter %d", c.Exchanges)
	}
	// A request fragment shorter than its header is malformed.
	a := mustAuth(t, testKey)
	if _, err := AppendFrame(nil, a, [6]byte{}, &Header{Type: TypeRequest, Session: 1, Seq: 1, FragCount: 1}, []byte{1, 2}); err == nil {
		t.Fatal("short request payload built")
	}
}

// TestExchangeBounds: an oversized message is refused at the sender, and
// the receiver holds at most MaxExchangesInFlight incomplete messages.
func TestExchangeBounds(t *testing.T) {
	s := newTestSender(t, 300, 1, []PartKey{{0, KindLDA}})
	if _, err := s.AppendExchange(nil, TypeRequest, 1, 0, KindRDA, 1, 1, make([]byte, MaxExchangeFragments*s.ExchangeFragmentSize()+1)); err == nil {
		t.Fatal("oversized request built")
	}
	if _, err := s.AppendExchange(nil, TypeHello, 1, 0, KindRDA, 1, 1, nil); err == nil {
		t.Fatal("exchange of type hello built")
	}
	r := newTestReceiver(t, nil)
	consumeAll(t, r, intervalFrames(t, s, 5, []Part{{PartKey{0, KindLDA}, nil}}), 0)
	for id := uint32(0); id < 2*MaxExchangesInFlight; id++ {
		fr, _ := s.AppendExchange(nil, TypeReply, 5, 0, KindRDA, 1, id, make([]byte, 600))
		consumeAll(t, r, fr[:1], 0) // first fragment only
	}
	if n := len(r.xasm.inflight); n != MaxExchangesInFlight {
		t.Fatalf("%d in flight", n)
	}
	if c := r.Counters(); c.Evicted != MaxExchangesInFlight {
		t.Fatalf("evicted %d", c.Evicted)
	}
	r.Expire(DefaultTimeout + 1)
	if n := len(r.xasm.inflight); n != 0 {
		t.Fatalf("%d in flight after expiry", n)
	}
}

// FuzzExchange feeds arbitrary request and reply fragments (authentic:
// the fuzzer controls the header fields and payload, the tag is
// computed) to a Receiver whose session is live: never a panic, and
// every completed message is within the bounds.
func FuzzExchange(f *testing.F) {
	f.Add([]byte{4, 0, 2, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 7, 'x'})
	f.Add([]byte{5, 1, 2, 1, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 7})
	// Priority-tagged (the kind byte's high nibble is the priority).
	f.Add([]byte{4, 0x60, 2, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 7, 'x'})
	f.Fuzz(func(t *testing.T, data []byte) {
		s := newTestSender(t, 300, 1, []PartKey{{0, KindLDA}})
		r := newTestReceiver(t, nil)
		consumeAll(t, r, intervalFrames(t, s, 5, []Part{{PartKey{0, KindLDA}, nil}}), 0)
		a := mustAuth(t, testKey)
		seq := uint64(1000)
		for len(data) >= 5 {
			prio := Priority(data[1] >> 4 % 9)
			typ, kind, idx, cnt, n := Type(4+data[0]%2), Kind(data[1]&0x0f%4), uint16(data[2]%8), uint16(data[3]%8), int(data[4])
			data = data[5:]
			n = min(n, len(data))
			p := data[:n]
			data = data[n:]
			seq++
			h := Header{Type: typ, Kind: kind, Session: s.Session(), Interval: 5, Seq: seq, FragIndex: idx, FragCount: cnt, Direction: 1}
			fr, err := AppendFramePriority(nil, a, [6]byte{}, &h, p, prio)
			if err != nil {
				continue
			}
			r.Consume(fr, 0)
			// And the same bytes cut short.
			r.Consume(fr[:len(fr)/2], 0)
		}
		for _, x := range r.Exchanges(nil) {
			if x.Frames < 1 || len(x.Body) > MaxExchangeFragments*300 {
				t.Fatalf("exchange %+v", x)
			}
		}
	})
}
