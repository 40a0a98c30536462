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
// array, which Go copies into the caller's slice. Tx and Free go the other
// way: Go passes the address of the caller's []*Packet backing array and C
// reads the Packets from it. A TxBurst may also receive the queue's next
// burst ahead (into another C array, handed over by the next RxBurst
// without a cgo call); ForwardTo moves a whole burst from one queue to
// another in C and fills Packets only for frames the peer refused.
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
//   - Handle and the slice address are uintptr_t on the C side too, so Go
//     never turns a uintptr back into a pointer (go vet's unsafeptr rule).
//     The []*Packet backing array C reads (tx, free) is Go memory, but
//     every address in the part C reads is of one of our Packets, in C
//     memory: Go memory holding no Go pointers, which cgo's rules let C
//     read during the call (passed as an integer only because vet's
//     static check cannot know the *Packet values point into C memory).
//     runtime.KeepAlive keeps the array alive to the end of the call. C
//     never writes Go memory: Packet addresses coming out of C are copied
//     into Go slices by Go (copy, with the write barrier), never stored
//     there by C. TxBurst checks every Packet is ours before the call
//     (address arithmetic, ours) and copies any other port's Packet (a
//     PacketPool's, in Go memory) into a fresh mbuf in Go first
//     (txForeign), so C never reads Go memory that holds Go pointers.
//     Free must get only our Packets (a Handle that is not an rte_mbuf* of
//     our pools is undefined behaviour in C).
//   - The C arrays are sized MaxBurst at queue creation; every burst is cut
//     to Config.Burst so C never writes past them.
//   - The layout of ldaf_queue is shared with shim.h through
//     cgo. The queue's packet/byte counters are written by C on the
//     worker's thread (aligned 64-bit stores, single writer; handAhead's Go
//     stores on the same thread) and read by Stats with atomic loads:
//     never torn on amd64/arm64, invisible to the race detector.
//   - Receive-ahead state (ahead_*, rx_gen, rx_want) is touched only by
//     the registration that receives on the queue: C receives ahead only
//     when the transmitting thread's ldaf_thread_gen (C TLS, unique per
//     RegisterThread) is the one that last called ldaf_rx. Two workers on
//     one queue (one receiving, one transmitting) thus never share it.
//   - The burst helpers get the ldaf_queue address as an integer (cgo then
//     checks no pointer argument, which cost ~2 % of a burst); the memory
//     is C's and never moves, so the integer stays valid until Close.

/*
#cgo pkg-config: libdpdk
#cgo CFLAGS: -O3
#include "shim.h"

__thread uint64_t ldaf_thread_gen;
uint64_t ldaf_gen_last;
*/
import "C"

import (
	"runtime"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/ldafwd/ldafwd/dataplane"
)

// Queue is one rx/tx queue pair of a Port, the unit a worker owns. Its
// arrays and counters are one C struct (ldaf_queue) allocated once, so a
// burst allocates nothing in Go, passes no pointer to C (the struct's
// address goes as an integer) and updates no Go atomics.
type Queue struct {
	port   *Port
	c      *C.struct_ldaf_queue
	cu     C.uintptr_t // c as an integer, the burst helpers' argument
	burst  int
	pktv   []*dataplane.Packet // Go view of c.pkts (Packets in C memory; rx side)
	ahead  []*dataplane.Packet // Go view of c.ahead (rx side)
	allocv []*dataplane.Packet // Go view of c.allocp (tx side)
	pooled []*dataplane.Packet // scratch: accepted frames of dataplane pools, freed once per burst
	txCopy []*dataplane.Packet // scratch: txForeign's burst of our Packets
	one    [1]*dataplane.Packet
	syn    fastSyn  // the RDA and LDS state C records in (SendMeasured)
	polls  int      // SendMeasured's polls a call at most (0: fastPolls; tests set 1)
	_      [64]byte // keep two queues' hot fields off one cache line
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
	c := (*C.struct_ldaf_queue)(C.calloc(1, C.size_t(unsafe.Sizeof(C.struct_ldaf_queue{}))))
	c.port, c.queue, c.index = C.uint16_t(p.id), C.uint16_t(q), C.uint8_t(p.cfg.Index)
	c.clk, c.pool = p.clk, p.pool
	c.ahead_on = C.uint32_t(boolInt(!p.cfg.NoRxAhead))
	return &Queue{
		port: p, c: c, cu: C.uintptr_t(uintptr(unsafe.Pointer(c))), burst: p.cfg.Burst,
		pktv:   unsafe.Slice((**dataplane.Packet)(unsafe.Pointer(&c.pkts[0])), MaxBurst),
		ahead:  unsafe.Slice((**dataplane.Packet)(unsafe.Pointer(&c.ahead[0])), MaxBurst),
		allocv: unsafe.Slice((**dataplane.Packet)(unsafe.Pointer(&c.allocp[0])), MaxBurst),
		pooled: make([]*dataplane.Packet, 0, MaxBurst),
		txCopy: make([]*dataplane.Packet, MaxBurst),
	}
}

// free gives back a receive-ahead burst nobody took and the queue's C
// memory (Close, after the port stopped).
func (q *Queue) free() {
	C.ldaf_ahead_free(q.cu)
	C.free(unsafe.Pointer(q.c))
	q.c, q.cu, q.pktv, q.ahead, q.allocv = nil, 0, nil, nil, nil
}

// counters reads the queue's packet and byte counters, which the C burst
// helpers of the worker's thread write with plain aligned 64-bit stores.
func (q *Queue) counters() (rxp, rxb, txp, txb uint64) {
	return atomic.LoadUint64((*uint64)(unsafe.Pointer(&q.c.rx_pkts))),
		atomic.LoadUint64((*uint64)(unsafe.Pointer(&q.c.rx_bytes))),
		atomic.LoadUint64((*uint64)(unsafe.Pointer(&q.c.tx_pkts))),
		atomic.LoadUint64((*uint64)(unsafe.Pointer(&q.c.tx_bytes)))
}

// Name is the port's spec.
func (q *Queue) Name() string { return q.port.name }

// Stats are the whole port's counters.
func (q *Queue) Stats() dataplane.Stats { return q.port.Stats() }

// Close does nothing: a queue lives as long as its Port; close the Port.
func (q *Queue) Close() error { return nil }

// RxBurst receives up to min(len(pkts), Config.Burst) frames and points
// pkts[i] at their Packets, which live in the mbufs' private areas; Data
// is the frame in place. Frames the last TxBurst on this queue received
// ahead (see ldaf_tx) are handed over first, without a cgo call;
// otherwise it is one cgo call (ldaf_rx).
func (q *Queue) RxBurst(pkts []*dataplane.Packet) int {
	n := min(len(pkts), q.burst)
	if n == 0 || q.port.closed.Load() {
		return 0
	}
	c := q.c
	c.rx_want = C.uint16_t(n)
	if an := int(c.ahead_n); an > 0 {
		return q.handAhead(pkts[:n], an)
	}
	nb := int(C.ldaf_rx(q.cu, C.uint16_t(n)))
	// copy, not a loop of stores: one bulk write barrier, then memmove.
	return copy(pkts[:nb], q.pktv[:nb])
}

// handAhead hands over up to len(pkts) of the an frames received ahead,
// counting them in the port's rx counters as they leave (the counters
// say what RxBurst handed over, whichever call received it).
func (q *Queue) handAhead(pkts []*dataplane.Packet, an int) int {
	c := q.c
	off := int(c.ahead_off)
	k := copy(pkts, q.ahead[off:off+an])
	var bytes uint64
	if k == an {
		bytes = uint64(c.ahead_bytes)
		c.ahead_off, c.ahead_n = 0, 0
	} else {
		for _, p := range pkts[:k] {
			bytes += uint64(len(p.Data))
		}
		c.ahead_off, c.ahead_n = C.uint32_t(off+k), C.uint32_t(an-k)
		c.ahead_bytes -= C.uint64_t(bytes)
	}
	// Single writer (this thread); Stats reads with atomic loads.
	atomic.StoreUint64((*uint64)(unsafe.Pointer(&c.rx_pkts)), uint64(c.rx_pkts)+uint64(k))
	atomic.StoreUint64((*uint64)(unsafe.Pointer(&c.rx_bytes)), uint64(c.rx_bytes)+bytes)
	return k
}

// TxBurst transmits up to min(len(pkts), Config.Burst) packets in one cgo
// call. Packets of any DPDK port of this process go out in their mbuf, its
// data offset and length following Data (a Data slice built outside its
// mbuf, in Go memory, is copied into it). Packets of a dataplane
// PacketPool (ring, pcap ports) are copied into fresh mbufs and given back
// to their pool. The packets not taken stay the caller's.
//
// C reads the Packet addresses straight out of pkts' backing array and
// each Packet's Handle and Data itself (see ldaf_tx); Go only checks that
// every Packet is ours (a compare per frame). The same call may receive
// the next burst of this queue ahead (see RxBurst).
func (q *Queue) TxBurst(pkts []*dataplane.Packet) int {
	n := min(len(pkts), q.burst)
	if n == 0 || q.port.closed.Load() {
		return 0
	}
	for _, p := range pkts[:n] {
		if !q.ours(p) {
			return q.txForeign(pkts[:n])
		}
	}
	nb := int(C.ldaf_tx(q.cu, C.uintptr_t(uintptr(unsafe.Pointer(&pkts[0]))), C.uint16_t(n)))
	runtime.KeepAlive(pkts)
	return nb
}

// txForeign is TxBurst for a burst holding Packets that are not ours (a
// dataplane PacketPool's, in Go memory). C may not read Go memory that
// holds Go pointers (cgo's pointer-passing rules), so Go copies each such
// frame into a fresh mbuf first and hands C a burst of our Packets only;
// the originals of frames the port took go back to their pool, the
// copies of frames it refused back to ours. Off the hot path: `ldafwd run`
// never mixes port kinds.
func (q *Queue) txForeign(pkts []*dataplane.Packet) int {
	n := len(pkts)
	tx := q.txCopy[:n]
	for i, p := range pkts {
		tx[i] = p
		if q.ours(p) {
			continue
		}
		if q.Alloc(q.one[:]) != 1 {
			n = i // no mbuf: send what is ready, the rest stays the caller's
			break
		}
		c := q.one[0]
		c.Data = c.Data[:copy(c.Data, p.Data)]
		c.TS = p.TS
		tx[i] = c
	}
	nb := 0
	if n > 0 {
		nb = int(C.ldaf_tx(q.cu, C.uintptr_t(uintptr(unsafe.Pointer(&tx[0]))), C.uint16_t(n)))
		runtime.KeepAlive(tx)
	}
	q.pooled = q.pooled[:0]
	for i, p := range pkts[:n] {
		if q.ours(p) {
			continue
		}
		if i < nb {
			q.pooled = append(q.pooled, p) // sent as a copy
		} else {
			q.one[0] = tx[i]
			q.Free(q.one[:]) // the copy of a refused frame
		}
	}
	dataplane.FreePooled(q.pooled)
	clear(tx)
	return nb
}

// ForwardTo implements dataplane.Forwarder for a peer that is a DPDK
// Port (its queue 0) or Queue of this process: one cgo call (ldaf_fwd)
// receives up to min(len(kept), both queues' Config.Burst) frames here
// and transmits them there, with no per-frame Go work. Frames the peer
// refused are kept[:k]. The rx and tx counters of both ports count as
// RxBurst and TxBurst would. ok is false for any other peer, and while a
// receive-ahead burst waits here (RxBurst hands it over first, in order;
// receive-ahead stays off on this queue until an RxBurst calls C again).
func (q *Queue) ForwardTo(to dataplane.Port, kept []*dataplane.Packet) (rx int, rxBytes uint64, k int, ok bool) {
	var tq *Queue
	switch t := to.(type) {
	case *Port:
		tq = t.queues[0]
	case *Queue:
		tq = t
	default:
		return 0, 0, 0, false
	}
	if q.c.ahead_n != 0 {
		// No more receiving ahead here: the caller's RxBurst takes this
		// burst from Go, and the next ForwardTo goes through.
		q.c.rx_gen = 0
		return 0, 0, 0, false
	}
	n := min(len(kept), q.burst, tq.burst)
	if n == 0 || q.port.closed.Load() || tq.port.closed.Load() {
		return 0, 0, 0, true
	}
	rx = int(C.ldaf_fwd(q.cu, tq.cu, C.uint16_t(n)))
	if rx == 0 {
		return 0, 0, 0, true
	}
	k = copy(kept[:q.c.fwd_kept], q.pktv)
	return rx, uint64(q.c.fwd_bytes), k, true
}

// LastTxNs implements dataplane.TxStamper: the midpoint of CLOCK_REALTIME
// read in the same cgo call right before and right after
// rte_eth_tx_burst took frames (LastTxErrNs is half their gap), so a
// sender lane records its frames with the hand-over time without a cgo
// return between the clock and the burst. The reads cost a burst ~40 ns,
// so they are turned on by the first call (a lane asks only in the sender
// role); that first call returns the Go clock's reading now (within one
// cgo return of the burst it follows).
func (q *Queue) LastTxNs() uint64 {
	if q.c.tx_stamp == 0 {
		q.c.tx_stamp = 1
		q.c.tx_err = 0
		return uint64(time.Now().UnixNano())
	}
	return uint64(q.c.tx_ns)
}

// LastTxErrNs implements dataplane.TxStampErr: how far LastTxNs may be
// from the time the PMD took the burst.
func (q *Queue) LastTxErrNs() uint64 { return uint64(q.c.tx_err) }

// ours is ldaf_tx's test: the Packet lives in the private area right
// after the rte_mbuf in its Handle.
func (q *Queue) ours(p *dataplane.Packet) bool {
	return p.Handle != 0 && p.Handle+mbufSize == uintptr(unsafe.Pointer(p))
}

// mbufSize is sizeof(struct rte_mbuf): the private area follows it.
const mbufSize = uintptr(C.sizeof_struct_rte_mbuf)

// Alloc points pkts (up to Config.Burst, all or nothing) at the Packets of
// fresh mbufs whose Data spans the whole data room; reslice Data to the
// frame length and write the frame into it.
func (q *Queue) Alloc(pkts []*dataplane.Packet) int {
	n := min(len(pkts), q.burst)
	if n == 0 || q.port.closed.Load() {
		return 0
	}
	nb := int(C.ldaf_alloc(q.cu, C.uint16_t(n)))
	return copy(pkts[:nb], q.allocv[:nb])
}

// Free returns packets to their mempool, Config.Burst per cgo call.
// After Close it does nothing (the pools are gone).
func (q *Queue) Free(pkts []*dataplane.Packet) {
	if q.port.closed.Load() {
		return
	}
	for len(pkts) > 0 {
		n := min(len(pkts), q.burst)
		C.ldaf_free(q.cu, C.uintptr_t(uintptr(unsafe.Pointer(&pkts[0]))), C.uint16_t(n))
		runtime.KeepAlive(pkts)
		pkts = pkts[n:]
	}
}
