package synopsis

import (
	"fmt"
	"math"
	"sort"

	"github.com/ldafwd/ldafwd/report"
)

// FlowEstimate is the per-flow answer of an LDS pair: the flow, its name
// when a flow table held it, and the Estimate (Synopsis "lds").
//
// In the Estimate: when CountsExact, Sent, Received and Lost are the flow
// tables' exact counts. Otherwise Sent is the count-min flow size at the
// sender (Sec. 4.3)
// in packets; Lost the count-min per-flow loss (the least of the rows'
// count differences over the flow's cells, an upper bound when no packet is
// reordered); Received = Sent − Lost so the Estimate's contract holds.
// MeanNs is the α-filtered mean delay (Fig. 6); Samples is the largest
// number of packets one row contributed to it (the rows share packets, so
// this is the distinct-packet count behind the mean, colliding flows'
// packets included); UsableBuckets counts the flow's cells whose sender and
// receiver sides match, TotalBuckets is Rows·k. MeanCINs bounds the
// error of MeanNs (see ldsEstimator.meanBound): other flows' packets in the
// averaged cells, and with k > 1 or sampled rows the part of the flow's
// own packets the cells hold; without a delay range (LDSBound) a flow is
// valid only when neither can move its mean. MeanCINs also includes
// StampErrNs, what the timestamps themselves can move MeanNs.
type FlowEstimate struct {
	FlowHash uint64
	Key      FlowKeyBytes // valid when Named
	Named    bool         // a flow table held the flow at either side
	Weight   uint32       // the flow's weight, 1 when not held

	// HeldSent and HeldReceived are the packets the sender's and the
	// receiver's flow tables counted since admitting the flow. With
	// HoldRate 1 and no table overflow they are exact.
	HeldSent, HeldReceived uint64

	// SelectedCells is how many cells the α-filter averaged.
	SelectedCells int

	// Fragments says how the line counts IP fragments, FragmentsFlow
	// (with FragmentsWholeAndFirst) the fragments flow that holds its
	// datagrams' later fragments: ApplyFragments sets both.
	Fragments     FragmentCount
	FragmentsFlow FlowKeyBytes

	// CountsExact: Sent, Received and Lost come from the flow tables, which
	// counted this flow exactly at both ends (HoldRate 1, no refusals, the
	// flow shipped or the table shipped whole), instead of the count-min
	// sketch estimates described above.
	CountsExact bool

	// RepairedLost and RepairedExtra are the flow's packets that
	// EstimateLDSFlowsRepaired took out of the sender's and the
	// receiver's sketch before estimating the mean (0 without repair).
	RepairedLost, RepairedExtra int

	// StampErrNs bounds how far the timestamps can move MeanNs: MeanNs is
	// Σ(receiver sum − sender sum)/Σ count over the averaged cells, and
	// each packet's two stamps are off by at most the uncertainties Add
	// was given, so MeanNs is off by at most Σ(sender errSum + receiver
	// errSum)/Σ count over the same cells — this figure, which MeanCINs
	// includes. It is the flow's own: its cells' packets, not the
	// interval's average. 0 with exact stamps (captures, hardware).
	// TxStampErrNs and RxStampErrNs are its sender's and receiver's parts.
	StampErrNs, TxStampErrNs, RxStampErrNs float64

	Estimate
}

// LDSOrder names a ranking for TopFlows.
type LDSOrder int

const (
	ByPackets LDSOrder = iota // largest Sent first
	ByDelay                   // largest MeanNs first, valid estimates only
	ByLoss                    // largest Lost first, flows with no loss left out
)

// ldsSelCell is one usable cell during estimation.
type ldsSelCell struct {
	row  int
	n    uint64 // weighted count, equal at both sides
	diff uint64 // receiver sum − sender sum, ns, wrap-around
	errS uint64 // sender errSum, ns
	errR uint64 // receiver errSum, ns
}

// ldsEstimator holds the scratch space of one estimation pass so that
// estimating many flows reuses it.
type ldsEstimator struct {
	s, r  *LDS
	alpha float64
	top   float64 // the highest configured row rate
	cells []ldsSelCell
	rowN  [maxLDSRows]uint64 // weighted packets the averaged cells of each row hold
	rowK  [maxLDSRows]uint64 // averaged cells of each row
	// rowR, rowCells: the receiver's weighted packets in each row's cells
	// of the flow, and how many distinct cells those are.
	rowR, rowCells [maxLDSRows]uint64
	bound          LDSBound
	// extraCells/extraMin: cells of the whole sketch that prove packets
	// only the receiver recorded, and a lower bound on them (the largest
	// row's sum). A flow's own cells can hide its extras behind its losses
	// in every row; the sketch-wide evidence cannot be attributed to flows.
	extraCells int
	extraMin   uint64
}

func newLDSEstimator(sender, receiver *LDS) (*ldsEstimator, error) {
	if sender == nil || receiver == nil {
		return nil, fmt.Errorf("%w: nil LDS", ErrBadConfig)
	}
	sender.SettleFlows()
	receiver.SettleFlows()
	if !sender.sameShape(receiver) {
		return nil, errLDSConfigMismatch
	}
	if sender.rows == 0 {
		return nil, fmt.Errorf("%w: zero-value LDS (use NewLDS)", ErrBadConfig)
	}
	e := &ldsEstimator{s: sender, r: receiver, alpha: receiver.cfg.Alpha, bound: receiver.bound}
	for row := 0; row < sender.rows; row++ {
		var rowExtra uint64
		for i := uint64(row) * sender.cols; i < uint64(row+1)*sender.cols; i++ {
			if sender.isAbsent(i) || receiver.isAbsent(i) {
				continue
			}
			a, b := &sender.cells[i], &receiver.cells[i]
			switch {
			case b.count > a.count:
				e.extraCells++
				rowExtra += b.count - a.count
			case b.count == a.count && a.count != 0 && a.digest != b.digest:
				e.extraCells++
				rowExtra++
			}
		}
		e.extraMin = max(e.extraMin, rowExtra)
	}
	for _, p := range receiver.cfg.RowRates {
		e.top = math.Max(e.top, p)
	}
	return e, nil
}

// EstimateLDSFlow estimates flow flowHash (weight 0 means 1) from the
// sender's and the receiver's LDS. It fails only when the configs differ.
func EstimateLDSFlow(sender, receiver *LDS, flowHash uint64, weight uint32) (Estimate, error) {
	e, err := newLDSEstimator(sender, receiver)
	if err != nil {
		return Estimate{Synopsis: "lds", Reason: err.Error(), Code: report.Decode}, err
	}
	var own uint64
	if receiver.flows != nil {
		if fe, ok := receiver.flows.Lookup(flowHash); ok {
			own = fe.Packets
		}
	}
	est, _, _, _ := e.flow(flowHash, weight, own)
	return est, nil
}

// flow is the estimator of one flow. Departure from the paper: Fig. 6
// compares raw counts; with per-row sampling Sec. 4.2 says to compare
// inverted counts n/p. An inverted count from a sparsely sampled row is
// noisy and, when it happens to be the least, would leave the estimate to a
// handful of packets. So the reference count n_min is taken only over the
// usable cells of the most densely sampled rows that have any usable cell;
// cells of every row whose inverted count is within (1+α)·n_min/p_top are
// then averaged, each weighted by its own sampled count. With equal row
// rates this is exactly Fig. 6.
//
// ownLo is a lower bound on the flow's packets in the receiver's sketch
// (its flow table's count: held since admission, so never more than it
// has), which bounds how much of each cell is not the flow's.
//
// It returns the estimate, the cells averaged and the stamp bound's
// sender and receiver parts (FlowEstimate.TxStampErrNs, RxStampErrNs),
// whose sum MeanCINs includes.
func (e *ldsEstimator) flow(flowHash uint64, weight uint32, ownLo uint64) (est Estimate, selected int, txErr, rxErr float64) {
	s, r := e.s, e.r
	w := float64(weight)
	if weight == 0 {
		w = 1
	}
	est = Estimate{Synopsis: "lds", TotalBuckets: s.rows * int(s.k)}
	e.cells = e.cells[:0]
	rates := r.cfg.RowRates

	sentMin, lossMin := math.Inf(1), math.Inf(1)
	// Extra packets (the receiver recorded them, the sender did not) in
	// any of the flow's cells hide losses from every count difference:
	// a cell with more at the receiver, or equal counts and different
	// digests, proves them.
	var extraCells int
	var extraMin uint64
	fx := Remix(flowHash, SaltLDSRow)
	e.rowCells = [maxLDSRows]uint64{}
	known := 0 // rows whose cells of the flow the sender shipped
	for row := 0; row < s.rows; row++ {
		if s.absent != nil || r.absent != nil {
			// A sparse copy: a row counts only if every cell of the flow
			// in it is known at both ends.
			shipped := true
			s.flowCells(fx, row, func(i uint64) { shipped = shipped && !s.isAbsent(i) && !r.isAbsent(i) })
			if !shipped {
				continue
			}
		}
		known++
		base := s.flowBase(fx, row)
		var rowS, rowR uint64
		cols0, prev := s.cols<<s.fold, ^uint64(0)
		for j := uint64(0); j < s.k; j++ {
			c := base + j
			if c >= cols0 {
				c -= cols0
			}
			if c >>= s.fold; c == prev {
				continue // folded: two of the flow's cells merged into one
			}
			prev = c
			i := uint64(row)*s.cols + c
			a, b := &s.cells[i], &r.cells[i]
			rowS += a.count
			rowR += b.count
			e.rowCells[row]++
			if a.count != 0 && a.count == b.count && a.digest == b.digest {
				e.cells = append(e.cells, ldsSelCell{row: row, n: a.count, diff: b.sum - a.sum, errS: a.errSum, errR: b.errSum})
			}
			switch {
			case b.count > a.count:
				extraCells++
				extraMin = max(extraMin, b.count-a.count)
			case b.count == a.count && a.count != 0 && a.digest != b.digest:
				extraCells++
				extraMin = max(extraMin, 1)
			}
		}
		e.rowR[row] = rowR
		// Count-min over the most densely sampled rows only: inverting a
		// sparse row's count adds sampling noise that the minimum would
		// pick up as an underestimate.
		if rates[row] == e.top {
			sentMin = math.Min(sentMin, float64(rowS)/rates[row]/w)
			loss := 0.0
			if rowS > rowR {
				loss = float64(rowS-rowR) / rates[row] / w
			}
			lossMin = math.Min(lossMin, loss)
		}
	}
	if known == 0 || math.IsInf(sentMin, 1) {
		// No densely sampled row of the flow was shipped (a sparse copy
		// carries the largest flows' cells only): nothing to count.
		e.cells = e.cells[:0]
		est.Reason, est.Code = ReasonLDSNotShipped, report.Budget
		return est, 0, 0, 0
	}
	est.Sent = uint64(math.Round(sentMin))
	est.Lost = uint64(math.Round(math.Min(lossMin, sentMin)))
	if est.Lost > est.Sent {
		est.Lost = est.Sent
	}
	est.Received = est.Sent - est.Lost
	est.UsableBuckets = len(e.cells)

	// A top-rate row whose cells hold nothing at the sender proves the flow
	// sent nothing: the usable cells belong to other flows.
	if len(e.cells) == 0 || est.Sent == 0 {
		e.cells = e.cells[:0]
		est.UsableBuckets = 0
		if est.Sent == 0 {
			est.Reason, est.Code = "no packet of the flow in the sketch", report.NoPackets
		} else {
			est.Reason, est.Code = "every cell of the flow lost or reordered packets", report.LossyCells
		}
		return est, 0, 0, 0
	}
	var sum, n, errS, errR float64
	e.rowN, e.rowK = [maxLDSRows]uint64{}, [maxLDSRows]uint64{}
	take := func(c ldsSelCell) {
		sum += float64(int64(c.diff))
		n += float64(c.n)
		errS += float64(c.errS)
		errR += float64(c.errR)
		e.rowN[c.row] += c.n
		e.rowK[c.row]++
		selected++
	}
	if selected == 0 {
		pTop := 0.0
		for _, c := range e.cells {
			pTop = math.Max(pTop, rates[c.row])
		}
		nMin := uint64(math.MaxUint64)
		for _, c := range e.cells {
			if rates[c.row] == pTop && c.n < nMin {
				nMin = c.n
			}
		}
		limit := (1 + e.alpha) * float64(nMin) / pTop
		for _, c := range e.cells {
			if float64(c.n)/rates[c.row] <= limit {
				take(c)
			}
		}
	}
	var best uint64
	for _, v := range e.rowN {
		best = max(best, v)
	}
	est.MeanNs = sum / n
	est.Samples = uint64(math.Round(float64(best) / w))
	est.Extra, est.ExtraBuckets = uint64(math.Ceil(float64(extraMin)/w)), extraCells
	// The stamps: MeanNs = Σ diff / n over the averaged cells, and each
	// packet's stamps are off by at most what Add was told, so Σ diff by
	// at most the cells' errSums, both ends'.
	txErr, rxErr = errS/n, errR/n
	ci, why := e.meanBound(w, ownLo, rates)
	est.MeanCINs, est.Conf = ci+txErr+rxErr, e.bound.conf()
	switch {
	case why != "":
		est.Reason, est.Code = why, report.FlowShared
	case extraCells > 0:
		// Weighted counts: the extras of one packet of weight w show as w.
		est.Reason, est.Code = ExtraReason(est.Extra, extraCells), report.ExtrasUnchecked
	case e.extraCells > 0:
		// None in the flow's own cells: its delay passed every check.
		est.Reason, est.Code = fmt.Sprintf("receiver saw ≥%d packets (in %d cells of the sketch) the sender did not record in this class: duplicated, injected or remarked inside the segment, or reordered across the interval boundary; they may hide this flow's losses, so its loss cannot be counted", e.extraMin, e.extraCells), report.Extras
	default:
		est.Valid = true
	}
	return est, selected, txErr, rxErr
}

// EstimateLDSFlows estimates every flow that the sender's or the
// receiver's flow table holds, in flow-hash order. A flow held at only one
// side is still estimated (a flow whose packets were all lost is held only
// at the sender). It fails only when the configs differ.
func EstimateLDSFlows(sender, receiver *LDS) ([]FlowEstimate, error) {
	return estimateLDSFlows(sender, receiver, nil)
}

// estimateLDSFlows is EstimateLDSFlows; adj, when set, gives per flow the
// packets taken out of the receiver's sketch after its flow table counted
// them (a repair's extras), which no longer count as the flow's there.
func estimateLDSFlows(sender, receiver *LDS, adj func(flowHash uint64) uint64) ([]FlowEstimate, error) {
	e, err := newLDSEstimator(sender, receiver)
	if err != nil {
		return nil, err
	}
	var se, re []FlowEntry
	if sender.flows != nil {
		se = sender.flows.Entries(nil)
	}
	if receiver.flows != nil {
		re = receiver.flows.Entries(nil)
	}
	// A flow table counts exactly when it admits every flow at its first
	// packet and refused none; then a flow it does not hold had no packet —
	// unless the sender's table was shipped without its small flows.
	complete := func(t *FlowTable) bool { return t != nil && t.holdThr == 1<<32 && t.refused == 0 }
	sendExact, recvExact := complete(sender.flows), complete(receiver.flows)
	sendAll := sender.cfg.ShipMinPackets <= 1
	out := make([]FlowEstimate, 0, max(len(se), len(re)))
	i, j := 0, 0
	for i < len(se) || j < len(re) {
		var f FlowEstimate
		switch {
		case j >= len(re) || (i < len(se) && se[i].FlowHash < re[j].FlowHash):
			f = FlowEstimate{FlowHash: se[i].FlowHash, Key: se[i].Key, Weight: se[i].Weight, HeldSent: se[i].Packets}
			i++
		case i >= len(se) || re[j].FlowHash < se[i].FlowHash:
			f = FlowEstimate{FlowHash: re[j].FlowHash, Key: re[j].Key, Weight: re[j].Weight, HeldReceived: re[j].Packets}
			j++
		default: // held at both sides; the sender's name and weight win
			f = FlowEstimate{FlowHash: se[i].FlowHash, Key: se[i].Key, Weight: se[i].Weight,
				HeldSent: se[i].Packets, HeldReceived: re[j].Packets}
			i++
			j++
		}
		f.Named = true
		own := f.HeldReceived
		if adj != nil {
			own -= min(own, adj(f.FlowHash))
		}
		f.Estimate, f.SelectedCells, f.TxStampErrNs, f.RxStampErrNs = e.flow(f.FlowHash, f.Weight, own)
		f.StampErrNs = f.TxStampErrNs + f.RxStampErrNs
		if (f.HeldSent > 0 || sendAll) && sendExact && recvExact {
			f.CountsExact = true
			f.Sent, f.Received, f.Lost = f.HeldSent, f.HeldReceived, 0
			if f.Sent > f.Received {
				f.Lost = f.Sent - f.Received
			}
		}
		out = append(out, f)
	}
	return out, nil
}

// TopFlows returns up to n flows ranked by the given order, leaving flows
// untouched. Ties keep flow-hash order.
func TopFlows(flows []FlowEstimate, n int, by LDSOrder) []FlowEstimate {
	out := make([]FlowEstimate, 0, len(flows))
	for _, f := range flows {
		switch by {
		case ByDelay:
			if !f.Valid {
				continue
			}
		case ByLoss:
			if f.Lost == 0 {
				continue
			}
		}
		out = append(out, f)
	}
	key := func(f *FlowEstimate) float64 {
		switch by {
		case ByDelay:
			return f.MeanNs
		case ByLoss:
			return float64(f.Lost)
		}
		return float64(f.Sent)
	}
	// Flows a sparse copy did not carry come after the measured ones: the
	// sender shipped the largest, and among equal sizes a line with a
	// measurement says more than one without.
	unshipped := func(f *FlowEstimate) bool { return !f.Valid && f.Code == report.Budget }
	sort.SliceStable(out, func(a, b int) bool {
		if ua, ub := unshipped(&out[a]), unshipped(&out[b]); ua != ub {
			return ub
		}
		return key(&out[a]) > key(&out[b])
	})
	if n >= 0 && len(out) > n {
		out = out[:n]
	}
	return out
}

// LDSDimensioning states what an LDS must achieve (Sec. 3).
type LDSDimensioning struct {
	// ExpectedFlows is n, the flows expected in one interval.
	ExpectedFlows int
	// Epsilon is the target probability that a large flow suffers large
	// collisions in every one of its R·k cells. 0 means 0.015, the paper's
	// example (q = 0.985 with R = 4).
	Epsilon float64
	// LargeFlowFraction is P, the fraction of flows that are "large" (more
	// than x packets) under the traffic's fitted Pareto distribution. 0
	// means 0.04375, the paper's trace (z = nP/C = 0.0875 at n/C = 2).
	LargeFlowFraction float64
	// CellsPerFlow is k; 0 means 1 (no loss expected, Sec. 5.1).
	CellsPerFlow int
	// Rows overrides R; 0 derives it from Epsilon and k (at least 4 when
	// MaxLossesPerFlow is set, so the rows can sample at different rates).
	Rows int
	// MaxLossesPerFlow L, when > 0, makes the rows sample at geometrically
	// spaced rates from k/L (the LDA's optimal rate for L/k losses per cell,
	// Sec. 2.3.3) up to 1, so one row suits any loss rate up to L per flow
	// (Sec. 4.2, 5.2). 0 means every row samples every packet.
	MaxLossesPerFlow int
	// MaxFlows and HoldRate are copied into the config (flow naming).
	MaxFlows int
	HoldRate float64
}

// DimensionLDS derives an LDSConfig from the Sec. 3 analysis. With R rows
// (k = 1) a large flow survives — has a row where it suffers only small
// collisions — with probability q = 1 − (n·P·R/C)^R, C the total number of
// cells (Sec. 3.1); hence R = round(max(1, −ln ε / k)) and
// C ≥ n·R·P / ε^(1/R). With the defaults this gives R = 4 and n/C ≈ 2 flows
// per cell, the paper's configuration (17 500 × 4 cells for 146 000 flows).
//
// For k > 1 the cells are multiplied by k, as the paper's own evaluation
// does (Sec. 5.2: "increase the size of each row of the sketch by a factor
// of k"), rather than taken from the Sec. 3.2 bound C ≥ n·k·R·P/ε^(1/(Rk)):
// that bound only keeps some cell survivable, while each of a flow's k cells
// holds a k-th of its packets, so with k-fold fewer cells per packet the
// interference per cell grows k-fold. Measured on Pareto traffic (lds_test):
// k = 2 with the Sec. 3.2 size doubles the median error of 500–999-packet
// flows (3.4 % vs 1.9 %); with k-fold cells it matches k = 1 (2.0 %).
func DimensionLDS(d LDSDimensioning) (LDSConfig, error) {
	if d.ExpectedFlows < 1 {
		return LDSConfig{}, fmt.Errorf("%w: DimensionLDS needs ExpectedFlows ≥ 1", ErrBadConfig)
	}
	eps, p, k := d.Epsilon, d.LargeFlowFraction, d.CellsPerFlow
	if eps == 0 {
		eps = 0.015
	}
	if p == 0 {
		p = 0.04375
	}
	if k == 0 {
		k = 1
	}
	if !(eps > 0 && eps < 1) || !(p > 0 && p <= 1) || k < 1 || d.Rows < 0 || d.Rows > maxLDSRows || d.MaxLossesPerFlow < 0 {
		return LDSConfig{}, fmt.Errorf("%w: DimensionLDS: Epsilon and LargeFlowFraction must be in (0,1), CellsPerFlow ≥ 1, Rows ≤ 16", ErrBadConfig)
	}
	rows := d.Rows
	if rows == 0 {
		rows = int(math.Round(math.Max(1, -math.Log(eps)/float64(k))))
		if d.MaxLossesPerFlow > 0 {
			// Multi-bank LDS needs rows to spread its rates over: the
			// paper's Sec. 5.2 uses 4 (one worst-case row, three denser),
			// while −ln ε / k alone would give one row for k ≥ 4.
			rows = max(rows, 4)
		}
		rows = min(rows, maxLDSRows)
	}
	total := float64(d.ExpectedFlows) * float64(k) * float64(rows) * p / math.Pow(eps, 1/float64(rows))
	cols := int(math.Ceil(total / float64(rows)))
	cols = max(cols, k)
	if int64(cols)*int64(rows) > maxLDSCells {
		return LDSConfig{}, fmt.Errorf("%w: DimensionLDS: the sketch would exceed 2^26 cells", ErrBadConfig)
	}
	cfg := LDSConfig{Rows: rows, Cols: cols, CellsPerFlow: k, MaxFlows: d.MaxFlows, HoldRate: d.HoldRate}
	if d.MaxLossesPerFlow > 0 && rows > 1 {
		pMin := math.Min(1, float64(k)/float64(d.MaxLossesPerFlow))
		cfg.RowRates = make([]float64, rows)
		for r := range cfg.RowRates {
			// Row 0 suits the worst case, the last row samples everything.
			cfg.RowRates[r] = math.Pow(pMin, float64(rows-1-r)/float64(rows-1))
		}
	}
	return cfg, nil
}

func (b LDSBound) conf() float64 {
	if b.Conf > 0 && b.Conf < 1 {
		return b.Conf
	}
	return 0.98
}

// meanBound bounds |MeanNs − the flow's true mean| for the cells the
// α-filter just averaged (rowN, rowK per row), or says why it cannot.
// The paper states no bound: colliding flows bias the estimate towards
// their delays (Sec. 3 only sizes the sketch so that a large flow is
// unlikely to suffer large collisions in every row). Here, per row r with
// averaged cells of n_r weighted packets:
//
//   - Others' packets. In a row that takes every packet, the flow's k cells
//     hold all of its packets in the receiver's sketch, at least w·ownLo,
//     so at most X_r = rowR_r − w·ownLo of the row's packets are other
//     flows', and at most c_r = min(n_r, X_r) of the averaged ones. In a
//     sampled row nothing bounds the flow's share: c_r = n_r.
//   - Own sample. Where the averaged cells are all of the flow's cells of a
//     row that takes every packet, they hold all of its packets there: the
//     own part is its exact mean. Otherwise they hold a part chosen by
//     packet hash, independent of the delays: by Hoeffding's inequality
//     (which holds for sampling without replacement) its mean is within
//     t_r = Δ·sqrt(ln(2·R_a/δ)/(2·m_r)) of the flow's with probability
//     1 − δ/R_a, m_r = (n_r − c_r)/w its least own packets, R_a the rows
//     averaged, δ = 1 − Conf (union bound over the rows).
//
// With A own and C others' weighted packets (A + C = Σn_r), MeanNs − μ =
// [A·(μ_own − μ) + C·(μ_others − μ)]/(A + C); |μ_own − μ| ≤ T = max t_r and
// |μ_others − μ| ≤ Δ = MaxDelayNs − MinDelayNs (every delay lies in the
// range, so every mean does), so the error is at most
// T + (ΣC_r/Σn_r)·(Δ − T), and never more than Δ. Without a range only
// T = 0 and ΣC_r = 0 bound anything (the bound is then 0: the cells hold
// exactly the flow's packets). The stamp error (FlowEstimate.StampErrNs)
// is added on top by flow: this bound is about which packets the cells
// hold, that one about how well their stamps were read.
func (e *ldsEstimator) meanBound(w float64, ownLo uint64, rates []float64) (float64, string) {
	var nAll, cAll float64
	rowsAvg := 0
	for row := 0; row < e.s.rows && row < maxLDSRows; row++ {
		if e.rowK[row] > 0 {
			rowsAvg++
		}
	}
	delta := 1 - e.bound.conf()
	known := e.bound.set
	spread := float64(e.bound.MaxDelayNs) - float64(e.bound.MinDelayNs)
	tMax := 0.0
	sampled := false
	for row := 0; row < e.s.rows && row < maxLDSRows; row++ {
		n := e.rowN[row]
		if e.rowK[row] == 0 || n == 0 {
			continue
		}
		takesAll := rates[row] >= 1
		c := n
		if takesAll {
			// Every packet of the flow adds its weight w (its class's), as
			// the count estimates above assume too.
			own := uint64(math.Min(w*float64(ownLo), math.MaxUint64/2))
			x := uint64(0)
			if e.rowR[row] > own {
				x = e.rowR[row] - own
			}
			c = min(n, x)
		}
		nAll += float64(n)
		cAll += float64(c)
		if takesAll && e.rowK[row] == e.rowCells[row] {
			continue // all of the flow's packets: no sampling
		}
		sampled = true
		m := float64(n-c) / w
		if m < 1 || !known {
			tMax = math.Inf(1)
			continue
		}
		tMax = math.Max(tMax, spread*math.Sqrt(math.Log(2*float64(rowsAvg)/delta)/(2*m)))
	}
	if !known {
		if cAll == 0 && !sampled {
			return 0, ""
		}
		return 0, fmt.Sprintf("the flow's cells may hold other flows' packets (up to %.0f of the %.0f averaged) or only a sample of its own, and no delay range bounds what that moves its mean", cAll, nAll)
	}
	tMax = math.Min(tMax, spread)
	return tMax + cAll/nAll*(spread-tMax), ""
}
