package classifier

import (
	"math/rand/v2"
	"testing"
)

// burstFrames is a mix of every kind of frame the tests know: the fast
// path's IPv4/IPv6 TCP/UDP, the general path's tagged, fragmented,
// optioned, non-IP, truncated and malformed frames.
func burstFrames(tb testing.TB) [][]byte {
	take, leave := fastCases(tb)
	out := append(append([][]byte{}, take...), leave...)
	r := rand.New(rand.NewPCG(3, 4))
	for _, f := range take { // corruptions: lengths cut, bytes flipped
		g := append([]byte(nil), f...)
		g[r.IntN(len(g))] ^= byte(1 + r.IntN(255))
		out = append(out, g, f[:r.IntN(len(f))])
	}
	return out
}

// checkBurst stages frames through one Burst in chunks of size and holds
// every Meta against Parse's.
func checkBurst(t testing.TB, b *Burst, frames [][]byte, size int) {
	ms := make([]Meta, size)
	for lo := 0; lo < len(frames); lo += size {
		hi := min(lo+size, len(frames))
		for i := lo; i < hi; i++ {
			b.Add(i-lo, frames[i], &ms[i-lo])
		}
		b.Hash(ms[:hi-lo])
		for i := lo; i < hi; i++ {
			var want Meta
			Parse(frames[i], &want)
			got := ms[i-lo]
			if b.Lean && got.Flags == want.Flags && got.Flags&(FlagIPv4|FlagIPv6) != 0 && got.Flags&FlagPorts != 0 {
				// A lean fast-path frame: only Hash, Flags and Len are promised.
				if got.Hash != want.Hash || got.Len != want.Len {
					t.Fatalf("frame %d (lean): hash %#x len %d, Parse %#x %d", i, got.Hash, got.Len, want.Hash, want.Len)
				}
				continue
			}
			if got != want {
				t.Fatalf("frame %d (burst %d, lean %v):\n burst %+v\n Parse %+v", i, size, b.Lean, got, want)
			}
		}
	}
}

func TestBurstIsParse(t *testing.T) {
	frames := burstFrames(t)
	t.Logf("%d frames, AVX-512 kernel %v", len(frames), haveAVX512)
	for _, lean := range []bool{false, true} {
		for _, size := range []int{1, 7, 8, 9, 16, 32, 64} {
			b := NewBurst(size)
			b.Lean = lean
			checkBurst(t, b, frames, size)
		}
		// More frames than the Burst was made for: hashed one by one, still right.
		b := NewBurst(4)
		b.Lean = lean
		checkBurst(t, b, frames, 40)
	}
}

func TestBurstZeroAllocs(t *testing.T) {
	frames := burstFrames(t)[:32]
	b := NewBurst(32)
	ms := make([]Meta, 32)
	allocs := testing.AllocsPerRun(100, func() {
		for i, f := range frames {
			b.Add(i, f, &ms[i])
		}
		b.Hash(ms)
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per burst", allocs)
	}
}

func FuzzBurst(f *testing.F) {
	for _, fr := range burstFrames(f) {
		f.Add(fr, fr, false)
	}
	f.Fuzz(func(t *testing.T, a, b []byte, lean bool) {
		bu := NewBurst(3)
		bu.Lean = lean
		checkBurst(t, bu, [][]byte{a, b, a, b, a}, 5)
	})
}
