package main

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/ldafwd/ldafwd/dpdk"
)

// TestBinaryLinksNoTesting: the shipped binary must not link the testing
// package (test helpers that leak into a command bring its flags and its
// init into every run). It asks the go command, for this build's tags.
func TestBinaryLinksNoTesting(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	args := []string{"list", "-deps"}
	if dpdk.Built {
		args = append(args, "-tags", "dpdk")
	}
	out, err := exec.Command("go", append(args, ".")...).CombinedOutput()
	if err != nil {
		t.Skipf("go list: %v: %s", err, out)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 10 {
		t.Fatalf("go list -deps printed %d packages: %s", len(deps), out)
	}
	for _, d := range deps {
		if d == "testing" || strings.HasPrefix(d, "testing/") || strings.HasSuffix(d, "/nettest") || strings.HasSuffix(d, "/porttest") {
			t.Errorf("cmd/ldafwd links %s", d)
		}
	}
}
