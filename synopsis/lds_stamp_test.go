package synopsis

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestLDSFlowStampBound: one flow's packets carry a large stamp
// uncertainty (a sender whose transmit calls for it were slow, a receiver
// that polled it late), the others' none. Its StampErrNs grows, the
// others' stay 0 unless they share an averaged cell with it, and the bound
// holds the worst case: every uncertain stamp moved by its full window in
// the direction that lengthens the delay, which moves each flow's estimate
// by exactly its StampErrNs. The shifted estimate's MeanCINs still holds
// the flow's true mean. With 12 columns for 24 flows every flow collides:
// the bound is then diluted by, and spread to, the flows sharing cells,
// and still exact.
func TestLDSFlowStampBound(t *testing.T) {
	for _, cols := range []int{256, 12} {
		t.Run("", func(t *testing.T) { testLDSFlowStampBound(t, cols) })
	}
}

func testLDSFlowStampBound(t *testing.T, cols int) {
	const (
		txErr = 50_000 // ns: the slow flow's sender stamps
		rxErr = 20_000 // ns: its receiver stamps
	)
	cfg := LDSConfig{Rows: 4, Cols: cols, CellsPerFlow: 2, MaxFlows: 64}
	exactS, exactR := mustLDS(t, cfg), mustLDS(t, cfg)
	shiftS, shiftR := mustLDS(t, cfg), mustLDS(t, cfg)
	bound := LDSBound{MinDelayNs: 0, MaxDelayNs: 400_000}
	exactR.SetBound(bound)
	shiftR.SetBound(bound)
	rng := rand.New(rand.NewPCG(3, 4))
	type flowTruth struct {
		hash   uint64
		weight uint32
		sum, n float64
	}
	flows := make([]flowTruth, 24)
	slow := 5
	for f := range flows {
		ft := &flows[f]
		ft.hash, ft.weight = rng.Uint64(), uint32(1+f%3)
		key := FlowKeyBytes{byte(f)}
		mu := 20e3 * float64(1+f%7)
		var eTx, eRx uint64
		if f == slow {
			eTx, eRx = txErr, rxErr
		}
		for range 400 {
			h, ts := rng.Uint64(), ldsBaseNs+rng.Uint64()%1e9
			d := uint64(mu * (0.5 + rng.Float64()))
			exactS.AddFlow(ft.hash, h, ts, 0, ft.weight, &key)
			exactR.AddFlow(ft.hash, h, ts+d, 0, ft.weight, &key)
			// The stamps as read: the send stamp up to eTx early, the
			// receive stamp up to eRx late; here both by all of it.
			shiftS.AddFlow(ft.hash, h, ts-eTx, eTx, ft.weight, &key)
			shiftR.AddFlow(ft.hash, h, ts+d+eRx, eRx, ft.weight, &key)
			ft.sum += float64(d)
			ft.n++
		}
	}
	exact, err := EstimateLDSFlows(exactS, exactR)
	if err != nil {
		t.Fatal(err)
	}
	shifted, err := EstimateLDSFlows(shiftS, shiftR)
	if err != nil {
		t.Fatal(err)
	}
	if len(exact) != len(flows) || len(shifted) != len(flows) {
		t.Fatalf("%d and %d flows estimated, want %d", len(exact), len(shifted), len(flows))
	}
	byHash := map[uint64]int{}
	for i, f := range flows {
		byHash[f.hash] = i
	}
	clean := 0
	for i := range shifted {
		e, s := &exact[i], &shifted[i]
		f := byHash[s.FlowHash]
		if e.StampErrNs != 0 {
			t.Errorf("flow %d: exact stamps give a stamp bound of %.1f ns", f, e.StampErrNs)
		}
		if s.Valid != e.Valid {
			t.Fatalf("flow %d: valid %v with exact stamps, %v with shifted ones (%s / %s)", f, e.Valid, s.Valid, e.Reason, s.Reason)
		}
		if !s.Valid {
			continue
		}
		// Same packets, same cells: the shift is the stamps' alone, and
		// in this worst case it is the whole bound.
		moved := s.MeanNs - e.MeanNs
		if math.Abs(moved-s.StampErrNs) > 1e-6*math.Max(1, s.StampErrNs) {
			t.Errorf("flow %d: stamps moved the mean %.3f ns, bound %.3f ns", f, moved, s.StampErrNs)
		}
		if math.Abs(s.MeanCINs-e.MeanCINs-s.StampErrNs) > 1e-6*math.Max(1, s.MeanCINs) {
			t.Errorf("flow %d: MeanCINs %.1f = %.1f without stamps + %.1f stamps?", f, s.MeanCINs, e.MeanCINs, s.StampErrNs)
		}
		truth := flows[f].sum / flows[f].n
		if math.Abs(s.MeanNs-truth) > s.MeanCINs {
			t.Errorf("flow %d: mean %.1f ± %.1f ns misses the truth %.1f", f, s.MeanNs, s.MeanCINs, truth)
		}
		switch {
		case f == slow:
			// Its cells may also hold exact packets of other flows, which
			// dilute the error; never more than its own packets' windows.
			if cols == 256 && (s.TxStampErrNs != txErr || s.RxStampErrNs != rxErr) {
				t.Errorf("slow flow: sender part %.1f ns, receiver part %.1f, want %d and %d", s.TxStampErrNs, s.RxStampErrNs, txErr, rxErr)
			}
			if s.StampErrNs <= 0 || s.StampErrNs > txErr+rxErr || (cols == 256 && s.StampErrNs != txErr+rxErr) {
				t.Errorf("slow flow: stamp bound %.1f ns, want (%d, %d]", s.StampErrNs, (txErr+rxErr)/2, txErr+rxErr)
			}
		case s.StampErrNs == 0:
			clean++
		}
	}
	if cols == 256 && clean < len(flows)-4 {
		t.Errorf("only %d of %d other flows kept a stamp bound of 0: the slow flow's error spread beyond the cells it shares", clean, len(flows)-1)
	}
	t.Logf("%d columns: slow flow bound %.1f ns; %d of %d other flows unaffected", cols, shifted[slowIndex(shifted, flows[slow].hash)].StampErrNs, clean, len(flows)-1)
}

func slowIndex(fs []FlowEstimate, h uint64) int {
	for i := range fs {
		if fs[i].FlowHash == h {
			return i
		}
	}
	return 0
}
