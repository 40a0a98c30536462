package suites

import (
	"fmt"
	"sort"
	"time"

	"github.com/ldafwd/ldafwd/bench"
	"github.com/ldafwd/ldafwd/report"
)

func init() { register("forward-ring", benchForwardRing) }

// benchForwardRing is the in-process forwarding cost: one lane forwarding
// between ring ports with measurement off, with the LDA, and with LDA + RDA
// + LDS, per burst size. The three modes are interleaved round by round
// and the median kept, so their ratio is measured under the same load.
//
// Mpps and ns/pkt are from the forwarding thread's CPU time, the cost of
// forwarding on a core of its own; on a shared machine the wall clock also
// counts the time the thread waited for a core. The wall-clock figures and
// the thread's share of a core (cpu_share, ≈ 1 on an idle machine) are in
// the record's extra fields, with the wall-clock ratio.
func benchForwardRing(o *Options, emit func(report.Bench)) error {
	modes := []string{bench.ModeOff, bench.ModeLDA, bench.ModeAll}
	per := o.Duration / time.Duration(o.Rounds)
	if per < 50*time.Millisecond {
		per = 50 * time.Millisecond
	}
	for _, burst := range []int{32, 8, 16, 64} {
		cpu := map[string][]float64{}
		wall := map[string][]float64{}
		share := map[string][]float64{}
		for r := 0; r < o.Rounds; r++ {
			for _, m := range modes {
				res, err := bench.ForwardRing(m, burst, per)
				if err != nil {
					return err
				}
				cpu[m] = append(cpu[m], res.CPUMpps)
				wall[m] = append(wall[m], res.Mpps)
				share[m] = append(share[m], res.CPUShare)
			}
		}
		suffix := fmt.Sprintf("/burst=%d", burst)
		if burst == 32 {
			suffix = "" // the headline case: the default burst
		}
		off, offWall := median(cpu[bench.ModeOff]), median(wall[bench.ModeOff])
		for _, m := range modes {
			v, w := median(cpu[m]), median(wall[m])
			b := report.Bench{Name: "forward-ring-" + m + suffix, Mpps: v, NsPerPkt: 1e3 / v,
				Extra: map[string]any{"burst": burst, "clock": "thread-cpu", "rounds_mpps": cpu[m],
					"wall_mpps": w, "wall_rounds_mpps": wall[m], "cpu_share": median(share[m])}}
			if m != bench.ModeOff {
				b.Baseline, b.Ratio = "forward-ring-off"+suffix, v/off
				b.Extra["wall_ratio"] = w / offWall
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
