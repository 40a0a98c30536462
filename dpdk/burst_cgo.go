//go:build dpdk

package dpdk

// This file holds every unsafe conversion of package dpdk, the ones the
// burst paths need to hand frames between C and Go without copying and
// without a cgo call per packet.
//
// Why: ports hand out *Packet they own, so each frame's dataplane.Packet
// must live exactly as long as its mbuf: it lives inside it, in the mbuf's
// private area. An rx burst is one cgo call (ldaf_rx) that fills those
// Packets in C — Data as a slice header over the mbuf's bytes, the mbuf
// address as a plain uintptr in Handle — and returns their addresses in a C
// array; Go only converts each to *Packet. Tx and Free go the other way
// through a C array of ldaf_txd filled from Go.
//
// How it can break:
//   - The Packet lives in C memory, which the garbage collector does not
//     scan. Its Data must keep pointing into the mbuf (reslicing is fine);
//     pointing it at a Go buffer would hide that buffer from the GC. To send
//     Go-built bytes, copy them into Data.
//   - C writes a Go slice header (pointer, len, cap) and the other fields
//     through struct ldaf_gopkt, which must mirror dataplane.Packet's layout;
//     init panics at start if the Go struct changed shape or outgrew
//     LDAF_PRIV_SIZE.
//   - Packet.Data points into C memory owned by the mempool. Using it after
//     the packet was transmitted or freed reads a buffer DPDK may already
//     have reused for another frame (the Packet contract forbids it; the
//     race detector cannot see it).
//   - Handle and the ldaf_txd fields are uintptr_t on the C side too, so Go
//     never turns a uintptr back into a pointer (go vet's unsafeptr rule). A
//     Handle that is not an rte_mbuf* from one of our pools (a packet from a
//     non-DPDK port) is undefined behaviour in C: workers must not hand a
//     DPDK port such packets.
//   - The C arrays are sized MaxBurst at queue creation; every burst is cut
//     to Config.Burst so C never writes past them.
//   - The layout of ldaf_txd is shared with shim.h through cgo.

/*
#cgo pkg-config: libdpdk
#include "shim.h"
*/
import "C"

import (
	"sync/atomic"
	"unsafe"

	"github.com/ldafwd/ldafwd/dataplane"
)

// Queue is one rx/tx queue pair of a Port, the unit a worker owns. Its
// arrays are C memory allocated once, so a burst allocates nothing in Go
// and passes no Go pointer to C.
type Queue struct {
	port   *Port
	portID C.uint16_t
	q      C.uint16_t
	index  uint8
	burst  int
	pool   *C.struct_rte_mempool
	clk    *C.struct_ldaf_clock
	mbufs  **C.struct_rte_mbuf // [MaxBurst] scratch for the C helpers
	pktvC  *unsafe.Pointer     // [MaxBurst] Packet addresses from ldaf_rx/ldaf_alloc
	txdC   *C.struct_ldaf_txd  // [MaxBurst]
	pktv   []unsafe.Pointer    // Go view of pktvC
	txd    []C.struct_ldaf_txd // Go view of txdC
	pooled []*dataplane.Packet // scratch: accepted frames of dataplane pools, freed once per burst

	// Counted here, once per burst, rather than read from ethdev: not
	// every PMD counts bytes (net_null does not), and these are what
	// ldafwd handed over.
	rxPackets, rxBytes atomic.Uint64
	txPackets, txBytes atomic.Uint64
	_                  [64]byte // keep two queues' hot fields off one cache line
}

func init() {
	var p dataplane.Packet
	var g C.struct_ldaf_gopkt
	if unsafe.Sizeof(p) != unsafe.Sizeof(g) || unsafe.Sizeof(p) > C.LDAF_PRIV_SIZE ||
		unsafe.Offsetof(p.Data) != unsafe.Offsetof(g.data) ||
		unsafe.Offsetof(p.TS) != unsafe.Offsetof(g.ts) ||
		unsafe.Offsetof(p.Handle) != unsafe.Offsetof(g.handle) ||
		unsafe.Offsetof(p.Port) != unsafe.Offsetof(g.port) {
		panic("dpdk: dataplane.Packet no longer matches struct ldaf_gopkt in shim.h")
	}
}

func newQueue(p *Port, q uint16) *Queue {
	qq := &Queue{
		port: p, portID: C.uint16_t(p.id), q: C.uint16_t(q), index: p.cfg.Index,
		burst: p.cfg.Burst, pool: p.pool, clk: p.clk,
	}
	qq.mbufs = (**C.struct_rte_mbuf)(C.calloc(MaxBurst, C.size_t(unsafe.Sizeof((*C.struct_rte_mbuf)(nil)))))
	qq.pktvC = (*unsafe.Pointer)(C.calloc(MaxBurst, C.size_t(unsafe.Sizeof(unsafe.Pointer(nil)))))
	qq.txdC = (*C.struct_ldaf_txd)(C.calloc(MaxBurst, C.size_t(unsafe.Sizeof(C.struct_ldaf_txd{}))))
	qq.pktv = unsafe.Slice(qq.pktvC, MaxBurst)
	qq.txd = unsafe.Slice(qq.txdC, MaxBurst)
	qq.pooled = make([]*dataplane.Packet, 0, MaxBurst)
	return qq
}

func (q *Queue) free() {
	C.free(unsafe.Pointer(q.mbufs))
	C.free(unsafe.Pointer(q.pktvC))
	C.free(unsafe.Pointer(q.txdC))
	q.mbufs, q.pktvC, q.txdC, q.pktv, q.txd = nil, nil, nil, nil, nil
}

// Name is the port's spec.
func (q *Queue) Name() string { return q.port.name }

// Stats are the whole port's counters.
func (q *Queue) Stats() dataplane.Stats { return q.port.Stats() }

// Close does nothing: a queue lives as long as its Port; close the Port.
func (q *Queue) Close() error { return nil }

// RxBurst receives up to min(len(pkts), Config.Burst) frames in one cgo
// call and points pkts[i] at their Packets, which live in the mbufs' private
// areas; Data is the frame in place.
func (q *Queue) RxBurst(pkts []*dataplane.Packet) int {
	n := min(len(pkts), q.burst)
	if n == 0 || q.port.closed.Load() {
		return 0
	}
	nb := int(C.ldaf_rx(q.portID, q.q, q.mbufs, (*unsafe.Pointer)(q.pktvC), C.uint16_t(n), q.clk, C.uint8_t(q.index)))
	var bytes uint64
	for i, v := range q.pktv[:nb] {
		p := (*dataplane.Packet)(v)
		pkts[i] = p
		bytes += uint64(len(p.Data))
	}
	if nb > 0 {
		q.rxPackets.Add(uint64(nb))
		q.rxBytes.Add(bytes)
	}
	return nb
}

// TxBurst transmits up to min(len(pkts), Config.Burst) packets in one cgo
// call. Packets of any DPDK port of this process go out in their mbuf, its
// data offset and length following Data (a Data slice built outside its
// mbuf, in Go memory, is copied into it). Packets of a dataplane
// PacketPool (ring, pcap ports) are copied into fresh mbufs and given back
// to their pool. The packets not taken stay the caller's.
func (q *Queue) TxBurst(pkts []*dataplane.Packet) int {
	n := min(len(pkts), q.burst)
	if n == 0 || q.port.closed.Load() {
		return 0
	}
	var bytes uint64
	for i, p := range pkts[:n] {
		d := &q.txd[i]
		d.m = C.uintptr_t(p.Handle)
		if dataplane.IsPooled(p) {
			d.m = 0 // ldaf_tx copies it into a fresh mbuf
		}
		d.data = C.uintptr_t(uintptr(unsafe.Pointer(unsafe.SliceData(p.Data))))
		d.len = C.uint32_t(len(p.Data))
		bytes += uint64(len(p.Data))
	}
	nb := int(C.ldaf_tx(q.portID, q.q, q.mbufs, q.txdC, C.uint16_t(n), q.pool))
	if nb < n {
		bytes = 0
		for _, p := range pkts[:nb] {
			bytes += uint64(len(p.Data))
		}
	}
	q.pooled = q.pooled[:0]
	for i, d := range q.txd[:nb] {
		if d.m == 0 {
			q.pooled = append(q.pooled, pkts[i])
		}
	}
	if len(q.pooled) > 0 {
		dataplane.FreePooled(q.pooled)
	}
	if nb > 0 {
		q.txPackets.Add(uint64(nb))
		q.txBytes.Add(bytes)
	}
	return nb
}

// Alloc points pkts (up to Config.Burst, all or nothing) at the Packets of
// fresh mbufs whose Data spans the whole data room; reslice Data to the
// frame length and write the frame into it.
func (q *Queue) Alloc(pkts []*dataplane.Packet) int {
	n := min(len(pkts), q.burst)
	if n == 0 || q.port.closed.Load() {
		return 0
	}
	nb := int(C.ldaf_alloc(q.pool, q.mbufs, (*unsafe.Pointer)(q.pktvC), C.uint16_t(n), C.uint8_t(q.index)))
	for i, v := range q.pktv[:nb] {
		pkts[i] = (*dataplane.Packet)(v)
	}
	return nb
}

// Free returns packets to their mempool, Config.Burst per cgo call.
// After Close it does nothing (the pools are gone).
func (q *Queue) Free(pkts []*dataplane.Packet) {
	if q.port.closed.Load() {
		return
	}
	for len(pkts) > 0 {
		n := min(len(pkts), q.burst)
		for i, p := range pkts[:n] {
			q.txd[i].m = C.uintptr_t(p.Handle)
		}
		C.ldaf_free(q.mbufs, q.txdC, C.uint16_t(n))
		pkts = pkts[n:]
	}
}
