package main

import (
	"os/exec"
	"strings"
	"testing"
)

// The shipped binary does not link the testing package (its flags, its
// init): test helpers the command uses take interfaces, not testing.TB.
func TestNoTestingInBinary(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("needs the go command")
	}
	for _, tags := range []string{"", "dpdk"} {
		out, err := exec.Command(gobin, "list", "-tags", tags, "-deps", ".").Output()
		if err != nil {
			t.Fatalf("go list -tags %q -deps: %v", tags, err)
		}
		for _, p := range strings.Fields(string(out)) {
			if p == "testing" || strings.HasPrefix(p, "testing/") {
				t.Errorf("go list -tags %q -deps ./cmd/ldafwd: links %s", tags, p)
			}
		}
	}
}
