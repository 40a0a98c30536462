package synopsis

import (
	"encoding/binary"
	"fmt"
	"math"
)

// TSCacheMinBudget is the smallest timestamp-cache budget, bytes (64 slots).
const TSCacheMinBudget = 64 * tsEntryBytes

const (
	tsEntryBytes = 16 // one slot: hash + timestamp
	// tsMaxLoadNum/Den: the table holds at most 3/4 of its slots before
	// the sampling level is raised. Linear probing then needs about 8.5
	// probes for a miss (2–3 cache lines), 2.5 for a hit.
	tsMaxLoadNum, tsMaxLoadDen = 3, 4
	// tsMaxLevel: the deepest sampling level (probability 2^-63).
	tsMaxLevel = 63
)

type tsEntry struct {
	h  uint64 // packet identity; 0 marks an empty slot (h == 0 lives in zero)
	ts uint64 // ns, the first time h was seen in this interval
}

// TSCache is the per-interval timestamp cache of RDA repair (paper Sec.
// VIII-A, "late-binding": hash → timestamp of every packet of the
// interval), bounded by a memory budget. It is a preallocated open
// addressing table (linear probing); Insert allocates nothing.
//
// Coordinated sampling (paper Sec. VIII-B, "Cache Size"): the cache holds
// a packet only when s = Remix(h, SaltSampling) has its top Level bits
// zero, i.e. with probability 2^-Level, and the choice depends on h alone,
// so the sender and the receiver hold the same subset. Level starts at 0
// (every packet); when an insert would exceed the budget, Level rises by
// one and the entries no longer sampled are dropped (the sample halves).
// The two ends may end an interval at different levels; repair uses the
// deeper one, where both ends hold every packet they saw (Covers).
//
// A packet seen twice in one interval keeps its first timestamp (Dups
// counts the others); the second copy's is kept aside (LaterCopy), for up
// to maxLater packets, so that a repair can take the copy, not the
// packet, out of a sketch.
//
// Not safe for concurrent use.
type TSCache struct {
	slots   []tsEntry
	mask    uint64 // len(slots) − 1
	limit   int    // most entries before the level rises
	n       int    // entries in slots (not counting zero)
	level   uint8
	hasZero bool
	zero    uint64 // timestamp of h == 0
	offered uint64 // Insert calls this interval
	dups    uint64
	// later holds the second copy's timestamp of the first nLater
	// packets seen twice (a segment that duplicates, rarely); laterLost
	// counts the copies it could not keep (more than maxLater packets, or
	// a third copy). A fixed array: Insert allocates nothing.
	later     [maxLater]tsEntry
	nLater    int
	laterLost uint64
	// maxSlots is the budget's slot count, the ceiling of Reserve.
	maxSlots int
	// partial: built from a timestamp reply (InsertReply), not from every
	// packet of the interval, so a miss means "not asked for", not "not
	// seen".
	partial bool
	// flows, when the cache tracks flows (TrackFlows), holds beside each
	// slot the packet's flow hash, what an LDS needs besides the identity
	// and the timestamp to place the packet (LDSPacket); zeroFlow is h ==
	// 0's.
	flows    []uint64
	zeroFlow uint64
	tracking bool
	// gone: an empty stand-in for a cache no longer kept (GoneTSCache).
	gone bool
}

// NewTSCache returns an empty cache using at most budget bytes of slots
// (16 bytes per slot, 24 once it tracks flows, a power of two; at most 3/4
// of the slots are used).
func NewTSCache(budget int) (*TSCache, error) {
	return newTSCache(budget, false)
}

// newTSCache is NewTSCache; following starts it at tsCacheStartSlots (as
// Reserve(0) would) instead of the whole budget.
func newTSCache(budget int, following bool) (*TSCache, error) {
	if budget < TSCacheMinBudget {
		return nil, fmt.Errorf("%w: timestamp cache budget %d bytes below %d", ErrBadConfig, budget, TSCacheMinBudget)
	}
	slots := 1
	for slots*2*tsEntryBytes <= budget && slots < 1<<40 {
		slots *= 2
	}
	c := &TSCache{maxSlots: slots}
	if following {
		c.Reserve(0)
	} else {
		c.alloc(slots)
	}
	return c, nil
}

// tsCacheStartSlots is the room a cache that follows the traffic starts
// with (64 KiB).
const tsCacheStartSlots = 1 << 12

// Reserve sizes the slots for the next interval: room for twice packets
// (this interval's Distinct, say) within the budget, never less than
// tsCacheStartSlots, so memory follows the traffic instead of the budget
// (16 MiB by default, for 786 432 packets). It empties the cache and
// allocates, so it is for the control side between intervals, on an idle
// copy, never for the hot path.
func (c *TSCache) Reserve(packets uint64) {
	want := uint64(tsCacheStartSlots)
	for want < 2*packets*tsMaxLoadDen/tsMaxLoadNum && want < uint64(c.maxSlots) {
		want *= 2
	}
	want = min(want, uint64(max(c.maxSlots, 1)))
	if int(want) != len(c.slots) {
		c.alloc(int(want))
	}
	c.Reset()
}

// ReserveCache sizes r's timestamp cache for the next interval from the
// distinct packets this one offered it (TSCache.Distinct,
// TSCache.Reserve); the first call from an appliance, before any
// traffic, shrinks it to its starting room. No-op without a cache.
func (r *RDA) ReserveCache() {
	if r.cache != nil {
		r.cache.Reserve(r.cache.Distinct())
	}
}

// TrackFlows makes the cache keep each packet's flow hash (InsertFlow,
// LookupFlow) so that a lost packet can be placed in the LDS (LDSPacket)
// as well as in the RDA. A slot then takes 24 bytes: the budget holds
// fewer of them (the largest power of two whose 24-byte slots fit). It
// empties the cache and allocates: for set-up, never the hot path.
func (c *TSCache) TrackFlows() {
	if c.tracking {
		return
	}
	c.tracking = true
	budget := c.maxSlots * tsEntryBytes
	for c.maxSlots > 64 && c.maxSlots*(tsEntryBytes+8) > budget {
		c.maxSlots /= 2
	}
	c.alloc(min(len(c.slots), c.maxSlots))
	c.Reset()
}

// TracksFlows says whether the cache keeps flow hashes (TrackFlows).
func (c *TSCache) TracksFlows() bool { return c != nil && c.tracking }

func (c *TSCache) alloc(slots int) {
	c.slots = make([]tsEntry, slots)
	c.flows = nil
	if c.tracking {
		c.flows = make([]uint64, slots)
	}
	c.mask = uint64(slots - 1)
	c.limit = slots * tsMaxLoadNum / tsMaxLoadDen
}

// sampled says whether level keeps the packet whose sampling hash is s.
func sampled(s uint64, level uint8) bool {
	return s>>(64-uint(level)) == 0 // level 0: s>>64 == 0 in Go, every packet
}

// Insert records that packet h was seen at ts (ns), if the sampling level
// keeps it. It allocates nothing; when the table is full it raises the
// level in place (an O(slots) pass, at most a few times per interval).
func (c *TSCache) Insert(h, ts uint64) { c.InsertFlow(h, 0, ts) }

// InsertFlow is Insert for a packet of flow fh (0: no flow); the flow
// hash is kept when the cache tracks flows.
func (c *TSCache) InsertFlow(h, fh, ts uint64) {
	c.offered++
	s := Remix(h, SaltSampling)
	if !sampled(s, c.level) {
		return
	}
	if h == 0 {
		if c.hasZero {
			c.dups++
			c.zero = c.noteLater(0, c.zero, ts)
			return
		}
		c.hasZero, c.zero, c.zeroFlow = true, ts, fh
		return
	}
	c.put(h, s, ts, fh, true)
}

// maxLater bounds the packets seen twice whose second copy's timestamp a
// cache keeps (16 bytes each).
const maxLater = 128

// noteLater records a second copy of h: of first (the timestamp kept) and
// ts, the earlier is the packet's and is returned, the later goes aside.
func (c *TSCache) noteLater(h, first, ts uint64) uint64 {
	if c.nLater == maxLater {
		// Full: lost whether h is there (a third copy) or not, so no
		// search (a capture replayed in a loop repeats every packet).
		c.laterLost++
		return first
	}
	for i := range c.later[:c.nLater] {
		if c.later[i].h == h {
			c.laterLost++ // a third copy: which one is the packet's is moot
			return first
		}
	}
	if ts < first {
		first, ts = ts, first
	}
	c.later[c.nLater] = tsEntry{h: h, ts: ts}
	c.nLater++
	return first
}

// LaterCopy returns the timestamp of the second copy of h when h was seen
// twice (ok), so a repair can take that copy out of a sketch and leave the
// packet (its first copy); complete is false when the cache could not keep
// every second copy (LaterLost > 0): then a packet seen once here may have
// had a copy too.
func (c *TSCache) LaterCopy(h uint64) (ts uint64, ok, complete bool) {
	if c == nil {
		return 0, false, false
	}
	for _, e := range c.later[:c.nLater] {
		if e.h == h {
			return e.ts, true, c.laterLost == 0
		}
	}
	return 0, false, c.laterLost == 0
}

// SeenOnce says whether the timestamp kept for h is h's only one: h was
// not seen twice, and the cache kept every second copy it saw (so it
// would know). A timestamp of an identity seen twice is ambiguous where
// which copy is meant is unknown (a sender's lost copy).
func (c *TSCache) SeenOnce(h uint64) bool {
	if c == nil || c.dups == 0 {
		return true
	}
	_, dup, complete := c.LaterCopy(h)
	return !dup && complete
}

// LaterLost counts the second (and further) copies whose timestamps the
// cache did not keep.
func (c *TSCache) LaterLost() uint64 { return c.laterLost }

// put stores (h, ts, fh) at home position s; sample: raise the level when
// full.
func (c *TSCache) put(h, s, ts, fh uint64, sample bool) {
again:
	for i := s & c.mask; ; i = (i + 1) & c.mask {
		e := &c.slots[i]
		if e.h == h {
			c.dups++
			e.ts = c.noteLater(h, e.ts, ts)
			return
		}
		if e.h != 0 {
			continue
		}
		if c.n >= c.limit {
			if !sample || c.level >= tsMaxLevel {
				return // full (partial cache sized for its reply, or pathological input)
			}
			c.raiseLevel(c.level + 1)
			if !sampled(s, c.level) {
				return
			}
			goto again
		}
		e.h, e.ts = h, ts
		if c.flows != nil {
			c.flows[i] = fh
		}
		c.n++
		return
	}
}

// raiseLevel drops every entry the new level does not sample and closes
// the holes so linear probing stays correct (in-place rehash: after the
// first empty slot, every entry is taken out and put back; it lands at or
// before its old place in probe order).
func (c *TSCache) raiseLevel(level uint8) {
	if level <= c.level {
		return
	}
	c.level = level
	if c.hasZero && !sampled(Remix(0, SaltSampling), level) {
		c.hasZero = false
	}
	for i := range c.slots {
		e := &c.slots[i]
		if e.h != 0 && !sampled(Remix(e.h, SaltSampling), level) {
			*e = tsEntry{}
			c.n--
		}
	}
	start := -1
	for i := range c.slots {
		if c.slots[i].h == 0 {
			start = i
			break
		}
	}
	if start < 0 {
		return // cannot happen: the table is never full (limit < slots)
	}
	for j := 1; j <= len(c.slots); j++ {
		i := (uint64(start) + uint64(j)) & c.mask
		e := c.slots[i]
		if e.h == 0 {
			continue
		}
		c.slots[i] = tsEntry{}
		for p := Remix(e.h, SaltSampling) & c.mask; ; p = (p + 1) & c.mask {
			if c.slots[p].h == 0 {
				c.slots[p] = e
				if c.flows != nil {
					c.flows[p] = c.flows[i]
				}
				break
			}
		}
	}
}

// Lookup returns the timestamp recorded for h.
func (c *TSCache) Lookup(h uint64) (ts uint64, ok bool) {
	if c == nil {
		return 0, false
	}
	if h == 0 {
		return c.zero, c.hasZero
	}
	for i := Remix(h, SaltSampling) & c.mask; ; i = (i + 1) & c.mask {
		e := &c.slots[i]
		if e.h == h {
			return e.ts, true
		}
		if e.h == 0 {
			return 0, false
		}
	}
}

// LookupFlow is Lookup that also returns the packet's flow hash (0 when
// the cache does not track flows, or the packet had no flow).
func (c *TSCache) LookupFlow(h uint64) (ts, fh uint64, ok bool) {
	if c == nil {
		return 0, 0, false
	}
	if h == 0 {
		return c.zero, c.zeroFlow, c.hasZero
	}
	for i := Remix(h, SaltSampling) & c.mask; ; i = (i + 1) & c.mask {
		e := &c.slots[i]
		if e.h == h {
			if c.flows != nil {
				fh = c.flows[i]
			}
			return e.ts, fh, true
		}
		if e.h == 0 {
			return 0, 0, false
		}
	}
}

// Covers says whether a cache at sampling level would hold h had it seen
// it.
func Covers(h uint64, level uint8) bool { return sampled(Remix(h, SaltSampling), level) }

// Level is the sampling level: the cache holds a packet with probability
// 2^-Level.
func (c *TSCache) Level() uint8 { return c.level }

// SampleFraction is 2^-Level.
func (c *TSCache) SampleFraction() float64 { return math.Ldexp(1, -int(c.level)) }

// Len is the number of packets held.
func (c *TSCache) Len() int {
	if c == nil {
		return 0
	}
	if c.hasZero {
		return c.n + 1
	}
	return c.n
}

// Offered is the number of Insert calls since Reset.
func (c *TSCache) Offered() uint64 { return c.offered }

// Dups counts inserts of a hash already held (its first timestamp kept).
func (c *TSCache) Dups() uint64 { return c.dups }

// Distinct is Offered less Dups: the packets offered that were not
// copies of one the cache held. A copy takes no slot, so this, not
// Offered, is what the next interval's cache needs room for (Reserve):
// traffic that repeats a few thousand packets, as a replayed capture
// does, needs a few thousand slots, not one per packet sent. It is the
// number of distinct packets offered, or more when the cache sampled
// (only a sampled packet's copies are found): never less.
func (c *TSCache) Distinct() uint64 { return c.offered - min(c.dups, c.offered) }

// Partial says the cache was built from a timestamp reply: a miss means
// "not asked for".
func (c *TSCache) Partial() bool { return c.partial }

// Reset empties the cache and returns it to level 0.
func (c *TSCache) Reset() {
	clear(c.slots)
	clear(c.flows)
	c.n, c.level, c.hasZero, c.zero, c.zeroFlow, c.offered, c.dups = 0, 0, false, 0, 0, 0, 0
	c.nLater, c.laterLost = 0, 0
}

// Clone returns a deep copy.
func (c *TSCache) Clone() *TSCache {
	d := *c
	d.slots = append([]tsEntry(nil), c.slots...)
	if c.flows != nil {
		d.flows = append([]uint64(nil), c.flows...)
	}
	return &d
}

// Merge adds o's entries (another worker's shard of the same interval).
// The result is at the deeper of the two levels, raised further if the
// entries do not fit.
func (c *TSCache) Merge(o *TSCache) {
	c.raiseLevel(o.level)
	c.offered += o.offered
	c.dups += o.dups
	c.laterLost += o.laterLost
	for _, e := range o.later[:o.nLater] {
		// o's second copies: a packet seen twice in o alone (a packet's
		// copies take the same lane).
		if c.nLater < maxLater {
			c.later[c.nLater] = e
			c.nLater++
		} else {
			c.laterLost++
		}
	}
	if o.hasZero && sampled(Remix(0, SaltSampling), c.level) {
		if c.hasZero {
			c.dups++
			c.zero = c.noteLater(0, c.zero, o.zero)
		} else {
			c.hasZero, c.zero, c.zeroFlow = true, o.zero, o.zeroFlow
		}
	}
	for i, e := range o.slots {
		if e.h != 0 {
			s := Remix(e.h, SaltSampling)
			if sampled(s, c.level) {
				var fh uint64
				if o.flows != nil {
					fh = o.flows[i]
				}
				c.put(e.h, s, e.ts, fh, true)
			}
		}
	}
}

// Timestamp request and reply (docs/rda.md, "Exchange"). After peeling,
// the receiver knows the identities of the lost packets but not their
// sender timestamps; it asks for them with a request and the sender
// answers from its cache with a reply. Both are versioned and compact:
//
//	request: 'Q' ver | uvarint count | count × id (uint64 LE)
//	reply:   'A' ver | [flags, version 2 only] | uvarint count |
//	         check (uint64 LE) | base (uint64 LE) | count × entry
//	entry:   uvarint v [| flow (uint64 LE): flags bit 0 set and v ≠ 0]
//	         v = 0: not cached, else ts = base + v − 1
//
// The reply lists timestamps in the order of the request (the ids are not
// repeated); check, the XOR of Remix(id, SaltSampling) over the requested
// ids, binds it to its request. base is the smallest timestamp sent, so v
// is a few bytes (delays within one interval). Version 2 has a flags byte
// (bit 0: flows; other bits zero): with it set, each cached packet's flow
// hash follows its v (0: the packet had no flow), so the receiver can take
// the lost packet out of the sender's LDS too (LDSPacket; its weight is
// its class's). A sender whose cache does not track flows (no LDS) leaves
// the bit clear and pays nothing for them. A request
// says which reply version its sender reads: the reply takes the
// request's version, so an end that only knows version 1 still gets
// replies it reads.
const (
	tsRequestMagic = 'Q'
	tsReplyMagic   = 'A'
	tsReplyFlows   = 1 // version 2 reply flag: flow hashes follow the timestamps
	// TSWireVersion is the version this package writes by default; it
	// reads 1 and 2.
	TSWireVersion = 2
	// TSMaxRequest bounds the ids in one request or reply (a forged count
	// must not allocate without bound).
	TSMaxRequest = 1 << 20
)

func tsVersionOK(v byte) bool { return v == 1 || v == 2 }

func tsCheck(ids []uint64) uint64 {
	var x uint64
	for _, id := range ids {
		x ^= Remix(id, SaltSampling)
	}
	return x
}

// AppendTimestampRequest appends a request (version TSWireVersion) for
// the timestamps of ids.
func AppendTimestampRequest(dst []byte, ids []uint64) []byte {
	return AppendTimestampRequestVersion(dst, ids, TSWireVersion)
}

// AppendTimestampRequestVersion is AppendTimestampRequest in wire version
// 1 or 2 (the reply version asked for).
func AppendTimestampRequestVersion(dst []byte, ids []uint64, version uint8) []byte {
	dst = append(dst, tsRequestMagic, version)
	dst = binary.AppendUvarint(dst, uint64(len(ids)))
	for _, id := range ids {
		dst = binary.LittleEndian.AppendUint64(dst, id)
	}
	return dst
}

// ParseTimestampRequest returns the ids of a request (errors wrap
// ErrBadEncoding).
func ParseTimestampRequest(b []byte) ([]uint64, error) {
	ids, _, err := ParseTimestampRequestVersion(b)
	return ids, err
}

// ParseTimestampRequestVersion is ParseTimestampRequest that also returns
// the request's version: the version its reply must take.
func ParseTimestampRequestVersion(b []byte) ([]uint64, uint8, error) {
	if len(b) < 2 || b[0] != tsRequestMagic || !tsVersionOK(b[1]) {
		return nil, 0, fmt.Errorf("%w: timestamp request: bad magic or version", ErrBadEncoding)
	}
	v := b[1]
	b = b[2:]
	cnt, k := minimalUvarint(b)
	if k <= 0 || cnt > TSMaxRequest {
		return nil, 0, fmt.Errorf("%w: timestamp request: bad count", ErrBadEncoding)
	}
	b = b[k:]
	if uint64(len(b)) != cnt*8 {
		return nil, 0, fmt.Errorf("%w: timestamp request: %d bytes for %d ids", ErrBadEncoding, len(b), cnt)
	}
	ids := make([]uint64, cnt)
	for i := range ids {
		ids[i] = binary.LittleEndian.Uint64(b[8*i:])
	}
	return ids, v, nil
}

// AppendReply appends the answer (version TSWireVersion) to a request for
// ids from c (the sender's cache of the interval).
func (c *TSCache) AppendReply(dst []byte, ids []uint64) []byte {
	return c.AppendReplyVersion(dst, ids, TSWireVersion)
}

// AppendReplyVersion is AppendReply in wire version 1 (timestamps only)
// or 2 (with flow hashes): the version of the request it answers.
func (c *TSCache) AppendReplyVersion(dst []byte, ids []uint64, version uint8) []byte {
	// An identity the cache saw twice gets no timestamp: which copy the
	// asker lost is unknown (SeenOnce).
	base := uint64(math.MaxUint64)
	for _, id := range ids {
		if ts, ok := c.Lookup(id); ok && ts < base && c.SeenOnce(id) {
			base = ts
		}
	}
	if base == math.MaxUint64 {
		base = 0
	}
	dst = append(dst, tsReplyMagic, version)
	flows := version >= 2 && c.TracksFlows()
	if version >= 2 {
		flag := byte(0)
		if flows {
			flag = tsReplyFlows
		}
		dst = append(dst, flag)
	}
	dst = binary.AppendUvarint(dst, uint64(len(ids)))
	dst = binary.LittleEndian.AppendUint64(dst, tsCheck(ids))
	dst = binary.LittleEndian.AppendUint64(dst, base)
	for _, id := range ids {
		v, fh := uint64(0), uint64(0)
		if ts, f, ok := c.LookupFlow(id); ok && ts-base != math.MaxUint64 && c.SeenOnce(id) {
			v, fh = ts-base+1, f
		}
		dst = binary.AppendUvarint(dst, v)
		if flows && v != 0 {
			dst = binary.LittleEndian.AppendUint64(dst, fh)
		}
	}
	return dst
}

// ParseReply decodes a reply to a request for ids into ts and ok (each
// len(ids)); errors wrap ErrBadEncoding.
func ParseReply(b []byte, ids []uint64, ts []uint64, ok []bool) error {
	_, err := ParseReplyFlows(b, ids, ts, nil, ok)
	return err
}

// ParseReplyFlows is ParseReply that also decodes the flow hashes of a
// version 2 reply into fh (when not nil, len(ids) at least; zeros when the
// reply has none); flows says whether the reply carried them.
func ParseReplyFlows(b []byte, ids []uint64, ts, fh []uint64, ok []bool) (flows bool, err error) {
	if len(ts) < len(ids) || len(ok) < len(ids) || fh != nil && len(fh) < len(ids) {
		return false, fmt.Errorf("%w: timestamp reply: output slices shorter than the request", ErrBadConfig)
	}
	if len(b) < 2 || b[0] != tsReplyMagic || !tsVersionOK(b[1]) {
		return false, fmt.Errorf("%w: timestamp reply: bad magic or version", ErrBadEncoding)
	}
	version := b[1]
	b = b[2:]
	if version >= 2 {
		if len(b) < 1 || b[0]&^tsReplyFlows != 0 {
			return false, fmt.Errorf("%w: timestamp reply: bad flags", ErrBadEncoding)
		}
		flows, b = b[0]&tsReplyFlows != 0, b[1:]
	}
	cnt, k := minimalUvarint(b)
	if k <= 0 || cnt != uint64(len(ids)) {
		return false, fmt.Errorf("%w: timestamp reply: count does not match the request", ErrBadEncoding)
	}
	b = b[k:]
	if len(b) < 16 {
		return false, fmt.Errorf("%w: timestamp reply: truncated header", ErrBadEncoding)
	}
	if binary.LittleEndian.Uint64(b) != tsCheck(ids) {
		return false, fmt.Errorf("%w: timestamp reply answers another request", ErrBadEncoding)
	}
	base := binary.LittleEndian.Uint64(b[8:])
	b = b[16:]
	for i := range ids {
		v, k := minimalUvarint(b)
		if k <= 0 {
			return false, fmt.Errorf("%w: timestamp reply: truncated at entry %d", ErrBadEncoding, i)
		}
		b = b[k:]
		ts[i], ok[i] = base+v-1, v != 0
		var f uint64
		if flows && v != 0 {
			if len(b) < 8 {
				return false, fmt.Errorf("%w: timestamp reply: truncated flow at entry %d", ErrBadEncoding, i)
			}
			f, b = binary.LittleEndian.Uint64(b), b[8:]
		}
		if fh != nil {
			fh[i] = f
		}
	}
	if len(b) != 0 {
		return false, fmt.Errorf("%w: timestamp reply: %d trailing bytes", ErrBadEncoding, len(b))
	}
	return flows, nil
}

// minimalUvarint is binary.Uvarint that also refuses non-minimal
// encodings (k = 0), so every message has one encoding.
func minimalUvarint(b []byte) (uint64, int) {
	v, k := binary.Uvarint(b)
	var scratch [binary.MaxVarintLen64]byte
	if k <= 0 || k != len(binary.AppendUvarint(scratch[:0], v)) {
		return 0, 0
	}
	return v, k
}

// newPartialTSCache returns a cache sized for n entries that marks itself
// partial (a reply's answers, not a whole interval).
func newPartialTSCache(n int, level uint8) *TSCache {
	slots := 64
	for slots*tsMaxLoadNum/tsMaxLoadDen < n+1 {
		slots *= 2
	}
	c := &TSCache{partial: true, level: level}
	c.alloc(slots)
	return c
}

// EmptyLike returns an empty cache with c's budget, sized for packets
// like Reserve. It allocates: for the control side, never the hot path.
func (c *TSCache) EmptyLike(packets uint64) *TSCache {
	d := &TSCache{maxSlots: c.maxSlots, tracking: c.tracking}
	d.Reserve(packets)
	return d
}

// SwapCache puts c (emptied) in place of r's timestamp cache and returns
// the cache r held, so the control side can keep an interval's sender
// timestamps for the receiver's requests after the copy is reset and
// reused (no copy of the table). c must not be shared. No-op returning
// nil when r has no cache.
func (r *RDA) SwapCache(c *TSCache) *TSCache {
	if r.cache == nil || c == nil {
		return nil
	}
	old := r.cache
	c.Reset()
	r.cache = c
	return old
}
