package appliance_test

import (
	"math"
	"sort"
	"strings"
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

// collidingLDS is a sketch too small for the demo's 100 flows, with two
// cells per flow and row: where a flow's cells are not all usable, the
// ones averaged hold a sample of its packets, whose bound (Hoeffding's)
// scales with the delay range — the range shows in those lines'
// mean_ci_ns. (With one cell per flow, a valid flow line in the appliance
// is a flow alone in its cells, with a bound of 0 whatever the range.)
var collidingLDS = synopsis.LDSConfig{Rows: 4, Cols: 128, CellsPerFlow: 2, MaxFlows: 256}

func rangeDemo(t *testing.T, delay model.Delay, bounds synopsis.CompactBounds, assumed appliance.DelayRange, ft *flowTruth) ([]report.Interval, demo.Summary) {
	t.Helper()
	loss, _ := model.NewUniformLoss(0.001)
	cl, err := classifier.NewClassifierFromSpecs(nil)
	if err != nil {
		t.Fatal(err)
	}
	lds := collidingLDS
	cfg := demo.Config{
		Duration: 4 * time.Second, Interval: 500 * time.Millisecond, Delay: delay, Loss: loss, Rate: 8_000, Seed: 3, Flows: 100,
		Syn:        dataplane.SynConfig{LDA: synopsis.DefaultLDAConfig(), LDS: &lds, Classes: cl.NumClasses()},
		Classifier: cl, Insecure: true, Conf: 0.98, TopFlows: 10, ControlCopies: 2, TruthHook: ft.hook,
		Bounds: bounds, Assumed: assumed,
		Log: zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel), SimulatedTime: true,
	}
	return demoLinesSum(t, cfg)
}

// checkLines holds every valid a>b LDA line's true mean within its
// mean_ci_ns and every valid LDS flow line's to its flow's truth; it
// returns the valid LDA and LDS lines, and per flow the mean of its valid
// lines' mean_ci_ns less their stamp_err_ns.
func checkLines(t *testing.T, got []report.Interval, ft *flowTruth) (lda, lds int, ci map[string]float64) {
	t.Helper()
	ft.mu.Lock()
	defer ft.mu.Unlock()
	ci = map[string]float64{}
	n := map[string]int{}
	for _, r := range got {
		if r.Direction != "a>b" || r.MEC != "all" {
			continue
		}
		if strings.Contains(r.Reason, synopsis.ReasonDelayAboveMax) || strings.Contains(r.Reason, synopsis.ReasonDelayBelowMin) {
			t.Errorf("%d %s: invalid for the delay range: %s", r.Interval, r.Synopsis, r.Reason)
		}
		if !r.Valid {
			continue
		}
		switch r.Synopsis {
		case "lda":
			lda++
			if r.TrueMeanNs == nil || math.Abs(r.MeanNs-*r.TrueMeanNs) > r.MeanCINs {
				t.Errorf("%d lda: mean %.0f ± %.0f ns misses the truth %v", r.Interval, r.MeanNs, r.MeanCINs, r.TrueMeanNs)
			}
		case "lds":
			fh, _ := r.Extra["flow_hash"].(uint64)
			mean, _, ok := ft.flowMean(uint64(r.Interval), fh)
			if !ok {
				continue
			}
			lds++
			if e := math.Abs(r.MeanNs - mean); e > r.MeanCINs {
				t.Errorf("%d lds %s: mean %.0f ± %.0f ns misses the flow's truth %.0f (stamp_err %.0f, sent %d, received %d; %v)", r.Interval, r.Flow, r.MeanNs, r.MeanCINs, mean, r.StampErrNs, r.Sent, r.Received, r.Extra)
			}
			ci[r.Flow] += r.MeanCINs - r.StampErrNs // what the delay range bounds (the stamps vary run to run)
			n[r.Flow]++
		}
	}
	for fh := range ci {
		ci[fh] /= float64(n[fh])
	}
	return lda, lds, ci
}

// TestDemoCongestedDefaults: a segment with hundreds of ms of queueing
// (exponential draws of 40 ms mean through a FIFO: a long draw holds
// the frames behind it, up to ~400 ms) at run's default delay ranges —
// the −10 ms … 1 s the compact encoding carries, the −10 µs … 1 ms the
// flow bounds assume. Every interval's LDA line is valid and holds the
// truth (with the 1 ms wire range they used to be every one invalid for
// "delays above --max-delay"); the flow lines' range follows the
// interval's delays (wider than the assumed 1 ms, narrower than the
// wire's 1 s) and every valid flow line holds its flow's truth. On
// simulated time: the run's own queueing decides the delays, not the
// host's.
func TestDemoCongestedDefaults(t *testing.T) {
	delay, err := model.NewWeibull(40e6, 1)
	if err != nil {
		t.Fatal(err)
	}
	ft := &flowTruth{ends: map[uint64]uint64{}}
	got, sum := rangeDemo(t, delay, synopsis.DefaultCompactBounds(), appliance.DefaultAssumedDelay, ft)
	lda, lds, _ := checkLines(t, got, ft)
	widened := 0
	for _, r := range got {
		if r.Synopsis != "lds" || !r.Valid {
			continue
		}
		rg, _ := r.Extra["delay_range_ns"].([]int64)
		if len(rg) != 2 {
			t.Fatalf("lds line without delay_range_ns: %v", r.Extra)
		}
		if rg[1] > 10_000_000 && rg[1] < synopsis.DefaultCompactBounds().MaxDelayNs {
			widened++
		}
	}
	t.Logf("%d intervals, %d valid, %d true mean in bound; valid lda lines %d, lds %d (range widened in %d); control %.0f B/interval",
		sum.Intervals, sum.Valid, sum.MeanInBound, lda, lds, widened, sum.ControlBytesPerInt)
	if sum.Valid != sum.Intervals {
		t.Errorf("%d of %d intervals valid", sum.Valid, sum.Intervals)
	}
	if lda < 3 || lds < 10 || widened == 0 {
		t.Fatalf("%d valid LDA lines, %d valid flow lines, %d with a widened range: the test measures nothing", lda, lds, widened)
	}
}

// TestDemoMicrosecondRange: at the demo's microsecond delays the 1 s wire
// range changes no flow bound. A flow line's bound less its stamp error is
// linear in the width of the delay range it assumes (others' share of its
// cells times the width, plus a Hoeffding term in the width), so a line
// whose range is the former wire range, −10 ms … 100 ms, has exactly the
// bound it had. Every valid flow line's range is that, with the default
// bounds as with the former ones, and every valid line holds its truth.
// On simulated time both runs carry the same packets with the same delays
// and losses (the same seed; only the control frames' sizes differ), so
// flow by flow the two runs' bounds are the same.
func TestDemoMicrosecondRange(t *testing.T) {
	delay, err := model.NewWeibull(50_000, 0.7)
	if err != nil {
		t.Fatal(err)
	}
	old := synopsis.DefaultCompactBounds()
	old.MaxDelayNs = 100_000_000
	var cis [2]map[string]float64
	var ctl [2]float64
	for i, b := range []synopsis.CompactBounds{old, {}} {
		ft := &flowTruth{ends: map[uint64]uint64{}}
		got, sum := rangeDemo(t, delay, b, appliance.DelayRange{}, ft)
		lda, lds, ci := checkLines(t, got, ft)
		bounded := 0
		for _, r := range got {
			if r.Synopsis != "lds" || !r.Valid {
				continue
			}
			if rg, _ := r.Extra["delay_range_ns"].([]int64); len(rg) != 2 || rg[0] != -10_000_000 || rg[1] != 100_000_000 {
				t.Errorf("%d lds %s: delay range %v, want the former [-10ms, 100ms]", r.Interval, r.Flow, r.Extra["delay_range_ns"])
			}
			if r.MeanCINs > r.StampErrNs {
				bounded++
			}
		}
		name := "default wire range"
		if i == 0 {
			name = "former wire range −10 ms … 100 ms"
		}
		t.Logf("%s: valid lda lines %d, lds %d (%d with a bound the range scales); control %.0f B/interval", name, lda, lds, bounded, sum.ControlBytesPerInt)
		if lda < 4 || lds < 20 || bounded < 5 {
			t.Fatalf("%d valid LDA lines, %d valid flow lines, %d bounded by the range: the test measures nothing", lda, lds, bounded)
		}
		cis[i], ctl[i] = ci, sum.ControlBytesPerInt
	}
	var ratios []float64
	for fh, a := range cis[0] {
		if b, ok := cis[1][fh]; ok && a > 0 {
			ratios = append(ratios, b/a)
		}
	}
	sort.Float64s(ratios)
	if len(ratios) < 5 {
		t.Fatalf("only %d flows with valid bounded lines in both runs", len(ratios))
	}
	med := ratios[len(ratios)/2]
	t.Logf("%d flows: mean_ci_ns − stamp_err_ns, default / former run, median %.3f (%.3f … %.3f); control bytes %.0f → %.0f per interval",
		len(ratios), med, ratios[0], ratios[len(ratios)-1], ctl[0], ctl[1])
	for fh, a := range cis[0] {
		if b, ok := cis[1][fh]; ok && math.Abs(b-a) > 1e-9*a {
			t.Errorf("flow %s: mean_ci_ns − stamp_err_ns %.3f with the former wire range, %.3f with the default", fh, a, b)
		}
	}
}
