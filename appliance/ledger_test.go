package appliance

import (
	"testing"
	"time"

	"github.com/ldafwd/ldafwd/report"
)

// TestLedgerReleasesEachLineOnce: lines held for paired intervals and
// lines queued for others leave the ledger exactly once, in interval
// order, and only once nothing older may still come (lim) and no hole
// holds them back.
func TestLedgerReleasesEachLineOnce(t *testing.T) {
	l := newLedger()
	line := func(k uint64) *report.Interval { return &report.Interval{Interval: int64(k)} }
	var all []*report.Interval
	pair := func(k uint64, n int) *heldInterval {
		if !l.claim(k) {
			t.Fatalf("interval %d claimed twice", k)
		}
		l.begin(evidence{})
		for i := 0; i < n; i++ {
			r := line(k)
			all = append(all, r)
			l.hold(heldLine{r: r})
		}
		if !l.pairing() {
			t.Fatal("not pairing between begin and close")
		}
		return l.close(k, time.Time{})
	}
	queue := func(k uint64) {
		if !l.claim(k) {
			t.Fatalf("interval %d claimed twice", k)
		}
		r := line(k)
		all = append(all, r)
		l.queue(r)
	}
	h10 := pair(10, 2)
	queue(12)
	h11 := pair(11, 3)
	queue(9)
	if l.claim(11) {
		t.Fatal("a second claim of interval 11 succeeded")
	}
	seen := map[*report.Interval]int{}
	var order []int64
	take := func(lim, hole, top uint64) {
		for _, it := range l.release(lim, hole, top) {
			rs := []*report.Interval{it.r}
			if it.h != nil {
				rs = rs[:0]
				for _, hl := range it.h.lines {
					rs = append(rs, hl.r)
				}
			}
			for _, r := range rs {
				seen[r]++
				order = append(order, r.Interval)
			}
		}
	}
	// Nothing decided: only what is older than the oldest undecided
	// interval goes.
	take(l.oldestUndecided(), ^uint64(0), 0)
	if len(seen) != 1 || order[0] != 9 {
		t.Fatalf("released %v before any interval was decided: want interval 9 alone", order)
	}
	h10.decided = true
	// A hole at 10 holds back everything after it below top.
	take(l.oldestUndecided(), 10, 100)
	if len(seen) != 3 {
		t.Fatalf("released %v: want 9, then 10's two lines", order)
	}
	h11.decided = true
	take(l.oldestUndecided(), ^uint64(0), 0)
	take(l.oldestUndecided(), ^uint64(0), 0) // nothing is left to go twice
	for _, r := range all {
		if seen[r] != 1 {
			t.Errorf("interval %d line released %d times", r.Interval, seen[r])
		}
	}
	for i := 1; i < len(order); i++ {
		if order[i] < order[i-1] {
			t.Errorf("release order %v is not interval order", order)
			break
		}
	}
	if l.waiting(10) != nil || l.waiting(11) != nil || l.evidenceOf(11) == nil {
		t.Error("released intervals still wait, or their evidence is gone")
	}
}
