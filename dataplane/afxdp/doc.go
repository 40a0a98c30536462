// Package afxdp is ldafwd's native AF_XDP port, "afxdp:<ifname>[@queue]",
// written in pure Go (golang.org/x/sys/unix for the socket and rings,
// cilium/ebpf for the XDP program and its XSKMAP); docs/afxdp.md says why
// not libxdp through cgo.
//
// Role. Open creates one AF_XDP socket on one queue of an interface with
// its own UMEM (2×RingSize rx frames feeding the fill ring, RingSize tx
// frames), loads and attaches the interface's redirect program (shared by
// every queue the process opens on that interface) in driver mode, generic
// mode when the driver has no XDP, and binds zero-copy when the driver can,
// copy mode otherwise. need_wakeup is always requested: the fill ring is
// kicked with recvfrom and the tx ring with sendto only when the kernel asks.
//
// Buffer hand-off between ports (bump in the wire): copy. TxBurst copies a
// frame received on another AF_XDP port (found by Packet.Port in a
// process-wide table) into one of its own tx frames and gives the rx frame
// straight back to its owner's free list. Frames from Alloc go out in
// place. Frames of a dataplane PacketPool (ring, pcap ports) are copied and
// given back with FreePooled. Packets of other kinds (rte_mbufs) are
// refused: TxBurst stops there and the caller frees them. See
// docs/afxdp.md for why not a shared UMEM.
//
// Packets. Every UMEM frame has one dataplane.Packet, owned by the port;
// RxBurst and Alloc point the caller's slice at them.
//
// Lifetimes. Config.Bypass (the pair's other interface) makes the
// interface fail open: the program sends a frame whose queue has no socket
// out of the other interface (a DEVMAP) and is attached through netlink,
// so it outlives Close and the process; the kernel takes a closed socket
// out of the XSKMAP, so when the process dies the pair keeps forwarding
// in the kernel. The next Open replaces that program in one netlink
// request; the interface's IFF_PROMISC flag is set and stays, for the
// bypass. Without Bypass the program is attached through a bpf_link,
// which the kernel destroys when its last file descriptor closes: a
// crashed ldafwd leaves nothing attached, and a program named ProgName
// attached through netlink (a bypass) is detached at Open. While the
// program is attached by this process the interface is also promiscuous
// through a packet socket's membership, which the kernel drops with the
// socket. Sockets are bound before the program is touched, so a queue
// held by another process fails Open without disturbing its program.
// Close removes the socket from the XSKMAP, detaches a bpf_link program
// with the interface's last socket and unmaps rings and UMEM.
//
// Concurrency. A port's rx side (fill + rx ring, rx frames) belongs to the
// worker calling RxBurst; its tx side (tx + completion ring, tx frames) to
// the worker calling TxBurst and Alloc. A worker that received a packet is
// the one that passes it to TxBurst or Free (run to completion), so giving
// a copied frame back to its owner's rx side happens on the owner's rx
// worker. Counters are atomics updated once per burst; Stats and Close may
// be called from the control goroutine, Close only after the workers
// stopped.
//
// Several queues: OpenQueues opens one socket per queue 0..N-1 (Queues);
// lane q of `run --queues N` uses queue q of both ports. The XDP program
// redirects by arrival queue: the kernel refuses a socket frames that
// arrived on another queue, so steering is the NIC's RSS (or, over veth,
// the queue the peer sent on).
//
// Timestamps: the XDP program stamps each frame it sees
// (bpf_ktime_get_tai_ns, converted to CLOCK_REALTIME); on kernels without
// that helper the lane stamps each burst at poll time.
//
// Preparing the interface. What Open does not set but a transparent bump
// in the wire needs is read and reported, never changed: RxQueues and
// QueueFix (every receive queue bound, else frames on the others reach
// the host stack), CheckOffloads (receive offloads that merge, strip or
// filter frames before XDP sees them, with the ethtool command that turns
// each off). ethtool's ioctls are in unsafe.go.
//
// Hazards. Packet.Data points into the UMEM; after TxBurst took it or Free
// returned it the kernel may overwrite it. All unsafe code is in unsafe.go.
package afxdp
