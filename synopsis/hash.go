package synopsis

// Bit use of the packet identity h (classifier.Meta.Hash).
//
// One 64-bit hash is computed per packet and every synopsis derives what it
// needs from it, so the sender and the receiver agree without rehashing:
//
//   - LDA: the bank from the number of leading zeros of h (sampling
//     probabilities 2^-k, ToN paper Sec. III-B); the row from the low bits
//     of h; the ±1 sign of the std-dev estimator from the row's lowest bit
//     (rows 2i and 2i+1 collapse, Sec. III-E); the bucket digest adds
//     DigestMix(h), whose every bit depends on the bits above the row.
//   - RDA and LDS take their cell, bank and sampling bits from
//     Remix(h, salt) with a salt of their own, so their choices are
//     independent of the LDA's (the papers assume independent hash
//     functions; reusing LDA's bits would correlate a bucket's loss across
//     synopses).
//   - The trajectory Sample keeps a packet when Remix(h, SaltSample) has
//     its top Level bits zero and ships that value's low 32 bits as the
//     packet's digest, so its choice is independent of every synopsis
//     above and the digest independent of the choice.

// Remix derives an independent-looking 64-bit hash from h. It is the
// splitmix64 finalizer applied to h^salt: a bijection, so distinct packets
// stay distinct, and cheap enough for the hot path (no memory access).
func Remix(h, salt uint64) uint64 {
	x := h ^ salt
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// Salts for Remix, one per use, so that no two synopses share bits.
const (
	SaltRDA      uint64 = 0x52444120_b0a7c3e1 // "RDA "
	SaltLDSRow   uint64 = 0x4c445320_9e3779b9 // "LDS "
	SaltLDSCell  uint64 = 0x4c445343_7f4a7c15
	SaltSampling uint64 = 0x53414d50_c2b2ae35 // timestamp-cache sampling
)
