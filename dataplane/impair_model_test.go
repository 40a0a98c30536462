package dataplane_test

import (
	"math"
	"testing"

	"github.com/ldafwd/ldafwd/dataplane"
	"github.com/ldafwd/ldafwd/model"
)

// The model package's distributions are the DelayModel / LossModel of the
// impairment stage.
var (
	_ dataplane.DelayModel = model.Delay(nil)
	_ dataplane.LossModel  = model.Loss(nil)
)

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// TestImpairModels drives the stage with each delay distribution of the
// model package, frames spaced far apart so FIFO queueing is rare, and
// checks the delivered delays' mean and std-dev against the model's within
// 5 standard errors (the std-dev within 10 %).
func TestImpairModels(t *testing.T) {
	n := 40_000
	if testing.Short() {
		n = 10_000
	}
	weibull := must(model.NewWeibull(50_000, 2))
	for _, tt := range []struct {
		name string
		d    model.Delay
	}{
		{"constant", must(model.NewConstant(30_000))},
		{"weibull", weibull},
		{"pareto", must(model.NewPareto(40_000, 4.5))},
		{"mix", must(model.NewMix(0.9, weibull, must(model.NewConstant(200_000))))},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, _, l, _ := runLink(t, dataplane.ImpairConfig{Delay: tt.d, Seed: 11}, n, 1, 2_000_000)
			st := l.B().Impairer().Stats()
			mean := float64(st.DelaySumNs) / float64(st.Delivered)
			sd := math.Sqrt(st.DelaySqSum/float64(st.Delivered) - mean*mean)
			se := tt.d.Stddev() / math.Sqrt(float64(st.Delivered))
			if math.Abs(mean-tt.d.Mean()) > 5*se+1 {
				t.Errorf("mean delay %.0f ns, model %.0f ± %.0f", mean, tt.d.Mean(), 5*se)
			}
			if math.Abs(sd-tt.d.Stddev()) > 0.1*tt.d.Stddev()+1 {
				t.Errorf("std-dev %.0f ns, model %.0f", sd, tt.d.Stddev())
			}
		})
	}
}

// TestImpairBurstyLoss: the model's bursty loss loses the configured
// fraction, in runs of consecutive frames whose mean length is the
// configured burst.
func TestImpairBurstyLoss(t *testing.T) {
	n := 200_000
	if testing.Short() {
		n = 60_000
	}
	const rate, burst = 0.01, 8.0
	seen, _, l, _ := runLink(t, dataplane.ImpairConfig{Loss: must(model.NewBurstyLoss(rate, burst)), Seed: 5}, n, 32, 32_000)
	st := l.B().Impairer().Stats()
	// Episodes are the independent unit: ~n·rate/burst of them.
	episodes := float64(n) * rate / burst
	if got, tol := float64(st.Lost), 5*burst*math.Sqrt(episodes); math.Abs(got-rate*float64(n)) > tol {
		t.Errorf("lost %d, want %.0f ± %.0f", st.Lost, rate*float64(n), tol)
	}
	// Runs of missing IDs in what the receiver saw.
	runs, missing := 0, 0
	prev := uint64(0)
	for i, r := range seen {
		if i > 0 && r.id > prev+1 {
			runs++
			missing += int(r.id - prev - 1)
		}
		prev = r.id
	}
	if uint64(n-len(seen)) != st.Lost {
		t.Errorf("receiver misses %d IDs, stage lost %d", n-len(seen), st.Lost)
	}
	if mean := float64(missing) / float64(runs); mean < burst*0.7 || mean > burst*1.3 {
		t.Errorf("mean loss run %.1f frames, want about %.0f", mean, burst)
	}
}
