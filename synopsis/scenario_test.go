package synopsis

import (
	"fmt"
	"math"
	"math/rand/v2"
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
			// The controller's use of the crossing match: k's loss less the
			// packets found arriving in k+1; trusted only when every extra
			// bucket of k+1 is such a packet.
			x.Apply(&e)
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
				// The one documented way: a crossing packet that shares
				// its bucket of k+1 with at least as many losses is
				// invisible there, so k counts it lost.
				tl.lostWrong++
				if lost < iv[0].lost || lost-iv[0].lost > uint64(iv[0].crossed-x.Crossed) {
					t.Errorf("%s seed %d (%v): valid with lost %d (crossed %d of %d), truth %d", name, s, cfg, lost, x.Crossed, iv[0].crossed, iv[0].lost)
				}
			}
			if iv[0].extras > 0 {
				tl.extrasValid++
			}
		}
	}
	totalValid, totalMiss, totalWrong := 0, 0, 0
	for name, tl := range tallies {
		t.Logf("%-34s lines %3d valid %3d mean misses %d lost wrong %d valid with extras %d", name, tl.lines, tl.valid, tl.misses, tl.lostWrong, tl.extrasValid)
		totalValid += tl.valid
		totalMiss += tl.misses
		totalWrong += tl.lostWrong
	}
	if totalWrong > totalValid/50+2 {
		t.Errorf("%d of %d valid lines have a loss count off by hidden crossing packets: more than 2 %%", totalWrong, totalValid)
	}
	if allowed := scAllowedMisses(totalValid, DefaultConfidence); totalMiss > allowed {
		t.Errorf("%d of %d valid lines miss the true mean, more than the %d a %.0f %% bound allows", totalMiss, totalValid, allowed, 100*DefaultConfidence)
	}
	for _, name := range []string{"clean full", "uniform 1% full", "identical 5% + loss 0.5% full", "crossing 1% + loss 0.2% full"} {
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
