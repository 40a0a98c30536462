package bench

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"
)

const testpmdOut = `
  ---------------------- Forward statistics for port 0  ----------------------
  RX-packets: 768            RX-dropped: 0             RX-total: 768
  TX-packets: 760            TX-dropped: 8             TX-total: 768
  ----------------------------------------------------------------------------

  ---------------------- Forward statistics for port 1  ----------------------
  RX-packets: 768            RX-dropped: 0             RX-total: 768
  TX-packets: 768            TX-dropped: 0             TX-total: 768
  ----------------------------------------------------------------------------

  +++++++++++++++ Accumulated forward statistics for all ports+++++++++++++++
  RX-packets: 1536           RX-dropped: 3             RX-total: 1539
  TX-packets: 1528           TX-dropped: 8             TX-total: 1536
  ++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++

Done.
`

func TestParseTestpmd(t *testing.T) {
	r, err := ParseTestpmd(testpmdOut)
	if err != nil {
		t.Fatal(err)
	}
	if r.RxPackets != 1536 || r.RxDropped != 3 || r.TxPackets != 1528 || r.TxDropped != 8 {
		t.Fatalf("%+v", r)
	}
	for _, bad := range []string{"", "Bye...", "Accumulated forward statistics for all ports+++\n  RX-packets: 1\n+++++++++++++"} {
		if _, err := ParseTestpmd(bad); err == nil {
			t.Errorf("ParseTestpmd(%q) succeeded", bad)
		}
	}
}

func FuzzParseTestpmd(f *testing.F) {
	f.Add(testpmdOut)
	f.Add("Forward statistics for port 0\nRX-packets: 5 RX-dropped: 1\nTX-packets: 4 TX-dropped: 0\n")
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseTestpmd(s)
		if err == nil && r.Mpps != 0 {
			t.Fatalf("parse set Mpps: %+v", r)
		}
	})
}

// TestRunTestpmd runs the real baseline briefly on two net_null vdevs.
func TestRunTestpmd(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("dpdk-testpmd needs root")
	}
	d := 2 * time.Second
	if testing.Short() {
		d = 500 * time.Millisecond
	}
	// The probe is a clock: what it advances over the run is the span
	// Mpps covers, from forwarding's start to its stop.
	epoch := time.Now()
	r, err := RunTestpmd(context.Background(), TestpmdConfig{
		Vdevs: []string{"net_null0,copy=1", "net_null1,copy=1"}, MainCore: 0, FwdCore: 1, Duration: d,
		Probe: func() uint64 { return uint64(time.Since(epoch)) },
	})
	if errors.Is(err, ErrNoTestpmd) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if r.TxPackets == 0 || r.Mpps <= 0 || r.Elapsed < d {
		t.Fatalf("%+v", r)
	}
	if p := time.Duration(r.Probed); p > r.Elapsed || p < d || r.Elapsed-p > 100*time.Millisecond {
		t.Errorf("probe advanced %v over a run of %v (forwarding %v): not the span Mpps covers", p, r.Elapsed, d)
	}
	t.Logf("testpmd macswap net_null: %.2f Mpps (%d packets in %v); forwarding thread CPU %v = %.1f cpu-ns/pkt",
		r.Mpps, r.TxPackets, r.Elapsed, r.FwdCPU, r.CPUNsPerPkt)
}
