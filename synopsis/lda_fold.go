package synopsis

import (
	"fmt"
	"math/bits"
	"strings"
)

// Folding an LDA: a packet's row in a bank of m rows is the low log2(m)
// bits of its hash h (LDA.Add), so in a bank of m/2 rows it lands in row
// (h mod m) mod m/2, that is row i of the big bank goes to row i mod m/2.
// Adding row i + m/2 into row i (timestamp sums, counts and digests are
// all wrap-around sums, so they add) gives exactly the cells an LDA of m/2
// rows would have recorded from the same packets. Folding drops the high
// row bit and keeps the low ones, so the lowest row bit, the ±1 sign of
// the std-dev estimator (rows 2i and 2i+1 collapse, Sec. III-E), survives:
// the collapsed pairs of the folded LDA are the sums of the big one's.
// The bank (leading zeros of h) and the cover buckets do not change.
//
// The paper sizes an LDA once for its expected traffic (Sec. III-D). The
// appliance instead records a large LDA and each interval ships it folded
// to what that interval's packets fill (docs/lda.md, "Sizing per
// interval"); folding is what lets sender and receiver agree on the
// smaller shape afterwards, from the shape the encoding carries, without a
// handshake.

// foldableTo reports whether an LDA of configuration c folds to to: the
// same banks (sampling, order) and digest setting, each bank's rows a
// power of two no larger than c's (Validate checks the power of two).
func (c LDAConfig) foldableTo(to LDAConfig) error {
	if err := to.Validate(); err != nil {
		return err
	}
	if c.Digest != to.Digest || len(c.Banks) != len(to.Banks) {
		return fmt.Errorf("%w: LDA %v does not fold to %v", ErrConfigMismatch, c, to)
	}
	for j, b := range to.Banks {
		if b.SampleLog2 != c.Banks[j].SampleLog2 || b.Rows > c.Banks[j].Rows {
			return fmt.Errorf("%w: LDA %v does not fold to %v (bank %d)", ErrConfigMismatch, c, to, j)
		}
	}
	return nil
}

// Shape is c's banks as ROWS:LOG2INVP, comma-separated: what --lda-banks
// takes, and what the reports name a shipped or estimated shape by.
func (c LDAConfig) Shape() string {
	var b strings.Builder
	for i, bk := range c.Banks {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%d:%d", bk.Rows, bk.SampleLog2)
	}
	return b.String()
}

// Where an LDA's sample is thin under heavy loss (LDAThin): a bucket
// counts only if none of its packets was lost, so at a share L of the
// packets lost a bank of n packets in r rows keeps about
// n(1−L)e^(−L·n/r) of them. A bucket per packet keeps at least 90 % below
// LDAHeavyLoss; at half the packets lost it keeps 30 %, and banks of
// several packets a bucket keep almost none. The bound's std-dev is the
// sample's (eq. 1 of the paper takes σ̂ for σ): a sample of a few hundred
// that holds none of a thin tail of the delays (1 % of the packets a
// millisecond off, as a full tail-drop queue gives) reads a narrow σ and
// a mean off by the tail's share. From LDAThinSample samples such a tail
// is in the sample about ten times on average.
const (
	LDAHeavyLoss  = 0.1
	LDAThinSample = 1000
)

// LDAThin says whether an LDA estimate of samples samples, of sent
// packets of which received arrived, is thin under heavy loss: worth
// estimating at more rows where more were recorded (the appliance's
// receiver asks its sender for them; analyze estimates at its recorded
// shape).
func LDAThin(sent, received, samples uint64) bool {
	if sent == 0 || received >= sent || samples >= LDAThinSample {
		return false
	}
	return float64(sent-received) >= LDAHeavyLoss*float64(sent)
}

// CommonLDAConfig is the shape two LDAs of one recording configuration
// both fold to: per bank the smaller of the two row counts. It fails
// (ErrConfigMismatch) when a and b differ in anything but their rows.
func CommonLDAConfig(a, b LDAConfig) (LDAConfig, error) {
	if a.Digest != b.Digest || len(a.Banks) != len(b.Banks) {
		return LDAConfig{}, fmt.Errorf("%w: LDA %v vs %v", ErrConfigMismatch, a, b)
	}
	c := a.clone()
	for j := range c.Banks {
		if a.Banks[j].SampleLog2 != b.Banks[j].SampleLog2 {
			return LDAConfig{}, fmt.Errorf("%w: LDA %v vs %v (bank %d)", ErrConfigMismatch, a, b, j)
		}
		c.Banks[j].Rows = min(a.Banks[j].Rows, b.Banks[j].Rows)
	}
	return c, nil
}

// WithRows is c with bank j's rows set to rows[j] (a copy; nothing is
// validated: NewLDA and Fold do).
func (c LDAConfig) WithRows(rows []int) LDAConfig {
	c = c.clone()
	for j := range c.Banks {
		if j < len(rows) {
			c.Banks[j].Rows = rows[j]
		}
	}
	return c
}

// foldCells adds each bank's cells of src (bank-major, configuration from)
// into dst (configuration to, zeroed), cell i of bank j going to row
// i mod to.Banks[j].Rows; the cover cells are copied. add(d, s) adds one
// cell into another.
func foldCells[T any](from, to *LDAConfig, src, dst []T, add func(d *T, s T)) {
	si, di := 0, 0
	for j, b := range from.Banks {
		m := to.Banks[j].Rows
		for r := 0; r < b.Rows; r++ {
			add(&dst[di+r&(m-1)], src[si+r])
		}
		si += b.Rows
		di += m
	}
	copy(dst[di:], src[si:]) // cover buckets
}

// Fold returns l folded to configuration to (see above): the LDA that
// recording the same packets at shape to would have given, cell for cell.
// to must have l's banks and digest setting with each bank's rows a power
// of two ≤ l's (else an error wrapping ErrConfigMismatch or ErrBadConfig);
// l is unchanged. Folding to l's own shape returns a copy.
func (l *LDA) Fold(to LDAConfig) (*LDA, error) {
	if err := l.cfg.foldableTo(to); err != nil {
		return nil, err
	}
	f, err := NewLDA(to)
	if err != nil {
		return nil, err
	}
	f.offered = l.offered
	foldCells(&l.cfg, &f.cfg, l.cells, f.cells, func(d *ldaCell, s ldaCell) {
		d.sum += s.sum
		d.count += s.count
		d.dig += s.dig
	})
	return f, nil
}

// Fold returns c folded to configuration to, as LDA.Fold: counts add, and
// so do the digests modulo 2^DigestBits (the low bits of a sum are the sum
// of the low bits). The timestamp sums do not fold: each was sent rounded
// and truncated to widths that depend on its own bucket's count, so the
// sum of two is not the folded bucket's. A folded CompactLDA therefore
// holds counts and digests only, enough to compare packet sets
// (MatchLDACompactCrossing); estimating it or re-encoding it is an error.
// To estimate at a smaller shape the sender folds its full LDA before
// encoding (LDA.Fold) and the receiver folds its own to match. Folding to
// c's own shape returns a copy that keeps its sums.
func (c *CompactLDA) Fold(to LDAConfig) (*CompactLDA, error) {
	if err := c.cfg.foldableTo(to); err != nil {
		return nil, err
	}
	n := *c
	n.cfg = to.clone()
	n.widths = append([]uint(nil), c.widths...)
	n.bases = append([]uint64(nil), c.bases...)
	total := to.TotalRows() + to.coverRows()
	n.counts = make([]uint64, total)
	foldCells(&c.cfg, &n.cfg, c.counts, n.counts, func(d *uint64, s uint64) { *d += s })
	if c.digests != nil {
		mask := lowBits(^uint64(0), uint(c.digestBits))
		n.digests = make([]uint64, total)
		foldCells(&c.cfg, &n.cfg, c.digests, n.digests, func(d *uint64, s uint64) { *d = (*d + s) & mask })
	}
	if c.cfg.equal(to) {
		n.sums = append([]uint64(nil), c.sums...)
		return &n, nil
	}
	n.sums = nil // see above: folded sums are unknown
	n.folded = true
	return &n, nil
}

// errLDACompactFolded: a folded CompactLDA has no timestamp sums.
var errLDACompactFolded = fmt.Errorf("%w: a folded compact LDA holds counts and digests only (fold the full LDA before encoding it)", ErrBadConfig)

// ShipRows picks the rows per bank to ship l at for one interval, the
// appliance's per-interval LDA sizing (docs/lda.md, "Sizing per
// interval"). Bank j gets the packets it recorded rounded up to a power of
// two, at least floor and at most its recorded rows: about one packet per
// bucket keeps a bucket's chance of holding a loss near the loss rate
// itself (a bucket holding a loss is unusable), and more rows would only
// ship empty buckets. Then, while the compact encoding with bounds would
// take more than maxBytes bytes (0: no limit), the bank with the most rows
// (of equal ones, the one that recorded fewer packets) is halved, down to
// floor: the LDA always ships, at floor rows per bank if need be. floor is
// raised to 2 (a collapsed row pair) and capped at each bank's rows.
//
// Deterministic in l, floor, maxBytes and bounds; only the sender runs it
// (the receiver reads the shape from the encoding).
func (l *LDA) ShipRows(floor, maxBytes int, bounds CompactBounds) []int {
	banks := l.cfg.Banks
	rows := make([]int, len(banks))
	recorded := make([]uint64, len(banks))
	for j, b := range banks {
		for _, c := range l.cells[l.offs[j] : l.offs[j]+b.Rows] {
			recorded[j] += c.count
		}
		lo := min(max(floor, 2), b.Rows)
		r := b.Rows
		if recorded[j] < uint64(b.Rows) {
			r = max(lo, 1<<bits.Len64(max(recorded[j], 1)-1)) // smallest power of two ≥ packets
		}
		rows[j] = max(r, lo)
	}
	if maxBytes <= 0 || bounds.validate() != nil {
		return rows
	}
	if !l.cfg.Digest {
		bounds.DigestBits = 0
	}
	span := uint64(bounds.MaxDelayNs) - uint64(bounds.MinDelayNs)
	// Bytes of the encoding's header, then per bank its count base and
	// width (bytes) and its bit stream (bits), exactly as AppendCompact
	// writes them.
	fixed := len(ldaCompactMagic) + 1 + 2 + 2*len(banks) + uvarintLen(l.offered) + uvarintLen(uint64(bounds.MinDelayNs<<1^bounds.MinDelayNs>>63)) +
		uvarintLen(span) + uvarintLen(bounds.MeanResolutionNs) + 2
	maxRows := 0
	for _, b := range banks {
		maxRows = max(maxRows, b.Rows)
	}
	scratch := make([]uint64, max(maxRows, l.cfg.coverRows()))
	streamBits := 0 // the cover buckets' bits
	if cover := l.cfg.coverRows(); cover > 0 {
		n := l.cfg.TotalRows()
		cc := scratch[:cover]
		for i := range cc {
			cc[i] = l.cells[n+i].count
		}
		b, h := compactGroupBits(cc, span, bounds, false)
		fixed += h
		streamBits += b
	}
	hdr := make([]int, len(banks))
	bankBits := func(j, r int) int {
		b := banks[j]
		cc := scratch[:r]
		clear(cc)
		for i, c := range l.cells[l.offs[j] : l.offs[j]+b.Rows] {
			cc[i&(r-1)] += c.count
		}
		n, h := compactGroupBits(cc, span, bounds, true)
		hdr[j] = h
		return n
	}
	size := func(per []int) int {
		n, s := fixed, streamBits
		for j := range per {
			n += hdr[j]
			s += per[j]
		}
		return n + (s+7)/8
	}
	per := make([]int, len(banks))
	for j := range banks {
		per[j] = bankBits(j, rows[j])
	}
	for size(per) > maxBytes {
		big := -1
		for j := range banks {
			if rows[j]/2 < max(floor, 2) {
				continue
			}
			if big < 0 || rows[j] > rows[big] || rows[j] == rows[big] && recorded[j] < recorded[big] {
				big = j
			}
		}
		if big < 0 {
			break // every bank at its floor: the LDA ships anyway
		}
		rows[big] /= 2
		per[big] = bankBits(big, rows[big])
	}
	return rows
}

// compactGroupBits is what one count group (a bank, or the cover buckets
// when sums is false) costs in the compact encoding: bits in the bit
// stream, and bytes of its base and width, exactly as AppendCompact
// writes them.
func compactGroupBits(counts []uint64, span uint64, bounds CompactBounds, sums bool) (streamBits, hdrBytes int) {
	lo, hi := counts[0], counts[0]
	for _, c := range counts {
		lo, hi = min(lo, c), max(hi, c)
	}
	w := max(1, bits.Len64(hi-lo))
	n := 0
	for _, c := range counts {
		n += w
		if c == 0 {
			continue
		}
		if sums {
			_, v, _ := ldaSumShape(c, span, bounds.MeanResolutionNs, ldaCompactGuard)
			n += int(v)
		}
		n += int(bounds.DigestBits)
	}
	return n, uvarintLen(lo) + 1
}

func uvarintLen(v uint64) int { return max(1, (bits.Len64(v)+6)/7) }

// foldToCommon folds the four LDAs of a crossing check (two intervals,
// each a sender's compact LDA and the receiver's own) to the shape they
// all fold to, per bank the fewest rows any of them has: each interval
// may have shipped its own shape. LDAs already at that shape are returned
// as they are. A difference in anything but rows is ErrConfigMismatch.
func foldToCommon(sk *CompactLDA, rk *LDA, sk1 *CompactLDA, rk1 *LDA) (*CompactLDA, *LDA, *CompactLDA, *LDA, error) {
	common, err := CommonLDAConfig(sk.cfg, rk.cfg)
	for _, c := range []LDAConfig{sk1.cfg, rk1.cfg} {
		if err == nil {
			common, err = CommonLDAConfig(common, c)
		}
	}
	if err != nil {
		return nil, nil, nil, nil, fmt.Errorf("LDA crossing: %w", err)
	}
	foldC := func(c *CompactLDA) (*CompactLDA, error) {
		if c.cfg.equal(common) {
			return c, nil
		}
		return c.Fold(common)
	}
	foldL := func(l *LDA) (*LDA, error) {
		if l.cfg.equal(common) {
			return l, nil
		}
		return l.Fold(common)
	}
	var errs [4]error
	sk, errs[0] = foldC(sk)
	rk, errs[1] = foldL(rk)
	sk1, errs[2] = foldC(sk1)
	rk1, errs[3] = foldL(rk1)
	for _, e := range errs {
		if e != nil {
			return nil, nil, nil, nil, fmt.Errorf("LDA crossing: %w", e)
		}
	}
	return sk, rk, sk1, rk1, nil
}

// Equal reports whether c and o are the same configuration (banks in the
// same order, digest setting).
func (c LDAConfig) Equal(o LDAConfig) bool { return c.equal(o) }
