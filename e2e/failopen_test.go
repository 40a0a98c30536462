package e2e

import (
	"bufio"
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ldafwd/ldafwd/dataplane/nettest"
)

// pinger is a ping running from one namespace, its replies collected by
// icmp_seq. Every seq up to the highest one seen was sent, so the replies
// among a range of seqs say what share of the pings then went through.
type pinger struct {
	cmd     *exec.Cmd
	mu      sync.Mutex
	replied map[int]bool
	last    int // highest seq seen in a reply
	done    chan struct{}
}

var pingSeq = regexp.MustCompile(`icmp_seq=(\d+) `)

func startPing(t *testing.T, ns, addr string, every time.Duration) *pinger {
	t.Helper()
	p := &pinger{replied: map[int]bool{}, done: make(chan struct{})}
	p.cmd = exec.Command("ip", "netns", "exec", ns, "ping", "-n", "-i", fmt.Sprintf("%.3f", every.Seconds()), addr)
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(p.done)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if m := pingSeq.FindStringSubmatch(sc.Text()); m != nil {
				n, _ := strconv.Atoi(m[1])
				p.mu.Lock()
				p.replied[n] = true
				p.last = max(p.last, n)
				p.mu.Unlock()
			}
		}
	}()
	t.Cleanup(p.stop)
	return p
}

// mark is the highest seq replied to so far: a phase's pings are the seqs
// after the mark at its start, up to the mark at its end.
func (p *pinger) mark() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.last
}

// count returns how many of the pings with seqs in (from, to] were answered.
func (p *pinger) count(from, to int) (replies, sent int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for s := from + 1; s <= to; s++ {
		if p.replied[s] {
			replies++
		}
	}
	return replies, to - from
}

func (p *pinger) stop() {
	if p.cmd.ProcessState == nil {
		_ = p.cmd.Process.Signal(syscall.SIGINT)
		<-p.done
		_ = p.cmd.Wait()
	}
}

// portRx is the latest rx_packets of port a and b in p's port records.
func portRx(t *testing.T, p *proc) (a, b uint64, ok bool) {
	_, ports := p.records(t)
	for _, r := range ports {
		switch r.Port {
		case "a":
			a, ok = r.RxPackets, true
		case "b":
			b = r.RxPackets
		}
	}
	return a, b, ok
}

// waitPorts waits up to 10 s for p's first port record: its sockets are
// bound by then.
func waitPorts(t *testing.T, p *proc) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, _, ok := portRx(t, p); ok {
			return
		}
		if p.hasExited() || time.Now().After(deadline) {
			t.Fatalf("%s: no port record within 10 s (exited %v)\n%s", p.name, p.hasExited(), p.stderr())
		}
	}
}

// TestFailOpenKill: a ping between two namespaces through one appliance's
// two afxdp: ports (default --fail-open) goes through the appliance while
// it runs, keeps going when the process is killed with SIGKILL (the XDP
// programs forward in the kernel), goes through a new process started
// afterwards (its port counters grow by the pings), and keeps going after
// that one's clean stop.
//
//	ns A: 10.79.0.1 ─veth─ [a ldafwd b] ─veth─ ns B: 10.79.0.2
func TestFailOpenKill(t *testing.T) {
	nettest.Require(t)
	if _, err := exec.LookPath("ping"); err != nil {
		t.Skip("needs ping")
	}
	bin := ldafwdBinary(t, false)
	va, vb := nettest.NewVeth(t, nettest.Options{}), nettest.NewVeth(t, nettest.Options{})
	for _, c := range [][]string{
		{"-n", va.NS, "addr", "add", "10.79.0.1/24", "dev", va.Peer},
		{"-n", vb.NS, "addr", "add", "10.79.0.2/24", "dev", vb.Peer},
		// The bypass redirects into the veths in native XDP: their far
		// ends must run NAPI to take such frames (docs/afxdp.md).
		{"netns", "exec", va.NS, "ethtool", "-K", va.Peer, "gro", "on"},
		{"netns", "exec", vb.NS, "ethtool", "-K", vb.Peer, "gro", "on"},
	} {
		if out, err := exec.Command("ip", c...).CombinedOutput(); err != nil {
			t.Fatalf("ip %v: %v: %s", c, err, out)
		}
	}
	args := []string{"--port-a", "afxdp:" + va.Host, "--port-b", "afxdp:" + vb.Host, "--segment-port", "b", "--insecure",
		"--format", "json", "--idle-sleep", "50us", "--stats-interval", "100ms", "--log-level", "info"}

	p1 := startLdafwd(t, "ldafwd#1", bin, args...)
	waitPorts(t, p1)
	ping := startPing(t, va.NS, "10.79.0.2", 20*time.Millisecond)
	phase := func(name string, d time.Duration) (replies, sent int) {
		from := ping.mark()
		time.Sleep(d)
		replies, sent = ping.count(from, ping.mark())
		t.Logf("%s: %d of %d pings answered", name, replies, sent)
		if sent < int(d/(40*time.Millisecond)) || replies*10 < sent*9 {
			t.Errorf("%s: %d of %d pings answered over %v, want ≥ 90 %%", name, replies, sent, d)
		}
		return replies, sent
	}
	rxA0, _, _ := portRx(t, p1)
	phase("ldafwd#1 running", 2*time.Second)
	time.Sleep(200 * time.Millisecond) // a port record after the phase
	rxA1, rxB1, _ := portRx(t, p1)
	if rxA1-rxA0 < 50 || rxB1 < 50 {
		t.Errorf("ldafwd#1 received %d frames on a during the phase and %d on b: the pings did not go through it", rxA1-rxA0, rxB1)
	}

	if err := p1.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-p1.exited
	phase("ldafwd#1 killed", 3*time.Second)

	p2 := startLdafwd(t, "ldafwd#2", bin, args...)
	waitPorts(t, p2)
	rxA2, _, _ := portRx(t, p2)
	r, s := phase("ldafwd#2 running", 2*time.Second)
	time.Sleep(200 * time.Millisecond)
	rxA3, rxB3, _ := portRx(t, p2)
	if int(rxA3-rxA2) < r || rxB3 < uint64(r) {
		t.Errorf("ldafwd#2 received %d frames on a during a phase of %d answered pings (%d on b so far): it did not take over\n%s", rxA3-rxA2, r, rxB3, p2.stderr())
	}
	t.Logf("ldafwd#2 took over: a received %d frames while %d of %d pings were answered", rxA3-rxA2, r, s)

	p2.stop(t, 10*time.Second)
	phase("ldafwd#2 stopped", 2*time.Second)
}
