package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/url"
	"os/exec"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ldafwd/ldafwd/internal/tooltest"
	"github.com/ldafwd/ldafwd/report"
)

// TestPrometheusDelayCounters runs two `ldafwd demo` processes (segments
// east and west) with --metrics-addr on 127.0.0.1, and Debian's prometheus
// scraping both every second into a temporary directory. Once the demos
// have exited it asks Prometheus's HTTP API for what it stored and checks
// the delay counters against the demos' JSON lines:
//
//   - every raw sample of ldafwd_delay_packets_total is the received count
//     summed over a prefix of the demo's valid lines (integers: the prefix
//     is known exactly), and the samples of ldafwd_delay_seconds_total,
//     ldafwd_delay_negative_seconds_total and
//     ldafwd_delay_seconds_squared_total taken in the same scrape are
//     Σ received·mean, Σ received·(−mean) and Σ received·(stddev²+mean²)
//     over that prefix;
//   - the mean and the standard deviation over a window, computed in
//     PromQL from the counters as docs/metrics.md writes it (the values at
//     one instant minus those at an offset), equal the packet-weighted mean
//     and pooled standard deviation of the lines between the two scrapes;
//   - the mean across both appliances (sum by nothing) equals that of both
//     demos' lines up to their scraped prefixes;
//
// all within 1e-6 relative. It also runs promtool check metrics on a real
// scrape of a demo. Prometheus and the demos are killed at the end.
func TestPrometheusDelayCounters(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs two demos and a Prometheus server for ~15 s")
	}
	promBin := lookTool(t, "prometheus")
	promtool := lookTool(t, "promtool")
	bin := ldafwdBinary(t, false)
	dir := t.TempDir()

	// Prometheus first, scraping the two demos' addresses every second
	// (failing until they listen), so that it sees them from their start.
	segs := []string{"east", "west"}
	targets := []string{freeAddr(t), freeAddr(t)}
	cfg := fmt.Sprintf(`global:
  scrape_interval: 1s
  scrape_timeout: 900ms
  evaluation_interval: 1s
scrape_configs:
  - job_name: ldafwd
    static_configs:
      - targets: ["%s"]
`, strings.Join(targets, `", "`))
	api, _ := startPrometheus(t, promBin, dir, cfg, len(targets))

	// Two demos, 8 s each: 500 ms intervals at 2000 packets/s, the LDA
	// alone (the cheapest on a shared 2-CPU machine).
	demos := make([]*demoProc, len(segs))
	for i, seg := range segs {
		demos[i] = startDemo(t, bin, seg, targets[i], "--duration", "8s", "--interval", "500ms", "--rate", "2000",
			"--synopsis", "lda", "--seed", strconv.Itoa(i+1))
	}
	for _, d := range demos {
		d.waitServing(t, 10*time.Second)
	}
	// promtool on a real scrape of the endpoint.
	body := httpGet(t, "http://"+targets[0]+"/metrics")
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = strings.NewReader(body)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("promtool check metrics on demo east's /metrics: %v\n%s", err, out)
	}

	// The demos end by themselves; then one more scrape interval, so that
	// Prometheus has tried (and failed) to scrape them once more.
	lines := make([][]report.Interval, len(demos))
	for i, d := range demos {
		lines[i] = d.wait(t, 60*time.Second)
	}
	time.Sleep(1500 * time.Millisecond)

	// Each demo's contributions, in the order its metrics saw them.
	type contrib struct{ n, pos, neg, sq float64 }
	var contribs [][]contrib
	for i, ls := range lines {
		var cs []contrib
		valid := 0
		for _, r := range ls {
			if r.Segment != segs[i] {
				t.Fatalf("demo %s wrote a line of segment %q", segs[i], r.Segment)
			}
			if r.Flow != "" || !r.Valid || r.Received == 0 {
				continue
			}
			valid++
			n, mean, sd := float64(r.Received), r.MeanNs/1e9, r.StddevNs/1e9
			c := contrib{n: n, sq: n * (sd*sd + mean*mean)}
			if mean >= 0 {
				c.pos = n * mean
			} else {
				c.neg = -n * mean
			}
			cs = append(cs, c)
		}
		t.Logf("demo %s: %d interval lines, %d valid with packets", segs[i], len(ls), valid)
		if valid < 5 {
			t.Fatalf("demo %s: only %d valid intervals", segs[i], valid)
		}
		contribs = append(contribs, cs)
	}
	// prefix[k] sums the first k contributions, in the metrics' order
	// and arithmetic (so the sums are the same floats).
	prefixes := make([][]contrib, len(contribs))
	for i, cs := range contribs {
		p := []contrib{{}}
		for _, c := range cs {
			q := p[len(p)-1]
			p = append(p, contrib{q.n + c.n, q.pos + c.pos, q.neg + c.neg, q.sq + c.sq})
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

	now := float64(time.Now().UnixMilli()) / 1e3
	relErr := func(got, want float64) float64 {
		if got == want {
			return 0
		}
		return math.Abs(got-want) / math.Max(math.Abs(want), 1e-300)
	}
	const tol = 1e-6
	worst := 0.0
	check := func(what string, got, want float64) {
		t.Helper()
		e := relErr(got, want)
		worst = math.Max(worst, e)
		if !(e <= tol) {
			t.Errorf("%s: Prometheus %v, reports %v (relative error %.3g)", what, got, want, e)
		}
	}

	// 1. Every raw sample against its prefix of report lines.
	sel := `{segment="%s",direction="a>b",mec="all",synopsis="lda"}`
	lastTs := make([]float64, len(segs))
	samplesAt := make([]map[float64]int, len(segs)) // timestamp → prefix length
	for i, seg := range segs {
		raw := func(name string) map[float64]float64 {
			return rawSamples(t, api, name+fmt.Sprintf(sel, seg)+"[10m]", now)
		}
		pk, pos, neg, sq := raw("ldafwd_delay_packets_total"), raw("ldafwd_delay_seconds_total"),
			raw("ldafwd_delay_negative_seconds_total"), raw("ldafwd_delay_seconds_squared_total")
		samplesAt[i] = map[float64]int{}
		distinct := map[int]bool{}
		for ts, n := range pk {
			k, ok := prefixOf(i, n)
			if !ok {
				t.Errorf("%s at %.3f: ldafwd_delay_packets_total %v is no prefix sum of the valid lines' received", seg, ts, n)
				continue
			}
			p := prefixes[i][k]
			check(fmt.Sprintf("%s at %.3f: delay_seconds_total", seg, ts), pos[ts], p.pos)
			check(fmt.Sprintf("%s at %.3f: delay_negative_seconds_total", seg, ts), neg[ts], p.neg)
			check(fmt.Sprintf("%s at %.3f: delay_seconds_squared_total", seg, ts), sq[ts], p.sq)
			samplesAt[i][ts] = k
			distinct[k] = true
			lastTs[i] = math.Max(lastTs[i], ts)
		}
		t.Logf("%s: %d scrapes stored, %d distinct prefixes of %d valid lines, last at %d lines",
			seg, len(pk), len(distinct), len(contribs[i]), samplesAt[i][lastTs[i]])
		if len(distinct) < 4 {
			t.Fatalf("%s: only %d distinct counter values scraped", seg, len(distinct))
		}
	}

	// 2. A window in PromQL: the values at t2 minus those at offset t2−t1,
	// both instants being scrapes of segment east.
	var ts []float64
	for x := range samplesAt[0] {
		ts = append(ts, x)
	}
	sort.Float64s(ts)
	t1, t2 := ts[len(ts)/4], ts[len(ts)-1]
	k1, k2 := samplesAt[0][t1], samplesAt[0][t2]
	if k2-k1 < 3 {
		t.Fatalf("window %.3f..%.3f holds %d valid lines", t1, t2, k2-k1)
	}
	off := fmt.Sprintf("%dms", int64(math.Round((t2-t1)*1e3)))
	s, n, q := "ldafwd_delay_seconds_total"+fmt.Sprintf(sel, "east"), "ldafwd_delay_packets_total"+fmt.Sprintf(sel, "east"),
		"ldafwd_delay_seconds_squared_total"+fmt.Sprintf(sel, "east")
	ng := "ldafwd_delay_negative_seconds_total" + fmt.Sprintf(sel, "east")
	win := func(m string) string { return fmt.Sprintf("(%s - %s offset %s)", m, m, off) }
	meanQ := fmt.Sprintf("(%s - %s) / %s", win(s), win(ng), win(n))
	sdQ := fmt.Sprintf("sqrt(%s / %s - (%s)^2)", win(q), win(n), meanQ)
	var wn, ws, wq float64
	for _, c := range contribs[0][k1:k2] {
		wn += c.n
		ws += c.pos - c.neg
		wq += c.sq
	}
	wantMean := ws / wn
	wantSD := math.Sqrt(wq/wn - wantMean*wantMean)
	gotMean := instant(t, api, meanQ, t2)
	gotSD := instant(t, api, sdQ, t2)
	check("window mean (PromQL)", gotMean, wantMean)
	check("window stddev (PromQL)", gotSD, wantSD)
	t.Logf("east, lines %d..%d (%.0f packets): mean %.4f µs, stddev %.4f µs from PromQL; %.4f µs, %.4f µs from the reports",
		k1, k2, wn, gotMean*1e6, gotSD*1e6, wantMean*1e6, wantSD*1e6)
	// The usual form, increase() over a range: its extrapolation scales
	// numerator and denominator alike, so the ratio is the same mean up to
	// rounding (reported, not required: the offset form above is exact).
	rng := fmt.Sprintf("[%dms]", int64(math.Round((t2-t1)*1e3))+500)
	incQ := fmt.Sprintf("(increase(%s%s) - increase(%s%s)) / increase(%s%s)", s, rng, ng, rng, n, rng)
	gotInc := instant(t, api, incQ, t2)
	t.Logf("east, increase()%s ratio: mean %.4f µs, relative error %.3g", rng, gotInc*1e6, relErr(gotInc, wantMean))

	// 3. Across appliances, at an instant both have a sample at or before.
	at := math.Min(lastTs[0], lastTs[1])
	var an, as float64
	for i := range segs {
		best := -1.0
		for x := range samplesAt[i] {
			if x <= at && x > best {
				best = x
			}
		}
		p := prefixes[i][samplesAt[i][best]]
		an += p.n
		as += p.pos - p.neg
	}
	allSel := `{direction="a>b",mec="all",synopsis="lda"}`
	crossQ := fmt.Sprintf("(sum(ldafwd_delay_seconds_total%s) - sum(ldafwd_delay_negative_seconds_total%s)) / sum(ldafwd_delay_packets_total%s)",
		allSel, allSel, allSel)
	gotCross := instant(t, api, crossQ, at)
	check("mean across both appliances (PromQL)", gotCross, as/an)
	t.Logf("east+west at %.3f (%.0f packets): mean %.4f µs from PromQL, %.4f µs from the reports; worst relative error of all checks %.3g",
		at, an, gotCross*1e6, as/an*1e6, worst)
}

// lookTool finds a program of Debian's prometheus package.
func lookTool(t *testing.T, name string) string { return tooltest.Require(t, name, "prometheus") }

// freeAddr is a 127.0.0.1 port free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func httpGet(t *testing.T, u string) string {
	t.Helper()
	code, body, err := fetchURL(u)
	if err != nil || code != http.StatusOK {
		t.Fatalf("GET %s: %d %v\n%s", u, code, err, body)
	}
	return body
}

// scrapedTargets counts the targets Prometheus has tried to scrape.
func scrapedTargets(t *testing.T, api string) int {
	t.Helper()
	var r struct {
		Data struct {
			ActiveTargets []struct {
				LastScrape time.Time `json:"lastScrape"`
			} `json:"activeTargets"`
		} `json:"data"`
	}
	if err := json.Unmarshal([]byte(httpGet(t, api+"/api/v1/targets")), &r); err != nil {
		t.Fatalf("/api/v1/targets: %v", err)
	}
	n := 0
	for _, tg := range r.Data.ActiveTargets {
		if tg.LastScrape.Year() > 2000 {
			n++
		}
	}
	return n
}

// apiResult is /api/v1/query's answer.
type apiResult struct {
	Status string `json:"status"`
	Error  string `json:"error"`
	Data   struct {
		ResultType string `json:"resultType"`
		Result     []struct {
			Metric map[string]string `json:"metric"`
			Value  [2]any            `json:"value"`
			Values [][2]any          `json:"values"`
		} `json:"result"`
	} `json:"data"`
}

func query(t *testing.T, api, q string, at float64) apiResult {
	t.Helper()
	body := httpGet(t, api+"/api/v1/query?"+url.Values{"query": {q}, "time": {strconv.FormatFloat(at, 'f', 3, 64)}}.Encode())
	var r apiResult
	if err := json.Unmarshal([]byte(body), &r); err != nil || r.Status != "success" {
		t.Fatalf("query %s: %v %s", q, err, body)
	}
	return r
}

func sampleValue(t *testing.T, p [2]any) (float64, float64) {
	t.Helper()
	ts, ok1 := p[0].(float64)
	s, ok2 := p[1].(string)
	v, err := strconv.ParseFloat(s, 64)
	if !ok1 || !ok2 || err != nil {
		t.Fatalf("bad sample %v", p)
	}
	return ts, v
}

// instant is the single value of q at time at.
func instant(t *testing.T, api, q string, at float64) float64 {
	t.Helper()
	r := query(t, api, q, at)
	if len(r.Data.Result) != 1 {
		t.Fatalf("query %s at %.3f: %d series, want 1: %+v", q, at, len(r.Data.Result), r.Data)
	}
	_, v := sampleValue(t, r.Data.Result[0].Value)
	return v
}

// rawSamples are the stored samples of one series (a range selector
// evaluated as an instant query), by timestamp.
func rawSamples(t *testing.T, api, q string, at float64) map[float64]float64 {
	t.Helper()
	r := query(t, api, q, at)
	if r.Data.ResultType != "matrix" || len(r.Data.Result) != 1 {
		t.Fatalf("query %s: want one series, got %+v", q, r.Data)
	}
	out := map[float64]float64{}
	for _, p := range r.Data.Result[0].Values {
		ts, v := sampleValue(t, p)
		out[ts] = v
	}
	return out
}

// demoProc is one running `ldafwd demo --format json`.
type demoProc struct {
	seg    string
	cmd    *exec.Cmd
	out    bytes.Buffer
	errb   syncBuffer
	done   chan struct{}
	runErr error
}

func startDemo(t *testing.T, bin, seg, metricsAddr string, args ...string) *demoProc {
	t.Helper()
	d := &demoProc{seg: seg, done: make(chan struct{})}
	d.cmd = exec.Command(bin, append([]string{"demo", "--format", "json", "--segment-name", seg, "--metrics-addr", metricsAddr}, args...)...)
	d.cmd.Stdout, d.cmd.Stderr = &d.out, &d.errb
	if err := d.cmd.Start(); err != nil {
		t.Fatalf("starting demo %s: %v", seg, err)
	}
	go func() { d.runErr = d.cmd.Wait(); close(d.done) }()
	t.Cleanup(func() {
		select {
		case <-d.done:
		default:
			d.cmd.Process.Kill()
			<-d.done
		}
	})
	return d
}

var demoAddrRE = regexp.MustCompile(`serving /metrics and /healthz on (\S+)`)

// waitServing waits until the demo says it serves /metrics.
func (d *demoProc) waitServing(t *testing.T, limit time.Duration) string {
	t.Helper()
	for deadline := time.Now().Add(limit); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if m := demoAddrRE.FindStringSubmatch(d.errb.String()); m != nil {
			return m[1]
		}
		select {
		case <-d.done:
			t.Fatalf("demo %s exited: %v\n%s", d.seg, d.runErr, d.errb.String())
		default:
		}
	}
	t.Fatalf("demo %s: no metrics address in %v:\n%s", d.seg, limit, d.errb.String())
	return ""
}

// wait waits for the demo to exit and returns its interval lines.
func (d *demoProc) wait(t *testing.T, limit time.Duration) []report.Interval {
	t.Helper()
	select {
	case <-d.done:
	case <-time.After(limit):
		t.Fatalf("demo %s still running after %v", d.seg, limit)
	}
	if d.runErr != nil {
		t.Fatalf("demo %s: %v\n%s", d.seg, d.runErr, d.errb.String())
	}
	var ivs []report.Interval
	sc := bufio.NewScanner(&d.out)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var r report.Interval
		err := json.Unmarshal(sc.Bytes(), &r)
		if err == nil && r.Type == "demo_summary" {
			continue // the demo's closing summary
		}
		if err != nil || r.Type != "interval" {
			t.Fatalf("demo %s: not an interval line (%v): %s", d.seg, err, sc.Text())
		}
		ivs = append(ivs, r)
	}
	return ivs
}
