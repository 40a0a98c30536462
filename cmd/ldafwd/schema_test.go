package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/ldafwd/ldafwd/analyze/analyzetest"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// reportSchema compiles report/schema.json, the machine-readable form of
// docs/reports.md.
func reportSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	_, here, _, _ := runtime.Caller(0)
	path := filepath.Join(filepath.Dir(here), "..", "..", "report", "schema.json")
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatalf("report/schema.json: %v", err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("schema.json", doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("schema.json")
	if err != nil {
		t.Fatalf("report/schema.json: %v", err)
	}
	return sch
}

// checkLines validates every JSON line of out against the schema and
// returns how many lines of each type it saw.
func checkLines(t *testing.T, sch *jsonschema.Schema, what string, out []byte) map[string]int {
	t.Helper()
	seen := map[string]int{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	bad := 0
	for sc.Scan() {
		v, err := jsonschema.UnmarshalJSON(bytes.NewReader(sc.Bytes()))
		if err != nil {
			t.Fatalf("%s: not JSON: %s", what, sc.Text())
		}
		if err := sch.Validate(v); err != nil {
			if bad++; bad <= 3 {
				t.Errorf("%s: line does not follow report/schema.json: %v\n%s", what, err, sc.Text())
			}
		}
		var m struct{ Type string }
		json.Unmarshal(sc.Bytes(), &m)
		seen[m.Type]++
	}
	return seen
}

func wantTypes(t *testing.T, what string, seen map[string]int, types ...string) {
	t.Helper()
	for _, ty := range types {
		if seen[ty] == 0 {
			t.Errorf("%s: no %q line (saw %v)", what, ty, seen)
		}
	}
}

// TestReportSchema: every record type demo, analyze, sim, bench and
// version write follows report/schema.json (run's: TestRunNoPeerDegraded),
// and the schema refuses what the contract forbids.
func TestReportSchema(t *testing.T) {
	sch := reportSchema(t)

	var out, errb bytes.Buffer
	if err := demoMain([]string{"--duration", "1500ms", "--interval", "500ms", "--format", "json", "--rate", "5000", "--top", "3"}, &out, &errb); err != nil {
		t.Fatalf("demo: %v\n%s", err, errb.String())
	}
	seen := checkLines(t, sch, "demo", out.Bytes())
	wantTypes(t, "demo", seen, "interval", "demo_summary")

	s, r, _ := writeCaptures(t, analyzetest.Config{Packets: 5000, Rate: 10_000, Start: time.Unix(1_700_000_000, 0),
		MeanDelay: 30 * time.Microsecond, Loss: 0.01, Seed: 3, IPv6Share: 0.5})
	out.Reset()
	if err := analyzeMain([]string{"--sender", s, "--receiver", r, "--interval", "100ms", "--truth", "--synopsis", "all", "--format", "json"}, &out, &errb); err != nil {
		t.Fatalf("analyze: %v", err)
	}
	wantTypes(t, "analyze", checkLines(t, sch, "analyze", out.Bytes()), "interval", "analyze_summary")

	wantTypes(t, "sim", checkLines(t, sch, "sim", []byte(simRun(t, "--experiment", "fig4,fig6", "--claims", "--format", "json"))), "sim", "claim")
	out.Reset()
	if err := simMain(t.Context(), []string{"--experiment", "rda-fig7", "--quick", "--packets", "20000", "--runs", "1", "--format", "json"}, &out, &errb); err != nil {
		t.Fatalf("sim rda-fig7: %v", err)
	}
	wantTypes(t, "sim rda-fig7", checkLines(t, sch, "sim rda-fig7", out.Bytes()), "sim")

	out.Reset()
	if err := benchMain([]string{"--only", "^perpacket$", "--rounds", "1", "--frames", "256", "--format", "json"}, &out, &errb); err != nil {
		t.Fatalf("bench: %v", err)
	}
	wantTypes(t, "bench", checkLines(t, sch, "bench", out.Bytes()), "bench")

	out.Reset()
	if err := versionMain([]string{"--format", "json"}, &out); err != nil {
		t.Fatal(err)
	}
	wantTypes(t, "version", checkLines(t, sch, "version", out.Bytes()), "version")

	// What the contract forbids is refused: a number for an invalid
	// line's mean, an LDS standard deviation, a field nobody documented,
	// a sample line's mean or malformed quantiles, a line without schema.
	for _, bad := range []string{
		`{"type":"interval","schema":1,"interval":1,"start_ns":0,"end_ns":1,"direction":"a>b","mec":"all","synopsis":"lda","sent":1,"received":1,"lost":0,"samples":1,"usable_buckets":1,"total_buckets":1,"valid":false,"reason":"x","mean_ns":0,"stddev_ns":null,"mean_ci_ns":null}`,
		`{"type":"interval","schema":1,"interval":1,"start_ns":0,"end_ns":1,"direction":"a>b","mec":"all","synopsis":"lds","sent":1,"received":1,"lost":0,"samples":1,"usable_buckets":1,"total_buckets":1,"valid":true,"mean_ns":5,"stddev_ns":0,"mean_ci_ns":1}`,
		`{"type":"interval","schema":1,"interval":1,"start_ns":0,"end_ns":1,"direction":"a>b","mec":"all","synopsis":"lda","sent":1,"received":1,"lost":0,"samples":1,"usable_buckets":1,"total_buckets":1,"valid":true,"mean_ns":5,"stddev_ns":0,"mean_ci_ns":1,"undocumented":1}`,
		// A sample line: a mean, a quantile with a number and no bounds, a
		// quantile without its reason, quantiles missing.
		`{"type":"interval","schema":1,"interval":1,"start_ns":0,"end_ns":1,"direction":"a>b","mec":"all","synopsis":"sample","sent":1,"received":1,"lost":0,"samples":1,"usable_buckets":0,"total_buckets":0,"valid":true,"mean_ns":5,"stddev_ns":null,"mean_ci_ns":null,"extra":{"min_ns":5,"max_ns":5,"quantiles":{"p50":{"estimate_ns":null,"lo_ns":null,"hi_ns":null,"reason":"x"},"p90":{"estimate_ns":null,"lo_ns":null,"hi_ns":null,"reason":"x"},"p99":{"estimate_ns":null,"lo_ns":null,"hi_ns":null,"reason":"x"},"p99.9":{"estimate_ns":null,"lo_ns":null,"hi_ns":null,"reason":"x"}}}}`,
		`{"type":"interval","schema":1,"interval":1,"start_ns":0,"end_ns":1,"direction":"a>b","mec":"all","synopsis":"sample","sent":1,"received":1,"lost":0,"samples":1,"usable_buckets":0,"total_buckets":0,"valid":true,"mean_ns":null,"stddev_ns":null,"mean_ci_ns":null,"extra":{"min_ns":5,"max_ns":5,"quantiles":{"p50":{"estimate_ns":5,"lo_ns":null,"hi_ns":null},"p90":{"estimate_ns":null,"lo_ns":null,"hi_ns":null,"reason":"x"},"p99":{"estimate_ns":null,"lo_ns":null,"hi_ns":null,"reason":"x"},"p99.9":{"estimate_ns":null,"lo_ns":null,"hi_ns":null,"reason":"x"}}}}`,
		`{"type":"interval","schema":1,"interval":1,"start_ns":0,"end_ns":1,"direction":"a>b","mec":"all","synopsis":"sample","sent":1,"received":1,"lost":0,"samples":1,"usable_buckets":0,"total_buckets":0,"valid":true,"mean_ns":null,"stddev_ns":null,"mean_ci_ns":null,"extra":{"min_ns":5,"max_ns":5,"quantiles":{"p50":{"estimate_ns":null,"lo_ns":null,"hi_ns":null},"p90":{"estimate_ns":null,"lo_ns":null,"hi_ns":null,"reason":"x"},"p99":{"estimate_ns":null,"lo_ns":null,"hi_ns":null,"reason":"x"},"p99.9":{"estimate_ns":null,"lo_ns":null,"hi_ns":null,"reason":"x"}}}}`,
		`{"type":"interval","schema":1,"interval":1,"start_ns":0,"end_ns":1,"direction":"a>b","mec":"all","synopsis":"sample","sent":1,"received":1,"lost":0,"samples":1,"usable_buckets":0,"total_buckets":0,"valid":true,"mean_ns":null,"stddev_ns":null,"mean_ci_ns":null,"extra":{"min_ns":5,"max_ns":5}}`,
		`{"type":"bench","name":"x","mpps":1,"ns_per_pkt":1}`,
		`{"type":"status","schema":1,"time_ns":1,"status":"degraded","problems":[]}`,
	} {
		v, err := jsonschema.UnmarshalJSON(strings.NewReader(bad))
		if err != nil {
			t.Fatal(err)
		}
		if sch.Validate(v) == nil {
			t.Errorf("schema accepts %s", bad)
		}
	}
}

// TestSchemaClockOffset: an interval line with the clock offset estimate
// in its extra follows the schema; one with a field of the wrong type, a
// negative bound or an offset without its bound does not.
func TestSchemaClockOffset(t *testing.T) {
	sch := reportSchema(t)
	const base = `{"type":"interval","schema":1,"interval":7,"start_ns":700,"end_ns":800,"direction":"a>b","mec":"all","synopsis":"lda","sent":10,"received":10,"lost":0,"mean_ns":800000,"stddev_ns":0,"mean_ci_ns":1.5,"samples":10,"usable_buckets":4,"total_buckets":4,"valid":true,"extra":%s}`
	for _, c := range []struct {
		extra string
		ok    bool
	}{
		{`{"clock_offset_ns":299999.8,"clock_offset_ci_ns":1.6,"clock_offset_interval":6,"clock_reverse_mean_ns":200000}`, true},
		{`{"clock_offset_ns":-800000.2,"clock_offset_ci_ns":1.6,"clock_offset_interval":6,"clock_reverse_mean_ns":1300000,"insecure":true}`, true},
		{`{"clock_offset_ns":"300","clock_offset_ci_ns":1.6,"clock_offset_interval":6,"clock_reverse_mean_ns":200000}`, false},
		{`{"clock_offset_ns":300,"clock_offset_ci_ns":-1,"clock_offset_interval":6,"clock_reverse_mean_ns":200000}`, false},
		{`{"clock_offset_ns":300,"clock_offset_interval":6,"clock_reverse_mean_ns":200000}`, false},
		{`{"clock_offset_ns":300,"clock_offset_ci_ns":1,"clock_offset_interval":-6,"clock_reverse_mean_ns":200000}`, false},
	} {
		line := strings.Replace(base, "%s", c.extra, 1)
		v, err := jsonschema.UnmarshalJSON(strings.NewReader(line))
		if err != nil {
			t.Fatal(err)
		}
		if err := sch.Validate(v); (err == nil) != c.ok {
			t.Errorf("extra %s: valid %v, want %v (%v)", c.extra, err == nil, c.ok, err)
		}
	}
}
