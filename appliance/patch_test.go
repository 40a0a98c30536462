package appliance

import (
	"testing"

	"github.com/ldafwd/ldafwd/report"
	"github.com/ldafwd/ldafwd/synopsis"
)

// TestLinePatchKeepsLineAndEstimateInStep: a patch writes the line and
// its estimate together — the delay (the line's bound with the stamps'
// uncertainty, the estimate's without), the counts, a cause lifted only
// where the line has it, a cause added to both — and a repair undone
// puts back the line as it was, the lifted cause included.
func TestLinePatchKeepsLineAndEstimateInStep(t *testing.T) {
	r := &report.Interval{Synopsis: "rda", MeanNs: 5000, MeanCINs: 900, StampErrNs: 100, Samples: 10, Usable: 3, Buckets: 8, Received: 90, Lost: 10}
	r.SetVerdict(report.Verdict{})
	r.Invalidate(report.FewSamples, "too few usable cells")
	e := &synopsis.Estimate{MeanNs: 5000, MeanCINs: 800, Samples: 10, UsableBuckets: 3, Received: 90, Lost: 10, Code: report.FewSamples, Reason: "too few usable cells"}
	rp := &repair{r: r, e: e, estCode: report.FewSamples, estReason: "too few usable cells"}
	rp.pre = delayOf(r)
	rp.pre.extra = map[string]any{"rda_usable": 3}

	// A reply: exact over the stamps, and the estimator's cause goes.
	rp.cleared = true
	p := linePatch{delay: &delayFields{mean: 5100, ci: 0, samples: 20, usable: 8, buckets: 8}, lift: report.FewSamples, set: map[string]any{"rda_exact": true}}
	p.apply(r, e)
	if r.MeanNs != 5100 || e.MeanNs != 5100 || r.MeanCINs != 100 || e.MeanCINs != 0 || r.Samples != 20 || e.Samples != 20 || e.UsableBuckets != 8 {
		t.Fatalf("delay: line %+v estimate %+v", r, e)
	}
	if !r.DelayValid || !e.Valid || r.Extra["rda_exact"] != true {
		t.Fatalf("the lifted cause stayed: line %v %q, estimate %v %q", r.DelayValid, r.Reason, e.Valid, e.Reason)
	}
	// A lift of a cause the line does not have changes nothing.
	(&linePatch{lift: report.StampsUncertain}).apply(r, e)
	if !r.Valid || !e.Valid {
		t.Fatal("lifting an absent cause changed the verdict")
	}
	// Undone: as before the repair, the cause back on both.
	u := rp.unrepaired()
	u.apply(r, e)
	if r.MeanNs != 5000 || r.MeanCINs != 900 || e.MeanCINs != 800 || r.Samples != 10 || e.Samples != 10 || r.Usable != 3 {
		t.Errorf("undone delay: line %+v estimate %+v", r, e)
	}
	if r.DelayValid || e.Valid || e.Code != report.FewSamples || !r.Verdict().Has(report.FewSamples) {
		t.Errorf("undone verdict: line %v %q, estimate %v %v", r.DelayValid, r.Reason, e.Valid, e.Code)
	}
	if r.Extra["rda_usable"] != 3 || r.Extra["rda_repair_note"] != repairCrossedNote {
		t.Errorf("undone fields: %v", r.Extra)
	}
	// Counts go to both.
	recv, lost := uint64(95), uint64(5)
	(&linePatch{received: &recv, lost: &lost}).apply(r, e)
	if r.Received != 95 || r.Lost != 5 || e.Received != 95 || e.Lost != 5 {
		t.Errorf("counts: line %d/%d estimate %d/%d", r.Received, r.Lost, e.Received, e.Lost)
	}
}
