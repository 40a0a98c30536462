package synopsis

import (
	"errors"
	"testing"
)

// foldShapes: recording configurations (with and without cover buckets)
// and smaller shapes of each.
func foldShapes() []struct{ big, small LDAConfig } {
	big := LDAConfig{Banks: []BankConfig{{Rows: 1024, SampleLog2: 0}, {Rows: 1024, SampleLog2: 2}, {Rows: 256, SampleLog2: 6}}, Digest: true}
	cover := LDAConfig{Banks: []BankConfig{{Rows: 512, SampleLog2: 1}, {Rows: 64, SampleLog2: 4}}, Digest: true}
	noDig := big.clone()
	noDig.Digest = false
	return []struct{ big, small LDAConfig }{
		{big, big.WithRows([]int{128, 1024, 2})},
		{big, big.WithRows([]int{2, 2, 2})},
		{big, big},
		{cover, cover.WithRows([]int{32, 64})},
		{noDig, noDig.WithRows([]int{256, 16, 64})},
	}
}

// TestLDAFoldEqualsSmaller: recording at a large shape and folding gives
// exactly the cells of recording at the smaller shape from the start, at
// both ends, so the estimates are equal too; folding in two steps is
// folding in one.
func TestLDAFoldEqualsSmaller(t *testing.T) {
	for i, sh := range foldShapes() {
		sb, rb := MustNewLDA(sh.big), MustNewLDA(sh.big)
		ss, rs := MustNewLDA(sh.small), MustNewLDA(sh.small)
		genTrace(uint64(10+i), 200_000, 0.01, expDelay(20_000), []*LDA{sb, ss}, []*LDA{rb, rs})
		fs, err := sb.Fold(sh.small)
		if err != nil {
			t.Fatal(err)
		}
		fr, err := rb.Fold(sh.small)
		if err != nil {
			t.Fatal(err)
		}
		if !fs.equalState(ss) || !fr.equalState(rs) {
			t.Fatalf("%v → %v: folded cells differ from recording at the small shape", sh.big, sh.small)
		}
		for j := range fs.cells { // the cover buckets' sums too
			if fs.cells[j] != ss.cells[j] {
				t.Fatalf("%v → %v: cell %d %+v, want %+v", sh.big, sh.small, j, fs.cells[j], ss.cells[j])
			}
		}
		e1, err1 := EstimateLDA(fs, fr, 0.98)
		e2, err2 := EstimateLDA(ss, rs, 0.98)
		if err1 != nil || err2 != nil || e1 != e2 {
			t.Errorf("%v → %v: estimate folded %+v (%v), small %+v (%v)", sh.big, sh.small, e1, err1, e2, err2)
		}
		// In two steps: first halfway (each bank at the geometric mean).
		mid := sh.big.clone()
		for j := range mid.Banks {
			mid.Banks[j].Rows = max(sh.small.Banks[j].Rows, mid.Banks[j].Rows/2)
		}
		m, err := sb.Fold(mid)
		if err != nil {
			t.Fatal(err)
		}
		if m2, err := m.Fold(sh.small); err != nil || !m2.equalState(ss) {
			t.Errorf("%v → %v → %v: %v, or cells differ", sh.big, mid, sh.small, err)
		}
		if sb.Count() != 200_000 || fs.Count() != sb.Count() {
			t.Errorf("count %d, folded %d", sb.Count(), fs.Count())
		}
	}
}

// TestLDACompactFoldEqualsSmaller: a compact LDA folded has the counts and
// digests of the compact encoding of the LDA recorded at the small shape;
// it has no sums, so estimating or re-encoding it is an error, while
// folding to its own shape keeps everything.
func TestLDACompactFoldEqualsSmaller(t *testing.T) {
	for i, sh := range foldShapes() {
		sb, ss := MustNewLDA(sh.big), MustNewLDA(sh.small)
		genTrace(uint64(30+i), 100_000, 0, expDelay(20_000), []*LDA{sb, ss}, nil)
		for _, dbits := range []uint8{16, 64, 5} {
			bounds := DefaultCompactBounds()
			bounds.DigestBits = dbits
			var cb, cs CompactLDA
			for _, x := range []struct {
				l *LDA
				c *CompactLDA
			}{{sb, &cb}, {ss, &cs}} {
				b, err := x.l.AppendCompact(nil, bounds)
				if err != nil {
					t.Fatal(err)
				}
				if err := x.c.UnmarshalBinary(b); err != nil {
					t.Fatal(err)
				}
			}
			f, err := cb.Fold(sh.small)
			if err != nil {
				t.Fatal(err)
			}
			if !f.cfg.equal(cs.cfg) || f.offered != cs.offered || len(f.counts) != len(cs.counts) || (f.digests == nil) != (cs.digests == nil) {
				t.Fatalf("%v → %v: folded %v %d, small %v %d", sh.big, sh.small, f.cfg, f.offered, cs.cfg, cs.offered)
			}
			for j := range f.counts {
				if f.counts[j] != cs.counts[j] || f.digests != nil && f.digests[j] != cs.digests[j] {
					t.Fatalf("%v → %v, %d digest bits: cell %d differs", sh.big, sh.small, dbits, j)
				}
			}
			if sh.big.equal(sh.small) {
				if _, err := f.AppendBinary(nil); err != nil {
					t.Errorf("folded to its own shape: %v", err)
				}
				continue
			}
			if _, err := EstimateLDACompact(f, ss, 0.98); err == nil {
				t.Error("estimating a folded compact LDA succeeded")
			}
			if _, err := f.AppendBinary(nil); err == nil {
				t.Error("re-encoding a folded compact LDA succeeded")
			}
		}
	}
}

// TestLDAFoldBad: shapes an LDA cannot fold to are errors, never a panic.
func TestLDAFoldBad(t *testing.T) {
	cfg := LDAConfig{Banks: []BankConfig{{Rows: 64, SampleLog2: 0}, {Rows: 64, SampleLog2: 3}}, Digest: true}
	l := MustNewLDA(cfg)
	l.Add(12345, 1)
	var c CompactLDA
	b, _ := l.AppendCompact(nil, DefaultCompactBounds())
	if err := c.UnmarshalBinary(b); err != nil {
		t.Fatal(err)
	}
	noDig := cfg.clone()
	noDig.Digest = false
	bad := []LDAConfig{
		cfg.WithRows([]int{128, 64}),                          // grows
		cfg.WithRows([]int{48, 64}),                           // not a power of two
		cfg.WithRows([]int{1, 64}),                            // too few
		{Banks: cfg.Banks[:1], Digest: true},                  // bank missing
		{Banks: []BankConfig{{64, 0}, {64, 4}}, Digest: true}, // other sampling
		noDig,
		{},
	}
	for _, to := range bad {
		if _, err := l.Fold(to); err == nil {
			t.Errorf("LDA folded to %v", to)
		}
		if _, err := c.Fold(to); err == nil {
			t.Errorf("compact LDA folded to %v", to)
		}
	}
	var zero CompactLDA
	if _, err := zero.Fold(cfg); err == nil {
		t.Error("zero-value compact LDA folded")
	}
	if _, err := CommonLDAConfig(cfg, noDig); !errors.Is(err, ErrConfigMismatch) {
		t.Errorf("common of digest and no digest: %v", err)
	}
	if got, err := CommonLDAConfig(cfg.WithRows([]int{8, 64}), cfg.WithRows([]int{64, 16})); err != nil || !got.equal(cfg.WithRows([]int{8, 16})) {
		t.Errorf("common shape %v, %v", got, err)
	}
}

// TestLDACrossingFoldsToCommonShape: two intervals shipped at different
// shapes (and the receiver's copies at the recording shape) match their
// crossing packets exactly as four LDAs recorded at the common shape do.
func TestLDACrossingFoldsToCommonShape(t *testing.T) {
	rec := LDAConfig{Banks: []BankConfig{{Rows: 1024, SampleLog2: 0}, {Rows: 1024, SampleLog2: 2}, {Rows: 1024, SampleLog2: 4}}, Digest: true}
	shipK := rec.WithRows([]int{256, 1024, 16})
	shipK1 := rec.WithRows([]int{1024, 64, 32})
	common := rec.WithRows([]int{256, 64, 16})
	type side struct{ s, r, sc, rc *LDA } // recorded at rec and at common
	mk := func() side {
		return side{MustNewLDA(rec), MustNewLDA(rec), MustNewLDA(common), MustNewLDA(common)}
	}
	k, k1 := mk(), mk()
	// Interval k: 2 000 packets, 10 of which arrive in k+1; 5 lost.
	// Interval k+1: 3 000 packets of its own, all arrive.
	for i := uint64(0); i < 2000; i++ {
		h, ts := splitmix64(i), 1_000_000+i*1000
		k.s.Add(h, ts)
		k.sc.Add(h, ts)
		switch {
		case i%200 == 7: // crossed
			k1.r.Add(h, ts+5000)
			k1.rc.Add(h, ts+5000)
		case i%400 == 3: // lost
		default:
			k.r.Add(h, ts+5000)
			k.rc.Add(h, ts+5000)
		}
	}
	for i := uint64(0); i < 3000; i++ {
		h, ts := splitmix64(1<<40+i), 3_000_000+i*1000
		for _, l := range []*LDA{k1.s, k1.sc, k1.r, k1.rc} {
			l.Add(h, ts+boolUint(l == k1.r || l == k1.rc)*5000)
		}
	}
	compact := func(l *LDA, to LDAConfig) *CompactLDA {
		f, err := l.Fold(to)
		if err != nil {
			t.Fatal(err)
		}
		b, err := f.AppendCompact(nil, DefaultCompactBounds())
		if err != nil {
			t.Fatal(err)
		}
		var c CompactLDA
		if err := c.UnmarshalBinary(b); err != nil {
			t.Fatal(err)
		}
		return &c
	}
	want, err := MatchLDACompactCrossing(compact(k.sc, common), k.rc, compact(k1.sc, common), k1.rc)
	if err != nil {
		t.Fatal(err)
	}
	if want.Crossed == 0 {
		t.Fatalf("reference found no crossing: %+v", want)
	}
	rk, _ := k.r.Fold(shipK)
	rk1, _ := k1.r.Fold(shipK1)
	if x, err := MatchLDACompactCrossing(compact(k.s, shipK), rk, compact(k1.s, shipK1), rk1); err != nil || x != want {
		t.Errorf("shipped shapes: %+v (%v), want %+v", x, err, want)
	}
	// The senderless check at stop: the next interval's receiver copy and
	// an empty sender at the recording shape; the common shape is k's.
	k1AtK, _ := k1.r.Fold(shipK)
	empty := MustNewLDA(rec)
	ref, err := MatchLDACompactCrossing(compact(k.s, shipK), rk, compact(empty, shipK), k1AtK)
	if err != nil {
		t.Fatal(err)
	}
	if x, err := MatchLDACompactCrossing(compact(k.s, shipK), rk, compact(empty, rec), k1.r); err != nil || x != ref {
		t.Errorf("next at the recording shape: %+v (%v), want %+v", x, err, ref)
	}
	// A real difference (other sampling) is still a mismatch, not a fold.
	other := MustNewLDA(LDAConfig{Banks: []BankConfig{{1024, 0}, {1024, 3}, {1024, 4}}, Digest: true})
	if _, err := MatchLDACompactCrossing(compact(k.s, shipK), rk, compact(k1.s, shipK1), other); !errors.Is(err, ErrConfigMismatch) {
		t.Errorf("other sampling: %v", err)
	}
}

// TestLDAShipRows: the shipped rows follow the packets each bank
// recorded, within [floor, recorded rows], and a byte limit halves the
// largest banks until the compact encoding fits (its size computed
// exactly), never below the floor.
func TestLDAShipRows(t *testing.T) {
	rec := RecordLDAConfig()
	l := MustNewLDA(rec)
	genTrace(7, 5000, 0, expDelay(20_000), []*LDA{l}, nil)
	bounds := DefaultCompactBounds()
	rows := l.ShipRows(16, 0, bounds)
	for j, r := range rows {
		var n uint64
		for i := 0; i < rec.Banks[j].Rows; i++ {
			_, c, _ := l.Bucket(j, i)
			n += c
		}
		want := 16
		for want < int(n) && want < rec.Banks[j].Rows {
			want *= 2
		}
		if r != want {
			t.Errorf("bank %d: %d packets, %d rows, want %d", j, n, r, want)
		}
	}
	size := func(rows []int) int {
		f, err := l.Fold(rec.WithRows(rows))
		if err != nil {
			t.Fatal(err)
		}
		b, err := f.AppendCompact(nil, bounds)
		if err != nil {
			t.Fatal(err)
		}
		return len(b)
	}
	full := size(rows)
	if got := l.ShipRows(16, full, bounds); !equalInts(got, rows) {
		t.Errorf("limit = its own size %d: rows %v, want %v", full, got, rows)
	}
	if got := l.ShipRows(16, full-1, bounds); equalInts(got, rows) {
		t.Errorf("limit one byte below its size: rows unchanged %v", got)
	}
	floorSize := size(l.ShipRows(16, 1, bounds))
	for _, limit := range []int{full / 2, full / 5, floorSize, floorSize - 1, 1} {
		got := l.ShipRows(16, limit, bounds)
		s := size(got)
		atFloor := true
		for j, r := range got {
			if r < 16 || r > rows[j] {
				t.Errorf("limit %d: bank %d rows %d outside [16, %d]", limit, j, r, rows[j])
			}
			atFloor = atFloor && r == 16
		}
		if s > limit && !atFloor {
			t.Errorf("limit %d: %d bytes at rows %v", limit, s, got)
		}
	}
	// An empty LDA ships its floor; a floor above a bank's rows is capped.
	e := MustNewLDA(rec.WithRows([]int{1024, 1024, 8, 8, 8, 8, 8, 8}))
	if got := e.ShipRows(16, 0, bounds); !equalInts(got, []int{16, 16, 8, 8, 8, 8, 8, 8}) {
		t.Errorf("empty LDA ships %v", got)
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// BenchmarkLDAShip is the sender's per-interval work on a recorded LDA
// (RecordLDAConfig, 1 M packets): pick the rows within a byte limit, fold,
// encode; and the receiver's fold of its own copy.
func BenchmarkLDAShip(b *testing.B) {
	l := MustNewLDA(RecordLDAConfig())
	genTrace(3, 1_000_000, 0, expDelay(20_000), []*LDA{l}, nil)
	bounds := DefaultCompactBounds()
	var to LDAConfig
	b.Run("sender", func(b *testing.B) {
		b.ReportAllocs()
		var buf []byte
		for b.Loop() {
			to = l.Config().WithRows(l.ShipRows(LDAShipFloorRows, 20_000, bounds))
			f, err := l.Fold(to)
			if err != nil {
				b.Fatal(err)
			}
			buf, _ = f.AppendCompact(buf[:0], bounds)
		}
		b.ReportMetric(float64(len(buf)), "bytes")
	})
	b.Run("receiver-fold", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := l.Fold(to); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestLDAThin: heavy loss (≥ 10 %) with fewer than 1 000 samples is thin;
// less loss, more samples, no packets or more received than sent is not.
func TestLDAThin(t *testing.T) {
	for _, c := range []struct {
		sent, received, samples uint64
		want                    bool
	}{
		{20000, 10000, 350, true},
		{20000, 18000, 999, true},
		{20000, 18001, 999, false},
		{20000, 10000, 1000, false},
		{0, 0, 0, false},
		{100, 120, 10, false},
	} {
		if got := LDAThin(c.sent, c.received, c.samples); got != c.want {
			t.Errorf("LDAThin(%d, %d, %d) = %v", c.sent, c.received, c.samples, got)
		}
	}
	if s := RecordLDAConfig().Shape(); s != "1024:0,1024:2,1024:4,1024:6,1024:8,1024:10,1024:12,1024:14" {
		t.Errorf("Shape: %s", s)
	}
}
