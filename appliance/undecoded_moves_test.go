package appliance

import (
	"testing"

	"github.com/ldafwd/ldafwd/classifier"
	"github.com/ldafwd/ldafwd/report"
	"github.com/ldafwd/ldafwd/synopsis"
)

// undecodedInterval is the shape of a property-test failure: class c2's
// segment remarked 106 of its packets into class all and lost 14, so
// c2's complete decode lists 120 lost (and its own 8 duplicates as
// extra); all's decode of the interval is incomplete (the 106 moved-in
// packets among its residual cells), so neither the decodes nor the
// estimates' extras name a move. ids numbers the identities.
func undecodedInterval(t *testing.T, allDecode *synopsis.RDADecoding) (*controller, *heldInterval, *evidence) {
	t.Helper()
	cl, err := classifier.NewClassifierFromSpecs([]string{"c2=dscp:cs2"})
	if err != nil {
		t.Fatal(err)
	}
	rda := synopsis.DefaultRDAConfig()
	c := &controller{a: &Appliance{cfg: Config{Classifier: cl}}}
	c.a.cfg.Syn.RDA = &rda
	ids := func(from, n int) []uint64 {
		out := make([]uint64, n)
		for i := range out {
			out[i] = uint64(from + i)
		}
		return out
	}
	c2 := decoded(ids(1000, 120), ids(2000, 8))
	line := func(mec int, kind string, e *synopsis.Estimate) heldLine {
		r := &report.Interval{Interval: 7, MEC: cl.Names()[mec], Synopsis: kind, Sent: e.Sent, Received: e.Received, Lost: e.Lost}
		r.SetVerdict(report.Verdict{})
		if !e.Valid {
			r.Invalidate(e.Code, e.Reason)
		}
		return heldLine{r: r, e: e, mec: mec}
	}
	// The estimate of all as EstimateRDA makes it: extras proven by the
	// residual cells only, none decoded.
	allE := &synopsis.Estimate{Synopsis: "rda", Sent: 4000, Received: 4104, Valid: true}
	if allDecode != nil && allDecode.ResidualExtraCells > 0 {
		allE.ExtraBuckets, allE.Valid = allDecode.ResidualExtraCells, false
		allE.Code, allE.Reason = report.ExtrasUnchecked, "RDA decode incomplete and undecoded cells hold packets only the receiver saw"
	}
	c2E := &synopsis.Estimate{Synopsis: "rda", Sent: 4000, Received: 3888, Lost: 120, Extra: 8, Valid: true}
	h := &heldInterval{k: 7, ev: evidence{rda: []*synopsis.RDADecoding{allDecode, c2}}}
	h.lines = []heldLine{line(0, "rda", allE), line(1, "rda", c2E)}
	quiet := &evidence{rda: []*synopsis.RDADecoding{decoded(nil, nil), decoded(nil, nil)}}
	return c, h, quiet
}

// TestUndecodedMovesInvalidate: with class all's decode incomplete the
// 120 lost of c2 may be packets remarked into all; c2's line must not
// claim them (it did: valid with lost 120, truth 14). The same with all's
// decode missing (its RDA left out or lost), and with all complete in k
// but incomplete in the next interval (a remarked packet that also
// crossed the End marker).
func TestUndecodedMovesInvalidate(t *testing.T) {
	for _, tc := range []struct {
		name      string
		allDecode *synopsis.RDADecoding
		next      func(quiet *evidence) *evidence
	}{
		{"incomplete in k", &synopsis.RDADecoding{Complete: false, ResidualCells: 40, ResidualExtraCells: 5}, nil},
		{"incomplete, no residual extra cell", &synopsis.RDADecoding{Complete: false, ResidualCells: 40}, nil},
		{"missing in k", nil, nil},
		// all decoded in k, c2's own decode incomplete (the decodes
		// cannot name moves), all's decode of k+1 incomplete.
		{"incomplete in k+1", decoded(nil, nil),
			func(*evidence) *evidence {
				return &evidence{rda: []*synopsis.RDADecoding{{Complete: false, ResidualCells: 9}, decoded(nil, nil)}}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, h, quiet := undecodedInterval(t, tc.allDecode)
			if tc.next != nil {
				h.ev.rda[1] = &synopsis.RDADecoding{Complete: false, ResidualCells: 12}
			}
			next := quiet
			if tc.next != nil {
				next = tc.next(quiet)
			}
			c.classChanges(h, quiet, next)
			r := h.lines[1].r
			if r.Valid || r.LossValid {
				t.Fatalf("c2 with lost %d beside class all undecoded: valid %v loss_valid %v (%s)", r.Lost, r.Valid, r.LossValid, r.Verdict())
			}
			if !r.Verdict().Has(report.ClassChange) {
				t.Errorf("c2's causes %s, want class_change", r.Verdict())
			}
			t.Logf("c2: %s", r.Reason)
		})
	}
}

// TestUndecodedMovesKept: what the undecoded class cannot hold is kept.
// A class without loss has nothing to answer for; a class whose own
// decode alone is incomplete, with every other class decoded in k and
// its neighbours, has nowhere else to have lost packets to; a class the
// receiver recorded nothing in holds nothing, decoded or not; and where
// the End markers' counts prove the loss (no class recorded more than
// its sender, here or next door; the segment seen in order) the line
// keeps it.
func TestUndecodedMovesKept(t *testing.T) {
	// No residual cell proves a receiver-only packet (ExtraBuckets 0):
	// one that does makes the lossy classes beside it invalid whatever
	// the counts (synopsis.ClassChanges), as decoded extras do.
	incomplete := &synopsis.RDADecoding{Complete: false, ResidualCells: 40}

	c, h, quiet := undecodedInterval(t, incomplete)
	h.lines[1].r.Lost, h.lines[1].e.Lost = 0, 0
	c.classChanges(h, quiet, quiet)
	if r := h.lines[1].r; !r.Valid {
		t.Errorf("c2 without loss: %s", r.Reason)
	}

	// c2's own decode incomplete, all's complete everywhere.
	c, h, quiet = undecodedInterval(t, decoded(nil, nil))
	h.ev.rda[1] = &synopsis.RDADecoding{Complete: false, ResidualCells: 12}
	c.classChanges(h, quiet, quiet)
	if r := h.lines[1].r; !r.Valid {
		t.Errorf("only c2's own decode incomplete: %s", r.Reason)
	}

	// Class all's RDA left out, but its receiver recorded nothing in
	// it: nothing moved there.
	c, h, quiet = undecodedInterval(t, nil)
	empty, err := synopsis.NewLDA(synopsis.DefaultLDAConfig())
	if err != nil {
		t.Fatal(err)
	}
	h.ev.rcv = []*synopsis.LDA{empty, nil}
	c.classChanges(h, quiet, quiet)
	if r := h.lines[1].r; !r.Valid {
		t.Errorf("class all undecoded but empty: %s", r.Reason)
	}

	// The counts prove c2's loss of 120.
	c, h, _ = undecodedInterval(t, incomplete)
	counted := func(sent []uint64, recv []uint64) *evidence {
		ev := &evidence{sent: sent, rcv: make([]*synopsis.LDA, len(recv)), rda: []*synopsis.RDADecoding{decoded(nil, nil), decoded(nil, nil)}}
		for m, n := range recv {
			l, err := synopsis.NewLDA(synopsis.DefaultLDAConfig())
			if err != nil {
				t.Fatal(err)
			}
			for i := uint64(0); i < n; i++ {
				l.Add(uint64(m)<<32|i+1, 1000+i)
			}
			ev.rcv[m] = l
		}
		return ev
	}
	ev := counted([]uint64{4000, 4000}, []uint64{3990, 3880})
	h.ev.sent, h.ev.rcv = ev.sent, ev.rcv
	c2 := h.lines[1]
	c2.r.Received, c2.e.Received = 3880, 3880
	prev, next := counted([]uint64{10, 10}, []uint64{10, 10}), counted([]uint64{10, 10}, []uint64{9, 10})
	c.order.checks = orderChecksNeeded(c.a.cfg.Conf)
	c.classChanges(h, prev, next)
	if r := c2.r; !r.Valid {
		t.Errorf("c2's loss proven by the counts: %s", r.Reason)
	}
	// ... but not where class all recorded more than its sender.
	c, h, _ = undecodedInterval(t, incomplete)
	ev = counted([]uint64{4000, 4000}, []uint64{4104, 3880})
	h.ev.sent, h.ev.rcv = ev.sent, ev.rcv
	h.lines[1].r.Received = 3880
	c.order.checks = orderChecksNeeded(c.a.cfg.Conf)
	c.classChanges(h, prev, next)
	if r := h.lines[1].r; r.LossValid {
		t.Errorf("class all recorded more than its sender, c2's loss still claimed")
	}
}

// TestUndecodedMovesNoDisorder: a loss left unclaimed only because a
// class beside it could not be decoded is no sign that the segment
// remarks: the End markers' counts stay trusted for the intervals after
// it (orderLog.note), as they are where decodes show a real move.
func TestUndecodedMovesNoDisorder(t *testing.T) {
	c, h, quiet := undecodedInterval(t, nil)
	h.lines[1].e.Extra = 0 // no duplicates of its own either
	c.classChanges(h, quiet, quiet)
	if r := h.lines[1].r; r.LossValid {
		t.Fatalf("c2 beside class all undecoded: loss claimed")
	}
	c.order.note(h, true)
	if c.order.disorderSeen || c.order.checks != 1 {
		t.Errorf("disorder seen %v, intervals checked in order %d: want false, 1", c.order.disorderSeen, c.order.checks)
	}

	// A move the decodes name is disorder.
	c, h, quiet = undecodedInterval(t, decoded(nil, []uint64{1000}))
	h.lines[1].e.Extra = 0
	h.ev.rda[1] = decoded([]uint64{1000}, nil)
	c.classChanges(h, quiet, quiet)
	c.order.note(h, true)
	if !c.order.disorderSeen {
		t.Errorf("a named move: no disorder seen")
	}
}
