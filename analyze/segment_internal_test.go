package analyze

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/ldafwd/ldafwd/analyze/analyzetest"
	"github.com/ldafwd/ldafwd/classifier"
	"github.com/ldafwd/ldafwd/report"
	"github.com/ldafwd/ldafwd/synopsis"
)

// TestSegmentChecksRefuse: a reporting pass whose plan is made wrong
// where a check must see it is not reported from its segments but again
// on one goroutine, with the same lines: segment 0's view ending just
// past the cut (its own receiver packets arrive after it: the tail
// check), and the byte offset where segment 1's part starts moved off a
// record (no reader meets a record there: the boundary check). The
// survey, untouched, still runs in segments.
func TestSegmentChecksRefuse(t *testing.T) {
	sc := analyzetest.Scenario{Seed: 9, Packets: 40_000, Rate: 10_000, Start: time.Unix(1_700_000_000, 930_000_000),
		MeanDelay: 30 * time.Microsecond, Loss: 0.01, Nano: true}
	var sb, rb bytes.Buffer
	if _, err := sc.Write(&sb, &rb); err != nil {
		t.Fatal(err)
	}
	cl, err := classifier.NewClassifier(nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Interval: 100 * time.Millisecond, UseLDA: true, LDA: synopsis.DefaultLDAConfig(), Classifier: cl,
		MaxDelay: 20 * time.Millisecond, Split: 2}
	report1 := func(split int) (string, int64) {
		t.Helper()
		s, r := memPair(t, sb.Bytes(), rb.Bytes())
		c := cfg
		c.Split = split
		keep, err := c.defaults()
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		w := report.NewWriter(&out)
		before := segmentRuns.Load()
		st, err := runStream(s, r, c, keep, func(l *report.Interval) { w.Write(l) }, new(Progress))
		if err != nil {
			t.Fatal(err)
		}
		st.PeakHeld, st.Segments = 0, 0
		return out.String() + fmt.Sprintf("%+v", st), segmentRuns.Load() - before
	}
	want, _ := report1(1)
	defer func() { planHook = nil }()
	for _, tc := range []struct {
		name   string
		tamper func(p *segPlan, s, r *Capture)
	}{
		{"none", func(*segPlan, *Capture, *Capture) {}},
		{"view-ends-at-the-cut", func(p *segPlan, s, r *Capture) {
			buf := make([]byte, syncLen)
			p.s[0].viewTo = locate(s, p.cuts[1]+1_000_000, true, buf)
			p.r[0].viewTo = locate(r, p.cuts[1]+1_000_000, true, buf)
		}},
		{"part-starts-off-a-record", func(p *segPlan, _, _ *Capture) {
			p.s[1].ownFrom++
			p.s[0].ownTo++
		}},
	} {
		planHook = tc.tamper
		got, runs := report1(2)
		if got != want {
			t.Fatalf("%s: the report differs:\n--- one goroutine\n%s\n--- segments\n%s", tc.name, firstDiff(want, got), firstDiff(got, want))
		}
		wantRuns := int64(1) // the survey
		if tc.name == "none" {
			wantRuns = 2
		}
		if runs != wantRuns {
			t.Errorf("%s: %d passes ran in segments, want %d", tc.name, runs, wantRuns)
		}
	}
}
