package control

import (
	"testing"
)

// FuzzEndReader: the worker's End check on any sequence of frames —
// authentic ones of three sessions at various signed times, forgeries,
// corrupted copies and raw bytes — at receive times the fuzzer moves. It
// must not panic or allocate, must flip only on an authentic End, never
// twice on one interval of a session, never on a session it has left, and
// must follow the same live session as a Receiver fed the same frames.
func FuzzEndReader(f *testing.F) {
	type frame struct {
		b       []byte
		session uint64
		end     bool
	}
	var pool []frame
	for i, sess := range []uint64{0x51, 0x52, 0x53} {
		s := newTestSenderKey(f, DefaultMTU, 1, twoParts, testKey, sess)
		for k := uint64(1); k <= 4; k++ {
			for j, b := range intervalFramesAt(f, s, k, makeParts(k, twoParts, 200, 20), int64(i)*3e9) {
				pool = append(pool, frame{b: b, session: sess, end: j == 0})
			}
		}
	}
	forger := newTestSenderKey(f, DefaultMTU, 1, twoParts, []byte("another key, thirty-two bytes!!!"), 0x51)
	for _, b := range intervalFrames(f, forger, 9, makeParts(9, twoParts, 200, 20)) {
		pool = append(pool, frame{b: b})
	}
	f.Add([]byte{0, 0, 1, 0, 2, 5, 0, 10, 1, 12})
	f.Add([]byte{3, 40, 0, 0, 0, 5, 0, 10, 0, 20, 0, 25, 0, 0})
	f.Fuzz(func(t *testing.T, ops []byte) {
		rd, _ := NewEndReaderConfig(ReceiverConfig{Key: testKey, Direction: 1, MaxClockSkew: 2e9})
		rc := newTestReceiver(t, func(c *ReceiverConfig) { c.MaxClockSkew = 2e9 })
		now := int64(0)
		left := map[uint64]bool{}    // sessions the reader has moved away from
		lastK := map[uint64]uint64{} // per session: last interval flipped on
		cur := uint64(0)
		for len(ops) >= 2 {
			op, arg := ops[0], ops[1]
			ops = ops[2:]
			var b []byte
			var fr frame
			switch op % 4 {
			case 0, 1:
				fr = pool[int(arg)%len(pool)]
				b = fr.b
			case 2:
				fr = pool[int(arg)%len(pool)]
				b = append([]byte(nil), fr.b...)
				b[14+int(arg)%(len(b)-14)] ^= 1 << (arg % 8)
				fr = frame{} // corrupted: not authentic
			case 3:
				now += int64(arg) * 1e8
				continue
			}
			k, _, st := rd.Read(b, now)
			rc.Consume(b, now)
			if st == EndNew {
				if !fr.end {
					t.Fatalf("flipped on a frame that is not an authentic End")
				}
				if left[fr.session] {
					t.Fatalf("flipped on session %x after leaving it", fr.session)
				}
				if last, ok := lastK[fr.session]; ok && k <= last {
					t.Fatalf("session %x: flipped on %d after %d", fr.session, k, last)
				}
				lastK[fr.session] = k
			}
			if s := rd.guard.session; rd.guard.have && s != cur {
				if cur != 0 {
					left[cur] = true
				}
				cur = s
			}
			if s, ok := rc.Session(); ok != rd.guard.have || s != rd.guard.session {
				t.Fatalf("receiver follows %x (%v), end reader %x (%v)", s, ok, rd.guard.session, rd.guard.have)
			}
		}
		b := pool[0].b
		if a := testing.AllocsPerRun(10, func() { rd.Read(b, now) }); a != 0 {
			t.Fatalf("%v allocations per Read", a)
		}
	})
}
