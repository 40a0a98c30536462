package synopsis

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
)

// Compact sender encoding of an LDA, for the control plane.
//
// The receiver needs from the sender only, per bucket, the count S_A and
// enough of the timestamp sum T_A to form T_B − T_A. The count is sent in
// full, as the offset from the bank's smallest count in the fewest bits
// that hold the bank's largest offset (the sender knows both; the counts of
// a bank cluster around N·p/m, so this is log2 of a few √(N·p/m)).
//
// The sum is sent as q = round(T_A / 2^r) mod 2^v, where r and v depend on
// the bucket's own count c (so the decoder, having read c, knows them):
//
//	span   = MaxDelayNs − MinDelayNs
//	r(c)   = floor(log2(2·c·MeanResolutionNs))   (0 when MeanResolutionNs = 0)
//	h      = 2^r / 2                              (0 when r = 0)
//	v(c)   = bitlen(c·span + 2h) + guard − r      (all 64 bits, r = 0, when that reaches 64)
//
// If every delay lies in [MinDelayNs, MaxDelayNs], the bucket's delay sum
// X = T_B − T_A satisfies 0 ≤ X − c·MinDelayNs ≤ c·span, and the receiver
// recovers
//
//	y = (T_B − c·MinDelayNs − q·2^r + h) mod 2^(v+r) = X − c·MinDelayNs + δ + h
//
// with δ = q·2^r − T_A's rounding error, |δ| ≤ h ≤ c·MeanResolutionNs: the
// sum of the bucket's delays is off by at most c·MeanResolutionNs, so the
// mean is off by at most MeanResolutionNs (0 ⇒ exact). The estimator adds
// MeanResolutionNs to MeanCINs. Each halving of the resolution costs one bit
// per bucket; each doubling of span costs one bit. With a resolution the
// width no longer grows with the count: ≈ log2(span/resolution) + guard.
//
// If y ≥ c·span + 2h the bounds were violated: the bucket is counted as
// implausible and the estimate is invalid (never a number from an aliased
// sum). With guard = 1 the window is at least twice the plausible range, so
// a bucket whose sum falls outside its window lands in the detectable gap
// unless the bounds are missed by more than c·span; violating buckets are
// caught independently, so an interval whose delays exceed the bounds is
// flagged with probability ≥ 1 − 2^-(violating buckets).
//
// Wire format, version 2:
//
//	offset  size        field
//	0       3           magic "LDC"
//	3       1           version = 2
//	4       1           flags: bit 0 = Digest
//	5       1           n = number of banks (1..16)
//	6       2·n         per bank: log2(Rows), SampleLog2
//	        uvarint     packets offered (every Add at the sender)
//	        varint      MinDelayNs (zig-zag)
//	        uvarint     span = MaxDelayNs − MinDelayNs, ns, 1 ≤ span < 2^63
//	        uvarint     MeanResolutionNs (0 = exact), < 2^32
//	        1           guard bits g (0..8)
//	        1           digest bits d (0..64; 0 unless Digest)
//	        per bank, then for the cover buckets when the LDA has them
//	        (every bank's SampleLog2 > 0, see LDACoverRows):
//	          uvarint   base: the bank's smallest bucket count
//	          1         count width cw (1..64)
//	        bit stream, LSB first, bank by bank, row by row, per bucket:
//	          cw bits   packet count c − base
//	          v(c) bits q, the rounded timestamp sum (nothing when c = 0)
//	          d bits    low bits of the digest (nothing when c = 0)
//	        then per cover bucket: cw bits count − base, d bits digest
//	        (nothing when c = 0)
//	        zero bits up to the byte boundary
//
// Version 1 carried the low bits of an XOR-of-h digest, of which the low
// log2(Rows) were the row number's parity and told nothing, and had no
// cover buckets; a version-2 decoder rejects it.
//
// Size: about cw + v(c) bits per bucket. Measured for 1024 buckets in
// lda_encoding_test.go (TestLDACompactSize) and docs/lda.md.
const (
	ldaCompactMagic   = "LDC"
	ldaCompactVersion = 2
	ldaCompactGuard   = 1 // guard bits per sum: see above
)

// CompactBounds state what the compact encoding may assume about delays.
type CompactBounds struct {
	// MinDelayNs and MaxDelayNs bound every one-way delay the receiver
	// can observe, clock offset included, ns. MinDelayNs may be negative
	// (a receiver clock behind the sender's). Each doubling of the span
	// costs one bit per non-empty bucket.
	MinDelayNs int64
	MaxDelayNs int64
	// MeanResolutionNs is how far (ns) the mean may be moved by rounding
	// the timestamp sums: 0 sends them exactly (the width then grows with
	// log2 of the bucket count); 1 ns keeps every bucket at about
	// log2(span) + 2 bits whatever the packet rate. Less than 2^32.
	MeanResolutionNs uint64
	// DigestBits is how many low bits of each bucket's digest are sent
	// (0..64) when the LDA keeps digests; 0 sends none (the receiver then
	// checks counts only). Every bit of a digest depends on the packets'
	// identities beyond their bucket (DigestMix), so 16 bits miss a
	// changed packet set with probability 2^-16 per bucket.
	DigestBits uint8
}

// DefaultCompactBounds: delays from −10 ms to 1 s, mean resolution 1 ns
// (below what software timestamps resolve), 16 digest bits.
//
// The range is what the encoding carries without aliasing, not an
// estimate of the path: 1 s covers a congested or long path (a queue of
// tens to hundreds of ms, a satellite hop) and −10 ms a receiver clock
// that NTP keeps within a few ms. The span, 1.01 s, just fits 2^30 ns: a
// non-empty bucket's sum takes 30–31 bits (the guard bit included), 10
// more than a 1 ms span needs. The sender cannot know the delays to pick
// a narrower window, and a window chosen from earlier intervals would
// alias (make invalid) the very interval where a queue builds up; so the
// window is fixed, and at 1 ns resolution microsecond delays lose
// nothing. A narrower MaxDelayNs saves a bit per halving (a violation
// invalidates the interval, it never gives a wrong number). Nothing else
// uses this range as an estimate of the delays: the appliance bounds a
// flow's mean by the range the interval actually showed (docs/lda.md,
// "Delay ranges").
func DefaultCompactBounds() CompactBounds {
	return CompactBounds{MinDelayNs: -10_000_000, MaxDelayNs: 1_000_000_000, MeanResolutionNs: 1, DigestBits: 16}
}

func (cb CompactBounds) validate() error {
	if cb.MaxDelayNs <= cb.MinDelayNs {
		return fmt.Errorf("%w: compact bounds: max delay %d ns ≤ min delay %d ns", ErrBadConfig, cb.MaxDelayNs, cb.MinDelayNs)
	}
	if cb.MinDelayNs < 0 && cb.MaxDelayNs > math.MaxInt64+cb.MinDelayNs {
		return fmt.Errorf("%w: compact bounds: delay span from %d to %d ns overflows", ErrBadConfig, cb.MinDelayNs, cb.MaxDelayNs)
	}
	if cb.MeanResolutionNs >= 1<<32 {
		return fmt.Errorf("%w: compact bounds: mean resolution %d ns ≥ 2^32", ErrBadConfig, cb.MeanResolutionNs)
	}
	if cb.DigestBits > 64 {
		return fmt.Errorf("%w: compact bounds: %d digest bits > 64", ErrBadConfig, cb.DigestBits)
	}
	return nil
}

// ldaSumShape returns r(c), v(c) and h (see above) for a bucket of count
// c: the sum is sent rounded to 2^r in v bits. v = 64 means the full sum,
// exact (r = 0).
func ldaSumShape(c, span, res uint64, guard uint8) (r, v uint, h uint64) {
	if c == 0 {
		return 0, 0, 0
	}
	if res > 0 {
		hi, lo := bits.Mul64(c, 2*res) // res < 2^32
		if hi != 0 {
			return 0, 64, 0
		}
		r = uint(bits.Len64(lo)) - 1
		if r > 0 {
			h = 1 << (r - 1)
		}
	}
	hi, lo := bits.Mul64(c, span)
	window, carry := bits.Add64(lo, 2*h, 0)
	if hi != 0 || carry != 0 {
		return 0, 64, 0
	}
	total := uint(bits.Len64(window)) + uint(guard)
	if total >= 64 {
		return 0, 64, 0
	}
	return r, total - r, h
}

// ldaCountGroups lists the cell ranges [from, to) that share a count base
// and width in the compact encoding: each bank, then the cover buckets.
func ldaCountGroups(cfg *LDAConfig) [][2]int {
	g := make([][2]int, 0, len(cfg.Banks)+1)
	off := 0
	for _, bk := range cfg.Banks {
		g = append(g, [2]int{off, off + bk.Rows})
		off += bk.Rows
	}
	if c := cfg.coverRows(); c > 0 {
		g = append(g, [2]int{off, off + c})
	}
	return g
}

func lowBits(v uint64, w uint) uint64 {
	if w >= 64 {
		return v
	}
	return v & (1<<w - 1)
}

// AppendCompact appends the compact sender encoding of l (see the format
// above) to b. The only errors are invalid bounds and a zero-value LDA
// (wrapping ErrBadConfig).
func (l *LDA) AppendCompact(b []byte, bounds CompactBounds) ([]byte, error) {
	if err := bounds.validate(); err != nil {
		return b, err
	}
	if len(l.cfg.Banks) == 0 {
		return b, errLDANoConfig
	}
	if !l.cfg.Digest {
		bounds.DigestBits = 0
	}
	span := uint64(bounds.MaxDelayNs) - uint64(bounds.MinDelayNs)
	b = append(b, ldaCompactMagic...)
	b = append(b, ldaCompactVersion)
	b = appendLDAConfig(b, &l.cfg)
	b = binary.AppendUvarint(b, l.offered)
	b = binary.AppendVarint(b, bounds.MinDelayNs)
	b = binary.AppendUvarint(b, span)
	b = binary.AppendUvarint(b, bounds.MeanResolutionNs)
	b = append(b, ldaCompactGuard, bounds.DigestBits)
	groups := ldaCountGroups(&l.cfg)
	widths := make([]uint, len(groups))
	bases := make([]uint64, len(groups))
	for j, g := range groups {
		cells := l.cells[g[0]:g[1]]
		lo, hi := cells[0].count, cells[0].count
		for _, c := range cells {
			lo, hi = min(lo, c.count), max(hi, c.count)
		}
		bases[j] = lo
		widths[j] = max(1, uint(bits.Len64(hi-lo))) // ≥ 1 bit per bucket bounds what a decoder allocates per input byte
		b = binary.AppendUvarint(b, lo)
		b = append(b, byte(widths[j]))
	}
	w := bitWriter{b: b}
	n := l.cfg.TotalRows()
	for j, g := range groups {
		for i := g[0]; i < g[1]; i++ {
			c := l.cells[i]
			w.write(c.count-bases[j], widths[j])
			if c.count == 0 {
				continue
			}
			if i < n {
				r, v, h := ldaSumShape(c.count, span, bounds.MeanResolutionNs, ldaCompactGuard)
				w.write((c.sum+h)>>r, v) // rounded; wraps like the sum itself
			}
			if bounds.DigestBits > 0 {
				w.write(c.dig, uint(bounds.DigestBits))
			}
		}
	}
	return w.flush(), nil
}

// CompactLDA is a sender LDA decoded from its compact encoding: exact
// counts, timestamp sums modulo 2^w(count), truncated digests. It can only
// be estimated against the receiver's full LDA (EstimateLDACompact).
type CompactLDA struct {
	cfg        LDAConfig
	offered    uint64
	minDelay   int64
	span       uint64
	resolution uint64 // MeanResolutionNs
	guard      uint8
	digestBits uint8
	widths     []uint   // count width per bank (then the cover buckets)
	bases      []uint64 // smallest count per bank (then the cover buckets)
	counts     []uint64 // per bucket, like LDA.cells (cover buckets included)
	sums       []uint64 // rounded timestamp sum q mod 2^v(count); 0 for cover buckets
	digests    []uint64 // low digestBits bits; nil when digestBits = 0
	folded     bool     // Fold changed the shape: sums is nil (see Fold)
}

// Config is the sender's LDA configuration.
func (c *CompactLDA) Config() LDAConfig { return c.cfg.clone() }

// Count is the number of packets offered to the sender's LDA.
func (c *CompactLDA) Count() uint64 { return c.offered }

// Bounds are the delay bounds the encoding was made with.
func (c *CompactLDA) Bounds() CompactBounds {
	return CompactBounds{MinDelayNs: c.minDelay, MaxDelayNs: c.minDelay + int64(c.span), MeanResolutionNs: c.resolution, DigestBits: c.digestBits}
}

// BucketCount is the sender's packet count of one bucket (0 when out of
// range), e.g. to find buckets with exactly one loss.
func (c *CompactLDA) BucketCount(bank, row int) uint64 {
	if bank < 0 || bank >= len(c.cfg.Banks) || row < 0 || row >= c.cfg.Banks[bank].Rows {
		return 0
	}
	off := 0
	for j := 0; j < bank; j++ {
		off += c.cfg.Banks[j].Rows
	}
	return c.counts[off+row]
}

// UnmarshalBinary replaces c with the compact encoding in b. On error
// (wrapping ErrBadEncoding) c is unchanged.
func (c *CompactLDA) UnmarshalBinary(b []byte) error {
	r := encReader{b: b}
	r.magic(ldaCompactMagic, ldaCompactVersion)
	n := CompactLDA{cfg: readLDAConfig(&r)}
	n.offered = r.uvarint("packets offered")
	n.minDelay = r.varint("min delay")
	n.span = r.uvarint("delay span")
	n.resolution = r.uvarint("mean resolution")
	n.guard = r.u8("guard bits")
	n.digestBits = r.u8("digest bits")
	if r.err != nil {
		return r.err
	}
	switch {
	case n.span == 0 || n.span > 1<<63-1 || n.minDelay > 1<<63-1-int64(n.span):
		r.fail("delay span %d from %d ns", n.span, n.minDelay)
	case n.resolution >= 1<<32:
		r.fail("mean resolution %d ns", n.resolution)
	case n.guard > 8:
		r.fail("%d guard bits", n.guard)
	case n.digestBits > 64 || (n.digestBits > 0 && !n.cfg.Digest):
		r.fail("%d digest bits (digest %v)", n.digestBits, n.cfg.Digest)
	}
	groups := ldaCountGroups(&n.cfg)
	n.widths = make([]uint, len(groups))
	n.bases = make([]uint64, len(groups))
	minBits := 0
	for j, g := range groups {
		n.bases[j] = r.uvarint("count base")
		n.widths[j] = uint(r.u8("count width"))
		if r.err == nil && (n.widths[j] < 1 || n.widths[j] > 64) {
			r.fail("bank %d: count width %d", j, n.widths[j])
		}
		minBits += (g[1] - g[0]) * int(n.widths[j])
	}
	if r.err == nil && len(r.b)*8 < minBits {
		r.fail("truncated: counts need %d bits, %d left", minBits, len(r.b)*8)
	}
	if r.err != nil {
		return r.err
	}
	rows := n.cfg.TotalRows()
	total := rows + n.cfg.coverRows()
	n.counts = make([]uint64, total)
	n.sums = make([]uint64, total)
	if n.digestBits > 0 {
		n.digests = make([]uint64, total)
	}
	br := bitReader{b: r.b}
	var sampled uint64
	for j, g := range groups {
		for i := g[0]; i < g[1]; i++ {
			cnt, carry := bits.Add64(br.read(n.widths[j]), n.bases[j], 0)
			if carry != 0 {
				r.fail("bucket count overflows")
				return r.err
			}
			n.counts[i] = cnt
			if cnt == 0 {
				continue
			}
			if i < rows {
				_, v, _ := ldaSumShape(cnt, n.span, n.resolution, n.guard)
				n.sums[i] = br.read(v)
			}
			if n.digests != nil {
				n.digests[i] = br.read(uint(n.digestBits))
			}
			sampled, carry = bits.Add64(sampled, cnt, 0)
			if carry != 0 || sampled > n.offered {
				r.fail("bucket counts exceed the %d packets offered", n.offered)
				return r.err
			}
		}
	}
	switch {
	case br.err:
		r.fail("truncated bit stream")
	case !br.cleanEnd():
		r.fail("non-zero padding or %d trailing bytes", len(br.b))
	}
	if r.err != nil {
		return r.err
	}
	*c = n
	return nil
}

// AppendBinary re-encodes c exactly as the sender did (AppendCompact).
func (c *CompactLDA) AppendBinary(b []byte) ([]byte, error) {
	if c.folded {
		return b, errLDACompactFolded
	}
	b = append(b, ldaCompactMagic...)
	b = append(b, ldaCompactVersion)
	b = appendLDAConfig(b, &c.cfg)
	b = binary.AppendUvarint(b, c.offered)
	b = binary.AppendVarint(b, c.minDelay)
	b = binary.AppendUvarint(b, c.span)
	b = binary.AppendUvarint(b, c.resolution)
	b = append(b, c.guard, c.digestBits)
	for j, w := range c.widths {
		b = binary.AppendUvarint(b, c.bases[j])
		b = append(b, byte(w))
	}
	w := bitWriter{b: b}
	rows := c.cfg.TotalRows()
	for j, g := range ldaCountGroups(&c.cfg) {
		for i := g[0]; i < g[1]; i++ {
			w.write(c.counts[i]-c.bases[j], c.widths[j])
			if c.counts[i] == 0 {
				continue
			}
			if i < rows {
				_, v, _ := ldaSumShape(c.counts[i], c.span, c.resolution, c.guard)
				w.write(c.sums[i], v)
			}
			if c.digests != nil {
				w.write(c.digests[i], uint(c.digestBits))
			}
		}
	}
	return w.flush(), nil
}

// EstimateLDACompact is EstimateLDA with the sender's LDA in compact form.
func EstimateLDACompact(sender *CompactLDA, receiver *LDA, conf float64) (Estimate, error) {
	e, _, err := EstimateLDACompactDetailed(sender, receiver, conf)
	return e, err
}

// EstimateLDACompactDetailed is EstimateLDACompact plus diagnostics; a
// bucket whose reconstructed delay sum falls outside the bounds is counted
// in ImplausibleBuckets and makes the estimate invalid.
func EstimateLDACompactDetailed(sender *CompactLDA, receiver *LDA, conf float64) (Estimate, LDADiagnostics, error) {
	if !sender.cfg.equal(receiver.cfg) || len(sender.counts) != len(receiver.cells) {
		return Estimate{Synopsis: "lda"}, LDADiagnostics{}, fmt.Errorf("%w: LDA sender %v, receiver %v", ErrConfigMismatch, sender.cfg, receiver.cfg)
	}
	if sender.folded {
		return Estimate{Synopsis: "lda"}, LDADiagnostics{}, errLDACompactFolded
	}
	var d LDADiagnostics
	rows := receiver.cfg.TotalRows()
	pairs := make([]ldaBucketPair, rows)
	minD := uint64(sender.minDelay)
	mass := receiver.cfg.bucketMass()
	for i := range receiver.cells {
		cA, rb := sender.counts[i], receiver.cells[i]
		digDiffer := sender.digests != nil && lowBits(rb.dig, uint(sender.digestBits)) != sender.digests[i]
		d.noteExtra(cA, rb.count, digDiffer, mass[i])
		if i >= rows {
			continue // cover bucket: integrity only
		}
		switch {
		case cA != rb.count:
			d.CountMismatch++
			continue
		case cA == 0:
			d.EmptyBuckets++
			pairs[i].usable = true // agrees; see ldaBucketPair
			continue
		case digDiffer:
			d.DigestMismatch++
			continue
		}
		r, v, h := ldaSumShape(cA, sender.span, sender.resolution, sender.guard)
		var delay uint64
		if v >= 64 {
			delay = rb.sum - sender.sums[i]
		} else {
			// v+r < 64 ⇒ c·span + 2h < 2^63: no overflow below.
			y := lowBits(rb.sum-cA*minD-sender.sums[i]<<r+h, v+r)
			if plaus := cA*sender.span + 2*h + boolUint(h == 0); y >= plaus {
				d.ImplausibleBuckets++
				// The window is at least twice the plausible range: a sum
				// in the upper half of the gap wrapped around from below
				// the minimum (modular arithmetic), one in the lower half
				// overran the maximum. A violation larger than the gap
				// aliases either way (see above).
				if window := uint64(1) << (v + r); y-plaus >= (window-plaus)/2 {
					d.BelowMinBuckets++
				}
				continue
			}
			delay = y - h + cA*minD
		}
		pairs[i] = ldaBucketPair{usable: true, count: cA, delay: delay}
	}
	e := ldaEstimate(&receiver.cfg, pairs, sender.offered, receiver.offered, conf, float64(sender.resolution), &d)
	return e, d, nil
}

func boolUint(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}
