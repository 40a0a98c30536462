package synopsis

import (
	"errors"
	"fmt"
	"math/bits"
)

// Errors shared by every synopsis in this package. Other synopses wrap them
// (fmt.Errorf("%w: …", ErrConfigMismatch)) so callers can test with errors.Is.
var (
	// ErrConfigMismatch: two synopses with different configurations were
	// merged or compared (sender and receiver must be configured alike).
	ErrConfigMismatch = errors.New("synopsis: configuration mismatch")
	// ErrBadEncoding: bytes that are not a valid encoding (wrong magic or
	// version, truncated, trailing bytes, out-of-range field).
	ErrBadEncoding = errors.New("synopsis: bad encoding")
	// ErrBadConfig: a configuration that NewXxx rejects.
	ErrBadConfig = errors.New("synopsis: bad configuration")
)

// Limits of an LDA configuration. They keep a forged encoding from asking
// for absurd memory and keep the bank bits (leading zeros, high end of h)
// disjoint from the row bits (low end of h).
const (
	LDAMaxBanks      = 16      // banks per LDA
	LDAMaxRows       = 1 << 20 // rows per bank
	LDAMaxTotalRows  = 1 << 22 // rows over all banks (96 MiB of 24-byte buckets)
	LDAMaxSampleLog2 = 48      // sampling probability ≥ 2^-48
)

// BankConfig is one LDA bank: Rows accumulator-counter pairs (buckets),
// sampled with probability 2^-SampleLog2 (ToN paper Sec. III-B).
type BankConfig struct {
	Rows       int   // number of rows m; a power of two ≥ 2 (rows 2i, 2i+1 collapse for the std-dev)
	SampleLog2 uint8 // the bank takes packets whose hash has ≥ SampleLog2 leading zeros (see LDA)
}

// LDAConfig is the shape of an LDA. Sender and receiver must use equal
// configurations (same banks in the same order).
type LDAConfig struct {
	Banks []BankConfig
	// Digest keeps a per-bucket multiset digest of the packet hashes (the
	// wrap-around sum of DigestMix(h), see there): a bucket whose counts
	// match but whose packet sets differ (one lost, one extra: duplicated,
	// injected, remarked into the class or reordered in across an interval
	// boundary) is then discarded instead of biasing the mean, and counted
	// as evidence of extra packets, which makes the loss count unprovable.
	// DefaultLDAConfig and SizeLDA turn it on. Costs 8 bytes per bucket in
	// memory and the full encoding, DigestBits per bucket in the compact
	// one, and about one multiply per packet.
	Digest bool
}

// Validate reports whether c is a usable LDA configuration.
func (c LDAConfig) Validate() error {
	if len(c.Banks) == 0 || len(c.Banks) > LDAMaxBanks {
		return fmt.Errorf("%w: LDA needs 1..%d banks, got %d", ErrBadConfig, LDAMaxBanks, len(c.Banks))
	}
	total := 0
	var seen [LDAMaxSampleLog2 + 1]bool
	for i, b := range c.Banks {
		if b.Rows < 2 || b.Rows > LDAMaxRows || b.Rows&(b.Rows-1) != 0 {
			return fmt.Errorf("%w: LDA bank %d: rows %d must be a power of two in [2, %d]", ErrBadConfig, i, b.Rows, LDAMaxRows)
		}
		if b.SampleLog2 > LDAMaxSampleLog2 {
			return fmt.Errorf("%w: LDA bank %d: sample log2 %d > %d", ErrBadConfig, i, b.SampleLog2, LDAMaxSampleLog2)
		}
		if seen[b.SampleLog2] {
			// Two banks with one sampling rate: the later would never get a
			// packet (a packet goes to exactly one bank).
			return fmt.Errorf("%w: LDA bank %d: sample log2 %d used twice", ErrBadConfig, i, b.SampleLog2)
		}
		seen[b.SampleLog2] = true
		total += b.Rows
	}
	if total > LDAMaxTotalRows {
		return fmt.Errorf("%w: LDA has %d rows, more than %d", ErrBadConfig, total, LDAMaxTotalRows)
	}
	return nil
}

func (c LDAConfig) equal(o LDAConfig) bool {
	if c.Digest != o.Digest || len(c.Banks) != len(o.Banks) {
		return false
	}
	for i := range c.Banks {
		if c.Banks[i] != o.Banks[i] {
			return false
		}
	}
	return true
}

func (c LDAConfig) clone() LDAConfig {
	c.Banks = append([]BankConfig(nil), c.Banks...)
	return c
}

// TotalRows is the number of buckets over all banks.
func (c LDAConfig) TotalRows() int {
	n := 0
	for _, b := range c.Banks {
		n += b.Rows
	}
	return n
}

// String gives the configuration in a compact form, e.g. "8x128@0,2,…".
func (c LDAConfig) String() string {
	s := ""
	for i, b := range c.Banks {
		if i > 0 {
			s += " "
		}
		s += fmt.Sprintf("%d@2^-%d", b.Rows, b.SampleLog2)
	}
	if c.Digest {
		s += " +digest"
	}
	return s
}

// LDACoverRows is the size of the cover bank: when no bank samples with
// probability 1 (every SampleLog2 > 0), the packets no bank samples are
// still counted, with their digests, in LDACoverRows buckets that never
// enter the delay estimate. Without them a packet the receiver recorded and
// the sender did not (a duplicate, a frame injected inside the segment)
// could hide among the unsampled packets and balance a loss.
const LDACoverRows = 64

// coverRows is the number of cover buckets of c: LDACoverRows when some
// hash (one with fewer leading zeros than every bank's SampleLog2) enters
// no bank, else 0.
func (c LDAConfig) coverRows() int {
	for _, b := range c.Banks {
		if b.SampleLog2 == 0 {
			return 0
		}
	}
	if len(c.Banks) == 0 {
		return 0
	}
	return LDACoverRows
}

// ldaCell is one bucket: timestamp accumulator, packet counter and digest
// side by side so an update touches one cache line.
type ldaCell struct {
	sum   uint64 // wrap-around sum of absolute timestamps, ns
	count uint64 // packets
	dig   uint64 // wrap-around sum of DigestMix(h); 0 unless cfg.Digest
}

// digestMul is an odd 64-bit constant (2^64/φ) for DigestMix.
const digestMul = 0x9e3779b97f4a7c15

// DigestMix is a packet's contribution to its bucket's digest: h times an
// odd constant, then the high half folded onto the low half. It is a
// bijection (so DigestMixInverse recovers h from the digest difference of a
// bucket with one packet of difference), and every bit of it, the low ones
// included, depends on the bits of h above the row bits: the bucket row is
// the low bits of h and the bank its leading zeros, so a plain h (or an XOR
// of h) would repeat, in every packet of a bucket, exactly the bits the
// digest compares. Summing instead of XORing compares multisets: two
// identical frames add twice instead of cancelling.
func DigestMix(h uint64) uint64 {
	x := h * digestMul
	return x ^ x>>32
}

// digestMulInv is the multiplicative inverse of digestMul mod 2^64.
const digestMulInv = 0xf1de83e19937733d

// DigestMixInverse returns the h with DigestMix(h) = m.
func DigestMixInverse(m uint64) uint64 {
	x := m ^ m>>32 // x>>32 = m>>32, so the low half is recovered by one more XOR
	return x * digestMulInv
}

// ldaSel maps a leading-zero count to the bucket range of its bank.
type ldaSel struct {
	off  uint32 // index of the bank's row 0 in cells
	mask uint32 // rows-1; 0 = no bank (packet not sampled)
}

// LDA is a Lossy Difference Aggregator (ToN paper Sec. III): n banks of m
// rows of (timestamp sum, packet count [, hash digest]).
//
// A packet with identity hash h goes to at most one bank: the bank with the
// largest SampleLog2 ≤ bits.LeadingZeros64(h). Bank j therefore samples
// with probability 2^-s_j − 2^-s_next (disjoint sample sets, Sec. III-B);
// the bank with the largest SampleLog2 gets every packet with at least that
// many leading zeros. The row is the low bits of h; the lowest row bit is
// the ±1 sign of the std-dev estimator (Sec. III-E).
//
// Every Add is counted (Count), sampled or not, and every packet lands in
// some bucket with its digest (a cover bucket when no bank samples it, see
// LDACoverRows), so an extra packet at the receiver shows wherever no
// larger loss in its bucket hides it.
//
// An LDA is not safe for concurrent use: give each worker its own and
// Merge them on the control side. The zero value records nothing but the
// packet count; use NewLDA.
type LDA struct {
	sel     [65]ldaSel // by leading zeros of h (0..64)
	offered uint64     // every Add, sampled or not
	cells   []ldaCell  // all banks, bank-major, row-minor, then the cover buckets
	digest  bool       // cfg.Digest
	offs    []int      // first cell of each bank
	cfg     LDAConfig
}

// NewLDA returns an empty LDA with configuration cfg (which it copies).
func NewLDA(cfg LDAConfig) (*LDA, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	l := &LDA{cfg: cfg.clone(), digest: cfg.Digest}
	n := cfg.TotalRows()
	cover := cfg.coverRows()
	l.cells = make([]ldaCell, n+cover)
	l.offs = make([]int, len(cfg.Banks))
	off := 0
	for i, b := range cfg.Banks {
		l.offs[i] = off
		off += b.Rows
	}
	// For every leading-zero count lz, the bank with the largest
	// SampleLog2 ≤ lz.
	for lz := 0; lz <= 64; lz++ {
		best := -1
		for i, b := range cfg.Banks {
			if int(b.SampleLog2) <= lz && (best < 0 || b.SampleLog2 > cfg.Banks[best].SampleLog2) {
				best = i
			}
		}
		switch {
		case best >= 0:
			l.sel[lz] = ldaSel{off: uint32(l.offs[best]), mask: uint32(cfg.Banks[best].Rows - 1)}
		case cover > 0:
			l.sel[lz] = ldaSel{off: uint32(n), mask: uint32(cover - 1)}
		}
	}
	return l, nil
}

// MustNewLDA is NewLDA for configurations known to be valid (tests,
// package-level defaults); it panics on a bad configuration.
func MustNewLDA(cfg LDAConfig) *LDA {
	l, err := NewLDA(cfg)
	if err != nil {
		panic(err)
	}
	return l
}

// Add records one packet with identity hash h seen at absolute time ts
// (ns). It allocates nothing and uses no floating point.
func (l *LDA) Add(h uint64, ts uint64) {
	l.offered++
	s := l.sel[bits.LeadingZeros64(h)]
	if s.mask == 0 {
		return // zero-value LDA: no banks
	}
	c := &l.cells[s.off+uint32(h)&s.mask]
	c.sum += ts // wraps; differences of sums stay exact
	c.count++
	if l.digest {
		c.dig += DigestMix(h)
	}
}

// Merge adds o into l (per-worker shards of one interval). Both must have
// the same configuration; otherwise it returns an error wrapping
// ErrConfigMismatch and l is unchanged.
func (l *LDA) Merge(o *LDA) error {
	if !l.cfg.equal(o.cfg) {
		return fmt.Errorf("%w: LDA merge %v with %v", ErrConfigMismatch, l.cfg, o.cfg)
	}
	l.offered += o.offered
	for i := range l.cells {
		l.cells[i].sum += o.cells[i].sum
		l.cells[i].count += o.cells[i].count
		l.cells[i].dig += o.cells[i].dig
	}
	return nil
}

// Reset empties l, keeping its configuration and memory.
func (l *LDA) Reset() {
	l.offered = 0
	clear(l.cells)
}

// Clone returns a deep copy of l.
func (l *LDA) Clone() *LDA {
	c := *l
	c.cfg = l.cfg.clone()
	c.cells = append([]ldaCell(nil), l.cells...)
	c.offs = append([]int(nil), l.offs...)
	return &c
}

// CopyInto makes dst a copy of l, reusing dst's memory when it has l's
// configuration (else, or when dst is nil, it returns a new copy): the
// sender keeps each interval's recorded LDA this way while a receiver may
// still ask for it at a larger shape.
func (l *LDA) CopyInto(dst *LDA) *LDA {
	if dst == nil || !dst.cfg.equal(l.cfg) || len(dst.cells) != len(l.cells) {
		return l.Clone()
	}
	dst.offered = l.offered
	copy(dst.cells, l.cells)
	return dst
}

// Config returns a copy of l's configuration.
func (l *LDA) Config() LDAConfig { return l.cfg.clone() }

// Count is the number of packets offered to Add, sampled into a bank or
// not: the exact number sent (at a sender) or received (at a receiver).
func (l *LDA) Count() uint64 { return l.offered }

// Sampled is the number of packets recorded in some bank (cover buckets
// excluded).
func (l *LDA) Sampled() uint64 {
	var n uint64
	for _, c := range l.cells[:l.cfg.TotalRows()] {
		n += c.count
	}
	return n
}

// NumBanks is the number of banks.
func (l *LDA) NumBanks() int { return len(l.cfg.Banks) }

// Bucket returns the timestamp sum (ns, wrap-around), packet count and
// digest (0 without Digest) of one bucket. Bank NumBanks() is the cover
// bank (LDACoverRows rows when the configuration has one). Out-of-range
// indices give zeros.
func (l *LDA) Bucket(bank, row int) (tsSum, count, digest uint64) {
	var i int
	switch {
	case bank >= 0 && bank < len(l.cfg.Banks) && row >= 0 && row < l.cfg.Banks[bank].Rows:
		i = l.offs[bank] + row
	case bank == len(l.cfg.Banks) && row >= 0 && row < l.cfg.coverRows():
		i = l.cfg.TotalRows() + row
	default:
		return 0, 0, 0
	}
	return l.cells[i].sum, l.cells[i].count, l.cells[i].dig
}

// equalState reports whether l and o hold the same configuration and
// counters (tests, fuzzing).
func (l *LDA) equalState(o *LDA) bool {
	if !l.cfg.equal(o.cfg) || l.offered != o.offered || len(l.cells) != len(o.cells) {
		return false
	}
	n := l.cfg.TotalRows()
	for i := range l.cells {
		a, b := l.cells[i], o.cells[i]
		if i >= n { // cover buckets: their timestamp sums are never encoded or read
			a.sum, b.sum = 0, 0
		}
		if a != b {
			return false
		}
	}
	return true
}
