package appliance_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ldafwd/ldafwd/appliance/demo"
	"github.com/ldafwd/ldafwd/classifier"
	"github.com/ldafwd/ldafwd/dataplane"
	"github.com/ldafwd/ldafwd/model"
	"github.com/ldafwd/ldafwd/report"
	"github.com/ldafwd/ldafwd/synopsis"
	"github.com/rs/zerolog"
)

// sampleSeeds is how many seeds TestSampleProperty runs in `make test`;
// SAMPLE_PROPERTY_SEEDS sets another number (`make accuracy` runs 400).
const sampleSeeds = 24

// sampleScenario draws one seed's segment for the live sample: a delay
// distribution with a heavy or a split tail (Weibull shape 0.7, Pareto
// shape 1.5, or a bimodal mix: 90 % around 30 µs, 10 % at 300–500 µs),
// uniform or bursty loss of 0–20 %, reordering, duplicates, one or two
// classes, and either a fixed sampling level (1 in 2 to 1 in 16, shipped
// whatever it costs) or the default, sized by the control budget.
func sampleScenario(seed uint64) (demo.Config, string) {
	r := rand.New(rand.NewPCG(seed, 0x5a3b_1e57))
	var desc []string
	var delay model.Delay
	switch r.IntN(3) {
	case 0:
		delay, _ = model.NewWeibull(40_000, 0.7)
		desc = append(desc, "weibull 40us 0.7")
	case 1:
		delay, _ = model.NewPareto(40_000, 1.5)
		desc = append(desc, "pareto 40us 1.5")
	default:
		fast, _ := model.NewExponential(30_000)
		slow, _ := model.NewUniform(300_000, 500_000)
		delay, _ = model.NewMix(0.9, fast, slow)
		desc = append(desc, "bimodal 0.9 exp(30us) / 0.1 uniform(300us, 500us)")
	}
	var loss model.Loss
	rate := r.Float64() * 0.2
	if r.IntN(6) == 0 {
		rate = 0
	}
	if r.IntN(3) == 0 && rate > 0 {
		burst := float64(2 + r.IntN(20))
		loss, _ = model.NewBurstyLoss(rate, burst)
		desc = append(desc, fmt.Sprintf("bursty loss %.4f×%g", rate, burst))
	} else {
		loss, _ = model.NewUniformLoss(rate)
		desc = append(desc, fmt.Sprintf("uniform loss %.4f", rate))
	}
	iv := time.Duration(100+100*r.IntN(2)) * time.Millisecond
	cfg := demo.Config{
		Duration: iv * 5, Interval: iv, Delay: delay, Loss: loss, Rate: 20_000, Seed: seed,
		DSCP: []uint8{0, 16}, ControlCopies: 2, Insecure: true, Conf: 0.98, SimulatedTime: true,
		BudgetFraction: 0.01, AdaptLDA: true, AdaptRDA: true, Log: zerolog.Nop(),
	}
	desc = append(desc, fmt.Sprintf("interval %v", iv))
	if r.IntN(2) == 0 {
		cfg.ReorderProb = 0.001 + r.Float64()*0.05
		desc = append(desc, fmt.Sprintf("reorder %.4f", cfg.ReorderProb))
	}
	if r.IntN(3) == 0 {
		cfg.DupProb = 0.0002 + r.Float64()*0.005
		desc = append(desc, fmt.Sprintf("dup %.4f", cfg.DupProb))
	}
	var specs []string
	if r.IntN(2) == 0 {
		specs = []string{"c2=dscp:cs2"}
	} else {
		desc = append(desc, "one class")
	}
	cfg.Classifier, _ = classifier.NewClassifierFromSpecs(specs)
	rda := synopsis.DefaultRDAConfig()
	cfg.Syn = dataplane.SynConfig{LDA: synopsis.DefaultLDAConfig(), RDA: &rda, Classes: cfg.Classifier.NumClasses()}
	smp := synopsis.DefaultSampleConfig()
	if r.IntN(2) == 0 {
		smp.Level = uint8(1 + r.IntN(4))
		desc = append(desc, fmt.Sprintf("sample level %d, shipped whole", smp.Level))
	} else {
		cfg.AdaptSample = true
		desc = append(desc, "sample sized by the budget")
	}
	cfg.Syn.Sample = &smp
	return cfg, strings.Join(desc, ", ")
}

// sampleTally is what the seeds found.
type sampleTally struct {
	mu                        sync.Mutex
	lines, valid, lossChecked int
	bounded, misses           map[string]int
	samples                   int
}

// TestSampleProperty holds the live sample to the impairment stage's
// exact truth on simulated time (a seed replays bit for bit): in every
// a>b sample line whose delay is valid, every quantile with bounds must
// hold the true quantile of the interval's delivered packets of its class
// — allowing, per quantile over all seeds, only the misses the stated
// 98 % confidence allows (2 % of the bounded ones, plus three binomial
// standard deviations and one) — and a line whose loss is valid must
// not count more sampled losses than the class truly lost. The seeds
// must have bounded at least 100 quantiles, the p99 among them, so the
// property is never vacuous.
func TestSampleProperty(t *testing.T) {
	n := propertySeeds(t, "SAMPLE_PROPERTY_SEEDS", sampleSeeds, 6, 2)
	tally := &sampleTally{bounded: map[string]int{}, misses: map[string]int{}}
	t.Run("seeds", func(t *testing.T) {
		for seed := uint64(1); seed <= uint64(n); seed++ {
			t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
				t.Parallel()
				sampleSeed(t, seed, tally)
			})
		}
	})
	tally.mu.Lock()
	defer tally.mu.Unlock()
	total := tally.checkBounds(t, "true quantile")
	t.Logf("%d seeds: %d sample lines, %d with a valid delay (%d samples), %d loss-valid lines with loss checked", n, tally.lines, tally.valid, tally.samples, tally.lossChecked)
	if n >= sampleSeeds && (total < 100 || tally.bounded["p99"] == 0) {
		t.Errorf("only %d quantiles bounded (p99: %d) over %d seeds: the property went untested", total, tally.bounded["p99"], n)
	}
}

// checkBounds fails t when, for some quantile, the truth (what) fell
// outside the bounds more often than 98 % confidence allows over the
// lines that bounded it, and returns how many bounds were checked. The
// caller holds tally.mu.
func (tally *sampleTally) checkBounds(t *testing.T, what string) (total int) {
	t.Helper()
	for _, p := range synopsis.SampleQuantiles {
		k := "p" + synopsis.PercentileName(p)
		b, m := tally.bounded[k], tally.misses[k]
		total += b
		allowed := 0.02*float64(b) + 3*math.Sqrt(0.02*0.98*float64(b)) + 1
		t.Logf("%s: %s outside the bounds in %d of %d (allowed %.1f)", k, what, m, b, allowed)
		if float64(m) > allowed {
			t.Errorf("%s: %s outside the bounds in %d of %d bounded lines (allowed %.1f at 98 %%)", k, what, m, b, allowed)
		}
	}
	return total
}

func sampleSeed(t *testing.T, seed uint64, tally *sampleTally) {
	cfg, desc := sampleScenario(seed)
	defer func() {
		if t.Failed() {
			t.Logf("scenario: %s", desc)
			t.Logf("replay: go test ./appliance -run 'TestSampleProperty/seeds/seed=%d$' -count=1 -v", seed)
		}
	}()
	var got []report.Interval
	cfg.Reports = func(r *report.Interval) { got = append(got, *r) }
	if _, err := demo.Run(cfg); err != nil {
		t.Fatal(err)
	}
	// The class's true loss, from its LDA line of the same interval.
	trueLost := map[string]uint64{}
	for _, r := range got {
		if r.Synopsis == "lda" && r.Flow == "" && r.TrueLost != nil {
			trueLost[fmt.Sprint(r.Interval, r.MEC)] = *r.TrueLost
		}
	}
	var lines, valid, lossChecked, samples int
	bounded, misses := map[string]int{}, map[string]int{}
	for _, r := range got {
		if r.Synopsis != "sample" || r.Direction != "a>b" {
			continue
		}
		lines++
		if tl, ok := trueLost[fmt.Sprint(r.Interval, r.MEC)]; ok && r.LossValid {
			lossChecked++
			if r.Lost > tl {
				t.Errorf("interval %d %s: the sample's loss is valid with %d lost, but the class lost %d", r.Interval, r.MEC, r.Lost, tl)
			}
		}
		if !r.DelayValid {
			continue
		}
		tq, ok := r.Extra["true_quantiles"].(map[string]int64)
		if !ok {
			continue // no delivered packet, or no truth for the interval
		}
		valid++
		samples += int(r.Samples)
		qs := r.Extra["quantiles"].(map[string]report.Quantile)
		for k, q := range qs {
			if q.LoNs == nil || q.HiNs == nil {
				continue
			}
			bounded[k]++
			if tv := tq[k]; tv < *q.LoNs || tv > *q.HiNs {
				misses[k]++
				t.Logf("interval %d %s %s: true %d outside [%d, %d] (%d samples, level %v)", r.Interval, r.MEC, k, tv, *q.LoNs, *q.HiNs, r.Samples, r.Extra["sample_level"])
			}
		}
	}
	tally.mu.Lock()
	defer tally.mu.Unlock()
	tally.lines += lines
	tally.valid += valid
	tally.lossChecked += lossChecked
	tally.samples += samples
	for k, v := range bounded {
		tally.bounded[k] += v
	}
	for k, v := range misses {
		tally.misses[k] += v
	}
}

// flowScenario is sampleScenario's segment with the LDS beside the
// sample and a few flows, so that each flow gets enough samples to bound
// its quantiles: 2 to 6 flows (marked in turn with the classes' DSCPs,
// so two classes split the flows unevenly), every flow reported, the
// sample at a fixed level of every packet to 1 in 4 and, in half the
// seeds, a capacity of 600 that the busier class overflows (it ends at a
// deeper level than the other: the flows' samples are cut to it). No
// control budget: a sample shipped whole would otherwise leave the LDS
// out. The flow draws come from a stream of their own: the segment is
// sampleScenario's for the seed.
func flowScenario(seed uint64) (demo.Config, string) {
	cfg, desc := sampleScenario(seed)
	r := rand.New(rand.NewPCG(seed, 0xf10e_5a3b))
	cfg.Flows = 2 + r.IntN(5)
	cfg.TopFlows = cfg.Flows
	cfg.BudgetFraction, cfg.AdaptLDA, cfg.AdaptRDA, cfg.AdaptSample = 0, false, false, false
	lds := synopsis.LDSConfig{Rows: 2, Cols: 1 << 10, CellsPerFlow: 1, MaxFlows: 64}
	cfg.Syn.LDS = &lds
	smp := synopsis.DefaultSampleConfig()
	smp.Level = uint8(r.IntN(3))
	if r.IntN(2) == 0 {
		smp.Capacity = 600
	}
	cfg.Syn.Sample = &smp
	desc = fmt.Sprintf("%s; %d flows, flow sample level %d capacity %d", desc, cfg.Flows, smp.Level, smp.Capacity)
	return cfg, desc
}

// TestSampleFlowProperty holds the flow lines' sampled quantiles to the
// impairment stage's exact per-flow truth on simulated time: every
// bounded quantile of an a>b LDS flow line must hold the true quantile of
// the flow's delivered packets of the interval, allowing per quantile over
// all seeds only the misses the stated 98 % allows (as TestSampleProperty).
// The seeds must have bounded at least 100 flow quantiles, the p99 among
// them, and cut some flow's samples to a deeper class's level.
func TestSampleFlowProperty(t *testing.T) {
	n := propertySeeds(t, "SAMPLE_PROPERTY_SEEDS", sampleSeeds, 6, 2)
	tally := &sampleTally{bounded: map[string]int{}, misses: map[string]int{}}
	var cuts int
	t.Run("seeds", func(t *testing.T) {
		for seed := uint64(1); seed <= uint64(n); seed++ {
			t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
				t.Parallel()
				c := flowSeed(t, seed, tally)
				tally.mu.Lock()
				cuts += c
				tally.mu.Unlock()
			})
		}
	})
	tally.mu.Lock()
	defer tally.mu.Unlock()
	total := tally.checkBounds(t, "a flow's true quantile")
	t.Logf("%d seeds: %d flow lines with quantiles, %d with truth (%d sampled delays); %d cut to a deeper class's level", n, tally.lines, tally.valid, tally.samples, cuts)
	if n >= sampleSeeds && (total < 100 || tally.bounded["p99"] == 0 || cuts == 0) {
		t.Errorf("only %d flow quantiles bounded (p99: %d), %d cuts, over %d seeds: the property went untested", total, tally.bounded["p99"], cuts, n)
	}
}

// flowSeed runs one seed's flow scenario and tallies its flow lines; it
// returns how many flow lines' samples were cut deeper than their own
// class's sample line's level.
func flowSeed(t *testing.T, seed uint64, tally *sampleTally) (cuts int) {
	cfg, desc := flowScenario(seed)
	defer func() {
		if t.Failed() {
			t.Logf("scenario: %s", desc)
			t.Logf("replay: go test ./appliance -run 'TestSampleFlowProperty/seeds/seed=%d$' -count=1 -v", seed)
		}
	}()
	var got []report.Interval
	cfg.Reports = func(r *report.Interval) { got = append(got, *r) }
	if _, err := demo.Run(cfg); err != nil {
		t.Fatal(err)
	}
	levels := map[int64][]uint8{} // the classes' sample levels per interval
	for _, r := range got {
		if lv, ok := r.Extra["sample_level"].(uint8); ok && r.Synopsis == "sample" && r.Direction == "a>b" {
			levels[r.Interval] = append(levels[r.Interval], lv)
		}
	}
	var lines, valid, samples int
	bounded, misses := map[string]int{}, map[string]int{}
	for _, r := range got {
		qs, ok := r.Extra["quantiles"].(map[string]report.Quantile)
		if r.Synopsis != "lds" || r.Direction != "a>b" || !ok {
			continue
		}
		lines++
		tq, ok := r.Extra["true_quantiles"].(map[string]int64)
		if !ok {
			continue // no delivered packet of the flow, or no truth for the interval
		}
		n, _ := r.Extra["sampled_delays"].(int)
		if lv, ok := r.Extra["sample_level"].(uint8); ok && slices.Min(levels[r.Interval]) < lv {
			cuts++
		}
		valid++
		samples += n
		for k, q := range qs {
			if q.LoNs == nil || q.HiNs == nil {
				continue
			}
			bounded[k]++
			if tv := tq[k]; tv < *q.LoNs || tv > *q.HiNs {
				misses[k]++
				t.Logf("interval %d flow %s %s: true %d outside [%d, %d] (%d samples, level %v)", r.Interval, r.Flow, k, tv, *q.LoNs, *q.HiNs, n, r.Extra["sample_level"])
			}
		}
	}
	tally.mu.Lock()
	defer tally.mu.Unlock()
	tally.lines += lines
	tally.valid += valid
	tally.samples += samples
	for k, v := range bounded {
		tally.bounded[k] += v
	}
	for k, v := range misses {
		tally.misses[k] += v
	}
	return cuts
}
