package appliance_test

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ldafwd/ldafwd/appliance"
	"github.com/ldafwd/ldafwd/appliance/demo"
	"github.com/ldafwd/ldafwd/classifier"
	"github.com/ldafwd/ldafwd/dataplane"
	"github.com/ldafwd/ldafwd/model"
	"github.com/ldafwd/ldafwd/report"
	"github.com/ldafwd/ldafwd/synopsis"
	"github.com/rs/zerolog"
)

// TestRestartReportsNotRunning: a receiver told where an earlier run's
// reports ended (Config.LastReported, what run reads back from its report
// file) reports every interval since then invalid with ReasonNotRunning
// before its own first line, so its direction's interval numbers have no
// hole; a gap beyond MaxNotRunning is one line spanning it, and numbers
// that do not move forward invent no gap. On simulated time: the
// intervals fall where the test puts them, whatever the host's load.
func TestRestartReportsNotRunning(t *testing.T) {
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
			// On simulated time the run starts at SimStartNs, on an
			// interval boundary.
			k0 := demo.SimStartNs / uint64(iv.Nanoseconds())
			last := k0 - tc.back
			if !tc.gap {
				last = k0 + 50
			}
			var log strings.Builder
			cl, _ := classifier.NewClassifier(nil)
			delay, _ := model.NewWeibull(30_000, 0.7)
			var lines []report.Interval
			_, err := demo.Run(demo.Config{
				Duration: 8 * iv, Interval: iv, Delay: delay, Loss: model.NoLoss{}, Rate: 2000, Seed: 4,
				Syn: dataplane.SynConfig{LDA: synopsis.DefaultLDAConfig()}, Classifier: cl, Insecure: true, SimulatedTime: true,
				LastReported: map[string]uint64{"a>b": last, "b>a": 1}, // b>a is another receiver's
				Log:          zerolog.New(&log),
				Reports:      func(r *report.Interval) { lines = append(lines, *r) },
			})
			if err != nil {
				t.Fatal(err)
			}
			var ks []int64
			gapLines := 0
			for _, r := range lines {
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
			case !tc.long && tc.gap && gapLines != int(tc.back)-1:
				// The run starts at k0's start: k0 is the warm-up copy's,
				// the gap last+1 … k0−1.
				t.Errorf("%d gap lines for a gap of %d intervals, want %d", gapLines, tc.back-1, tc.back-1)
			case !tc.gap && gapLines != 0:
				t.Errorf("%d gap lines where the numbers did not move forward", gapLines)
			}
			if tc.gap && !strings.Contains(log.String(), "receiver was not running") {
				t.Errorf("the gap is not logged:\n%s", log.String())
			} else if !tc.gap && !strings.Contains(log.String(), "before the last one the report file holds") {
				t.Errorf("the backward numbers are not logged:\n%s", log.String())
			}
		})
	}
}

// killablePort is a port of a process that can be killed: from kill on
// it neither sends nor receives (the process is gone; what it held is
// lost with it).
type killablePort struct {
	dataplane.Port
	dead atomic.Bool
}

func (k *killablePort) TxBurst(pkts []*dataplane.Packet) int {
	if k.dead.Load() {
		k.Port.Free(pkts)
		return len(pkts)
	}
	return k.Port.TxBurst(pkts)
}

func (k *killablePort) RxBurst(pkts []*dataplane.Packet) int {
	if k.dead.Load() {
		return 0
	}
	return k.Port.RxBurst(pkts)
}

// TestSenderKilled: the sender is killed mid-interval (no End marker, no
// synopses for the interval it was in) and started again after a few
// intervals, a new session. The surviving receiver reports each interval
// once, without a hole, and every frame it recorded is in exactly one
// line — the interval the dead session left open ends at the new
// session's first End marker and is reported invalid with the frames in
// it; every interval in which frames reached the segment has its line.
func TestSenderKilled(t *testing.T) {
	if raceEnabled {
		t.Skip("judges timing")
	}
	const iv = 200 * time.Millisecond
	seg := &killablePort{}
	p := newPair(t, iv, 4096, func(q dataplane.Port) dataplane.Port { seg.Port = q; return seg }, nil)
	raw := seg.Port
	acted := false
	p.run(14*iv, 3000, nil, func(e time.Duration) {
		if acted || e < 5*iv+2*iv/5 {
			return
		}
		acted = true
		seg.dead.Store(true)
		p.a1.Stop(0) // the killed process's remains: nothing reaches the segment
		time.Sleep(3 * iv)
		seg = &killablePort{Port: raw}
		p.c1.PortB = seg
		var err error
		if p.a1, err = appliance.New(p.c1); err != nil {
			t.Fatal(err)
		}
		p.a1.Start()
	})
	_, r := p.a2.Lanes()
	recorded := r.Stats.Recorded.Load()
	p.mu.Lock()
	defer p.mu.Unlock()
	var reported uint64
	seen := map[int64]int{}
	var first, last int64
	for _, l := range p.lines {
		if l.Synopsis != "lda" || l.MEC != "all" {
			continue
		}
		t.Logf("%d valid=%v sent=%d received=%d %s", l.Interval, l.Valid, l.Sent, l.Received, l.Reason)
		reported += l.Received
		seen[l.Interval]++
		if first == 0 || l.Interval < first {
			first = l.Interval
		}
		last = max(last, l.Interval)
		if !l.Valid && l.Reason == "" {
			t.Errorf("interval %d invalid without a reason", l.Interval)
		}
	}
	if reported != recorded {
		t.Errorf("#2 recorded %d frames, its lines account for %d", recorded, reported)
	}
	for k := first; k <= last; k++ {
		if n := seen[k]; n != 1 {
			t.Errorf("interval %d reported %d times", k, n)
		}
	}
	for k, tr := range p.truths {
		if int64(k) >= first && int64(k) <= last && tr.Delivered+tr.Lost > 0 && seen[int64(k)] == 0 {
			t.Errorf("interval %d: %d frames crossed the segment, no line", k, tr.Delivered+tr.Lost)
		}
	}
	if !strings.Contains(p.log2.String(), "peer restarted") {
		t.Errorf("the survivor did not log the peer's restart:\n%s", p.log2.String())
	}
}
