package sim

import (
	"bytes"
	"math"
	"path/filepath"
	"strings"
	"testing"
)

// TestLDSFig10Accuracy: on Pareto flow sizes with the default dimensioning
// (4 rows, ≈ 2 flows per cell) every flow gets a valid estimate, flows of
// ≥ 500 packets have a median relative error ≤ 2 % (the bar), and
// more cells give smaller errors (Fig. 10's ordering of the three sizes).
func TestLDSFig10Accuracy(t *testing.T) {
	n, runs := 12_000, 2
	if testing.Short() {
		n, runs = 6_000, 2
	}
	o := SynopsisOptions{Seed: 9, Workers: 2}
	_, cfgs, err := ldsFig10Configs(n)
	if err != nil {
		t.Fatal(err)
	}
	if perCell := float64(n) / float64(cfgs[1].Rows*cfgs[1].Cols); cfgs[1].Rows != 4 || perCell < 1.8 || perCell > 2.2 {
		t.Fatalf("default sketch %d×%d: %.2f flows per cell", cfgs[1].Rows, cfgs[1].Cols, perCell)
	}
	pooled, err := ldsRunPooled(n, runs, o, func() ([]ldsPair, error) {
		var ps []ldsPair
		for _, c := range cfgs {
			p, err := ldsNewPair(c, nil)
			if err != nil {
				return nil, err
			}
			ps = append(ps, p)
		}
		return ps, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	big := func(e *ldsFlowErr) bool { return e.packets >= 500 }
	var med [3]float64
	for p := range cfgs {
		errs, flows, invalid := ldsErrStats(pooled[p], big)
		if invalid != 0 || flows < 30 {
			t.Fatalf("sketch %d: %d flows ≥ 500 pkts, %d invalid", p, flows, invalid)
		}
		med[p] = synQuantile(errs, 0.5)
		if _, all, inv := ldsErrStats(pooled[p], func(*ldsFlowErr) bool { return true }); inv != 0 || all != n*runs {
			t.Fatalf("sketch %d: %d of %d flows invalid or missing", p, inv, all)
		}
	}
	t.Logf("median rel err, flows ≥ 500 pkts: C/10 %.4f, default %.4f, 10·C %.4f", med[0], med[1], med[2])
	if !(med[1] <= 0.02) {
		t.Errorf("default sketch: median rel err %.4f > 2 %% for flows ≥ 500 pkts", med[1])
	}
	if !(med[0] > med[1] && med[1] >= med[2]) {
		t.Errorf("error not ordered by sketch size: %v", med)
	}
}

// TestLDSFig12Weights: with weights 1/10/100 the gold class (1 % of flows)
// is measured far better than without weights and better than silver and
// bronze on the same traffic.
func TestLDSFig12Weights(t *testing.T) {
	n, runs := 12_000, 2
	if testing.Short() {
		n, runs = 6_000, 2
	}
	cfg := ldsFig12Configs(n)[0]
	flat, weighted := ldsWeightSets[0], ldsWeightSets[2] // 1/1/1, 1/10/100
	pooled, err := ldsRunPooled(n, runs, SynopsisOptions{Seed: 4, Workers: 2}, func() ([]ldsPair, error) {
		a, err := ldsNewPair(cfg, &flat)
		if err != nil {
			return nil, err
		}
		b, err := ldsNewPair(cfg, &weighted)
		return []ldsPair{a, b}, err
	})
	if err != nil {
		t.Fatal(err)
	}
	var med [2][3]float64
	for p := range 2 {
		for cl := range 3 {
			errs, flows, _ := ldsErrStats(pooled[p], func(e *ldsFlowErr) bool { return e.class == cl })
			if flows < 50 {
				t.Fatalf("class %d: %d flows", cl, flows)
			}
			med[p][cl] = synQuantile(errs, 0.5)
		}
	}
	t.Logf("median rel err all flows, bronze/silver/gold: unweighted %.4f, weighted %.4f", med[0], med[1])
	if !(med[1][2] < med[0][2]/3) {
		t.Errorf("gold weighted %.4f not below a third of unweighted %.4f", med[1][2], med[0][2])
	}
	if !(med[1][2] < med[1][1] && med[1][1] < med[1][0]) {
		t.Errorf("weighted errors not ordered gold < silver < bronze: %v", med[1])
	}
}

func TestRunSynopsisExperimentLDS(t *testing.T) {
	for _, name := range []string{"lds-fig10", "lds-fig12"} {
		var out bytes.Buffer
		o := SynopsisOptions{Packets: 2000, Runs: 1, Seed: 1, PlotDir: t.TempDir()}
		if testing.Short() {
			o.Packets, o.PlotDir = 1000, "" // plotting is slow under -race
		}
		if err := RunSynopsisExperiment(name, o, &out); err != nil {
			t.Fatal(err)
		}
		if o.PlotDir != "" {
			if pngs, _ := filepath.Glob(filepath.Join(o.PlotDir, name+"_*.png")); len(pngs) != 1 {
				t.Fatalf("%s: plots %v", name, pngs)
			}
		}
		s := out.String()
		if !strings.HasPrefix(s, "# "+name) || strings.Count(s, "\n") < 10 {
			t.Fatalf("%s table:\n%s", name, s)
		}
	}
}

func TestSynQuantile(t *testing.T) {
	xs := []float64{1, 2, 3, 4}
	if q := synQuantile(xs, 0.5); q != 2 {
		t.Fatalf("median %v", q)
	}
	if q := synQuantile(xs, 0.95); q != 4 {
		t.Fatalf("p95 %v", q)
	}
	if !math.IsNaN(synQuantile(nil, 0.5)) {
		t.Fatal("empty quantile not NaN")
	}
}
