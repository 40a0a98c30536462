package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
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

// Size limits of the command: it parses flags and wires packages
// together, and the work lives in the packages (appliance/service,
// bench/suites, analyze, sim, report). A command that grows past these
// is growing logic that belongs to a package.
const (
	maxCmdLines     = 1500 // all non-test .go files of cmd/ldafwd
	maxCmdFileLines = 300  // any one of them
)

// TestCommandStaysThin holds cmd/ldafwd to maxCmdLines lines of non-test
// Go in all and maxCmdFileLines in any file.
func TestCommandStaysThin(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	total, counted := 0, 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		n := bytes.Count(b, []byte{'\n'})
		if len(b) > 0 && b[len(b)-1] != '\n' {
			n++
		}
		if n > maxCmdFileLines {
			t.Errorf("%s: %d lines, more than %d: move what is not flag parsing or wiring to a package", f, n, maxCmdFileLines)
		}
		total += n
		counted++
	}
	if counted < 5 {
		t.Fatalf("found %d non-test Go files: not run in cmd/ldafwd?", counted)
	}
	if total >= maxCmdLines {
		t.Errorf("cmd/ldafwd: %d lines of non-test Go in %d files, want fewer than %d", total, counted, maxCmdLines)
	}
	t.Logf("cmd/ldafwd: %d lines in %d files", total, counted)
}
