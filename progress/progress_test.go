package progress

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"time"
)

// fakeTTY is a writer that says it is a terminal.
type fakeTTY struct{ bytes.Buffer }

func (*fakeTTY) IsTerminal() bool { return true }

// TestMeterOnOff: a terminal gets lines, --quiet and a non-terminal get
// nothing at all.
func TestMeterOnOff(t *testing.T) {
	var tty fakeTTY
	m := New(&tty, false)
	m.Set("case %d", 1)
	m.Update("x")
	m.Clear()
	if !strings.Contains(tty.String(), "case 1") || !strings.HasSuffix(tty.String(), "\r\x1b[K") {
		t.Errorf("terminal got %q", tty.String())
	}
	var quiet fakeTTY
	New(&quiet, true).Set("case 1")
	var buf bytes.Buffer
	n := New(&buf, false)
	n.Set("case 1")
	n.Update("x")
	n.Clear()
	if quiet.Len() != 0 || buf.Len() != 0 {
		t.Errorf("quiet %q, non-terminal %q", quiet.String(), buf.String())
	}
	var nilm *Meter
	nilm.Set("x") // a nil meter is off
	f, err := os.CreateTemp(t.TempDir(), "f")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if IsTerminal(f) {
		t.Error("a regular file is a terminal")
	}
}

// TestMeterRate: Update draws at most every Every, Set always; the rate
// and ETA follow the clock.
func TestMeterRate(t *testing.T) {
	now := time.Unix(100, 0)
	var buf bytes.Buffer
	m := NewWith(&buf, true, time.Second, func() time.Time { return now })
	m.Update("a")
	now = now.Add(500 * time.Millisecond)
	m.Update("b") // too soon
	m.Set("c")
	now = now.Add(time.Second)
	m.Update("d")
	if got := strings.ReplaceAll(buf.String(), "\r\x1b[K", "|"); got != "|a|c|d" {
		t.Errorf("drawn %q, want |a|c|d", got)
	}
	// 1.5 s for a quarter: 4.5 s left; 100 units in 1.5 s.
	if left, ok := m.ETA(25, 100); !ok || left != 4500*time.Millisecond {
		t.Errorf("ETA %v %v", left, ok)
	}
	if _, ok := m.ETA(0, 100); ok {
		t.Error("ETA with nothing done")
	}
	if r := m.Rate(150); r != 100 {
		t.Errorf("rate %g", r)
	}
	if s := FormatETA(65*time.Second, true); s != "ETA 1m5s" {
		t.Errorf("%q", s)
	}
}
