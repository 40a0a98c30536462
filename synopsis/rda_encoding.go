package synopsis

import (
	"encoding/binary"
	"fmt"
	"math/bits"
)

// RDA encoding, version 3: the cells, exactly (a decoded RDA subtracts,
// merges and re-encodes like the original), but not the timestamp cache,
// which stays at its end (docs/rda.md, "Exchange"):
//
//	offset  size      field
//	0       3         magic "RDA"
//	3       1         version = 3
//	4       1         flags: bit 0 = the encoder had a timestamp cache;
//	                  bit 1 = sparse (below); other bits 0
//	5       1         that cache's sampling level (0..63; 0 without bit 0)
//	6       uvarint   banks k (1..16)
//	        uvarint   cells per bank m (2..2^22; k·m ≤ 2^24)
//	        8         base timestamp B, little-endian, ns
//	        dense: per cell, bank by bank, the cell:
//	          8        ID (XOR of packet identities), little-endian
//	          8        chk (XOR of rdaCheck of the identities), little-endian
//	          varint   Δ (zig-zag, signed packet count)
//	          varint   TS − Δ·B (zig-zag; wrap-around uint64 arithmetic)
//	        sparse: uvarint n, the cells that are not empty (all four
//	          fields 0), then n times: uvarint gap (empty cells since the
//	          previous one written, or since the first), the cell
//
// The encoder writes the shorter: an interval of a quiet measurement class
// (no packets, or a few in an RDA of thousands of cells) costs a few bytes
// instead of 18 per cell.
//
// Storing TS relative to Δ·B (B = the first timestamp of the interval)
// leaves the spread of the cell's timestamps around B: about 5 bytes for
// a 1 s interval instead of 8, so a cell costs about 23 bytes. The
// transformation is a bijection on 64 bits, so any B is lossless. All
// varints are minimal; trailing bytes are an error.
//
// Version 2 was the same without the sparse form, version 1 also without
// chk (the paper's cell). Neither is read: both ends must run a build with
// version 3; an older peer's encoding fails with an error naming its
// version.
const (
	rdaMagic       = "RDA"
	rdaVersion     = 3
	rdaFlagCache   = 1 << 0
	rdaFlagSparse  = 1 << 1
	rdaMinCellSize = 8 + 8 + 1 + 1
)

// AppendBinary appends r's encoding to b. It never fails; the error is for
// encoding.BinaryAppender.
func (r *RDA) AppendBinary(b []byte) ([]byte, error) {
	b = append(b, rdaMagic...)
	b = append(b, rdaVersion)
	level, has := r.sampleLevel()
	var flags byte
	if has {
		flags |= rdaFlagCache
	}
	// Sparse when the empty cells it skips outweigh the gaps it writes
	// (a gap costs a byte or two, an empty cell 18).
	used := 0
	for _, c := range r.cells {
		if c != (rdaCell{}) {
			used++
		}
	}
	sparse := rdaSparse(used, len(r.cells))
	if sparse {
		flags |= rdaFlagSparse
	}
	b = append(b, flags, level)
	b = binary.AppendUvarint(b, uint64(r.k))
	b = binary.AppendUvarint(b, r.m)
	b = binary.LittleEndian.AppendUint64(b, r.base)
	if sparse {
		b = binary.AppendUvarint(b, uint64(used))
	}
	gap := uint64(0)
	for _, c := range r.cells {
		if sparse {
			if c == (rdaCell{}) {
				gap++
				continue
			}
			b = binary.AppendUvarint(b, gap)
			gap = 0
		}
		b = binary.LittleEndian.AppendUint64(b, c.id)
		b = binary.LittleEndian.AppendUint64(b, c.chk)
		b = binary.AppendVarint(b, c.n)
		b = binary.AppendVarint(b, int64(c.ts-uint64(c.n)*r.base))
	}
	return b, nil
}

// rdaSparse: the encoder's choice of form for used non-empty cells of n.
func rdaSparse(used, n int) bool { return used < n*8/9 }

// MarshalBinary is AppendBinary(nil).
func (r *RDA) MarshalBinary() ([]byte, error) { return r.AppendBinary(nil) }

// UnmarshalBinary replaces r with the RDA encoded in b. The result has no
// timestamp cache of its own (CacheBudget 0) but remembers the encoder's
// sampling level, so EstimateRDA knows which lost packets the sender can
// supply timestamps for (RDAStats.MissingSender). On error (wrapping
// ErrBadEncoding) r is unchanged.
func (r *RDA) UnmarshalBinary(b []byte) error {
	d := encReader{b: b}
	if len(b) >= 4 && string(b[:3]) == rdaMagic && (b[3] == 1 || b[3] == 2) {
		d.fail("RDA version %d is no longer read; this build reads version %d: upgrade the sender", b[3], rdaVersion)
	}
	d.magic(rdaMagic, rdaVersion)
	flags := d.u8("flags")
	level := d.u8("sampling level")
	k := d.uvarint("banks")
	m := d.uvarint("cells per bank")
	base := d.u64("base timestamp")
	if d.err != nil {
		return d.err
	}
	sparse := flags&rdaFlagSparse != 0
	var used uint64
	if sparse && d.err == nil {
		used = d.uvarint("cells written")
	}
	usedAll := used
	switch {
	case flags&^(rdaFlagCache|rdaFlagSparse) != 0:
		d.fail("unknown flags %#x", flags)
	case flags&rdaFlagCache == 0 && level != 0:
		d.fail("sampling level %d without a cache", level)
	case level > tsMaxLevel:
		d.fail("sampling level %d > %d", level, tsMaxLevel)
	case k < 1 || k > RDAMaxBanks || m < 2 || m > RDAMaxCells || k*m > RDAMaxTotalCells:
		d.fail("shape %d×%d outside the limits", k, m)
	case sparse && used > k*m:
		d.fail("%d cells written of %d", used, k*m)
	case !sparse && uint64(len(d.b)) < k*m*rdaMinCellSize:
		d.fail("truncated: %d cells need at least %d bytes, %d left", k*m, k*m*rdaMinCellSize, len(d.b))
	case sparse && uint64(len(d.b)) < used*(rdaMinCellSize+1):
		d.fail("truncated: %d cells need at least %d bytes, %d left", used, used*(rdaMinCellSize+1), len(d.b))
	}
	if d.err != nil {
		return d.err
	}
	cells := make([]rdaCell, k*m)
	cell := func(i uint64) {
		id := d.u64("cell ID")
		chk := d.u64("cell check")
		n := d.varint("cell count")
		rel := d.varint("cell TS")
		cells[i] = rdaCell{id: id, chk: chk, n: n, ts: uint64(rel) + uint64(n)*base}
	}
	if sparse {
		next := uint64(0) // the index of the next cell written
		for ; used > 0 && d.err == nil; used-- {
			gap := d.uvarint("gap")
			if d.err == nil && gap >= uint64(len(cells))-next {
				d.fail("gap %d past the last cell", gap)
			}
			if d.err != nil {
				return d.err
			}
			next += gap
			cell(next)
			next++
		}
	} else {
		for i := range cells {
			cell(uint64(i))
		}
	}
	if err := d.done(); err != nil {
		return err
	}
	// One RDA, one encoding: a sparse form that writes an empty cell, or a
	// form the encoder would not have chosen, is refused, so a decoded RDA
	// re-encodes to the very bytes it came from.
	written := 0
	for _, c := range cells {
		if c != (rdaCell{}) {
			written++
		}
	}
	if sparse && uint64(written) != usedAll {
		d.fail("sparse form writes %d empty cells", usedAll-uint64(written))
	} else if sparse != rdaSparse(written, len(cells)) {
		d.fail("non-canonical form (sparse=%v for %d of %d cells used)", sparse, written, len(cells))
	}
	if d.err != nil {
		return d.err
	}
	*r = RDA{
		cells:       cells,
		m:           m,
		k:           int(k),
		base:        base,
		remoteLevel: level,
		hasRemote:   flags&rdaFlagCache != 0,
		cfg:         RDAConfig{Banks: int(k), Cells: int(m)},
	}
	r.setIndexing()
	return nil
}

// Fold returns r with m cells per bank: r's cells per bank must be m·2^j
// (j ≥ 0), and cells f·i … f·i+f−1 (f = 2^j) of each bank merge into cell
// i. Cells are chosen by fastrange, ⌊x·m/2^w⌋, and ⌊⌊x·fm/2^w⌋/f⌋ =
// ⌊x·m/2^w⌋, so every packet lands in the cell an RDA built with m cells
// would have chosen: the folded RDA subtracts, peels and estimates like
// one. A sender folds its RDA to fit a control budget and the receiver
// folds its own copy to the size the encoding announces. The result
// shares r's timestamp cache (read-only use). It fails when m does not
// divide r's cells by a power of two, or when the smaller shape would pick
// cells another way (setIndexing).
func (r *RDA) Fold(m int) (*RDA, error) {
	if m < 2 || uint64(m) > r.m || r.m%uint64(m) != 0 || (r.m/uint64(m))&(r.m/uint64(m)-1) != 0 {
		return nil, fmt.Errorf("%w: RDA of %d cells per bank cannot fold to %d", ErrBadConfig, r.m, m)
	}
	if uint64(m) == r.m {
		return r, nil
	}
	g := &RDA{m: uint64(m), k: r.k, base: r.base, cache: r.cache, remoteLevel: r.remoteLevel, hasRemote: r.hasRemote, cfg: r.cfg}
	g.cfg.Cells = m
	g.setIndexing()
	if g.chunk != r.chunk {
		return nil, fmt.Errorf("%w: RDA of %d cells per bank picks cells unlike one of %d: cannot fold", ErrBadConfig, r.m, m)
	}
	g.cells = make([]rdaCell, r.k*m)
	shift := uint(bits.TrailingZeros64(r.m / uint64(m)))
	for b := 0; b < r.k; b++ {
		src, dst := r.cells[b*int(r.m):(b+1)*int(r.m)], g.cells[b*m:(b+1)*m]
		for i := range src {
			c, d := &src[i], &dst[i>>shift]
			d.id ^= c.id
			d.chk ^= c.chk
			d.n += c.n
			d.ts += c.ts
		}
	}
	return g, nil
}

// FoldTo is the largest cells-per-bank m ≤ limit that r folds to (r's
// cells halved while even and the indexing stays the same), or 0 if none.
func (r *RDA) FoldTo(limit int) int {
	m := r.m
	for m > uint64(limit) {
		if m%2 != 0 || m/2 < 2 {
			return 0
		}
		m /= 2
	}
	g := &RDA{m: m, k: r.k}
	g.setIndexing()
	if g.chunk != r.chunk {
		return 0
	}
	return int(m)
}
