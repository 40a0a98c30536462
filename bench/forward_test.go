package bench

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkForwardRing reports Mpps and ns/pkt of one lane forwarding with
// measurement off, LDA, and LDA+RDA+LDS, over burst sizes 8–64.
func BenchmarkForwardRing(b *testing.B) {
	for _, mode := range []string{ModeOff, ModeLDA, ModeAll} {
		for _, burst := range []int{8, 32, 64} {
			b.Run(fmt.Sprintf("%s/burst=%d", mode, burst), func(b *testing.B) {
				var pk uint64
				var el time.Duration
				for b.Loop() {
					r, err := ForwardRing(mode, burst, 128, 200*time.Millisecond)
					if err != nil {
						b.Fatal(err)
					}
					pk += r.Packets
					el += r.Elapsed
				}
				b.ReportMetric(float64(el.Nanoseconds())/float64(pk), "ns/pkt")
				b.ReportMetric(float64(pk)/el.Seconds()/1e6, "Mpps")
			})
		}
	}
}

// TestForwardRing checks the harness: every mode forwards, measuring modes
// record every forwarded frame, and an unknown mode is an error.
func TestForwardRing(t *testing.T) {
	for _, mode := range []string{ModeOff, ModeLDA, ModeAll} {
		r, err := ForwardRing(mode, 32, 128, 50*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		if r.Packets == 0 || r.Mpps <= 0 {
			t.Errorf("%s: forwarded nothing: %+v", mode, r)
		}
		// The thread's CPU time is at most the wall time (a little slack
		// for the two clocks' granularity) and is not zero.
		if r.CPU <= 0 || r.CPUNsPerPkt <= 0 || r.CPUShare <= 0 || r.CPUShare > 1.05 {
			t.Errorf("%s: CPU time %v for %v wall (share %.3f)", mode, r.CPU, r.Elapsed, r.CPUShare)
		}
		if mode != ModeOff && (r.Recorded < r.Packets || r.Recorded > r.Packets+64) {
			t.Errorf("%s: recorded %d of %d forwarded", mode, r.Recorded, r.Packets)
		}
	}
	if _, err := ForwardRing("bogus", 32, 128, time.Millisecond); err == nil {
		t.Error("unknown mode accepted")
	}
	for _, size := range []int{63, 2049} {
		if _, err := ForwardRing(ModeOff, 32, size, time.Millisecond); err == nil {
			t.Errorf("frame size %d accepted", size)
		}
	}
	if r, err := ForwardRing(ModeLDA, 32, 1500, 20*time.Millisecond); err != nil || r.Packets == 0 {
		t.Errorf("1500-byte frames: %+v, %v", r, err)
	}
}
