package suites

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"sync"
	"time"

	"github.com/ldafwd/ldafwd/bench"
	"github.com/ldafwd/ldafwd/dataplane"
	"github.com/ldafwd/ldafwd/dpdk"
	"github.com/ldafwd/ldafwd/report"
)

// The scaling suite: 1 queue on 1 core against 2 queues on 2 cores, on
// net_null vdev pairs (copy=1), forwarding off and with the LDA, each
// against dpdk-testpmd macswap with the same queues and cores (--rxq,
// --txq, --nb-cores) in the same run, rounds interleaved, medians kept.
// With 2 queues each worker owns queue q of both ports (both directions
// of that queue pair), as `run --queues 2` does; testpmd's 2 lcores
// likewise poll 2 queues each.
//
// Records: scale-testpmd-null-q1 and -q2, scale-dpdk-null-{off,lda}-q1
// (ratio against testpmd q1) and -q2 (against testpmd q2); the q2 records
// carry vs_q1, the aggregate rate over the same configuration's 1-queue
// rate, and testpmd_vs_q1, testpmd's own. The headline is the sum over
// workers of frames per thread-CPU second (what dedicated cores would
// give on this shared machine); the wall-clock aggregate is in extra.
//
// DPDK's EAL can be initialised once per process, so the suite runs in a
// child ldafwd process of its own (LDAFWD_BENCH_SCALE_CHILD) and relays
// its records.
func init() { register("scale-dpdk-null", benchScaleDPDKNull) }

const scaleChildEnv = "LDAFWD_BENCH_SCALE_CHILD"

func benchScaleDPDKNull(o *Options, emit func(report.Bench)) error {
	if !dpdk.Built {
		return fmt.Errorf("this ldafwd was built without DPDK: %w", dpdk.ErrNotBuilt)
	}
	if runtime.NumCPU() < 2 {
		return fmt.Errorf("needs two CPUs, this machine has %d", runtime.NumCPU())
	}
	if os.Getenv(scaleChildEnv) == "" {
		return scaleChild(o, emit)
	}
	return scaleRun(o, emit)
}

// scaleChild runs the suite in a fresh ldafwd process and relays its
// records.
func scaleChild(o *Options, emit func(report.Bench)) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	cmd := exec.Command(exe, "bench", "--only", "^scale-dpdk-null$", "--format", "json",
		"--rounds", strconv.Itoa(o.Rounds), "--duration", o.Duration.String())
	cmd.Env = append(os.Environ(), scaleChildEnv+"=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("scale-dpdk-null child: %v: %s", err, stderr.String())
	}
	n := 0
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		var b report.Bench
		if json.Unmarshal(sc.Bytes(), &b) == nil && b.Name != "" {
			emit(b)
			n++
		}
	}
	if n == 0 {
		return fmt.Errorf("scale-dpdk-null child printed no record: %s", stderr.String())
	}
	return nil
}

func scaleRun(o *Options, emit func(report.Bench)) error {
	cores := []int{0, 1}
	if err := dataplane.CheckCore(1); err != nil {
		return err
	}
	specs := []string{"dpdk:net_null0,copy=1", "dpdk:net_null1,copy=1", "dpdk:net_null2,copy=1", "dpdk:net_null3,copy=1"}
	if err := dpdk.InitEAL(dpdk.EALConfig{Specs: specs, Cores: []int{cores[0]}}); err != nil {
		return err
	}
	defer func() { _ = dpdk.Cleanup() }()
	open := func(i, q int) (*dpdk.Port, error) {
		return dpdk.Open(specs[i], dpdk.Config{Index: uint8(i), Queues: q, Lcores: 2, NoSoftTimestamps: true})
	}
	var ports [4]*dpdk.Port
	for i := range ports {
		q := 1 + i/2 // net_null0/1: one queue; net_null2/3: two
		p, err := open(i, q)
		if err != nil {
			return err
		}
		defer p.Close()
		ports[i] = p
	}
	per := nicRunTime(o)
	var pmd, off, lda [2]nicSamples // [queues-1]
	for r := 0; r < o.Rounds; r++ {
		for qi, nq := range []int{1, 2} {
			if err := pmd[qi].addTestpmd([]string{"net_null0,copy=1", "net_null1,copy=1"}, nq, cores, per); err != nil {
				return fmt.Errorf("scale-testpmd-null-q%d: %w", nq, err)
			}
			a, b := ports[0], ports[1]
			if nq == 2 {
				a, b = ports[2], ports[3]
			}
			for _, withLDA := range []bool{false, true} {
				var groups [][]*dataplane.Lane
				for q := 0; q < nq; q++ {
					ab, err := benchLane(a.Queue(q), b.Queue(q), withLDA, dataplane.DefaultLaneBurst)
					if err != nil {
						return err
					}
					ba, err := benchLane(b.Queue(q), a.Queue(q), withLDA, dataplane.DefaultLaneBurst)
					if err != nil {
						return err
					}
					groups = append(groups, []*dataplane.Lane{ab, ba})
				}
				run, cpuRate, err := runWorkers(groups, cores[2-nq:], per, true)
				if err != nil {
					return fmt.Errorf("scale-dpdk-null q%d: %w", nq, err)
				}
				if withLDA {
					lda[qi].add(run.mpps(), cpuRate)
				} else {
					off[qi].add(run.mpps(), cpuRate)
				}
			}
		}
	}
	extra := func(nq int) map[string]any {
		return map[string]any{"queues": nq, "cores": nq, "burst": dataplane.DefaultLaneBurst, "hugepages": hugeInUse(),
			"shared_machine": "other jobs ran on these CPUs: the headline is per thread-CPU second, wall_mpps is what the jobs left"}
	}
	for qi, nq := range []int{1, 2} {
		e := extra(nq)
		if nq == 2 {
			vsQ1(e, &pmd, nil)
		}
		name := fmt.Sprintf("scale-testpmd-null-q%d", nq)
		emitNIC(emit, name, &pmd[qi], nil, "", true, e)
		for _, c := range []struct {
			tag string
			s   *[2]nicSamples
		}{{"off", &off}, {"lda", &lda}} {
			e := extra(nq)
			if nq == 2 {
				vsQ1(e, c.s, &pmd)
			}
			emitNIC(emit, fmt.Sprintf("scale-dpdk-null-%s-q%d", c.tag, nq), &c.s[qi], &pmd[qi], name, true, e)
		}
	}
	return nil
}

// addTestpmd runs testpmd macswap on vdevs with nq queues (one: main
// lcore on cores[0], forwarding on cores[1]; two: forwarding lcores on
// both) for d and adds its rates: wall Mpps, and frames per forwarding
// CPU second times the forwarding lcores (what dedicated cores give).
func (s *nicSamples) addTestpmd(vdevs []string, nq int, cores []int, d time.Duration) error {
	cfg := bench.TestpmdConfig{Vdevs: vdevs, ForwardMode: "macswap", Duration: d, MainCore: cores[0], FwdCore: cores[1]}
	if nq == 2 {
		cfg.Queues, cfg.FwdCores = 2, cores
	}
	res, err := bench.RunTestpmd(context.Background(), cfg)
	if err != nil {
		return err
	}
	cpuM := 0.0
	if res.CPUNsPerPkt > 0 {
		cpuM = 1e3 / res.CPUNsPerPkt * float64(nq) // CPUNsPerPkt sums the forwarding lcores
	}
	s.add(res.Mpps, cpuM)
	return nil
}

// vsQ1 puts in e what a two-queue record gains over one queue: s's own
// factors (thread CPU and wall clock) and, with pmd, testpmd's.
func vsQ1(e map[string]any, s, pmd *[2]nicSamples) {
	e["vs_q1"] = ratio(median(s[1].cpu), median(s[0].cpu))
	e["wall_vs_q1"] = ratio(median(s[1].wall), median(s[0].wall))
	if pmd != nil {
		e["testpmd_vs_q1"] = ratio(median(pmd[1].cpu), median(pmd[0].cpu))
	}
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// runWorkers runs one worker per lane group, group i pinned to cores[i]
// (and registered as an EAL lcore when eal is set), all for d at once. It returns the
// frames over the longest wall time, and the aggregate rate dedicated
// cores would give: Σ over workers of frames per thread-CPU second.
func runWorkers(groups [][]*dataplane.Lane, cores []int, d time.Duration, eal bool) (laneRun, float64, error) {
	type res struct {
		cpu, wall time.Duration
	}
	rs := make([]res, len(groups))
	var ws []*dataplane.Worker
	var mu sync.Mutex
	for i, g := range groups {
		i := i
		var t0 time.Time
		var c0 time.Duration
		w, err := dataplane.NewWorker(dataplane.WorkerConfig{ID: i, Core: cores[i], Lanes: g,
			OnStart: func() error {
				if eal {
					if _, err := dpdk.RegisterThread(-1); err != nil {
						return err
					}
				}
				c0, t0 = benchThreadCPU(), time.Now()
				return nil
			},
			OnExit: func() {
				mu.Lock()
				rs[i] = res{benchThreadCPU() - c0, time.Since(t0)}
				mu.Unlock()
				if eal {
					dpdk.UnregisterThread()
				}
			}})
		if err != nil {
			return laneRun{}, 0, err
		}
		ws = append(ws, w)
	}
	for _, w := range ws {
		if err := w.Start(); err != nil {
			for _, v := range ws {
				_ = v.Close() // the started ones stop; the rest never start
			}
			return laneRun{}, 0, err
		}
	}
	time.Sleep(d)
	var errs []error
	for _, w := range ws {
		errs = append(errs, w.Close())
	}
	if err := errors.Join(errs...); err != nil {
		return laneRun{}, 0, err
	}
	var run laneRun
	cpuRate := 0.0
	for i, g := range groups {
		var f uint64
		for _, l := range g {
			f += l.Stats.TxFrames.Load()
			run.recorded += l.Stats.Recorded.Load()
		}
		run.frames += f
		run.wall = max(run.wall, rs[i].wall)
		run.cpu += rs[i].cpu
		if rs[i].cpu > 0 {
			cpuRate += float64(f) / rs[i].cpu.Seconds() / 1e6
		}
	}
	if run.frames == 0 || run.wall <= 0 {
		return run, 0, errors.New("the lanes forwarded nothing")
	}
	return run, cpuRate, nil
}
