package nettest

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// EtherType is the IEEE local experimental EtherType 2 that test frames
// carry (0x88B5, experimental 1, is ldafwd's control plane).
const EtherType = 0x88B6

var (
	seq       atomic.Uint32
	sweepOnce sync.Once
)

// SweepStale deletes ldafwd-test-<pid>-<n> namespaces (and with them their
// veth pairs) whose test process no longer exists: what a crashed or
// killed test run leaves behind.
func SweepStale() { SweepNetns("ldafwd-test-") }

// SweepNetns deletes the namespaces named prefix<pid> or prefix<pid>-…
// (and with them their veth pairs) whose process pid no longer exists.
func SweepNetns(prefix string) {
	ents, err := os.ReadDir("/var/run/netns")
	if err != nil {
		return
	}
	for _, e := range ents {
		rest, ok := strings.CutPrefix(e.Name(), prefix)
		if !ok {
			continue
		}
		pid, _, _ := strings.Cut(rest, "-")
		if _, err := strconv.Atoi(pid); err != nil {
			continue
		}
		if _, err := os.Stat("/proc/" + pid); err == nil {
			continue
		}
		_ = exec.Command("ip", "netns", "del", e.Name()).Run()
	}
}

// TB is the part of testing.TB that Require and NewVeth use. The package
// names it rather than importing testing, so that a command which uses the
// rest (InNetns, UDPFrame: the NIC benchmark) does not link the testing
// package and its flags into the shipped binary.
type TB interface {
	Helper()
	Skip(args ...any)
	Fatal(args ...any)
	Fatalf(format string, args ...any)
	Logf(format string, args ...any)
	Cleanup(func())
}

// Require skips t unless the process is root and the ip command exists.
func Require(t TB) {
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
func NewVeth(t TB, opt Options) *Veth {
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

// InNetns runs fn on an OS thread switched into namespace ns (by name, as
// ip netns knows it) and switches the thread back afterwards.
func InNetns(ns string, fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := os.Open(fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid()))
		if err != nil {
			runtime.UnlockOSThread()
			errc <- err
			return
		}
		defer orig.Close()
		target, err := os.Open("/var/run/netns/" + ns)
		if err != nil {
			runtime.UnlockOSThread()
			errc <- err
			return
		}
		defer target.Close()
		if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("setns %s: %w", ns, err)
			return
		}
		ferr := fn()
		if err := unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET); err != nil {
			// Leave the thread locked: Go retires it with the goroutine
			// instead of reusing a thread stuck in the wrong namespace.
			errc <- errors.Join(ferr, fmt.Errorf("setns back: %w", err))
			return
		}
		runtime.UnlockOSThread()
		errc <- ferr
	}()
	return <-errc
}

// RawSocket is an AF_PACKET socket bound to one interface.
type RawSocket struct {
	fd int
}

// OpenRaw opens a raw socket on ifname inside namespace ns ("" = current).
func OpenRaw(ns, ifname string) (*RawSocket, error) {
	var s *RawSocket
	open := func() error {
		ifi, err := net.InterfaceByName(ifname)
		if err != nil {
			return err
		}
		fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, int(htons(unix.ETH_P_ALL)))
		if err != nil {
			return fmt.Errorf("AF_PACKET socket: %w", err)
		}
		if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: ifi.Index}); err != nil {
			unix.Close(fd)
			return fmt.Errorf("bind to %s: %w", ifname, err)
		}
		s = &RawSocket{fd: fd}
		return nil
	}
	var err error
	if ns == "" {
		err = open()
	} else {
		err = InNetns(ns, open)
	}
	return s, err
}

// PeerSocket opens a raw socket on the end inside the namespace.
func (v *Veth) PeerSocket() (*RawSocket, error) { return OpenRaw(v.NS, v.Peer) }

// HostSocket opens a raw socket on the end in the current namespace.
func (v *Veth) HostSocket() (*RawSocket, error) { return OpenRaw("", v.Host) }

// Send transmits one frame.
func (s *RawSocket) Send(frame []byte) error {
	_, err := unix.Write(s.fd, frame)
	return err
}

// Recv waits up to timeout for one frame and returns its length; it
// returns 0, nil on timeout.
func (s *RawSocket) Recv(buf []byte, timeout time.Duration) (int, error) {
	fds := []unix.PollFd{{Fd: int32(s.fd), Events: unix.POLLIN}}
	n, err := unix.Poll(fds, int(timeout/time.Millisecond))
	if err != nil || n == 0 {
		if err == unix.EINTR {
			err = nil
		}
		return 0, err
	}
	return unix.Read(s.fd, buf)
}

// Close closes the socket.
func (s *RawSocket) Close() error { return unix.Close(s.fd) }

// Frame builds a test frame of size bytes (at least 60): Ethernet header
// with EtherType, then a 4-byte tag and an 8-byte big-endian sequence
// number, then bytes derived from the sequence number.
func Frame(dst, src net.HardwareAddr, tag uint32, seq uint64, size int) []byte {
	size = max(size, 60)
	b := make([]byte, size)
	copy(b[0:6], dst)
	copy(b[6:12], src)
	binary.BigEndian.PutUint16(b[12:14], EtherType)
	binary.BigEndian.PutUint32(b[14:18], tag)
	binary.BigEndian.PutUint64(b[18:26], seq)
	for i := 26; i < size; i++ {
		b[i] = byte(seq) + byte(i)
	}
	return b
}

// UDPFrame builds an IPv4/UDP test frame of size bytes (at least 60) from
// 10.0.0.1:sport to 10.0.0.2:9; the UDP payload is a 4-byte tag, an 8-byte
// sequence number and bytes derived from it. Varying sport varies the flow
// hash, which spreads frames over a multi-queue veth's queues.
func UDPFrame(dst, src net.HardwareAddr, tag uint32, seq uint64, size int, sport uint16) []byte {
	size = max(size, 60)
	b := make([]byte, size)
	copy(b[0:6], dst)
	copy(b[6:12], src)
	binary.BigEndian.PutUint16(b[12:14], 0x0800)
	ip := b[14:34]
	ip[0] = 0x45
	binary.BigEndian.PutUint16(ip[2:4], uint16(size-14))
	ip[8] = 64
	ip[9] = 17
	copy(ip[12:16], []byte{10, 0, 0, 1})
	copy(ip[16:20], []byte{10, 0, 0, 2})
	var sum uint32
	for i := 0; i < 20; i += 2 {
		sum += uint32(binary.BigEndian.Uint16(ip[i:]))
	}
	sum = sum>>16 + sum&0xffff
	sum += sum >> 16
	binary.BigEndian.PutUint16(ip[10:12], ^uint16(sum))
	udp := b[34:42]
	binary.BigEndian.PutUint16(udp[0:2], sport)
	binary.BigEndian.PutUint16(udp[2:4], 9)
	binary.BigEndian.PutUint16(udp[4:6], uint16(size-34))
	binary.BigEndian.PutUint32(b[42:46], tag)
	binary.BigEndian.PutUint64(b[46:54], seq)
	for i := 54; i < size; i++ {
		b[i] = byte(seq) + byte(i)
	}
	return b
}

// ParseFrame returns the tag and sequence number of a frame built by Frame
// or UDPFrame and whether it is one (right EtherType, length and payload
// bytes).
func ParseFrame(b []byte) (tag uint32, seq uint64, ok bool) {
	if len(b) < 60 {
		return 0, 0, false
	}
	off := 14
	switch binary.BigEndian.Uint16(b[12:14]) {
	case EtherType:
	case 0x0800:
		if b[14] != 0x45 || b[23] != 17 || binary.BigEndian.Uint16(b[36:38]) != 9 {
			return 0, 0, false
		}
		off = 42
	default:
		return 0, 0, false
	}
	tag = binary.BigEndian.Uint32(b[off : off+4])
	seq = binary.BigEndian.Uint64(b[off+4 : off+12])
	for i := off + 12; i < len(b); i++ {
		if b[i] != byte(seq)+byte(i) {
			return 0, 0, false
		}
	}
	return tag, seq, true
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }
