package synopsis

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
)

// filledLDAPair returns a sender/receiver pair fed a lossy trace.
func filledLDAPair(t testing.TB, cfg LDAConfig, n int, loss float64, dm delayModel) (*LDA, *LDA, ldaTruth) {
	a, b := MustNewLDA(cfg), MustNewLDA(cfg)
	tr := genTrace(uint64(n)^0x5eed, n, loss, dm, []*LDA{a}, []*LDA{b})
	return a, b, tr
}

func TestLDABinaryRoundTrip(t *testing.T) {
	for _, cfg := range []LDAConfig{DefaultLDAConfig(), {Banks: []BankConfig{{512, 7}, {512, 11}}, Digest: true}, {Banks: []BankConfig{{2, 0}}}} {
		a, b, tr := filledLDAPair(t, cfg, 200_000, 0.01, weibullDelay(50_000, 0.7))
		var decoded [2]*LDA
		for k, l := range []*LDA{a, b} {
			enc, err := l.AppendBinary([]byte("prefix"))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.HasPrefix(enc, []byte("prefix")) {
				t.Fatal("AppendBinary dropped the prefix")
			}
			decoded[k] = &LDA{}
			if err := decoded[k].UnmarshalBinary(enc[6:]); err != nil {
				t.Fatal(err)
			}
			if !decoded[k].equalState(l) {
				t.Fatalf("%v: round trip changed the LDA", cfg)
			}
			re, _ := decoded[k].MarshalBinary()
			if !bytes.Equal(re, enc[6:]) {
				t.Fatal("re-encoding differs")
			}
		}
		// Estimates after the round trip are the same, and still right.
		e1, _ := EstimateLDA(a, b, 0.98)
		e2, _ := EstimateLDA(decoded[0], decoded[1], 0.98)
		if e1 != e2 {
			t.Fatalf("estimate changed by round trip:\n%+v\n%+v", e1, e2)
		}
		checkLDAEstimate(t, e2, tr)
		// Decoded LDAs keep working: Add lands where it did before.
		decoded[0].Add(42, 42)
		a.Add(42, 42)
		if !decoded[0].equalState(a) {
			t.Fatal("decoded LDA records differently")
		}
	}
}

// ldaBadEncodings are malformed inputs for UnmarshalBinary; they also seed
// the fuzzer.
func ldaBadEncodings() map[string][]byte {
	good, _ := MustNewLDA(LDAConfig{Banks: []BankConfig{{2, 0}, {4, 3}}}).AppendBinary(nil)
	mod := func(f func(b []byte) []byte) []byte { return f(append([]byte(nil), good...)) }
	return map[string][]byte{
		"empty":           {},
		"magic only":      []byte("LDA"),
		"wrong magic":     mod(func(b []byte) []byte { b[0] = 'X'; return b }),
		"version 1 (xor)": mod(func(b []byte) []byte { b[3] = 1; return b }),
		"version 3":       mod(func(b []byte) []byte { b[3] = 3; return b }),
		"unknown flag":    mod(func(b []byte) []byte { b[4] = 0x80; return b }),
		"zero banks":      mod(func(b []byte) []byte { b[5] = 0; return b }),
		"17 banks":        mod(func(b []byte) []byte { b[5] = 17; return b }),
		"rows 2^0":        mod(func(b []byte) []byte { b[6] = 0; return b }),
		"rows 2^31":       mod(func(b []byte) []byte { b[6] = 31; return b }),
		"same sampling":   mod(func(b []byte) []byte { b[9] = 0; return b }),
		"sampling 200":    mod(func(b []byte) []byte { b[7] = 200; return b }),
		"truncated":       good[:len(good)-1],
		"trailing":        append(append([]byte(nil), good...), 0),
		"huge rows":       []byte{'L', 'D', 'A', ldaVersion, 0, 1, 20, 0, 0},
		"counts>offered":  mod(func(b []byte) []byte { b[11] = 5; return b }),
		"bad varint":      append([]byte{'L', 'D', 'A', ldaVersion, 0, 1, 1, 0}, bytes.Repeat([]byte{0xff}, 11)...),
	}
}

func TestLDAUnmarshalBad(t *testing.T) {
	for name, b := range ldaBadEncodings() {
		t.Run(name, func(t *testing.T) {
			l := MustNewLDA(DefaultLDAConfig())
			l.Add(7, 7)
			before := l.Clone()
			err := l.UnmarshalBinary(b)
			if !errors.Is(err, ErrBadEncoding) {
				t.Fatalf("err = %v, want ErrBadEncoding", err)
			}
			if !l.equalState(before) {
				t.Fatal("failed UnmarshalBinary changed the receiver")
			}
		})
	}
}

// FuzzLDAUnmarshalBinary: arbitrary bytes never panic; whatever decodes
// re-encodes to bytes that decode to the same LDA, accepts Add, and can be
// estimated against itself and a fresh LDA without panicking.
func FuzzLDAUnmarshalBinary(f *testing.F) {
	for _, b := range ldaBadEncodings() {
		f.Add(b)
	}
	for _, cfg := range []LDAConfig{{Banks: []BankConfig{{4, 0}}}, {Banks: []BankConfig{{2, 0}, {8, 2}}, Digest: true}, {Banks: []BankConfig{{2, 1}}, Digest: true}} {
		a, _, _ := filledLDAPair(f, cfg, 100, 0.1, expDelay(1000))
		b, _ := a.AppendBinary(nil)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var l LDA
		if err := l.UnmarshalBinary(b); err != nil {
			if !errors.Is(err, ErrBadEncoding) {
				t.Fatalf("error %v does not wrap ErrBadEncoding", err)
			}
			return
		}
		re, err := l.AppendBinary(nil)
		if err != nil {
			t.Fatal(err)
		}
		var l2 LDA
		if err := l2.UnmarshalBinary(re); err != nil || !l2.equalState(&l) {
			t.Fatalf("round trip: err %v", err)
		}
		if l.Sampled() > l.Count() {
			t.Fatal("decoded more sampled packets than offered")
		}
		for _, e := range []func() (Estimate, error){
			func() (Estimate, error) { return EstimateLDA(&l, &l2, 0.98) },
			func() (Estimate, error) { return EstimateLDA(&l, MustNewLDA(l.Config()), 0.98) },
			func() (Estimate, error) { return EstimateLDA(MustNewLDA(l.Config()), &l, 0.98) },
		} {
			est, err := e()
			if err != nil {
				t.Fatal(err)
			}
			checkLDAFinite(t, est)
		}
		l.Add(0xdeadbeef, 1)
	})
}

// TestLDACompactMatchesFull: within the bounds, estimating from the compact
// encoding gives exactly the estimate from the full sender LDA.
func TestLDACompactMatchesFull(t *testing.T) {
	dig := DefaultLDAConfig()
	dig.Digest = true
	for _, cfg := range []LDAConfig{DefaultLDAConfig(), dig, SizeLDA(1e6, []float64{0.005, 0.1}, 1024)} {
		for _, loss := range []float64{0, 0.001, 0.05} {
			for _, dm := range []delayModel{weibullDelay(50_000, 0.6), offsetDelay(400_000, 20_000)} {
				t.Run(fmt.Sprintf("%v/%g/%s", cfg, loss, dm.name), func(t *testing.T) {
					n := 300_000
					if testing.Short() {
						n = 50_000
					}
					a, b, tr := filledLDAPair(t, cfg, n, loss, dm)
					full, _, _ := EstimateLDADetailed(a, b, 0.98)
					for _, res := range []uint64{0, 1, 64} {
						bounds := DefaultCompactBounds()
						bounds.MeanResolutionNs = res
						if dm.name[0] == 'w' {
							bounds.MaxDelayNs = 50 << 20 // Weibull β=0.6 has a long tail
						}
						enc, err := a.AppendCompact(nil, bounds)
						if err != nil {
							t.Fatal(err)
						}
						var c CompactLDA
						if err := c.UnmarshalBinary(enc); err != nil {
							t.Fatal(err)
						}
						if !cfg.Digest {
							bounds.DigestBits = 0 // nothing to send
						}
						if c.Bounds() != bounds {
							t.Fatalf("bounds %+v, want %+v", c.Bounds(), bounds)
						}
						re, _ := c.AppendBinary(nil)
						if !bytes.Equal(re, enc) {
							t.Fatal("compact re-encoding differs")
						}
						comp, d, err := EstimateLDACompactDetailed(&c, b, 0.98)
						if err != nil {
							t.Fatal(err)
						}
						if d.ImplausibleBuckets != 0 {
							t.Fatalf("resolution %d: %d implausible buckets", res, d.ImplausibleBuckets)
						}
						if res == 0 && full != comp {
							t.Fatalf("exact compact estimate differs:\nfull    %+v\ncompact %+v", full, comp)
						}
						// Rounding moves the mean by at most the resolution and
						// widens the bound by it; counts and samples are exact.
						if dm := math.Abs(comp.MeanNs - full.MeanNs); dm > float64(res) || (full.Valid && comp.MeanCINs < float64(res)) {
							t.Fatalf("resolution %d: mean moved %.3f ns", res, dm)
						}
						if comp.Samples != full.Samples || comp.Lost != full.Lost || comp.UsableBuckets != full.UsableBuckets || comp.Valid != full.Valid {
							t.Fatalf("resolution %d: compact %+v, full %+v", res, comp, full)
						}
						if full.Valid && relErr(comp.StddevNs, full.StddevNs) > 1e-3*float64(1+res/8) {
							t.Fatalf("resolution %d: std-dev %.1f vs %.1f", res, comp.StddevNs, full.StddevNs)
						}
						checkLDAEstimate(t, comp, tr)
						t.Logf("resolution %d ns: compact %d bytes (%.1f bits/bucket), mean moved %.3f ns", res, len(enc), float64(8*len(enc))/float64(cfg.TotalRows()), comp.MeanNs-full.MeanNs)
					}
				})
			}
		}
	}
}

// TestLDACompactAliasing: when delays exceed the stated bounds the estimate
// is invalid with the implausible buckets counted — never a wrong number.
func TestLDACompactAliasing(t *testing.T) {
	cfg := DefaultLDAConfig()
	for _, tc := range []struct {
		name   string
		dm     delayModel
		bounds CompactBounds
		want   string // the bound the reason names ("": far beyond, may alias either way)
	}{
		{"delay 20ms, max 1ms", offsetDelay(20_000_000, 1000), lanBounds(), ""},
		{"delay 1.5ms, max 1ms", offsetDelay(1_500_000, 1000), lanBounds(), ReasonDelayAboveMax},
		{"delay 3ms, max 1ms", offsetDelay(3_000_000, 1000), lanBounds(), ""},
		{"negative -1ms, min -10us", offsetDelay(-1_000_000, 1000), lanBounds(), ""},
		{"negative -30us, min -10us", offsetDelay(-30_000, 1000), lanBounds(), ReasonDelayBelowMin},
		{"delay 1.5s, default max 1s", offsetDelay(1_500_000_000, 1000), DefaultCompactBounds(), ReasonDelayAboveMax},
		{"negative -30ms, default min -10ms", offsetDelay(-30_000_000, 1000), DefaultCompactBounds(), ReasonDelayBelowMin},
		{"exactly 2^k multiples", offsetDelay(2_020_000, 0), CompactBounds{MinDelayNs: 0, MaxDelayNs: 1_010_000}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b, _ := filledLDAPair(t, cfg, 100_000, 0.001, tc.dm)
			enc, err := a.AppendCompact(nil, tc.bounds)
			if err != nil {
				t.Fatal(err)
			}
			var c CompactLDA
			if err := c.UnmarshalBinary(enc); err != nil {
				t.Fatal(err)
			}
			e, d, err := EstimateLDACompactDetailed(&c, b, 0.98)
			if err != nil {
				t.Fatal(err)
			}
			if e.Valid || d.ImplausibleBuckets == 0 {
				t.Fatalf("out-of-bounds delays gave a valid estimate: %+v (implausible %d)", e, d.ImplausibleBuckets)
			}
			t.Logf("%d implausible buckets (%d below the minimum): %s", d.ImplausibleBuckets, d.BelowMinBuckets, e.Reason)
			if other := map[string]string{ReasonDelayAboveMax: ReasonDelayBelowMin, ReasonDelayBelowMin: ReasonDelayAboveMax}[tc.want]; tc.want != "" &&
				(!strings.Contains(e.Reason, tc.want) || strings.Contains(e.Reason, other)) {
				t.Errorf("reason %q does not name %q alone", e.Reason, tc.want)
			}
		})
	}
}

// lanBounds are compact bounds for a LAN segment: −10 µs … 1 ms, 1 ns
// resolution, 16 digest bits (DefaultCompactBounds carries −10 ms … 1 s).
func lanBounds() CompactBounds {
	return CompactBounds{MinDelayNs: -10_000, MaxDelayNs: 1_000_000, MeanResolutionNs: 1, DigestBits: 16}
}

// TestLDACompactDefaultRange: the default bounds carry delays from
// microseconds to most of a second, and a negative clock offset of a few
// ms, and the compact estimate is the full encoding's to within the 1 ns
// resolution — microsecond delays lose nothing to the 1 s range.
func TestLDACompactDefaultRange(t *testing.T) {
	cfg := DefaultLDAConfig()
	cfg.Digest = true
	for _, dm := range []delayModel{offsetDelay(5_000, 2_000), offsetDelay(300_000_000, 50_000_000), offsetDelay(-5_000_000, 100_000), weibullDelay(40_000_000, 1)} {
		t.Run(dm.name, func(t *testing.T) {
			a, b, tr := filledLDAPair(t, cfg, 100_000, 0.001, dm)
			full, _, _ := EstimateLDADetailed(a, b, 0.98)
			enc, err := a.AppendCompact(nil, DefaultCompactBounds())
			if err != nil {
				t.Fatal(err)
			}
			var c CompactLDA
			if err := c.UnmarshalBinary(enc); err != nil {
				t.Fatal(err)
			}
			e, d, err := EstimateLDACompactDetailed(&c, b, 0.98)
			if err != nil {
				t.Fatal(err)
			}
			if !e.Valid || d.ImplausibleBuckets > 0 {
				t.Fatalf("invalid: %s (%d implausible buckets)", e.Reason, d.ImplausibleBuckets)
			}
			if math.Abs(e.MeanNs-full.MeanNs) > 1 || e.MeanCINs-full.MeanCINs > 1+1e-5*full.MeanCINs { // float rounding of large sums
				t.Errorf("compact mean %.3f ± %.3f, full %.3f ± %.3f: more than the 1 ns resolution apart", e.MeanNs, e.MeanCINs, full.MeanNs, full.MeanCINs)
			}
			if math.Abs(e.MeanNs-tr.meanNs) > e.MeanCINs {
				t.Errorf("mean %.1f ± %.1f misses the true %.1f", e.MeanNs, e.MeanCINs, tr.meanNs)
			}
			if d.MinMeanNs > tr.meanNs || d.MaxMeanNs < tr.meanNs || d.MinMeanNs >= d.MaxMeanNs {
				t.Errorf("bucket means %.0f … %.0f do not straddle the true mean %.0f", d.MinMeanNs, d.MaxMeanNs, tr.meanNs)
			}
			t.Logf("%d bytes; mean %.1f ± %.1f ns (true %.1f); bucket means %.0f … %.0f ns", len(enc), e.MeanNs, e.MeanCINs, tr.meanNs, d.MinMeanNs, d.MaxMeanNs)
		})
	}
}

// TestLDACompactSize measures the compact encoding of 1024 buckets at
// realistic counts: without digests it stays within 36 kbit per interval
// (half the paper's 1024 × 72 bit); the digests add DigestBits (16) per
// non-empty bucket on top, at most 16 × 1024 bits.
func TestLDACompactSize(t *testing.T) {
	const budgetBits = 36_000
	for _, tc := range []struct {
		name string
		cfg  LDAConfig
		n    int
		loss float64
		dm   delayModel
	}{
		{"default 100k pkts", DefaultLDAConfig(), 100_000, 0.001, weibullDelay(50_000, 0.7)},
		{"default 1M pkts", DefaultLDAConfig(), 1_000_000, 0.001, weibullDelay(50_000, 0.7)},
		{"default 1M pkts 5% loss", DefaultLDAConfig(), 1_000_000, 0.05, weibullDelay(50_000, 0.7)},
		{"paper 2x512 5M pkts", SizeLDA(5_000_000, []float64{0.005, 0.1}, 1024), 5_000_000, 0.005, weibullDelay(200, 0.6)},
		{"default 10M pkts", DefaultLDAConfig(), 10_000_000, 0.001, weibullDelay(50_000, 0.7)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if testing.Short() && tc.n > 1_000_000 {
				t.Skip("large trace")
			}
			a, _, _ := filledLDAPair(t, tc.cfg, tc.n, tc.loss, tc.dm)
			full, _ := a.AppendBinary(nil)
			exact := lanBounds()
			exact.MeanResolutionNs = 0
			for _, bounds := range []CompactBounds{exact, lanBounds(), DefaultCompactBounds()} {
				enc, err := a.AppendCompact(nil, bounds)
				if err != nil {
					t.Fatal(err)
				}
				t.Logf("%s, delays %d … %d ns, resolution %d ns: compact %d bits (%.1f bits/bucket); full %d bits (%.1f bits/bucket)",
					tc.cfg, bounds.MinDelayNs, bounds.MaxDelayNs, bounds.MeanResolutionNs, 8*len(enc), float64(8*len(enc))/float64(tc.cfg.TotalRows()), 8*len(full), float64(8*len(full))/float64(tc.cfg.TotalRows()))
				nd := bounds
				nd.DigestBits = 0
				noDig, err := a.AppendCompact(nil, nd)
				if err != nil {
					t.Fatal(err)
				}
				digBits := 8*len(enc) - 8*len(noDig)
				t.Logf("  without digests %d bits; digests cost %d bits (%.1f per bucket)", 8*len(noDig), digBits, float64(digBits)/float64(tc.cfg.TotalRows()))
				// The default 1 s span is 2^10 times the LAN's 1 ms: 10
				// bits more per non-empty bucket.
				budget := budgetBits
				if bounds.MaxDelayNs > 1_000_000 {
					budget += 10 * (tc.cfg.TotalRows() + tc.cfg.coverRows())
				}
				if bounds.MeanResolutionNs > 0 && 8*len(noDig) > budget {
					t.Errorf("compact encoding without digests %d bits > budget %d", 8*len(noDig), budget)
				}
				if maxDig := int(bounds.DigestBits)*(tc.cfg.TotalRows()+tc.cfg.coverRows()) + 8; digBits > maxDig {
					t.Errorf("digests cost %d bits > %d", digBits, maxDig)
				}
			}
		})
	}
}

func TestLDACompactBadBounds(t *testing.T) {
	l := MustNewLDA(DefaultLDAConfig())
	for _, cb := range []CompactBounds{{MinDelayNs: 5, MaxDelayNs: 5}, {MinDelayNs: 0, MaxDelayNs: 1, DigestBits: 65}, {MinDelayNs: math.MinInt64, MaxDelayNs: 1}} {
		if _, err := l.AppendCompact(nil, cb); !errors.Is(err, ErrBadConfig) {
			t.Errorf("bounds %+v: err %v", cb, err)
		}
	}
}

// ldaBadCompact are malformed compact encodings (and fuzz seeds).
func ldaBadCompact() map[string][]byte {
	l := MustNewLDA(LDAConfig{Banks: []BankConfig{{2, 0}, {4, 3}}, Digest: true})
	for i := 0; i < 20; i++ {
		l.Add(splitmix64(uint64(i)), 1000+uint64(i))
	}
	good, _ := l.AppendCompact(nil, DefaultCompactBounds())
	mod := func(f func(b []byte) []byte) []byte { return f(append([]byte(nil), good...)) }
	hdr := []byte{'L', 'D', 'C', ldaCompactVersion, 0, 1, 20, 0, 0} // 2^20 rows, offered 0
	return map[string][]byte{
		"good":            good,
		"empty":           {},
		"full magic":      mod(func(b []byte) []byte { b[2] = 'A'; return b }),
		"version 0":       mod(func(b []byte) []byte { b[3] = 0; return b }),
		"version 1 (xor)": mod(func(b []byte) []byte { b[3] = 1; return b }),
		"truncated":       good[:len(good)-1],
		"trailing":        append(append([]byte(nil), good...), 0),
		"zero span":       binary.AppendUvarint(binary.AppendVarint(append([]byte(nil), hdr...), 0), 0),
		"huge span":       binary.AppendUvarint(binary.AppendVarint(append([]byte(nil), hdr...), 0), 1<<63),
		"huge rows":       append(binary.AppendUvarint(binary.AppendVarint(append([]byte(nil), hdr...), 0), 1000), 1, 0, 0, 1),
		"count width 0":   append(binary.AppendUvarint(binary.AppendVarint(append([]byte(nil), hdr...), 0), 1000), 1, 0, 0, 0),
		"count width 65":  append(binary.AppendUvarint(binary.AppendVarint(append([]byte(nil), hdr...), 0), 1000), 1, 0, 0, 65),
		"guard 9":         append(binary.AppendUvarint(binary.AppendVarint(append([]byte(nil), hdr...), 0), 1000), 9, 0, 0, 1),
		"count overflow":  append(binary.AppendUvarint(binary.AppendVarint([]byte{'L', 'D', 'C', ldaCompactVersion, 0, 1, 1, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 1}, 0), 1000), 1, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 1, 1, 0x3),
		"digest w/o flag": append(binary.AppendUvarint(binary.AppendVarint(append([]byte(nil), hdr...), 0), 1000), 1, 8, 0, 1),
	}
}

func TestLDACompactUnmarshalBad(t *testing.T) {
	for name, b := range ldaBadCompact() {
		t.Run(name, func(t *testing.T) {
			var c CompactLDA
			err := c.UnmarshalBinary(b)
			if name == "good" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, ErrBadEncoding) {
				t.Fatalf("err = %v, want ErrBadEncoding", err)
			}
			if c.counts != nil {
				t.Fatal("failed UnmarshalBinary changed the receiver")
			}
		})
	}
}

// FuzzLDACompactUnmarshal: arbitrary bytes never panic; what decodes
// re-encodes to the same bytes and estimates against receivers without
// panicking or yielding a valid non-finite number.
func FuzzLDACompactUnmarshal(f *testing.F) {
	for _, b := range ldaBadCompact() {
		f.Add(b)
	}
	covered, _, _ := filledLDAPair(f, LDAConfig{Banks: []BankConfig{{2, 1}}, Digest: true}, 100, 0.1, expDelay(1000))
	if b, err := covered.AppendCompact(nil, DefaultCompactBounds()); err == nil {
		f.Add(b) // with cover buckets
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var c CompactLDA
		if err := c.UnmarshalBinary(b); err != nil {
			if !errors.Is(err, ErrBadEncoding) {
				t.Fatalf("error %v does not wrap ErrBadEncoding", err)
			}
			return
		}
		re, _ := c.AppendBinary(nil)
		if !bytes.Equal(re, b) {
			t.Fatalf("re-encoding differs:\n%x\n%x", b, re)
		}
		recv := MustNewLDA(c.Config())
		for i := 0; i < 64; i++ {
			recv.Add(splitmix64(uint64(i)), uint64(i)*1000)
		}
		est, err := EstimateLDACompact(&c, recv, 0.98)
		if err != nil {
			t.Fatal(err)
		}
		checkLDAFinite(t, est)
		_ = c.Bounds()
		_ = c.BucketCount(0, 0)
		// A forged encoding folds like any other (the receiver folds to the
		// shape it carries; the crossing check folds senders' copies):
		// halved rows, counts preserved, never a panic.
		half := c.Config()
		for j := range half.Banks {
			half.Banks[j].Rows = max(2, half.Banks[j].Rows/2)
		}
		fc, err := c.Fold(half)
		if err != nil {
			t.Fatalf("fold to %v: %v", half, err)
		}
		var before, after uint64
		for _, n := range c.counts {
			before += n
		}
		for _, n := range fc.counts {
			after += n
		}
		if before != after {
			t.Fatalf("fold changed the packet count: %d → %d", before, after)
		}
		if fr, err := recv.Fold(half); err != nil || fr.Count() != recv.Count() {
			t.Fatalf("receiver fold: %v", err)
		}
	})
}

// checkLDAFinite: reports are JSON, which has no NaN or Inf; every float
// of every estimate, valid or not, must be finite.
func checkLDAFinite(t *testing.T, e Estimate) {
	t.Helper()
	for _, v := range []float64{e.MeanNs, e.StddevNs, e.MeanCINs, e.Conf} {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			t.Fatalf("non-finite number in estimate %+v", e)
		}
	}
}

func TestLDABadConfidence(t *testing.T) {
	a, b, _ := filledLDAPair(t, DefaultLDAConfig(), 10_000, 0.001, expDelay(1000))
	for _, conf := range []float64{-1, 1, 2, math.NaN(), math.Inf(1)} {
		e, err := EstimateLDA(a, b, conf)
		if err != nil {
			t.Fatal(err)
		}
		if e.Valid || e.Reason == "" || e.MeanCINs != 0 {
			t.Fatalf("conf %v: %+v", conf, e)
		}
		checkLDAFinite(t, e)
	}
	e, _ := EstimateLDA(a, b, 0)
	if e.Conf != DefaultConfidence || !e.Valid {
		t.Fatalf("conf 0: %+v", e)
	}
}
