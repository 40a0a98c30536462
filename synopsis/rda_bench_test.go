package synopsis

import (
	"fmt"
	"testing"
)

// BenchmarkRDAAdd: per-packet cost of Add, by banks, with and without the
// timestamp cache (16 MiB: misses the CPU caches like the real one).
func BenchmarkRDAAdd(b *testing.B) {
	for _, bc := range []struct {
		k, m, cache int
		flows       bool // the cache keeps flow hashes (the LDS is on)
	}{{2, 4096, 0, false}, {3, 2048, 0, false}, {3, 2048, 16 << 20, false}, {3, 2048, 4 << 20, false}, {3, 2048, 1 << 20, false},
		{3, 2048, 1 << 20, true}} {
		b.Run(fmt.Sprintf("banks=%d/cells=%d/cache=%dKiB/flows=%v", bc.k, bc.m, bc.cache>>10, bc.flows), func(b *testing.B) {
			r := MustNewRDA(RDAConfig{Banks: bc.k, Cells: bc.m, CacheBudget: bc.cache})
			if bc.flows {
				r.TrackFlows()
			}
			hs := make([]uint64, 1<<16)
			for i := range hs {
				hs[i] = Remix(uint64(i), 99)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				// fresh identities every round so the cache keeps inserting
				r.AddFlow(hs[i&(len(hs)-1)]^uint64(i>>16)<<1, uint64(i&1023), uint64(i))
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/pkt")
		})
	}
}

// BenchmarkRDADecode: subtract + peel time against the set difference d
// (3 banks sized for d by SizeRDA, and a fixed 3×2048).
func BenchmarkRDADecode(b *testing.B) {
	for _, d := range []int{100, 1000, 4000} {
		for _, fixed := range []bool{false, true} {
			m := DefaultRDACells
			if !fixed {
				m, _ = SizeRDA(d, 3, 0.01)
			}
			b.Run(fmt.Sprintf("d=%d/cells=%d", d, m), func(b *testing.B) {
				s := MustNewRDA(RDAConfig{Banks: 3, Cells: m})
				r := MustNewRDA(RDAConfig{Banks: 3, Cells: m})
				rng := rdaRand(uint64(d))
				for i := 0; i < 50_000; i++ {
					h := rng.next()
					s.Add(h, uint64(i))
					if i >= d {
						r.Add(h, uint64(i)+1000)
					}
				}
				b.ReportAllocs()
				b.ResetTimer()
				var dec RDADecoding
				for i := 0; i < b.N; i++ {
					dec, _ = DecodeRDA(s, r)
				}
				if len(dec.Lost) != d {
					b.Fatalf("decoded %d of %d", len(dec.Lost), d)
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1e3, "µs/decode")
			})
		}
	}
}

// BenchmarkRDAEstimate: the whole receiver-side estimate (decode, repair,
// mean, std-dev) at the default size with 1000 lost packets.
func BenchmarkRDAEstimate(b *testing.B) {
	cfg := DefaultRDAConfig()
	cfg.CacheBudget = 4 << 20
	s, r := MustNewRDA(cfg), MustNewRDA(cfg)
	rdaRun(1, rdaScenario{n: 100_000, lost: 1000, baseDelayNs: 20_000, jitterNs: 5_000}, []*RDA{s}, []*RDA{r})
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, st, _ := EstimateRDA(s, r, 0); !st.Exact {
			b.Fatal("not exact")
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1e6, "ms/interval")
}
