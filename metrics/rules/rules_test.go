package rules

import (
	"bytes"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/ldafwd/ldafwd/appliance"
	"github.com/ldafwd/ldafwd/internal/tooltest"
	"github.com/ldafwd/ldafwd/metrics"
	"github.com/ldafwd/ldafwd/report"
)

func promtool(t *testing.T) string { return tooltest.Require(t, "promtool", "prometheus") }

func generate(t *testing.T, paths string) []byte {
	t.Helper()
	c, err := Parse(strings.NewReader(paths))
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	Generate(&b, c, "paths.conf")
	return b.Bytes()
}

// The shipped rules are what the shipped paths file generates.
func TestShippedRulesUpToDate(t *testing.T) {
	paths, err := os.ReadFile("../../scripts/prometheus/paths.conf")
	if err != nil {
		t.Fatal(err)
	}
	shipped, err := os.ReadFile("../../scripts/prometheus/ldafwd-rules.yml")
	if err != nil {
		t.Fatal(err)
	}
	if got := generate(t, string(paths)); !bytes.Equal(got, shipped) {
		t.Fatal("scripts/prometheus/ldafwd-rules.yml is not what paths.conf generates: run\n" +
			"  ldafwd rules --paths scripts/prometheus/paths.conf --out scripts/prometheus/ldafwd-rules.yml")
	}
}

// promtool check rules accepts the shipped rules, and promtool test rules
// passes the unit tests of ldafwd-rules_test.yml (exact values of every
// recorded series kind and each alert's firing time).
func TestPromtoolRules(t *testing.T) {
	pt := promtool(t)
	for _, args := range [][]string{{"check", "rules", "ldafwd-rules.yml"}, {"test", "rules", "ldafwd-rules_test.yml"}} {
		cmd := exec.Command(pt, args...)
		cmd.Dir = "../../scripts/prometheus"
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		if !bytes.Contains(out, []byte("SUCCESS")) {
			t.Fatalf("promtool %s says no SUCCESS:\n%s", strings.Join(args, " "), out)
		}
		t.Logf("promtool %s:\n%s", strings.Join(args, " "), out)
	}
}

// A broken expectation makes promtool test rules fail, so the test above
// can fail: the path mean changed in its last digit.
func TestPromtoolRulesCanFail(t *testing.T) {
	pt := promtool(t)
	dir := t.TempDir()
	for _, f := range []string{"ldafwd-rules.yml", "ldafwd-rules_test.yml"} {
		b, err := os.ReadFile(filepath.Join("../../scripts/prometheus", f))
		if err != nil {
			t.Fatal(err)
		}
		if f == "ldafwd-rules_test.yml" {
			if !bytes.Contains(b, []byte("value: 0.00341796875\n")) {
				t.Fatal("the path mean's expectation is not in the test file")
			}
			b = bytes.Replace(b, []byte("value: 0.00341796875\n"), []byte("value: 0.00341796876\n"), 1)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(pt, "test", "rules", "ldafwd-rules_test.yml")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err == nil {
		t.Fatalf("promtool test rules passed a wrong path mean:\n%s", out)
	}
}

// Names that need escaping in PromQL and YAML (quotes, backslashes, '#',
// non-ASCII, an '@' that is no direction) still make rules promtool
// accepts, with the names intact.
func TestOddNamesEscaped(t *testing.T) {
	pt := promtool(t)
	paths := "window 30s\nevaluation_interval 10s\njob \"ldafwd fleet\"\n" +
		`path "dc #1 → \"core\"" "hq core\\1" wan@x wan@b>a` + "\n"
	c, err := Parse(strings.NewReader(paths))
	if err != nil {
		t.Fatal(err)
	}
	want := []Hop{{`hq core\1`, "a>b"}, {"wan@x", "a>b"}, {"wan", "b>a"}}
	if len(c.Paths) != 1 || c.Paths[0].Name != `dc #1 → "core"` || len(c.Paths[0].Hops) != 3 {
		t.Fatalf("parsed %+v", c.Paths)
	}
	for i, h := range want {
		if c.Paths[0].Hops[i] != h {
			t.Fatalf("hop %d: %+v, want %+v", i, c.Paths[0].Hops[i], h)
		}
	}
	rules := generate(t, paths)
	for _, s := range []string{`segment="hq core\\1"`, `segment="wan@x"`, `segment="wan",direction="b>a"`,
		`path: "dc #1 → \"core\""`, `segments: "\"hq core\\\\1\" wan@x wan@b>a"`, `up{job="ldafwd fleet"}`, "interval: 10s", "[30s]"} {
		if !bytes.Contains(rules, []byte(s)) {
			t.Errorf("generated rules lack %s", s)
		}
	}
	f := filepath.Join(t.TempDir(), "r.yml")
	if err := os.WriteFile(f, rules, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(pt, "check", "rules", f).CombinedOutput(); err != nil {
		t.Fatalf("promtool check rules: %v\n%s\n%s", err, out, rules)
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"window 5", "no Prometheus duration"},
		{"window 0m", "zero"},
		{"window", "want `SETTING VALUE`"},
		{"loss_ratio 1", "below 1"},
		{"unmeasured_ratio 1", "below 1"},
		{"unmeasured_ratio -1", "finite number"},
		{"loss_ratio -0.1", "finite number"},
		{"loss_ratio NaN", "finite number"},
		{"delay_factor 0.5", "≥ 1"},
		{"invalid_intervals 0", "integer"},
		{"colour blue", "unknown setting"},
		{"path p", "at least one segment"},
		{"path p a\npath p b", "defined twice"},
		{"path p a b a", "twice"},
		{"path p \"a", "quoted"},
		{"path p \"a\"b", "no space"},
		{"path p " + strings.Repeat("x", 65), "1..64"},
		{"path p a\x01b", "unprintable"},
		{"job \"\"", "1..64"},
	} {
		_, err := Parse(strings.NewReader(tc.in))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want one containing %q", tc.in, err, tc.want)
		}
	}
	c, err := Parse(strings.NewReader("# nothing\n\n  \t# but comments\n"))
	if err != nil || c.Window != "5m" || c.LossRatio != 0.001 || len(c.Paths) != 0 {
		t.Fatalf("empty file: %+v %v", c, err)
	}
}

// FuzzParse: any input is a config or an error, never a panic, and a
// config always generates rules.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"window 5m\npath a b c@b>a\n", `path "x y" "z\"" w`, "loss_ratio 0.5 # c", "job j\nfor 1h30m"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := Parse(strings.NewReader(s))
		if err != nil {
			return
		}
		for _, p := range c.Paths {
			if len(p.Hops) == 0 {
				t.Fatalf("path %q without segments", p.Name)
			}
		}
		var b bytes.Buffer
		Generate(&b, c, "fuzz")
		if !bytes.Contains(b.Bytes(), []byte("groups:")) {
			t.Fatal("no groups")
		}
	})
}

// BenignReasons matches the reason labels of exactly the lines the
// appliance reports invalid for its own start or stop, as metrics.Reason
// makes them from the appliance's reasons — the ones /healthz's
// measurement check leaves out too — and not a segment's failures.
func TestBenignReasons(t *testing.T) {
	re := regexp.MustCompile("^(?:" + BenignReasons + ")$") // PromQL anchors =~ and !~
	for _, tc := range []struct {
		code   report.Code
		benign bool
	}{
		{report.Warmup, true},
		{report.Stopped, true},
		{report.Silent, false},
		{report.ControlLost, false},
		{report.SynopsisLost, false},
		{report.NotRunning, false},
		{report.Recut, false},
	} {
		iv := &report.Interval{}
		iv.Invalidate(tc.code, "x")
		label := metrics.Reason(iv)
		if re.MatchString(label) != tc.benign {
			t.Errorf("%v (label %s): benign %v, want %v", tc.code, label, !tc.benign, tc.benign)
		}
	}
	// The appliance's start and stop lines lead with those codes.
	for _, line := range []struct {
		why  string
		code report.Code
	}{{appliance.ReasonWarmup, report.Warmup}, {appliance.ReasonStopped, report.Stopped}} {
		if !re.MatchString(line.code.String()) {
			t.Errorf("%q: code %v not benign", line.why, line.code)
		}
	}
}

func TestSeconds(t *testing.T) {
	for s, want := range map[string]float64{"5m": 300, "1h30m": 5400, "1d": 86400, "500ms": 0.5, "1w2d3h4m5s6ms": 7*86400 + 2*86400 + 3*3600 + 4*60 + 5.006, "1y": 365 * 86400} {
		if err := checkDuration(s); err != nil {
			t.Fatal(err)
		}
		if got := seconds(s); math.Abs(got-want) > 1e-9 {
			t.Errorf("seconds(%q) = %v, want %v", s, got, want)
		}
	}
}
