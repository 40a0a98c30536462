package analyze_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/ldafwd/ldafwd/analyze"
	"github.com/ldafwd/ldafwd/analyze/analyzetest"
	"github.com/ldafwd/ldafwd/report"
	"github.com/ldafwd/ldafwd/synopsis"
)

// TestStreamMemoryBounded: the streaming analysis holds the packets of
// its window and of the intervals in flight, not the captures. The same
// traffic four times as long holds no more records at its peak, and the
// peak stays within what the window (--max-delay plus the disorder
// sorted away) holds at the traffic's rate at both ends.
func TestStreamMemoryBounded(t *testing.T) {
	const rate = 20_000.0
	maxDelay := 20 * time.Millisecond
	peak := func(packets int) int {
		var sb, rb bytes.Buffer
		if _, err := analyzetest.Write(analyzetest.Config{Packets: packets, Rate: rate, Start: time.Unix(1_700_000_000, 0),
			MeanDelay: 50 * time.Microsecond, Loss: 0.01, Seed: 3}, &sb, &rb); err != nil {
			t.Fatal(err)
		}
		s, _ := analyze.NewCapture("s.pcap", bytes.NewReader(sb.Bytes()))
		r, _ := analyze.NewCapture("r.pcap", bytes.NewReader(rb.Bytes()))
		n := 0
		st, err := analyze.Run(s, r, analyze.Config{Interval: 100 * time.Millisecond, UseLDA: true, LDA: synopsis.DefaultLDAConfig(),
			Truth: true, MaxDelay: maxDelay}, func(*report.Interval) { n++ })
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 || st.PeakHeld == 0 {
			t.Fatalf("%d packets: %d lines, %d records held at the peak", packets, n, st.PeakHeld)
		}
		return st.PeakHeld
	}
	small, large := peak(20_000), peak(80_000)
	window := (maxDelay + analyze.MaxBackStep*time.Nanosecond).Seconds()
	bound := int(2 * rate * window * 1.5) // both ends, a half more for Poisson bursts
	t.Logf("peak records held: %d for 20 000 packets, %d for 80 000 (bound %d)", small, large, bound)
	if large > small*11/10 || large > bound {
		t.Errorf("peak records held: %d for 20 000 packets, %d for 80 000: want no growth and at most %d", small, large, bound)
	}
}
