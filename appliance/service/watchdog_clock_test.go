package service

import (
	"bytes"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/ldafwd/ldafwd/appliance"
	"github.com/ldafwd/ldafwd/control"
	"github.com/ldafwd/ldafwd/dataplane"
	"github.com/ldafwd/ldafwd/metrics"
	"github.com/ldafwd/ldafwd/report"
	"github.com/rs/zerolog"
)

// TestWatchdogClockOffset: an offset estimate beyond half the round trip
// (one direction's raw delay negative beyond the bound) raises "clock"
// at the end whose own delays look fine; one the delays can explain
// does not, and clears it.
func TestWatchdogClockOffset(t *testing.T) {
	w := &watchdog{clock: map[string]string{}}
	line := func(k int64, fwd, rev, ci float64) *report.Interval {
		return &report.Interval{Interval: k, Direction: "a>b", Synopsis: "lda", MEC: "all", Valid: true, Samples: 100,
			MeanNs: fwd, MeanCINs: ci, Extra: map[string]any{"clock_offset_ns": (fwd - rev) / 2, "clock_offset_ci_ns": ci,
				"clock_offset_interval": uint64(k - 2), "clock_reverse_mean_ns": rev}}
	}
	// Symmetric 500 µs, this end 800 µs ahead: a→b reads 1300 µs, b→a −300 µs.
	w.observe(line(10, 1_300_000, -300_000, 2_000))
	got := w.clock["a>b offset"]
	if !strings.Contains(got, "ahead of the peer's by 800.0 ± 2.0 µs") || !strings.Contains(got, "round trip (500.0 µs)") {
		t.Fatalf("clock check: %q (all: %v)", got, w.clock)
	}
	if _, own := w.clock["a>b"]; own {
		t.Errorf("this end's own mean is positive, yet its negative-delay check fired: %v", w.clock)
	}
	// 300 µs offset on 500 µs delays: explained by asymmetry, clears.
	w.observe(line(11, 800_000, 200_000, 2_000))
	if len(w.clock) != 0 {
		t.Errorf("an offset the delays explain: %v", w.clock)
	}
	// Beyond half the round trip, but not by more than its bound: no verdict.
	w.observe(line(12, 1_010_000, -10_000, 30_000))
	if len(w.clock) != 0 {
		t.Errorf("within the bound: %v", w.clock)
	}
	// Behind: the sign is named.
	w.observe(line(13, -300_000, 1_300_000, 2_000))
	if got := w.clock["a>b offset"]; !strings.Contains(got, "behind the peer's by 800.0") {
		t.Errorf("behind: %q", got)
	}
}

// fakePeer is a peer that is heard (control frames accepted) and agrees
// (every check has paired an interval). A slow one's intervals pair only
// as bundles says; mismatch, once set, is its configuration differing.
type fakePeer struct {
	n        uint64
	slow     bool
	bundles  uint64
	mismatch *appliance.PeerMismatch
}

func (f *fakePeer) ControlCounters() control.Counters {
	f.n++
	if !f.slow {
		f.bundles = f.n
	}
	return control.Counters{Accepted: f.n, Bundles: f.bundles}
}
func (f *fakePeer) PeerConfigMismatch() *appliance.PeerMismatch { return f.mismatch }
func (f *fakePeer) Lanes() (sender, receiver *dataplane.Lane) {
	return &dataplane.Lane{}, &dataplane.Lane{}
}

// newWatchdogRig is run's output writing into buf, for a watchdog at now.
func newWatchdogRig() (*bytes.Buffer, *Config, *metrics.Metrics, *runOutput, time.Time) {
	var buf bytes.Buffer
	o := &Config{Interval: 100 * time.Millisecond, SegmentName: "lab"}
	m := metrics.New("lab", nil)
	out := &runOutput{}
	out.init(o, report.NewWriter(&buf), nil, m, zerolog.Nop())
	return &buf, o, m, out, time.Unix(1_700_000_000, 0)
}

// TestWatchdogClockStatus: through run's output, a line whose offset
// estimate the delays cannot explain makes the next check write a
// degraded status line with a "clock" problem and sets the metric; a
// line the delays explain brings the status back to ok.
func TestWatchdogClockStatus(t *testing.T) {
	buf, o, m, out, now := newWatchdogRig()
	w := newWatchdog(o, &fakePeer{}, out, m, zerolog.Nop(), now)
	out.setWatchdog(w)
	line := func(k int64, fwd, rev float64) *report.Interval {
		return &report.Interval{Type: "interval", Interval: k, Direction: "a>b", Synopsis: "lda", MEC: "all", Valid: true, Samples: 100, Received: 100,
			MeanNs: fwd, MeanCINs: 2e3, Extra: map[string]any{"clock_offset_ns": (fwd - rev) / 2, "clock_offset_ci_ns": 2e3,
				"clock_offset_interval": uint64(k - 2), "clock_reverse_mean_ns": rev}}
	}
	out.interval(line(10, 1_300_000, -300_000))
	w.check(now.Add(50*time.Millisecond), false)
	if !strings.Contains(buf.String(), `"status":"degraded"`) || !strings.Contains(buf.String(), `"check":"clock"`) ||
		!strings.Contains(buf.String(), "ahead of the peer's by 800.0") {
		t.Fatalf("no clock status:\n%s", buf.String())
	}
	mfs, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	gauge := math.NaN()
	for _, mf := range mfs {
		if mf.GetName() == "ldafwd_clock_offset_seconds" && len(mf.GetMetric()) == 1 {
			gauge = mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	if gauge != 800e-6 {
		t.Errorf("ldafwd_clock_offset_seconds %v, want 800e-6", gauge)
	}
	buf.Reset()
	out.interval(line(11, 800_000, 200_000))
	w.check(now.Add(100*time.Millisecond), false)
	if !strings.Contains(buf.String(), `"status":"ok"`) {
		t.Errorf("no ok status after an offset the delays explain:\n%s", buf.String())
	}
}

// TestWatchdogOkOnlyOnceCompared: a peer that is heard but whose
// intervals have not yet been compared with our configuration gets no
// "ok" (a slow control side pairs its first interval late, and may then
// find the configurations differ); the check after the drain reports a
// mismatch found while draining, however long the drain took, and does
// not call the stopped peer silent.
func TestWatchdogOkOnlyOnceCompared(t *testing.T) {
	buf, o, m, out, now := newWatchdogRig()
	p := &fakePeer{slow: true}
	w := newWatchdog(o, p, out, m, zerolog.Nop(), now)
	for i := 1; i <= 5; i++ {
		w.check(now.Add(time.Duration(i)*50*time.Millisecond), false)
	}
	if buf.Len() != 0 {
		t.Fatalf("a status before any interval was compared:\n%s", buf.String())
	}
	p.mismatch = &appliance.PeerMismatch{At: now.Add(time.Second), Interval: 7, Detail: "interval: sender 200ms, ours 100ms", Settings: []string{"interval"}}
	// The drain took longer than the mismatch is held for: still reported.
	w.check(now.Add(2*time.Second), true)
	got := buf.String()
	if !strings.Contains(got, `"check":"peer_config"`) || strings.Contains(got, "peer_silent") {
		t.Fatalf("final check: want peer_config and no peer_silent:\n%s", got)
	}
	buf.Reset()
	p2 := &fakePeer{slow: true, bundles: 1}
	w2 := newWatchdog(o, p2, out, m, zerolog.Nop(), now)
	w2.check(now.Add(50*time.Millisecond), false)
	if !strings.Contains(buf.String(), `"status":"ok"`) {
		t.Errorf("no ok once an interval was compared:\n%s", buf.String())
	}
}
