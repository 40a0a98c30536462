package synopsis

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"math/rand/v2"
	"testing"
)

// samplePkts are n packets with random identities, one every gapNs on
// average (exponential gaps) from start.
func samplePkts(rng *rand.Rand, n int, start, gapNs float64) (hs, ts []uint64) {
	t := start
	for range n {
		hs = append(hs, rng.Uint64())
		ts = append(ts, uint64(t))
		t += rng.ExpFloat64() * gapNs
	}
	return hs, ts
}

// TestSampleAddZeroAlloc: Add allocates nothing, raises of the level
// included.
func TestSampleAddZeroAlloc(t *testing.T) {
	p, err := NewSample(SampleConfig{Capacity: 64})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	hs, ts := samplePkts(rng, 4096, 1e9, 1000)
	i := 0
	allocs := testing.AllocsPerRun(10000, func() {
		p.Add(hs[i%len(hs)], ts[i%len(ts)])
		i++
		if i%len(hs) == 0 {
			p.Reset()
		}
	})
	if allocs != 0 {
		t.Fatalf("Add allocates %v per call", allocs)
	}
	if p.Raised() == 0 && p.Level() == 0 {
		t.Fatal("the test never raised the level")
	}
}

// TestSampleHeldIsSelected: after any number of raises the sample holds
// exactly the packets SampleSelected keeps at its final level, in the
// order they were added, with their stamps — a uniform sample of the whole
// interval, not of its beginning.
func TestSampleHeldIsSelected(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, tc := range []struct {
		level uint8
		cap   int
		n     int
	}{{0, 100, 10_000}, {3, 50, 20_000}, {0, 1 << 12, 1000}, {10, 16, 5000}} {
		p, _ := NewSample(SampleConfig{Level: tc.level, Capacity: tc.cap})
		hs, ts := samplePkts(rng, tc.n, 5e9, 100)
		for i := range hs {
			p.Add(hs[i], ts[i])
		}
		var want []sampleEntry
		for i, h := range hs {
			if SampleSelected(h, p.Level()) {
				want = append(want, sampleEntry{Remix(h, SaltSample), ts[i]})
			}
		}
		if len(want) != p.Len() || p.Len() > tc.cap || p.Offered() != uint64(tc.n) {
			t.Fatalf("%+v: held %d (level %d, raised %d), selection at that level %d, offered %d", tc, p.Len(), p.Level(), p.Raised(), len(want), p.Offered())
		}
		for i := range want {
			if want[i] != p.ents[i] {
				t.Fatalf("%+v: entry %d %v, want %v", tc, i, p.ents[i], want[i])
			}
		}
		// Halving when full: the final level is the shallowest (from the
		// configured one) whose selection fits.
		if p.Level() > tc.level {
			n := 0
			for _, h := range hs {
				if SampleSelected(h, p.Level()-1) {
					n++
				}
			}
			if n <= tc.cap {
				t.Fatalf("%+v: level %d, but level %d keeps %d ≤ capacity", tc, p.Level(), p.Level()-1, n)
			}
		}
	}
}

// TestSampleSelectionIndependent: selection at level k keeps a share
// 2^-k of the packets, and the packets it keeps fall in the LDA's banks
// (leading zeros of h) as all packets do: the salted remix shares no bits
// with the LDA's choice.
func TestSampleSelectionIndependent(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	const n, k = 1 << 20, 3
	var all, kept [4]int
	sel := 0
	for range n {
		h := rng.Uint64()
		b := min(bits.LeadingZeros64(h), 3)
		all[b]++
		if SampleSelected(h, k) {
			sel++
			kept[b]++
		}
	}
	if share := float64(sel) / n; share < 0.122 || share > 0.128 {
		t.Fatalf("level %d keeps %.4f, want 0.125", k, share)
	}
	for b := range all {
		want := float64(all[b]) / n * float64(sel)
		if d := float64(kept[b]) - want; d*d > 25*want { // 5 σ
			t.Errorf("LDA bank %d: %d kept, want %.0f", b, kept[b], want)
		}
	}
}

// TestSampleEncodingRoundTrip: decode(encode(x)) encodes to the same
// bytes, keeps the counters, and matches against the receiver exactly as
// the sender's own copy does.
func TestSampleEncodingRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	snd, _ := NewSample(SampleConfig{Level: 2, Capacity: 500})
	rcv, _ := NewSample(SampleConfig{Level: 2, Capacity: 500})
	hs, ts := samplePkts(rng, 8000, 1.7e18, 2000)
	for i := range hs {
		snd.Add(hs[i], ts[i])
		if i%50 != 0 {
			rcv.Add(hs[i], ts[i]+uint64(20_000+rng.IntN(50_000)))
		}
	}
	snd.SetStampErr(40)
	b, err := snd.AppendBinary(nil)
	if err != nil {
		t.Fatal(err)
	}
	dec, err := DecodeSample(b)
	if err != nil {
		t.Fatal(err)
	}
	b2, _ := dec.AppendBinary(nil)
	if !bytes.Equal(b, b2) {
		t.Fatal("re-encoding differs")
	}
	if dec.Level() != snd.Level() || dec.Offered() != snd.Offered() || dec.Raised() != snd.Raised() || dec.StampErrNs() != 40 || dec.Len() != snd.Len() {
		t.Fatalf("decoded level %d offered %d raised %d err %d len %d, sent %d %d %d 40 %d",
			dec.Level(), dec.Offered(), dec.Raised(), dec.StampErrNs(), dec.Len(), snd.Level(), snd.Offered(), snd.Raised(), snd.Len())
	}
	m1, err := MatchSamples(snd, rcv)
	if err != nil {
		t.Fatal(err)
	}
	m2, err := MatchSamples(dec, rcv)
	if err != nil {
		t.Fatal(err)
	}
	if m1.Sent != m2.Sent || m1.Lost != m2.Lost || len(m1.DelaysNs) != len(m2.DelaysNs) || m1.Lost == 0 {
		t.Fatalf("local %+v, decoded %+v", m1, m2)
	}
	for i := range m1.DelaysNs {
		if m1.DelaysNs[i] != m2.DelaysNs[i] {
			t.Fatalf("delay %d: %d vs %d", i, m1.DelaysNs[i], m2.DelaysNs[i])
		}
	}
	// A decoded end at a shallower level than the other cannot be cut.
	deep, _ := NewSample(SampleConfig{Level: dec.Level() + 1, Capacity: 500})
	if _, err := MatchSamples(dec, deep); !errors.Is(err, ErrConfigMismatch) {
		t.Fatalf("decoded sender shallower than the receiver: %v", err)
	}
}

// TestSampleDecoderStrict: every truncation, a bad magic or version,
// trailing bytes and counts the bytes cannot hold are errors wrapping
// ErrBadEncoding, and leave the target unchanged.
func TestSampleDecoderStrict(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	p, _ := NewSample(SampleConfig{Capacity: 64})
	hs, ts := samplePkts(rng, 40, 1e9, 1000)
	for i := range hs {
		p.Add(hs[i], ts[i])
	}
	b, _ := p.AppendBinary(nil)
	q, _ := NewSample(SampleConfig{Capacity: 8})
	for i := range len(b) {
		if err := q.UnmarshalBinary(b[:i]); !errors.Is(err, ErrBadEncoding) {
			t.Fatalf("truncated to %d of %d bytes: %v", i, len(b), err)
		}
		if q.Len() != 0 || q.decoded {
			t.Fatal("a failed decode changed the target")
		}
	}
	// enc is a two-sample encoding with the given header fields and bit
	// stream.
	enc := func(thresh, n uint64, db, k byte, bits func(w *bitWriter)) []byte {
		e := []byte("SMP\x02")
		e = binary.AppendUvarint(e, thresh)
		e = append(e, 0, 9, 0, 0) // stamp error, offered, raised, overflow
		e = binary.AppendUvarint(e, n)
		e = append(e, 100, db, k) // first stamp 100
		w := bitWriter{b: e}
		bits(&w)
		return w.flush()
	}
	twoGood := func(w *bitWriter) { // digests 1 and 2, gap +3 (z = 6: q 1, r 2 at k 2)
		w.write(1, 24)
		w.write(2, 24)
		w.write(0b01, 2)
		w.write(2, 2)
	}
	if q, err := DecodeSample(enc(SampleAll, 2, 24, 2, twoGood)); err != nil || q.Len() != 2 || q.ents[1].ts != 103 {
		t.Fatalf("the well-formed case does not decode: %v", err)
	}
	for name, bad := range map[string][]byte{
		"magic":                append([]byte("SMQ"), b[3:]...),
		"version 1":            append([]byte("SMP\x01"), b[4:]...),
		"version 3":            append([]byte("SMP\x03"), b[4:]...),
		"trailing":             append(append([]byte{}, b...), 0),
		"threshold 0":          enc(0, 2, 24, 2, twoGood),
		"threshold above 2^32": enc(SampleAll+1, 2, 24, 2, twoGood),
		"count":                {'S', 'M', 'P', 2, 1, 0, 0xff, 0xff, 0x03, 0, 0, 0xff, 0xff, 0x03, 0, 24, 0},
		"offered":              {'S', 'M', 'P', 2, 1, 0, 0, 0, 0, 1, 5, 24, 0, 0, 0, 0},
		"digest width 15":      enc(SampleAll, 2, 15, 2, twoGood),
		"digest width 33":      enc(SampleAll, 2, 33, 2, twoGood),
		"Rice parameter 64":    enc(SampleAll, 2, 24, 64, twoGood),
		"padding":              enc(SampleAll, 2, 24, 2, func(w *bitWriter) { twoGood(w); w.write(1, 1) }),
		"escaped short gap": enc(SampleAll, 2, 24, 2, func(w *bitWriter) {
			w.write(1, 24)
			w.write(2, 24)
			w.write(1<<sampleRiceEscape-1, sampleRiceEscape)
			w.write(6, 64) // z 6 codes in 4 bits at k 2
		}),
		"unended quotient": enc(SampleAll, 2, 24, 2, func(w *bitWriter) {
			w.write(1, 24)
			w.write(2, 24)
			w.write(0b111111, 6)
		}),
	} {
		err := q.UnmarshalBinary(bad)
		if !errors.Is(err, ErrBadEncoding) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// FuzzSampleDecode: any bytes decode without panicking, and what decodes
// re-encodes to the same bytes (one encoding per sample) and matches.
func FuzzSampleDecode(f *testing.F) {
	rng := rand.New(rand.NewPCG(11, 12))
	p, _ := NewSample(SampleConfig{Capacity: 16})
	hs, ts := samplePkts(rng, 100, 1e9, 1000)
	for i := range hs {
		p.Add(hs[i], ts[i])
	}
	b, _ := p.AppendBinary(nil)
	f.Add(b)
	e, _ := NewSample(SampleConfig{Capacity: 1})
	b, _ = e.AppendBinary(nil)
	f.Add(b)
	// Cut between levels, with a gap that takes the escape and one that
	// goes back.
	x, _ := NewSample(SampleConfig{Capacity: 8})
	for _, ts := range []uint64{1e9, 1e9 + 1000, 1e9 + 1900, 1e15, 5e8} {
		x.Add(rng.Uint64(), ts)
	}
	x.CutToCount(4)
	b, _ = x.AppendBinary(nil)
	f.Add(b)
	f.Fuzz(func(t *testing.T, b []byte) {
		q, err := DecodeSample(b)
		if err != nil {
			if !errors.Is(err, ErrBadEncoding) {
				t.Fatalf("error %v does not wrap ErrBadEncoding", err)
			}
			return
		}
		b2, _ := q.AppendBinary(nil)
		if !bytes.Equal(b, b2) {
			t.Fatalf("re-encoding differs:\n%x\n%x", b, b2)
		}
		m, err := MatchSamples(q, q)
		if err != nil {
			return
		}
		if m.Received+m.AmbiguousSent != uint64(q.Len()) {
			t.Fatalf("a sample against itself: %+v of %d", m, q.Len())
		}
		for _, x := range EstimateQuantiles(m.DelaysNs, SampleQuantiles, 0.98, q.StampErrNs()) {
			if x.Valid && (x.LoNs > x.EstimateNs || x.EstimateNs > x.HiNs || x.EstimateNs != 0) {
				t.Fatalf("delays all 0: %+v", x)
			}
		}
	})
}

// sampleWireCase is a sample of a 1 Mpps class, 1 packet in 64 kept:
// samples about 64 µs apart.
func sampleWireCase() *Sample {
	rng := rand.New(rand.NewPCG(13, 14))
	p, _ := NewSample(SampleConfig{Level: 6, Capacity: 1 << 14})
	hs, ts := samplePkts(rng, 1_000_000, 1.7e18, 1000)
	for i := range hs {
		p.Add(hs[i], ts[i])
	}
	return p
}

// TestSampleBytesPerSample measures the wire size: a 28-bit digest (for
// 15 000 samples) and the Rice-coded gap (about 18.5 bits for 64 µs), 5.8
// bytes a sample plus a header of a few bytes; and at the demo's density,
// 500 samples 2 ms apart: a 24-bit digest and about 23.5 bits of gap, 6
// bytes.
func TestSampleBytesPerSample(t *testing.T) {
	p := sampleWireCase()
	b, _ := p.AppendBinary(nil)
	per := float64(len(b)) / float64(p.Len())
	t.Logf("%d samples in %d bytes: %.3f bytes a sample", p.Len(), len(b), per)
	if p.Len() < 15_000 || per > 5.9 || per < 5.5 {
		t.Fatalf("%d samples, %.3f bytes a sample, want ~5.8", p.Len(), per)
	}
	q, _ := NewSample(SampleConfig{Capacity: 1 << 10})
	hs, ts := samplePkts(rand.New(rand.NewPCG(13, 15)), 500, 1.7e18, 2e6)
	for i := range hs {
		q.Add(hs[i], ts[i])
	}
	b, _ = q.AppendBinary(nil)
	per = float64(len(b)) / float64(q.Len())
	t.Logf("%d samples 2 ms apart in %d bytes: %.3f bytes a sample", q.Len(), len(b), per)
	if per > 6.1 || per < 5.7 {
		t.Fatalf("%d samples 2 ms apart, %.3f bytes a sample, want ~6", q.Len(), per)
	}
}

func BenchmarkSampleEncode(b *testing.B) {
	p := sampleWireCase()
	buf, _ := p.AppendBinary(nil)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		buf, _ = p.AppendBinary(buf[:0])
	}
	b.ReportMetric(float64(len(buf))/float64(p.Len()), "bytes/sample")
}

func BenchmarkSampleAdd(b *testing.B) {
	p, _ := NewSample(DefaultSampleConfig())
	rng := rand.New(rand.NewPCG(15, 16))
	hs, ts := samplePkts(rng, 1<<16, 1e9, 100)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if i&(1<<16-1) == 0 {
			p.Reset()
		}
		p.Add(hs[i&(1<<16-1)], ts[i&(1<<16-1)])
	}
}

// TestSampleMerge: two workers' samples of one interval merge into exactly
// the packets the merged level keeps, within the capacity; a clone is
// independent of its original; a decoded sample is refused.
func TestSampleMerge(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 18))
	for _, tc := range []struct{ capA, capB, n int }{{1000, 1000, 1500}, {300, 2000, 6000}, {4096, 64, 3000}} {
		a, _ := NewSample(SampleConfig{Capacity: tc.capA})
		b, _ := NewSample(SampleConfig{Capacity: tc.capB})
		hs, ts := samplePkts(rng, tc.n, 1e9, 100)
		for i := range hs {
			if i%3 == 0 {
				b.Add(hs[i], ts[i])
			} else {
				a.Add(hs[i], ts[i])
			}
		}
		la, lb := a.Level(), b.Level()
		c := a.Clone()
		x := c.Clone()
		if allocs := testing.AllocsPerRun(3, func() { x.Merge(b) }); allocs != 0 {
			t.Fatalf("%+v: Merge allocates %v times", tc, allocs)
		}
		if err := a.Merge(b); err != nil {
			t.Fatal(err)
		}
		if c.Len() == a.Len() && c.Level() == a.Level() {
			t.Fatalf("%+v: merge changed nothing", tc)
		}
		want := map[sampleEntry]bool{}
		for i, h := range hs {
			if SampleSelected(h, a.Level()) {
				want[sampleEntry{Remix(h, SaltSample), ts[i]}] = true
			}
		}
		got := map[sampleEntry]bool{}
		for _, e := range a.ents {
			got[e] = true
		}
		if len(got) != len(want) || len(a.ents) != len(want) || a.Len() > tc.capA || a.Offered() != uint64(tc.n) || a.Level() < max(la, lb) {
			t.Fatalf("%+v: merged %d at level %d (from %d and %d), want %d", tc, a.Len(), a.Level(), la, lb, len(want))
		}
		for e := range want {
			if !got[e] {
				t.Fatalf("%+v: %v missing", tc, e)
			}
		}
		if b, err := a.AppendBinary(nil); err != nil {
			t.Fatal(err)
		} else if d, err := DecodeSample(b); err != nil || d.Len() != a.Len() {
			t.Fatalf("%+v: merged sample does not decode: %v", tc, err)
		} else if err := a.Merge(d); !errors.Is(err, ErrConfigMismatch) {
			t.Fatalf("merging a decoded sample: %v", err)
		}
	}
}

// TestSampleGolden pins the wire encoding: the same sample, the same
// bytes, in every build (the receiver of a shipped sample may run another
// version).
func TestSampleGolden(t *testing.T) {
	p, _ := NewSample(SampleConfig{Level: 0, Capacity: 4})
	p.Add(1, 1_000_000)
	p.Add(2, 1_000_300)
	p.Add(3, 999_900) // a stamp that goes back
	p.SetStampErr(25)
	b, _ := p.AppendBinary(nil)
	// "SMP" 2, threshold 2^32 (every packet: 80 80 80 80 10), stamp error
	// 25, offered 3, raised 0, overflow 0, 3 samples, first stamp
	// 1 000 000; digest width 24, Rice parameter 9 (the cheapest for the
	// zig-zag gaps 600 and 799, +300 and −400); then the bit stream, LSB
	// first: each digest's low 24 bits (the splitmix64 finalizer of
	// h ^ SaltSample: …e3cf25, …dd9fa1, …18056d), from the second on its
	// gap as one quotient bit (600>>9 = 799>>9 = 1), the zero that ends
	// it and 9 remainder bits; zero padding. Computed apart from this code.
	const want = "534d5002" + "8080808010" + "19" + "03" + "00" + "00" + "03" + "c0843d" + "18" + "09" +
		"25cfe3a19fdd61692bc0e823"
	if got := fmt.Sprintf("%x", b); got != want {
		t.Fatalf("encoding %s, want %s", got, want)
	}
}

// BenchmarkSampleAddSteady: Add where the level keeps 1 packet in 64 and
// the sample never fills: the remix and the test, what most packets cost.
func BenchmarkSampleAddSteady(b *testing.B) {
	p, _ := NewSample(SampleConfig{Level: 6, Capacity: 1 << 16})
	rng := rand.New(rand.NewPCG(19, 20))
	hs, ts := samplePkts(rng, 1<<16, 1e9, 100)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if i&(1<<16-1) == 0 {
			p.Reset()
		}
		p.Add(hs[i&(1<<16-1)], ts[i&(1<<16-1)])
	}
}

// TestSampleRaiseTo: a sample cut to a deeper level holds exactly the
// packets that level keeps, in order, as if recorded there; a decoded one
// refuses.
func TestSampleRaiseTo(t *testing.T) {
	p, _ := NewSample(SampleConfig{Capacity: 1 << 12})
	q, _ := NewSample(SampleConfig{Level: 3, Capacity: 1 << 12})
	for i := uint64(0); i < 3000; i++ {
		p.Add(i*0x9E3779B97F4A7C15, 1000+i)
		q.Add(i*0x9E3779B97F4A7C15, 1000+i)
	}
	if err := p.RaiseTo(3); err != nil {
		t.Fatal(err)
	}
	a, _ := p.AppendBinary(nil)
	b, _ := q.AppendBinary(nil)
	if p.Level() != 3 || p.Raised() != 0 || string(a) != string(b) {
		t.Errorf("cut to level 3: level %d, raised %d, %d samples; recorded at 3: %d samples", p.Level(), p.Raised(), p.Len(), q.Len())
	}
	if err := p.RaiseTo(2); err != nil || p.Level() != 3 {
		t.Errorf("RaiseTo a shallower level: %v, level %d", err, p.Level())
	}
	d, _ := DecodeSample(a)
	if err := d.RaiseTo(4); err == nil {
		t.Error("a decoded sample was cut")
	}
}

// TestSampleCutToCount: a sample cut to k holds exactly the k packets of
// the whole interval with the smallest selection values — what a sample
// recording at the threshold the cut chose holds — and matches a receiver
// that recorded every packet with nothing lost and no ambiguity; its
// level is the power of two the threshold lies under.
func TestSampleCutToCount(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 24))
	for _, k := range []int{1, 459, 700, 1000, 5000} {
		p, _ := NewSample(SampleConfig{Capacity: 1 << 12})
		r, _ := NewSample(SampleConfig{Capacity: 1 << 14})
		hs, ts := samplePkts(rng, 10_000, 1e12, 1000)
		for i := range hs {
			p.Add(hs[i], ts[i])
			r.Add(hs[i], ts[i]+5000)
		}
		held := p.Len()
		if err := p.CutToCount(k); err != nil {
			t.Fatal(err)
		}
		want := min(k, held)
		if p.Len() != want {
			t.Fatalf("cut to %d of %d: %d held", k, held, p.Len())
		}
		th := p.Threshold()
		n := 0
		for _, h := range hs {
			if SampleSelectedAt(h, th) {
				n++
			}
		}
		if n != p.Len() || th > SampleLevelThreshold(p.Level()) || 2*th <= SampleLevelThreshold(p.Level()) || p.Rate() != float64(th)/(1<<32) {
			t.Fatalf("cut to %d: threshold %d (level %d) keeps %d of the interval, %d held", k, th, p.Level(), n, p.Len())
		}
		b, _ := p.AppendBinary(nil)
		d, err := DecodeSample(b)
		if err != nil || d.Threshold() != th {
			t.Fatalf("cut sample does not decode at its threshold: %v", err)
		}
		m, err := MatchSamples(d, r)
		if err != nil || m.Threshold != th || m.Sent != uint64(want) || m.Lost != 0 || m.Extra != 0 || len(m.DelaysNs) != want {
			t.Fatalf("cut to %d: %+v, %v", k, m, err)
		}
	}
	p, _ := NewSample(SampleConfig{Capacity: 4})
	p.Add(1, 10)
	p.Add(2, 20)
	b, _ := p.AppendBinary(nil)
	d, _ := DecodeSample(b)
	if err := d.CutToCount(1); !errors.Is(err, ErrConfigMismatch) || d.Len() != 2 {
		t.Fatalf("a decoded sample cut: %v, %d held", err, d.Len())
	}
}
