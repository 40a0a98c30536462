package e2e

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/ldafwd/ldafwd/appliance"
	"github.com/ldafwd/ldafwd/control"
	"github.com/ldafwd/ldafwd/dataplane/nettest"
	"github.com/ldafwd/ldafwd/report"
	"golang.org/x/sys/unix"
)

// The binary is built once per test process, with DPDK when libdpdk is
// installed (then the same binary serves afxdp: and dpdk: ports), into a
// directory TestMain removes.
var build struct {
	once sync.Once
	dir  string
	bin  string
	dpdk bool
	err  error
	out  []byte
}

func TestMain(m *testing.M) {
	code := m.Run()
	if build.dir != "" {
		os.RemoveAll(build.dir)
	}
	os.Exit(code)
}

// ldafwdBinary returns $LDAFWD_BIN (AF_XDP tests only) or the binary
// built from ../cmd/ldafwd; a test that needs dpdk: ports skips when it
// was built without DPDK.
func ldafwdBinary(t *testing.T, needDPDK bool) string {
	t.Helper()
	if b := os.Getenv("LDAFWD_BIN"); b != "" && !needDPDK {
		return b
	}
	build.once.Do(func() {
		if build.dir, build.err = os.MkdirTemp("", "ldafwd-e2e-"); build.err != nil {
			return
		}
		build.bin = filepath.Join(build.dir, "ldafwd")
		args := []string{"build", "-o", build.bin}
		if exec.Command("pkg-config", "--exists", "libdpdk").Run() == nil {
			args, build.dpdk = append(args, "-tags", "dpdk"), true
		}
		cmd := exec.Command("go", append(args, "./cmd/ldafwd")...)
		cmd.Dir = ".."
		build.out, build.err = cmd.CombinedOutput()
	})
	if build.err != nil {
		t.Fatalf("go build ./cmd/ldafwd: %v\n%s", build.err, build.out)
	}
	if needDPDK && !build.dpdk {
		t.Skip("libdpdk is not installed (pkg-config libdpdk): the binary has no dpdk: ports")
	}
	return build.bin
}

// proc is one running `ldafwd run` with its output collected.
type proc struct {
	name string
	cmd  *exec.Cmd
	mu   sync.Mutex
	out  []string // stdout lines (JSON)
	err  strings.Builder
	// exited is closed once the process has exited and its output is
	// read; waitErr is its exit status then.
	exited  chan struct{}
	waitErr error
}

// hasExited reports whether the process has exited.
func (p *proc) hasExited() bool {
	select {
	case <-p.exited:
		return true
	default:
		return false
	}
}

func startLdafwd(t *testing.T, name, bin string, args ...string) *proc {
	t.Helper()
	p := &proc{name: name, cmd: exec.Command(bin, append([]string{"run"}, args...)...), exited: make(chan struct{})}
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			p.mu.Lock()
			p.out = append(p.out, sc.Text())
			p.mu.Unlock()
		}
	}()
	go func() {
		defer wg.Done()
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			p.mu.Lock()
			p.err.WriteString(sc.Text() + "\n")
			p.mu.Unlock()
		}
	}()
	go func() {
		wg.Wait()
		p.waitErr = p.cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		if !p.hasExited() {
			_ = p.cmd.Process.Kill()
			<-p.exited
		}
	})
	return p
}

// stop sends SIGTERM and waits up to limit for a clean exit.
func (p *proc) stop(t *testing.T, limit time.Duration) {
	t.Helper()
	if _, killed := p.terminate(limit); killed {
		t.Fatalf("%s did not exit within %v of SIGTERM\n%s", p.name, limit, p.stderr())
	}
	if p.waitErr != nil {
		t.Errorf("%s exited with %v after SIGTERM\n%s", p.name, p.waitErr, p.stderr())
	}
}

// terminate sends SIGTERM and waits up to limit for the process to exit,
// then kills it; it returns how long the process took and whether it
// had to be killed.
func (p *proc) terminate(limit time.Duration) (took time.Duration, killed bool) {
	start := time.Now()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
		return time.Since(start), false
	case <-time.After(limit):
		_ = p.cmd.Process.Kill()
		<-p.exited
		return time.Since(start), true
	}
}

func (p *proc) stderr() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err.String()
}

// records parses the stdout lines so far.
func (p *proc) records(t *testing.T) (ivs []report.Interval, ports []report.Port) {
	t.Helper()
	p.mu.Lock()
	lines := append([]string(nil), p.out...)
	p.mu.Unlock()
	for _, l := range lines {
		var typ struct{ Type string }
		if err := json.Unmarshal([]byte(l), &typ); err != nil {
			t.Fatalf("%s: not a JSON line: %q", p.name, l)
		}
		switch typ.Type {
		case "interval":
			var r report.Interval
			if err := json.Unmarshal([]byte(l), &r); err != nil {
				t.Fatal(err)
			}
			ivs = append(ivs, r)
		case "port":
			var r report.Port
			if err := json.Unmarshal([]byte(l), &r); err != nil {
				t.Fatal(err)
			}
			ports = append(ports, r)
		}
	}
	return ivs, ports
}

// rawSock is an AF_PACKET socket on one interface of a namespace that
// ignores the frames it sends itself (so a relay does not loop) and has a
// large receive buffer (so bursts are not dropped at the socket).
type rawSock struct{ fd int }

func openRaw(t *testing.T, ns, ifname string) *rawSock {
	t.Helper()
	var s rawSock
	err := nettest.InNetns(ns, func() error {
		ifi, err := netInterface(ifname)
		if err != nil {
			return err
		}
		fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, int(htons(unix.ETH_P_ALL)))
		if err != nil {
			return err
		}
		_ = unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_IGNORE_OUTGOING, 1)
		_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 16<<20)
		_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUFFORCE, 16<<20)
		if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: ifi}); err != nil {
			unix.Close(fd)
			return err
		}
		s.fd = fd
		return nil
	})
	if err != nil {
		t.Fatalf("raw socket on %s in %s: %v", ifname, ns, err)
	}
	t.Cleanup(func() { unix.Close(s.fd) })
	return &s
}

// netInterface is the index of an interface of the calling thread's
// namespace (by netlink: /sys shows the namespace it was mounted in).
func netInterface(name string) (int, error) {
	ifi, err := net.InterfaceByName(name)
	if err != nil {
		return 0, err
	}
	return ifi.Index, nil
}

// recv waits up to timeout for a frame; 0 on timeout.
func (s *rawSock) recv(buf []byte, timeout time.Duration) int {
	fds := []unix.PollFd{{Fd: int32(s.fd), Events: unix.POLLIN}}
	if n, err := unix.Poll(fds, int(timeout/time.Millisecond)); err != nil || n == 0 {
		return 0
	}
	n, err := unix.Read(s.fd, buf)
	if err != nil {
		return 0
	}
	return n
}

func (s *rawSock) send(b []byte) error {
	_, err := unix.Write(s.fd, b)
	return err
}

// drops is the socket's PACKET_STATISTICS tp_drops since the last call.
func (s *rawSock) drops() uint32 {
	var st unix.TpacketStats
	l := uint32(unsafe.Sizeof(st))
	_, _, e := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(s.fd), unix.SOL_PACKET, unix.PACKET_STATISTICS,
		uintptr(unsafe.Pointer(&st)), uintptr(unsafe.Pointer(&l)), 0)
	if e != 0 {
		return 0
	}
	return st.Drops
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

const labTag = 0x1ab0e2e

// TestLabTwoProcesses is the lab of scripts/lab.sh as a test:
//
//	gen ns ─veth─ [a ldafwd#1 b] ─veth─ wire1 ns ⇄ relay (drops every 97th data frame) ⇄ wire2 ns ─veth─ [a ldafwd#2 b] ─veth─ sink ns
//
// The appliances are two processes of the real binary with afxdp: ports
// in the root namespace. The segment between them is a userspace relay
// in the test (this kernel has no netem) that drops every 97th IPv4 frame
// in the a→b direction and passes everything else, control frames
// included. After SIGTERM to both, every frame is accounted for:
// ldafwd#2's valid a>b intervals sum to what #1 took in (sent) and what
// reached the sink (received), and their lost is exactly what the relay
// dropped. tshark with scripts/wireshark/ldafwd.lua decodes every control
// frame the relay passed (checkCapturedControl).
func TestLabTwoProcesses(t *testing.T) {
	nettest.Require(t)
	// The copy-mode AF_XDP sender's transmit stamps are clock reads around
	// sendto: on a busy 2-CPU host an interval's average reached 68 µs,
	// over the default --max-stamp-err. This lab checks every frame's
	// accounting, so it allows 1 ms; its lines' bounds carry the
	// uncertainty.
	runLab(t, ldafwdBinary(t, false), func(ifname string, _ int) string { return "afxdp:" + ifname }, "--max-stamp-err", "1ms")
}

// TestLabTwoProcessesDPDK is the same lab with DPDK's net_af_packet vdev
// on the same veths (when the binary has DPDK; not under -short). The
// packet socket gives no arrival stamp: ldafwd#2 stamps at its poll, whose
// uncertainty (about half the poll gap of a worker that sleeps when idle,
// 50–120 µs measured here, ~0.5 ms in an interval with a stall) is over
// the default --max-stamp-err, so this lab — which checks every frame's
// accounting — allows 5 ms; its lines' bounds carry that uncertainty.
func TestLabTwoProcessesDPDK(t *testing.T) {
	nettest.Require(t)
	if testing.Short() {
		t.Skip("-short: the afxdp: lab covers the same path")
	}
	runLab(t, ldafwdBinary(t, true), func(ifname string, n int) string {
		// framecnt: the PMD's default 512-frame ring overflows when a busy
		// 2-CPU machine stalls the worker for 50 ms at 10 kpps; 4096 frames
		// hold 400 ms, like the AF_XDP port's 2048-descriptor ring and more.
		return fmt.Sprintf("dpdk:net_af_packet%d,iface=%s,framecnt=4096", n, ifname)
	}, "--max-stamp-err", "5ms")
}

// lab is the topology of TestLabTwoProcesses with its relay and sink
// running; the appliances are started by the tests.
type lab struct {
	t                   *testing.T
	bin                 string
	spec                func(ifname string, n int) string
	gen, w1, w2, sink   *nettest.Veth
	interval            time.Duration
	common              []string
	r1, r2              *rawSock
	dropped             atomic.Uint64 // data frames the relay dropped a→b
	relayed, relayedBak atomic.Uint64
	sunk, strays        atomic.Uint64
	// captured are the control frames the relay passed (both ways, up to
	// maxCaptured), for the Wireshark dissector's check.
	capMu               sync.Mutex
	captured            [][]byte
	stopRelay, stopSink chan struct{}
	relays              sync.WaitGroup
	sinkDone            chan struct{}
	gs                  *rawSock
	seq                 uint64 // frames the generator sent
}

func newLab(t *testing.T, bin string, spec func(ifname string, n int) string) *lab {
	l := &lab{t: t, bin: bin, spec: spec, interval: 200 * time.Millisecond,
		stopRelay: make(chan struct{}), stopSink: make(chan struct{}), sinkDone: make(chan struct{})}
	l.gen = nettest.NewVeth(t, nettest.Options{})
	l.w1 = nettest.NewVeth(t, nettest.Options{})
	l.w2 = nettest.NewVeth(t, nettest.Options{})
	l.sink = nettest.NewVeth(t, nettest.Options{})
	keyFile := filepath.Join(t.TempDir(), "lab.key")
	key, err := control.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	if err := control.WriteKeyFile(keyFile, key, false); err != nil {
		t.Fatal(err)
	}
	// --max-delay 2s and --min-delay -50ms, as scripts/lab.sh: with both
	// cores busy (go test runs packages in parallel, and the appliances'
	// workers spin) a frame has waited for the relay or a worker beyond
	// 200 ms, and a sender preempted around a TxBurst stamps late.
	l.common = []string{"--interval", l.interval.String(), "--key-file", keyFile, "--format", "json", "--max-delay", "2s", "--idle-sleep", "50us",
		"--min-delay", "-50ms", "--stats-interval", "1s", "--log-level", "info"}

	// The segment: relay between the two wire namespaces.
	l.r1, l.r2 = openRaw(t, l.w1.NS, l.w1.Peer), openRaw(t, l.w2.NS, l.w2.Peer)
	relay := func(from, to *rawSock, drop bool, n *atomic.Uint64) {
		defer l.relays.Done()
		buf := make([]byte, 2048)
		data := uint64(0)
		for {
			select {
			case <-l.stopRelay:
				return
			default:
			}
			n0 := from.recv(buf, 20*time.Millisecond)
			if n0 == 0 {
				continue
			}
			if n0 >= 14 && binary.BigEndian.Uint16(buf[12:14]) == control.EtherType {
				l.capMu.Lock()
				if len(l.captured) < maxCaptured {
					l.captured = append(l.captured, append([]byte(nil), buf[:n0]...))
				}
				l.capMu.Unlock()
			}
			if drop && n0 >= 14 && binary.BigEndian.Uint16(buf[12:14]) == 0x0800 {
				data++
				if data%97 == 0 {
					l.dropped.Add(1)
					continue
				}
			}
			if err := to.send(buf[:n0]); err != nil {
				t.Errorf("relay send: %v", err)
				return
			}
			n.Add(1)
		}
	}
	l.relays.Add(2)
	go relay(l.r1, l.r2, true, &l.relayed)
	go relay(l.r2, l.r1, false, &l.relayedBak)

	// Sink: count our frames, and anything else that comes out.
	sk := openRaw(t, l.sink.NS, l.sink.Peer)
	go func() {
		defer close(l.sinkDone)
		buf := make([]byte, 2048)
		for {
			select {
			case <-l.stopSink:
				return
			default:
			}
			n := sk.recv(buf, 20*time.Millisecond)
			if n == 0 {
				continue
			}
			if tag, _, ok := nettest.ParseFrame(buf[:n]); ok && tag == labTag {
				l.sunk.Add(1)
			} else {
				l.strays.Add(1)
			}
		}
	}()
	l.gs = openRaw(t, l.gen.NS, l.gen.Peer)
	t.Cleanup(l.shutdown)
	return l
}

// start1 and start2 start ldafwd#1 (gen → segment) and ldafwd#2
// (segment → sink, with metrics).
func (l *lab) start1(name string) *proc {
	return l.startAgain(name, append([]string{"--port-a", l.spec(l.gen.Host, 0), "--port-b", l.spec(l.w1.Host, 1), "--segment-port", "b"}, l.common...))
}

func (l *lab) start2(name string) *proc {
	return l.startAgain(name, append([]string{"--port-a", l.spec(l.w2.Host, 0), "--port-b", l.spec(l.sink.Host, 1), "--segment-port", "a",
		"--metrics-addr", "127.0.0.1:0"}, l.common...))
}

// fanoutClash is what DPDK 22.11's net_af_packet logs when its socket
// cannot join its PACKET_FANOUT group. The PMD names the group from the
// process's pid XOR the interface's index, and a group belongs to one
// interface of its network namespace: two processes of one namespace
// whose pids differ as the indexes of their interfaces do (two
// appliances started one after the other, on veths created in a row)
// clash, and the later one cannot open its port. A new process has
// another pid.
const fanoutClash = "could not set PACKET_FANOUT"

// startAgain starts an appliance with args and, when it exits on
// fanoutClash before it logs "appliance started" (its ports open), starts
// it again, up to three times.
func (l *lab) startAgain(name string, args []string) *proc {
	l.t.Helper()
	for try := 1; ; try++ {
		p := startLdafwd(l.t, name, l.bin, args...)
		for deadline := time.Now().Add(10 * time.Second); !p.hasExited() && time.Now().Before(deadline) &&
			!strings.Contains(p.stderr(), `"appliance started"`); {
			time.Sleep(10 * time.Millisecond)
		}
		if !p.hasExited() || try == 3 || !strings.Contains(p.stderr(), fanoutClash) {
			return p
		}
		l.t.Logf("%s: net_af_packet's fanout group clashed with another process's (pid %d): starting it again", name, p.cmd.Process.Pid)
	}
}

// waitAB waits up to 15 s until p has reported n a>b interval lines in
// all, failing the test otherwise.
func (l *lab) waitAB(p *proc, n int, others ...*proc) {
	l.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		ivs, _ := p.records(l.t)
		k := 0
		for _, r := range ivs {
			if r.Direction == "a>b" && r.MEC == "all" {
				k++
			}
		}
		if k >= n {
			return
		}
		if time.Now().After(deadline) {
			var b strings.Builder
			for _, o := range append([]*proc{p}, others...) {
				fmt.Fprintf(&b, "%s:\n%s\n", o.name, o.stderr())
			}
			l.t.Fatalf("%s reported %d of %d a>b intervals within 15 s\n%s", p.name, k, n, b.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// send generates IPv4/UDP frames from the generator namespace at rate
// frames per second for dur.
func (l *lab) send(dur time.Duration, rate float64) {
	l.t.Helper()
	start, base := time.Now(), l.seq
	for time.Since(start) < dur {
		due := base + uint64(time.Since(start).Seconds()*rate)
		for ; l.seq < due; l.seq++ {
			f := nettest.UDPFrame(l.gen.HostMAC, l.gen.PeerMAC, labTag, l.seq, 128, uint16(1000+l.seq%64))
			if err := l.gs.send(f); err != nil {
				l.t.Fatalf("generator: %v", err)
			}
		}
		time.Sleep(200 * time.Microsecond)
	}
}

// shutdown stops the relay and the sink (idempotent).
func (l *lab) shutdown() {
	select {
	case <-l.stopRelay:
		return
	default:
	}
	close(l.stopRelay)
	l.relays.Wait()
	close(l.stopSink)
	<-l.sinkDone
}

// runLab runs the lab with port specs from spec(ifname, n), n the
// vdev instance number within one process.
func runLab(t *testing.T, bin string, spec func(ifname string, n int) string, extra ...string) {
	l := newLab(t, bin, spec)
	l.common = append(l.common, extra...)
	p1, p2 := l.start1("ldafwd#1"), l.start2("ldafwd#2")
	// Both appliances up, the session's partial first interval behind.
	l.waitAB(p2, 2, p1)

	// Traffic from the generator namespace at about 10 kpps.
	dur := 3 * time.Second
	if testing.Short() {
		dur = 1500 * time.Millisecond
	}
	l.send(dur, 10_000)
	sent := l.seq
	// Let the last frames through and close two more intervals, then stop
	// #1 first (its last interval's synopses go in-band to #2), then #2.
	time.Sleep(2 * l.interval)
	checkMetrics(t, p2)
	p1.stop(t, 10*time.Second)
	p2.stop(t, 10*time.Second)
	l.shutdown()
	dropped, relayed, relayedBack, sunk, strays, r1, r2 := &l.dropped, &l.relayed, &l.relayedBak, &l.sunk, &l.strays, l.r1, l.r2

	checkCapturedControl(t, l.captured)

	ivs, ports2 := p2.records(t)
	_, ports1 := p1.records(t)
	final := func(ports []report.Port, port string) report.Port { return finalPort(t, ports, port) }
	in1 := final(ports1, "a")  // what ldafwd#1 took in from the generator
	out2 := final(ports2, "b") // what ldafwd#2 put out toward the sink
	in2 := final(ports2, "a")  // what ldafwd#2 took in from the segment
	var sumSent, sumRecv, sumLost uint64
	valid, withTraffic := 0, 0
	for _, r := range ivs {
		if r.Direction != "a>b" || r.MEC != "all" || r.Synopsis != "lda" {
			continue
		}
		if r.Sent+r.Received > 0 {
			withTraffic++
		}
		if !r.Valid && strings.HasPrefix(r.Reason, "timestamps uncertain") {
			// Honest: the host descheduled a worker for milliseconds and
			// the poll stamps' window outgrew --max-stamp-err. The
			// interval's counts still come from the synopses: they are
			// held to the frames with the rest (as in TestLabBridge).
			t.Logf("interval %d invalid for its stamps (a busy host): %s", r.Interval, r.Reason)
			sumSent += r.Sent
			sumRecv += r.Received
			sumLost += r.Lost
			continue
		}
		if !r.Valid {
			if r.Sent+r.Received > 0 {
				b, _ := json.Marshal(r)
				t.Errorf("interval %d with traffic invalid: %s\n%s", r.Interval, r.Reason, b)
			}
			continue
		}
		valid++
		sumSent += r.Sent
		sumRecv += r.Received
		sumLost += r.Lost
	}
	t.Logf("generator sent %d; #1 port a rx %d (dropped %d); relay dropped %d, passed %d a→b and %d b→a (socket drops %d/%d); #2 port a rx %d (dropped %d), port b tx %d; sink got %d (+%d other frames)",
		sent, in1.RxPackets, in1.RxDropped, dropped.Load(), relayed.Load(), relayedBack.Load(), r1.drops(), r2.drops(), in2.RxPackets, in2.RxDropped, out2.TxPackets, sunk.Load(), strays.Load())
	t.Logf("#2: %d a>b intervals with traffic, %d valid: Σ sent %d, Σ received %d, Σ lost %d", withTraffic, valid, sumSent, sumRecv, sumLost)
	if in1.RxPackets != sent {
		t.Errorf("ldafwd#1 received %d of the %d frames sent (rx_dropped %d)", in1.RxPackets, sent, in1.RxDropped)
	}
	if sumSent != in1.RxPackets {
		t.Errorf("Σ sent over valid intervals %d ≠ %d frames ldafwd#1 received: not every frame is in a valid interval", sumSent, in1.RxPackets)
	}
	if sumRecv != sunk.Load() || out2.TxPackets != sunk.Load() {
		t.Errorf("Σ received %d, ldafwd#2 transmitted %d, the sink got %d", sumRecv, out2.TxPackets, sunk.Load())
	}
	if sumLost != sent-sunk.Load() || sumLost != dropped.Load() {
		t.Errorf("Σ lost %d; sent − received at the sink = %d; the relay dropped %d", sumLost, sent-sunk.Load(), dropped.Load())
	}
	if dropped.Load() == 0 || valid < 3 {
		t.Errorf("too little measured: %d dropped, %d valid intervals", dropped.Load(), valid)
	}
	if t.Failed() {
		t.Logf("#1 stderr:\n%s\n#2 stderr:\n%s", p1.stderr(), p2.stderr())
	}
}

// checkMetrics scrapes the running appliance's /metrics and /healthz
// (the address is in its log).
func checkMetrics(t *testing.T, p *proc) {
	t.Helper()
	addr := metricsAddr(p)
	if addr == "" {
		t.Errorf("%s: no metrics address in the log", p.name)
		return
	}
	get := func(path string) (int, string) {
		code, body, err := fetchURL("http://" + addr + path)
		if err != nil {
			t.Errorf("%s %s: %v", p.name, path, err)
		}
		return code, body
	}
	if code, body := get("/healthz"); code != http.StatusOK || !strings.Contains(body, `"status":"running"`) {
		t.Errorf("%s /healthz: %d %s", p.name, code, body)
	}
	// The first valid a>b line reaches the metrics once its interval
	// has paired, waited for the next one's evidence and gone through
	// the report queue: seconds after the traffic under -race.
	_, body := get("/metrics")
	for deadline := time.Now().Add(15 * time.Second); !strings.Contains(body, `valid="true"`) && time.Now().Before(deadline); {
		time.Sleep(200 * time.Millisecond)
		_, body = get("/metrics")
	}
	for _, want := range []string{`ldafwd_intervals_total{direction="a>b",mec="all",reason="ok",segment="default",synopsis="lda",valid="true"}`,
		`ldafwd_lost_packets_total{direction="a>b",mec="all",segment="default",synopsis="lda"}`, `ldafwd_delay_packets_total{direction="a>b",mec="all",segment="default",synopsis="lda"}`,
		`ldafwd_port_rx_packets_total{name=`, `ldafwd_control_bundles_total`, `ldafwd_up{segment="default"} 1`} {
		if !strings.Contains(body, want) {
			t.Errorf("%s /metrics lacks %q", p.name, want)
		}
	}
}

// metricsAddr is the address a running appliance serves /metrics on, from
// its log ("" before it says).
func metricsAddr(p *proc) string {
	m := regexp.MustCompile(`"addr":"([^"]+)"[^\n]*"message":"serving /metrics`).FindStringSubmatch(p.stderr())
	if m == nil {
		return ""
	}
	return m[1]
}

// fetchURL fetches u (10 s at most): status code and body.
func fetchURL(u string) (int, string, error) {
	c := http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get(u)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// TestLabPeerRestart kills ldafwd#1 with SIGKILL in the middle of the
// traffic (no clean stop: its fail-open XDP programs stay attached, its
// session ends mid-interval) and starts it again. The new process's afxdp
// ports replace those programs with their own, ldafwd#2 keeps running and reports the gap
// and the new session's partial first interval as invalid, and is valid
// again within two intervals of the restart; valid intervals stay exact.
func TestLabPeerRestart(t *testing.T) {
	nettest.Require(t)
	l := newLab(t, ldafwdBinary(t, false), func(ifname string, _ int) string { return "afxdp:" + ifname })
	// What this lab checks is the recovery after a restart: the sender's
	// copy-mode AF_XDP transmit stamps (clock reads around a kick that
	// runs the whole veth path) can carry 100 µs on this 2-core host,
	// which would make an interval honestly invalid for them.
	l.common = append(l.common, "--max-stamp-err", "1ms")
	p1, p2 := l.start1("ldafwd#1"), l.start2("ldafwd#2")
	l.waitAB(p2, 2, p1)
	l.send(time.Second, 5000)

	_ = p1.cmd.Process.Kill()
	select {
	case <-p1.exited:
	case <-time.After(10 * time.Second):
		t.Fatal("ldafwd#1 did not die of SIGKILL within 10 s")
	}
	p1b := l.start1("ldafwd#1 (restarted)")
	deadline := time.Now().Add(15 * time.Second)
	for !strings.Contains(p1b.stderr(), `"message":"appliance started"`) {
		if p1b.hasExited() {
			t.Fatalf("restarted ldafwd#1 exited (%v):\n%s", p1b.waitErr, p1b.stderr())
		}
		if time.Now().After(deadline) {
			t.Fatalf("restarted ldafwd#1 did not start within 15 s:\n%s", p1b.stderr())
		}
		time.Sleep(10 * time.Millisecond)
	}
	kRestart := time.Now().UnixNano() / l.interval.Nanoseconds()
	// The kernel releases a killed process's AF_XDP sockets
	// asynchronously; ldafwd retries a busy queue for a few seconds.
	t.Logf("restarted ldafwd#1 retried a busy queue %d times", strings.Count(p1b.stderr(), "queue busy"))
	l.send(2*time.Second, 5000)
	time.Sleep(2 * l.interval)
	p1b.stop(t, 10*time.Second)
	p2.stop(t, 10*time.Second)
	l.shutdown()

	ivs, _ := p2.records(t)
	firstValid, invalidAround := int64(-1), 0
	var lostValid uint64
	// The relay drops about 1 % of the frames, control frames too: an
	// interval after the restart whose End marker or fragment it dropped
	// (and the neighbour that then spans two) is honestly invalid for
	// that, not for the restart.
	controlLost := map[int64]bool{}
	for _, r := range ivs {
		if r.Direction != "a>b" || r.MEC != "all" || r.Synopsis != "lda" {
			continue
		}
		if !r.Valid {
			if r.Interval >= kRestart-8 && r.Interval <= kRestart+1 {
				invalidAround++
			}
			for _, why := range []string{"end marker lost", "control fragment lost", "spans more than this interval", appliance.ReasonNextMissing, appliance.ReasonPrevMissing} {
				if strings.Contains(r.Reason, why) {
					controlLost[r.Interval] = true
				}
			}
			t.Logf("interval %d (restart at %d): invalid: %s", r.Interval, kRestart, r.Reason)
			continue
		}
		if r.Sent-r.Received != r.Lost {
			t.Errorf("interval %d: sent %d − received %d ≠ lost %d", r.Interval, r.Sent, r.Received, r.Lost)
		}
		lostValid += r.Lost
		if r.Interval > kRestart && firstValid < 0 && r.Sent > 0 {
			firstValid = r.Interval
		}
	}
	if invalidAround == 0 {
		t.Errorf("no invalid interval around the restart (interval %d)", kRestart)
	}
	late := firstValid < 0 || firstValid > kRestart+2
	if late && firstValid > 0 {
		// Late only because the relay took control frames of the
		// intervals between?
		late = false
		for k := kRestart + 2; k < firstValid; k++ {
			late = late || !controlLost[k]
		}
	}
	if late {
		t.Errorf("first valid interval with traffic after the restart (interval %d): %d, want within 2 (or later only past intervals whose control frames the relay dropped)", kRestart, firstValid)
	}
	if lostValid > l.dropped.Load() {
		t.Errorf("Σ lost over valid intervals %d > %d frames the relay dropped", lostValid, l.dropped.Load())
	}
	if !strings.Contains(p2.stderr(), `"message":"appliance stopped"`) {
		t.Errorf("ldafwd#2 did not stop cleanly:\n%s", p2.stderr())
	}
	t.Logf("restart at interval %d, first valid after it %d; Σ lost (valid) %d of %d dropped; sent %d, sink %d", kRestart, firstValid, lostValid, l.dropped.Load(), l.seq, l.sunk.Load())
}

// TestLabScript runs scripts/lab.sh itself briefly (what a human runs),
// so the script cannot rot: it must exit 0 and print where every frame
// of direction a>b went. The script's accounting is exact on a loaded
// machine too: frames an appliance's AF_XDP socket refuses (rx ring full
// or no fill ring frame, as on a starved 2-core CI machine) are counted
// by the kernel's veth as failed XDP redirects and must equal the port's
// rx_dropped; the script exits 1 on any frame it cannot explain (and on
// an appliance counter that disagrees with the kernel's), so this test
// fails then. 60 s bounds a run of ~5 s idle, ~10 s with both cores busy.
func TestLabScript(t *testing.T) {
	// MAX_STAMP_ERR: what this lab checks is every frame's accounting;
	// on a busy 2-core host the sender's copy-mode AF_XDP transmit stamps
	// (clock reads around the kick, which runs the whole veth/bridge path)
	// can carry 50 µs, which would make the intervals honestly invalid
	// and leave their frames out of the sums. The lines' bounds carry the
	// uncertainty either way.
	text, _ := runLabScript(t, 60*time.Second, "DURATION=1", "PPS=5000", "INTERVAL=200ms", "MAX_STAMP_ERR=1ms")
	accounting := text[max(strings.LastIndex(text, "== where every frame"), 0):]
	if !regexp.MustCompile(`ldafwd#2: [1-9][0-9]* valid a>b intervals`).MatchString(accounting) {
		t.Fatalf("lab.sh reported no valid interval:\n%s", text)
	}
	// Every hop's equation is printed and holds (exit 0 says so too;
	// this catches a script that stopped checking).
	for _, hop := range []string{"generator", "into ldafwd#1", "in ldafwd#1", "segment", "in ldafwd#2", "sink"} {
		if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(hop) + ` .*: ok$`).MatchString(accounting) {
			t.Errorf("lab.sh printed no holding equation for %q", hop)
		}
	}
	// Without netem the segment loses no control frame, so every interval
	// with traffic is valid and the interval sums are checked too; with
	// netem some intervals are (rightly) invalid.
	if strings.Contains(text, "no netem") && !strings.Contains(accounting, "every frame accounted for") {
		t.Errorf("lossless lab did not account for every frame")
	}
	if t.Failed() {
		t.Fatalf("lab.sh output:\n%s", text)
	}
	t.Logf("%s", accounting)
}

// TestBinaryMissingPorts: the real binary, asked for NICs that do not
// exist, exits 1 (a runtime failure) with an error naming the flag — never
// a panic, and never status 2, which says the command line is wrong (the
// systemd unit restarts on 1, not on 2).
func TestBinaryMissingPorts(t *testing.T) {
	bin := ldafwdBinary(t, false)
	cases := [][]string{{"--port-a", "afxdp:ldnosuch0", "--port-b", "afxdp:ldnosuch1"}}
	// DPDK needs root here (EAL, vdev probing); CI runs as root.
	if build.dpdk && os.Getenv("LDAFWD_BIN") == "" && os.Geteuid() == 0 {
		cases = append(cases, []string{"--port-a", "dpdk:0000:7f:1f.7", "--port-b", "dpdk:0000:7f:1f.6"},
			[]string{"--port-a", "dpdk:net_af_packet0,iface=ldnosuch0", "--port-b", "dpdk:net_af_packet1,iface=ldnosuch1"})
	}
	for _, c := range cases {
		cmd := exec.Command(bin, append(append([]string{"run"}, c...), "--segment-port", "b", "--insecure", "--duration", "1s")...)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		done := make(chan error, 1)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { done <- cmd.Wait() }()
		var err error
		select {
		case err = <-done:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			t.Fatalf("%q did not exit within 30 s", c)
		}
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 1 {
			t.Errorf("%q: exit %v, want status 1\n%s", c, err, stderr.String())
		}
		if s := stderr.String(); !strings.Contains(s, "--port-a") || strings.Contains(s, "panic") || strings.Contains(s, "goroutine ") {
			t.Errorf("%q: stderr does not name --port-a cleanly:\n%s", c, s)
		} else {
			t.Logf("%s", strings.TrimSpace(s[strings.LastIndex(s, "ldafwd: "):]))
		}
	}
	// A usage error exits 2 and names the subcommand; --help goes to
	// stdout and exits 0.
	out, err := exec.Command(bin, "run", "--bogus").CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), "run: unknown flag: --bogus") {
		t.Errorf("run --bogus: %v %q, want status 2 naming run", err, out)
	}
	cmd := exec.Command(bin, "run", "--help")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if out, err := cmd.Output(); err != nil || !strings.Contains(string(out), "usage: ldafwd run") || stderr.Len() > 0 {
		t.Errorf("run --help: %v, stdout %d bytes, stderr %q", err, len(out), stderr.String())
	}
}

// finalPort is port's final record among ports (the record a run writes
// as it stops); the test fails without one.
func finalPort(t *testing.T, ports []report.Port, port string) report.Port {
	t.Helper()
	for _, p := range ports {
		if p.Final && p.Port == port {
			return p
		}
	}
	t.Fatalf("no final record for port %s", port)
	return report.Port{}
}

// runLabScript runs scripts/lab.sh with env (VAR=value) on the test's
// binary and returns its output and its OUT directory; it fails the test
// if the script fails or takes longer than limit, and skips it where the
// lab cannot run.
func runLabScript(t *testing.T, limit time.Duration, env ...string) (string, string) {
	t.Helper()
	nettest.Require(t)
	if testing.Short() {
		t.Skip("-short: the lab script takes seconds")
	}
	for _, tool := range []string{"tcpreplay", "python3"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("scripts/lab.sh needs %s", tool)
		}
	}
	bin := ldafwdBinary(t, false)
	dir := t.TempDir()
	cmd := exec.Command("../scripts/lab.sh")
	cmd.Env = append(append(os.Environ(), "LDAFWD_BIN="+bin, "OUT="+dir), env...)
	done := make(chan struct{})
	var out []byte
	var err error
	go func() {
		out, err = cmd.CombinedOutput()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(limit):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("lab.sh did not finish within %v:\n%s", limit, out)
	}
	text := string(out)
	if err != nil {
		t.Fatalf("lab.sh: %v\n%s", err, text)
	}
	return text, dir
}

// TestLabOverload: the veth lab at 50 000 frames a second, more than the
// segment's 40 Mbit/s tbf carries and more than a 2-core host's workers
// keep up with: ldafwd#1's AF_XDP socket refuses part of the frames, the
// tbf drops a sixth of the rest, and each worker polls a few thousand
// times a second. The control frames must still reach ldafwd#2: none
// dropped as older than its replay window (frames numbered as they leave,
// not as they are built behind a backlog), and most intervals measured
// (the sender lane sends the control traffic its gap allows however
// seldom it polls, and replies wait behind the shipments). Where the
// lines are valid, lab.sh checks their sums against the kernel counters.
func TestLabOverload(t *testing.T) {
	text, dir := runLabScript(t, 120*time.Second, "DURATION=15", "PPS=50000", "FLOWS=256")
	m := regexp.MustCompile(`ldafwd#2 lda lines of a>b with traffic: ([0-9]+) of ([0-9]+) valid`).FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("lab.sh printed no count of lda lines:\n%s", text)
	}
	valid, lines := atoi(t, m[1]), atoi(t, m[2])
	log, err := os.ReadFile(filepath.Join(dir, "ldafwd2.log"))
	if err != nil {
		t.Fatal(err)
	}
	stop := regexp.MustCompile(`"ctl_too_old":([0-9]+)`).FindSubmatch(log)
	if stop == nil {
		t.Fatalf("ldafwd#2 logged no control counters at its stop:\n%s", log)
	}
	if n := atoi(t, string(stop[1])); n != 0 {
		t.Errorf("ldafwd#2 dropped %d control frames as older than its replay window", n)
	}
	if lines < 10 || 2*valid < lines {
		t.Errorf("%d of %d lda lines with traffic valid, want at least half", valid, lines)
	}
	if t.Failed() {
		t.Fatalf("lab.sh output:\n%s", text)
	}
	t.Logf("%d of %d lda lines valid\n%s", valid, lines, text[max(strings.LastIndex(text, "== where every frame"), 0):])
}

// atoi is strconv.Atoi for what a pattern matched as digits.
func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
