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

// arrivalStamps says whether the frames arriving on port (a or b) need
// their arrival times: those from the segment (a receiver's lanes record
// them), and any port captured (--capture-a, --capture-b write them). A
// sender's user-side frames are stamped as they leave into the segment,
// and forwarding alone stamps nothing; their AF_XDP programs skip the
// per-frame clock read (afxdp.Config.NoStamps).
func arrivalStamps(o *Config, port string) bool {
	if port == "a" && o.Capture.A != "" || port == "b" && o.Capture.B != "" {
		return true
	}
	return !o.ForwardOnly && o.Segment == port
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
		for _, p := range [2][2]string{{"--port-a", o.PortA}, {"--port-b", o.PortB}} {
			warn, err := checkAFXDPQueues(p[0], p[1], o.Queues)
			if err != nil {
				return nil, err
			}
			if warn != "" {
				log.Warn().Str("port", p[1]).Msg(warn)
			}
		}
		cfg := afxdp.Config{Burst: o.Burst}
		cfgA, cfgB := cfg, cfg
		cfgA.NoStamps, cfgB.NoStamps = !arrivalStamps(o, "a"), !arrivalStamps(o, "b")
		if o.FailOpen {
			// Each interface's program sends what no socket takes to
			// the other: the wire stays up without this process.
			ifA, _, _ := afxdp.ParseSpec(o.PortA)
			ifB, _, _ := afxdp.ParseSpec(o.PortB)
			cfgA.Bypass, cfgB.Bypass = ifB, ifA
			log.Info().Str("a", ifA).Str("b", ifB).Msg("fail-open: the XDP programs forward between the interfaces whenever no socket is bound (also after this process exits or dies; --fail-open=false removes them)")
		}
		if o.Queues > 1 {
			// One socket per queue: port a's queues take indices
			// 0..n-1, port b's n..2n-1.
			a, err := openAFXDPQueues(o.PortA, o.Queues, cfgA, log)
			if err != nil {
				return nil, fmt.Errorf("--port-a: %w", err)
			}
			cfgB.Index = uint8(o.Queues)
			b, err := openAFXDPQueues(o.PortB, o.Queues, cfgB, log)
			if err != nil {
				a.Close()
				return nil, fmt.Errorf("--port-b: %w", err)
			}
			log.Info().Int("queues", o.Queues).Bool("zero_copy_a", a.ZeroCopy()).Bool("zero_copy_b", b.ZeroCopy()).Str("xdp_mode", a.XDPMode()).
				Str("timestamps_a", a.Queue(0).TimestampSource()).Str("timestamps_b", b.Queue(0).TimestampSource()).Msg("AF_XDP ports open")
			warnOffloads(log, o.PortA, a.XDPMode())
			warnOffloads(log, o.PortB, b.XDPMode())
			ps.a, ps.b = a, b
			break
		}
		cfgA.Index, cfgB.Index = 0, 1
		a, err := openAFXDP(o.PortA, cfgA, log)
		if err != nil {
			return nil, fmt.Errorf("--port-a: %w", err)
		}
		b, err := openAFXDP(o.PortB, cfgB, log)
		if err != nil {
			a.Close()
			return nil, fmt.Errorf("--port-b: %w", err)
		}
		log.Info().Bool("zero_copy_a", a.ZeroCopy()).Bool("zero_copy_b", b.ZeroCopy()).Str("xdp_mode", a.XDPMode()).
			Str("timestamps_a", a.TimestampSource()).Str("timestamps_b", b.TimestampSource()).Msg("AF_XDP ports open")
		warnOffloads(log, o.PortA, a.XDPMode())
		warnOffloads(log, o.PortB, b.XDPMode())
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

// checkAFXDPQueues compares the receive queues of an afxdp: port's
// interface with the ones the port binds (queues 0..n-1, or the one queue
// spec names); see afxdpQueueVerdict.
func checkAFXDPQueues(flag, spec string, n int) (warn string, err error) {
	ifname, q, err := afxdp.ParseSpec(spec)
	if err != nil {
		return "", fmt.Errorf("%s %q: %w", flag, spec, err)
	}
	named := strings.Contains(spec, "@")
	bind := n
	if named {
		bind = 1
	}
	have := afxdp.RxQueues(ifname)
	fix := ""
	if have > bind {
		fix = afxdp.QueueFix(ifname, bind)
	}
	return afxdpQueueVerdict(flag, spec, ifname, named, q, n, have, fix)
}

// afxdpQueueVerdict decides what to do when an interface has more receive
// queues (have; 0: unknown) than a port binds. The NIC's RSS spreads frames
// over all its queues, and the XDP program hands a socket only the frames
// of its own queue: frames on a queue without a socket cross unmeasured
// through the fail-open bypass, or (--fail-open=false) go to this host's
// network stack, which drops them (they are addressed to other stations);
// either way the appliance misses them and the segment is charged with
// their loss or misses traffic. The interface form (afxdp:eth1, queues 0..n-1) is refused
// with the command that leaves n queues and the --queues that binds them
// all. A named queue (afxdp:eth1@2) is the operator steering on purpose
// (flow rules, an RSS table of one queue): warned, not refused. fix is the
// ethtool command that leaves the port's queue count, "" if the driver has
// none.
func afxdpQueueVerdict(flag, spec, ifname string, named bool, q, n, have int, fix string) (warn string, err error) {
	if named {
		if have <= 1 {
			return "", nil
		}
		w := fmt.Sprintf("%s %s binds queue %d only, but %s has %d receive queues: frames the NIC puts on the others do not go through the appliance (they cross unmeasured with --fail-open, or go to this host's network stack), unless the NIC steers every frame to queue %d (ethtool -N / -X)", flag, spec, q, ifname, have, q)
		if fix != "" {
			w += fmt.Sprintf("; or leave one queue (%s) and give afxdp:%s", fix, ifname)
		}
		return w, nil
	}
	if have <= n {
		return "", nil
	}
	bound := fmt.Sprintf("queues 0..%d", n-1)
	if n == 1 {
		bound = "queue 0 only"
	}
	others := fmt.Sprintf("queues %d..%d", n, have-1)
	if have-1 == n {
		others = fmt.Sprintf("queue %d", n)
	}
	e := fmt.Sprintf("%s %s: %s has %d receive queues but --queues %d binds %s: frames the NIC puts on %s would not go through the appliance (they cross unmeasured with --fail-open, or go to this host's network stack)", flag, spec, ifname, have, n, bound, others)
	if fix != "" {
		e += fmt.Sprintf("; leave %d (%s) or bind them all (--queues %d)", n, fix, have)
	} else {
		e += fmt.Sprintf("; the driver cannot change its queue count: bind them all (--queues %d)", have)
	}
	return "", errors.New(e)
}

// warnOffloads logs one warning per receive offload of an afxdp: port's
// interface that changes or drops frames before the XDP program sees them,
// with the ethtool command that turns it off. Read after the port opened:
// attaching the program may turn some off. A warning, not a refusal:
// whether it matters depends on the traffic (no TCP, no VLAN tags).
func warnOffloads(log zerolog.Logger, spec, xdpMode string) {
	ifname, _, _ := afxdp.ParseSpec(spec)
	offs, err := afxdp.CheckOffloads(ifname, xdpMode)
	if err != nil {
		log.Warn().Str("port", spec).Err(err).Msg("could not check the interface's offloads")
		return
	}
	for _, o := range offs {
		ev := log.Warn().Str("port", spec).Str("offload", o.Feature)
		if o.Fix != "" {
			ev.Str("fix", o.Fix).Msg(o.Why + ": turn it off with " + o.Fix)
		} else {
			ev.Msg(o.Why + "; the driver has it fixed on (ethtool -k says [fixed]), so it cannot be turned off")
		}
	}
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
