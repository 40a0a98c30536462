package appliance

import (
	"math"
	"testing"
)

// TestOrderChecksNeeded: the intervals checked in order before counts alone
// stand keep a segment of any crossing rate p from a wrong loss more often
// than 1 − conf: max over p of (1−p)^n·p, scanned, is at most 1 − conf at
// n and above it at n − 1.
func TestOrderChecksNeeded(t *testing.T) {
	worst := func(n int) float64 {
		w := 0.0
		for i := 1; i < 100000; i++ {
			p := float64(i) / 100000
			w = max(w, math.Pow(1-p, float64(n))*p)
		}
		return w
	}
	for _, conf := range []float64{0.9, 0.95, 0.98, 0.99, 0.999} {
		n := orderChecksNeeded(conf)
		if w := worst(n); w > 1-conf {
			t.Errorf("conf %v: %d checks leave a wrong loss with probability up to %.4f", conf, n, w)
		}
		if w := worst(n - 1); n > 1 && w <= 1-conf {
			t.Errorf("conf %v: %d checks would do (%.4f), %d asked", conf, n-1, w, n)
		}
	}
	if n := orderChecksNeeded(0.98); n != 18 {
		t.Errorf("at the default confidence %d checks, want 18", n)
	}
}
