package afxdp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/ldafwd/ldafwd/dataplane"
)

// Config describes a port to Open. The zero value plus Index is usable.
type Config struct {
	// Index is the value written to dataplane.Packet.Port for frames this
	// port receives or allocates; unique among the AF_XDP ports of the
	// process (TxBurst finds a frame's owner by it).
	Index uint8
	// Burst is the largest burst RxBurst/TxBurst handle; 0 means 32.
	Burst int
	// RingSize is the number of descriptors of each of the four rings, a
	// power of two; 0 means 2048. The UMEM holds 2×RingSize rx frames and
	// RingSize tx frames.
	RingSize int
	// FrameSize is the UMEM chunk size in bytes, 2048 or 4096; 0 means
	// 2048 (a 1518-byte frame plus the kernel's 256-byte XDP headroom fits).
	FrameSize int
	// NoZeroCopy binds in copy mode without trying zero-copy first.
	NoZeroCopy bool
	// Bypass, when not "", is the other interface of a bump in the wire
	// (port b's for port a's, and the reverse): the interface fails open.
	// Its XDP program sends a frame whose queue has no socket out of
	// Bypass instead of to the kernel stack, and is attached through
	// netlink so that it stays after Close and after the process dies:
	// the pair keeps forwarding, unmeasured, until a run binds its
	// sockets again. Every port on one interface must give the same
	// Bypass. "" is a bpf_link attachment that goes with the process and
	// removes a bypass left by an earlier run (docs/afxdp.md, "Fail-open").
	Bypass string
	// NoStamps loads the interface's XDP program without its arrival
	// stamp: frames come with TS 0, and a lane stamps each burst with its
	// poll's clock read (TimestampSource "poll"). For a port whose
	// arrival times nothing uses — a sender's user side, whose frames are
	// stamped as they are transmitted into the segment — it spares the
	// CPU that receives for the socket a clock read per frame (in copy
	// mode, the sending process's CPU). Every port on one interface must
	// give the same NoStamps.
	NoStamps bool
}

func (c Config) withDefaults() (Config, error) {
	if c.Burst == 0 {
		c.Burst = 32
	}
	if c.RingSize == 0 {
		c.RingSize = 2048
	}
	if c.FrameSize == 0 {
		c.FrameSize = 2048
	}
	switch {
	case c.Burst < 1 || c.Burst > 1024:
		return c, fmt.Errorf("afxdp: burst %d (want 1..1024)", c.Burst)
	case c.RingSize < 64 || c.RingSize > 1<<16 || c.RingSize&(c.RingSize-1) != 0:
		return c, fmt.Errorf("afxdp: ring size %d (want a power of two in 64..65536)", c.RingSize)
	case c.FrameSize != 2048 && c.FrameSize != 4096:
		return c, fmt.Errorf("afxdp: frame size %d (want 2048 or 4096)", c.FrameSize)
	case c.Burst > c.RingSize:
		return c, fmt.Errorf("afxdp: burst %d larger than the rings (%d)", c.Burst, c.RingSize)
	}
	return c, nil
}

// registry finds the port that owns a frame by Packet.Port, so TxBurst can
// give a copied frame back to its owner's fill side. Written by Open and
// Close, read by TxBurst.
var registry [256]atomic.Pointer[Port]

// rxSide is the receive half of a port: fill and rx rings and the free rx
// frames. Only the worker that calls RxBurst touches it (and TxBurst/Free
// of that same worker when it hands frames back).
type rxSide struct {
	fill, rx ring
	free     []uint64 // frame addresses not in the fill ring, stack
	packets  atomic.Uint64
	bytes    atomic.Uint64
	// CLOCK_TAI − CLOCK_REALTIME, ns, as adjtimex said when the stamp
	// taiAt was taken; re-read once a second of stamps (leap seconds).
	taiOff, taiAt int64
	_             [64]byte
}

// txSide is the transmit half: tx and completion rings and the free tx
// frames. Only the worker that calls TxBurst (and Alloc) touches it.
type txSide struct {
	tx, comp ring
	free     []uint64
	packets  atomic.Uint64
	bytes    atomic.Uint64
	refused  atomic.Uint64       // packets TxBurst did not take (ring full, foreign); not a drop: the caller keeps them
	pooled   []*dataplane.Packet // scratch: copied frames of dataplane pools, given back once per burst
	_        [64]byte
}

// Port is one AF_XDP socket bound to one queue of one interface.
type Port struct {
	name      string
	ifname    string
	queue     int
	index     uint8
	burst     int
	frameSize uint64
	rxFrames  uint64 // frames [0, rxFrames) feed rx; the rest are tx frames
	fd        int
	umem      []byte
	pkts      []dataplane.Packet // one per UMEM frame: the Packet RxBurst/Alloc hand out for it
	prog      *xdpProg
	zeroCopy  bool
	closed    atomic.Bool // set by Close; bursts on a closed port return 0

	rx rxSide
	tx txSide

	mu     sync.Mutex      // serialises Stats and Close
	kstats dataplane.Stats // last kernel counters, for Stats after Close
}

var (
	_ dataplane.Port     = (*Port)(nil)
	_ dataplane.RxWaiter = (*Port)(nil)
)

// Open creates an AF_XDP socket on the interface and queue of spec
// ("afxdp:eth1@0"), with its own UMEM, attaches (or shares) the redirect
// XDP program of the interface, binds zero-copy when the driver can and in
// copy mode otherwise, and fills the fill ring.
func Open(spec string, cfg Config) (*Port, error) {
	ifname, queue, err := ParseSpec(spec)
	if err != nil {
		return nil, err
	}
	if cfg, err = cfg.withDefaults(); err != nil {
		return nil, err
	}
	ifi, err := net.InterfaceByName(ifname)
	if err != nil {
		return nil, fmt.Errorf("afxdp: %s: %w", spec, err)
	}
	if nq := rxQueues(ifname); nq > 0 && queue >= nq {
		return nil, fmt.Errorf("afxdp: %s: queue %d, but %s has %d rx queues", spec, queue, ifname, nq)
	}
	p := &Port{
		name: "afxdp:" + ifname + "@" + fmt.Sprint(queue), ifname: ifname, queue: queue,
		index: cfg.Index, burst: cfg.Burst, frameSize: uint64(cfg.FrameSize), fd: -1,
	}
	if !registry[cfg.Index].CompareAndSwap(nil, p) {
		return nil, fmt.Errorf("afxdp: %s: port index %d already used by %s", spec, cfg.Index, registry[cfg.Index].Load().name)
	}
	if err := p.open(ifi.Index, cfg); err != nil {
		p.teardown()
		return nil, fmt.Errorf("afxdp: %s: %w", spec, err)
	}
	return p, nil
}

func (p *Port) open(ifindex int, cfg Config) error {
	n := uint32(cfg.RingSize)
	p.rxFrames = 2 * uint64(n)
	total := p.rxFrames + uint64(n)
	var err error
	p.umem, err = unix.Mmap(-1, 0, int(total*p.frameSize), unix.PROT_READ|unix.PROT_WRITE,
		unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_POPULATE)
	if err != nil {
		return fmt.Errorf("UMEM of %d bytes: %w", total*p.frameSize, err)
	}
	p.fd, err = unix.Socket(unix.AF_XDP, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("AF_XDP socket: %w", err)
	}
	reg := unix.XDPUmemReg{Len: uint64(len(p.umem)), Size: uint32(p.frameSize)}
	reg.Addr = umemAddr(p.umem)
	if err := setsockoptUmemReg(p.fd, &reg); err != nil {
		return fmt.Errorf("XDP_UMEM_REG: %w", err)
	}
	for _, o := range []int{unix.XDP_UMEM_FILL_RING, unix.XDP_UMEM_COMPLETION_RING, unix.XDP_RX_RING, unix.XDP_TX_RING} {
		if err := unix.SetsockoptInt(p.fd, unix.SOL_XDP, o, int(n)); err != nil {
			return fmt.Errorf("ring size option %d = %d: %w", o, n, err)
		}
	}
	off, err := getsockoptMmapOffsets(p.fd)
	if err != nil {
		return fmt.Errorf("XDP_MMAP_OFFSETS: %w", err)
	}
	for _, m := range []struct {
		pgoff int64
		off   unix.XDPRingOffset
		size  uintptr
		r     *ring
	}{
		{unix.XDP_UMEM_PGOFF_FILL_RING, off.Fr, 8, &p.rx.fill},
		{unix.XDP_UMEM_PGOFF_COMPLETION_RING, off.Cr, 8, &p.tx.comp},
		{unix.XDP_PGOFF_RX_RING, off.Rx, 16, &p.rx.rx},
		{unix.XDP_PGOFF_TX_RING, off.Tx, 16, &p.tx.tx},
	} {
		if err := mapRing(p.fd, m.pgoff, m.off, n, m.size, m.r); err != nil {
			return err
		}
	}
	// Bind before touching the interface's program: a queue another
	// process is bound to refuses the bind (EBUSY), so a second ldafwd on
	// the same interface fails here instead of replacing the running one's
	// fail-open program (which netlink would let it do).
	sa := &unix.SockaddrXDP{Flags: unix.XDP_ZEROCOPY | unix.XDP_USE_NEED_WAKEUP, Ifindex: uint32(ifindex), QueueID: uint32(p.queue)}
	zerr := errors.New("not tried (NoZeroCopy)")
	if !cfg.NoZeroCopy {
		zerr = unix.Bind(p.fd, sa)
	}
	p.zeroCopy = zerr == nil
	if zerr != nil {
		sa.Flags = unix.XDP_COPY | unix.XDP_USE_NEED_WAKEUP
		if err := unix.Bind(p.fd, sa); err != nil {
			return fmt.Errorf("bind to queue %d: zero-copy: %v; copy: %w", p.queue, zerr, err)
		}
	}
	if p.prog, err = acquireProg(ifindex, p.ifname, cfg.Bypass, cfg.NoStamps); err != nil {
		return err
	}
	if err := p.prog.xsks.Update(uint32(p.queue), uint32(p.fd), ebpf.UpdateAny); err != nil {
		return fmt.Errorf("insert socket into XSKMAP: %w", err)
	}
	// Frame layout: rx frames first (the fill ring starts full, the rest
	// wait in rx.free), then tx frames.
	p.rx.free = make([]uint64, 0, p.rxFrames)
	for f := uint64(0); f < p.rxFrames; f++ {
		p.rx.free = append(p.rx.free, f*p.frameSize)
	}
	p.tx.free = make([]uint64, 0, uint64(n))
	for f := p.rxFrames; f < total; f++ {
		p.tx.free = append(p.tx.free, f*p.frameSize)
	}
	p.tx.pooled = make([]*dataplane.Packet, 0, cfg.Burst)
	p.pkts = make([]dataplane.Packet, total)
	p.refill()
	return nil
}

// Name is "afxdp:<ifname>@<queue>".
func (p *Port) Name() string { return p.name }

// ZeroCopy says whether the socket is bound in zero-copy mode (the driver
// DMAs into the UMEM) rather than copy mode.
func (p *Port) ZeroCopy() bool { return p.zeroCopy }

// XDPMode is how the redirect program is attached: "driver" (native) or
// "generic" (skb, slower, for drivers without XDP).
func (p *Port) XDPMode() string { return p.prog.mode }

// TimestampSource says where rx timestamps come from: "xdp" when the XDP
// program stamps each frame as it redirects it (CLOCK_TAI converted to
// CLOCK_REALTIME, see stampInsns), "poll" when the kernel refused that
// program (Linux < 6.1): RxBurst then leaves Packet.TS 0 and the lane
// stamps each burst when it polls.
func (p *Port) TimestampSource() string {
	if p.prog != nil && p.prog.stamps {
		return "xdp"
	}
	return "poll"
}

// taiOffset is CLOCK_TAI − CLOCK_REALTIME in ns (the kernel's TAI offset,
// 37 s where PTP or chrony set it, else 0).
func taiOffset() int64 {
	var tx unix.Timex
	if _, err := unix.Adjtimex(&tx); err != nil {
		return 0
	}
	return int64(tx.Tai) * 1e9
}

// RxFD is the socket, for a worker to wait on in ppoll(2) until frames
// arrive (dataplane.RxWaiter): the kernel wakes it when it puts a frame
// on the rx ring. -1 after Close.
func (p *Port) RxFD() int {
	if p.closed.Load() {
		return -1
	}
	return p.fd
}

// owns reports whether pk is the Packet of one of p's frames (by address,
// so a forged Handle or another kind's packet with our index is caught).
func (p *Port) owns(pk *dataplane.Packet) bool {
	h := uint64(pk.Handle)
	return pk.Port == p.index && h < uint64(len(p.pkts))*p.frameSize && &p.pkts[h/p.frameSize] == pk
}

func (p *Port) isTxFrame(addr uint64) bool { return addr >= p.rxFrames*p.frameSize }

func (p *Port) frameOf(addr uint64) uint64 { return addr - addr%p.frameSize }

// refill moves free rx frames into the fill ring, in batches of at least
// a quarter of the ring (fewer only when that is every free frame): each
// submit moves the ring's producer index, a cache line the kernel reads
// on the CPU that receives for us (in copy mode, inside the sender's
// system call), and the kernel reads it again only once it has taken
// every entry it saw. Refilling a poll's worth (a burst) at a time made
// it take that line, and write back its consumer index, every burst
// (xp_alloc in a profile of that CPU). A ring topped up by the quarter
// still holds three quarters of its frames for the kernel. libxdp's
// users and DPDK's net_af_xdp refill by halves.
func (p *Port) refill() {
	r := &p.rx
	want := uint32(len(r.free))
	if want == 0 {
		return
	}
	k := r.fill.reserve(want)
	if k == 0 || k < min(want, r.fill.size/4) {
		return
	}
	idx := r.fill.cachedProd
	top := len(r.free)
	for i := uint32(0); i < k; i++ {
		r.fill.addrs[(idx+i)&r.fill.mask] = r.free[top-1-int(i)]
	}
	r.free = r.free[:top-int(k)]
	r.fill.submit(k)
}

// RxBurst receives up to min(len(pkts), Config.Burst) frames and points
// pkts[i] at their Packets (one per UMEM frame, owned by the port); Data is
// the frame in place in the UMEM.
func (p *Port) RxBurst(pkts []*dataplane.Packet) int {
	if len(pkts) == 0 || p.closed.Load() {
		return 0
	}
	r := &p.rx
	p.refill()
	n := r.rx.peek(uint32(min(len(pkts), p.burst)))
	if n == 0 {
		if r.fill.needWakeup() {
			_ = kickRx(p.fd)
		}
		return 0
	}
	idx := r.rx.cachedCons
	var bytes uint64
	for i := uint32(0); i < n; i++ {
		d := r.rx.descs[(idx+i)&r.rx.mask]
		f := p.frameOf(d.Addr)
		end := f + p.frameSize
		pk := &p.pkts[f/p.frameSize]
		pkts[i] = pk
		pk.Data = p.umem[d.Addr : d.Addr+uint64(d.Len) : end]
		pk.TS = 0
		if d.Addr-f >= metaLen {
			// The XDP program's arrival stamp, read in place and cleared
			// so that a frame this chunk holds later without one (a
			// driver that gave no metadata room) is not taken for
			// stamped by a stale value.
			meta := p.umem[d.Addr-metaLen : d.Addr]
			if tai := int64(binary.NativeEndian.Uint64(meta)); tai != 0 {
				if tai-r.taiAt > 1e9 || tai < r.taiAt {
					r.taiOff, r.taiAt = taiOffset(), tai
				}
				pk.TS = uint64(tai - r.taiOff)
				clear(meta)
			}
		}
		pk.Handle = uintptr(d.Addr)
		pk.Port = p.index
		bytes += uint64(d.Len)
	}
	r.rx.release(n)
	r.packets.Add(uint64(n))
	r.bytes.Add(bytes)
	return int(n)
}

// reclaim takes transmitted frames back from the completion ring.
func (p *Port) reclaim() {
	t := &p.tx
	n := t.comp.peek(t.comp.size)
	if n == 0 {
		return
	}
	idx := t.comp.cachedCons
	for i := uint32(0); i < n; i++ {
		t.free = append(t.free, p.frameOf(t.comp.addrs[(idx+i)&t.comp.mask]))
	}
	t.comp.release(n)
}

// TxBurst queues up to min(len(pkts), Config.Burst) packets. A frame
// allocated from this port (Alloc) goes out in place; a frame received on
// this or another AF_XDP port of the process is copied into a tx frame and
// its rx frame goes straight back to its owner's fill side (the copy
// hand-off, see docs/afxdp.md); a frame of a dataplane PacketPool (ring,
// pcap ports) is copied and given back to its pool. It stops at the first
// packet it cannot take (tx ring or tx frames exhausted, a packet of an
// unknown kind such as an rte_mbuf, a frame too big); those stay the
// caller's.
func (p *Port) TxBurst(pkts []*dataplane.Packet) int {
	if len(pkts) == 0 || p.closed.Load() {
		return 0
	}
	t := &p.tx
	t.pooled = t.pooled[:0]
	p.reclaim()
	want := min(len(pkts), p.burst)
	n := int(t.tx.reserve(uint32(want)))
	idx := t.tx.cachedProd
	var bytes uint64
	i := 0
	for ; i < n; i++ {
		pk := pkts[i]
		l := uint64(len(pk.Data))
		if l == 0 || l > p.frameSize {
			break
		}
		var addr uint64
		if p.owns(pk) && p.isTxFrame(uint64(pk.Handle)) {
			off, ok := offsetIn(p.umem, pk.Data)
			if !ok || p.frameOf(off) != p.frameOf(uint64(pk.Handle)) {
				// Built outside its frame (Go memory): copy it in.
				off = p.frameOf(uint64(pk.Handle))
				copy(p.umem[off:off+l], pk.Data)
			}
			addr = off
		} else {
			var owner *Port
			pooled := dataplane.IsPooled(pk)
			if !pooled {
				owner = registry[pk.Port].Load()
				if owner == nil || !owner.owns(pk) {
					break // not a frame of ours nor of a pool: cannot give it back
				}
			}
			if len(t.free) == 0 {
				break
			}
			addr = t.free[len(t.free)-1]
			t.free = t.free[:len(t.free)-1]
			copy(p.umem[addr:addr+l], pk.Data)
			if pooled {
				t.pooled = append(t.pooled, pk)
			} else {
				owner.recycle(uint64(pk.Handle))
			}
		}
		t.tx.descs[(idx+uint32(i))&t.tx.mask] = unix.XDPDesc{Addr: addr, Len: uint32(l)}
		bytes += l
	}
	if i > 0 {
		t.tx.submit(uint32(i))
	}
	if len(t.pooled) > 0 {
		dataplane.FreePooled(t.pooled)
	}
	// Copy mode transmits only inside this system call; zero-copy drivers
	// ask for it with the need_wakeup flag when their tx path sleeps. Kick
	// also when nothing new was queued but descriptors still wait (a
	// kick that failed with EAGAIN/ENOBUFS, a full ring): else a full tx
	// ring would never drain.
	if t.tx.needWakeup() && (i > 0 || t.tx.pending() > 0) {
		_ = kickTx(p.fd)
	}
	if i > 0 {
		t.packets.Add(uint64(i))
		t.bytes.Add(bytes)
	}
	if i < want {
		t.refused.Add(uint64(want - i))
	}
	return i
}

// recycle gives a frame received on this port back to the rx side.
func (p *Port) recycle(addr uint64) {
	f := p.frameOf(addr)
	if p.isTxFrame(f) {
		p.tx.free = append(p.tx.free, f)
		return
	}
	p.rx.free = append(p.rx.free, f)
}

// Alloc points pkts at the Packets of free tx frames (as many as there
// are); Data spans the whole frame: reslice it to the frame length and
// write the frame into it before TxBurst.
func (p *Port) Alloc(pkts []*dataplane.Packet) int {
	if len(pkts) == 0 || p.closed.Load() {
		return 0
	}
	t := &p.tx
	if len(t.free) < len(pkts) {
		p.reclaim()
	}
	n := min(len(pkts), len(t.free))
	for i := 0; i < n; i++ {
		f := t.free[len(t.free)-1]
		t.free = t.free[:len(t.free)-1]
		pk := &p.pkts[f/p.frameSize]
		pkts[i] = pk
		pk.Data = p.umem[f : f+p.frameSize : f+p.frameSize]
		pk.TS = 0
		pk.Handle = uintptr(f)
		pk.Port = p.index
	}
	return n
}

// Free returns frames received or allocated on this port. Packets that
// are not ours are ignored (they are not ours to free); after Close it does
// nothing.
func (p *Port) Free(pkts []*dataplane.Packet) {
	if p.closed.Load() {
		return
	}
	for _, pk := range pkts {
		if p.owns(pk) {
			p.recycle(uint64(pk.Handle))
		}
	}
}

// TxRefused counts packets TxBurst did not take (tx ring or frames
// exhausted, a foreign packet); the caller kept them.
func (p *Port) TxRefused() uint64 { return p.tx.refused.Load() }

// Stats combines our burst counters with the kernel's XDP_STATISTICS:
// RxDropped = frames the kernel dropped for want of an rx ring slot or a
// fill ring frame (its rx_ring_full and rx_dropped), RxErrors = invalid fill
// descriptors, TxDropped = invalid tx descriptors. After Close the kernel
// counters read last stay.
func (p *Port) Stats() dataplane.Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := dataplane.Stats{
		RxPackets: p.rx.packets.Load(), RxBytes: p.rx.bytes.Load(),
		TxPackets: p.tx.packets.Load(), TxBytes: p.tx.bytes.Load(),
		RxDropped: p.kstats.RxDropped, RxErrors: p.kstats.RxErrors, TxDropped: p.kstats.TxDropped,
	}
	if p.closed.Load() {
		return s
	}
	p.readKernelStats()
	s.RxDropped, s.RxErrors, s.TxDropped = p.kstats.RxDropped, p.kstats.RxErrors, p.kstats.TxDropped
	return s
}

func (p *Port) readKernelStats() {
	if k, err := getsockoptStatistics(p.fd); err == nil {
		// A frame is dropped once: rx_dropped counts a frame too long
		// or with no fill ring frame for it, rx_ring_full one with no rx
		// ring slot (net/xdp/xsk.c __xsk_rcv, __xsk_rcv_zc). The fill
		// ring's empty count is not a drop count: in copy mode it repeats
		// rx_dropped's (xp_alloc counts the same failure), in zero-copy
		// mode it counts driver refills that found the ring empty
		// (TestRxDroppedExact).
		p.kstats.RxDropped = k.Rx_dropped + k.Rx_ring_full
		p.kstats.RxErrors = k.Rx_invalid_descs
		p.kstats.TxDropped = k.Tx_invalid_descs
	}
}

// Close removes the socket from the XSKMAP, detaches the XDP program when
// it was the interface's last socket, closes the socket and unmaps the
// rings and the UMEM. Workers must have stopped. Idempotent.
func (p *Port) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed.Load() {
		return nil
	}
	p.readKernelStats()
	p.closed.Store(true)
	return p.teardown()
}

func (p *Port) teardown() error {
	var errs []error
	if p.prog != nil {
		if p.fd >= 0 {
			_ = p.prog.xsks.Delete(uint32(p.queue))
		}
		errs = append(errs, p.prog.release())
		p.prog = nil
	}
	if p.fd >= 0 {
		errs = append(errs, unix.Close(p.fd))
		p.fd = -1
	}
	for _, r := range []*ring{&p.rx.fill, &p.rx.rx, &p.tx.tx, &p.tx.comp} {
		r.unmap()
	}
	if p.umem != nil {
		errs = append(errs, unix.Munmap(p.umem))
		p.umem = nil
	}
	registry[p.index].CompareAndSwap(p, nil)
	return errors.Join(errs...)
}
