package appliance_test

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/ldafwd/ldafwd/appliance"
	"github.com/ldafwd/ldafwd/classifier"
	"github.com/ldafwd/ldafwd/dataplane"
	"github.com/ldafwd/ldafwd/model"
	"github.com/ldafwd/ldafwd/synopsis"
	"github.com/rs/zerolog"
)

// TestDemoLDSSparseDefaults: the demo's defaults — 1 000 flows of about
// 20 packets an interval, the LDS recorded for 65 536 flows (4 × 8 704)
// and shipped within a 1 % control budget. Not one row fits, so each
// interval ships the largest flows' own cells (sparse): most top-flow lines
// are valid, and every valid one holds its flow's true mean within its
// bound and its true loss. (Folded to the budget instead, the LDS was
// 1 × 136 columns and almost no flow line was valid.)
func TestDemoLDSSparseDefaults(t *testing.T) {
	skipSlowedByRace(t)
	delay, _ := model.NewWeibull(50_000, 0.7)
	loss, _ := model.NewUniformLoss(0.001)
	cl, err := classifier.NewClassifierFromSpecs(nil)
	if err != nil {
		t.Fatal(err)
	}
	rda := synopsis.DefaultRDAConfig()
	lds := synopsis.LDSConfig{Rows: 4, Cols: 8704, CellsPerFlow: 1, MaxFlows: 1 << 18}
	ft := &flowTruth{ends: map[uint64]uint64{}}
	cfg := appliance.DemoConfig{
		Duration: 4 * time.Second, Interval: time.Second, Delay: delay, Loss: loss, Rate: 20_000, Seed: 1, Flows: 1000,
		Syn:      dataplane.SynConfig{LDA: synopsis.RecordLDAConfig(), RDA: &rda, LDS: &lds, Classes: cl.NumClasses()},
		AdaptLDA: true, AdaptRDA: true, AdaptLDS: true, RDAProblemRate: 0.005, BudgetFraction: 0.01,
		Classifier: cl, Insecure: true, Conf: 0.98, ControlCopies: 2, TopFlows: 25, TruthHook: ft.hook,
		Log: zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel),
	}
	got := demoLines(t, cfg)
	ft.mu.Lock()
	defer ft.mu.Unlock()
	lines, valid, sparse := 0, 0, 0
	for _, r := range got {
		if r.Synopsis != "lds" || r.Flow == "" || r.Direction != "a>b" || r.Reason == appliance.ReasonWarmup || intervalCause(r.Reason) {
			continue
		}
		fh, _ := r.Extra["flow_hash"].(uint64)
		mean, lost, ok := ft.flowMean(uint64(r.Interval), fh)
		if !ok {
			continue
		}
		lines++
		if strings.Contains(r.Config, ",sparse") {
			sparse++
		}
		if !r.Valid {
			t.Logf("%d %s invalid: %s", r.Interval, r.Flow, r.Reason)
			continue
		}
		valid++
		if e := math.Abs(r.MeanNs - mean); e > r.MeanCINs+1e-6*mean {
			t.Errorf("%d %s: mean %.1f, true %.1f, outside its bound ± %.1f", r.Interval, r.Flow, r.MeanNs, mean, r.MeanCINs)
		}
		if int(r.Lost) != lost {
			t.Errorf("%d %s: lost %d, true %d", r.Interval, r.Flow, r.Lost, lost)
		}
	}
	t.Logf("%d top-flow lines with truth, %d shipped sparse, %d valid", lines, sparse, valid)
	if lines < 25 || sparse < lines || valid < lines*8/10 {
		t.Errorf("%d lines, %d sparse, %d valid: want ≥ 25, all sparse, ≥ 80 %% valid", lines, sparse, valid)
	}
}
