package nettest

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ldafwd/ldafwd/dataplane/netns"
)

// What the namespace helpers of dataplane/netns offer, under the names the
// tests use.
const EtherType = netns.EtherType

type RawSocket = netns.RawSocket

var (
	InNetns    = netns.InNetns
	SweepNetns = netns.SweepNetns
	OpenRaw    = netns.OpenRaw
	Frame      = netns.Frame
	UDPFrame   = netns.UDPFrame
	ParseFrame = netns.ParseFrame
)

var (
	seq       atomic.Uint32
	sweepOnce sync.Once
)

// SweepStale deletes ldafwd-test-<pid>-<n> namespaces (and with them their
// veth pairs) whose test process no longer exists: what a crashed or
// killed test run leaves behind.
func SweepStale() { SweepNetns("ldafwd-test-") }

// Require skips t unless the process is root and the ip command exists.
func Require(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root (CAP_NET_ADMIN) to create network namespaces and veth pairs")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("needs the ip command (iproute2)")
	}
}

// Veth is a veth pair with Host in the current namespace and Peer inside
// namespace NS.
type Veth struct {
	NS         string
	Host, Peer string
	HostIndex  int
	HostMAC    net.HardwareAddr
	PeerMAC    net.HardwareAddr
}

// Options for NewVeth.
type Options struct {
	// Queues is the number of rx and tx queues of each end (0 means 1).
	Queues int
}

// NewVeth creates namespace ldafwd-test-<pid>-<n> holding one end of a
// fresh veth pair, the other end in the current namespace; both are up,
// with IPv6 off so the kernel sends nothing on its own. It is deleted
// when the test ends.
func NewVeth(t testing.TB, opt Options) *Veth {
	t.Helper()
	Require(t)
	sweepOnce.Do(SweepStale)
	n := seq.Add(1)
	pid := os.Getpid()
	v := &Veth{
		NS: fmt.Sprintf("ldafwd-test-%d-%d", pid, n),
		// Interface names have 15 characters at most.
		Host: fmt.Sprintf("ldt%d.%dh", pid%100000, n),
		Peer: fmt.Sprintf("ldt%d.%dp", pid%100000, n),
	}
	q := max(opt.Queues, 1)
	// A leftover from a crashed run of the same pid: remove it first.
	_ = exec.Command("ip", "netns", "del", v.NS).Run()
	_ = exec.Command("ip", "link", "del", v.Host).Run()
	steps := [][]string{
		{"netns", "add", v.NS},
		{"link", "add", v.Host, "numtxqueues", fmt.Sprint(q), "numrxqueues", fmt.Sprint(q),
			"type", "veth", "peer", "name", v.Peer, "numtxqueues", fmt.Sprint(q), "numrxqueues", fmt.Sprint(q)},
		{"link", "set", v.Peer, "netns", v.NS},
		{"link", "set", v.Host, "up"},
		{"-n", v.NS, "link", "set", v.Peer, "up"},
		{"-n", v.NS, "link", "set", "lo", "up"},
	}
	t.Cleanup(func() { v.Delete() })
	for _, s := range steps {
		if out, err := exec.Command("ip", s...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v: %s", strings.Join(s, " "), err, out)
		}
	}
	_ = os.WriteFile("/proc/sys/net/ipv6/conf/"+v.Host+"/disable_ipv6", []byte("1"), 0)
	if err := InNetns(v.NS, func() error {
		return os.WriteFile("/proc/sys/net/ipv6/conf/"+v.Peer+"/disable_ipv6", []byte("1"), 0)
	}); err != nil {
		t.Logf("disable IPv6 on %s: %v", v.Peer, err)
	}
	hi, err := net.InterfaceByName(v.Host)
	if err != nil {
		t.Fatal(err)
	}
	v.HostIndex, v.HostMAC = hi.Index, hi.HardwareAddr
	if err := InNetns(v.NS, func() error {
		pi, err := net.InterfaceByName(v.Peer)
		if err == nil {
			v.PeerMAC = pi.HardwareAddr
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	// veth carrier comes up asynchronously; wait for the host end to run.
	for i := 0; i < 100; i++ {
		b, _ := os.ReadFile("/sys/class/net/" + v.Host + "/operstate")
		if strings.TrimSpace(string(b)) == "up" {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	return v
}

// Delete removes the namespace and the pair; safe to call twice.
func (v *Veth) Delete() {
	_ = exec.Command("ip", "netns", "del", v.NS).Run()
	_ = exec.Command("ip", "link", "del", v.Host).Run()
}

// PeerSocket opens a raw socket on the end inside the namespace.
func (v *Veth) PeerSocket() (*RawSocket, error) { return OpenRaw(v.NS, v.Peer) }

// HostSocket opens a raw socket on the end in the current namespace.
func (v *Veth) HostSocket() (*RawSocket, error) { return OpenRaw("", v.Host) }
