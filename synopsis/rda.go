package synopsis

import (
	"fmt"
	"math/bits"
)

// Limits of an RDA configuration. They keep a forged encoding from asking
// for absurd memory (32 bytes per cell).
const (
	RDAMaxBanks      = 16
	RDAMaxCells      = 1 << 22 // cells per bank
	RDAMaxTotalCells = 1 << 24 // cells over all banks (512 MiB)

	// DefaultRDABanks is k = 3, not the paper's 2 (Sec. VIII-B). With 2
	// banks peeling fails whenever the problem packets form a cycle,
	// which needs m ≈ 7·d per bank for 1 % failure (SizeRDA); with 3 banks
	// the same memory decodes about ten times the set difference
	// (docs/rda.md has the measured table: 4096 cells in all decode every
	// d ≤ 3000 with k = 3, but fail 12 % of the time at d = 1000 with k = 2).
	DefaultRDABanks = 3
	// DefaultRDACells per bank: 3 × 2048 cells (192 KiB, about 141 KB on
	// the wire) decode a set difference of about 4300 packets with
	// failure ≤ 1 % (SizeRDA), e.g. 0.2 % loss of 2 M packets.
	DefaultRDACells = 2048
	// DefaultRDACacheBudget is the timestamp cache per RDA, bytes (16 per
	// cached packet: 2^20 slots, up to 786 432 packets before sampling).
	DefaultRDACacheBudget = 16 << 20
)

// RDAConfig is the shape of an RDA (paper Sec. V-A): Banks banks of Cells
// cells each, and the memory for the per-interval timestamp cache that
// repair needs. Sender and receiver must use equal Banks and Cells; the
// cache budgets may differ (coordinated sampling reconciles them).
type RDAConfig struct {
	Banks       int // k hash functions, one cell per bank per packet; 1..16 (default 3)
	Cells       int // m cells per bank; ≥ 2 (any value, not only powers of two)
	CacheBudget int // bytes for the timestamp cache (hash → ts); 0 = no cache, no repair
}

// DefaultRDAConfig is 3 banks × 2048 cells with a 16 MiB timestamp cache.
func DefaultRDAConfig() RDAConfig {
	return RDAConfig{Banks: DefaultRDABanks, Cells: DefaultRDACells, CacheBudget: DefaultRDACacheBudget}
}

// Validate says whether c can build an RDA (errors wrap ErrBadConfig).
func (c RDAConfig) Validate() error {
	switch {
	case c.Banks < 1 || c.Banks > RDAMaxBanks:
		return fmt.Errorf("%w: RDA banks %d not in [1,%d]", ErrBadConfig, c.Banks, RDAMaxBanks)
	case c.Cells < 2 || c.Cells > RDAMaxCells:
		return fmt.Errorf("%w: RDA cells per bank %d not in [2,%d]", ErrBadConfig, c.Cells, RDAMaxCells)
	case c.Banks*c.Cells > RDAMaxTotalCells:
		return fmt.Errorf("%w: RDA %d×%d cells exceed %d", ErrBadConfig, c.Banks, c.Cells, RDAMaxTotalCells)
	case c.CacheBudget < 0:
		return fmt.Errorf("%w: RDA cache budget %d bytes is negative", ErrBadConfig, c.CacheBudget)
	case c.CacheBudget > 0 && c.CacheBudget < TSCacheMinBudget:
		return fmt.Errorf("%w: RDA cache budget %d bytes below the minimum %d", ErrBadConfig, c.CacheBudget, TSCacheMinBudget)
	}
	return nil
}

func (c RDAConfig) String() string {
	return fmt.Sprintf("rda{banks=%d cells=%d cache=%dB}", c.Banks, c.Cells, c.CacheBudget)
}

// rdaCell is one RDA bucket (paper Sec. V-A): the XOR of the packet
// identifiers (ID), the wrap-around sum of their timestamps (TS, ns) and
// the signed packet count (Δ; negative after Delete or Subtract), plus a
// check field that the paper does not have (chk, see rdaCheck).
type rdaCell struct {
	id  uint64
	ts  uint64
	n   int64
	chk uint64 // XOR of rdaCheck(h) over the cell's packets
}

// rdaCheckSalt salts the per-cell check hash; it is unrelated to SaltRDA
// and the bank salts, so the check is independent of the cell choice.
const rdaCheckSalt uint64 = 0x5244434b_d6e8feb8 // "RDCK"

// rdaCheck is packet identity h's contribution to a cell's check field.
//
// Departure from the paper (Sec. V-B (ii)): its pure-cell test (|Δ| = 1
// and the ID hashes back to this cell) passes by chance for about 1 in m
// cells holding several problem packets, e.g. a lost and two extra ones
// (Δ = +1, ID = their XOR). With hundreds of such cells per decode the
// default RDA listed a wrong identity in 1/200 intervals at a set
// difference of 1000 and 71/200 at 4000 (docs/rda.md, "False pure
// cells"). The standard IBLT hashSum fixes it: a cell is pure only if
// also chk == rdaCheck(ID), which a mixed cell passes with probability
// 2^-64. The XOR is sign-free, so lost (Δ = −1) cells check the same way.
func rdaCheck(h uint64) uint64 { return Remix(h, rdaCheckSalt) }

// RDA is a Reconcilable Difference Aggregator (Fu, Barlet-Ros, Li, "Every
// Timestamp Counts", Sec. V): k banks of m cells; every packet is added to
// one cell in every bank, chosen by an independent hash of its identity.
// Subtracting the sender's RDA from the receiver's cancels every packet
// seen at both ends, and peeling (Algorithm 1) lists the identities of the
// lost and extra packets; repair then removes their timestamps, taken from
// the per-interval timestamp cache, so every cell again holds only
// packets seen at both ends and the mean delay comes out exact.
//
// Departure from the paper: the packet identifier is the packet identity
// hash h itself, and the cells come from slices of
// Remix(h, SaltRDA) (see setIndexing) rather than k Bob hashes.
//
// Lifetime: one RDA (with its cache) per side, per worker, per interval
// buffer; Reset and reuse it. The sender must keep an interval's cache
// until it has answered that interval's timestamp request (docs/rda.md,
// "Exchange"). The zero value records nothing; use NewRDA.
//
// An RDA is not safe for concurrent use: give each worker its own and
// Merge them on the control side after the worker has published that it
// is done with that buffer.
type RDA struct {
	cells []rdaCell // bank-major: bank b is cells[b*m : (b+1)*m]
	m     uint64    // cells per bank
	k     int       // banks
	chunk uint      // bits of Remix(h, SaltRDA) per bank, or 0 (see setIndexing)
	base  uint64    // first timestamp added since Reset (ns); only makes the encoding compact
	cache *TSCache  // nil when CacheBudget is 0
	// remoteLevel: for an RDA decoded from the wire, the sampling level of
	// the sender's cache (its cache is not shipped; see docs/rda.md).
	remoteLevel uint8
	hasRemote   bool
	cfg         RDAConfig
}

// NewRDA returns an empty RDA with configuration cfg. Its timestamp cache
// has the whole CacheBudget from the start.
func NewRDA(cfg RDAConfig) (*RDA, error) {
	return newRDA(cfg, false)
}

// NewRDAFollowing is NewRDA with a timestamp cache that starts at its
// starting room (64 KiB) and follows the traffic within CacheBudget
// (ReserveCache between intervals): what a live appliance keeps per
// measurement class, per side and copy, so that memory (and the time to
// clear it) grows with the packets, not with the number of classes times
// the budget.
func NewRDAFollowing(cfg RDAConfig) (*RDA, error) {
	return newRDA(cfg, true)
}

func newRDA(cfg RDAConfig, following bool) (*RDA, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	r := &RDA{
		cells: make([]rdaCell, cfg.Banks*cfg.Cells),
		m:     uint64(cfg.Cells),
		k:     cfg.Banks,
		cfg:   cfg,
	}
	r.setIndexing()
	if cfg.CacheBudget > 0 {
		c, err := newTSCache(cfg.CacheBudget, following)
		if err != nil {
			return nil, err
		}
		r.cache = c
	}
	return r, nil
}

// MustNewRDA is NewRDA for configurations known to be valid; it panics on
// a bad one.
func MustNewRDA(cfg RDAConfig) *RDA {
	r, err := NewRDA(cfg)
	if err != nil {
		panic(err)
	}
	return r
}

// rdaBankSalt is bank b's salt for Remix: far-apart salts (golden-ratio
// steps) so the banks' cell choices are independent.
func rdaBankSalt(b int) uint64 { return SaltRDA + uint64(b)*0x9e3779b97f4a7c15 }

// setIndexing picks how cells are chosen (a function of the shape only,
// so both ends agree). When every bank can take its own slice of one
// 64-bit Remix(h, SaltRDA) — c = 64/k bits each, with m ≤ 2^(c−6) so
// fastrange on c bits is within 1.6 % of uniform (exact when m is a
// power of two) — Add computes one Remix instead of k: bank b's cell is
// (bits [b·c, (b+1)·c) of x) · m >> c. The slices of a uniform x are
// independent, which is what peeling assumes. Otherwise (k = 1, or many
// cells for the bits) bank b uses fastrange(Remix(h, rdaBankSalt(b)), m).
func (r *RDA) setIndexing() {
	r.chunk = 0
	if r.k < 2 {
		return
	}
	c := uint(64 / r.k)
	if r.m<<6 <= 1<<c {
		r.chunk = c
	}
}

// cellIndex is the index into r.cells of identity h's cell in bank b.
// fastrange (Lemire): the high bits of hash·m are uniform on [0,m)
// without a division.
func (r *RDA) cellIndex(h uint64, b int) int {
	if r.chunk != 0 {
		v := Remix(h, SaltRDA) >> (uint(b) * r.chunk) & (1<<r.chunk - 1)
		return b*int(r.m) + int(v*r.m>>r.chunk)
	}
	hi, _ := bits.Mul64(Remix(h, rdaBankSalt(b)), r.m)
	return b*int(r.m) + int(hi)
}

// Add records one packet with identity hash h at absolute time ts (ns) in
// one cell of every bank and in the timestamp cache. It allocates nothing
// and uses no floating point.
func (r *RDA) Add(h, ts uint64) { r.AddFlow(h, 0, ts) }

// AddFlow is Add for a packet of flow fh (0: no flow): a cache that tracks
// flows (TrackFlows) keeps fh beside the timestamp, so a lost packet can
// also be taken out of the LDS that placed it (LDSPacket).
func (r *RDA) AddFlow(h, fh, ts uint64) {
	if r.base == 0 {
		r.base = ts
	}
	cells, m := r.cells, r.m
	ck := rdaCheck(h) // once per packet, XORed into every bank's cell
	off := 0
	if c := r.chunk; c != 0 {
		x, mask := Remix(h, SaltRDA), uint64(1)<<c-1
		for b := 0; b < r.k; b++ {
			cl := &cells[off+int((x&mask)*m>>c)]
			cl.id ^= h
			cl.ts += ts // wraps; differences of sums stay exact
			cl.n++
			cl.chk ^= ck
			x >>= c
			off += int(m)
		}
	} else {
		for b := 0; b < r.k; b++ {
			hi, _ := bits.Mul64(Remix(h, rdaBankSalt(b)), m)
			cl := &cells[off+int(hi)]
			cl.id ^= h
			cl.ts += ts
			cl.n++
			cl.chk ^= ck
			off += int(m)
		}
	}
	if r.cache != nil {
		r.cache.InsertFlow(h, fh, ts)
	}
}

// TrackFlows makes r's timestamp cache keep flow hashes
// (TSCache.TrackFlows); no-op without a cache. For set-up only.
func (r *RDA) TrackFlows() {
	if r.cache != nil {
		r.cache.TrackFlows()
	}
}

// Delete removes a packet added with Add(h, ts) from the cells (paper Sec.
// V-A: TS −= ts, Δ −= 1). It does not touch the cache. Deleting a packet
// that was never added leaves a negative count, as in the paper.
func (r *RDA) Delete(h, ts uint64) {
	ck := rdaCheck(h)
	for b := 0; b < r.k; b++ {
		c := &r.cells[r.cellIndex(h, b)]
		c.id ^= h
		c.ts -= ts
		c.n--
		c.chk ^= ck
	}
}

func (r *RDA) sameShape(o *RDA) error {
	if r.k != o.k || r.m != o.m {
		return fmt.Errorf("%w: RDA %d×%d vs %d×%d cells", ErrConfigMismatch, r.k, r.m, o.k, o.m)
	}
	return nil
}

// Merge adds o into r (per-worker shards of one interval): cell by cell
// ID ^= , TS += , Δ += , chk ^= , and o's cache entries into r's cache (dropped
// when r has no cache). Shapes must match (else an error wrapping
// ErrConfigMismatch and r is unchanged).
func (r *RDA) Merge(o *RDA) error {
	if err := r.sameShape(o); err != nil {
		return err
	}
	for i := range r.cells {
		r.cells[i].id ^= o.cells[i].id
		r.cells[i].ts += o.cells[i].ts
		r.cells[i].n += o.cells[i].n
		r.cells[i].chk ^= o.cells[i].chk
	}
	if r.base == 0 {
		r.base = o.base
	}
	if r.cache != nil && o.cache != nil {
		r.cache.Merge(o.cache)
	}
	return nil
}

// Subtract makes r the subtraction RDA r − o (paper Sec. V-B (i)): ID ^=,
// TS −=, Δ −=, chk ^=. Called on the receiver's copy with the sender's, packets
// seen at both ends cancel from ID, Δ and chk; what is left is the set
// difference, which Peel lists. The cache is not changed.
func (r *RDA) Subtract(o *RDA) error {
	if err := r.sameShape(o); err != nil {
		return err
	}
	for i := range r.cells {
		r.cells[i].id ^= o.cells[i].id
		r.cells[i].ts -= o.cells[i].ts
		r.cells[i].n -= o.cells[i].n
		r.cells[i].chk ^= o.cells[i].chk
	}
	return nil
}

// Reset empties r and its cache, keeping configuration and memory.
func (r *RDA) Reset() {
	clear(r.cells)
	r.base = 0
	r.hasRemote, r.remoteLevel = false, 0
	if r.cache != nil {
		r.cache.Reset()
	}
}

// Clone returns a deep copy of r (cells and cache).
func (r *RDA) Clone() *RDA {
	c := *r
	c.cells = append([]rdaCell(nil), r.cells...)
	if r.cache != nil {
		c.cache = r.cache.Clone()
	}
	return &c
}

// Config returns r's configuration.
func (r *RDA) Config() RDAConfig { return r.cfg }

// Banks and Cells give r's shape k × m.
func (r *RDA) Banks() int { return r.k }

// Cells is the number of cells per bank (m).
func (r *RDA) Cells() int { return int(r.m) }

// Count is the net number of packets recorded (Adds − Deletes): the sum
// of bank 0's Δ.
func (r *RDA) Count() int64 {
	var n int64
	for _, c := range r.cells[:r.m] {
		n += c.n
	}
	return n
}

// Cache is r's timestamp cache, or nil.
func (r *RDA) Cache() *TSCache { return r.cache }

// Cell returns bank b's cell i (ID xor, TS sum ns, Δ). For tests and
// tools.
func (r *RDA) Cell(b, i int) (id, ts uint64, n int64) {
	c := r.cells[b*int(r.m)+i]
	return c.id, c.ts, c.n
}

// sampleLevel is the sampling level of the cache that holds this side's
// timestamps (local cache, or the remote sender's as stated on the wire),
// and whether there is one at all.
func (r *RDA) sampleLevel() (uint8, bool) {
	switch {
	case r.cache != nil && !r.cache.partial:
		return r.cache.level, true
	case r.hasRemote:
		return r.remoteLevel, true
	case r.cache != nil:
		return r.cache.level, true
	}
	return 0, false
}
