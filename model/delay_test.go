package model

import (
	"math"
	"math/rand/v2"
	"testing"
)

func mustDelay(t testing.TB, s string) Delay {
	t.Helper()
	d, err := ParseDelay(s)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestDelayMoments holds the empirical mean and standard deviation of each
// distribution against its analytic Mean and Stddev.
func TestDelayMoments(t *testing.T) {
	w06, _ := NewWeibull(200, 0.6)
	w08, _ := NewWeibull(200, 0.8)
	p3, _ := NewPareto(200, 3)
	p5, _ := NewPareto(200, 5)
	tests := []struct {
		name   string
		d      Delay
		stdTol float64 // relative tolerance on the standard deviation
	}{
		{"constant", Constant{Ns: 50}, 0},
		{"exp", Exponential{MeanNs: 1000}, 0.02},
		{"uniform", Uniform{MinNs: 10, MaxNs: 90}, 0.02},
		{"weibull0.6", w06, 0.05},
		{"weibull0.8", w08, 0.04},
		// Pareto shape 3 has no fourth moment: the sample std-dev converges
		// slowly, so its tolerance is wide; shape 5 is well behaved.
		{"pareto3", p3, 0.15},
		{"pareto5", p5, 0.04},
		{"mix", mustDelay(t, "mix:p=0.9;exp:100;constant:2us"), 0.02},
		{"shift", mustDelay(t, "weibull:mean=50us,shape=0.7,offset=10us"), 0.04},
	}
	const n = 400_000
	buf := make([]float64, n)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(1, 2))
			tt.d.Fill(r, buf)
			var s, s2 float64
			for _, x := range buf {
				if x < 0 || math.IsNaN(x) {
					t.Fatalf("sample %g", x)
				}
				s += x
				s2 += x * x
			}
			mean := s / n
			std := math.Sqrt(math.Max(s2/n-mean*mean, 0))
			wantM, wantS := tt.d.Mean(), tt.d.Stddev()
			// 6 standard errors of the sample mean.
			if tol := 6*wantS/math.Sqrt(n) + 1e-9*wantM; math.Abs(mean-wantM) > tol {
				t.Errorf("mean %g, want %g ± %g", mean, wantM, tol)
			}
			if math.Abs(std-wantS) > tt.stdTol*wantS+1e-9 {
				t.Errorf("stddev %g, want %g ± %g%%", std, wantS, 100*tt.stdTol)
			}
		})
	}
}

// TestPaperParameters checks the numbers ToN LDA paper Sec. IV quotes for its
// distributions scaled to a 0.2 µs mean.
func TestPaperParameters(t *testing.T) {
	w, _ := NewWeibull(200, 0.6)
	if math.Abs(w.ScaleNs-133) > 1 { // paper: α = 0.133 µs
		t.Errorf("weibull 0.6 scale %g ns, paper 133", w.ScaleNs)
	}
	if v := w.Stddev() * w.Stddev() / 1e6; math.Abs(v-0.123) > 0.002 { // µs²
		t.Errorf("weibull 0.6 variance %g µs², paper 0.123", v)
	}
	p, _ := NewPareto(200, 3)
	if v := p.Stddev() * p.Stddev() / 1e6; math.Abs(v-0.0133) > 0.0005 {
		t.Errorf("pareto 3 variance %g µs², paper 0.013", v)
	}
}

func TestSampleMatchesFill(t *testing.T) {
	for _, s := range []string{"weibull:mean=200ns,shape=0.6", "pareto:mean=200,shape=3", "exp:5us",
		"uniform:min=1us,max=2us", "mix:p=0.5;exp:1us;constant:5us", "constant:7,offset=3"} {
		d := mustDelay(t, s)
		r1 := rand.New(rand.NewPCG(7, 8))
		r2 := rand.New(rand.NewPCG(7, 8))
		buf := make([]float64, 100)
		d.Fill(r1, buf)
		for i, x := range buf {
			if y := d.Sample(r2); y != x {
				t.Fatalf("%s: sample %d: Fill %g, Sample %g", s, i, x, y)
			}
		}
	}
}

func TestDelayZeroAlloc(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	buf := make([]float64, 64)
	for _, s := range []string{"weibull:mean=200ns,shape=0.6", "pareto:mean=200,shape=3",
		"mix:p=0.5;exp:1us;constant:5us,offset=1us"} {
		d := mustDelay(t, s)
		if a := testing.AllocsPerRun(100, func() { d.Sample(r); d.Fill(r, buf) }); a != 0 {
			t.Errorf("%s: %v allocs", s, a)
		}
	}
}

func TestNanos(t *testing.T) {
	for _, tt := range []struct {
		in   float64
		want uint64
	}{{-1, 0}, {math.NaN(), 0}, {0.4, 0}, {0.5, 1}, {199.6, 200}, {1e30, MaxDelayNs}, {math.Inf(1), MaxDelayNs}} {
		if got := Nanos(tt.in); got != tt.want {
			t.Errorf("Nanos(%g) = %d, want %d", tt.in, got, tt.want)
		}
	}
}

func BenchmarkDelayFill(b *testing.B) {
	for _, s := range []string{"weibull:mean=200ns,shape=0.6", "pareto:mean=200ns,shape=3", "exp:200ns"} {
		b.Run(s, func(b *testing.B) {
			d := mustDelay(b, s)
			r := rand.New(rand.NewPCG(1, 1))
			buf := make([]float64, 4096)
			b.ReportAllocs()
			for b.Loop() {
				d.Fill(r, buf)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(buf)), "ns/pkt")
		})
	}
}
