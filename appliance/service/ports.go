package service

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/ldafwd/ldafwd/dataplane"
	"github.com/ldafwd/ldafwd/dataplane/afxdp"
	"github.com/ldafwd/ldafwd/dpdk"
	"github.com/rs/zerolog"
)

// checkPortSpec validates a port spec without opening anything and
// returns its kind: "ring", "dpdk" or "afxdp".
func checkPortSpec(flag, spec string) (string, error) {
	kind, _, ok := strings.Cut(spec, ":")
	if !ok {
		return "", fmt.Errorf("%s %q: want dpdk:<PCI address or vdev devargs>, afxdp:<ifname>[@queue] or ring:<link>.a|b", flag, spec)
	}
	var err error
	switch kind {
	case "ring":
		rest := strings.TrimPrefix(spec, "ring:")
		if !strings.HasSuffix(rest, ".a") && !strings.HasSuffix(rest, ".b") || len(rest) < 3 {
			err = fmt.Errorf("want ring:<link>.a or ring:<link>.b")
		}
	case "dpdk":
		_, err = dpdk.ParseSpec(spec)
	case "afxdp":
		_, _, err = afxdp.ParseSpec(spec)
	default:
		err = fmt.Errorf("unknown port kind %q: want dpdk:, afxdp: or ring:", kind)
	}
	if err != nil {
		return "", fmt.Errorf("%s %q: %w", flag, spec, err)
	}
	return kind, nil
}

// portSet is the two opened ports and what their kind needs around the
// workers (DPDK: lcore registration) and at close (EAL cleanup).
type portSet struct {
	a, b dataplane.Port
	dpdk bool
}

// openPorts opens port a then port b (and DPDK's EAL first when they are
// dpdk: ports). A port that does not exist is an error naming its flag.
func openPorts(o *Config, log zerolog.Logger) (*portSet, error) {
	kind, _, _ := strings.Cut(o.PortA, ":")
	ps := &portSet{}
	switch kind {
	case "ring":
		a, err := dataplane.OpenRingPort(o.PortA)
		if err != nil {
			return nil, fmt.Errorf("--port-a: %w", err)
		}
		b, err := dataplane.OpenRingPort(o.PortB)
		if err != nil {
			a.Close()
			return nil, fmt.Errorf("--port-b: %w", err)
		}
		ps.a, ps.b = a, b
	case "afxdp":
		cfg := afxdp.Config{Burst: o.Burst}
		if o.Queues > 1 {
			// One socket per queue: port a's queues take indices
			// 0..n-1, port b's n..2n-1.
			a, err := openAFXDPQueues(o.PortA, o.Queues, cfg, log)
			if err != nil {
				return nil, fmt.Errorf("--port-a: %w", err)
			}
			cfg.Index = uint8(o.Queues)
			b, err := openAFXDPQueues(o.PortB, o.Queues, cfg, log)
			if err != nil {
				a.Close()
				return nil, fmt.Errorf("--port-b: %w", err)
			}
			log.Info().Int("queues", o.Queues).Bool("zero_copy_a", a.ZeroCopy()).Bool("zero_copy_b", b.ZeroCopy()).Str("xdp_mode", a.XDPMode()).Msg("AF_XDP ports open")
			ps.a, ps.b = a, b
			break
		}
		cfg.Index = 0
		a, err := openAFXDP(o.PortA, cfg, log)
		if err != nil {
			return nil, fmt.Errorf("--port-a: %w", err)
		}
		cfg.Index = 1
		b, err := openAFXDP(o.PortB, cfg, log)
		if err != nil {
			a.Close()
			return nil, fmt.Errorf("--port-b: %w", err)
		}
		log.Info().Bool("zero_copy_a", a.ZeroCopy()).Bool("zero_copy_b", b.ZeroCopy()).Str("xdp_mode", a.XDPMode()).Msg("AF_XDP ports open")
		ps.a, ps.b = a, b
	case "dpdk":
		if !dpdk.Built {
			return nil, fmt.Errorf("--port-a %s: dpdk: ports are not available in this build: %w", o.PortA, dpdk.ErrNotBuilt)
		}
		if err := dpdk.InitEAL(dpdk.EALConfig{Args: o.EAL, Specs: []string{o.PortA, o.PortB}, Cores: o.Cores}); err != nil {
			return nil, fmt.Errorf("DPDK EAL (arguments after --): %w", err)
		}
		log.Info().Strs("eal", dpdk.EALArgv()).Msg("DPDK EAL initialised")
		if ealFellBackToNoHuge(dpdk.EALArgv(), o.EAL) {
			log.Warn().Msg(noHugeWarning)
		}
		ps.dpdk = true
		// Both workers (one per direction at most) use each pool.
		cfg := dpdk.Config{Burst: o.Burst, Lcores: max(2, o.Queues), Queues: o.Queues, NoSoftTimestamps: true} // the lanes stamp received bursts themselves
		cfg.Index = 0
		a, err := dpdk.Open(o.PortA, cfg)
		if err != nil {
			dpdk.Cleanup()
			return nil, fmt.Errorf("--port-a: %w", err)
		}
		cfg.Index = 1
		b, err := dpdk.Open(o.PortB, cfg)
		if err != nil {
			a.Close()
			dpdk.Cleanup()
			return nil, fmt.Errorf("--port-b: %w", err)
		}
		log.Info().Str("timestamps_a", a.TimestampSource()).Str("timestamps_b", b.TimestampSource()).Msg("DPDK ports open")
		ps.a, ps.b = a, b
	default:
		return nil, fmt.Errorf("--port-a %q: unknown port kind", o.PortA)
	}
	return ps, nil
}

// afxdpBusyWait is how long openAFXDP retries a queue that is still
// bound. The kernel releases an AF_XDP socket of a killed process
// asynchronously, so a restart right after a crash (systemd's
// Restart=on-failure) finds the queue busy for a moment.
const afxdpBusyWait = 5 * time.Second

func openAFXDP(spec string, cfg afxdp.Config, log zerolog.Logger) (*afxdp.Port, error) {
	deadline := time.Now().Add(afxdpBusyWait)
	for {
		p, err := afxdp.Open(spec, cfg)
		if err == nil || !errors.Is(err, syscall.EBUSY) || time.Now().After(deadline) {
			return p, err
		}
		log.Warn().Str("port", spec).Err(err).Msg("queue busy (a previous socket is still being released?): retrying")
		time.Sleep(100 * time.Millisecond)
	}
}

func openAFXDPQueues(spec string, n int, cfg afxdp.Config, log zerolog.Logger) (*afxdp.Queues, error) {
	deadline := time.Now().Add(afxdpBusyWait)
	for {
		p, err := afxdp.OpenQueues(spec, n, cfg)
		if err == nil || !errors.Is(err, syscall.EBUSY) || time.Now().After(deadline) {
			return p, err
		}
		log.Warn().Str("port", spec).Err(err).Msg("queue busy (a previous socket is still being released?): retrying")
		time.Sleep(100 * time.Millisecond)
	}
}

// onWorkerStart registers a DPDK worker thread as an lcore (mempool
// per-lcore caches); the worker has already pinned it.
func (ps *portSet) onWorkerStart() error {
	if !ps.dpdk {
		return nil
	}
	_, err := dpdk.RegisterThread(-1)
	return err
}

func (ps *portSet) onWorkerExit() {
	if ps.dpdk {
		dpdk.UnregisterThread()
	}
}

// close closes b, then a, then cleans up EAL.
func (ps *portSet) close() error {
	err := errors.Join(ps.b.Close(), ps.a.Close())
	if ps.dpdk {
		err = errors.Join(err, dpdk.Cleanup())
	}
	return err
}

const noHugeWarning = "no hugepages were free: the DPDK EAL runs with --no-huge -m 1024, which costs 2-4x more per packet (docs/dpdk.md); reserve hugepages (echo 512 > /proc/sys/vm/nr_hugepages, or hugepages= on the kernel command line) or pass EAL memory arguments after --"

// ealFellBackToNoHuge says whether the EAL was given --no-huge that the
// user did not ask for (EALArgs adds it when no hugepages are free): the
// appliance then forwards far slower than it could, and says so.
func ealFellBackToNoHuge(argv, user []string) bool {
	return slices.Contains(argv, "--no-huge") && !slices.Contains(user, "--no-huge")
}

// CheckPorts is `ldafwd run --check`'s port check: it opens both ports
// as Run would (the EAL first for dpdk: ports), describes them, and
// closes them again.
func CheckPorts(o *Config, log zerolog.Logger) ([2]string, error) {
	var desc [2]string
	ps, err := openPorts(o, log)
	if err != nil {
		return desc, err
	}
	for i, p := range []dataplane.Port{ps.a, ps.b} {
		desc[i] = []string{o.PortA, o.PortB}[i]
		if n := p.Name(); n != desc[i] {
			desc[i] += " (" + n + ")"
		}
		desc[i] += " opens"
		if x, ok := p.(interface {
			ZeroCopy() bool
			XDPMode() string
		}); ok {
			desc[i] += fmt.Sprintf(", XDP mode %s, zero-copy %v", x.XDPMode(), x.ZeroCopy())
		}
	}
	if err := ps.close(); err != nil {
		return desc, fmt.Errorf("closing the ports: %w", err)
	}
	return desc, nil
}
