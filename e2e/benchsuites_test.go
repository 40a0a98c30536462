package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"testing"
)

// TestBenchScaleDPDKPcap runs the two-queue suite on IP traffic for one
// short round (root, a DPDK build, not -short): testpmd and `ldafwd run`
// (the LDA alone and the default synopses) on one queue and on two, each
// record with a rate, the ldafwd ones against the same queues' testpmd,
// the two-queue ones with their factor over one queue. Rates are not
// held to a goal here: a timed test on a shared machine would fail by
// chance; docs/performance.md gives the measured figures.
func TestBenchScaleDPDKPcap(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the bench suite runs in the plain pass")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root (DPDK vdevs)")
	}
	bin := ldafwdBinary(t, true)
	if _, err := exec.LookPath("dpdk-testpmd"); err != nil {
		t.Skip("no dpdk-testpmd")
	}
	cmd := exec.Command(bin, "bench", "--only", "^scale-dpdk-pcap$", "--rounds", "1", "--duration", "1s", "--format", "json")
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
	for _, q := range []string{"q1", "q2"} {
		base := "scale-testpmd-pcap-" + q
		if r := recs[base]; r == nil || r["mpps"].(float64) <= 0 {
			t.Errorf("%s: %v", base, r)
		}
		for _, tag := range []string{"lda", "all"} {
			name := "scale-dpdk-pcap-" + tag + "-" + q
			r := recs[name]
			if r == nil {
				t.Errorf("no %s record in %v", name, recs)
				continue
			}
			ex, _ := r["extra"].(map[string]any)
			if r["mpps"].(float64) <= 0 || r["baseline"] != base || r["ratio"].(float64) <= 0 || ex == nil {
				t.Errorf("%s: %v", name, r)
				continue
			}
			if v, _ := ex["vs_q1"].(float64); q == "q2" && v <= 0 {
				t.Errorf("%s: no vs_q1 in %v", name, ex)
			}
			t.Logf("%s: %.2f Mpps per CPU second, %.2f × testpmd, vs_q1 %v", name, r["mpps"], r["ratio"], ex["vs_q1"])
		}
	}
}
