package synopsis

import (
	"fmt"
	"slices"
)

// A sparse LDS carries only some of its cells: those of the largest flows,
// one row each, at the recorded resolution. It is how a control budget too
// small for the whole sketch still measures the flows an operator looks
// at: folding columns (FoldCols) makes every flow share its cells once the
// budget is a few hundred cells for thousands of flows, so no flow's line
// is its own; a sparse copy keeps each shipped flow's least-loaded cell
// exactly as recorded, so the flows it carries are measured as well as by
// the whole sketch (departure from the paper, whose sketch ships whole).
// The other cells are unknown at the receiver (absent): the estimator
// leaves them out, and a flow none of whose cells was shipped is reported
// as not measured, never as lossless.

// ldsSparseMaxCells bounds the cells a sparse encoding of n bytes may
// announce: the decoder allocates every cell of the shape (32 bytes each),
// so a short forged input could otherwise ask for 2 GiB. 64 cells per
// byte, and at least 2^18 cells (8 MiB) so that a small budget's few
// flows of a large sketch still decode.
func ldsSparseMaxCells(n int) uint64 { return max(64*uint64(n), 1<<18) }

// isAbsent says whether cell i is unknown (a sparse copy did not carry it).
func (l *LDS) isAbsent(i uint64) bool {
	return l.absent != nil && l.absent[i>>6]&(1<<(i&63)) != 0
}

// Sparse says whether l is a sparse copy (some cells unknown).
func (l *LDS) Sparse() bool { return l.absent != nil }

// knownCells lists the cells l knows, in order.
func (l *LDS) knownCells() []uint64 {
	ks := []uint64{}
	for i := range uint64(len(l.cells)) {
		if !l.isAbsent(i) {
			ks = append(ks, i)
		}
	}
	return ks
}

// readSparse decodes the cells of a sparse encoding into l (fresh from
// NewLDS): N, then N × {gap from the previous cell's index + 1, cell}.
func (l *LDS) readSparse(r *ldsReader, cell func(*ldsCell) error) error {
	total := uint64(len(l.cells))
	n := r.uvarint("sparse cells")
	if r.err != nil {
		return r.err
	}
	// A cell takes at least two bytes (gap and count).
	if n > total || n > uint64(len(r.b))/2 {
		return fmt.Errorf("%w: %d sparse cells (shape %d, %d bytes left)", errLDSBadEncoding, n, total, len(r.b))
	}
	l.absent = make([]uint64, (total+63)/64)
	for i := range l.absent {
		l.absent[i] = ^uint64(0)
	}
	next := uint64(0)
	for range n {
		gap := r.uvarint("sparse cell gap")
		if r.err != nil {
			return r.err
		}
		if gap >= total-next {
			return fmt.Errorf("%w: sparse cell beyond the shape", errLDSBadEncoding)
		}
		i := next + gap
		l.absent[i>>6] &^= 1 << (i & 63)
		if err := cell(&l.cells[i]); err != nil {
			return err
		}
		next = i + 1
	}
	return nil
}

// AppendBinarySparse appends a sparse encoding of l (version 4: version
// 3's fields, all rows, with the cells section replaced by the cells
// listed in keep, in any order, duplicates allowed) and at most named of
// its flows (as AppendBinaryLimited). The receiver's estimator uses only
// those cells. It fails if the shape is too large for the decoder to
// accept from an encoding this short.
func (l *LDS) AppendBinarySparse(b []byte, keep []uint64, named int) ([]byte, error) {
	l.SettleFlows()
	if l.absent != nil {
		return b, fmt.Errorf("%w: already sparse", ErrBadConfig)
	}
	ks := slices.Clone(keep)
	slices.Sort(ks)
	ks = slices.Compact(ks)
	if ks == nil {
		ks = []uint64{}
	}
	if len(ks) > 0 && ks[len(ks)-1] >= uint64(len(l.cells)) {
		return b, fmt.Errorf("%w: cell %d of %d", ErrBadConfig, ks[len(ks)-1], len(l.cells))
	}
	from := len(b)
	b, err := l.appendBinary(b, l.rows, named, ks)
	if err != nil {
		return b, err
	}
	if uint64(len(l.cells)) > ldsSparseMaxCells(len(b)-from) {
		return b[:from], fmt.Errorf("%w: %d cells too many for a sparse encoding of %d bytes", ErrBadConfig, len(l.cells), len(b)-from)
	}
	return b, nil
}

// FlowCells appends to dst the cells a sparse copy ships for flow
// flowHash: its k cells in the row, among the most densely sampled ones,
// where they hold the fewest packets — the flow's alone when some row
// gives it cells of its own.
func (l *LDS) FlowCells(dst []uint64, flowHash uint64) []uint64 {
	fx := Remix(flowHash, SaltLDSRow)
	var top uint64
	for r := 0; r < l.rows; r++ {
		top = max(top, l.thr[r])
	}
	best, bestN := -1, uint64(0)
	for r := 0; r < l.rows; r++ {
		if l.thr[r] != top {
			continue
		}
		var n uint64
		l.flowCells(fx, r, func(i uint64) { n += l.cells[i].count })
		if best < 0 || n < bestN {
			best, bestN = r, n
		}
	}
	if best >= 0 {
		l.flowCells(fx, best, func(i uint64) { dst = append(dst, i) })
	}
	return dst
}

// flowCells calls f with the index of each of the flow's cells in row r
// (fx is Remix(flowHash, SaltLDSRow)), as the estimator finds them.
func (l *LDS) flowCells(fx uint64, r int, f func(i uint64)) {
	base := l.flowBase(fx, r)
	cols0, prev := l.cols<<l.fold, ^uint64(0)
	for j := uint64(0); j < l.k; j++ {
		c := base + j
		if c >= cols0 {
			c -= cols0
		}
		if c >>= l.fold; c == prev {
			continue
		}
		prev = c
		f(uint64(r)*l.cols + c)
	}
}

// ReasonLDSNotShipped is the reason of a flow a sparse copy carries no
// cell of: the control budget shipped the largest flows' cells only.
const ReasonLDSNotShipped = "the sender shipped only the largest flows' cells (control budget): this flow is not measured in this interval"

// KnownCells is how many cells l knows: all of them unless it is sparse.
func (l *LDS) KnownCells() int {
	if l.absent == nil {
		return len(l.cells)
	}
	return len(l.knownCells())
}
