package appliance_test

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/ldafwd/ldafwd/appliance/demo"
	"github.com/ldafwd/ldafwd/classifier"
	"github.com/ldafwd/ldafwd/control"
	"github.com/ldafwd/ldafwd/dataplane"
	"github.com/ldafwd/ldafwd/model"
	"github.com/ldafwd/ldafwd/report"
	"github.com/ldafwd/ldafwd/synopsis"
	"github.com/rs/zerolog"
)

// isRowsRequest says whether f is a fragment of an LDA rows request: a
// part request (after the 12-byte exchange header, magic 0xA7) of
// version 2.
func isRowsRequest(f *control.Frame) bool {
	b := f.Payload
	return f.Type == control.TypeRequest && len(b) > control.ExchangeHeaderLen+1 &&
		b[control.ExchangeHeaderLen] == 0xA7 && b[control.ExchangeHeaderLen+1] == 2
}

// runRowsDemo runs the demo at 20 000 packets a second with a share loss
// of the data lost on the segment, the default recorded LDA (8 × 1024
// rows) shipped folded to each interval's traffic within a 64 KB budget,
// and returns the a>b LDA lines. The delays are a full queue's: about
// 60 µs, 1 % of them 30 µs lower (a thin tail, as a tbf queue kept full
// gives). requests wraps #2's segment port (its requests).
func runRowsDemo(t *testing.T, seed uint64, loss float64, requests *exchangeDropper) []report.Interval {
	t.Helper()
	full, _ := model.NewUniform(59_000, 61_000)
	tail, _ := model.NewUniform(25_000, 35_000)
	delay, _ := model.NewMix(0.01, tail, full)
	lm, err := model.NewUniformLoss(loss)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := classifier.NewClassifierFromSpecs(nil)
	if err != nil {
		t.Fatal(err)
	}
	rda := synopsis.DefaultRDAConfig()
	cfg := demo.Config{
		Duration: 3 * time.Second, Interval: 250 * time.Millisecond, Delay: delay, Loss: lm, Rate: 20_000, Seed: seed,
		Syn:        dataplane.SynConfig{LDA: synopsis.RecordLDAConfig(), RDA: &rda, Classes: cl.NumClasses()},
		Classifier: cl, Insecure: true, Conf: 0.98, ControlCopies: 2, BudgetBytes: 64 << 10, AdaptLDA: true, AdaptRDA: true, SimulatedTime: true,
		Log: zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel),
	}
	lines := runExchangeDemo(t, cfg, "lda", requests)
	for _, r := range lines {
		t.Logf("%d valid=%v delay_valid=%v lost=%d/%d samples=%d mean=%.1f±%.1f true=%s fetch=%v shipped=%v (%v samples) rows=%v tries=%v reply=%vB %s", r.Interval, r.Valid, r.DelayValid, r.Lost, r.Sent, r.Samples,
			r.MeanNs, r.MeanCINs, derefF(r.TrueMeanNs), r.Extra["lda_rows_fetch"], r.Extra["lda_rows_fetch_shipped"], r.Extra["lda_rows_fetch_shipped_samples"],
			r.Extra["lda_rows_fetch_rows"], r.Extra["lda_rows_fetch_tries"], r.Extra["lda_rows_fetch_reply_bytes"], r.Reason)
	}
	return lines
}

// TestLDAFetchRows: at 40 % loss the receiver asks for the interval's LDA
// at more rows, and the line's sample grows at least by half against
// what the shipped shape gave (the same packets, folded coarser); a
// valid line holds its mean within the bound against the demo's exact
// truth at least as often as the bound's confidence says; with every
// rows request lost the lines pair with the shipped LDA at the deadline
// ("no reply"), their sample the shipped one. Without loss nothing is
// asked.
func TestLDAFetchRows(t *testing.T) {
	skipSimSlowUnderRace(t)
	t.Run("answered", func(t *testing.T) {
		fetched, within, valid, pointed := 0, 0, 0, 0
		var before, after uint64
		for _, r := range runRowsDemo(t, 3, 0.4, nil) {
			// The RDA is recorded here: a loss the LDA cannot verify
			// points at the rda line, not at --synopsis all.
			if strings.Contains(r.Reason, synopsis.CrossingRDAAdvice) {
				t.Errorf("%d: %q advises --synopsis all while the RDA is recorded", r.Interval, r.Reason)
			}
			if strings.Contains(r.Reason, "this interval's rda line says why") || r.Extra["loss_verified_by"] == "edges" {
				pointed++
			}
			if r.Extra["lda_rows_fetch"] == "complete" {
				fetched++
				s, _ := r.Extra["lda_rows_fetch_shipped_samples"].(uint64)
				before += s
				after += r.Samples
				if r.Samples < s {
					t.Errorf("%d: %d samples after the fetch, %d shipped: a finer fold lost buckets", r.Interval, r.Samples, s)
				}
			}
			if r.DelayValid && r.TrueMeanNs != nil {
				valid++
				if math.Abs(r.MeanNs-*r.TrueMeanNs) <= r.MeanCINs {
					within++
				}
			}
		}
		if fetched < 4 {
			t.Fatalf("%d lines fetched more rows at 40 %% loss", fetched)
		}
		if 2*after < 3*before {
			t.Errorf("fetched lines: %d samples against %d shipped, want ≥ 1.5×", after, before)
		}
		if valid == 0 || float64(within) < 0.85*float64(valid) {
			t.Errorf("%d of %d valid lines within their bound", within, valid)
		}
		if pointed == 0 {
			t.Error("no line at 40 % loss points at its rda line or has its loss verified by the edge check (the LDA's crossing check alone cannot verify such a loss)")
		}
		t.Logf("%d lines fetched: %d samples against %d shipped; %d of %d valid lines within the bound; %d point at their rda line or were verified by the edge check", fetched, after, before, within, valid, pointed)
	})
	t.Run("never answered", func(t *testing.T) {
		d := &exchangeDropper{drop: isRowsRequest}
		noReply := 0
		for _, r := range runRowsDemo(t, 3, 0.4, d) {
			switch r.Extra["lda_rows_fetch"] {
			case nil:
			case "no reply", "stopped":
				noReply++
				if s, _ := r.Extra["lda_rows_fetch_shipped_samples"].(uint64); r.Samples != s {
					t.Errorf("%d: no reply, yet %d samples against %d shipped", r.Interval, r.Samples, s)
				}
				if r.Extra["lda_rows_fetch_reply_bytes"] != 0 {
					t.Errorf("%d: no reply, yet %v reply bytes", r.Interval, r.Extra["lda_rows_fetch_reply_bytes"])
				}
			default:
				t.Errorf("%d: fetch %v with every rows request lost", r.Interval, r.Extra["lda_rows_fetch"])
			}
		}
		if d.n.Load() == 0 || noReply == 0 {
			t.Errorf("%d requests dropped, %d lines without a reply: the fault went untested", d.n.Load(), noReply)
		}
	})
	t.Run("no loss", func(t *testing.T) {
		for _, r := range runRowsDemo(t, 3, 0, nil) {
			if r.Extra["lda_rows_fetch"] != nil {
				t.Errorf("%d: fetched more rows (%v) without loss", r.Interval, r.Extra["lda_rows_fetch"])
			}
		}
	})
}
