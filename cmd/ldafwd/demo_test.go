package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/ldafwd/ldafwd/appliance"
	"github.com/ldafwd/ldafwd/report"
)

// TestDemoJSON runs `ldafwd demo --format json` briefly and checks the demo's
// bar on what it prints: every interval valid, loss exact, the true mean
// inside the reported bound, and the true_* fields present.
func TestDemoJSON(t *testing.T) {
	var out, errb bytes.Buffer
	// Every synopsis, as the demo ships by default: the RDA proves each
	// lossy LDA line's loss (with the LDA alone, a lossy interval whose
	// buckets cannot rule out late packets is honestly invalid).
	// On simulated time: what the lines say is decided by the seed, not
	// by the host's load, so every interval is held to its truth.
	args := []string{"--duration", "3s", "--interval", "500ms", "--format", "json", "--rate", "10000", "--segment-name", "lab-7", "--simulated-time"}
	if err := demoMain(args, &out, &errb); err != nil {
		t.Fatalf("%v\n%s", err, errb.String())
	}
	n, inBound, valid := 0, 0, 0
	var sum report.DemoSummary
	summaries := 0
	sc := bufio.NewScanner(&out)
	for sc.Scan() {
		var r struct {
			Type         string
			Synopsis     string
			Flow         string
			Segment      string
			Interval     int64
			Direction    string
			Valid        bool
			Reason       string
			Sent         uint64
			Received     uint64
			Lost         uint64
			MeanNs       float64  `json:"mean_ns"`
			MeanCINs     float64  `json:"mean_ci_ns"`
			TrueMeanNs   *float64 `json:"true_mean_ns"`
			TrueStddevNs *float64 `json:"true_stddev_ns"`
			TrueLost     *uint64  `json:"true_lost"`
			ControlBytes int      `json:"control_bytes"`
		}
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("not JSON: %s", sc.Text())
		}
		if r.Type == "demo_summary" {
			if err := json.Unmarshal(sc.Bytes(), &sum); err != nil || summaries > 0 {
				t.Fatalf("demo_summary %s: %v (the %d-th)", sc.Text(), err, summaries+1)
			}
			summaries++
			continue
		}
		if summaries > 0 {
			t.Errorf("a line after the summary: %s", sc.Text())
		}
		if r.Type != "interval" || r.Direction != "a>b" || r.Segment != "lab-7" {
			t.Errorf("unexpected line %s", sc.Text())
		}
		if r.Synopsis != "lda" {
			continue
		}
		n++
		if !r.Valid {
			if r.Sent == 0 && r.Received == 0 || r.Reason == appliance.ReasonWarmup || strings.HasPrefix(r.Reason, appliance.ReasonNextMissing) || r.Reason == appliance.ReasonPrevMissing {
				// (A lossy last interval whose next one the stop cut
				// short cannot be told from one a packet crossed out of;
				// likewise a lossy first one after the receiver's start,
				// from one a packet overtook the start marker of.)
				// No traffic in it (the stop closed it right after a
				// boundary), or the one the receiver started in: nothing
				// to measure.
				n--
				continue
			}
			t.Errorf("interval %d invalid: %s", r.Interval, r.Reason)
			continue
		}
		valid++
		if r.TrueMeanNs == nil || r.TrueStddevNs == nil || r.TrueLost == nil {
			t.Errorf("interval %d lacks truth: %s", r.Interval, sc.Text())
			continue
		}
		if r.Lost != *r.TrueLost {
			t.Errorf("interval %d: lost %d, true %d", r.Interval, r.Lost, *r.TrueLost)
		}
		if d := r.MeanNs - *r.TrueMeanNs; d <= r.MeanCINs && -d <= r.MeanCINs {
			inBound++
		}
		// control_bytes counts every copy: the demo sends two, within the
		// budget (1 % of the data, at least appliance.MinControlBudget).
		if budget := max(r.Sent*128/100, appliance.MinControlBudget); r.ControlBytes <= 0 || uint64(r.ControlBytes) > budget {
			t.Errorf("interval %d: control traffic %d bytes, budget %d", r.Interval, r.ControlBytes, budget)
		}
	}
	if n < 4 {
		t.Fatalf("%d interval lines, want ≥ 4", n)
	}
	if valid == 0 {
		t.Fatalf("none of %d interval lines valid", n)
	}
	if float64(inBound) < 0.9*float64(n) {
		t.Errorf("true mean inside the bound in %d of %d intervals", inBound, n)
	}
	// The closing summary counts what the lines show.
	if summaries != 1 || sum.Generated == 0 || sum.Delivered > sum.Generated+sum.Duplicated || sum.SegmentLost > sum.Generated ||
		sum.Intervals != n || sum.MeanInBound != inBound || sum.Synopses != "all" {
		t.Errorf("demo_summary %+v: want one, with %d intervals, %d with the true mean in bound", sum, n, inBound)
	}
}

func TestDemoFlagErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--duration", "0s"}, "--duration"},
		{[]string{"--interval", "1ms"}, "--interval"},
		{[]string{"--delay", "weibull:mean=-1us"}, "--delay"},
		{[]string{"--loss", "uniform:rate=2"}, "--loss"},
		{[]string{"--reorder", "1"}, "--reorder"},
		{[]string{"--rate", "-5"}, "--rate"},
		{[]string{"--mec", "x=bogus:1"}, "--mec"},
		{[]string{"--format", "csv"}, "--format"},
		{[]string{"--synopsis", "xyz"}, "unknown synopsis"},
		{[]string{"--top", "0"}, "--top"},
		{[]string{"--segment-name", ""}, "--segment-name"},
		{[]string{"--metrics-addr", "256.0.0.1:99999"}, "--metrics-addr"},
		{[]string{"--microburst-gap", "-1ms"}, "--microburst-gap"},
		{[]string{"--microburst-min", "0"}, "--microburst-min"},
	} {
		var out, errb bytes.Buffer
		err := demoMain(tc.args, &out, &errb)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want an error naming %s", tc.args, err, tc.want)
		}
	}
}
