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

// rda-fig7: RDA vs LDA as the set difference grows (RDA paper Sec. VII-2,
// Fig. 7). One interval of N packets sent 5 µs apart; its set difference
// of d packets is half losses (dropped anywhere in the interval), a
// quarter packets of this interval that arrive after its end (reordered
// across the closing edge: lost *to this interval*, sender only) and a
// quarter packets of the previous interval that arrive after this one
// opened (reordered across the opening edge: receiver only, "extra").
// The paper sets "the loss rate and the reordering rate identical"; this
// split does the same with reordering at both edges. Truth is the exact
// mean and std-dev over the packets seen at both ends of this interval.
//
// Departure from the paper: its RDA has k = 2 and 5 000 buckets and its
// trace is a data-centre capture; ours is the default RDA (3 × 2048) and
// the paper's shape (2 × 2500) on a synthetic trace, plus an RDA sized for
// each d by RDAConfigFor (the paper's "optimized number of buckets ... when
// the size of the set difference is known"), next to the default LDA (1024
// buckets) without and with the FineComb digest, and an LDA with digest in
// about the default RDA's memory.

// rdaFig7Delay is the per-packet delay: 100 µs propagation + Exp(30 µs)
// queueing, as in synopsis's TestRDASweepSetDifference (docs/rda.md), so
// both tables are comparable.
var rdaFig7Delay model.Delay = model.Shift{D: model.Exponential{MeanNs: 30e3}, OffsetNs: 100e3}

// rdaGapNs is the send spacing, ns: 200 000 packets span one second.
const rdaGapNs = 5000

// rdaMethod is one synopsis compared in rda-fig7.
// rdaCellBytes is an RDA cell's size in memory: ID, TS, Δ and the check
// field, 8 bytes each (synopsis.rdaCell).
const rdaCellBytes = 32

type rdaMethod struct {
	name  string
	rda   synopsis.RDAConfig // when lda is nil
	lda   *synopsis.LDAConfig
	bytes int // memory per side, cells only (the RDA's timestamp cache is extra)
	// sized: an RDA dimensioned for each swept d by synopsis.RDAConfigFor
	// (3 banks, SizeRDA at 1 % failure), as the paper sizes its RDA by
	// Theorem 2 "when the size of the set difference is known".
	sized bool
}

// rdaCacheFor is the timestamp cache budget for intervals of n packets:
// what SizeRDAConfig gives analyze, a cache that holds every packet (with
// room for the extras) so repair is exact, and no larger — the default
// 16 MiB per RDA would cost 100 MiB per worker here.
func rdaCacheFor(n int) int {
	c, err := synopsis.SizeRDAConfig(uint64(n)+uint64(n/4), 0)
	if err != nil {
		return synopsis.DefaultRDACacheBudget
	}
	return c.CacheBudget
}

// rdaSizedFor is the configuration of a sized method at set difference d
// for intervals of n packets.
func rdaSizedFor(d, n int) (synopsis.RDAConfig, error) {
	c, err := synopsis.RDAConfigFor(max(d, 1))
	c.CacheBudget = rdaCacheFor(n)
	return c, err
}

// rdaFig7Methods are the compared synopses for intervals of n packets.
func rdaFig7Methods(n int) []rdaMethod {
	ldaCfg := synopsis.DefaultLDAConfig()
	ldaCfg.Digest = false // the paper's LDA, for comparison
	ldaDig := synopsis.DefaultLDAConfig()
	ldaDig.Digest = true
	paper := synopsis.DefaultRDAConfig()
	paper.Banks, paper.Cells = 2, 2500
	def := synopsis.DefaultRDAConfig()
	def.CacheBudget = rdaCacheFor(n)
	paper.CacheBudget = def.CacheBudget
	// An LDA with about the RDA's memory: 8 banks of 1024 rows.
	ldaBig := synopsis.DefaultLDAConfig()
	ldaBig.Digest = true
	for i := range ldaBig.Banks {
		ldaBig.Banks[i].Rows = 1024
	}
	return []rdaMethod{
		{name: "rda 3x2048", rda: def, bytes: rdaCellBytes * def.Banks * def.Cells},
		{name: "rda 2x2500", rda: paper, bytes: rdaCellBytes * paper.Banks * paper.Cells},
		{name: "rda sized for d", sized: true},
		{name: "lda", lda: &ldaCfg, bytes: 16 * ldaCfg.TotalRows()},
		{name: "lda+digest", lda: &ldaDig, bytes: 24 * ldaDig.TotalRows()},
		{name: "lda+digest 8x1024", lda: &ldaBig, bytes: 24 * ldaBig.TotalRows()},
	}
}

// rdaInterval is one generated interval and its truth.
type rdaInterval struct {
	sentHash, sendNs []uint64 // every packet the sender saw
	recvHash, recvNs []uint64 // every packet the receiver saw (matched + extra)
	lost, extra      []uint64 // true set difference: sender only, receiver only
	meanNs, sdNs     float64  // truth over matched packets
}

// rdaGenerate draws interval (n packets, set difference d) deterministically
// from seed.
func rdaGenerate(n, d int, seed uint64, iv *rdaInterval) {
	rng := rand.New(rand.NewPCG(seed, 0x72646137)) // "rda7"
	delays := make([]float64, n)
	rdaFig7Delay.Fill(rng, delays)
	nLoss := d / 2
	nLate := d / 4
	nEarly := d - nLoss - nLate
	status := make([]uint8, n) // 0 matched, 1 dropped, 2 late past the end
	for k := 0; k < nLoss; {
		if i := rng.IntN(n); status[i] == 0 {
			status[i] = 1
			k++
		}
	}
	// Late packets come from the interval's tail (the last 8·nLate or
	// 1000 packets): only those can still be in flight at its end.
	tail := min(n, max(8*nLate, 1000))
	for k := 0; k < nLate; {
		if i := n - tail + rng.IntN(tail); status[i] == 0 {
			status[i] = 2
			k++
		}
	}
	*iv = rdaInterval{sentHash: iv.sentHash[:0], sendNs: iv.sendNs[:0], recvHash: iv.recvHash[:0], recvNs: iv.recvNs[:0],
		lost: iv.lost[:0], extra: iv.extra[:0]}
	var sum uint64
	for i := range n {
		h, s := rng.Uint64(), epochNs+uint64(i)*rdaGapNs
		dl := model.Nanos(delays[i])
		iv.sentHash, iv.sendNs = append(iv.sentHash, h), append(iv.sendNs, s)
		if status[i] != 0 {
			iv.lost = append(iv.lost, h)
			continue
		}
		iv.recvHash, iv.recvNs = append(iv.recvHash, h), append(iv.recvNs, s+dl)
		sum += dl
	}
	matched := float64(n - nLoss - nLate)
	iv.meanNs = float64(sum) / matched
	var ss float64
	for i := range n {
		if status[i] == 0 {
			x := float64(model.Nanos(delays[i])) - iv.meanNs
			ss += x * x
		}
	}
	iv.sdNs = math.Sqrt(ss / matched)
	// Extra packets: sent before this interval opened, received after.
	for range nEarly {
		h := rng.Uint64()
		dl := model.Nanos(rdaFig7Delay.Sample(rng))
		recv := epochNs + uint64(rng.Float64()*float64(dl))
		iv.recvHash, iv.recvNs = append(iv.recvHash, h), append(iv.recvNs, recv)
		iv.extra = append(iv.extra, h)
	}
}

// rdaOutcome is one method on one interval.
type rdaOutcome struct {
	valid, exact, setsRight, lossRight bool
	falsePure                          bool    // RDA: a decoded identity the caches contradict (a false pure cell)
	usable                             float64 // usable cells / all cells
	meanErr, sdErr, boundRel           float64 // relative to the truth; NaN when invalid
	outside                            bool    // valid, yet the truth lies outside MeanNs ± MeanCINs (+1e-9 rounding)
	lostEst                            uint64
}

// rdaSides are one worker's sketches for every method, reused across jobs.
type rdaSides struct {
	rs, rr []*synopsis.RDA
	ls, lr []*synopsis.LDA
	iv     rdaInterval
}

func newRDASides(ms []rdaMethod) (*rdaSides, error) {
	s := &rdaSides{}
	for _, m := range ms {
		var err error
		var a, b *synopsis.RDA
		var x, y *synopsis.LDA
		switch {
		case m.sized: // built per interval by run, for its d
		case m.lda != nil:
			if x, err = synopsis.NewLDA(*m.lda); err == nil {
				y, err = synopsis.NewLDA(*m.lda)
			}
		default:
			if a, err = synopsis.NewRDA(m.rda); err == nil {
				b, err = synopsis.NewRDA(m.rda)
			}
		}
		if err != nil {
			return nil, fmt.Errorf("sim: rda-fig7 %s: %w", m.name, err)
		}
		s.rs, s.rr, s.ls, s.lr = append(s.rs, a), append(s.rr, b), append(s.ls, x), append(s.lr, y)
	}
	return s, nil
}

// size makes method j's RDAs the ones RDAConfigFor(d) gives, reusing them
// when the worker's previous interval had the same d.
func (s *rdaSides) size(j, d, n int) error {
	cfg, err := rdaSizedFor(d, n)
	if err != nil {
		return err
	}
	if s.rs[j] != nil && s.rs[j].Config() == cfg {
		return nil
	}
	if s.rs[j], err = synopsis.NewRDA(cfg); err != nil {
		return err
	}
	s.rr[j], err = synopsis.NewRDA(cfg)
	return err
}

// run feeds interval iv to method j's sketches and scores the estimate.
func (s *rdaSides) run(j int, iv *rdaInterval) (rdaOutcome, error) {
	var o rdaOutcome
	var est synopsis.Estimate
	if s.ls[j] != nil {
		a, b := s.ls[j], s.lr[j]
		a.Reset()
		b.Reset()
		for i, h := range iv.sentHash {
			a.Add(h, iv.sendNs[i])
		}
		for i, h := range iv.recvHash {
			b.Add(h, iv.recvNs[i])
		}
		var err error
		if est, err = synopsis.EstimateLDA(a, b, 0); err != nil {
			return o, err
		}
	} else {
		a, b := s.rs[j], s.rr[j]
		a.Reset()
		b.Reset()
		for i, h := range iv.sentHash {
			a.Add(h, iv.sendNs[i])
		}
		for i, h := range iv.recvHash {
			b.Add(h, iv.recvNs[i])
		}
		e, st, err := synopsis.EstimateRDA(a, b, 0)
		if err != nil {
			return o, err
		}
		est = e
		o.exact = st.Exact
		o.falsePure = st.Inconsistent > 0
		dec, err := synopsis.DecodeRDA(a, b)
		if err != nil {
			return o, err
		}
		o.setsRight = dec.Complete && rdaSameSet(dec.Lost, iv.lost) && rdaSameSet(dec.Extra, iv.extra)
	}
	o.valid = est.Valid
	o.lostEst = est.Lost
	o.lossRight = est.Lost == uint64(len(iv.lost))
	o.usable = float64(est.UsableBuckets) / float64(max(1, est.TotalBuckets))
	o.meanErr, o.sdErr, o.boundRel = math.NaN(), math.NaN(), math.NaN()
	if est.Valid {
		diff := math.Abs(est.MeanNs - iv.meanNs)
		o.meanErr = diff / iv.meanNs
		o.sdErr = math.Abs(est.StddevNs-iv.sdNs) / iv.sdNs
		o.boundRel = est.MeanCINs / iv.meanNs
		o.outside = diff > est.MeanCINs+1e-9*iv.meanNs
	}
	return o, nil
}

// rdaSameSet says whether got and want hold the same identities.
func rdaSameSet(got, want []uint64) bool {
	if len(got) != len(want) {
		return false
	}
	a, b := slices.Clone(got), slices.Clone(want)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// rdaFig7Diffs are the swept set differences: dense around the default
// RDA's capacity (≈ 4 300 packets, SizeRDA at 1 % failure).
func rdaFig7Diffs(quick bool) []int {
	if quick {
		return []int{0, 1000, 3000, 5000, 8000, 16000}
	}
	return []int{0, 500, 1000, 2000, 3000, 4000, 4500, 5000, 5500, 6000, 8000, 10000, 16000}
}

func rdaFig7(o SynopsisOptions) (*synTable, error) {
	n, runs := o.Packets, o.Runs
	if n == 0 {
		n = 200_000
		if o.Quick {
			n = 50_000
		}
	}
	if runs == 0 {
		runs = 20
		if o.Quick {
			runs = 3
		}
	}
	diffs := rdaFig7Diffs(o.Quick)
	for len(diffs) > 1 && diffs[len(diffs)-1] > n/4 {
		diffs = diffs[:len(diffs)-1] // keep the set difference a minority of the packets
	}
	ms := rdaFig7Methods(n)
	workers := max(1, min(o.Workers, runs*len(diffs)))
	sides := make([]*rdaSides, workers)
	for w := range sides {
		s, err := newRDASides(ms)
		if err != nil {
			return nil, err
		}
		sides[w] = s
	}
	outs := make([][]rdaOutcome, runs*len(diffs)) // [job][method]
	errs := make([]error, len(outs))
	synParallel(len(outs), workers, func(w, job int) {
		di, run := job/runs, job%runs
		s := sides[w]
		rdaGenerate(n, diffs[di], mix(o.Seed, uint64(run)*0x10001+uint64(diffs[di])), &s.iv)
		outs[job] = make([]rdaOutcome, len(ms))
		for j := range ms {
			if ms[j].sized {
				if errs[job] = s.size(j, diffs[di], n); errs[job] != nil {
					return
				}
			}
			if outs[job][j], errs[job] = s.run(j, &s.iv); errs[job] != nil {
				return
			}
		}
	})
	for _, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("sim: rda-fig7: %w", err)
		}
	}

	t := &synTable{experiment: "rda-fig7",
		notes: []string{
			fmt.Sprintf("rda-fig7: RDA vs LDA as the set difference d grows (RDA paper Fig. 7); %d packets per interval, %d intervals per point, seed %d", n, runs, o.Seed),
			"delay " + rdaFig7Delay.String() + "; d = d/2 dropped + d/4 late past the interval end (sender only) + d/4 early from the previous interval (receiver only)",
			"valid/exact/sets_right/false_pure/loss_right: share of intervals (false_pure: the decode peeled a false pure cell, which the caches caught); rel errors: mean over valid intervals (max in mean_err_max); outside: valid intervals whose truth lies outside mean ± bound",
		},
		cols: []string{"d", "method", "bytes", "valid", "exact", "sets_right", "false_pure", "loss_right", "usable", "mean_err", "mean_err_max", "bound", "sd_err", "outside"},
	}
	type agg struct{ mean, sdv, bound, maxErr []float64 }
	series := make([][]plotter.XY, len(ms))
	sdSeries := make([][]plotter.XY, len(ms))
	exactSeries := make([][]plotter.XY, len(ms))
	for di, d := range diffs {
		for j, m := range ms {
			var valid, exact, sets, loss, outside, falsePure int
			var usable float64
			var a agg
			for run := range runs {
				r := outs[di*runs+run][j]
				usable += r.usable / float64(runs)
				if r.exact {
					exact++
				}
				if r.setsRight {
					sets++
				}
				if r.falsePure {
					falsePure++
				}
				if r.lossRight {
					loss++
				}
				if !r.valid {
					continue
				}
				valid++
				if r.outside {
					outside++
				}
				a.mean, a.sdv, a.bound = append(a.mean, r.meanErr), append(a.sdv, r.sdErr), append(a.bound, r.boundRel)
			}
			frac := func(k int) float64 { return float64(k) / float64(runs) }
			setsV, exactV, fpV := any(frac(sets)), any(frac(exact)), any(frac(falsePure))
			if m.lda != nil {
				setsV, exactV, fpV = "-", "-", "-" // an LDA neither decodes nor repairs
			}
			meanErr := rdaMean(a.mean)
			maxErr := math.NaN()
			if len(a.mean) > 0 {
				maxErr = slices.Max(a.mean)
			}
			bytes := m.bytes
			if m.sized {
				c, _ := rdaSizedFor(d, n) // succeeded in the run
				bytes = rdaCellBytes * c.Banks * c.Cells
			}
			t.add(d, m.name, bytes, frac(valid), exactV, setsV, fpV, frac(loss), usable, meanErr, maxErr, rdaMean(a.bound), rdaMean(a.sdv), outside)
			series[j] = append(series[j], plotter.XY{X: float64(d), Y: meanErr})
			sdSeries[j] = append(sdSeries[j], plotter.XY{X: float64(d), Y: rdaMean(a.sdv)})
			if m.lda == nil {
				exactSeries[j] = append(exactSeries[j], plotter.XY{X: float64(d), Y: frac(exact)})
			}
		}
	}
	t.plot = func(dir string) error {
		var cs, sd, ex []synCurve
		for j, m := range ms {
			cs = append(cs, synCurve{name: m.name, xy: series[j]})
			sd = append(sd, synCurve{name: m.name, xy: sdSeries[j]})
			if m.lda == nil {
				ex = append(ex, synCurve{name: m.name, xy: exactSeries[j]})
			}
		}
		const x = "set difference d (lost + reordered packets)"
		if err := synPlot(synPlotPath(dir, "rda-fig7_mean"), "rda-fig7: relative error of the mean delay vs set difference (exact results drawn at 1e-17)",
			x, "mean relative error", false, true, 1e-17, "br", cs); err != nil {
			return err
		}
		if err := synPlot(synPlotPath(dir, "rda-fig7_stddev"), "rda-fig7: relative error of the std-dev vs set difference",
			x, "std-dev relative error", false, true, 1e-6, "br", sd); err != nil {
			return err
		}
		return synPlot(synPlotPath(dir, "rda-fig7_exact"), "rda-fig7: share of intervals with an exact result",
			x, "share exact", false, false, 0, "tr", ex)
	}
	return t, nil
}

// rdaMean is the mean of xs, NaN when empty.
func rdaMean(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}
