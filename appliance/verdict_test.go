package appliance_test

import (
	"math"
	"sync"
	"testing"
	"time"

	"github.com/ldafwd/ldafwd/appliance/demo"
	"github.com/ldafwd/ldafwd/classifier"
	"github.com/ldafwd/ldafwd/dataplane"
	"github.com/ldafwd/ldafwd/model"
	"github.com/ldafwd/ldafwd/report"
	"github.com/ldafwd/ldafwd/synopsis"
)

// TestLossValidDelayValid: what loss_valid and delay_valid vouch for on a
// line that is not valid. With --max-delay below the segment's delay tail
// most LDA lines have buckets beyond it (delay_above_max, a delay-only
// cause), under loss and reordering; with duplicates made inside the
// segment the LDA proves extra packets, which leave the loss unknown but
// not the delay (extras). Every line that says loss_valid holds the
// segment's exact loss (the demo's truth), and such lines exist among
// those invalid for their delay; every line that says delay_valid has the
// true mean within its bound, as a valid one does (at the confidence),
// and such lines exist among those invalid for their loss. On simulated
// time, so the lines are the scenario's, not the host's load's.
func TestLossValidDelayValid(t *testing.T) {
	skipSimSlowUnderRace(t)
	t.Run("max-delay below the tail", func(t *testing.T) {
		b := synopsis.DefaultCompactBounds()
		b.MinDelayNs, b.MaxDelayNs = -10_000_000, 150_000
		delayOnly, _ := verdictDemo(t, b, 0)
		if delayOnly == 0 {
			t.Errorf("no line with loss invalid for its delay alone: the scenario did not happen")
		}
	})
	t.Run("duplicates", func(t *testing.T) {
		_, lossOnly := verdictDemo(t, synopsis.CompactBounds{}, 0.002)
		if lossOnly == 0 {
			t.Errorf("no line invalid for its loss alone: the scenario did not happen")
		}
	})
}

// verdictDemo runs the demo with bounds and duplicates and checks every
// line's loss_valid and delay_valid against the truth; it returns the
// lines with loss invalid for their delay alone, and those invalid for
// their loss alone.
func verdictDemo(t *testing.T, bounds synopsis.CompactBounds, dup float64) (delayOnly, lossOnly int) {
	const iv = 300 * time.Millisecond
	delay, _ := model.NewWeibull(50_000, 0.7)
	loss, _ := model.NewUniformLoss(0.002)
	cl, _ := classifier.NewClassifier(nil)
	var mu sync.Mutex
	var lines []report.Interval
	_, err := demo.Run(demo.Config{
		Duration: 10 * iv, Interval: iv, Delay: delay, Loss: loss, Rate: 20_000, Seed: 5, ReorderProb: 0.02, DupProb: dup,
		Syn: dataplane.SynConfig{LDA: synopsis.DefaultLDAConfig()}, Classifier: cl, Insecure: true, ControlCopies: 2, Bounds: bounds, SimulatedTime: true,
		Reports: func(r *report.Interval) {
			mu.Lock()
			lines = append(lines, *r)
			mu.Unlock()
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	delayChecked, delayMiss := 0, 0
	for _, r := range lines {
		t.Logf("%d valid=%v loss_valid=%v delay_valid=%v code=%s lost=%d true_lost=%v %s", r.Interval, r.Valid, r.LossValid, r.DelayValid, r.ReasonCode, r.Lost, deref(r.TrueLost), r.Reason)
		if r.Valid != (r.LossValid && r.DelayValid) || r.Valid != (r.ReasonCode == "") {
			t.Errorf("interval %d: valid %v, loss_valid %v, delay_valid %v, reason_code %q", r.Interval, r.Valid, r.LossValid, r.DelayValid, r.ReasonCode)
		}
		if r.LossValid && r.TrueLost != nil && r.Lost != *r.TrueLost {
			t.Errorf("interval %d: loss_valid with lost %d, true %d (%s)", r.Interval, r.Lost, *r.TrueLost, r.Reason)
		}
		if !r.Valid && r.LossValid && r.Lost > 0 && r.TrueLost != nil {
			delayOnly++
		}
		if !r.Valid && r.DelayValid {
			lossOnly++
		}
		if r.DelayValid && r.TrueMeanNs != nil && r.Samples > 0 {
			delayChecked++
			if math.Abs(r.MeanNs-*r.TrueMeanNs) > r.MeanCINs {
				delayMiss++
			}
		}
	}
	t.Logf("%d lines invalid for the delay alone with loss, %d for the loss alone; %d delays vouched for, %d outside their bound", delayOnly, lossOnly, delayChecked, delayMiss)
	if delayMiss > 1+delayChecked/20 {
		t.Errorf("%d of %d delays vouched for miss their bound", delayMiss, delayChecked)
	}
	return delayOnly, lossOnly
}
