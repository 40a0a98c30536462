package service

import (
	"strings"
	"testing"

	"github.com/ldafwd/ldafwd/report"
)

// TestWatchdogClockOffset: an offset estimate beyond half the round trip
// (one direction's raw delay negative beyond the bound) raises "clock"
// at the end whose own delays look fine; one the delays can explain
// does not, and clears it.
func TestWatchdogClockOffset(t *testing.T) {
	w := &watchdog{clock: map[string]string{}}
	line := func(k int64, fwd, rev, ci float64) *report.Interval {
		return &report.Interval{Interval: k, Direction: "a>b", Synopsis: "lda", MEC: "all", Valid: true, Samples: 100,
			MeanNs: fwd, MeanCINs: ci, Extra: map[string]any{"clock_offset_ns": (fwd - rev) / 2, "clock_offset_ci_ns": ci,
				"clock_offset_interval": uint64(k - 2), "clock_reverse_mean_ns": rev}}
	}
	// Symmetric 500 µs, this end 800 µs ahead: a→b reads 1300 µs, b→a −300 µs.
	w.observe(line(10, 1_300_000, -300_000, 2_000))
	got := w.clock["a>b offset"]
	if !strings.Contains(got, "ahead of the peer's by 800.0 ± 2.0 µs") || !strings.Contains(got, "round trip (500.0 µs)") {
		t.Fatalf("clock check: %q (all: %v)", got, w.clock)
	}
	if _, own := w.clock["a>b"]; own {
		t.Errorf("this end's own mean is positive, yet its negative-delay check fired: %v", w.clock)
	}
	// 300 µs offset on 500 µs delays: explained by asymmetry, clears.
	w.observe(line(11, 800_000, 200_000, 2_000))
	if len(w.clock) != 0 {
		t.Errorf("an offset the delays explain: %v", w.clock)
	}
	// Beyond half the round trip, but not by more than its bound: no verdict.
	w.observe(line(12, 1_010_000, -10_000, 30_000))
	if len(w.clock) != 0 {
		t.Errorf("within the bound: %v", w.clock)
	}
	// Behind: the sign is named.
	w.observe(line(13, -300_000, 1_300_000, 2_000))
	if got := w.clock["a>b offset"]; !strings.Contains(got, "behind the peer's by 800.0") {
		t.Errorf("behind: %q", got)
	}
}
