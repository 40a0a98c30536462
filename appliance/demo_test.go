package appliance_test

import (
	"testing"
	"time"

	"github.com/ldafwd/ldafwd/appliance"
	"github.com/ldafwd/ldafwd/appliance/demo"
	"github.com/ldafwd/ldafwd/classifier"
	"github.com/ldafwd/ldafwd/dataplane"
	"github.com/ldafwd/ldafwd/model"
	"github.com/ldafwd/ldafwd/report"
	"github.com/ldafwd/ldafwd/synopsis"
	"github.com/rs/zerolog"
)

// TestDemo is the demo as `ldafwd demo` runs it (two control copies: the
// segment loses 0.1 % of control frames too, and one lost fragment would
// invalidate its interval; the RDA beside the LDA proves each interval's
// loss), on simulated time: every interval valid, loss exact. (The
// interval after the one the receiver started in has no paired
// predecessor to check for packets that overtook its start marker: with
// loss it is honestly invalid, ReasonPrevMissing.)
func TestDemo(t *testing.T) {
	lines, sum := demoRun(t, true)
	prevMissing := 0
	for _, r := range lines {
		if r.Synopsis == "lda" && !r.Valid && r.Reason == appliance.ReasonPrevMissing {
			prevMissing++
		}
	}
	if sum.Intervals < 3 || sum.Valid+prevMissing != sum.Intervals || prevMissing > 1 {
		t.Errorf("%d of %d intervals valid (%d without a predecessor)", sum.Valid, sum.Intervals, prevMissing)
	}
}

// TestDemoLive runs TestDemo's pipeline with the workers and control
// sides on goroutines of their own, for the race detector (simulated time
// runs everything on one goroutine). It checks what concurrency could
// break — every valid line's loss exact, every frame accounted for at the
// sink — while TestDemo, on simulated time, holds every interval.
func TestDemoLive(t *testing.T) {
	_, sum := demoRun(t, false)
	if sum.Valid == 0 {
		t.Errorf("no valid interval")
	}
}

// demoRun runs TestDemo's demo and checks what holds on any clock: every
// valid interval's loss exact, and every frame the segment did not lose
// at the sink.
func demoRun(t *testing.T, simulated bool) ([]report.Interval, demo.Summary) {
	d := 3 * time.Second
	delay, _ := model.NewWeibull(50_000, 0.7)
	loss, _ := model.NewUniformLoss(0.001)
	cl, _ := classifier.NewClassifier(nil)
	rda := synopsis.DefaultRDAConfig()
	lines, sum := demoLinesSum(t, demo.Config{
		Duration: d, Interval: 500 * time.Millisecond, Delay: delay, Loss: loss, Rate: 20_000, Seed: 1, ControlCopies: 2,
		Syn: dataplane.SynConfig{LDA: synopsis.DefaultLDAConfig(), RDA: &rda}, Classifier: cl, Insecure: true, Log: zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.DebugLevel),
		SimulatedTime: simulated,
	})
	for _, r := range lines {
		tl := "-"
		if r.TrueLost != nil {
			tl = "ok"
		}
		t.Logf("k=%d valid=%v %s sent=%d recv=%d lost=%d mean=%.0f±%.0f truth=%s", r.Interval, r.Valid, r.Reason, r.Sent, r.Received, r.Lost, r.MeanNs, r.MeanCINs, tl)
	}
	t.Logf("%+v", sum)
	if sum.LossExact != sum.Valid {
		t.Errorf("loss exact in %d of %d valid intervals", sum.LossExact, sum.Valid)
	}
	if sum.Sunk+sum.ImpairLost != sum.Generated || sum.ApplianceTxDropped != 0 {
		t.Errorf("generated %d, sunk %d, lost on the segment %d, dropped by appliances %d", sum.Generated, sum.Sunk, sum.ImpairLost, sum.ApplianceTxDropped)
	}
	return lines, sum
}

// TestDemoAllSynopses runs the appliances with LDA, RDA and LDS shipped
// in-band: one RDA line per LDA line and up to TopFlows LDS lines per
// interval; every RDA line of an interval with traffic is valid and exact
// (no loss on this segment, so within the sender's timestamp uncertainty)
// and every LDS line names its flow. On simulated time no estimation
// overruns an interval (which merged two, invalid), whatever the host's
// load.
func TestDemoAllSynopses(t *testing.T) {
	delay, _ := model.NewWeibull(30_000, 0.7)
	cl, _ := classifier.NewClassifier(nil)
	rda := synopsis.DefaultRDAConfig()
	lds, err := synopsis.DimensionLDS(synopsis.LDSDimensioning{ExpectedFlows: 200, MaxFlows: 800})
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	ldsPer := map[int64]int{}
	var rdaLines []report.Interval
	_, err = demo.Run(demo.Config{
		Duration: 2 * time.Second, Interval: 500 * time.Millisecond, Delay: delay, Loss: model.NoLoss{}, Rate: 20_000, Seed: 2,
		Flows: 100, Syn: dataplane.SynConfig{LDA: synopsis.DefaultLDAConfig(), RDA: &rda, LDS: &lds}, Classifier: cl, Insecure: true,
		TopFlows: 5, SimulatedTime: true,
		Reports: func(r *report.Interval) {
			if r.Reason == appliance.ReasonWarmup {
				return // the receiver's first interval: one lda line, nothing to pair
			}
			kinds[r.Synopsis]++
			switch r.Synopsis {
			case "rda":
				rdaLines = append(rdaLines, *r)
			case "lds":
				ldsPer[r.Interval]++
				if r.Flow == "" {
					t.Errorf("lds line without a flow name: %+v", r)
				}
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("lines per synopsis: %v", kinds)
	if kinds["lda"] < 2 || kinds["rda"] > kinds["lda"] || kinds["rda"] < kinds["lda"]-1 {
		t.Errorf("lines per synopsis %v: want one rda line per paired lda line", kinds)
	}
	for k, n := range ldsPer {
		if n > 5 {
			t.Errorf("interval %d: %d lds lines, want ≤ 5 (TopFlows)", k, n)
		}
	}
	valid := 0
	for _, r := range rdaLines {
		if !r.Valid {
			t.Logf("rda interval %d invalid: %s", r.Interval, r.Reason)
			if r.Sent > 0 || r.Received > 0 {
				t.Errorf("rda interval %d with traffic invalid: %s", r.Interval, r.Reason)
			}
			continue
		}
		valid++
		if r.TrueMeanNs == nil || r.Lost != 0 {
			t.Errorf("rda interval %d: lost %d, truth %v", r.Interval, r.Lost, r.TrueMeanNs)
			continue
		}
		// Without loss the RDA mean is exact, up to the sender's timestamp
		// uncertainty which it reports in mean_ci_ns.
		if d := r.MeanNs - *r.TrueMeanNs; d > r.MeanCINs+1 || -d > r.MeanCINs+1 {
			t.Errorf("rda interval %d: mean %.3f, true %.3f, bound %.3f", r.Interval, r.MeanNs, *r.TrueMeanNs, r.MeanCINs)
		}
	}
	if valid == 0 {
		t.Error("no valid rda interval")
	}
}
