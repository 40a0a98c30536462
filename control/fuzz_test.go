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
	// An End marker with per-class counts.
	if w, err := s.NewEndWriter(0); err == nil {
		f.Add(w.AppendEnd(nil, 10, &End{StartNs: 1, EndNs: 2, Frames: 300 + 7, Classes: []uint64{300, 0, 7}}))
	}
	s.SetLoss(0.35) // parity frames too
	for _, fr := range intervalFrames(f, s, 10, makeParts(10, twoParts, 600, 0)) {
		f.Add(fr)
	}
	// Priority-tagged fragments, parity, requests and replies.
	ts := newTestSenderPriority(f, MinMTU, 2, twoParts, 0, PCP(5))
	ts.SetLoss(0.35)
	for _, fr := range intervalFrames(f, ts, 11, makeParts(11, twoParts, 600, 0)) {
		f.Add(fr)
	}
	for _, typ := range []Type{TypeRequest, TypeReply} {
		frs, _ := ts.AppendExchange(nil, typ, 11, 1, KindRDA, 0xABCD, 3, []byte("body"))
		for _, fr := range frs {
			f.Add(fr)
		}
	}
	known := []error{ErrNotControl, ErrTruncated, ErrBadMagic, ErrBadVersion, ErrBadHeader, ErrBadPayload}
	ns := newNumberingSender(f, testKey)
	f.Fuzz(func(t *testing.T, b []byte) {
		var fr Frame
		err := ParseFrame(b, &fr)
		// Number parses as ParseFrame does: it renumbers exactly what
		// parses, and leaves the rest untouched.
		nb := bytes.Clone(b)
		if nerr := ns.Number(nb); nerr != err {
			t.Fatalf("Number: %v, ParseFrame: %v", nerr, err)
		} else if nerr != nil && !bytes.Equal(nb, b) {
			t.Fatal("Number changed a frame it refused")
		}
		if err != nil {
			for _, k := range known {
				if err == k {
					return
				}
			}
			t.Fatalf("unexpected error %v", err)
		}
		var nf Frame
		// Keyed, it signs, whatever flag the frame had.
		if err := ParseFrame(nb, &nf); err != nil || !ns.auth.Verify(&nf) {
			t.Fatalf("renumbered frame: %v, verifies %v", err, ns.auth.Verify(&nf))
		}
		if h := nf.Header; h.Seq != ns.seq.Load() || func() bool { h.Seq, h.Flags = fr.Seq, fr.Flags; return h != fr.Header }() {
			t.Fatalf("renumbered header %+v, parsed %+v", nf.Header, fr.Header)
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
	for si, sess := range []uint64{0xABC, 0xDEF} {
		// The second session tags its fragments with a priority: the
		// receiver must take them as it takes the first's.
		s := newTestSenderPriority(t, MinMTU, 2, twoParts, sess, Priority(si)*PCP(6))
		forger := newTestSenderKey(t, MinMTU, 2, twoParts, forgerKey, sess)
		for k := uint64(1); k <= 3; k++ {
			// Sizes from 0 to 449 bytes: zero to three fragments' worth.
			parts := makeParts(k+sess, twoParts, 450)
			for i := range parts {
				parts[i].Payload = parts[i].Payload[:int(k*sess+uint64(i)*97)%450]
			}
			w.ref[[2]uint64{sess, k}] = parts
			// The second session signs later times: it is the restart.
			w.pool = append(w.pool, intervalFramesAt(t, s, k, parts, int64(si)*100e9)...)
			w.fake = append(w.fake, intervalFrames(t, forger, k, makeParts(k+sess+100, twoParts, 300))...)
		}
	}
	return w
}

// customSession is the session of the fuzzer's own authentic frames, whose
// header fields (interval, part, fragment index and count, lane, sequence)
// the fuzzer picks. Their content is a function of those fields, so a
// bundle of this session can be checked against what could have been sent.
const customSession = 0x777

var customParts = []PartKey{{0, KindLDA}, {1, KindRDA}, {0, KindLDS}} // the last is never announced

func customContent(k uint64, p PartKey, i, c int) []byte {
	n := int(k*7+uint64(i)*13+uint64(c)+uint64(p.Kind)*5) % 300
	return payloadFor(k*1000+uint64(i)*10+uint64(c), p, n)
}

func customHello() Hello {
	return Hello{IntervalNs: 1e9, ConfigHash: 77, Lanes: 2, Clock: "x", MECs: []string{"all", "voice"}, Parts: twoParts}
}

// customFrame builds an authentic frame of customSession from fuzz bytes
// b (at least 4 are used) and the running sequence number.
func customFrame(t *testing.T, a *Authenticator, b []byte, seq *uint64) []byte {
	next := int64(*seq) + int64(b[3]%16) - 4
	if next < 1 {
		next = 1
	}
	*seq = max(*seq, uint64(next))
	k := uint64(b[0] % 6)
	h := Header{Session: customSession, Interval: k, Seq: uint64(next), FragCount: 1, Direction: 1}
	var payload []byte
	switch b[1] % 4 {
	case 0:
		h.Type = TypeHello
		hello := customHello()
		payload, _ = hello.AppendBinary(nil)
	case 1:
		h.Type = TypeEnd
		lane := uint16(b[2] % 3) // lane 2 is beyond the Hello's 2 lanes
		e := End{StartNs: int64(k), EndNs: int64(k) + 1, Frames: k*10 + uint64(lane), Lane: lane}
		payload = e.AppendBinary(nil)
	default:
		h.Type = TypeFragment
		p := customParts[int(b[2]>>4)%len(customParts)]
		c := int(b[2]&3) + 1
		i := int(b[2]>>2&3) % c
		if b[2]&0x80 != 0 && c > 1 { // now and then an inconsistent count
			c--
			i %= c
		}
		h.Kind, h.MEC, h.FragIndex, h.FragCount = p.Kind, p.MEC, uint16(i), uint16(c)
		payload = customContent(k, p, i, c)
	}
	out, err := AppendFrame(nil, a, [6]byte{2}, &h, payload)
	if err != nil {
		t.Fatalf("custom frame: %v", err)
	}
	return out
}

// checkCustomBundle: every part it has must be the concatenation of the
// custom fragments of one fragment count.
func checkCustomBundle(t *testing.T, b *IntervalBundle) {
	if len(b.Payloads)+len(b.Missing) != len(twoParts) || len(b.Payloads) == 0 {
		t.Fatalf("custom bundle has %d parts, %d missing", len(b.Payloads), len(b.Missing))
	}
	for _, p := range twoParts {
		if _, lost := b.Missing[p]; lost {
			continue // a partial bundle: that part lost a fragment
		}
		ok := false
		for c := 1; c <= 4 && !ok; c++ {
			var want []byte
			for i := 0; i < c; i++ {
				want = append(want, customContent(b.Interval, p, i, c)...)
			}
			ok = bytes.Equal(b.Payloads[p], want)
		}
		if !ok {
			t.Fatalf("custom bundle interval %d part %v is no concatenation of sent fragments", b.Interval, p)
		}
	}
	if b.Frames != 20*b.Interval+1 {
		t.Fatalf("custom bundle end counts %d", b.Frames)
	}
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
	f.Add(customSeed)
	f.Fuzz(func(t *testing.T, ops []byte) { runFuzzReceiver(t, w, ops) })
}

// customSeed completes custom intervals 1 and 2: Hello, End of lanes 0
// and 1, the LDA part in two fragments, the RDA part in one.
var customSeed = []byte{
	8, 1, 0, 0, 5, 8, 1, 1, 0, 5, 8, 1, 1, 1, 5, 8, 1, 2, 0x01, 5, 8, 1, 2, 0x05, 5, 8, 1, 2, 0x10, 5,
	8, 2, 1, 0, 5, 8, 2, 1, 1, 5, 8, 2, 2, 0x01, 5, 8, 2, 2, 0x05, 5, 8, 2, 2, 0x10, 5,
}

// runFuzzReceiver is FuzzReceiver's body; it returns the bundles seen.
func runFuzzReceiver(t *testing.T, w *fuzzWorld, ops []byte) (bundles []*IntervalBundle) {
	// An odd length also turns on the clock-skew guard (the custom Hello is
	// stamped 0; the pool's Hellos k+1 s): adoption then needs a Hello
	// near the fuzzer's clock, which op 6 advances.
	skew := NoClockCheck
	if len(ops)%2 == 1 {
		skew = 3e9
	}
	r := newTestReceiver(t, func(c *ReceiverConfig) { c.MaxBytes = 8 << 10; c.MaxIntervals = 3; c.MaxClockSkew = skew })
	auth := mustAuth(t, testKey)
	var customSeq uint64
	var now int64
	for len(ops) >= 2 {
		op, arg := ops[0], ops[1]
		ops = ops[2:]
		switch op % 9 {
		case 8:
			if len(ops) < 3 {
				break
			}
			r.Consume(customFrame(t, auth, []byte{arg, ops[0], ops[1], ops[2]}, &customSeq), now)
			ops = ops[3:]
		case 0, 1, 2, 3:
			r.Consume(w.pool[int(arg)%len(w.pool)], now)
		case 4:
			r.Consume(w.fake[int(arg)%len(w.fake)], now)
		case 5:
			if len(ops) == 0 {
				break
			}
			g := append([]byte(nil), w.pool[int(arg)%len(w.pool)]...)
			// Only a flip in the MAC addresses or a priority tag (its
			// TPID and control information: not authenticated; a TPID
			// flipped to another VLAN TPID, 0x9100, is skipped alike)
			// may pass. Whether the frame is tagged is the frame's as
			// sent, before the flip.
			open := 12
			if g[12] == 0x81 && g[13] == 0x00 {
				open = 16
			}
			pos := int(ops[0]) * 7 % len(g)
			g[pos] ^= 1 << (ops[0] % 8)
			ops = ops[1:]
			if err := r.Consume(g, now); err == nil && pos >= open {
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
			bundles = append(bundles, b)
			if b.Session == customSession {
				checkCustomBundle(t, b)
				continue
			}
			want, ok := w.ref[[2]uint64{b.Session, b.Interval}]
			if !ok {
				t.Fatalf("bundle for session %x interval %d that nobody sent", b.Session, b.Interval)
			}
			// A partial bundle (fragments lost) lacks the parts Missing
			// names; every part it has is whole and as sent. It has at
			// least one, or else the End markers' per-class counts (which
			// keep the loss measured without any synopsis).
			if len(b.Payloads)+len(b.Missing) != len(want) || len(b.Payloads) == 0 && b.ClassFrames == nil {
				t.Fatalf("bundle has %d parts, %d missing, of %d sent", len(b.Payloads), len(b.Missing), len(want))
			}
			for _, p := range want {
				if _, lost := b.Missing[p.PartKey]; lost {
					if _, has := b.Payloads[p.PartKey]; has {
						t.Fatalf("part %v both missing and present", p.PartKey)
					}
					continue
				}
				if !bytes.Equal(b.Payloads[p.PartKey], p.Payload) {
					t.Fatalf("session %x interval %d part %v differs from what was sent", b.Session, b.Interval, p.PartKey)
				}
			}
			if b.Frames != 2000*b.Interval+1 {
				t.Fatalf("end counts %d", b.Frames)
			}
		}
	}
	return bundles
}

// TestFuzzReceiverSeeds: the custom seed yields both custom bundles, so the
// fuzzer's authentic-frame path is not vacuous.
func TestFuzzReceiverSeeds(t *testing.T) {
	got := runFuzzReceiver(t, newFuzzWorld(t), customSeed)
	if len(got) != 2 || got[0].Session != customSession || got[0].Interval != 1 || got[1].Interval != 2 {
		t.Fatalf("%d bundles", len(got))
	}
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
