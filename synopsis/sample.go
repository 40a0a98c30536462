package synopsis

import (
	"encoding/binary"
	"fmt"
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
// selection uses the top Level bits of the remixed identity and the digest
// its low 32 bits, so up to this level the two never share a bit.
const SampleMaxLevel = 32

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
// sample knows only its low 32 bits, the digest) and its timestamp.
type sampleEntry struct {
	s, ts uint64
}

// Sample is one end's trajectory sample of one interval and class: the
// digest and timestamp of every packet the sampling level keeps.
//
// Add allocates nothing: the entries are allocated once, at the
// configured capacity. Not safe for concurrent use.
type Sample struct {
	cfg      SampleConfig
	level    uint8
	ents     []sampleEntry // len: held; cap: the capacity
	offered  uint64        // Add calls this interval
	raised   uint32        // times the level rose this interval
	overflow uint64        // packets kept by the level but not held: full at SampleMaxLevel
	errNs    uint64        // bound on any stamp's uncertainty, ns
	decoded  bool          // entries hold only the digest (UnmarshalBinary)
	// flows[i] is the flow hash of ents[i] (TrackFlows); nil when the
	// sample keeps no flows. Same length as ents whenever it is non-nil.
	flows []uint64
}

// NewSample returns an empty sample with room for cfg.Capacity entries.
func NewSample(cfg SampleConfig) (*Sample, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Sample{cfg: cfg, level: cfg.Level, ents: make([]sampleEntry, 0, cfg.Capacity)}, nil
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
	p.level = p.cfg.Level
	p.ents = p.ents[:0]
	if p.flows != nil {
		p.flows = p.flows[:0]
	}
	p.offered, p.raised, p.overflow, p.errNs, p.decoded = 0, 0, 0, 0, false
}

// Level is the sampling level the interval has reached: every packet
// whose remixed identity has its top Level bits zero is held.
func (p *Sample) Level() uint8 { return p.level }

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

// sampleKept says whether level keeps the packet whose remixed identity
// is s.
func sampleKept(s uint64, level uint8) bool {
	return s>>(64-uint(level)) == 0 // level 0: s>>64 == 0 in Go, every packet
}

// SampleSelected says whether a sample at level keeps the packet of
// identity h: what both ends decide alike, and what a ground truth uses to
// find the sampled packets.
func SampleSelected(h uint64, level uint8) bool { return sampleKept(Remix(h, SaltSample), level) }

// SampleDigest is the digest a sample ships for the packet of identity h:
// the low 32 bits of its remixed identity.
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
	if !sampleKept(s, p.level) {
		return
	}
	for len(p.ents) == cap(p.ents) {
		if p.level >= SampleMaxLevel {
			p.overflow++
			return
		}
		p.raise()
		if !sampleKept(s, p.level) {
			return
		}
	}
	p.ents = append(p.ents, sampleEntry{s, ts})
	if p.flows != nil {
		p.flows = append(p.flows, flowHash) // room: the same capacity
	}
}

// raise deepens the level by one and drops, in place and in order, the
// entries it no longer keeps.
func (p *Sample) raise() {
	p.level++
	p.raised++
	k := 0
	for i, e := range p.ents {
		if sampleKept(e.s, p.level) {
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
// deeper), dropping in place the entries the deeper level does not keep:
// what a sender ships when its whole sample does not fit its share of the
// control budget. The sample stays the packets of the whole interval that
// level keeps. It allocates nothing; a decoded sample, which knows only
// digests, cannot be cut (an error wrapping ErrConfigMismatch).
func (p *Sample) RaiseTo(level uint8) error {
	if level > SampleMaxLevel {
		return fmt.Errorf("%w: sample level %d above %d", ErrBadConfig, level, SampleMaxLevel)
	}
	if p.level >= level {
		return nil
	}
	if p.decoded {
		return fmt.Errorf("%w: a decoded sample cannot be cut (its entries hold only digests)", ErrConfigMismatch)
	}
	raised := p.raised // a cut is not the sample filling up
	for p.level < level {
		p.raise()
	}
	p.raised = raised
	return nil
}

// Merge adds o's samples of the same interval (another worker's share of
// the traffic) to p: both are cut to the deeper of their levels, then o's
// entries are appended, and the level rises further while they do not
// fit. Counters add up. It allocates nothing; an error (wrapping
// ErrConfigMismatch) for a decoded sample, which cannot be cut, leaves p
// unchanged. The merged entries are in p's order then o's, not in stamp
// order: the encoding stays correct (its deltas are signed), a little
// larger. Where p tracks flows its merged entries keep theirs (0 for o's
// when o keeps none).
func (p *Sample) Merge(o *Sample) error {
	if p.decoded || o.decoded {
		return fmt.Errorf("%w: a decoded sample cannot be merged (its entries hold only digests)", ErrConfigMismatch)
	}
	for p.level < o.level {
		p.raise()
	}
	for i, e := range o.ents {
		if !sampleKept(e.s, p.level) {
			continue
		}
		for len(p.ents) == cap(p.ents) && p.level < SampleMaxLevel {
			p.raise()
		}
		if !sampleKept(e.s, p.level) {
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
	p.raised = uint32(p.level - min(p.level, p.cfg.Level))
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
//	magic "SMP", version 1
//	uvarint level, uvarint stamp error bound (ns)
//	uvarint offered, uvarint raised, uvarint overflow
//	uvarint count n, then when n > 0 uvarint the first stamp
//	n × { 4-byte little-endian digest, zig-zag varint stamp − previous stamp }
//
// The digest is the low 32 bits of the remixed identity. Stamps go in the
// order the packets were added, so the deltas are the gaps between sampled
// packets: 3 bytes each up to about 1 ms apart, 7 bytes a sample in all
// (BenchmarkSampleEncode measures it). A stamp that goes back (another
// stamping source, reordering before the stamp) costs nothing more than
// its sign bit.
const (
	sampleMagic   = "SMP"
	sampleVersion = 1
	// sampleMinEntryBytes: a digest and a one-byte delta.
	sampleMinEntryBytes = 5
)

// AppendBinary appends the sample's encoding to b. A sample decoded from
// the wire encodes to the same bytes.
func (p *Sample) AppendBinary(b []byte) ([]byte, error) {
	b = append(b, sampleMagic...)
	b = append(b, sampleVersion)
	b = binary.AppendUvarint(b, uint64(p.level))
	b = binary.AppendUvarint(b, p.errNs)
	b = binary.AppendUvarint(b, p.offered)
	b = binary.AppendUvarint(b, uint64(p.raised))
	b = binary.AppendUvarint(b, p.overflow)
	b = binary.AppendUvarint(b, uint64(len(p.ents)))
	if len(p.ents) == 0 {
		return b, nil
	}
	prev := p.ents[0].ts
	b = binary.AppendUvarint(b, prev)
	for _, e := range p.ents {
		b = binary.LittleEndian.AppendUint32(b, uint32(e.s))
		b = binary.AppendVarint(b, int64(e.ts-prev))
		prev = e.ts
	}
	return b, nil
}

// UnmarshalBinary replaces p's contents with the decoded sample. The
// decoded sample keeps only each packet's digest: it can be matched
// (MatchSamples), encoded again, not added to. It reuses p's entries when
// they have room and allocates otherwise (for the control side, not the
// hot path). On error (wrapping ErrBadEncoding) p is unchanged. The
// decoded count may exceed p's configured capacity, up to
// SampleMaxCapacity.
func (p *Sample) UnmarshalBinary(b []byte) error {
	r := encReader{b: b}
	r.magic(sampleMagic, sampleVersion)
	level := r.uvarint("level")
	errNs := r.uvarint("stamp error")
	offered := r.uvarint("offered")
	raised := r.uvarint("raised")
	overflow := r.uvarint("overflow")
	n := r.uvarint("count")
	if r.err == nil && level > SampleMaxLevel {
		r.fail("sample level %d above %d", level, SampleMaxLevel)
	}
	if r.err == nil && raised > SampleMaxLevel {
		r.fail("sample raised %d times, more than %d levels", raised, SampleMaxLevel)
	}
	if r.err == nil && (n > SampleMaxCapacity || n > uint64(len(r.b))/sampleMinEntryBytes) {
		r.fail("sample count %d: at most %d, and %d bytes hold at most %d", n, SampleMaxCapacity, len(r.b), len(r.b)/sampleMinEntryBytes)
	}
	if r.err == nil && n > offered {
		r.fail("sample count %d above the %d packets offered", n, offered)
	}
	var first uint64
	if n > 0 {
		first = r.uvarint("first stamp")
	}
	if r.err != nil {
		return r.err
	}
	ents := p.ents[:0]
	if uint64(cap(ents)) < n {
		ents = make([]sampleEntry, 0, n)
	}
	prev := first
	for i := uint64(0); i < n && r.err == nil; i++ {
		if len(r.b) < 4 {
			r.fail("truncated at digest %d", i)
			break
		}
		d := binary.LittleEndian.Uint32(r.b)
		r.b = r.b[4:]
		delta := r.varint("stamp delta")
		if i == 0 && delta != 0 {
			r.fail("first stamp delta %d, want 0", delta)
		}
		prev += uint64(delta)
		ents = append(ents, sampleEntry{uint64(d), prev})
	}
	if err := r.done(); err != nil {
		return err
	}
	p.ents = ents
	p.flows = nil // not shipped
	p.level, p.errNs, p.offered, p.raised, p.overflow, p.decoded = uint8(level), errNs, offered, uint32(raised), overflow, true
	if p.cfg.Capacity == 0 {
		p.cfg = SampleConfig{Level: uint8(level), Capacity: max(int(n), 1)}
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
