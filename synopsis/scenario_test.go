package synopsis

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// ---- a scenario generator for the integrity property ----
//
// Every line an estimator marks valid must hold the truth: the true mean
// within MeanCINs (up to the bound's miss rate) and Lost equal to the
// packets the network lost. The generator makes two consecutive intervals
// of one class between a sender and a receiver, with every situation that
// breaks naive set arithmetic: uniform and bursty loss, packets duplicated
// inside the segment, frames injected inside the segment (a switch's own
// BPDU), packets remarked into the class, identical frames sent twice by
// the source, and packets reordered across the interval boundary.

type scenario struct {
	name      string
	n         int     // packets per interval at the sender
	loss      float64 // per-packet loss probability (uniform), or burst start probability
	burst     int     // > 0: losses come in bursts of this mean length
	dup       float64 // probability a delivered packet is duplicated inside the segment
	inject    int     // receiver-only frames injected per interval
	remarkIn  float64 // fraction of n: packets of another class remarked into this one
	identical float64 // probability the source sends a frame twice, bit-identical
	cross     float64 // probability a packet is reordered by +crossNs (crosses the boundary when near it)
	// extrasExpected: the scenario puts receiver-only packets in interval
	// k (so its loss cannot be counted and no line may be valid with a
	// loss count that ignores them).
	extrasExpected bool
}

var scenarios = []scenario{
	{name: "clean", n: 30000},
	{name: "uniform 1%", n: 30000, loss: 0.01},
	{name: "uniform 5%", n: 30000, loss: 0.05},
	{name: "bursty", n: 30000, loss: 0.001, burst: 20},
	{name: "dup 0.2% + loss 0.5%", n: 30000, loss: 0.005, dup: 0.002, extrasExpected: true},
	{name: "inject 20", n: 30000, inject: 20, extrasExpected: true},
	{name: "inject 1 (bpdu)", n: 30000, inject: 1, extrasExpected: true},
	{name: "inject 3 + loss 0.1%", n: 30000, loss: 0.001, inject: 3, extrasExpected: true},
	{name: "identical 5% + loss 0.5%", n: 30000, loss: 0.005, identical: 0.05},
	{name: "remark-in 1% + loss 0.2%", n: 30000, loss: 0.002, remarkIn: 0.01, extrasExpected: true},
	{name: "crossing 1% + loss 0.2%", n: 30000, loss: 0.002, cross: 0.01},
}

const (
	scSpacingNs = 10_000  // one packet every 10 µs at the sender
	scCrossNs   = 400_000 // a reordered packet is late by 400 µs
	scMarkerNs  = 30_000  // the End marker's own delay
)

type scPkt struct{ h, ts uint64 }

// scInterval is one interval as both ends recorded it, with the truth.
type scInterval struct {
	snd, rcv []scPkt
	lost     uint64  // packets sent in this interval that the network lost
	mean     float64 // true mean delay over packets sent and received in this interval (first copy)
	matched  int
	extras   int // receiver-only packets (duplicates, injected, remarked in, crossed in)
	crossed  int // packets sent in this interval that arrived in the next
}

// generate makes intervals 0 and 1 of scenario sc with seed seed.
func (sc scenario) generate(seed uint64) [2]scInterval {
	r := rand.New(rand.NewPCG(seed, 0x5ce7a7105))
	dm := weibullDelay(30_000, 0.7)
	var iv [2]scInterval
	type delivered struct {
		iv    int
		rcvTs uint64
		delay float64
	}
	var sums [2]float64
	inBurst := 0
	idBase := seed << 32
	for k := 0; k < 2; k++ {
		start := uint64(ldaTraceStart) + uint64(k*sc.n)*scSpacingNs
		end := start + uint64(sc.n)*scSpacingNs
		for i := 0; i < sc.n; i++ {
			h := splitmix64(idBase + uint64(k*sc.n+i))
			copies := 1
			if r.Float64() < sc.identical {
				copies = 2
			}
			for c := 0; c < copies; c++ {
				ts := start + uint64(i)*scSpacingNs + uint64(c)
				iv[k].snd = append(iv[k].snd, scPkt{h, ts})
				lost := false
				switch {
				case inBurst > 0:
					lost = true
					inBurst--
				case r.Float64() < sc.loss:
					lost = true
					if sc.burst > 0 {
						inBurst = r.IntN(2 * sc.burst)
					}
				}
				if lost {
					iv[k].lost++
					continue
				}
				d := dm.draw(r)
				dst := k
				if r.Float64() < sc.cross {
					// Reordered: the only way past the End marker, which
					// is FIFO with the traffic it follows.
					d += scCrossNs
					if k == 0 && ts+uint64(d) > end+scMarkerNs {
						dst = 1 // recorded in interval 1
					}
				}
				rts := ts + uint64(d)
				iv[dst].rcv = append(iv[dst].rcv, scPkt{h, rts})
				if dst == k {
					if c == 0 || copies == 2 { // each identical copy is a packet of its own
						sums[k] += d
						iv[k].matched++
					}
				} else {
					iv[dst].extras++
					iv[k].crossed++
				}
				if r.Float64() < sc.dup {
					iv[dst].rcv = append(iv[dst].rcv, scPkt{h, rts + 1000})
					iv[dst].extras++
				}
			}
		}
		for j := 0; j < sc.inject; j++ {
			iv[k].rcv = append(iv[k].rcv, scPkt{r.Uint64(), start + r.Uint64N(end-start)})
			iv[k].extras++
		}
		for j := 0; j < int(sc.remarkIn*float64(sc.n)); j++ {
			ts := start + r.Uint64N(end-start)
			iv[k].rcv = append(iv[k].rcv, scPkt{splitmix64(idBase ^ 0xc1a55 + uint64(k*sc.n+j)), ts + uint64(dm.draw(r))})
			iv[k].extras++
		}
	}
	for k := range iv {
		if iv[k].matched > 0 {
			iv[k].mean = sums[k] / float64(iv[k].matched)
		}
	}
	return iv
}

// scAllowedMisses is the binomial allowance for a bound at confidence
// conf over n valid lines: the expected misses plus four standard
// deviations, plus one.
func scAllowedMisses(n int, conf float64) int {
	p := 1 - conf
	return int(float64(n)*p+4*math.Sqrt(float64(n)*p*(1-p))) + 1
}

const scSeeds = 300

// TestLDAScenarios holds the LDA (full and compact sender encodings, the
// default configuration and a sized one with cover buckets) to the
// integrity property over scSeeds seeds.
func TestLDAScenarios(t *testing.T) {
	seeds := scSeeds
	if testing.Short() {
		seeds = 60
	}
	cfgs := []LDAConfig{DefaultLDAConfig(), SizeLDA(300_000, []float64{0.01}, 512)}
	if cfgs[1].coverRows() == 0 {
		t.Fatal("sized configuration has a 2^0 bank: no cover buckets tested")
	}
	bounds := CompactBounds{MinDelayNs: 0, MaxDelayNs: 10_000_000, MeanResolutionNs: 1, DigestBits: 16}
	type tally struct{ valid, misses, lostWrong, extrasValid, lines int }
	tallies := map[string]*tally{}
	var ldas [2][2]*LDA // [interval][sender, receiver]
	for s := 0; s < seeds; s++ {
		sc := scenarios[s%len(scenarios)]
		cfg := cfgs[(s/len(scenarios))%len(cfgs)]
		iv := sc.generate(uint64(s))
		for k := range iv {
			ldas[k] = [2]*LDA{MustNewLDA(cfg), MustNewLDA(cfg)}
			for _, p := range iv[k].snd {
				ldas[k][0].Add(p.h, p.ts)
			}
			for _, p := range iv[k].rcv {
				ldas[k][1].Add(p.h, p.ts)
			}
		}
		for _, compact := range []bool{false, true} {
			name := sc.name + map[bool]string{false: " full", true: " compact"}[compact]
			var e Estimate
			var x LDACrossing
			var err error
			if compact {
				var cl [2]CompactLDA
				for k := range cl {
					b, err := ldas[k][0].AppendCompact(nil, bounds)
					if err != nil {
						t.Fatal(err)
					}
					if err := cl[k].UnmarshalBinary(b); err != nil {
						t.Fatal(err)
					}
				}
				e, err = EstimateLDACompact(&cl[0], ldas[0][1], 0)
				if err == nil {
					x, err = MatchLDACompactCrossing(&cl[0], ldas[0][1], &cl[1], ldas[1][1])
				}
			} else {
				e, err = EstimateLDA(ldas[0][0], ldas[0][1], 0)
				if err == nil {
					x, err = MatchLDACrossing(ldas[0][0], ldas[0][1], ldas[1][0], ldas[1][1])
				}
			}
			if err != nil {
				t.Fatal(err)
			}
			// The controller's use of the crossing match without the RDA:
			// k's loss less the packets found arriving in k+1; trusted only
			// when every extra bucket of k+1 is such a packet, no loss of k
			// shares its bucket with a loss of k+1, and a hidden extra is
			// no likelier than the mean's miss.
			x.Apply(&e)
			e.RequireLossVerified(1 - DefaultConfidence)
			lost := e.Lost
			tl := tallies[name]
			if tl == nil {
				tl = &tally{}
				tallies[name] = tl
			}
			tl.lines++
			if !e.Valid {
				if e.Reason == "" {
					t.Errorf("%s seed %d: invalid without a reason", name, s)
				}
				continue
			}
			tl.valid++
			if math.Abs(e.MeanNs-iv[0].mean) > e.MeanCINs {
				tl.misses++
			}
			if lost != iv[0].lost {
				tl.lostWrong++
				t.Errorf("%s seed %d (%v): valid with lost %d (crossed %d of %d, hidden buckets %d), truth %d", name, s, cfg, lost, x.Crossed, iv[0].crossed, x.Hidden, iv[0].lost)
			}
			if iv[0].extras > 0 {
				tl.extrasValid++
			}
		}
	}
	totalValid, totalMiss := 0, 0
	for name, tl := range tallies {
		t.Logf("%-34s lines %3d valid %3d mean misses %d lost wrong %d valid with extras %d", name, tl.lines, tl.valid, tl.misses, tl.lostWrong, tl.extrasValid)
		totalValid += tl.valid
		totalMiss += tl.misses
	}
	if allowed := scAllowedMisses(totalValid, DefaultConfidence); totalMiss > allowed {
		t.Errorf("%d of %d valid lines miss the true mean, more than the %d a %.0f %% bound allows", totalMiss, totalValid, allowed, 100*DefaultConfidence)
	}
	// Under loss the LDA alone cannot prove that no packet of the
	// interval hides in the next one's lossy buckets, so only clean
	// intervals stay valid here; the appliance proves lossy ones with the
	// RDA's decode (appliance.TestDemoPropertyRDA).
	for _, name := range []string{"clean full", "clean compact"} {
		if tl := tallies[name]; tl == nil || tl.valid < tl.lines/2 {
			t.Errorf("%s: too few valid lines (%+v): the property holds vacuously", name, tl)
		}
	}
}

var _ = fmt.Sprintf

// TestRDAScenarios holds the RDA (both caches local, as analyze has them)
// to the integrity property over the same scenarios.
func TestRDAScenarios(t *testing.T) {
	seeds := scSeeds
	if testing.Short() {
		seeds = 60
	}
	cfg := RDAConfig{Banks: 3, Cells: 2048, CacheBudget: 1 << 20}
	snd, rcv, snd1, rcv1 := MustNewRDA(cfg), MustNewRDA(cfg), MustNewRDA(cfg), MustNewRDA(cfg)
	type tally struct{ lines, valid, misses, lostWrong int }
	tallies := map[string]*tally{}
	totalValid, totalMiss := 0, 0
	for s := 0; s < seeds; s++ {
		sc := scenarios[s%len(scenarios)]
		iv := sc.generate(uint64(s))
		for k, pair := range [][2]*RDA{{snd, rcv}, {snd1, rcv1}} {
			pair[0].Reset()
			pair[1].Reset()
			for _, p := range iv[k].snd {
				pair[0].Add(p.h, p.ts)
			}
			for _, p := range iv[k].rcv {
				pair[1].Add(p.h, p.ts)
			}
		}
		e, st, err := EstimateRDA(snd, rcv, 0)
		if err != nil {
			t.Fatal(err)
		}
		decK, _ := DecodeRDA(snd, rcv)
		decK1, _ := DecodeRDA(snd1, rcv1)
		ApplyRDACrossing(&e, decK, decK1)
		// The appliance's way: the sender's RDA over the wire (no cache),
		// then the timestamps of the lost packets on request.
		b, err := snd.AppendBinary(nil)
		if err != nil {
			t.Fatal(err)
		}
		var ws RDA
		if err := ws.UnmarshalBinary(b); err != nil {
			t.Fatal(err)
		}
		ew, stw, _ := EstimateRDA(&ws, rcv, 0)
		if len(stw.MissingSender) > 0 {
			if err := ws.AddRemoteTimestamps(snd.Cache().AppendReply(nil, stw.MissingSender), stw.MissingSender); err != nil {
				t.Fatal(err)
			}
			ew, stw, _ = EstimateRDA(&ws, rcv, 0)
		}
		ApplyRDACrossing(&ew, decK, decK1)
		if ew.Valid {
			tol := ew.MeanCINs
			if stw.Exact {
				tol = 1e-6*math.Abs(iv[0].mean) + 1
			}
			if math.Abs(ew.MeanNs-iv[0].mean) > tol || ew.Lost != iv[0].lost {
				t.Errorf("%s seed %d, over the wire: valid, mean %.1f ± %.1f (exact %v), lost %d; truth %.1f, %d (%+v)", sc.name, s, ew.MeanNs, ew.MeanCINs, stw.Exact, ew.Lost, iv[0].mean, iv[0].lost, stw)
			}
		}
		tl := tallies[sc.name]
		if tl == nil {
			tl = &tally{}
			tallies[sc.name] = tl
		}
		tl.lines++
		if !e.Valid {
			if e.Reason == "" {
				t.Errorf("%s seed %d: invalid without a reason", sc.name, s)
			}
			continue
		}
		tl.valid++
		totalValid++
		tol := e.MeanCINs
		if st.Exact {
			tol = 1e-6*math.Abs(iv[0].mean) + 1
		}
		if math.Abs(e.MeanNs-iv[0].mean) > tol {
			tl.misses++
			totalMiss++
			if st.Exact {
				t.Errorf("%s seed %d: exact mean %.1f, truth %.1f (%+v)", sc.name, s, e.MeanNs, iv[0].mean, st)
			}
		}
		if e.Lost != iv[0].lost {
			tl.lostWrong++
			t.Errorf("%s seed %d: valid with lost %d, truth %d (decoded lost %d extra %d, inconsistent %d, crossed %d)", sc.name, s, e.Lost, iv[0].lost, st.Lost, st.Extra, st.Inconsistent, iv[0].crossed)
		}
	}
	for name, tl := range tallies {
		t.Logf("%-28s lines %3d valid %3d mean misses %d lost wrong %d", name, tl.lines, tl.valid, tl.misses, tl.lostWrong)
	}
	if allowed := scAllowedMisses(totalValid, DefaultConfidence); totalMiss > allowed {
		t.Errorf("%d of %d valid lines miss the true mean, more than %d", totalMiss, totalValid, allowed)
	}
}

// TestLDSScenarios: per-flow LDS lines over the same scenarios (packets
// spread over 40 flows; injected and remarked-in frames land in them too).
// Every valid flow line with exact counts has the flow's true loss, and
// every valid line holds the flow's true mean within MeanCINs (up to the
// bound's miss rate; the receiver is given the range of the delays drawn).
// Crossing packets look lost in their flow of interval k; the class's LDA
// crossing match (LDACrossing.ApplyFlows) invalidates the flow lines they
// may hit. The collision scenarios (ldsCollisionScenario) follow.
func TestLDSScenarios(t *testing.T) {
	seeds := scSeeds
	if testing.Short() {
		seeds = 60
	}
	const flows = 40
	cfg := LDSConfig{Rows: 4, Cols: 256, CellsPerFlow: 4, MaxFlows: 4 * flows}
	flowOf := func(h uint64) uint64 { return splitmix64(h%flows + 0xf10) }
	valid, lines, invalidExtras := 0, 0, 0
	crossInvalid, misses := 0, 0
	for s := 0; s < seeds; s++ {
		sc := scenarios[s%len(scenarios)]
		iv := sc.generate(uint64(s))
		snd, _ := NewLDS(cfg)
		rcv, _ := NewLDS(cfg)
		sent, recv := map[uint64]uint64{}, map[uint64]uint64{}
		for _, p := range iv[0].snd {
			snd.AddFlow(flowOf(p.h), p.h, p.ts, 0, 1, nil)
			sent[flowOf(p.h)]++
		}
		for _, p := range iv[0].rcv {
			rcv.AddFlow(flowOf(p.h), p.h, p.ts, 0, 1, nil)
			recv[flowOf(p.h)]++
		}
		// True per-flow loss (the sender's packets the network lost) and
		// mean delay (each receiver copy paired with its identity's
		// earliest unpaired sender copy), and the range of the delays.
		lost := map[uint64]uint64{}
		rcvTs := map[uint64][]uint64{}
		for _, p := range iv[0].rcv {
			rcvTs[p.h] = append(rcvTs[p.h], p.ts)
		}
		dSum, dN := map[uint64]float64{}, map[uint64]float64{}
		dMin, dMax := int64(math.MaxInt64), int64(math.MinInt64)
		for _, p := range iv[0].snd {
			if q := rcvTs[p.h]; len(q) > 0 {
				d := int64(q[0] - p.ts)
				rcvTs[p.h] = q[1:]
				dSum[flowOf(p.h)] += float64(d)
				dN[flowOf(p.h)]++
				dMin, dMax = min(dMin, d), max(dMax, d)
			} else {
				lost[flowOf(p.h)]++
			}
		}
		rcv.SetBound(LDSBound{MinDelayNs: dMin, MaxDelayNs: dMax})
		fe, err := EstimateLDSFlows(snd, rcv)
		if err != nil {
			t.Fatal(err)
		}
		// The class's LDA of intervals k and k+1 finds packets that
		// crossed the boundary; they look lost in their flows.
		var l [2][2]*LDA
		for k := range l {
			l[k] = [2]*LDA{MustNewLDA(DefaultLDAConfig()), MustNewLDA(DefaultLDAConfig())}
			for _, p := range iv[k].snd {
				l[k][0].Add(p.h, p.ts)
			}
			for _, p := range iv[k].rcv {
				l[k][1].Add(p.h, p.ts)
			}
		}
		x, err := MatchLDACrossing(l[0][0], l[0][1], l[1][0], l[1][1])
		if err != nil {
			t.Fatal(err)
		}
		valid0 := 0
		for _, f := range fe {
			if f.Valid {
				valid0++
			}
		}
		x.ApplyFlows(fe)
		for _, f := range fe {
			if f.Valid {
				valid0--
			}
		}
		crossInvalid += valid0
		// Crossing packets are delivered: not lost in truth.
		for _, f := range fe {
			lines++
			extra := recv[f.FlowHash]+lost[f.FlowHash] > sent[f.FlowHash]
			if !f.Valid {
				if extra {
					invalidExtras++
				}
				continue
			}
			valid++
			if f.CountsExact && f.Lost != lost[f.FlowHash] {
				t.Errorf("%s seed %d flow %x: valid with lost %d, truth %d (sent %d received %d)", sc.name, s, f.FlowHash, f.Lost, lost[f.FlowHash], sent[f.FlowHash], recv[f.FlowHash])
			}
			if n := dN[f.FlowHash]; n > 0 {
				if mean := dSum[f.FlowHash] / n; math.Abs(f.MeanNs-mean) > f.MeanCINs+1e-6*math.Abs(mean) {
					misses++
					t.Logf("%s seed %d flow %x: valid mean %.1f ± %.1f, truth %.1f", sc.name, s, f.FlowHash, f.MeanNs, f.MeanCINs, mean)
				}
			}
		}
	}
	t.Logf("LDS flow lines %d, valid %d (%d outside MeanCINs), invalid for extra packets %d, for crossing packets %d", lines, valid, misses, invalidExtras, crossInvalid)
	if valid < lines/5 || invalidExtras == 0 { // half the scenarios put extras in every interval
		t.Errorf("valid %d of %d, %d invalid for extras: the property holds vacuously", valid, lines, invalidExtras)
	}
	if allow := scAllowedMisses(valid, 0.98); misses > allow {
		t.Errorf("%d of %d valid flow lines miss the true mean by more than MeanCINs (allowed %d)", misses, valid, allow)
	}
	cseeds := 240
	if testing.Short() {
		cseeds = 60
	}
	var tot ldsCollisionResult
	for s := 0; s < cseeds; s++ {
		r := ldsCollisionScenario(t, uint64(s))
		tot.lines += r.lines
		tot.valid += r.valid
		tot.misses += r.misses
		tot.heavy += r.heavy
		tot.heavyValid += r.heavyValid
		tot.exact += r.exact
		tot.heavyCI = append(tot.heavyCI, r.heavyCI...)
	}
	slices.Sort(tot.heavyCI)
	q := func(p float64) float64 {
		if len(tot.heavyCI) == 0 {
			return math.NaN()
		}
		return 100 * tot.heavyCI[int(p*float64(len(tot.heavyCI)-1))]
	}
	t.Logf("collision scenarios: %d flow lines, %d valid (%d outside MeanCINs; %d with bound 0), heavy flows valid %d of %d, their MeanCINs / true mean: median %.1f %%, 90th percentile %.1f %%",
		tot.lines, tot.valid, tot.misses, tot.exact, tot.heavyValid, tot.heavy, q(0.5), q(0.9))
	if allow := scAllowedMisses(tot.valid, 0.98); tot.misses > allow {
		t.Errorf("collision scenarios: %d of %d valid flow lines miss the true mean by more than MeanCINs (allowed %d)", tot.misses, tot.valid, allow)
	}
	if tot.valid < tot.lines/4 || tot.heavyValid < tot.heavy/2 {
		t.Errorf("collision scenarios: valid %d of %d, heavy %d of %d: the property holds vacuously", tot.valid, tot.lines, tot.heavyValid, tot.heavy)
	}
}

type ldsCollisionResult struct {
	lines, valid, misses, heavy, heavyValid, exact int
	heavyCI                                        []float64 // MeanCINs / true mean of valid heavy flows
}

// ldsCollisionScenario is one interval built to defeat a per-flow mean:
// many light flows and a few heavy ones crammed into a small sketch so
// that they share cells, per-flow base delays from 5 µs to 2 ms, a queue
// that fills at a random moment and adds ~100 µs to half of the flows'
// packets after it, uniform loss, and four sketch shapes (k = 1; k = 1
// repaired with the exact lost packets; k = 4; k = 4 with sampled rows).
// One seed in four gives the receiver no delay range: its valid lines must
// then be exact (MeanCINs 0). Every valid line must hold the flow's true
// mean within MeanCINs (counted as misses; the caller allows the bound's
// miss rate over all seeds).
func ldsCollisionScenario(t *testing.T, seed uint64) ldsCollisionResult {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 0xc011))
	variant := seed % 4
	cfg := LDSConfig{Rows: 4, Cols: 48, CellsPerFlow: 1, MaxFlows: 2048}
	switch variant {
	case 2:
		cfg.Cols, cfg.CellsPerFlow = 192, 4
	case 3:
		cfg.Cols, cfg.CellsPerFlow, cfg.RowRates = 192, 4, []float64{0.05, 0.2, 0.5, 1}
	}
	if rng.IntN(2) == 0 {
		cfg.Cols *= 4 // fewer collisions
	}
	snd, rcv := mustLDS(t, cfg), mustLDS(t, cfg)
	loss := []float64{0, 0.002, 0.01}[rng.IntN(3)]
	const spanNs = 100_000_000
	t0 := uint64(ldaTraceStart)
	jumpAt := t0 + rng.Uint64N(spanNs)
	type truth struct {
		sent, recv uint64
		sum        float64
		heavy      bool
	}
	tr := map[uint64]*truth{}
	var rep LDSRepair
	rep.Complete = true
	dMin, dMax := int64(math.MaxInt64), int64(math.MinInt64)
	light, heavy := 150+rng.IntN(300), 2+rng.IntN(6)
	for f := 0; f < light+heavy; f++ {
		fh := rng.Uint64()
		x := &truth{heavy: f >= light}
		tr[fh] = x
		size := 1 + rng.IntN(30)
		if x.heavy {
			size = 500 + rng.IntN(4500)
		}
		base := 5e3 * math.Pow(400, rng.Float64()) // 5 µs … 2 ms
		queued := rng.IntN(2) == 0
		q := 100e3 * (0.5 + rng.Float64())
		for range size {
			h := rng.Uint64()
			ts := t0 + rng.Uint64N(spanNs)
			snd.AddFlow(fh, h, ts, 0, 1, nil)
			x.sent++
			if rng.Float64() < loss {
				rep.Lost = append(rep.Lost, LDSPacket{FlowHash: fh, Hash: h, Ts: ts})
				continue
			}
			d := base + rng.ExpFloat64()*0.2*base
			if queued && ts >= jumpAt {
				d += q
			}
			di := int64(d)
			rcv.AddFlow(fh, h, ts+uint64(di), 0, 1, nil)
			x.recv++
			x.sum += float64(di)
			dMin, dMax = min(dMin, di), max(dMax, di)
		}
	}
	bounded := rng.IntN(4) != 0
	if bounded {
		rcv.SetBound(LDSBound{MinDelayNs: dMin, MaxDelayNs: dMax})
	}
	var fe []FlowEstimate
	var err error
	if variant == 1 {
		fe, err = EstimateLDSFlowsRepaired(snd, rcv, rep)
	} else {
		fe, err = EstimateLDSFlows(snd, rcv)
	}
	if err != nil {
		t.Fatal(err)
	}
	var res ldsCollisionResult
	for _, f := range fe {
		x := tr[f.FlowHash]
		res.lines++
		if x.heavy {
			res.heavy++
		}
		if !f.Valid || x.recv == 0 {
			continue
		}
		res.valid++
		mean := x.sum / float64(x.recv)
		if x.heavy {
			res.heavyValid++
			res.heavyCI = append(res.heavyCI, f.MeanCINs/mean)
		}
		if !bounded && f.MeanCINs != 0 {
			t.Errorf("seed %d flow %x: valid without a delay range, yet MeanCINs %.1f", seed, f.FlowHash, f.MeanCINs)
		}
		if f.MeanCINs == 0 {
			res.exact++
		}
		if math.Abs(f.MeanNs-mean) > f.MeanCINs+1e-6*mean {
			res.misses++
			t.Logf("seed %d (variant %d, cols %d, loss %.3f) flow %x (%d of %d packets): valid mean %.1f ± %.1f, truth %.1f", seed, variant, cfg.Cols, loss, f.FlowHash, x.recv, x.sent, f.MeanNs, f.MeanCINs, mean)
		}
	}
	return res
}

// TestLDAExtraMissProb: one frame injected inside the segment (a switch's
// BPDU) in intervals with loss. The fraction of intervals in which it went
// unseen matches the mean ExtraMissProb the estimator reported, and the
// bucket masses it is built from sum to 1.
func TestLDAExtraMissProb(t *testing.T) {
	seeds := 200
	if testing.Short() {
		seeds = 60
	}
	for _, cfg := range []LDAConfig{DefaultLDAConfig(), SizeLDA(300_000, []float64{0.01}, 512)} {
		sum := 0.0
		for _, m := range cfg.bucketMass() {
			sum += m
		}
		if math.Abs(sum-1) > 1e-12 {
			t.Fatalf("%v: bucket masses sum to %v", cfg, sum)
		}
		for _, loss := range []float64{0.005, 0.05} {
			unseen, predicted := 0, 0.0
			for s := 0; s < seeds; s++ {
				iv := scenario{n: 30000, loss: loss, inject: 1}.generate(uint64(s) + 7000)
				a, b := MustNewLDA(cfg), MustNewLDA(cfg)
				for _, p := range iv[0].snd {
					a.Add(p.h, p.ts)
				}
				for _, p := range iv[0].rcv {
					b.Add(p.h, p.ts)
				}
				e, err := EstimateLDA(a, b, 0)
				if err != nil {
					t.Fatal(err)
				}
				if e.Extra == 0 {
					unseen++
					if e.Valid && e.Lost == iv[0].lost {
						t.Fatalf("seed %d: the extra frame went unseen, yet the loss is right", s)
					}
				}
				predicted += e.ExtraMissProb
			}
			p := predicted / float64(seeds)
			sd := math.Sqrt(float64(seeds) * p * (1 - p))
			t.Logf("%v, loss %.1f %%: one extra frame unseen in %d of %d intervals; mean ExtraMissProb %.3f (expects %.1f)", cfg, 100*loss, unseen, seeds, p, p*float64(seeds))
			if math.Abs(float64(unseen)-p*float64(seeds)) > 4*sd+3 {
				t.Errorf("unseen %d, ExtraMissProb predicts %.1f ± %.1f", unseen, p*float64(seeds), sd)
			}
		}
	}
}
