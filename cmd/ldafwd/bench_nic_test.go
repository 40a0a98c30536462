package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/ldafwd/ldafwd/dpdk"
	"github.com/ldafwd/ldafwd/report"
)

// TestEmitNIC pins the record arithmetic: medians of the rounds, the
// headline clock, and ratios against the baseline's medians.
func TestEmitNIC(t *testing.T) {
	var base, s nicSamples
	for _, r := range [][2]float64{{10, 20}, {12, 22}, {8, 18}} { // wall, cpu
		base.add(r[0], r[1])
	}
	for _, r := range [][2]float64{{6, 11}, {9, 15}, {5, 9}} {
		s.add(r[0], r[1])
	}
	var got []report.Bench
	emit := func(b report.Bench) { got = append(got, b) }
	emitNIC(emit, "x", &s, &base, "base", true, map[string]any{"core": 1})
	emitNIC(emit, "y", &s, &base, "base", false, nil)
	emitNIC(emit, "z", &base, nil, "", true, nil)
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
	x, y, z := got[0], got[1], got[2]
	if x.Mpps != 11 || !near(x.Ratio, 11.0/20) || x.Baseline != "base" || !near(x.NsPerPkt, 1e3/11) ||
		x.Extra["clock"] != "thread-cpu" || !near(x.Extra["wall_ratio"].(float64), 6.0/10) || x.Extra["core"] != 1 {
		t.Errorf("cpu headline record %+v", x)
	}
	if y.Mpps != 6 || !near(y.Ratio, 6.0/10) || y.Extra["clock"] != "wall" || !near(y.Extra["cpu_ratio"].(float64), 11.0/20) {
		t.Errorf("wall headline record %+v", y)
	}
	if z.Baseline != "" || z.Ratio != 0 || z.Mpps != 20 || !near(z.Extra["cpu_ns_per_pkt"].(float64), 50) {
		t.Errorf("baseline record %+v", z)
	}
}

// TestBenchNICListed checks both real-port suites are registered.
func TestBenchNICListed(t *testing.T) {
	var out, errb bytes.Buffer
	if err := benchMain([]string{"--list"}, &out, &errb); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"forward-dpdk-null", "forward-afxdp", "scale-afxdp"} {
		if !strings.Contains(out.String(), s+"\n") {
			t.Errorf("suite %s not listed:\n%s", s, out.String())
		}
	}
}

// TestBenchDPDKNotBuilt: a binary without DPDK says so instead of
// measuring nothing.
func TestBenchDPDKNotBuilt(t *testing.T) {
	if dpdk.Built {
		t.Skip("this test binary links DPDK (EAL can start once per process: the suite itself is run by make bench)")
	}
	var out, errb bytes.Buffer
	err := benchMain([]string{"--only", "^forward-dpdk-null$", "--rounds", "1"}, &out, &errb)
	if err == nil || !strings.Contains(errb.String(), "built without DPDK") {
		t.Fatalf("err %v, stderr %q", err, errb.String())
	}
	if err := benchForwardDPDKNull(&benchOptions{rounds: 1, duration: time.Second}, func(report.Bench) {}); !errors.Is(err, dpdk.ErrNotBuilt) {
		t.Errorf("suite error %v does not wrap dpdk.ErrNotBuilt", err)
	}
}

// TestBenchAFXDP runs the AF_XDP suite for one short round (root, not
// -short): three records, the forwarder's with measurement off and with
// the LDA, each against testpmd's, and no
// namespace or XDP program left behind.
func TestBenchAFXDP(t *testing.T) {
	if testing.Short() {
		t.Skip("runs benchmarks")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root (namespaces, XDP)")
	}
	if _, err := exec.LookPath("dpdk-testpmd"); err != nil {
		t.Skip("needs dpdk-testpmd")
	}
	var out, errb bytes.Buffer
	if err := benchMain([]string{"--only", "^forward-afxdp$", "--rounds", "1", "--duration", "1s", "--format", "json"}, &out, &errb); err != nil {
		t.Fatalf("%v\n%s", err, errb.String())
	}
	recs := map[string]map[string]any{}
	sc := bufio.NewScanner(&out)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("not JSON: %s", sc.Text())
		}
		recs[m["name"].(string)] = m
	}
	pmd := recs["testpmd-io-afxdp"]
	if pmd == nil || pmd["mpps"].(float64) <= 0 {
		t.Fatalf("testpmd record %v in %v", pmd, recs)
	}
	for _, name := range []string{"forward-afxdp-off", "forward-afxdp-lda"} {
		ours := recs[name]
		if ours == nil {
			t.Fatalf("no %s record in %v", name, recs)
		}
		if ours["mpps"].(float64) <= 0 || ours["baseline"] != "testpmd-io-afxdp" || ours["ratio"].(float64) <= 0 {
			t.Errorf("%s: %v against %v", name, ours, pmd)
		}
		if ex := ours["extra"].(map[string]any); ex["offered_mpps"].(float64) <= 0 {
			t.Errorf("%s: no offered rate: %v", name, ex)
		}
	}
	ns, _ := exec.Command("ip", "netns", "list").CombinedOutput()
	if strings.Contains(string(ns), fmt.Sprintf("ldafwd-bench-%d ", os.Getpid())) {
		t.Errorf("namespace left behind: %s", ns)
	}
}

// TestBenchScaleAFXDP runs the AF_XDP scaling suite for one short round
// (root, not -short): testpmd's 1-queue record, ours off and with the LDA
// on 1 and 2 queues, the 1-queue ones against testpmd, the 2-queue ones
// with their ratio to 1 queue and the reason they have no baseline; no
// namespace left behind.
func TestBenchScaleAFXDP(t *testing.T) {
	if testing.Short() {
		t.Skip("runs benchmarks")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root (namespaces, XDP)")
	}
	if _, err := exec.LookPath("dpdk-testpmd"); err != nil {
		t.Skip("needs dpdk-testpmd")
	}
	var out, errb bytes.Buffer
	if err := benchMain([]string{"--only", "^scale-afxdp$", "--rounds", "1", "--duration", "1s", "--format", "json"}, &out, &errb); err != nil {
		t.Fatalf("%v\n%s", err, errb.String())
	}
	recs := map[string]map[string]any{}
	sc := bufio.NewScanner(&out)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("not JSON: %s", sc.Text())
		}
		recs[m["name"].(string)] = m
	}
	if pmd := recs["scale-testpmd-afxdp-q1"]; pmd == nil || pmd["mpps"].(float64) <= 0 {
		t.Fatalf("testpmd record %v in %v", pmd, recs)
	}
	for _, tag := range []string{"off", "lda"} {
		q1, q2 := recs["scale-afxdp-"+tag+"-q1"], recs["scale-afxdp-"+tag+"-q2"]
		if q1 == nil || q2 == nil {
			t.Fatalf("no scale-afxdp-%s-q1/q2 records in %v", tag, recs)
		}
		if q1["mpps"].(float64) <= 0 || q1["baseline"] != "scale-testpmd-afxdp-q1" || q1["ratio"].(float64) <= 0 {
			t.Errorf("q1 %s: %v", tag, q1)
		}
		ex := q2["extra"].(map[string]any)
		if q2["mpps"].(float64) <= 0 || ex["vs_q1"].(float64) <= 0 || ex["queues"].(float64) != 2 || !strings.Contains(ex["testpmd"].(string), "net_af_xdp") {
			t.Errorf("q2 %s: %v", tag, q2)
		}
	}
	ns, _ := exec.Command("ip", "netns", "list").CombinedOutput()
	if strings.Contains(string(ns), fmt.Sprintf("ldafwd-bench-%d ", os.Getpid())) {
		t.Errorf("namespace left behind: %s", ns)
	}
}
