package synopsis

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/ldafwd/ldafwd/report"
)

// TestLDSRemoveInverse: Remove undoes Add exactly, weights and stamp
// errors included.
func TestLDSRemoveInverse(t *testing.T) {
	l := mustLDS(t, LDSConfig{Rows: 4, Cols: 97, CellsPerFlow: 3, RowRates: []float64{0.1, 0.3, 0.7, 1}})
	rng := rand.New(rand.NewPCG(1, 2))
	var ps []LDSPacket
	for range 5000 {
		p := LDSPacket{FlowHash: rng.Uint64() % 50, Hash: rng.Uint64(), Ts: ldsBaseNs + rng.Uint64()%1e9, ErrNs: rng.Uint64() % 1e5, Weight: uint32(rng.IntN(4))}
		l.Add(p.FlowHash, p.Hash, p.Ts, p.ErrNs, p.Weight)
		ps = append(ps, p)
	}
	for _, p := range ps {
		l.Remove(p)
	}
	for i, c := range l.cells {
		if c != (ldsCell{}) {
			t.Fatalf("cell %d = %+v after removing every packet", i, c)
		}
	}
}

// ldsRepairCase generates an interval of a few flows (weights 1 and 3) in
// a sketch large enough that each flow has a cell of its own, with uniform
// loss and a few packets only the receiver saw; it returns the pair, the
// repair lists and the per-flow truth.
func ldsRepairCase(t *testing.T) (s, r *LDS, rep LDSRepair, truth []ldsFlowTruth) {
	cfg := LDSConfig{Rows: 4, Cols: 1 << 14, CellsPerFlow: 1, MaxFlows: 64}
	s, r = mustLDS(t, cfg), mustLDS(t, cfg)
	rng := rand.New(rand.NewPCG(7, 8))
	truth = make([]ldsFlowTruth, 20)
	for f := range truth {
		tr := &truth[f]
		tr.hash, tr.weight = rng.Uint64(), uint32(1+2*(f%2))
		tr.key[0] = byte(f)
		mu := 50e3 * float64(1+f)
		for range 2000 {
			p := LDSPacket{FlowHash: tr.hash, Hash: rng.Uint64(), Ts: ldsBaseNs + rng.Uint64()%1e9, Weight: tr.weight}
			s.AddFlow(p.FlowHash, p.Hash, p.Ts, 0, p.Weight, &tr.key)
			tr.sent++
			if rng.Float64() < 0.01 {
				rep.Lost = append(rep.Lost, p)
				continue
			}
			d := uint64(mu * (0.5 + rng.Float64()))
			r.AddFlow(p.FlowHash, p.Hash, p.Ts+d, 0, p.Weight, &tr.key)
			tr.received++
			tr.delaySum += float64(d)
		}
	}
	// Receiver-only packets (duplicated or injected in the segment) in two
	// flows: they are not the flows' traffic and must not count.
	for i := range 6 {
		tr := &truth[i%2]
		p := LDSPacket{FlowHash: tr.hash, Hash: rng.Uint64(), Ts: ldsBaseNs + rng.Uint64()%1e9, Weight: tr.weight}
		r.AddFlow(p.FlowHash, p.Hash, p.Ts, 0, p.Weight, &tr.key)
		rep.Extra = append(rep.Extra, p)
	}
	rep.Complete = true
	return s, r, rep, truth
}

// TestLDSRepairExact: with the whole set difference, every lossy flow is
// valid again and its mean is the exact mean of its received packets (no
// collisions here), its loss the exact one; the unrepaired sketch has
// every lossy flow invalid (k = 1: a loss spoils the flow's cell in every
// row) and the sketch's extras invalidate the rest.
func TestLDSRepairExact(t *testing.T) {
	s, r, rep, truth := ldsRepairCase(t)
	plain, err := EstimateLDSFlows(s, r)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range plain {
		if f.Valid {
			t.Fatalf("unrepaired flow %x valid despite the sketch's extras", f.FlowHash)
		}
	}
	got, err := EstimateLDSFlowsRepaired(s, r, rep)
	if err != nil {
		t.Fatal(err)
	}
	byHash := map[uint64]FlowEstimate{}
	for _, f := range got {
		byHash[f.FlowHash] = f
	}
	lossy := 0
	for _, tr := range truth {
		f, ok := byHash[tr.hash]
		if !ok {
			t.Fatalf("flow %x not estimated", tr.hash)
		}
		if !f.Valid || math.Abs(f.MeanNs-tr.mean()) > 1e-9*tr.mean() {
			t.Errorf("flow %x: valid %v (%s) mean %.3f, want exact %.3f", tr.hash, f.Valid, f.Reason, f.MeanNs, tr.mean())
		}
		if !f.CountsExact || f.Sent != tr.sent || f.Lost != tr.sent-tr.received || f.RepairedLost != int(tr.sent-tr.received) {
			t.Errorf("flow %x: sent %d lost %d repaired %d, want %d %d", tr.hash, f.Sent, f.Lost, f.RepairedLost, tr.sent, tr.sent-tr.received)
		}
		if tr.sent > tr.received {
			lossy++
		}
	}
	if lossy < 15 {
		t.Fatalf("only %d lossy flows: the case tests little", lossy)
	}
	if byHash[truth[0].hash].RepairedExtra != 3 || byHash[truth[1].hash].RepairedExtra != 3 {
		t.Errorf("repaired extras %d, %d, want 3 each", byHash[truth[0].hash].RepairedExtra, byHash[truth[1].hash].RepairedExtra)
	}
}

// TestLDSRepairPartial: a repair that lists only some losses makes only
// the flows whose losses it lists usable (exact), the others stay invalid;
// one that leaves extras out leaves every flow invalid; a listed packet
// that was never sent leaves its flow invalid, not wrong.
func TestLDSRepairPartial(t *testing.T) {
	s, r, rep, truth := ldsRepairCase(t)
	even := map[uint64]bool{}
	for i, tr := range truth {
		even[tr.hash] = i%2 == 0
	}
	part := LDSRepair{Extra: rep.Extra}
	for _, p := range rep.Lost {
		if !even[p.FlowHash] {
			part.Lost = append(part.Lost, p)
		}
	}
	got, err := EstimateLDSFlowsRepaired(s, r, part)
	if err != nil {
		t.Fatal(err)
	}
	for _, tr := range truth {
		for _, f := range got {
			if f.FlowHash != tr.hash {
				continue
			}
			switch {
			case even[tr.hash] && tr.sent > tr.received:
				if f.Valid || !strings.Contains(f.Reason, "every cell") {
					t.Errorf("flow %x with unlisted losses: valid %v (%s)", tr.hash, f.Valid, f.Reason)
				}
			case !f.Valid || math.Abs(f.MeanNs-tr.mean()) > 1e-9*tr.mean():
				t.Errorf("flow %x repaired: valid %v (%s) mean %.3f, want %.3f", tr.hash, f.Valid, f.Reason, f.MeanNs, tr.mean())
			}
		}
	}

	noExtra := LDSRepair{Lost: rep.Lost[1:]}
	bogus := rep.Lost[0]
	bogus.Hash ^= 1 // a packet nobody sent
	noExtra.Lost = append(noExtra.Lost, bogus)
	got, err = EstimateLDSFlowsRepaired(s, r, noExtra)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range got {
		if f.Valid {
			t.Errorf("flow %x valid although the repair left the extras in", f.FlowHash)
		}
	}
	withExtra := LDSRepair{Lost: noExtra.Lost, Extra: rep.Extra}
	got, _ = EstimateLDSFlowsRepaired(s, r, withExtra)
	for _, f := range got {
		if f.FlowHash == bogus.FlowHash && f.Valid {
			t.Errorf("flow %x valid after a wrong repair (mean %.3f)", f.FlowHash, f.MeanNs)
		}
	}
}

// TestLDSRemoveFolded: on a copy folded to fewer columns (what a budget
// ships), Remove takes a packet out of the folded cell that merged its
// recorded cell: removing packets from the recorded sketch and folding
// gives the same cells as folding and removing.
func TestLDSRemoveFolded(t *testing.T) {
	l := mustLDS(t, LDSConfig{Rows: 3, Cols: 1 << 10, CellsPerFlow: 4})
	rng := rand.New(rand.NewPCG(3, 4))
	var ps []LDSPacket
	for range 4000 {
		p := LDSPacket{FlowHash: rng.Uint64() % 300, Hash: rng.Uint64(), Ts: ldsBaseNs + rng.Uint64()%1e9, Weight: uint32(rng.IntN(3))}
		l.Add(p.FlowHash, p.Hash, p.Ts, 0, p.Weight)
		ps = append(ps, p)
	}
	folded, err := l.FoldCols(1 << 7)
	if err != nil {
		t.Fatal(err)
	}
	f2, err := folded.FoldCols(1 << 5) // twice: the fold shifts add up
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ps[:1000] {
		l.Remove(p)
		f2.Remove(p)
	}
	want, err := l.FoldCols(1 << 5)
	if err != nil {
		t.Fatal(err)
	}
	for i := range want.cells {
		if want.cells[i] != f2.cells[i] {
			t.Fatalf("cell %d: removed then folded %+v, folded then removed %+v", i, want.cells[i], f2.cells[i])
		}
	}
}

// TestLDSRepairLostBesideExtra: a flow that lost one packet and whose
// receiver also recorded a copy of another (the segment duplicated it) has
// as many packets at both ends: its cell counts agree, and only the
// digest shows the difference. The repair takes the lost packet out of the
// sender's sketch and the copy out of the receiver's, the cells are clean
// and the flow is valid; its loss must be the one packet it lost, not
// the lost one netted against the copy (it was 0, a valid wrong line) —
// whether the flow tables count exactly or not. Then an extra the repair
// did not list: the loss is not claimed.
func TestLDSRepairLostBesideExtra(t *testing.T) {
	for _, tc := range []struct {
		name  string
		exact bool
	}{{"exact counts", true}, {"count-min counts", false}} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := LDSConfig{Rows: 4, Cols: 1 << 12, CellsPerFlow: 1, MaxFlows: 4}
			s, r := mustLDS(t, cfg), mustLDS(t, cfg)
			var key FlowKeyBytes
			const fh = 0x1234567
			var rep LDSRepair
			var dup LDSPacket
			for i := range 20 {
				p := LDSPacket{FlowHash: fh, Hash: 0x9e3779b97f4a7c15 * uint64(i+1), Ts: ldsBaseNs + uint64(i)*1e6}
				s.AddFlow(p.FlowHash, p.Hash, p.Ts, 0, 0, &key)
				switch i {
				case 3:
					rep.Lost = append(rep.Lost, p)
					continue
				case 9:
					// The copy the segment made: the same identity, later.
					dup = p
					dup.Ts += 50_000
					r.AddFlow(dup.FlowHash, dup.Hash, dup.Ts, 0, 0, &key)
					rep.Extra = append(rep.Extra, dup)
				}
				r.AddFlow(p.FlowHash, p.Hash, p.Ts+40_000, 0, 0, &key)
			}
			if !tc.exact {
				// More flows than the tables hold: a refused flow leaves
				// every count a count-min estimate.
				for f := range 6 {
					var k FlowKeyBytes
					k[0] = byte(f + 1)
					h := uint64(0xabc0000 + f)
					s.AddFlow(h, h*31, ldsBaseNs, 0, 0, &k)
					r.AddFlow(h, h*31, ldsBaseNs+40_000, 0, 0, &k)
				}
			}
			rep.Complete = true
			flow := func(rep LDSRepair) FlowEstimate {
				t.Helper()
				got, err := EstimateLDSFlowsRepaired(s, r, rep)
				if err != nil {
					t.Fatal(err)
				}
				for _, f := range got {
					if f.FlowHash == fh {
						return f
					}
				}
				t.Fatal("flow not estimated")
				return FlowEstimate{}
			}
			f := flow(rep)
			if f.CountsExact != tc.exact {
				t.Fatalf("counts exact %v, want %v", f.CountsExact, tc.exact)
			}
			if !f.Valid || f.Sent != 20 || f.Lost != 1 || f.Received != 19 || f.RepairedLost != 1 || f.RepairedExtra != 1 {
				t.Errorf("valid %v (%s) sent %d received %d lost %d repaired %d+%d, want valid 20 19 1 1+1",
					f.Valid, f.Reason, f.Sent, f.Received, f.Lost, f.RepairedLost, f.RepairedExtra)
			}
			if math.Abs(f.MeanNs-40_000) > 1e-6 {
				t.Errorf("mean %.3f, want 40000", f.MeanNs)
			}

			// A second extra, injected and not listed: the receiver
			// holds 21 of the flow, the repair names one.
			inj := LDSPacket{FlowHash: fh, Hash: 0x5151, Ts: ldsBaseNs + 7e6}
			r.AddFlow(inj.FlowHash, inj.Hash, inj.Ts, 0, 0, &key)
			rep.Complete = false
			if f := flow(rep); f.Valid && f.Lost != 1 {
				t.Errorf("an unlisted extra: valid with lost %d, true 1", f.Lost)
			}
		})
	}
}

// TestLDSRepairUnlistedExtras: with exact counts, extras the repair did
// not list (a partial repair) and that no sampled row holds leave the
// flow's cells clean, but the receiver's table counts them: after the
// listed extra comes off it still holds more of the flow than was sent.
// The loss is then not claimed (it was clipped to 0, truth 1, on a valid
// line).
func TestLDSRepairUnlistedExtras(t *testing.T) {
	cfg := LDSConfig{Rows: 4, Cols: 1 << 12, CellsPerFlow: 1, MaxFlows: 4, RowRates: []float64{0.5, 0.5, 0.5, 0.5}}
	s, r := mustLDS(t, cfg), mustLDS(t, cfg)
	r.SetBound(LDSBound{MinDelayNs: 30_000, MaxDelayNs: 50_000})
	var key FlowKeyBytes
	const fh = 0x7654321
	var rep LDSRepair
	for i := range 40 {
		p := LDSPacket{FlowHash: fh, Hash: 0x9e3779b97f4a7c15 * uint64(i+1), Ts: ldsBaseNs + uint64(i)*1e6}
		s.AddFlow(p.FlowHash, p.Hash, p.Ts, 0, 0, &key)
		switch i {
		case 3:
			rep.Lost = append(rep.Lost, p)
			continue
		case 9:
			dup := p
			dup.Ts += 45_000
			r.AddFlow(dup.FlowHash, dup.Hash, dup.Ts, 0, 0, &key)
			rep.Extra = append(rep.Extra, dup)
		}
		r.AddFlow(p.FlowHash, p.Hash, p.Ts+40_000, 0, 0, &key)
	}
	// Two injected packets no row samples: only the table sees them.
	injected := 0
	for h := uint64(1); injected < 2; h++ {
		px0 := Remix(h, SaltLDSCell)
		in := false
		for row := 0; row < r.rows; row++ {
			in = in || ldsRowHash(px0, row)>>32 < r.thr[row]
		}
		if !in {
			r.AddFlow(fh, h, ldsBaseNs+5e6, 0, 0, &key)
			injected++
		}
	}
	got, err := EstimateLDSFlowsRepaired(s, r, rep)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range got {
		if f.FlowHash != fh {
			continue
		}
		if !f.CountsExact || f.HeldReceived != 42 {
			t.Fatalf("counts exact %v, held received %d: want true, 42", f.CountsExact, f.HeldReceived)
		}
		if (f.Valid || f.Code.Scope()&report.ScopeLoss == 0) && f.Lost != 1 {
			t.Errorf("loss claimed (valid %v, %s) as %d, true 1", f.Valid, f.Code, f.Lost)
		}
		if f.Valid || f.Code != report.Extras {
			t.Errorf("valid %v code %s (%s), want extras", f.Valid, f.Code, f.Reason)
		}
		return
	}
	t.Fatal("flow not estimated")
}
