package appliance_test

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ldafwd/ldafwd/appliance"
	"github.com/ldafwd/ldafwd/appliance/demo"
	"github.com/ldafwd/ldafwd/classifier"
	"github.com/ldafwd/ldafwd/dataplane"
	"github.com/ldafwd/ldafwd/model"
	"github.com/ldafwd/ldafwd/report"
	"github.com/ldafwd/ldafwd/synopsis"
)

// TestAdaptLDA: an LDA recorded at RecordLDAConfig and shipped folded to
// each interval's traffic (AdaptLDA) within a 1 % control budget. The
// traffic alternates between busy and quiet stretches, and packets are
// reordered across interval ends, so consecutive intervals ship different
// shapes and the crossing check compares them folded to a common one.
// Every full interval's lda line must be valid with the exact loss, its
// config must name the shape shipped (smaller than recorded), and the
// control bytes must stay within the budget. On simulated time: the
// pauses and the interval ends fall where the scenario puts them.
func TestAdaptLDA(t *testing.T) {
	skipSimSlowUnderRace(t)
	const iv = 400 * time.Millisecond
	delay, _ := model.NewWeibull(30_000, 0.7)
	loss, _ := model.NewUniformLoss(0.001)
	cl, _ := classifier.NewClassifier(nil)
	// The RDA beside it, as run and demo ship it: it proves each lossy
	// interval's loss (the LDA alone cannot rule out late packets hiding
	// behind the next interval's losses at this loss rate).
	rda := synopsis.DefaultRDAConfig()
	var mu sync.Mutex
	var lines []report.Interval
	_, err := demo.Run(demo.Config{
		Duration: 16 * iv, Interval: iv, Delay: delay, Loss: loss, Rate: 20_000, Seed: 5, ReorderProb: 0.02,
		Syn: dataplane.SynConfig{LDA: synopsis.RecordLDAConfig(), RDA: &rda}, Classifier: cl, Insecure: true,
		ControlCopies: 2, BudgetFraction: 0.01, AdaptLDA: true, SimulatedTime: true,
		// Quiet for most of every other 700 ms: interval sizes differ.
		Traffic: func(el time.Duration) (bool, bool) { return el%(1400*time.Millisecond) > 900*time.Millisecond, false },
		Reports: func(r *report.Interval) {
			mu.Lock()
			lines = append(lines, *r)
			mu.Unlock()
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	shapes := map[string]bool{}
	checked := 0
	for _, r := range lines {
		if r.Synopsis != "lda" || r.Sent == 0 {
			continue
		}
		_, shipped, ok := strings.Cut(r.Config, " lda-shipped=")
		t.Logf("%d sent=%d valid=%v lost=%d true_lost=%v shipped=%s control=%d %s", r.Interval, r.Sent, r.Valid, r.Lost, deref(r.TrueLost), shipped, r.ControlBytes, r.Reason)
		if !r.Valid {
			// The first and the last intervals are partial; nothing else
			// may be invalid.
			// A lossy interval whose loss neither the RDA nor the LDA's
			// buckets can prove is honestly invalid too, and so is one a
			// reordered packet crossed into (its own extra: "receiver saw",
			// or, with no loss to hide it, more packets received than sent).
			// An interval the pause covers all but its edge of (a packet or
			// a few: under 1 % of a full one's 8 000) has too few samples
			// for a bound.
			if r.ReasonCode == report.FewSamples.String() && r.Sent < 80 {
				continue
			}
			if r.Reason != appliance.ReasonWarmup && !strings.HasPrefix(r.Reason, appliance.ReasonNextMissing) && !strings.HasPrefix(r.Reason, "stopped") &&
				!strings.HasPrefix(r.Reason, "loss not verifiable") && !strings.HasPrefix(r.Reason, "receiver saw") &&
				!strings.Contains(r.Reason, "reordering across the interval boundary") {
				t.Errorf("interval %d invalid: %s", r.Interval, r.Reason)
			}
			continue
		}
		if !ok || strings.HasPrefix(shipped, "1024:0,1024:2,1024:4,1024:6,1024:8,1024:10,1024:12,1024:14") {
			t.Errorf("interval %d: config %q: want the shape shipped, folded", r.Interval, r.Config)
		}
		if r.TrueLost == nil || r.Lost != *r.TrueLost {
			t.Errorf("interval %d: lost %d, truth %v", r.Interval, r.Lost, deref(r.TrueLost))
		}
		if data := float64(r.Sent) * 128; r.Sent > 4000 && float64(r.ControlBytes) > max(0.01*data, appliance.MinControlBudget) {
			t.Errorf("interval %d: %d control bytes for %.0f data bytes: over the budget (1 %%, at least %d)", r.Interval, r.ControlBytes, data, appliance.MinControlBudget)
		}
		shapes[shipped] = true
		checked++
	}
	if checked < 4 || len(shapes) < 2 {
		t.Errorf("%d valid lda lines checked, %d shapes shipped: the scenario did not happen", checked, len(shapes))
	}
}
