//go:build dpdk

package dpdk

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Frames net_af_packet's packet sockets drop.
//
// DPDK 22.11's net_af_packet reads each queue's frames from a packet
// socket's mmap ring and counts no frame the kernel drops when that ring
// is full (imissed stays 0): a receiver that falls behind would take its
// own drops for the segment's loss. The kernel counts them per socket
// (PACKET_STATISTICS, tp_drops, reset on every read; the PMD never reads
// it), so the port finds its sockets — the packet sockets of this
// process bound to the interface, by inode in /proc/self/net/packet and
// by fd in /proc/self/fd — and adds what they dropped to RxDropped.

// afPacketIface is the interface a net_af_packet device reads ("" for any
// other device): its iface= devarg.
func afPacketIface(d Device) string {
	if d.PCI || !strings.HasPrefix(d.Name, "net_af_packet") {
		return ""
	}
	for _, kv := range strings.Split(d.Args, ",") {
		if v, ok := strings.CutPrefix(kv, "iface="); ok {
			return v
		}
	}
	return ""
}

// packetSockets returns the fds of this process's packet sockets bound to
// interface iface.
func packetSockets(iface string) ([]int, error) {
	ifi, err := net.InterfaceByName(iface)
	if err != nil {
		return nil, err
	}
	f, err := os.Open("/proc/self/net/packet")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	inodes := map[string]bool{}
	sc := bufio.NewScanner(f)
	sc.Scan() // sk RefCnt Type Proto Iface R Rmem User Inode
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) >= 9 && fs[4] == strconv.Itoa(ifi.Index) {
			inodes["socket:["+fs[8]+"]"] = true
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	links, err := filepath.Glob("/proc/self/fd/*")
	if err != nil {
		return nil, err
	}
	var fds []int
	for _, l := range links {
		if dst, err := os.Readlink(l); err == nil && inodes[dst] {
			if fd, err := strconv.Atoi(filepath.Base(l)); err == nil {
				fds = append(fds, fd)
			}
		}
	}
	if len(fds) == 0 {
		return nil, fmt.Errorf("no packet socket of this process on %s", iface)
	}
	return fds, nil
}

// socketDrops reads and resets the frames fd dropped since the last read
// (struct tpacket_stats; the PMD's sockets are TPACKET_V2).
func socketDrops(fd int) (uint64, error) {
	s, err := unix.GetsockoptTpacketStats(fd, unix.SOL_PACKET, unix.PACKET_STATISTICS)
	if err != nil {
		return 0, err
	}
	return uint64(s.Drops), nil
}
