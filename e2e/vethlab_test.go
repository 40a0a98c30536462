package e2e

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/ldafwd/ldafwd/internal/tooltest"
	"github.com/ldafwd/ldafwd/report"
)

// vethLabBlock is the sh block of docs/afxdp.md after the line marking it
// as the veth lab.
func vethLabBlock(t *testing.T) string {
	t.Helper()
	page, err := os.ReadFile("../docs/afxdp.md")
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(page), "<!-- veth-lab:")
	if !ok {
		t.Fatal("docs/afxdp.md has no line marking the veth lab (<!-- veth-lab: … -->)")
	}
	_, after, ok = strings.Cut(after, "```sh\n")
	block, _, ok2 := strings.Cut(after, "```\n")
	if !ok || !ok2 {
		t.Fatal("docs/afxdp.md: no sh block after the veth lab's marker")
	}
	return block
}

// TestVethLabQuickstart: docs/afxdp.md's veth lab, run as written with
// the default flags it gives (no --min-delay or other range) with the binary as
// /usr/local/bin/ldafwd, in network, mount and PID namespaces of its own
// (its namespaces, interfaces and /tmp vanish with them): every ping is answered through both
// appliances, and from the second interval on each appliance's report
// file holds lines that count the ping traffic, none invalid for delays
// below --min-delay (copy-mode transmit stamps on veth are taken after
// the peer's receive stamp; the default range must admit them), none
// with a loss the segment did not have, and each direction's lines in
// interval order (ldafwd#2 starts first: the intervals before ldafwd#1's
// first are declared silent after later ones have paired).
func TestVethLabQuickstart(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two appliances for five seconds")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root: network namespaces and AF_XDP")
	}
	for _, tool := range [][2]string{{"unshare", "util-linux"}, {"ip", "iproute2"}, {"ethtool", "ethtool"}, {"ping", "iputils-ping"}} {
		tooltest.Require(t, tool[0], tool[1])
	}
	bin := ldafwdBinary(t, false)
	block := vethLabBlock(t)
	script := `set -euo pipefail
mount --make-rprivate /
mount -t tmpfs tmpfs /usr/local/bin
cp "$LDAFWD_BIN" /usr/local/bin/ldafwd
mount -t tmpfs tmpfs /tmp
mkdir -p /run/netns && mount -t tmpfs tmpfs /run/netns
ip link set lo up
` + block + `
kill -TERM $(jobs -p)
wait
echo '#### ldafwd1'; cat /tmp/ldafwd1.jsonl
echo '#### ldafwd2'; cat /tmp/ldafwd2.jsonl
`
	cmd := exec.Command("unshare", "--mount", "--net", "--pid", "--fork", "bash", "-c", script)
	cmd.Env = append(os.Environ(), "LDAFWD_BIN="+bin, "PATH=/usr/local/bin:"+os.Getenv("PATH"))
	out, err := cmd.Output()
	var stderr string
	if ee, ok := err.(*exec.ExitError); ok {
		stderr = string(ee.Stderr)
	}
	if err != nil {
		t.Fatalf("the lab: %v\n%s\n%s", err, out, stderr[max(len(stderr)-4000, 0):])
	}
	text, files, _ := strings.Cut(string(out), "#### ldafwd1\n")
	if m := regexp.MustCompile(`(\d+) packets transmitted, (\d+) received`).FindStringSubmatch(text); m == nil || m[1] != m[2] {
		t.Errorf("not every ping was answered through the appliances:\n%s", text)
	}
	f1, f2, _ := strings.Cut(files, "#### ldafwd2\n")
	for i, f := range []string{f1, f2} {
		checkVethLabReports(t, i+1, f)
	}
}

// checkVethLabReports holds one appliance's report file to what the veth
// lab promises.
func checkVethLabReports(t *testing.T, n int, file string) {
	t.Helper()
	var first int64
	counted := 0
	last := map[string]int64{} // each direction's, class's and synopsis's lines in interval order
	sc := bufio.NewScanner(strings.NewReader(file))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var r report.Interval
		if json.Unmarshal(sc.Bytes(), &r) != nil || r.Type != "interval" || r.Flow != "" {
			continue
		}
		if first == 0 {
			first = r.Interval
		}
		key := r.Direction + " " + r.MEC + " " + r.Synopsis
		if k, ok := last[key]; ok && r.Interval <= k && r.ReasonCode != report.Recut.String() {
			t.Errorf("ldafwd#%d: %s line of interval %d after interval %d's (%s: %s)", n, key, r.Interval, k, r.ReasonCode, r.Reason)
		}
		last[key] = max(last[key], r.Interval)
		if r.ReasonCode == report.DelayBelowMin.String() || strings.Contains(r.Reason, "min-delay") {
			t.Errorf("ldafwd#%d: interval %d %s line invalid for its delay range with default flags: %s", n, r.Interval, r.Synopsis, r.Reason)
		}
		if r.Interval == first || !r.LossValid {
			continue
		}
		if r.Lost != 0 {
			t.Errorf("ldafwd#%d: interval %d %s line: %d lost on a lossless veth", n, r.Interval, r.Synopsis, r.Lost)
		}
		if r.Synopsis == "lda" && r.Received > 0 {
			counted++
		}
	}
	t.Logf("ldafwd#%d: %d LDA lines counted the traffic", n, counted)
	if counted == 0 {
		t.Errorf("ldafwd#%d: no LDA line after the first counted the pings with valid loss:\n%s", n, file)
	}
}
