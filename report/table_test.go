package report

import (
	"slices"
	"strings"
	"testing"
)

// TestSampleRows: a sample line in run's and demo's tables shows its
// quantiles with their bounds, never a mean (it has none), and demo's
// shows each true quantile beside them.
func TestSampleRows(t *testing.T) {
	est, lo, hi := int64(52_000), int64(44_000), int64(61_000)
	r := &Interval{Interval: 3, StartNs: 3e9, Direction: "a>b", MEC: "all", Synopsis: "sample", Sent: 300, Received: 300, Samples: 300, Valid: true,
		Extra: map[string]any{
			"quantiles":      map[string]Quantile{"p50": {EstimateNs: &est, LoNs: &lo, HiNs: &hi}, "p99": {Reason: "300 samples cannot bound p99"}},
			"true_quantiles": map[string]int64{"p50": 50_500, "p99": 465_000},
		}}
	run, demo := RunRow(r), DemoRow(r)
	for _, c := range []struct{ row, want string }{
		{run, " smp "}, {run, "p50 52.000 [44.000, 61.000]"}, {run, "p99 -"},
		{demo, "all/smp"}, {demo, "p50 52.000 [44.000, 61.000] (50.500)"}, {demo, "p99 - (465.000)"},
	} {
		if !strings.Contains(c.row, c.want) {
			t.Errorf("row %q lacks %q", c.row, c.want)
		}
	}
	if strings.Contains(run, " 0.000 ") {
		t.Errorf("run's row shows a mean: %q", run)
	}
}

// TestFragmentRows: an LDS flow line of a fragmenting pair says in every
// table what it counts, beside its flow's name; a flow line without the
// field and other lines say nothing of fragments.
func TestFragmentRows(t *testing.T) {
	first := &Interval{Interval: 1, StartNs: 1e9, Direction: "a>b", MEC: "all", Synopsis: "lds", Sent: 405, Received: 405, Valid: true,
		Flow: "17 10.0.0.1:1000>10.0.0.2:53", Extra: map[string]any{"fragments": "whole_and_first", "later_fragments_flow": "17 10.0.0.1:0>10.0.0.2:0"}}
	later := &Interval{Interval: 1, StartNs: 1e9, Direction: "a>b", MEC: "all", Synopsis: "lds", Sent: 810, Received: 809, Lost: 1, Valid: true,
		Flow: "17 10.0.0.1:0>10.0.0.2:0", Extra: map[string]any{"fragments": "later"}}
	plain := &Interval{Interval: 1, StartNs: 1e9, Direction: "a>b", MEC: "all", Synopsis: "lds", Sent: 9, Received: 9, Valid: true,
		Flow: "6 10.0.0.3:1>10.0.0.2:80"}
	for _, row := range []func(*Interval) string{RunRow, DemoRow, func(r *Interval) string { return AnalyzeRow(r, false) }} {
		if r := row(first); !strings.Contains(r, "17 10.0.0.1:1000>10.0.0.2:53 (whole packets and first fragments; later fragments in 17 10.0.0.1:0>10.0.0.2:0)") {
			t.Errorf("flow row %q", r)
		}
		if r := row(later); !strings.Contains(r, "17 10.0.0.1:0>10.0.0.2:0 (later IP fragments)") {
			t.Errorf("fragments flow row %q", r)
		}
		if r := row(plain); strings.Contains(r, "fragments") {
			t.Errorf("plain flow row %q", r)
		}
	}
}

// TestAnalyzeRowPartialTruth: a line with only some truth fields (a
// sample line has a true mean but no true loss when its rate is
// unknown) renders each it has and "-" for the others, never panics.
func TestAnalyzeRowPartialTruth(t *testing.T) {
	mean, sd, lost := 41_500.0, 2_000.0, uint64(3)
	for mask := 0; mask < 8; mask++ {
		r := &Interval{Synopsis: "sample", MEC: "all", Valid: true, Sent: 10, Received: 7, Lost: 3}
		want := []string{"-", "-", "-"}
		if mask&1 != 0 {
			r.TrueMeanNs, want[0] = &mean, "41.500"
		}
		if mask&2 != 0 {
			r.TrueStddevNs, want[1] = &sd, "2.000"
		}
		if mask&4 != 0 {
			r.TrueLost, want[2] = &lost, "3"
		}
		row := AnalyzeRow(r, true)
		if !containsSeq(strings.Fields(row), want) {
			t.Errorf("truth fields %03b: row %q lacks %v", mask, row, want)
		}
	}
}

// containsSeq says whether want appears in got as consecutive fields.
func containsSeq(got, want []string) bool {
	for i := 0; i+len(want) <= len(got); i++ {
		if slices.Equal(got[i:i+len(want)], want) {
			return true
		}
	}
	return false
}
