package synopsis

import (
	"testing"
)

// TestTSCacheAgainstMap compares the open-addressing cache with its naive
// twin, a Go map filtered by the same sampling rule.
func TestTSCacheAgainstMap(t *testing.T) {
	for _, budget := range []int{TSCacheMinBudget, 4096 * 16, 1 << 20} {
		c, err := NewTSCache(budget)
		if err != nil {
			t.Fatal(err)
		}
		first := map[uint64]uint64{}
		rng := rdaRand(uint64(budget))
		var hs []uint64
		for i := 0; i < 50_000; i++ {
			var h uint64
			switch {
			case i == 7:
				h = 0 // the identity that marks empty slots
			case i%10 == 9 && len(hs) > 0:
				h = hs[rng.next()%uint64(len(hs))] // a duplicate
			default:
				h = rng.next()
			}
			hs = append(hs, h)
			if _, ok := first[h]; !ok {
				first[h] = uint64(i)
			}
			c.Insert(h, uint64(i))
		}
		held := 0
		for h, ts := range first {
			got, ok := c.Lookup(h)
			want := Covers(h, c.Level())
			if ok != want || ok && got != ts {
				t.Fatalf("budget %d level %d: h %x: got %v/%v, want held=%v ts %d", budget, c.Level(), h, got, ok, want, ts)
			}
			if ok {
				held++
			}
		}
		if held != c.Len() || c.Offered() != 50_000 {
			t.Fatalf("Len %d, held %d, offered %d", c.Len(), held, c.Offered())
		}
		if c.Len()*tsEntryBytes > budget {
			t.Fatalf("holds %d entries in %d bytes", c.Len(), budget)
		}
		if budget == 1<<20 && c.Level() != 0 {
			t.Fatalf("a 1 MiB cache should hold 46 000 packets without sampling (level %d)", c.Level())
		}
		if budget == TSCacheMinBudget && c.Level() < 8 {
			t.Fatalf("64 slots for 46 000 packets: level %d", c.Level())
		}
	}
}

// TestTSCacheCoordinated: two caches of different budgets fed overlapping
// streams hold the same packets at the deeper level.
func TestTSCacheCoordinated(t *testing.T) {
	a, _ := NewTSCache(8 << 10)
	b, _ := NewTSCache(32 << 10)
	rng := rdaRand(5)
	var hs []uint64
	for i := 0; i < 20_000; i++ {
		h := rng.next()
		hs = append(hs, h)
		a.Insert(h, 1)
		if i%50 != 0 { // b misses 2 %
			b.Insert(h, 2)
		}
	}
	lv := max(a.Level(), b.Level())
	for i, h := range hs {
		_, inA := a.Lookup(h)
		_, inB := b.Lookup(h)
		if Covers(h, lv) && (!inA || (i%50 != 0) != inB) {
			t.Fatalf("packet %d sampled at level %d: in a %v, in b %v", i, lv, inA, inB)
		}
	}
}

func TestTSCacheMergeCloneReset(t *testing.T) {
	a, _ := NewTSCache(TSCacheMinBudget * 4)
	b, _ := NewTSCache(TSCacheMinBudget * 4)
	for i := uint64(1); i <= 300; i++ {
		if i%2 == 0 {
			a.Insert(Remix(i, 3), i)
		} else {
			b.Insert(Remix(i, 3), i)
		}
	}
	c := a.Clone()
	a.Merge(b)
	lv := a.Level()
	for i := uint64(1); i <= 300; i++ {
		ts, ok := a.Lookup(Remix(i, 3))
		if ok != Covers(Remix(i, 3), lv) || ok && ts != i {
			t.Fatalf("merged: %d: %v %v (level %d)", i, ts, ok, lv)
		}
	}
	if a.Offered() != 300 || c.Offered() != 150 {
		t.Fatal("offered counts")
	}
	a.Reset()
	if a.Len() != 0 || a.Level() != 0 || c.Len() == 0 {
		t.Fatal("reset/clone")
	}
}

func TestTSCacheInsertAllocs(t *testing.T) {
	c, _ := NewTSCache(TSCacheMinBudget)
	h := uint64(3)
	if a := testing.AllocsPerRun(20_000, func() { h = Remix(h, 1); c.Insert(h, h) }); a != 0 {
		t.Fatalf("Insert allocates %v", a)
	}
}

// TestTSCacheFlows: a cache that tracks flows keeps each packet's flow
// hash through level raises, merges and clones, and the budget counts the
// 24-byte slots.
func TestTSCacheFlows(t *testing.T) {
	c, err := NewTSCache(1 << 16) // 4096 slots of 16 bytes
	if err != nil {
		t.Fatal(err)
	}
	c.TrackFlows()
	if c.maxSlots*24 > 1<<16 || len(c.slots) > c.maxSlots || len(c.flows) != len(c.slots) {
		t.Fatalf("tracking flows: %d max slots, %d slots, %d flows for a 64 KiB budget", c.maxSlots, len(c.slots), len(c.flows))
	}
	o := c.EmptyLike(0)
	flow := func(h uint64) uint64 { return h*7 + 1 }
	for h := uint64(0); h < 10000; h++ { // more than fit: the level rises
		c.InsertFlow(h, flow(h), 1000+h)
		o.InsertFlow(h+20000, flow(h+20000), 5000+h)
	}
	if c.Level() == 0 {
		t.Fatal("level never rose")
	}
	c.Merge(o)
	d := c.Clone()
	n := 0
	for h := uint64(0); h < 30000; h++ {
		ts, fh, ok := d.LookupFlow(h)
		if !ok {
			continue
		}
		n++
		if fh != flow(h) {
			t.Fatalf("packet %d: flow %d, want %d (ts %d)", h, fh, flow(h), ts)
		}
	}
	if n != d.Len() || n == 0 {
		t.Fatalf("found %d packets, the cache holds %d", n, d.Len())
	}
	plain, _ := NewTSCache(1 << 16)
	plain.Insert(5, 10)
	if _, fh, ok := plain.LookupFlow(5); !ok || fh != 0 {
		t.Fatalf("a cache without flows: %d/%v", fh, ok)
	}
}

// TestTSCacheLaterCopy: a packet seen twice keeps its earlier timestamp
// and the later one aside; a third copy, or more duplicated packets than
// the cache keeps, make LaterCopy incomplete; Reset and Merge carry them.
func TestTSCacheLaterCopy(t *testing.T) {
	c, err := NewTSCache(1 << 16)
	if err != nil {
		t.Fatal(err)
	}
	c.TrackFlows()
	c.InsertFlow(7, 70, 1000)
	c.InsertFlow(8, 80, 1100)
	c.InsertFlow(7, 70, 1500) // the segment's copy of 7
	c.InsertFlow(0, 1, 900)
	c.InsertFlow(0, 1, 800) // copies may come in either order across lanes
	if ts, fh, ok := c.LookupFlow(7); !ok || ts != 1000 || fh != 70 {
		t.Fatalf("7: ts %d flow %d ok %v, want the first copy's 1000", ts, fh, ok)
	}
	if ts, ok, complete := c.LaterCopy(7); !ok || ts != 1500 || !complete {
		t.Fatalf("later copy of 7: %d %v %v", ts, ok, complete)
	}
	if _, ok, complete := c.LaterCopy(8); ok || !complete {
		t.Fatalf("8 was seen once: ok %v complete %v", ok, complete)
	}
	if ts, _, _ := c.LookupFlow(0); ts != 800 {
		t.Fatalf("0 keeps %d, want the earlier 800", ts)
	}
	if ts, ok, _ := c.LaterCopy(0); !ok || ts != 900 {
		t.Fatalf("later copy of 0: %d %v", ts, ok)
	}
	if c.Dups() != 2 {
		t.Fatalf("dups %d", c.Dups())
	}

	// Merge: another lane's shard with its own duplicated packet.
	o, _ := NewTSCache(1 << 16)
	o.InsertFlow(9, 90, 2000)
	o.InsertFlow(9, 90, 2100)
	c.Merge(o)
	if ts, ok, complete := c.LaterCopy(9); !ok || ts != 2100 || !complete {
		t.Fatalf("merged later copy of 9: %d %v %v", ts, ok, complete)
	}

	// A third copy: which copy is the packet's is moot.
	c.InsertFlow(7, 70, 1600)
	if _, ok, complete := c.LaterCopy(7); !ok || complete || c.LaterLost() != 1 {
		t.Fatalf("third copy: ok %v complete %v lost %d", ok, complete, c.LaterLost())
	}
	c.Reset()
	if _, ok, complete := c.LaterCopy(7); ok || !complete || c.LaterLost() != 0 {
		t.Fatalf("after Reset: ok %v complete %v lost %d", ok, complete, c.LaterLost())
	}

	// More duplicated packets than it keeps: incomplete, never wrong.
	for h := uint64(1); h <= maxLater+1; h++ {
		c.Insert(h, h)
		c.Insert(h, h+1)
	}
	if _, ok, complete := c.LaterCopy(1); !ok || complete {
		t.Fatalf("overflow: ok %v complete %v", ok, complete)
	}
	if allocs := testing.AllocsPerRun(100, func() { c.Insert(5, 9) }); allocs != 0 {
		t.Fatalf("%v allocs per duplicate insert", allocs)
	}
}

// TestTSCacheReplySeenOnce: a reply gives no timestamp for an identity the
// cache saw twice (which copy the asker lost is unknown), and answers the
// others as if nothing had been seen twice; with a second copy it could
// not keep, it vouches for none.
func TestTSCacheReplySeenOnce(t *testing.T) {
	c, err := NewTSCache(1 << 16)
	if err != nil {
		t.Fatal(err)
	}
	c.Insert(7, 1000)
	c.Insert(7, 1200) // identical frames
	c.Insert(8, 1100)
	ids := []uint64{7, 8, 9}
	ts, ok := make([]uint64, 3), make([]bool, 3)
	if err := ParseReply(c.AppendReply(nil, ids), ids, ts, ok); err != nil {
		t.Fatal(err)
	}
	if ok[0] || !ok[1] || ts[1] != 1100 || ok[2] {
		t.Fatalf("reply ts %v ok %v: want only 8's 1100", ts, ok)
	}
	if c.SeenOnce(7) || !c.SeenOnce(8) {
		t.Fatalf("SeenOnce 7 %v 8 %v", c.SeenOnce(7), c.SeenOnce(8))
	}
	c.Insert(7, 1300) // a third copy: the cache no longer knows every second copy
	if err := ParseReply(c.AppendReply(nil, ids), ids, ts, ok); err != nil {
		t.Fatal(err)
	}
	if ok[0] || ok[1] || ok[2] {
		t.Fatalf("reply after a lost second copy: ok %v, want none", ok)
	}
}
