package appliance

import (
	"testing"

	"github.com/ldafwd/ldafwd/classifier"
	"github.com/ldafwd/ldafwd/report"
	"github.com/ldafwd/ldafwd/synopsis"
)

func decoded(lost, extra []uint64) *synopsis.RDADecoding {
	return &synopsis.RDADecoding{Lost: lost, Extra: extra, Complete: true}
}

// TestClassMovesExact: the shape of a property-test failure (a valid c2
// LDA line with loss 4, truth 2): class c2 lost two packets and had two
// remarked into class all, and its own duplicates gave it more extras
// than all had. The estimates' heuristic named c2 as the class packets
// moved into and so found no other class that lost them; the decodes
// name the two moved identities, so c2 (out) and all (in) are the
// classes to mark, whatever the counts of extras.
func TestClassMovesExact(t *testing.T) {
	const r1, r2, l1, l2, d1, d2, d3 = 101, 102, 201, 202, 301, 302, 303
	cur := &evidence{rda: []*synopsis.RDADecoding{
		decoded(nil, []uint64{r1, r2}),                          // all: the remarked packets
		decoded([]uint64{l1, r1, l2, r2}, []uint64{d1, d2, d3}), // c2: two lost, two remarked, three duplicates
	}}
	quiet := &evidence{rda: []*synopsis.RDADecoding{decoded(nil, nil), decoded(nil, nil)}}
	out, in, known := classMoves(quiet, cur, quiet)
	if !known || out[0] != 0 || out[1] != 2 || in[0] != 2 || in[1] != 0 {
		t.Fatalf("moves out %v in %v known %v, want out [0 2] in [2 0]", out, in, known)
	}

	// A remarked packet that also crossed the End marker: lost in c2 of
	// k, extra in all of k+1. k alone shows nothing.
	next := &evidence{rda: []*synopsis.RDADecoding{decoded(nil, []uint64{r1}), decoded(nil, nil)}}
	cur = &evidence{rda: []*synopsis.RDADecoding{decoded(nil, nil), decoded([]uint64{l1, r1}, nil)}}
	if out, _, known := classMoves(quiet, cur, next); !known || out[1] != 1 {
		t.Fatalf("remarked and crossed: out %v known %v, want c2 1", out, known)
	}
	// The same into an earlier interval (overtook the start marker).
	if out, _, known := classMoves(next, cur, quiet); !known || out[1] != 1 {
		t.Fatalf("remarked and early: out %v known %v, want c2 1", out, known)
	}

	// A neighbour that cannot be searched: with moves inside k the count
	// is unknown (one could hide across the boundary); without any, k's
	// lines answer only for themselves.
	partial := &evidence{rda: []*synopsis.RDADecoding{{Complete: false}, decoded(nil, nil)}}
	cur = &evidence{rda: []*synopsis.RDADecoding{decoded(nil, []uint64{r1}), decoded([]uint64{r1}, nil)}}
	if _, _, known := classMoves(partial, cur, quiet); known {
		t.Errorf("moves in k with an unsearchable neighbour: known")
	}
	cur = &evidence{rda: []*synopsis.RDADecoding{decoded([]uint64{l2}, nil), decoded([]uint64{l1}, nil)}}
	if out, in, known := classMoves(nil, cur, partial); !known || out[0]+out[1]+in[0]+in[1] != 0 {
		t.Errorf("no moves in k: out %v in %v known %v", out, in, known)
	}
	// An incomplete decode of k itself: unknown.
	cur = &evidence{rda: []*synopsis.RDADecoding{decoded(nil, nil), {Complete: false}}}
	if _, _, known := classMoves(quiet, cur, quiet); known {
		t.Errorf("incomplete decode of k: known")
	}
	// A neighbour where the receiver recorded nothing is searched (empty).
	cur = &evidence{rda: []*synopsis.RDADecoding{decoded(nil, []uint64{r1}), decoded([]uint64{r1}, nil)}}
	if out, in, known := classMoves(quiet, cur, &evidence{nothing: true}); !known || out[1] != 1 || in[0] != 1 {
		t.Errorf("nothing after k: out %v in %v known %v", out, in, known)
	}
}

// TestClassChangesOtherKind: the shape of a simulated-time property
// failure (a valid c2 RDA line with loss 64, truth 30: 34 packets
// remarked into class all). The RDA part of class all was lost on the
// segment, so no decode names the moves and the RDA's heuristic sees no
// class with extras; the LDA of class all shows them. The class's
// packets are suspect whichever synopsis shows it: the c2 RDA line is
// invalid with the LDA's reason, and the all LDA line (its own extras)
// too.
func TestClassChangesOtherKind(t *testing.T) {
	cl, err := classifier.NewClassifierFromSpecs([]string{"c2=dscp:cs2"})
	if err != nil {
		t.Fatal(err)
	}
	c := &controller{a: &Appliance{cfg: Config{Classifier: cl}}}
	line := func(syn, mec string) *report.Interval {
		r := &report.Interval{Synopsis: syn, MEC: mec}
		r.SetVerdict(report.Verdict{}) // valid, as its estimate says
		return r
	}
	allLDA, c2LDA, c2RDA := line("lda", "all"), line("lda", "c2"), line("rda", "c2")
	held := []heldLine{
		{r: allLDA, e: &synopsis.Estimate{Valid: true, Sent: 1000, Received: 1034, Extra: 34}, mec: 0},
		{r: c2LDA, e: &synopsis.Estimate{Valid: true, Sent: 1500, Received: 1436, Lost: 64}, mec: 1},
		{r: c2RDA, e: &synopsis.Estimate{Valid: true, Sent: 1500, Received: 1436, Lost: 64}, mec: 1},
		// No all RDA line's estimate: its part was lost.
	}
	if !c2RDA.Valid {
		t.Fatal("a line with an empty verdict is not valid: the test cannot tell the fix")
	}
	cur := &evidence{rda: []*synopsis.RDADecoding{nil, decoded(make([]uint64, 64), nil)}}
	c.classChanges(&heldInterval{lines: held, ev: *cur}, nil, nil)
	for _, r := range []*report.Interval{allLDA, c2LDA, c2RDA} {
		if r.Valid || !r.Verdict().Has(report.ClassChange) {
			t.Errorf("%s/%s: valid %v, reason %q: want invalid for a class change", r.MEC, r.Synopsis, r.Valid, r.Reason)
		}
	}
}

// TestClassChangesCounts: the shape of another simulated-time property
// failure (seed 716: a valid c2 LDA and RDA line with loss 52, truth 4;
// 48 packets remarked into class all). Both of class all's synopses were
// lost, so neither heuristic sees its extras; the End markers' counts
// do: the receiver recorded more packets of class all than its sender
// sent. The c2 lines with loss are invalid; a class without loss is not
// touched.
func TestClassChangesCounts(t *testing.T) {
	cl, err := classifier.NewClassifierFromSpecs([]string{"c2=dscp:cs2", "c3=dscp:cs3"})
	if err != nil {
		t.Fatal(err)
	}
	c := &controller{a: &Appliance{cfg: Config{Classifier: cl}}}
	line := func(syn, mec string) *report.Interval {
		r := &report.Interval{Synopsis: syn, MEC: mec}
		r.SetVerdict(report.Verdict{})
		return r
	}
	lda := func(n int) *synopsis.LDA {
		l, err := synopsis.NewLDA(synopsis.DefaultLDAConfig())
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < n; i++ {
			l.Add(uint64(i)*0x9e3779b97f4a7c15+1, 1000)
		}
		return l
	}
	c2LDA, c2RDA, c3LDA := line("lda", "c2"), line("rda", "c2"), line("lda", "c3")
	lossy := &synopsis.Estimate{Valid: true, Sent: 1500, Received: 1448, Lost: 52}
	held := []heldLine{
		{r: line("lda", "all"), mec: 0}, // its synopsis lost: no estimate
		{r: c2LDA, e: lossy, mec: 1},
		{r: c2RDA, e: lossy, mec: 1},
		{r: c3LDA, e: &synopsis.Estimate{Valid: true, Sent: 200, Received: 200}, mec: 2},
	}
	cur := &evidence{sent: []uint64{1000, 1500, 200}, rcv: []*synopsis.LDA{lda(1043), lda(1448), lda(200)}}
	c.classChanges(&heldInterval{lines: held, ev: *cur}, nil, nil)
	for _, r := range []*report.Interval{c2LDA, c2RDA} {
		if r.Valid || !r.Verdict().Has(report.ClassChange) {
			t.Errorf("%s/%s: valid %v, reason %q: want invalid for a class change", r.MEC, r.Synopsis, r.Valid, r.Reason)
		}
	}
	if !c3LDA.Valid {
		t.Errorf("c3/lda without loss: %q, want valid", c3LDA.Reason)
	}
	// The same counts with class all's synopses there: its estimate
	// speaks for it (no extras: nothing moved), the counts do not.
	c2LDA, c2RDA = line("lda", "c2"), line("rda", "c2")
	held = []heldLine{
		{r: line("lda", "all"), e: &synopsis.Estimate{Valid: true, Sent: 1000, Received: 1000}, mec: 0},
		{r: c2LDA, e: lossy, mec: 1},
		{r: c2RDA, e: lossy, mec: 1},
	}
	c.classChanges(&heldInterval{lines: held, ev: *cur}, nil, nil)
	if !c2LDA.Valid || !c2RDA.Valid {
		t.Errorf("class all's synopses show no extras: c2 lines %q / %q, want valid", c2LDA.Reason, c2RDA.Reason)
	}
}
