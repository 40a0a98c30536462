package synopsis

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestMicroburstDetect: 200 000 packets over 1 s with scattered random
// losses and one burst of 40 losses in a known 300 µs window; the detector
// must report that burst, within tolerance, and nothing else large.
func TestMicroburstDetect(t *testing.T) {
	const (
		burstStart = ldsBaseNs + 400_000_000 // ns
		burstEnd   = burstStart + 300_000
		meanDelay  = 50_000.0 // ns
	)
	type sets struct {
		name string
		s, r BucketSet
		add  func(sender bool, flow, h, ts uint64)
	}
	// Enough buckets that a bucket holds few packets (the slides: the
	// estimate's error is the delay spread summed over the bucket).
	ldaCfg := LDAConfig{Digest: true, Banks: []BankConfig{{Rows: 8192}, {Rows: 8192, SampleLog2: 1}, {Rows: 4096, SampleLog2: 2}, {Rows: 4096, SampleLog2: 3}}}
	ldaS, ldaR := MustNewLDA(ldaCfg), MustNewLDA(ldaCfg)
	cfg := LDSConfig{Rows: 4, Cols: 16384, CellsPerFlow: 4}
	ldsS, ldsR := mustLDS(t, cfg), mustLDS(t, cfg)
	for _, st := range []sets{
		{"lda", LDABuckets(ldaS), LDABuckets(ldaR), func(sender bool, _, h, ts uint64) {
			if sender {
				ldaS.Add(h, ts)
			} else {
				ldaR.Add(h, ts)
			}
		}},
		{"lds", ldsS, ldsR, func(sender bool, f, h, ts uint64) {
			if sender {
				ldsS.Add(f, h, ts, 0, 1)
			} else {
				ldsR.Add(f, h, ts, 0, 1)
			}
		}},
	} {
		t.Run(st.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(21, 22))
			var burstLost, lost int
			var trueBurstSum float64 // Σ (send time − burstStart) of the burst's lost packets, ns
			var delaySum float64
			var received int
			for i := range 200_000 {
				ts := ldsBaseNs + uint64(i)*5000 + rng.Uint64N(5000)
				h, flow := rng.Uint64(), rng.Uint64N(2000)
				st.add(true, flow, h, ts)
				inBurst := ts >= burstStart && ts < burstEnd
				if (inBurst && rng.Float64() < 0.7) || rng.Float64() < 5e-5 {
					lost++
					if inBurst {
						burstLost++
						trueBurstSum += float64(ts - burstStart)
					}
					continue
				}
				d := 0.5*meanDelay + rng.ExpFloat64()*0.5*meanDelay
				delaySum += d
				received++
				st.add(false, flow, h, ts+uint64(d))
			}
			losses, err := SingleLossTimes(nil, st.s, st.r, delaySum/float64(received))
			if err != nil {
				t.Fatal(err)
			}
			bursts := DetectMicrobursts(losses, 100_000, 5)
			t.Logf("%d lost (%d in the burst), %d single-loss estimates, bursts %+v", lost, burstLost, len(losses), bursts)
			if len(bursts) != 1 {
				t.Fatalf("want exactly one burst, got %d", len(bursts))
			}
			b := bursts[0]
			// Each estimate errs by the delay deviations summed over its
			// bucket's received packets: σ = σ_d·√n / estimates, with
			// σ_d = meanDelay/2 here. The burst's edges are extremes of
			// those errors, its centre an average.
			var sigma2, center float64
			in := 0
			for _, l := range losses {
				if l.SendNs >= b.StartNs && l.SendNs <= b.EndNs {
					sig := 0.5 * meanDelay * math.Sqrt(float64(l.Received)) / float64(l.Estimates)
					sigma2 += sig * sig
					center += float64(int64(l.SendNs - burstStart))
					in++
				}
			}
			sigma := math.Sqrt(sigma2 / float64(in))
			center /= float64(in)
			trueCenter := trueBurstSum / float64(burstLost)
			edgeTol := 4 * sigma
			t.Logf("burst [%d, %d] µs after its true start, centre %.1f µs (true %.1f), per-loss σ %.1f µs",
				int64(b.StartNs-burstStart)/1000, int64(b.EndNs-burstStart)/1000, center/1000, trueCenter/1000, sigma/1000)
			if math.Abs(float64(int64(b.StartNs-burstStart))) > edgeTol || math.Abs(float64(int64(b.EndNs-burstEnd))) > edgeTol {
				t.Errorf("burst edges off by more than 4σ = %.0f ns", edgeTol)
			}
			if math.Abs(center-trueCenter) > 4*sigma/math.Sqrt(float64(in)) {
				t.Errorf("burst centre %.0f ns, true %.0f ns", center, trueCenter)
			}
			if b.Losses < burstLost/2 || b.Losses > burstLost {
				t.Errorf("burst of %d losses, true %d", b.Losses, burstLost)
			}
		})
	}
}

func TestMicroburstEdges(t *testing.T) {
	if got := DetectMicrobursts(nil, 10, 0); len(got) != 0 {
		t.Fatalf("empty: %v", got)
	}
	l := []LossTime{{SendNs: 100}, {SendNs: 105}, {SendNs: 200}, {SendNs: 1000}, {SendNs: 1010}, {SendNs: 1020}}
	got := DetectMicrobursts(l, 10, 0)
	want := []Microburst{{100, 105, 2}, {1000, 1020, 3}}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("got %v, want %v", got, want)
	}
	a := LDABuckets(MustNewLDA(LDAConfig{Banks: []BankConfig{{Rows: 8}, {Rows: 8, SampleLog2: 1}}}))
	b := LDABuckets(MustNewLDA(LDAConfig{Banks: []BankConfig{{Rows: 8}}}))
	if _, err := SingleLossTimes(nil, a, b, 0); err == nil {
		t.Fatal("shape mismatch accepted")
	}
	if _, err := FindMicrobursts(a, a, math.NaN(), 1, 2); err == nil {
		t.Fatal("NaN delay accepted")
	}
	// One loss of a packet recorded in every LDS row is one loss, its
	// estimate averaged over the rows.
	s, r := mustLDS(t, LDSConfig{Rows: 4, Cols: 64}), mustLDS(t, LDSConfig{Rows: 4, Cols: 64})
	for i := range uint64(50) {
		s.Add(1, i+1, ldsBaseNs+i*1000, 0, 1)
		if i != 20 {
			r.Add(1, i+1, ldsBaseNs+i*1000+500, 0, 1)
		}
	}
	lt, err := SingleLossTimes(nil, s, r, 500)
	if err != nil || len(lt) != 1 || lt[0].Estimates != 4 || lt[0].ID != 21 || lt[0].SendNs != ldsBaseNs+20_000 {
		t.Fatalf("LDS single loss: %+v %v", lt, err)
	}
}
