package appliance_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/ldafwd/ldafwd/appliance/demo"
	"github.com/ldafwd/ldafwd/classifier"
	"github.com/ldafwd/ldafwd/dataplane"
	"github.com/ldafwd/ldafwd/model"
	"github.com/ldafwd/ldafwd/synopsis"
	"github.com/rs/zerolog"
)

// TestEdgeCheckProperty draws congested segments (5–50 % loss, uniform
// or bursty, a 1–30 ms queue, packets held back across End markers, now
// and then duplicates, one or two control copies) with a control budget
// that leaves the RDA out, so that lossy lines rest on the edge check:
// every LDA line that claims its loss has the simulation's exact loss.
// EDGE_PROPERTY_SEEDS sets how many seeds (8 by default).
func TestEdgeCheckProperty(t *testing.T) {
	n := 8
	if s := os.Getenv("EDGE_PROPERTY_SEEDS"); s != "" {
		n, _ = strconv.Atoi(s)
	}
	if raceEnabled {
		n = 2
	}
	edged, claimed := 0, 0
	for seed := uint64(1); seed <= uint64(n); seed++ {
		if one := os.Getenv("EDGE_PROPERTY_SEED"); one != "" && one != fmt.Sprint(seed) {
			continue
		}
		r := rand.New(rand.NewPCG(seed, 0xed6e))
		rate := 0.05 + 0.45*r.Float64()
		var loss model.Loss
		desc := ""
		if r.IntN(3) == 0 {
			loss, _ = model.NewBurstyLoss(rate, float64(2+r.IntN(10)))
			desc = fmt.Sprintf("bursty loss %.3f", rate)
		} else {
			loss, _ = model.NewUniformLoss(rate)
			desc = fmt.Sprintf("uniform loss %.3f", rate)
		}
		base := 1e6 + 29e6*r.Float64()
		delay, _ := model.NewUniform(base, base*(1.05+0.2*r.Float64()))
		cl, _ := classifier.NewClassifierFromSpecs(nil)
		rda := synopsis.DefaultRDAConfig()
		cfg := demo.Config{
			Duration: 3 * time.Second, Interval: 200 * time.Millisecond, Delay: delay, Loss: loss, Rate: 5_000 + float64(r.IntN(10_000)), Seed: seed, Flows: 50,
			ReorderProb: 0.02 * r.Float64(), ReorderDepth: 1 + r.IntN(40), ReorderHold: time.Duration(1+r.IntN(5)) * time.Millisecond,
			Syn:        dataplane.SynConfig{LDA: synopsis.DefaultLDAConfig(), RDA: &rda, Classes: cl.NumClasses()},
			Classifier: cl, Insecure: true, Conf: 0.98, ControlCopies: 1 + r.IntN(2), BudgetBytes: 16 << 10, AdaptLDA: true, AdaptRDA: true, SimulatedTime: true,
			Log: zerolog.Nop(),
		}
		if r.IntN(4) == 0 {
			cfg.DupProb = 0.001 + 0.005*r.Float64()
			desc += fmt.Sprintf(", dup %.4f", cfg.DupProb)
		}
		desc += fmt.Sprintf(", delay %.1f ms, reorder %.4f×%d, %d copies, %.0f pps", base/1e6, cfg.ReorderProb, cfg.ReorderDepth, cfg.ControlCopies, cfg.Rate)
		lines, sum := demoLinesSum(t, cfg)
		// The simulated segment lets a packet it holds back go once
		// later packets overtook it: after the traffic's last packet one
		// may come out intervals later. The appliance rightly counts it
		// lost (not there by the end of the next interval), the
		// simulation's truth does not: the last interval with traffic is
		// not held to it.
		var last int64
		for _, l := range lines {
			if l.Sent > 0 {
				last = max(last, l.Interval)
			}
		}
		n, wrong := 0, 0
		for _, l := range lines {
			if l.Synopsis != "lda" || l.Flow != "" || l.Direction != "a>b" || !l.LossValid || l.Interval == last {
				continue
			}
			claimed++
			if l.Extra["loss_verified_by"] == "edges" {
				edged++
				n++
			}
			if l.TrueLost == nil || l.Lost != *l.TrueLost {
				wrong++
				t.Errorf("seed %d (%s): interval %d claims lost %d, true %v (%v, edge check %v)", seed, desc, l.Interval, l.Lost, deref(l.TrueLost), l.Extra["loss_verified_by"], l.Extra["edge_check"])
			}
		}
		t.Logf("seed %d (%s): %d lines' loss verified by the edges, %d wrong; truth too late %d", seed, desc, n, wrong, sum.TruthTooLate)
	}
	if n >= 8 && edged == 0 {
		t.Errorf("no line verified by the edges over %d seeds (%d claimed): the check went untested", n, claimed)
	}
}
