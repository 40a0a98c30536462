package suites

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/ldafwd/ldafwd/dpdk"
	"github.com/ldafwd/ldafwd/report"
)

// TestEmitNIC pins the record arithmetic: medians of the rounds, the
// headline clock, and ratios against the baseline's medians.
func TestEmitNIC(t *testing.T) {
	var base, s nicSamples
	for _, r := range [][2]float64{{10, 20}, {12, 22}, {8, 18}} { // wall, cpu
		base.add(r[0], r[1])
	}
	for _, r := range [][2]float64{{6, 11}, {9, 15}, {5, 9}} {
		s.add(r[0], r[1])
	}
	var got []report.Bench
	emit := func(b report.Bench) { got = append(got, b) }
	emitNIC(emit, "x", &s, &base, "base", true, map[string]any{"core": 1})
	emitNIC(emit, "y", &s, &base, "base", false, nil)
	emitNIC(emit, "z", &base, nil, "", true, nil)
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
	x, y, z := got[0], got[1], got[2]
	if x.Mpps != 11 || !near(x.Ratio, 11.0/20) || x.Baseline != "base" || !near(x.NsPerPkt, 1e3/11) ||
		x.Extra["clock"] != "thread-cpu" || !near(x.Extra["wall_ratio"].(float64), 6.0/10) || x.Extra["core"] != 1 {
		t.Errorf("cpu headline record %+v", x)
	}
	if y.Mpps != 6 || !near(y.Ratio, 6.0/10) || y.Extra["clock"] != "wall" || !near(y.Extra["cpu_ratio"].(float64), 11.0/20) {
		t.Errorf("wall headline record %+v", y)
	}
	if z.Baseline != "" || z.Ratio != 0 || z.Mpps != 20 || !near(z.Extra["cpu_ns_per_pkt"].(float64), 50) {
		t.Errorf("baseline record %+v", z)
	}
}

// TestDPDKNotBuilt: a binary without DPDK says so instead of measuring
// nothing.
func TestDPDKNotBuilt(t *testing.T) {
	if dpdk.Built {
		t.Skip("this test binary links DPDK (EAL can start once per process: the suite itself is run by make bench)")
	}
	if err := benchForwardDPDKNull(&Options{Rounds: 1, Duration: time.Second}, func(report.Bench) {}); !errors.Is(err, dpdk.ErrNotBuilt) {
		t.Errorf("suite error %v does not wrap dpdk.ErrNotBuilt", err)
	}
}

// TestAllSorted: ldafwd bench --list and the run order are by name, and
// every suite is there once.
func TestAllSorted(t *testing.T) {
	all := All()
	want := []string{"forward-afxdp", "forward-afxdp-run", "forward-dpdk-null", "forward-dpdk-pcap", "forward-ring", "perpacket", "scale-afxdp", "scale-dpdk-null", "scale-dpdk-pcap"}
	if len(all) != len(want) {
		t.Fatalf("%d suites, want %v", len(all), want)
	}
	for i, s := range all {
		if s.Name != want[i] || s.Run == nil {
			t.Errorf("suite %d: %q, want %q", i, s.Name, want[i])
		}
	}
}

// TestForwardRingTakesSize: bench --size reaches the forward-ring suite
// (a size its ring ports cannot carry is refused there).
func TestForwardRingTakesSize(t *testing.T) {
	if err := benchForwardRing(&Options{Rounds: 1, Duration: 50 * time.Millisecond, Size: 4000}, func(report.Bench) {}); err == nil {
		t.Error("forward-ring ran 4000-byte frames: --size did not reach it")
	}
}
