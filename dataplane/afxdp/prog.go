package afxdp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
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
	ifindex  int
	refs     int
	xsks     *ebpf.Map
	prog     *ebpf.Program
	link     link.Link
	mode     string // "driver" or "generic"
	stamps   bool   // the program writes an arrival stamp before each frame (stampInsns)
	noStamps bool   // the ports asked for none (Config.NoStamps)
	promisc  int    // packet socket holding the interface promiscuous (enablePromisc)
	// bypass is the other interface of the pair (Config.Bypass), "" for
	// none; peer is then the DEVMAP holding its ifindex, and the program
	// is attached through netlink (link stays nil) so that it outlives us.
	bypass string
	peer   *ebpf.Map
}

var progs struct {
	sync.Mutex
	byIf map[int]*xdpProg
}

// redirectInsns is the XDP program without stamps, written with
// cilium/ebpf's asm so no clang or object file is needed:
//
//	return bpf_redirect_map(&xsks, ctx->rx_queue_index, XDP_PASS);
//
// The low bits of the flags argument are the action when the queue has no
// socket in the map (kernel ≥ 5.3): such frames go on to the kernel stack.
// With a bypass map (peerFD ≥ 0) the tail is bypassTail instead.
func redirectInsns(xsksFD, peerFD int) asm.Instructions {
	return append(asm.Instructions{asm.Mov.Reg(asm.R6, asm.R1)}, redirectTail(xsksFD, peerFD, "")...)
}

// redirectTail hands the frame in R6 (the xdp_md) to the socket of its
// arrival queue. Without a bypass (peerFD < 0) a queue without a socket
// passes its frames to the kernel stack. With one:
//
//	if (bpf_redirect_map(&xsks, ctx->rx_queue_index, 0) == XDP_REDIRECT)
//		return XDP_REDIRECT;
//	return bpf_redirect_map(&peer, 0, XDP_PASS);
//
// so a frame whose queue has no socket — no ldafwd running, or one that
// died, whose sockets the kernel took out of the XSKMAP when it closed
// them — is sent out of the other interface of the pair from inside the
// driver: the wire stays up (fail-open). XDP_PASS when the DEVMAP has no
// entry. A failed transmit on the other interface (a veth whose peer has
// neither XDP nor GRO, docs/afxdp.md) is a drop the kernel counts, not
// something the program can see.
func redirectTail(xsksFD, peerFD int, sym string) asm.Instructions {
	const (
		rxQueueIndexOff = 16 // offsetof(struct xdp_md, rx_queue_index)
		xdpPass         = 2
		xdpRedirect     = 4
	)
	miss := int32(xdpPass)
	if peerFD >= 0 {
		miss = 0 // XDP_ABORTED: told apart from XDP_REDIRECT below
	}
	first := asm.LoadMem(asm.R2, asm.R6, rxQueueIndexOff, asm.Word)
	if sym != "" {
		first = first.WithSymbol(sym)
	}
	insns := asm.Instructions{
		first,
		asm.LoadMapPtr(asm.R1, xsksFD),
		asm.Mov.Imm(asm.R3, miss),
		asm.FnRedirectMap.Call(),
	}
	if peerFD >= 0 {
		insns = append(insns,
			asm.JEq.Imm(asm.R0, xdpRedirect, "out"),
			asm.LoadMapPtr(asm.R1, peerFD),
			asm.Mov.Imm(asm.R2, 0),
			asm.Mov.Imm(asm.R3, xdpPass),
			asm.FnRedirectMap.Call(),
		)
		return append(insns, asm.Return().WithSymbol("out"))
	}
	return append(insns, asm.Return())
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
// (the last line is redirectTail's, with the bypass when peerFD ≥ 0).
//
// The clock is read first, as early as the frame's processing can: this is
// when the driver's NAPI poll handed the frame to XDP. CLOCK_TAI rather
// than CLOCK_MONOTONIC (bpf_ktime_get_ns): the kernel's TAI is its
// CLOCK_REALTIME plus the TAI offset (adjtimex), both kept by the same
// timekeeper, so subtracting the offset gives the sender's clock exactly,
// with no offset to sample and no drift between refreshes. A driver that
// cannot give metadata room (adjust_meta fails) still gets its frame
// redirected; the receive path then sees no stamp and stamps in software.
func stampInsns(xsksFD, peerFD int) asm.Instructions {
	const dataOff, dataMetaOff = 0, 8 // offsetof(struct xdp_md, data), (…, data_meta)
	return append(asm.Instructions{
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
	}, redirectTail(xsksFD, peerFD, "redirect")...)
}

// acquireProg returns the interface's program, loading and attaching it
// on first use (driver mode, generic mode when the driver has no XDP) and
// putting the interface in promiscuous mode for as long as the program
// stays attached: an interface that cannot be made promiscuous is
// refused, since it would drop the frames a bump in the wire is there to
// forward. bypass is the other interface of the pair for fail-open
// (Config.Bypass), "" for none; noStamps leaves the arrival stamp out
// (Config.NoStamps). Every port of the process on one interface must
// agree on both.
func acquireProg(ifindex int, ifname, bypass string, noStamps bool) (*xdpProg, error) {
	progs.Lock()
	defer progs.Unlock()
	if p := progs.byIf[ifindex]; p != nil {
		if p.bypass != bypass {
			return nil, fmt.Errorf("afxdp: %s: already open with bypass %q, not %q", ifname, p.bypass, bypass)
		}
		if p.noStamps != noStamps {
			return nil, fmt.Errorf("afxdp: %s: already open with arrival stamps %s", ifname, map[bool]string{false: "on", true: "off"}[p.noStamps])
		}
		p.refs++
		return p, nil
	}
	if bypass == "" {
		if err := detachStale(ifindex, ifname); err != nil {
			return nil, err
		}
	}
	entries := max(rxQueues(ifname), 64)
	m, err := ebpf.NewMap(&ebpf.MapSpec{Name: "ldafwd_xsks", Type: ebpf.XSKMap, KeySize: 4, ValueSize: 4, MaxEntries: uint32(entries)})
	if err != nil {
		return nil, fmt.Errorf("afxdp: %s: create XSKMAP: %w", ifname, err)
	}
	p := &xdpProg{ifindex: ifindex, refs: 1, xsks: m, bypass: bypass, noStamps: noStamps, promisc: -1}
	fail := func(err error) (*xdpProg, error) {
		p.close()
		return nil, err
	}
	peerFD := -1
	if bypass != "" {
		peer, err := net.InterfaceByName(bypass)
		if err != nil {
			return fail(fmt.Errorf("afxdp: %s: bypass interface: %w", ifname, err))
		}
		if peer.Index == ifindex {
			return fail(fmt.Errorf("afxdp: %s: bypass to itself: fail-open needs the pair's other interface", ifname))
		}
		if p.peer, err = ebpf.NewMap(&ebpf.MapSpec{Name: "ldafwd_bypass", Type: ebpf.DevMap, KeySize: 4, ValueSize: 4, MaxEntries: 1}); err != nil {
			return fail(fmt.Errorf("afxdp: %s: create DEVMAP: %w", ifname, err))
		}
		if err := p.peer.Update(uint32(0), uint32(peer.Index), ebpf.UpdateAny); err != nil {
			return fail(fmt.Errorf("afxdp: %s: bypass to %s in the DEVMAP: %w", ifname, bypass, err))
		}
		peerFD = p.peer.FD()
	}
	// The stamping program needs bpf_ktime_get_tai_ns (Linux ≥ 6.1);
	// an older kernel refuses it and gets the plain redirect.
	err = errors.New("no arrival stamps asked")
	if !noStamps {
		p.stamps = true
		p.prog, err = ebpf.NewProgram(&ebpf.ProgramSpec{
			Name: ProgName, Type: ebpf.XDP, License: "GPL", Instructions: stampInsns(m.FD(), peerFD),
		})
	}
	if err != nil {
		p.stamps = false
		p.prog, err = ebpf.NewProgram(&ebpf.ProgramSpec{
			Name: ProgName, Type: ebpf.XDP, License: "GPL", Instructions: redirectInsns(m.FD(), peerFD),
		})
	}
	if err != nil {
		return fail(fmt.Errorf("afxdp: %s: load XDP program: %w", ifname, err))
	}
	if bypass != "" {
		err = p.attachNetlink(ifname)
	} else {
		err = p.attachLink(ifname)
	}
	if err != nil {
		return fail(err)
	}
	if p.promisc, err = enablePromisc(ifindex); err == nil && bypass != "" {
		// The bypass outlives the process, and so must promiscuity:
		// the interface flag (ip link set … promisc on), which stays.
		err = setPromiscFlag(ifname)
	}
	if err != nil {
		if p.link != nil {
			p.link.Close()
			p.link = nil
		}
		if p.promisc >= 0 {
			unix.Close(p.promisc)
		}
		return fail(fmt.Errorf("afxdp: %s: promiscuous mode (needed to receive frames addressed to other stations): %w", ifname, err))
	}
	if progs.byIf == nil {
		progs.byIf = map[int]*xdpProg{}
	}
	progs.byIf[ifindex] = p
	return p, nil
}

// attachLink attaches through a bpf_link, which dies with its last file
// descriptor: if this process crashes the kernel detaches the program by
// itself (and the wire between the pair is cut until a restart).
func (p *xdpProg) attachLink(ifname string) error {
	var err error
	p.link, err = link.AttachXDP(link.XDPOptions{Program: p.prog, Interface: p.ifindex, Flags: link.XDPDriverMode})
	p.mode = "driver"
	if err != nil {
		var gerr error
		p.link, gerr = link.AttachXDP(link.XDPOptions{Program: p.prog, Interface: p.ifindex, Flags: link.XDPGenericMode})
		p.mode = "generic"
		if gerr != nil {
			p.link = nil
			if errors.Is(gerr, unix.EBUSY) || errors.Is(err, unix.EBUSY) {
				return fmt.Errorf("afxdp: %s: another XDP program is attached (in use by another process?): %w", ifname, gerr)
			}
			return fmt.Errorf("afxdp: %s: attach XDP program: driver mode: %v; generic mode: %w", ifname, err, gerr)
		}
	}
	return nil
}

// attachNetlink attaches the bypass program through netlink (IFLA_XDP),
// the attachment that stays after the process exits: the program, and the
// maps it refers to, live on in the kernel, so a killed or stopped ldafwd
// leaves the pair forwarding. A program of ours already there (the bypass
// of an earlier run) is replaced in one netlink request, in its own mode,
// so no frame finds the interface without a program. Anything else
// attached is refused; a program of ours held by a bpf_link belongs to a
// running ldafwd without fail-open, and netlink refuses to replace it.
func (p *xdpProg) attachNetlink(ifname string) error {
	id, flags, err := xdpAttached(p.ifindex)
	if err != nil {
		return fmt.Errorf("afxdp: %s: read the attached XDP program: %w", ifname, err)
	}
	modes := []uint32{unix.XDP_FLAGS_DRV_MODE, unix.XDP_FLAGS_SKB_MODE}
	if id != 0 {
		name := ""
		if old, err := ebpf.NewProgramFromID(ebpf.ProgramID(id)); err == nil {
			if info, err := old.Info(); err == nil {
				name = info.Name
			}
			old.Close()
		}
		if name != ProgName {
			return fmt.Errorf("afxdp: %s: another XDP program is attached (%q, id %d): remove it first (ip link set dev %s xdp off)", ifname, name, id, ifname)
		}
		if flags != 0 {
			modes = []uint32{flags} // the other mode is refused while one is attached
		}
	}
	var errs []error
	for _, f := range modes {
		err := xdpSetFD(p.ifindex, p.prog.FD(), f)
		if err == nil {
			p.mode = "driver"
			if f == unix.XDP_FLAGS_SKB_MODE {
				p.mode = "generic"
			}
			return nil
		}
		if errors.Is(err, unix.EBUSY) {
			return fmt.Errorf("afxdp: %s: XDP program %s (id %d) is held by a bpf_link of a running process (an ldafwd with --fail-open=false?): %w", ifname, ProgName, id, err)
		}
		errs = append(errs, fmt.Errorf("mode flags %#x: %w", f, err))
	}
	return fmt.Errorf("afxdp: %s: attach XDP program: %w", ifname, errors.Join(errs...))
}

// close drops this process's descriptors of the program and its maps.
// A netlink attachment (the bypass) keeps them alive in the kernel.
func (p *xdpProg) close() {
	if p.prog != nil {
		p.prog.Close()
	}
	if p.peer != nil {
		p.peer.Close()
	}
	p.xsks.Close()
}

// release drops one reference and, with the last, detaches the program
// and gives up the promiscuity the packet socket held — except a bypass
// (fail-open), which stays attached and keeps forwarding between the
// pair with no process, until the next run replaces it or the operator
// removes it (ip link set dev X xdp off).
func (p *xdpProg) release() error {
	progs.Lock()
	defer progs.Unlock()
	p.refs--
	if p.refs > 0 {
		return nil
	}
	delete(progs.byIf, p.ifindex)
	var err error
	if p.link != nil {
		err = p.link.Close()
	}
	p.close()
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
// netlink when this run does not fail open (Config.Bypass ""): the bypass
// a fail-open run left, or what an older ldafwd that attached without
// bpf_link left after a crash. A program held by a bpf_link belongs to a
// live process: netlink refuses to detach it and the caller gets an error
// saying so.
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
	fmt.Fprintf(os.Stderr, "afxdp: %s: detached XDP program %s (id %d) left by an earlier run (its fail-open bypass): the wire between the pair now goes through this run only\n", ifname, ProgName, id)
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
