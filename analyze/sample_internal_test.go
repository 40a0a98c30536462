package analyze

import (
	"testing"

	"github.com/ldafwd/ldafwd/report"
)

// TestWithdrawSample: a sample line made invalid after its estimate (a
// damaged capture, a class change) writes no quantile and no smallest or
// largest delay, each quantile pointing to the line's reason.
func TestWithdrawSample(t *testing.T) {
	est := int64(5)
	l := report.Interval{Synopsis: "sample", Valid: true, Extra: map[string]any{
		"quantiles": map[string]report.Quantile{"p50": {EstimateNs: &est, LoNs: &est, HiNs: &est, LoRank: 1, HiRank: 2}},
		"min_ns":    int64(1), "max_ns": int64(9)}}
	WithdrawSample(&l)
	if l.Extra["min_ns"] != int64(1) {
		t.Fatal("a valid line withdrawn")
	}
	l.Invalidate(report.ClassChange, "moved")
	WithdrawSample(&l)
	qs := l.Extra["quantiles"].(map[string]report.Quantile)
	if len(qs) != 4 || l.Extra["min_ns"] != nil || l.Extra["max_ns"] != nil {
		t.Fatalf("withdrawn: %v", l.Extra)
	}
	for k, q := range qs {
		if q.EstimateNs != nil || q.LoNs != nil || q.HiNs != nil || q.Reason != "the line is not valid: moved" {
			t.Errorf("%s: %+v", k, q)
		}
	}
}
