// shim.h holds the small C helpers the cgo files of package dpdk call. They
// exist so that Go makes ONE cgo call per burst: each helper does a whole
// burst (rx + descriptor fill, or length fix-up + tx) in C. Everything here is
// static inline: the package has no .c files, so a build without DPDK (no cgo
// files compiled) never sees this header.
#ifndef LDAFWD_DPDK_SHIM_H
#define LDAFWD_DPDK_SHIM_H

// rte_eth_read_clock and rte_thread_register are still "experimental" in
// 22.11 (stable for years in practice).
#define ALLOW_EXPERIMENTAL_API 1

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rte_common.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_lcore.h>
#include <rte_dev.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_mbuf_dyn.h>
#include <rte_mempool.h>
#include <rte_bus_vdev.h>

// ldaf_gopkt mirrors Go's dataplane.Packet (Data []byte as pointer, len,
// cap; TS; Handle; Port): every mbuf carries one in its private area, and
// the rx and alloc helpers fill it in C so that Go only collects pointers.
// burst_cgo.go checks at init that the layouts agree.
struct ldaf_gopkt {
	void *data;
	int64_t len;
	int64_t cap;
	uint64_t ts;       // ns since the Unix epoch
	uintptr_t handle;  // struct rte_mbuf *
	uint8_t port;
	uint8_t _pad[7];
};

// LDAF_PRIV_SIZE is the mbuf private area: room for one ldaf_gopkt, a
// multiple of RTE_MBUF_PRIV_ALIGN.
#define LDAF_PRIV_SIZE 64

static inline struct ldaf_gopkt *ldaf_fill(struct rte_mbuf *m, uint8_t port, uint64_t ts) {
	struct ldaf_gopkt *g = (struct ldaf_gopkt *)rte_mbuf_to_priv(m);
	g->data = rte_pktmbuf_mtod(m, void *);
	g->len = m->data_len;
	g->cap = m->buf_len - m->data_off;
	g->ts = ts;
	g->handle = (uintptr_t)m;
	g->port = port;
	return g;
}

// ldaf_clock converts NIC clock ticks into ns since the Unix epoch: a line
// through one (tick, realtime) pair measured at port start with the tick rate
// measured over a short interval. ts_off < 0 means software timestamps.
struct ldaf_clock {
	int ts_off;            // dynfield offset of the rx timestamp, -1 = none
	int soft;              // 1: stamp frames without a NIC stamp with CLOCK_REALTIME; 0: leave TS 0 for the consumer
	uint64_t ts_flag;      // ol_flags bit telling the field is valid
	uint64_t tick0;        // NIC clock at calibration
	uint64_t ns0;          // CLOCK_REALTIME at calibration, ns
	double ns_per_tick;
};

static inline uint64_t ldaf_realtime_ns(void) {
	struct timespec t;
	clock_gettime(CLOCK_REALTIME, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

// ldaf_thread_gen identifies the calling thread's current registration
// (RegisterThread): unique over the process's life, 0 on a thread not
// registered by us. ldaf_gen_last is the last one handed out. Both are
// defined once, in burst_cgo.go's preamble (every cgo file of the package
// includes this header).
extern __thread uint64_t ldaf_thread_gen;
extern uint64_t ldaf_gen_last;

// LDAF_MAX_BURST sizes a queue's arrays (dpdk.MaxBurst).
#define LDAF_MAX_BURST 512

// ldaf_queue is everything one rx/tx queue pair's burst helpers need, in
// one C allocation. Go passes its address as an integer, so a burst call
// has plain integer arguments and cgo has no pointer to check. The
// counters are written only by the worker's calls (aligned 64-bit stores)
// and read by Go's Stats with atomic loads.
struct ldaf_queue {
	uint16_t port;
	uint16_t queue;
	uint8_t index;     // dataplane.Packet.Port of our frames
	const struct ldaf_clock *clk;
	struct rte_mempool *pool;
	uint64_t rx_pkts, rx_bytes, tx_pkts, tx_bytes;
	uint32_t foreign;  // frames of the last ldaf_tx that were not ours (copied into fresh mbufs)
	uint32_t tx_stamp; // 1: read CLOCK_REALTIME around each tx burst the PMD took frames of
	uint64_t tx_ns;    // the midpoint of those readings, ns since the Unix epoch (dataplane.TxStamper)
	uint64_t tx_err;   // how far tx_ns may be off: half the gap between the readings

	// Receive-ahead (see ldaf_tx): the burst ldaf_tx received for the
	// next RxBurst. ahead[ahead_off : ahead_off+ahead_n] are Packet
	// addresses; ahead_bytes is their frame bytes. Written by C, consumed
	// by Go (RxBurst) on the same thread.
	uint32_t ahead_on;   // Config.NoRxAhead not set
	uint16_t rx_want;    // frames that RxBurst asked for last
	uint64_t rx_gen;     // ldaf_thread_gen of the last ldaf_rx caller (0: unregistered)
	uint32_t ahead_off, ahead_n;
	uint64_t ahead_bytes;

	// ldaf_fwd's results: frames the peer refused (their Packets in
	// pkts) and the bytes received.
	uint32_t fwd_kept;
	uint64_t fwd_bytes;

	// ldaf_measure's results (measure.h): 1 when it measured and
	// transmitted a prefix of the burst (fwd_kept frames of it refused,
	// then m_rest frames after it left unmeasured, their Packets in pkts),
	// 0 when it handed the whole burst back (its Packets in pkts); the
	// frames and bytes transmitted.
	uint32_t m_done;
	uint32_t m_sent;
	uint64_t m_sent_bytes;
	uint32_t m_rest;
	uint32_t m_polled;            // receiver: frames of the prefix given the poll stamp
	uint64_t m_poll_ts, m_poll_now; // that stamp and the clock reading it is the midpoint to
	uint64_t m_tx_err_sum, m_tx_err_max; // sender: Σ over the frames sent of their stamp error, and the widest
	uint64_t m_tx_now; // sender: CLOCK_REALTIME read right after the last transmit that took frames (0: none, or a test clock)

	// ldaf_measure_polls's full polls before its last one, each measured
	// and transmitted whole (the m_ fields above are the last poll's):
	// how many, their frames and bytes, the senders' stamp errors (Σ
	// over the frames, widest), the receivers' poll-stamped frames with
	// Σ and widest of their errors, and the last such poll's stamp and
	// clock reading (0: none).
	uint32_t p_polls, p_frames, p_polled;
	uint64_t p_bytes, p_tx_err_sum, p_tx_err_max, p_poll_err_sum, p_poll_err_max, p_poll_ts, p_poll_now;

	// A test clock for transmit stamps (tests only): when tx_fake_step is
	// not 0, every transmit stamp (tx_ns, ldaf_measure's) is tx_fake_ns
	// advanced by tx_fake_step instead of CLOCK_REALTIME.
	uint64_t tx_fake_ns, tx_fake_step;

	// Scratch arrays. `ldafwd run` with two cores receives on a queue in
	// one worker and transmits on it (and allocates End markers there) in
	// the other, at the same time, so the receiving side and the
	// transmitting side never share one: rx and ldaf_fwd use pkts and
	// ahead, tx and alloc use mbufs and allocp; free uses its own stack.
	void *pkts[LDAF_MAX_BURST];             // rx side: rx output (mbufs received, then their Packets), ldaf_fwd's burst and refused frames
	void *ahead[LDAF_MAX_BURST];            // rx side: receive-ahead Packet addresses
	struct rte_mbuf *mbufs[LDAF_MAX_BURST]; // tx side: the tx burst, alloc's mbufs
	void *allocp[LDAF_MAX_BURST];           // tx side: alloc's Packet addresses
};

// ldaf_rx_fill receives up to n frames into arr (as rte_mbuf pointers),
// fills each mbuf's Packet and rewrites arr[i] in place to the Packet's
// address. *bytes gets their frame bytes. One software timestamp per burst
// is taken right after the frames were handed over: every frame of the
// burst had arrived by then. Frames are single-segment (scatter rx is
// never enabled; the 2 KiB data room holds a 1518-byte frame). The
// per-frame loop has no branch on the timestamp source: the hardware
// stamp loop is separate.
static inline void ldaf_fill_burst(struct ldaf_queue *q, void **arr, uint16_t nb, uint64_t *bytes);

static inline uint16_t ldaf_rx_fill(struct ldaf_queue *q, void **arr, uint16_t n, uint64_t *bytes) {
	struct rte_mbuf **ms = (struct rte_mbuf **)arr;
	uint16_t nb = rte_eth_rx_burst(q->port, q->queue, ms, n);
	if (nb == 0)
		return 0;
	ldaf_fill_burst(q, arr, nb, bytes);
	return nb;
}

// ldaf_fill_burst is ldaf_rx_fill's fill of the nb mbufs just received
// into arr (rewritten in place to their Packets' addresses).
static inline void ldaf_fill_burst(struct ldaf_queue *q, void **arr, uint16_t nb, uint64_t *bytes) {
	struct rte_mbuf **ms = (struct rte_mbuf **)arr;
	const struct ldaf_clock *clk = q->clk;
	uint64_t sw = clk->soft ? ldaf_realtime_ns() : 0;
	uint64_t b = 0;
	uint8_t index = q->index;
	if (clk->ts_off < 0) {
		for (unsigned i = 0; i < nb; i++) {
			struct rte_mbuf *m = ms[i];
			struct ldaf_gopkt *g = (struct ldaf_gopkt *)(m + 1); // rte_mbuf_to_priv
			uint16_t off = m->data_off, len = m->data_len;
			g->data = (char *)m->buf_addr + off;
			g->len = len;
			g->cap = m->buf_len - off;
			g->ts = sw;
			g->handle = (uintptr_t)m;
			g->port = index;
			arr[i] = g;
			b += len;
		}
	} else {
		for (uint16_t i = 0; i < nb; i++) {
			struct rte_mbuf *m = ms[i];
			uint64_t ts = sw;
			if (m->ol_flags & clk->ts_flag) {
				uint64_t tick = *RTE_MBUF_DYNFIELD(m, clk->ts_off, uint64_t *);
				ts = clk->ns0 + (uint64_t)(int64_t)((double)(int64_t)(tick - clk->tick0) * clk->ns_per_tick);
			}
			b += m->data_len;
			arr[i] = ldaf_fill(m, index, ts);
		}
	}
	*bytes = b;
}

// ldaf_tx_now is the transmit stamp of a burst the PMD just took: CLOCK_REALTIME,
// or the test clock (tx_fake_step).
static inline uint64_t ldaf_tx_now(struct ldaf_queue *q) {
	if (unlikely(q->tx_fake_step != 0))
		return q->tx_fake_ns += q->tx_fake_step;
	return ldaf_realtime_ns();
}

// ldaf_rx receives up to n frames, fills each mbuf's Packet and puts its
// address in q->pkts. It notes the calling registration: ldaf_tx receives ahead
// only on the thread that receives. (Go's RxBurst hands over a
// receive-ahead burst itself, without calling C.)
static inline uint16_t ldaf_rx(uintptr_t qp, uint16_t n) {
	struct ldaf_queue *q = (struct ldaf_queue *)qp;
	q->rx_gen = ldaf_thread_gen;
	q->rx_want = n;
	uint64_t bytes;
	uint16_t nb = ldaf_rx_fill(q, q->pkts, n, &bytes);
	if (nb == 0)
		return 0;
	q->rx_pkts += nb;
	q->rx_bytes += bytes;
	return nb;
}

// ldaf_tx_slow readies the mbuf of a Packet that is not ours (a guard only:
// Go's TxBurst copies other ports' Packets into our mbufs first) or whose
// Data no longer matches its mbuf (out of line: the loop of ldaf_tx then
// keeps everything in registers). It returns the mbuf, NULL when no fresh
// one could be had for a foreign Packet.
static __attribute__((noinline, cold)) struct rte_mbuf *ldaf_tx_slow(struct ldaf_queue *q,
		const struct ldaf_gopkt *g, uint32_t *foreign) {
	struct rte_mbuf *m = (struct rte_mbuf *)g->handle;
	char *data = (char *)g->data;
	uint32_t len = (uint32_t)g->len;
	// A zero Handle fails the test too (g is never at address 128).
	if (g->handle + sizeof(struct rte_mbuf) != (uintptr_t)g) {
		m = rte_pktmbuf_alloc(q->pool);
		if (m == NULL)
			return NULL;
		(*foreign)++;
	}
	char *buf = (char *)m->buf_addr;
	if (data == buf + m->data_off) {
		// The frame still starts where rx put it.
	} else if (data >= buf && data + len <= buf + m->buf_len) {
		m->data_off = (uint16_t)(data - buf);
	} else {
		// The frame lives outside the mbuf (a Go buffer, a pooled
		// frame): copy it in after the headroom, cut to the data room.
		uint32_t room = m->buf_len - RTE_PKTMBUF_HEADROOM;
		if (len > room)
			len = room;
		memcpy(buf + RTE_PKTMBUF_HEADROOM, data, len);
		m->data_off = RTE_PKTMBUF_HEADROOM;
	}
	m->data_len = (uint16_t)len;
	m->pkt_len = len; // single segment already: nb_segs 1, next NULL (on the mbuf's 2nd cache line, left alone)
	return m;
}

// ldaf_tx transmits the n frames whose dataplane.Packet addresses are in
// txp: Go passes its []*Packet's backing array, which C only reads during
// this call (the Go heap does not move objects and the caller keeps the
// slice alive). Each Packet is read here rather than having Go copy its
// fields into a descriptor. A Packet is ours — it lives in the private
// area of the mbuf in its Handle — when Handle + sizeof(struct rte_mbuf)
// is its own address: pure arithmetic, nothing is dereferenced before that
// holds. Each of our mbufs gets its data offset and length from the
// Packet's Data (the worker may have moved the start or changed the
// length; Data built outside the mbuf is copied into it). Any other Packet
// (a PacketPool's, in Go memory) is copied into a fresh mbuf from the
// pool; q->foreign counts them so that Go looks for them only when there
// were some.
// It returns how many the PMD took; the rest still belong to the caller
// (the Port contract): their mbufs are untouched except for the lengths,
// and the fresh mbufs made for foreign frames among them are freed here.
//
// Receive-ahead: a bump in the wire on one worker transmits on a port
// right before it receives on that port (lane a→b sends on b, lane b→a
// then receives on b). So when the calling thread is the lcore that
// receives on this queue and nothing is waiting from the last time,
// ldaf_tx also receives the next burst into q->ahead, in this same cgo
// call, and Go's next RxBurst hands it over without calling C: one cgo
// call per lane per poll instead of two. "The thread that receives" is a
// registration (ldaf_thread_gen), not an lcore id or a thread: both are
// reused (an lcore id after unregistering, an OS thread by any goroutine
// once unlocked). Two workers sharing a queue (one receives, the other
// transmits: ldafwd run with two cores) therefore never meet here.
// ldaf_rx_ahead is the receive-ahead of ldaf_tx (see there), also run
// after ldaf_measure's transmit.
static inline void ldaf_rx_ahead(struct ldaf_queue *q) {
	if (q->ahead_on && q->ahead_n == 0 && q->rx_want != 0 &&
			q->rx_gen == ldaf_thread_gen && q->rx_gen != 0) {
		uint64_t b;
		uint16_t na = ldaf_rx_fill(q, q->ahead, q->rx_want, &b);
		q->ahead_off = 0;
		q->ahead_n = na;
		q->ahead_bytes = b;
	}
}

static inline uint16_t ldaf_tx(uintptr_t qp, uintptr_t txp, uint16_t n) {
	struct ldaf_queue *q = (struct ldaf_queue *)qp;
	const struct ldaf_gopkt *const *pk = (const struct ldaf_gopkt *const *)txp;
	uint64_t bytes = 0;
	uint32_t foreign = 0;
	unsigned k;
	for (k = 0; k < n; k++) {
		const struct ldaf_gopkt *g = pk[k];
		// The usual case: our Packet, Data still the frame rx put in the
		// mbuf (same start, same length).
		struct rte_mbuf *m = (struct rte_mbuf *)((uintptr_t)g - sizeof(struct rte_mbuf));
		if (unlikely(g->handle != (uintptr_t)m ||
				(char *)g->data != (char *)m->buf_addr + m->data_off ||
				(uint64_t)g->len != m->data_len)) {
			m = ldaf_tx_slow(q, g, &foreign);
			if (m == NULL)
				break;
		}
		bytes += m->data_len;
		q->mbufs[k] = m;
	}
	// The frames leave somewhere between the clock readings before and
	// after the PMD's call: a thread preempted there (a PMD whose tx is a
	// syscall, as net_af_packet's, is preempted on its return) would make
	// a single reading after it late by the stall. The midpoint errs by
	// half the gap at most, and tx_err says by how much.
	uint64_t t0 = k && q->tx_stamp && !q->tx_fake_step ? ldaf_realtime_ns() : 0;
	uint16_t nb = k ? rte_eth_tx_burst(q->port, q->queue, q->mbufs, k) : 0;
	if (nb && q->tx_stamp) {
		uint64_t t1 = ldaf_tx_now(q);
		if (t0 == 0 || t0 > t1)
			t0 = t1;
		q->tx_ns = t0 + (t1 - t0) / 2;
		q->tx_err = t1 - q->tx_ns;
	}
	if (unlikely(nb < k)) {
		for (uint16_t i = nb; i < k; i++) {
			struct rte_mbuf *m = q->mbufs[i];
			bytes -= m->data_len;
			if ((uintptr_t)m + sizeof(struct rte_mbuf) != (uintptr_t)pk[i]) {
				rte_pktmbuf_free(m);
				foreign--;
			}
		}
	}
	q->foreign = foreign;
	q->tx_pkts += nb;
	q->tx_bytes += bytes;
	ldaf_rx_ahead(q);
	return nb;
}

// ldaf_fwd receives up to n frames on queue rxp and transmits them on
// queue txp in the same call (dataplane.Forwarder): the frames stay
// rte_mbufs end to end, no Packet is written for them, only their lengths
// are read (for the byte counters). Frames txp refuses get their Packet
// filled (timestamp 0: a forwarding lane records nothing) and its address
// in rq->pkts, in order: they belong to the caller. Receive-ahead is off
// for the rx queue from here until the next RxBurst (a forwarding lane
// receives through this call only). Returns the frames received.
static inline uint16_t ldaf_fwd(uintptr_t rxp, uintptr_t txp, uint16_t n) {
	struct ldaf_queue *rq = (struct ldaf_queue *)rxp, *tq = (struct ldaf_queue *)txp;
	struct rte_mbuf **ms = (struct rte_mbuf **)rq->pkts; // rx side; refused ones become Packets in place
	rq->rx_gen = 0;
	rq->fwd_kept = 0;
	uint16_t nb = rte_eth_rx_burst(rq->port, rq->queue, ms, n);
	if (nb == 0)
		return 0;
	uint64_t b = 0;
	for (unsigned i = 0; i < nb; i++)
		b += ms[i]->data_len; // single segment: pkt_len == data_len
	rq->rx_pkts += nb;
	rq->rx_bytes += b;
	rq->fwd_bytes = b;
	uint16_t sent = rte_eth_tx_burst(tq->port, tq->queue, ms, nb);
	uint64_t tb = b;
	if (unlikely(sent < nb)) {
		uint8_t index = rq->index;
		for (unsigned i = sent; i < nb; i++) { // i - sent <= i: slot i was read before
			struct rte_mbuf *m = ms[i];
			tb -= m->data_len;
			rq->pkts[i - sent] = ldaf_fill(m, index, 0);
		}
		rq->fwd_kept = nb - sent;
	}
	tq->tx_pkts += sent;
	tq->tx_bytes += tb;
	return nb;
}

// ldaf_ahead_free frees a receive-ahead burst nobody took (Close).
static inline void ldaf_ahead_free(uintptr_t qp) {
	struct ldaf_queue *q = (struct ldaf_queue *)qp;
	for (uint32_t i = 0; i < q->ahead_n; i++)
		rte_pktmbuf_free((struct rte_mbuf *)((uintptr_t)q->ahead[q->ahead_off + i] - sizeof(struct rte_mbuf)));
	q->ahead_n = 0;
}

// ldaf_alloc takes n fresh mbufs from the pool, all or nothing, and fills
// their Packets with the whole data room as Data; addresses in q->allocp.
static inline int ldaf_alloc(uintptr_t qp, uint16_t n) {
	struct ldaf_queue *q = (struct ldaf_queue *)qp;
	if (rte_pktmbuf_alloc_bulk(q->pool, q->mbufs, n) != 0)
		return 0;
	for (uint16_t i = 0; i < n; i++) {
		struct ldaf_gopkt *g = ldaf_fill(q->mbufs[i], q->index, 0);
		g->len = g->cap;
		q->allocp[i] = g;
	}
	return n;
}

// ldaf_free frees the mbufs (their Handles) of the n Packets whose
// addresses are in pkts (a Go []*Packet's backing array, read during the
// call only).
static inline void ldaf_free(uintptr_t qp, uintptr_t pkts, uint16_t n) {
	(void)qp; // either side may free: no scratch of the queue's is used
	const struct ldaf_gopkt *const *pk = (const struct ldaf_gopkt *const *)pkts;
	struct rte_mbuf *ms[LDAF_MAX_BURST];
	for (uint16_t i = 0; i < n; i++)
		ms[i] = (struct rte_mbuf *)pk[i]->handle;
	rte_pktmbuf_free_bulk(ms, n);
}

// The wrappers below return -rte_errno on failure from the same C call:
// rte_errno is thread-local and a goroutine may change threads between two
// cgo calls, so Go must never read it in a second call.
static inline int ldaf_eal_init(int argc, char **argv) {
	int ret = rte_eal_init(argc, argv);
	return ret < 0 ? -rte_errno : ret;
}

static inline struct rte_mempool *ldaf_pool_create(const char *name, unsigned n, int socket, int *err) {
	struct rte_mempool *mp = rte_pktmbuf_pool_create(name, n, 256, LDAF_PRIV_SIZE,
			RTE_MBUF_DEFAULT_BUF_SIZE, socket);
	*err = mp == NULL ? rte_errno : 0;
	return mp;
}

static inline int ldaf_thread_register(void) {
	if (rte_thread_register() < 0)
		return -rte_errno;
	ldaf_thread_gen = __atomic_add_fetch(&ldaf_gen_last, 1, __ATOMIC_RELAXED);
	return (int)rte_lcore_id();
}

static inline void ldaf_thread_unregister(void) {
	ldaf_thread_gen = 0;
	rte_thread_unregister();
}

static inline int ldaf_link(uint16_t port, uint32_t *speed) {
	struct rte_eth_link l;
	int ret = rte_eth_link_get_nowait(port, &l);
	if (ret < 0)
		return ret;
	*speed = l.link_speed;
	return l.link_status;
}

static inline int ldaf_mac(uint16_t port, uint8_t *out) {
	struct rte_ether_addr a;
	int ret = rte_eth_macaddr_get(port, &a);
	if (ret == 0)
		memcpy(out, a.addr_bytes, 6);
	return ret;
}

// ldaf_port_setup configures and starts port with nq rx and tx queues, RSS
// over IP/TCP/UDP when nq > 1 and the rx timestamp offload when want_ts and
// the PMD offers it. *hw_ts tells whether it was enabled.
static inline int ldaf_port_setup(uint16_t port, uint16_t nq, uint16_t nb_rxd, uint16_t nb_txd,
		struct rte_mempool *pool, int want_ts, int *hw_ts) {
	struct rte_eth_dev_info info;
	struct rte_eth_conf conf;
	int ret;

	memset(&conf, 0, sizeof(conf));
	*hw_ts = 0;
	ret = rte_eth_dev_info_get(port, &info);
	if (ret != 0)
		return ret;
	if (nq > info.max_rx_queues || nq > info.max_tx_queues)
		return -EINVAL;
	// The fixed symmetric key (0x6d5a repeated) of dataplane.SteerQueue:
	// with it, a NIC's RSS and the software steering put a flow on the
	// same queue at both appliances (docs/protocol.md, "Several lanes").
	// A PMD whose key is not 40 bytes keeps its own (and the receiver's
	// steering check reports what differs).
	static uint8_t ldaf_rss_key[40];
	for (int i = 0; i < 40; i += 2) {
		ldaf_rss_key[i] = 0x6d;
		ldaf_rss_key[i + 1] = 0x5a;
	}
	if (nq > 1) {
		conf.rxmode.mq_mode = RTE_ETH_MQ_RX_RSS;
		if (info.hash_key_size == 0 || info.hash_key_size == 40) {
			conf.rx_adv_conf.rss_conf.rss_key = ldaf_rss_key;
			conf.rx_adv_conf.rss_conf.rss_key_len = 40;
		}
		conf.rx_adv_conf.rss_conf.rss_hf =
			(RTE_ETH_RSS_IP | RTE_ETH_RSS_TCP | RTE_ETH_RSS_UDP) & info.flow_type_rss_offloads;
		if (conf.rx_adv_conf.rss_conf.rss_hf == 0)
			conf.rxmode.mq_mode = RTE_ETH_MQ_RX_NONE;
	}
	if (want_ts && (info.rx_offload_capa & RTE_ETH_RX_OFFLOAD_TIMESTAMP)) {
		conf.rxmode.offloads |= RTE_ETH_RX_OFFLOAD_TIMESTAMP;
		*hw_ts = 1;
	}
	if (info.tx_offload_capa & RTE_ETH_TX_OFFLOAD_MBUF_FAST_FREE)
		conf.txmode.offloads |= RTE_ETH_TX_OFFLOAD_MBUF_FAST_FREE;
	ret = rte_eth_dev_configure(port, nq, nq, &conf);
	if (ret != 0)
		return ret;
	ret = rte_eth_dev_adjust_nb_rx_tx_desc(port, &nb_rxd, &nb_txd);
	if (ret != 0)
		return ret;
	int socket = rte_eth_dev_socket_id(port);
	if (socket < 0)
		socket = 0;
	for (uint16_t q = 0; q < nq; q++) {
		struct rte_eth_rxconf rxq = info.default_rxconf;
		rxq.offloads = conf.rxmode.offloads;
		ret = rte_eth_rx_queue_setup(port, q, nb_rxd, socket, &rxq, pool);
		if (ret != 0)
			return ret;
		struct rte_eth_txconf txq = info.default_txconf;
		txq.offloads = conf.txmode.offloads;
		ret = rte_eth_tx_queue_setup(port, q, nb_txd, socket, &txq);
		if (ret != 0)
			return ret;
	}
	ret = rte_eth_dev_start(port);
	if (ret != 0)
		return ret;
	// A bump in the wire forwards every frame whatever its destination MAC.
	// Virtual devices without the notion return -ENOTSUP; that is fine.
	rte_eth_promiscuous_enable(port);
	return 0;
}

// ldaf_calibrate measures the NIC clock against CLOCK_REALTIME over ~10 ms.
static inline int ldaf_calibrate(uint16_t port, struct ldaf_clock *clk) {
	uint64_t t0, t1, n0, n1;
	struct timespec d = {0, 10 * 1000 * 1000};
	if (rte_eth_read_clock(port, &t0) != 0)
		return -1;
	n0 = ldaf_realtime_ns();
	nanosleep(&d, NULL);
	if (rte_eth_read_clock(port, &t1) != 0)
		return -1;
	n1 = ldaf_realtime_ns();
	if (t1 <= t0)
		return -1;
	clk->tick0 = t1;
	clk->ns0 = n1;
	clk->ns_per_tick = (double)(n1 - n0) / (double)(t1 - t0);
	return 0;
}

// ldaf_vdev_uninit removes a vdev after its ethdev was closed; a device
// already gone is fine.
static inline int ldaf_vdev_uninit(const char *name) {
	return rte_vdev_uninit(name);
}

#endif
