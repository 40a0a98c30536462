//go:build !amd64 || purego

package classifier

const haveAVX512 = false

// xxh64x8 hashes the groups in w (nwords words per lane) into out, eight
// results per group, with the portable kernel.
func xxh64x8(w []uint64, nwords int, out []uint64) { xxh64x8Go(w, nwords, out) }
