package control

import (
	"errors"
	"math/rand/v2"
	"testing"
)

// world of the freshness tests: an interval is 1 s, the clocks agree, and
// interval k's frames are signed and received during [k+1 s, k+2 s).
const freshSkew = int64(1e9)

// recordedSessions returns frames recorded from n earlier sessions of the
// same sender (one restart each), session i live for intervals
// start+3i … start+3i+2.
func recordedSessions(t *testing.T, n int, start uint64) (sessions []*Sender, frames [][]byte) {
	for i := 0; i < n; i++ {
		s := newTestSenderKey(t, DefaultMTU, 1, twoParts, testKey, uint64(0x100+i))
		sessions = append(sessions, s)
		for k := start + 3*uint64(i); k < start+3*uint64(i)+3; k++ {
			frames = append(frames, intervalFrames(t, s, k, makeParts(k, twoParts, 900, 40))...)
		}
	}
	return sessions, frames
}

// TestReplayedSessionsNeverDisplaceLive: frames recorded from old and
// retired sessions — from long ago, and from the last seconds — replayed
// before, between and after the live session's frames, into a Receiver and
// the worker's EndReader fed the same stream. Every interval of the live
// session must complete with its own content, the EndReader must flip
// exactly once per live interval and on nothing else, and both must agree
// on the live session throughout. This is the attack of a host on the
// segment (it records the group-addressed control frames) and of an
// upstream host (whose frames the sending appliance would otherwise put on
// the segment).
func TestReplayedSessionsNeverDisplaceLive(t *testing.T) {
	for _, tc := range []struct {
		name string
		// first is the live session's first interval; ancient sessions
		// ran long before it, recent ones right up to it (the live one is
		// the restart of the last of them).
		ancient, recent int
		order           string // "before", "interleaved", "burst"
		// skew: a wide one (60 s) keeps every recent session's frames
		// fresh, so only the retired list and the newer-than-live rule
		// stand between them and the receiver.
		skew int64
	}{
		{"ancient sessions into a fresh receiver", 3, 0, "before", freshSkew},
		{"ancient sessions interleaved", 3, 0, "interleaved", freshSkew},
		{"nine retired sessions interleaved", 0, 9, "interleaved", freshSkew},
		{"retired and ancient in bursts", 2, 9, "burst", freshSkew},
		{"twelve fresh retired sessions, wide skew", 0, 12, "interleaved", 60e9},
		{"twelve fresh retired sessions in bursts, wide skew", 1, 12, "burst", 60e9},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, ancient := recordedSessions(t, tc.ancient, 100)
			first := uint64(10_000)
			_, recent := recordedSessions(t, tc.recent, first-3*uint64(tc.recent))
			r := newTestReceiver(t, func(c *ReceiverConfig) { c.MaxClockSkew = tc.skew })
			rd, err := NewEndReaderConfig(ReceiverConfig{Key: testKey, Direction: 1, MaxClockSkew: tc.skew})
			if err != nil {
				t.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(7, uint64(tc.ancient*16+tc.recent)))
			var flips []uint64
			feed := func(f []byte, now int64) {
				k, _, st := rd.Read(f, now)
				if st == EndNew {
					flips = append(flips, k)
				}
				r.Consume(f, now) // rejects are counted, not failures
			}
			// The retired sessions were live in turn: the receiver saw
			// them as they happened (in order, on time).
			for _, f := range recent {
				var fr Frame
				if err := ParseFrame(f, &fr); err != nil {
					t.Fatal(err)
				}
				feed(f, int64(fr.Interval+1)*1e9)
			}
			flips = flips[:0]
			r.Results(nil)
			replay := append(append([][]byte(nil), ancient...), recent...)
			if tc.order == "before" {
				for _, f := range replay {
					feed(f, int64(first+1)*1e9)
				}
			}
			live := newTestSenderKey(t, DefaultMTU, 1, twoParts, testKey, 0x4242)
			var want []uint64
			for k := first; k < first+8; k++ {
				now := int64(k+1) * 1e9
				parts := makeParts(k, twoParts, 900, 40)
				frames := intervalFrames(t, live, k, parts)
				for i, f := range frames {
					feed(f, now+int64(i))
					switch tc.order {
					case "interleaved":
						feed(replay[rng.IntN(len(replay))], now+int64(i))
					case "burst":
						if i == 0 {
							for _, g := range replay {
								feed(g, now)
							}
						}
					}
				}
				wantBundle(t, r.Results(nil), live, k, parts)
				want = append(want, k)
				if s, _ := r.Session(); s != 0x4242 || rd.guard.session != 0x4242 {
					t.Fatalf("interval %d: receiver follows %x, end reader %x", k, s, rd.guard.session)
				}
			}
			if len(flips) != len(want) {
				t.Fatalf("flips %v, want %v", flips, want)
			}
			for i := range want {
				if flips[i] != want[i] {
					t.Fatalf("flips %v, want %v", flips, want)
				}
			}
			c := r.Counters()
			wantRestarts := uint64(max(tc.recent-1, 0))
			if tc.recent > 0 {
				wantRestarts++ // to the live session
			}
			if c.SessionRestarts != wantRestarts || c.Failures != 0 {
				t.Fatalf("counters %+v", c)
			}
			t.Logf("stale %d older %d unfresh %d untimed %d replayed %d", c.StaleSession, c.OlderSession, c.StaleHello, c.UnknownSession, c.Replayed)
		})
	}
}

// TestReplayOfLiveSessionsOwnFrames: the live session's own recorded
// frames, replayed behind each new interval, neither flip the worker nor
// reach the reassembly twice.
func TestReplayOfLiveSessionsOwnFrames(t *testing.T) {
	r := newTestReceiver(t, func(c *ReceiverConfig) { c.MaxClockSkew = freshSkew })
	rd, _ := NewEndReaderConfig(ReceiverConfig{Key: testKey, Direction: 1, MaxClockSkew: freshSkew})
	live := newTestSenderKey(t, DefaultMTU, 1, twoParts, testKey, 0x77)
	var old [][]byte
	for k := uint64(50); k < 56; k++ {
		now := int64(k+1) * 1e9
		parts := makeParts(k, twoParts, 900, 40)
		frames := intervalFrames(t, live, k, parts)
		flipped := 0
		for _, f := range frames {
			if _, _, st := rd.Read(f, now); st == EndNew {
				flipped++
			}
			if err := r.Consume(f, now); err != nil {
				t.Fatal(err)
			}
			for _, g := range old {
				if _, _, st := rd.Read(g, now); st == EndNew {
					t.Fatalf("interval %d: a replayed End flipped", k)
				}
				if err := r.Consume(g, now); !errors.Is(err, ErrReplayed) {
					t.Fatalf("replayed frame: %v", err)
				}
			}
		}
		if flipped != 1 {
			t.Fatalf("interval %d: %d flips", k, flipped)
		}
		wantBundle(t, r.Results(nil), live, k, parts)
		old = append(old, frames...)
		if len(old) > 12 {
			old = old[len(old)-12:]
		}
	}
}

// TestSessionGuardRestartAndClockStep: a real restart (later signed time,
// fresh) is adopted at its first End; a new session whose clock runs
// behind the live session's latest signed time is not adopted until it
// signs something later; a live session's times from the future (a clock
// far ahead) never lock a restart out for longer than the skew.
func TestSessionGuardRestartAndClockStep(t *testing.T) {
	g := sessionGuard{skew: freshSkew}
	end := func(sess uint64, tNs int64) *Frame {
		f := &Frame{Header: Header{Type: TypeEnd, Session: sess}, Payload: make([]byte, EndPayloadLen)}
		e := End{StartNs: tNs - 1, EndNs: tNs}
		f.Payload = e.AppendBinary(f.Payload[:0])
		return f
	}
	steps := []struct {
		f    *Frame
		now  int64
		want admission
	}{
		{end(1, 100e9), 100e9, admitNew},
		{end(1, 101e9), 101e9, admitLive},
		{end(2, 100.5e9), 101.2e9, admitOlder}, // behind the live session's latest
		{end(2, 102e9), 102e9, admitNew},       // the restart, once later
		{end(1, 103e9), 103e9, admitRetired},   // never back
		{end(2, 500e9), 103e9, admitLive},      // the live session's future time: not taken as its newest
		{end(3, 103.5e9), 103.5e9, admitNew},   // so a restart is not locked out
		{&Frame{Header: Header{Type: TypeFragment, Session: 4}}, 104e9, admitUntimed},
		{end(4, 90e9), 104e9, admitUnfresh},
	}
	for i, s := range steps {
		if got := g.admit(s.f, s.now); got != s.want {
			t.Fatalf("step %d: %d, want %d", i, got, s.want)
		}
	}
}
