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
// traffic four times as long holds no more records at its peak (counted,
// Stats.PeakHeld: not timed, not RSS), and the peak stays within what a
// few windows (--max-delay plus the disorder sorted away) hold at the
// traffic's rate. With shards, the batches handed to the shards and not
// yet answered hold up to analyze.ShardInFlight records more, however
// long the capture: how many depends on how fast the shards answer.
func TestStreamMemoryBounded(t *testing.T) {
	const rate = 20_000.0
	maxDelay := 20 * time.Millisecond
	peakOf := func(packets, shards int, write func(packets int, s, r *bytes.Buffer) error) int {
		var sb, rb bytes.Buffer
		if err := write(packets, &sb, &rb); err != nil {
			t.Fatal(err)
		}
		s, _ := analyze.NewCapture("s.pcap", bytes.NewReader(sb.Bytes()))
		r, _ := analyze.NewCapture("r.pcap", bytes.NewReader(rb.Bytes()))
		n := 0
		st, err := analyze.Run(s, r, analyze.Config{Interval: 100 * time.Millisecond, UseLDA: true, LDA: synopsis.DefaultLDAConfig(),
			Truth: true, MaxDelay: maxDelay, Shards: shards}, func(*report.Interval) { n++ })
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 || st.PeakHeld == 0 {
			t.Fatalf("%d packets: %d lines, %d records held at the peak", packets, n, st.PeakHeld)
		}
		return st.PeakHeld
	}
	window := (maxDelay + analyze.MaxBackStep*time.Nanosecond).Seconds()
	// Both ends' window in flight, plus the sender's records the first
	// pass keeps near the common range's start and end (a window either
	// side of each), a half more for Poisson bursts.
	bound := int((2 + 3) * rate * window * 1.5)
	for _, tc := range []struct {
		name  string
		write func(packets int, s, r *bytes.Buffer) error
	}{
		{"routed", func(packets int, s, r *bytes.Buffer) error {
			_, err := analyzetest.Write(analyzetest.Config{Packets: packets, Rate: rate, Start: time.Unix(1_700_000_000, 0),
				MeanDelay: 50 * time.Microsecond, Loss: 0.01, Seed: 3}, s, r)
			return err
		}},
		// The receiver's capture starts late and stops early: what lies
		// outside the common range is counted, not kept.
		{"partial-overlap", func(packets int, s, r *bytes.Buffer) error {
			_, err := analyzetest.Scenario{Seed: 4, Packets: packets, Rate: rate, Start: time.Unix(1_700_000_000, 0),
				MeanDelay: 50 * time.Microsecond, Loss: 0.01, ReceiverFrom: 0.3, ReceiverTo: 0.8}.Write(s, r)
			return err
		}},
	} {
		for _, shards := range []int{1, 2} {
			slack := 0
			if shards > 1 {
				slack = analyze.ShardInFlight
			}
			small, large := peakOf(20_000, shards, tc.write), peakOf(80_000, shards, tc.write)
			t.Logf("%s, %d shard(s): peak records held: %d for 20 000 packets, %d for 80 000 (bound %d + %d)",
				tc.name, shards, small, large, bound, slack)
			if large > small*11/10+slack || large > bound+slack {
				t.Errorf("%s, %d shard(s): peak records held: %d for 20 000 packets, %d for 80 000: want no growth and at most %d + %d",
					tc.name, shards, small, large, bound, slack)
			}
		}
	}
}

// TestZZSegmentedPairs: the package's tests ran the streaming analysis
// cut into time segments (forced) on a good part of their pairs (an
// eighth at least; the oracle holds each to the uncut streaming report),
// not only on pairs where the cuts fall back to one goroutine. It runs
// last (go test runs the files in name order, a file's tests in order),
// and only counts when most of the package's tests ran.
func TestZZSegmentedPairs(t *testing.T) {
	n, cut := analyze.OracleRuns(), analyze.SegmentedPairs()
	t.Logf("%d of %d pairs analyzed in segments too", cut, n)
	if n < 50 {
		t.Skipf("only %d pairs analyzed: a subset of the tests ran", n)
	}
	if cut < n/8 {
		t.Errorf("only %d of %d pairs ran cut into segments", cut, n)
	}
}
