package afxdp

import (
	"encoding/binary"
	"fmt"

	"golang.org/x/sys/unix"
)

// What an interface must look like for ports on it to be a transparent
// bump in the wire, beyond what Open sets itself (promiscuous mode): every
// receive queue bound, and no receive offload that changes or drops frames
// before the XDP program sees them. Both are the operator's to set
// (ethtool), so these functions only read and say what to run.

// RxQueues is the number of receive queues the interface uses (sysfs
// queues/rx-*, the kernel's real_num_rx_queues); 0 when it cannot tell.
func RxQueues(ifname string) int { return rxQueues(ifname) }

// channels is struct ethtool_channels: the queue counts ethtool -l shows
// and ethtool -L sets.
type channels struct {
	maxRx, maxTx, maxCombined uint32
	rx, tx, combined          uint32
}

func readChannels(ifname string) (channels, error) {
	b := make([]byte, 9*4)
	binary.NativeEndian.PutUint32(b, unix.ETHTOOL_GCHANNELS)
	if err := ethtool(ifname, b); err != nil {
		return channels{}, err
	}
	u := func(i int) uint32 { return binary.NativeEndian.Uint32(b[4*i:]) }
	return channels{maxRx: u(1), maxTx: u(2), maxCombined: u(4), rx: u(5), tx: u(6), combined: u(8)}, nil
}

// QueueFix is the command that leaves ifname n receive queues, as its
// driver counts them: combined channels (most NICs), separate rx and tx
// channels (veth), or "" when the driver cannot change its queue count
// (no ETHTOOL_GCHANNELS, or no channel type whose maximum reaches n).
func QueueFix(ifname string, n int) string {
	ch, err := readChannels(ifname)
	if err != nil {
		return ""
	}
	return queueFix(ifname, n, ch)
}

func queueFix(ifname string, n int, ch channels) string {
	switch {
	case ch.maxCombined >= uint32(n):
		return fmt.Sprintf("ethtool -L %s combined %d", ifname, n)
	case ch.maxRx >= uint32(n) && ch.maxTx >= uint32(n):
		return fmt.Sprintf("ethtool -L %s rx %d tx %d", ifname, n, n)
	case ch.maxRx >= uint32(n):
		return fmt.Sprintf("ethtool -L %s rx %d", ifname, n)
	}
	return ""
}
