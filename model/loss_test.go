package model

import (
	"math"
	"math/rand/v2"
	"testing"
)

func mustLoss(t testing.TB, s string) Loss {
	t.Helper()
	l, err := ParseLoss(s)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TestLossRate checks the long-run loss fraction, and for bursty loss the
// mean episode length, against the parameters.
func TestLossRate(t *testing.T) {
	tests := []struct {
		spec      string
		rate      float64
		meanBurst float64 // 0: do not check
	}{
		{"none", 0, 0},
		{"uniform:rate=0.01", 0.01, 1 / 0.99},
		{"uniform:20%", 0.2, 1 / 0.8},
		{"uniform:1", 1, 0},
		{"bursty:rate=0.01,burst=100", 0.01, 100},
		{"bursty:rate=0.2,burst=100", 0.2, 100},
		{"bursty:rate=0.05,burst=1", 0.05, 1},
		{"bursty:rate=0.3,burst=5", 0.3, 5},
		{"bursty:rate=0", 0, 0},
	}
	n := 4_000_000
	if testing.Short() {
		n = 1_000_000 // -race is ~10× slower; tolerances scale with n
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			l := mustLoss(t, tt.spec)
			if l.Rate() != tt.rate {
				t.Fatalf("Rate() = %g, want %g", l.Rate(), tt.rate)
			}
			r := rand.New(rand.NewPCG(3, 4))
			var lost, episodes int
			prev := false
			for range n {
				x := l.Lost(r)
				if x {
					lost++
					if !prev {
						episodes++
					}
				}
				prev = x
			}
			got := float64(lost) / float64(n)
			// Episodes are correlated: the variance of the lost count grows
			// with the burst length, so the tolerance does too.
			burst := math.Max(tt.meanBurst, 1)
			tol := 6*math.Sqrt(tt.rate*(1-tt.rate)*(2*burst)/float64(n)) + 1e-12
			if math.Abs(got-tt.rate) > tol {
				t.Errorf("loss fraction %g, want %g ± %g", got, tt.rate, tol)
			}
			if tt.meanBurst > 0 && episodes > 0 {
				mb := float64(lost) / float64(episodes)
				// Episode lengths are geometric: standard deviation ≈ mean.
				if math.Abs(mb-tt.meanBurst) > 5*tt.meanBurst/math.Sqrt(float64(episodes)) {
					t.Errorf("mean episode %g packets, want %g", mb, tt.meanBurst)
				}
			}
		})
	}
}

// TestLossFillMatchesLost: the batch and the per-packet paths produce the
// same sequence from the same seed (Fill may not change the process).
func TestLossFillMatchesLost(t *testing.T) {
	for _, s := range []string{"uniform:0.3", "bursty:rate=0.1,burst=7", "bursty:rate=0.001,burst=100", "none"} {
		a, b := mustLoss(t, s), mustLoss(t, s)
		r1, r2 := rand.New(rand.NewPCG(9, 9)), rand.New(rand.NewPCG(9, 9))
		buf := make([]bool, 1000)
		for round := range 50 {
			a.Fill(r1, buf[:round*13%len(buf)])
			for i, x := range buf[:round*13%len(buf)] {
				if y := b.Lost(r2); y != x {
					t.Fatalf("%s: round %d packet %d: Fill %v, Lost %v", s, round, i, x, y)
				}
			}
		}
	}
}

// TestLossDeterministicClone: same seed, same losses; Clone starts afresh.
func TestLossDeterministicClone(t *testing.T) {
	l := mustLoss(t, "bursty:rate=0.05,burst=10")
	run := func(l Loss) []bool {
		r := rand.New(rand.NewPCG(5, 6))
		out := make([]bool, 10000)
		l.Fill(r, out)
		return out
	}
	c := l.Clone()
	first := run(l)
	second := run(c)
	third := run(l.Clone())
	for i := range first {
		if first[i] != second[i] || first[i] != third[i] {
			t.Fatalf("packet %d differs between runs with the same seed", i)
		}
	}
}

func TestLossZeroAlloc(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	buf := make([]bool, 64)
	for _, s := range []string{"uniform:0.01", "bursty:rate=0.01,burst=100", "none"} {
		l := mustLoss(t, s)
		if a := testing.AllocsPerRun(1000, func() { l.Lost(r); l.Fill(r, buf) }); a != 0 {
			t.Errorf("%s: %v allocs", s, a)
		}
	}
}

func BenchmarkLoss(b *testing.B) {
	for _, s := range []string{"uniform:0.01", "bursty:rate=0.01,burst=100"} {
		b.Run(s, func(b *testing.B) {
			l := mustLoss(b, s)
			r := rand.New(rand.NewPCG(1, 1))
			buf := make([]bool, 4096)
			b.ReportAllocs()
			for b.Loop() {
				l.Fill(r, buf)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(buf)), "ns/pkt")
		})
	}
}
