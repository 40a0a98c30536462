package synopsis

import "unsafe"

// LDAHot is the state LDA.Add touches, by address, for an Add written in
// another language (package dpdk's measuring fast path, in C): Sel is
// the bank selector indexed by leading zeros of h, 65 entries of {off,
// mask uint32}; Cells the buckets, {sum, count, digest uint64} each;
// Offered the count of Add calls; Digest whether Add adds DigestMix(h).
// An Add elsewhere must do exactly what Add does: Offered++, then with s =
// Sel[LeadingZeros64(h)], nothing more when s.mask is 0, otherwise
// Cells[s.off + uint32(h)&s.mask] gets sum += ts, count++ and, with
// Digest, dig += DigestMix(h).
//
// The memory holds no Go pointers, so cgo lets C write it during a call
// that receives these addresses (never after: it is Go memory). The
// addresses stay valid as long as l lives (the Go heap does not move);
// Reset keeps them, nothing else changes them.
type LDAHot struct {
	Sel, Cells, Offered unsafe.Pointer
	Digest              bool
}

// Hot returns l's LDAHot. It allocates nothing.
func (l *LDA) Hot() LDAHot {
	h := LDAHot{Sel: unsafe.Pointer(&l.sel[0]), Offered: unsafe.Pointer(&l.offered), Digest: l.digest}
	if len(l.cells) > 0 {
		h.Cells = unsafe.Pointer(&l.cells[0])
	}
	return h
}

// ldaHotLayout pins the layout LDAHot documents.
var _ = [1]struct{}{}[unsafe.Sizeof(ldaSel{})-8]
var _ = [1]struct{}{}[unsafe.Sizeof(ldaCell{})-24]
