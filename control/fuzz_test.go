package control

import (
	"bytes"
	"errors"
	"testing"
)

// FuzzParseFrame: any bytes parse or fail with one of the package errors,
// never panic; whatever parses re-encodes to the same header bytes, and
// decodable End/Hello payloads round trip.
func FuzzParseFrame(f *testing.F) {
	for _, tt := range malformedFrames(f) {
		f.Add(tt.b)
	}
	f.Add(validFrame(f, nil))
	f.Add(validFrame(f, []byte("payload")))
	s := newTestSender(f, MinMTU, 2, twoParts)
	for _, fr := range intervalFrames(f, s, 9, makeParts(9, twoParts, 300, 0)) {
		f.Add(fr)
	}
	known := []error{ErrNotControl, ErrTruncated, ErrBadMagic, ErrBadVersion, ErrBadHeader, ErrBadPayload}
	f.Fuzz(func(t *testing.T, b []byte) {
		var fr Frame
		err := ParseFrame(b, &fr)
		if err != nil {
			for _, k := range known {
				if err == k {
					return
				}
			}
			t.Fatalf("unexpected error %v", err)
		}
		if len(fr.Authed) != HeaderLen+int(fr.PayloadLen) || len(fr.Payload) != int(fr.PayloadLen) || len(fr.Tag) != TagLen {
			t.Fatalf("lengths: authed %d payload %d tag %d, header says %d", len(fr.Authed), len(fr.Payload), len(fr.Tag), fr.PayloadLen)
		}
		if !fr.Header.valid() {
			t.Fatalf("invalid header accepted: %+v", fr.Header)
		}
		if h := fr.Header.append(nil); !bytes.Equal(h, fr.Authed[:HeaderLen]) {
			t.Fatalf("header re-encodes as % x, parsed from % x", h, fr.Authed[:HeaderLen])
		}
		// Re-frame the parsed content with its own flags: the insecure
		// version must parse back to the same header and payload.
		if fr.Flags&FlagInsecure != 0 {
			a, _ := NewAuthenticator(nil)
			out, err := AppendFrame(nil, a, fr.SrcMAC, &fr.Header, fr.Payload)
			if err != nil {
				t.Fatalf("parsed header does not re-frame: %v", err)
			}
			var back Frame
			if err := ParseFrame(out, &back); err != nil || back.Header != fr.Header || !bytes.Equal(back.Payload, fr.Payload) {
				t.Fatalf("re-framed frame differs: %v %+v", err, back.Header)
			}
		}
		switch fr.Type {
		case TypeEnd:
			var e End
			if e.UnmarshalBinary(fr.Payload) == nil && !bytes.Equal(e.AppendBinary(nil), fr.Payload) {
				t.Fatal("end payload does not round trip")
			}
		case TypeHello:
			var h Hello
			if h.UnmarshalBinary(fr.Payload) == nil {
				p, err := h.AppendBinary(nil)
				if err != nil || !bytes.Equal(p, fr.Payload) {
					t.Fatalf("hello payload does not round trip: %v", err)
				}
			}
		}
	})
}

// fuzzWorld is a fixed set of frames from two authentic sessions (a sender
// and its restart) and a forger with the wrong key, and the reference of
// what the authentic senders sent.
type fuzzWorld struct {
	pool [][]byte // authentic frames
	fake [][]byte // same sessions and layout, wrong key, other payloads
	ref  map[[2]uint64][]Part
}

func newFuzzWorld(t testing.TB) *fuzzWorld {
	w := &fuzzWorld{ref: map[[2]uint64][]Part{}}
	forgerKey := bytes.Repeat([]byte{0x5A}, KeyLen)
	for _, sess := range []uint64{0xABC, 0xDEF} {
		s := newTestSenderKey(t, MinMTU, 2, twoParts, testKey, sess)
		forger := newTestSenderKey(t, MinMTU, 2, twoParts, forgerKey, sess)
		for k := uint64(1); k <= 3; k++ {
			// Sizes from 0 to 449 bytes: zero to three fragments' worth.
			parts := makeParts(k+sess, twoParts, 450)
			for i := range parts {
				parts[i].Payload = parts[i].Payload[:int(k*sess+uint64(i)*97)%450]
			}
			w.ref[[2]uint64{sess, k}] = parts
			w.pool = append(w.pool, intervalFrames(t, s, k, parts)...)
			w.fake = append(w.fake, intervalFrames(t, forger, k, makeParts(k+sess+100, twoParts, 300))...)
		}
	}
	return w
}

// FuzzReceiver drives a Receiver with an arbitrary sequence of authentic,
// forged, corrupted and raw frames and expiries. It must never panic, stay
// within its memory bounds, and every bundle must hold exactly what an
// authentic sender sent for that session and interval.
func FuzzReceiver(f *testing.F) {
	w := newFuzzWorld(f)
	inOrder := []byte{}
	for i := range w.pool {
		inOrder = append(inOrder, 0, byte(i))
	}
	f.Add(inOrder)
	f.Add(append([]byte{4, 0, 4, 1, 5, 3, 9}, inOrder...))
	f.Add([]byte{0, 0, 0, 1, 6, 200, 0, 0, 7, 5, 1, 2, 3, 4, 5})
	rev := []byte{}
	for i := len(w.pool) - 1; i >= 0; i-- {
		rev = append(rev, 1, byte(i))
	}
	f.Add(rev)
	f.Fuzz(func(t *testing.T, ops []byte) {
		r := newTestReceiver(t, func(c *ReceiverConfig) { c.MaxBytes = 8 << 10; c.MaxIntervals = 3 })
		var now int64
		for len(ops) >= 2 {
			op, arg := ops[0], ops[1]
			ops = ops[2:]
			switch op % 8 {
			case 0, 1, 2, 3:
				r.Consume(w.pool[int(arg)%len(w.pool)], now)
			case 4:
				r.Consume(w.fake[int(arg)%len(w.fake)], now)
			case 5:
				if len(ops) == 0 {
					break
				}
				g := append([]byte(nil), w.pool[int(arg)%len(w.pool)]...)
				pos := int(ops[0]) * 7 % len(g)
				g[pos] ^= 1 << (ops[0] % 8)
				ops = ops[1:]
				// Only a flip in the MAC addresses (not authenticated, not
				// read) may pass.
				if err := r.Consume(g, now); err == nil && pos >= 12 {
					t.Fatalf("frame with byte %d corrupted accepted", pos)
				}
			case 6:
				now += int64(arg) * 1e7
				r.Expire(now)
			case 7:
				n := min(int(arg), len(ops))
				r.Consume(ops[:n], now)
				ops = ops[n:]
			}
			if in, b := r.InFlight(); in > 3 || b > 8<<10 {
				t.Fatalf("in flight %d intervals, %d bytes", in, b)
			}
			for _, res := range r.Results(nil) {
				if (res.Bundle == nil) == (res.Failure == nil) {
					t.Fatal("result with both or neither of bundle and failure")
				}
				b := res.Bundle
				if b == nil {
					continue
				}
				want, ok := w.ref[[2]uint64{b.Session, b.Interval}]
				if !ok {
					t.Fatalf("bundle for session %x interval %d that nobody sent", b.Session, b.Interval)
				}
				if len(b.Payloads) != len(want) {
					t.Fatalf("bundle has %d parts", len(b.Payloads))
				}
				for _, p := range want {
					if !bytes.Equal(b.Payloads[p.PartKey], p.Payload) {
						t.Fatalf("session %x interval %d part %v differs from what was sent", b.Session, b.Interval, p.PartKey)
					}
				}
				if b.Frames != 2000*b.Interval+1 {
					t.Fatalf("end counts %d", b.Frames)
				}
			}
		}
	})
}

// TestFuzzWorldCompletes makes sure the fuzz world is not vacuous: the
// in-order pool yields all six bundles.
func TestFuzzWorldCompletes(t *testing.T) {
	w := newFuzzWorld(t)
	r := newTestReceiver(t, nil)
	for _, f := range w.pool {
		if err := r.Consume(f, 0); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range w.fake {
		if err := r.Consume(f, 0); !errors.Is(err, ErrBadTag) {
			t.Fatal(err)
		}
	}
	if res := r.Results(nil); len(res) != 6 || r.Counters().Bundles != 6 {
		t.Fatalf("%v", describe(res))
	}
}
