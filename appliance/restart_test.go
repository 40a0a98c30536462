package appliance_test

import (
	"strings"
	"testing"
	"time"

	"github.com/ldafwd/ldafwd/appliance"
)

// TestRestartReportsNotRunning: a receiver told where an earlier run's
// reports ended (Config.LastReported, what run reads back from its report
// file) reports every interval since then invalid with ReasonNotRunning
// before its own first line, so its direction's interval numbers have no
// hole; a gap beyond MaxNotRunning is one line spanning it, and numbers
// that do not move forward invent no gap.
func TestRestartReportsNotRunning(t *testing.T) {
	if raceEnabled {
		t.Skip("judges timing")
	}
	const iv = 100 * time.Millisecond
	for _, tc := range []struct {
		name string
		back uint64 // the last reported interval is this many before the start's
		gap  bool   // lines for the gap are expected
		long bool   // as one spanning line
	}{
		{"short gap", 6, true, false},
		{"long gap", appliance.MaxNotRunning + 10, true, true},
		{"ahead", 0, false, false}, // the file's last interval is after our start: nothing invented
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPair(t, iv, 4096, nil, nil)
			k0 := uint64(time.Now().UnixNano() / iv.Nanoseconds())
			last := k0 - tc.back
			if !tc.gap {
				last = k0 + 50
			}
			p.c2.LastReported = map[string]uint64{"a>b": last, "b>a": 1} // b>a is another receiver's
			var err error
			if p.a2, err = appliance.New(p.c2); err != nil {
				t.Fatal(err)
			}
			p.run(8*iv, 2000, nil, nil)
			p.mu.Lock()
			defer p.mu.Unlock()
			var ks []int64
			gapLines := 0
			for _, r := range p.lines {
				if r.Direction != "a>b" {
					t.Errorf("line of direction %s", r.Direction)
				}
				if r.MEC != "all" || r.Synopsis != "lda" {
					continue
				}
				t.Logf("%d valid=%v sent=%d received=%d %s", r.Interval, r.Valid, r.Sent, r.Received, r.Reason)
				if strings.HasPrefix(r.Reason, appliance.ReasonNotRunning) {
					gapLines++
					if r.Valid || r.Received != 0 || r.Sent != 0 {
						t.Errorf("gap line %+v", r)
					}
					if tc.long && (r.Interval != int64(last+1) || r.EndNs-r.StartNs < int64(appliance.MaxNotRunning)*iv.Nanoseconds()) {
						t.Errorf("the spanning line %d covers %d..%d ns", r.Interval, r.StartNs, r.EndNs)
					}
					if !tc.long && (r.StartNs != r.Interval*iv.Nanoseconds() || r.EndNs != r.StartNs+iv.Nanoseconds()) {
						t.Errorf("gap line %d spans %d..%d", r.Interval, r.StartNs, r.EndNs)
					}
				}
				if n := len(ks); n > 0 && r.Interval != ks[n-1]+1 && !(tc.long && ks[n-1] == int64(last+1)) {
					t.Errorf("interval %d follows %d", r.Interval, ks[n-1])
				}
				ks = append(ks, r.Interval)
			}
			switch {
			case len(ks) == 0:
				t.Fatal("no lines")
			case tc.gap && ks[0] != int64(last+1):
				t.Errorf("first line %d, want %d (the one after the last reported)", ks[0], last+1)
			case tc.long && gapLines != 1:
				t.Errorf("%d gap lines, want one spanning line", gapLines)
			case !tc.long && tc.gap && gapLines < int(tc.back)-1:
				t.Errorf("%d gap lines for a gap of %d intervals", gapLines, tc.back)
			case !tc.gap && gapLines != 0:
				t.Errorf("%d gap lines where the numbers did not move forward", gapLines)
			}
			if log := p.log2.String(); tc.gap && !strings.Contains(log, "receiver was not running") {
				t.Errorf("the gap is not logged:\n%s", log)
			} else if !tc.gap && !strings.Contains(log, "before the last one the report file holds") {
				t.Errorf("the backward numbers are not logged:\n%s", log)
			}
		})
	}
}
