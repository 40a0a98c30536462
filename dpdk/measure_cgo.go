//go:build dpdk

package dpdk

/*
#cgo pkg-config: libdpdk
#cgo CFLAGS: -O3
#include "measure.h"

static inline int ldaf_ident_go(uintptr_t f, uint32_t len, uint32_t room, uint64_t *hash) {
	return ldaf_ident((const uint8_t *)f, len, room, hash);
}

// ldaf_ident_many is the identity loop of ldaf_measure without the rest:
// passes times over n frames at base, one every stride bytes (an mbuf's
// data room), of lengths lens. It returns the XOR of the identities and
// counts the frames taken in *took (tests: TestInstrIdentMix).
static __attribute__((noinline)) uint64_t ldaf_ident_many(uintptr_t base, uint32_t stride, const uint16_t *lens,
		uint32_t n, uint32_t passes, uint64_t *took) {
	uint64_t x = 0, t = 0;
	for (uint32_t p = 0; p < passes; p++) {
		for (uint32_t i = 0; i < n; i++) {
			uint64_t h;
			if (ldaf_ident((const uint8_t *)base + (size_t)i * stride, lens[i], stride, &h))
				x ^= h, t++;
		}
	}
	*took = t;
	return x;
}

// ldaf_ident_flow_go is ldaf_ident_flow: the identity into *hash and the
// flow hash into *fh, its key packed into key, when it takes the frame.
static inline int ldaf_ident_flow_go(uintptr_t f, uint32_t len, uint32_t room, uint64_t *hash, uint64_t *fh,
		uint8_t *key) {
	struct ldaf_fkey k;
	int ok = ldaf_ident_flow((const uint8_t *)f, len, room, hash, &k, fh);
	if (ok && *fh != 0)
		ldaf_pack_key(&k, key);
	return ok;
}

// ldaf_flow_go is ldaf_flow of a frame ldaf_ident took, its key packed as
// ldaf_flow_observe packs it into key (40 bytes).
static inline uint64_t ldaf_flow_go(uintptr_t f, uint8_t *key) {
	struct ldaf_fkey k;
	uint64_t fh = ldaf_flow((const uint8_t *)f, &k);
	if (fh == 0)
		return 0;
	ldaf_pack_key(&k, key);
	return fh;
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

// fastPolls is how many polls SendMeasured makes in one call at most: it
// polls again while each burst comes full, is measured whole and goes
// whole (dataplane.FastResult.Before), so that the cgo call and the Go
// lane's bookkeeping, together about a tenth of a frame's cost at 32
// frames a burst, are paid once for up to fastPolls bursts. At 32 frames
// that is 256 frames, a few µs at line rate: the lane then sees its
// interval's end, or control frames to send, at most that much later. On
// the IMIX benchmark (docs/performance.md) 4 polls gave 8–10 % more rate
// than 1, 8 a little more; 16 lost on the default synopses, whose cache
// and sample must then have room for 16 bursts before C may record them.
const fastPolls = 8

// SendMeasured implements dataplane.MeasureFastPath for a peer that is a
// DPDK Port (its queue 0) or Queue of this process: one cgo call
// (ldaf_measure, measure.h) receives up to burst frames here, hashes each
// as classifier.ParseLevel does up to the first frame the Go lane must
// decide about, transmits those there and adds the frames the peer took
// to syn's LDA, RDA, LDS and sample with their transmit stamp (as LastTxNs reads
// it), or with stamp.On all of them with their receive stamp before
// transmitting; the rest of the burst comes back unmeasured.
// The LDA's cells, selector and count (synopsis.LDAHot: Go memory without
// Go pointers) go to C as integers for this call only, the other
// synopses' hot state in the queue's fastSyn (loadSyn, storeSyn);
// runtime.KeepAlive keeps the synopses alive to its end. ok is false for
// any other peer, when this queue's or the peer's burst is smaller than
// burst, while a receive-ahead burst waits here (RxBurst hands it over
// first), and for a burst C cannot record (loadSyn).
func (q *Queue) SendMeasured(to dataplane.Port, syn dataplane.FastSynopses, burst, retries int, stamp dataplane.RxStamp, pkts []*dataplane.Packet) (r dataplane.FastResult, ok bool) {
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
	lda := syn.LDA
	h := lda.Hot()
	if h.Cells == nil {
		return r, false // a zero-value LDA (ldaf_lda_add wants NewLDA's)
	}
	polls := q.polls
	if polls <= 0 {
		polls = fastPolls
	}
	var sy uintptr // the RDA and LDS state, for this call (fastSyn)
	if syn.RDA != nil || syn.LDS != nil || syn.Sample != nil {
		// Room for every poll's burst, or for one.
		if sy, ok = q.loadSyn(syn, polls*burst); !ok {
			polls = 1
			if sy, ok = q.loadSyn(syn, burst); !ok {
				return r, false
			}
		}
	}
	rx := int(C.ldaf_measure_polls(q.cu, tq.cu, C.uint16_t(burst), C.uint16_t(tq.burst), C.uint16_t(retries),
		C.uintptr_t(uintptr(h.Sel)), C.uintptr_t(uintptr(h.Cells)), C.uintptr_t(uintptr(h.Offered)), C.int(boolInt(h.Digest)), C.int(boolInt(stamp.On)), C.uint64_t(stamp.PollLow), C.uint64_t(stamp.PollStart),
		C.uintptr_t(sy), C.uint16_t(polls)))
	runtime.KeepAlive(lda)
	runtime.KeepAlive(syn.RDA)
	runtime.KeepAlive(syn.LDS)
	runtime.KeepAlive(syn.Sample)
	if sy != 0 {
		q.storeSyn(syn)
	}
	c := q.c
	if c.p_polls != 0 {
		r.Before = dataplane.FastPolls{Polls: int(c.p_polls), Frames: int(c.p_frames), Bytes: uint64(c.p_bytes),
			TxErrSum: uint64(c.p_tx_err_sum), TxErrMax: uint64(c.p_tx_err_max),
			Polled: int(c.p_polled), PollErrSum: uint64(c.p_poll_err_sum), PollErrMax: uint64(c.p_poll_err_max),
			PollTS: uint64(c.p_poll_ts), PollNow: uint64(c.p_poll_now)}
	}
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
	r.TxErrSum, r.TxErrMax, r.TxNow = uint64(c.m_tx_err_sum), uint64(c.m_tx_err_max), uint64(c.m_tx_now)
	copy(pkts[:r.Kept+r.Rest], q.pktv)
	return r, true
}

// fastSyn is struct ldaf_syn (measure.h): the RDA's, the LDS's and the
// trajectory sample's hot state (synopsis.RDAHot, LDSHot, SampleHot, all
// 64-bit words), copied in
// before a ldaf_measure call and back after it. It lives in the Queue, Go
// memory without Go pointers, so C may write it during the call.
type fastSyn struct {
	rda                            synopsis.RDAHot
	lds                            synopsis.LDSHot
	smp                            synopsis.SampleHot
	hasRDA, hasLDS, hasSmp, weight uint64
}

func init() {
	var f fastSyn
	var c C.struct_ldaf_syn
	if unsafe.Sizeof(f) != unsafe.Sizeof(c) || unsafe.Offsetof(f.lds) != unsafe.Offsetof(c.lds) ||
		unsafe.Offsetof(f.hasRDA) != unsafe.Offsetof(c.has_rda) || unsafe.Offsetof(f.weight) != unsafe.Offsetof(c.weight) ||
		unsafe.Offsetof(f.smp) != unsafe.Offsetof(c.smp) || unsafe.Offsetof(f.smp.ErrNs) != unsafe.Offsetof(c.smp.err_ns) ||
		unsafe.Offsetof(f.rda.LaterLost) != unsafe.Offsetof(c.rda.later_lost) || unsafe.Offsetof(f.lds.FRefused) != unsafe.Offsetof(c.lds.frefused) ||
		unsafe.Offsetof(f.lds.FHeld) != unsafe.Offsetof(c.lds.fheld) {
		panic("dpdk: synopsis.RDAHot, LDSHot or SampleHot no longer matches struct ldaf_syn in measure.h")
	}
}

// loadSyn fills q's fastSyn from syn for a burst of up to burst frames
// and returns its address; ok is false when C cannot record this burst:
// an LDS folded for estimation, or an RDA timestamp cache or a sample
// the burst could fill (raising their sampling levels is left to the Go
// lane).
func (q *Queue) loadSyn(syn dataplane.FastSynopses, burst int) (uintptr, bool) {
	f := &q.syn
	f.hasRDA, f.hasLDS, f.hasSmp, f.weight = 0, 0, 0, uint64(syn.Weight)
	if syn.Sample != nil {
		if !syn.Sample.SampleRoom(burst) {
			return 0, false
		}
		syn.Sample.LoadHot(&f.smp)
		f.hasSmp = 1
	}
	if syn.RDA != nil {
		if !syn.RDA.CacheRoom(burst) {
			return 0, false
		}
		syn.RDA.LoadHot(&f.rda)
		f.hasRDA = 1
	}
	if syn.LDS != nil {
		if !syn.LDS.LoadHot(&f.lds) {
			return 0, false
		}
		f.hasLDS = 1
	}
	return uintptr(unsafe.Pointer(f)), true
}

// storeSyn copies back what ldaf_measure changed in q's fastSyn.
func (q *Queue) storeSyn(syn dataplane.FastSynopses) {
	if syn.RDA != nil {
		syn.RDA.StoreHot(&q.syn.rda)
	}
	if syn.LDS != nil {
		syn.LDS.StoreHot(&q.syn.lds)
	}
	if syn.Sample != nil {
		syn.Sample.StoreHot(&q.syn.smp)
	}
}

// SendMeasured is queue 0's dataplane.MeasureFastPath (see Queue.SendMeasured).
func (p *Port) SendMeasured(to dataplane.Port, syn dataplane.FastSynopses, burst, retries int, rx dataplane.RxStamp, pkts []*dataplane.Packet) (dataplane.FastResult, bool) {
	return p.queues[0].SendMeasured(to, syn, burst, retries, rx, pkts)
}

// cIdent is ldaf_ident on frame (tests: FuzzIdentC) with identSlack bytes
// readable past it, as in an mbuf's data room.
func cIdent(frame []byte) (hash uint64, ok bool) { return cIdentRoom(frame, identSlack) }

// setStampEach makes receiver lanes' fast path stamp each frame through
// ldaf_rx_ts even on ports that stamp none (the path of ports with
// hardware stamps), and says whether it did before (tests).
func setStampEach(on bool) (was bool) {
	return C.ldaf_set_stamp_each(C.int(boolInt(on))) != 0
}

// cIdentMany is ldaf_ident over frames, passes times, each frame at the
// start of a 2 KiB slot as in an mbuf: the XOR of the identities of the
// frames it took, and how many it took (tests: TestInstrIdentMix).
func cIdentMany(frames [][]byte, passes int) (x uint64, took uint64) {
	const stride = 2048
	buf := make([]byte, len(frames)*stride+1)
	lens := make([]uint16, len(frames)+1)
	for i, f := range frames {
		copy(buf[i*stride:(i+1)*stride], f)
		lens[i] = uint16(min(len(f), stride))
	}
	var t C.uint64_t
	r := C.ldaf_ident_many(C.uintptr_t(uintptr(unsafe.Pointer(&buf[0]))), stride, (*C.uint16_t)(unsafe.Pointer(&lens[0])),
		C.uint32_t(len(frames)), C.uint32_t(passes), &t)
	runtime.KeepAlive(buf)
	runtime.KeepAlive(lens)
	return uint64(r), uint64(t)
}

// identSlack is the room past a frame cIdent gives ldaf_ident: more than
// its straight-line path reads.
const identSlack = 128

// cIdentRoom is ldaf_ident on a copy of frame followed by slack bytes of
// 0xff, which it may read: bytes that are not the frame's, all ones, the
// worst for a mask that misses one.
func cIdentRoom(frame []byte, slack int) (hash uint64, ok bool) {
	buf := make([]byte, len(frame)+slack)
	copy(buf, frame)
	for i := len(frame); i < len(buf); i++ {
		buf[i] = 0xff
	}
	var h C.uint64_t
	var f uintptr
	if len(buf) > 0 {
		f = uintptr(unsafe.Pointer(&buf[0]))
	}
	ok = C.ldaf_ident_go(C.uintptr_t(f), C.uint32_t(len(frame)), C.uint32_t(len(buf)), &h) != 0
	runtime.KeepAlive(buf)
	return uint64(h), ok
}

// cFlow is ldaf_flow on a frame cIdent took (tests: FuzzIdentC): the
// flow hash and the key as the flow table stores it.
func cFlow(frame []byte) (fh uint64, key synopsis.FlowKeyBytes) {
	var k [40]C.uint8_t
	fh = uint64(C.ldaf_flow_go(C.uintptr_t(uintptr(unsafe.Pointer(&frame[0]))), &k[0]))
	runtime.KeepAlive(frame)
	for i := range key {
		key[i] = byte(k[i])
	}
	return fh, key
}

// cIdentFlow is ldaf_ident_flow on a copy of frame followed by slack bytes
// of 0xff (as cIdentRoom): the identity, whether it takes the frame, and
// the flow hash and key the measuring loop records with it.
func cIdentFlow(frame []byte, slack int) (hash uint64, ok bool, fh uint64, key synopsis.FlowKeyBytes) {
	buf := make([]byte, len(frame)+slack)
	copy(buf, frame)
	for i := len(frame); i < len(buf); i++ {
		buf[i] = 0xff
	}
	var h, f C.uint64_t
	var k [40]C.uint8_t
	var p uintptr
	if len(buf) > 0 {
		p = uintptr(unsafe.Pointer(&buf[0]))
	}
	ok = C.ldaf_ident_flow_go(C.uintptr_t(p), C.uint32_t(len(frame)), C.uint32_t(len(buf)), &h, &f, &k[0]) != 0
	runtime.KeepAlive(buf)
	if ok && f != 0 {
		for i := range key {
			key[i] = byte(k[i])
		}
	}
	return uint64(h), ok, uint64(f), key
}

// fakeTxClock makes the queue's transmit stamps start+step, start+2·step, …
// (tests: the same stamps for the Go and the C path).
func (q *Queue) fakeTxClock(start, step uint64) {
	q.c.tx_fake_ns, q.c.tx_fake_step = C.uint64_t(start), C.uint64_t(step)
	q.c.tx_stamp = 1
}
