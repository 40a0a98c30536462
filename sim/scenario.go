package sim

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"runtime"
	"sync"

	"github.com/ldafwd/ldafwd/model"
)

// Scenario is one point of an experiment: a delay trace, a loss process
// and the methods measuring it, repeated Runs times. All methods of a run
// see the same packets, identities and losses (a paired comparison).
type Scenario struct {
	Experiment string      // "fig4", "fig5", "fig6", …
	Series     string      // what varies between curves besides the method, e.g. "weibull β=0.6"
	Delay      model.Delay // packet delays (the trace is drawn once per Delay and Seed)
	Loss       model.Loss  // cloned for every run
	LossRate   float64     // nominal loss rate, the x axis
	Packets    int         // packets per interval (N)
	Runs       int
	Seed       uint64 // trace and run seeds derive from it
	Methods    []MethodSpec
}

// Validate reports whether s can run.
func (s *Scenario) Validate() error {
	switch {
	case s.Delay == nil || s.Loss == nil:
		return errors.New("sim: scenario needs a delay and a loss model")
	case s.Packets < 1 || s.Packets > MaxPackets:
		return fmt.Errorf("sim: packets %d outside [1, %d]", s.Packets, MaxPackets)
	case s.Runs < 1 || s.Runs > MaxRuns:
		return fmt.Errorf("sim: runs %d outside [1, %d]", s.Runs, MaxRuns)
	case len(s.Methods) == 0:
		return errors.New("sim: scenario has no method")
	}
	return nil
}

// Limits that keep a typo from asking for hours or gigabytes (the trace is
// 8 bytes per packet).
const (
	MaxPackets = 500_000_000
	MaxRuns    = 10_000
)

// Point is the result of one method in one scenario, averaged over its
// runs: one row of the tables behind Figs. 4–6, one `"type":"sim"` JSON
// line. Relative errors are |estimate − truth| / truth against the exact
// truth of each run (mean and population std-dev over the received
// packets). Error fields are absent when no run produced that estimate.
type Point struct {
	Type       string  `json:"type"` // "sim"
	Experiment string  `json:"experiment"`
	Series     string  `json:"series"`
	Method     string  `json:"method"` // MethodSpec.Label
	Kind       string  `json:"kind"`   // "lda", "probe"
	Config     string  `json:"config"`
	Delay      string  `json:"delay"` // canonical model text (model.ParseDelay)
	LossModel  string  `json:"loss_model"`
	LossRate   float64 `json:"loss_rate"` // nominal
	Packets    int     `json:"packets"`
	Runs       int     `json:"runs"`

	TrueLossRate float64 `json:"true_loss_rate"` // measured, averaged over runs
	TrueMeanNs   float64 `json:"true_mean_ns"`   // averaged over runs
	TrueStddevNs float64 `json:"true_stddev_ns"`

	MeanRuns        int      `json:"mean_runs"` // runs with a mean estimate
	MeanNs          *float64 `json:"mean_ns,omitempty"`
	MeanRelErr      *float64 `json:"mean_rel_err,omitempty"`    // average over runs
	MeanRelErrSE    *float64 `json:"mean_rel_err_se,omitempty"` // its standard error (spread of runs / √runs)
	MeanRelErrMax   *float64 `json:"mean_rel_err_max,omitempty"`
	StddevRuns      int      `json:"stddev_runs"` // runs with a std-dev estimate
	StddevRelErr    *float64 `json:"stddev_rel_err,omitempty"`
	StddevRelErrSE  *float64 `json:"stddev_rel_err_se,omitempty"`
	StddevRelErrMax *float64 `json:"stddev_rel_err_max,omitempty"`
	// BoundRel is the confidence half-width relative to the true mean, from
	// the run with the fewest samples (the paper's most conservative Fig.
	// 4(b) error bar); BoundMisses counts runs whose own interval missed
	// the true mean.
	BoundRel    *float64 `json:"bound_rel,omitempty"`
	BoundMisses int      `json:"bound_misses"`
	Samples     float64  `json:"samples"` // (effective) sample size, averaged over runs
	SamplesMin  uint64   `json:"samples_min"`
	// LossExact: the method reported loss and it equalled the true count in
	// every run (LDA counts every packet, so it must).
	LossExact *bool `json:"loss_exact,omitempty"`
}

// Runner runs scenarios on Workers goroutines (runs of one scenario in
// parallel, each worker with its own methods and random streams). Results
// do not depend on Workers. It keeps the last trace so that a loss sweep
// over one delay model draws it once. A Runner is not safe for concurrent
// use.
type Runner struct {
	Workers int // ≤ 0: GOMAXPROCS

	trace *Trace
}

// Run runs s and returns one Point per method, in s.Methods order.
func (r *Runner) Run(ctx context.Context, s Scenario) ([]Point, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	traceSeed := mix(s.Seed, strHash(s.Delay.String()))
	if r.trace == nil || r.trace.Seed != traceSeed || len(r.trace.DelaysNs) != s.Packets ||
		r.trace.Delay.String() != s.Delay.String() {
		r.trace = nil // let the old one go before allocating the new
		r.trace = NewTrace(s.Delay, s.Packets, traceSeed)
	}
	tr := r.trace

	workers := r.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	workers = min(workers, s.Runs)
	// Run seeds depend on the experiment, series, loss rate and run index:
	// every point is an independent experiment, so a claim checked at
	// several loss rates is not decided by one shared set of draws. All
	// methods of one run share packets and losses (a paired comparison).
	base := mix(mix(s.Seed, strHash(s.Experiment+"\x00"+s.Series)), math.Float64bits(s.LossRate))
	outs := make([][]Outcome, s.Runs) // [run][method]
	truths := make([]Truth, s.Runs)
	runs := make(chan int)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ms := make([]Method, len(s.Methods))
			for i, spec := range s.Methods {
				ms[i] = spec.New()
			}
			buf := new(batchBuf)
			for run := range runs {
				rs := mix(base, uint64(run))
				seeds := runSeeds{hash: mix(rs, 1), loss: mix(rs, 2), method: mix(rs, 3)}
				for i, m := range ms {
					m.Start(mix(seeds.method, uint64(i)), s.Packets)
				}
				truths[run] = replay(tr, s.Loss.Clone(), ms, seeds, buf)
				o := make([]Outcome, len(ms))
				for i, m := range ms {
					o[i] = m.Finish(&truths[run])
				}
				outs[run] = o
			}
		}()
	}
	var err error
feed:
	for run := range s.Runs {
		select {
		case runs <- run:
		case <-ctx.Done():
			err = ctx.Err()
			break feed
		}
	}
	close(runs)
	wg.Wait()
	if err != nil {
		return nil, err
	}
	pts := make([]Point, len(s.Methods))
	for i, spec := range s.Methods {
		pts[i] = aggregate(&s, spec, truths, outs, i)
	}
	return pts, nil
}

func aggregate(s *Scenario, spec MethodSpec, truths []Truth, outs [][]Outcome, i int) Point {
	p := Point{
		Type: "sim", Experiment: s.Experiment, Series: s.Series,
		Method: spec.Label, Kind: spec.Kind, Config: spec.Config,
		Delay: s.Delay.String(), LossModel: s.Loss.String(), LossRate: s.LossRate,
		Packets: s.Packets, Runs: s.Runs,
	}
	var meanErrs, stdErrs []float64
	var estSum, sampSum float64
	lossExact, lossReported := true, false
	minSamples := uint64(math.MaxUint64)
	var bound float64
	p.SamplesMin = math.MaxUint64
	for run, t := range truths {
		o := outs[run][i]
		p.TrueLossRate += t.LossRate() / float64(len(truths))
		p.TrueMeanNs += t.MeanNs / float64(len(truths))
		p.TrueStddevNs += t.StddevNs / float64(len(truths))
		sampSum += float64(o.Samples)
		if o.LostOK {
			lossReported = true
			lossExact = lossExact && o.Lost == t.Lost
		}
		if o.MeanOK && t.MeanNs != 0 {
			estSum += o.MeanNs
			meanErrs = append(meanErrs, math.Abs(o.MeanNs-t.MeanNs)/t.MeanNs)
		}
		if o.StddevOK && t.StddevNs != 0 {
			stdErrs = append(stdErrs, math.Abs(o.StddevNs-t.StddevNs)/t.StddevNs)
		}
		if o.StddevOK {
			if math.Abs(o.MeanNs-t.MeanNs) > o.BoundNs {
				p.BoundMisses++
			}
			// The most conservative bound: from the run with fewest samples.
			if o.Samples < minSamples && t.MeanNs != 0 {
				minSamples, bound = o.Samples, o.BoundNs/t.MeanNs
			}
		}
		p.SamplesMin = min(p.SamplesMin, o.Samples)
	}
	p.Samples = sampSum / float64(len(truths))
	p.MeanRuns, p.StddevRuns = len(meanErrs), len(stdErrs)
	if len(meanErrs) > 0 {
		m, se, mx := stats(meanErrs)
		p.MeanRelErr, p.MeanRelErrSE, p.MeanRelErrMax = &m, &se, &mx
		est := estSum / float64(len(meanErrs))
		p.MeanNs = &est
	}
	if len(stdErrs) > 0 {
		m, se, mx := stats(stdErrs)
		p.StddevRelErr, p.StddevRelErrSE, p.StddevRelErrMax = &m, &se, &mx
	}
	if minSamples != math.MaxUint64 {
		p.BoundRel = &bound
	}
	if lossReported {
		p.LossExact = &lossExact
	}
	return p
}

// stats returns the average, its standard error and the maximum.
func stats(xs []float64) (mean, se, max float64) {
	for _, x := range xs {
		mean += x
		max = math.Max(max, x)
	}
	n := float64(len(xs))
	mean /= n
	if len(xs) > 1 {
		var v float64
		for _, x := range xs {
			v += (x - mean) * (x - mean)
		}
		se = math.Sqrt(v / (n - 1) / n)
	}
	return mean, se, max
}

// mix derives a seed from two values (splitmix64 finaliser of a^rotated b).
func mix(a, b uint64) uint64 {
	x := a ^ (b*0x9e3779b97f4a7c15 + 0x632be59bd9b4e019)
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

func strHash(s string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(s))
	return h.Sum64()
}
