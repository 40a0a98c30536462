package appliance

import (
	"strings"
	"testing"

	"github.com/ldafwd/ldafwd/synopsis"
)

// edgeCut builds the check of one cut at time 1 000 000 (window ±20 000)
// from the receiver's copies either side (id → arrival time) and the
// sender's intervals either side (the ids it recorded; twice: recorded
// twice), as the replies would say.
func edgeCut(t *testing.T, rxBefore, rxAfter map[uint64]uint64, sndBefore, sndAfter []uint64, twice map[uint64]bool) *edgeCheck {
	t.Helper()
	const cut, window = 1_000_000, 20_000
	cache := func(m map[uint64]uint64) *synopsis.TSCache {
		c, err := synopsis.NewTSCache(synopsis.TSCacheMinBudget * 16)
		if err != nil {
			t.Fatal(err)
		}
		for id, ts := range m {
			c.Insert(id, ts)
		}
		return c
	}
	sender := func(ids []uint64) *synopsis.TSCache {
		c, _ := synopsis.NewTSCache(synopsis.TSCacheMinBudget * 16)
		for i, id := range ids {
			c.Insert(id, uint64(i))
			if twice[id] {
				c.Insert(id, uint64(i)+1)
			}
		}
		return c
	}
	ch := &edgeCheck{before: cache(rxBefore), after: cache(rxAfter), lateCut: cut, earlyCut: cut, half: window / 2}
	ask := func(c *synopsis.TSCache, ids []uint64) *edgeQuery {
		a, err := synopsis.ParseMemberReply(c.AppendMemberReply(nil, ids), ids)
		if err != nil {
			t.Fatal(err)
		}
		return &edgeQuery{ids: ids, answer: &a, done: true}
	}
	ch.late = ask(sender(sndBefore), ch.after.AppendWindow(nil, cut, cut+window))
	ch.early = ask(sender(sndAfter), ch.before.AppendWindow(nil, cut-window, cut))
	return ch
}

// TestEdgeCount: the check of one cut counts the packets that crossed it
// each way, and refuses to vouch where it cannot.
func TestEdgeCount(t *testing.T) {
	// Before the cut the receiver got 1, 2 and 11 (11 is the sender's
	// next interval's: early); after it 12, 13 and 3 (3 is the interval
	// before's: late). 4 was lost.
	before := map[uint64]uint64{1: 900_000, 2: 995_000, 11: 999_000}
	after := map[uint64]uint64{3: 1_002_000, 12: 1_001_000, 13: 1_003_000}
	n := edgeCut(t, before, after, []uint64{1, 2, 3, 4}, []uint64{11, 12, 13}, nil).count()
	if !n.ok || n.late != 1 || n.early != 1 {
		t.Fatalf("count %+v, want one late, one early", n)
	}

	for name, tc := range map[string]struct {
		before, after map[uint64]uint64
		twice         map[uint64]bool
		why           string
	}{
		"late far out":   {before: before, after: map[uint64]uint64{3: 1_015_000, 12: 1_001_000}, why: "more than half the window"},
		"early far out":  {before: map[uint64]uint64{1: 900_000, 11: 985_000}, after: after, why: "more than half the window"},
		"in both copies": {before: map[uint64]uint64{1: 900_000, 3: 990_000}, after: after, why: "twice"},
		"sender twice":   {before: before, after: after, twice: map[uint64]bool{3: true}, why: "recorded twice"},
	} {
		n := edgeCut(t, tc.before, tc.after, []uint64{1, 2, 3, 4}, []uint64{11, 12, 13}, tc.twice).count()
		if n.ok || !strings.Contains(n.why, tc.why) {
			t.Errorf("%s: %+v, want refused with %q", name, n, tc.why)
		}
	}
	// An unanswered query, and a sampled sender cache.
	ch := edgeCut(t, before, after, []uint64{1, 2, 3, 4}, []uint64{11, 12, 13}, nil)
	ch.early.answer = nil
	if n := ch.count(); n.ok || !strings.Contains(n.why, "did not answer") {
		t.Errorf("unanswered: %+v", n)
	}
	ch = edgeCut(t, before, after, []uint64{1, 2, 3, 4}, []uint64{11, 12, 13}, nil)
	ch.late.answer.Complete = false
	if n := ch.count(); n.ok || !strings.Contains(n.why, "sampled") {
		t.Errorf("sampled: %+v", n)
	}
}

// TestEdgeLoss: an interval's loss from its counts corrected at both
// cuts, with every kind of crossing.
func TestEdgeLoss(t *testing.T) {
	// Interval k: the sender recorded 100. Its copy holds 90 packets: 85
	// of its own, 2 of k−1 (late at the start cut), 3 of k+1 (early at
	// the end cut). 4 of k's are in the copy of k+1 (late at the end
	// cut), 1 in the copy of k−1 (early at the start cut). So k
	// received 85 + 4 + 1 = 90 and lost 10.
	rx, _ := synopsis.NewTSCache(synopsis.TSCacheMinBudget)
	lda, _ := synopsis.NewLDA(synopsis.DefaultLDAConfig())
	for i := uint64(1); i <= 90; i++ {
		lda.Add(i, i)
	}
	h := &heldInterval{ev: evidence{sent: []uint64{100}, rcv: []*synopsis.LDA{lda}, caches: []*synopsis.TSCache{rx},
		edges: []*edgeCount{{ok: true, late: 2, early: 1}}}}
	next := &evidence{edges: []*edgeCount{{ok: true, late: 4, early: 3}}}
	lost, crossed, early, foreign, why, ok := h.edgeLoss(0, next)
	if !ok || lost != 10 || crossed != 4 || early != 1 || foreign != 5 {
		t.Fatalf("lost %d crossed %d early %d foreign %d (%s, %v), want 10, 4, 1, 5", lost, crossed, early, foreign, why, ok)
	}
	// Either cut unchecked, or not vouched for.
	if _, _, _, _, why, ok := h.edgeLoss(0, nil); ok || why != "" {
		t.Errorf("no next: %v %q", ok, why)
	}
	next.edges[0] = &edgeCount{why: "the sender did not answer"}
	if _, _, _, _, why, ok := h.edgeLoss(0, next); ok || why != "its end: the sender did not answer" {
		t.Errorf("end refused: %v %q", ok, why)
	}
	// The receiver recorded a repeated identity the sender did not: a
	// segment duplicate would count as a received packet.
	next.edges[0] = &edgeCount{ok: true, late: 4, early: 3}
	rx.Insert(7, 1)
	rx.Insert(7, 2)
	if _, _, _, _, why, ok := h.edgeLoss(0, next); ok || !strings.Contains(why, "duplicated") {
		t.Errorf("duplicate: %v %q", ok, why)
	}
	next.edges[0].dupsBefore = 1 // the sender recorded it twice as well
	if lost, _, _, _, _, ok := h.edgeLoss(0, next); !ok || lost != 10 {
		t.Errorf("sender's own repeat: lost %d, %v", lost, ok)
	}
	// Corrections that would receive more than was sent.
	next.edges[0].late = 20
	if _, _, _, _, why, ok := h.edgeLoss(0, next); ok || !strings.Contains(why, "corrected") {
		t.Errorf("too many late: %v %q", ok, why)
	}
}
