package synopsis

import (
	"math/rand/v2"
	"testing"
)

// TestCompactSingleLossTimes: from the sender's compact LDA the loss
// times are those SingleLossTimes finds with the sender's full LDA, up to
// the compact sums' rounding (count·MeanResolutionNs), wherever they are
// placed; with a delay span wide enough that the sums' window exceeds the
// interval every single-loss bucket is placed, with a narrow one the
// buckets of small counts are unplaced (several candidates in the
// interval), never placed wrong.
func TestCompactSingleLossTimes(t *testing.T) {
	const (
		base     = uint64(1_795_800_000_000_000_000)
		interval = uint64(1_000_000_000)
	)
	cfg := LDAConfig{Digest: true, Banks: []BankConfig{{Rows: 1024}, {Rows: 1024, SampleLog2: 2}, {Rows: 1024, SampleLog2: 4}}}
	snd, rcv := MustNewLDA(cfg), MustNewLDA(cfg)
	rng := rand.New(rand.NewPCG(5, 6))
	var delaySum float64
	var received int
	for i := range 40_000 {
		ts := base + uint64(i)*25_000 + rng.Uint64N(25_000)
		h := rng.Uint64()
		snd.Add(h, ts)
		if rng.Float64() < 0.005 {
			continue
		}
		d := 40_000 + rng.ExpFloat64()*20_000
		delaySum += d
		received++
		rcv.Add(h, ts+uint64(d))
	}
	mean := delaySum / float64(received)
	full, err := SingleLossTimes(nil, LDABuckets(snd), LDABuckets(rcv), mean)
	if err != nil {
		t.Fatal(err)
	}
	near := func(x uint64, tol uint64) bool {
		for _, f := range full {
			if x >= f.SendNs-tol && x <= f.SendNs+tol {
				return true
			}
		}
		return false
	}
	for _, c := range []struct {
		name     string
		maxDelay int64
		all      bool
	}{
		{"span 1 s", 1_000_000_000, true},
		{"span 1 ms", 1_000_000, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := DefaultCompactBounds()
			b.MaxDelayNs = c.maxDelay
			enc, err := snd.AppendCompact(nil, b)
			if err != nil {
				t.Fatal(err)
			}
			var cl CompactLDA
			if err := cl.UnmarshalBinary(enc); err != nil {
				t.Fatal(err)
			}
			got, unplaced, err := CompactSingleLossTimes(nil, &cl, rcv, mean, base-interval/50, base+interval+interval/50)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%d single-loss buckets: %d placed, %d unplaced", len(full), len(got), unplaced)
			if len(got)+unplaced != len(full) {
				t.Errorf("%d placed + %d unplaced, want %d single-loss buckets", len(got), unplaced, len(full))
			}
			if c.all && (unplaced != 0 || len(got) == 0) {
				t.Errorf("%d unplaced with a window wider than the interval", unplaced)
			}
			if !c.all && unplaced == 0 {
				t.Error("every loss placed with a window narrower than the interval: the ambiguity went untested")
			}
			for i, g := range got {
				if i > 0 && g.SendNs < got[i-1].SendNs {
					t.Fatal("not sorted by send time")
				}
				// MeanResolutionNs 1: a sum of c stamps is rounded by at
				// most c ns, and buckets here hold ≤ 200 packets.
				if !near(g.SendNs, 200) {
					t.Errorf("placed loss at %d: no full-LDA estimate within 200 ns", g.SendNs)
				}
			}
		})
	}
	var folded CompactLDA
	enc, _ := snd.AppendCompact(nil, DefaultCompactBounds())
	_ = folded.UnmarshalBinary(enc)
	if _, _, err := CompactSingleLossTimes(nil, &folded, MustNewLDA(LDAConfig{Banks: []BankConfig{{Rows: 64}}}), mean, base, base+interval); err == nil {
		t.Error("different shapes: no error")
	}
}

// FuzzCompactSingleLossTimes: the loss times of an adversarial compact
// sender copy (bit flips of a real one) against a receiver LDA: no panic,
// at most one time per bucket, sorted.
func FuzzCompactSingleLossTimes(f *testing.F) {
	estimatorSeeds(f)
	cfg := LDAConfig{Banks: []BankConfig{{Rows: 8, SampleLog2: 0}, {Rows: 8, SampleLog2: 2}}}
	bounds := CompactBounds{MinDelayNs: -1 << 20, MaxDelayNs: 1 << 20, MeanResolutionNs: 1, DigestBits: 16}
	f.Fuzz(func(t *testing.T, b []byte) {
		pk, ops := split(b)
		snd, _ := NewLDA(cfg)
		rcv, _ := NewLDA(cfg)
		fuzzPackets(pk, func(h, ts, tr uint64, s, r bool) {
			if s {
				snd.Add(h, ts)
			}
			if r {
				rcv.Add(h, tr)
			}
		})
		enc, err := snd.AppendCompact(nil, bounds)
		if err != nil {
			return
		}
		var c CompactLDA
		if c.UnmarshalBinary(flip(enc, ops)) != nil {
			return
		}
		got, unplaced, err := CompactSingleLossTimes(nil, &c, rcv, 1234.5, 1<<30, 1<<31)
		if err != nil {
			return
		}
		if len(got)+unplaced > cfg.TotalRows() {
			t.Fatalf("%d times + %d unplaced from %d buckets", len(got), unplaced, cfg.TotalRows())
		}
		for i := 1; i < len(got); i++ {
			if got[i].SendNs < got[i-1].SendNs {
				t.Fatal("not sorted")
			}
		}
	})
}
