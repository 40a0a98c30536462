package suites

// forward-dpdk-pcap: `ldafwd run` itself — the product's command, its
// defaults and its control goroutine — forwarding realistic traffic
// against dpdk-testpmd on the same vdevs and core.
//
// Port a is DPDK's net_pcap replaying a capture this suite writes at run
// time (mix.go: IMIX sizes, IPv4/IPv6 × TCP/UDP flows, some tagged) in a
// loop (infinite_rx=1: the PMD loads the whole capture into mbufs of the
// port's pool and copies each frame into a fresh mbuf as it receives it);
// port b is net_null with no-rx=1, which frees what it is given and
// receives nothing, so the traffic is the capture's alone, a → b. (The
// pcap PMD drops what is sent to port a, which has no tx_pcap.)
//
// Every round runs, one after the other: dpdk-testpmd
// --forward-mode=macswap (the baseline), `ldafwd run --forward-only`,
// `ldafwd run --synopsis lda` and `ldafwd run` with the default synopses
// (all) as the sender, the last two again as the receiver; testpmd and
// the three sender configurations on the 64-byte capture; testpmd and
// `--synopsis lda` on the untagged capture of long frames (pcapCases), each a
// child process with its forwarding worker pinned to the same core
// (--cores, testpmd's forwarding lcore). ldafwd's rate is taken
// from its own port records (--stats-interval) between the first one
// after a warm-up and the last before it stops, so start-up and shutdown
// are not counted; its CPU time per frame from /proc over the same span:
// the busiest thread (the pinned worker, which spins) for the headline,
// like testpmd's rte-worker thread, and all of the process's threads
// (control, reports, Go runtime) in extra.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/ldafwd/ldafwd/bench"
	"github.com/ldafwd/ldafwd/dataplane"
	"github.com/ldafwd/ldafwd/dpdk"
	"github.com/ldafwd/ldafwd/report"
)

func init() { register("forward-dpdk-pcap", benchForwardDPDKPcap) }

// pcapCase is one `ldafwd run` configuration of the suite, on one of
// the captures (pcapCaptures).
type pcapCase struct {
	name    string
	capture int
	args    []string
}

// pcapCaptures are the replayed captures: the mix; the same flows with
// every frame 64 bytes on the wire (60 captured; IPv6 and tagged frames
// as short as their headers allow, up to 78); and the same flows
// untagged with no frame shorter than 86 bytes (90 on the wire), the
// frames the measuring fast path hashes on its straight-line IP path
// (the others take its general path, docs/dpdk.md). Each capture has its
// own testpmd baseline in every round.
var pcapCaptures = []struct {
	baseline string
	file     string // its name when written for the user (WriteCaptures)
	mix      mixConfig
}{
	{"testpmd-macswap-pcap", "imix.pcap", defaultMix},
	{"testpmd-macswap-pcap64", "imix-64b.pcap", smallMix(defaultMix)},
	{"testpmd-macswap-pcap-fastpath", "imix-untagged-90b.pcap", fastPathMix(defaultMix)},
}

// WriteCaptures writes the captures forward-dpdk-pcap replays into dir
// (made if missing) and returns their paths, so that they can be replayed
// or inspected outside the benchmark (tcpreplay, tshark, the identity
// harnesses of package dpdk). They are generated, the same every time.
func WriteCaptures(dir string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var paths []string
	for _, c := range pcapCaptures {
		frames, _, err := genMix(c.mix)
		if err != nil {
			return nil, err
		}
		path := filepath.Join(dir, c.file)
		if err := writePcap(path, frames); err != nil {
			return nil, err
		}
		paths = append(paths, path)
	}
	return paths, nil
}

// smallMix is c with every frame of IMIX's smallest class.
func smallMix(c mixConfig) mixConfig { c.Small = true; return c }

// fastPathMix is c without tags and with its smallest frames raised to
// the 86 bytes of the fast path's straight-line IP path (dpdk/measure.h,
// LDAF_MIN_FAST_LEN).
func fastPathMix(c mixConfig) mixConfig { c.VLANShare, c.MinLen = 0, 86; return c }

// pcapCases are measured in this order every round, each capture's after
// its testpmd baseline. With --segment-port b the a → b lanes are sender
// lanes (recording before the segment), with a receiver lanes (recording
// what the segment delivered; no peer runs, so no interval pairs and the
// control goroutine only ships this end's own End markers).
var pcapCases = []pcapCase{
	{"run-pcap-forward-only", 0, []string{"--forward-only"}},
	{"run-pcap-lda", 0, []string{"--segment-port", "b", "--insecure", "--synopsis", "lda"}},
	{"run-pcap-all", 0, []string{"--segment-port", "b", "--insecure"}},
	{"run-pcap-lda-rx", 0, []string{"--segment-port", "a", "--insecure", "--synopsis", "lda"}},
	{"run-pcap-all-rx", 0, []string{"--segment-port", "a", "--insecure"}},
	{"run-pcap64-forward-only", 1, []string{"--forward-only"}},
	{"run-pcap64-lda", 1, []string{"--segment-port", "b", "--insecure", "--synopsis", "lda"}},
	{"run-pcap64-all", 1, []string{"--segment-port", "b", "--insecure"}},
	{"run-pcap-lda-fastpath", 2, []string{"--segment-port", "b", "--insecure", "--synopsis", "lda"}},
}

// pcapWarmup is how long a child runs before its rate is counted.
const pcapWarmup = 750 * time.Millisecond

func benchForwardDPDKPcap(o *Options, emit func(report.Bench)) error {
	if !dpdk.Built {
		return fmt.Errorf("this ldafwd was built without DPDK (make build adds -tags dpdk when libdpdk-dev is installed): %w", dpdk.ErrNotBuilt)
	}
	mainCore, fwd, release, err := nicCores()
	if err != nil {
		return err
	}
	defer release()
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "ldafwd-bench-pcap-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	vdevA := make([]string, len(pcapCaptures))
	stats := make([]mixStats, len(pcapCaptures))
	for i, c := range pcapCaptures {
		frames, st, err := genMix(c.mix)
		if err != nil {
			return err
		}
		path := filepath.Join(dir, fmt.Sprintf("mix%d.pcap", i))
		if err := writePcap(path, frames); err != nil {
			return err
		}
		vdevA[i], stats[i] = "net_pcap0,rx_pcap="+path+",infinite_rx=1", st
	}
	const vdevB = "net_null0,no-rx=1"
	per := nicRunTime(o)
	pmd := make([]nicSamples, len(pcapCaptures))
	ours := make([]nicSamples, len(pcapCases))
	procNs := make([][]float64, len(pcapCases))
	fastShare := make([][]float64, len(pcapCases))
	recShare := make([][]float64, len(pcapCases))
	for r := 0; r < o.Rounds; r++ {
		for ci, capt := range pcapCaptures {
			res, err := bench.RunTestpmd(context.Background(), bench.TestpmdConfig{
				Vdevs: []string{vdevA[ci], vdevB}, MainCore: mainCore, FwdCore: fwd,
				ForwardMode: "macswap", Duration: per})
			if err != nil {
				return fmt.Errorf("%s: %w", capt.baseline, err)
			}
			cpuM := 0.0
			if res.CPUNsPerPkt > 0 {
				cpuM = 1e3 / res.CPUNsPerPkt
			}
			pmd[ci].add(res.Mpps, cpuM)
			for i, c := range pcapCases {
				if c.capture != ci {
					continue
				}
				args := append([]string{"run", "--port-a", "dpdk:" + vdevA[ci], "--port-b", "dpdk:" + vdevB,
					"--cores", strconv.Itoa(fwd)}, c.args...)
				run, err := runSpinning(exe, args, per)
				if err != nil {
					return fmt.Errorf("%s: %w", c.name, err)
				}
				ours[i].add(run.wallMpps(), run.cpuMpps())
				procNs[i] = append(procNs[i], float64(run.procCPU.Nanoseconds())/float64(run.frames))
				if run.finalTx > 0 && run.recorded > 0 {
					recShare[i] = append(recShare[i], float64(run.recorded)/float64(run.finalTx))
					fastShare[i] = append(fastShare[i], min(1, float64(run.fastBursts)*32/float64(run.finalTx)))
				}
			}
		}
	}
	for ci, capt := range pcapCaptures {
		st := stats[ci]
		emitNIC(emit, capt.baseline, &pmd[ci], nil, "", true, map[string]any{
			"frames": st.Frames, "flows": st.Flows, "ipv6_frames": st.IPv6, "udp_frames": st.UDP,
			"vlan_frames": st.VLANFrames, "vlan_flows": st.VLANFlows,
			"imix_small_medium_large": []int{st.Small, st.Medium, st.Large},
			"mean_wire_bytes":         st.MeanWire(), // FCS, preamble and gap included
			"core":                    fwd, "hugepages": hugeInUse(),
			"port_a": "net_pcap,infinite_rx=1", "port_b": "net_null,no-rx=1"})
	}
	for i, c := range pcapCases {
		extra := map[string]any{"args": strings.Join(c.args, " "), "core": fwd,
			"process_cpu_ns_per_pkt": median(procNs[i])}
		if len(recShare[i]) > 0 {
			extra["recorded_share"] = median(recShare[i])
			// Full bursts of 32 assumed: an estimate of the frames the
			// measuring fast path took.
			extra["fast_path_share"] = median(fastShare[i])
		}
		// Each round's ratio to the same round's testpmd (ratio is the
		// medians' ratio, as in the other suites).
		var rr, wr []float64
		base := &pmd[c.capture]
		for r := range ours[i].cpu {
			if r < len(base.cpu) && base.cpu[r] > 0 {
				rr = append(rr, ours[i].cpu[r]/base.cpu[r])
			}
			if r < len(base.wall) && base.wall[r] > 0 {
				wr = append(wr, ours[i].wall[r]/base.wall[r])
			}
		}
		extra["round_ratios"], extra["median_round_ratio"] = rr, median(rr)
		extra["wall_round_ratios"], extra["median_wall_round_ratio"] = wr, median(wr)
		emitNIC(emit, c.name, &ours[i], base, pcapCaptures[c.capture].baseline, true, extra)
	}
	return nil
}

// childRun is what one `ldafwd run` child forwarded over its counted span.
type childRun struct {
	frames     uint64           // transmitted on both ports
	wall       time.Duration    // between the port records that bound the span
	workerCPU  time.Duration    // the busiest thread's CPU time over the span
	topCPU     [2]time.Duration // the two busiest threads' (the workers of a two-queue run)
	procCPU    time.Duration    // every thread's
	fastBursts uint64           // sender_fast_bursts + receiver_fast_bursts of the final log record
	recorded   uint64           // sent_recorded + received_recorded of the same record
	finalTx    uint64           // transmitted on both ports over the whole run (final port records)
	probed     uint64           // the probe's growth over the span (runChildProbe)
}

func (r childRun) wallMpps() float64 { return float64(r.frames) / r.wall.Seconds() / 1e6 }

func (r childRun) cpuMpps() float64 {
	if r.workerCPU <= 0 {
		return 0
	}
	return float64(r.frames) / r.workerCPU.Seconds() / 1e6
}

// portSample is one tick of a child's port records with its threads' CPU
// times read as the tick's last record arrived.
type portSample struct {
	elapsed time.Duration
	tx      uint64
	cpu     map[string]time.Duration // by thread id
	probe   uint64
}

// runChild runs `exe args` (an `ldafwd run`) for pcapWarmup + d with
// port records every 100 ms and measures the span between the first
// record after the warm-up and the last one before the end.
func runChild(exe string, args []string, d time.Duration) (childRun, error) {
	return runChildProbe(exe, args, d, nil)
}

// runSpinning is runChild for a child whose busiest thread is one pinned
// DPDK worker, which spins: its CPU time over the span is about the span.
// A reading under half of it is a bad sample of /proc, not a rate (one
// round of 27 once read a worker at 745.9 Mpps, 28 × testpmd, while its
// wall-clock rate was as usual), so the child runs again, at most twice.
func runSpinning(exe string, args []string, d time.Duration) (childRun, error) {
	var r childRun
	var err error
	for try := 0; try < 3; try++ {
		if r, err = runChild(exe, args, d); err != nil || r.spinPlausible() {
			return r, err
		}
	}
	return r, fmt.Errorf("the worker's CPU time read %v over a span of %v in three runs, where a spinning worker uses about the span", r.workerCPU, r.wall)
}

// spinPlausible says whether r's busiest thread used at least half of the
// span's wall time, as a spinning worker does.
func (r childRun) spinPlausible() bool { return r.workerCPU >= r.wall/2 }

// runChildProbe is runChild that also reads probe (a counter of the
// parent's, such as a generator's frames sent) with every sample, so that
// its rate is taken over the same span as the child's.
func runChildProbe(exe string, args []string, d time.Duration, probe func() uint64) (childRun, error) {
	var r childRun
	const tick = 100 * time.Millisecond
	args = append(args, "--duration", (pcapWarmup + d + tick).String(),
		"--stats-interval", tick.String(), "--format", "json")
	cmd := exec.Command(exe, args...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return r, err
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := dataplane.Unreserved(cmd.Start); err != nil {
		return r, err
	}
	pid := cmd.Process.Pid
	var samples []portSample
	var pending *portSample // port a's record of this tick; b's completes it
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 1<<16), 1<<22)
	for sc.Scan() {
		var p report.Port
		if !strings.Contains(sc.Text(), `"type":"port"`) || json.Unmarshal(sc.Bytes(), &p) != nil {
			continue
		}
		if p.Final {
			r.finalTx += p.TxPackets
			continue
		}
		el := time.Duration(p.ElapsedS * float64(time.Second))
		if pending == nil || pending.elapsed != el {
			pending = &portSample{elapsed: el}
		}
		pending.tx += p.TxPackets
		if p.Port == "b" {
			pending.cpu = threadCPUs(pid)
			if probe != nil {
				pending.probe = probe()
			}
			if el >= pcapWarmup {
				samples = append(samples, *pending)
			}
			pending = nil
		}
	}
	_, _ = io.Copy(io.Discard, stdout)
	if err := cmd.Wait(); err != nil {
		return r, fmt.Errorf("%v: %s", err, tail(stderr.String(), 800))
	}
	if len(samples) < 2 {
		return r, fmt.Errorf("%d port records after the warm-up: %s", len(samples), tail(stderr.String(), 800))
	}
	first, last := samples[0], samples[len(samples)-1]
	r.frames, r.wall, r.probed = last.tx-first.tx, last.elapsed-first.elapsed, last.probe-first.probe
	for tid, c := range last.cpu {
		dc := c - first.cpu[tid]
		r.procCPU += dc
		r.workerCPU = max(r.workerCPU, dc)
		switch {
		case dc > r.topCPU[0]:
			r.topCPU[0], r.topCPU[1] = dc, r.topCPU[0]
		case dc > r.topCPU[1]:
			r.topCPU[1] = dc
		}
	}
	if r.frames == 0 || r.wall <= 0 {
		return r, errors.New("forwarded nothing")
	}
	// The final log record's fast-path counters (measuring runs only).
	for _, l := range strings.Split(stderr.String(), "\n") {
		if !strings.Contains(l, `"appliance stopped"`) {
			continue
		}
		var m struct {
			Fast  uint64 `json:"sender_fast_bursts"`
			FastR uint64 `json:"receiver_fast_bursts"`
			Sent  uint64 `json:"sent_recorded"`
			Recv  uint64 `json:"received_recorded"`
		}
		if json.Unmarshal([]byte(l), &m) == nil {
			r.fastBursts, r.recorded = m.Fast+m.FastR, m.Sent+m.Recv
		}
	}
	return r, nil
}

// threadCPUs is every thread's user+system CPU time of process pid, from
// /proc (10 ms resolution), by thread id.
func threadCPUs(pid int) map[string]time.Duration {
	out := map[string]time.Duration{}
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*", pid))
	for _, t := range tasks {
		stat, err := os.ReadFile(t + "/stat")
		if err != nil {
			continue
		}
		i := strings.LastIndexByte(string(stat), ')')
		f := strings.Fields(string(stat[i+1:]))
		if len(f) < 13 {
			continue
		}
		ut, _ := strconv.ParseUint(f[11], 10, 64)
		st, _ := strconv.ParseUint(f[12], 10, 64)
		out[filepath.Base(t)] = time.Duration(ut+st) * (time.Second / 100)
	}
	return out
}

// tail is the last n bytes of s.
func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}
