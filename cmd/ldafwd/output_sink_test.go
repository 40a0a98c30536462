package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writing fails the command at start.
func TestReportFileUnwritable(t *testing.T) {
	// A path under a regular file: no one can create it, root included.
	notDir := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(notDir, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	o := outputFlags{format: "json", report: filepath.Join(notDir, "r.jsonl")}
	if _, _, err := o.open(os.Stdout); err == nil {
		t.Fatal("unwritable --report accepted")
	}
}

// TestDemoReportSinkFailing: `ldafwd demo --report` on a file that cannot
// take the lines (/dev/full) says so and exits non-zero.
func TestDemoReportSinkFailing(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full")
	}
	var out, errb bytes.Buffer
	err := demoMain([]string{"--duration", "600ms", "--interval", "200ms", "--rate", "2000", "--report", "/dev/full", "--format", "json"}, &out, &errb)
	if err == nil || !strings.Contains(err.Error(), "writing reports") {
		t.Fatalf("demo with a failing report sink: %v\n%s", err, errb.String())
	}
}
