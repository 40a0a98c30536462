// measure.h is the measuring fast path of a sender lane on DPDK ports
// (dataplane.SenderFastPath): one call receives a burst, computes each
// frame's identity hash exactly as package classifier's fast paths do,
// transmits the burst and adds the frames the PMD took to the lane's LDA
// (synopsis.LDAHot) with their transmit stamp, so the frames never become
// Go Packets. Anything it does not reproduce exactly it hands back whole
// to the Go lane, before measuring or transmitting any of it.
#ifndef LDAFWD_DPDK_MEASURE_H
#define LDAFWD_DPDK_MEASURE_H

#include "shim.h"

// XXH64 primes (classifier/parse.go).
#define LDAF_P1 11400714785074694791ull
#define LDAF_P2 14029467366897019727ull
#define LDAF_P3 1609587929392839161ull
#define LDAF_P4 9650029242287828579ull

static inline uint64_t ldaf_rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }
static inline uint64_t ldaf_le64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return v; }
static inline uint16_t ldaf_le16(const uint8_t *p) { uint16_t v; memcpy(&v, p, 2); return v; }
static inline uint16_t ldaf_be16(const uint8_t *p) { return (uint16_t)((uint16_t)p[0] << 8 | p[1]); }
static inline uint64_t ldaf_round(uint64_t acc, uint64_t in) { return ldaf_rotl(acc + in * LDAF_P2, 31) * LDAF_P1; }
static inline uint64_t ldaf_merge(uint64_t h, uint64_t v) { return (h ^ ldaf_round(0, v)) * LDAF_P1 + LDAF_P4; }

static inline uint64_t ldaf_fold(uint64_t v1, uint64_t v2, uint64_t v3, uint64_t v4) {
	uint64_t h = ldaf_rotl(v1, 1) + ldaf_rotl(v2, 7) + ldaf_rotl(v3, 12) + ldaf_rotl(v4, 18);
	h = ldaf_merge(h, v1);
	h = ldaf_merge(h, v2);
	h = ldaf_merge(h, v3);
	return ldaf_merge(h, v4);
}

static inline uint64_t ldaf_tail(uint64_t h, uint64_t w) { return ldaf_rotl(h ^ ldaf_round(0, w), 27) * LDAF_P1 + LDAF_P4; }

static inline uint64_t ldaf_avalanche(uint64_t h) {
	h ^= h >> 33;
	h *= LDAF_P2;
	h ^= h >> 29;
	h *= LDAF_P3;
	return h ^ h >> 32;
}

// XXH64 (seed 0) of 6, 10 (word 5 zero) and 8 little-endian words: sum64v4,
// sum64v6, sum64v8 of classifier/parse.go.
#define LDAF_V1 6983438078262162902ull // prime1 + prime2
#define LDAF_V4 7046029288634856825ull // -prime1

static inline uint64_t ldaf_sum_v4(uint64_t w0, uint64_t w1, uint64_t w2, uint64_t w3, uint64_t w4, uint64_t w5) {
	uint64_t h = ldaf_fold(ldaf_round(LDAF_V1, w0), ldaf_round(LDAF_P2, w1), ldaf_round(0, w2), ldaf_round(LDAF_V4, w3));
	h += 6 * 8;
	h = ldaf_tail(h, w4);
	h = ldaf_tail(h, w5);
	return ldaf_avalanche(h);
}

static inline uint64_t ldaf_sum_v6(uint64_t w0, uint64_t w1, uint64_t w2, uint64_t w3, uint64_t w4,
		uint64_t l0, uint64_t l1, uint64_t l2, uint64_t l3) {
	uint64_t h = ldaf_fold(ldaf_round(ldaf_round(LDAF_V1, w0), w4), ldaf_round(ldaf_round(LDAF_P2, w1), 0),
		ldaf_round(ldaf_round(0, w2), l0), ldaf_round(ldaf_round(LDAF_V4, w3), l1));
	h += 10 * 8;
	h = ldaf_tail(h, l2);
	h = ldaf_tail(h, l3);
	return ldaf_avalanche(h);
}

static inline uint64_t ldaf_sum_v8(uint64_t w0, uint64_t w1, uint64_t w2, uint64_t w3,
		uint64_t w4, uint64_t w5, uint64_t w6, uint64_t w7) {
	uint64_t h = ldaf_fold(ldaf_round(ldaf_round(LDAF_V1, w0), w4), ldaf_round(ldaf_round(LDAF_P2, w1), w5),
		ldaf_round(ldaf_round(0, w2), w6), ldaf_round(ldaf_round(LDAF_V4, w3), w7));
	h += 8 * 8;
	return ldaf_avalanche(h);
}

// Masks zeroing L4 checksums (classifier/parse.go).
#define LDAF_MASK_TCP_CSUM 0xffffffffffff0000ull
#define LDAF_MASK_TCP_SYN  0x00000000ffff0000ull
#define LDAF_MASK_UDP_CSUM 0x0000ffffffffffffull

// ldaf_word_part is the k < 8 bytes at b as a little-endian word.
static __attribute__((noinline)) uint64_t ldaf_word_part(const uint8_t *b, uint32_t k) {
	uint64_t v = 0;
	while (k > 0) {
		k--;
		v = v << 8 | b[k];
	}
	return v;
}

// ldaf_word is the 8 bytes of b at o as a little-endian word, bytes at n
// and beyond zero (the raw layout's zero fill), never reading b[n] or
// beyond. (A zeroed buffer with a memcpy of n bytes cost the loop a third
// more instructions.)
static inline __attribute__((always_inline)) uint64_t ldaf_word(const uint8_t *b, uint32_t n, uint32_t o) {
	if (likely(o + 8 <= n))
		return ldaf_le64(b + o);
	if (o >= n)
		return 0;
	return ldaf_word_part(b + o, n - o);
}

// ldaf_mac_linklocal is classifier's macLinkLocal.
static inline int ldaf_mac_linklocal(const uint8_t *f) {
	uint64_t d = (uint64_t)f[0] << 40 | (uint64_t)f[1] << 32 | (uint64_t)f[2] << 24 |
		(uint64_t)f[3] << 16 | (uint64_t)f[4] << 8 | f[5];
	return (d & ~0xfull) == 0x0180C2000000ull || (d & ~1ull) == 0x01000CCCCCCCull;
}

// ldaf_tunnel_port: the UDP destination port in the L4 window's first
// word (big-endian on the wire) is VXLAN's (4789) or Geneve's (6081).
// The Go parser reads through those tunnels to the inner packet
// (classifier/tunnel.go); this loop leaves such frames to the Go lane
// rather than repeat that walk, as it leaves GRE (never protocol 6 or 17)
// and MPLS.
static inline int ldaf_tunnel_port(uint64_t w0) {
	uint16_t d = (uint16_t)(w0 >> 16);
	return d == 0xB512 || d == 0xC117;
}

// LDAF_MIN_FAST_LEN is classifier.MinFastLen (14 + 40 + the 32-byte L4 window).
#define LDAF_MIN_FAST_LEN 86

// ldaf_ident returns 1 and the identity hash (classifier.Meta.Hash) of a
// frame that classifier's fast paths take (ParseFastOnly) and that a
// sender lane records as it is: no flag among truncated, malformed,
// control and link-local. Every other frame gets 0: the Go lane decides
// about it. It reads only f[0:len].
static inline __attribute__((always_inline)) int ldaf_ident(const uint8_t *f, uint32_t len, uint64_t *hash) {
	if (len >= LDAF_MIN_FAST_LEN) {
		uint16_t et = ldaf_be16(f + 12);
		if (et == 0x0800) {
			const uint8_t *h = f + 14;
			uint64_t x = ldaf_le64(h);
			uint32_t total = (uint32_t)(x >> 24 & 0xff) | (uint32_t)(x >> 8 & 0xff00);
			uint8_t proto = h[9];
			if ((x & 0xff) != 0x45 || (x >> 48 & 0xff3f) != 0 || total < 20 + 32 || total > len - 14 ||
					(proto != 6 && proto != 17))
				return 0;
			const uint8_t *l4 = h + 20;
			uint64_t w0 = ldaf_le64(l4), w1 = ldaf_le64(l4 + 8), w2 = ldaf_le64(l4 + 16), w3 = ldaf_le64(l4 + 24);
			if (proto == 17) {
				if (unlikely(ldaf_tunnel_port(w0)))
					return 0;
				w0 &= LDAF_MASK_UDP_CSUM;
			} else if (l4[13] & 0x02) {
				w2 &= LDAF_MASK_TCP_SYN;
				w3 = 0;
			} else {
				w2 &= LDAF_MASK_TCP_CSUM;
			}
			uint64_t addrs = ldaf_le64(h + 12);
			if (unlikely(f[0] & 1)) {
				uint32_t dst = __builtin_bswap32((uint32_t)(addrs >> 32));
				if (ldaf_mac_linklocal(f) || dst >> 8 == 0xE00000 || dst == 0xFFFFFFFFu)
					return 0;
			}
			*hash = ldaf_sum_v4((x & ~0xffffull) | (uint64_t)proto << 8 | 4, addrs, w0, w1, w2, w3);
			return 1;
		}
		if (et == 0x86DD) {
			const uint8_t *h = f + 14;
			uint64_t x = ldaf_le64(h);
			uint32_t declared = 40 + ((uint32_t)(x >> 40 & 0xff) | (uint32_t)(x >> 24 & 0xff00));
			uint8_t nh = (uint8_t)(x >> 48);
			if ((x & 0xf0) != 0x60 || declared < 40 + 32 || declared > len - 14 || (nh != 6 && nh != 17))
				return 0;
			const uint8_t *l4 = h + 40;
			uint64_t w0 = ldaf_le64(l4), w1 = ldaf_le64(l4 + 8), w2 = ldaf_le64(l4 + 16), w3 = ldaf_le64(l4 + 24);
			if (nh == 17) {
				if (unlikely(ldaf_tunnel_port(w0)))
					return 0;
				w0 &= LDAF_MASK_UDP_CSUM;
			} else if (l4[13] & 0x02) {
				w2 &= LDAF_MASK_TCP_SYN;
				w3 = 0;
			} else {
				w2 &= LDAF_MASK_TCP_CSUM;
			}
			uint64_t a0 = ldaf_le64(h + 8), a1 = ldaf_le64(h + 16), a2 = ldaf_le64(h + 24), a3 = ldaf_le64(h + 32);
			if (unlikely(f[0] & 1)) {
				uint16_t first = __builtin_bswap16((uint16_t)a2);
				if (ldaf_mac_linklocal(f) || (first & 0xFF0F) == 0xFF02)
					return 0;
			}
			*hash = ldaf_sum_v6(6 | (uint64_t)nh << 8 | (x >> 32 & 0xffff) << 16 | (x >> 8 & 0x0f) << 32 |
				(x >> 16 & 0xffff) << 40, a0, a1, a2, a3, w0, w1, w2, w3);
			return 1;
		}
	} else if (len < 14) {
		return 0;
	}
	// classifier's parseRaw: an untagged frame that is neither IPv4 nor IPv6.
	uint16_t et = ldaf_be16(f + 12);
	uint32_t n = len - 14;
	if (et <= 1500) {
		if (et < n)
			n = et;
	} else {
		switch (et) {
		case 0x0800: case 0x86DD: case 0x8100: case 0x88A8: case 0x9100: // the general path's
		case 0x8847: case 0x8848: // MPLS: the Go path reads through it (classifier/tunnel.go)
		case 0x0806: case 0x8808: case 0x8809: case 0x888E: case 0x88CC: // link-local EtherTypes
		case 0x88B5: // control
			return 0;
		}
	}
	if (unlikely(f[0] & 1) && ldaf_mac_linklocal(f))
		return 0;
	uint64_t w0 = (uint64_t)ldaf_le16(f + 12) << 8;
	const uint8_t *b = f + 14;
	// The first n bytes, zero-filled (ldaf_word).
	*hash = ldaf_sum_v8(w0, ldaf_word(b, n, 0), ldaf_word(b, n, 8), ldaf_word(b, n, 16), ldaf_word(b, n, 24),
		ldaf_word(b, n, 32), ldaf_word(b, n, 40), ldaf_word(b, n, 48));
	return 1;
}

// synopsis.LDA's selector entry and bucket (synopsis.LDAHot).
struct ldaf_ldasel {
	uint32_t off, mask;
};
struct ldaf_ldacell {
	uint64_t sum, count, dig;
};

#define LDAF_DIGEST_MUL 0x9e3779b97f4a7c15ull

// ldaf_lda_add is synopsis.LDA.Add of the n frames' hashes hs, all at ts,
// except the offered count, which the caller adds once. The LDA is one
// NewLDA made (SendMeasured checks it has cells), so every selector entry
// names a bank (mask != 0). The selector index is the leading zeros of
// h | 1: 63 for h == 0 instead of 64, the same entry, as every bank
// samples at most 2^-48 (synopsis.LDAMaxSampleLog2), so entries 48..64
// are alike; the row still comes from h.
static inline void ldaf_lda_add(const struct ldaf_ldasel *sel, struct ldaf_ldacell *cells, int digest,
		const uint64_t *hs, unsigned n, uint64_t ts) {
	if (digest) {
		for (unsigned i = 0; i < n; i++) {
			uint64_t h = hs[i];
			struct ldaf_ldasel s = sel[__builtin_clzll(h | 1)];
			struct ldaf_ldacell *c = &cells[s.off + ((uint32_t)h & s.mask)];
			uint64_t x = h * LDAF_DIGEST_MUL;
			c->sum += ts;
			c->count++;
			c->dig += x ^ x >> 32;
		}
		return;
	}
	for (unsigned i = 0; i < n; i++) {
		uint64_t h = hs[i];
		struct ldaf_ldasel s = sel[__builtin_clzll(h | 1)];
		struct ldaf_ldacell *c = &cells[s.off + ((uint32_t)h & s.mask)];
		c->sum += ts;
		c->count++;
	}
}

// ldaf_measure is a sender lane's poll with an empty tx buffer
// (dataplane.SenderFastPath): it receives up to n frames on rxp. Unless
// all n came and every one is a frame ldaf_ident takes, it hands the
// burst back: fills its Packets into rq->pkts (as ldaf_rx does), sets
// m_done 0 and returns the count; the Go lane then takes it as from
// RxBurst. Otherwise it transmits the burst on txp as the lane's flush
// would: up to retries tx bursts of at most tburst frames, stopping at
// one that takes nothing, and after each that takes frames, stamps them
// (ldaf_tx_now, as TxStamper's LastTxNs) and adds them to the LDA whose
// selector, cells and offered count are sel, cells and offered (Go
// memory without Go pointers, written during this call only). Frames
// never taken get their Packets in rq->pkts, fwd_kept of them, for the Go
// lane's tx buffer. m_sent and m_sent_bytes say what went. Returns the
// frames received.
static inline uint16_t ldaf_measure(uintptr_t rxp, uintptr_t txp, uint16_t n, uint16_t tburst, uint16_t retries,
		uintptr_t sel, uintptr_t cells, uintptr_t offered, int digest) {
	struct ldaf_queue *rq = (struct ldaf_queue *)rxp, *tq = (struct ldaf_queue *)txp;
	struct rte_mbuf **ms = (struct rte_mbuf **)rq->pkts;
	uint64_t hs[LDAF_MAX_BURST];
	uint16_t lens[LDAF_MAX_BURST]; // read before the transmit: a transmitted mbuf is the PMD's
	rq->rx_gen = 0; // no receive-ahead here: this lane receives through this call
	rq->fwd_kept = 0;
	rq->m_sent = 0;
	rq->m_sent_bytes = 0;
	rq->m_done = 0;
	uint16_t nb = rte_eth_rx_burst(rq->port, rq->queue, ms, n);
	if (nb == 0)
		return 0;
	uint64_t b = 0;
	int all = nb == n;
	if (all) {
		for (unsigned i = 0; i < nb; i++) {
			struct rte_mbuf *m = ms[i];
			uint16_t len = m->data_len;
			lens[i] = len;
			b += len;
			if (unlikely(!ldaf_ident(rte_pktmbuf_mtod(m, const uint8_t *), len, &hs[i]))) {
				all = 0;
				break;
			}
		}
	}
	if (!all) {
		uint64_t fb;
		ldaf_fill_burst(rq, rq->pkts, nb, &fb);
		rq->rx_pkts += nb;
		rq->rx_bytes += fb;
		return nb;
	}
	rq->rx_pkts += nb;
	rq->rx_bytes += b;
	rq->fwd_bytes = b;
	rq->m_done = 1;
	const struct ldaf_ldasel *sl = (const struct ldaf_ldasel *)sel;
	struct ldaf_ldacell *cl = (struct ldaf_ldacell *)cells;
	unsigned sent = 0;
	uint64_t sb = 0;
	for (unsigned try = 0; try < retries && sent < nb; try++) {
		uint16_t chunk = nb - sent < tburst ? nb - sent : tburst;
		uint16_t k = rte_eth_tx_burst(tq->port, tq->queue, ms + sent, chunk);
		if (k == 0)
			break;
		uint64_t ts = ldaf_tx_now(tq);
		tq->tx_ns = ts;
		ldaf_lda_add(sl, cl, digest, hs + sent, k, ts);
		sent += k;
	}
	if (sent == nb) {
		sb = b;
	} else {
		for (unsigned i = 0; i < sent; i++)
			sb += lens[i];
	}
	*(uint64_t *)offered += sent;
	if (unlikely(sent < nb)) {
		uint8_t index = rq->index;
		for (unsigned i = sent; i < nb; i++) // i - sent <= i: slot i was read before
			rq->pkts[i - sent] = ldaf_fill(ms[i], index, 0);
		rq->fwd_kept = nb - sent;
	}
	rq->m_sent = sent;
	rq->m_sent_bytes = sb;
	tq->tx_pkts += sent;
	tq->tx_bytes += sb;
	ldaf_rx_ahead(tq);
	return nb;
}

#endif
