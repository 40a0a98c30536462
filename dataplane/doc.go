// Package dataplane moves frames: the Port contract every packet I/O
// backend implements, the in-process ring port with its impairment stage,
// the pcap port, and the pinned run-to-completion workers that forward
// between two ports and feed the synopses.
//
// # Ports
//
// A Port moves bursts of *Packet (RxBurst, TxBurst; 32 by default, fixed
// for a port's life). Kinds: DPDK ethdev (package dpdk), AF_XDP
// (dataplane/afxdp), the ring port ("ring:<link>.a" / "ring:<link>.b",
// OpenRingPort) and pcap files ("pcap:<file>[,pace][,tx=<file>]",
// OpenPcapPort). Nothing on a
// port's burst path allocates, locks, or returns an error value; a refused
// or dropped frame is a counter in Stats.
//
// # Buffer ownership
//
// The port that produced a Packet (RxBurst or Alloc) owns its memory until
// the packet is either accepted by a TxBurst — then the transmitting port
// owns it — or returned with Free. Ports of our own (ring, pcap) take
// their buffers from a PacketPool: a preallocated set of MTU-sized buffers
// (2048 bytes by default) in one allocation, with a lock-free MPMC free
// list (package ring). A pooled packet's Handle names its pool and slot, so
// FreePooled returns it to its own pool from anywhere. That is what lets a
// ring link hand a buffer over instead of copying: a frame received on
// link X and transmitted on link Y travels in X's buffer and is freed to X's
// pool by whoever ends its life. A port that receives a packet it cannot
// free (an rte_mbuf, an AF_XDP frame) copies it into one of its own buffers
// and gives the original back to its producer in one call per burst
// (RingPort.SetPeer). Non-pool ports do the reverse: IsPooled tells them a
// buffer is ours, FreePooled gives it back after they copied it out.
//
// # Ring links and impairment
//
// A RingLink joins two RingPorts with one ring.SPSC per direction. Each
// direction may carry an Impairer: a delay line whose packets become
// receivable only when the link clock (injectable, ns; CLOCK_REALTIME by
// default) passes tx time + a delay drawn from a DelayModel (any
// model.Delay), with loss from a LossModel (any model.Loss), duplication
// and reordering (a packet held back until k later ones overtook it).
// Without reordering a direction is FIFO: delivery = max(tx + delay,
// previous delivery). The stage records the exact truth of what it did —
// aggregate ImpairStats and, optionally, one TruthRecord per packet to a
// TruthFunc (TruthLog is a zero-allocation one) — so tests, the demo and
// benchmarks can hold the appliances' estimates against it. The stage runs
// on the receiving port's goroutine, inside RxBurst; it is also usable on
// its own (NewImpairer, Admit, Release).
//
// # Workers
//
// A Lane is one direction of the bump in the wire (frames received on one
// port are transmitted on its peer) with a Role: forward only, sender
// (records what leaves through the segment port) or receiver (records what
// arrives on it and flips at End markers). A Worker is a goroutine locked
// to an OS thread, optionally pinned to a core, polling its lanes
// run-to-completion; each lane's synopses are double-buffered (SynSet,
// SynBuffer) so the control side reads an idle copy without locks. A
// caller that drives the lanes itself on simulated time never starts the
// Worker: it calls Turn, the loop's body, and Finish, its end.
// IntervalTruth cuts an impaired link's TruthRecords at the sender's End
// markers into the exact per-interval truth. See their doc comments for
// the epoch protocol and the stop sequence.
//
// # Several queues
//
// A multi-queue appliance runs one sender and one receiver lane per queue
// pair on one worker (NewQueueWorkers): no frame crosses cores. SteerQueue
// is the steering both ends must share (Toeplitz RSS with a fixed key for
// data, the lane number for End markers); SoftQueues applies it in
// software to a port without queues of its own (two goroutines standing
// in for a NIC's RSS and transmit scheduler); MergedBuffer gives the
// control side one copy per interval, the exact sum of the lanes' copies,
// marked Merged when the lanes' cuts disagree.
//
// Two optional port capabilities, each checked once per lane: a TxStamper
// reports the time it handed a burst to the wire (the sender's transmit
// timestamp without clock reads around TxBurst); a Forwarder receives a
// burst and transmits it on its peer in one call (a DPDK port pair: one
// cgo call, frames stay mbufs), which a forwarding lane with nothing
// buffered uses, keeping back-pressure: refused frames come back in order
// and wait in the lane's tx buffer. Measuring lanes never use it. NewWorkers
// places a pair of lanes on workers as --cores asks.
//
// # Concurrency
//
// A Port is driven by one goroutine per direction at a time (one worker
// usually does both); Stats, Close and an Impairer's Stats may be called
// from the control goroutine. Counters are atomics updated once per burst,
// never per packet. PacketPool and FreePooled are safe from any goroutine.
//
// A Tap captures what a port receives into a pcapng file: the lanes that
// read the port copy each burst into a TapRing (preallocated slots, two
// SPSC rings, no lock, no allocation) and one goroutine writes the file;
// a full ring costs frames of the capture, counted, never of the traffic.
//
// # Hazards
//
//   - A packet freed twice corrupts nothing only if its pool is full at that
//     moment (then it is counted in PacketPool.Stray); otherwise the buffer
//     is handed out twice. Ownership bugs are the caller's to avoid.
//   - After both ends of a RingLink are closed its pool is closed: packets
//     of that pool still held elsewhere are no longer taken back (FreePooled
//     reports them) and are left to the garbage collector.
//   - RxBurst on an impaired port sets TS to the frame's arrival time on the
//     link (like a NIC hardware timestamp), which is earlier than the
//     RxBurst call when the receiver polls late.
package dataplane
