package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ldafwd/ldafwd/dataplane"
)

// ErrNoTestpmd is returned by RunTestpmd when dpdk-testpmd is not installed.
var ErrNoTestpmd = errors.New("bench: dpdk-testpmd not found (apt-get install dpdk)")

// TestpmdConfig describes one dpdk-testpmd baseline run.
type TestpmdConfig struct {
	Binary string   // default "dpdk-testpmd"
	Vdevs  []string // the port pair, e.g. "net_null0,copy=1", "net_af_xdp0,iface=veth1"
	// MainCore runs testpmd's prompt; FwdCore runs the forwarding loop,
	// the single core the comparison is about.
	MainCore, FwdCore int
	ForwardMode       string        // "macswap" or "io"; default "macswap"
	Duration          time.Duration // forwarding time; default 5 s
	Burst             int           // packets per burst; default 32 (as ldafwd)
	EAL               []string      // extra EAL arguments
	// Queues > 1 gives every port that many rx and tx queues (--rxq,
	// --txq) forwarded by len(FwdCores) forwarding lcores (--nb-cores),
	// lcore i+1 on CPU FwdCores[i] and the main lcore on MainCore
	// (--lcores: the main lcore may share a CPU with a forwarding one,
	// it only waits on stdin). Then FwdCore is ignored and FwdCPU sums
	// the forwarding lcores.
	Queues   int
	FwdCores []int
	// Probe, when set, is read as forwarding starts and again as it is
	// stopped: TestpmdResult.Probed is the difference, a counter (the
	// traffic a generator offered) over the span Mpps covers.
	Probe func() uint64
}

// TestpmdResult is what testpmd forwarded, summed over its ports.
type TestpmdResult struct {
	RxPackets, TxPackets uint64
	RxDropped, TxDropped uint64
	Elapsed              time.Duration // from "Press enter to exit" (forwarding started) to stop
	Mpps                 float64       // TxPackets / Elapsed, millions per second
	// FwdCPU is the CPU time the forwarding lcore thread got while
	// forwarding (from /proc, 10 ms resolution); 0 when not found. On a
	// shared machine TxPackets/FwdCPU is the rate a dedicated core would
	// give (CPUNsPerPkt).
	FwdCPU      time.Duration
	CPUNsPerPkt float64
	Probed      uint64 // TestpmdConfig.Probe's advance over Elapsed
}

// RunTestpmd runs dpdk-testpmd on cfg.Vdevs with one forwarding core for
// cfg.Duration in non-interactive mode and returns its accumulated forward
// statistics. It needs root (EAL) and the dpdk package.
//
// Timing: testpmd starts forwarding just before printing "Press enter to
// exit" and stops when its stdin reaches end of file, so Elapsed runs from
// seeing that line (stdout made line-buffered with stdbuf) to closing
// stdin; the startup (EAL init, PMD loading) is not counted.
func RunTestpmd(ctx context.Context, cfg TestpmdConfig) (TestpmdResult, error) {
	if cfg.Binary == "" {
		cfg.Binary = "dpdk-testpmd"
	}
	bin, err := exec.LookPath(cfg.Binary)
	if err != nil {
		return TestpmdResult{}, ErrNoTestpmd
	}
	if cfg.ForwardMode == "" {
		cfg.ForwardMode = "macswap"
	}
	if cfg.Duration <= 0 {
		cfg.Duration = 5 * time.Second
	}
	if cfg.Burst <= 0 {
		cfg.Burst = 32
	}
	multi := len(cfg.FwdCores) > 0
	if len(cfg.Vdevs) == 0 || (!multi && cfg.MainCore == cfg.FwdCore) {
		return TestpmdResult{}, fmt.Errorf("bench: testpmd needs vdevs and two different cores (main %d, forwarding %d)", cfg.MainCore, cfg.FwdCore)
	}
	prefix := fmt.Sprintf("ldafwd-testpmd-%d", os.Getpid())
	// EAL leaves its runtime directory behind; remove it (a crashed run's
	// is swept by dpdk.SweepRuntimeDirs, which knows this prefix).
	defer os.RemoveAll("/var/run/dpdk/" + prefix)
	args := []string{"-oL", bin, "--no-pci", "--no-telemetry", "--file-prefix", prefix}
	fwdLcores := []int{cfg.FwdCore}
	if multi {
		lc := fmt.Sprintf("0@%d", cfg.MainCore)
		fwdLcores = nil
		for i, c := range cfg.FwdCores {
			lc += fmt.Sprintf(",%d@%d", i+1, c)
			fwdLcores = append(fwdLcores, i+1)
		}
		args = append(args, "--lcores", lc, "--main-lcore", "0")
	} else {
		args = append(args, "-l", fmt.Sprintf("%d,%d", cfg.MainCore, cfg.FwdCore), "--main-lcore", strconv.Itoa(cfg.MainCore))
	}
	args = append(args, "-d", "/usr/lib/x86_64-linux-gnu/dpdk/pmds-23.0", "--log-level", "lib.eal:error")
	if !hasHugepages() {
		args = append(args, "--no-huge", "-m", "1024", "--no-shconf")
	} else {
		args = append(args, "--in-memory")
	}
	for _, v := range cfg.Vdevs {
		args = append(args, "--vdev", v)
	}
	args = append(args, cfg.EAL...)
	args = append(args, "--", "--total-num-mbufs=16384", "--forward-mode="+cfg.ForwardMode,
		"--burst="+strconv.Itoa(cfg.Burst), "--nb-cores="+strconv.Itoa(len(fwdLcores)))
	if cfg.Queues > 1 {
		args = append(args, "--rxq="+strconv.Itoa(cfg.Queues), "--txq="+strconv.Itoa(cfg.Queues))
	}
	cmd := exec.CommandContext(ctx, "stdbuf", args...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return TestpmdResult{}, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return TestpmdResult{}, err
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := dataplane.Unreserved(cmd.Start); err != nil {
		return TestpmdResult{}, fmt.Errorf("bench: start testpmd: %w", err)
	}
	started := make(chan time.Time, 1)
	var out strings.Builder
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			line := sc.Text()
			out.WriteString(line)
			out.WriteByte('\n')
			if strings.Contains(line, "Press enter to exit") {
				started <- time.Now()
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
		close(started)
	}()
	var t0 time.Time
	var probe0, probed uint64
	var cpu0 time.Duration
	var cpuOK0 bool
	select {
	case t, ok := <-started:
		if !ok {
			wg.Wait()
			err := cmd.Wait()
			return TestpmdResult{}, fmt.Errorf("bench: testpmd exited before forwarding (%v): %s", err, tail(out.String()+stderr.String(), 800))
		}
		t0 = t
		if cfg.Probe != nil {
			probe0 = cfg.Probe()
		}
		cpu0, cpuOK0 = lcoresCPU(cmd.Process.Pid, fwdLcores)
	case <-ctx.Done():
		_ = cmd.Wait()
		return TestpmdResult{}, ctx.Err()
	}
	select {
	case <-time.After(cfg.Duration):
	case <-ctx.Done():
	}
	cpu1, cpuOK1 := lcoresCPU(cmd.Process.Pid, fwdLcores)
	if cfg.Probe != nil {
		probed = cfg.Probe() - probe0
	}
	_ = stdin.Close()
	t1 := time.Now()
	wg.Wait()
	if err := cmd.Wait(); err != nil {
		return TestpmdResult{}, fmt.Errorf("bench: testpmd: %v: %s", err, tail(stderr.String(), 800))
	}
	res, err := ParseTestpmd(out.String())
	if err != nil {
		return res, err
	}
	res.Elapsed = t1.Sub(t0)
	res.Mpps = float64(res.TxPackets) / res.Elapsed.Seconds() / 1e6
	res.Probed = probed
	if cpuOK0 && cpuOK1 && cpu1 > cpu0 && res.TxPackets > 0 {
		res.FwdCPU = cpu1 - cpu0
		res.CPUNsPerPkt = float64(res.FwdCPU.Nanoseconds()) / float64(res.TxPackets)
	}
	return res, nil
}

// lcoresCPU sums lcoreCPU over lcores; false when one is not found.
func lcoresCPU(pid int, lcores []int) (time.Duration, bool) {
	var sum time.Duration
	for _, l := range lcores {
		c, ok := lcoreCPU(pid, l)
		if !ok {
			return 0, false
		}
		sum += c
	}
	return sum, true
}

// lcoreCPU is the user+system CPU time of testpmd's worker thread for
// lcore (EAL 22.11 names it "rte-worker-<n>"), from /proc, and whether
// the thread was found.
func lcoreCPU(pid, lcore int) (time.Duration, bool) {
	want := fmt.Sprintf("rte-worker-%d", lcore)
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*", pid))
	for _, t := range tasks {
		comm, err := os.ReadFile(t + "/comm")
		if err != nil || strings.TrimSpace(string(comm)) != want {
			continue
		}
		stat, err := os.ReadFile(t + "/stat")
		if err != nil {
			return 0, false
		}
		// Fields after the ")" closing comm: state is field 3, utime 14, stime 15.
		i := strings.LastIndexByte(string(stat), ')')
		f := strings.Fields(string(stat[i+1:]))
		if len(f) < 13 {
			return 0, false
		}
		ut, _ := strconv.ParseUint(f[11], 10, 64)
		st, _ := strconv.ParseUint(f[12], 10, 64)
		return time.Duration(ut+st) * (time.Second / 100), true // USER_HZ is 100 on Linux
	}
	return 0, false
}

var (
	accumRe = regexp.MustCompile(`(?s)Accumulated forward statistics for all ports\+*\s*\n(.*?)\n\s*\+{10,}`)
	fieldRe = regexp.MustCompile(`(RX|TX)-(packets|dropped):\s+(\d+)`)
)

// ParseTestpmd reads the "Accumulated forward statistics for all ports"
// block testpmd prints when it stops. With a single port testpmd prints no
// accumulated block; the one port's block is used then.
func ParseTestpmd(out string) (TestpmdResult, error) {
	var res TestpmdResult
	block := ""
	if m := accumRe.FindStringSubmatch(out); m != nil {
		block = m[1]
	} else if i := strings.LastIndex(out, "Forward statistics for port"); i >= 0 {
		block = out[i:]
	} else {
		return res, errors.New("bench: no forward statistics in testpmd output")
	}
	seen := 0
	for _, f := range fieldRe.FindAllStringSubmatch(block, -1) {
		v, err := strconv.ParseUint(f[3], 10, 64)
		if err != nil {
			return res, fmt.Errorf("bench: testpmd %s-%s %q: %w", f[1], f[2], f[3], err)
		}
		switch f[1] + f[2] {
		case "RXpackets":
			res.RxPackets = v
		case "RXdropped":
			res.RxDropped = v
		case "TXpackets":
			res.TxPackets = v
		case "TXdropped":
			res.TxDropped = v
		}
		seen++
		if seen == 4 {
			break
		}
	}
	if seen < 4 {
		return res, errors.New("bench: testpmd forward statistics incomplete")
	}
	return res, nil
}

func hasHugepages() bool {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return false
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "HugePages_Free:"); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(v))
			return n > 0
		}
	}
	return false
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}
