package classifier

// Batched XXH64: the identity hashes of a burst are computed eight at a
// time over a structure-of-arrays layout (a group: word k of lane j at
// [k][j]), so the 8-lane AVX-512 kernel (xxh64x8_amd64.s) can run one
// packet per 64-bit vector lane. The result is bit for bit xxhash.Sum64 of
// each packet's invariant bytes: only the order of the work changes
// (TestXXH64x8MatchesScalar, FuzzXXH64x8).
//
// Why: scalar XXH64 over the 48-80 invariant bytes is ~100 instructions
// and a ~55-cycle chain of dependent multiplies per packet, the largest
// single cost of measuring a packet (docs/performance.md). Eight lanes
// per instruction divide the instruction count by eight and the chains of
// eight packets run side by side.

// group4, group8 and group10 are eight packets' identity words for the
// three identity lengths (IPv4, non-IP, IPv6), transposed.
type (
	group4  [v4Words][8]uint64
	group8  [nonIPWords][8]uint64
	group10 [v6Words][8]uint64
)

// xxh64x8Go is the portable kernel: for each of groups groups of nwords×8
// words at w (consecutive in memory), XXH64 of every lane into out (8 per
// group). nwords is 6, 8 or 10 (≥ 32 bytes: XXH64's stripe path).
func xxh64x8Go(w []uint64, nwords int, out []uint64) {
	size := nwords * 8
	var id ident
	for g := 0; (g+1)*size <= len(w) && (g+1)*8 <= len(out); g++ {
		grp := w[g*size : (g+1)*size]
		for lane := 0; lane < 8; lane++ {
			for k := 0; k < nwords; k++ {
				id[k] = grp[k*8+lane]
			}
			out[g*8+lane] = sum64Words(&id, nwords)
		}
	}
}
