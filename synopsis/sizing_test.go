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
		{"paper 3 banks", 5_000_000, []float64{0.001, 0.01, 0.1}, 1024, []BankConfig{{256, 6}, {256, 9}, {256, 12}}},
		{"paper 4 banks", 5_000_000, []float64{0.001, 0.01, 0.05, 0.1}, 1024, []BankConfig{{256, 6}, {256, 9}, {256, 11}, {256, 12}}},
		{"single bank", 5_000_000, []float64{0.01}, 1024, []BankConfig{{1024, 7}}},
		{"no loss samples all", 5_000_000, []float64{0}, 1024, []BankConfig{{1024, 0}}},
		{"no rates", 1000, nil, 1024, []BankConfig{{1024, 0}}},
		{"few packets", 1000, []float64{0.01}, 1024, []BankConfig{{1024, 0}}},
		// 0.5·512/901 = 0.284 and 0.5·512/1001 = 0.256 both round to 2^-2.
		{"rates share a k", 1_000_000, []float64{0.0009, 0.001}, 1024, []BankConfig{{1024, 2}}},
		// NaN and −1 count as 0 (two rates → 512 rows at 2^0), 2 as 1:
		// 0.5·256/(10^6+1) → 2^-13.
		{"bad rates clamp", 1_000_000, []float64{math.NaN(), -1, 2}, 768, []BankConfig{{512, 0}, {256, 13}}},
		{"counters not a power of two", 1_000_000, []float64{0.01}, 1000, []BankConfig{{512, 6}}},
		{"too few counters", 1_000_000, []float64{0.01, 0.1}, 1, []BankConfig{{2, 14}, {2, 17}}},
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

// TestSizeLDARounding: each bank's 2^-k is the largest power of two ≤
// α·m/(L+1) (or 1).
func TestSizeLDARounding(t *testing.T) {
	for _, n := range []uint64{1000, 123_456, 5_000_000, 80_000_000} {
		for _, loss := range []float64{0.0001, 0.003, 0.05, 0.3} {
			for _, counters := range []int{64, 1024, 4096} {
				cfg := SizeLDA(n, []float64{loss}, counters)
				b := cfg.Banks[0]
				p := SizingAlpha * float64(b.Rows) / (float64(n)*loss + 1)
				q := math.Ldexp(1, -int(b.SampleLog2))
				if b.Rows > counters || 2*b.Rows <= counters {
					t.Errorf("n=%d loss=%g counters=%d: rows %d", n, loss, counters, b.Rows)
				}
				if q > p && b.SampleLog2 != 0 || (p < 1 && 2*q <= p) || (p >= 1 && b.SampleLog2 != 0) {
					t.Errorf("n=%d loss=%g counters=%d: p=%g, got 2^-%d", n, loss, counters, p, b.SampleLog2)
				}
			}
		}
	}
}

// TestSizeLDAEffectiveSamples holds a single bank sized for the true loss
// against eq. 2, E[S] ≥ α(1−α)·m/(L+1)·R. Rounding p down to a power of two
// costs up to a factor e^-¼/2 ≈ 0.78 of that bound in expectation (and
// gains up to 1.2 when no rounding is needed), so require 0.6 of it.
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
