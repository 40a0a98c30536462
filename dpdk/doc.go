// Package dpdk binds DPDK 22.11 (Debian's libdpdk, linked dynamically through
// cgo) so ldafwd can drive real NICs and DPDK's virtual devices as
// dataplane.Ports.
//
// Role. Init/InitEAL start DPDK's Environment Abstraction Layer with the
// user's EAL arguments plus working defaults (EALArgs: no hugepages free →
// --no-huge -m 1024; the Debian PMD directory with -d; a per-process
// --file-prefix; --no-pci unless a PCI device is asked for). Open turns a
// port spec ("dpdk:net_null0,copy=1", "dpdk:net_ring0",
// "dpdk:net_af_packet0,iface=veth1", "dpdk:net_af_xdp0,iface=veth1",
// "dpdk:0000:3b:00.0") into a started ethdev with its own mbuf pool sized
// like l2fwd's, one or more rx/tx queue pairs (RSS when more than one) and
// hardware rx timestamps when the PMD offers them.
//
// Hot path. RxBurst, TxBurst, Alloc and Free make at most one cgo call per
// burst into the static inline helpers of shim.h and allocate nothing in Go:
// a Packet's Data is a slice over the mbuf's bytes in place and its Handle is
// the rte_mbuf address. On a registered worker thread a TxBurst also
// receives the same queue's next burst ahead, which the next RxBurst hands
// over without a cgo call (Config.NoRxAhead turns it off): a bump in the
// wire on one worker then makes one cgo call per lane per poll. ForwardTo
// (dataplane.Forwarder) receives and transmits a burst in one call with no
// Packet written, for lanes that forward without measuring. All unsafe
// conversions live in burst_cgo.go.
//
// Lifetimes. EAL is initialised once per process and, after Cleanup, never
// again. Teardown order: stop the workers → Port.Close (stop, close, remove
// the vdev) → Cleanup (free the closed ports' pools, rte_eal_cleanup: a pool
// must outlive every port whose tx ring may hold its mbufs). A Packet's Data is
// valid from RxBurst/Alloc until it is accepted by a TxBurst or passed to
// Free.
//
// Concurrency. One worker per Queue at a time (a Port is its Queue(0)). Any
// DPDK port may transmit a packet received on another DPDK port: mbufs carry
// their pool. Stats, XStats, Link and Close may be called from the control
// goroutine; Close only after the workers stopped. Worker goroutines should
// call RegisterThread on their pinned OS thread so that mempool operations
// use a per-lcore cache (an unregistered thread goes to the shared ring for
// every mbuf) and receive-ahead applies. Receive-ahead is safe when one
// worker receives on a queue and another transmits on it (ldafwd run with
// two cores): only the registration that last received receives ahead.
//
// Build. The cgo files (*_cgo.go) carry the build tag dpdk, which the
// Makefile sets when pkg-config finds libdpdk. Without it dpdk_nocgo.go
// keeps the package compiling and every entry point returns ErrNotBuilt.
//
// Hazards. rte_errno is thread-local, so the C helpers return -rte_errno
// from the same call. rte_eal_init pins its calling thread; InitEAL restores
// the mask afterwards. A packet from a non-DPDK port must never reach a DPDK
// TxBurst or Free (its Handle is not an mbuf).
package dpdk
