package synopsis

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestRDAMeanExactFromOneBank: one lost packet whose timestamp is not
// known (no cache) damages its cell in every bank. Where it is alone in
// its cell in bank 0 but shares it with matched packets in the others,
// bank 0's usable cells hold every matched packet: MeanCINs is 0, so the
// mean must be the exact one, not a pool of bank 0's full mean with the
// other banks' partial ones. Held against the mean computed directly.
//
// With the lost packet sharing its cell in every bank no bank is exact:
// the pooled mean must then hold its (non-zero) bound.
func TestRDAMeanExactFromOneBank(t *testing.T) {
	for _, alone := range []bool{true, false} {
		rdaOneLost(t, alone)
	}
}

func rdaOneLost(t *testing.T, alone bool) {
	cfg := RDAConfig{Banks: 3, Cells: 256}
	rng := rand.New(rand.NewPCG(7, 9))
	misses := 0
	for trial := 0; trial < 20; trial++ {
		snd, rcv := MustNewRDA(cfg), MustNewRDA(cfg)
		const n = 300
		var sum float64
		var ids []uint64
		for i := 0; i < n; i++ {
			id := rng.Uint64() | 1
			ts := uint64(1_000_000 + i*1000)
			d := uint64(1000 + rng.IntN(400_000)) // heavy spread: partial means differ
			snd.Add(id, ts)
			rcv.Add(id, ts+d)
			sum += float64(d)
			ids = append(ids, id)
		}
		// A lost packet alone in its bank-0 cell, sharing the others'.
		used := map[int]bool{}
		for _, id := range ids {
			for b := 0; b < cfg.Banks; b++ {
				used[snd.cellIndex(id, b)] = true
			}
		}
		var lost uint64
		for lost == 0 {
			c := rng.Uint64() | 1
			if used[snd.cellIndex(c, 0)] != alone && used[snd.cellIndex(c, 1)] && used[snd.cellIndex(c, 2)] {
				lost = c
			}
		}
		snd.Add(lost, 5_000_000)
		e, st, err := EstimateRDA(snd, rcv, 0.98)
		if err != nil {
			t.Fatal(err)
		}
		want := sum / n
		if !e.Valid || e.Lost != 1 || st.Unrepaired != 1 {
			t.Fatalf("trial %d: valid %v lost %d unrepaired %d (%s)", trial, e.Valid, e.Lost, st.Unrepaired, e.Reason)
		}
		if e.MeanCINs == 0 && math.Abs(e.MeanNs-want) > 1e-6*want {
			t.Errorf("trial %d: mean %.3f with bound 0, true %.3f", trial, e.MeanNs, want)
		}
		if st.MeanExact != alone || (e.MeanCINs == 0) != alone {
			t.Errorf("lost packet alone in a cell %v, trial %d: mean exact %v, bound %.1f, samples %d of %d", alone, trial, st.MeanExact, e.MeanCINs, e.Samples, n)
		}
		if math.Abs(e.MeanNs-want) > e.MeanCINs+1e-6*want {
			t.Logf("lost packet alone in a cell %v, trial %d: mean %.3f ± %.3f, true %.3f", alone, trial, e.MeanNs, e.MeanCINs, want)
			misses++
		}
	}
	// 98 % bounds: a miss in 20 is possible, more is not (the bound is
	// conservative: the pooled error averages the banks').
	if alone && misses > 0 || misses > 1 {
		t.Errorf("lost packet alone in a cell %v: %d of 20 means outside their bound", alone, misses)
	}
}
