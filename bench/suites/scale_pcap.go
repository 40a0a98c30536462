package suites

// scale-dpdk-pcap: `ldafwd run` on one queue and one core against two
// queues on two cores, on realistic traffic, each against dpdk-testpmd
// macswap with the same queues and cores in the same round.
//
// Port a is net_pcap replaying one capture per rx queue (infinite_rx=1):
// two captures of the suite's IMIX mix with different flows (seeds), the
// first alone for one queue, both for two (net_pcap has one rx queue per
// rx_pcap and adds a dropping tx queue for each); port b is net_null
// with no-rx=1. Each queue's frames are those of its capture, as RSS
// would spread flows over queues. `ldafwd run --queues 2 --cores 0,1`
// gives each worker queue q of both ports; testpmd --rxq 2 --txq 2
// --nb-cores 2 likewise.
//
// The headline is what dedicated cores would forward: frames per second
// of the forwarding threads' CPU time, times the number of forwarding
// threads (for ldafwd the two busiest threads, its pinned workers, which
// spin; for testpmd its forwarding lcores). The two-queue records carry
// vs_q1, their aggregate over the same configuration's one-queue rate,
// and testpmd_vs_q1, testpmd's own.

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/ldafwd/ldafwd/dpdk"
	"github.com/ldafwd/ldafwd/report"
)

func init() { register("scale-dpdk-pcap", benchScaleDPDKPcap) }

// scalePcapMix is one queue's capture: half the forward-dpdk-pcap mix's
// frames, so that two of them fit the port's mbuf pool with room to
// receive (infinite_rx keeps every frame of both in mbufs).
var scalePcapMix = func() mixConfig {
	c := defaultMix
	c.Frames, c.Flows = defaultMix.Frames/2, defaultMix.Flows/2
	return c
}()

// scalePcapCases are the ldafwd configurations measured on one and on
// two queues, as sender lanes (--segment-port b).
var scalePcapCases = []struct {
	tag  string
	args []string
}{
	{"lda", []string{"--segment-port", "b", "--insecure", "--synopsis", "lda"}},
	{"all", []string{"--segment-port", "b", "--insecure"}},
}

func benchScaleDPDKPcap(o *Options, emit func(report.Bench)) error {
	if !dpdk.Built {
		return fmt.Errorf("this ldafwd was built without DPDK: %w", dpdk.ErrNotBuilt)
	}
	if os.Geteuid() != 0 {
		return errNeedRoot
	}
	if runtime.NumCPU() < 2 {
		return fmt.Errorf("needs two CPUs, this machine has %d", runtime.NumCPU())
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "ldafwd-bench-scale-pcap-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	var paths [2]string
	var stats [2]mixStats
	for i := range paths {
		c := scalePcapMix
		c.Seed = int64(i + 1)
		frames, st, err := genMix(c)
		if err != nil {
			return err
		}
		paths[i] = filepath.Join(dir, fmt.Sprintf("queue%d.pcap", i))
		if err := writePcap(paths[i], frames); err != nil {
			return err
		}
		stats[i] = st
	}
	vdevA := func(nq int) string {
		v := "net_pcap0"
		for _, p := range paths[:nq] {
			v += ",rx_pcap=" + p
		}
		return v + ",infinite_rx=1"
	}
	const vdevB = "net_null0,no-rx=1"
	cores := []int{0, 1}
	per := nicRunTime(o)
	var pmd [2]nicSamples
	ours := make([][2]nicSamples, len(scalePcapCases))
	for r := 0; r < o.Rounds; r++ {
		for qi, nq := range []int{1, 2} {
			if err := pmd[qi].addTestpmd([]string{vdevA(nq), vdevB}, nq, cores, per); err != nil {
				return fmt.Errorf("scale-testpmd-pcap-q%d: %w", nq, err)
			}
			for ci, c := range scalePcapCases {
				args := append([]string{"run", "--port-a", "dpdk:" + vdevA(nq), "--port-b", "dpdk:" + vdevB}, c.args...)
				if nq == 2 {
					args = append(args, "--queues", "2", "--cores", "0,1")
				} else {
					args = append(args, "--cores", "1")
				}
				runFn := runSpinning // one pinned worker spins on its own core
				if nq == 2 {
					runFn = runChild // two workers share the CPUs with the process's other threads
				}
				run, err := runFn(exe, args, per)
				if err != nil {
					return fmt.Errorf("scale-dpdk-pcap-%s-q%d: %w", c.tag, nq, err)
				}
				cpuM := run.cpuMpps()
				if nq == 2 {
					cpuM = 0
					if w := run.topCPU[0] + run.topCPU[1]; w > 0 {
						cpuM = 2 * float64(run.frames) / w.Seconds() / 1e6
					}
				}
				ours[ci][qi].add(run.wallMpps(), cpuM)
			}
		}
	}
	extra := func(nq int) map[string]any {
		return map[string]any{"queues": nq, "cores": nq, "hugepages": hugeInUse(),
			"port_a": "net_pcap,infinite_rx=1, one rx_pcap per queue", "port_b": "net_null,no-rx=1",
			"frames_per_queue": stats[0].Frames, "flows_per_queue": stats[0].Flows,
			"shared_machine": "other jobs ran on these CPUs: the headline is per thread-CPU second, wall_mpps is what the jobs left"}
	}
	for qi, nq := range []int{1, 2} {
		e := extra(nq)
		if nq == 2 {
			vsQ1(e, &pmd, nil)
		}
		base := fmt.Sprintf("scale-testpmd-pcap-q%d", nq)
		emitNIC(emit, base, &pmd[qi], nil, "", true, e)
		for ci, c := range scalePcapCases {
			e := extra(nq)
			e["args"] = strings.Join(c.args, " ")
			if nq == 2 {
				vsQ1(e, &ours[ci], &pmd)
			}
			emitNIC(emit, fmt.Sprintf("scale-dpdk-pcap-%s-q%d", c.tag, nq), &ours[ci][qi], &pmd[qi], base, true, e)
		}
	}
	return nil
}
