package suites

import (
	"fmt"
	"runtime"
	"strconv"
	"time"

	"github.com/ldafwd/ldafwd/bench"
	"github.com/ldafwd/ldafwd/dataplane"
	"github.com/ldafwd/ldafwd/dataplane/afxdp"
	"github.com/ldafwd/ldafwd/report"
)

// The AF_XDP part of the scaling suite: our native AF_XDP ports on veth
// pairs with 1 queue (one worker) and with 2 queues (one worker per
// queue, each owning queue q of both ports, as `run --queues 2` does),
// forwarding off and with the LDA, round by round in one command, medians
// kept; the 1-queue runs against dpdk-testpmd io on DPDK's net_af_xdp on
// the same pair. testpmd cannot run 2 queues of a veth (noTestpmdQ2).
//
// Records: scale-testpmd-afxdp-q1, scale-afxdp-{off,lda}-q1 (against
// testpmd q1) and -q2 (no baseline); the q2 records carry vs_q1
// (wall-clock forwarded rate over the 1-queue rate) and cpu_vs_q1 (the
// same per thread-CPU second). The headline is the wall-clock forwarded rate, as in
// forward-afxdp: the veth copy paths and the generator bound it, and a
// polling forwarder's CPU time says nothing there. One veth setup per
// queue count (a veth's queue count is fixed at creation); the generator
// (one thread on the first CPU, frames on the queue SteerQueue gives)
// runs through the whole suite of that queue count.
func init() { register("scale-afxdp", benchScaleAFXDP) }

// noTestpmdQ2 is why the 2-queue records have no testpmd baseline.
const noTestpmdQ2 = "none: DPDK 22.11's net_af_xdp sizes its queues by the interface's combined channels (ETHTOOL_GCHANNELS), which veth does not report, so it takes one queue of a veth ('Specified queue count 2 is larger than combined queue count 1')"

func benchScaleAFXDP(o *Options, emit func(report.Bench)) error {
	if runtime.NumCPU() < 2 {
		return fmt.Errorf("needs two CPUs, this machine has %d", runtime.NumCPU())
	}
	if err := dataplane.CheckCore(1); err != nil {
		return err
	}
	cores := []int{0, 1}
	per := nicRunTime(o)
	var pmd, off, lda [2]nicSamples
	var offered [2][]float64
	for qi, nq := range []int{1, 2} {
		if err := scaleAFXDPQueues(o, nq, cores, per, &pmd[qi], &off[qi], &lda[qi], &offered[qi]); err != nil {
			return fmt.Errorf("scale-afxdp q%d: %w", nq, err)
		}
	}
	extra := func(qi, nq int) map[string]any {
		return map[string]any{"queues": nq, "cores": nq, "offered_mpps": median(offered[qi]), "burst": dataplane.DefaultLaneBurst,
			"note": "copy-mode AF_XDP on veth, generator on CPU 0 shared with the first worker"}
	}
	for qi, nq := range []int{1, 2} {
		name := fmt.Sprintf("scale-testpmd-afxdp-q%d", nq)
		base := &pmd[qi]
		if nq == 1 {
			emitNIC(emit, name, base, nil, "", false, extra(qi, nq))
		} else {
			base, name = nil, ""
		}
		for _, c := range []struct {
			tag string
			s   *[2]nicSamples
		}{{"off", &off}, {"lda", &lda}} {
			e := extra(qi, nq)
			if nq == 2 {
				e["vs_q1"] = ratio(median(c.s[1].wall), median(c.s[0].wall))
				e["cpu_vs_q1"] = ratio(median(c.s[1].cpu), median(c.s[0].cpu))
				e["testpmd"] = noTestpmdQ2
			}
			emitNIC(emit, fmt.Sprintf("scale-afxdp-%s-q%d", c.tag, nq), &c.s[qi], base, name, false, e)
		}
	}
	return nil
}

// scaleAFXDPQueues runs o.Rounds rounds of testpmd, ours off and ours
// with the LDA on fresh nq-queue veth pairs.
func scaleAFXDPQueues(o *Options, nq int, cores []int, per time.Duration, pmd, off, lda *nicSamples, offered *[]float64) error {
	v, err := newVethBench(nq)
	if err != nil {
		return err
	}
	defer v.Delete()
	g, err := startGen(v, cores[0], nq)
	if err != nil {
		return err
	}
	defer func() { _ = g.Stop() }()
	qc := strconv.Itoa(nq)
	for r := 0; r < o.Rounds; r++ {
		if nq == 1 { // no testpmd baseline with 2 queues: noTestpmdQ2
			cfg := bench.TestpmdConfig{
				Vdevs: []string{
					"net_af_xdp0,iface=" + v.A + ",start_queue=0,queue_count=" + qc,
					"net_af_xdp1,iface=" + v.B + ",start_queue=0,queue_count=" + qc},
				MainCore: cores[0], FwdCore: cores[1], ForwardMode: "io", Duration: per}
			res, err := runTestpmdBusy(cfg)
			if err != nil {
				return fmt.Errorf("testpmd: %w", err)
			}
			cpuM := 0.0
			if res.CPUNsPerPkt > 0 {
				cpuM = 1e3 / res.CPUNsPerPkt
			}
			pmd.add(res.Mpps, cpuM)
			v.detachXDP()
		}
		for _, withLDA := range []bool{false, true} {
			run, cpuRate, rate, err := scaleAFXDPOnce(v, g, nq, cores, per, withLDA)
			if err != nil {
				return err
			}
			if withLDA {
				lda.add(run.mpps(), cpuRate)
				*offered = append(*offered, rate)
			} else {
				off.add(run.mpps(), cpuRate)
			}
		}
	}
	return nil
}

// scaleAFXDPOnce opens nq queues of A and B, runs one worker per queue
// pair (both directions of queue q on cores[2-nq+q]) for d and returns
// the run, the aggregate per-CPU-second rate and the generator's rate
// over it.
func scaleAFXDPOnce(v *vethBench, g *afxdpGen, nq int, cores []int, d time.Duration, withLDA bool) (laneRun, float64, float64, error) {
	open := func(ifname string, index uint8) (*afxdp.Queues, error) {
		deadline := time.Now().Add(3 * time.Second)
		for {
			m, err := afxdp.OpenQueues("afxdp:"+ifname, nq, afxdp.Config{Index: index})
			if err == nil || time.Now().After(deadline) {
				return m, err
			}
			time.Sleep(50 * time.Millisecond) // the previous sockets' deferred release (openBusy)
		}
	}
	a, err := open(v.A, 0)
	if err != nil {
		return laneRun{}, 0, 0, err
	}
	defer a.Close()
	b, err := open(v.B, uint8(nq))
	if err != nil {
		return laneRun{}, 0, 0, err
	}
	defer b.Close()
	var groups [][]*dataplane.Lane
	for q := 0; q < nq; q++ {
		ab, err := benchLane(a.Queue(q), b.Queue(q), withLDA, dataplane.DefaultLaneBurst)
		if err != nil {
			return laneRun{}, 0, 0, err
		}
		ba, err := benchLane(b.Queue(q), a.Queue(q), withLDA, dataplane.DefaultLaneBurst)
		if err != nil {
			return laneRun{}, 0, 0, err
		}
		groups = append(groups, []*dataplane.Lane{ab, ba})
	}
	s0, t0 := g.sent.Load(), time.Now()
	run, cpuRate, err := runWorkers(groups, cores[2-nq:], d, false)
	rate := float64(g.sent.Load()-s0) / time.Since(t0).Seconds() / 1e6
	if err != nil {
		return run, 0, rate, err
	}
	run.rxDropped = a.Stats().RxDropped
	return run, cpuRate, rate, nil
}
