package service

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

func ivLine(k int, dir string) string {
	return fmt.Sprintf(`{"type":"interval","interval":%d,"start_ns":0,"end_ns":0,"direction":%q,"mec":"all","synopsis":"lda","valid":true,"config":"interval=100ms mecs=all lda=1:0"}`+"\n", k, dir)
}

// TestReadReportTail: the last interval per direction, whatever else the
// end of the file holds — a partial line a kill left, foreign lines, port
// records, a window that starts inside a line — and nothing but a read
// error is an error.
func TestReadReportTail(t *testing.T) {
	port := `{"type":"port","port":"a","rx_packets":1}` + "\n"
	for _, tc := range []struct {
		name    string
		content string
		want    map[string]uint64
		torn    bool
		foreign int
	}{
		{"empty", "", map[string]uint64{}, false, 0},
		{"one direction", ivLine(10, "a>b") + ivLine(11, "a>b") + port, map[string]uint64{"a>b": 11}, false, 0},
		{"both directions", ivLine(10, "a>b") + ivLine(12, "b>a") + ivLine(11, "a>b"), map[string]uint64{"a>b": 11, "b>a": 12}, false, 0},
		{"torn last line", ivLine(10, "a>b") + ivLine(11, "a>b")[:40], map[string]uint64{"a>b": 10}, true, 0},
		{"torn, nothing before", ivLine(11, "a>b")[:40], map[string]uint64{}, true, 0},
		{"torn line inside", ivLine(10, "a>b")[:40] + "\n" + ivLine(11, "a>b"), map[string]uint64{"a>b": 11}, false, 1},
		{"foreign text", "hello\nworld\n", map[string]uint64{}, false, 2},
		{"foreign binary", "\x00\x01\x02\xff", map[string]uint64{}, true, 0},
		{"foreign JSON", `{"a":1}` + "\n" + `[1,2]` + "\n" + `{"type":"interval","interval":-3,"direction":"a>b"}` + "\n", map[string]uint64{}, false, 2},
		{"blank lines", "\n\n" + ivLine(7, "a>b") + "\n", map[string]uint64{"a>b": 7}, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := strings.NewReader(tc.content)
			got, err := readReportTail(r, int64(len(tc.content)))
			if err != nil {
				t.Fatal(err)
			}
			if len(got.last) != len(tc.want) {
				t.Errorf("last %v, want %v", got.last, tc.want)
			}
			for d, k := range tc.want {
				if got.last[d].k != k {
					t.Errorf("%s: last %d, want %d", d, got.last[d].k, k)
				}
			}
			if got.torn != tc.torn || got.foreign != tc.foreign {
				t.Errorf("torn %v foreign %d, want %v %d", got.torn, got.foreign, tc.torn, tc.foreign)
			}
		})
	}
	// Only the last reportTailBytes are read; the window's first, partial
	// line is not counted as foreign.
	var b strings.Builder
	for k := 0; b.Len() < reportTailBytes+5000; k++ {
		b.WriteString(ivLine(1000+k, "a>b"))
	}
	b.WriteString(ivLine(5, "b>a"))
	s := b.String()
	got, err := readReportTail(strings.NewReader(s), int64(len(s)))
	if err != nil {
		t.Fatal(err)
	}
	if got.foreign != 0 || got.torn || got.last["b>a"].k != 5 || got.last["a>b"].k < 1000 {
		t.Errorf("large file: %+v", got)
	}
}

// TestLastReported: the file is read back as run does at start — a
// missing file or a device gives nothing, another --interval's numbers
// are not used, and the logs say what was skipped.
func TestLastReported(t *testing.T) {
	dir := t.TempDir()
	var log bytes.Buffer
	l := zerolog.New(&log)
	if got := LastReported(filepath.Join(dir, "none"), 100*time.Millisecond, l); got != nil {
		t.Errorf("missing file: %v", got)
	}
	if got := LastReported(os.DevNull, 100*time.Millisecond, l); got != nil {
		t.Errorf("%s: %v", os.DevNull, got)
	}
	p := filepath.Join(dir, "r.jsonl")
	os.WriteFile(p, []byte("not ours\n"+ivLine(41, "a>b")+ivLine(42, "a>b")[:30]), 0o644)
	got := LastReported(p, 100*time.Millisecond, l)
	if got["a>b"] != 41 || len(got) != 1 {
		t.Errorf("got %v, want a>b 41", got)
	}
	for _, want := range []string{"partial line", "not report lines", `"interval":41`} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("no %q in the log:\n%s", want, log.String())
		}
	}
	log.Reset()
	if got := LastReported(p, time.Second, l); len(got) != 0 {
		t.Errorf("another interval length: %v", got)
	}
	if !strings.Contains(log.String(), "another --interval") {
		t.Errorf("the other interval length is not logged:\n%s", log.String())
	}
}
