package appliance

import (
	"math"
	"slices"
	"testing"
)

// TestLDAFetchRowsChoice: the rows asked for the congestion lab's interval
// (20 000 packets, half lost, shipped at 512/512/512/256/64/16/16/16 rows)
// double the banks whose buckets hold a few packets each, never shrink a
// bank, stay within the limit and the recorded rows, and at least double
// the expected sample; without loss, or with the shipped shape already the
// recorded one, nothing grows.
func TestLDAFetchRowsChoice(t *testing.T) {
	// Bank j of the recorded 8 × 1024 LDA (sampling every 2 in log2)
	// takes 3/4 of what the banks before it left.
	n := make([]uint64, 8)
	left := 20000.0
	for j := range n {
		n[j] = uint64(math.Round(left * 3 / 4))
		left -= float64(n[j])
	}
	shipped := []int{512, 512, 512, 256, 64, 16, 16, 16}
	recorded := []int{1024, 1024, 1024, 1024, 1024, 1024, 1024, 1024}
	limit := 2 * (512*3 + 256 + 64 + 16*3)
	rows, before, after := ldaFetchRows(n, shipped, recorded, 0.5, limit)
	total := 0
	for j, r := range rows {
		total += r
		if r < shipped[j] || r > recorded[j] || r&(r-1) != 0 {
			t.Errorf("bank %d: %d rows (shipped %d, recorded %d)", j, r, shipped[j], recorded[j])
		}
	}
	if total > limit {
		t.Errorf("%d rows asked, limit %d", total, limit)
	}
	if rows[1] != 1024 || rows[2] != 1024 {
		t.Errorf("rows %v: banks 1 and 2 (3 750 and 940 packets) should double to 1024", rows)
	}
	if after < 2*before {
		t.Errorf("expected samples %.0f → %.0f, want at least twice", before, after)
	}
	t.Logf("rows %v: expected samples %.0f → %.0f", rows, before, after)
	if r, b, a := ldaFetchRows(n, shipped, recorded, 0, limit); !slices.Equal(r, shipped) || a != b {
		t.Errorf("without loss: rows %v for %.0f → %.0f samples", r, b, a)
	}
	if r, _, _ := ldaFetchRows(n, recorded, recorded, 0.5, 4*limit); !slices.Equal(r, recorded) {
		t.Errorf("at the recorded shape: rows %v", r)
	}
	if got := expectedSamples(1000, 1000, 0.5); math.Abs(got-500*math.Exp(-0.5)) > 1e-9 {
		t.Errorf("expectedSamples(1000, 1000, 0.5) = %g", got)
	}
}
