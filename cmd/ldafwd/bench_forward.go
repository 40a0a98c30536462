package main

import (
	"fmt"
	"sort"
	"time"

	"github.com/ldafwd/ldafwd/bench"
	"github.com/ldafwd/ldafwd/report"
)

func init() { registerBench("forward-ring", benchForwardRing) }

// benchForwardRing is issue 4's forwarding question: one lane forwarding
// between ring ports with measurement off, with the LDA, and with LDA + RDA
// + LDS, per burst size. The three modes are interleaved round by round
// and the median kept, so their ratio is measured under the same load.
func benchForwardRing(o *benchOptions, emit func(report.Bench)) error {
	modes := []string{bench.ModeOff, bench.ModeLDA, bench.ModeAll}
	per := o.duration / time.Duration(o.rounds)
	if per < 50*time.Millisecond {
		per = 50 * time.Millisecond
	}
	for _, burst := range []int{32, 8, 16, 64} {
		mpps := map[string][]float64{}
		for r := 0; r < o.rounds; r++ {
			for _, m := range modes {
				res, err := bench.ForwardRing(m, burst, per)
				if err != nil {
					return err
				}
				mpps[m] = append(mpps[m], res.Mpps)
			}
		}
		suffix := fmt.Sprintf("/burst=%d", burst)
		if burst == 32 {
			suffix = "" // the headline case: DESIGN's default burst
		}
		off := median(mpps[bench.ModeOff])
		for _, m := range modes {
			v := median(mpps[m])
			b := report.Bench{Name: "forward-ring-" + m + suffix, Mpps: v, NsPerPkt: 1e3 / v,
				Extra: map[string]any{"burst": burst, "rounds_mpps": mpps[m]}}
			if m != bench.ModeOff {
				b.Baseline, b.Ratio = "forward-ring-off"+suffix, v/off
			}
			emit(b)
		}
	}
	return nil
}

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}
