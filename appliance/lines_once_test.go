package appliance_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/ldafwd/ldafwd/appliance/demo"
	"github.com/ldafwd/ldafwd/classifier"
	"github.com/ldafwd/ldafwd/dataplane"
	"github.com/ldafwd/ldafwd/model"
	"github.com/ldafwd/ldafwd/report"
	"github.com/ldafwd/ldafwd/synopsis"
)

// TestEachLineOnce: under loss, reordering and duplication, with every
// synopsis and repair running, every line reaches the report sink once,
// and each interval has one line per class and synopsis (a second cut of
// an interval after a sender restart, code recut, is the one exception).
// On simulated time.
func TestEachLineOnce(t *testing.T) {
	skipSimSlowUnderRace(t)
	delay, _ := model.NewWeibull(50_000, 0.7)
	loss, _ := model.NewUniformLoss(0.05)
	cl, _ := classifier.NewClassifier(nil)
	rda := synopsis.DefaultRDAConfig()
	lds, err := synopsis.DimensionLDS(synopsis.LDSDimensioning{ExpectedFlows: 500, CellsPerFlow: 2, MaxFlows: 4000})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[*report.Interval]int{}
	keys := map[string]int{}
	_, err = demo.Run(demo.Config{
		Duration: 4 * time.Second, Interval: 250 * time.Millisecond, Delay: delay, Loss: loss, ReorderProb: 0.01, DupProb: 0.001,
		Rate: 10_000, Seed: 9, Flows: 500, Syn: dataplane.SynConfig{LDA: synopsis.DefaultLDAConfig(), RDA: &rda, LDS: &lds},
		Classifier: cl, Insecure: true, ControlCopies: 1, BudgetFraction: 0.01, TopFlows: 5, SimulatedTime: true,
		Reports: func(r *report.Interval) { // one goroutine on simulated time
			seen[r]++
			if r.Synopsis != "lds" && r.ReasonCode != report.Recut.String() {
				keys[fmt.Sprintf("%s/%d/%s/%s", r.Direction, r.Interval, r.MEC, r.Synopsis)]++
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) < 20 {
		t.Fatalf("%d lines: too few to check", len(seen))
	}
	for r, n := range seen {
		if n != 1 {
			t.Errorf("interval %d %s line reported %d times", r.Interval, r.Synopsis, n)
		}
	}
	for k, n := range keys {
		if n != 1 {
			t.Errorf("%s: %d lines", k, n)
		}
	}
}
