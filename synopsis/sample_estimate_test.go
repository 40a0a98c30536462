package synopsis

import (
	"math"
	"math/big"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// exactBinomCDF is P(B ≤ k) for every k, B ~ Binomial(n, a/b), as
// numerators over b^n in exact integer arithmetic.
func exactBinomCDF(n int, a, b int64) (cdf []*big.Int, den *big.Int) {
	pa := []*big.Int{big.NewInt(1)} // a^j
	pb := []*big.Int{big.NewInt(1)} // (b−a)^j
	for j := 1; j <= n; j++ {
		pa = append(pa, new(big.Int).Mul(pa[j-1], big.NewInt(a)))
		pb = append(pb, new(big.Int).Mul(pb[j-1], big.NewInt(b-a)))
	}
	acc := new(big.Int)
	for k := 0; k <= n; k++ {
		t := new(big.Int).Binomial(int64(n), int64(k))
		t.Mul(t, pa[k]).Mul(t, pb[n-k])
		acc = new(big.Int).Add(acc, t)
		cdf = append(cdf, acc)
	}
	return cdf, new(big.Int).Exp(big.NewInt(b), big.NewInt(int64(n)), nil)
}

// TestQuantileRanksExact: QuantileRanks's ranks are the ones the exact
// binomial gives — lo the largest with P(B ≤ lo−1) ≤ (1−conf)/2, hi the
// smallest with P(B ≥ hi) ≤ (1−conf)/2, none where no rank qualifies —
// for every n up to 200, the quantiles reported (and p5) and four
// confidences.
func TestQuantileRanksExact(t *testing.T) {
	ps := [][2]int64{{1, 2}, {9, 10}, {99, 100}, {999, 1000}, {1, 20}}
	// Confidences as 1 − 2·tail, tail = c/d.
	tails := [][2]int64{{1, 20}, {1, 40}, {1, 100}, {1, 200}}
	checked := 0
	for _, pr := range ps {
		p := float64(pr[0]) / float64(pr[1])
		for n := 1; n <= 200; n++ {
			cdf, den := exactBinomCDF(n, pr[0], pr[1])
			for _, tr := range tails {
				conf := 1 - 2*float64(tr[0])/float64(tr[1])
				// x/den ≤ tail·(1+1e-9), the float code's tolerance
				// (exact ties at the tail are common: P(B ≥ 1) = 1/20
				// at n = 1): x·d·10^9 ≤ c·den·(10^9+1).
				le := func(x *big.Int) bool {
					l := new(big.Int).Mul(x, big.NewInt(tr[1]*1_000_000_000))
					r := new(big.Int).Mul(den, big.NewInt(tr[0]*1_000_000_001))
					return l.Cmp(r) <= 0
				}
				wantLo, wantHi := 0, 0
				for l := 1; l <= n; l++ {
					if le(cdf[l-1]) {
						wantLo = l
					}
				}
				for u := n; u >= 1; u-- {
					// P(B ≥ u) = 1 − P(B ≤ u−1)
					if le(new(big.Int).Sub(den, cdf[u-1])) {
						wantHi = u
					}
				}
				lo, hi, okLo, okHi := QuantileRanks(n, p, conf)
				if !okLo {
					lo = 0
				}
				if !okHi {
					hi = 0
				}
				if lo != wantLo || hi != wantHi {
					t.Fatalf("n %d p %v conf %v: ranks %d..%d (%v %v), exact %d..%d", n, p, conf, lo, hi, okLo, okHi, wantLo, wantHi)
				}
				if okLo && okHi && lo >= hi {
					t.Fatalf("n %d p %v conf %v: lo %d ≥ hi %d", n, p, conf, lo, hi)
				}
				checked++
			}
		}
	}
	t.Logf("%d (n, p, conf) checked", checked)
}

// TestQuantileRanksLarge: for large n the ranks stay where the normal
// approximation puts them (np ∓ z·√(np(1−p))), and MinSamplesFor is the
// exact threshold: one sample fewer bounds one side only.
func TestQuantileRanksLarge(t *testing.T) {
	for _, n := range []int{10_000, 1_000_000} {
		for _, p := range []float64{0.5, 0.99, 0.999} {
			lo, hi, okLo, okHi := QuantileRanks(n, p, 0.98)
			mu, sd := float64(n)*p, math.Sqrt(float64(n)*p*(1-p))
			z := 2.326 // 99 % one-sided
			if !okLo || !okHi || math.Abs(float64(lo)-(mu-z*sd)) > 0.15*z*sd+2 || math.Abs(float64(hi)-(mu+z*sd)) > 0.15*z*sd+2 {
				t.Errorf("n %d p %v: %d..%d, normal %.0f..%.0f", n, p, lo, hi, mu-z*sd, mu+z*sd)
			}
		}
	}
	for _, p := range SampleQuantiles {
		for _, conf := range []float64{0.9, 0.98, 0.999} {
			m := MinSamplesFor(p, conf)
			_, _, okLo, okHi := QuantileRanks(m, p, conf)
			_, _, okLo1, okHi1 := QuantileRanks(m-1, p, conf)
			if !okLo || !okHi || (okLo1 && okHi1) {
				t.Errorf("p %v conf %v: MinSamplesFor %d, bounds at it %v %v, one fewer %v %v", p, conf, m, okLo, okHi, okLo1, okHi1)
			}
		}
	}
	if m := MinSamplesFor(0.999, 0.98); m != 4603 {
		t.Errorf("p99.9 at 98 %% needs %d samples, docs say 4603", m)
	}
	if m := MinSamplesFor(0.99, 0.98); m != 459 {
		t.Errorf("p99 at 98 %% needs %d samples, docs say 459", m)
	}
}

// TestEstimateQuantiles: the estimate is the ⌈nP⌉-th delay, the bounds
// the order statistics at the ranks widened by the stamp error, and a
// quantile the sample cannot bound says how many samples it needs.
func TestEstimateQuantiles(t *testing.T) {
	d := make([]int64, 1000)
	for i := range d {
		d[i] = int64(1000 + 10*i) // the i+1-th smallest
	}
	qs := EstimateQuantiles(d, SampleQuantiles, 0.98, 7)
	for _, q := range qs[:3] {
		lo, hi, _, _ := QuantileRanks(1000, q.P, 0.98)
		k := int(math.Ceil(1000*q.P - 1e-9))
		if !q.Valid || q.EstimateNs != d[k-1] || q.LoNs != d[lo-1]-7 || q.HiNs != d[hi-1]+7 || q.LoRank != lo || q.HiRank != hi {
			t.Errorf("p%v: %+v, want estimate %d, bounds %d..%d (ranks %d..%d)", q.P, q, d[k-1], d[lo-1]-7, d[hi-1]+7, lo, hi)
		}
	}
	if q := qs[3]; q.Valid || !strings.Contains(q.Reason, "1000 samples cannot bound p99.9 at 0.98 (4603 needed)") {
		t.Errorf("p99.9 of 1000 samples: %+v", q)
	}
	if q := EstimateQuantiles(nil, []float64{0.5}, 0.98, 0)[0]; q.Valid || q.Reason != "no delay sampled" {
		t.Errorf("no samples: %+v", q)
	}
}

// TestMatchSamplesTruth: pairing by digest gives exactly the delays and
// the losses of the packets both ends select at the deeper level, with
// duplicates made inside the segment, injected packets and a receiver that
// ends deeper than the sender all in one interval.
func TestMatchSamplesTruth(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	snd, _ := NewSample(SampleConfig{Level: 1, Capacity: 3000})
	rcv, _ := NewSample(SampleConfig{Level: 1, Capacity: 2000})
	hs, ts := samplePkts(rng, 20_000, 1e12, 500)
	type fate struct {
		lost, dup bool
		d         int64
	}
	fates := make([]fate, len(hs))
	var injected []uint64
	for i := range hs {
		f := &fates[i]
		f.lost = rng.IntN(40) == 0
		f.dup = !f.lost && rng.IntN(200) == 0
		f.d = int64(1000 + rng.IntN(90_000))
		snd.Add(hs[i], ts[i])
		if !f.lost {
			rcv.Add(hs[i], ts[i]+uint64(f.d))
		}
		if f.dup {
			rcv.Add(hs[i], ts[i]+uint64(f.d)+300)
		}
		if rng.IntN(300) == 0 {
			h := rng.Uint64()
			injected = append(injected, h)
			rcv.Add(h, ts[i]+5000)
		}
	}
	m, err := MatchSamples(snd, rcv)
	if err != nil {
		t.Fatal(err)
	}
	L := max(snd.Level(), rcv.Level())
	// The truth at level L: digests of the sender's selected packets
	// (unique unless two collide), the receiver's copies.
	count := map[uint32]int{}
	rcount := map[uint32]int{}
	for i, h := range hs {
		if SampleSelected(h, L) {
			count[uint32(Remix(h, SaltSample))]++
			if !fates[i].lost {
				rcount[uint32(Remix(h, SaltSample))]++
			}
			if fates[i].dup {
				rcount[uint32(Remix(h, SaltSample))]++
			}
		}
	}
	var extra uint64
	for _, h := range injected {
		if SampleSelected(h, L) {
			if count[uint32(Remix(h, SaltSample))] == 0 {
				extra++
			}
			rcount[uint32(Remix(h, SaltSample))]++
		}
	}
	var want []int64
	var sent, lost, ambS uint64
	for i, h := range hs {
		if !SampleSelected(h, L) {
			continue
		}
		g := uint32(Remix(h, SaltSample))
		if count[g] != 1 || rcount[g] > 1 {
			ambS++
			continue
		}
		sent++
		if fates[i].lost {
			lost++
		} else {
			want = append(want, fates[i].d)
		}
	}
	slices.Sort(want)
	if m.Level != L || m.Sent != sent || m.Lost != lost || m.Received != sent-lost || m.Extra != extra || m.AmbiguousSent != ambS || !slices.Equal(m.DelaysNs, want) {
		t.Fatalf("match level %d sent %d lost %d extra %d ambiguous %d/%d, %d delays; truth level %d sent %d lost %d extra %d ambiguous %d, %d delays",
			m.Level, m.Sent, m.Lost, m.Extra, m.AmbiguousSent, m.AmbiguousReceived, len(m.DelaysNs), L, sent, lost, extra, ambS, len(want))
	}
	if m.AmbiguousSent == 0 || m.Lost == 0 || m.Extra == 0 || rcv.Level() <= snd.Level() {
		t.Fatalf("the case did not exercise duplicates, losses, extras and a deeper receiver: %+v, levels %d %d", m, snd.Level(), rcv.Level())
	}
	if lr := m.LossRate(); lr != float64(lost)/float64(sent) {
		t.Fatalf("loss rate %v", lr)
	}
}

// TestMatchSamplesOverflow: a sample full at the deepest level is refused.
func TestMatchSamplesOverflow(t *testing.T) {
	p, _ := NewSample(SampleConfig{Level: SampleMaxLevel, Capacity: 1})
	// Reaching it takes two packets kept at level 32 (a chance of 2^-32
	// each): set the counter Add would have raised.
	p.overflow = 1
	q, _ := NewSample(DefaultSampleConfig())
	if _, err := MatchSamples(p, q); err == nil || !strings.Contains(err.Error(), "not a uniform sample") {
		t.Fatalf("overflowed sample matched: %v", err)
	}
}

// TestSampleCoverage: over many intervals of Weibull, Pareto and bimodal
// delays, trajectory-sampled and matched, each reported quantile's
// interval holds the interval's true quantile (of all its delivered
// packets) at least as often as the confidence says, allowing three
// standard deviations of the count of misses.
func TestSampleCoverage(t *testing.T) {
	const trials, N, conf = 100, 10_000, 0.9
	rng := rand.New(rand.NewPCG(25, 26))
	dists := []struct {
		name string
		draw func() float64
	}{
		{"weibull k=0.7", func() float64 { return 20_000 * math.Pow(-math.Log(1-rng.Float64()), 1/0.7) }},
		{"pareto a=1.5", func() float64 { return 10_000 / math.Pow(1-rng.Float64(), 1/1.5) }},
		{"bimodal", func() float64 {
			if rng.IntN(10) == 0 {
				return 500_000 + 50_000*rng.NormFloat64()
			}
			return 30_000 + 3_000*rng.NormFloat64()
		}},
	}
	snd, _ := NewSample(SampleConfig{Level: 1, Capacity: N})
	rcv, _ := NewSample(SampleConfig{Level: 1, Capacity: N})
	all := make([]int64, 0, N)
	for _, dist := range dists {
		miss := make([]int, len(SampleQuantiles))
		bounded := make([]int, len(SampleQuantiles))
		for range trials {
			snd.Reset()
			rcv.Reset()
			all = all[:0]
			for i := range N {
				h, ts := rng.Uint64(), uint64(1e12+i*1000)
				d := int64(dist.draw())
				snd.Add(h, ts)
				if rng.IntN(100) == 0 {
					continue // lost: no delay, not in the population
				}
				rcv.Add(h, ts+uint64(d))
				all = append(all, d)
			}
			slices.Sort(all)
			m, err := MatchSamples(snd, rcv)
			if err != nil {
				t.Fatal(err)
			}
			for i, q := range EstimateQuantiles(m.DelaysNs, SampleQuantiles, conf, 0) {
				if !q.Valid {
					continue
				}
				bounded[i]++
				k := int(math.Ceil(float64(len(all))*q.P - 1e-9))
				truth := all[k-1]
				if truth < q.LoNs || truth > q.HiNs {
					miss[i]++
				}
			}
		}
		for i, p := range SampleQuantiles {
			n := float64(bounded[i])
			allowed := n*(1-conf) + 3*math.Sqrt(n*conf*(1-conf))
			t.Logf("%s p%s: %d of %d intervals missed (%.1f %%; %.0f allowed)", dist.name, PercentileName(p), miss[i], bounded[i], 100*float64(miss[i])/max(n, 1), allowed)
			if bounded[i] < trials || float64(miss[i]) > allowed {
				t.Errorf("%s p%s: %d of %d bounded intervals missed the true quantile (allowed %.0f)", dist.name, PercentileName(p), miss[i], bounded[i], allowed)
			}
		}
	}
}

// FuzzQuantileRanks: any sample size, quantile and confidence give ranks
// within 1..n, lo below hi, or say a side cannot be bounded; never a
// panic, and the bound exists exactly from MinSamplesFor on.
func FuzzQuantileRanks(f *testing.F) {
	f.Add(uint32(1000), 0.99, 0.98)
	f.Add(uint32(1), 0.5, 0.5)
	f.Add(uint32(5_000_000), 0.999, 0.999999)
	f.Fuzz(func(t *testing.T, n uint32, p, conf float64) {
		n %= 1 << 23
		lo, hi, okLo, okHi := QuantileRanks(int(n), p, conf)
		if okLo && (lo < 1 || lo > int(n)) || okHi && (hi < 1 || hi > int(n)) || okLo && okHi && lo >= hi {
			t.Fatalf("n %d p %v conf %v: %d..%d (%v %v)", n, p, conf, lo, hi, okLo, okHi)
		}
		if n > 0 && p >= 0.5 && p < 1 && conf >= 0.5 && conf < 1 {
			if m := MinSamplesFor(p, conf); int(n) >= m+1 && !(okLo && okHi) {
				t.Fatalf("n %d ≥ %d samples and no bound (p %v conf %v)", n, m+1, p, conf)
			}
		}
	})
}

// TestMatchSamplesFlows: a receiver that tracks flows gives each paired
// delay the flow it recorded the packet under — through raises of its
// level, a merge of two workers' shares and a cut — and its selection
// bits, so that cutting the flow's delays to a deeper level keeps exactly
// what that level keeps; AddFlow allocates nothing; a decoded receiver
// (no flows) gives none.
func TestMatchSamplesFlows(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	snd, _ := NewSample(SampleConfig{Capacity: 1500})
	rcv, _ := NewSample(SampleConfig{Capacity: 1000})
	other, _ := NewSample(SampleConfig{Capacity: 800})
	rcv.TrackFlows()
	other.TrackFlows()
	hs, ts := samplePkts(rng, 12_000, 1e12, 400)
	flowOf := map[uint64]uint64{}
	delayOf := map[uint64]int64{}
	for i, h := range hs {
		f := uint64(1 + rng.IntN(5))
		d := int64(1000 + rng.IntN(80_000))
		flowOf[h], delayOf[h] = f, d
		snd.Add(h, ts[i])
		if rng.IntN(30) == 0 {
			continue // lost
		}
		if i%4 == 0 {
			other.AddFlow(h, f, ts[i]+uint64(d))
		} else {
			rcv.AddFlow(h, f, ts[i]+uint64(d))
		}
	}
	if err := rcv.Merge(other); err != nil {
		t.Fatal(err)
	}
	if err := rcv.RaiseTo(rcv.Level() + 1); err != nil {
		t.Fatal(err)
	}
	m, err := MatchSamples(snd, rcv)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.FlowDelays) != len(m.DelaysNs) || len(m.DelaysNs) < 300 {
		t.Fatalf("%d flow delays, %d delays", len(m.FlowDelays), len(m.DelaysNs))
	}
	for i, fd := range m.FlowDelays {
		if fd.DelayNs != m.DelaysNs[i] {
			t.Fatalf("flow delay %d: %d, delays %d", i, fd.DelayNs, m.DelaysNs[i])
		}
	}
	// Each flow's delays, at the match's threshold and at a lower one
	// (not a level's), against the packets' own.
	for _, lv := range []uint64{m.Threshold, m.Threshold * 3 / 5} {
		got, want := map[uint64][]int64{}, map[uint64][]int64{}
		for _, fd := range m.FlowDelays {
			if SampleKeepsSelect(fd.Select, lv) {
				got[fd.FlowHash] = append(got[fd.FlowHash], fd.DelayNs)
			}
		}
		for _, h := range hs {
			// Paired: held once at each end (no two digests collide here).
			d := uint32(Remix(h, SaltSample))
			if SampleSelectedAt(h, lv) && digestCount(rcv, d) == 1 && digestCount(snd, d) == 1 {
				want[flowOf[h]] = append(want[flowOf[h]], delayOf[h])
			}
		}
		for f := range want {
			slices.Sort(want[f])
			slices.Sort(got[f])
			if !slices.Equal(got[f], want[f]) {
				t.Fatalf("level %d flow %d: %d delays, want %d", lv, f, len(got[f]), len(want[f]))
			}
		}
		if len(got) != len(want) {
			t.Fatalf("level %d: %d flows, want %d", lv, len(got), len(want))
		}
	}
	// AddFlow allocates nothing, raises included.
	rcv.Reset()
	i := 0
	if allocs := testing.AllocsPerRun(5000, func() { rcv.AddFlow(hs[i%len(hs)], 7, ts[i%len(ts)]); i++ }); allocs != 0 {
		t.Fatalf("AddFlow allocates %v per call", allocs)
	}
	// A decoded receiver keeps no flows.
	b, _ := rcv.AppendBinary(nil)
	dec, _ := DecodeSample(b)
	if m, err := MatchSamples(snd, dec); err == nil && m.FlowDelays != nil {
		t.Fatal("a decoded receiver gave flows")
	}
}

// digestCount counts p's entries of digest d.
func digestCount(p *Sample, d uint32) int {
	n := 0
	for _, e := range p.ents {
		if uint32(e.s) == d {
			n++
		}
	}
	return n
}

// TestMatchSamplesDigestBits: the pairing compares the shipped sample's
// digest width — 24 bits for a small sample — and an empty shipped
// sample, which ships no width, leaves the receiver's whole.
func TestMatchSamplesDigestBits(t *testing.T) {
	snd, _ := NewSample(SampleConfig{Capacity: 64})
	rcv, _ := NewSample(SampleConfig{Capacity: 64})
	for i := uint64(1); i <= 20; i++ {
		snd.Add(i, 1000*i)
		rcv.Add(i, 1000*i+50)
	}
	b, _ := snd.AppendBinary(nil)
	d, _ := DecodeSample(b)
	m, err := MatchSamples(d, rcv)
	if err != nil || m.DigestBits != 24 || m.Received != 20 || len(m.DelaysNs) != 20 || m.DelaysNs[0] != 50 {
		t.Fatalf("%d bits, %+v, %v", m.DigestBits, m, err)
	}
	e, _ := NewSample(SampleConfig{Capacity: 1})
	b, _ = e.AppendBinary(nil)
	d, _ = DecodeSample(b)
	m, err = MatchSamples(d, rcv)
	if err != nil || m.DigestBits != 32 || m.Extra != 20 {
		t.Fatalf("an empty shipped sample: %d bits, %+v, %v", m.DigestBits, m, err)
	}
}
