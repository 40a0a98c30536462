//go:build amd64 && !purego

package classifier

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

// haveAVX512 selects the vector kernel: VPMULLQ needs AVX-512DQ, VPROLQ
// AVX-512F (x/sys/cpu also checks that the OS saves the ZMM state).
var haveAVX512 = cpu.X86.HasAVX512F && cpu.X86.HasAVX512DQ

// xxh64x8AVX512 hashes groups groups of nwords×8 words at w into out.
//
//go:noescape
func xxh64x8AVX512(w *uint64, nwords, groups int, out *uint64)

// xxh64x8 hashes the groups in w (nwords words per lane) into out, eight
// results per group. len(w) and len(out) bound the work.
func xxh64x8(w []uint64, nwords int, out []uint64) {
	groups := min(len(w)/(nwords*8), len(out)/8)
	if groups == 0 {
		return
	}
	if !haveAVX512 {
		xxh64x8Go(w, nwords, out)
		return
	}
	xxh64x8AVX512(unsafe.SliceData(w), nwords, groups, unsafe.SliceData(out))
}
