package synopsis

import (
	"encoding/hex"
	"testing"
)

// goldenLDA is a fixed small LDA: two banks (2 rows at 2^0, 4 rows at
// 2^-3), digests on, a handful of packets with chosen identities, one of
// them twice (identical frames).
func goldenLDA(cfg LDAConfig) *LDA {
	l := MustNewLDA(cfg)
	for i, h := range []uint64{0x8000_0000_0000_0001, 0x0fff_0000_0000_0002, 0x0fff_0000_0000_0002, 0x0000_1234_5678_9abd, 0x4000_0000_0000_0000} {
		l.Add(h, 1_700_000_000_000_000_000+uint64(i)*1000)
	}
	return l
}

// TestLDAGoldenEncodings pins the bytes of the full and the compact
// encodings of fixed synopses, so that a change of either (digest
// function, layout, cover buckets) cannot pass unnoticed: it must come
// with a new version byte and new vectors.
func TestLDAGoldenEncodings(t *testing.T) {
	banks := LDAConfig{Banks: []BankConfig{{2, 0}, {4, 3}}, Digest: true}
	covered := LDAConfig{Banks: []BankConfig{{2, 2}}, Digest: true} // no 2^0 bank: cover buckets
	bounds := CompactBounds{MinDelayNs: -1000, MaxDelayNs: 100_000, MeanResolutionNs: 1, DigestBits: 16}
	for _, tc := range []struct {
		name    string
		cfg     LDAConfig
		compact bool
		want    string
	}{
		{"full", banks, false, goldenFull},
		{"compact", banks, true, goldenCompact},
		{"full cover", covered, false, goldenFullCover},
		{"compact cover", covered, true, goldenCompactCover},
	} {
		l := goldenLDA(tc.cfg)
		var got []byte
		var err error
		if tc.compact {
			got, err = l.AppendCompact(nil, bounds)
		} else {
			got, err = l.AppendBinary(nil)
		}
		if err != nil {
			t.Fatal(err)
		}
		if h := hex.EncodeToString(got); h != tc.want {
			t.Errorf("%s: encoding changed:\n got %s\nwant %s", tc.name, h, tc.want)
		}
	}
}

// TestDigestMix: DigestMixInverse inverts DigestMix, and the low 16 bits
// of the digests of packets sharing a bucket (same low row bits, same
// leading zeros) are spread over all 2^16 values, not pinned by the row.
func TestDigestMix(t *testing.T) {
	seen := make(map[uint64]bool)
	for i := uint64(0); i < 100_000; i++ {
		h := splitmix64(i)
		if DigestMixInverse(DigestMix(h)) != h {
			t.Fatalf("inverse of DigestMix(%#x) wrong", h)
		}
		// Same bucket in any bank of ≤ 2^20 rows: low 20 bits fixed.
		hb := h&^(1<<20-1) | 0x5a5a5
		seen[DigestMix(hb)&0xffff] = true
	}
	if len(seen) < 50_000 { // 100 000 uniform draws from 65 536 values cover ≈ 51 290 (an XOR of h: 1)
		t.Fatalf("low 16 digest bits of one bucket take only %d values", len(seen))
	}
}

// TestLDAIdenticalFramesDoNotCancel: two identical frames at the sender
// and two other identical frames at the receiver, same bucket, same count:
// an XOR digest would be 0 at both ends; the sum digest tells them apart.
func TestLDAIdenticalFramesDoNotCancel(t *testing.T) {
	cfg := LDAConfig{Banks: []BankConfig{{2, 0}}, Digest: true}
	a, b := MustNewLDA(cfg), MustNewLDA(cfg)
	for _, l := range []*LDA{a, b} {
		l.Add(0x100, 1000) // one common packet, row 0
	}
	a.Add(0x200, 1000)
	a.Add(0x200, 1001)
	b.Add(0x400, 5000)
	b.Add(0x400, 5001)
	e, d, err := EstimateLDADetailed(a, b, 0)
	if err != nil {
		t.Fatal(err)
	}
	if d.DigestMismatch != 1 || e.Valid || e.Extra != 1 || e.ExtraBuckets != 1 {
		t.Fatalf("digest mismatches %d valid %v extra %d in %d buckets: %s", d.DigestMismatch, e.Valid, e.Extra, e.ExtraBuckets, e.Reason)
	}
	if f := e.IntegrityFields(); f["extra"] != uint64(1) || f["extra_buckets"] != 1 {
		t.Fatalf("integrity fields %v", f)
	}
	if f := (Estimate{}).IntegrityFields(); f != nil {
		t.Fatalf("integrity fields of a clean estimate %v", f)
	}
}

const (
	goldenFull         = "4c4441020102010002030501a00f2a36fe9c971700000040000000400100002a36fe9c9717ac057d61b979371e000000000000000000000000000000000001b80b2a36fe9c9717e2eec5a563d3bfa502b80b546cfc392f2fb0169adde5e6b3200000000000000000000000000000000000"
	goldenCompact      = "4c44430201020100020305cf0f88950601011001010002a00f02000000c85a40dc05c5dd7517086b01"
	goldenFullCover    = "4c444102010101020502b80b546cfc392f2fb0169adde5e6b32001b80b2a36fe9c9717e2eec5a563d3bfa501000000400000004001ac057d61b979371e000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
	goldenCompactCover = "4c4443020101010205cf0f88950601011001010001dd05c25ae02e28ee1e00206b010000000000000000"
)

// TestLDACrossingMatch: three packets of interval k arrive after its end
// (in k+1), one packet of k is really lost, and k+1 has one duplicate.
// The match finds exactly the crossing packets, k's corrected loss is the
// real one, and the duplicate leaves k+1's extras unexplained.
func TestLDACrossingMatch(t *testing.T) {
	cfg := DefaultLDAConfig()
	for _, dup := range []bool{false, true} {
		sk, rk, sk1, rk1 := MustNewLDA(cfg), MustNewLDA(cfg), MustNewLDA(cfg), MustNewLDA(cfg)
		crossing := map[int]bool{10: true, 500: true, 777: true}
		for i := 0; i < 2000; i++ {
			h, ts := splitmix64(uint64(i)), uint64(ldaTraceStart)+uint64(i)*1000
			sk.Add(h, ts)
			switch {
			case crossing[i]:
				rk1.Add(h, ts+5_000_000)
			case i == 1234: // lost
			default:
				rk.Add(h, ts+30_000)
			}
			h1 := splitmix64(uint64(i) + 1<<40)
			sk1.Add(h1, ts+2_000_000_000)
			rk1.Add(h1, ts+2_000_030_000)
			if dup && i == 42 {
				rk1.Add(h1, ts+2_000_031_000)
			}
		}
		e, err := EstimateLDA(sk, rk, 0)
		if err != nil {
			t.Fatal(err)
		}
		if !e.Valid || e.Lost != 4 {
			t.Fatalf("k: valid %v lost %d, want valid with 4 (3 crossed + 1 lost): %s", e.Valid, e.Lost, e.Reason)
		}
		x, err := MatchLDACrossing(sk, rk, sk1, rk1)
		if err != nil {
			t.Fatal(err)
		}
		if x.Crossed != 3 || x.AllExtrasCrossed == dup {
			t.Fatalf("dup %v: %+v", dup, x)
		}
		x.Apply(&e)
		if e.Lost != 1 || e.Valid == dup {
			t.Fatalf("dup %v: after Apply lost %d valid %v (%s)", dup, e.Lost, e.Valid, e.Reason)
		}
		e1, _ := EstimateLDA(sk1, rk1, 0)
		if e1.Valid || e1.Extra < 3 {
			t.Fatalf("k+1 valid %v extra %d: %s", e1.Valid, e1.Extra, e1.Reason)
		}
	}
}

func TestRequireLossVerified(t *testing.T) {
	e := Estimate{Valid: true, ExtraMissProb: 0.3}
	e.RequireLossVerified(0.5)
	if !e.Valid {
		t.Fatal("invalid below the threshold")
	}
	e.RequireLossVerified(0.02)
	if e.Valid || e.Reason == "" {
		t.Fatalf("valid %v reason %q above the threshold", e.Valid, e.Reason)
	}
}

// TestLDAEarlyMatch: packets of interval k that overtook k's start marker
// reach the receiver in k-1. MatchLDACrossing with the roles turned (k's
// single losses against k-1's single extras) finds them and ApplyEarly
// takes them out of k's loss; a loss of k sharing its bucket with a loss
// of k-1 (where such a packet would leave no trace) makes k invalid.
func TestLDAEarlyMatch(t *testing.T) {
	cfg := DefaultLDAConfig()
	for _, hidden := range []bool{false, true} {
		sp, rp, sk, rk := MustNewLDA(cfg), MustNewLDA(cfg), MustNewLDA(cfg), MustNewLDA(cfg)
		early := map[int]bool{7: true, 300: true}
		var lostK uint64
		for i := 0; i < 5000; i++ {
			ts := uint64(1_000_000_000 + i*1000)
			hp := splitmix64(uint64(i) + 1<<41)
			sp.Add(hp, ts)
			rp.Add(hp, ts+30_000)
			h := splitmix64(uint64(i) + 1<<42)
			sk.Add(h, ts+1_000_000_000)
			switch {
			case early[i]:
				rp.Add(h, ts+1_000_020_000) // arrived before k's start marker
			case i == 999:
				lostK++
			default:
				rk.Add(h, ts+1_000_030_000)
			}
		}
		if hidden {
			// k-1 loses two packets in the bucket of one of k's early
			// packets: it hides there (two lost, one gained).
			row := sk.cellOf(splitmix64(7 + 1<<42))
			n := 0
			sp2, rp2 := MustNewLDA(cfg), MustNewLDA(cfg)
			for i := uint64(0); n < 2; i++ {
				h := splitmix64(i + 1<<43)
				sp2.Add(h, 5)
				if sk.cellOf(h) == row {
					n++
					continue
				}
				rp2.Add(h, 6)
			}
			if err := sp.Merge(sp2); err != nil {
				t.Fatal(err)
			}
			if err := rp.Merge(rp2); err != nil {
				t.Fatal(err)
			}
		}
		e, err := EstimateLDA(sk, rk, 0)
		if err != nil {
			t.Fatal(err)
		}
		if !e.Valid || e.Lost != lostK+2 {
			t.Fatalf("k: valid %v lost %d, want valid with %d: %s", e.Valid, e.Lost, lostK+2, e.Reason)
		}
		x, err := MatchLDACrossing(sk, rk, sp, rp)
		if err != nil {
			t.Fatal(err)
		}
		x.ApplyEarly(&e)
		switch {
		case !hidden && (x.Crossed != 2 || !e.Valid || e.Lost != lostK):
			t.Fatalf("early packets: %+v, lost %d valid %v (%s)", x, e.Lost, e.Valid, e.Reason)
		case hidden && e.Valid:
			t.Fatalf("an early packet hidden behind the previous interval's losses: %+v, lost %d still valid", x, e.Lost)
		}
	}
}
