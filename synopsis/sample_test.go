package synopsis

import (
	"bytes"
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
	for name, bad := range map[string][]byte{
		"magic":    append([]byte("SMQ"), b[3:]...),
		"version":  append([]byte("SMP\x02"), b[4:]...),
		"trailing": append(append([]byte{}, b...), 0),
		"level":    {'S', 'M', 'P', 1, 33, 0, 0, 0, 0, 0},
		"count":    {'S', 'M', 'P', 1, 0, 0, 0x80, 0x80, 0x01, 0, 0, 0xff, 0xff, 0x03},
		"offered":  {'S', 'M', 'P', 1, 0, 0, 0, 0, 0, 1, 5, 0, 0, 0, 0, 0},
	} {
		if err := q.UnmarshalBinary(bad); !errors.Is(err, ErrBadEncoding) {
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

// TestSampleBytesPerSample measures the wire size: a 4-byte digest and
// the stamp delta (3 bytes for gaps under 2^20 ns ≈ 1 ms), 7 bytes a
// sample plus a header of a few bytes.
func TestSampleBytesPerSample(t *testing.T) {
	p := sampleWireCase()
	b, _ := p.AppendBinary(nil)
	per := float64(len(b)) / float64(p.Len())
	t.Logf("%d samples in %d bytes: %.3f bytes a sample", p.Len(), len(b), per)
	if p.Len() < 15_000 || per > 7.01 || per < 6 {
		t.Fatalf("%d samples, %.3f bytes a sample, want ~7", p.Len(), per)
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
	// "SMP" 1, level 0, stamp error 25, offered 3, raised 0, overflow 0,
	// 3 samples, first stamp 1 000 000; then each digest (the low 32 bits
	// of the splitmix64 finalizer of h ^ SaltSample, little-endian, as
	// computed apart from this code) and the zig-zag stamp delta: 0, +300
	// (d8 04), −400 (9f 06).
	const want = "534d5001" + "00" + "19" + "03" + "00" + "00" + "03" + "c0843d" +
		"25cfe346" + "00" + "a19fdd92" + "d804" + "6d05180f" + "9f06"
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
