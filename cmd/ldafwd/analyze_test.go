package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ldafwd/ldafwd/analyze"
	"github.com/ldafwd/ldafwd/analyze/analyzetest"
)

func writeCaptures(t *testing.T, cfg analyzetest.Config) (string, string, analyzetest.Truth) {
	t.Helper()
	dir := t.TempDir()
	var sb, rb bytes.Buffer
	tr, err := analyzetest.Write(cfg, &sb, &rb)
	if err != nil {
		t.Fatal(err)
	}
	s, r := filepath.Join(dir, "s.pcap"), filepath.Join(dir, "r.pcap")
	os.WriteFile(s, sb.Bytes(), 0o644)
	os.WriteFile(r, rb.Bytes(), 0o644)
	return s, r, tr
}

// TestAnalyzeCommand runs `ldafwd analyze` end to end and checks the JSON
// report contract (docs/reports.md) field by field, and that --report gets the same lines.
func TestAnalyzeCommand(t *testing.T) {
	s, r, tr := writeCaptures(t, analyzetest.Config{Packets: 20_000, Rate: 20_000, Start: time.Unix(1_700_000_000, 0),
		MeanDelay: 30 * time.Microsecond, Loss: 0.002, Seed: 5, IPv6Share: 0.5})
	rep := filepath.Join(t.TempDir(), "rep.jsonl")
	var out, errb bytes.Buffer
	err := analyzeMain([]string{"--sender", s, "--receiver", r, "--interval", "0", "--truth", "--format", "json",
		"--report", rep, "--mec", "web=dport:80|443", "--direction", "x>y"}, &out, &errb)
	if err != nil {
		t.Fatalf("analyze: %v\n%s", err, errb.String())
	}
	stdout := append([]byte(nil), out.Bytes()...)
	if !bytes.Contains(stdout, []byte(`"direction":"x>y"`)) {
		t.Errorf("'>' must not be escaped in JSON lines: %s", stdout)
	}
	lines, summaries := 0, 0
	var lost uint64
	mecs := map[string]bool{}
	sc := bufio.NewScanner(&out)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("not JSON: %q", sc.Text())
		}
		if m["type"] == "analyze_summary" {
			summaries++
			tr = tr.Within(uint64(m["range_start_ns"].(float64)), uint64(m["range_end_ns"].(float64)))
			continue
		}
		for _, k := range []string{"type", "interval", "start_ns", "end_ns", "direction", "mec", "synopsis", "sent", "received",
			"lost", "mean_ns", "stddev_ns", "mean_ci_ns", "samples", "valid", "true_mean_ns", "true_stddev_ns", "true_lost"} {
			if _, ok := m[k]; !ok {
				t.Errorf("report line lacks %q: %s", k, sc.Text())
			}
		}
		if m["type"] != "interval" || m["synopsis"] != "lda" || m["direction"] != "x>y" {
			t.Errorf("unexpected line %s", sc.Text())
		}
		mecs[m["mec"].(string)] = true
		lost += uint64(m["lost"].(float64))
		lines++
	}
	if summaries != 1 {
		t.Errorf("%d summary lines, want 1 (the last)", summaries)
	}
	if lines != 2 || !mecs["all"] || !mecs["web"] {
		t.Errorf("want one line per MEC (all, web), got %d lines %v", lines, mecs)
	}
	if lost != tr.Lost {
		t.Errorf("Σlost %d, want %d", lost, tr.Lost)
	}
	b, _ := os.ReadFile(rep)
	if !bytes.Equal(b, stdout) {
		t.Errorf("--report differs from stdout:\n%s\n---\n%s", b, stdout)
	}

	// Table mode prints a header and rows.
	out.Reset()
	if err := analyzeMain([]string{"--sender", s, "--receiver", r}, &out, &errb); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "mean_us") || !strings.Contains(out.String(), "lda") {
		t.Errorf("table output:\n%s", out.String())
	}
}

// TestAnalyzeAllSynopses: --synopsis all gives LDA and RDA lines per MEC
// and per-flow LDS lines whose flow is named as docs/reports.md says.
func TestAnalyzeAllSynopses(t *testing.T) {
	s, r, tr := writeCaptures(t, analyzetest.Config{Packets: 20_000, Rate: 20_000, Start: time.Unix(1_700_000_000, 0),
		Flows: 50, MeanDelay: 30 * time.Microsecond, Loss: 0.002, Seed: 6, IPv6Share: 0.5})
	var out, errb bytes.Buffer
	if err := analyzeMain([]string{"--sender", s, "--receiver", r, "--interval", "0", "--synopsis", "all", "--format", "json", "--top", "10", "--lds-flows", "100"}, &out, &errb); err != nil {
		t.Fatalf("%v\n%s", err, errb.String())
	}
	kinds := map[string]int{}
	var rdaLost uint64
	var rdaValid bool
	var sum analyze.Summary
	sc := bufio.NewScanner(&out)
	for sc.Scan() {
		var m struct {
			Type     string
			Synopsis string
			Flow     string
			Lost     uint64
			Valid    bool
		}
		json.Unmarshal(sc.Bytes(), &m)
		if m.Type == "analyze_summary" {
			json.Unmarshal(sc.Bytes(), &sum)
			continue
		}
		kinds[m.Synopsis]++
		if m.Synopsis == "rda" {
			rdaLost, rdaValid = m.Lost, m.Valid
		}
		if m.Synopsis == "lds" {
			if m.Flow == "" || !(strings.HasPrefix(m.Flow, "6 ") || strings.HasPrefix(m.Flow, "17 ")) || !strings.Contains(m.Flow, ">") {
				t.Errorf("flow %q not named as docs/reports.md says", m.Flow)
			}
			if strings.Contains(m.Flow, ":") && strings.Count(m.Flow, "[") == 1 {
				t.Errorf("flow %q: IPv6 addresses must both be bracketed", m.Flow)
			}
		}
	}
	if tr = tr.Within(sum.RangeStartNs, sum.RangeEndNs); rdaLost != tr.Lost || !rdaValid {
		t.Errorf("rda line lost %d valid %v, want exact %d", rdaLost, rdaValid, tr.Lost)
	}
	if kinds["lda"] != 1 || kinds["rda"] != 1 || kinds["lds"] != 10 || kinds["sample"] != 1 {
		t.Errorf("lines per synopsis %v, want lda 1, rda 1, lds 10 (--top 10), sample 1", kinds)
	}
}

// TestSynopsisListSample: every command takes sample, and all includes
// it.
func TestSynopsisListSample(t *testing.T) {
	k, err := parseSynopsisList("all")
	if err != nil || !k["sample"] || !k["lda"] || !k["rda"] || !k["lds"] {
		t.Errorf("all: %v %v", k, err)
	}
	if k, err = parseSynopsisList("lda,sample"); err != nil || !k["sample"] || k["rda"] {
		t.Errorf("lda,sample: %v %v", k, err)
	}
	if _, err = parseSynopsisList("lda,quantiles"); err == nil || !strings.Contains(err.Error(), "sample") {
		t.Errorf("an unknown synopsis: %v", err)
	}
}

// TestAnalyzeFlagErrors: every bad flag is a clear error, never a panic.
func TestAnalyzeFlagErrors(t *testing.T) {
	s, r, _ := writeCaptures(t, analyzetest.Config{Packets: 100, Rate: 1000, Start: time.Unix(1_700_000_000, 0), MeanDelay: time.Microsecond, Seed: 1})
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--receiver", r}, "--sender and --receiver"},
		{[]string{"--sender", s, "--receiver", r, "--synopsis", "xyz"}, "unknown synopsis"},
		{[]string{"--sender", s, "--receiver", r, "--format", "xml"}, "--format"},
		{[]string{"--sender", s, "--receiver", r, "--confidence", "1.5"}, "--confidence"},
		{[]string{"--sender", s, "--receiver", r, "--interval", "-1s"}, "--interval"},
		{[]string{"--sender", s, "--receiver", r, "--mec", "x=dscp:99"}, "dscp"},
		{[]string{"--sender", s, "--receiver", r, "--lda-banks", "12:x"}, "--lda-banks"},
		{[]string{"--sender", s, "--receiver", r, "--lda-banks", "100:3"}, "LDA configuration"},
		{[]string{"--sender", s, "--receiver", r, "--lda-loss-rates", "2"}, "loss rate"},
		{[]string{"--sender", "/nonexistent", "--receiver", r}, "--sender"},
		{[]string{"--sender", s, "--receiver", r, "extra"}, "unexpected arguments"},
		{[]string{"--bogus"}, "unknown flag"},
		{[]string{"--sender", s, "--receiver", r, "--synopsis", "rda", "--rda-cells", "1"}, "RDA configuration"},
		{[]string{"--sender", s, "--receiver", r, "--synopsis", "lds", "--lds-flows", "0"}, "--lds-flows"},
		{[]string{"--sender", s, "--receiver", r, "--synopsis", "lds", "--top", "-1"}, "--top"},
		{[]string{"--sender", s, "--receiver", r, "--damaged", "ignore"}, "--damaged"},
		{[]string{"--sender", s, "--receiver", r, "--synopsis", "sample", "--sample-capacity", "0"}, "sample capacity"},
		{[]string{"--sender", s, "--receiver", r, "--synopsis", "sample", "--sample-level", "33"}, "--sample-level 33"},
	} {
		var out, errb bytes.Buffer
		err := analyzeMain(tc.args, &out, &errb)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err %v, want it to mention %q", tc.args, err, tc.want)
		}
	}
}

// TestAnalyzeRefuses: captures that cannot be compared are an error (so a
// non-zero exit) that names both files and prints no interval line: two
// captures of different traffic, and a damaged capture (unless --damaged
// invalidate, which reports the touched interval invalid).
func TestAnalyzeRefuses(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, sc analyzetest.Scenario) (string, string) {
		var sb, rb bytes.Buffer
		if _, err := sc.Write(&sb, &rb); err != nil {
			t.Fatal(err)
		}
		s, r := filepath.Join(dir, name+"-s.pcap"), filepath.Join(dir, name+"-r.pcap")
		os.WriteFile(s, sb.Bytes(), 0o644)
		os.WriteFile(r, rb.Bytes(), 0o644)
		return s, r
	}
	base := analyzetest.Scenario{Seed: 3, Packets: 5000, Rate: 50_000, Start: time.Unix(1_700_000_000, 0), MeanDelay: 30 * time.Microsecond}
	other := base
	other.Disjoint = true
	s, r := write("disjoint", other)
	var out, errb bytes.Buffer
	err := analyzeMain([]string{"--sender", s, "--receiver", r, "--format", "json"}, &out, &errb)
	if err == nil || !strings.Contains(err.Error(), "do not see the same traffic: 0.0 % of sender packets found at the receiver") ||
		!strings.Contains(err.Error(), s) || !strings.Contains(err.Error(), r) || strings.Contains(out.String(), `"type":"interval"`) {
		t.Errorf("disjoint captures: err %v, output %q", err, out.String())
	}

	s, r = write("damaged", base)
	b, _ := os.ReadFile(r)
	os.WriteFile(r, b[:len(b)-10], 0o644)
	out.Reset()
	err = analyzeMain([]string{"--sender", s, "--receiver", r, "--format", "json"}, &out, &errb)
	if err == nil || !strings.Contains(err.Error(), r) || !strings.Contains(err.Error(), "record") || out.Len() > 0 {
		t.Errorf("damaged capture: err %v, output %q", err, out.String())
	}
	out.Reset()
	if err := analyzeMain([]string{"--sender", s, "--receiver", r, "--format", "json", "--damaged", "invalidate"}, &out, &errb); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), `"valid":false`) || !strings.Contains(out.String(), "receiver capture damaged") || !strings.Contains(out.String(), `"damage":[`) {
		t.Errorf("--damaged invalidate: %s", out.String())
	}
}

// TestAnalyzeLDSDefaults: with no --lds-* flag analyze sizes the LDS for
// the flows the sender saw and repairs the cells the losses spoiled, so
// lossy flows are valid with the exact loss; an --lds-* flag fixes the
// size instead (and the repair still runs).
func TestAnalyzeLDSDefaults(t *testing.T) {
	s, r, _ := writeCaptures(t, analyzetest.Config{Packets: 20_000, Rate: 20_000, Start: time.Unix(1_700_000_000, 0),
		Flows: 50, MeanDelay: 30 * time.Microsecond, Loss: 0.003, Seed: 7})
	lines := func(args ...string) []map[string]any {
		var out, errb bytes.Buffer
		args = append([]string{"--sender", s, "--receiver", r, "--interval", "0", "--synopsis", "lds", "--format", "json", "--truth"}, args...)
		if err := analyzeMain(args, &out, &errb); err != nil {
			t.Fatalf("%v\n%s", err, errb.String())
		}
		var ls []map[string]any
		sc := bufio.NewScanner(&out)
		for sc.Scan() {
			var m map[string]any
			json.Unmarshal(sc.Bytes(), &m)
			if m["synopsis"] == "lds" {
				ls = append(ls, m)
			}
		}
		return ls
	}
	for _, tc := range []struct {
		args  []string
		shape string
	}{{nil, "4×7 k=1"}, {[]string{"--lds-flows", "1000"}, "4×126 k=1"}} {
		ls := lines(tc.args...)
		if len(ls) != 50 {
			t.Fatalf("%v: %d LDS lines, want 50", tc.args, len(ls))
		}
		lossy, valid := 0, 0
		for _, m := range ls {
			x, _ := m["extra"].(map[string]any)
			if x["lds"] != tc.shape || !strings.HasPrefix(fmt.Sprint(x["repair"]), "complete") {
				t.Fatalf("%v: lds %v repair %v, want %s and complete", tc.args, x["lds"], x["repair"], tc.shape)
			}
			if m["lost"] != m["true_lost"] {
				t.Errorf("%v: flow %v lost %v, truth %v", tc.args, m["flow"], m["lost"], m["true_lost"])
			}
			if n, _ := x["repaired_lost"].(float64); n > 0 {
				lossy++
				if m["valid"] == true {
					valid++
				}
			}
		}
		if lossy < 20 || valid != lossy {
			t.Errorf("%v: %d of %d lossy flows valid, want all (and ≥ 20 lossy)", tc.args, valid, lossy)
		}
	}
}

// fakeTTY is a stderr that says it is a terminal.
type fakeTTY struct{ bytes.Buffer }

func (*fakeTTY) IsTerminal() bool { return true }

// TestAnalyzeProgress: on a terminal stderr analyze draws its progress
// (the pass, packets read, rate, share of the files and ETA, and the
// intervals reported as the last pass reads); with
// --quiet or a stderr that is not a terminal it writes no progress line.
// The table's rows are fixed-width (they are printed as intervals close),
// so every row has its columns where the header has them.
func TestAnalyzeProgress(t *testing.T) {
	s, r, _ := writeCaptures(t, analyzetest.Config{Packets: 40_000, Rate: 20_000, Start: time.Unix(1_700_000_000, 0),
		MeanDelay: 30 * time.Microsecond, Loss: 0.002, Seed: 5, IPv6Share: 0.5})
	var out bytes.Buffer
	var tty fakeTTY
	if err := analyzeMain([]string{"--sender", s, "--receiver", r, "--synopsis", "lda,lds", "--truth"}, &out, &tty); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"\r\x1b[Kanalyze: pass 1 of 2 (survey): ", "\r\x1b[Kanalyze: pass 2 of 2 (report): ", "Mpkt/s", "% of ", "ETA ",
		"; 1 intervals reported"} {
		if !strings.Contains(tty.String(), want) {
			t.Errorf("progress lacks %q:\n%q", want, tty.String())
		}
	}
	if strings.Contains(out.String(), "\x1b") {
		t.Error("progress on stdout")
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	hdr := []rune(lines[0]) // "±": count characters, not bytes
	col := strings.Index(string(hdr), "valid") + len("valid") - 1
	if len(lines) < 3 {
		t.Fatalf("table:\n%s", out.String())
	}
	for _, line := range lines[1:] {
		l := []rune(line)
		if strings.Contains(line, "microburst") {
			continue
		}
		if cell := string(l[min(col-5, len(l)):min(col, len(l))]); cell != "yes  " && cell != "no   " {
			t.Errorf("row not aligned with the header:\n%s\n%s", string(hdr), line)
		}
	}
	if !strings.Contains(out.String(), " flow ") {
		t.Errorf("no LDS flow row:\n%s", out.String())
	}
	for _, quiet := range []bool{true, false} {
		var errb bytes.Buffer
		var w interface {
			Write([]byte) (int, error)
			String() string
		} = &errb
		args := []string{"--sender", s, "--receiver", r}
		if quiet {
			w = &fakeTTY{}
			args = append(args, "--quiet")
		}
		if err := analyzeMain(args, &out, w); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(w.String(), "\r") || strings.Contains(w.String(), "reading") {
			t.Errorf("quiet=%v: progress written: %q", quiet, w.String())
		}
	}
}

// TestAnalyzeLDARows: without LDA sizing flags analyze records the LDA at
// run's 8 × 1024 rows and estimates heavy-loss intervals at that shape
// (extra lda_rows); --lda-banks fixes the shape, and so does an
// --interval that --max-delay spans more than 64 times (memory).
func TestAnalyzeLDARows(t *testing.T) {
	s, r, _ := writeCaptures(t, analyzetest.Config{Packets: 20_000, Rate: 20_000, Start: time.Unix(1_700_000_000, 0),
		MeanDelay: 50 * time.Microsecond, Loss: 0.4, Seed: 2})
	for _, tc := range []struct {
		args []string
		want bool
	}{
		{nil, true},
		{[]string{"--lda-banks", "128:0,128:2,128:4,128:6,128:8,128:10,128:12,128:14"}, false},
		{[]string{"--interval", "10ms", "--max-delay", "1s"}, false},
		{[]string{"--interval", "20ms", "--max-delay", "1s"}, true},
	} {
		var out, errb bytes.Buffer
		args := append([]string{"--sender", s, "--receiver", r, "--format", "json", "--quiet"}, tc.args...)
		if err := analyzeMain(args, &out, &errb); err != nil {
			t.Fatalf("%v: %v\n%s", tc.args, err, errb.String())
		}
		rows := strings.Count(out.String(), `"lda_rows":"1024:0,1024:2,1024:4,1024:6,1024:8,1024:10,1024:12,1024:14"`)
		if (rows > 0) != tc.want {
			t.Errorf("%v: %d lines at 8 × 1024, want some: %v", tc.args, rows, tc.want)
		}
	}
}
