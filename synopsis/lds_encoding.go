package synopsis

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"sort"
)

// ldsMagic and ldsVersion open every encoded LDS.
const (
	ldsMagic = "LDS"
	// ldsVersion 3 added each cell's stamp error and always writes the
	// fold. Versions 1 (unfolded) and 2 (folded) carried no stamp error;
	// the decoder refuses them by name: an LDS without its cells' stamp
	// errors cannot bound what stamps move a flow's mean.
	ldsVersion = 3
	// ldsVersionSparse is version 3 carrying only some cells
	// (AppendBinarySparse).
	ldsVersionSparse = 4
	// ldsMaxFold bounds a decoded fold.
	ldsMaxFold = 26
)

// AppendBinary appends the versioned encoding of l to b.
//
// Wire format, version 3 (integers little-endian; uvarint/varint as in
// encoding/binary, always minimal):
//
//	"LDS" 0x03                       magic, version
//	uvarint Rows, Cols, CellsPerFlow
//	uvarint fold                      0..26: the columns are the recorded
//	                                  ones merged 2^fold to 1 (FoldCols)
//	Rows × uvarint threshold          row sampling threshold on 32 hash bits, 1..2^32
//	8 bytes Alpha                     float64 bits
//	uvarint MaxFlows, uvarint hold    flow-table capacity, admission threshold 1..2^32
//	uvarint ShipMinPackets
//	uvarint packets                   packets added
//	8 bytes base                      ns, the latest timestamp added
//	Rows·Cols cells, row-major:
//	    uvarint count                 weighted count; 0 ends an empty cell
//	    varint  sum − count·base      wrap-around, so small when the cell's
//	                                  timestamps are near base (≈5 bytes, not 8)
//	    8 bytes digest
//	    uvarint errSum                Σ weight·stamp uncertainty, ns (0: exact stamps)
//	uvarint F                         held flows, F ≤ MaxFlows
//	F × { 8 bytes flow hash (strictly increasing), uvarint packets
//	      (≥ max(1, ShipMinPackets)), uvarint weight 1..2^32−1,
//	      uvarint L ≤ 40, L bytes key (trailing zero bytes trimmed) }
//	uvarint missed, uvarint refused   flow-table counters (missed includes
//	                                  the packets of flows not shipped)
//
// A cell with count 0 is empty (Add never leaves sum, digest or errSum set
// without count). Nothing may follow the last field. Every LDS has one
// encoding: the decoder refuses any other (a longer varint, a key with a
// trailing zero byte, an Alpha the config would not keep), so a decoded
// LDS re-encodes to the bytes it came from.
func (l *LDS) AppendBinary(b []byte) ([]byte, error) { return l.AppendBinaryLimited(b, l.rows, -1) }

// AppendBinaryLimited appends the encoding of l restricted to its first
// rows rows (1..Rows; the decoder sees an LDS of that many rows, which
// KeepRows gives the receiver's copy too) and to at most named of the
// flows the flow table holds, −1 for all: the largest, cut at a packet
// count (every flow of more than p packets, none of p or fewer; the
// encoding's ShipMinPackets says p+1). The others count as missed. This is
// how a control budget trims the LDS: fewer rows sample each flow fewer
// times; fewer flows named leaves the smallest ones to the receiver's own
// flow table.
func (l *LDS) AppendBinaryLimited(b []byte, rows, named int) ([]byte, error) {
	if l.absent != nil {
		// A decoded sparse copy re-encodes as it came: the cells it holds.
		if rows != l.rows {
			return b, fmt.Errorf("%w: a sparse LDS ships all its rows", ErrBadConfig)
		}
		return l.appendBinary(b, rows, named, l.knownCells())
	}
	return l.appendBinary(b, rows, named, nil)
}

// appendBinary is the encoder: dense (version 3) when keep is nil, else
// sparse (version 4) carrying only the cells keep lists (strictly
// increasing indices, row-major).
func (l *LDS) appendBinary(b []byte, rows, named int, keep []uint64) ([]byte, error) {
	l.SettleFlows()
	if rows < 1 || rows > l.rows {
		return b, fmt.Errorf("%w: LDS of %d rows cannot ship %d", ErrBadConfig, l.rows, rows)
	}
	var entries []FlowEntry
	var missed, refused uint64
	if l.flows != nil {
		missed, refused = l.flows.missed, l.flows.refused
		all := l.flows.Entries(l.flows.scratch[:0])
		l.flows.scratch = all
		entries = all[:0]
		for _, e := range all {
			if e.Packets >= l.cfg.ShipMinPackets {
				entries = append(entries, e)
			} else {
				missed += e.Packets
			}
		}
	}
	shipMin := l.cfg.ShipMinPackets
	if named >= 0 && named < len(entries) {
		// Cut at a packet count, never inside a tie: the flows shipped are
		// exactly those with more than p packets, and the encoding says
		// so (ShipMinPackets p+1 ≥ 2), so the estimator knows a flow the
		// sender does not name may still have sent packets.
		sort.Slice(entries, func(i, j int) bool { return entries[i].Packets > entries[j].Packets })
		p := entries[named].Packets
		keep := named
		for keep > 0 && entries[keep-1].Packets <= p {
			keep--
		}
		for _, e := range entries[keep:] {
			missed += e.Packets
		}
		entries = entries[:keep]
		shipMin = max(shipMin, p+1)
		sort.Slice(entries, func(i, j int) bool { return entries[i].FlowHash < entries[j].FlowHash })
	}
	// One allocation for the whole encoding: a cell takes at most
	// 10+10+8+10 bytes, an entry 8+10+5+1+40 (uvarints at their longest).
	ncells := int(uint64(rows) * l.cols)
	if keep != nil {
		ncells = len(keep) * 2
	}
	b = slices.Grow(b, 64+10*rows+ncells*38+len(entries)*64)
	b = append(b, ldsMagic...)
	if keep != nil {
		b = append(b, ldsVersionSparse)
	} else {
		b = append(b, ldsVersion)
	}
	b = binary.AppendUvarint(b, uint64(rows))
	b = binary.AppendUvarint(b, l.cols)
	b = binary.AppendUvarint(b, l.k)
	b = binary.AppendUvarint(b, uint64(l.fold))
	for r := 0; r < rows; r++ {
		b = binary.AppendUvarint(b, l.thr[r])
	}
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(l.cfg.Alpha))
	maxFlows := l.cfg.MaxFlows
	hold, _ := ldsRateThreshold(l.cfg.HoldRate)
	if l.flows != nil {
		hold = l.flows.holdThr
		maxFlows = max(maxFlows, l.flows.used)
	}
	b = binary.AppendUvarint(b, uint64(maxFlows))
	b = binary.AppendUvarint(b, hold)
	b = binary.AppendUvarint(b, shipMin)
	b = binary.AppendUvarint(b, l.packets)
	base := l.lastTs
	b = binary.LittleEndian.AppendUint64(b, base)
	cell := func(c *ldsCell) {
		b = binary.AppendUvarint(b, c.count)
		if c.count == 0 {
			return
		}
		b = binary.AppendVarint(b, int64(c.sum-c.count*base))
		b = binary.LittleEndian.AppendUint64(b, c.digest)
		b = binary.AppendUvarint(b, c.errSum)
	}
	if keep != nil {
		b = binary.AppendUvarint(b, uint64(len(keep)))
		next := uint64(0)
		for _, i := range keep {
			b = binary.AppendUvarint(b, i-next)
			cell(&l.cells[i])
			next = i + 1
		}
	} else {
		for i := range l.cells[:uint64(rows)*l.cols] {
			cell(&l.cells[i])
		}
	}
	b = binary.AppendUvarint(b, uint64(len(entries)))
	for i := range entries {
		e := &entries[i]
		b = binary.LittleEndian.AppendUint64(b, e.FlowHash)
		b = binary.AppendUvarint(b, e.Packets)
		b = binary.AppendUvarint(b, uint64(e.Weight))
		n := len(e.Key)
		for n > 0 && e.Key[n-1] == 0 {
			n--
		}
		b = binary.AppendUvarint(b, uint64(n))
		b = append(b, e.Key[:n]...)
	}
	b = binary.AppendUvarint(b, missed)
	b = binary.AppendUvarint(b, refused)
	return b, nil
}

// MarshalBinary is AppendBinary(nil).
func (l *LDS) MarshalBinary() ([]byte, error) { return l.AppendBinary(nil) }

// ldsReader walks an encoding; the first error sticks. Its varints must
// be minimal (one encoding per LDS).
type ldsReader struct {
	b       []byte
	err     error
	scratch [binary.MaxVarintLen64]byte
}

func (r *ldsReader) fail(what string) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: %s", errLDSBadEncoding, what)
	}
}

func (r *ldsReader) uvarint(what string) uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 || n != len(binary.AppendUvarint(r.scratch[:0], v)) {
		r.fail(what)
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *ldsReader) varint(what string) int64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Varint(r.b)
	if n <= 0 || n != len(binary.AppendVarint(r.scratch[:0], v)) {
		r.fail(what)
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *ldsReader) u64(what string) uint64 {
	if r.err != nil {
		return 0
	}
	if len(r.b) < 8 {
		r.fail(what)
		return 0
	}
	v := binary.LittleEndian.Uint64(r.b)
	r.b = r.b[8:]
	return v
}

// UnmarshalBinary replaces l with the LDS encoded in data (see
// AppendBinary). On error l is unchanged. A decoded LDS's flow table holds
// exactly the decoded flows (its capacity is their number, so a forged
// MaxFlows cannot make the decoder allocate); use it for estimation or merge
// it into a live LDS.
func (l *LDS) UnmarshalBinary(data []byte) error {
	if len(data) < 4 || string(data[:3]) != ldsMagic {
		return fmt.Errorf("%w: no LDS magic", errLDSBadEncoding)
	}
	sparse := false
	switch data[3] {
	case ldsVersion:
	case ldsVersionSparse:
		sparse = true
	case 1, 2:
		return fmt.Errorf("%w: version %d has no per-cell stamp error (this build reads version %d only; sender and receiver must run builds that agree)", errLDSBadEncoding, data[3], ldsVersion)
	default:
		return fmt.Errorf("%w: version %d, want %d or %d", errLDSBadEncoding, data[3], ldsVersion, ldsVersionSparse)
	}
	r := &ldsReader{b: data[4:]}
	rows := r.uvarint("rows")
	cols := r.uvarint("cols")
	k := r.uvarint("cells per flow")
	fold := r.uvarint("fold")
	if r.err == nil && fold > ldsMaxFold {
		r.fail("fold out of range")
	}
	if r.err != nil {
		return r.err
	}
	if rows < 1 || rows > maxLDSRows || cols < 1 || cols > maxLDSCells || rows*cols > maxLDSCells || k < 1 || k > cols || k > maxLDSCellsPerFlow ||
		cols<<fold > maxLDSCells {
		return fmt.Errorf("%w: shape %d×%d k=%d fold %d out of range", errLDSBadEncoding, rows, cols, k, fold)
	}
	cfg := LDSConfig{Rows: int(rows), Cols: int(cols), CellsPerFlow: int(k), RowRates: make([]float64, rows)}
	for i := range cfg.RowRates {
		t := r.uvarint("row threshold")
		if r.err == nil && (t < 1 || t > 1<<32) {
			r.fail("row threshold out of range")
		}
		cfg.RowRates[i] = float64(t) / (1 << 32)
	}
	cfg.Alpha = math.Float64frombits(r.u64("alpha"))
	maxFlows := r.uvarint("max flows")
	hold := r.uvarint("hold threshold")
	shipMin := r.uvarint("ship min packets")
	packets := r.uvarint("packets")
	base := r.u64("base")
	if r.err != nil {
		return r.err
	}
	if !(cfg.Alpha >= 0) || math.IsInf(cfg.Alpha, 0) || (cfg.Alpha == 0 && k > 1) {
		// Alpha 0 with k > 1 means the default, 0.1, which the encoder
		// writes as such.
		return fmt.Errorf("%w: alpha %v (k=%d)", errLDSBadEncoding, cfg.Alpha, k)
	}
	if maxFlows > maxFlowTable || hold < 1 || hold > 1<<32 {
		return fmt.Errorf("%w: flow table %d flows, hold %d", errLDSBadEncoding, maxFlows, hold)
	}
	cfg.MaxFlows = int(maxFlows)
	cfg.HoldRate = float64(hold) / (1 << 32)
	// Every cell takes at least one byte: refuse before allocating when the
	// input cannot hold them.
	if !sparse && uint64(len(r.b)) < rows*cols {
		return fmt.Errorf("%w: %d cells announced, %d bytes left", errLDSBadEncoding, rows*cols, len(r.b))
	}
	if sparse && rows*cols > ldsSparseMaxCells(len(data)) {
		return fmt.Errorf("%w: sparse %d cells from %d bytes", errLDSBadEncoding, rows*cols, len(data))
	}
	nl, err := NewLDS(LDSConfig{Rows: cfg.Rows, Cols: cfg.Cols, CellsPerFlow: cfg.CellsPerFlow, RowRates: cfg.RowRates, Alpha: cfg.Alpha})
	if err != nil {
		return fmt.Errorf("%w: %v", errLDSBadEncoding, err)
	}
	nl.cfg.MaxFlows, nl.cfg.HoldRate, nl.cfg.ShipMinPackets = cfg.MaxFlows, cfg.HoldRate, shipMin
	nl.fold = uint(fold)
	nl.packets, nl.lastTs = packets, base
	cell := func(c *ldsCell) error {
		c.count = r.uvarint("cell count")
		if c.count == 0 {
			return r.err
		}
		c.sum = uint64(r.varint("cell sum")) + c.count*base
		c.digest = r.u64("cell digest")
		c.errSum = r.uvarint("cell stamp error")
		return r.err
	}
	if sparse {
		if err := nl.readSparse(r, cell); err != nil {
			return err
		}
	} else {
		for i := range nl.cells {
			if err := cell(&nl.cells[i]); err != nil {
				return err
			}
		}
	}
	nf := r.uvarint("flows")
	if r.err != nil {
		return r.err
	}
	// An entry takes at least 11 bytes.
	if nf > maxFlows || nf > uint64(len(r.b))/11 {
		return fmt.Errorf("%w: %d flows (capacity %d, %d bytes left)", errLDSBadEncoding, nf, maxFlows, len(r.b))
	}
	if maxFlows > 0 {
		t := &FlowTable{holdThr: hold}
		t.alloc(int(nf))
		var prev uint64
		for i := uint64(0); i < nf; i++ {
			var e FlowEntry
			e.FlowHash = r.u64("flow hash")
			e.Packets = r.uvarint("flow packets")
			w := r.uvarint("flow weight")
			if r.err != nil {
				return r.err
			}
			if w < 1 || w > math.MaxUint32 {
				return fmt.Errorf("%w: flow weight %d", errLDSBadEncoding, w)
			}
			if e.Packets == 0 || e.Packets < shipMin {
				return fmt.Errorf("%w: flow with %d packets (ship minimum %d)", errLDSBadEncoding, e.Packets, shipMin)
			}
			if i > 0 && e.FlowHash <= prev {
				return fmt.Errorf("%w: flow hashes not increasing", errLDSBadEncoding)
			}
			prev = e.FlowHash
			e.Weight = uint32(w)
			kl := r.uvarint("flow key length")
			if r.err != nil {
				return r.err
			}
			if kl > uint64(len(e.Key)) || kl > uint64(len(r.b)) || (kl > 0 && r.b[kl-1] == 0) {
				return fmt.Errorf("%w: flow key of %d bytes (trailing zero bytes are trimmed)", errLDSBadEncoding, kl)
			}
			copy(e.Key[:], r.b[:kl])
			r.b = r.b[kl:]
			if !t.insert(&e) {
				return fmt.Errorf("%w: flow table refused flow %d of %d", errLDSBadEncoding, i, nf)
			}
		}
		nl.flows = t
	}
	missed := r.uvarint("missed")
	refused := r.uvarint("refused")
	if r.err != nil {
		return r.err
	}
	if nl.flows != nil {
		nl.flows.missed, nl.flows.refused = missed, refused
	} else if missed != 0 || refused != 0 {
		return fmt.Errorf("%w: flow-table counters without a flow table", errLDSBadEncoding)
	}
	if len(r.b) != 0 {
		return fmt.Errorf("%w: %d trailing bytes", errLDSBadEncoding, len(r.b))
	}
	*l = *nl
	return nil
}

// Rows is R, the number of rows l has now.
func (l *LDS) Rows() int { return l.rows }

// NamedFlows is how many flows l's flow table holds (0 without one).
func (l *LDS) NamedFlows() int {
	if l.flows == nil {
		return 0
	}
	return l.flows.used
}

// KeepRows restricts l to its first n rows (1 ≤ n ≤ Rows), in place: the
// receiver's counterpart of a sender's AppendBinaryLimited with n rows,
// so both copies have the same shape. Each row is an independent hash of
// the flows, so the first n rows are an LDS of n rows.
func (l *LDS) KeepRows(n int) error {
	l.SettleFlows()
	if n < 1 || n > l.rows {
		return fmt.Errorf("%w: LDS of %d rows cannot keep %d", ErrBadConfig, l.rows, n)
	}
	for r := n; r < l.rows; r++ {
		l.thr[r] = 0
	}
	l.cells = l.cells[:uint64(n)*l.cols]
	l.rows = n
	l.cfg.Rows = n
	if l.cfg.RowRates != nil {
		l.cfg.RowRates = l.cfg.RowRates[:n]
	}
	return nil
}

// Cols is C, the cells per row this copy has (after FoldCols).
func (l *LDS) Cols() int { return int(l.cols) }

// FoldCols returns a copy of l with cols columns: l's columns must be
// cols·2^j (j ≥ 0) and cols ≥ CellsPerFlow; columns f·i … f·i+f−1
// (f = 2^j) of each row merge into column i (counts, sums and stamp errors
// add, digests XOR). A flow's columns are chosen by fastrange, so its cell c of
// l is cell c>>j of the copy, and the estimator finds it there: the folded
// LDS is one with fewer cells, more flows sharing each — the big flows
// still measured, the small ones drowned. A sender folds to fit a control
// budget; the receiver folds its copy to the columns the encoding
// announces. The flow table is shared, not copied. The copy is for
// encoding and estimation only: Add and Merge need the recorded shape.
func (l *LDS) FoldCols(cols int) (*LDS, error) {
	l.SettleFlows()
	f := uint64(0)
	if cols >= 1 && l.cols%uint64(cols) == 0 {
		f = l.cols / uint64(cols)
	}
	if f == 0 || f&(f-1) != 0 || uint64(cols) < l.k {
		return nil, fmt.Errorf("%w: LDS of %d columns (k=%d) cannot fold to %d", ErrBadConfig, l.cols, l.k, cols)
	}
	if f == 1 {
		return l, nil
	}
	shift := uint(bits.TrailingZeros64(f))
	g := *l
	g.cols, g.fold = uint64(cols), l.fold+shift
	g.cfg.Cols = cols
	g.cells = make([]ldsCell, uint64(l.rows)*g.cols)
	if l.absent != nil {
		// A folded cell is unknown when any cell it merges is.
		g.absent = make([]uint64, (len(g.cells)+63)/64)
		for r := 0; r < l.rows; r++ {
			for i := uint64(0); i < l.cols; i++ {
				if l.isAbsent(uint64(r)*l.cols + i) {
					j := uint64(r)*g.cols + i>>shift
					g.absent[j>>6] |= 1 << (j & 63)
				}
			}
		}
	}
	for r := 0; r < l.rows; r++ {
		src, dst := l.cells[uint64(r)*l.cols:uint64(r+1)*l.cols], g.cells[uint64(r)*g.cols:uint64(r+1)*g.cols]
		for i := range src {
			c, d := &src[i], &dst[i>>shift]
			d.count += c.count
			d.sum += c.sum
			d.digest ^= c.digest
			d.errSum += c.errSum
		}
	}
	return &g, nil
}

// RowsTakeAll says whether every row takes every packet (no per-row
// sampling): then a flow's cell counts are packet counts.
func (l *LDS) RowsTakeAll() bool {
	for r := 0; r < l.rows; r++ {
		if l.thr[r] != 1<<32 {
			return false
		}
	}
	return true
}

// CellsPerFlow is k, the cells of each flow's virtual LDA in a row.
func (l *LDS) CellsPerFlow() int { return int(l.k) }
