package synopsis

import (
	"fmt"
	"math"
)

// rdaPeelThreshold[k] is the asymptotic peeling threshold of a k-hash
// invertible Bloom lookup table: decoding succeeds w.h.p. while
// d ≤ c_k · (total cells) (Goodrich & Mitzenmacher, "Invertible Bloom
// Lookup Tables", Table 1; the same hypergraph 2-core threshold).
var rdaPeelThreshold = [...]float64{3: 0.818, 4: 0.772, 5: 0.702, 6: 0.637, 7: 0.582}

// SizeRDA returns the cells per bank m so that peeling a set difference
// of d packets with k banks fails with probability about failProb.
//
// The paper (Theorem 2) sets m = 2d per bank and claims failure
// O(d^-k). For k = 2 that is too optimistic: a packet is an edge between
// its two cells, and peeling fails exactly when that random bipartite
// graph has a cycle. The number of cycles is about Poisson with mean
// −½·ln(1 − (d/m)²) (2j-cycles contribute (d/m)^{2j}/2j), so
//
//	P(fail) = 1 − sqrt(1 − (d/m)²)   ⇒   m = d / sqrt(p(2 − p)),
//
// 13 % at m = 2d, 1 % at m ≈ 7.1d (TestRDASizeRDA measures it). A failed
// decode with k = 2 leaves a few cycles, i.e. only a few damaged cells.
// For k ≥ 3 the d/m needed is far smaller: m = 1.15·d/(k·c_k), but at
// least the m at which two packets share all k cells with probability p.
// For k = 1, every problem packet needs a cell of its own.
func SizeRDA(d, k int, failProb float64) (int, error) {
	if d < 0 || k < 1 || k > RDAMaxBanks || !(failProb > 0 && failProb < 1) {
		return 0, fmt.Errorf("%w: SizeRDA(d=%d, k=%d, p=%v)", ErrBadConfig, d, k, failProb)
	}
	fd, p := float64(max(d, 1)), failProb
	var m float64
	switch {
	case k == 1:
		m = fd * fd / (2 * -math.Log1p(-p)) // birthday bound
	case k == 2:
		m = fd / math.Sqrt(p*(2-p))
	default:
		c := 0.55
		if k < len(rdaPeelThreshold) {
			c = rdaPeelThreshold[k]
		}
		m = math.Max(1.15*fd/(float64(k)*c), math.Pow(fd*fd/(2*p), 1/float64(k)))
	}
	cells := int(math.Ceil(m))
	cells = max(cells, 16)
	if cells > RDAMaxCells || cells*k > RDAMaxTotalCells {
		return 0, fmt.Errorf("%w: a set difference of %d with %d banks at failure %v needs %d cells per bank, over the limit", ErrBadConfig, d, k, p, cells)
	}
	return cells, nil
}

// RDAConfigFor is the default configuration (3 banks, the default cache)
// sized for an expected set difference d (lost + extra packets per
// interval) with peeling failure about 1 %.
func RDAConfigFor(d int) (RDAConfig, error) {
	m, err := SizeRDA(d, DefaultRDABanks, 0.01)
	if err != nil {
		return RDAConfig{}, err
	}
	return RDAConfig{Banks: DefaultRDABanks, Cells: m, CacheBudget: DefaultRDACacheBudget}, nil
}

// RDAWireBytes estimates the encoded size of an RDA with k×m cells and
// about n packets per interval spread over spreadNs: 8 bytes of ID and 8
// of check field, the count and the timestamp spread as varints per cell,
// plus the header.
func RDAWireBytes(k, m int, n uint64, spreadNs float64) int {
	perCell := float64(n) / float64(m)
	varintLen := func(x float64) float64 {
		if x < 64 {
			return 1
		}
		return math.Ceil((math.Log2(2*x) + 1) / 7)
	}
	// TS − Δ·B ≈ Δ · spread/2 (uniform arrivals)
	return 6 + 2 + 8 + k*m*int(16+varintLen(perCell)+varintLen(perCell*spreadNs/2))
}

// RDAMaxCacheBudget caps the cache SizeRDAConfig asks for (1 GiB).
const RDAMaxCacheBudget = 1 << 30

// SizeRDAConfig sizes a whole RDA for an interval of about packets
// packets of which a share problemRate (loss + reordering across the
// interval edge + rewriting) is expected in the set difference: 3 banks
// with cells for twice the expected difference at 1 % failure (the
// difference fluctuates from interval to interval), and a timestamp cache
// that holds every packet without sampling, capped at RDAMaxCacheBudget.
// It is what `analyze` wants for exact results (--interval 0 on a whole
// capture); the appliance may prefer a smaller cache (see docs/rda.md,
// Cost).
func SizeRDAConfig(packets uint64, problemRate float64) (RDAConfig, error) {
	if !(problemRate >= 0 && problemRate <= 1) {
		return RDAConfig{}, fmt.Errorf("%w: problem rate %v not in [0,1]", ErrBadConfig, problemRate)
	}
	d := 2*float64(packets)*problemRate + 16
	if d > 1<<22 { // 3 × 2^21 cells (144 MiB) already decode 4 M problem packets
		d = 1 << 22
	}
	m, err := SizeRDA(int(d), DefaultRDABanks, 0.01)
	if err != nil {
		return RDAConfig{}, err
	}
	slots := uint64(64)
	for slots*tsMaxLoadNum/tsMaxLoadDen < packets && slots*tsEntryBytes < RDAMaxCacheBudget {
		slots *= 2
	}
	return RDAConfig{Banks: DefaultRDABanks, Cells: m, CacheBudget: int(slots * tsEntryBytes)}, nil
}
