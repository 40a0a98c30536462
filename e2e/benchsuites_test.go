package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"testing"
)

// The bench suites that run `ldafwd run` as children (os.Executable), run
// here from a built binary for one short round (root, a DPDK build,
// dpdk-testpmd, not -short). Each record must carry a rate and the
// ldafwd ones their ratio to the round's testpmd. Rates are not held to
// a goal: a timed test on a shared machine would fail by chance;
// docs/performance.md gives the measured figures.

// TestBenchScaleDPDKPcap: testpmd and `ldafwd run` (the LDA alone and the
// default synopses) on one net_pcap queue and on two, the two-queue
// records with their factor over one queue.
func TestBenchScaleDPDKPcap(t *testing.T) {
	recs := runBenchSuite(t, "scale-dpdk-pcap")
	for _, q := range []string{"q1", "q2"} {
		base := "scale-testpmd-pcap-" + q
		if r := recs[base]; r == nil || r["mpps"].(float64) <= 0 {
			t.Errorf("%s: %v", base, r)
		}
		for _, tag := range []string{"lda", "all"} {
			ex := checkAgainst(t, recs, "scale-dpdk-pcap-"+tag+"-"+q, base)
			if v, _ := ex["vs_q1"].(float64); ex != nil && q == "q2" && v <= 0 {
				t.Errorf("%s %s: no vs_q1 in %v", tag, q, ex)
			}
		}
	}
}

// TestBenchForwardAFXDPRun: testpmd on net_af_xdp and `ldafwd run` on
// the same veth pairs (forwarding only, the LDA, the default synopses),
// each with the offered rate, the fraction of it forwarded, and that
// fraction's ratio to testpmd's.
func TestBenchForwardAFXDPRun(t *testing.T) {
	recs := runBenchSuite(t, "forward-afxdp-run")
	const base = "testpmd-io-afxdp-run"
	if r := recs[base]; r == nil || r["mpps"].(float64) <= 0 {
		t.Fatalf("%s: %v", base, r)
	}
	for _, name := range []string{"run-afxdp-forward-only", "run-afxdp-lda", "run-afxdp-all"} {
		if ex := checkAgainst(t, recs, name, base); ex != nil {
			for _, k := range []string{"offered_mpps", "carried", "carried_ratio"} {
				if v, _ := ex[k].(float64); v <= 0 {
					t.Errorf("%s: no %s in %v", name, k, ex)
				}
			}
		}
	}
}

// runBenchSuite runs `ldafwd bench --only ^suite$` for one round of 1 s
// and returns its records by name.
func runBenchSuite(t *testing.T, suite string) map[string]map[string]any {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: the bench suites run in the plain pass")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root (DPDK vdevs, XDP)")
	}
	bin := ldafwdBinary(t, true)
	if _, err := exec.LookPath("dpdk-testpmd"); err != nil {
		t.Skip("no dpdk-testpmd")
	}
	cmd := exec.Command(bin, "bench", "--only", "^"+suite+"$", "--rounds", "1", "--duration", "1s", "--format", "json")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%v: %s", err, stderr.String())
	}
	recs := map[string]map[string]any{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		var r map[string]any
		if json.Unmarshal(sc.Bytes(), &r) == nil {
			if n, ok := r["name"].(string); ok {
				recs[n] = r
			}
		}
	}
	return recs
}

// checkAgainst checks that record name has a rate and its ratio to base,
// logs them and returns its extra (nil when it is missing or wrong).
func checkAgainst(t *testing.T, recs map[string]map[string]any, name, base string) map[string]any {
	t.Helper()
	r := recs[name]
	if r == nil {
		t.Errorf("no %s record in %v", name, recs)
		return nil
	}
	ex, _ := r["extra"].(map[string]any)
	mpps, _ := r["mpps"].(float64)
	ratio, _ := r["ratio"].(float64)
	if mpps <= 0 || r["baseline"] != base || ratio <= 0 || ex == nil {
		t.Errorf("%s: %v", name, r)
		return nil
	}
	t.Logf("%s: %.2f Mpps, %.2f × %s, vs_q1 %v", name, mpps, ratio, base, ex["vs_q1"])
	return ex
}
