package analyze_test

import (
	"math"
	"sort"
	"testing"
	"time"

	"github.com/ldafwd/ldafwd/analyze"
	"github.com/ldafwd/ldafwd/analyze/analyzetest"
	"github.com/ldafwd/ldafwd/classifier"
	"github.com/ldafwd/ldafwd/report"
	"github.com/ldafwd/ldafwd/synopsis"
)

// TestRDAExact is the RDA's bar: on routed captures with 0.2 % loss,
// `analyze --synopsis rda --interval 0` with default settings gives the
// exact mean and loss.
func TestRDAExact(t *testing.T) {
	n := 200_000
	if testing.Short() {
		n = 50_000
	}
	snd, rcv, tr := captures(t, analyzetest.Config{Packets: n, Rate: float64(n) / 2, Start: time.Unix(1_700_000_000, 0),
		Flows: 300, MeanDelay: 40 * time.Microsecond, Loss: 0.002, Seed: 11, IPv6Share: 0.3, PcapNG: true, NanoPcap: true})
	out, st := run(t, snd, rcv, analyze.Config{Extra: []analyze.SynopsisFactory{analyze.RDAFactory{Config: synopsis.DefaultRDAConfig()}}, Truth: true})
	tr = tr.Within(st.RangeStartNs, st.RangeEndNs)
	if len(out) != 1 {
		t.Fatalf("%d lines", len(out))
	}
	r := out[0]
	t.Logf("truth %v; rda: lost %d mean %.3f ± %.3f valid %v %s extra %v", tr, r.Lost, r.MeanNs, r.MeanCINs, r.Valid, r.Reason, r.Extra)
	if !r.Valid || r.Lost != tr.Lost || r.Sent != tr.Sent {
		t.Fatalf("rda: valid %v lost %d sent %d, want exact %d/%d", r.Valid, r.Lost, r.Sent, tr.Lost, tr.Sent)
	}
	if e := math.Abs(r.MeanNs-tr.MeanNs) / tr.MeanNs; e > 1e-9 {
		t.Errorf("rda mean %.6f vs true %.6f: rel. error %g > 1e-9", r.MeanNs, tr.MeanNs, e)
	}
}

// TestRDAAcrossIntervalEdges: with 1 s intervals packets in flight at an
// edge are lost in one interval and extra in the next at the LDA; the RDA
// decodes them and still reports each interval's mean exactly.
func TestRDAAcrossIntervalEdges(t *testing.T) {
	snd, rcv, _ := captures(t, analyzetest.Config{Packets: 40_000, Rate: 20_000, Start: time.Unix(1_700_000_000, 700_000_000),
		Flows: 100, MeanDelay: 300 * time.Microsecond, Loss: 0.001, Seed: 12, NanoPcap: true, PcapNG: true})
	out, _ := run(t, snd, rcv, analyze.Config{Interval: time.Second, UseLDA: true, LDA: synopsis.DefaultLDAConfig(),
		Extra: []analyze.SynopsisFactory{analyze.RDAFactory{Config: synopsis.DefaultRDAConfig()}}, Truth: true})
	rdaValid := 0
	for _, r := range out {
		t.Logf("%d %s sent %d recv %d lost %d mean %.1f ±%.1f valid %v %s true %.1f", r.Interval, r.Synopsis, r.Sent, r.Received, r.Lost, r.MeanNs, r.MeanCINs, r.Valid, r.Reason, *r.TrueMeanNs)
		if r.Synopsis != "rda" || !r.Valid {
			continue
		}
		rdaValid++
		if ex, ok := r.Extra["rda_extra"]; !ok || ex == nil {
			t.Errorf("interval %d: no decoded extra count in %v", r.Interval, r.Extra)
		}
	}
	if rdaValid < 2 {
		t.Errorf("only %d valid RDA intervals", rdaValid)
	}
}

// TestLDSPerFlow is the LDS bar through analyze with default
// settings: Pareto-sized flows whose mean delays differ from flow to flow,
// about 2 flows per counter, 4 rows; median per-flow relative error ≤ 2 %
// for flows ≥ 500 packets and ≤ 0.5 % for flows ≥ 5 000 packets.
func TestLDSPerFlow(t *testing.T) {
	if testing.Short() {
		t.Skip("writes and analyzes 1.2 M packets")
	}
	const flows = 10_000 // the default --lds-flows
	cl, _ := classifier.NewClassifier(nil)
	cfg, err := synopsis.DimensionLDS(synopsis.LDSDimensioning{ExpectedFlows: flows, CellsPerFlow: 1, MaxFlows: 4 * flows})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("LDS %d rows × %d cols: %.2f flows per counter", cfg.Rows, cfg.Cols, float64(flows)/float64(cfg.Rows*cfg.Cols))
	var mid, big []float64
	lines := 0
	// Three independent captures, pooled: one holds only a handful of
	// flows ≥ 5 000 packets.
	for seed := uint64(13); seed < 16; seed++ {
		// The LDS paper's flow sizes (Pareto shape 1, scale 2.1875, Fig.
		// 10), each flow with its own mean delay.
		snd, rcv, _ := captures(t, analyzetest.Config{Rate: 1_000_000, Start: time.Unix(1_700_000_000, 0),
			Flows: flows, FlowShape: 1, FlowMinSize: 2.1875, FlowDelaySpread: 0.6, MeanDelay: 50 * time.Microsecond, Shape: 0.7,
			Seed: seed, NanoPcap: true, PcapNG: true})
		out, _ := run(t, snd, rcv, analyze.Config{Extra: []analyze.SynopsisFactory{analyze.LDSFactory{Config: cfg, Classifier: cl}}, Truth: true})
		lines += len(out)
		for _, r := range out {
			if r.Flow == "" || r.TrueMeanNs == nil || !r.Valid {
				continue
			}
			e := math.Abs(r.MeanNs-*r.TrueMeanNs) / *r.TrueMeanNs
			// Bin by the exact size the flow table counted, not by the
			// sketch's (count-min) estimate.
			size, _ := r.Extra["held_sent"].(uint64)
			switch {
			case size >= 5000:
				big = append(big, e)
			case size >= 500:
				mid = append(mid, e)
			}
		}
	}
	med := func(v []float64) float64 {
		if len(v) == 0 {
			return math.NaN()
		}
		sort.Float64s(v)
		return v[len(v)/2]
	}
	t.Logf("%d flow lines; flows 500–4999 packets: %d, median rel. err %.4f; ≥ 5000: %d, median %.4f", lines, len(mid), med(mid), len(big), med(big))
	if len(mid) < 50 || len(big) < 10 {
		t.Fatalf("too few large flows (%d, %d) for the check", len(mid), len(big))
	}
	if m := med(mid); !(m <= 0.02) {
		t.Errorf("median per-flow error %.4f > 2 %% for flows of 500–4999 packets", m)
	}
	if m := med(big); !(m <= 0.005) {
		t.Errorf("median per-flow error %.4f > 0.5 %% for flows ≥ 5000 packets", m)
	}
}

var _ = report.Interval{}

// TestMicroburst: a burst of losses in a known 5 ms window over a quiet
// background is found from the LDA's single-loss buckets, in the right
// place (Varghese slides).
func TestMicroburst(t *testing.T) {
	start := time.Unix(1_700_000_000, 0)
	snd, rcv, _ := captures(t, analyzetest.Config{Packets: 50_000, Rate: 50_000, Start: start, Flows: 100,
		MeanDelay: 10 * time.Microsecond, Shape: 0.8, Loss: 0.00005, Seed: 21, NanoPcap: true, PcapNG: true,
		BurstFrom: 400 * time.Millisecond, BurstTo: 405 * time.Millisecond, BurstLoss: 0.1})
	// Counters sized so that buckets usually lose at most one packet.
	lda := synopsis.LDAConfig{Banks: []synopsis.BankConfig{{Rows: 4096, SampleLog2: 0}}}
	out, _ := run(t, snd, rcv, analyze.Config{UseLDA: true, LDA: lda, MicroburstGapNs: 1_000_000, MicroburstMin: 5})
	if len(out) != 1 {
		t.Fatalf("%d lines", len(out))
	}
	mbs, _ := out[0].Extra["microbursts"].([]analyze.Microburst)
	t.Logf("lost %d; microbursts %+v", out[0].Lost, mbs)
	lo, hi := uint64(start.Add(400*time.Millisecond).UnixNano()), uint64(start.Add(405*time.Millisecond).UnixNano())
	found := false
	for _, m := range mbs {
		if m.Losses >= 5 && m.StartNs >= lo-1_000_000 && m.EndNs <= hi+1_000_000 {
			found = true
		} else if m.Losses >= 5 {
			t.Errorf("microburst outside the burst window: %+v", m)
		}
	}
	if !found {
		t.Errorf("the 5 ms loss burst at +400 ms was not found: %+v", mbs)
	}
}
