package appliance_test

import (
	"math"
	"testing"

	"github.com/ldafwd/ldafwd/appliance/demo"
	"github.com/ldafwd/ldafwd/classifier"
	"github.com/ldafwd/ldafwd/control"
	"github.com/ldafwd/ldafwd/dataplane"
	"github.com/ldafwd/ldafwd/model"
	"github.com/ldafwd/ldafwd/report"
	"github.com/ldafwd/ldafwd/synopsis"
)

// synopsesLost runs the demo on simulated time while the segment loses
// every LDA fragment (and parity fragment) of two intervals (a partial
// bundle each) and every fragment of a third, as a congested queue does,
// and 2 % of the data; with dropReplies it loses the LDA parts fetched on
// demand too (their replies). It returns the lines, what was lost and
// the intervals it hit. The losses come after countsCalm intervals in
// order: the loss from the End markers' counts alone stands only once the
// receiver has checked enough intervals for packets crossing their End
// markers (18 at the default confidence).
func synopsesLost(t *testing.T, dropReplies bool) ([]report.Interval, map[uint64]string, *faultPort) {
	const countsCalm = 22
	lose := map[uint64]string{countsCalm + 4: "lda", countsCalm + 5: "lda", countsCalm + 7: "all"}
	fp := &faultPort{decide: func(f *control.Frame, first uint64) fault {
		if dropReplies && lose[f.Interval-first] != "" && f.Type == control.TypeReply && f.Kind == control.KindLDA {
			return drop
		}
		switch lose[f.Interval-first] {
		case "lda":
			if (f.Type == control.TypeFragment || f.Type == control.TypeParity) && f.Kind == control.KindLDA {
				return drop
			}
		case "all":
			if f.Type == control.TypeFragment || f.Type == control.TypeParity {
				return drop
			}
		}
		return pass
	}}
	delay, _ := model.NewWeibull(30_000, 0.7)
	loss, _ := model.NewUniformLoss(0.02)
	cl, err := classifier.NewClassifierFromSpecs([]string{"c2=dscp:cs2"})
	if err != nil {
		t.Fatal(err)
	}
	lines, _ := demoLinesSum(t, demo.Config{
		Duration: (countsCalm + 11) * faultInterval, Interval: faultInterval, Delay: delay, Loss: loss, Rate: 5_000, Seed: 3, Flows: 20,
		DSCP: []uint8{0, 16}, Syn: dataplane.SynConfig{LDA: synopsis.DefaultLDAConfig(), Classes: cl.NumClasses()},
		Classifier: cl, Insecure: true, ControlCopies: 1, SimulatedTime: true,
		WrapSegment: func(p dataplane.Port) dataplane.Port { fp.Port = p; return fp },
	})
	if len(fp.faulted) == 0 {
		t.Fatal("no control frame dropped: the test shows nothing")
	}
	return lines, lose, fp
}

// TestCountsWhenSynopsesLost: every LDA fragment of two intervals and
// every fragment of a third are lost, and so is every reply that would
// bring their LDA parts on demand. Those intervals' End markers arrive
// with their per-class counts: each class's line has no delay
// (synopsis_lost) but its sent, received and lost, exact against the
// stage's truth (loss_valid), and the other intervals are measured as
// before.
func TestCountsWhenSynopsesLost(t *testing.T) {
	lines, lose, fp := synopsesLost(t, true)
	counted := map[string]int{}
	for _, r := range lines {
		if r.Synopsis != "lda" || r.Flow != "" {
			continue
		}
		k := uint64(r.Interval)
		tl := "?"
		if r.TrueLost != nil {
			tl = fmtU(*r.TrueLost)
		}
		t.Logf("%d %s: valid %v loss_valid %v sent %d received %d lost %d (true %s) %s: %s", k, r.MEC, r.Valid, r.LossValid, r.Sent, r.Received, r.Lost, tl, r.Verdict(), r.Reason)
		if r.Valid || r.LossValid {
			if r.TrueLost == nil {
				t.Errorf("%d %s: loss marked exact without truth", k, r.MEC)
			} else if r.Lost != *r.TrueLost {
				t.Errorf("%d %s: loss marked exact, lost %d, true %d (%s)", k, r.MEC, r.Lost, *r.TrueLost, r.Reason)
			}
		}
		if !fp.faulted[k] {
			continue
		}
		if r.Valid || r.DelayValid {
			t.Errorf("%d %s: its LDA was dropped, yet a delay is claimed", k, r.MEC)
		}
		if r.ReasonCode == report.SynopsisLost.String() && r.LossValid && r.Sent > 0 {
			counted[r.MEC]++
		}
	}
	// Each faulted interval, each class: loss from the counts, exact (the
	// segment keeps order here).
	for _, mec := range []string{"all", "c2"} {
		if counted[mec] < len(lose) {
			t.Errorf("class %s: %d of the %d intervals without their LDA have their loss from the End markers", mec, counted[mec], len(lose))
		}
	}
}

func fmtU(v uint64) string {
	const digits = "0123456789"
	if v == 0 {
		return "0"
	}
	var b []byte
	for ; v > 0; v /= 10 {
		b = append([]byte{digits[v%10]}, b...)
	}
	return string(b)
}

// TestLDAPartFetchedWhenLost: the same losses, but the receiver's requests
// for the lost LDA parts are answered: every class's line of the three
// intervals has its delay again (lda_fetch complete), held to the truth
// like any other line, and so valid as often as the intervals around.
func TestLDAPartFetchedWhenLost(t *testing.T) {
	lines, _, fp := synopsesLost(t, false)
	fetched := 0
	for _, r := range lines {
		if r.Synopsis != "lda" || r.Flow != "" {
			continue
		}
		k := uint64(r.Interval)
		t.Logf("%d %s: valid %v delay_valid %v lost %d mean %.0f ± %.0f (true %s) lda_fetch %v tries %v: %s", k, r.MEC, r.Valid, r.DelayValid, r.Lost, r.MeanNs, r.MeanCINs,
			derefF(r.TrueMeanNs), r.Extra["lda_fetch"], r.Extra["lda_fetch_tries"], r.Reason)
		if (r.Valid || r.LossValid) && (r.TrueLost == nil || r.Lost != *r.TrueLost) {
			t.Errorf("%d %s: loss marked exact, lost %d, true %v", k, r.MEC, r.Lost, deref(r.TrueLost))
		}
		if (r.Valid || r.DelayValid) && (r.TrueMeanNs == nil || math.Abs(r.MeanNs-*r.TrueMeanNs) > r.MeanCINs+1e-6**r.TrueMeanNs) {
			t.Errorf("%d %s: delay marked valid, mean %.0f ± %.0f, true %s", k, r.MEC, r.MeanNs, r.MeanCINs, derefF(r.TrueMeanNs))
		}
		if !fp.faulted[k] {
			continue
		}
		if r.Extra["lda_fetch"] != "complete" {
			t.Errorf("%d %s: its LDA part was lost and not fetched (lda_fetch %v): %s", k, r.MEC, r.Extra["lda_fetch"], r.Reason)
			continue
		}
		if r.DelayValid {
			fetched++
		}
	}
	if fetched < 2*len(fp.faulted)-1 {
		t.Errorf("%d of the %d lost LDA parts fetched carry a valid delay", fetched, 2*len(fp.faulted))
	}
}
