package afxdp

// This file holds every unsafe operation of package afxdp: the socket
// options x/sys/unix has no typed wrapper for, and the views of the rings
// the kernel shares with us through mmap.
//
// Why: an AF_XDP ring is a page-aligned region the kernel maps into our
// address space; its producer and consumer indices are u32 words the kernel
// and we update concurrently, and its descriptors are u64 UMEM addresses
// (fill, completion) or struct xdp_desc (rx, tx). Go can only see these
// through pointers made from the mapping's address.
//
// How it can break:
//   - The offsets of producer/consumer/flags/descriptors come from
//     getsockopt(XDP_MMAP_OFFSETS) at run time, so kernel layout changes are
//     followed, but the struct xdp_desc layout (u64 addr, u32 len, u32
//     options) is assumed; unix.XDPDesc mirrors it.
//   - The index words are read with atomic loads and written with atomic
//     stores (load-acquire/store-release on the kernel side); a plain access
//     would let the compiler or CPU reorder descriptor reads/writes around
//     them.
//   - SIOCETHTOOL (ethtool) passes the kernel a pointer to a Go byte slice
//     inside struct ifreq; the slice is kept alive across the call and the
//     kernel copies in and out within it, never past its length for the
//     sizes the command's header announces.
//   - The slices stay valid only while the mapping is; Close unmaps it after
//     the socket is closed. A Packet.Data kept after Free or TxBurst points
//     into a frame the kernel may be writing.

import (
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

func setsockoptUmemReg(fd int, reg *unix.XDPUmemReg) error {
	_, _, e := unix.Syscall6(unix.SYS_SETSOCKOPT, uintptr(fd), unix.SOL_XDP, unix.XDP_UMEM_REG,
		uintptr(unsafe.Pointer(reg)), unsafe.Sizeof(*reg), 0)
	if e != 0 {
		return e
	}
	return nil
}

func getsockoptMmapOffsets(fd int) (unix.XDPMmapOffsets, error) {
	var off unix.XDPMmapOffsets
	l := uint32(unsafe.Sizeof(off))
	_, _, e := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(fd), unix.SOL_XDP, unix.XDP_MMAP_OFFSETS,
		uintptr(unsafe.Pointer(&off)), uintptr(unsafe.Pointer(&l)), 0)
	if e != 0 {
		return off, e
	}
	if l != uint32(unsafe.Sizeof(off)) {
		return off, fmt.Errorf("XDP_MMAP_OFFSETS returned %d bytes, want %d (kernel older than 5.4?)", l, unsafe.Sizeof(off))
	}
	return off, nil
}

func getsockoptStatistics(fd int) (unix.XDPStatistics, error) {
	var st unix.XDPStatistics
	l := uint32(unsafe.Sizeof(st))
	_, _, e := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(fd), unix.SOL_XDP, unix.XDP_STATISTICS,
		uintptr(unsafe.Pointer(&st)), uintptr(unsafe.Pointer(&l)), 0)
	if e != 0 {
		return st, e
	}
	return st, nil
}

// mapRing mmaps ring pgoff of socket fd with n descriptors of descSize
// bytes and fills r's views of it.
func mapRing(fd int, pgoff int64, off unix.XDPRingOffset, n uint32, descSize uintptr, r *ring) error {
	size := int(off.Desc) + int(n)*int(descSize)
	mem, err := unix.Mmap(fd, pgoff, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return fmt.Errorf("mmap ring at %#x: %w", pgoff, err)
	}
	r.mem = mem
	r.producer = (*uint32)(unsafe.Pointer(&mem[off.Producer]))
	r.consumer = (*uint32)(unsafe.Pointer(&mem[off.Consumer]))
	r.flags = (*uint32)(unsafe.Pointer(&mem[off.Flags]))
	r.mask = n - 1
	r.size = n
	if descSize == 8 {
		r.addrs = unsafe.Slice((*uint64)(unsafe.Pointer(&mem[off.Desc])), n)
	} else {
		r.descs = unsafe.Slice((*unix.XDPDesc)(unsafe.Pointer(&mem[off.Desc])), n)
	}
	return nil
}

// offsetIn returns where b starts inside umem, and whether it does.
func offsetIn(umem, b []byte) (uint64, bool) {
	if len(b) == 0 || len(umem) == 0 {
		return 0, false
	}
	base := uintptr(unsafe.Pointer(unsafe.SliceData(umem)))
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	if p < base || p+uintptr(len(b)) > base+uintptr(len(umem)) {
		return 0, false
	}
	return uint64(p - base), true
}

// kick is the need_wakeup system call: sendto with no data wakes the
// kernel's tx path (and, in copy mode, does the transmit); recvfrom wakes a
// driver waiting for fill ring entries.
func kickTx(fd int) error {
	_, _, e := unix.Syscall6(unix.SYS_SENDTO, uintptr(fd), 0, 0, unix.MSG_DONTWAIT, 0, 0)
	if e != 0 {
		return e
	}
	return nil
}

func kickRx(fd int) error {
	_, _, e := unix.Syscall6(unix.SYS_RECVFROM, uintptr(fd), 0, 0, unix.MSG_DONTWAIT, 0, 0)
	if e != 0 {
		return e
	}
	return nil
}

// umemAddr is the UMEM's virtual address, which XDP_UMEM_REG wants.
func umemAddr(umem []byte) uint64 {
	return uint64(uintptr(unsafe.Pointer(unsafe.SliceData(umem))))
}

// ifreqData is struct ifreq with the ifr_data member of the union, what
// SIOCETHTOOL takes: the interface name and a pointer to the ethtool
// command's struct, which the kernel reads and fills in place.
type ifreqData struct {
	name [unix.IFNAMSIZ]byte
	data unsafe.Pointer
	_    [24 - unsafe.Sizeof(uintptr(0))]byte
}

// ethtool runs one SIOCETHTOOL command on ifname; cmd is the command's
// struct as bytes, starting with its u32 command number, and is filled in
// place. The socket is only the ioctl's way into the interface's
// namespace (the caller's thread's).
func ethtool(ifname string, cmd []byte) error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	var ifr ifreqData
	copy(ifr.name[:unix.IFNAMSIZ-1], ifname)
	ifr.data = unsafe.Pointer(unsafe.SliceData(cmd))
	_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SIOCETHTOOL, uintptr(unsafe.Pointer(&ifr)))
	runtime.KeepAlive(cmd)
	if e != 0 {
		return e
	}
	return nil
}
