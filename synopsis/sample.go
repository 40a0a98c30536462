package synopsis

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"slices"
)

// Trajectory sampling (Duffield and Grossglauser, "Trajectory Sampling for
// Direct Traffic Observation", SIGCOMM 2000): both ends keep the same
// pseudo-random subset of the packets, chosen by a hash of each packet's
// invariant identity, so the sender's and the receiver's samples hold the
// same packets and pair one to one. Each pair is one exact one-way delay of
// a uniform random sample of the interval's packets — what a quantile
// needs, and what the LDA's sums cannot give — and each sender sample the
// receiver lacks is one exact loss of the sample.

// SaltSample is the Remix salt of trajectory sampling: its selection and
// digest bits are independent of the LDA's buckets, the RDA's and LDS's
// cells and the timestamp cache's sampling (each uses its own salt).
const SaltSample uint64 = 0x54524a53_d6e8feb8 // "TRJS"

// SampleMaxLevel is the deepest sampling level: 1 packet in 2^32. The
// selection compares the top 32 bits of the remixed identity with the
// sample's threshold and the digest takes bits of its low 32, so the two
// never share a bit.
const SampleMaxLevel = 32

// SampleAll is the threshold that keeps every packet (level 0): a
// sample keeps the packets whose remixed identity's top 32 bits are below
// its threshold, 1 ≤ threshold ≤ SampleAll.
const SampleAll = 1 << 32

// SampleLevelThreshold is the threshold of a level (≤ SampleMaxLevel):
// 2^(32−level), 1 packet in 2^level.
func SampleLevelThreshold(level uint8) uint64 { return SampleAll >> min(level, SampleMaxLevel) }

// SampleThresholdLevel is the level of a threshold: the L with
// 2^(32−L−1) < threshold ≤ 2^(32−L), whose rate (1 in 2^L) the
// threshold's is at most and more than half of; the threshold of that
// level when it is one.
func SampleThresholdLevel(threshold uint64) uint8 {
	return uint8(SampleMaxLevel - bits.Len64(max(threshold, 1)-1))
}

// SampleMaxCapacity bounds a sample's capacity (and what a decoder
// accepts): 2^24 samples, 256 MiB held, far beyond any interval's control
// budget.
const SampleMaxCapacity = 1 << 24

// SampleConfig configures a Sample.
type SampleConfig struct {
	// Level: an interval starts keeping the packets whose remixed
	// identity has its top Level bits zero, 1 in 2^Level.
	Level uint8
	// Capacity is the most samples held. An Add that finds the sample
	// full raises the level by one and drops the samples the new level no
	// longer keeps (about half), so the sample stays a uniform one of the
	// whole interval at the rate it ends with.
	Capacity int
}

// DefaultSampleConfig keeps every packet until 16 384 are held, then
// halves as often as needed: an interval of more than 16 384 packets ends
// with 8 192 to 16 384 samples (enough to bound p99.9 at 98 %, which
// takes 4 603: docs/sample.md, "Sizing"), 256 KiB per class and end.
func DefaultSampleConfig() SampleConfig { return SampleConfig{Level: 0, Capacity: 16384} }

// Validate says whether NewSample accepts c (errors wrap ErrBadConfig).
func (c SampleConfig) Validate() error {
	if c.Level > SampleMaxLevel {
		return fmt.Errorf("%w: sample level %d above %d", ErrBadConfig, c.Level, SampleMaxLevel)
	}
	if c.Capacity < 1 || c.Capacity > SampleMaxCapacity {
		return fmt.Errorf("%w: sample capacity %d outside 1..%d", ErrBadConfig, c.Capacity, SampleMaxCapacity)
	}
	return nil
}

// sampleEntry is one sampled packet: s = Remix(h, SaltSample) (a decoded
// sample knows only its low digest bits) and its timestamp.
type sampleEntry struct {
	s, ts uint64
}

// Sample is one end's trajectory sample of one interval and class: the
// digest and timestamp of every packet its threshold keeps. The
// threshold starts at the configured level's; it halves (the level rises)
// when the sample is full, and a sender cuts it to any value below to fit
// its share of the control budget (CutToCount).
//
// Add allocates nothing: the entries are allocated once, at the
// configured capacity. Not safe for concurrent use.
type Sample struct {
	cfg      SampleConfig
	thresh   uint64        // keeps the packets whose s>>32 is below it: 1..SampleAll
	ents     []sampleEntry // len: held; cap: the capacity
	offered  uint64        // Add calls this interval
	raised   uint32        // times the level rose this interval
	overflow uint64        // packets kept by the level but not held: full at SampleMaxLevel
	errNs    uint64        // bound on any stamp's uncertainty, ns
	decoded  bool          // entries hold only the digest (UnmarshalBinary)
	// Of a decoded sample: its encoding's digest width and Rice
	// parameter, so that it encodes to the same bytes.
	digestBits, riceK uint8
	// flows[i] is the flow hash of ents[i] (TrackFlows); nil when the
	// sample keeps no flows. Same length as ents whenever it is non-nil.
	flows []uint64
}

// NewSample returns an empty sample with room for cfg.Capacity entries.
func NewSample(cfg SampleConfig) (*Sample, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Sample{cfg: cfg, thresh: SampleLevelThreshold(cfg.Level), ents: make([]sampleEntry, 0, cfg.Capacity)}, nil
}

// TrackFlows makes the sample keep each entry's flow hash (AddFlow), as
// the receiver needs to attribute a paired delay to its flow
// (MatchSamples' FlowDelays): 8 bytes more per entry, allocated here,
// once. Call it before the first Add; a sample decoded from the wire
// keeps no flows (they are not shipped).
func (p *Sample) TrackFlows() {
	if p.flows == nil {
		p.flows = make([]uint64, len(p.ents), cap(p.ents))
	}
}

// TracksFlows says whether the sample keeps each entry's flow hash.
func (p *Sample) TracksFlows() bool { return p.flows != nil }

// Config returns the configuration the sample was built with.
func (p *Sample) Config() SampleConfig { return p.cfg }

// Reset empties the sample for the next interval at the configured level.
// It keeps the entries' memory.
func (p *Sample) Reset() {
	p.thresh = SampleLevelThreshold(p.cfg.Level)
	p.ents = p.ents[:0]
	if p.flows != nil {
		p.flows = p.flows[:0]
	}
	p.offered, p.raised, p.overflow, p.errNs, p.decoded = 0, 0, 0, 0, false
}

// Threshold is the selection the interval has reached: every packet
// whose remixed identity's top 32 bits are below it is held (Level's
// threshold until a cut, CutToCount).
func (p *Sample) Threshold() uint64 { return p.thresh }

// Level is the sampling level the interval has reached
// (SampleThresholdLevel of the threshold): every packet whose remixed
// identity has its top Level bits zero is held where the threshold is
// the level's, a share of them above half after a cut.
func (p *Sample) Level() uint8 { return SampleThresholdLevel(p.thresh) }

// Rate is the share of packets the threshold keeps: threshold / 2^32.
func (p *Sample) Rate() float64 { return float64(p.thresh) / SampleAll }

// Len is the number of samples held.
func (p *Sample) Len() int { return len(p.ents) }

// Offered is the number of Add calls this interval (every packet, sampled
// or not).
func (p *Sample) Offered() uint64 { return p.offered }

// Raised is how often the level rose this interval because the sample was
// full.
func (p *Sample) Raised() uint32 { return p.raised }

// Overflow counts packets the level kept but the sample could not hold:
// full at SampleMaxLevel. A sample with overflow is not a uniform one of
// its interval (it misses the interval's end) and MatchSamples refuses it.
func (p *Sample) Overflow() uint64 { return p.overflow }

// SetStampErr raises the sample's stamp uncertainty bound to ns if it is
// larger: how far any stamp Add was given may be from the packet's real
// departure or arrival. The quantile bounds widen by both ends' bounds.
func (p *Sample) SetStampErr(ns uint64) { p.errNs = max(p.errNs, ns) }

// StampErrNs is the stamp uncertainty bound (SetStampErr).
func (p *Sample) StampErrNs() uint64 { return p.errNs }

// sampleKept says whether threshold t keeps the packet whose remixed
// identity is s.
func sampleKept(s, t uint64) bool { return s>>32 < t }

// SampleSelected says whether a sample at level keeps the packet of
// identity h: what both ends decide alike, and what a ground truth uses to
// find the sampled packets.
func SampleSelected(h uint64, level uint8) bool {
	return sampleKept(Remix(h, SaltSample), SampleLevelThreshold(level))
}

// SampleSelectedAt is SampleSelected for a sample at threshold t.
func SampleSelectedAt(h, t uint64) bool { return sampleKept(Remix(h, SaltSample), t) }

// SampleDigest is the digest of the packet of identity h: the low 32
// bits of its remixed identity (a sample ships its low digest bits,
// AppendBinary).
func SampleDigest(h uint64) uint32 { return uint32(Remix(h, SaltSample)) }

// Add records that packet h (its identity hash, classifier.Meta.Hash) was
// sent or received at ts (ns), if the level keeps it. It allocates
// nothing; when the sample is full it raises the level in place (an
// O(capacity) pass, at most once per doubling of the interval's packets).
func (p *Sample) Add(h, ts uint64) { p.add(h, 0, ts) }

// AddFlow is Add for a packet of flow flowHash (classifier.Meta.FlowHash,
// 0 for none), kept with its entry when the sample tracks flows.
func (p *Sample) AddFlow(h, flowHash, ts uint64) { p.add(h, flowHash, ts) }

func (p *Sample) add(h, flowHash, ts uint64) {
	p.offered++
	s := Remix(h, SaltSample)
	if !sampleKept(s, p.thresh) {
		return
	}
	for len(p.ents) == cap(p.ents) {
		if p.thresh <= 1 {
			p.overflow++
			return
		}
		p.raise()
		if !sampleKept(s, p.thresh) {
			return
		}
	}
	p.ents = append(p.ents, sampleEntry{s, ts})
	if p.flows != nil {
		p.flows = append(p.flows, flowHash) // room: the same capacity
	}
}

// raise halves the threshold (the level rises by one) and drops, in
// place and in order, the entries it no longer keeps.
func (p *Sample) raise() {
	p.raised++
	p.cut(p.thresh / 2)
}

// cut lowers the threshold to t (≥ 1, below the current one) and drops,
// in place and in order, the entries it no longer keeps.
func (p *Sample) cut(t uint64) {
	p.thresh = t
	k := 0
	for i, e := range p.ents {
		if sampleKept(e.s, p.thresh) {
			p.ents[k] = e
			if p.flows != nil {
				p.flows[k] = p.flows[i]
			}
			k++
		}
	}
	p.ents = p.ents[:k]
	if p.flows != nil {
		p.flows = p.flows[:k]
	}
}

// RaiseTo deepens the sample to level (nothing when it is there or
// deeper): CutTo the level's threshold.
func (p *Sample) RaiseTo(level uint8) error {
	if level > SampleMaxLevel {
		return fmt.Errorf("%w: sample level %d above %d", ErrBadConfig, level, SampleMaxLevel)
	}
	return p.CutTo(SampleLevelThreshold(level))
}

// CutTo lowers the sample's threshold to t (nothing when it is there or
// lower), dropping in place the entries t does not keep: the sample stays
// the packets of the whole interval that t keeps. It allocates nothing;
// a decoded sample, which knows only digests, cannot be cut (an error
// wrapping ErrConfigMismatch).
func (p *Sample) CutTo(t uint64) error {
	if t < 1 || t > SampleAll {
		return fmt.Errorf("%w: sample threshold %d outside 1..2^32", ErrBadConfig, t)
	}
	if p.thresh <= t {
		return nil
	}
	if p.decoded {
		return fmt.Errorf("%w: a decoded sample cannot be cut (its entries hold only digests)", ErrConfigMismatch)
	}
	p.cut(t) // a cut is not the sample filling up: raised stays
	return nil
}

// CutToCount cuts the sample to the highest threshold that keeps at most
// k of its entries — those of the k smallest selection values, k of the
// interval's packets drawn uniformly without replacement (bottom-k
// sampling), as both ends select them alike — or to threshold 1 where
// even that keeps more (packets whose selection value is 0). What a
// sender ships when its sample does not fit its share of the control
// budget: the sample stays the packets of the whole interval that the
// threshold keeps. It allocates a scratch copy of the selection values
// (for the control side); a decoded sample cannot be cut.
func (p *Sample) CutToCount(k int) error {
	if len(p.ents) <= max(k, 0) {
		return nil
	}
	if p.decoded {
		return fmt.Errorf("%w: a decoded sample cannot be cut (its entries hold only digests)", ErrConfigMismatch)
	}
	sel := make([]uint64, len(p.ents))
	for i, e := range p.ents {
		sel[i] = e.s >> 32
	}
	slices.Sort(sel)
	// Keep those below the (k+1)-th smallest: at most k (ties go together).
	return p.CutTo(max(sel[max(k, 0)], 1))
}

// Merge adds o's samples of the same interval (another worker's share of
// the traffic) to p: both are cut to the lower of their thresholds,
// then o's entries are appended, and the level rises further while they
// do not fit. Counters add up. It allocates nothing; an error (wrapping
// ErrConfigMismatch) for a decoded sample, which cannot be cut, leaves p
// unchanged. The merged entries are in p's order then o's, not in stamp
// order: the encoding stays correct (its gaps are signed), a little
// larger. Where p tracks flows its merged entries keep theirs (0 for o's
// when o keeps none).
func (p *Sample) Merge(o *Sample) error {
	if p.decoded || o.decoded {
		return fmt.Errorf("%w: a decoded sample cannot be merged (its entries hold only digests)", ErrConfigMismatch)
	}
	if o.thresh < p.thresh {
		p.cut(o.thresh)
	}
	for i, e := range o.ents {
		if !sampleKept(e.s, p.thresh) {
			continue
		}
		for len(p.ents) == cap(p.ents) && p.thresh > 1 {
			p.raise()
		}
		if !sampleKept(e.s, p.thresh) {
			continue
		}
		if len(p.ents) == cap(p.ents) {
			p.overflow++
			continue
		}
		p.ents = append(p.ents, e)
		if p.flows != nil {
			var f uint64 // 0: o keeps no flows
			if o.flows != nil {
				f = o.flows[i]
			}
			p.flows = append(p.flows, f)
		}
	}
	p.offered += o.offered
	// Every level above the configured one was reached because one of
	// the shares was full.
	p.raised = uint32(p.Level() - min(p.Level(), p.cfg.Level))
	p.overflow += o.overflow
	p.errNs = max(p.errNs, o.errNs)
	return nil
}

// Clone returns a copy of p with its own entries (the same capacity).
func (p *Sample) Clone() *Sample {
	c := *p
	c.ents = append(make([]sampleEntry, 0, cap(p.ents)), p.ents...)
	if p.flows != nil {
		c.flows = append(make([]uint64, 0, cap(p.flows)), p.flows...)
	}
	return &c
}

// Wire encoding of a Sample (AppendBinary):
//
//	magic "SMP", version 2
//	uvarint threshold (1..2^32), uvarint stamp error bound (ns)
//	uvarint offered, uvarint raised, uvarint overflow
//	uvarint count n; when n > 0:
//	  uvarint the first stamp, byte digest width b (16..32), byte Rice
//	  parameter k (0..63), then a bit stream (LSB first, zero-padded to a
//	  byte): per sample its digest's low b bits and, from the second on,
//	  the Rice code of z, the zig-zag of its stamp − the previous one: q =
//	  z>>k as q one bits and a zero, then z's low k bits — or, where q ≥
//	  sampleRiceEscape, that many one bits and z in 64 bits.
//
// The digest is the low bits of the remixed identity: b = 24 up to 1 023
// samples, then one bit more per doubling up to 32 (sampleDigestBits),
// so that two samples share a digest with a chance of n/2^(b+1) at most
// 2^-15 of the samples. Stamps go in the order the packets were added, so
// the gaps are those between sampled packets, about geometric: k is the
// one that codes them in the fewest bits, about log2 of the mean gap plus
// 1.5 bits each. A stamp that goes back (another stamping source,
// reordering before the stamp, two merged shares) costs its sign bit, a
// large one the escape. About 6 bytes a sample at 1 sample a ms
// (BenchmarkSampleEncode measures it).
const (
	sampleMagic   = "SMP"
	sampleVersion = 2
	// sampleMinDigestBits, sampleMaxDigestBits bound the digest width a
	// decoder accepts; the encoder takes sampleDigestBits.
	sampleMinDigestBits = 16
	sampleMaxDigestBits = 32
	// sampleRiceEscape: a gap whose Rice quotient reaches it is written
	// in 64 bits after as many one bits.
	sampleRiceEscape = 32
)

// sampleDigestBits is the digest width the encoder gives n samples.
func sampleDigestBits(n int) uint8 {
	return uint8(min(max(bits.Len(uint(n))+14, 24), sampleMaxDigestBits))
}

// zigzag maps a signed stamp difference to an unsigned one (0, −1, 1, −2
// … to 0, 1, 2, 3 …).
func zigzag(d int64) uint64 { return uint64(d<<1) ^ uint64(d>>63) }

// riceParam is the Rice parameter that codes zs in the fewest bits.
func riceParam(zs func(yield func(uint64) bool)) uint8 {
	var cost [64]uint64
	for z := range zs {
		for k := range cost {
			q := z >> k
			c := uint64(k) + 1 + q
			if q >= sampleRiceEscape {
				c = sampleRiceEscape + 64
			}
			if cost[k]+c < cost[k] {
				cost[k] = ^uint64(0) // saturate
			} else {
				cost[k] += c
			}
		}
	}
	best := 0
	for k := range cost {
		if cost[k] < cost[best] {
			best = k
		}
	}
	return uint8(best)
}

// AppendBinary appends the sample's encoding to b. A sample decoded from
// the wire encodes to the same bytes.
func (p *Sample) AppendBinary(b []byte) ([]byte, error) {
	b = append(b, sampleMagic...)
	b = append(b, sampleVersion)
	b = binary.AppendUvarint(b, p.thresh)
	b = binary.AppendUvarint(b, p.errNs)
	b = binary.AppendUvarint(b, p.offered)
	b = binary.AppendUvarint(b, uint64(p.raised))
	b = binary.AppendUvarint(b, p.overflow)
	b = binary.AppendUvarint(b, uint64(len(p.ents)))
	if len(p.ents) == 0 {
		return b, nil
	}
	b = binary.AppendUvarint(b, p.ents[0].ts)
	db, k := p.digestBits, p.riceK
	if !p.decoded {
		db = sampleDigestBits(len(p.ents))
		k = riceParam(func(yield func(uint64) bool) {
			for i := 1; i < len(p.ents); i++ {
				if !yield(zigzag(int64(p.ents[i].ts - p.ents[i-1].ts))) {
					return
				}
			}
		})
	}
	b = append(b, db, k)
	w := bitWriter{b: b}
	for i, e := range p.ents {
		w.write(e.s, uint(db))
		if i == 0 {
			continue
		}
		z := zigzag(int64(e.ts - p.ents[i-1].ts))
		if q := z >> k; q < sampleRiceEscape {
			w.write(1<<q-1, uint(q)+1) // q ones, then the zero
			w.write(z, uint(k))
		} else {
			w.write(1<<sampleRiceEscape-1, sampleRiceEscape)
			w.write(z, 64)
		}
	}
	return w.flush(), nil
}

// UnmarshalBinary replaces p's contents with the decoded sample. The
// decoded sample keeps only each packet's digest: it can be matched
// (MatchSamples), encoded again, not added to or cut. It reuses p's
// entries when they have room and allocates otherwise (for the control
// side, not the hot path). On error (wrapping ErrBadEncoding) p is
// unchanged. The decoded count may exceed p's configured capacity, up to
// SampleMaxCapacity.
func (p *Sample) UnmarshalBinary(b []byte) error {
	r := encReader{b: b}
	r.magic(sampleMagic, sampleVersion)
	thresh := r.uvarint("threshold")
	errNs := r.uvarint("stamp error")
	offered := r.uvarint("offered")
	raised := r.uvarint("raised")
	overflow := r.uvarint("overflow")
	n := r.uvarint("count")
	if r.err == nil && (thresh < 1 || thresh > SampleAll) {
		r.fail("sample threshold %d outside 1..2^32", thresh)
	}
	if r.err == nil && raised > SampleMaxLevel {
		r.fail("sample raised %d times, more than %d levels", raised, SampleMaxLevel)
	}
	if r.err == nil && n > SampleMaxCapacity {
		r.fail("sample count %d above %d", n, SampleMaxCapacity)
	}
	if r.err == nil && n > offered {
		r.fail("sample count %d above the %d packets offered", n, offered)
	}
	var first uint64
	var db, k uint8
	if n > 0 {
		first = r.uvarint("first stamp")
		db, k = r.u8("digest width"), r.u8("Rice parameter")
	}
	if r.err == nil && n > 0 && (db < sampleMinDigestBits || db > sampleMaxDigestBits || k > 63) {
		r.fail("digest width %d (want %d..%d) or Rice parameter %d (want ≤ 63)", db, sampleMinDigestBits, sampleMaxDigestBits, k)
	}
	// Every sample takes its digest and, but the first, at least k+1
	// bits: check the count against the bytes before allocating.
	if r.err == nil && n > 0 && (n-1)*(uint64(k)+1)+n*uint64(db) > 8*uint64(len(r.b)) {
		r.fail("sample count %d: %d bytes cannot hold it", n, len(r.b))
	}
	if r.err != nil {
		return r.err
	}
	ents := p.ents[:0]
	if uint64(cap(ents)) < n {
		ents = make([]sampleEntry, 0, n)
	}
	br := bitReader{b: r.b}
	prev := first
	for i := uint64(0); i < n && r.err == nil; i++ {
		d := br.read(uint(db))
		if i > 0 {
			var q uint64
			for q < sampleRiceEscape && br.read(1) == 1 && !br.err {
				q++
			}
			var z uint64
			if q == sampleRiceEscape {
				if z = br.read(64); z>>k < sampleRiceEscape && !br.err {
					r.fail("stamp gap %d escaped: its Rice code is shorter", i)
				}
			} else {
				if q > math.MaxUint64>>k {
					// More ones than a 64-bit gap has above its k low
					// bits: no encoder writes it, and q<<k would drop them.
					r.fail("stamp gap %d: Rice quotient %d does not fit 64 bits with parameter %d", i, q, k)
				}
				z = q<<k | br.read(uint(k))
			}
			prev += uint64(int64(z>>1) ^ -int64(z&1))
		}
		if br.err {
			r.fail("truncated at sample %d", i)
			break
		}
		ents = append(ents, sampleEntry{d, prev})
	}
	if r.err == nil && !br.cleanEnd() {
		r.fail("bits after the last sample")
	}
	if r.err != nil {
		return r.err
	}
	p.ents = ents
	p.flows = nil // not shipped
	p.thresh, p.errNs, p.offered, p.raised, p.overflow, p.decoded = thresh, errNs, offered, uint32(raised), overflow, true
	p.digestBits, p.riceK = db, k
	if p.cfg.Capacity == 0 {
		p.cfg = SampleConfig{Level: SampleThresholdLevel(thresh), Capacity: max(int(n), 1)}
	}
	return nil
}

// DecodeSample decodes a sample from its wire encoding (AppendBinary).
func DecodeSample(b []byte) (*Sample, error) {
	p := &Sample{}
	if err := p.UnmarshalBinary(b); err != nil {
		return nil, err
	}
	return p, nil
}
