package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/ldafwd/ldafwd/dpdk"
)

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
}

// TestBenchAFXDP runs the AF_XDP suite for one short round (root, not
// -short): three records, the forwarder's with measurement off and with
// the LDA, each against testpmd's, and no
// namespace or XDP program left behind.
func TestBenchAFXDP(t *testing.T) {
	recs := runAFXDPSuite(t, "forward-afxdp")
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
	recs := runAFXDPSuite(t, "scale-afxdp")
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

// runAFXDPSuite runs one AF_XDP bench suite for one short round and
// returns its records by name; it skips where the suite cannot run (-short,
// not root, no dpdk-testpmd).
func runAFXDPSuite(t *testing.T, suite string) map[string]map[string]any {
	t.Helper()
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
	if err := benchMain([]string{"--only", "^" + suite + "$", "--rounds", "1", "--duration", "1s", "--format", "json"}, &out, &errb); err != nil {
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
	return recs
}
