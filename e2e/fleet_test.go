package e2e

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ldafwd/ldafwd/report"
)

// fleetPaths is the paths file of TestPrometheusFleet: three segments on
// one path, and windows short enough for a demo of a few seconds.
const fleetPaths = `window 4s
evaluation_interval 700ms
baseline_window 1m
invalid_window 4s
for 1s
down_for 1s
path fleet-path east mid west
`

// TestPrometheusFleet runs three `ldafwd demo` processes (segments east,
// mid and west, with different delays) with --metrics-addr on 127.0.0.1,
// and Debian's prometheus scraping them every second with the rules
// ldafwd rules generates for a path east → mid → west
// (4 s window, rules evaluated every 700 ms, not in step with the scrapes).
// Once the demos have exited it checks through Prometheus's HTTP API:
//
//   - at every evaluation of the rules, the recorded path mean delay
//     equals the sum of the three recorded segment means of that
//     evaluation, its standard deviation √Σσ² and its loss ratio
//     1 − Π(1 − loss) of theirs (composition, to float rounding);
//   - at every evaluation whose window Prometheus's increase() scales
//     alike for packets and delay (see usableWindow), each recorded
//     segment mean equals the packet-weighted mean of the segment's JSON
//     report lines between the window's first and last scrape (or the one
//     before the last, when the last was taken so shortly before the
//     evaluation that it may not have been stored yet; windows starting
//     or ending at a torn scrape, see below, are left out), and the
//     recorded path mean equals the sum of those three means, within
//     1e-6 relative;
//   - LdafwdApplianceDown fires for the three demos once they have exited;
//   - every PromQL expression of the Grafana dashboard
//     (scripts/grafana/ldafwd-fleet.json), its variables substituted, runs
//     as a range query over the test without error and returns data.
func TestPrometheusFleet(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs three demos and a Prometheus server for ~20 s")
	}
	promBin := lookTool(t, "prometheus")
	bin := ldafwdBinary(t, false)
	dir := t.TempDir()

	// The rules, from the generator as an operator runs it.
	pathsFile, rulesFile := filepath.Join(dir, "paths.conf"), filepath.Join(dir, "rules.yml")
	if err := os.WriteFile(pathsFile, []byte(fleetPaths), 0o644); err != nil {
		t.Fatal(err)
	}
	gen := exec.Command(bin, "rules", "--paths", pathsFile, "--out", rulesFile)
	if out, err := gen.CombinedOutput(); err != nil {
		t.Fatalf("ldafwd rules: %v\n%s", err, out)
	}

	segs := []string{"east", "mid", "west"}
	delays := []string{"weibull:mean=50us,shape=0.7", "weibull:mean=200us,shape=0.7", "weibull:mean=800us,shape=0.7"}
	targets := []string{freeAddr(t), freeAddr(t), freeAddr(t)}
	api, promStart := startPrometheus(t, promBin, dir, fmt.Sprintf(`global:
  scrape_interval: 1s
  scrape_timeout: 900ms
rule_files: [%q]
scrape_configs:
  - job_name: ldafwd
    static_configs:
      - targets: ["%s"]
`, rulesFile, strings.Join(targets, `", "`)), len(targets))

	demos := make([]*demoProc, len(segs))
	for i, seg := range segs {
		demos[i] = startDemo(t, bin, seg, targets[i], "--duration", "9s", "--interval", "500ms", "--rate", "2000",
			"--synopsis", "lda,sample", "--seed", strconv.Itoa(i+1), "--delay", delays[i])
	}
	for _, d := range demos {
		d.waitServing(t, 10*time.Second)
	}
	lines := make([][]report.Interval, len(demos))
	for i, d := range demos {
		lines[i] = d.wait(t, 60*time.Second)
	}

	// The demos are gone: each must be reported down within a few
	// seconds (failed scrape ≤ 1 s, rule evaluation ≤ 0.7 s, for 1 s).
	downQ := `count(ALERTS{alertname="LdafwdApplianceDown",alertstate="firing",job="ldafwd"})`
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(250 * time.Millisecond) {
		r := query(t, api, downQ, float64(time.Now().UnixMilli())/1e3)
		if len(r.Data.Result) == 1 {
			if _, v := sampleValue(t, r.Data.Result[0].Value); v == float64(len(demos)) {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("LdafwdApplianceDown not firing for the %d exited demos in 20 s: %+v", len(demos), r.Data)
		}
	}
	now := float64(time.Now().UnixMilli()) / 1e3

	// Per segment: the valid lines' prefix sums, in the metrics' order.
	type sums struct{ n, s float64 }
	prefixes := make([][]sums, len(segs))
	for i, ls := range lines {
		p := []sums{{}}
		for _, r := range ls {
			if r.Segment != segs[i] {
				t.Fatalf("demo %s wrote a line of segment %q", segs[i], r.Segment)
			}
			if r.Flow != "" || r.Synopsis != "lda" || !r.Valid || r.Received == 0 {
				continue // the sample lines feed the percentile panel, not these sums
			}
			n := float64(r.Received)
			q := p[len(p)-1]
			p = append(p, sums{q.n + n, q.s + n*(r.MeanNs/1e9)})
		}
		if len(p) < 6 {
			t.Fatalf("demo %s: only %d valid lines", segs[i], len(p)-1)
		}
		prefixes[i] = p
	}
	prefixOf := func(i int, packets float64) (int, bool) {
		for k, p := range prefixes[i] {
			if p.n == packets {
				return k, true
			}
		}
		return 0, false
	}

	const window = 4000 // ms, the rules' window
	sel := `{segment="%s",direction="a>b",mec="all",synopsis="lda"}`
	type sample struct {
		ms int64
		v  float64
	}
	series := func(q string) []sample {
		var out []sample
		for ts, v := range rawSamples(t, api, q+"[10m]", now) {
			out = append(out, sample{int64(math.Round(ts * 1e3)), v})
		}
		sort.Slice(out, func(a, b int) bool { return out[a].ms < out[b].ms })
		return out
	}
	packets, delay := make([][]sample, len(segs)), make([][]sample, len(segs))
	segMean := make([]map[int64]float64, len(segs))
	for i, seg := range segs {
		packets[i] = series("ldafwd_delay_packets_total" + fmt.Sprintf(sel, seg))
		delay[i] = series("ldafwd_delay_seconds_total" + fmt.Sprintf(sel, seg))
		if neg := series("ldafwd_delay_negative_seconds_total" + fmt.Sprintf(sel, seg)); neg[len(neg)-1].v != 0 {
			t.Fatalf("%s: negative delays on one machine's clock", seg)
		}
		if len(packets[i]) != len(delay[i]) {
			t.Fatalf("%s: %d packet samples, %d delay samples", seg, len(packets[i]), len(delay[i]))
		}
		segMean[i] = map[int64]float64{}
		for _, s := range series(fmt.Sprintf(`segment:ldafwd_delay_seconds:mean4s{segment="%s",direction="a>b"}`, seg)) {
			segMean[i][s.ms] = s.v
		}
	}
	segSD, segLoss := make([]map[int64]float64, len(segs)), make([]map[int64]float64, len(segs))
	for i, seg := range segs {
		segSD[i], segLoss[i] = map[int64]float64{}, map[int64]float64{}
		for _, s := range series(fmt.Sprintf(`segment:ldafwd_delay_seconds:stddev4s{segment="%s",direction="a>b"}`, seg)) {
			segSD[i][s.ms] = s.v
		}
		for _, s := range series(fmt.Sprintf(`segment:ldafwd_loss:ratio4s{segment="%s",direction="a>b"}`, seg)) {
			segLoss[i][s.ms] = s.v
		}
	}
	pathSD, pathLoss := map[int64]float64{}, map[int64]float64{}
	for _, s := range series(`path:ldafwd_delay_seconds:stddev4s{path="fleet-path"}`) {
		pathSD[s.ms] = s.v
	}
	for _, s := range series(`path:ldafwd_loss:ratio4s{path="fleet-path"}`) {
		pathLoss[s.ms] = s.v
	}
	// A scrape can catch an appliance between adding a line to
	// ldafwd_delay_packets_total and adding it to ldafwd_delay_seconds_total
	// (metrics.Observe adds the counters one by one, unlocked against
	// Gather): such a torn scrape pairs the packets of n lines with the
	// delay of n−1, and a window ending or starting at it has a wrong mean.
	// Such windows are left out of the exact comparison below, and counted.
	torn := make([]map[int]bool, len(segs))
	nTorn := 0
	for i, seg := range segs {
		torn[i] = map[int]bool{}
		for j := range packets[i] {
			k, ok := prefixOf(i, packets[i][j].v)
			if !ok {
				t.Fatalf("%s: scraped packet count %v is no prefix sum of the valid lines", seg, packets[i][j].v)
			}
			if math.Abs(delay[i][j].v-prefixes[i][k].s) > 1e-9*prefixes[i][k].s {
				torn[i][j] = true
				nTorn++
				t.Logf("%s: torn scrape at %d ms: ldafwd_delay_packets_total %v is line %d's prefix, ldafwd_delay_seconds_total %v is not (%v)",
					seg, packets[i][j].ms, packets[i][j].v, k, delay[i][j].v, prefixes[i][k].s)
			}
		}
	}
	pathMean := series(`path:ldafwd_delay_seconds:mean4s{path="fleet-path",segments="east mid west"}`)
	if len(pathMean) < 3 {
		t.Fatalf("only %d evaluations recorded the path mean", len(pathMean))
	}

	// usableWindow is the first scrape of segment i in the window of the
	// evaluation at T, and the scrapes that may be the last one the
	// evaluation saw: the last at or before T, and the one before it when
	// the last is so close to T (500 ms) that the evaluation may have run
	// before it was stored. The window is usable when no scrape is so close
	// to its start that inclusion is a matter of rounding, and increase()
	// extrapolates packets and delay by the same factor, so that the
	// recorded mean is the exact ratio of the differences. increase()
	// scales each difference by (sampled + toStart + toEnd) / sampled,
	// where toStart is the same for every series scraped together, except
	// that it is cut to the time the counter would take to reach zero
	// going back (sampled · first / difference), which differs between
	// packets and delay; so the window is usable only when that cut applies
	// to neither for every candidate, by a margin of 50 ms: a candidate the
	// cut applies to may be the scrape the evaluation saw, and what it
	// recorded from it is no exact ratio to compare with.
	usableWindow := func(i int, T int64) (first int, lasts []int) {
		first, last := -1, -1
		for j, s := range packets[i] {
			if s.ms > T-window-50 && s.ms < T-window+50 {
				return 0, nil
			}
			if s.ms >= T-window && s.ms <= T {
				if first < 0 {
					first = j
				}
				last = j
			}
		}
		if first < 0 || torn[i][first] {
			return 0, nil
		}
		cands := []int{last}
		if packets[i][last].ms > T-500 {
			cands = append(cands, last-1)
		}
		for _, l := range cands {
			if l <= first || torn[i][l] {
				continue
			}
			sampled := float64(packets[i][l].ms - packets[i][first].ms)
			toStart := float64(packets[i][first].ms - (T - window))
			for _, c := range [][]sample{packets[i], delay[i]} {
				// Within 50 ms the cut is a matter of rounding (the
				// evaluation's time and the scrapes' are in ms, and
				// Prometheus compares them in finer units).
				if d := c[l].v - c[first].v; d <= 0 || sampled*c[first].v/d < toStart+50 {
					return 0, nil
				}
			}
			lasts = append(lasts, l)
		}
		return first, lasts
	}

	relErr := func(got, want float64) float64 {
		return math.Abs(got-want) / math.Max(math.Abs(want), 1e-300)
	}
	composed, exact, unstored, worst := 0, 0, 0, 0.0
	for _, p := range pathMean {
		// 1. The path is the sum of the segments' recorded means.
		var sum float64
		all := true
		for i := range segs {
			m, ok := segMean[i][p.ms]
			all = all && ok
			sum += m
		}
		if !all {
			t.Errorf("evaluation at %d ms recorded the path but not every segment", p.ms)
			continue
		}
		if e := relErr(p.v, sum); e > 1e-12 {
			t.Errorf("at %d ms: path mean %v, sum of the recorded segment means %v", p.ms, p.v, sum)
		}
		// Its deviation and loss compose the segments' of the same
		// evaluation: √Σσ², 1 − Π(1 − loss).
		var vars, pass float64 = 0, 1
		for i := range segs {
			vars += segSD[i][p.ms] * segSD[i][p.ms]
			pass *= 1 - segLoss[i][p.ms]
		}
		if sd, ok := pathSD[p.ms]; !ok || relErr(sd, math.Sqrt(vars)) > 1e-12 {
			t.Errorf("at %d ms: path standard deviation %v (recorded: %v), √Σσ² of the segments %v", p.ms, sd, ok, math.Sqrt(vars))
		}
		if l, ok := pathLoss[p.ms]; !ok || math.Abs(l-(1-pass)) > 1e-15 {
			t.Errorf("at %d ms: path loss %v (recorded: %v), 1 − Π(1 − loss) of the segments %v", p.ms, l, ok, 1-pass)
		}
		composed++

		// 2. ... and that of the report lines in the window.
		var want float64
		var desc []string
		usable := true
		for i, seg := range segs {
			f, lasts := usableWindow(i, p.ms)
			if len(lasts) == 0 {
				usable = false
				break
			}
			k1, ok := prefixOf(i, packets[i][f].v)
			if !ok {
				t.Fatalf("%s: scraped packet count %v is no prefix sum of the valid lines", seg, packets[i][f].v)
			}
			var m float64
			var k2 int
			var tried []string
			match := false
			for _, l := range lasts {
				var ok bool
				if k2, ok = prefixOf(i, packets[i][l].v); !ok {
					t.Fatalf("%s: scraped packet count %v is no prefix sum of the valid lines", seg, packets[i][l].v)
				}
				a, b := prefixes[i][k1], prefixes[i][k2]
				m = (b.s - a.s) / (b.n - a.n)
				if relErr(segMean[i][p.ms], m) <= 1e-6 {
					match = true
					if l != lasts[0] {
						unstored++
					}
					break
				}
				tried = append(tried, fmt.Sprintf("lines %d..%d: %v", k1, k2, m))
			}
			if !match {
				var raw []string
				for j := range packets[i] {
					if packets[i][j].ms >= p.ms-window-1000 && packets[i][j].ms <= p.ms+1000 {
						k, _ := prefixOf(i, packets[i][j].v)
						raw = append(raw, fmt.Sprintf("%+d ms: packets %v (line %d, Σdelay %v) delay %v", packets[i][j].ms-p.ms, packets[i][j].v, k, prefixes[i][k].s, delay[i][j].v))
					}
				}
				t.Errorf("at %d ms: %s recorded mean %v, report lines' means %s; scrapes around:\n%s", p.ms, seg, segMean[i][p.ms], strings.Join(tried, ", "), strings.Join(raw, "\n"))
			}
			want += m
			desc = append(desc, fmt.Sprintf("%s lines %d..%d %.2f µs", seg, k1, k2, m*1e6))
		}
		if !usable {
			continue
		}
		e := relErr(p.v, want)
		worst = math.Max(worst, e)
		if e > 1e-6 {
			t.Errorf("at %d ms: recorded path mean %v, sum of the report lines' means %v (relative error %.3g)", p.ms, p.v, want, e)
		}
		exact++
		t.Logf("at %d ms: path %.3f µs = %s (relative error %.3g)", p.ms, p.v*1e6, strings.Join(desc, " + "), e)
	}
	t.Logf("%d evaluations recorded the path mean; %d compared with the report lines, worst relative error %.3g (%d segment windows ended a scrape before the last: not yet stored at the evaluation; %d torn scrapes left out)",
		composed, exact, worst, unstored, nTorn)
	if exact < 2 {
		t.Fatalf("only %d evaluations had a window usable for the exact comparison", exact)
	}

	// Which alerts the short run raised (reported, not required beyond
	// LdafwdApplianceDown: the demos' loss and validity are random).
	body := httpGet(t, api+"/api/v1/query_range?"+url.Values{"query": {`max by (alertname, alertstate, segment) (ALERTS)`},
		"start": {strconv.FormatFloat(promStart, 'f', 3, 64)}, "end": {strconv.FormatFloat(now, 'f', 3, 64)}, "step": {"1"}}.Encode())
	var alerts apiResult
	if err := json.Unmarshal([]byte(body), &alerts); err != nil {
		t.Fatal(err)
	}
	for _, a := range alerts.Data.Result {
		t0, _ := sampleValue(t, a.Values[0])
		t.Logf("alert %s %s segment %q: %d of the 1 s steps, from %.1f s after Prometheus started", a.Metric["alertname"], a.Metric["alertstate"], a.Metric["segment"], len(a.Values), t0-promStart)
	}

	// The dashboard's queries against this Prometheus.
	checkDashboard(t, api, "../scripts/grafana/ldafwd-fleet.json", map[string]string{
		"window": "4s", "baseline": "1m", "job": "ldafwd", "segment": ".+", "path": ".+", "__rate_interval": "4s",
	}, promStart, now)
}

// startPrometheus starts Debian's prometheus with cfg in dir and waits
// until it is ready and has tried to scrape every one of n targets. It
// returns the API's base URL and the time it started (Unix seconds).
func startPrometheus(t *testing.T, bin, dir, cfg string, n int) (string, float64) {
	t.Helper()
	cfgPath := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	start := float64(time.Now().UnixMilli()) / 1e3
	addr := freeAddr(t)
	prom := exec.Command(bin, "--config.file="+cfgPath, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr, "--log.level=warn")
	prom.Dir = dir
	var log syncBuffer
	prom.Stdout, prom.Stderr = &log, &log
	if err := prom.Start(); err != nil {
		t.Fatalf("starting prometheus: %v", err)
	}
	done := make(chan struct{})
	go func() { prom.Wait(); close(done) }()
	t.Cleanup(func() {
		prom.Process.Kill()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Errorf("prometheus (pid %d) did not exit after SIGKILL", prom.Process.Pid)
		}
	})
	api := "http://" + addr
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if resp, err := http.Get(api + "/-/ready"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		select {
		case <-done:
			t.Fatalf("prometheus exited:\n%s", log.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("prometheus not ready in 30 s:\n%s", log.String())
		}
	}
	// Prometheus applies its targets some seconds after it is ready: wait
	// until it has tried them all, so that it scrapes appliances started
	// now from their start.
	for deadline := time.Now().Add(30 * time.Second); scrapedTargets(t, api) < n; time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("prometheus tried no scrape of its %d targets in 30 s:\n%s", n, log.String())
		}
	}
	return api, start
}

// grafanaVar is a Grafana template variable in a query: $name, ${name} or
// ${name:format}.
var grafanaVar = regexp.MustCompile(`\$\{(\w+)(?::\w+)?\}|\$(\w+)`)

// labelValues is Grafana's label_values(QUERY, LABEL) variable query.
var labelValues = regexp.MustCompile(`^label_values\((.*),\s*(\w+)\)$`)

// checkDashboard runs every PromQL expression of a Grafana dashboard
// (panel targets, in rows too, and the query variables) with vars
// substituted, as a range query from start to end at a 1 s step, and
// fails on a query error, an unknown variable or an empty result.
func checkDashboard(t *testing.T, api, file string, vars map[string]string, start, end float64) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels     []dashPanel `json:"panels"`
		Templating struct {
			List []struct {
				Name  string          `json:"name"`
				Type  string          `json:"type"`
				Query json.RawMessage `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	type q struct{ where, expr, label string }
	var qs []q
	var walk func(ps []dashPanel)
	walk = func(ps []dashPanel) {
		for _, p := range ps {
			for _, tg := range p.Targets {
				qs = append(qs, q{fmt.Sprintf("panel %q target %s", p.Title, tg.RefID), tg.Expr, ""})
			}
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		var s struct {
			Query string `json:"query"`
		}
		if err := json.Unmarshal(v.Query, &s); err != nil {
			t.Fatalf("variable %s: query %s: %v", v.Name, v.Query, err)
		}
		m := labelValues.FindStringSubmatch(s.Query)
		if m == nil {
			t.Fatalf("variable %s: %q is not label_values(QUERY, LABEL)", v.Name, s.Query)
		}
		qs = append(qs, q{"variable " + v.Name, m[1], m[2]})
	}
	if len(qs) < 10 {
		t.Fatalf("%s: only %d queries found", file, len(qs))
	}
	defined := map[string]bool{}
	for _, v := range d.Templating.List {
		defined[v.Name] = true
	}
	for _, x := range qs {
		expr := grafanaVar.ReplaceAllStringFunc(x.expr, func(s string) string {
			m := grafanaVar.FindStringSubmatch(s)
			name := m[1] + m[2]
			if !defined[name] && !strings.HasPrefix(name, "__") {
				t.Errorf("%s: variable %s is not defined by the dashboard", x.where, s)
			}
			v, ok := vars[name]
			if !ok {
				t.Errorf("%s: no test value for variable %s in %s", x.where, s, x.expr)
			}
			return v
		})
		body := httpGet(t, api+"/api/v1/query_range?"+url.Values{"query": {expr}, "start": {strconv.FormatFloat(start, 'f', 3, 64)},
			"end": {strconv.FormatFloat(end, 'f', 3, 64)}, "step": {"1"}}.Encode())
		var r apiResult
		if err := json.Unmarshal([]byte(body), &r); err != nil || r.Status != "success" {
			t.Errorf("%s: %s: %v %s", x.where, expr, err, body)
			continue
		}
		points := 0
		for _, s := range r.Data.Result {
			if x.label == "" || s.Metric[x.label] != "" {
				points += len(s.Values)
			}
		}
		if points == 0 {
			t.Errorf("%s: %s returned no data", x.where, expr)
			continue
		}
		t.Logf("%s: %d series, %d points", x.where, len(r.Data.Result), points)
	}
}

type dashPanel struct {
	Title   string `json:"title"`
	Targets []struct {
		Expr  string `json:"expr"`
		RefID string `json:"refId"`
	} `json:"targets"`
	Panels []dashPanel `json:"panels"`
}
