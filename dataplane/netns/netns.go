package netns

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
	"time"

	"golang.org/x/sys/unix"
)

// EtherType is the IEEE local experimental EtherType 2 that test frames
// carry (0x88B5, experimental 1, is ldafwd's control plane).
const EtherType = 0x88B6

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

// Send transmits one frame.
func (s *RawSocket) Send(frame []byte) error {
	_, err := unix.Write(s.fd, frame)
	return err
}

// Recv waits up to timeout for one frame and returns its length; it
// returns 0, nil on timeout. A poll interrupted by a signal (the Go
// runtime preempts goroutines with SIGURG, often under -race) waits again
// for the time left: returning early would read as a timeout.
func (s *RawSocket) Recv(buf []byte, timeout time.Duration) (int, error) {
	fds := []unix.PollFd{{Fd: int32(s.fd), Events: unix.POLLIN}}
	deadline := time.Now().Add(timeout)
	for {
		left := time.Until(deadline)
		if left < 0 {
			left = 0
		}
		n, err := unix.Poll(fds, int((left+time.Millisecond-1)/time.Millisecond))
		switch {
		case err == unix.EINTR && left > 0:
			continue
		case err == unix.EINTR:
			return 0, nil
		case err != nil || n == 0:
			return 0, err
		}
		return unix.Read(s.fd, buf)
	}
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
