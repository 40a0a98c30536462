package afxdp

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// enablePromisc puts interface ifindex in promiscuous mode for as long as
// the returned file descriptor is open.
//
// Why: a bump in the wire forwards frames addressed to the stations on
// either side, never to itself; a NIC that is not promiscuous drops every
// unicast frame whose destination is not its own MAC in its address
// filter, before XDP sees it.
//
// How: a packet socket's PACKET_MR_PROMISC membership (what tcpdump does),
// not IFF_PROMISC through netlink. The kernel counts promiscuity per
// holder and drops this one when the socket closes, also when the
// process is killed, so the interface goes back to the state it was in
// (still promiscuous if the operator or another program had made it so),
// without anything to restore by hand after a crash. The socket is
// created with protocol 0, so it is bound to no protocol and receives
// nothing: no copies of the forwarded frames.
func enablePromisc(ifindex int) (int, error) {
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("packet socket: %w", err)
	}
	mr := unix.PacketMreq{Ifindex: int32(ifindex), Type: unix.PACKET_MR_PROMISC}
	if err := unix.SetsockoptPacketMreq(fd, unix.SOL_PACKET, unix.PACKET_ADD_MEMBERSHIP, &mr); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("PACKET_MR_PROMISC: %w", err)
	}
	return fd, nil
}

// setPromiscFlag sets the interface's own IFF_PROMISC flag, what `ip link
// set <ifname> promisc on` sets. Unlike enablePromisc's membership it stays
// when the process exits: a fail-open interface (Config.Bypass) forwards
// with no process, and a NIC that is not promiscuous would drop, before
// XDP, the unicast frames the bypass is there to carry. Removing the
// bypass by hand is therefore `ip link set dev <ifname> xdp off promisc
// off` (docs/afxdp.md, "Fail-open").
func setPromiscFlag(ifname string) error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("socket for SIOCSIFFLAGS: %w", err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq(ifname)
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("SIOCGIFFLAGS: %w", err)
	}
	if f := ifr.Uint16(); f&unix.IFF_PROMISC == 0 {
		ifr.SetUint16(f | unix.IFF_PROMISC)
		if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
			return fmt.Errorf("SIOCSIFFLAGS: %w", err)
		}
	}
	return nil
}
