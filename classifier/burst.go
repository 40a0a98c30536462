package classifier

import "unsafe"

// Burst parses the frames of one rx burst together and computes their
// identity hashes eight at a time (xxh64x8): Add stages each frame, filling
// its Meta but for the hash and parking its invariant words in a
// transposed group; Hash then runs the 8-lane kernel over the groups and
// stores every frame's hash. The result is what Parse gives frame by
// frame, bit for bit (TestBurstIsParse, FuzzBurst).
//
// Why: per packet, scalar XXH64 over the 48-80 invariant bytes is the
// largest cost of measuring (docs/performance.md); with eight packets per
// vector lane and two groups in flight it falls to a fraction. Parsing a
// whole burst before hashing also lets the loads of many frames' headers
// overlap instead of queueing behind one hash chain after another.
//
// A Burst belongs to one worker (no locking) and allocates only in
// NewBurst. Its zero value is not usable.
type Burst struct {
	// Lean skips the flow key: for frames on the fast path (untagged
	// IPv4/IPv6 TCP/UDP) only Hash, Flags and Len are written, the other
	// Meta fields keep what they held. Set it when nothing reads more —
	// a lane with only the default MEC and no LDS — and the flow key's
	// stores and hash (a third of the fast path) are saved. Frames on
	// the general path always get every field.
	Lean bool

	// Staged frames per identity length: IPv4 (6 words), non-IP (8) and
	// IPv6 (10), their groups, and which Meta each lane belongs to.
	n4, n8, n10 int
	g4          []group4
	g8          []group8
	g10         []group10
	i4, i8, i10 []int32
	out         []uint64 // kernel output, 8 per group
	id          ident    // the general path's words
}

// NewBurst returns a Burst for bursts of up to size frames. More frames
// than that still parse correctly, hashed one at a time.
func NewBurst(size int) *Burst {
	groups := (max(size, 1) + 7) / 8
	return &Burst{
		g4: make([]group4, groups), g8: make([]group8, groups), g10: make([]group10, groups),
		i4: make([]int32, groups*8), i8: make([]int32, groups*8), i10: make([]int32, groups*8),
		out: make([]uint64, groups*8),
	}
}

// Add parses frame into m, which is ms[i] of the ms Hash will be given,
// all but m.Hash; Hash fills that in.
func (b *Burst) Add(i int, frame []byte, m *Meta) {
	k, w0, w1, w2, w3, w4, w5, w6, w7, w8 := gatherFast(frame, m, !b.Lean)
	switch k {
	case fastV4:
		j := b.n4
		if j >= len(b.i4) {
			m.Hash = sum64v4(w0, w1, w2, w3, w4, w5)
			return
		}
		g, l := &b.g4[j>>3], j&7
		g[0][l], g[1][l], g[2][l], g[3][l], g[4][l], g[5][l] = w0, w1, w2, w3, w4, w5
		b.i4[j] = int32(i)
		b.n4 = j + 1
	case fastV6:
		j := b.n10
		if j >= len(b.i10) {
			m.Hash = sum64v6(w0, w1, w2, w3, w4, w5, w6, w7, w8)
			return
		}
		g, l := &b.g10[j>>3], j&7
		g[0][l], g[1][l], g[2][l], g[3][l], g[4][l] = w0, w1, w2, w3, w4
		g[5][l] = 0 // no fragment header
		g[6][l], g[7][l], g[8][l], g[9][l] = w5, w6, w7, w8
		b.i10[j] = int32(i)
		b.n10 = j + 1
	default:
		b.addGeneral(i, frame, m)
	}
}

// addGeneral stages a frame off the fast path.
func (b *Burst) addGeneral(i int, frame []byte, m *Meta) {
	id := &b.id
	n := gatherGeneral(frame, m, id)
	switch {
	case n == v4Words && b.n4 < len(b.i4):
		j := b.n4
		g, l := &b.g4[j>>3], j&7
		for k := range g {
			g[k][l] = id[k]
		}
		b.i4[j] = int32(i)
		b.n4++
	case n == nonIPWords && b.n8 < len(b.i8):
		j := b.n8
		g, l := &b.g8[j>>3], j&7
		for k := range g {
			g[k][l] = id[k]
		}
		b.i8[j] = int32(i)
		b.n8++
	case n == v6Words && b.n10 < len(b.i10):
		j := b.n10
		g, l := &b.g10[j>>3], j&7
		for k := range g {
			g[k][l] = id[k]
		}
		b.i10[j] = int32(i)
		b.n10++
	default: // the class is full (more than max frames)
		m.Hash = sum64Words(id, n)
	}
}

// Hash computes the hashes of every frame added since the last Hash and
// stores them in ms (the slice whose elements Add was given), then empties
// the Burst for the next one.
func (b *Burst) Hash(ms []Meta) {
	if b.n4 > 0 {
		g := b.g4[:(b.n4+7)/8]
		xxh64x8(unsafe.Slice(&g[0][0][0], len(g)*v4Words*8), v4Words, b.out)
		scatter(ms, b.i4[:b.n4], b.out)
		b.n4 = 0
	}
	if b.n8 > 0 {
		g := b.g8[:(b.n8+7)/8]
		xxh64x8(unsafe.Slice(&g[0][0][0], len(g)*nonIPWords*8), nonIPWords, b.out)
		scatter(ms, b.i8[:b.n8], b.out)
		b.n8 = 0
	}
	if b.n10 > 0 {
		g := b.g10[:(b.n10+7)/8]
		xxh64x8(unsafe.Slice(&g[0][0][0], len(g)*v6Words*8), v6Words, b.out)
		scatter(ms, b.i10[:b.n10], b.out)
		b.n10 = 0
	}
}

// scatter stores hash j in ms[idx[j]]; an index outside ms (a caller that
// passed a different slice) is skipped, not a panic.
func scatter(ms []Meta, idx []int32, h []uint64) {
	h = h[:len(idx)]
	for j, i := range idx {
		if uint(i) < uint(len(ms)) {
			ms[i].Hash = h[j]
		}
	}
}
