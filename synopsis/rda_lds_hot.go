package synopsis

import "unsafe"

// RDAHot is the state RDA.AddFlow touches, for an AddFlow written in
// another language (package dpdk's measuring fast path, in C, which
// mirrors this struct field for field as struct ldaf_rdahot): addresses as
// integers, every scalar widened to 64 bits, so the struct holds no Go
// pointer and C may read and write it during a call. The owner copies
// the scalars in (LoadHot), lets C add packets, and copies them back
// (StoreHot) before anything else touches the RDA.
//
// An AddFlow elsewhere must do exactly what AddFlow does: Base, the cells
// of every bank, and, with a cache (Slots != 0), TSCache.InsertFlow, all
// but the sampling level's rise: the caller makes sure N stays below
// Limit (CacheRoom) and leaves a burst that could reach it to AddFlow.
type RDAHot struct {
	Cells, M, K, Chunk, Base uint64
	// The timestamp cache; Slots 0: none. Flows 0: no flow hashes kept.
	Slots, Flows, Mask, Limit, N, Level, HasZero, Zero, ZeroFlow, Offered, Dups uint64
	Later, NLater, LaterLost                                                    uint64
}

// LoadHot copies r's hot state into h. It allocates nothing.
func (r *RDA) LoadHot(h *RDAHot) {
	h.Cells, h.M, h.K, h.Chunk, h.Base = uint64(uintptr(unsafe.Pointer(&r.cells[0]))), r.m, uint64(r.k), uint64(r.chunk), r.base
	c := r.cache
	if c == nil || len(c.slots) == 0 {
		h.Slots = 0
		return
	}
	h.Slots, h.Mask, h.Limit, h.N = uint64(uintptr(unsafe.Pointer(&c.slots[0]))), c.mask, uint64(c.limit), uint64(c.n)
	h.Flows = 0
	if c.flows != nil {
		h.Flows = uint64(uintptr(unsafe.Pointer(&c.flows[0])))
	}
	h.Level, h.HasZero, h.Zero, h.ZeroFlow = uint64(c.level), 0, c.zero, c.zeroFlow
	if c.hasZero {
		h.HasZero = 1
	}
	h.Offered, h.Dups = c.offered, c.dups
	h.Later, h.NLater, h.LaterLost = uint64(uintptr(unsafe.Pointer(&c.later[0]))), uint64(c.nLater), c.laterLost
}

// StoreHot copies back what an AddFlow elsewhere changed in h (LoadHot's
// copy).
func (r *RDA) StoreHot(h *RDAHot) {
	r.base = h.Base
	c := r.cache
	if c == nil || h.Slots == 0 {
		return
	}
	c.n, c.hasZero, c.zero, c.zeroFlow = int(h.N), h.HasZero != 0, h.Zero, h.ZeroFlow
	c.offered, c.dups, c.nLater, c.laterLost = h.Offered, h.Dups, int(h.NLater), h.LaterLost
}

// CacheRoom says whether n more packets fit r's timestamp cache without
// raising its sampling level (true without a cache): what RDAHot's
// users check before adding a burst.
func (r *RDA) CacheRoom(n int) bool {
	c := r.cache
	return c == nil || len(c.slots) == 0 || c.n+n <= c.limit
}

// LDSHot is the state LDS.AddFlowKey touches, as RDAHot is RDA's (C's
// struct ldaf_ldshot). RowA and RowM are the rows' hash constants, Thr
// the rows' thresholds (16 each). With HasFlows the flow table gets
// FlowTable.observe, the key packed as PackFlowKey packs it (FSlots and
// FKeys are 0 while it has no room, FLimit 0); weights are SynSet's (0
// means 1). Where every row takes every packet and K is 1, a packet of a
// flow the table holds may go to its slot's held-back sums (flowSlot)
// instead of its cells; FHeld counts such packets, and StoreHot then
// marks the LDS for SettleFlows.
type LDSHot struct {
	Cells, Rows, Cols, K, Thr, RowA, RowM, Packets, LastTs                     uint64
	HasFlows, FSlots, FKeys, FMask, FUsed, FLimit, FHoldThr, FMissed, FRefused uint64
	FHeld                                                                      uint64
}

// LoadHot copies l's hot state into h. It allocates nothing. An LDS
// folded for estimation (FoldCols) has no hot state: ok false.
func (l *LDS) LoadHot(h *LDSHot) (ok bool) {
	if l.fold != 0 || len(l.cells) == 0 {
		return false
	}
	h.Cells, h.Rows, h.Cols, h.K = uint64(uintptr(unsafe.Pointer(&l.cells[0]))), uint64(l.rows), l.cols, l.k
	h.Thr, h.RowA, h.RowM = uint64(uintptr(unsafe.Pointer(&l.thr[0]))), uint64(uintptr(unsafe.Pointer(&ldsRowA[0]))), uint64(uintptr(unsafe.Pointer(&ldsRowM[0])))
	h.Packets, h.LastTs, h.FHeld = l.packets, l.lastTs, 0
	t := l.flows
	if t == nil {
		h.HasFlows = 0
		return true
	}
	h.HasFlows, h.FSlots, h.FKeys = 1, 0, 0
	if len(t.slots) > 0 {
		h.FSlots, h.FKeys = uint64(uintptr(unsafe.Pointer(&t.slots[0]))), uint64(uintptr(unsafe.Pointer(&t.keys[0])))
	}
	h.FMask, h.FUsed, h.FLimit, h.FHoldThr, h.FMissed, h.FRefused = t.mask, uint64(t.used), uint64(t.limit), t.holdThr, t.missed, t.refused
	return true
}

// StoreHot copies back what an AddFlowKey elsewhere changed in h.
func (l *LDS) StoreHot(h *LDSHot) {
	l.packets, l.lastTs = h.Packets, h.LastTs
	if h.FHeld != 0 {
		l.held = true
	}
	if t := l.flows; t != nil {
		t.used, t.missed, t.refused = int(h.FUsed), h.FMissed, h.FRefused
	}
}

// Layouts the hot structs' C mirrors rely on.
var _ = [1]struct{}{}[unsafe.Sizeof(rdaCell{})-32]
var _ = [1]struct{}{}[unsafe.Sizeof(tsEntry{})-16]
var _ = [1]struct{}{}[unsafe.Sizeof(ldsCell{})-32]
var _ = [1]struct{}{}[unsafe.Sizeof(flowSlot{})-64]
var _ = [1]struct{}{}[unsafe.Sizeof(FlowKeyBytes{})-40]

// SampleHot is the state Sample.AddFlow and SetStampErr touch, as RDAHot
// is RDA's (C's struct ldaf_samplehot): entries {Remix(h, SaltSample),
// ts} appended at Ents[Len] (and the flow hash at Flows[Len] when Flows
// is not 0) while Len < Cap; the caller makes sure a burst cannot fill
// the sample (SampleRoom), whose level then rises in Go.
type SampleHot struct {
	Ents, Flows, Len, Cap, Thresh, Offered, ErrNs uint64
}

// LoadHot copies p's hot state into h. It allocates nothing.
func (p *Sample) LoadHot(h *SampleHot) {
	e := p.ents[:cap(p.ents)]
	h.Ents, h.Flows = 0, 0
	if len(e) > 0 {
		h.Ents = uint64(uintptr(unsafe.Pointer(&e[0])))
		if p.flows != nil {
			h.Flows = uint64(uintptr(unsafe.Pointer(&p.flows[:cap(p.flows)][0])))
		}
	}
	h.Len, h.Cap, h.Thresh, h.Offered, h.ErrNs = uint64(len(p.ents)), uint64(cap(p.ents)), p.thresh, p.offered, p.errNs
}

// StoreHot copies back what an AddFlow elsewhere changed in h.
func (p *Sample) StoreHot(h *SampleHot) {
	p.ents = p.ents[:h.Len]
	if p.flows != nil {
		p.flows = p.flows[:h.Len]
	}
	p.offered, p.errNs = h.Offered, h.ErrNs
}

// SampleRoom says whether n more packets fit p without raising its level
// (SampleHot's users check it before adding a burst).
func (p *Sample) SampleRoom(n int) bool {
	return !p.decoded && len(p.ents)+n <= cap(p.ents) && (p.flows == nil || cap(p.flows) == cap(p.ents))
}

var _ = [1]struct{}{}[unsafe.Sizeof(sampleEntry{})-16]
