package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/ldafwd/ldafwd/report"
)

// fullDisk takes bytes until its room is used up, then writes what fits
// and fails with ENOSPC, as a file on a full disk does.
type fullDisk struct {
	buf  bytes.Buffer
	room int
}

func (d *fullDisk) Write(b []byte) (int, error) {
	if len(b) <= d.room {
		d.room -= len(b)
		return d.buf.Write(b)
	}
	n := d.room
	d.buf.Write(b[:n])
	d.room = 0
	return n, syscall.ENOSPC
}

func (d *fullDisk) Truncate(size int64) error { d.buf.Truncate(int(size)); return nil }
func (d *fullDisk) Close() error              { return nil }

// TestReportSinkFullDiskLeavesNoCorruptLine: when the disk fills mid-line,
// the partial line is cut off again: the file holds complete JSON lines
// only, every failed line is an error to the caller, and lines fit again
// once there is room.
func TestReportSinkFullDiskLeavesNoCorruptLine(t *testing.T) {
	d := &fullDisk{room: 300}
	lf := &lineFile{f: d, regular: true}
	w := report.NewWriter(lf)
	var failed int
	for i := 0; i < 10; i++ {
		if err := w.Write(&report.Interval{Interval: int64(i), Direction: "a>b", MEC: "all", Synopsis: "lda", Valid: true}); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("line %d: %v", i, err)
			}
			failed++
		}
	}
	if failed == 0 {
		t.Fatal("the disk never filled")
	}
	d.room = 1 << 20 // space freed
	if err := w.Write(&report.Interval{Interval: 99, Direction: "a>b", MEC: "all", Synopsis: "lda"}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(d.buf.String(), "\n"), "\n")
	if len(lines) != 10-failed+1 {
		t.Fatalf("%d lines in the file, want %d", len(lines), 10-failed+1)
	}
	for _, l := range lines {
		if !strings.HasPrefix(l, `{"type":"interval"`) || !strings.HasSuffix(l, "}") {
			t.Fatalf("corrupt line %q", l)
		}
	}
}

// TestReportFileUnwritable: a --report path that cannot be opened for
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
