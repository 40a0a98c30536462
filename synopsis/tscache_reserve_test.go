package synopsis

import "testing"

// TestTSCacheReserveDistinct: a cache is sized for the distinct packets
// its interval offered, not for their copies. An interval that repeats
// 4096 packets 50 times (a replayed capture) sizes the next for 4096
// packets, in 2^14 slots rather than the budget's 2^20; one of 204 800
// distinct packets for all of them; and under sampling Distinct is never
// below the distinct packets offered, so a sampled cache is never sized
// smaller than its traffic.
func TestTSCacheReserveDistinct(t *testing.T) {
	const budget = 16 << 20
	rda, err := newRDA(RDAConfig{Banks: 3, Cells: 1024, CacheBudget: budget}, true)
	if err != nil {
		t.Fatal(err)
	}
	rda.cache.Reserve(16384) // the appliance's starting room
	ts := uint64(1_000_000)
	for rep := 0; rep < 50; rep++ {
		for i := uint64(0); i < 4096; i++ {
			ts += 10
			rda.AddFlow(Remix(i, 1), 0, ts)
		}
	}
	c := rda.Cache()
	if c.Offered() != 50*4096 || c.Distinct() != 4096 {
		t.Fatalf("offered %d, distinct %d: want %d, 4096", c.Offered(), c.Distinct(), 50*4096)
	}
	rda.ReserveCache()
	if n := len(rda.cache.slots); n != 1<<14 {
		t.Errorf("repeated traffic: %d slots, want 2^14 (room for twice 4096 at load 3/4)", n)
	}

	// Distinct traffic fills what it needs.
	for i := uint64(0); i < 50*4096; i++ {
		ts += 10
		rda.AddFlow(Remix(i, 2), 0, ts)
	}
	if c.Distinct() != 50*4096 {
		t.Fatalf("distinct traffic: distinct %d, want %d", c.Distinct(), 50*4096)
	}
	rda.ReserveCache()
	if n, want := len(rda.cache.slots), 1<<20; n != want { // 2 × 204 800 at load 3/4, the budget's 2^20
		t.Errorf("distinct traffic: %d slots, want %d", n, want)
	}

	// Sampled: a small cache whose level rises, every packet sent twice.
	s, err := newTSCache(64<<10, false)
	if err != nil {
		t.Fatal(err)
	}
	const distinct = 100_000
	for rep := 0; rep < 2; rep++ {
		for i := uint64(0); i < distinct; i++ {
			ts += 10
			s.Insert(Remix(i, 3), ts)
		}
	}
	if s.Level() == 0 || s.Distinct() < distinct || s.Distinct() > 2*distinct {
		t.Errorf("sampled at level %d: distinct %d, want in [%d, %d]", s.Level(), s.Distinct(), distinct, 2*distinct)
	}
}
