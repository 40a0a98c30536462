package appliance

import (
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ldafwd/ldafwd/classifier"
	"github.com/ldafwd/ldafwd/control"
	"github.com/ldafwd/ldafwd/dataplane"
	"github.com/ldafwd/ldafwd/report"
	"github.com/ldafwd/ldafwd/synopsis"
	"github.com/rs/zerolog"
)

// numbersController is a stopped-state controller of a 1 s receiver
// whose clock reads clk (ns), counting the lines it reports.
func numbersController(t *testing.T, clk *atomic.Uint64, lines *atomic.Int64, log *strings.Builder) *controller {
	t.Helper()
	a := stoppedAppliance(t, "b", clk, zerolog.New(log), func(*report.Interval) { lines.Add(1) })
	a.ctl.startAt(clk.Load())
	return a.ctl
}

// stoppedAppliance is an appliance of 1 s intervals with the LDA, its
// segment port on side seg, on a ring link of its own, whose clock reads
// clk (ns); never started.
func stoppedAppliance(t *testing.T, seg string, clk *atomic.Uint64, log zerolog.Logger, reports func(*report.Interval)) *Appliance {
	t.Helper()
	link, err := dataplane.NewRingLink("", dataplane.LinkConfig{Size: 64, Pool: 256})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { link.A().Close(); link.B().Close() })
	cl, _ := classifier.NewClassifier(nil)
	a, err := New(Config{PortA: link.A(), PortB: link.B(), Segment: seg, Interval: time.Second, Classifier: cl,
		Syn: dataplane.SynConfig{LDA: synopsis.DefaultLDAConfig()}, Insecure: true, Clock: clk.Load, Log: log, Reports: reports})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// boundedRun runs f and fails unless it returns within limit having
// reported at most maxLines lines and grown the heap by at most 64 MiB.
// On the old code f counted towards billions of intervals: the test stops
// waiting (the goroutine spins on; the binary fails anyway).
func boundedRun(t *testing.T, f func(), lines *atomic.Int64, maxLines int64, limit time.Duration) {
	t.Helper()
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	done := make(chan struct{})
	start := time.Now()
	go func() { f(); close(done) }()
	select {
	case <-done:
	case <-time.After(limit):
		runtime.ReadMemStats(&m1)
		t.Fatalf("still running after %v, heap %d → %d MiB", limit, m0.HeapAlloc>>20, m1.HeapAlloc>>20)
	}
	runtime.ReadMemStats(&m1)
	t.Logf("%v, %d lines, heap %d → %d KiB", time.Since(start).Round(time.Microsecond), lines.Load(), m0.HeapAlloc>>10, m1.HeapAlloc>>10)
	if n := lines.Load(); n > maxLines {
		t.Errorf("%d lines, want at most %d", n, maxLines)
	}
	if m1.HeapAlloc > m0.HeapAlloc+64<<20 {
		t.Errorf("heap grew from %d to %d MiB", m0.HeapAlloc>>20, m1.HeapAlloc>>20)
	}
}

// TestStopPeerNumbering: the final report at stop (silentAtStop) declares
// only intervals of our own numbering, at most the claim memory of them,
// whatever numbers the peer's failures claimed. A peer with a 500 ms
// interval numbers its intervals twice as high as a 1 s receiver; one
// with a 2 s interval half as high; a peer clock far ahead (or a restart
// with another clock) anywhere above. The old code counted from our
// interval to the peer's: about 1.8 billion lines at today's clock, a
// stop that never ended.
//
// Each case runs first with a clock of 200 000 s after the epoch (a gap of
// 10⁵ intervals the old code would survive, to fail on) and, only if that
// passed, with today's clock.
func TestStopPeerNumbering(t *testing.T) {
	const sec = uint64(time.Second)
	for _, tc := range []struct {
		name string
		peer func(k uint64) uint64 // the peer's number for our interval k
	}{
		{"peer interval 500ms", func(k uint64) uint64 { return 2 * k }},
		{"peer interval 2s", func(k uint64) uint64 { return k / 2 }},
		{"peer clock ahead", func(k uint64) uint64 { return k + 100_000 }},
		{"peer clock behind", func(k uint64) uint64 { return k - 100_000 }},
		{"peer clock ahead by days", func(k uint64) uint64 { return k + 1<<40 }},
	} {
		for _, now := range []uint64{200_000 * sec, uint64(time.Now().UnixNano())} {
			ok := t.Run(tc.name, func(t *testing.T) {
				var clk atomic.Uint64
				var lines atomic.Int64
				var log strings.Builder
				clk.Store(now - 20*sec)
				c := numbersController(t, &clk, &lines, &log)
				// 20 s of running: our intervals silent (the peer's
				// numbers never match ours), the peer's failing with a
				// configuration mismatch at its numbers.
				for i := uint64(0); i < 20; i++ {
					clk.Add(sec)
					k := clk.Load()/sec - 1
					c.invalid(tc.peer(k), 0, 0, nil, report.Cause{Code: report.PeerMismatch, Why: control.ReasonConfigMismatch.String()})
					c.silent(clk.Load())
				}
				// Our last interval paired (its line is out): the ones
				// between it and the last silent declared are silent.
				kLast := clk.Load()/sec - 1
				c.claim(kLast)
				due := c.led.nextDue
				before := lines.Load()
				lines.Store(0)
				var got []int64
				c.a.cfg.Reports = func(r *report.Interval) {
					lines.Add(1)
					got = append(got, r.Interval)
					if r.Reason != silentCause.Why {
						t.Errorf("line %d at stop: %q", r.Interval, r.Reason)
					}
				}
				boundedRun(t, c.final, &lines, claimMemory, 5*time.Second)
				t.Logf("%d lines while running", before)
				if len(got) == 0 {
					t.Fatalf("nothing declared silent at stop, want %d…%d", due, kLast-1)
				}
				if len(got) != int(kLast-due) || got[0] != int64(due) || got[len(got)-1] != int64(kLast-1) {
					t.Errorf("silent at stop: %d lines (%d…%d), want %d…%d", len(got), got[0], got[len(got)-1], due, kLast-1)
				}
			})
			if !ok {
				break
			}
		}
	}
}

// TestSilentClockJump: silent declares at most claimMemory intervals one
// by one; our clock jumping ahead by more (stepped, or the process
// stopped) is one line spanning the rest, named and logged. A clock
// stepped back declares nothing until it is past the last declared
// interval again, and then carries on one by one.
func TestSilentClockJump(t *testing.T) {
	const sec = uint64(time.Second)
	var clk atomic.Uint64
	var lines atomic.Int64
	var log strings.Builder
	now := uint64(time.Now().UnixNano())
	clk.Store(now)
	c := numbersController(t, &clk, &lines, &log)
	c.silent(clk.Load())
	var got []*report.Interval
	c.a.cfg.Reports = func(r *report.Interval) { lines.Add(1); got = append(got, r) }
	// 30 s of running: one line per interval past the lag.
	for range 30 {
		clk.Add(sec)
		c.silent(clk.Load())
	}
	lag := uint64(c.a.cfg.PairTimeout.Nanoseconds())/sec + 2
	if want := int64(30 - lag); lines.Load() < want-1 || lines.Load() > want+1 {
		t.Fatalf("%d lines in 30 s, want about %d", lines.Load(), want)
	}
	for _, jump := range []uint64{100_000, 1 << 33} {
		lines.Store(0)
		got = got[:0]
		due := c.led.nextDue
		clk.Add(jump * sec)
		boundedRun(t, func() { c.silent(clk.Load()) }, &lines, claimMemory+1, 5*time.Second)
		if len(got) == 0 || !strings.Contains(got[0].Reason, "one line for intervals") || got[0].Interval != int64(due) {
			t.Fatalf("first line after a jump of %d: %+v", jump, got[0])
		}
		if span := uint64(got[0].EndNs - got[0].StartNs); span < (jump-claimMemory)*sec {
			t.Errorf("the spanning line covers %d s of a %d s jump", span/sec, jump)
		}
		for i, r := range got[1:] {
			if r.Interval != got[i].Interval+1 && i > 0 || strings.Contains(r.Reason, "one line") {
				t.Errorf("line %d: interval %d after %d, %q", i+1, r.Interval, got[i].Interval, r.Reason)
			}
		}
		if !strings.Contains(log.String(), "clock jumped ahead") {
			t.Errorf("the jump is not logged:\n%s", log.String())
		}
	}
	// Back by a day: nothing, however long it runs, until it is past.
	lines.Store(0)
	clk.Add(^(86400*sec - 1)) // −1 day
	for range 10 {
		clk.Add(sec)
		c.silent(clk.Load())
	}
	if lines.Load() != 0 {
		t.Errorf("%d lines after the clock stepped back", lines.Load())
	}
	clk.Add(86400 * sec)
	boundedRun(t, func() { c.silent(clk.Load()) }, &lines, 20, time.Second)
}
