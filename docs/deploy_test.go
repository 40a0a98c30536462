package docs

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/ldafwd/ldafwd/control"
)

// deployBlock is one fenced sh block of deploy.md and its marker's words.
type deployBlock struct {
	line  int
	words []string
	text  string
}

// deployBlocks reads deploy.md's sh blocks; it fails on a block without a
// `<!-- deploy-check: … -->` line right before it, since
// scripts/deploy-check.sh would silently leave it out.
func deployBlocks(t *testing.T) []deployBlock {
	t.Helper()
	page, err := os.ReadFile("deploy.md")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(page), "\n")
	var bs []deployBlock
	for i := 0; i < len(lines); i++ {
		if !strings.HasPrefix(lines[i], "```") {
			continue
		}
		open := i
		for i++; i < len(lines) && lines[i] != "```"; i++ {
		}
		if lines[open] != "```sh" {
			continue
		}
		var words []string
		if open > 0 && strings.HasPrefix(lines[open-1], "<!-- deploy-check: ") && strings.HasSuffix(lines[open-1], " -->") {
			words = strings.Fields(strings.TrimSuffix(strings.TrimPrefix(lines[open-1], "<!-- deploy-check: "), " -->"))
		}
		if len(words) == 0 {
			t.Errorf("deploy.md:%d: an sh block without a <!-- deploy-check: KINDS --> or <!-- deploy-check: skip (why) --> line before it", open+1)
		}
		bs = append(bs, deployBlock{line: open + 1, words: words, text: strings.Join(lines[open+1:i], "\n")})
	}
	return bs
}

// TestDeployBlocksMarked: every sh block of deploy.md says whether
// `make deploy-check` runs it (for which port kinds) or why not; the
// walk-through's commands that matter are among those it runs, for each
// kind; the MTU the guide gives is control.DefaultMTU.
func TestDeployBlocksMarked(t *testing.T) {
	run := map[string]string{}
	for _, b := range deployBlocks(t) {
		if len(b.words) > 0 && b.words[0] == "skip" {
			if len(b.words) < 2 || !strings.HasPrefix(b.words[1], "(") {
				t.Errorf("deploy.md:%d: skip without a reason in parentheses", b.line)
			}
			continue
		}
		for _, w := range b.words {
			switch w {
			case "afxdp", "dpdk":
				run[w] += b.text + "\n"
			case "running":
			default:
				t.Errorf("deploy.md:%d: marker word %q (want afxdp, dpdk, running or skip (why))", b.line, w)
			}
		}
	}
	mtu := strconv.Itoa(control.DefaultMTU)
	for _, kind := range []string{"afxdp", "dpdk"} {
		want := []string{"make install", "ldafwd keygen --out /etc/ldafwd/ldafwd.key", "mtu = " + mtu,
			"ldafwd run --check --config /etc/ldafwd/ldafwd.conf", "port-a = " + kind + ":", "ldafwd rules --paths",
			"promtool check rules", "systemd-analyze verify", "/healthz", "/metrics"}
		if kind == "afxdp" {
			want = append(want, "ip link set eth1 mtu "+mtu+" up", "ip link set eth2 mtu "+mtu+" up")
		}
		for _, w := range want {
			if !strings.Contains(run[kind], w) {
				t.Errorf("deploy.md: no block make deploy-check runs for %s has %q", kind, w)
			}
		}
	}
}
