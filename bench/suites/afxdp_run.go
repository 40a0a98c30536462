package suites

// forward-afxdp-run: `ldafwd run` itself on AF_XDP ports — the
// product's command with its defaults, its control goroutine and its
// XDP program — against dpdk-testpmd --forward-mode=io on DPDK's
// net_af_xdp over the same veth pairs, the same core and the same
// offered traffic (forward-afxdp's generator and wiring). Every round:
// testpmd, then `run --forward-only`, `run --synopsis lda` and `run`
// with the default synopses, each a sender appliance (--segment-port b)
// in a child process with its worker pinned to testpmd's forwarding
// core. The headline is the forwarded rate by wall clock, as in
// forward-afxdp: on veth in copy mode the kernel's copy paths and the
// generator bound every rate, so what counts is whether ldafwd keeps up
// with what testpmd keeps up with: extra.carried is the fraction of the
// offered frames forwarded, extra.carried_ratio ours over testpmd's, round
// by round. A child's rate is taken from its port records as in
// forward-dpdk-pcap, the offered rate over the same span (runChildProbe);
// testpmd's over the span its own rate covers (TestpmdConfig.Probe).

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/ldafwd/ldafwd/report"
)

func init() { register("forward-afxdp-run", benchForwardAFXDPRun) }

// afxdpRunCases are the `ldafwd run` configurations measured each round.
var afxdpRunCases = []pcapCase{
	{"run-afxdp-forward-only", 0, []string{"--forward-only"}},
	{"run-afxdp-lda", 0, []string{"--segment-port", "b", "--insecure", "--synopsis", "lda"}},
	{"run-afxdp-all", 0, []string{"--segment-port", "b", "--insecure"}},
}

func benchForwardAFXDPRun(o *Options, emit func(report.Bench)) error {
	mainCore, fwd, release, err := nicCores()
	if err != nil {
		return err
	}
	defer release()
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	v, g, stop, err := vethGen(mainCore)
	if err != nil {
		return err
	}
	defer stop()
	per := nicRunTime(o)
	var pmd nicSamples
	var offPMD []float64
	ours := make([]nicSamples, len(afxdpRunCases))
	offered := make([][]float64, len(afxdpRunCases))
	for r := 0; r < o.Rounds; r++ {
		off, err := testpmdAFXDP(v, g, mainCore, fwd, per, &pmd)
		if err != nil {
			return fmt.Errorf("testpmd-io-afxdp-run: %w", err)
		}
		offPMD = append(offPMD, off)
		v.detachXDP()
		for i, c := range afxdpRunCases {
			args := append([]string{"run", "--port-a", "afxdp:" + v.A, "--port-b", "afxdp:" + v.B,
				"--cores", strconv.Itoa(fwd)}, c.args...)
			cr, err := runChildBusy(exe, args, per, func() uint64 { return g.sent.Load() })
			if err != nil {
				return fmt.Errorf("%s: %w", c.name, err)
			}
			offered[i] = append(offered[i], float64(cr.probed)/cr.wall.Seconds()/1e6)
			ours[i].add(cr.wallMpps(), cr.cpuMpps())
		}
	}
	carriedPMD := carried(pmd.wall, offPMD)
	emitNIC(emit, "testpmd-io-afxdp-run", &pmd, nil, "", false, map[string]any{
		"offered_mpps": median(offPMD), "carried": median(carriedPMD), "core": fwd})
	for i, c := range afxdpRunCases {
		cr := carried(ours[i].wall, offered[i])
		var rr []float64
		for r := range cr {
			rr = append(rr, cr[r]/carriedPMD[r])
		}
		emitNIC(emit, c.name, &ours[i], &pmd, "testpmd-io-afxdp-run", false, map[string]any{
			"offered_mpps": median(offered[i]), "carried": median(cr), "carried_ratio": median(rr),
			"core": fwd, "args": strings.Join(c.args, " ")})
	}
	return nil
}

// carried is, round by round, the fraction of the offered frames a
// forwarder forwarded.
func carried(fwd, offered []float64) []float64 {
	c := make([]float64, len(fwd))
	for r := range fwd {
		if offered[r] > 0 {
			c[r] = fwd[r] / offered[r]
		}
	}
	return c
}

// runChildBusy is runChildProbe, once more after a pause when the child could
// not open its ports: the kernel releases the previous process's AF_XDP
// sockets from a deferred work item.
func runChildBusy(exe string, args []string, d time.Duration, probe func() uint64) (childRun, error) {
	r, err := runChildProbe(exe, args, d, probe)
	if err != nil && strings.Contains(err.Error(), "busy") {
		time.Sleep(time.Second)
		r, err = runChildProbe(exe, args, d, probe)
	}
	return r, err
}
