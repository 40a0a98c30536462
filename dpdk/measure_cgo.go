//go:build dpdk

package dpdk

/*
#cgo pkg-config: libdpdk
#cgo CFLAGS: -O3
#include "measure.h"

static inline int ldaf_ident_go(uintptr_t f, uint32_t len, uint64_t *hash) {
	return ldaf_ident((const uint8_t *)f, len, hash);
}
*/
import "C"

import (
	"runtime"
	"unsafe"

	"github.com/ldafwd/ldafwd/dataplane"
	"github.com/ldafwd/ldafwd/synopsis"
)

// ldaf_lda_add indexes the selector by the leading zeros of h|1, which
// needs every bank's SampleLog2 below 64.
const _ = uint(63 - synopsis.LDAMaxSampleLog2)

// SendMeasured implements dataplane.MeasureFastPath for a peer that is a
// DPDK Port (its queue 0) or Queue of this process: one cgo call
// (ldaf_measure, measure.h) receives up to burst frames here, hashes each
// as classifier.ParseLevel does up to the first frame the Go lane must
// decide about, transmits those there and adds the frames the peer took
// to lda with their transmit stamp (as LastTxNs reads it), or with stamp.On
// all of them with their receive stamp before transmitting; the rest of
// the burst comes back unmeasured.
// The LDA's cells, selector and count (synopsis.LDAHot: Go memory without
// Go pointers) go to C as integers for this call only; runtime.KeepAlive
// keeps lda alive to its end. ok is false for any other peer, when this
// queue's or the peer's burst is smaller than burst, and while a
// receive-ahead burst waits here (RxBurst hands it over first).
func (q *Queue) SendMeasured(to dataplane.Port, lda *synopsis.LDA, burst, retries int, stamp dataplane.RxStamp, pkts []*dataplane.Packet) (r dataplane.FastResult, ok bool) {
	var tq *Queue
	switch t := to.(type) {
	case *Port:
		tq = t.queues[0]
	case *Queue:
		tq = t
	default:
		return r, false
	}
	if q.c.ahead_n != 0 {
		q.c.rx_gen = 0 // as ForwardTo: no more receiving ahead here
		return r, false
	}
	if burst > q.burst || burst > len(pkts) || q.port.closed.Load() || tq.port.closed.Load() {
		return r, false
	}
	h := lda.Hot()
	if h.Cells == nil {
		return r, false // a zero-value LDA (ldaf_lda_add wants NewLDA's)
	}
	rx := int(C.ldaf_measure(q.cu, tq.cu, C.uint16_t(burst), C.uint16_t(tq.burst), C.uint16_t(retries),
		C.uintptr_t(uintptr(h.Sel)), C.uintptr_t(uintptr(h.Cells)), C.uintptr_t(uintptr(h.Offered)), C.int(boolInt(h.Digest)), C.int(boolInt(stamp.On)), C.uint64_t(stamp.PollLow), C.uint64_t(stamp.PollStart)))
	runtime.KeepAlive(lda)
	c := q.c
	r.Rx = rx
	if rx == 0 {
		return r, true
	}
	if c.m_done == 0 {
		copy(pkts[:rx], q.pktv[:rx])
		return r, true
	}
	r.Done = true
	r.RxBytes = uint64(c.fwd_bytes)
	r.Sent, r.SentBytes = int(c.m_sent), uint64(c.m_sent_bytes)
	r.Kept, r.Rest = int(c.fwd_kept), int(c.m_rest)
	if c.m_polled != 0 {
		r.Polled, r.PollTS, r.PollNow = int(c.m_polled), uint64(c.m_poll_ts), uint64(c.m_poll_now)
	}
	copy(pkts[:r.Kept+r.Rest], q.pktv)
	return r, true
}

// SendMeasured is queue 0's dataplane.MeasureFastPath (see Queue.SendMeasured).
func (p *Port) SendMeasured(to dataplane.Port, lda *synopsis.LDA, burst, retries int, rx dataplane.RxStamp, pkts []*dataplane.Packet) (dataplane.FastResult, bool) {
	return p.queues[0].SendMeasured(to, lda, burst, retries, rx, pkts)
}

// cIdent is ldaf_ident on frame (tests: FuzzIdentC).
func cIdent(frame []byte) (hash uint64, ok bool) {
	var h C.uint64_t
	var f uintptr
	if len(frame) > 0 {
		f = uintptr(unsafe.Pointer(&frame[0]))
	}
	ok = C.ldaf_ident_go(C.uintptr_t(f), C.uint32_t(len(frame)), &h) != 0
	runtime.KeepAlive(frame)
	return uint64(h), ok
}

// fakeTxClock makes the queue's transmit stamps start+step, start+2·step, …
// (tests: the same stamps for the Go and the C path).
func (q *Queue) fakeTxClock(start, step uint64) {
	q.c.tx_fake_ns, q.c.tx_fake_step = C.uint64_t(start), C.uint64_t(step)
	q.c.tx_stamp = 1
}
