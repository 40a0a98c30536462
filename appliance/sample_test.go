package appliance_test

import (
	"testing"
	"time"

	"github.com/ldafwd/ldafwd/appliance/demo"
	"github.com/ldafwd/ldafwd/classifier"
	"github.com/ldafwd/ldafwd/dataplane"
	"github.com/ldafwd/ldafwd/model"
	"github.com/ldafwd/ldafwd/report"
	"github.com/ldafwd/ldafwd/synopsis"
	"github.com/rs/zerolog"
)

// TestSampleShippedLevel: the sender ships as many samples as fit its
// share of the control budget — every packet under an ample budget, a
// sparser rate under a smaller one, the sparser the smaller the budget,
// the share filled to within 15 % (fragment headers take some; the cut
// is to a count, not to a power of two) — and as recorded when the level
// is fixed (AdaptSample off), whatever the budget. Simulated time: the
// levels are the same on every run.
func TestSampleShippedLevel(t *testing.T) {
	run := func(budgetBytes int, adapt bool, level uint8) (levels []uint8, bytes []int) {
		t.Helper()
		cl, _ := classifier.NewClassifier(nil)
		delay, _ := model.NewWeibull(40_000, 0.7)
		loss, _ := model.NewUniformLoss(0)
		smp := synopsis.SampleConfig{Level: level, Capacity: 16384}
		cfg := demo.Config{Duration: 500 * time.Millisecond, Interval: 100 * time.Millisecond, Delay: delay, Loss: loss,
			Rate: 20_000, Seed: 5, Classifier: cl, Insecure: true, Conf: 0.98, SimulatedTime: true, Log: zerolog.Nop(),
			Syn: dataplane.SynConfig{LDA: synopsis.DefaultLDAConfig(), Sample: &smp, Classes: 1}, ControlCopies: 1,
			BudgetBytes: budgetBytes, AdaptLDA: true, AdaptSample: adapt}
		cfg.Reports = func(r *report.Interval) {
			if r.Synopsis == "sample" && r.Direction == "a>b" && r.DelayValid {
				levels = append(levels, r.Extra["sample_level"].(uint8))
				bytes = append(bytes, r.Extra["sample_bytes"].(int))
			}
		}
		if _, err := demo.Run(cfg); err != nil {
			t.Fatal(err)
		}
		if len(levels) < 3 {
			t.Fatalf("budget %d, adapt %v, level %d: %d valid sample lines, want ≥ 3", budgetBytes, adapt, level, len(levels))
		}
		return levels, bytes
	}
	// 2 000 packets an interval: about 14 KB whole.
	ample, _ := run(1<<20, true, 0)
	small, smallBytes := run(12_000, true, 0)
	tiny, tinyBytes := run(6_000, true, 0)
	fixed, _ := run(6_000, false, 2)
	for i := range ample {
		if ample[i] != 0 {
			t.Errorf("ample budget: level %d, want every packet (0)", ample[i])
		}
	}
	for i := range small {
		// The samples' share is a quarter of the budget: 3 000 and 1 500
		// bytes on the wire, the encoded sample somewhat less.
		if small[i] == 0 || smallBytes[i] > 3000 || tiny[i] <= small[i] || tinyBytes[i] > 1500 ||
			smallBytes[i] < 2550 || tinyBytes[i] < 1275 {
			t.Errorf("interval %d: 12 KB budget level %d (%d bytes), 6 KB level %d (%d bytes): want 12 KB deeper than 0 within 2 550 … 3 000 bytes, 6 KB deeper still within 1 275 … 1 500", i, small[i], smallBytes[i], tiny[i], tinyBytes[i])
		}
	}
	for _, l := range fixed {
		if l != 2 {
			t.Errorf("fixed level 2 under a 6 KB budget shipped at level %d", l)
		}
	}
}
