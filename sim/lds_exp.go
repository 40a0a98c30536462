package sim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"gonum.org/v1/plot/plotter"

	"github.com/ldafwd/ldafwd/model"
	"github.com/ldafwd/ldafwd/synopsis"
)

// lds-fig10 and lds-fig12 (LDS paper Sec. 5.1, Fig. 10; Sec. 5.3,
// Fig. 12). Synthetic traffic stands in for the paper's data-centre trace:
// flow sizes are Pareto with shape 1 and scale 2.1875 packets (so
// P(size > 50) = 0.04375, the paper's fitted large-flow fraction that
// DimensionLDS assumes), capped at 200 000 packets; every flow has its own
// mean delay μ_f, log-normal around 200 µs (σ = 0.5), so colliding flows
// pull each other's estimates, and packet delays are 0.5·μ_f + Exp(0.5·μ_f)
// (model.Shift of model.Exponential). No loss: the paper's trace has
// none worth mentioning, and sets k = 1, p = 1 (Sec. 5.1).

const (
	ldsParetoShape = 1.0
	ldsParetoScale = 2.1875
	ldsMaxFlowSize = 200_000
	ldsMeanDelayNs = 200e3
)

// ldsFlow is one generated flow and its exact truth.
type ldsFlow struct {
	hash    uint64
	key     synopsis.FlowKeyBytes
	class   int // 0 bronze, 1 silver, 2 gold (lds-fig12)
	packets uint64
	sumNs   uint64 // exact Σ delay over the flow's packets
}

func (f *ldsFlow) meanNs() float64 { return float64(f.sumNs) / float64(f.packets) }

// ldsPair is one sender/receiver sketch pair fed the same traffic, with a
// weight per class (nil: 1 for every flow).
type ldsPair struct {
	s, r    *synopsis.LDS
	weights *[3]uint32
}

// ldsGenerate draws one interval of nFlows flows into every pair and
// returns the truth. Class shares follow LDS Sec. 5.3: gold 1 %, silver
// 9 %, bronze 90 % of the flows, chosen at random per flow so classes
// are not an artefact of flow size. Each receiver's estimator is given
// the range of the delays drawn (synopsis.LDSBound), as analyze gives it
// the range its captures show.
func ldsGenerate(nFlows int, seed uint64, pairs []ldsPair) []ldsFlow {
	rng := rand.New(rand.NewPCG(seed, 0x6c6473)) // "lds"
	flows := make([]ldsFlow, nFlows)
	var buf [BatchSize]float64
	dMin, dMax := uint64(math.MaxUint64), uint64(0)
	defer func() {
		for _, pr := range pairs {
			pr.r.SetBound(synopsis.LDSBound{MinDelayNs: int64(dMin), MaxDelayNs: int64(dMax)})
		}
	}()
	for fi := range flows {
		f := &flows[fi]
		f.hash = rng.Uint64()
		var src, dst [16]byte
		src[12], src[13], src[14], src[15] = 10, byte(fi>>16), byte(fi>>8), byte(fi)
		dst[12], dst[13], dst[14], dst[15] = 192, 168, 0, 1
		f.key = synopsis.PackFlowKey(src, dst, uint16(1024+fi%50000), 443, 6, false)
		switch u := rng.Float64(); {
		case u < 0.01:
			f.class = 2
		case u < 0.10:
			f.class = 1
		}
		size := int(ldsParetoScale / math.Pow(1-rng.Float64(), 1/ldsParetoShape))
		size = max(1, min(size, ldsMaxFlowSize))
		mu := ldsMeanDelayNs * math.Exp(0.5*rng.NormFloat64())
		d := model.Shift{D: model.Exponential{MeanNs: 0.5 * mu}, OffsetNs: 0.5 * mu}
		for done := 0; done < size; {
			k := min(BatchSize, size-done)
			d.Fill(rng, buf[:k])
			for _, x := range buf[:k] {
				h := rng.Uint64()
				send := epochNs + uint64(rng.Float64()*1e9)
				dl := model.Nanos(x)
				dMin, dMax = min(dMin, dl), max(dMax, dl)
				for p := range pairs {
					pr := &pairs[p]
					w := uint32(1)
					if pr.weights != nil {
						w = pr.weights[f.class]
					}
					pr.s.AddFlow(f.hash, h, send, 0, w, &f.key)
					pr.r.AddFlow(f.hash, h, send+dl, 0, w, &f.key)
				}
				f.sumNs += dl
			}
			f.packets += uint64(k)
			done += k
		}
	}
	return flows
}

// ldsFlowErr is one flow's outcome from one sketch pair.
type ldsFlowErr struct {
	packets uint64
	class   int
	valid   bool
	err     float64 // |estimate − truth| / truth
}

// ldsScore estimates every flow the pair's flow tables hold
// (EstimateLDSFlows, the path analyze takes) and scores it against the
// truth. A flow of the truth that the tables do not hold counts invalid.
func ldsScore(p ldsPair, flows []ldsFlow) ([]ldsFlowErr, error) {
	ests, err := synopsis.EstimateLDSFlows(p.s, p.r)
	if err != nil {
		return nil, err
	}
	byHash := make(map[uint64]*synopsis.FlowEstimate, len(ests))
	for i := range ests {
		byHash[ests[i].FlowHash] = &ests[i]
	}
	out := make([]ldsFlowErr, len(flows))
	for i := range flows {
		f := &flows[i]
		out[i] = ldsFlowErr{packets: f.packets, class: f.class}
		e, ok := byHash[f.hash]
		if !ok || !e.Valid {
			continue
		}
		out[i].valid = true
		out[i].err = math.Abs(e.MeanNs-f.meanNs()) / f.meanNs()
	}
	return out, nil
}

// ldsBin is a flow-size bin in packets, [lo, hi).
type ldsBin struct {
	lo, hi uint64
	name   string
	paper  float64 // LDS Fig. 10 median at 70 000 counters, NaN if not given
}

var ldsFig10Bins = []ldsBin{
	{1, 100, "1-99", math.NaN()},
	{100, 500, "100-499", math.NaN()},
	{500, 1000, "500-999", 0.012},
	{1000, 5000, "1000-4999", 0.004},
	{5000, math.MaxUint64, ">=5000", 0.0006},
	{500, math.MaxUint64, ">=500", math.NaN()},
}

// ldsErrStats returns sorted valid errors and the invalid count of the
// outcomes that pass keep.
func ldsErrStats(outs []ldsFlowErr, keep func(*ldsFlowErr) bool) (errs []float64, flows, invalid int) {
	for i := range outs {
		o := &outs[i]
		if !keep(o) {
			continue
		}
		flows++
		if !o.valid {
			invalid++
			continue
		}
		errs = append(errs, o.err)
	}
	slices.Sort(errs)
	return errs, flows, invalid
}

// ldsDefaults fills the flows per interval and the intervals pooled.
func ldsDefaults(o SynopsisOptions, runs int) (int, int) {
	n, r := o.Packets, o.Runs
	if n == 0 {
		n = 40_000
		if o.Quick {
			n = 10_000
		}
	}
	if r == 0 {
		r = runs
		if o.Quick {
			r = 2
		}
	}
	return n, r
}

// ldsRunPooled generates runs intervals with mk's sketch pairs (built per
// interval, so workers share nothing) and returns, per pair, the pooled
// per-flow outcomes.
func ldsRunPooled(n, runs int, o SynopsisOptions, mk func() ([]ldsPair, error)) ([][]ldsFlowErr, error) {
	per := make([][][]ldsFlowErr, runs) // [run][pair][flow]
	errs := make([]error, runs)
	synParallel(runs, o.Workers, func(_, run int) {
		pairs, err := mk()
		if err != nil {
			errs[run] = err
			return
		}
		flows := ldsGenerate(n, mix(o.Seed, uint64(run)+0x1d5), pairs)
		per[run] = make([][]ldsFlowErr, len(pairs))
		for p := range pairs {
			if per[run][p], errs[run] = ldsScore(pairs[p], flows); errs[run] != nil {
				return
			}
		}
	})
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	pooled := make([][]ldsFlowErr, len(per[0]))
	for _, r := range per {
		for p := range r {
			pooled[p] = append(pooled[p], r[p]...)
		}
	}
	return pooled, nil
}

// ldsNewPair builds a sender/receiver pair with cfg.
func ldsNewPair(cfg synopsis.LDSConfig, w *[3]uint32) (ldsPair, error) {
	s, err := synopsis.NewLDS(cfg)
	if err != nil {
		return ldsPair{}, err
	}
	r, err := synopsis.NewLDS(cfg)
	if err != nil {
		return ldsPair{}, err
	}
	return ldsPair{s: s, r: r, weights: w}, nil
}

// ldsFig10Configs are the paper's three sizes: the DimensionLDS default
// (4 rows, ≈ 2 flows per cell; the paper's 17 500 × 4 for 146 000 flows)
// and 10× fewer and 10× more cells (its 7 000 and 700 000 counters).
func ldsFig10Configs(n int) ([]string, []synopsis.LDSConfig, error) {
	def, err := synopsis.DimensionLDS(synopsis.LDSDimensioning{ExpectedFlows: n, MaxFlows: n})
	if err != nil {
		return nil, nil, err
	}
	small, large := def, def
	small.Cols = max(2, def.Cols/10)
	large.Cols = def.Cols * 10
	return []string{"default/10", "default", "default*10"}, []synopsis.LDSConfig{small, def, large}, nil
}

func ldsFig10(o SynopsisOptions) (*synTable, error) {
	n, runs := ldsDefaults(o, 4)
	names, cfgs, err := ldsFig10Configs(n)
	if err != nil {
		return nil, fmt.Errorf("sim: lds-fig10: %w", err)
	}
	pooled, err := ldsRunPooled(n, runs, o, func() ([]ldsPair, error) {
		var ps []ldsPair
		for _, c := range cfgs {
			p, err := ldsNewPair(c, nil)
			if err != nil {
				return nil, err
			}
			ps = append(ps, p)
		}
		return ps, nil
	})
	if err != nil {
		return nil, fmt.Errorf("sim: lds-fig10: %w", err)
	}
	t := &synTable{experiment: "lds-fig10",
		notes: []string{
			fmt.Sprintf("lds-fig10: LDS per-flow relative error of the mean delay by flow size (LDS paper Fig. 10 top); %d flows per interval, %d intervals pooled, seed %d", n, runs, o.Seed),
			fmt.Sprintf("flow sizes Pareto(shape %g, scale %g) ≤ %d pkts; flow means log-normal around %g µs; packet delay 0.5μ + Exp(0.5μ); no loss; k = 1, α automatic (0)", ldsParetoShape, ldsParetoScale, ldsMaxFlowSize, ldsMeanDelayNs/1e3),
			"paper: median at 70 000 counters (n/C ≈ 2, the default row here) on its data-centre trace",
		},
		cols: []string{"sketch", "rows", "cols", "flows_per_cell", "bin", "flows", "invalid", "median", "p95", "paper_median"},
	}
	medians := make([][]plotter.XY, len(cfgs))
	for p, c := range cfgs {
		for _, b := range ldsFig10Bins {
			errs, flows, invalid := ldsErrStats(pooled[p], func(e *ldsFlowErr) bool { return e.packets >= b.lo && e.packets < b.hi })
			paper := math.NaN()
			if names[p] == "default" {
				paper = b.paper
			}
			med := synQuantile(errs, 0.5)
			t.add(names[p], c.Rows, c.Cols, float64(n)/float64(c.Rows*c.Cols), b.name, flows, invalid, med, synQuantile(errs, 0.95), paper)
			if b.hi != math.MaxUint64 || b.lo == 5000 {
				medians[p] = append(medians[p], plotter.XY{X: float64(b.lo), Y: med})
			}
		}
	}
	t.plot = func(dir string) error {
		var cs []synCurve
		for p, nm := range names {
			cs = append(cs, synCurve{name: fmt.Sprintf("%s (%d×%d cells)", nm, cfgs[p].Rows, cfgs[p].Cols), xy: medians[p]})
		}
		return synPlot(synPlotPath(dir, "lds-fig10_median"), "lds-fig10: median per-flow relative error by flow size (0 drawn at 1e-6)",
			"flow size bin, lower edge (packets)", "median relative error", true, true, 1e-6, "bl", cs)
	}
	return t, nil
}

// ldsWeightSets are LDS Fig. 12's weights (bronze, silver, gold); the first
// is the unweighted reference.
var ldsWeightSets = [][3]uint32{{1, 1, 1}, {1, 25, 100}, {1, 10, 100}, {1, 50, 2500}}

var ldsClassNames = [3]string{"bronze", "silver", "gold"}

// ldsFig12Configs are the paper's two sketch sizes relative to its 146 000
// flows: 40 000 and 100 000 counters in 4 rows (3.65 and 1.46 flows per
// cell).
func ldsFig12Configs(n int) []synopsis.LDSConfig {
	var cs []synopsis.LDSConfig
	for _, counters := range []float64{40_000, 100_000} {
		cols := int(math.Round(float64(n) * counters / 146_000 / 4))
		cs = append(cs, synopsis.LDSConfig{Rows: 4, Cols: max(2, cols), MaxFlows: n})
	}
	return cs
}

func ldsFig12(o SynopsisOptions) (*synTable, error) {
	n, runs := ldsDefaults(o, 8)
	cfgs := ldsFig12Configs(n)
	pooled, err := ldsRunPooled(n, runs, o, func() ([]ldsPair, error) {
		var ps []ldsPair
		for _, c := range cfgs {
			for w := range ldsWeightSets {
				p, err := ldsNewPair(c, &ldsWeightSets[w])
				if err != nil {
					return nil, err
				}
				ps = append(ps, p)
			}
		}
		return ps, nil
	})
	if err != nil {
		return nil, fmt.Errorf("sim: lds-fig12: %w", err)
	}
	t := &synTable{experiment: "lds-fig12",
		notes: []string{
			fmt.Sprintf("lds-fig12: flow weighting (LDS paper Fig. 12); %d flows per interval (gold 1 %%, silver 9 %%, bronze 90 %%, at random), %d intervals pooled, seed %d", n, runs, o.Seed),
			"same traffic as lds-fig10, fed to every sketch; weights bronze/silver/gold; gain = unweighted median / weighted median (flows ≥ 100 pkts)",
		},
		cols: []string{"rows", "cols", "flows_per_cell", "weights", "class", "flows", "invalid", "median_all", "flows_100", "median_100", "p95_100", "gain_100"},
	}
	var cdfs []synCurve
	for c, cfg := range cfgs {
		ref := [3]float64{}
		for w, ws := range ldsWeightSets {
			outs := pooled[c*len(ldsWeightSets)+w]
			for cl := 2; cl >= 0; cl-- {
				all, flows, invalid := ldsErrStats(outs, func(e *ldsFlowErr) bool { return e.class == cl })
				big, flows100, _ := ldsErrStats(outs, func(e *ldsFlowErr) bool { return e.class == cl && e.packets >= 100 })
				med := synQuantile(big, 0.5)
				gain := math.NaN()
				if w == 0 {
					ref[cl] = med
				} else {
					gain = ref[cl] / med
				}
				t.add(cfg.Rows, cfg.Cols, float64(n)/float64(cfg.Rows*cfg.Cols), fmt.Sprintf("%d/%d/%d", ws[0], ws[1], ws[2]),
					ldsClassNames[cl], flows, invalid, synQuantile(all, 0.5), flows100, med, synQuantile(big, 0.95), gain)
				if c == 0 && (w == 0 || w == 2) {
					cdfs = append(cdfs, synCurve{name: fmt.Sprintf("%s, weights %d/%d/%d", ldsClassNames[cl], ws[0], ws[1], ws[2]), xy: ldsCDF(big), lines: true})
				}
			}
		}
	}
	t.plot = func(dir string) error {
		return synPlot(synPlotPath(dir, "lds-fig12_cdf"),
			fmt.Sprintf("lds-fig12: CDF of per-flow relative error, flows ≥ 100 pkts, %d×%d cells", cfgs[0].Rows, cfgs[0].Cols),
			"relative error of the flow's mean delay", "CDF", true, false, 0, "tl", cdfs)
	}
	return t, nil
}

// ldsCDF turns sorted errors into CDF points (zero errors are left out:
// the x axis is logarithmic).
func ldsCDF(sorted []float64) plotter.XYs {
	xy := make(plotter.XYs, 0, len(sorted))
	for i, e := range sorted {
		if e > 0 {
			xy = append(xy, plotter.XY{X: e, Y: float64(i+1) / float64(len(sorted))})
		}
	}
	return xy
}
