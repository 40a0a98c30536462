package suites

// Real-port forwarding suites of `ldafwd bench`: our lanes on
// DPDK and AF_XDP ports against dpdk-testpmd on the same devices and the
// same single forwarding core, run round by round in one command so that
// the ratio is measured under the same load.
//
//   forward-dpdk-null  records testpmd-macswap-null, forward-dpdk-null-port
//                      (ports alone), forward-dpdk-null-fwd (the ports'
//                      Forwarder path), forward-dpdk-null-off and
//                      forward-dpdk-null-lda (a binary built without DPDK
//                      reports that it was)
//   forward-afxdp      records testpmd-io-afxdp, forward-afxdp-off and forward-afxdp-lda
//                      (this file)
//
// Both need root (EAL, network namespaces, XDP) and two CPUs: the
// forwarding core is the last CPU, testpmd's main lcore and the AF_XDP
// traffic generator use CPU 0.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"

	"github.com/ldafwd/ldafwd/bench"
	"github.com/ldafwd/ldafwd/classifier"
	"github.com/ldafwd/ldafwd/dataplane"
	"github.com/ldafwd/ldafwd/dataplane/afxdp"
	"github.com/ldafwd/ldafwd/dataplane/netns"
	"github.com/ldafwd/ldafwd/dpdk"
	"github.com/ldafwd/ldafwd/report"
	"github.com/ldafwd/ldafwd/synopsis"
)

func init() { register("forward-afxdp", benchForwardAFXDP) }

// errNeedRoot is what a real-port suite says when it cannot run.
var errNeedRoot = errors.New("needs root (EAL, network namespaces, XDP programs); run `sudo ldafwd bench`")

// nicCores picks testpmd's main lcore (also the traffic generator's CPU)
// and the single forwarding core both forwarders get.
//
// The suite's own threads keep off the forwarding core until release is
// called: the parent reading a child's records, or its Go runtime, would
// otherwise preempt the forwarder it measures (thousands of times a
// second, 5 % of the core, measured with perf sched).
func nicCores() (main, fwd int, release func(), err error) {
	if os.Geteuid() != 0 {
		return 0, 0, nil, errNeedRoot
	}
	n := runtime.NumCPU()
	if n < 2 {
		return 0, 0, nil, fmt.Errorf("needs two CPUs (a forwarding core and one for testpmd's main lcore), this machine has %d", n)
	}
	release, err = dataplane.ReserveCore(n - 1)
	if err != nil {
		return 0, 0, nil, err
	}
	return 0, n - 1, release, nil
}

// nicRunTime is one round's forwarding time: --duration split over the
// rounds like forward-ring, but at least 1 s, so that testpmd's
// forwarding-thread CPU time (read from /proc in 10 ms ticks) is within 1 %.
func nicRunTime(o *Options) time.Duration {
	return max(o.Duration/time.Duration(o.Rounds), time.Second)
}

// benchLane is one direction of a bump in the wire for the suites: a
// forwarding lane (measurement off) or a sender lane recording the LDA
// of every transmitted frame, as bench.ForwardRing builds them.
func benchLane(rx, tx dataplane.Port, lda bool, burst int) (*dataplane.Lane, error) {
	cfg := dataplane.LaneConfig{Rx: rx, Tx: tx, Burst: burst, Role: dataplane.RoleForward}
	if lda {
		cl, err := classifier.NewClassifier(nil)
		if err != nil {
			return nil, err
		}
		buf, err := dataplane.NewSynBuffer(dataplane.SynConfig{LDA: synopsis.DefaultLDAConfig(), Classes: 1})
		if err != nil {
			return nil, err
		}
		var epoch atomic.Uint64
		epoch.Store(1)
		cfg.Role, cfg.Classifier, cfg.Buffer, cfg.Epoch = dataplane.RoleSender, cl, buf, &epoch
	}
	return dataplane.NewLane(cfg)
}

// laneRun is what one worker forwarded over a run.
type laneRun struct {
	frames   uint64        // transmitted by all lanes
	recorded uint64        // recorded in the LDA
	wall     time.Duration // from the first poll to the last
	cpu      time.Duration // the worker thread's CPU time over the same span
	// rxDropped is what the kernel dropped at the receiving port for want
	// of rx ring room or fill descriptors (AF_XDP only): offered load the
	// forwarder did not keep up with.
	rxDropped uint64
}

func (r laneRun) mpps() float64 { return float64(r.frames) / r.wall.Seconds() / 1e6 }

// cpuMpps is the rate a dedicated core would give: frames per CPU second
// of the forwarding thread (0 when the thread got no measurable time).
func (r laneRun) cpuMpps() float64 {
	if r.cpu <= 0 {
		return 0
	}
	return float64(r.frames) / r.cpu.Seconds() / 1e6
}

// runLanes runs lanes on one dataplane.Worker for d. onStart runs on the
// worker's thread first (pinning, EAL lcore registration); onExit last.
func runLanes(lanes []*dataplane.Lane, core int, d time.Duration, onStart func() error, onExit func()) (laneRun, error) {
	var r laneRun
	var t0 time.Time
	var c0 time.Duration
	w, err := dataplane.NewWorker(dataplane.WorkerConfig{Core: core, Lanes: lanes,
		OnStart: func() error {
			if onStart != nil {
				if err := onStart(); err != nil {
					return err
				}
			}
			c0, t0 = benchThreadCPU(), time.Now()
			return nil
		},
		OnExit: func() {
			r.cpu, r.wall = benchThreadCPU()-c0, time.Since(t0)
			if onExit != nil {
				onExit()
			}
		}})
	if err != nil {
		return r, err
	}
	w.Start()
	time.Sleep(d)
	if err := w.Close(); err != nil {
		return r, err
	}
	for _, l := range lanes {
		r.frames += l.Stats.TxFrames.Load()
		r.recorded += l.Stats.Recorded.Load()
	}
	if r.frames == 0 || r.wall <= 0 {
		return r, errors.New("the lanes forwarded nothing")
	}
	return r, nil
}

// benchThreadCPU is the calling OS thread's CPU time (the caller holds
// LockOSThread: the worker does).
func benchThreadCPU() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}

// nicSamples collects one record's rounds.
type nicSamples struct{ cpu, wall, cpuNs []float64 }

func (s *nicSamples) add(wallMpps, cpuMpps float64) {
	s.wall = append(s.wall, wallMpps)
	s.cpu = append(s.cpu, cpuMpps)
	if cpuMpps > 0 {
		s.cpuNs = append(s.cpuNs, 1e3/cpuMpps)
	}
}

// emitNIC emits one record of a real-port suite. With useCPU the headline
// Mpps is the forwarding thread's CPU-time rate (what a dedicated core
// would do on this loaded machine) and the wall-clock figures go to
// extra; otherwise the wall clock is the headline (a generator-limited
// AF_XDP run, where a spinning forwarder's CPU time says nothing).
func emitNIC(emit func(report.Bench), name string, s, base *nicSamples, baseName string, useCPU bool, extra map[string]any) {
	headline, baseline := s.wall, (*nicSamples)(nil)
	if useCPU {
		headline = s.cpu
	}
	v := median(headline)
	b := report.Bench{Name: name, Mpps: v, Extra: map[string]any{
		"rounds_mpps": headline, "wall_mpps": median(s.wall), "wall_rounds_mpps": s.wall,
		"cpu_mpps": median(s.cpu), "cpu_rounds_mpps": s.cpu}}
	if useCPU {
		b.Extra["clock"] = "thread-cpu"
	} else {
		b.Extra["clock"] = "wall"
	}
	if len(s.cpuNs) > 0 {
		b.Extra["cpu_ns_per_pkt"] = median(s.cpuNs)
	}
	if v > 0 {
		b.NsPerPkt = 1e3 / v
	}
	for k, x := range extra {
		b.Extra[k] = x
	}
	if base != nil {
		baseline = base
		bv := median(base.wall)
		if useCPU {
			bv = median(base.cpu)
		}
		b.Baseline = baseName
		if bv > 0 {
			b.Ratio = v / bv
		}
		if w := median(baseline.wall); w > 0 {
			b.Extra["wall_ratio"] = median(s.wall) / w
		}
		if c := median(baseline.cpu); c > 0 && median(s.cpu) > 0 {
			b.Extra["cpu_ratio"] = median(s.cpu) / c
		}
	}
	emit(b)
}

// vethBench is the AF_XDP bench's wiring: two veth pairs whose forwarder
// ends (A, B) are in the current namespace and whose far ends (Gen, Sink)
// are in namespace NS. Frames sent on Gen arrive on A; what the forwarder
// sends on B arrives on Sink, where the kernel drops them (no addresses).
// DPDK's net_af_xdp runs in the current namespace (inside another one
// libxdp could not always find and detach its program).
type vethBench struct {
	NS, A, Gen, B, Sink string
	drop                link.Link
}

// newVethBench makes the pairs with nq rx and tx queues at every end.
func newVethBench(nq int) (*vethBench, error) {
	if _, err := exec.LookPath("ip"); err != nil {
		return nil, errors.New("needs the ip command (iproute2)")
	}
	id := os.Getpid() % 100000
	v := &vethBench{NS: fmt.Sprintf("ldafwd-bench-%d", os.Getpid()),
		A: fmt.Sprintf("ldb%d.a", id), Gen: fmt.Sprintf("ldb%d.g", id),
		B: fmt.Sprintf("ldb%d.b", id), Sink: fmt.Sprintf("ldb%d.s", id)}
	q := strconv.Itoa(max(nq, 1))
	sweepBenchNetns()
	v.Delete() // a leftover of a killed run with the same pid
	steps := [][]string{
		{"netns", "add", v.NS},
		{"link", "add", v.A, "numtxqueues", q, "numrxqueues", q, "type", "veth", "peer", "name", v.Gen, "numtxqueues", q, "numrxqueues", q},
		{"link", "add", v.B, "numtxqueues", q, "numrxqueues", q, "type", "veth", "peer", "name", v.Sink, "numtxqueues", q, "numrxqueues", q},
		{"link", "set", v.Gen, "netns", v.NS},
		{"link", "set", v.Sink, "netns", v.NS},
		{"link", "set", v.A, "up"},
		{"link", "set", v.B, "up"},
		{"-n", v.NS, "link", "set", v.Gen, "up"},
		{"-n", v.NS, "link", "set", v.Sink, "up"},
	}
	for _, s := range steps {
		if out, err := exec.Command("ip", s...).CombinedOutput(); err != nil {
			v.Delete()
			return nil, fmt.Errorf("ip %s: %v: %s", strings.Join(s, " "), err, strings.TrimSpace(string(out)))
		}
	}
	// No IPv6: the kernel would send router solicitations of its own.
	for _, i := range []string{v.A, v.B} {
		_ = os.WriteFile("/proc/sys/net/ipv6/conf/"+i+"/disable_ipv6", []byte("1"), 0)
	}
	_ = netns.InNetns(v.NS, func() error {
		for _, i := range []string{v.Gen, v.Sink} {
			_ = os.WriteFile("/proc/sys/net/ipv6/conf/"+i+"/disable_ipv6", []byte("1"), 0)
		}
		return nil
	})
	if err := v.attachDrop(); err != nil {
		v.Delete()
		return nil, err
	}
	for i := 0; i < 100; i++ { // veth carrier comes up asynchronously
		a, _ := os.ReadFile("/sys/class/net/" + v.A + "/operstate")
		b, _ := os.ReadFile("/sys/class/net/" + v.B + "/operstate")
		if strings.TrimSpace(string(a)) == "up" && strings.TrimSpace(string(b)) == "up" {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	return v, nil
}

// attachDrop attaches a two-instruction XDP_DROP program to Sink in
// driver mode: the forwarded frames are then dropped in veth's NAPI poll
// instead of climbing the sink namespace's stack, which would otherwise
// run in softirq on the forwarding core after every tx kick and weigh as
// much as the forwarding itself (for testpmd and for us alike).
func (v *vethBench) attachDrop() error {
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{Name: "ldafwd_drop", Type: ebpf.XDP, License: "GPL",
		Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, 1 /* XDP_DROP */), asm.Return()}})
	if err != nil {
		return fmt.Errorf("load XDP drop program: %w", err)
	}
	defer prog.Close() // the link holds its own reference
	return netns.InNetns(v.NS, func() error {
		ifi, err := net.InterfaceByName(v.Sink)
		if err != nil {
			return err
		}
		v.drop, err = link.AttachXDP(link.XDPOptions{Program: prog, Interface: ifi.Index, Flags: link.XDPDriverMode})
		if err != nil {
			return fmt.Errorf("attach XDP drop program to %s: %w", v.Sink, err)
		}
		return nil
	})
}

// sweepBenchNetns deletes ldafwd-bench-<pid> namespaces (and with them
// their veth pairs) whose process no longer exists: what a killed bench
// run leaves behind.
func sweepBenchNetns() { netns.SweepNetns("ldafwd-bench-") }

// Delete removes the namespace (and with it both pairs); safe to repeat.
func (v *vethBench) Delete() {
	if v.drop != nil {
		_ = v.drop.Close()
		v.drop = nil
	}
	_ = exec.Command("ip", "netns", "del", v.NS).Run()
	_ = exec.Command("ip", "link", "del", v.A).Run()
	_ = exec.Command("ip", "link", "del", v.B).Run()
}

// detachXDP removes an XDP program left on the forwarder ends and reports
// whether there was one (DPDK's net_af_xdp is meant to detach its own).
func (v *vethBench) detachXDP() (left bool) {
	for _, i := range []string{v.A, v.B} {
		out, _ := exec.Command("ip", "link", "show", "dev", i).CombinedOutput()
		if strings.Contains(string(out), "xdp") {
			left = true
			_ = exec.Command("ip", "link", "set", "dev", i, "xdp", "off").Run()
		}
	}
	return left
}

// afxdpGen sends 64-byte UDP frames of 256 flows on Gen, through native
// AF_XDP ports opened inside the namespace (one per queue of Gen, each
// frame on the queue dataplane.SteerQueue gives its flow, as a NIC's RSS
// with the appliances' key would put it), from one thread pinned to cpu,
// as fast as the veth pair takes them, until stopped. Over veth the frame
// arrives on A's rx queue of the number it was sent on.
type afxdpGen struct {
	sent atomic.Uint64
	stop atomic.Bool
	done chan error
}

func startGen(v *vethBench, cpu, nq int) (*afxdpGen, error) {
	var ports *afxdp.Queues
	if err := netns.InNetns(v.NS, func() (err error) {
		ports, err = afxdp.OpenQueues("afxdp:"+v.Gen, nq, afxdp.Config{Index: 9, RingSize: 2048})
		return err
	}); err != nil {
		return nil, fmt.Errorf("traffic generator on %s: %w", v.Gen, err)
	}
	dst := net.HardwareAddr{0x02, 0, 0, 0, 0, 0xb}
	src := net.HardwareAddr{0x02, 0, 0, 0, 0, 0xa}
	frames := make([][][]byte, nq) // per queue
	for i := 0; i < 256; i++ {
		f := netns.UDPFrame(dst, src, 5, uint64(i), 64, uint16(1024+i))
		q := dataplane.SteerQueue(f, nq)
		frames[q] = append(frames[q], f)
	}
	g := &afxdpGen{done: make(chan error, 1)}
	go func() {
		// Locked for good: the thread is pinned to one CPU below, and
		// handing it back to the scheduler would strand other goroutines
		// there; the runtime ends a locked thread when its goroutine exits.
		runtime.LockOSThread()
		defer ports.Close()
		var set unix.CPUSet
		set.Set(cpu)
		if err := unix.SchedSetaffinity(0, &set); err != nil {
			g.done <- fmt.Errorf("traffic generator: pin to CPU %d: %w", cpu, err)
			return
		}
		pk := make([]*dataplane.Packet, 32)
		f := 0
		for !g.stop.Load() {
			for q := 0; q < nq; q++ {
				port, fs := ports.Queue(q), frames[q]
				if len(fs) == 0 {
					continue
				}
				k := port.Alloc(pk)
				for _, p := range pk[:k] {
					p.Data = append(p.Data[:0], fs[f%len(fs)]...)
					f++
				}
				m := port.TxBurst(pk[:k])
				port.Free(pk[m:k])
				g.sent.Add(uint64(m))
			}
		}
		g.done <- nil
	}()
	return g, nil
}

// vethGen is the wiring and traffic the AF_XDP forwarding suites share:
// a veth pair each way (newVethBench) and the generator on cpu. stop ends
// the generator, then removes the wiring.
func vethGen(cpu int) (v *vethBench, g *afxdpGen, stop func(), err error) {
	if v, err = newVethBench(1); err != nil {
		return nil, nil, nil, err
	}
	if g, err = startGen(v, cpu, 1); err != nil {
		v.Delete()
		return nil, nil, nil, err
	}
	return v, g, func() { _ = g.Stop(); v.Delete() }, nil
}

func (g *afxdpGen) Stop() error { g.stop.Store(true); return <-g.done }

// benchForwardAFXDP is the AF_XDP forwarding cost: our native AF_XDP ports
// forwarding with the LDA on, against dpdk-testpmd's io forwarding on
// DPDK's net_af_xdp, on the same veth pair, the same core and the same
// offered traffic; and the same ports forwarding with measurement off
// (forward-afxdp-off), which is what "the native AF_XDP port forwards
// ≥ 1.0 × net_af_xdp" compares like for like (testpmd's io mode measures
// nothing), and which splits the LDA's cost from the port's. All run in
// copy mode (what veth offers), so the rate is bounded by the kernel's
// copy paths and the generator; the records give the offered rate next to
// the forwarded one.
func benchForwardAFXDP(o *Options, emit func(report.Bench)) error {
	mainCore, fwd, release, err := nicCores()
	if err != nil {
		return err
	}
	defer release()
	v, g, stop, err := vethGen(mainCore)
	if err != nil {
		return err
	}
	defer stop()
	per := nicRunTime(o)
	var ours, off, pmd nicSamples
	var offOurs, offOff, offPMD, dropped, droppedOff []float64
	leftXDP := false
	for r := 0; r < o.Rounds; r++ {
		// testpmd first: net_af_xdp attaches its own XDP program to A and B.
		offered, err := testpmdAFXDP(v, g, mainCore, fwd, per, &pmd)
		if err != nil {
			return fmt.Errorf("testpmd-io-afxdp: %w", err)
		}
		offPMD = append(offPMD, offered)
		if v.detachXDP() {
			leftXDP = true
		}
		run, offered, err := forwardAFXDPOnce(v, g, fwd, per, false)
		if err != nil {
			return fmt.Errorf("forward-afxdp-off: %w", err)
		}
		offOff = append(offOff, offered)
		off.add(run.mpps(), run.cpuMpps())
		droppedOff = append(droppedOff, float64(run.rxDropped)/run.wall.Seconds()/1e6)
		run, offered, err = forwardAFXDPOnce(v, g, fwd, per, true)
		if err != nil {
			return fmt.Errorf("forward-afxdp-lda: %w", err)
		}
		offOurs = append(offOurs, offered)
		ours.add(run.mpps(), run.cpuMpps())
		dropped = append(dropped, float64(run.rxDropped)/run.wall.Seconds()/1e6)
	}
	emitNIC(emit, "testpmd-io-afxdp", &pmd, nil, "", false, map[string]any{
		"offered_mpps": median(offPMD), "core": fwd, "xdp_left_attached": leftXDP})
	emitNIC(emit, "forward-afxdp-off", &off, &pmd, "testpmd-io-afxdp", false, map[string]any{
		"offered_mpps": median(offOff), "rx_dropped_mpps": median(droppedOff), "core": fwd})
	emitNIC(emit, "forward-afxdp-lda", &ours, &pmd, "testpmd-io-afxdp", false, map[string]any{
		"offered_mpps": median(offOurs), "rx_dropped_mpps": median(dropped), "core": fwd})
	return nil
}

// openBusy opens an AF_XDP port, retrying for up to 3 s while the queue
// is busy: the kernel releases the previous run's socket (testpmd's) from
// a deferred work item, after the process has exited.
func openBusy(spec string, cfg afxdp.Config) (*afxdp.Port, error) {
	deadline := time.Now().Add(3 * time.Second)
	for {
		p, err := afxdp.Open(spec, cfg)
		if err == nil || !errors.Is(err, unix.EBUSY) || time.Now().After(deadline) {
			return p, err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// runTestpmdBusy runs testpmd, once more after a pause if it could not
// start: its net_af_xdp sockets meet the same deferred release of ours.
func runTestpmdBusy(cfg bench.TestpmdConfig) (bench.TestpmdResult, error) {
	res, err := bench.RunTestpmd(context.Background(), cfg)
	if err != nil && !errors.Is(err, bench.ErrNoTestpmd) {
		time.Sleep(time.Second)
		res, err = bench.RunTestpmd(context.Background(), cfg)
	}
	return res, err
}

// testpmdAFXDP runs dpdk-testpmd --forward-mode=io on net_af_xdp over
// v's A and B for per, its forwarding lcore on fwd, adds its rates to pmd
// and returns the generator's rate over the span its rate covers, from
// forwarding's start to its stop (testpmd attaches its own XDP program to
// A and B; what the generator sends while testpmd starts is not counted).
func testpmdAFXDP(v *vethBench, g *afxdpGen, mainCore, fwd int, per time.Duration, pmd *nicSamples) (offered float64, err error) {
	res, err := runTestpmdBusy(bench.TestpmdConfig{
		Vdevs: []string{
			"net_af_xdp0,iface=" + v.A + ",start_queue=0,queue_count=1",
			"net_af_xdp1,iface=" + v.B + ",start_queue=0,queue_count=1"},
		MainCore: mainCore, FwdCore: fwd, ForwardMode: "io", Duration: per, Probe: g.sent.Load})
	if err != nil {
		return 0, err
	}
	offered = float64(res.Probed) / res.Elapsed.Seconds() / 1e6
	cpuM := 0.0
	if res.CPUNsPerPkt > 0 {
		cpuM = 1e3 / res.CPUNsPerPkt
	}
	pmd.add(res.Mpps, cpuM)
	return offered, nil
}

// forwardAFXDPOnce runs our lanes (A → B and B → A, recording the LDA
// when lda is set, forwarding only otherwise) on native AF_XDP ports for
// d and returns the run and the generator's rate over it.
func forwardAFXDPOnce(v *vethBench, g *afxdpGen, core int, d time.Duration, lda bool) (laneRun, float64, error) {
	a, err := openBusy("afxdp:"+v.A, afxdp.Config{Index: 0})
	if err != nil {
		return laneRun{}, 0, err
	}
	defer a.Close()
	b, err := openBusy("afxdp:"+v.B, afxdp.Config{Index: 1})
	if err != nil {
		return laneRun{}, 0, err
	}
	defer b.Close()
	ab, err := benchLane(a, b, lda, dataplane.DefaultLaneBurst)
	if err != nil {
		return laneRun{}, 0, err
	}
	ba, err := benchLane(b, a, lda, dataplane.DefaultLaneBurst)
	if err != nil {
		return laneRun{}, 0, err
	}
	// OnStart/OnExit run on the worker, which Wait (a channel) orders
	// before the reads below.
	var s0, s1 uint64
	run, err := runLanes([]*dataplane.Lane{ab, ba}, core, d,
		func() error { s0 = g.sent.Load(); return nil },
		func() { s1 = g.sent.Load() })
	if err != nil {
		return run, 0, err
	}
	run.rxDropped = a.Stats().RxDropped
	return run, float64(s1-s0) / run.wall.Seconds() / 1e6, nil
}

func init() { register("forward-dpdk-null", benchForwardDPDKNull) }

// benchForwardDPDKNull is the DPDK forwarding cost: two lanes (one per
// direction) forwarding between two net_null vdevs (copy=1: rx copies a
// 64-byte frame into each mbuf, tx frees, as a NIC's DMA would cost) on
// one pinned core registered as an EAL lcore, with measurement off and
// with the LDA, against dpdk-testpmd's macswap forwarding on the same
// vdev pair and the same core; and the ports alone (portLoop), which
// splits our cost into port + cgo and lane. The four are interleaved
// round by round and the median kept.
//
// The headline Mpps is from the forwarding thread's CPU time (ours:
// CLOCK_THREAD_CPUTIME_ID; testpmd's rte-worker thread: /proc), the rate
// a dedicated core would give; the wall-clock rates and ratio are in
// extra. Both count the frames transmitted over both directions.
//
// EAL is initialised once per process (the forwarding core as main lcore
// would pin this thread; the first CPU is) and cleaned up when the suite
// ends, so the suite runs once per ldafwd process. Hugepages are used
// when free (HugePages_Free), by testpmd as by us.
func benchForwardDPDKNull(o *Options, emit func(report.Bench)) error {
	if !dpdk.Built {
		return fmt.Errorf("this ldafwd was built without DPDK (make build adds -tags dpdk when libdpdk-dev is installed): %w", dpdk.ErrNotBuilt)
	}
	mainCore, fwd, release, err := nicCores()
	if err != nil {
		return err
	}
	defer release()
	specs := []string{"dpdk:net_null0,copy=1", "dpdk:net_null1,copy=1"}
	if err := dpdk.InitEAL(dpdk.EALConfig{Specs: specs, Cores: []int{mainCore}}); err != nil {
		return err
	}
	defer func() { _ = dpdk.Cleanup() }()
	// The lanes stamp frames with the clock read they take per received
	// burst anyway; the port need not read it as well.
	a, err := dpdk.Open(specs[0], dpdk.Config{Index: 0, NoSoftTimestamps: true})
	if err != nil {
		return err
	}
	defer a.Close()
	b, err := dpdk.Open(specs[1], dpdk.Config{Index: 1, NoSoftTimestamps: true})
	if err != nil {
		return err
	}
	defer b.Close()
	per := nicRunTime(o)
	var pmd, raw, direct, off, lda nicSamples
	var recorded []float64
	for r := 0; r < o.Rounds; r++ {
		res, err := bench.RunTestpmd(context.Background(), bench.TestpmdConfig{
			Vdevs:    []string{"net_null0,copy=1", "net_null1,copy=1"},
			MainCore: mainCore, FwdCore: fwd, ForwardMode: "macswap", Duration: per})
		if err != nil {
			return fmt.Errorf("testpmd-macswap-null: %w", err)
		}
		cpuM := 0.0
		if res.CPUNsPerPkt > 0 {
			cpuM = 1e3 / res.CPUNsPerPkt
		}
		pmd.add(res.Mpps, cpuM)
		run, err := portLoop(a, b, fwd, per)
		if err != nil {
			return fmt.Errorf("forward-dpdk-null-port: %w", err)
		}
		raw.add(run.mpps(), run.cpuMpps())
		run, err = fwdLoop(a, b, fwd, per)
		if err != nil {
			return fmt.Errorf("forward-dpdk-null-fwd: %w", err)
		}
		direct.add(run.mpps(), run.cpuMpps())
		for _, withLDA := range []bool{false, true} {
			ab, err := benchLane(a, b, withLDA, dataplane.DefaultLaneBurst)
			if err != nil {
				return err
			}
			ba, err := benchLane(b, a, withLDA, dataplane.DefaultLaneBurst)
			if err != nil {
				return err
			}
			run, err := runLanes([]*dataplane.Lane{ab, ba}, -1, per,
				func() error { _, err := dpdk.RegisterThread(fwd); return err },
				dpdk.UnregisterThread)
			if err != nil {
				return fmt.Errorf("forward-dpdk-null: %w", err)
			}
			if withLDA {
				lda.add(run.mpps(), run.cpuMpps())
				recorded = append(recorded, float64(run.recorded)/float64(run.frames))
			} else {
				off.add(run.mpps(), run.cpuMpps())
			}
		}
	}
	huge := hugeInUse()
	extra := map[string]any{"core": fwd, "burst": dataplane.DefaultLaneBurst, "hugepages": huge}
	emitNIC(emit, "testpmd-macswap-null", &pmd, nil, "", true, extra)
	emitNIC(emit, "forward-dpdk-null-port", &raw, &pmd, "testpmd-macswap-null", true, extra)
	emitNIC(emit, "forward-dpdk-null-fwd", &direct, &pmd, "testpmd-macswap-null", true, extra)
	emitNIC(emit, "forward-dpdk-null-off", &off, &pmd, "testpmd-macswap-null", true, extra)
	extra2 := map[string]any{"recorded_share": median(recorded)}
	for k, v := range extra {
		extra2[k] = v
	}
	emitNIC(emit, "forward-dpdk-null-lda", &lda, &pmd, "testpmd-macswap-null", true, extra2)
	return nil
}

// portLoop is the ports alone, no lane: rx on one port, tx of the same
// frames on the other, both directions, 32 frames per burst, on one
// thread pinned to core and registered as an EAL lcore. Its record
// (forward-dpdk-null-port) separates what the DPDK port and cgo cost
// from what the lane adds.
func portLoop(a, b *dpdk.Port, core int, d time.Duration) (laneRun, error) {
	pkts := make([]*dataplane.Packet, dataplane.DefaultLaneBurst)
	return onLcore(core, d, func(deadline time.Time) (frames uint64) {
		for polls := 0; ; polls++ {
			for _, dir := range [2][2]*dpdk.Port{{a, b}, {b, a}} {
				n := dir[0].RxBurst(pkts)
				m := dir[1].TxBurst(pkts[:n])
				if m < n {
					dir[0].Free(pkts[m:n])
				}
				frames += uint64(m)
			}
			if polls&255 == 0 && time.Now().After(deadline) {
				return frames
			}
		}
	})
}

// onLcore runs loop on a new thread pinned to core and registered as an
// EAL lcore, until the deadline it is given (d from now), and returns
// the frames it reports with the thread's CPU time and the wall time
// around it; a loop that forwarded nothing is an error.
func onLcore(core int, d time.Duration, loop func(deadline time.Time) (frames uint64)) (laneRun, error) {
	var r laneRun
	done := make(chan error, 1)
	go func() {
		if _, err := dpdk.RegisterThread(core); err != nil {
			done <- err
			return
		}
		defer dpdk.UnregisterThread()
		c0, t0 := benchThreadCPU(), time.Now()
		r.frames = loop(t0.Add(d))
		r.cpu, r.wall = benchThreadCPU()-c0, time.Since(t0)
		done <- nil
	}()
	if err := <-done; err != nil {
		return r, err
	}
	if r.frames == 0 {
		return r, errors.New("the ports forwarded nothing")
	}
	return r, nil
}

// fwdLoop is the ports' dataplane.Forwarder path, no lane: each
// direction receives and transmits in one ForwardTo call (frames stay
// mbufs, no Packet is filled), and frames the peer refuses are sent
// first on the next poll, as a forwarding lane's back-pressure does. Its
// record (forward-dpdk-null-fwd) is the floor under forward-dpdk-null-off,
// whose RoleForward lanes take the same path plus their bookkeeping.
func fwdLoop(a, b *dpdk.Port, core int, d time.Duration) (laneRun, error) {
	type dir struct {
		rx, tx  *dpdk.Port
		kept    []*dataplane.Packet
		pending []*dataplane.Packet
	}
	dirs := [2]*dir{
		{rx: a, tx: b, kept: make([]*dataplane.Packet, dataplane.DefaultLaneBurst)},
		{rx: b, tx: a, kept: make([]*dataplane.Packet, dataplane.DefaultLaneBurst)},
	}
	return onLcore(core, d, func(deadline time.Time) (frames uint64) {
		for polls := 0; ; polls++ {
			for _, x := range dirs {
				if len(x.pending) > 0 {
					m := x.tx.TxBurst(x.pending)
					frames += uint64(m)
					x.pending = x.pending[m:]
					continue
				}
				rx, _, k, ok := x.rx.ForwardTo(x.tx, x.kept)
				if !ok {
					// A burst received ahead by the last round's
					// TxBurst waits: take it the ordinary way.
					n := x.rx.RxBurst(x.kept)
					m := x.tx.TxBurst(x.kept[:n])
					frames += uint64(m)
					x.pending = x.kept[m:n]
					continue
				}
				frames += uint64(rx - k)
				x.pending = x.kept[:k]
			}
			if polls&255 == 0 && time.Now().After(deadline) {
				break
			}
		}
		for _, x := range dirs {
			x.rx.Free(x.pending)
		}
		return frames
	})
}

// hugeInUse reports whether hugepages are reserved at all (our own EAL may
// hold every free one by the time the records are written).
func hugeInUse() bool {
	b, err := os.ReadFile("/proc/sys/vm/nr_hugepages")
	return err == nil && strings.TrimSpace(string(b)) != "0"
}
