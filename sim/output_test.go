package sim

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func fp(v float64) *float64 { return &v }
func bp(v bool) *bool       { return &v }

// claimPoints are hand-made points around every claim's limit.
func claimPoints(lowErr, highErr, stdErr, ldaErr, probeErr float64) []Point {
	var pts []Point
	for i, s := range []string{"weibull β=0.6", "pareto β=3"} {
		pts = append(pts,
			Point{Experiment: "fig4", Series: s, Kind: "lda", LossRate: 5e-4, Runs: 10, MeanRelErr: fp(lowErr), StddevRelErr: fp(stdErr), StddevRuns: 10, LossExact: bp(true)},
			Point{Experiment: "fig4", Series: s, Kind: "lda", LossRate: 0.001, Runs: 10, MeanRelErr: fp(1), StddevRelErr: fp(stdErr), StddevRuns: 10, LossExact: bp(true)},                         // not < 0.1 %: not checked
			Point{Experiment: "fig4", Series: s, Kind: "lda", LossRate: 0.2, Runs: 10, MeanRelErr: fp(highErr), StddevRelErr: fp(stdErr), StddevRuns: 10, BoundMisses: 1 - i, LossExact: bp(true)}, // 1 miss in 60 runs
		)
	}
	pts = append(pts,
		Point{Experiment: "fig6", Kind: "lda", LossRate: 0.01, MeanRelErr: fp(ldaErr), LossExact: bp(true)},
		Point{Experiment: "fig6", Kind: "probe", Config: "poisson 144 Hz", LossRate: 0.01, MeanRelErr: fp(probeErr)},
		Point{Experiment: "fig6", Kind: "probe", Config: "poisson 7 Hz", LossRate: 0.01, MeanRelErr: fp(ldaErr)}, // other rates ignored
		Point{Experiment: "fig6", Kind: "lda", LossRate: 0.05, MeanRelErr: fp(1)},                                // above 1 %: ignored
	)
	return pts
}

func TestCheckClaims(t *testing.T) {
	verdicts := func(cs []Claim) map[string]bool {
		m := map[string]bool{}
		for _, c := range cs {
			m[c.Name] = c.Pass
		}
		return m
	}
	good := verdicts(CheckClaims(claimPoints(0.0029, 0.039, 0.099, 0.01, 0.1), 0.98))
	for _, n := range []string{"fig4-mean-low-loss", "fig4-mean-20pct-loss", "fig4-stddev-weibull", "fig6-lda-vs-144hz", "lda-loss-exact", "lda-bound-coverage"} {
		if pass, ok := good[n]; !ok || !pass {
			t.Errorf("claim %s: present %v pass %v, want a pass", n, ok, pass)
		}
	}
	bad := verdicts(CheckClaims(claimPoints(0.0031, 0.041, 0.101, 0.01, 0.099), 0.98))
	for n, pass := range bad {
		if pass && n != "lda-loss-exact" && n != "lda-bound-coverage" {
			t.Errorf("claim %s passes just beyond its limit", n)
		}
	}
	// Bound coverage: 1 miss in 60 runs > 1 %.
	if cs := CheckClaims(claimPoints(0, 0, 0, 1, 1), 0.99); verdicts(cs)["lda-bound-coverage"] {
		t.Error("coverage 2/60 passes at 99 %")
	}
	pts := claimPoints(0, 0, 0, 0.01, 0.1)
	pts[0].LossExact = bp(false)
	pts[1].MeanRelErr = nil
	pts[0].MeanRelErr = nil
	v := verdicts(CheckClaims(pts, 0.98))
	if v["lda-loss-exact"] || v["fig4-mean-low-loss"] {
		t.Error("inexact loss or a missing estimate passes")
	}
	// Nothing to check: no claims, and JSON-safe values always.
	if cs := CheckClaims(nil, 0.98); len(cs) != 0 {
		t.Errorf("claims from no points: %v", cs)
	}
	for _, c := range CheckClaims(pts, 0.98) {
		if _, err := json.Marshal(c); err != nil {
			t.Errorf("claim %s: %v", c.Name, err)
		}
	}
}

func samplePoints(t *testing.T) []Point {
	t.Helper()
	o := DefaultOptions()
	o.Packets, o.Runs, o.Losses = 20_000, 2, []float64{0.001, 0.1}
	var pts []Point
	for _, e := range Experiments {
		sc, err := Build(e, o)
		if err != nil {
			t.Fatal(err)
		}
		var r Runner
		for _, s := range sc {
			p, err := r.Run(t.Context(), s)
			if err != nil {
				t.Fatal(err)
			}
			pts = append(pts, p...)
		}
	}
	return pts
}

func TestWriters(t *testing.T) {
	pts := samplePoints(t)
	var tab bytes.Buffer
	if err := WriteTable(&tab, pts); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{Titles["fig4"], Titles["fig6"], "probes 144 Hz", "LDA 2 banks (0.005, 0.1)", "98% bound %"} {
		if !strings.Contains(tab.String(), want) {
			t.Errorf("table lacks %q", want)
		}
	}

	var sum bytes.Buffer
	if err := WriteSummary(&sum, pts); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Summary fig4", "weibull β=0.6", "probes 144 Hz", "loss 0.001–0.001", "loss 0.1–0.1"} {
		if !strings.Contains(sum.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, sum.String())
		}
	}

	var c bytes.Buffer
	if err := WriteCSV(&c, pts); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&c).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != len(pts)+1 || len(rows[0]) != len(CSVHeader) {
		t.Fatalf("csv: %d rows of %d columns", len(rows), len(rows[0]))
	}
	// The header names are the JSON names: a row and its JSON agree.
	js, _ := json.Marshal(pts[0])
	var m map[string]any
	json.Unmarshal(js, &m)
	for i, h := range CSVHeader {
		v, ok := m[h]
		if !ok {
			if rows[1][i] != "" {
				t.Errorf("csv %s = %q but JSON omits it", h, rows[1][i])
			}
			continue
		}
		if f, isNum := v.(float64); isNum && rows[1][i] != "" {
			var g float64
			if _, err := fmtSscan(rows[1][i], &g); err != nil || math.Abs(f-g) > 1e-9*math.Abs(f) {
				t.Errorf("csv %s = %q, JSON %v", h, rows[1][i], f)
			}
		}
	}

	dir := t.TempDir()
	files, err := WritePlots(dir, pts)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 3*3 {
		t.Fatalf("%d plots", len(files))
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil || !bytes.HasPrefix(b, []byte("\x89PNG")) {
			t.Errorf("%s: not a PNG (%v)", f, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "fig6_mean.png")); err != nil {
		t.Error(err)
	}
	// A single loss rate still plots (log axes need a range).
	if _, err := WritePlots(t.TempDir(), pts[:1]); err != nil {
		t.Error(err)
	}
}

func fmtSscan(s string, f *float64) (int, error) { return fmt.Sscan(s, f) }
