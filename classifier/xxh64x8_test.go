package classifier

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/cespare/xxhash/v2"
)

// kernelCheck hashes groups of random words with the selected kernel and
// compares every lane with xxhash.Sum64 over the lane's bytes.
func kernelCheck(t testing.TB, w []uint64, nwords int) {
	groups := len(w) / (nwords * 8)
	out := make([]uint64, groups*8)
	xxh64x8(w, nwords, out)
	outGo := make([]uint64, groups*8)
	xxh64x8Go(w, nwords, outGo)
	buf := make([]byte, nwords*8)
	for g := 0; g < groups; g++ {
		for lane := 0; lane < 8; lane++ {
			for k := 0; k < nwords; k++ {
				binary.LittleEndian.PutUint64(buf[8*k:], w[g*nwords*8+k*8+lane])
			}
			want := xxhash.Sum64(buf)
			if got := out[g*8+lane]; got != want {
				t.Fatalf("nwords %d group %d lane %d: kernel %#x, xxhash.Sum64 %#x (avx512 %v)", nwords, g, lane, got, want, haveAVX512)
			}
			if got := outGo[g*8+lane]; got != want {
				t.Fatalf("nwords %d group %d lane %d: Go kernel %#x, xxhash.Sum64 %#x", nwords, g, lane, got, want)
			}
		}
	}
}

func TestXXH64x8MatchesScalar(t *testing.T) {
	t.Logf("AVX-512 kernel: %v", haveAVX512)
	r := rand.New(rand.NewPCG(1, 2))
	for _, nwords := range []int{v4Words, nonIPWords, v6Words} {
		for groups := 1; groups <= 9; groups++ {
			w := make([]uint64, groups*nwords*8)
			for i := range w {
				switch r.IntN(4) {
				case 0:
					w[i] = 0
				case 1:
					w[i] = ^uint64(0)
				default:
					w[i] = r.Uint64()
				}
			}
			kernelCheck(t, w, nwords)
		}
	}
}

func TestXXH64x8Bounds(t *testing.T) {
	// Short inputs and outputs bound the work: nothing is written past out.
	w := make([]uint64, 2*v4Words*8)
	out := make([]uint64, 9)
	out[8] = 42
	xxh64x8(w, v4Words, out)
	if out[8] != 42 {
		t.Fatalf("kernel wrote past the groups out has room for")
	}
	xxh64x8(w[:10], v4Words, out) // less than one group: no work, no panic
}

func FuzzXXH64x8(f *testing.F) {
	f.Add(uint8(0), []byte{})
	f.Add(uint8(1), []byte("some bytes that are not a multiple of anything"))
	f.Fuzz(func(t *testing.T, sel uint8, data []byte) {
		nwords := []int{v4Words, nonIPWords, v6Words}[int(sel)%3]
		groups := 1 + int(sel)/3%3
		w := make([]uint64, groups*nwords*8)
		var pad [8]byte
		for i := range w {
			if len(data) == 0 {
				break
			}
			n := copy(pad[:], data)
			data = data[n:]
			w[i] = binary.LittleEndian.Uint64(pad[:])
		}
		kernelCheck(t, w, nwords)
	})
}

func BenchmarkXXH64x8(b *testing.B) {
	for _, nwords := range []int{v4Words, v6Words} {
		w := make([]uint64, 4*nwords*8)
		for i := range w {
			w[i] = uint64(i) * 0x9E3779B97F4A7C15
		}
		out := make([]uint64, 32)
		b.Run(map[int]string{v4Words: "v4", v6Words: "v6"}[nwords], func(b *testing.B) {
			for b.Loop() {
				xxh64x8(w, nwords, out)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*32), "ns/pkt")
		})
	}
}

func BenchmarkXXH64x8Scalar(b *testing.B) {
	w := make([]uint64, 4*v4Words*8)
	out := make([]uint64, 32)
	for b.Loop() {
		xxh64x8Go(w, v4Words, out)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*32), "ns/pkt")
}
