package synopsis

import (
	"fmt"
	"math"
)

// LDS is the Lossy Difference Sketch (Sanjuàs-Cuxart et al., IMC 2011): a
// per-flow delay sketch. It is a matrix of Rows × Cols cells, each a
// (timestamp sum, count, XOR digest) triple like an LDA bucket. A flow owns
// a virtual LDA of CellsPerFlow (k) contiguous cells in every row, starting
// at a column chosen by the flow hash (Sec. 2.3.4, Fig. 5); each packet goes
// to one of those k cells per row, chosen by the packet identity, so a lost
// or reordered packet spoils only one cell of the flow per row (Sec. 2.3.3).
// Each row samples packets at its own rate (multi-bank LDS, Sec. 4.2) so at
// least one row suits a flow's loss rate, and each packet adds its flow's
// weight w (Sec. 4.1): sum += w·ts, count += w. Beyond the paper, each
// cell also sums its packets' timestamp uncertainty (errSum += w·err): the
// stamps of a flow's packets may be worse than the interval's average (a
// slow transmit call, a late poll), and what they can move a flow's
// estimate is known only from the very cells the estimate uses
// (FlowEstimate.StampErrNs).
//
// The sender and the receiver each keep an LDS with the same LDSConfig; at
// the end of an interval the sender's is encoded and shipped, and the
// receiver estimates per-flow mean delay (the α-filtered estimator of
// Fig. 6), flow size (count-min, Sec. 4.3) and per-flow loss from the pair.
// An optional FlowTable (LDSConfig.MaxFlows) names the flows.
//
// An LDS is not safe for concurrent use: one per worker, merged on the
// control side. Add and AddFlow allocate nothing and use no floating point.
type LDS struct {
	cfg   LDSConfig // normalised
	rows  int
	cols  uint64
	k     uint64
	thr   [maxLDSRows]uint64 // per-row sampling threshold on 32 hash bits; 1<<32 = take all
	cells []ldsCell          // row-major: cell (r, c) at r*cols + c
	// fold: this copy's columns are the recorded ones merged 2^fold to 1
	// (FoldCols); a flow's cell c of the recorded LDS is cell c>>fold
	// here. Only copies for estimation are folded; Add needs fold 0.
	fold uint

	packets uint64 // Add calls, i.e. packets offered (before row sampling)
	lastTs  uint64 // ns, the latest timestamp added; the encoding's base

	flows *FlowTable // nil when cfg.MaxFlows == 0
	// held: the flow table's slots may hold packets back from the cells
	// (flowSlot's acc fields, added by a recorder outside Go through
	// LDSHot); SettleFlows adds them in. Every method that reads the
	// cells settles first.
	held bool

	// absent marks, one bit per cell, the cells a sparse encoding did not
	// carry (AppendBinarySparse): their contents are unknown, and the
	// estimator does not use them. nil: every cell is known.
	absent []uint64

	// bound steers the receiver's estimator only (SetBound); it is not
	// encoded and not part of the shape.
	bound LDSBound
}

// LDSBound is what the estimator may assume to bound a flow's mean
// (FlowEstimate's MeanCINs). A flow's cells also hold other flows'
// packets, and with k > 1 or sampled rows only part of its own; the
// estimator bounds what either can move the mean by the spread of the
// delays, MaxDelayNs − MinDelayNs. Without a range (MaxDelayNs ≤
// MinDelayNs) only a flow whose averaged cells provably hold all of its
// packets and nothing else gets a valid estimate.
type LDSBound struct {
	// MinDelayNs and MaxDelayNs bound every packet's delay (receiver stamp
	// minus sender stamp, clock offset included), ns.
	MinDelayNs, MaxDelayNs int64
	// Conf is the confidence of the sampling part of the bound (k > 1 or
	// sampled rows); 0 means 0.98. The collision part holds always.
	Conf float64

	set bool // SetBound was called: [MinDelayNs, MaxDelayNs] is a range, even of width 0
}

// SetBound sets the receiver's estimator assumptions (see LDSBound); call
// it on the receiver's LDS before estimating. Clones keep it. A range of
// width 0 (every delay the same) is a range: a flow's mean is then exact
// whatever shares its cells. Without a call (or with MaxDelayNs <
// MinDelayNs) no range is known.
func (l *LDS) SetBound(b LDSBound) {
	b.set = b.MaxDelayNs >= b.MinDelayNs
	l.bound = b
}

// ldsCell is one LDS cell. sum wraps (absolute ns timestamps times
// weights); only differences of sums between sender and receiver mean
// anything, and those stay exact while the true weighted delay sum fits in
// 63 bits. errSum does not wrap in practice: 10^9 packets each uncertain by
// a millisecond sum to 10^15 of its 1.8·10^19.
type ldsCell struct {
	sum    uint64 // Σ w·ts, ns, wrap-around
	count  uint64 // Σ w
	digest uint64 // XOR of the packet identities (h) that hit the cell
	errSum uint64 // Σ w·err, ns: how far the stamps in sum may be off, at most
}

// maxLDSRows bounds Rows so the per-row thresholds live in a fixed array
// (no bounds checks, no slice header on the hot path).
const maxLDSRows = 16

// maxLDSCellsPerFlow bounds k: the paper uses k ≤ 5; beyond a few dozen
// cells a flow's virtual LDA only adds collisions, and k bounds the
// estimator's work per flow (Rows·k cells).
const maxLDSCellsPerFlow = 64

// maxLDSCells bounds Rows·Cols: 1<<26 cells of 32 bytes is 2 GiB.
const maxLDSCells = 1 << 26

// LDSConfig sizes an LDS. Sender and receiver must use equal configs
// (Alpha excepted, it only steers the receiver's estimator).
type LDSConfig struct {
	// Rows is R, the number of rows (independent hash functions). 0 means 4,
	// the paper's choice; at most 16.
	Rows int
	// Cols is C, cells per row. Required; DimensionLDS derives it from the
	// expected number of flows.
	Cols int
	// CellsPerFlow is k, the length of each flow's virtual LDA in a row
	// (1 ≤ k ≤ Cols). 0 means 1.
	CellsPerFlow int
	// RowRates is the packet sampling probability of each row (multi-bank
	// LDS). nil means 1 for every row; otherwise one entry per row, each in
	// (0, 1], quantised to multiples of 2^-32.
	RowRates []float64
	// Alpha is the estimator's tolerance: cells holding up to (1+α) times
	// the packets of the least-loaded cell are averaged (Fig. 6). 0 means
	// automatic: 0.1 (the paper's value) when CellsPerFlow > 1, and 0 —
	// only the least-loaded cells — when CellsPerFlow is 1. With k = 1 each
	// row's cell of a flow holds all of the flow's packets, so another
	// row's cell adds no new sample of the flow, only more colliders: any
	// α > 0 can only add interference (a departure from the paper, which
	// tuned α on k = 5; measured in lds_test on Pareto traffic: median error
	// of flows ≥ 500 packets 0.9 % with α = 0 against 1.6 % with 0.1).
	Alpha float64
	// MaxFlows is the capacity of the flow table that names flows; 0 means
	// no flow table (the caller maps flow hashes to keys itself).
	MaxFlows int
	// HoldRate is the flow table's sample-and-hold admission probability
	// per packet of an unheld flow. 0 means 1 (hold every flow).
	HoldRate float64
	// ShipMinPackets leaves flows held with fewer packets out of the
	// encoding (their packets count as missed there), to keep the shipped
	// table small: the LDS cannot measure such small flows well anyway
	// (Sec. 3: they are not "survivable"), and the receiver still names the
	// ones it saw itself. 0 or 1 ships every held flow.
	ShipMinPackets uint64
	// FlowsGrow starts the flow table small (room for a few thousand
	// flows) instead of at MaxFlows: it then grows only when the owner
	// calls ReserveFlows between intervals (never on the hot path), so
	// memory follows the flows observed. Flows that find no room in the
	// meantime are refused and counted.
	FlowsGrow bool
}

// Errors of the LDS wrap the package's sentinels, so callers test them
// with errors.Is(err, ErrConfigMismatch) and errors.Is(err, ErrBadEncoding).
var (
	errLDSConfigMismatch = fmt.Errorf("%w: LDS configs differ", ErrConfigMismatch)
	errLDSBadEncoding    = fmt.Errorf("%w: LDS", ErrBadEncoding)
)

// normalise fills defaults and validates; it returns the thresholds.
func (c LDSConfig) normalise() (LDSConfig, [maxLDSRows]uint64, error) {
	var thr [maxLDSRows]uint64
	if c.Rows == 0 {
		c.Rows = 4
	}
	if c.CellsPerFlow == 0 {
		c.CellsPerFlow = 1
	}
	if c.Alpha == 0 && c.CellsPerFlow > 1 {
		c.Alpha = 0.1
	}
	switch {
	case c.Rows < 1 || c.Rows > maxLDSRows:
		return c, thr, fmt.Errorf("%w: LDS Rows %d out of range 1..%d", ErrBadConfig, c.Rows, maxLDSRows)
	case c.Cols < 1 || int64(c.Rows)*int64(c.Cols) > maxLDSCells:
		return c, thr, fmt.Errorf("%w: LDS Cols %d out of range (1..%d cells in all); see DimensionLDS", ErrBadConfig, c.Cols, maxLDSCells)
	case c.CellsPerFlow < 1 || c.CellsPerFlow > c.Cols || c.CellsPerFlow > maxLDSCellsPerFlow:
		return c, thr, fmt.Errorf("%w: LDS CellsPerFlow %d out of range 1..min(Cols, %d)", ErrBadConfig, c.CellsPerFlow, maxLDSCellsPerFlow)
	case !(c.Alpha >= 0) || math.IsInf(c.Alpha, 0):
		return c, thr, fmt.Errorf("%w: LDS Alpha %v must be a finite number ≥ 0", ErrBadConfig, c.Alpha)
	case c.MaxFlows < 0 || c.MaxFlows > maxFlowTable:
		return c, thr, errFlowTableCap
	case c.RowRates != nil && len(c.RowRates) != c.Rows:
		return c, thr, fmt.Errorf("%w: LDS RowRates has %d entries for %d rows", ErrBadConfig, len(c.RowRates), c.Rows)
	}
	if _, err := ldsRateThreshold(c.HoldRate); err != nil {
		return c, thr, err
	}
	if c.HoldRate == 0 {
		c.HoldRate = 1
	}
	rates := make([]float64, c.Rows)
	for r := range rates {
		rate := 1.0
		if c.RowRates != nil {
			rate = c.RowRates[r]
		}
		t, err := ldsRateThreshold(rate)
		if err != nil || rate == 0 {
			return c, thr, fmt.Errorf("%w: LDS RowRates[%d] = %v must be in (0, 1]", ErrBadConfig, r, rate)
		}
		thr[r] = t
		rates[r] = float64(t) / (1 << 32) // what the hot path really applies
	}
	c.RowRates = rates
	return c, thr, nil
}

// NewLDS returns an empty LDS for cfg.
func NewLDS(cfg LDSConfig) (*LDS, error) {
	cfg, thr, err := cfg.normalise()
	if err != nil {
		return nil, err
	}
	l := &LDS{
		cfg:   cfg,
		rows:  cfg.Rows,
		cols:  uint64(cfg.Cols),
		k:     uint64(cfg.CellsPerFlow),
		thr:   thr,
		cells: make([]ldsCell, cfg.Rows*cfg.Cols),
	}
	if cfg.MaxFlows > 0 {
		l.flows, err = newFlowTable(cfg.MaxFlows, cfg.HoldRate, cfg.FlowsGrow)
		if err != nil {
			return nil, err
		}
	}
	return l, nil
}

// Config returns the normalised configuration (defaults filled in, RowRates
// as quantised). The caller must not modify RowRates.
func (l *LDS) Config() LDSConfig { return l.cfg }

// Flows returns the flow table, nil when MaxFlows is 0.
func (l *LDS) Flows() *FlowTable { return l.flows }

// Count is the number of packets added (before row sampling).
func (l *LDS) Count() uint64 { return l.packets }

// The rows' hash functions h_r (flow → base column) and h'_r (packet →
// sampling and cell) of Fig. 5. One Remix per packet of each input, then a
// cheap per-row finisher: y = (x ⊕ a_r)·m_r, y ⊕= y>>32, with a_r and m_r
// (odd) drawn from splitmix64. Given a uniform x the high 32 bits of the
// product and its low 32 bits are independent and uniform, so y's high half
// and low half are two independent 32-bit draws per row; different rows use
// different bijections of x. This costs one multiply per row instead of a
// Remix per row (2 + R multiplies per packet instead of 4R).
var ldsRowA, ldsRowM = func() (a, m [maxLDSRows]uint64) {
	for r := range a {
		a[r] = Remix(uint64(r), 0x4c44535f726f7761) // "LDS_rowa"
		m[r] = Remix(uint64(r), 0x4c44535f726f776d) | 1
	}
	return
}()

func ldsRowHash(x uint64, r int) uint64 {
	y := (x ^ ldsRowA[r&(maxLDSRows-1)]) * ldsRowM[r&(maxLDSRows-1)]
	return y ^ y>>32
}

// ldsFastRange maps 32 uniform bits onto [0, n) without a division (Lemire).
func ldsFastRange(x32, n uint64) uint64 { return (x32 * n) >> 32 }

// flowBase is h_r(f) of Fig. 5: the first column of flow f's virtual LDA
// in row r; fx is Remix(flowHash, SaltLDSRow).
func (l *LDS) flowBase(fx uint64, r int) uint64 {
	return ldsFastRange(ldsRowHash(fx, r)>>32, l.cols<<l.fold)
}

// Add records one packet: flowHash is the hash of its 5-tuple
// (classifier.Meta.FlowHash), h its identity (classifier.Meta.Hash), ts its
// timestamp in absolute ns, errNs how far ts may be from the packet's real
// hand-off or arrival (0 for an exact stamp), weight its flow's weight (0
// means 1). For each
// row the packet is sampled with the row's rate, from the high 32 bits of
// its row hash of Remix(h, SaltLDSCell); the low 32 bits pick its cell
// among the flow's k.
func (l *LDS) Add(flowHash, h, ts, errNs uint64, weight uint32) {
	w := uint64(weight)
	if w == 0 {
		w = 1
	}
	l.packets++
	l.lastTs = ts
	wts, werr := w*ts, w*errNs
	fx := Remix(flowHash, SaltLDSRow)
	px0 := Remix(h, SaltLDSCell)
	// Locals: the cell writes below could alias l's fields as far as the
	// compiler knows, which would reload them every row.
	rows, cols, k, cells := l.rows, l.cols, l.k, l.cells
	for r := 0; r < rows && r < maxLDSRows; r++ {
		px := ldsRowHash(px0, r)
		if px>>32 >= l.thr[r] {
			continue
		}
		c := ldsFastRange(ldsRowHash(fx, r)>>32, cols) + ldsFastRange(px&0xffffffff, k)
		if c >= cols {
			c -= cols
		}
		cell := &cells[uint64(r)*cols+c]
		cell.sum += wts
		cell.count += w
		cell.digest ^= h
		cell.errSum += werr
	}
}

// AddFlow is Add plus the flow table: it also counts the packet for its
// flow and, on the flow's first held packet, stores key (nil: unnamed).
func (l *LDS) AddFlow(flowHash, h, ts, errNs uint64, weight uint32, key *FlowKeyBytes) {
	if k := l.AddFlowKey(flowHash, h, ts, errNs, weight); k != nil && key != nil {
		*k = *key
	}
}

// AddFlowKey is AddFlow for a caller that has the flow's key only as
// fields: when the packet is its flow's first held one it returns the
// flow's key slot, zeroed, for the caller to fill at once (with
// PackFlowKey); otherwise nil, and the key need not be built at all —
// which is every packet but one per held flow.
func (l *LDS) AddFlowKey(flowHash, h, ts, errNs uint64, weight uint32) *FlowKeyBytes {
	l.Add(flowHash, h, ts, errNs, weight)
	if l.flows == nil {
		return nil
	}
	return l.flows.observe(flowHash, h, weight)
}

// SettleFlows adds into the cells the packets the flow table's slots hold
// back (see flowSlot): each held flow's sums go to its cell in every
// row, the cell Add gives its packets when every row takes every packet
// and a flow has one cell per row, the only shape a recorder holds
// packets back in. The cells are then what Add would have made of the
// same packets. It allocates nothing; without held packets it returns at
// once. The owner of a copy calls it before the copy is read (the control
// side, on taking a copy from the worker); every method of l that reads
// the cells also does.
func (l *LDS) SettleFlows() {
	if !l.held {
		return
	}
	l.held = false
	t := l.flows
	if t == nil {
		return
	}
	rows, cols, cells := min(l.rows, maxLDSRows), l.cols, l.cells
	for i := range t.slots {
		s := &t.slots[i]
		if s.accCount == 0 && s.accDigest == 0 && s.accSum == 0 && s.accErr == 0 {
			continue
		}
		fx := Remix(s.hash, SaltLDSRow)
		for r := 0; r < rows; r++ {
			cell := &cells[uint64(r)*cols+ldsFastRange(ldsRowHash(fx, r)>>32, cols)]
			cell.sum += s.accSum
			cell.count += s.accCount
			cell.digest ^= s.accDigest
			cell.errSum += s.accErr
		}
		s.accSum, s.accCount, s.accDigest, s.accErr = 0, 0, 0, 0
	}
}

// sameShape reports whether o was built from the same structural config
// (everything that decides where a packet goes).
func (l *LDS) sameShape(o *LDS) bool {
	return l.rows == o.rows && l.cols == o.cols && l.k == o.k && l.thr == o.thr && l.fold == o.fold
}

// Merge adds o into l: cell sums, counts and stamp errors add, digests XOR, flow tables
// merge. Per-worker shards of one side are merged this way; merging a
// sender into a receiver is meaningless. It fails, leaving l unchanged,
// when the configs differ.
func (l *LDS) Merge(o *LDS) error {
	if !l.sameShape(o) {
		return errLDSConfigMismatch
	}
	l.SettleFlows()
	o.SettleFlows()
	for i := range l.cells {
		a, b := &l.cells[i], &o.cells[i]
		a.sum += b.sum
		a.count += b.count
		a.digest ^= b.digest
		a.errSum += b.errSum
	}
	if o.absent != nil {
		// A cell unknown in either copy is unknown in the sum.
		if l.absent == nil {
			l.absent = make([]uint64, len(o.absent))
		}
		for i, w := range o.absent {
			l.absent[i] |= w
		}
	}
	l.packets += o.packets
	if o.lastTs > l.lastTs {
		l.lastTs = o.lastTs
	}
	if o.flows != nil {
		if l.flows == nil {
			l.flows = o.flows.Clone()
			l.cfg.MaxFlows, l.cfg.HoldRate, l.cfg.ShipMinPackets = o.cfg.MaxFlows, o.cfg.HoldRate, o.cfg.ShipMinPackets
		} else {
			l.flows.Merge(o.flows)
		}
	}
	return nil
}

// Reset zeroes the sketch and empties the flow table, keeping the memory.
func (l *LDS) Reset() {
	clear(l.cells)
	l.absent, l.held = nil, false
	l.packets, l.lastTs = 0, 0
	if l.flows != nil {
		l.flows.Reset()
	}
}

// Clone returns a deep copy.
func (l *LDS) Clone() *LDS {
	l.SettleFlows()
	c := *l
	c.cfg.RowRates = append([]float64(nil), l.cfg.RowRates...)
	c.cells = append([]ldsCell(nil), l.cells...)
	if l.absent != nil {
		c.absent = append([]uint64(nil), l.absent...)
	}
	if l.flows != nil {
		c.flows = l.flows.Clone()
	}
	return &c
}

// NumBanks, BankSize and Bucket present the LDS as banks of buckets for
// DetectMicrobursts: each row is a bank (multi-bank LDS, Sec. 4.2), each
// cell a bucket.
func (l *LDS) NumBanks() int { return l.rows }

// BankSize is the number of cells in a row (Cols).
func (l *LDS) BankSize(int) int { return int(l.cols) }

// Bucket returns cell (row, col): its timestamp sum (ns, wrap-around), its
// weighted count and its XOR digest. Out-of-range indices give zeros.
func (l *LDS) Bucket(row, col int) (tsSum, count, digest uint64) {
	if row < 0 || row >= l.rows || col < 0 || uint64(col) >= l.cols {
		return 0, 0, 0
	}
	l.SettleFlows()
	c := &l.cells[uint64(row)*l.cols+uint64(col)]
	return c.sum, c.count, c.digest
}
