// measure.h is the measuring fast path of a sender lane on DPDK ports
// (dataplane.SenderFastPath): one call receives a burst, computes each
// frame's identity hash exactly as package classifier's parser does,
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
// word (big-endian on the wire) is VXLAN's (4789) or Geneve's (6081), a
// tunnel the identity reads through (classifier/tunnel.go, ldaf_tunnel).
static inline int ldaf_tunnel_port(uint64_t w0) {
	uint16_t d = (uint16_t)(w0 >> 16);
	return d == 0xB512 || d == 0xC117;
}

// LDAF_FAST_READ is how many bytes past the link-layer header ldaf_ident's
// straight-line IP path reads, whatever the frame's length: an IPv6 header
// and a whole 32-byte L4 window. It takes a frame only when that many
// bytes are readable (room: an mbuf's data room) and masks off the bytes
// past the IP length (ldaf_keep_bytes), so frames of any length take it,
// 60-byte ones included; other frames take ldaf_ident_general.
#define LDAF_FAST_READ (40 + 32)

// ldaf_keep_bytes: from 32 − n, the 32-byte mask keeping a window's first
// n bytes (ldaf_window_fast).
static const uint8_t ldaf_keep_bytes[64] __attribute__((aligned(64))) = {
	0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
	0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
};

// ldaf_linklocal_et is classifier's linkLocalEtherType.
static inline int ldaf_linklocal_et(uint16_t et) {
	return et == 0x0806 || et == 0x8808 || et == 0x8809 || et == 0x888E || et == 0x88CC;
}

// ldaf_icmpv6_linklocal is classifier's linkLocalICMPv6 (MLD, NDP,
// inverse ND, SEND, multicast router discovery).
static inline int ldaf_icmpv6_linklocal(uint16_t t) {
	const uint32_t set = 1u << 2 | 1u << 3 | 1u << 4 | 1u << 5 | 1u << 6 | 1u << 7 | 1u << 8 | 1u << 9 |
		1u << 13 | 1u << 14 | 1u << 15 | 1u << 20 | 1u << 21 | 1u << 23 | 1u << 24 | 1u << 25;
	return t >= 128 && t < 160 && (set >> (t - 128) & 1);
}

// ldaf_window is gatherL4 of classifier/parse.go: the L4 window of the n
// bytes at l4 that the IP length bounds (missing bytes zero) into w, the
// checksum of proto zeroed; frag: a non-first fragment, whose window is
// payload as it is. It returns 0 for a UDP datagram to the VXLAN or
// Geneve port, whose identity reads through to the inner packet
// (ldaf_tunnel), leaving its checksum to the caller (LDAF_MASK_UDP_CSUM
// on w[0]: the straight-line paths hand such frames on without it), and 1
// for every other.
static inline __attribute__((always_inline)) int ldaf_window(const uint8_t *l4, uint32_t n, uint8_t proto, int frag,
		uint64_t w[4]) {
	if (likely(n >= 32)) {
		w[0] = ldaf_le64(l4), w[1] = ldaf_le64(l4 + 8), w[2] = ldaf_le64(l4 + 16), w[3] = ldaf_le64(l4 + 24);
	} else {
		w[0] = ldaf_word(l4, n, 0), w[1] = ldaf_word(l4, n, 8), w[2] = ldaf_word(l4, n, 16), w[3] = ldaf_word(l4, n, 24);
	}
	if (frag)
		return 1;
	switch (proto) {
	case 6:
		if (n > 20 && (l4[13] & 0x02)) {
			w[2] &= LDAF_MASK_TCP_SYN;
			w[3] = 0;
		} else {
			w[2] &= LDAF_MASK_TCP_CSUM;
		}
		break;
	case 17:
		if (n >= 4 && ldaf_tunnel_port(w[0]))
			return 0;
		// fall through
	case 136: // UDP-Lite
		w[0] &= LDAF_MASK_UDP_CSUM;
		break;
	case 132: // SCTP
		w[1] &= 0xffffffff00000000ull;
		break;
	case 1: case 58: // ICMP, ICMPv6
		w[0] &= 0xffffffff0000ffffull;
		break;
	}
	return 1;
}

// ldaf_window_fast is ldaf_window for ldaf_ident's straight-line path: a
// TCP or UDP window of the n bytes at l4 that the IP length bounds, where
// 32 bytes are readable whatever n is. Whole words are read and the bytes
// from n on masked to zero, without a branch on n: on IMIX traffic most
// frames are 60 bytes, whose windows are shorter than 32. (The checksum
// masks by TCP, UDP and SYN cost 20 instructions more in bit operations
// than their branches mispredict.)
static inline __attribute__((always_inline)) int ldaf_window_fast(const uint8_t *l4, uint32_t n, uint8_t proto,
		uint64_t w[4]) {
	// min(n, 32): short and whole windows come in no order a predictor
	// learns, so a cmov, not a branch (half the mispredictions a frame on
	// IMIX, by callgrind's branch simulation).
	uint32_t c = __builtin_expect_with_probability(n < 32, 1, 0.5) ? n : 32;
	const uint8_t *k = ldaf_keep_bytes + 32 - c;
	w[0] = ldaf_le64(l4) & ldaf_le64(k), w[1] = ldaf_le64(l4 + 8) & ldaf_le64(k + 8);
	w[2] = ldaf_le64(l4 + 16) & ldaf_le64(k + 16), w[3] = ldaf_le64(l4 + 24) & ldaf_le64(k + 24);
	if (proto == 6) {
		if ((w[1] >> 40 & 0x02) && n > 20) { // SYN (l4[13])
			w[2] &= LDAF_MASK_TCP_SYN;
			w[3] = 0;
		} else {
			w[2] &= LDAF_MASK_TCP_CSUM;
		}
		return 1;
	}
	if (n >= 4 && ldaf_tunnel_port(w[0]))
		return 0;
	w[0] &= LDAF_MASK_UDP_CSUM;
	return 1;
}

// Tunnels: classifier/tunnel.go's tunnelHash, byte for byte. A frame
// whose outer packet is GRE (IP protocol 47, not a later fragment), UDP to
// the VXLAN or Geneve port, or MPLS gets the identity
// XXH64(7 | enc<<8, outer identity (0 for MPLS), inner identity, 0, 0, 0)
// when the walk below reaches a whole inner IPv4 or IPv6 header; when it
// does not, the outer identity stays. The walk trusts no length it has
// not checked against n, the bytes the outer packet holds.
#define LDAF_ENC_GRE 1
#define LDAF_ENC_VXLAN 2
#define LDAF_ENC_GENEVE 3
#define LDAF_ENC_MPLS 4
#define LDAF_MAX_MPLS 8 // classifier's maxMPLSLabels
#define LDAF_TAG_TUNNEL 7

// ldaf_ext_header is classifier's isExtHeader (IPv6).
static inline int ldaf_ext_header(uint8_t nh) {
	switch (nh) {
	case 0: case 43: case 44: case 51: case 60: case 135: case 139: case 140:
		return 1;
	}
	return 0;
}

// ldaf_tunnel_inner is tunnelHash's second half: the plain identity of
// the inner packet p[0:n] of EtherType iet (parseIPv4 or parseIPv6
// there), combined with the outer one in *hash, which it replaces. It
// returns 1, keeping the outer identity when the inner header is not a
// whole, well-formed IP header, or 0 for inner IPv6 extension headers,
// whose walk this leaves to the Go lane (as for an outer packet).
static inline int ldaf_tunnel_inner(int enc, const uint8_t *p, uint32_t n, uint16_t iet, uint64_t *hash) {
	uint64_t w[4], inner;
	if (iet == 0x0800) {
		if (n < 20 || (p[0] >> 4) != 4)
			return 1;
		uint32_t ihl = (uint32_t)(p[0] & 0x0f) * 4, total = ldaf_be16(p + 2);
		if (ihl < 20 || total < ihl)
			return 1; // malformed
		uint32_t end = total < n ? total : n;
		uint8_t proto = p[9];
		if (ihl > end) // options cut off: no window
			w[0] = w[1] = w[2] = w[3] = 0;
		else if (!ldaf_window(p + ihl, end - ihl, proto, (ldaf_be16(p + 6) & 0x1fff) != 0, w))
			w[0] &= LDAF_MASK_UDP_CSUM; // a tunnel inside the tunnel: not followed
		inner = ldaf_sum_v4((ldaf_le64(p) & ~0xffffull) | (uint64_t)proto << 8 | 4, ldaf_le64(p + 12),
			w[0], w[1], w[2], w[3]);
	} else {
		if (n < 40 || (p[0] >> 4) != 6)
			return 1;
		uint8_t nh = p[6];
		if (ldaf_ext_header(nh))
			return 0;
		uint32_t declared = 40 + (uint32_t)ldaf_be16(p + 4), end = declared < n ? declared : n;
		if (!ldaf_window(p + 40, end - 40, nh, 0, w))
			w[0] &= LDAF_MASK_UDP_CSUM; // a tunnel inside the tunnel: not followed
		uint64_t x = ldaf_le64(p);
		inner = ldaf_sum_v6(6 | (uint64_t)nh << 8 | (x >> 32 & 0xffff) << 16 | (x >> 8 & 0x0f) << 32 |
			(x >> 16 & 0xffff) << 40, ldaf_le64(p + 8), ldaf_le64(p + 16), ldaf_le64(p + 24), ldaf_le64(p + 32),
			w[0], w[1], w[2], w[3]);
	}
	uint64_t outer = enc == LDAF_ENC_MPLS ? 0 : *hash; // MPLS: labels and their TTL change at every hop
	*hash = ldaf_sum_v4(LDAF_TAG_TUNNEL | (uint64_t)enc << 8, outer, inner, 0, 0, 0);
	return 1;
}

// ldaf_tunnel is tunnelHash with InnerL3's walk: b[0:n] is the outer
// packet's L4 bytes (bounded by its IP length) for IP protocol proto
// (47, or 17 to the VXLAN or Geneve port), or for an MPLS EtherType et
// the bytes after the L2 header. A UDP length shorter than n bounds the
// walk through the tunnel headers, not the inner packet's bytes (as in
// tunnelHash, which hashes the inner packet to n). *hash holds the outer
// identity (for MPLS, anything: it does not count) and becomes the
// tunneled one when the walk reads through. It returns 1, or 0 to leave
// the frame to the Go lane. Not inlined: tunneled frames are the
// minority, and the common paths should not carry its code.
static __attribute__((noinline)) int ldaf_tunnel(uint16_t et, uint8_t proto, const uint8_t *b, uint32_t n,
		uint64_t *hash) {
	uint32_t hl, off, nip = n; // nip: the inner packet's bytes end with the outer packet's, not the UDP length
	uint16_t pt;
	int enc;
	if (et == 0x8847 || et == 0x8848) { // mplsInner
		off = 0;
		for (int k = 0;; k++) {
			if (k == LDAF_MAX_MPLS || off + 4 > n)
				return 1;
			int bos = b[off + 2] & 1;
			off += 4;
			if (bos)
				break;
		}
		if (off >= n)
			return 1;
		switch (b[off] >> 4) {
		case 4:
			return ldaf_tunnel_inner(LDAF_ENC_MPLS, b + off, n - off, 0x0800, hash);
		case 6:
			return ldaf_tunnel_inner(LDAF_ENC_MPLS, b + off, n - off, 0x86DD, hash);
		}
		return 1; // a pseudowire's control word or Ethernet
	}
	if (proto == 47) { // greInner: version 0, no routing or reserved bits
		if (n < 4)
			return 1;
		uint16_t fl = ldaf_be16(b);
		if (fl & 0x4fff)
			return 1;
		hl = 4 + 4 * ((fl >> 15 & 1) + (fl >> 13 & 1) + (fl >> 12 & 1)); // checksum, key, sequence
		if (n < hl)
			return 1;
		enc = LDAF_ENC_GRE;
		pt = ldaf_be16(b + 2);
	} else { // UDP to the VXLAN or Geneve port
		if (n < 8)
			return 1;
		uint32_t ul = ldaf_be16(b + 4);
		if (ul < 8)
			return 1;
		if (ul < n)
			n = ul; // the UDP length bounds the tunnel headers too
		if (n < 16)
			return 1;
		if (ldaf_be16(b + 2) == 4789) { // vxlanInner: the I flag
			if (!(b[8] & 0x08))
				return 1;
			enc = LDAF_ENC_VXLAN;
			hl = 16;
			pt = 0x6558;
		} else { // geneveInner: version 0, options
			if (b[8] >> 6)
				return 1;
			hl = 16 + (uint32_t)(b[8] & 0x3f) * 4;
			if (n < hl)
				return 1;
			enc = LDAF_ENC_GENEVE;
			pt = ldaf_be16(b + 10);
		}
	}
	// payloadInner: IPv4 or IPv6, or an Ethernet frame with up to 8 tags.
	if (pt == 0x0800 || pt == 0x86DD) {
		if (hl >= n)
			return 1;
		off = hl;
	} else if (pt == 0x6558) {
		off = hl + 12;
		for (int tags = 0;; tags++) {
			if (off + 2 >= n)
				return 1;
			pt = ldaf_be16(b + off);
			if (pt == 0x0800 || pt == 0x86DD) {
				off += 2;
				break;
			}
			if ((pt != 0x8100 && pt != 0x88A8 && pt != 0x9100) || tags == 8)
				return 1;
			off += 4;
		}
	} else {
		return 1;
	}
	return ldaf_tunnel_inner(enc, b + off, nip - off, pt, hash);
}

// ldaf_ident_raw is ldaf_ident of a frame that is not IP: classifier's
// raw layout (gatherRaw), the EtherType et after the tags and the first
// 56 bytes from off (past it), zero-filled; or for MPLS the tunneled
// identity when ldaf_tunnel reads through the label stack. Never a TPID,
// IPv4 or IPv6.
static inline __attribute__((always_inline)) int ldaf_ident_raw(const uint8_t *f, uint32_t len, uint32_t off,
		uint16_t et, uint64_t *hash) {
	uint32_t n = len - off;
	int mpls = 0;
	if (et <= 1500) {
		if (et < n)
			n = et; // an IEEE 802.3 length: the rest is padding
	} else if (et == 0x88B5 || ldaf_linklocal_et(et)) {
		return 0; // control, link-local
	} else if (unlikely(et == 0x8847 || et == 0x8848)) {
		mpls = 1;
	}
	if (unlikely(f[0] & 1) && ldaf_mac_linklocal(f))
		return 0;
	const uint8_t *b = f + off;
	*hash = ldaf_sum_v8((uint64_t)ldaf_le16(f + off - 2) << 8, ldaf_word(b, n, 0), ldaf_word(b, n, 8),
		ldaf_word(b, n, 16), ldaf_word(b, n, 24), ldaf_word(b, n, 32), ldaf_word(b, n, 40), ldaf_word(b, n, 48));
	if (unlikely(mpls))
		return ldaf_tunnel(et, 0, b, n, hash); // the raw identity stays where it does not read through
	return 1;
}

// ldaf_ident_general is ldaf_ident for the frames its straight-line IP
// path does not take: classifier's general path (parseGeneral) for the
// frames it measures as they are. It walks up to 8 VLAN tags (802.1Q,
// 802.1ad, QinQ) and takes IPv4 with or without options, fragments
// included; IPv6 without extension headers; any L4 protocol, and L4
// windows shorter than 32 bytes (a 64-byte frame's); non-IP frames; and
// the tunnels the identity reads through (GRE, VXLAN, Geneve, MPLS:
// ldaf_tunnel). It returns 0, leaving the frame to the Go lane, for
// everything with flags a sender lane decides about (truncated,
// malformed, control, link-local: IGMP and ICMPv6's link-local types
// too) and for IPv6 extension headers, the outer packet's or a tunneled
// inner packet's.
static __attribute__((noinline)) int ldaf_ident_general(const uint8_t *f, uint32_t len, uint64_t *hash) {
	if (len < 14)
		return 0;
	uint32_t off = 12;
	uint16_t et = ldaf_be16(f + 12);
	for (int tags = 0; et == 0x8100 || et == 0x88A8 || et == 0x9100; tags++) {
		if (tags == 8 || off + 6 > len)
			return 0; // malformed, truncated
		et = ldaf_be16(f + off + 4);
		off += 4;
	}
	off += 2;
	const uint8_t *h = f + off;
	uint32_t n = len - off;
	uint64_t w[4];
	if (et == 0x0800) {
		if (n < 20 || (h[0] >> 4) != 4)
			return 0;
		uint32_t ihl = (uint32_t)(h[0] & 0x0f) * 4, total = ldaf_be16(h + 2);
		uint8_t proto = h[9];
		if (ihl < 20 || total < ihl || total > n || proto == 2) // IGMP: link-local
			return 0;
		uint64_t addrs = ldaf_le64(h + 12);
		if (unlikely(f[0] & 1)) {
			uint32_t dst = __builtin_bswap32((uint32_t)(addrs >> 32));
			if (ldaf_mac_linklocal(f) || dst >> 8 == 0xE00000 || dst == 0xFFFFFFFFu)
				return 0;
		}
		int later = (ldaf_be16(h + 6) & 0x1fff) != 0; // a later fragment: no L4 header, no tunnel header
		int tun = proto == 47 && !later;
		if (!ldaf_window(h + ihl, total - ihl, proto, later, w))
			w[0] &= LDAF_MASK_UDP_CSUM, tun = 1;
		*hash = ldaf_sum_v4((ldaf_le64(h) & ~0xffffull) | (uint64_t)proto << 8 | 4, addrs, w[0], w[1], w[2], w[3]);
		if (unlikely(tun))
			return ldaf_tunnel(0x0800, proto, h + ihl, total - ihl, hash);
		return 1;
	}
	if (et == 0x86DD) {
		if (n < 40 || (h[0] >> 4) != 6)
			return 0;
		uint32_t declared = 40 + (uint32_t)ldaf_be16(h + 4);
		uint8_t nh = h[6];
		switch (nh) {
		case 0: case 43: case 44: case 51: case 60: case 135: case 139: case 140: // extension headers
			return 0;
		}
		if (declared > n)
			return 0;
		const uint8_t *l4 = h + 40;
		uint32_t n4 = declared - 40;
		if (nh == 58 && ldaf_icmpv6_linklocal(n4 >= 2 ? l4[0] : 0))
			return 0;
		if (unlikely(f[0] & 1)) {
			if (ldaf_mac_linklocal(f) || (ldaf_be16(h + 24) & 0xFF0F) == 0xFF02)
				return 0;
		}
		int tun = nh == 47;
		if (!ldaf_window(l4, n4, nh, 0, w))
			w[0] &= LDAF_MASK_UDP_CSUM, tun = 1;
		uint64_t x = ldaf_le64(h);
		*hash = ldaf_sum_v6(6 | (uint64_t)nh << 8 | (x >> 32 & 0xffff) << 16 | (x >> 8 & 0x0f) << 32 |
			(x >> 16 & 0xffff) << 40, ldaf_le64(h + 8), ldaf_le64(h + 16), ldaf_le64(h + 24), ldaf_le64(h + 32),
			w[0], w[1], w[2], w[3]);
		if (unlikely(tun))
			return ldaf_tunnel(0x86DD, nh, l4, n4, hash);
		return 1;
	}
	return ldaf_ident_raw(f, len, off, et, hash);
}

// ldaf_ident_fast_tunnel is ldaf_ident_general for a frame the
// straight-line path found to be UDP to the VXLAN or Geneve port: an IPv4
// or IPv6 packet at off (past at most one tag) the frame holds whole, so
// the frame's end past the IP length changes nothing ldaf_ident_general
// reads. Taking the length from the IP header keeps the frame's length
// out of the straight-line path's live registers.
static __attribute__((noinline)) int ldaf_ident_fast_tunnel(const uint8_t *f, uint32_t off, uint64_t *hash) {
	const uint8_t *h = f + off;
	uint32_t len = off + (ldaf_be16(h - 2) == 0x0800 ? ldaf_be16(h + 2) : 40 + (uint32_t)ldaf_be16(h + 4));
	return ldaf_ident_general(f, len, hash);
}

// classifier's flow hash keys (parse.go).
#define LDAF_FK0 0xa0761d6478bd642full
#define LDAF_FK1 0xe7037ed1a0b428dbull
#define LDAF_FK2 0x8ebc6af09c88c6e3ull
#define LDAF_FK3 0x589965cc75374cc3ull
#define LDAF_FK4 0x1d8e4e27c47d124full

static inline uint64_t ldaf_mulhi(uint64_t a, uint64_t b) { return (uint64_t)((unsigned __int128)a * b >> 64); }
static inline uint64_t ldaf_mum(uint64_t a, uint64_t b) {
	unsigned __int128 p = (unsigned __int128)a * b;
	return (uint64_t)(p >> 64) ^ (uint64_t)p;
}

// ldaf_fkey is a frame's flow key (classifier.FlowKey) as far as the LDS
// flow table packs it: a[0] the IPv4 source and destination (wire order)
// or a[0..3] the IPv6 ones, the ports, the protocol.
struct ldaf_fkey {
	uint64_t a[4];
	uint16_t sp, dp;
	uint8_t proto, v6;
};

// ldaf_pack_key packs k into the flow table's 40-byte key
// (synopsis.PackFlowKey).
static inline void ldaf_pack_key(const struct ldaf_fkey *k, uint8_t *key) {
	memset(key, 0, 40);
	key[0] = k->proto;
	key[1] = k->v6;
	key[2] = k->sp >> 8, key[3] = (uint8_t)k->sp;
	key[4] = k->dp >> 8, key[5] = (uint8_t)k->dp;
	memcpy(key + 6, k->a, k->v6 ? 32 : 8);
}

// ldaf_flow_hash ends ldaf_flow: the key's ports and protocol, and the
// flow hash of the key (its addresses and v6 already in *k).
static inline __attribute__((always_inline)) uint64_t ldaf_flow_hash(struct ldaf_fkey *k, uint16_t sp, uint16_t dp,
		uint8_t proto) {
	k->sp = sp, k->dp = dp, k->proto = proto;
	uint64_t e = (uint64_t)sp << 48 | (uint64_t)dp << 32 | (uint64_t)proto << 8, x;
	if (!k->v6) {
		uint64_t a = k->a[0];
		x = ldaf_mum((a << 32 | a >> 32) ^ LDAF_FK0, e ^ LDAF_FK1);
	} else {
		x = ldaf_mum(k->a[0] ^ LDAF_FK0, k->a[1] ^ LDAF_FK1);
		x = ldaf_mum(x ^ k->a[2] ^ LDAF_FK2, k->a[3] ^ LDAF_FK3);
		x = ldaf_mum(x ^ (e | 1) ^ LDAF_FK4, LDAF_FK1);
	}
	return x ^ x >> 29;
}

// ldaf_flow is classifier's flow hash (Meta.FlowHash at LevelFull) of a
// frame ldaf_ident took, and its key into *k: 0 for a frame that is not
// IPv4 or IPv6 (no flow). ldaf_ident checked every length read here: at
// most 8 tags, a whole IP header, the IP length within the frame, no
// IPv6 extension header. The key is the outer packet's in a tunnel.
static inline uint64_t ldaf_flow(const uint8_t *f, struct ldaf_fkey *k) {
	uint32_t off = 12;
	uint16_t et = ldaf_be16(f + 12);
	while (unlikely(et == 0x8100 || et == 0x88A8 || et == 0x9100)) {
		et = ldaf_be16(f + off + 4);
		off += 4;
	}
	const uint8_t *h = f + off + 2, *l4;
	uint32_t n4;
	uint8_t proto;
	if (likely(et == 0x0800)) {
		proto = h[9];
		k->a[0] = ldaf_le64(h + 12);
		k->v6 = 0;
		uint32_t ihl = (uint32_t)(h[0] & 0x0f) * 4;
		l4 = h + ihl;
		n4 = (ldaf_be16(h + 6) & 0x1fff) ? 0 : ldaf_be16(h + 2) - ihl; // a later fragment: no ports
	} else if (et == 0x86DD) {
		proto = h[6];
		k->a[0] = ldaf_le64(h + 8), k->a[1] = ldaf_le64(h + 16), k->a[2] = ldaf_le64(h + 24), k->a[3] = ldaf_le64(h + 32);
		k->v6 = 1;
		l4 = h + 40;
		n4 = ldaf_be16(h + 4);
	} else {
		return 0;
	}
	uint16_t sp = 0, dp = 0;
	switch (proto) { // gatherL4
	case 6: case 17: case 136: case 132:
		if (n4 >= 4)
			sp = ldaf_be16(l4), dp = ldaf_be16(l4 + 2);
		break;
	case 1: case 58:
		if (n4 >= 2)
			sp = l4[0], dp = l4[1];
		break;
	}
	return ldaf_flow_hash(k, sp, dp, proto);
}

// ldaf_ident returns 1 and the identity hash (classifier.Meta.Hash, as
// classifier.ParseLevel computes it) of a frame a sender lane records as
// it is: no flag among truncated, malformed, control and link-local, and
// no IPv6 extension header (the outer packet's or, in a tunnel, the inner
// one's). Every other frame gets 0: the Go lane decides about it. It
// depends only on f[0:len]; room (at least len) is how many bytes from f
// may be read. The common frame, IPv4 without options or IPv6 carrying
// TCP or UDP, untagged or behind one 802.1Q tag, takes the straight-line
// path (classifier's parseFast, which Go takes for untagged frames with a
// whole L4 window only) when LDAF_FAST_READ bytes past its tag are
// readable, and an untagged non-IP frame its raw path, both inlined here;
// every other frame takes ldaf_ident_general. A tag changes no identity:
// the hash covers the IP packet only.
//
// ldaf_ident_flow is ldaf_ident that, with k not NULL, also gives a frame
// it takes its flow (ldaf_flow) into *fh and *k: the straight-line path
// has the addresses, the protocol and the IP length in registers, so it
// hashes the flow without walking the headers again; the other paths
// call ldaf_flow.
static inline __attribute__((always_inline)) int ldaf_ident_flow(const uint8_t *f, uint32_t len, uint32_t room,
		uint64_t *hash, struct ldaf_fkey *k, uint64_t *fh) {
#define LDAF_SLOW(call) do { int took_ = (call); if (k && took_) *fh = ldaf_flow(f, k); return took_; } while (0)
	if (len < 14)
		return 0;
	uint16_t et = ldaf_be16(f + 12);
	if (et <= 1500) // an IEEE 802.3 length (net_null's all-zero frames)
		LDAF_SLOW(ldaf_ident_raw(f, len, 14, et, hash));
	uint32_t off = 14;
	if (et == 0x8100 && len >= 18) {
		uint16_t inner = ldaf_be16(f + 16);
		if (inner == 0x0800 || inner == 0x86DD)
			et = inner, off = 18;
	}
	if ((et != 0x0800 && et != 0x86DD) || room < off + LDAF_FAST_READ) {
		if (et == 0x0800 || et == 0x86DD || et == 0x8100 || et == 0x88A8 || et == 0x9100)
			LDAF_SLOW(ldaf_ident_general(f, len, hash));
		LDAF_SLOW(ldaf_ident_raw(f, len, 14, et, hash)); // untagged non-IP: net_null's frames
	}
	const uint8_t *h = f + off;
	uint64_t x = ldaf_le64(h), w[4];
	if (et == 0x0800) {
		uint32_t total = (uint32_t)(x >> 24 & 0xff) | (uint32_t)(x >> 8 & 0xff00);
		uint8_t proto = h[9];
		if ((x & 0xff) != 0x45 || (x >> 48 & 0xff3f) != 0 || total < 20 || total > len - off ||
				(proto != 6 && proto != 17))
			LDAF_SLOW(ldaf_ident_general(f, len, hash));
		if (unlikely(!ldaf_window_fast(h + 20, total - 20, proto, w)))
			LDAF_SLOW(ldaf_ident_fast_tunnel(f, off, hash));
		uint64_t addrs = ldaf_le64(h + 12);
		if (unlikely(f[0] & 1)) {
			uint32_t dst = __builtin_bswap32((uint32_t)(addrs >> 32));
			if (ldaf_mac_linklocal(f) || dst >> 8 == 0xE00000 || dst == 0xFFFFFFFFu)
				return 0;
		}
		*hash = ldaf_sum_v4((x & ~0xffffull) | (uint64_t)proto << 8 | 4, addrs, w[0], w[1], w[2], w[3]);
		if (k) { // not a fragment, IHL 5, TCP or UDP: ports when 4 bytes of L4 are in the IP length
			k->a[0] = addrs, k->v6 = 0;
			int ports = total >= 24;
			*fh = ldaf_flow_hash(k, ports ? ldaf_be16(h + 20) : 0, ports ? ldaf_be16(h + 22) : 0, proto);
		}
		return 1;
	}
	uint32_t declared = 40 + ((uint32_t)(x >> 40 & 0xff) | (uint32_t)(x >> 24 & 0xff00));
	uint8_t nh = (uint8_t)(x >> 48);
	if ((x & 0xf0) != 0x60 || declared > len - off || (nh != 6 && nh != 17))
		LDAF_SLOW(ldaf_ident_general(f, len, hash));
	if (unlikely(!ldaf_window_fast(h + 40, declared - 40, nh, w)))
		LDAF_SLOW(ldaf_ident_fast_tunnel(f, off, hash));
	uint64_t a0 = ldaf_le64(h + 8), a1 = ldaf_le64(h + 16), a2 = ldaf_le64(h + 24), a3 = ldaf_le64(h + 32);
	if (unlikely(f[0] & 1)) {
		uint16_t first = __builtin_bswap16((uint16_t)a2);
		if (ldaf_mac_linklocal(f) || (first & 0xFF0F) == 0xFF02)
			return 0;
	}
	*hash = ldaf_sum_v6(6 | (uint64_t)nh << 8 | (x >> 32 & 0xffff) << 16 | (x >> 8 & 0x0f) << 32 |
		(x >> 16 & 0xffff) << 40, a0, a1, a2, a3, w[0], w[1], w[2], w[3]);
	if (k) { // no extension header, TCP or UDP: ports when 4 bytes of payload
		k->a[0] = a0, k->a[1] = a1, k->a[2] = a2, k->a[3] = a3, k->v6 = 1;
		int ports = declared >= 44;
		*fh = ldaf_flow_hash(k, ports ? ldaf_be16(h + 40) : 0, ports ? ldaf_be16(h + 42) : 0, nh);
	}
	return 1;
#undef LDAF_SLOW
}

static inline __attribute__((always_inline)) int ldaf_ident(const uint8_t *f, uint32_t len, uint32_t room,
		uint64_t *hash) {
	return ldaf_ident_flow(f, len, room, hash, NULL, NULL);
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

// ldaf_lda_add_ts is ldaf_lda_add with each frame's own stamp ts[i] (a
// receiver lane records frames at their receive time).
static inline void ldaf_lda_add_ts(const struct ldaf_ldasel *sel, struct ldaf_ldacell *cells, int digest,
		const uint64_t *hs, const uint64_t *ts, unsigned n) {
	for (unsigned i = 0; i < n; i++) {
		uint64_t h = hs[i];
		struct ldaf_ldasel s = sel[__builtin_clzll(h | 1)];
		struct ldaf_ldacell *c = &cells[s.off + ((uint32_t)h & s.mask)];
		c->sum += ts[i];
		c->count++;
		if (digest) {
			uint64_t x = h * LDAF_DIGEST_MUL;
			c->dig += x ^ x >> 32;
		}
	}
}

// The RDA, the LDS and the trajectory sample (synopsis.RDAHot, LDSHot,
// SampleHot): their C mirrors, every field 64 bits, addresses as
// integers, in Go memory that holds no Go pointers (package dpdk's
// fastSyn), written during one ldaf_measure call only. The updates below
// are synopsis.RDA.AddFlow, LDS.AddFlowKey and Sample.AddFlow, operation
// for operation (checkFastSynIsGo, FuzzFastSynC).
struct ldaf_rdahot {
	uint64_t cells, m, k, chunk, base;
	uint64_t slots, flows, mask, limit, n, level, has_zero, zero, zero_flow, offered, dups;
	uint64_t later, n_later, later_lost;
};
struct ldaf_ldshot {
	uint64_t cells, rows, cols, k, thr, row_a, row_m, packets, last_ts;
	uint64_t has_flows, fslots, fkeys, fmask, fused, flimit, fhold_thr, fmissed, frefused;
	uint64_t fheld; // frames added to their flow's slot rather than its cells (ldaf_syn_run's held)
};
struct ldaf_samplehot {
	uint64_t ents, flows, len, cap, thresh, offered, err_ns;
};
// ldaf_syn is what a lane records besides its LDA (dpdk's fastSyn).
struct ldaf_syn {
	struct ldaf_rdahot rda;
	struct ldaf_ldshot lds;
	struct ldaf_samplehot smp;
	uint64_t has_rda, has_lds, has_smp, weight; // weight: the class's LDS weight (0 means 1)
};

struct ldaf_rdacell {
	uint64_t id, ts;
	int64_t n;
	uint64_t chk;
};
_Static_assert(sizeof(struct ldaf_rdacell) == 32, "ldaf_syn_plan's byte offsets");
struct ldaf_tsent {
	uint64_t h, ts;
};
struct ldaf_ldscell {
	uint64_t sum, count, digest, err;
};
// ldaf_flowslot is synopsis.flowSlot: a 64-byte line, the flow's hash,
// packet count and weight, then its sums held back from its LDS cells
// (acc_*: ldaf_syn_run's held frames, settled by LDS.SettleFlows).
struct ldaf_flowslot {
	uint64_t hash, packets;
	uint32_t weight, pad;
	uint64_t acc_sum, acc_count, acc_digest, acc_err, pad2;
};
_Static_assert(sizeof(struct ldaf_flowslot) == 64, "ldaf_flowslot is synopsis.flowSlot");

// Salts and constants of package synopsis (hash.go, rda.go, tscache.go,
// flowtable.go); classifier's flow hash keys (parse.go) are above ldaf_flow.
#define LDAF_SALT_RDA 0x52444120b0a7c3e1ull
#define LDAF_SALT_LDS_ROW 0x4c4453209e3779b9ull
#define LDAF_SALT_LDS_CELL 0x4c4453437f4a7c15ull
#define LDAF_SALT_SAMPLING 0x53414d50c2b2ae35ull
#define LDAF_SALT_RDA_CHECK 0x5244434bd6e8feb8ull
#define LDAF_SALT_FLOW_HOLD 0x484f4c44a54ff53aull
#define LDAF_SALT_SAMPLE 0x54524a53d6e8feb8ull
#define LDAF_GOLDEN 0x9e3779b97f4a7c15ull
#define LDAF_MAX_LATER 128
#define LDAF_LDS_MAX_ROWS 16
#define LDAF_RDA_MAX_BANKS 16 // synopsis.RDAMaxBanks
// synopsis.DefaultRDACells (2^LDAF_RDA_DEF_LOG2) in DefaultRDABanks (3)
// banks: RDA.setIndexing's 64/3-bit slices of one Remix.
#define LDAF_RDA_DEF_CELLS 2048
#define LDAF_RDA_DEF_LOG2 11
#define LDAF_RDA_DEF_CHUNK 21
#define LDAF_LDS_SKIP 0xffffffffu // a row that does not sample the frame (cells are fewer than 2^26)

// ldaf_remix is synopsis.Remix.
static inline uint64_t ldaf_remix(uint64_t h, uint64_t salt) {
	uint64_t x = h ^ salt;
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	return x ^ x >> 31;
}

// ldaf_note_later is TSCache.noteLater for a list that is not full
// (ldaf_later, its only caller, takes a full one).
static __attribute__((noinline)) uint64_t ldaf_note_later(struct ldaf_rdahot *c, uint64_t h, uint64_t first, uint64_t ts) {
	struct ldaf_tsent *l = (struct ldaf_tsent *)c->later;
	for (uint64_t i = 0; i < c->n_later; i++) {
		if (l[i].h == h) {
			c->later_lost++;
			return first;
		}
	}
	if (ts < first) {
		uint64_t t = first;
		first = ts, ts = t;
	}
	l[c->n_later].h = h, l[c->n_later].ts = ts;
	c->n_later++;
	return first;
}

// ldaf_synidx is what ldaf_syn_plan derives from one frame's identity h
// and flow hash fh for ldaf_syn_add: the cells of the RDA and the LDS the
// frame's updates write, found some frames before them, whose lines it
// prefetches meanwhile. The remixes that name no line (the RDA's check,
// the sample's selection) are left to the update: through the plan they
// would cost a store and a load each.
struct ldaf_synidx {
	struct ldaf_rdacell *rda[LDAF_RDA_MAX_BANKS]; // the frame's cell in each RDA bank
	uint32_t lds[LDAF_LDS_MAX_ROWS];   // its LDS cell in each row, LDAF_LDS_SKIP where the row does not sample it
};

// ldaf_later is ldaf_note_later with its common outcome inline: the
// list of later copies is full (a traffic that repeats its packets fills
// it at once), so the copy only counts as lost.
static inline uint64_t ldaf_later(struct ldaf_rdahot *c, uint64_t h, uint64_t first, uint64_t ts) {
	if (c->n_later == LDAF_MAX_LATER) {
		c->later_lost++;
		return first;
	}
	return ldaf_note_later(c, h, first, ts);
}

// ldaf_tsloc is the timestamp cache's state ldaf_syn_run keeps in
// registers for one call: what no update of the call changes (the level
// never rises in C) and the counts it adds to, written back to struct
// ldaf_rdahot at its end. Through the struct every frame would reload
// them: a slot's store may alias it as far as the compiler knows.
struct ldaf_tsloc {
	struct ldaf_tsent *slots;
	uint64_t *flows;
	uint64_t mask, limit, keep, n, dups; // keep: ldaf_ts_keep of the level
};

// ldaf_ts_keep is the largest selection hash s the cache keeps at level
// (TSCache: s >> (64 - level) == 0, every s at level 0): one comparison
// per frame instead of a test and a shift by a variable amount.
static inline uint64_t ldaf_ts_keep(uint64_t level) {
	if (level == 0)
		return ~0ull;
	if (level >= 64)
		return 0;
	return (1ull << (64 - level)) - 1;
}

// ldaf_ts_insert is TSCache.InsertFlow for a cache the burst cannot fill
// (the caller checked RDA.CacheRoom): the level never rises here. s is
// Remix(h, SaltSampling). The caller counts the packet offered.
static inline void ldaf_ts_insert(struct ldaf_rdahot *c, struct ldaf_tsloc *L, uint64_t h, uint64_t fh, uint64_t ts,
		uint64_t s) {
	if (s > L->keep)
		return;
	if (unlikely(h == 0)) {
		if (c->has_zero) {
			L->dups++;
			c->zero = ldaf_later(c, 0, c->zero, ts);
			return;
		}
		c->has_zero = 1, c->zero = ts, c->zero_flow = fh;
		return;
	}
	for (uint64_t i = s & L->mask;; i = (i + 1) & L->mask) {
		struct ldaf_tsent *e = &L->slots[i];
		if (e->h == h) {
			L->dups++;
			e->ts = ldaf_later(c, h, e->ts, ts);
			return;
		}
		if (e->h != 0)
			continue;
		if (unlikely(L->n >= L->limit))
			return; // not reached (CacheRoom)
		e->h = h, e->ts = ts;
		if (L->flows)
			L->flows[i] = fh;
		L->n++;
		return;
	}
}

static inline uint64_t ldaf_lds_row(const uint64_t *ra, const uint64_t *rm, uint64_t x, uint64_t r) {
	uint64_t y = (x ^ ra[r]) * rm[r];
	return y ^ y >> 32;
}

// ldaf_flow_observe is FlowTable.observe with the key stored at once
// (SynSet.Record's PackFlowKey). It returns the flow's slot, NULL when
// the table does not hold the flow.
static __attribute__((noinline)) struct ldaf_flowslot *ldaf_flow_observe(struct ldaf_ldshot *l, uint64_t fh, uint64_t h,
		uint32_t w, const struct ldaf_fkey *k) {
	if (l->flimit == 0) {
		l->fmissed++;
		return NULL;
	}
	struct ldaf_flowslot *slots = (struct ldaf_flowslot *)l->fslots;
	uint64_t i = fh & l->fmask;
	for (;;) {
		struct ldaf_flowslot *s = &slots[i];
		if (s->weight == 0)
			break;
		if (s->hash == fh) {
			s->packets++;
			return s;
		}
		i = (i + 1) & l->fmask;
	}
	if (l->fhold_thr < (1ull << 32) && ldaf_remix(h, LDAF_SALT_FLOW_HOLD) >> 32 >= l->fhold_thr) {
		l->fmissed++;
		return NULL;
	}
	if (l->fused >= l->flimit) {
		l->frefused++;
		l->fmissed++;
		return NULL;
	}
	// An empty slot's held-back sums are 0 (Reset clears whole slots).
	slots[i].hash = fh, slots[i].packets = 1, slots[i].weight = w ? w : 1, slots[i].pad = 0;
	ldaf_pack_key(k, (uint8_t *)l->fkeys + 40 * i);
	l->fused++;
	return &slots[i];
}

// ldaf_synshape is what ldaf_syn_add reads of the synopses' shapes, once
// per call: the cells are written through pointers that alias none of
// it, so it stays in registers rather than being reloaded after every
// store.
struct ldaf_synshape {
	const struct ldaf_rdacell *rcells;
	uint64_t rm, rchunk, rmask;    // RDA cells per bank, Remix bits per bank (0: one Remix per bank), their mask
	// With rpow2: bank b's cell is bits [rsh[b] + 5, rsh[b] + 5 + log2(rm))
	// of the Remix, so its byte offset in the bank (32-byte cells) is the
	// Remix shifted right by rsh[b], masked.
	uint64_t rsh[LDAF_RDA_MAX_BANKS];
	const struct ldaf_tsent *slots; // the timestamp cache's (NULL: none)
	const struct ldaf_ldscell *lcells;
	const uint64_t *ra, *rm_, *thr; // LDS row hash keys and sampling thresholds
	uint64_t cols, k;
	const struct ldaf_flowslot *fslots; // the flow table's (NULL: none)
	uint64_t fmask;
};

// ldaf_lds_flow_cells puts flow fh's cell in each of the first rows
// rows into j: LDS.AddFlowKey's cells when every row takes every frame
// and a flow has one cell per row (lds_all), where a frame's cells are
// its flow's.
static inline __attribute__((always_inline)) void ldaf_lds_flow_cells(const struct ldaf_synshape *s, uint64_t fh,
		uint64_t rows, uint32_t *j) {
	uint64_t cols = s->cols, fx = ldaf_remix(fh, LDAF_SALT_LDS_ROW);
	for (uint64_t r = 0; r < rows; r++)
		j[r] = (uint32_t)(r * cols + ((ldaf_lds_row(s->ra, s->rm_, fx, r) >> 32) * cols >> 32));
}

// ldaf_syn_plan fills x for frame h of flow fh (0: none, no LDS) and
// prefetches the lines its updates will write: its rk RDA cells, its LDS
// cells in the rows that sample it, its flow's home slot in the flow
// table (the timestamp cache's slot was prefetched a burst earlier, by
// ldaf_cache_ahead). The synopses are
// hundreds of KiB to MiB and a frame's lines are picked at random: a
// frame's updates would otherwise wait on their misses one frame after
// another. With lds_all (every row takes every frame, one cell per flow:
// the default LDS) a frame's cell is its flow's, so the frame's own row
// hashes, which only pick a row's sampling and a flow's cell, are
// skipped; with held as well (a flow table beside it) a held flow's
// frames go to its slot (ldaf_syn_run), so the flow's cells are derived
// only for a frame whose flow the table turns out not to hold, and only
// the slot is prefetched. ldaf_syn_add calls it with constant rk, rows,
// lds_all and held for the default shapes, so that the compiler unrolls
// its loops, and with rpow2 where the RDA's banks have a power of two
// cells (the default 2048) taken from slices of one Remix, whose index
// is then a shift and a mask (s->rsh) rather than a mask, a multiply and
// two shifts by amounts held in memory.
static inline __attribute__((always_inline)) void ldaf_syn_plan(const struct ldaf_synshape *s, struct ldaf_synidx *x,
		uint64_t h, uint64_t fh, int has_rda, uint64_t rk, uint64_t rows, int lds_all, int held, int rpow2, int rdef) {
	if (has_rda) { // RDA.index
		uint64_t m = rdef ? LDAF_RDA_DEF_CELLS : s->rm, off = 0;
		if (likely(rdef || s->rchunk != 0)) {
			uint64_t c = rdef ? LDAF_RDA_DEF_CHUNK : s->rchunk, v0 = ldaf_remix(h, LDAF_SALT_RDA), v = v0;
			for (uint64_t b = 0; b < rk; b++, off += m, v >>= c) {
				// With m = 2^r a power of two, (u · m) >> c is u's top r
				// bits (u has c bits, c + r ≤ 64: synopsis.RDA's
				// setIndexing), bits [b·c + c − r, b·c + c) of the
				// Remix: one shift of it and a mask, which leave the
				// cell's byte offset (s->rsh); with rdef (the default
				// shape) by constant amounts.
				if (rpow2) {
					uint64_t sh = rdef ? (b + 1) * LDAF_RDA_DEF_CHUNK - LDAF_RDA_DEF_LOG2 - 5 : s->rsh[b];
					x->rda[b] = (struct ldaf_rdacell *)((const char *)(s->rcells + off) + (v0 >> sh & (m - 1) << 5));
				} else {
					x->rda[b] = (struct ldaf_rdacell *)&s->rcells[off + ((v & s->rmask) * m >> c)];
				}
				__builtin_prefetch(x->rda[b], 1);
			}
		} else {
			for (uint64_t b = 0; b < rk; b++, off += m) {
				uint32_t j = (uint32_t)(off + ldaf_mulhi(ldaf_remix(h, LDAF_SALT_RDA + b * LDAF_GOLDEN), m));
				x->rda[b] = (struct ldaf_rdacell *)&s->rcells[j];
				__builtin_prefetch(x->rda[b], 1);
			}
		}
	}
	if (fh != 0) { // LDS.AddFlowKey's cells
		if (lds_all && held) {
			// The flow's slot, prefetched below, takes the frame.
		} else if (lds_all) {
			ldaf_lds_flow_cells(s, fh, rows, x->lds);
			for (uint64_t r = 0; r < rows; r++)
				__builtin_prefetch(&s->lcells[x->lds[r]], 1);
		} else {
			uint64_t cols = s->cols, fx = ldaf_remix(fh, LDAF_SALT_LDS_ROW);
			uint64_t px0 = ldaf_remix(h, LDAF_SALT_LDS_CELL);
			for (uint64_t r = 0; r < rows; r++) {
				uint64_t px = ldaf_lds_row(s->ra, s->rm_, px0, r);
				if (px >> 32 >= s->thr[r]) {
					x->lds[r] = LDAF_LDS_SKIP;
					continue;
				}
				uint64_t c = ((ldaf_lds_row(s->ra, s->rm_, fx, r) >> 32) * cols >> 32) + ((px & 0xffffffffull) * s->k >> 32);
				if (c >= cols)
					c -= cols;
				uint32_t j = (uint32_t)(r * cols + c);
				x->lds[r] = j;
				__builtin_prefetch(&s->lcells[j], 1);
			}
		}
		if (s->fslots)
			__builtin_prefetch(&s->fslots[fh & s->fmask], 1);
	}
}

// ldaf_flow_count is FlowTable.observe's common case inline: fh already
// holds its home slot or the next (a flow's frames after its first).
// Everything else is ldaf_flow_observe.
// It returns the flow's slot, NULL when the table does not hold the flow.
// flimit, fslots and fmask are l's (ldaf_syn_run holds them: no update
// changes them).
static inline struct ldaf_flowslot *ldaf_flow_count(struct ldaf_ldshot *l, uint64_t flimit, const struct ldaf_flowslot *fslots,
		uint64_t fmask, uint64_t fh, uint64_t h, uint32_t w, const struct ldaf_fkey *k) {
	if (likely(flimit != 0)) {
		struct ldaf_flowslot *s = (struct ldaf_flowslot *)fslots + (fh & fmask);
		if (likely(s->weight != 0 && s->hash == fh)) {
			s->packets++;
			return s;
		}
		// Linear probing: a flow not at home is most often one slot on
		// (a few percent of the default table's flows, more as it fills).
		if (s->weight != 0) {
			s = (struct ldaf_flowslot *)fslots + ((fh + 1) & fmask);
			if (s->weight != 0 && s->hash == fh) {
				s->packets++;
				return s;
			}
		}
	}
	return ldaf_flow_observe(l, fh, h, w, k);
}

// LDAF_PREFETCH_AHEAD is how many frames ahead of its updates
// ldaf_syn_add plans a frame; LDAF_PLAN_RING, a power of two above it,
// how many plans it holds.
#define LDAF_PREFETCH_AHEAD 4

// LDAF_NO_SLP: GCC's SLP vectorizer packs a cell's four 64-bit updates
// into two 128-bit stores, each assembled with movq and pinsrq from
// loaded, added registers: 14 instructions a cell where four
// read-modify-write adds are 4. The cells are cold lines picked at
// random, so nothing is gained by the wide store.
#if defined(__GNUC__) && !defined(__clang__)
#define LDAF_NO_SLP __attribute__((optimize("no-tree-slp-vectorize")))
#else
#define LDAF_NO_SLP
#endif
#define LDAF_PLAN_RING 8

// ldaf_syn_run is ldaf_syn_add for given shapes (see ldaf_syn_plan). The
// state the updates read and the counts they add to are held in locals
// for the call (ldaf_tsloc; the sample's and the LDS's alike) and
// written back at its end: the cells and slots are written through
// pointers the compiler cannot tell from the synopses' structs, so
// through the structs each frame would reload and store them all.
static inline __attribute__((always_inline)) void ldaf_syn_run(struct ldaf_syn *sy, const struct ldaf_synshape *s,
		const uint64_t *hs, const uint64_t *fhs, const uint64_t *css, const struct ldaf_fkey *ks, unsigned n, uint64_t ts,
		const uint64_t *ts_each, uint64_t poll, uint64_t poll_err, uint64_t rk, uint64_t rows, int lds_all, int held, int rpow2,
		int unitw, int each, int rdef) {
	struct ldaf_synidx plan[LDAF_PLAN_RING];
	_Static_assert(LDAF_PLAN_RING > LDAF_PREFETCH_AHEAD && (LDAF_PLAN_RING & (LDAF_PLAN_RING - 1)) == 0, "plan ring");
	struct ldaf_rdahot *r = &sy->rda;
	struct ldaf_ldshot *l = &sy->lds;
	struct ldaf_samplehot *p = &sy->smp;
	// rdef: the default shapes whole (ldaf_syn_add): an RDA with its
	// timestamp cache and a sample, which the loop then need not test.
	const int has_rda = rdef || sy->has_rda != 0, has_smp = rdef || sy->has_smp != 0, has_flows = l->has_flows != 0;
	const int has_slots = rdef || s->slots != NULL;
	struct ldaf_ldscell *__restrict lcells = (struct ldaf_ldscell *)l->cells;
	// each: ts_each gives every frame its stamp; else all are at ts, with
	// one error.
	const uint64_t err1 = poll != 0 && ts == poll ? poll_err : 0;
	const uint32_t w = (uint32_t)sy->weight;
	const uint64_t lw = unitw ? 1 : w ? w : 1; // unitw: the caller saw w ≤ 1, and the weighting multiplies go
	// The RDA's base and its cache (RDA.AddFlow, TSCache.InsertFlow).
	uint64_t base = r->base;
	struct ldaf_tsloc tl = {
		.slots = (struct ldaf_tsent *)r->slots, .flows = (uint64_t *)r->flows, .mask = r->mask, .limit = r->limit,
		.keep = ldaf_ts_keep(r->level), .n = r->n, .dups = r->dups,
	};
	// The sample (Sample.AddFlow, SetStampErr).
	struct ldaf_tsent *const sents = (struct ldaf_tsent *)p->ents;
	uint64_t *const sflows = (uint64_t *)p->flows;
	const uint64_t scap = p->cap, sthr = p->thresh;
	uint64_t slen = p->len, serr = p->err_ns;
	// The LDS (LDS.AddFlowKey) and its flow table.
	const uint64_t flimit = l->flimit;
	uint64_t lpackets = 0, llast = l->last_ts, lheld = 0;
	if (!each && n > 0) { // every frame at ts with error err1
		if (base == 0)
			base = ts;
		if (err1 > serr)
			serr = err1;
	}
	for (unsigned i = 0; i < n && i < LDAF_PREFETCH_AHEAD; i++)
		ldaf_syn_plan(s, &plan[i], hs[i], held || fhs ? fhs[i] : 0, has_rda, rk, rows, lds_all, held, rpow2, rdef);
	for (unsigned i = 0; i < n; i++) {
		if (i + LDAF_PREFETCH_AHEAD < n)
			ldaf_syn_plan(s, &plan[(i + LDAF_PREFETCH_AHEAD) & (LDAF_PLAN_RING - 1)], hs[i + LDAF_PREFETCH_AHEAD],
				held || fhs ? fhs[i + LDAF_PREFETCH_AHEAD] : 0, has_rda, rk, rows, lds_all, held, rpow2, rdef);
		const struct ldaf_synidx *x = &plan[i & (LDAF_PLAN_RING - 1)];
		uint64_t h = hs[i], fh = held || fhs ? fhs[i] : 0, t = ts, err = err1;
		if (each)
			t = ts_each[i], err = poll != 0 && t == poll ? poll_err : 0;
		if (has_rda) { // RDA.AddFlow
			if (each && base == 0)
				base = t;
			uint64_t ck = ldaf_remix(h, LDAF_SALT_RDA_CHECK);
			for (uint64_t b = 0; b < rk; b++) {
				struct ldaf_rdacell *cl = x->rda[b];
				cl->id ^= h, cl->ts += t, cl->n++, cl->chk ^= ck;
			}
			if (has_slots)
				ldaf_ts_insert(r, &tl, h, fh, t, css[i]);
		}
		if (has_smp) { // Sample.AddFlow, SetStampErr
			uint64_t ss = ldaf_remix(h, LDAF_SALT_SAMPLE);
			if (ss >> 32 < sthr && likely(slen < scap)) {
				struct ldaf_tsent *e = sents + slen;
				e->h = ss, e->ts = t;
				if (sflows)
					sflows[slen] = fh;
				slen++;
			}
			if (each && err > serr)
				serr = err;
		}
		if (fh != 0) { // LDS.AddFlowKey
			lpackets++;
			llast = t;
			uint64_t wts = lw * t, werr = lw * err;
			if (lds_all && held) {
				// The flow's frames all land in its cells, so a held
				// flow's slot sums them (synopsis.flowSlot) and
				// LDS.SettleFlows adds them in once an interval: one
				// line written per frame instead of one per row.
				struct ldaf_flowslot *fs = ldaf_flow_count(l, flimit, s->fslots, s->fmask, fh, h, w, &ks[i]);
				if (likely(fs != NULL)) {
					fs->acc_sum += wts, fs->acc_count += lw, fs->acc_digest ^= h, fs->acc_err += werr;
					lheld++;
				} else {
					uint32_t cj[LDAF_LDS_MAX_ROWS];
					ldaf_lds_flow_cells(s, fh, rows, cj);
					for (uint64_t j = 0; j < rows; j++) {
						struct ldaf_ldscell *cell = &lcells[cj[j]];
						cell->sum += wts, cell->count += lw, cell->digest ^= h, cell->err += werr;
					}
				}
				continue;
			}
			for (uint64_t j = 0; j < rows; j++) {
				uint32_t c = x->lds[j];
				if (!lds_all && c == LDAF_LDS_SKIP)
					continue;
				struct ldaf_ldscell *cell = &lcells[c];
				cell->sum += wts, cell->count += lw, cell->digest ^= h, cell->err += werr;
			}
			if (has_flows)
				ldaf_flow_count(l, flimit, s->fslots, s->fmask, fh, h, w, &ks[i]);
		}
	}
	if (has_rda) {
		r->base = base;
		if (s->slots)
			r->offered += n, r->n = tl.n, r->dups = tl.dups;
	}
	if (has_smp)
		p->offered += n, p->len = slen, p->err_ns = serr;
	if (fhs)
		l->packets += lpackets, l->last_ts = llast, l->fheld += lheld;
}

// ldaf_syn_add is SynSet.Record's RDA, sample and LDS part for frames i of
// [0, n): identities hs, flow hashes fhs (NULL: none, no LDS), cache
// selections css (ldaf_cache_ahead's; NULL without a timestamp cache), keys ks, all at ts (ts_each
// NULL) or at ts_each[i]; a frame stamped poll (not 0) has the stamp
// error poll_err, every other 0. The updates are RDA.AddFlow,
// Sample.AddFlow with SetStampErr, and LDS.AddFlowKey, operation for
// operation, in frame order; each frame's hashes come from its plan
// (ldaf_syn_plan), made LDAF_PREFETCH_AHEAD frames earlier.
static __attribute__((noinline)) LDAF_NO_SLP void ldaf_syn_add(struct ldaf_syn *sy, const uint64_t *hs, const uint64_t *fhs,
		const uint64_t *css, const struct ldaf_fkey *ks, unsigned n, uint64_t ts, const uint64_t *ts_each, uint64_t poll, uint64_t poll_err) {
	const struct ldaf_rdahot *r = &sy->rda;
	const struct ldaf_ldshot *l = &sy->lds;
	struct ldaf_synshape s = {
		.rcells = (const struct ldaf_rdacell *)r->cells, .rm = r->m, .rchunk = r->chunk,
		.rmask = r->chunk != 0 ? (1ull << r->chunk) - 1 : 0,
		.slots = sy->has_rda ? (const struct ldaf_tsent *)r->slots : NULL,
		.lcells = (const struct ldaf_ldscell *)l->cells, .ra = (const uint64_t *)l->row_a,
		.rm_ = (const uint64_t *)l->row_m, .thr = (const uint64_t *)l->thr, .cols = l->cols, .k = l->k,
		.fslots = l->has_flows ? (const struct ldaf_flowslot *)l->fslots : NULL, .fmask = l->fmask,
	};
	uint64_t rk = r->k < LDAF_RDA_MAX_BANKS ? r->k : LDAF_RDA_MAX_BANKS;
	uint64_t rows = l->rows < LDAF_LDS_MAX_ROWS ? l->rows : LDAF_LDS_MAX_ROWS;
	int lds_all = fhs != NULL && l->k == 1;
	for (uint64_t j = 0; lds_all && j < rows; j++)
		lds_all = ((const uint64_t *)l->thr)[j] >= 1ull << 32;
	int held = lds_all && s.fslots != NULL;
	int rpow2 = s.rm != 0 && (s.rm & (s.rm - 1)) == 0 && s.rchunk != 0;
	for (uint64_t b = 0; rpow2 && b < rk; b++)
		s.rsh[b] = (b + 1) * s.rchunk - (uint64_t)__builtin_ctzll(s.rm) - 5; // ≥ 1: rchunk ≥ log2(rm) + 6
	// The default shapes (synopsis.DefaultRDABanks of 2048 cells, LDS Rows 4, a flow table, weight 1).
	int def = rk == 3 && rows == 4 && held && rpow2 && sy->weight <= 1;
	// rdef: the RDA's cells as recorded by default (its indexing
	// constants), with its timestamp cache, and the sample: `run`'s
	// default synopses, nothing left to test per frame.
	int rdef = def && s.rm == LDAF_RDA_DEF_CELLS && s.rchunk == LDAF_RDA_DEF_CHUNK && sy->has_rda && s.slots != NULL && sy->has_smp;
	if (rdef && ts_each == NULL) // a sender's, a receiver's without port stamps
		ldaf_syn_run(sy, &s, hs, fhs, css, ks, n, ts, NULL, poll, poll_err, 3, 4, 1, 1, 1, 1, 0, 1);
	else if (def && ts_each == NULL)
		ldaf_syn_run(sy, &s, hs, fhs, css, ks, n, ts, NULL, poll, poll_err, 3, 4, 1, 1, 1, 1, 0, 0);
	else if (def)
		ldaf_syn_run(sy, &s, hs, fhs, css, ks, n, ts, ts_each, poll, poll_err, 3, 4, 1, 1, 1, 1, 1, 0);
	else
		ldaf_syn_run(sy, &s, hs, fhs, css, ks, n, ts, ts_each, poll, poll_err, rk, rows, lds_all, held, 0, 0, ts_each != NULL, 0);
}

// ldaf_cache_ahead computes the timestamp cache's selection hash
// Remix(h, SaltSampling) of the burst's n frames into css and prefetches
// the slot where the probe of each frame the cache's level keeps starts;
// 0 without a cache. It runs a burst ahead of ldaf_syn_add, before the
// transmit: the cache is the largest synopsis (MiBs, a slot picked at
// random per frame), and on a virtual machine whose host maps its memory
// in 4 KiB pages a slot's prefetch waits on a page walk, which a few
// frames of distance (ldaf_syn_plan's) do not cover.
static inline int ldaf_cache_ahead(const struct ldaf_syn *sy, const uint64_t *hs, unsigned n, uint64_t *css) {
	if (!sy->has_rda || sy->rda.slots == 0)
		return 0;
	const struct ldaf_tsent *slots = (const struct ldaf_tsent *)sy->rda.slots;
	uint64_t mask = sy->rda.mask, keep = ldaf_ts_keep(sy->rda.level);
	for (unsigned i = 0; i < n; i++) {
		uint64_t s = ldaf_remix(hs[i], LDAF_SALT_SAMPLING);
		css[i] = s;
		if (s <= keep)
			__builtin_prefetch(&slots[s & mask], 1);
	}
	return 1;
}

// ldaf_rx_ts is the receive stamp ldaf_fill_burst gives m: the PMD's
// stamp when it has one, else sw (the burst's software stamp, 0 without).
static inline uint64_t ldaf_rx_ts(const struct ldaf_clock *clk, const struct rte_mbuf *m, uint64_t sw) {
	if (clk->ts_off >= 0 && (m->ol_flags & clk->ts_flag)) {
		uint64_t tick = *RTE_MBUF_DYNFIELD(m, clk->ts_off, uint64_t *);
		return clk->ns0 + (uint64_t)(int64_t)((double)(int64_t)(tick - clk->tick0) * clk->ns_per_tick);
	}
	return sw;
}

// ldaf_stamp_each makes ldaf_measure stamp a receiver's frames one by one
// even where its port stamps none (tests: that path, which ports with
// hardware stamps take, on ports without them).
static int ldaf_stamp_each;

static inline int ldaf_set_stamp_each(int on) {
	int was = ldaf_stamp_each;
	ldaf_stamp_each = on;
	return was;
}

// ldaf_measure is a sender lane's poll with an empty tx buffer
// (dataplane.SenderFastPath): it receives up to n frames on rxp and
// measures the burst's longest prefix of frames ldaf_ident takes. When
// fewer than n came or the first frame is not one of them, it hands the
// burst back: fills its Packets into rq->pkts (as ldaf_rx does), sets
// m_done 0 and returns the count; the Go lane then takes it as from
// RxBurst. Otherwise it transmits the prefix on txp as the lane's flush
// would: up to retries tx bursts of at most tburst frames, stopping at
// one that takes nothing, and after each that takes frames, stamps them
// (ldaf_tx_now, as TxStamper's LastTxNs) and adds them to the LDA whose
// selector, cells and offered count are sel, cells and offered (Go
// memory without Go pointers, written during this call only). Frames of
// the prefix never taken get their Packets in rq->pkts, fwd_kept of them,
// for the Go lane's tx buffer; the rest of the burst, from the first
// frame ldaf_ident left to Go, m_rest of them, follow them there
// unmeasured, in order, for the Go lane to take as received. m_sent and
// m_sent_bytes say what went, fwd_bytes is the prefix's bytes. Returns
// the frames received.
//
// With rx_stamp it is a receiver lane's poll instead: every frame of the
// prefix is added to the LDA with its receive stamp (ldaf_rx_ts, as
// ldaf_fill_burst stamps the Packets the Go lane records), before the
// transmit. A frame the port did not stamp gets the lane's poll stamp
// (dataplane's pollStamp) when poll_start is not 0: the midpoint of low
// and CLOCK_REALTIME read right after the receive (m_poll_now), low
// being poll_low, or poll_start when poll_low is 0 or later than that
// reading; m_poll_ts is the stamp and m_polled the frames of the prefix
// that got it. Without poll_start such a frame ends the prefix. Frames
// handed back carry the port's stamps (0 for none: the Go lane stamps
// them).
static inline LDAF_NO_SLP uint16_t ldaf_measure(uintptr_t rxp, uintptr_t txp, uint16_t n, uint16_t tburst, uint16_t retries,
		uintptr_t sel, uintptr_t cells, uintptr_t offered, int digest, int rx_stamp, uint64_t poll_low,
		uint64_t poll_start, uintptr_t synp) {
	struct ldaf_queue *rq = (struct ldaf_queue *)rxp, *tq = (struct ldaf_queue *)txp;
	struct rte_mbuf **ms = (struct rte_mbuf **)rq->pkts;
	uint64_t hs[LDAF_MAX_BURST];
	uint16_t lens[LDAF_MAX_BURST]; // read before the transmit: a transmitted mbuf is the PMD's
	struct ldaf_syn *sy = (struct ldaf_syn *)synp; // NULL: the LDA alone
	int flows = sy != NULL && sy->has_lds;
	uint64_t fhs[LDAF_MAX_BURST];
	struct ldaf_fkey ks[LDAF_MAX_BURST];
	rq->rx_gen = 0; // no receive-ahead here: this lane receives through this call
	rq->fwd_kept = 0;
	rq->m_sent = 0;
	rq->m_sent_bytes = 0;
	rq->m_done = 0;
	rq->m_rest = 0;
	rq->m_polled = 0;
	rq->m_tx_err_sum = 0;
	rq->m_tx_err_max = 0;
	rq->m_tx_now = 0;
	uint16_t nb = rte_eth_rx_burst(rq->port, rq->queue, ms, n);
	if (nb == 0)
		return 0;
	uint64_t b = 0;
	unsigned k = 0; // the prefix measured here
	const struct ldaf_clock *clk = rq->clk;
	uint64_t sw = 0, tss[LDAF_MAX_BURST], poll = 0, poll_err = 0;
	// uni: a receiver's port stamps no frame (ts_off < 0), so every frame
	// gets the same stamp u, the burst's software stamp or its poll stamp
	// (ldaf_rx_ts's fallbacks): the frames are recorded as a sender's are,
	// at one time, without a stamp each. u 0: none, nothing is measured.
	int uni = 0;
	uint64_t u = 0;
	if (nb == n && rx_stamp) {
		uint64_t polled = 0;
		if (clk->soft) {
			sw = ldaf_realtime_ns();
		} else if (poll_start != 0) {
			uint64_t now = ldaf_realtime_ns(), low = poll_low;
			if (low == 0 || low > now)
				low = poll_start;
			poll = low + (now - low) / 2;
			poll_err = now - poll;
			rq->m_poll_now = now;
			rq->m_poll_ts = poll;
		}
		if (clk->ts_off < 0 && !ldaf_stamp_each)
			uni = 1, u = sw != 0 ? sw : poll;
		for (; !uni && k < nb; k++) {
			struct rte_mbuf *m = ms[k];
			uint16_t len = m->data_len;
			const uint8_t *f = rte_pktmbuf_mtod(m, const uint8_t *);
			uint32_t room = m->buf_len - m->data_off;
			if (unlikely(!(flows ? ldaf_ident_flow(f, len, room, &hs[k], &ks[k], &fhs[k]) : ldaf_ident(f, len, room, &hs[k]))))
				break;
			if (unlikely((tss[k] = ldaf_rx_ts(clk, m, sw)) == 0)) {
				if (poll == 0)
					break;
				tss[k] = poll;
				polled++;
			}
			lens[k] = len;
			b += len;
		}
		rq->m_polled = k > 0 ? polled : 0;
	}
	if (nb == n && (!rx_stamp || uni && u != 0)) {
		for (; k < nb; k++) {
			struct rte_mbuf *m = ms[k];
			uint16_t len = m->data_len;
			const uint8_t *f = rte_pktmbuf_mtod(m, const uint8_t *);
			uint32_t room = m->buf_len - m->data_off;
			if (unlikely(!(flows ? ldaf_ident_flow(f, len, room, &hs[k], &ks[k], &fhs[k]) : ldaf_ident(f, len, room, &hs[k]))))
				break;
			lens[k] = len;
			b += len;
		}
		if (uni && sw == 0)
			rq->m_polled = k; // every frame got the poll stamp
	}
	if (k == 0) {
		uint64_t fb;
		ldaf_fill_burst(rq, rq->pkts, nb, &fb);
		rq->rx_pkts += nb;
		rq->rx_bytes += fb;
		return nb;
	}
	rq->fwd_bytes = b;
	rq->m_done = 1;
	uint64_t css[LDAF_MAX_BURST];
	int cached = sy != NULL && ldaf_cache_ahead(sy, hs, k, css);
	const struct ldaf_ldasel *sl = (const struct ldaf_ldasel *)sel;
	struct ldaf_ldacell *cl = (struct ldaf_ldacell *)cells;
	if (rx_stamp && uni) {
		ldaf_lda_add(sl, cl, digest, hs, k, u);
		*(uint64_t *)offered += k;
		if (sy)
			ldaf_syn_add(sy, hs, flows ? fhs : NULL, cached ? css : NULL, ks, k, u, NULL, poll, poll_err);
	} else if (rx_stamp) {
		ldaf_lda_add_ts(sl, cl, digest, hs, tss, k);
		*(uint64_t *)offered += k;
		if (sy)
			ldaf_syn_add(sy, hs, flows ? fhs : NULL, cached ? css : NULL, ks, k, 0, tss, poll, poll_err);
	}
	unsigned sent = 0;
	uint64_t sb = 0;
	for (unsigned try = 0; try < retries && sent < k; try++) {
		uint16_t chunk = k - sent < tburst ? k - sent : tburst;
		// A sender's stamp is the midpoint of clock reads around the
		// PMD's call, its error half their gap (as ldaf_tx's).
		uint64_t t0 = rx_stamp || tq->tx_fake_step ? 0 : ldaf_realtime_ns();
		uint16_t t = rte_eth_tx_burst(tq->port, tq->queue, ms + sent, chunk);
		if (t == 0)
			break;
		if (!rx_stamp) {
			uint64_t t1 = ldaf_tx_now(tq);
			if (t0 == 0 || t0 > t1)
				t0 = t1;
			uint64_t ts = t0 + (t1 - t0) / 2, err = t1 - ts;
			tq->tx_ns = ts;
			tq->tx_err = err;
			rq->m_tx_err_sum += err * t;
			if (err > rq->m_tx_err_max)
				rq->m_tx_err_max = err;
			if (!tq->tx_fake_step)
				rq->m_tx_now = t1;
			ldaf_lda_add(sl, cl, digest, hs + sent, t, ts);
			if (sy)
				ldaf_syn_add(sy, hs + sent, flows ? fhs + sent : NULL, cached ? css + sent : NULL, ks + sent, t, ts, NULL, ts, err);
		}
		sent += t;
	}
	if (sent == k) {
		sb = b;
	} else {
		for (unsigned i = 0; i < sent; i++)
			sb += lens[i];
	}
	if (!rx_stamp)
		*(uint64_t *)offered += sent;
	uint64_t rb = 0; // the rest's bytes
	if (unlikely(sent < nb)) {
		uint8_t index = rq->index;
		for (unsigned i = sent; i < nb; i++) { // i - sent <= i: slot i was read before
			struct rte_mbuf *m = ms[i];
			uint64_t ts = 0;
			if (i >= k) {
				rb += m->data_len;
				if (rx_stamp)
					ts = ldaf_rx_ts(clk, m, sw);
			}
			rq->pkts[i - sent] = ldaf_fill(m, index, ts);
		}
		rq->fwd_kept = k - sent;
		rq->m_rest = nb - k;
	}
	rq->rx_pkts += nb;
	rq->rx_bytes += b + rb;
	rq->m_sent = sent;
	rq->m_sent_bytes = sb;
	tq->tx_pkts += sent;
	tq->tx_bytes += sb;
	ldaf_rx_ahead(tq);
	return nb;
}

// ldaf_measure_polls is up to polls ldaf_measure polls in one call: it
// polls again as long as the last poll received a full burst, measured it
// whole and transmitted every frame of it (the lane's state is then what it
// was before that poll: an empty tx buffer, and for a receiver the same low
// bound of its poll stamps, the queue not having been seen empty). Those
// polls are summed in the p_ fields; the last poll's results are in the m_
// fields and its return value is returned. One cgo call and one pass of the
// Go lane's bookkeeping then serve several bursts: at 32 frames a burst
// they are about a tenth of a frame's cost each.
static inline uint16_t ldaf_measure_polls(uintptr_t rxp, uintptr_t txp, uint16_t n, uint16_t tburst, uint16_t retries,
		uintptr_t sel, uintptr_t cells, uintptr_t offered, int digest, int rx_stamp, uint64_t poll_low,
		uint64_t poll_start, uintptr_t synp, uint16_t polls) {
	struct ldaf_queue *rq = (struct ldaf_queue *)rxp;
	rq->p_polls = rq->p_frames = rq->p_polled = 0;
	rq->p_bytes = rq->p_tx_err_sum = rq->p_tx_err_max = rq->p_poll_err_sum = rq->p_poll_err_max = 0;
	rq->p_poll_ts = rq->p_poll_now = 0;
	for (;;) {
		uint16_t nb = ldaf_measure(rxp, txp, n, tburst, retries, sel, cells, offered, digest, rx_stamp,
			poll_low, poll_start, synp);
		if (--polls == 0 || nb != n || !rq->m_done || rq->m_sent != nb || rq->fwd_kept != 0 || rq->m_rest != 0)
			return nb;
		rq->p_polls++;
		rq->p_frames += nb;
		rq->p_bytes += rq->m_sent_bytes;
		rq->p_tx_err_sum += rq->m_tx_err_sum;
		if (rq->m_tx_err_max > rq->p_tx_err_max)
			rq->p_tx_err_max = rq->m_tx_err_max;
		if (rq->m_polled != 0) {
			uint64_t err = rq->m_poll_now - rq->m_poll_ts;
			rq->p_polled += rq->m_polled;
			rq->p_poll_err_sum += err * rq->m_polled;
			if (err > rq->p_poll_err_max)
				rq->p_poll_err_max = err;
			rq->p_poll_ts = rq->m_poll_ts;
			rq->p_poll_now = rq->m_poll_now;
		}
	}
}

#endif
