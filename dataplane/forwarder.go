package dataplane

// Forwarder is an optional Port capability for a lane that forwards
// without measuring (RoleForward): the port receives a burst and
// transmits it on a peer port in one call, without handing the frames to
// Go at all. For a DPDK port pair that is one cgo call per burst with no
// per-frame Go work and no Packet descriptor written (the frames stay
// rte_mbufs end to end, as in dpdk-testpmd's io forwarding); a measuring
// lane must see every frame and cannot use it.
//
// Back-pressure is kept: frames the peer refuses are handed back as
// Packets, in order, for the caller to queue ahead of anything newer and
// transmit with TxBurst later (as Lane.flush does); nothing is dropped
// here. A caller holding refused frames must send them before calling
// ForwardTo again, or frames would overtake them.
//
// Checked once per lane, like TxStamper, never per packet.
type Forwarder interface {
	// ForwardTo receives up to len(kept) frames on this port and
	// transmits them on to. It returns the frames received (rx) and their
	// bytes, and how many of them to refused: those are kept[:k], in
	// receive order, and belong to the caller. ok is false when to is not
	// a port this one can forward to directly, or when frames received
	// earlier wait to be taken with RxBurst: the caller then uses
	// RxBurst/TxBurst for this burst.
	ForwardTo(to Port, kept []*Packet) (rx int, rxBytes uint64, k int, ok bool)
}
