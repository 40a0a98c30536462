package dataplane_test

import (
	"github.com/ldafwd/ldafwd/dataplane/traffic"
	"math"
	"math/rand/v2"
	"sort"
	"sync"
	"testing"

	"github.com/ldafwd/ldafwd/dataplane"
)

// Test-local delay and loss models with the batch method set of
// model.Delay / model.Loss, so these tests do not depend on that package.
type constDelay float64

func (c constDelay) Fill(_ *rand.Rand, d []float64) {
	for i := range d {
		d[i] = float64(c)
	}
}

type expDelay float64 // mean, ns

func (e expDelay) Fill(r *rand.Rand, d []float64) {
	for i := range d {
		d[i] = float64(e) * r.ExpFloat64()
	}
}

// recordingDelay remembers every delay it hands out, in order.
type recordingDelay struct {
	d     dataplane.DelayModel
	drawn []float64
}

func (r *recordingDelay) Fill(rng *rand.Rand, d []float64) {
	r.d.Fill(rng, d)
	r.drawn = append(r.drawn, d...)
}

type uniformLoss float64

func (u uniformLoss) Fill(r *rand.Rand, l []bool) {
	for i := range l {
		l[i] = r.Float64() < float64(u)
	}
}

// vclock is a virtual clock the test advances.
type vclock struct{ now uint64 }

func (c *vclock) read() uint64 { return c.now }

// received is what the receiving port saw of one frame.
type received struct {
	id, ts uint64
}

// runLink sends frames 0..n-1 on a, spaced by gap ns of virtual time, and
// collects everything b delivers, advancing the clock by gap each burst and
// finally draining. It returns what b saw and the truth log.
func runLink(t *testing.T, ic dataplane.ImpairConfig, n int, burst int, gap uint64) ([]received, []dataplane.TruthRecord, *dataplane.RingLink, *vclock) {
	t.Helper()
	clk := &vclock{now: 1_000_000_000}
	log, err := dataplane.NewTruthLog(1 << 20)
	if err != nil {
		t.Fatal(err)
	}
	ic.IDOffset = traffic.IDOffset
	ic.Truth = log.Record
	l := newLink(t, "", dataplane.LinkConfig{Size: 256, AtoB: &ic, Clock: clk.read})
	g := traffic.MustGen(traffic.GenConfig{Flows: 64})
	out := make([]*dataplane.Packet, burst)
	in := make([]*dataplane.Packet, 64)
	var seen []received
	var truth []dataplane.TruthRecord
	tr := make([]dataplane.TruthRecord, 4096)
	collect := func(m int) {
		for _, q := range in[:m] {
			id, _ := traffic.FrameID(q.Data)
			if q.TS > clk.now {
				t.Fatalf("frame %d delivered at clock %d before its time %d", id, clk.now, q.TS)
			}
			seen = append(seen, received{id, q.TS})
		}
		l.B().Free(in[:m])
		for k := log.Drain(tr); k > 0; k = log.Drain(tr) {
			truth = append(truth, tr[:k]...)
		}
	}
	for next := 0; next < n; {
		k := l.A().Alloc(out[:min(burst, n-next)])
		for i, q := range out[:k] {
			q.Data = g.Frame(q.Data, uint64(next+i))
		}
		took := l.A().TxBurst(out[:k])
		l.A().Free(out[took:k])
		next += took
		clk.now += gap
		for m := l.B().RxBurst(in); m > 0; m = l.B().RxBurst(in) {
			collect(m)
		}
		if im := l.B().Impairer(); im != nil {
			if due, ok := im.NextDue(); ok && due <= clk.now {
				t.Fatalf("frame due at %d still held at clock %d", due, clk.now)
			}
		}
	}
	clk.now += 1 << 40 // long after every delay and hold
	for m := l.B().RxBurst(in); m > 0; m = l.B().RxBurst(in) {
		collect(m)
	}
	if log.Overflow() != 0 {
		t.Fatalf("truth log overflowed: %d", log.Overflow())
	}
	return seen, truth, l, clk
}

// TestImpairFIFO: without reordering a random delay never reorders — each
// delivery is at max(tx+delay, previous delivery) — and frames become
// receivable only when the clock passes their delivery time (runLink
// checks that on every burst).
func TestImpairFIFO(t *testing.T) {
	rec := &recordingDelay{d: expDelay(50_000)}
	seen, truth, l, _ := runLink(t, dataplane.ImpairConfig{Delay: rec, Seed: 1}, 20000, 16, 5_000)
	if len(seen) != 20000 {
		t.Fatalf("got %d frames, want 20000", len(seen))
	}
	// Naive twin of the delivery rule: frame i is due at
	// max(tx_i + d_i, due_{i−1}) with d_i the i-th delay drawn.
	var prev uint64
	for i, r := range truth {
		due := max(r.TxNs+uint64(math.Round(rec.drawn[i])), prev)
		if r.DeliverNs != due {
			t.Fatalf("frame %d: delivered at %d, the FIFO rule says %d", i, r.DeliverNs, due)
		}
		prev = due
	}
	queued := 0
	for i, r := range seen {
		if r.id != uint64(i) {
			t.Fatalf("position %d holds frame %d: reordered", i, r.id)
		}
		if i > 0 && r.ts < seen[i-1].ts {
			t.Fatalf("frame %d delivered at %d before frame %d at %d", i, r.ts, i-1, seen[i-1].ts)
		}
		if r.ts != truth[i].DeliverNs || truth[i].ID != r.id {
			t.Fatalf("frame %d: seen ts %d, truth %+v", i, r.ts, truth[i])
		}
		if i > 0 && r.ts == seen[i-1].ts && truth[i].TxNs != truth[i-1].TxNs {
			queued++ // delivered right behind an earlier, slower frame
		}
	}
	if queued == 0 {
		t.Error("no frame ever queued behind a slower one: the FIFO max() was not exercised")
	}
	if st := l.B().Impairer().Stats(); st.Reordered != 0 || st.Lost != 0 || st.Duplicated != 0 || st.Delivered != 20000 {
		t.Errorf("stats %+v", st)
	}
}

// TestImpairStats checks that each impairment happens at its configured
// rate within 5 standard deviations (seeded, so deterministic), and that the
// truth the stage records matches what the receiver saw exactly.
func TestImpairStats(t *testing.T) {
	n := 200_000
	if testing.Short() {
		n = 50_000
	}
	const loss, dup, reorder, depth, delay = 0.01, 0.005, 0.01, 3, 20_000.0
	ic := dataplane.ImpairConfig{
		Delay: constDelay(delay), Loss: uniformLoss(loss), DupProb: dup,
		ReorderProb: reorder, ReorderDepth: depth, Seed: 42,
	}
	seen, truth, l, _ := runLink(t, ic, n, 32, 32*1000)
	st := l.B().Impairer().Stats()

	within := func(name string, got uint64, p float64, trials uint64) {
		t.Helper()
		mean := p * float64(trials)
		sd := math.Sqrt(float64(trials) * p * (1 - p))
		if math.Abs(float64(got)-mean) > 5*sd {
			t.Errorf("%s: %d, want %.0f ± %.0f", name, got, mean, 5*sd)
		}
	}
	if st.Admitted != uint64(n) {
		t.Fatalf("admitted %d, want %d", st.Admitted, n)
	}
	within("lost", st.Lost, loss, st.Admitted)
	kept := st.Admitted - st.Lost
	within("duplicated", st.Duplicated, dup, kept)
	// A packet can only be held while none is; the rate is a bit under p.
	if st.Reordered == 0 || float64(st.Reordered) > reorder*float64(kept)*1.1 || float64(st.Reordered) < reorder*float64(kept)*0.8 {
		t.Errorf("reordered %d of %d, want about %.0f", st.Reordered, kept, reorder*float64(kept))
	}
	if st.Delivered != st.Admitted-st.Lost+st.Duplicated || uint64(len(seen)) != st.Delivered {
		t.Fatalf("delivered %d (seen %d), want sent %d − lost %d + dup %d", st.Delivered, len(seen), st.Admitted, st.Lost, st.Duplicated)
	}

	// Exact truth: per ID, the receiver saw it (1 + duplicates) times
	// unless lost; per record, the delivery time matches what it saw.
	count := map[uint64]int{}
	for _, r := range seen {
		count[r.id]++
	}
	var delivered, lost, dups, reord int
	var sumDelay uint64
	di := 0
	for _, rec := range truth {
		switch {
		case rec.Flags&dataplane.TruthLost != 0:
			lost++
			if count[rec.ID] != 0 {
				t.Fatalf("frame %d recorded lost but received %d times", rec.ID, count[rec.ID])
			}
			continue
		case rec.Flags&dataplane.TruthDuplicate != 0:
			dups++
		}
		if rec.Flags&dataplane.TruthReordered != 0 {
			reord++
		}
		if seen[di].id != rec.ID || seen[di].ts != rec.DeliverNs {
			t.Fatalf("delivery %d: receiver saw %+v, truth %+v", di, seen[di], rec)
		}
		sumDelay += rec.DeliverNs - rec.TxNs
		di++
		delivered++
	}
	if uint64(lost) != st.Lost || uint64(dups) != st.Duplicated || uint64(reord) != st.Reordered || uint64(delivered) != st.Delivered || sumDelay != st.DelaySumNs {
		t.Errorf("truth log (lost %d dup %d reord %d delivered %d Σ %d) disagrees with stats %+v", lost, dups, reord, delivered, sumDelay, st)
	}
	for id := range uint64(n) {
		if c := count[id]; c > 2 {
			t.Fatalf("frame %d received %d times", id, c)
		}
	}

	// Reordered frames came after exactly `depth` later frames (the
	// traffic never pauses long enough for the hold to expire) and
	// everything else is in order.
	for i, r := range seen {
		if i >= depth && r.id < seen[i-1].id {
			for j := 1; j <= depth; j++ {
				if seen[i-j].id <= r.id {
					t.Fatalf("frame %d at %d overtaken by %d frames only", r.id, i, j-1)
				}
			}
		}
	}
	// Constant delay: every frame waits exactly `delay`, except reordered
	// ones (held) and frames queued behind a held one's release.
	if min := float64(st.DelaySumNs) / float64(st.Delivered); min < delay || min > delay*1.05 {
		t.Errorf("mean delay %.0f ns, want %.0f (+ a little from holds)", min, delay)
	}
}

// TestImpairDeterministic: same seed and traffic → identical truth.
func TestImpairDeterministic(t *testing.T) {
	ic := dataplane.ImpairConfig{Delay: expDelay(10_000), Loss: uniformLoss(0.05), DupProb: 0.05, ReorderProb: 0.05, Seed: 7}
	_, t1, _, _ := runLink(t, ic, 5000, 8, 3000)
	_, t2, _, _ := runLink(t, ic, 5000, 8, 3000)
	if len(t1) != len(t2) {
		t.Fatalf("runs differ in length: %d vs %d", len(t1), len(t2))
	}
	for i := range t1 {
		if t1[i] != t2[i] {
			t.Fatalf("record %d: %+v vs %+v", i, t1[i], t2[i])
		}
	}
	ic.Seed = 8
	_, t3, _, _ := runLink(t, ic, 5000, 8, 3000)
	same := len(t3) == len(t1)
	for i := 0; same && i < len(t1); i++ {
		same = t1[i] == t3[i]
	}
	if same {
		t.Error("a different seed gave the same truth")
	}
}

// TestImpairHoldExpires: a held frame with nothing behind it is released
// MaxHoldNs after its due time and is not counted as reordered.
func TestImpairHoldExpires(t *testing.T) {
	pool, err := dataplane.NewPacketPool(4, 128)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	im, err := dataplane.NewImpairer(dataplane.ImpairConfig{Delay: constDelay(100), ReorderProb: 0.999999, MaxHoldNs: 1000}, pool)
	if err != nil {
		t.Fatal(err)
	}
	p := make([]*dataplane.Packet, 1)
	pool.Alloc(p)
	p[0].TS = 5000
	if im.Admit(p) != 1 || im.Pending() != 1 {
		t.Fatal("not admitted")
	}
	out := make([]*dataplane.Packet, 1)
	if n := im.Release(out, 5000+100+999); n != 0 {
		t.Fatal("released before the hold expired")
	}
	if n := im.Release(out, 5000+100+1000); n != 1 || out[0].TS != 5100 {
		t.Fatalf("release after hold: n=%d", n)
	}
	if st := im.Stats(); st.Reordered != 0 || st.Delivered != 1 {
		t.Errorf("stats %+v", st)
	}
}

// TestImpairZeroAllocs pins zero allocations per burst through an impaired
// link with every impairment active and the truth log on.
func TestImpairZeroAllocs(t *testing.T) {
	clk := &vclock{}
	log, _ := dataplane.NewTruthLog(1 << 10)
	l := newLink(t, "", dataplane.LinkConfig{Size: 256, Clock: clk.read, AtoB: &dataplane.ImpairConfig{
		Delay: expDelay(2000), Loss: uniformLoss(0.1), DupProb: 0.1, ReorderProb: 0.1, ReorderDepth: 2, Truth: log.Record, IDOffset: traffic.IDOffset,
	}})
	g := traffic.MustGen(traffic.GenConfig{})
	out := make([]*dataplane.Packet, 32)
	in := make([]*dataplane.Packet, 32)
	tr := make([]dataplane.TruthRecord, 256)
	id := uint64(0)
	a := testing.AllocsPerRun(500, func() {
		k := l.A().Alloc(out)
		for i, q := range out[:k] {
			q.Data = g.Frame(q.Data, id+uint64(i))
		}
		id += uint64(k)
		took := l.A().TxBurst(out[:k])
		l.A().Free(out[took:k])
		clk.now += 3000
		for m := l.B().RxBurst(in); m > 0; m = l.B().RxBurst(in) {
			l.B().Free(in[:m])
		}
		for log.Drain(tr) > 0 {
		}
	})
	if a != 0 {
		t.Errorf("%v allocations per burst, want 0", a)
	}
	if st := l.B().Impairer().Stats(); st.Lost == 0 || st.Duplicated == 0 || st.Reordered == 0 {
		t.Errorf("not every impairment was exercised: %+v", st)
	}
}

// TestImpairRace runs the sender and the receiver of an impaired link on
// two goroutines with the real clock, then drains, and checks the exact
// accounting: delivered = sent − lost + duplicated, per ID.
func TestImpairRace(t *testing.T) {
	n := 200_000
	if testing.Short() {
		n = 30_000
	}
	log, _ := dataplane.NewTruthLog(1 << 19)
	l := newLink(t, "", dataplane.LinkConfig{Size: 512, AtoB: &dataplane.ImpairConfig{
		Delay: expDelay(2000), Loss: uniformLoss(0.01), DupProb: 0.01, ReorderProb: 0.01, Seed: 3,
		Truth: log.Record, IDOffset: traffic.IDOffset,
	}})
	g := traffic.MustGen(traffic.GenConfig{})
	var sent sync.WaitGroup
	var done sync.WaitGroup
	stop := make(chan struct{})
	sent.Go(func() {
		out := make([]*dataplane.Packet, 32)
		for next := 0; next < n; {
			k := l.A().Alloc(out[:min(32, n-next)])
			for i, q := range out[:k] {
				q.Data = g.Frame(q.Data, uint64(next+i))
			}
			took := l.A().TxBurst(out[:k])
			l.A().Free(out[took:k])
			next += took
		}
	})
	count := make(map[uint64]int, n)
	done.Go(func() {
		in := make([]*dataplane.Packet, 32)
		for {
			select {
			case <-stop:
				for m := l.B().Drain(in); m > 0; m = l.B().Drain(in) {
					for _, q := range in[:m] {
						id, _ := traffic.FrameID(q.Data)
						count[id]++
					}
					l.B().Free(in[:m])
				}
				return
			default:
			}
			m := l.B().RxBurst(in)
			for _, q := range in[:m] {
				id, _ := traffic.FrameID(q.Data)
				count[id]++
			}
			l.B().Free(in[:m])
		}
	})
	sent.Wait()
	close(stop)
	done.Wait()
	st := l.B().Impairer().Stats()
	if st.Admitted != uint64(n) || st.PendingNow != 0 {
		t.Fatalf("stats %+v", st)
	}
	total := 0
	for _, c := range count {
		total += c
	}
	if uint64(total) != st.Admitted-st.Lost+st.Duplicated {
		t.Fatalf("received %d, want %d − %d + %d", total, st.Admitted, st.Lost, st.Duplicated)
	}
	want := make(map[uint64]int, n)
	recs := make([]dataplane.TruthRecord, 4096)
	for k := log.Drain(recs); k > 0; k = log.Drain(recs) {
		for _, r := range recs[:k] {
			if r.Flags&dataplane.TruthLost == 0 {
				want[r.ID]++
			}
		}
	}
	if len(want) != len(count) {
		t.Fatalf("truth has %d distinct delivered IDs, receiver %d", len(want), len(count))
	}
	var bad []uint64
	for id, c := range want {
		if count[id] != c {
			bad = append(bad, id)
		}
	}
	sort.Slice(bad, func(i, j int) bool { return bad[i] < bad[j] })
	if len(bad) > 0 {
		t.Fatalf("%d IDs received a different number of times than the truth says, first %d", len(bad), bad[0])
	}
	if l.Pool().Available() != l.Pool().Size() {
		t.Errorf("pool leaked: %d of %d buffers free", l.Pool().Available(), l.Pool().Size())
	}
}
