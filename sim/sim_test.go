package sim

import (
	"context"
	"math"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"

	"github.com/ldafwd/ldafwd/model"
	"github.com/ldafwd/ldafwd/synopsis"
)

// oracle is a Method that stores every received delay: the naive twin the
// framework's truth is checked against.
type oracle struct {
	delays   []uint64
	sent     int
	lastRecv uint64
	bad      string // first violated invariant of the replayed batches
}

func (o *oracle) Start(uint64, int) { o.delays, o.sent, o.lastRecv, o.bad = o.delays[:0], 0, 0, "" }
func (o *oracle) Observe(b *Batch) {
	if b.First != o.sent && o.bad == "" {
		o.bad = "batches not consecutive"
	}
	for i := range b.Hash {
		if b.RecvNs[i] < b.SendNs[i] && o.bad == "" {
			o.bad = "received before sent"
		}
		// One packet in flight: it leaves after the previous one arrived.
		if b.SendNs[i] <= o.lastRecv && o.bad == "" {
			o.bad = "two packets in flight"
		}
		o.lastRecv = b.RecvNs[i]
		if !b.Lost[i] {
			o.delays = append(o.delays, b.RecvNs[i]-b.SendNs[i])
		}
	}
	o.sent += len(b.Hash)
}
func (o *oracle) Finish(t *Truth) Outcome { return Outcome{} }

func TestReplayTruthExact(t *testing.T) {
	d, _ := model.NewPareto(50_000, 2.5) // heavy tail, large values
	tr := NewTrace(d, 10_000+17, 3)      // not a multiple of BatchSize
	loss, _ := model.NewUniformLoss(0.1)
	o := &oracle{}
	o.Start(0, 0)
	truth := replay(tr, loss, []Method{o}, runSeeds{hash: 1, loss: 2}, new(batchBuf))
	if o.bad != "" {
		t.Fatal(o.bad)
	}
	if truth.Sent != uint64(len(tr.DelaysNs)) || truth.Received != uint64(len(o.delays)) || truth.Lost != truth.Sent-truth.Received {
		t.Fatalf("counts %+v, oracle received %d", truth, len(o.delays))
	}
	var s, s2 float64
	for _, x := range o.delays {
		s += float64(x)
	}
	mean := s / float64(len(o.delays))
	for _, x := range o.delays {
		s2 += (float64(x) - mean) * (float64(x) - mean)
	}
	std := math.Sqrt(s2 / float64(len(o.delays)))
	if math.Abs(truth.MeanNs-mean) > 1e-9*mean || math.Abs(truth.StddevNs-std) > 1e-6*std {
		t.Fatalf("truth mean %v std %v, oracle %v %v", truth.MeanNs, truth.StddevNs, mean, std)
	}
	if r := truth.LossRate(); math.Abs(r-0.1) > 0.02 {
		t.Fatalf("loss rate %v", r)
	}
}

func TestAcc128(t *testing.T) {
	var a acc128
	big := uint64(1) << 62
	for range 16 {
		a.addSquare(big) // 2^124 each
		a.add(big)
	}
	// 16·2^124 = 2^128 wraps hi to 0; 16·2^62 = 2^66 → hi += 4.
	if a.hi != 4 || a.lo != 0 {
		t.Fatalf("acc128 = %#x:%#x", a.hi, a.lo)
	}
}

// TestLDALosslessExact: with every packet in one bank and no loss, every
// bucket is usable and the LDA mean is the exact mean, although every
// timestamp sum wrapped around uint64 many times (epochNs ≈ 1.75e18).
func TestLDALosslessExact(t *testing.T) {
	d, _ := model.NewWeibull(200, 0.6)
	s := Scenario{Experiment: "t", Series: "w", Delay: d, Loss: model.NoLoss{}, Packets: 50_000, Runs: 2, Seed: 9}
	m, err := LDASpec("lda", synopsis.LDAConfig{Banks: []synopsis.BankConfig{{Rows: 64}}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	s.Methods = []MethodSpec{m}
	pts, err := new(Runner).Run(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	p := pts[0]
	if *p.MeanRelErr > 1e-12 || p.Samples != 50_000 || !*p.LossExact {
		t.Fatalf("lossless p=1 LDA: rel err %g, samples %g, loss exact %v", *p.MeanRelErr, p.Samples, *p.LossExact)
	}
}

// TestLDAAccuracy is the real check of the LDA through the simulator: a
// single bank tuned for 1 % loss at N = 200 000, Weibull β = 0.6 (the
// paper's hardest case). Theory (eq. 2 and the usable-bucket probability)
// predicts the effective sample size S ≈ p·R·e^(−pL/m) and a mean relative
// error ≈ √(2/π)·(σ/μ)/√S ≈ 0.8 %. A biased estimator (using unusable
// buckets, miscounting S) or wrong sampling fails these bounds by far.
func TestLDAAccuracy(t *testing.T) {
	o := DefaultOptions()
	o.Packets, o.Runs, o.Losses = 200_000, 10, []float64{0.01}
	if testing.Short() {
		o.Runs = 4
	}
	sc, err := Build("fig4", o)
	if err != nil {
		t.Fatal(err)
	}
	p := runPoint(t, sc[0]) // weibull β=0.6
	if p.Series != "weibull β=0.6" || p.Config != "1024@2^-2" {
		t.Fatalf("scenario %q config %q", p.Series, p.Config)
	}
	pr, L := 0.25, 0.01*float64(o.Packets)
	wantS := pr * float64(o.Packets) * (1 - 0.01) * math.Exp(-pr*L/1024)
	if math.Abs(p.Samples-wantS) > 0.1*wantS {
		t.Errorf("effective samples %g, theory %g", p.Samples, wantS)
	}
	cv := p.TrueStddevNs / p.TrueMeanNs
	expErr := math.Sqrt(2/math.Pi) * cv / math.Sqrt(wantS)
	if *p.MeanRelErr > 2.5*expErr || *p.MeanRelErrMax > 5*expErr {
		t.Errorf("mean rel err avg %g max %g; theory avg %g", *p.MeanRelErr, *p.MeanRelErrMax, expErr)
	}
	if *p.StddevRelErr > 0.15 {
		t.Errorf("std-dev rel err %g", *p.StddevRelErr)
	}
	if p.BoundMisses > 1 || !*p.LossExact {
		t.Errorf("bound misses %d, loss exact %v", p.BoundMisses, *p.LossExact)
	}
	if math.Abs(p.TrueLossRate-0.01) > 0.002 {
		t.Errorf("true loss %g", p.TrueLossRate)
	}
}

func runPoint(t *testing.T, s Scenario) Point {
	t.Helper()
	pts, err := new(Runner).Run(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	return pts[0]
}

// TestProbes: probe counts are Poisson(rate·interval) thinned by the loss
// process, and their estimates converge to the truth.
func TestProbes(t *testing.T) {
	d, _ := model.NewExponential(1000)
	loss, _ := model.NewBurstyLoss(0.3, 20)
	ps, err := ProbeSpec(20_000, 1e9, d, 0.98)
	if err != nil {
		t.Fatal(err)
	}
	s := Scenario{Experiment: "t", Series: "exp", Delay: d, Loss: loss, LossRate: 0.3, Packets: 100_000, Runs: 6, Seed: 4,
		Methods: []MethodSpec{ps}}
	p := runPoint(t, s)
	want := 20_000 * (1 - p.TrueLossRate)
	if math.Abs(p.Samples-want) > 0.05*want {
		t.Errorf("probe samples %g, want ≈ %g", p.Samples, want)
	}
	// σ/μ = 1 for the exponential: error ≈ 0.8/√14000 ≈ 0.7 %.
	if *p.MeanRelErr > 0.02 || *p.StddevRelErr > 0.03 || p.BoundMisses > 1 {
		t.Errorf("probe errors mean %g std %g misses %d", *p.MeanRelErr, *p.StddevRelErr, p.BoundMisses)
	}
	if p.LossExact != nil {
		t.Error("probes claim to measure loss")
	}
}

// TestProbesSeeLossEpisodes: a probe is lost exactly when the packet it
// travels among is, so under total loss no probe arrives.
func TestProbesSeeLossEpisodes(t *testing.T) {
	d := model.Constant{Ns: 100}
	loss, _ := model.NewUniformLoss(1)
	ps, _ := ProbeSpec(1000, 1e9, d, 0.98)
	s := Scenario{Experiment: "t", Delay: d, Loss: loss, Packets: 1000, Runs: 1, Methods: []MethodSpec{ps}}
	p := runPoint(t, s)
	if p.Samples != 0 || p.MeanRuns != 0 || p.MeanRelErr != nil {
		t.Fatalf("probes under total loss: %+v", p)
	}
}

// TestDeterministic: results depend on the seed only, not on the number
// of workers; another seed gives other results.
func TestDeterministic(t *testing.T) {
	o := DefaultOptions()
	o.Packets, o.Runs, o.Losses = 30_000, 4, []float64{0.02}
	run := func(o Options, workers int) []Point {
		var pts []Point
		err := RunExperiments(context.Background(), []string{"fig6"}, o, workers, nil, func(p Point) error {
			pts = append(pts, p)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return pts
	}
	a, b := run(o, 1), run(o, 3)
	o.Seed++
	c := run(o, 2)
	if len(a) != 5 {
		t.Fatalf("%d points, want LDA + 4 probe rates", len(a))
	}
	for i := range a {
		if *a[i].MeanNs != *b[i].MeanNs || a[i].Samples != b[i].Samples {
			t.Fatalf("point %d differs between 1 and 3 workers", i)
		}
	}
	if *a[0].MeanNs == *c[0].MeanNs {
		t.Fatal("another seed gave the same LDA estimate")
	}
}

func TestTunedSampleLog2(t *testing.T) {
	tests := []struct {
		n     int
		loss  float64
		rows  int
		alpha float64
		want  uint8
	}{
		{5_000_000, 0, 1024, 0.5, 0},     // p ≥ 1
		{5_000_000, 0.001, 1024, 0.5, 3}, // p = 0.1024 → 2^-3.29 → 3
		{5_000_000, 0.2, 1024, 0.5, 11},  // p = 5.12e-4 → 2^-10.93 → 11
		{5_000_000, 0.005, 512, 0.5, 7},  // 2 banks: p = 0.0102 → 2^-6.6 → 7
		{5_000_000, 0.1, 512, 0.5, 11},   // p = 5.12e-4
		{1000, 0.5, 2, 0.5, 9},           // p = 1/501
		{1 << 40, 0.9, 2, 0.001, 48},     // capped
		{5_000_000, 0.2, 1024, 0.7, 10},  // p = 7.17e-4 → 2^-10.45 → 10
		{5_000_000, 0.1, 1024, 0.6, 10},  // p = 1.23e-3 → 2^-9.67 → 10
		{-1, 0.1, 1024, 0.5, 0},          // no packets: p ≥ 1
	}
	for _, tt := range tests {
		if got := TunedSampleLog2(tt.n, tt.loss, tt.rows, tt.alpha); got != tt.want {
			t.Errorf("TunedSampleLog2(%d, %g, %d, %g) = %d, want %d", tt.n, tt.loss, tt.rows, tt.alpha, got, tt.want)
		}
	}
	// Colliding banks move apart (small N: both want p = 1).
	cfg := TunedLDA(100, []int{256, 256, 512}, []float64{0.001, 0.01, 0.1}, 0.5)
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestBuild(t *testing.T) {
	o := DefaultOptions()
	for name, want := range map[string]int{"fig4": 4 * len(PaperLosses), "fig5": len(PaperLosses), "fig6": len(PaperLosses)} {
		sc, err := Build(name, o)
		if err != nil || len(sc) != want {
			t.Fatalf("%s: %d scenarios, %v", name, len(sc), err)
		}
		for _, s := range sc {
			if err := s.Validate(); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
		}
	}
	sc, _ := Build("fig5", o)
	var cfgs []string
	for _, m := range sc[0].Methods {
		cfgs = append(cfgs, m.Config)
	}
	sort.Strings(cfgs)
	// Sec. IV-B: 2 banks of 512 tuned for 0.005 and 0.1 at N = 5e6.
	if !contains(cfgs, "512@2^-7 512@2^-11") {
		t.Errorf("fig5 configs %q lack the paper's two-bank LDA", cfgs)
	}
	// Fig. 6: the paper's two-bank LDA by default, the operator's design
	// loss rates when given (Sec. IV-B: "operators may find others better
	// suited"): 0.5·512/5001 = 2^-4.29 → 2^-4, 0.5·512/250001 = 2^-9.93 → 2^-10.
	for _, tt := range []struct {
		design      []float64
		label, want string
	}{
		{nil, "LDA 2 banks (0.005, 0.1)", "512@2^-7 512@2^-11"},
		{[]float64{0.001, 0.05}, "LDA 2 banks (0.001, 0.05)", "512@2^-4 512@2^-10"},
	} {
		o := DefaultOptions()
		if tt.design != nil {
			o.DesignLosses = tt.design
		}
		sc, err := Build("fig6", o)
		if err != nil {
			t.Fatal(err)
		}
		if m := sc[0].Methods[0]; m.Label != tt.label || m.Config != tt.want {
			t.Errorf("fig6 design %v: LDA %q %q, want %q %q", tt.design, m.Label, m.Config, tt.label, tt.want)
		}
	}
	o.Series = []string{"weibull"}
	if sc, err := Build("fig4", o); err != nil || len(sc) != 2*len(PaperLosses) || sc[0].Series != "weibull β=0.6" || sc[len(sc)-1].Series != "weibull β=0.8" {
		t.Errorf("fig4 --series weibull: %d scenarios, %v", len(sc), err)
	}
	bad := []func(*Options){
		func(o *Options) { o.Series = []string{"weibull", "lognormal"} },
		func(o *Options) { o.Packets = 0 },
		func(o *Options) { o.Runs = 0 },
		func(o *Options) { o.Counters = 1000 },
		func(o *Options) { o.Counters = 4 },
		func(o *Options) { o.Losses = nil },
		func(o *Options) { o.Losses = []float64{1} },
		func(o *Options) { o.Losses = []float64{math.NaN()} },
		func(o *Options) { o.MeanNs = 0 },
		func(o *Options) { o.Alpha = 0 },
		func(o *Options) { o.Burst = 0.5 },
		func(o *Options) { o.ProbeRates = []float64{-1} },
		func(o *Options) { o.Confidence = 1 },
		func(o *Options) { o.IntervalNs = 0 },
	}
	for i, f := range bad {
		o := DefaultOptions()
		f(&o)
		if _, err := Build("fig4", o); err == nil {
			t.Errorf("bad option %d accepted", i)
		}
	}
	if _, err := Build("fig9", DefaultOptions()); err == nil {
		t.Error("unknown experiment accepted")
	}
	o = DefaultOptions()
	o.Losses = []float64{0.995} // bursty with burst 100 cannot reach it
	if _, err := Build("fig6", o); err == nil {
		t.Error("impossible bursty loss accepted")
	}
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

func TestRunCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	o := DefaultOptions()
	o.Packets, o.Runs, o.Losses = 1000, 3, []float64{0.01}
	err := RunExperiments(ctx, []string{"fig4"}, o, 1, nil, func(Point) error { return nil })
	if err == nil {
		t.Fatal("cancelled run returned no error")
	}
}

func TestObserveZeroAlloc(t *testing.T) {
	d, _ := model.NewWeibull(200, 0.6)
	lda, _ := LDASpec("lda", TunedLDA(1<<16, []int{512, 512}, []float64{0.005, 0.1}, 0.5), 0)
	pr, _ := ProbeSpec(1e6, 1e9, d, 0)
	buf := new(batchBuf)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range buf.hash {
		buf.hash[i], buf.send[i] = r.Uint64(), uint64(i)*1000
		buf.recv[i], buf.lost[i] = buf.send[i]+200, i%7 == 0
	}
	for _, spec := range []MethodSpec{lda, pr} {
		m := spec.New()
		m.Start(1, 1<<16)
		b := &Batch{Hash: buf.hash[:], SendNs: buf.send[:], RecvNs: buf.recv[:], Lost: buf.lost[:]}
		if a := testing.AllocsPerRun(50, func() { m.Observe(b); b.First += BatchSize }); a != 0 {
			t.Errorf("%s: Observe allocates %v", spec.Label, a)
		}
	}
}

// TestReplayAllocsPerRunNotPerPacket: a run allocates its random streams
// and nothing per packet, so the count does not grow with N.
func TestReplayAllocsPerRunNotPerPacket(t *testing.T) {
	d, _ := model.NewWeibull(200, 0.6)
	loss, _ := model.NewUniformLoss(0.01)
	spec, _ := LDASpec("lda", TunedLDA(1<<16, []int{1024}, []float64{0.01}, 0.5), 0)
	buf := new(batchBuf)
	allocs := func(n int) float64 {
		tr := NewTrace(d, n, 1)
		ms := []Method{spec.New()}
		return testing.AllocsPerRun(3, func() {
			ms[0].Start(0, n)
			replay(tr, loss, ms, runSeeds{hash: 1, loss: 2}, buf)
		})
	}
	small, large := allocs(BatchSize), allocs(64*BatchSize)
	if large != small || small > 32 {
		t.Fatalf("replay allocates %v at N=%d and %v at N=%d", small, BatchSize, large, 64*BatchSize)
	}
}

func TestCustomExperiment(t *testing.T) {
	o := DefaultOptions()
	o.Packets, o.Runs, o.Losses = 50_000, 2, []float64{0.01}
	o.Delay, _ = model.ParseDelay("exp:mean=10us,offset=5us")
	o.LossKind, o.DesignLosses = "bursty", []float64{0.001, 0.01, 0.1}
	o.ProbeRates = []float64{1000}
	sc, err := Build("custom", o)
	if err != nil {
		t.Fatal(err)
	}
	pts, err := new(Runner).Run(t.Context(), sc[0])
	if err != nil {
		t.Fatal(err)
	}
	var methods []string
	for _, p := range pts {
		methods = append(methods, p.Method)
	}
	want := []string{"LDA 1 bank tuned", "LDA 3 banks (0.001, 0.01, 0.1)", "LDA appliance default", "probes 1000 Hz"}
	if len(methods) != len(want) {
		t.Fatalf("methods %q", methods)
	}
	for i := range want {
		if methods[i] != want[i] {
			t.Fatalf("methods %q, want %q", methods, want)
		}
	}
	p := pts[0]
	if math.Abs(p.TrueMeanNs-15_000) > 500 || !strings.HasPrefix(p.LossModel, "bursty:") || p.Series != o.Delay.String() {
		t.Errorf("custom point %+v", p)
	}
	// 1024 counters over 3 design rates: 3 banks of 256 rows.
	if strings.Count(pts[1].Config, "256@") != 3 || strings.Count(pts[1].Config, " ") != 2 {
		t.Errorf("3-bank config %q", pts[1].Config)
	}
	for _, bad := range []func(*Options){
		func(o *Options) { o.LossKind = "gilbert" },
		func(o *Options) { o.DesignLosses = nil },
		func(o *Options) { o.DesignLosses = []float64{1.5} },
		func(o *Options) { o.Delay = model.Constant{Ns: 2e9} },
	} {
		o2 := o
		bad(&o2)
		if _, err := Build("custom", o2); err == nil {
			t.Errorf("bad custom options accepted: %+v", o2)
		}
	}
}
