package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// simRun runs `ldafwd sim` with a tiny interval and returns stdout.
func simRun(t *testing.T, args ...string) string {
	t.Helper()
	base := []string{"--packets", "20000", "--runs", "2"}
	// pflag appends repeated slice flags, so default the losses only when
	// the test does not set them.
	if !strings.Contains(strings.Join(args, " "), "--losses") {
		base = append(base, "--losses", "0.01,0.1")
	}
	var out, errb bytes.Buffer
	if err := simMain(context.Background(), append(base, args...), &out, &errb); err != nil {
		t.Fatalf("sim %q: %v\n%s", args, err, errb.String())
	}
	return out.String()
}

// simJSON parses JSON lines into objects by type.
func simJSON(t *testing.T, s string) (pts, claims []map[string]any) {
	t.Helper()
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("not a JSON line: %q", sc.Text())
		}
		switch m["type"] {
		case "sim":
			pts = append(pts, m)
		case "claim":
			claims = append(claims, m)
		default:
			t.Fatalf("line of type %v", m["type"])
		}
	}
	return pts, claims
}

func TestSimCommandJSON(t *testing.T) {
	pts, claims := simJSON(t, simRun(t, "--experiment", "fig4,fig6", "--format", "json"))
	// fig4: 4 distributions × 2 losses; fig6: (LDA + 4 probe rates) × 2.
	if len(pts) != 8+10 {
		t.Fatalf("%d points", len(pts))
	}
	for _, p := range pts {
		for _, k := range []string{"experiment", "series", "method", "loss_rate", "packets", "runs", "true_mean_ns",
			"true_stddev_ns", "samples", "mean_rel_err", "stddev_rel_err", "bound_rel"} {
			if _, ok := p[k]; !ok && !(p["kind"] == "probe" && p["method"] == "probes 1 Hz") {
				t.Errorf("point lacks %q: %v", k, p)
			}
		}
		if p["packets"].(float64) != 20000 || p["runs"].(float64) != 2 {
			t.Errorf("packets/runs not applied: %v", p)
		}
		// --mean default 0.2 µs.
		if m := p["true_mean_ns"].(float64); math.Abs(m-200) > 40 {
			t.Errorf("true mean %g ns", m)
		}
	}
	if len(claims) == 0 {
		t.Error("no claims checked by default")
	}
}

func TestSimCommandTable(t *testing.T) {
	out := simRun(t, "--experiment", "fig5", "--claims=false")
	for _, want := range []string{"Fig. 5", "LDA 2 banks (0.005, 0.1)", "LDA 4 banks", "mean err %"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "PASS") || strings.Contains(out, "FAIL") {
		t.Error("--claims=false still printed claims")
	}
	out = simRun(t, "--experiment", "fig4")
	if !strings.Contains(out, "Paper claims") {
		t.Errorf("claims missing from the table:\n%s", out)
	}
}

// TestSimCommandFlags: every option changes what comes out.
func TestSimCommandFlags(t *testing.T) {
	one := func(args ...string) map[string]any {
		pts, _ := simJSON(t, simRun(t, append([]string{"--format", "json", "--claims=false"}, args...)...))
		if len(pts) == 0 {
			t.Fatalf("%q: no points", args)
		}
		return pts[0]
	}
	base := one("--experiment", "fig4")
	if c := one("--experiment", "fig4", "--counters", "256"); !strings.HasPrefix(c["config"].(string), "256@") {
		t.Errorf("--counters: config %v", c["config"])
	}
	if c := one("--experiment", "fig4", "--mean", "50us"); math.Abs(c["true_mean_ns"].(float64)-50000) > 10000 {
		t.Errorf("--mean: true mean %v", c["true_mean_ns"])
	}
	if c := one("--experiment", "fig4", "--alpha", "0.01"); c["config"] == base["config"] {
		t.Errorf("--alpha: config unchanged %v", c["config"])
	}
	if c := one("--experiment", "fig4", "--seed", "7"); c["mean_ns"] == base["mean_ns"] {
		t.Error("--seed: same estimate")
	}
	if c := one("--experiment", "fig4", "--workers", "1"); c["mean_ns"] != base["mean_ns"] {
		t.Error("--workers changed the result")
	}
	if c := one("--experiment", "fig4", "--runs", "3"); c["runs"].(float64) != 3 {
		t.Errorf("--runs: %v", c["runs"])
	}
	if c := one("--experiment", "fig6", "--burst", "7"); !strings.Contains(c["loss_model"].(string), "burst=7") {
		t.Errorf("--burst: %v", c["loss_model"])
	}
	pts, _ := simJSON(t, simRun(t, "--format", "json", "--experiment", "fig6", "--probe-rates", "50", "--losses", "0.02"))
	if len(pts) != 2 || pts[1]["method"] != "probes 50 Hz" || pts[0]["loss_rate"].(float64) != 0.02 {
		t.Errorf("--probe-rates/--losses: %v", pts)
	}
	pts, _ = simJSON(t, simRun(t, "--format", "json", "--experiment", "fig6", "--probe-rates", "50", "--losses", "0.02",
		"--design-losses", "0.001,0.05"))
	if len(pts) != 2 || pts[0]["method"] != "LDA 2 banks (0.001, 0.05)" {
		t.Errorf("--design-losses not used by fig6: %v", pts)
	}
	_, claims := simJSON(t, simRun(t, "--format", "json", "--experiment", "fig4", "--confidence", "0.9"))
	found := false
	for _, c := range claims {
		found = found || strings.Contains(c["paper"].(string), "90 %")
	}
	if !found {
		t.Error("--confidence not used by the bound")
	}
}

func TestSimCommandCustom(t *testing.T) {
	pts, _ := simJSON(t, simRun(t, "--format", "json", "--experiment", "custom", "--delay", "weibull:mean=50us,shape=0.7",
		"--loss-kind", "bursty", "--design-losses", "0.001,0.01", "--probe-rates", "100"))
	// 2 losses × (tuned, design, default, 1 probe rate).
	if len(pts) != 8 {
		t.Fatalf("%d points", len(pts))
	}
	p := pts[1]
	if p["method"] != "LDA 2 banks (0.001, 0.01)" || !strings.HasPrefix(p["loss_model"].(string), "bursty:") ||
		math.Abs(p["true_mean_ns"].(float64)-50000) > 5000 || pts[2]["method"] != "LDA appliance default" {
		t.Errorf("custom point %v", p)
	}
	for _, args := range [][]string{
		{"--experiment", "custom", "--delay", "weibull:mean=50us"},
		{"--experiment", "custom", "--loss-kind", "gilbert"},
		{"--experiment", "custom", "--design-losses", "2"},
	} {
		var out, errb bytes.Buffer
		if err := simMain(context.Background(), args, &out, &errb); err == nil {
			t.Errorf("%q accepted", args)
		}
	}
}

func TestSimCommandFiles(t *testing.T) {
	dir := t.TempDir()
	csvPath, plotDir, rep := filepath.Join(dir, "s.csv"), filepath.Join(dir, "plots"), filepath.Join(dir, "r.jsonl")
	simRun(t, "--experiment", "fig6", "--csv", csvPath, "--plot", plotDir, "--report", rep)
	f, err := os.Open(csvPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil || len(rows) != 1+10 {
		t.Fatalf("csv: %d rows, %v", len(rows), err)
	}
	if _, err := os.Stat(filepath.Join(plotDir, "fig6_mean.png")); err != nil {
		t.Errorf("--plot: %v", err)
	}
	b, err := os.ReadFile(rep)
	if err != nil {
		t.Fatal(err)
	}
	pts, _ := simJSON(t, string(b))
	if len(pts) != 10 {
		t.Errorf("--report: %d points", len(pts))
	}
}

func TestSimCommandQuick(t *testing.T) {
	var out, errb bytes.Buffer
	// --quick sets N, runs and losses unless given; keep N tiny here.
	if err := simMain(context.Background(), []string{"--quick", "--packets", "20000", "--experiment", "fig4"}, &out, &errb); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "Quick run") || strings.Contains(out.String(), "Paper claims") {
		t.Errorf("quick output:\n%s", out.String())
	}
	if n := strings.Count(out.String(), "LDA 1 bank tuned"); n != 4*len(quickLosses) {
		t.Errorf("quick: %d rows, want %d", n, 4*len(quickLosses))
	}
}

func TestSimCommandErrors(t *testing.T) {
	for _, args := range [][]string{
		{"--experiment", "fig9"},
		{"--experiment", ""},
		{"--counters", "1000"},
		{"--packets", "0"},
		{"--runs", "0"},
		{"--mean", "soon"},
		{"--mean", "-1us"},
		{"--losses", "1.5"},
		{"--alpha", "0"},
		{"--burst", "0"},
		{"--probe-rates", "0"},
		{"--confidence", "1"},
		{"--workers", "-1"},
		{"--format", "xml"},
		{"--nonsense"},
		{"extra"},
	} {
		var out, errb bytes.Buffer
		if err := simMain(context.Background(), args, &out, &errb); err == nil {
			t.Errorf("%q accepted", args)
		}
	}
	var out, errb bytes.Buffer
	if err := simMain(context.Background(), []string{"--help"}, &out, &errb); err != nil {
		t.Errorf("--help: %v", err)
	}
}

// TestSimProgress: a terminal stderr shows which point runs, of how many,
// with an ETA once one is done; --quiet and a plain stderr show none.
func TestSimProgress(t *testing.T) {
	args := []string{"--packets", "20000", "--runs", "1", "--losses", "0.01,0.1", "--experiment", "fig5", "--claims=false"}
	var out bytes.Buffer
	var tty fakeTTY
	if err := simMain(context.Background(), args, &out, &tty); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"sim: fig5: point 1/", "sim: fig5: point 2/", "ETA "} {
		if !strings.Contains(tty.String(), want) {
			t.Errorf("progress lacks %q: %q", want, tty.String())
		}
	}
	var quiet fakeTTY
	var plain bytes.Buffer
	simMain(context.Background(), append(args, "--quiet"), &out, &quiet)
	simMain(context.Background(), args, &out, &plain)
	for _, s := range []string{quiet.String(), plain.String()} {
		if strings.Contains(s, "point 1/") || strings.Contains(s, "\r") {
			t.Errorf("progress written: %q", s)
		}
	}
}
