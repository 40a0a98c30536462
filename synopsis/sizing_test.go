package synopsis

import (
	"fmt"
	"math"
	"testing"
)

func TestSizeLDA(t *testing.T) {
	tests := []struct {
		name     string
		n        uint64
		losses   []float64
		counters int
		want     []BankConfig
	}{
		// ToN paper Sec. IV-B: 5M packets, 1024 counters.
		{"paper 2 banks", 5_000_000, []float64{0.005, 0.1}, 1024, []BankConfig{{512, 7}, {512, 11}}},
		// 0.5·256/5001 = 2^-5.29 → 2^-5 (rounding down gave 2^-6).
		{"paper 3 banks", 5_000_000, []float64{0.001, 0.01, 0.1}, 1024, []BankConfig{{256, 5}, {256, 9}, {256, 12}}},
		{"paper 4 banks", 5_000_000, []float64{0.001, 0.01, 0.05, 0.1}, 1024, []BankConfig{{256, 5}, {256, 9}, {256, 11}, {256, 12}}},
		{"single bank", 5_000_000, []float64{0.01}, 1024, []BankConfig{{1024, 7}}},
		{"no loss samples all", 5_000_000, []float64{0}, 1024, []BankConfig{{1024, 0}}},
		{"no rates", 1000, nil, 1024, []BankConfig{{1024, 0}}},
		{"few packets", 1000, []float64{0.01}, 1024, []BankConfig{{1024, 0}}},
		// 0.5·512/901 = 2^-1.82 and 0.5·512/1001 = 2^-1.97 both round to 2^-2.
		{"rates share a k", 1_000_000, []float64{0.0009, 0.001}, 1024, []BankConfig{{1024, 2}}},
		// NaN and −1 count as 0 (two rates → 512 rows at 2^0), 2 as 1:
		// 0.5·256/(10^6+1) → 2^-13.
		{"bad rates clamp", 1_000_000, []float64{math.NaN(), -1, 2}, 768, []BankConfig{{512, 0}, {256, 13}}},
		// 0.5·512/10001 = 2^-5.29 → 2^-5.
		{"counters not a power of two", 1_000_000, []float64{0.01}, 1000, []BankConfig{{512, 5}}},
		// 0.5·2/10001 = 2^-13.29 → 2^-13; 0.5·2/100001 = 2^-16.61 → 2^-17.
		{"too few counters", 1_000_000, []float64{0.01, 0.1}, 1, []BankConfig{{2, 13}, {2, 17}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := SizeLDA(tt.n, tt.losses, tt.counters)
			if err := got.Validate(); err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(got.Banks) != fmt.Sprint(tt.want) {
				t.Fatalf("SizeLDA = %v, want %v", got.Banks, tt.want)
			}
		})
	}
}

// TestSizeLDARounding: each bank's 2^-k maximises W(p) = p·e^(−p/p*),
// p* = α·m/(L+1), over every power of two 2^0 … 2^-LDAMaxSampleLog2
// (brute force, not the two-neighbour shortcut of SampleLog2), and so lies
// within [1/√2·0.98, √2·1.02] of p* (or is 1 when p* ≥ 1).
func TestSizeLDARounding(t *testing.T) {
	for _, n := range []uint64{1000, 123_456, 5_000_000, 80_000_000, 1 << 62} {
		for _, loss := range []float64{0.0001, 0.003, 0.05, 0.3, 1} {
			for _, counters := range []int{2, 64, 1000, 1024, 4096} {
				cfg := SizeLDA(n, []float64{loss}, counters)
				b := cfg.Banks[0]
				if b.Rows > counters || 2*b.Rows <= counters {
					t.Errorf("n=%d loss=%g counters=%d: rows %d", n, loss, counters, b.Rows)
				}
				ps := SizingAlpha * float64(b.Rows) / (float64(n)*loss + 1)
				best, bestW := 0, math.Inf(-1)
				for k := 0; k <= LDAMaxSampleLog2; k++ {
					p := math.Ldexp(1, -k)
					if w := math.Log(p) - p/ps; w > bestW { // log W: no underflow at tiny p*
						best, bestW = k, w
					}
				}
				if int(b.SampleLog2) != best {
					t.Errorf("n=%d loss=%g counters=%d: p*=%g, got 2^-%d, W is largest at 2^-%d", n, loss, counters, ps, b.SampleLog2, best)
				}
				q := math.Ldexp(1, -int(b.SampleLog2))
				if r := q / ps; ps < 1 && b.SampleLog2 < LDAMaxSampleLog2 && (r < 0.98/math.Sqrt2 || r > 1.02*math.Sqrt2) {
					t.Errorf("n=%d loss=%g counters=%d: 2^-%d / p* = %g, not near 1 in log scale", n, loss, counters, b.SampleLog2, r)
				}
			}
		}
	}
}

// TestSampleLog2 pins the edges: p* ≥ 1, bad inputs, the cap, α.
func TestSampleLog2(t *testing.T) {
	tests := []struct {
		name  string
		n     uint64
		loss  float64
		rows  int
		alpha float64
		want  uint8
	}{
		{"no loss", 5_000_000, 0, 1024, 0.5, 0},
		{"NaN loss", 5_000_000, math.NaN(), 1024, 0.5, 0},
		{"p* ≥ 1", 1000, 0.001, 1024, 0.5, 0},
		// Paper Fig. 4 at 20 % loss: 0.5·1024/(10^6+1) = 2^-10.93.
		{"paper 20 %", 5_000_000, 0.2, 1024, 0.5, 11},
		// α = 0.7: 2^-10.45 → 2^-10; α = 1: 2^-9.93 → 2^-10.
		{"alpha 0.7", 5_000_000, 0.2, 1024, 0.7, 10},
		{"alpha 1", 5_000_000, 0.2, 1024, 1, 10},
		// p* = 2^-0.5 exactly ties in log scale; W prefers 2^-1 (tie at 1/ln 2).
		{"log tie", 1_000_000 - 1, 1e-6, 1, math.Sqrt2, 1},
		{"cap", math.MaxUint64, 1, 2, 0.5, LDAMaxSampleLog2},
		{"bad alpha", 5_000_000, 0.2, 1024, 0, 0},
		{"bad rows", 5_000_000, 0.2, 0, 0.5, 0},
	}
	for _, tt := range tests {
		if got := SampleLog2(tt.n, tt.loss, tt.rows, tt.alpha); got != tt.want {
			t.Errorf("%s: SampleLog2 = %d, want %d", tt.name, got, tt.want)
		}
	}
}

// TestSizeLDAEffectiveSamples holds a single bank sized for the true loss
// against eq. 2, E[S] ≥ α(1−α)·m/(L+1)·R. Rounding p to a power of two
// (a factor 0.69…1.44) moves the expected S between ≈ 0.85 and 1.3 of its
// value at the paper's p (≈ 1.2 × the bound), so require 0.6 of the bound.
func TestSizeLDAEffectiveSamples(t *testing.T) {
	n := 1_000_000
	if testing.Short() {
		n = 200_000
	}
	for _, loss := range []float64{0.002, 0.01, 0.05, 0.2} {
		t.Run(fmt.Sprint(loss), func(t *testing.T) {
			cfg := SizeLDA(uint64(n), []float64{loss}, 1024)
			a, b := MustNewLDA(cfg), MustNewLDA(cfg)
			tr := genTrace(uint64(loss*1e6), n, loss, expDelay(10_000), []*LDA{a}, []*LDA{b})
			e, _ := EstimateLDA(a, b, 0.98)
			m := float64(cfg.Banks[0].Rows)
			bound := SizingAlpha * (1 - SizingAlpha) * m / (float64(tr.lost()) + 1) * float64(tr.received)
			t.Logf("%v: S=%d, eq. 2 bound %.0f (ratio %.2f)", cfg, e.Samples, bound, float64(e.Samples)/bound)
			if float64(e.Samples) < 0.6*bound {
				t.Errorf("S=%d < 0.6 × eq. 2 bound %.0f", e.Samples, bound)
			}
		})
	}
}
