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
)

// TestClockStepSender: the sender's clock steps in the middle of an
// interval, forward and back, by a few milliseconds against delays of
// 40 µs. The receiver learns of it from the sender's clock part: the
// lines of the intervals the step touched have no delay (clock_step),
// and every line with a delay holds the truth as the two clocks see it
// (the demo's truth follows the step), before and after.
func TestClockStepSender(t *testing.T) {
	const iv = 100 * time.Millisecond
	for _, by := range []time.Duration{3 * time.Millisecond, -3 * time.Millisecond, 400 * time.Microsecond} {
		t.Run(by.String(), func(t *testing.T) {
			delay, _ := model.NewWeibull(40_000, 0.7)
			loss, _ := model.NewUniformLoss(0.001)
			cl, _ := classifier.NewClassifier(nil)
			rda := synopsis.DefaultRDAConfig()
			var lines []report.Interval
			_, err := demo.Run(demo.Config{
				Duration: 10 * iv, Interval: iv, Delay: delay, Loss: loss, Rate: 10_000, Seed: 5,
				Syn: dataplane.SynConfig{LDA: synopsis.DefaultLDAConfig(), RDA: &rda}, Classifier: cl, Insecure: true,
				SimulatedTime: true, ClockStepAt: 5*iv + iv/2, ClockStepBy: by,
				Reports: func(r *report.Interval) { lines = append(lines, *r) },
			})
			if err != nil {
				t.Fatal(err)
			}
			stepped, after := 0, 0
			var k0 int64
			for _, r := range lines {
				if k0 == 0 || r.Interval < k0 {
					k0 = r.Interval
				}
			}
			stepK := k0 + 5 // the step falls half-way into it
			for _, r := range lines {
				if r.Flow != "" {
					continue
				}
				t.Logf("%d (%+d) %s valid=%v delay_valid=%v mean=%.0f±%.0f true=%s %s", r.Interval, r.Interval-stepK, r.Synopsis, r.Valid, r.DelayValid, r.MeanNs, r.MeanCINs, fptr(r.TrueMeanNs), r.Reason)
				if r.ReasonCode == report.ClockStep.String() || r.Verdict().Has(report.ClockStep) {
					stepped++
					if r.Interval < stepK || r.Interval > stepK+1 {
						t.Errorf("interval %d (step%+d) invalid for a clock step", r.Interval, r.Interval-stepK)
					}
					continue
				}
				if r.Interval == stepK && r.DelayValid {
					t.Errorf("interval %d holds the step, delay claimed: %.0f ± %.0f, truth %s", r.Interval, r.MeanNs, r.MeanCINs, fptr(r.TrueMeanNs))
				}
				if !r.DelayValid || r.TrueMeanNs == nil {
					continue
				}
				if off := r.MeanNs - *r.TrueMeanNs; off > r.MeanCINs+1 || -off > r.MeanCINs+1 {
					t.Errorf("interval %d (step%+d) %s: mean %.0f ± %.0f, truth %.0f", r.Interval, r.Interval-stepK, r.Synopsis, r.MeanNs, r.MeanCINs, *r.TrueMeanNs)
				}
				if r.Interval > stepK+1 {
					after++
				}
			}
			if stepped == 0 {
				t.Error("no line invalid for the clock step")
			}
			if after == 0 && by > 0 {
				t.Error("no line with a delay after the step")
			}
		})
	}
}

func fptr(p *float64) string {
	if p == nil {
		return "?"
	}
	return time.Duration(*p).String()
}
