package appliance

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/ldafwd/ldafwd/control"
	"github.com/ldafwd/ldafwd/synopsis"
)

// The control budget bounds what one interval's synopses cost on the
// wire, all copies counted: Config.BudgetBytes, or Config.BudgetFraction
// of the data bytes the sender recorded in the interval (at least
// MinControlBudget). The LDA is the
// floor: it always goes, whatever it costs. With Config.AdaptLDA it ships
// folded to the rows its packets fill, and when that would take more than
// its share (ldaBudgetShare, a quarter, of what one copy may spend, shared
// between the classes by need: see byPackets) its largest banks are halved until it fits,
// down to synopsis.LDAShipFloorRows per bank, which ships whatever it
// costs; what the RDA and the LDS leave unspent goes back to it at the
// end (growLDA). What is left after the LDA is spent, per copy, in this
// order, each step only when the previous one does not fit:
//
//  1. the RDA of each class gets its share (what is left, shared between
//     the classes by need, byPackets) and is folded to the largest size that fits — fewer cells decode a smaller set difference (lost
//     plus reordered packets); below rdaMinCells per bank it is left out;
//  2. the LDS gets the rest: first it names fewer flows (the smallest go:
//     the receiver still names every flow it saw itself, so only the names
//     of flows that lost every packet are at stake), then it ships fewer
//     rows (each flow sampled by fewer hash rows), then one row folded to
//     fewer columns (more flows share a cell: the large flows are still
//     measured, the small ones drown), and if ldsMinCols columns do not
//     fit it is left out.
//
// A synopsis left out or cut is reported as such — an invalid line whose
// reason names the budget, or a "config" that states the shape shipped —
// never silently: the interval itself is not lost.

// ldaBudgetShare is the part of one copy's control budget the LDAs of
// all classes may take when they adapt (Config.AdaptLDA). A quarter,
// measured (docs/lda.md, "Sizing per interval"): at 100 kpps and 1 %
// loss it lets the LDA ship about 2 700 buckets (six times the usable
// samples of the fixed 1 024) while the RDA still gets the 3×512 cells
// it needs to decode that loss; with half, the RDA was folded to 3×256
// and every rda line was invalid. Under a 1 % budget the LDA fills its
// share at every rate up to millions of packets per interval (a bucket of
// its own per packet costs about 6 bytes, a quarter of 1 % of a 128-byte
// packet is 0.3), so its shape is set by the budget, not by the rows its
// packets could fill; below about 5 000 packets per interval it ships its
// floor, which may exceed the share.
const ldaBudgetShare = 0.25

// maxDebtIntervals bounds the exchange bytes a sender carries to pay
// from later intervals' budgets (budget.go), in budgets: a burst of loss
// far beyond the traffic's usual costs later intervals their LDS for at
// most this many budgets' worth, then is forgotten.
const maxDebtIntervals = 4

// ldsDebtFloor is the share of its part of the budget the LDS keeps while
// more than one budget is owed.
const ldsDebtFloor = 0.5

// rdaMinCells is the fewest cells per bank an RDA is folded to: with
// fewer, too few cell pairs hold samples for a standard deviation and its
// bound (the estimator wants 16), and the line would be invalid anyway.
const rdaMinCells = 32

// budgetFor is the control budget of an interval that carried dataBytes
// of data, all copies; 0 means none.
func (s *shipper) budgetFor(dataBytes uint64) uint64 {
	cfg := s.cfg
	switch {
	case cfg.BudgetBytes > 0:
		return uint64(cfg.BudgetBytes)
	case cfg.BudgetFraction > 0:
		return max(uint64(math.Ceil(cfg.BudgetFraction*float64(dataBytes))), MinControlBudget)
	}
	return 0
}

// MinControlBudget is the least a fractional budget allows an interval,
// all copies counted: enough for the LDA and an RDA of rdaMinCells per
// bank in two copies, with the parity fragments a lossy segment adds to
// both and four End markers. The RDA's decode is what proves an
// interval's loss (and its neighbours': packets that crossed a boundary),
// so a quiet or slow interval — the one a stop cuts short, a pause, a link
// below about 16 Mbit/s at 1 s intervals — still carries one. 20 KB per
// interval is 160 kbit/s at 1 s intervals; from the rates a 1 % budget is
// for, 1 % is more.
const MinControlBudget = 20 << 10

// wireOf is what a payload of n bytes costs on the wire, one copy,
// parity fragments included (fec.go).
func (s *shipper) wireOf(n int) int { return s.sender.PartBytes(n) }

// shipped says what the budget let through of one interval, for the
// sender's log.
type shipped struct {
	ldaRows                 []string // rows per bank of each class's LDA shipped
	rdaCells                int      // cells per bank of the RDA shipped (0: none or left out)
	ldsRows, ldsCols, named int
	omitted                 []string
}

// room is what a part of a shipment may still spend, one copy, in wire
// bytes: a count (within), which may fall below zero once the LDA's floor
// has overspent, or no limit at all (noLimit) when the interval has no
// control budget.
type room struct {
	bytes   int
	limited bool
}

// noLimit is the room of a shipment without a control budget.
var noLimit = room{}

// within is a room of n wire bytes.
func within(n int) room { return room{bytes: n, limited: true} }

// fits says whether w wire bytes fit.
func (r room) fits(w int) bool { return !r.limited || w <= r.bytes }

// less is the room left once w wire bytes are spent.
func (r room) less(w int) room {
	if r.limited {
		r.bytes -= w
	}
	return r
}

// split is one of n even shares of the room (none below zero).
func (r room) split(n int) room {
	if r.limited {
		r.bytes = max(0, r.bytes/n)
	}
	return r
}

// encodeRDA appends r to prefix folded to fit share; it returns the payload and the cells per
// bank shipped, 0 when even rdaMinCells per bank do not fit.
func (s *shipper) encodeRDA(r *synopsis.RDA, prefix []byte, share room) ([]byte, int) {
	cells := r.Cells()
	for {
		f, err := r.Fold(cells)
		if err != nil {
			return nil, 0
		}
		q, _ := f.AppendBinary(prefix[:len(prefix):len(prefix)])
		w := s.wireOf(len(q))
		if share.fits(w) {
			return q, cells
		}
		// Cells cost about the same each: aim at the size that fits,
		// at least halving.
		target := min(cells/2, int(float64(cells)*float64(share.bytes)/float64(w)))
		if target < rdaMinCells {
			return nil, 0
		}
		if cells = r.FoldTo(target); cells < rdaMinCells {
			return nil, 0
		}
	}
}

// encodeLDS appends l to prefix within left: all rows and flow
// names if they fit, else fewer names, else fewer rows (and as many names
// as then fit), else one row folded to fewer columns. rows is 0 when one
// row of ldsMinCols columns without names does not fit.
func (s *shipper) encodeLDS(l *synopsis.LDS, prefix []byte, left room) (p []byte, rows, cols, named int, err error) {
	prefix = prefix[:len(prefix):len(prefix)]
	fits := func(q []byte) bool { return left.fits(s.wireOf(len(q))) }
	all := l.NamedFlows()
	q, err := l.AppendBinaryLimited(prefix, l.Rows(), all)
	if err != nil || fits(q) {
		return q, l.Rows(), l.Cols(), all, err
	}
	// withNames: the most names that fit beside g's first rows rows, or
	// nil if the rows alone do not fit.
	withNames := func(g *synopsis.LDS, rows int) ([]byte, int, error) {
		base, err := g.AppendBinaryLimited(prefix, rows, 0)
		if err != nil || !fits(base) {
			return nil, 0, err
		}
		if all == 0 {
			return base, 0, nil
		}
		full, err := g.AppendBinaryLimited(prefix, rows, all)
		if err != nil {
			return nil, 0, err
		}
		// Entries cost about the same each (fragment headers included).
		per := float64(len(full)-len(base)) / float64(all) * (1 + float64(s.sender.FragmentOverhead())/float64(s.sender.FragmentSize()))
		for n := min(all, int(float64(left.bytes-s.wireOf(len(base)))/per)); n > 0; n = n * 9 / 10 {
			q, err := g.AppendBinaryLimited(prefix, rows, n)
			if err != nil {
				return nil, 0, err
			}
			if fits(q) {
				return q, n, nil
			}
		}
		return base, 0, nil
	}
	for rows = l.Rows(); rows >= 1; rows-- {
		if q, n, err := withNames(l, rows); err != nil || q != nil {
			return q, rows, l.Cols(), n, err
		}
	}
	// Not one whole row fits: the largest flows' own cells, at the
	// recorded resolution (synopsis/lds_sparse.go). Folding the columns
	// instead would make every flow share its cells once the budget is a
	// few hundred cells for thousands of flows.
	if q, n, err := s.encodeLDSSparse(l, prefix, left, fits); err != nil || q != nil {
		return q, l.Rows(), l.Cols(), n, err
	}
	for cols = l.Cols() / 2; cols >= ldsMinCols && cols*2 <= l.Cols() && l.Cols()%cols == 0; cols /= 2 {
		g, err := l.FoldCols(cols)
		if err != nil {
			break // k > cols, or an odd column count: no smaller shape
		}
		if q, n, err := withNames(g, 1); err != nil || q != nil {
			return q, 1, cols, n, err
		}
	}
	return nil, 0, 0, 0, nil
}

// encodeLDSSparse encodes the cells of as many of l's largest flows as
// fit (each flow's least-loaded row), without names: the receiver names
// the flows it saw. It returns nil when not one flow fits (or l is sparse
// already, or holds no flow table). n is the flows carried.
func (s *shipper) encodeLDSSparse(l *synopsis.LDS, prefix []byte, left room, fits func([]byte) bool) ([]byte, int, error) {
	if l.Flows() == nil || l.Sparse() {
		return nil, 0, nil
	}
	ents := l.Flows().Entries(nil)
	if len(ents) == 0 {
		return nil, 0, nil
	}
	slices.SortStableFunc(ents, func(a, b synopsis.FlowEntry) int { return cmp.Compare(b.Packets, a.Packets) })
	cells := make([]uint64, 0, len(ents)*l.CellsPerFlow())
	upTo := make([]int, len(ents)) // cells of the first i+1 flows
	for i, e := range ents {
		cells = l.FlowCells(cells, e.FlowHash)
		upTo[i] = len(cells)
	}
	enc := func(n int) ([]byte, error) { return l.AppendBinarySparse(prefix, cells[:upTo[n-1]], 0) }
	full, err := enc(len(ents))
	if err != nil {
		return nil, 0, nil // too large a shape for a sparse copy this short
	}
	if fits(full) {
		return full, len(ents), nil
	}
	empty, err := l.AppendBinarySparse(prefix, nil, 0)
	if err != nil || !fits(empty) {
		return nil, 0, nil
	}
	// Cells cost about the same each (fragment headers included).
	per := float64(len(full)-len(empty)) / float64(len(ents)) * (1 + float64(s.sender.FragmentOverhead())/float64(s.sender.FragmentSize()))
	for n := min(len(ents), int(float64(left.bytes-s.wireOf(len(empty)))/per)); n > 0; n = n * 9 / 10 {
		q, err := enc(n)
		if err != nil {
			return nil, 0, nil
		}
		if fits(q) {
			return q, n, nil
		}
	}
	return nil, 0, nil
}

// ldsMinCols is the fewest columns an LDS is folded to: fewer measure
// nothing but the very largest flows of a tiny mix.
const ldsMinCols = 16

// adaptLDA folds l to the rows per bank its packets fill, within limit
// payload bytes (0: no limit; see budget.go for the floor); l itself is
// left as it is (it is the idle copy the lane records into next). Folding
// is exact: the receiver folds its own copy to the shape the encoding
// carries and gets the buckets it would have recorded at that shape.
func (s *shipper) adaptLDA(l *synopsis.LDA, limit int) *synopsis.LDA {
	cfg := l.Config()
	f, err := l.Fold(cfg.WithRows(l.ShipRows(synopsis.LDAShipFloorRows, limit, s.cfg.Bounds)))
	if err != nil {
		return l // cannot happen: ShipRows keeps every bank a power of two within its rows
	}
	return f
}

// growLDA gives the LDAs (parts[m] is class m's, cut to its share of the
// budget) what the RDA and the LDS left of one copy's budget, perCopy
// wire bytes: at low rates the others are often left out, or fit in less
// than theirs, and the LDA, cut hardest there, gains most from it. Class
// by class, each takes an even split of what is still spare; a class's
// new encoding replaces its old one only if the interval then still fits
// (fragment headers make the conversion to payload bytes approximate).
// rows (the shapes for the log) is updated alike.
func (s *shipper) growLDA(ldas []*synopsis.LDA, parts []control.Part, hdrLens []int, perCopy int, rows []string) {
	sizes := make([]int, len(parts))
	for i := range parts {
		sizes[i] = len(parts[i].Payload)
	}
	fs := float64(s.sender.FragmentSize())
	for m, l := range ldas {
		spare := perCopy - s.sender.IntervalBytes(1, sizes...)
		if spare <= 0 {
			return
		}
		body := sizes[m] - hdrLens[m]
		limit := body + int(float64(spare/(len(ldas)-m))*fs/(fs+float64(s.sender.FragmentOverhead())))
		f := s.adaptLDA(l, limit)
		shape := f.Config().Shape()
		if shape == rows[m] {
			continue // its packets fill no more rows
		}
		p := parts[m].Payload[:hdrLens[m]:hdrLens[m]]
		p, err := f.AppendCompact(p, s.cfg.Bounds)
		if err != nil {
			continue
		}
		old := sizes[m]
		sizes[m] = len(p)
		if s.sender.IntervalBytes(1, sizes...) > perCopy {
			sizes[m] = old
			continue
		}
		parts[m].Payload, rows[m] = p, shape
	}
}

// adaptRDA folds r to the cells per bank its packets need (SizeRDAConfig
// at the problem rate): the RDA is recorded at its configured size, and
// an interval of few packets ships a few cells. It never grows: the
// configured cells are the ceiling.
func (s *shipper) adaptRDA(r *synopsis.RDA) *synopsis.RDA {
	need, err := synopsis.SizeRDAConfig(uint64(r.Count()), s.cfg.RDAProblemRate)
	if err != nil || need.Cells >= r.Cells() {
		return r
	}
	m := r.Cells()
	for m%2 == 0 && m/2 >= need.Cells && m/2 >= rdaMinCells {
		m /= 2
	}
	if f, err := r.Fold(m); err == nil {
		return f
	}
	return r
}

// adaptLDS folds l to the columns the flows it saw need: four cells per
// row for each of them (k cells each), so that a flow shares its cell in
// a row with probability about 1 − e^(−1/4) and in all four rows with
// about 0.2 %: every flow measurable, not only the large ones. An LDS
// recorded for the most flows a deployment may see thus ships, in a
// quiet interval, a sketch sized for the flows that interval had (and the
// budget may fold it further). The flows seen are those its table held
// plus the admissions it refused (an overestimate: a refused flow tries
// again with every packet).
func (s *shipper) adaptLDS(l *synopsis.LDS) *synopsis.LDS {
	seen := l.NamedFlows()
	if t := l.Flows(); t != nil {
		seen += int(min(t.Refused(), uint64(synopsis.MaxFlowTable)))
	} else {
		seen = int(min(l.Count(), uint64(synopsis.MaxFlowTable)))
	}
	need := 4 * max(seen, 1) * l.CellsPerFlow()
	cols := l.Cols()
	for cols%2 == 0 && cols/2 >= need && cols/2 >= ldsMinCols {
		cols /= 2
	}
	if g, err := l.FoldCols(cols); err == nil {
		return g
	}
	return l
}

// budgetReason is the reason of a line whose synopsis the budget left out.
func budgetReason(what string, h payloadHeader) string {
	return fmt.Sprintf("%s left out by the control budget (%d bytes for this interval, all copies, after the LDA): raise --control-budget", what, h.Budget)
}

// byPackets orders classes 0..n-1 by their packets, fewest first (ties by
// class): the order in which they take their share of a budget, each at
// most an even split of what is still unspent, so that what the quiet
// classes do not need goes to the busy ones.
func byPackets(n int, packets func(m int) uint64) []int {
	order := make([]int, n)
	for m := range order {
		order[m] = m
	}
	sort.SliceStable(order, func(i, j int) bool { return packets(order[i]) < packets(order[j]) })
	return order
}
