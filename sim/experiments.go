package sim

import (
	"fmt"
	"strings"

	"github.com/ldafwd/ldafwd/model"
	"github.com/ldafwd/ldafwd/synopsis"
)

// PaperLosses is the loss-rate axis of Figs. 4–6 (10^-4 … 0.2, log scale).
var PaperLosses = []float64{1e-4, 2e-4, 5e-4, 1e-3, 2e-3, 5e-3, 0.01, 0.02, 0.05, 0.1, 0.2}

// PaperProbeRates are the active-probe rates of Sec. IV-C, Hz: once per
// interval like the LDA's report; 7 packets like the LDA's 72 kb report;
// the same bandwidth with 64-byte probes; and the rate that matches LDA.
var PaperProbeRates = []float64{1, 7, 144, 10_000}

// Experiments lists the paper's experiments ("all"), in run order. Build
// also accepts "custom" (see Options.Delay).
var Experiments = []string{"fig4", "fig5", "fig6"}

// Options parameterise the experiments. DefaultOptions gives the paper's.
type Options struct {
	Packets    int       // packets per interval, N (paper: 5 000 000)
	Runs       int       // runs per point (paper: 10)
	Counters   int       // LDA buckets in all banks together, a power of two (paper: 1024)
	Seed       uint64    // everything random derives from it
	Losses     []float64 // loss rates, the x axis
	MeanNs     float64   // mean delay of every distribution (paper: 0.2 µs)
	Alpha      float64   // α of the tuning p = α·m/(L+1) (paper: 0.5)
	Burst      float64   // fig6: mean loss-episode length, packets (paper: ≈100)
	ProbeRates []float64 // fig6: active-probe rates, Hz
	IntervalNs float64   // interval the probes are spread over, ns (paper: 1 s)
	Confidence float64   // of the Hoeffding bound (paper: 0.98)
	// Series, if not empty, keeps only fig4's delay distributions whose
	// name contains one of these ("weibull", "pareto β=3"): the α study
	// of docs/accuracy.md needs Weibull only, at half the cost.
	Series []string

	// The "custom" experiment: your own delay model (nil: Weibull β = 0.6
	// at MeanNs), loss kind ("uniform" or "bursty", episodes of Burst
	// packets) and the design loss rates of a multi-bank LDA; it compares
	// that LDA, the single bank tuned for the true loss, the appliance's
	// default LDA (synopsis.DefaultLDAConfig) and probes at ProbeRates.
	// DesignLosses is also fig6's LDA (paper: 0.005, 0.1).
	Delay        model.Delay
	LossKind     string
	DesignLosses []float64
}

// DefaultOptions are the paper's Sec. IV parameters.
func DefaultOptions() Options {
	return Options{
		Packets:    5_000_000,
		Runs:       10,
		Counters:   1024,
		Seed:       1,
		Losses:     append([]float64(nil), PaperLosses...),
		MeanNs:     200,
		Alpha:      synopsis.SizingAlpha,
		Burst:      100,
		ProbeRates: append([]float64(nil), PaperProbeRates...),
		IntervalNs: 1e9,
		Confidence: synopsis.DefaultConfidence,

		LossKind:     "uniform",
		DesignLosses: []float64{0.005, 0.1},
	}
}

// Validate reports the first bad option.
func (o *Options) Validate() error {
	switch {
	case o.Packets < 1 || o.Packets > MaxPackets:
		return fmt.Errorf("sim: packets %d outside [1, %d]", o.Packets, MaxPackets)
	case o.Runs < 1 || o.Runs > MaxRuns:
		return fmt.Errorf("sim: runs %d outside [1, %d]", o.Runs, MaxRuns)
	case o.Counters < 8 || o.Counters > synopsis.LDAMaxRows || o.Counters&(o.Counters-1) != 0:
		return fmt.Errorf("sim: counters %d: want a power of two in [8, %d] (banks split it in halves and quarters)", o.Counters, synopsis.LDAMaxRows)
	case len(o.Series) > 0 && !anySeries(o.Series):
		return fmt.Errorf("sim: series %q: each must be part of one of fig4's %s", o.Series, strings.Join(paperSeries, ", "))
	case len(o.Losses) == 0:
		return fmt.Errorf("sim: no loss rates")
	case !(o.MeanNs > 0) || o.MeanNs > 1e9:
		// The LDA's sums are exact while N·mean < 2^63 ns; 1 s × 5·10^6
		// is far inside.
		return fmt.Errorf("sim: mean delay %g ns outside (0, 1 s]", o.MeanNs)
	case !(o.Alpha > 0 && o.Alpha <= 4):
		return fmt.Errorf("sim: alpha %g outside (0, 4]", o.Alpha)
	case !(o.Burst >= 1 && o.Burst <= 1e9):
		return fmt.Errorf("sim: burst %g outside [1, 1e9] packets", o.Burst)
	case !(o.IntervalNs > 0 && o.IntervalNs <= 3600e9):
		return fmt.Errorf("sim: interval %g ns outside (0, 1 h]", o.IntervalNs)
	case !(o.Confidence > 0 && o.Confidence < 1):
		return fmt.Errorf("sim: confidence %g not in (0, 1)", o.Confidence)
	}
	for _, l := range o.Losses {
		if !(l >= 0 && l < 1) {
			return fmt.Errorf("sim: loss rate %g outside [0, 1)", l)
		}
	}
	for _, r := range o.ProbeRates {
		if !(r > 0 && r*o.IntervalNs/1e9 <= 1e8) {
			return fmt.Errorf("sim: probe rate %g Hz: want > 0 and at most 1e8 probes per interval", r)
		}
	}
	if o.LossKind != "uniform" && o.LossKind != "bursty" {
		return fmt.Errorf("sim: loss kind %q: want uniform or bursty", o.LossKind)
	}
	if len(o.DesignLosses) == 0 || len(o.DesignLosses) > o.Counters/2 || len(o.DesignLosses) > synopsis.LDAMaxBanks {
		return fmt.Errorf("sim: %d design loss rates: want 1 … min(%d, counters/2)", len(o.DesignLosses), synopsis.LDAMaxBanks)
	}
	for _, l := range o.DesignLosses {
		if !(l >= 0 && l < 1) {
			return fmt.Errorf("sim: design loss rate %g outside [0, 1)", l)
		}
	}
	if o.Delay != nil && !(o.Delay.Mean() <= 1e9) {
		// The LDA's sums are exact while N·mean < 2^63 ns.
		return fmt.Errorf("sim: delay model %s has a mean above 1 s", o.Delay)
	}
	return nil
}

// Build returns the scenarios of the named experiment ("fig4", "fig5",
// "fig6").
func Build(name string, o Options) ([]Scenario, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	switch name {
	case "fig4":
		return fig4(o)
	case "fig5":
		return fig5(o)
	case "fig6":
		return fig6(o)
	case "custom":
		return custom(o)
	}
	return nil, fmt.Errorf("sim: unknown experiment %q (want %s or custom)", name, strings.Join(Experiments, ", "))
}

// TunedSampleLog2 is k such that 2^-k is the power of two that best
// approximates the paper's p = α·rows/(L+1), L = packets·loss (Sec.
// III-D): synopsis.SampleLog2, the rule synopsis.SizeLDA uses too.
//
// Departure from the paper: the LDA samples by leading zeros of the hash
// (Sec. III-B), so p must be a power of two. Of the two around p this takes
// the one maximising p·e^(−p/p*) — for α = 1 the expected effective sample
// size p·R·e^(−pL/m) itself — which is in effect the nearest in log scale
// (a factor 0.69…1.44 of p*, effective α 0.35…0.72 for α = 0.5).
func TunedSampleLog2(packets int, loss float64, rows int, alpha float64) uint8 {
	if packets < 0 {
		packets = 0
	}
	return synopsis.SampleLog2(uint64(packets), loss, rows, alpha)
}

// TunedLDA is an LDA of len(rows) banks, bank j with rows[j] rows tuned
// for loss rate losses[j]. When two banks land on the same sampling rate
// (small N: both want p = 1), the later one moves to the next rate down,
// because a packet can go to only one bank of a given rate.
func TunedLDA(packets int, rows []int, losses []float64, alpha float64) synopsis.LDAConfig {
	var cfg synopsis.LDAConfig
	used := map[uint8]bool{}
	for j := range rows {
		k := TunedSampleLog2(packets, losses[j], rows[j], alpha)
		for used[k] && k < synopsis.LDAMaxSampleLog2 {
			k++
		}
		used[k] = true
		cfg.Banks = append(cfg.Banks, synopsis.BankConfig{Rows: rows[j], SampleLog2: k})
	}
	return cfg
}

// paperSeries names the distributions of Fig. 4, as paperDelays returns them.
var paperSeries = []string{"weibull β=0.6", "weibull β=0.8", "pareto β=3", "pareto β=5"}

// anySeries reports whether every entry of want matches a fig4 series.
func anySeries(want []string) bool {
	for _, w := range want {
		ok := false
		for _, n := range paperSeries {
			ok = ok || strings.Contains(n, w)
		}
		if !ok {
			return false
		}
	}
	return true
}

// paperDelays are the distributions of Fig. 4, each scaled to mean.
func paperDelays(mean float64) ([]string, []model.Delay, error) {
	w6, err1 := model.NewWeibull(mean, 0.6)
	w8, err2 := model.NewWeibull(mean, 0.8)
	p3, err3 := model.NewPareto(mean, 3)
	p5, err4 := model.NewPareto(mean, 5)
	if err := firstErr(err1, err2, err3, err4); err != nil {
		return nil, nil, fmt.Errorf("sim: %w", err)
	}
	return paperSeries, []model.Delay{w6, w8, p3, p5}, nil
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// fig4: Sec. IV-A — a single bank of all counters tuned for the true loss
// rate, uniform loss, four delay distributions.
func fig4(o Options) ([]Scenario, error) {
	names, delays, err := paperDelays(o.MeanNs)
	if err != nil {
		return nil, err
	}
	var out []Scenario
	for i, d := range delays {
		if !seriesWanted(o.Series, names[i]) {
			continue
		}
		for _, l := range o.Losses {
			loss, err := model.NewUniformLoss(l)
			if err != nil {
				return nil, err
			}
			cfg := TunedLDA(o.Packets, []int{o.Counters}, []float64{l}, o.Alpha)
			m, err := LDASpec("LDA 1 bank tuned", cfg, o.Confidence)
			if err != nil {
				return nil, err
			}
			out = append(out, Scenario{
				Experiment: "fig4", Series: names[i], Delay: d, Loss: loss, LossRate: l,
				Packets: o.Packets, Runs: o.Runs, Seed: o.Seed, Methods: []MethodSpec{m},
			})
		}
	}
	return out, nil
}

// seriesWanted reports whether name contains one of want (all when want
// is empty).
func seriesWanted(want []string, name string) bool {
	for _, w := range want {
		if strings.Contains(name, w) {
			return true
		}
	}
	return len(want) == 0
}

// multiBank are the Sec. IV-B configurations: banks tuned to fixed design
// loss rates, all with o.Counters counters in total. The paper gives the
// three-bank LDA "roughly one-third" each; rows must be powers of two
// here, so it gets 1/4, 1/2, 1/4 (the middle, 1 %, bank the largest).
func multiBank(o Options) []struct {
	label  string
	rows   []int
	losses []float64
} {
	c := o.Counters
	return []struct {
		label  string
		rows   []int
		losses []float64
	}{
		{"LDA 2 banks (0.005, 0.1)", []int{c / 2, c / 2}, []float64{0.005, 0.1}},
		{"LDA 3 banks (0.001, 0.01, 0.1)", []int{c / 4, c / 2, c / 4}, []float64{0.001, 0.01, 0.1}},
		{"LDA 4 banks (0.001, 0.01, 0.05, 0.1)", []int{c / 4, c / 4, c / 4, c / 4}, []float64{0.001, 0.01, 0.05, 0.1}},
	}
}

// fig5: Sec. IV-B — the multi-bank LDAs against the single bank tuned for
// the true loss, Weibull β = 0.6 (the least accurate case of Fig. 4),
// uniform loss.
func fig5(o Options) ([]Scenario, error) {
	d, err := model.NewWeibull(o.MeanNs, 0.6)
	if err != nil {
		return nil, fmt.Errorf("sim: %w", err)
	}
	var out []Scenario
	for _, l := range o.Losses {
		loss, err := model.NewUniformLoss(l)
		if err != nil {
			return nil, err
		}
		tuned, err := LDASpec("LDA 1 bank tuned", TunedLDA(o.Packets, []int{o.Counters}, []float64{l}, o.Alpha), o.Confidence)
		if err != nil {
			return nil, err
		}
		ms := []MethodSpec{tuned}
		for _, mb := range multiBank(o) {
			m, err := LDASpec(mb.label, TunedLDA(o.Packets, mb.rows, mb.losses, o.Alpha), o.Confidence)
			if err != nil {
				return nil, err
			}
			ms = append(ms, m)
		}
		out = append(out, Scenario{
			Experiment: "fig5", Series: "weibull β=0.6", Delay: d, Loss: loss, LossRate: l,
			Packets: o.Packets, Runs: o.Runs, Seed: o.Seed, Methods: ms,
		})
	}
	return out, nil
}

// fig6: Sec. IV-C — the two-bank LDA (o.DesignLosses, by default the
// paper's 0.005 and 0.1) against Poisson active probes,
// Weibull β = 0.6, loss in exponentially distributed episodes of about
// o.Burst packets.
func fig6(o Options) ([]Scenario, error) {
	d, err := model.NewWeibull(o.MeanNs, 0.6)
	if err != nil {
		return nil, fmt.Errorf("sim: %w", err)
	}
	// The paper's LDA (2 × 512 tuned for 0.005 and 0.1) unless the
	// operator asked for other design loss rates ("operators may find
	// others better suited", Sec. IV-B).
	rows, label := designBanks(o)
	var out []Scenario
	for _, l := range o.Losses {
		loss, err := model.NewBurstyLoss(l, o.Burst)
		if err != nil {
			return nil, fmt.Errorf("sim: %w", err)
		}
		lda, err := LDASpec(label, TunedLDA(o.Packets, rows, o.DesignLosses, o.Alpha), o.Confidence)
		if err != nil {
			return nil, err
		}
		ms := []MethodSpec{lda}
		for _, r := range o.ProbeRates {
			p, err := ProbeSpec(r, o.IntervalNs, d, o.Confidence)
			if err != nil {
				return nil, err
			}
			ms = append(ms, p)
		}
		out = append(out, Scenario{
			Experiment: "fig6", Series: "weibull β=0.6", Delay: d, Loss: loss, LossRate: l,
			Packets: o.Packets, Runs: o.Runs, Seed: o.Seed, Methods: ms,
		})
	}
	return out, nil
}

// custom: the user's delay model and loss kind over the loss sweep; the
// LDA tuned for o.DesignLosses (counters split evenly, rounded down to
// powers of two), the single bank tuned for the true loss, the appliance's
// default LDA and the probes.
func custom(o Options) ([]Scenario, error) {
	d := o.Delay
	if d == nil {
		w, err := model.NewWeibull(o.MeanNs, 0.6)
		if err != nil {
			return nil, fmt.Errorf("sim: %w", err)
		}
		d = w
	}
	rows, designLabel := designBanks(o)
	var out []Scenario
	for _, l := range o.Losses {
		var loss model.Loss
		var err error
		if o.LossKind == "bursty" {
			loss, err = model.NewBurstyLoss(l, o.Burst)
		} else {
			loss, err = model.NewUniformLoss(l)
		}
		if err != nil {
			return nil, fmt.Errorf("sim: %w", err)
		}
		tuned, err := LDASpec("LDA 1 bank tuned", TunedLDA(o.Packets, []int{o.Counters}, []float64{l}, o.Alpha), o.Confidence)
		if err != nil {
			return nil, err
		}
		design, err := LDASpec(designLabel, TunedLDA(o.Packets, rows, o.DesignLosses, o.Alpha), o.Confidence)
		if err != nil {
			return nil, err
		}
		def, err := LDASpec("LDA appliance default", synopsis.DefaultLDAConfig(), o.Confidence)
		if err != nil {
			return nil, err
		}
		ms := []MethodSpec{tuned, design, def}
		for _, r := range o.ProbeRates {
			p, err := ProbeSpec(r, o.IntervalNs, d, o.Confidence)
			if err != nil {
				return nil, err
			}
			ms = append(ms, p)
		}
		out = append(out, Scenario{
			Experiment: "custom", Series: d.String(), Delay: d, Loss: loss, LossRate: l,
			Packets: o.Packets, Runs: o.Runs, Seed: o.Seed, Methods: ms,
		})
	}
	return out, nil
}

// designBanks splits o.Counters evenly (rounded down to powers of two)
// over one bank per o.DesignLosses rate and labels that LDA like the
// paper's multi-bank curves, "LDA 2 banks (0.005, 0.1)".
func designBanks(o Options) ([]int, string) {
	rows := make([]int, len(o.DesignLosses))
	for i := range rows {
		rows[i] = 1 << (bitsLen(o.Counters/len(rows)) - 1)
	}
	var labels []string
	for _, l := range o.DesignLosses {
		labels = append(labels, fmt.Sprintf("%g", l))
	}
	return rows, fmt.Sprintf("LDA %d banks (%s)", len(rows), strings.Join(labels, ", "))
}

// bitsLen is the number of bits needed to represent n (n ≥ 1).
func bitsLen(n int) int {
	b := 0
	for ; n > 0; n >>= 1 {
		b++
	}
	return b
}
