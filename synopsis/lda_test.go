package synopsis

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"testing"
)

// ---- a tiny trace generator with exact ground truth ----

// delayModel draws one-way delays in ns.
type delayModel struct {
	name string
	draw func(r *rand.Rand) float64
}

// weibullDelay has the given mean (ns) and shape β (the paper uses
// 0.6–0.8, after Papagiannaki et al.).
func weibullDelay(meanNs, beta float64) delayModel {
	scale := meanNs / math.Gamma(1+1/beta)
	return delayModel{fmt.Sprintf("weibull(%.0fns,%.1f)", meanNs, beta), func(r *rand.Rand) float64 {
		return scale * math.Pow(-math.Log(1-r.Float64()), 1/beta)
	}}
}

func expDelay(meanNs float64) delayModel {
	return delayModel{fmt.Sprintf("exp(%.0fns)", meanNs), func(r *rand.Rand) float64 { return r.ExpFloat64() * meanNs }}
}

// offsetDelay is a long steady path: base + exponential jitter.
func offsetDelay(baseNs, jitterNs float64) delayModel {
	return delayModel{fmt.Sprintf("base%.0fns+exp(%.0fns)", baseNs, jitterNs), func(r *rand.Rand) float64 { return baseNs + r.ExpFloat64()*jitterNs }}
}

type ldaTruth struct {
	sent, received uint64
	meanNs, stddev float64
}

func (t ldaTruth) lost() uint64 { return t.sent - t.received }

// splitmix64 gives random-looking packet hashes.
func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// ldaTraceStart is the absolute send time of packet 0 (ns): late enough in
// the Unix epoch that timestamp sums wrap around uint64 many times.
const ldaTraceStart = 1_780_000_000_000_000_000

// genTrace feeds n packets into every sender LDA and the survivors of
// Bernoulli loss into the matching receiver LDA; it returns the exact truth.
// Packets are sent every 100 ns. Delays (whole ns) are drawn from a table
// of 2^16 draws of the model, made once per model, so that tens of millions
// of packets cost one random number each.
func genTrace(seed uint64, n int, loss float64, dm delayModel, senders, receivers []*LDA) ldaTruth {
	table := delayTable(dm)
	r := rand.New(rand.NewPCG(seed, seed^0xda3e39cb94b95bdb))
	lossThreshold := uint64(loss * (1 << 48)) // compared with 48 random bits
	var tr ldaTruth
	var sum, sum2 float64
	for i := 0; i < n; i++ {
		h := splitmix64(seed<<32 ^ uint64(i))
		ts := uint64(ldaTraceStart) + uint64(i)*100
		for _, s := range senders {
			s.Add(h, ts)
		}
		tr.sent++
		x := r.Uint64()
		if x>>16 < lossThreshold {
			continue
		}
		d := table[x&0xffff]
		for _, rc := range receivers {
			rc.Add(h, ts+uint64(d))
		}
		tr.received++
		fd := float64(d)
		sum += fd
		sum2 += fd * fd
	}
	if tr.received > 0 {
		tr.meanNs = sum / float64(tr.received)
		tr.stddev = math.Sqrt(math.Max(0, sum2/float64(tr.received)-tr.meanNs*tr.meanNs))
	}
	return tr
}

var (
	delayTablesMu sync.Mutex
	delayTables   = map[string][]int64{}
)

// delayTable is 2^16 draws of dm rounded to ns (fixed seed per model).
func delayTable(dm delayModel) []int64 {
	delayTablesMu.Lock()
	defer delayTablesMu.Unlock()
	if t, ok := delayTables[dm.name]; ok {
		return t
	}
	r := rand.New(rand.NewPCG(0x7ab1e, uint64(len(dm.name))))
	t := make([]int64, 1<<16)
	for i := range t {
		t[i] = int64(math.Round(dm.draw(r)))
	}
	delayTables[dm.name] = t
	return t
}

func relErr(est, truth float64) float64 { return math.Abs(est-truth) / math.Abs(truth) }

// ---- tests ----

func TestLDAConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		cfg  LDAConfig
		ok   bool
	}{
		{"default", DefaultLDAConfig(), true},
		{"paper 2x512", LDAConfig{Banks: []BankConfig{{512, 7}, {512, 11}}}, true},
		{"no banks", LDAConfig{}, false},
		{"rows 0", LDAConfig{Banks: []BankConfig{{0, 0}}}, false},
		{"rows 1", LDAConfig{Banks: []BankConfig{{1, 0}}}, false},
		{"rows 3", LDAConfig{Banks: []BankConfig{{3, 0}}}, false},
		{"rows too many", LDAConfig{Banks: []BankConfig{{LDAMaxRows * 2, 0}}}, false},
		{"negative rows", LDAConfig{Banks: []BankConfig{{-4, 0}}}, false},
		{"sample too small", LDAConfig{Banks: []BankConfig{{4, LDAMaxSampleLog2 + 1}}}, false},
		{"duplicate sampling", LDAConfig{Banks: []BankConfig{{4, 3}, {8, 3}}}, false},
		{"17 banks", LDAConfig{Banks: func() []BankConfig {
			b := make([]BankConfig, 17)
			for i := range b {
				b[i] = BankConfig{2, uint8(i)}
			}
			return b
		}()}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewLDA(tt.cfg)
			if (err == nil) != tt.ok {
				t.Fatalf("NewLDA(%v) err = %v, want ok=%v", tt.cfg, err, tt.ok)
			}
			if err != nil && !errors.Is(err, ErrBadConfig) {
				t.Fatalf("error %v does not wrap ErrBadConfig", err)
			}
		})
	}
}

// TestLDABankSelection pins the bank choice: the bank with the largest
// SampleLog2 ≤ leading zeros, none when no bank qualifies; row = low bits.
func TestLDABankSelection(t *testing.T) {
	l := MustNewLDA(LDAConfig{Banks: []BankConfig{{8, 7}, {4, 3}}}) // deliberately unordered
	tests := []struct {
		h         uint64
		bank, row int // bank -1: not sampled
	}{
		{1 << 63, -1, 0},             // lz 0
		{1<<61 | 5, -1, 0},           // lz 2
		{1<<60 | 5, 1, 1},            // lz 3 → bank with s=3, row 5&3
		{1<<57 | 6, 1, 2},            // lz 6
		{1<<56 | 6, 0, 6},            // lz 7 → bank with s=7
		{0xf, 0, 7},                  // lz 60
		{0, 0, 0},                    // lz 64
		{1<<56 | 0xffff_fff9, 0, 1},  // high row bits ignored
		{1<<59 | 0xffff_fffe, 1, 2},  // lz 4
		{1<<62 | 0xffff_fffe, -1, 0}, // lz 1
	}
	for _, tt := range tests {
		l.Reset()
		l.Add(tt.h, 1000)
		if l.Count() != 1 {
			t.Fatalf("Count = %d", l.Count())
		}
		found := -1
		for b := 0; b < l.NumBanks(); b++ {
			for r := 0; r < l.cfg.Banks[b].Rows; r++ {
				if s, c, _ := l.Bucket(b, r); c != 0 {
					if c != 1 || s != 1000 || found >= 0 {
						t.Fatalf("h=%#x: bucket (%d,%d) = %d,%d", tt.h, b, r, s, c)
					}
					found = b
					if b != tt.bank || r != tt.row {
						t.Errorf("h=%#x: went to (%d,%d), want (%d,%d)", tt.h, b, r, tt.bank, tt.row)
					}
				}
			}
		}
		if found != tt.bank {
			t.Errorf("h=%#x: bank %d, want %d", tt.h, found, tt.bank)
		}
	}
}

// TestLDAPaperFig2 is the ToN paper's Fig. 2: one bank of four rows, one
// packet lost in row 2; mean = (60+22+8)/(5+2+1) = 11.25.
func TestLDAPaperFig2(t *testing.T) {
	cfg := LDAConfig{Banks: []BankConfig{{Rows: 4}}}
	a, b := MustNewLDA(cfg), MustNewLDA(cfg)
	rows := []struct {
		sumA, cntA, sumB, cntB uint64
	}{
		{120, 5, 180, 5},
		{234, 10, 348, 9},
		{15, 2, 37, 2},
		{6, 1, 14, 1},
	}
	add := func(l *LDA, row int, sum, cnt uint64) {
		// cnt packets hashing to row; one carries the whole sum.
		for k := uint64(0); k < cnt; k++ {
			ts := uint64(0)
			if k == 0 {
				ts = sum
			}
			l.Add(uint64(row)|k<<8, ts)
		}
	}
	for i, r := range rows {
		add(a, i, r.sumA, r.cntA)
		add(b, i, r.sumB, r.cntB)
	}
	e, d, err := EstimateLDADetailed(a, b, 0.98)
	if err != nil {
		t.Fatal(err)
	}
	if e.MeanNs != 11.25 || e.Samples != 8 || e.UsableBuckets != 3 || e.TotalBuckets != 4 {
		t.Fatalf("mean %v samples %d usable %d/%d; want 11.25, 8, 3/4", e.MeanNs, e.Samples, e.UsableBuckets, e.TotalBuckets)
	}
	if e.Sent != 18 || e.Received != 17 || e.Lost != 1 || d.CountMismatch != 1 {
		t.Fatalf("sent %d received %d lost %d mismatch %d", e.Sent, e.Received, e.Lost, d.CountMismatch)
	}
	// Collapsed rows: (0,1) has the lossy row 1, (2,3) is usable; one
	// usable pair is below ldaMinStddevRows, so the estimate is invalid
	// with a reason — never a silent number.
	if e.Valid || e.Reason == "" || d.UsableRowPairs != 1 || e.StddevSamples != 3 {
		t.Fatalf("valid %v reason %q pairs %d stddev samples %d", e.Valid, e.Reason, d.UsableRowPairs, e.StddevSamples)
	}
}

func TestLDAAddAllocs(t *testing.T) {
	for _, cfg := range []LDAConfig{DefaultLDAConfig(), {Banks: []BankConfig{{1024, 0}}, Digest: true}, SizeLDA(1e6, []float64{0.01}, 1024)} {
		l := MustNewLDA(cfg)
		h := uint64(12345)
		allocs := testing.AllocsPerRun(1000, func() {
			h = splitmix64(h)
			l.Add(h, h>>20)
		})
		if allocs != 0 {
			t.Fatalf("%v: Add allocates %v per packet", cfg, allocs)
		}
	}
}

func TestLDAZeroValue(t *testing.T) {
	var l LDA
	l.Add(1, 2)
	if l.Count() != 1 || l.Sampled() != 0 || l.NumBanks() != 0 {
		t.Fatalf("zero LDA: count %d sampled %d", l.Count(), l.Sampled())
	}
	s, c, d := l.Bucket(0, 0)
	if s|c|d != 0 {
		t.Fatal("zero LDA bucket not zero")
	}
	if _, err := l.AppendBinary(nil); !errors.Is(err, ErrBadConfig) {
		t.Fatalf("AppendBinary of a zero LDA: %v", err)
	}
	if _, err := l.AppendCompact(nil, DefaultCompactBounds()); !errors.Is(err, ErrBadConfig) {
		t.Fatalf("AppendCompact of a zero LDA: %v", err)
	}
}

// TestLDAMergeEqualsSingle: shards fed disjoint parts of a trace sum to the
// LDA fed the whole trace.
func TestLDAMergeEqualsSingle(t *testing.T) {
	for _, cfg := range []LDAConfig{DefaultLDAConfig(), {Banks: []BankConfig{{64, 1}, {32, 5}}, Digest: true}} {
		whole := MustNewLDA(cfg)
		shards := []*LDA{MustNewLDA(cfg), MustNewLDA(cfg), MustNewLDA(cfg)}
		for i := 0; i < 30000; i++ {
			h := splitmix64(uint64(i))
			ts := uint64(ldaTraceStart) + uint64(i)*7
			whole.Add(h, ts)
			shards[int(h>>7)%3].Add(h, ts)
		}
		m := shards[0].Clone()
		for _, s := range shards[1:] {
			if err := m.Merge(s); err != nil {
				t.Fatal(err)
			}
		}
		if !m.equalState(whole) {
			t.Fatalf("%v: merged shards differ from the single LDA", cfg)
		}
		if m.equalState(shards[0]) {
			t.Fatal("Clone shares state with its original")
		}
	}
}

func TestLDAMergeMismatch(t *testing.T) {
	a := MustNewLDA(DefaultLDAConfig())
	a.Add(5, 5)
	before := a.Clone()
	for _, cfg := range []LDAConfig{
		{Banks: []BankConfig{{1024, 0}}},
		func() LDAConfig { c := DefaultLDAConfig(); c.Digest = false; return c }(),
		func() LDAConfig { c := DefaultLDAConfig(); c.Banks[3].SampleLog2 = 7; return c }(),
	} {
		b := MustNewLDA(cfg)
		b.Add(5, 5)
		if err := a.Merge(b); !errors.Is(err, ErrConfigMismatch) {
			t.Fatalf("Merge with %v: err %v", cfg, err)
		}
		if !a.equalState(before) {
			t.Fatal("failed Merge changed the receiver")
		}
		if _, err := EstimateLDA(a, b, 0.98); !errors.Is(err, ErrConfigMismatch) {
			t.Fatalf("EstimateLDA with %v: err %v", cfg, err)
		}
	}
}

func TestLDAReset(t *testing.T) {
	l := MustNewLDA(LDAConfig{Banks: []BankConfig{{16, 0}}, Digest: true})
	for i := 0; i < 100; i++ {
		l.Add(splitmix64(uint64(i)), uint64(i))
	}
	l.Reset()
	if !l.equalState(MustNewLDA(l.Config())) {
		t.Fatal("Reset left state behind")
	}
}

// TestLDAExactWhenLossless: without loss every bucket is usable and the mean
// is the exact mean, to float rounding, whatever the sampling.
func TestLDAExactWhenLossless(t *testing.T) {
	cfg := DefaultLDAConfig()
	a, b := MustNewLDA(cfg), MustNewLDA(cfg)
	tr := genTrace(7, 50000, 0, weibullDelay(50000, 0.6), []*LDA{a}, []*LDA{b})
	e, err := EstimateLDA(a, b, 0.98)
	if err != nil {
		t.Fatal(err)
	}
	if !e.Valid || e.Samples != tr.received || e.Lost != 0 {
		t.Fatalf("lossless: %+v", e)
	}
	if relErr(e.MeanNs, tr.meanNs) > 1e-12 {
		t.Fatalf("lossless mean %v, true %v", e.MeanNs, tr.meanNs)
	}
}

func TestLDAReceiverMoreThanSender(t *testing.T) {
	cfg := LDAConfig{Banks: []BankConfig{{8, 0}}}
	a, b := MustNewLDA(cfg), MustNewLDA(cfg)
	for i := 0; i < 100; i++ {
		h := splitmix64(uint64(i))
		a.Add(h, 10)
		b.Add(h, 20)
	}
	b.Add(splitmix64(1000), 20)
	e, _ := EstimateLDA(a, b, 0.98)
	if e.Valid || e.Lost != 0 || e.Reason == "" {
		t.Fatalf("receiver > sender: %+v", e)
	}
}

// TestLDADigestCatchesSwap: a bucket where one packet was lost and another
// arrived instead has equal counts; only the digest notices.
func TestLDADigestCatchesSwap(t *testing.T) {
	for _, digest := range []bool{false, true} {
		cfg := LDAConfig{Banks: []BankConfig{{2, 0}}, Digest: digest}
		a, b := MustNewLDA(cfg), MustNewLDA(cfg)
		for i := uint64(0); i < 8; i++ {
			h := i << 1 // row 0
			a.Add(h, 1000)
			if i != 3 {
				b.Add(h, 1100)
			}
		}
		b.Add(99<<1, 1_000_000) // a stray packet from the next interval, same row
		e, d, _ := EstimateLDADetailed(a, b, 0.98)
		if digest && (e.UsableBuckets != 0 || d.DigestMismatch != 1) {
			t.Fatalf("digest on: usable %d digest mismatches %d", e.UsableBuckets, d.DigestMismatch)
		}
		if !digest && e.UsableBuckets != 1 {
			t.Fatalf("digest off: usable %d (the swap should go unnoticed)", e.UsableBuckets)
		}
	}
}

// TestLDAAccuracyGrid holds the estimator against exact truth over
// configurations × sizes × loss × delay models: the true mean must lie in
// the reported confidence interval, and the relative errors of mean and
// std-dev stay under limits that scale with the effective sample size.
func TestLDAAccuracyGrid(t *testing.T) {
	sizes := []int{3000, 100_000, 1_000_000}
	if testing.Short() {
		sizes = []int{3000, 100_000}
	}
	losses := []float64{0, 0.001, 0.05}
	models := []delayModel{weibullDelay(50_000, 0.6), expDelay(20_000), offsetDelay(5_000_000, 3_000)}
	for _, n := range sizes {
		for _, loss := range losses {
			configs := []struct {
				name string
				cfg  LDAConfig
			}{
				{"default", DefaultLDAConfig()},
				{"sized", SizeLDA(uint64(n), []float64{loss}, 1024)},
				{"paper2bank", SizeLDA(uint64(n), []float64{0.005, 0.1}, 1024)},
			}
			for _, c := range configs {
				for mi, dm := range models {
					name := fmt.Sprintf("n=%d/loss=%g/%s/%s", n, loss, c.name, dm.name)
					t.Run(name, func(t *testing.T) {
						a, b := MustNewLDA(c.cfg), MustNewLDA(c.cfg)
						seed := uint64(n)*131 + uint64(loss*1e6) + uint64(mi)
						tr := genTrace(seed, n, loss, dm, []*LDA{a}, []*LDA{b})
						e, err := EstimateLDA(a, b, 0.98)
						if err != nil {
							t.Fatal(err)
						}
						checkLDAEstimate(t, e, tr)
					})
				}
			}
		}
	}
}

// checkLDAEstimate asserts what an LDA estimate must satisfy against truth.
func checkLDAEstimate(t *testing.T, e Estimate, tr ldaTruth) {
	t.Helper()
	if e.Sent != tr.sent || e.Received != tr.received || e.Lost != tr.lost() {
		t.Fatalf("counts: sent %d/%d received %d/%d lost %d/%d", e.Sent, tr.sent, e.Received, tr.received, e.Lost, tr.lost())
	}
	if !e.Valid {
		// Only acceptable when there is too little to go on.
		if e.StddevSamples > 1000 {
			t.Fatalf("invalid with %d std-dev samples: %s", e.StddevSamples, e.Reason)
		}
		t.Logf("invalid (S=%d): %s", e.Samples, e.Reason)
		return
	}
	errMean := math.Abs(e.MeanNs - tr.meanNs)
	if errMean > e.MeanCINs {
		t.Errorf("true mean %.1f outside %.1f ± %.1f (S=%d)", tr.meanNs, e.MeanNs, e.MeanCINs, e.Samples)
	}
	// Sampling error of a mean is σ/√S; allow 4 of those.
	if lim := 4 * tr.stddev / math.Sqrt(float64(e.Samples)); errMean > lim {
		t.Errorf("mean error %.1f ns > 4σ/√S = %.1f ns (S=%d)", errMean, lim, e.Samples)
	}
	// Std-dev: eq. 5 averages U/2 squared sums; its relative error shrinks
	// like 1/√rows rather than 1/√S. Check loosely, tighter with more rows.
	lim := 0.5
	if e.StddevSamples >= 10_000 {
		lim = 0.25
	}
	if re := relErr(e.StddevNs, tr.stddev); re > lim {
		t.Errorf("std-dev %.1f vs true %.1f: rel. error %.2f > %.2f (S~=%d)", e.StddevNs, tr.stddev, re, lim, e.StddevSamples)
	}
	t.Logf("S=%d usable %d/%d mean %.1f (true %.1f, rel %.2g%%, CI ±%.1f) sd %.1f (true %.1f, rel %.2g%%)",
		e.Samples, e.UsableBuckets, e.TotalBuckets, e.MeanNs, tr.meanNs, 100*relErr(e.MeanNs, tr.meanNs), e.MeanCINs, e.StddevNs, tr.stddev, 100*relErr(e.StddevNs, tr.stddev))
}

// TestLDADefaultRange runs DefaultLDAConfig without tuning from a few
// thousand to tens of millions of packets per interval at 0 %, 0.1 % and
// 5 % loss, beside a single bank sized for the true (N, loss) on the same
// trace. The default must pass checkLDAEstimate everywhere and keep at
// least 1/6 of the tuned bank's effective samples (the design analysis in
// sizing.go expects about 1/4 under loss; without loss it keeps ~all).
func TestLDADefaultRange(t *testing.T) {
	sizes := []int{3000, 30_000, 300_000, 3_000_000, 10_000_000}
	if testing.Short() {
		sizes = []int{3000, 30_000, 300_000}
	}
	for _, n := range sizes {
		for _, loss := range []float64{0, 0.001, 0.05} {
			t.Run(fmt.Sprintf("n=%d/loss=%g", n, loss), func(t *testing.T) {
				def, tuned := DefaultLDAConfig(), SizeLDA(uint64(n), []float64{loss}, 1024)
				a, b := MustNewLDA(def), MustNewLDA(def)
				ta, tb := MustNewLDA(tuned), MustNewLDA(tuned)
				tr := genTrace(uint64(n)+uint64(loss*1e4), n, loss, weibullDelay(50_000, 0.7), []*LDA{a, ta}, []*LDA{b, tb})
				e, _ := EstimateLDA(a, b, 0.98)
				et, _ := EstimateLDA(ta, tb, 0.98)
				checkLDAEstimate(t, e, tr)
				t.Logf("default S=%d rel.err mean %.3f%% sd %.1f%%; tuned %v S=%d rel.err mean %.3f%% sd %.1f%%",
					e.Samples, 100*relErr(e.MeanNs, tr.meanNs), 100*relErr(e.StddevNs, tr.stddev),
					tuned, et.Samples, 100*relErr(et.MeanNs, tr.meanNs), 100*relErr(et.StddevNs, tr.stddev))
				if 6*e.Samples < et.Samples {
					t.Errorf("default S=%d < 1/6 of tuned S=%d", e.Samples, et.Samples)
				}
			})
		}
	}
}

// naivePaperStddev is the ToN paper's estimator as printed (eq. 5, then
// σ² = F − μ²), over collapsed rows usable when their summed counts match.
// It is the naive twin of ldaEstimate's centered form.
func naivePaperStddev(a, b *LDA, mean float64) float64 {
	var f float64
	var s uint64
	for i := 0; i+1 < len(a.cells); i += 2 {
		ca := a.cells[i].count + a.cells[i+1].count
		if ca == 0 || ca != b.cells[i].count+b.cells[i+1].count {
			continue
		}
		// T̃ = T[odd] − T[even]; T̃_B − T̃_A as exact int64 arithmetic.
		y := float64(int64((b.cells[i+1].sum - a.cells[i+1].sum) - (b.cells[i].sum - a.cells[i].sum)))
		f += y * y
		s += ca
	}
	v := f/float64(s) - mean*mean
	if v < 0 {
		return 0
	}
	return math.Sqrt(v)
}

// TestLDAStddevCenteredVsPaper pins the departure from eq. 3: on a
// short path both agree; on a long steady path (μ ≫ σ) F − μ² cancels
// catastrophically and the centered form does not.
func TestLDAStddevCenteredVsPaper(t *testing.T) {
	cfg := LDAConfig{Banks: []BankConfig{{1024, 3}}}
	for _, tc := range []struct {
		dm         delayModel
		paperLimit float64 // the paper's form is within this relative error
	}{
		{weibullDelay(50_000, 0.7), 0.25},
		{offsetDelay(5_000_000, 3_000), math.Inf(1)}, // no promise
	} {
		a, b := MustNewLDA(cfg), MustNewLDA(cfg)
		tr := genTrace(99, 300_000, 0.001, tc.dm, []*LDA{a}, []*LDA{b})
		e, _ := EstimateLDA(a, b, 0.98)
		paper := naivePaperStddev(a, b, e.MeanNs)
		rc, rp := relErr(e.StddevNs, tr.stddev), relErr(paper, tr.stddev)
		t.Logf("%s: true σ %.0f, centered %.0f (%.1f%%), paper F−μ² %.0f (%.1f%%)", tc.dm.name, tr.stddev, e.StddevNs, 100*rc, paper, 100*rp)
		if rc > 0.25 {
			t.Errorf("%s: centered std-dev off by %.1f%%", tc.dm.name, 100*rc)
		}
		if rp > tc.paperLimit {
			t.Errorf("%s: paper std-dev off by %.1f%%", tc.dm.name, 100*rp)
		}
	}
}

func BenchmarkLDAAdd(b *testing.B) {
	noDig := DefaultLDAConfig()
	noDig.Digest = false
	for _, c := range []struct {
		name string
		cfg  LDAConfig
	}{
		{"default", DefaultLDAConfig()},
		{"record8x1024", RecordLDAConfig()},
		{"default-nodigest", noDig},
		{"paper2x512", SizeLDA(5_000_000, []float64{0.005, 0.1}, 1024)},
		{"1bank-p1", LDAConfig{Banks: []BankConfig{{1024, 0}}}},
	} {
		b.Run(c.name, func(b *testing.B) {
			l := MustNewLDA(c.cfg)
			hs := make([]uint64, 4096)
			for i := range hs {
				hs[i] = splitmix64(uint64(i))
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				l.Add(hs[i&4095], uint64(i))
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/pkt")
		})
	}
}

func BenchmarkEstimateLDA(b *testing.B) {
	x, y, _ := filledLDAPair(b, DefaultLDAConfig(), 200_000, 0.01, expDelay(10_000))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := EstimateLDA(x, y, 0.98); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkLDACompact(b *testing.B) {
	x, y, _ := filledLDAPair(b, DefaultLDAConfig(), 200_000, 0.01, expDelay(10_000))
	buf, _ := x.AppendCompact(nil, DefaultCompactBounds())
	b.Run("encode", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			buf, _ = x.AppendCompact(buf[:0], DefaultCompactBounds())
		}
		b.ReportMetric(float64(8*len(buf)), "bits")
	})
	b.Run("decode+estimate", func(b *testing.B) {
		b.ReportAllocs()
		var c CompactLDA
		for i := 0; i < b.N; i++ {
			if err := c.UnmarshalBinary(buf); err != nil {
				b.Fatal(err)
			}
			if _, err := EstimateLDACompact(&c, y, 0.98); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestLDAShardsConcurrent is the dataplane's use under the race detector:
// each worker goroutine owns one shard, the control side merges them after
// the workers are done, and the result equals one LDA fed everything.
func TestLDAShardsConcurrent(t *testing.T) {
	const workers, perWorker = 4, 20_000
	cfg := DefaultLDAConfig()
	cfg.Digest = true
	shards := make([]*LDA, workers)
	var wg sync.WaitGroup
	for w := range shards {
		shards[w] = MustNewLDA(cfg)
		wg.Add(1)
		go func(l *LDA, w int) {
			defer wg.Done()
			for i := 0; i < perWorker; i++ {
				k := uint64(w*perWorker + i)
				l.Add(splitmix64(k), ldaTraceStart+k)
			}
		}(shards[w], w)
	}
	wg.Wait()
	whole := MustNewLDA(cfg)
	for k := uint64(0); k < workers*perWorker; k++ {
		whole.Add(splitmix64(k), ldaTraceStart+k)
	}
	merged := MustNewLDA(cfg)
	for _, s := range shards {
		if err := merged.Merge(s); err != nil {
			t.Fatal(err)
		}
	}
	if !merged.equalState(whole) {
		t.Fatal("concurrently filled shards do not merge to the single LDA")
	}
}
