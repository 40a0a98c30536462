package dataplane

// Packet is one frame in flight through ldafwd. Ports own the backing
// memory: Data is valid from RxBurst until the packet is passed to TxBurst
// (and accepted) or returned with Free on the port that produced it.
type Packet struct {
	Data   []byte  // the frame, L2 header first
	TS     uint64  // receive timestamp, ns since the Unix epoch on the port's clock
	Handle uintptr // port-private: rte_mbuf*, UMEM address, pool slot
	Port   uint8   // index of the port that owns the buffer
	_      [7]byte
}

// Stats are a port's counters, read by the control side.
type Stats struct {
	RxPackets, TxPackets uint64
	RxBytes, TxBytes     uint64
	RxDropped, TxDropped uint64 // dropped by the port/NIC, or refused by TxBurst and freed
	RxErrors             uint64
}

// Port moves bursts of frames. Every call handles a whole burst; nothing
// is called per packet. A Port is used by one worker goroutine at a time
// per queue; Stats and Close may be called from the control goroutine.
type Port interface {
	// Name is the user's spec for the port, e.g. "ring:a", "dpdk:net_null0".
	Name() string
	// RxBurst fills pkts[0:n] with received frames and returns n.
	RxBurst(pkts []*Packet) int
	// TxBurst queues pkts for transmission and returns how many it took;
	// those belong to the port now. The caller keeps the rest (retry or
	// Free them). A port accepts packets produced by its peer in a
	// bump-in-the-wire pair (shared pool or copy).
	TxBurst(pkts []*Packet) int
	// Alloc fills pkts with empty buffers of the port's MTU for frames the
	// appliance originates (control frames) and returns how many it got.
	Alloc(pkts []*Packet) int
	// Free returns packets to the pool they came from.
	Free(pkts []*Packet)
	Stats() Stats
	Close() error
}

// TxStamper is implemented by ports that read the clock inside TxBurst as
// they hand frames over (the ring port; DPDK ports; a NIC with tx
// timestamps). A sender lane then records its frames with that transmit
// time instead of the midpoint of its own clock reads around the call,
// which is off by however long the thread was preempted there. Checked
// once per lane, not per packet.
type TxStamper interface {
	// LastTxNs is the transmit time of the last burst TxBurst accepted,
	// ns on the port's clock. Call it only right after a TxBurst that
	// accepted frames, on the same goroutine.
	LastTxNs() uint64
}

// TxStampErr is implemented by a TxStamper whose stamp is itself the
// midpoint of clock reads around the hand-over (DPDK ports: the PMD's
// call may be preempted, net_af_packet's on its sendto's return).
type TxStampErr interface {
	// LastTxErrNs is how far LastTxNs may be off, ns; read with it.
	LastTxErrNs() uint64
}
