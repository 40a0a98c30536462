package afxdp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"
)

// ProgName is the name of our XDP program as the kernel shows it
// (bpftool prog, ip link). A program of this name found attached the old
// way (netlink, no bpf_link) at start is a leftover of ours and detached.
const ProgName = "ldafwd_xsk"

// xdpProg is the redirect program and XSKMAP of one interface, shared by
// every socket of this process on that interface (one per queue).
type xdpProg struct {
	ifindex int
	refs    int
	xsks    *ebpf.Map
	prog    *ebpf.Program
	link    link.Link
	mode    string // "driver" or "generic"
	stamps  bool   // the program writes an arrival stamp before each frame (stampInsns)
	promisc int    // packet socket holding the interface promiscuous (enablePromisc)
}

var progs struct {
	sync.Mutex
	byIf map[int]*xdpProg
}

// redirectInsns is the whole XDP program, written with cilium/ebpf's asm so
// no clang or object file is needed:
//
//	return bpf_redirect_map(&xsks, ctx->rx_queue_index, XDP_PASS);
//
// The low bits of the flags argument are the action when the queue has no
// socket in the map (kernel ≥ 5.3): such frames go on to the kernel stack.
func redirectInsns(mapFD int) asm.Instructions {
	const rxQueueIndexOff = 16 // offsetof(struct xdp_md, rx_queue_index)
	const xdpPass = 2
	return asm.Instructions{
		asm.LoadMem(asm.R2, asm.R1, rxQueueIndexOff, asm.Word),
		asm.LoadMapPtr(asm.R1, mapFD),
		asm.Mov.Imm(asm.R3, xdpPass),
		asm.FnRedirectMap.Call(),
		asm.Return(),
	}
}

// metaLen is the metadata the stamping program puts before each frame it
// redirects: the arrival time, CLOCK_TAI ns, native byte order.
const metaLen = 8

// stampInsns is the redirect program that first stamps the frame:
//
//	u64 t = bpf_ktime_get_tai_ns();
//	if (bpf_xdp_adjust_meta(ctx, -8) == 0 && ctx->data_meta + 8 <= ctx->data)
//		*(u64 *)ctx->data_meta = t;
//	return bpf_redirect_map(&xsks, ctx->rx_queue_index, XDP_PASS);
//
// The clock is read first, as early as the frame's processing can: this is
// when the driver's NAPI poll handed the frame to XDP. CLOCK_TAI rather
// than CLOCK_MONOTONIC (bpf_ktime_get_ns): the kernel's TAI is its
// CLOCK_REALTIME plus the TAI offset (adjtimex), both kept by the same
// timekeeper, so subtracting the offset gives the sender's clock exactly,
// with no offset to sample and no drift between refreshes. A driver that
// cannot give metadata room (adjust_meta fails) still gets its frame
// redirected; the receive path then sees no stamp and stamps in software.
func stampInsns(mapFD int) asm.Instructions {
	const (
		dataOff, dataMetaOff = 0, 8 // offsetof(struct xdp_md, data), (…, data_meta)
		rxQueueIndexOff      = 16
		xdpPass              = 2
	)
	return asm.Instructions{
		asm.Mov.Reg(asm.R6, asm.R1),
		asm.FnKtimeGetTaiNs.Call(),
		asm.Mov.Reg(asm.R7, asm.R0),
		asm.Mov.Reg(asm.R1, asm.R6),
		asm.Mov.Imm(asm.R2, -metaLen),
		asm.FnXdpAdjustMeta.Call(),
		asm.JNE.Imm(asm.R0, 0, "redirect"),
		asm.LoadMem(asm.R2, asm.R6, dataMetaOff, asm.Word),
		asm.LoadMem(asm.R3, asm.R6, dataOff, asm.Word),
		asm.Mov.Reg(asm.R4, asm.R2),
		asm.Add.Imm(asm.R4, metaLen),
		asm.JGT.Reg(asm.R4, asm.R3, "redirect"),
		asm.StoreMem(asm.R2, 0, asm.R7, asm.DWord),
		asm.LoadMem(asm.R2, asm.R6, rxQueueIndexOff, asm.Word).WithSymbol("redirect"),
		asm.LoadMapPtr(asm.R1, mapFD),
		asm.Mov.Imm(asm.R3, xdpPass),
		asm.FnRedirectMap.Call(),
		asm.Return(),
	}
}

// acquireProg returns the interface's program, loading and attaching it
// on first use (driver mode, generic mode when the driver has no XDP) and
// putting the interface in promiscuous mode for as long as the program
// stays attached: an interface that cannot be made promiscuous is
// refused, since it would drop the frames a bump in the wire is there to
// forward.
func acquireProg(ifindex int, ifname string) (*xdpProg, error) {
	progs.Lock()
	defer progs.Unlock()
	if p := progs.byIf[ifindex]; p != nil {
		p.refs++
		return p, nil
	}
	if err := detachStale(ifindex, ifname); err != nil {
		return nil, err
	}
	entries := max(rxQueues(ifname), 64)
	m, err := ebpf.NewMap(&ebpf.MapSpec{Name: "ldafwd_xsks", Type: ebpf.XSKMap, KeySize: 4, ValueSize: 4, MaxEntries: uint32(entries)})
	if err != nil {
		return nil, fmt.Errorf("afxdp: %s: create XSKMAP: %w", ifname, err)
	}
	// The stamping program needs bpf_ktime_get_tai_ns (Linux ≥ 6.1);
	// an older kernel refuses it and gets the plain redirect.
	stamps := true
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Name: ProgName, Type: ebpf.XDP, License: "GPL", Instructions: stampInsns(m.FD()),
	})
	if err != nil {
		stamps = false
		prog, err = ebpf.NewProgram(&ebpf.ProgramSpec{
			Name: ProgName, Type: ebpf.XDP, License: "GPL", Instructions: redirectInsns(m.FD()),
		})
	}
	if err != nil {
		m.Close()
		return nil, fmt.Errorf("afxdp: %s: load XDP program: %w", ifname, err)
	}
	p := &xdpProg{ifindex: ifindex, refs: 1, xsks: m, prog: prog, stamps: stamps}
	// A bpf_link dies with its last file descriptor: if this process
	// crashes the kernel detaches the program by itself.
	p.link, err = link.AttachXDP(link.XDPOptions{Program: prog, Interface: ifindex, Flags: link.XDPDriverMode})
	p.mode = "driver"
	if err != nil {
		var gerr error
		p.link, gerr = link.AttachXDP(link.XDPOptions{Program: prog, Interface: ifindex, Flags: link.XDPGenericMode})
		p.mode = "generic"
		if gerr != nil {
			prog.Close()
			m.Close()
			if errors.Is(gerr, unix.EBUSY) || errors.Is(err, unix.EBUSY) {
				return nil, fmt.Errorf("afxdp: %s: another XDP program is attached (in use by another process?): %w", ifname, gerr)
			}
			return nil, fmt.Errorf("afxdp: %s: attach XDP program: driver mode: %v; generic mode: %w", ifname, err, gerr)
		}
	}
	if p.promisc, err = enablePromisc(ifindex); err != nil {
		p.link.Close()
		prog.Close()
		m.Close()
		return nil, fmt.Errorf("afxdp: %s: promiscuous mode (needed to receive frames addressed to other stations): %w", ifname, err)
	}
	if progs.byIf == nil {
		progs.byIf = map[int]*xdpProg{}
	}
	progs.byIf[ifindex] = p
	return p, nil
}

// release drops one reference and, with the last, detaches the program
// and gives up promiscuous mode.
func (p *xdpProg) release() error {
	progs.Lock()
	defer progs.Unlock()
	p.refs--
	if p.refs > 0 {
		return nil
	}
	delete(progs.byIf, p.ifindex)
	err := p.link.Close()
	p.prog.Close()
	p.xsks.Close()
	if cerr := unix.Close(p.promisc); cerr != nil {
		err = errors.Join(err, fmt.Errorf("promiscuous mode socket: %w", cerr))
	}
	return err
}

func rxQueues(ifname string) int {
	m, _ := filepath.Glob("/sys/class/net/" + ifname + "/queues/rx-*")
	return len(m)
}

// detachStale removes a program named ProgName attached to ifindex through
// netlink — what an ldafwd that attached without bpf_link would leave after
// a crash. A program held by a bpf_link belongs to a live process: netlink
// refuses to detach it and the caller gets an error saying so.
func detachStale(ifindex int, ifname string) error {
	id, flags, err := xdpAttached(ifindex)
	if err != nil || id == 0 {
		return nil // nothing attached, or cannot tell: attach will say
	}
	prog, err := ebpf.NewProgramFromID(ebpf.ProgramID(id))
	if err != nil {
		return nil
	}
	info, err := prog.Info()
	prog.Close()
	if err != nil || info.Name != ProgName {
		return nil
	}
	if err := xdpDetach(ifindex, flags); err != nil {
		if errors.Is(err, unix.EBUSY) || errors.Is(err, unix.EEXIST) {
			return fmt.Errorf("afxdp: %s: XDP program %s (id %d) is held by a bpf_link of a running process (another ldafwd?)", ifname, ProgName, id)
		}
		return fmt.Errorf("afxdp: %s: detach stale XDP program id %d: %w", ifname, id, err)
	}
	fmt.Fprintf(os.Stderr, "afxdp: %s: detached stale XDP program %s (id %d) left by an earlier run\n", ifname, ProgName, id)
	return nil
}

// xdpAttached asks rtnetlink which XDP program is attached to ifindex and
// returns its id and the attach flags (mode) needed to detach it.
func xdpAttached(ifindex int) (id uint32, flags uint32, err error) {
	msgs, err := netlinkDo(unix.RTM_GETLINK, 0, ifindex, nil)
	if err != nil {
		return 0, 0, err
	}
	for _, m := range msgs {
		if m.Header.Type != unix.RTM_NEWLINK {
			continue
		}
		attrs, err := syscall.ParseNetlinkRouteAttr(&m)
		if err != nil {
			return 0, 0, err
		}
		for _, a := range attrs {
			if a.Attr.Type&^unix.NLA_F_NESTED != unix.IFLA_XDP {
				continue
			}
			var mode uint8
			for b := a.Value; len(b) >= 4; {
				l := int(binary.NativeEndian.Uint16(b[0:2]))
				t := binary.NativeEndian.Uint16(b[2:4])
				if l < 4 || l > len(b) {
					break
				}
				v := b[4:l]
				switch {
				case t == unix.IFLA_XDP_ATTACHED && len(v) >= 1:
					mode = v[0]
				case t == unix.IFLA_XDP_PROG_ID && len(v) >= 4:
					id = binary.NativeEndian.Uint32(v)
				}
				b = b[min((l+3)&^3, len(b)):]
			}
			switch mode {
			case 1: // XDP_ATTACHED_DRV
				flags = unix.XDP_FLAGS_DRV_MODE
			case 2: // XDP_ATTACHED_SKB
				flags = unix.XDP_FLAGS_SKB_MODE
			case 3: // XDP_ATTACHED_HW
				flags = unix.XDP_FLAGS_HW_MODE
			}
			return id, flags, nil
		}
	}
	return 0, 0, nil
}

// xdpDetach sets the interface's XDP program to none (fd -1) in mode flags.
func xdpDetach(ifindex int, flags uint32) error { return xdpSetFD(ifindex, -1, flags) }

// xdpSetFD attaches program fd (-1: none) through netlink, the pre-bpf_link
// way (tests use it to fake a leftover of a crashed run).
func xdpSetFD(ifindex int, progFD int, flags uint32) error {
	attr := func(t uint16, v []byte) []byte {
		b := make([]byte, 4, 4+len(v)+3)
		binary.NativeEndian.PutUint16(b[0:2], uint16(4+len(v)))
		binary.NativeEndian.PutUint16(b[2:4], t)
		b = append(b, v...)
		for len(b)%4 != 0 {
			b = append(b, 0)
		}
		return b
	}
	fd := binary.NativeEndian.AppendUint32(nil, uint32(int32(progFD)))
	fl := binary.NativeEndian.AppendUint32(nil, flags)
	nested := append(attr(unix.IFLA_XDP_FD, fd), attr(unix.IFLA_XDP_FLAGS, fl)...)
	_, err := netlinkDo(unix.RTM_SETLINK, unix.NLM_F_ACK, ifindex, attr(unix.IFLA_XDP|unix.NLA_F_NESTED, nested))
	return err
}

// netlinkDo sends one rtnetlink request about ifindex and returns the
// replies, turning an error ack into a Go error.
func netlinkDo(typ uint16, flags uint16, ifindex int, attrs []byte) ([]syscall.NetlinkMessage, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return nil, err
	}
	req := make([]byte, unix.SizeofNlMsghdr+unix.SizeofIfInfomsg, unix.SizeofNlMsghdr+unix.SizeofIfInfomsg+len(attrs))
	req = append(req, attrs...)
	binary.NativeEndian.PutUint32(req[0:4], uint32(len(req)))
	binary.NativeEndian.PutUint16(req[4:6], typ)
	binary.NativeEndian.PutUint16(req[6:8], unix.NLM_F_REQUEST|flags)
	binary.NativeEndian.PutUint32(req[8:12], 1) // seq
	ifi := req[unix.SizeofNlMsghdr:]
	ifi[0] = unix.AF_UNSPEC
	binary.NativeEndian.PutUint32(ifi[4:8], uint32(ifindex))
	if err := unix.Sendto(fd, req, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return nil, err
	}
	buf := make([]byte, 65536)
	n, _, err := unix.Recvfrom(fd, buf, 0)
	if err != nil {
		return nil, err
	}
	msgs, err := syscall.ParseNetlinkMessage(buf[:n])
	if err != nil {
		return nil, err
	}
	for _, m := range msgs {
		if m.Header.Type == unix.NLMSG_ERROR && len(m.Data) >= 4 {
			if e := int32(binary.NativeEndian.Uint32(m.Data[0:4])); e != 0 {
				return nil, syscall.Errno(-e)
			}
		}
	}
	return msgs, nil
}
