package appliance_test

import (
	"fmt"
	"math"
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

// TestDemoRDARepairExact: with uniform (0.1 %) and bursty loss, the
// receiver asks the sender for the lost packets' timestamps in-band, and
// every valid RDA line whose decode completed and whose repair completed
// claims the exact mean — and has it: relative error ≤ 1e-6 against the
// stage's exact per-interval mean. On simulated time no host load makes an
// exchange miss its deadline: every lossy line is valid and repaired
// completely. The exchange's cost is reported.
func TestDemoRDARepairExact(t *testing.T) {
	skipSimSlowUnderRace(t)
	delay, _ := model.NewWeibull(40_000, 0.7)
	uniform, _ := model.NewUniformLoss(0.001)
	bursty, _ := model.NewBurstyLoss(0.002, 4)
	repaired, included := 0, 0
	for i, sc := range []struct {
		name    string
		loss    model.Loss
		reorder float64
		iv      time.Duration
	}{
		{"uniform 0.1%", uniform, 0, 400 * time.Millisecond},
		{"bursty 0.2%, bursts of 4", bursty, 0, 400 * time.Millisecond},
		// Packets crossing End markers: their delays come from the
		// neighbouring interval's receiver cache (rda_crossed_included).
		{"uniform 0.1%, heavy reorder", uniform, 0.2, 150 * time.Millisecond},
	} {
		t.Run(sc.name, func(t *testing.T) {
			cl, err := classifier.NewClassifierFromSpecs(nil)
			if err != nil {
				t.Fatal(err)
			}
			rda := synopsis.DefaultRDAConfig()
			cfg := demo.Config{
				Duration: 2 * time.Second, Interval: sc.iv, Delay: delay, Loss: sc.loss, Rate: 20_000, Seed: uint64(31 + i), ReorderProb: sc.reorder,
				Syn:        dataplane.SynConfig{LDA: synopsis.DefaultLDAConfig(), RDA: &rda, Classes: cl.NumClasses()},
				Classifier: cl, Insecure: true, Conf: 0.98, ControlCopies: 2, SimulatedTime: true,
				Log: zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel),
			}
			var got []report.Interval
			cfg.Reports = func(r *report.Interval) { got = append(got, *r) }
			if _, err := demo.Run(cfg); err != nil {
				t.Fatal(err)
			}
			for _, r := range got {
				if r.Synopsis != "rda" || r.Direction != "a>b" {
					continue
				}
				t.Logf("%d valid=%v lost=%d mean=%.3f ci=%.1f true=%v repair=%v asked=%v req=%vB reply=%vB frames=%v exact=%v crossed=%v early=%v included=%v %s",
					r.Interval, r.Valid, r.Lost, r.MeanNs, r.MeanCINs, derefF(r.TrueMeanNs), r.Extra["rda_repair"], r.Extra["rda_repair_asked"],
					r.Extra["rda_repair_request_bytes"], r.Extra["rda_repair_reply_bytes"], r.Extra["rda_repair_frames"], r.Extra["rda_exact"],
					r.Extra["crossed"], r.Extra["early"], r.Extra["rda_crossed_included"], r.Reason)
				if r.Valid && r.MeanCINs == 0 && r.TrueMeanNs != nil {
					// Any exact claim, repaired or not, is held to the truth.
					if rel := math.Abs(r.MeanNs-*r.TrueMeanNs) / *r.TrueMeanNs; rel > 1e-6 {
						t.Errorf("%d: mean %.3f claimed exact, true %.3f (rel. error %.2g)", r.Interval, r.MeanNs, *r.TrueMeanNs, rel)
					}
				}
				if r.Lost > 0 && (!r.Valid || r.Extra["rda_repair"] != "complete") {
					t.Errorf("%d: lost %d, valid %v, repair %v: want every lossy line repaired (%s)", r.Interval, r.Lost, r.Valid, r.Extra["rda_repair"], r.Reason)
				}
				if n, _ := r.Extra["rda_crossed_included"].(int); n > 0 && r.Valid {
					included++
				}
				if !r.Valid || r.Extra["rda_decode_complete"] != true || r.Extra["rda_repair"] != "complete" {
					continue
				}
				repaired++
				if r.TrueMeanNs == nil {
					t.Errorf("%d: repaired line without truth", r.Interval)
					continue
				}
				if rel := math.Abs(r.MeanNs-*r.TrueMeanNs) / *r.TrueMeanNs; rel > 1e-6 || r.MeanCINs != 0 || r.Extra["rda_exact"] != true {
					t.Errorf("%d: repaired mean %.3f, true %.3f (rel. error %.2g), ci %.1f, exact %v", r.Interval, r.MeanNs, *r.TrueMeanNs, rel, r.MeanCINs, r.Extra["rda_exact"])
				}
			}
		})
	}
	if repaired == 0 {
		t.Error("no valid RDA line was repaired: the property went untested")
	}
	t.Logf("%d valid repaired lines, %d with the delays of packets that crossed the boundary included", repaired, included)
}

func derefF(p *float64) string {
	if p == nil {
		return "-"
	}
	return fmt.Sprintf("%.3f", *p)
}
