package synopsis

import (
	"errors"
	"math"
	"slices"
	"testing"
)

// rdaRand is splitmix64 as a tiny deterministic generator for the RDA tests.
type rdaRand uint64

func (r *rdaRand) next() uint64 {
	*r += 0x9e3779b97f4a7c15
	z := uint64(*r)
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

func (r *rdaRand) float() float64 { return float64(r.next()>>11) / (1 << 53) }

// rdaScenario describes one interval: n packets sent, some lost, some
// extra at the receiver (reordered in from the previous interval), some
// rewritten in transit (a different identity at the receiver).
type rdaScenario struct {
	n, lost, extra, rewritten int
	baseDelayNs, jitterNs     float64 // delay = base + Exp(jitter)
}

// rdaTruth is the exact answer, from the per-packet timestamps.
type rdaTruth struct {
	lost, extra      []uint64 // sorted identities
	meanNs, stddevNs float64
	matched          int
	sent, received   int
}

// rdaRun fills sender and receiver (each may be a list of shards; packet i
// goes to shard i mod len) and returns the truth.
func rdaRun(seed uint64, sc rdaScenario, senders, receivers []*RDA) rdaTruth {
	rng := rdaRand(seed)
	var tr rdaTruth
	const t0 = 1_763_700_000_000_000_000 // ns since the epoch: sums wrap
	drop := map[int]bool{}
	for len(drop) < sc.lost+sc.rewritten {
		drop[int(rng.next()%uint64(sc.n))] = true
	}
	rewrite := map[int]bool{}
	for i := range drop {
		if len(rewrite) == sc.rewritten {
			break
		}
		rewrite[i] = true
	}
	var sum, sum2 float64
	for i := 0; i < sc.n; i++ {
		h := rng.next()
		ts := uint64(t0 + int64(i)*1000 + int64(rng.next()%500))
		d := sc.baseDelayNs - sc.jitterNs*math.Log(1-rng.float())
		tr.sent++
		senders[i%len(senders)].Add(h, ts)
		tsR := ts + uint64(d)
		switch {
		case rewrite[i]:
			h2 := rng.next()
			tr.lost = append(tr.lost, h)
			tr.extra = append(tr.extra, h2)
			receivers[i%len(receivers)].Add(h2, tsR)
			tr.received++
		case drop[i]:
			tr.lost = append(tr.lost, h)
		default:
			receivers[i%len(receivers)].Add(h, tsR)
			tr.received++
			dd := float64(uint64(d))
			sum += dd
			sum2 += dd * dd
			tr.matched++
		}
	}
	for j := 0; j < sc.extra; j++ {
		h := rng.next()
		tr.extra = append(tr.extra, h)
		receivers[j%len(receivers)].Add(h, uint64(t0-int64(j)*700))
		tr.received++
	}
	slices.Sort(tr.lost)
	slices.Sort(tr.extra)
	tr.meanNs = sum / float64(tr.matched)
	tr.stddevNs = math.Sqrt(math.Max(0, sum2/float64(tr.matched)-tr.meanNs*tr.meanNs))
	return tr
}

func rdaPair(t testing.TB, cfg RDAConfig) (*RDA, *RDA) {
	t.Helper()
	s, err := NewRDA(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewRDA(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s, r
}

func rdaRelErr(est, truth float64) float64 { return math.Abs(est-truth) / math.Abs(truth) }

func sortedCopy(x []uint64) []uint64 {
	y := slices.Clone(x)
	slices.Sort(y)
	return y
}

// checkRDAExact asserts the within-capacity promise: exact mean, exact
// lost and extra sets, exact loss.
func checkRDAExact(t *testing.T, s, r *RDA, tr rdaTruth) (Estimate, RDAStats) {
	t.Helper()
	e, st, err := EstimateRDA(s, r, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !e.Valid || !st.Exact {
		t.Fatalf("not valid/exact: %+v\n%+v", e, st)
	}
	if re := rdaRelErr(e.MeanNs, tr.meanNs); re > 1e-9 {
		t.Errorf("mean %v, truth %v: rel err %.3g > 1e-9", e.MeanNs, tr.meanNs, re)
	}
	if e.MeanCINs != 0 {
		t.Errorf("exact mean with CI %v", e.MeanCINs)
	}
	dec, _ := DecodeRDA(s, r)
	if got := sortedCopy(dec.Lost); !slices.Equal(got, tr.lost) {
		t.Errorf("lost set: got %d ids, want %d (equal=%v)", len(got), len(tr.lost), slices.Equal(got, tr.lost))
	}
	if got := sortedCopy(dec.Extra); !slices.Equal(got, tr.extra) {
		t.Errorf("extra set: got %d ids, want %d", len(got), len(tr.extra))
	}
	if e.Lost != uint64(len(tr.lost)) || e.Sent != uint64(tr.sent) || e.Received != uint64(tr.received) {
		t.Errorf("sent/received/lost %d/%d/%d, want %d/%d/%d", e.Sent, e.Received, e.Lost, tr.sent, tr.received, len(tr.lost))
	}
	if e.Samples != uint64(tr.matched) {
		t.Errorf("samples %d, want %d matched packets", e.Samples, tr.matched)
	}
	if st.Coverage != 1 || st.SetDifference != len(tr.lost)+len(tr.extra) {
		t.Errorf("coverage %v, set difference %d", st.Coverage, st.SetDifference)
	}
	return e, st
}

func TestRDAExactWithinCapacity(t *testing.T) {
	n := 60_000
	if testing.Short() {
		n = 15_000
	}
	cfgs := []RDAConfig{
		{Banks: 2, Cells: 4096, CacheBudget: 4 << 20},
		{Banks: 3, Cells: 700, CacheBudget: 4 << 20},
		{Banks: 2, Cells: 1000, CacheBudget: 4 << 20}, // not a power of two
	}
	scs := []rdaScenario{
		{n: n, baseDelayNs: 50_000, jitterNs: 20_000},
		{n: n, lost: 120, baseDelayNs: 50_000, jitterNs: 20_000},
		{n: n, extra: 60, baseDelayNs: 1_000_000, jitterNs: 10},
		{n: n, lost: 80, extra: 40, rewritten: 20, baseDelayNs: 3_000, jitterNs: 90_000},
	}
	for _, cfg := range cfgs {
		for si, sc := range scs {
			for seed := uint64(1); seed <= 3; seed++ {
				s, r := rdaPair(t, cfg)
				tr := rdaRun(seed*100+uint64(si), sc, []*RDA{s}, []*RDA{r})
				e, _ := checkRDAExact(t, s, r, tr)
				if tr.stddevNs > 1000 {
					if re := rdaRelErr(e.StddevNs, tr.stddevNs); re > 0.15 {
						t.Errorf("%v %+v: stddev %v truth %v rel err %.3g", cfg, sc, e.StddevNs, tr.stddevNs, re)
					}
				}
			}
		}
	}
}

func TestRDAAddAllocs(t *testing.T) {
	r := MustNewRDA(RDAConfig{Banks: 2, Cells: 1024, CacheBudget: TSCacheMinBudget})
	h := uint64(1)
	allocs := testing.AllocsPerRun(10_000, func() {
		h = Remix(h, 7)
		r.Add(h, h>>8)
	})
	if allocs != 0 {
		t.Fatalf("Add allocates %v per packet", allocs)
	}
	if r.Cache().Level() == 0 {
		t.Fatal("10 000 packets into 64 slots should have raised the sampling level")
	}
}

func TestRDAConfigValidate(t *testing.T) {
	bad := []RDAConfig{
		{Banks: 0, Cells: 10},
		{Banks: 17, Cells: 10},
		{Banks: 2, Cells: 1},
		{Banks: 2, Cells: RDAMaxCells + 1},
		{Banks: 16, Cells: RDAMaxCells},
		{Banks: 2, Cells: 10, CacheBudget: -1},
		{Banks: 2, Cells: 10, CacheBudget: 100},
	}
	for _, c := range bad {
		if _, err := NewRDA(c); !errors.Is(err, ErrBadConfig) {
			t.Errorf("%v: err %v, want ErrBadConfig", c, err)
		}
	}
	if err := DefaultRDAConfig().Validate(); err != nil {
		t.Fatal(err)
	}
}
