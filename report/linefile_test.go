package report

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
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
	lf := &LineFile{f: d, regular: true}
	w := NewWriter(lf)
	var failed int
	for i := 0; i < 10; i++ {
		if err := w.Write(&Interval{Interval: int64(i), Direction: "a>b", MEC: "all", Synopsis: "lda", Valid: true}); err != nil {
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
	if err := w.Write(&Interval{Interval: 99, Direction: "a>b", MEC: "all", Synopsis: "lda"}); err != nil {
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
// TestReportFileEndsTornLine: a report file left with a partial last line
// gets a newline before the first new line, so the new lines read.
func TestReportFileEndsTornLine(t *testing.T) {
	p := filepath.Join(t.TempDir(), "r.jsonl")
	os.WriteFile(p, []byte(`{"type":"interval","interval":1}`+"\n"+`{"type":"inter`), 0o644)
	f, err := OpenLineFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte(`{"type":"interval","interval":2}` + "\n")); err != nil {
		t.Fatal(err)
	}
	f.Close()
	b, _ := os.ReadFile(p)
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if len(lines) != 3 || lines[1] != `{"type":"inter` || lines[2]+"\n" != `{"type":"interval","interval":2}`+"\n" {
		t.Fatalf("file:\n%s", b)
	}
	// A file that ends with a newline is left as it is.
	f, _ = OpenLineFile(p)
	f.Close()
	if c, _ := os.ReadFile(p); !bytes.Equal(c, b) {
		t.Errorf("reopening changed the file:\n%s", c)
	}
}
