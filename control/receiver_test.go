package control

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/ldafwd/ldafwd/internal/eachtest"
)

var twoParts = []PartKey{{0, KindLDA}, {1, KindRDA}}

func makeParts(k uint64, keys []PartKey, sizes ...int) []Part {
	ps := make([]Part, len(keys))
	for i, key := range keys {
		ps[i] = Part{PartKey: key, Payload: payloadFor(k, key, sizes[i%len(sizes)])}
	}
	return ps
}

// wantBundle checks that res is exactly one bundle for interval k holding
// parts.
func wantBundle(t *testing.T, res []Result, s *Sender, k uint64, parts []Part) *IntervalBundle {
	t.Helper()
	if len(res) != 1 || res[0].Bundle == nil {
		t.Fatalf("interval %d: results %v, want one bundle", k, describe(res))
	}
	b := res[0].Bundle
	if b.Interval != k || b.Session != s.Session() || b.Direction != 1 {
		t.Fatalf("bundle for interval %d session %x, want %d %x", b.Interval, b.Session, k, s.Session())
	}
	if len(b.Payloads) != len(parts) {
		t.Fatalf("bundle has %d payloads, want %d", len(b.Payloads), len(parts))
	}
	for _, p := range parts {
		if got := b.Payloads[p.PartKey]; !bytes.Equal(got, p.Payload) {
			t.Fatalf("interval %d part %v: %d bytes differ from the %d sent", k, p.PartKey, len(got), len(p.Payload))
		}
	}
	lanes := uint64(s.cfg.Hello.Lanes)
	wantFrames := 1000*k*lanes + lanes*(lanes-1)/2
	if b.StartNs != int64(k)*1e9 || b.EndNs != int64(k+1)*1e9 || b.Frames != wantFrames || b.Bytes != 64000*k*lanes {
		t.Fatalf("end info %d..%d frames %d bytes %d", b.StartNs, b.EndNs, b.Frames, b.Bytes)
	}
	return b
}

func wantFailure(t *testing.T, res []Result, k uint64, why Reason) {
	t.Helper()
	if len(res) != 1 || res[0].Failure == nil || res[0].Failure.Interval != k || res[0].Failure.Reason != why {
		t.Fatalf("results %v, want failure of interval %d: %v", describe(res), k, why)
	}
}

func describe(res []Result) string {
	s := "["
	for _, r := range res {
		if r.Bundle != nil {
			s += fmt.Sprintf(" bundle(%d)", r.Bundle.Interval)
		} else {
			s += fmt.Sprintf(" failure(%v)", r.Failure)
		}
	}
	return s + " ]"
}

func TestRoundTripSizes(t *testing.T) {
	for _, mtu := range []int{MinMTU, 576, DefaultMTU, 9000} {
		fs := FragmentPayload(mtu)
		for _, n := range []int{0, 1, fs - 1, fs, fs + 1, 3*fs - 1, 17*fs + 5} {
			for _, lanes := range []int{1, 3} {
				t.Run(fmt.Sprintf("mtu%d/%dB/%dlanes", mtu, n, lanes), func(t *testing.T) {
					s := newTestSender(t, mtu, lanes, twoParts)
					r := newTestReceiver(t, nil)
					for k := uint64(10); k < 13; k++ {
						parts := makeParts(k, twoParts, n, n/2+1)
						frames := intervalFrames(t, s, k, parts)
						wire, ends := 0, 0
						for i, f := range frames {
							if len(f) > EthHeaderLen+mtu {
								t.Fatalf("frame of %d bytes over MTU %d", len(f), mtu)
							}
							wire += len(f)
							if i < lanes { // intervalFramesAt: the End markers first
								ends += len(f)
							}
						}
						// Exact but for the End markers' per-class counts,
						// which IntervalBytes estimates at 3 bytes a class.
						if want := s.IntervalBytes(lanes, n, n/2+1); wire-ends != want-lanes*s.EndBytes() {
							t.Fatalf("interval is %d bytes on the wire, IntervalBytes says %d (End markers %d, estimated %d)", wire, want, ends, lanes*s.EndBytes())
						}
						if ends > lanes*s.EndBytes() || ends < lanes*EndFrameLen {
							t.Fatalf("End markers %d bytes, estimated %d", ends, lanes*s.EndBytes())
						}
						consumeAll(t, r, frames, 0)
						b := wantBundle(t, r.Results(nil), s, k, parts)
						if b.ControlBytes != wire || b.ControlFrames != len(frames) {
							t.Fatalf("bundle counts %d frames %d bytes, sent %d %d", b.ControlFrames, b.ControlBytes, len(frames), wire)
						}
					}
					if c := r.Counters(); c.Bundles != 3 || c.Failures != 0 || c.Accepted == 0 {
						t.Fatalf("counters %+v", c)
					}
				})
			}
		}
	}
}

func TestAppendIntervalReusesBuffers(t *testing.T) {
	s := newTestSender(t, DefaultMTU, 1, twoParts)
	parts := makeParts(1, twoParts, 5000)
	bufs, err := s.AppendInterval(nil, 1, 0, parts)
	if err != nil {
		t.Fatal(err)
	}
	first := &bufs[1][0]
	bufs, err = s.AppendInterval(bufs, 2, 0, parts)
	if err != nil || &bufs[1][0] != first {
		t.Fatalf("second interval did not reuse the buffers: %v", err)
	}
	allocs := testing.AllocsPerRun(100, func() {
		bufs, _ = s.AppendInterval(bufs, 3, 0, parts)
	})
	if allocs != 0 {
		t.Fatalf("%v allocs per interval with warm buffers", allocs)
	}
}

// deliver sends frames for intervals first..last, dropping those for which
// drop(k, i) is true (i indexes the interval's frames).
func deliver(t *testing.T, s *Sender, r *Receiver, first, last uint64, drop func(k uint64, i int) bool) map[uint64][]Part {
	sent := map[uint64][]Part{}
	for k := first; k <= last; k++ {
		parts := makeParts(k, twoParts, 4000, 100)
		sent[k] = parts
		for i, f := range intervalFrames(t, s, k, parts) {
			if drop != nil && drop(k, i) {
				continue
			}
			if err := r.Consume(f, int64(k)*1e9); err != nil {
				t.Fatal(err)
			}
		}
	}
	return sent
}

func TestLostFragmentInvalidatesOnlyItsInterval(t *testing.T) {
	// Frames of an interval with one lane: End, Hello, LDA ×3, RDA ×1. A
	// lost fragment costs its part only: the interval goes out partial,
	// with the parts that arrived whole, as soon as the next interval is
	// complete. A lost End marker (or every part lost) fails it at the
	// timeout.
	lda, rda := twoParts[0], twoParts[1]
	for _, tt := range []struct {
		name    string
		drop    func(i int) bool
		why     Reason // failure; 0: a partial bundle
		missing PartKey
		detail  string
	}{
		{"first fragment", func(i int) bool { return i == 2 }, 0, lda, "2 of 3 fragments"},
		{"middle fragment", func(i int) bool { return i == 3 }, 0, lda, "2 of 3 fragments"},
		{"last part", func(i int) bool { return i == 5 }, 0, rda, "no fragment"},
		{"every part", func(i int) bool { return i >= 2 && i != 3 }, 0, PartKey{}, ""},
		{"end marker", func(i int) bool { return i == 0 }, ReasonEndLost, PartKey{}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := newTestSender(t, DefaultMTU, 1, twoParts)
			r := newTestReceiver(t, nil)
			sent := deliver(t, s, r, 1, 1, func(k uint64, i int) bool { return tt.drop(i) })
			if res := r.Results(nil); len(res) != 0 {
				t.Fatalf("incomplete interval finished: %v", describe(res))
			}
			// The next interval completes by itself; 1 goes out partial
			// before it, or still waits.
			sent2 := deliver(t, s, r, 2, 2, nil)
			res := r.Results(nil)
			if tt.why == 0 {
				if len(res) != 2 || res[0].Bundle == nil || res[0].Bundle.Interval != 1 {
					t.Fatalf("want the partial interval 1, then 2: %v", describe(res))
				}
				b := res[0].Bundle
				if tt.missing == (PartKey{}) {
					// Every part lost: the End markers' class counts
					// still make a bundle, of no part.
					if len(b.Missing) != 2 || len(b.Payloads) != 0 {
						t.Fatalf("every part lost: missing %v, %d payloads", b.Missing, len(b.Payloads))
					}
				} else {
					if len(b.Missing) != 1 || b.Missing[tt.missing] != tt.detail {
						t.Fatalf("missing %v, want %v: %s", b.Missing, tt.missing, tt.detail)
					}
					if _, ok := b.Payloads[tt.missing]; ok || len(b.Payloads) != 1 {
						t.Fatalf("payloads of %d parts, the missing one among them: %v", len(b.Payloads), b.Missing)
					}
				}
				for _, p := range sent[1] {
					if _, lost := b.Missing[p.PartKey]; !lost && !bytes.Equal(b.Payloads[p.PartKey], p.Payload) {
						t.Fatalf("part %v of the partial bundle differs from what was sent", p.PartKey)
					}
				}
				if b.StartNs != 1e9 || b.EndNs != 2e9 || b.Frames == 0 {
					t.Fatalf("partial bundle bounds %d..%d frames %d", b.StartNs, b.EndNs, b.Frames)
				}
				// The End markers' per-class counts (intervalFramesAt).
				if len(b.ClassFrames) != 2 || b.ClassFrames[0] != 333 || b.ClassFrames[1] != 667 {
					t.Fatalf("partial bundle class frames %v, want [333 667]", b.ClassFrames)
				}
				wantBundle(t, res[1:], s, 2, sent2[2])
			} else {
				wantBundle(t, res, s, 2, sent2[2])
				r.Expire(1e9 + DefaultTimeout - 1)
				if res := r.Results(nil); len(res) != 0 {
					t.Fatalf("expired early: %v", describe(res))
				}
				r.Expire(1e9 + DefaultTimeout)
				res = r.Results(nil)
				wantFailure(t, res, 1, tt.why)
				// The failure carries the bounds of the End markers that came.
				if f := res[0].Failure; tt.why != ReasonEndLost && (f.StartNs != 1e9 || f.EndNs != 2e9 || f.Direction != 1) {
					t.Fatalf("failure bounds %d..%d direction %d", f.StartNs, f.EndNs, f.Direction)
				}
				// With every End marker it also carries their class
				// counts; without, none.
				switch f := res[0].Failure; {
				case tt.why == ReasonEndLost && f.ClassFrames != nil:
					t.Fatalf("failure without its End marker has class frames %v", f.ClassFrames)
				case tt.why != ReasonEndLost && (len(f.ClassFrames) != 2 || f.ClassFrames[0]+f.ClassFrames[1] != 1000):
					t.Fatalf("failure class frames %v, want 1000 in all", f.ClassFrames)
				}
			}
			// A straggler for the finished interval is late, not a reopening.
			f := intervalFrames(t, s, 1, makeParts(1, twoParts, 4000, 100))
			if err := r.Consume(f[len(f)-1], 3e9); err != nil {
				t.Fatal(err)
			}
			if res := r.Results(nil); len(res) != 0 {
				t.Fatalf("late frame reopened interval: %v", describe(res))
			}
			sent3 := deliver(t, s, r, 3, 3, nil)
			wantBundle(t, r.Results(nil), s, 3, sent3[3])
			c := r.Counters()
			want := Counters{Late: 1, Bundles: 3}
			if tt.why != 0 {
				want = Counters{Timeout: 1, Late: 1, Bundles: 2, Failures: 1}
			}
			if c.Timeout != want.Timeout || c.Late != want.Late || c.Bundles != want.Bundles || c.Failures != want.Failures {
				t.Fatalf("counters %+v, want %+v", c, want)
			}
		})
	}
}

// TestPartialAtTimeout: an interval that lost a fragment and has no later
// interval to close it goes out partial at the timeout.
func TestPartialAtTimeout(t *testing.T) {
	s := newTestSender(t, DefaultMTU, 1, twoParts)
	r := newTestReceiver(t, nil)
	deliver(t, s, r, 1, 1, func(k uint64, i int) bool { return i == 4 })
	r.Expire(1e9 + DefaultTimeout - 1)
	if res := r.Results(nil); len(res) != 0 {
		t.Fatalf("expired early: %v", describe(res))
	}
	r.Expire(1e9 + DefaultTimeout)
	res := r.Results(nil)
	if len(res) != 1 || res[0].Bundle == nil || res[0].Bundle.Missing[twoParts[0]] != "2 of 3 fragments" {
		t.Fatalf("want interval 1 partial, its LDA missing: %v", describe(res))
	}
	if c := r.Counters(); c.Timeout != 1 || c.Bundles != 1 || c.Failures != 0 {
		t.Fatalf("counters %+v", c)
	}
}

func TestDuplicatedAndReorderedFrames(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, lanes := range []int{1, 4} {
		s := newTestSender(t, 576, lanes, twoParts)
		r := newTestReceiver(t, nil)
		var dups int
		for k := uint64(1); k <= 20; k++ {
			parts := makeParts(k, twoParts, 3000, 700)
			frames := intervalFrames(t, s, k, parts)
			if k > 1 { // the first interval's End starts the session: fragments cannot
				rng.Shuffle(len(frames), func(i, j int) { frames[i], frames[j] = frames[j], frames[i] })
			}
			for i := 0; i < len(frames); i++ {
				if err := r.Consume(frames[i], 0); err != nil {
					t.Fatal(err)
				}
				if rng.IntN(3) == 0 { // a network duplicate right away or later
					j := rng.IntN(i + 1)
					if err := r.Consume(frames[j], 0); !errors.Is(err, ErrReplayed) {
						t.Fatalf("duplicate: %v", err)
					}
					dups++
				}
			}
			wantBundle(t, r.Results(nil), s, k, parts)
		}
		c := r.Counters()
		if c.Replayed != uint64(dups) || c.OutOfOrder == 0 || c.Bundles != 20 || c.Failures != 0 {
			t.Fatalf("lanes %d: counters %+v (dups %d)", lanes, c, dups)
		}
	}
}

func TestTruncatedFrames(t *testing.T) {
	s := newTestSender(t, DefaultMTU, 1, twoParts)
	r := newTestReceiver(t, nil)
	frames := intervalFrames(t, s, 1, makeParts(1, twoParts, 2000, 10))
	for _, f := range frames {
		for n := 0; n < len(f); n++ {
			if err := r.Consume(f[:n], 0); err == nil {
				t.Fatalf("prefix %d of %d accepted", n, len(f))
			}
		}
	}
	c := r.Counters()
	if c.Accepted != 0 || c.Truncated == 0 || c.Bundles+c.Failures != 0 {
		t.Fatalf("counters %+v", c)
	}
	// The whole frames still go through afterwards.
	consumeAll(t, r, frames, 0)
	if res := r.Results(nil); len(res) != 1 || res[0].Bundle == nil {
		t.Fatalf("results %v", describe(res))
	}
}

func TestForgedFrames(t *testing.T) {
	s := newTestSender(t, DefaultMTU, 1, twoParts)
	frames := intervalFrames(t, s, 1, makeParts(1, twoParts, 2000, 10))

	t.Run("wrong key", func(t *testing.T) {
		r := newTestReceiver(t, func(c *ReceiverConfig) { c.Key = bytes.Repeat([]byte{1}, KeyLen) })
		for _, f := range frames {
			if err := r.Consume(f, 0); !errors.Is(err, ErrBadTag) {
				t.Fatalf("err %v", err)
			}
		}
		if _, ok := r.Session(); ok || r.Counters().BadTag != uint64(len(frames)) {
			t.Fatalf("forged frames moved state: %+v", r.Counters())
		}
	})
	// Wrong key, peer --insecure and peer keyed all fail the tag; the
	// last two are also counted by which end is insecure, so the operator
	// can be told which flag to change.
	insecure := intervalFrames(t, newTestSenderKey(t, DefaultMTU, 1, twoParts, nil, 0), 1, makeParts(1, twoParts, 2000, 10))
	for _, c := range []struct {
		name                    string
		frames                  [][]byte
		recvKey                 []byte
		peerInsecure, peerKeyed uint64
	}{
		{"wrong key counted as neither", frames, bytes.Repeat([]byte{1}, KeyLen), 0, 0},
		{"peer insecure, we keyed", insecure, testKey, uint64(len(insecure)), 0},
		{"peer keyed, we insecure", frames, nil, 0, uint64(len(frames))},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newTestReceiver(t, func(rc *ReceiverConfig) { rc.Key, rc.Insecure = c.recvKey, len(c.recvKey) == 0 })
			consumeBad := 0
			for _, f := range c.frames {
				if err := r.Consume(f, 0); errors.Is(err, ErrBadTag) {
					consumeBad++
				}
			}
			if cc := r.Counters(); consumeBad != len(c.frames) || cc.BadTag != uint64(len(c.frames)) || cc.PeerInsecure != c.peerInsecure || cc.PeerKeyed != c.peerKeyed {
				t.Fatalf("%d refused; counters %+v", consumeBad, cc)
			}
		})
	}
	t.Run("flipped bit", func(t *testing.T) {
		r := newTestReceiver(t, nil)
		for _, f := range frames {
			for bit := (EthHeaderLen + 2) * 8; bit < len(f)*8; bit++ {
				g := append([]byte(nil), f...)
				g[bit/8] ^= 1 << (bit % 8)
				if err := r.Consume(g, 0); err == nil {
					t.Fatalf("frame with bit %d flipped accepted", bit)
				}
			}
		}
		if c := r.Counters(); c.Accepted != 0 || c.BadTag == 0 {
			t.Fatalf("counters %+v", c)
		}
		consumeAll(t, r, frames, 0) // the untouched frames are still fresh
		if res := r.Results(nil); len(res) != 1 || res[0].Bundle == nil {
			t.Fatalf("results %v", describe(res))
		}
	})
	t.Run("insecure frames to keyed receiver", func(t *testing.T) {
		ins := newTestSenderKey(t, DefaultMTU, 1, twoParts, nil, 0)
		r := newTestReceiver(t, nil)
		for _, f := range intervalFrames(t, ins, 1, makeParts(1, twoParts, 10)) {
			if err := r.Consume(f, 0); !errors.Is(err, ErrBadTag) {
				t.Fatalf("err %v", err)
			}
		}
	})
	t.Run("keyed frames to insecure receiver", func(t *testing.T) {
		r := newTestReceiver(t, func(c *ReceiverConfig) { c.Key = nil; c.Insecure = true })
		for _, f := range frames {
			if err := r.Consume(f, 0); !errors.Is(err, ErrBadTag) {
				t.Fatalf("err %v", err)
			}
		}
	})
	t.Run("insecure round trip", func(t *testing.T) {
		ins := newTestSenderKey(t, DefaultMTU, 1, twoParts, nil, 0)
		r := newTestReceiver(t, func(c *ReceiverConfig) { c.Key = nil; c.Insecure = true })
		parts := makeParts(1, twoParts, 3000)
		consumeAll(t, r, intervalFrames(t, ins, 1, parts), 0)
		wantBundle(t, r.Results(nil), ins, 1, parts)
	})
}

func TestReplay(t *testing.T) {
	s := newTestSender(t, DefaultMTU, 1, twoParts)
	r := newTestReceiver(t, nil)
	parts := makeParts(1, twoParts, 3000, 10)
	frames := intervalFrames(t, s, 1, parts)
	consumeAll(t, r, frames, 0)
	wantBundle(t, r.Results(nil), s, 1, parts)
	for _, f := range frames {
		if err := r.Consume(f, 0); !errors.Is(err, ErrReplayed) {
			t.Fatalf("replay: %v", err)
		}
	}
	// Move the window more than ReplayWindow frames on; the old frames are
	// now too old to judge and rejected as such.
	for k := uint64(2); s.seq.Load() < uint64(len(frames))+ReplayWindow+1; k++ {
		consumeAll(t, r, intervalFrames(t, s, k, makeParts(k, twoParts, 10)), 0)
	}
	r.Results(nil)
	for _, f := range frames {
		if err := r.Consume(f, 0); !errors.Is(err, ErrTooOld) {
			t.Fatalf("old replay: %v", err)
		}
	}
	if res := r.Results(nil); len(res) != 0 {
		t.Fatalf("replays produced %v", describe(res))
	}
	if c := r.Counters(); c.Replayed != uint64(len(frames)) || c.TooOld != uint64(len(frames)) {
		t.Fatalf("counters %+v", c)
	}
}

func TestPeerRestart(t *testing.T) {
	old := newTestSenderKey(t, DefaultMTU, 1, twoParts, testKey, 0x1111)
	r := newTestReceiver(t, nil)
	parts := makeParts(5, twoParts, 3000, 10)
	oldFrames := intervalFrames(t, old, 5, parts)
	consumeAll(t, r, oldFrames[:3], 0) // interval 5 in flight when the sender restarts

	// The restarted sender counts sequence numbers afresh; its interval
	// numbers and signed times come from the clock, so they go on.
	restarted := newTestSenderKey(t, DefaultMTU, 1, twoParts, testKey, 0x2222)
	parts1 := makeParts(6, twoParts, 3000, 10)
	consumeAll(t, r, intervalFrames(t, restarted, 6, parts1), 1)
	res := r.Results(nil)
	if len(res) != 2 || res[0].Failure == nil || res[0].Failure.Reason != ReasonSessionRestart || res[0].Failure.Session != 0x1111 {
		t.Fatalf("results %v", describe(res))
	}
	wantBundle(t, res[1:], restarted, 6, parts1)
	// The old session's frames, late or replayed, cannot drag it back.
	for _, f := range oldFrames {
		if err := r.Consume(f, 2); !errors.Is(err, ErrStaleSession) {
			t.Fatalf("old session frame: %v", err)
		}
	}
	if sess, _ := r.Session(); sess != 0x2222 {
		t.Fatalf("session %x", sess)
	}
	if c := r.Counters(); c.SessionRestarts != 1 || c.StaleSession != uint64(len(oldFrames)) {
		t.Fatalf("counters %+v", c)
	}
}

func TestHelloLateOrMismatched(t *testing.T) {
	t.Run("hello of the next interval completes the previous", func(t *testing.T) {
		s := newTestSender(t, DefaultMTU, 1, twoParts)
		r := newTestReceiver(t, nil)
		sent := deliver(t, s, r, 1, 1, func(k uint64, i int) bool { return i == 1 }) // Hello lost
		if res := r.Results(nil); len(res) != 0 {
			t.Fatalf("%v", describe(res))
		}
		sent2 := deliver(t, s, r, 2, 2, nil)
		res := r.Results(nil)
		if len(res) != 2 {
			t.Fatalf("%v", describe(res))
		}
		wantBundle(t, res[:1], s, 1, sent[1])
		wantBundle(t, res[1:], s, 2, sent2[2])
	})
	t.Run("no hello at all", func(t *testing.T) {
		s := newTestSender(t, DefaultMTU, 1, twoParts)
		r := newTestReceiver(t, nil)
		deliver(t, s, r, 1, 1, func(k uint64, i int) bool { return i == 1 })
		r.Expire(1e9 + DefaultTimeout)
		wantFailure(t, r.Results(nil), 1, ReasonNoHello)
	})
	t.Run("config hash differs", func(t *testing.T) {
		s := newTestSender(t, DefaultMTU, 1, twoParts)
		r := newTestReceiver(t, func(c *ReceiverConfig) { c.ConfigHash = 78 })
		deliver(t, s, r, 1, 1, nil)
		wantFailure(t, r.Results(nil), 1, ReasonConfigMismatch)
	})
	t.Run("unannounced part", func(t *testing.T) {
		s := newTestSender(t, DefaultMTU, 1, twoParts[:1])
		r := newTestReceiver(t, nil)
		parts := makeParts(1, twoParts, 100) // RDA of MEC 1 is not in the Hello
		if _, err := s.AppendInterval(nil, 1, 0, parts); !errors.Is(err, ErrPartsMismatch) {
			t.Fatalf("sender sent an unannounced part: %v", err)
		}
		// A sender that does anyway (another implementation) is counted.
		w, _ := s.NewEndWriter(0)
		consumeAll(t, r, [][]byte{w.AppendEnd(nil, 1, &End{StartNs: 1e9, EndNs: 2e9, Frames: 1000, Bytes: 64000})}, 0)
		fr, _ := s.AppendInterval(nil, 1, 0, parts[:1])
		h := Header{Type: TypeFragment, Kind: KindRDA, MEC: 1, Session: s.Session(), Interval: 1, Seq: s.nextSeq(), FragCount: 1, Direction: 1}
		rogue, _ := AppendFrame(nil, s.auth, s.cfg.SrcMAC, &h, parts[1].Payload)
		consumeAll(t, r, append(fr, rogue), 0)
		wantBundle(t, r.Results(nil), s, 1, parts[:1])
		if c := r.Counters(); c.UnknownPart != 1 {
			t.Fatalf("counters %+v", c)
		}
	})
	t.Run("sender parts must match the hello", func(t *testing.T) {
		s := newTestSender(t, DefaultMTU, 1, twoParts)
		for _, parts := range [][]Part{nil, makeParts(1, twoParts[:1], 10), makeParts(1, []PartKey{twoParts[0], twoParts[0]}, 10)} {
			if _, err := s.AppendInterval(nil, 1, 0, parts); !errors.Is(err, ErrPartsMismatch) {
				t.Fatalf("parts %d: %v", len(parts), err)
			}
		}
		rev := makeParts(1, []PartKey{twoParts[1], twoParts[0]}, 10)
		if _, err := s.AppendInterval(nil, 1, 0, rev); err != nil {
			t.Fatalf("reordered parts: %v", err)
		}
	})
}

func TestWrongDirection(t *testing.T) {
	s := newTestSender(t, DefaultMTU, 1, twoParts)
	r := newTestReceiver(t, func(c *ReceiverConfig) { c.Direction = 2 })
	for _, f := range intervalFrames(t, s, 1, makeParts(1, twoParts, 10)) {
		if err := r.Consume(f, 0); !errors.Is(err, ErrWrongDirection) {
			t.Fatalf("err %v", err)
		}
	}
}

func TestMemoryBoundUnderFlood(t *testing.T) {
	const maxBytes = 64 << 10
	r := newTestReceiver(t, func(c *ReceiverConfig) { c.MaxBytes = maxBytes; c.MaxFragments = 1000 })
	s := newTestSender(t, DefaultMTU, 2, twoParts)
	w, _ := s.NewEndWriter(0)
	n := 5000
	if testing.Short() {
		n = 1000
	}
	// A flood of distinct intervals, none complete (lane 1 never ends), each
	// with a partial big part.
	for i := 0; i < n; i++ {
		k := uint64(i)*7 + 3
		e := End{EndNs: 1}
		if err := r.Consume(w.AppendEnd(nil, k, &e), int64(i)); err != nil {
			t.Fatal(err)
		}
		fr, _ := s.AppendInterval(nil, k, 0, makeParts(k, twoParts, 20000, 1))
		for _, f := range fr[:3] {
			if err := r.Consume(f, int64(i)); err != nil {
				t.Fatal(err)
			}
		}
		if in, b := r.InFlight(); in > DefaultMaxIntervals || b > maxBytes {
			t.Fatalf("after %d intervals: %d in flight, %d bytes", i, in, b)
		}
	}
	c := r.Counters()
	if c.Evicted == 0 || c.Bundles != 0 || c.Failures < uint64(n-DefaultMaxIntervals) {
		t.Fatalf("counters %+v", c)
	}
	// Per-part limits: an announced fragment count over MaxFragments fails
	// the interval at once.
	big := newTestSender(t, 256, 1, twoParts[:1])
	r2 := newTestReceiver(t, func(c *ReceiverConfig) { c.MaxFragments = 10 })
	consumeAll(t, r2, intervalFrames(t, big, 1, makeParts(1, twoParts[:1], 11*big.FragmentSize()))[:3], 0)
	wantFailure(t, r2.Results(nil), 1, ReasonOversize)
	// And the byte budget: MaxBytes smaller than one part.
	r3 := newTestReceiver(t, func(c *ReceiverConfig) { c.MaxBytes = 4000 })
	consumeAll(t, r3, intervalFrames(t, big, 1, makeParts(1, twoParts[:1], 30*big.FragmentSize())), 0)
	res := r3.Results(nil)
	if len(res) != 1 || res[0].Failure == nil || res[0].Failure.Reason != ReasonOversize {
		t.Fatalf("%v", describe(res))
	}
	if _, b := r3.InFlight(); b != 0 {
		t.Fatalf("%d bytes left in flight", b)
	}
}

func TestEvictionKeepsNewest(t *testing.T) {
	s := newTestSender(t, DefaultMTU, 1, twoParts)
	r := newTestReceiver(t, func(c *ReceiverConfig) { c.MaxIntervals = 2 })
	sent := map[uint64][]Part{}
	var frames [][][]byte
	for k := uint64(1); k <= 3; k++ {
		sent[k] = makeParts(k, twoParts, 100)
		frames = append(frames, intervalFrames(t, s, k, sent[k]))
	}
	// Start 2 and 3, then 1 arrives: it is older than both and gives way.
	consumeAll(t, r, frames[1][:1], 0)
	consumeAll(t, r, frames[2][:1], 0)
	if err := r.Consume(frames[0][0], 0); err != nil {
		t.Fatal(err)
	}
	wantFailure(t, r.Results(nil), 1, ReasonEvicted)
	consumeAll(t, r, frames[1][1:], 0)
	wantBundle(t, r.Results(nil), s, 2, sent[2])
	consumeAll(t, r, frames[2][1:], 0)
	wantBundle(t, r.Results(nil), s, 3, sent[3])
}

func TestReceiverConfigErrors(t *testing.T) {
	for _, cfg := range []ReceiverConfig{
		{},
		{Key: testKey, Insecure: true},
		{Key: testKey[:16]},
		{Key: testKey, Timeout: -1},
		{Key: testKey, MaxBytes: -1},
	} {
		if _, err := NewReceiver(cfg); err == nil {
			t.Errorf("config %+v accepted", cfg)
		}
	}
	for _, cfg := range []SenderConfig{
		{Hello: testHello()},
		{Key: testKey, Insecure: true, Hello: testHello()},
		{Key: testKey, MTU: 100, Hello: testHello()},
		{Key: testKey, Hello: Hello{IntervalNs: 1, Lanes: 1}},
		{Key: testKey, MTU: MinMTU, Hello: Hello{IntervalNs: 1, Lanes: 1, MECs: []string{string(bytes.Repeat([]byte("m"), 200))}}},
	} {
		if _, err := NewSender(cfg); err == nil {
			t.Errorf("sender config %+v accepted", cfg)
		}
	}
}

// TestReplayFilterAgainstModel compares the bitmap window with a naive map
// of every sequence number seen.
func TestReplayFilterAgainstModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var f replayFilter
	seen := map[uint64]bool{}
	var highest uint64
	for i := 0; i < 200000; i++ {
		var seq uint64
		switch rng.IntN(10) {
		case 0:
			seq = highest + 1 + uint64(rng.IntN(3*ReplayWindow))
		case 1, 2:
			seq = highest - min(highest, uint64(rng.IntN(ReplayWindow+10)))
		default:
			seq = highest + uint64(rng.IntN(4))
		}
		if seq == 0 {
			continue
		}
		var want replayVerdict
		switch {
		case seq > highest:
			want = seqNew
		case highest-seq >= ReplayWindow:
			want = seqTooOld
		case seen[seq]:
			want = seqReplayed
		default:
			want = seqReordered
		}
		if got := f.check(seq); got != want {
			t.Fatalf("step %d seq %d highest %d: got %d want %d", i, seq, highest, got, want)
		}
		if want == seqNew || want == seqReordered {
			f.accept(seq)
			seen[seq] = true
			highest = max(highest, seq)
		}
	}
}

// TestRetransmittedFragments: a sender that builds an interval's frames
// twice (new sequence numbers, same content) gets through the replay window;
// the reassembler ignores and counts the fragments it already holds.
func TestRetransmittedFragments(t *testing.T) {
	s := newTestSender(t, DefaultMTU, 1, twoParts)
	r := newTestReceiver(t, nil)
	parts := makeParts(1, twoParts, 4000, 100)
	first := intervalFrames(t, s, 1, parts)
	consumeAll(t, r, first[:len(first)-1], 0) // all but the RDA fragment
	again := intervalFrames(t, s, 1, parts)
	consumeAll(t, r, again, 0)
	wantBundle(t, r.Results(nil), s, 1, parts)
	// End and the three LDA fragments were held already; the Hello is not
	// reassembled state, and the last fragment completed the interval.
	if c := r.Counters(); c.Duplicate != 4 || c.Replayed != 0 || c.Bundles != 1 {
		t.Fatalf("counters %+v", c)
	}
}

// TestClockSkewGuard: a recorded older session cannot be replayed into a
// freshly started receiver (its signed times are stale), and a real
// restart is adopted at its first End.
func TestClockSkewGuard(t *testing.T) {
	const skew = int64(5e9)
	old := newTestSenderKey(t, DefaultMTU, 1, twoParts, testKey, 0x1111)
	recorded := intervalFrames(t, old, 1, makeParts(1, twoParts, 100)) // End and Hello stamped 2 s
	r := newTestReceiver(t, func(c *ReceiverConfig) { c.MaxClockSkew = skew })
	now := int64(3600e9) // an hour later
	wantErrs := []error{ErrStaleHello, ErrStaleHello, ErrNoFreshHello, ErrNoFreshHello}
	for i, f := range recorded {
		if err := r.Consume(f, now); !errors.Is(err, wantErrs[i]) {
			t.Fatalf("recorded frame %d: %v, want %v", i, err, wantErrs[i])
		}
	}
	if _, ok := r.Session(); ok {
		t.Fatal("replayed session adopted")
	}
	// The live sender: adopted at its first End, signed (k+1) s.
	live := newTestSenderKey(t, DefaultMTU, 1, twoParts, testKey, 0x2222)
	k := uint64(3600)
	for _, kk := range []uint64{k, k + 1} {
		parts := makeParts(kk, twoParts, 100)
		consumeAll(t, r, intervalFrames(t, live, kk, parts), int64(kk+1)*1e9)
		wantBundle(t, r.Results(nil), live, kk, parts)
	}
	if sess, _ := r.Session(); sess != 0x2222 {
		t.Fatalf("session %x", sess)
	}
	if c := r.Counters(); c.UnknownSession != 2 || c.StaleHello != 2 || c.SessionRestarts != 0 {
		t.Fatalf("counters %+v", c)
	}
}

// TestCountersEach: every counter has a name, once, and Each reports the
// value of the field it names (checked by setting each counter alone).
func TestCountersEach(t *testing.T) {
	var r Receiver
	eachtest.Check(t, numCounters, func(i int, v uint64) func(func(string, uint64)) {
		r.c = counterSet{}
		r.c[i].Store(v)
		return r.Counters().Each
	})
}

// TestSupplyPart: an interval whose End marker and Hello arrived but one
// of whose parts lost a fragment lists that part as incomplete once a
// frame of the next interval has come (the sender sent it after every
// fragment of the part, so the missing one is lost, not slow); supplied
// by other means (the appliance fetches it from its sender) the part
// completes the interval at once, payload intact, and the part's late
// fragments count as duplicates, not as an inconsistency.
func TestSupplyPart(t *testing.T) {
	lda := twoParts[0]
	s := newTestSender(t, DefaultMTU, 1, twoParts)
	r := newTestReceiver(t, nil)
	if _, ok := r.Incomplete(1, nil); ok {
		t.Fatal("an interval not in flight is listed")
	}
	var held []byte
	sent := deliver(t, s, r, 1, 1, func(k uint64, i int) bool {
		return i == 3 // the LDA's middle fragment
	})
	frames := intervalFrames(t, s, 1, sent[1])
	held = frames[3]
	if miss, ok := r.Incomplete(1, nil); ok {
		t.Fatalf("listed %v before any frame sent after the part's came", miss)
	}
	deliver(t, s, r, 2, 2, func(k uint64, i int) bool { return i > 0 }) // End(2) alone
	miss, ok := r.Incomplete(1, nil)
	if !ok || len(miss) != 1 || miss[0] != lda {
		t.Fatalf("incomplete: %v %v, want [%v]", miss, ok, lda)
	}
	if r.SupplyPart(1, PartKey{MEC: 1, Kind: KindLDS}, []byte("x")) {
		t.Fatal("a part the Hello does not announce was taken")
	}
	var want []byte
	for _, p := range sent[1] {
		if p.PartKey == lda {
			want = p.Payload
		}
	}
	if !r.SupplyPart(1, lda, want) {
		t.Fatal("the missing part was not taken")
	}
	res := r.Results(nil)
	if len(res) != 1 || res[0].Bundle == nil || res[0].Bundle.Missing != nil || !bytes.Equal(res[0].Bundle.Payloads[lda], want) {
		t.Fatalf("want interval 1 complete with the supplied part: %v", describe(res))
	}
	if r.SupplyPart(1, lda, want) {
		t.Fatal("a part of an interval already out was taken")
	}
	// A fragment of it arriving late (another copy) changes nothing.
	dup := r.Counters().Duplicate + r.Counters().Late
	if err := r.Consume(held, 1e9); err != nil {
		t.Fatal(err)
	}
	if c := r.Counters(); c.Duplicate+c.Late != dup+1 || c.Inconsistent != 0 {
		t.Fatalf("late fragment: %+v", c)
	}
}
