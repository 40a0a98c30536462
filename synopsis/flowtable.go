package synopsis

import (
	"cmp"
	"fmt"
	"math"
	"math/bits"
	"slices"
)

// FlowKeyBytes is a flow's name as the LDS flow table stores it: 40 opaque
// bytes. The synopsis never looks inside; the caller (analyze, the
// appliance) packs its 5-tuple into it and unpacks it for reports, so
// synopsis does not depend on classifier. A classifier.FlowKey needs 38
// bytes (two 16-byte addresses, two ports, protocol, IPv6 flag).
type FlowKeyBytes [40]byte

// FlowEntry is one held flow: its flow hash (classifier.Meta.FlowHash), the
// packets this side counted since the flow was admitted, its weight (from
// the MEC rules, ≥ 1) and its name.
type FlowEntry struct {
	FlowHash uint64
	Packets  uint64
	Weight   uint32
	Key      FlowKeyBytes
}

// flowSlot is the hot part of a table slot, one 64-byte cache line: what
// Observe reads and writes per packet. The 40-byte keys live in a parallel
// array that is touched only when a flow is admitted or read out.
//
// The acc fields are the flow's share of its LDS cells held back: a
// recorder outside Go (package dpdk's measuring fast path, in C) that
// finds a packet's flow held adds the packet here instead of into the
// flow's cells, when every row takes every packet and a flow has one cell
// per row (then a flow's packets all land in the same cells, and the
// cells' sums do not depend on the order they are added in). One line per
// packet is written instead of one per row, and no row hash is computed.
// LDS.SettleFlows adds them into the cells; Go's Add never uses them.
type flowSlot struct {
	hash    uint64
	packets uint64
	weight  uint32 // 0 marks an empty slot
	_       uint32
	// Held-back cell sums (LDS.SettleFlows): Σ weight·ts, Σ weight, XOR
	// of identities, Σ weight·stamp error.
	accSum, accCount, accDigest, accErr uint64
	_                                   uint64
}

// saltFlowHold derives the sample-and-hold admission bits from the packet
// identity, independent of every synopsis's bits (hash.go).
const saltFlowHold uint64 = 0x484f4c44_a54ff53a // "HOLD"

// maxFlowTable bounds a flow table's capacity: 1<<20 flows in 2^21 slots of
// 64 bytes plus 40-byte keys is 208 MiB, beyond which naming flows is not
// what the memory should be spent on.
const maxFlowTable = 1 << 20

// MaxFlowTable is the most flows a flow table (LDSConfig.MaxFlows) holds.
const MaxFlowTable = maxFlowTable

var errFlowTableCap = fmt.Errorf("%w: flow table capacity out of range (0..1048576)", ErrBadConfig)

// FlowTable names the flows an LDS measures. The LDS paper assumes the flow
// identifiers are known at query time (from NetFlow or similar); an
// appliance must learn them itself. Each side keeps a FlowTable beside its
// LDS and the sender ships its table with the sketch, so the receiver can
// query every flow either side saw — including flows whose packets were all
// lost.
//
// It is a preallocated open-addressing (linear probing) table keyed by flow
// hash, at most 3/4 full so probe sequences stay short; 64-byte slots with
// the keys kept apart. New flows are
// admitted by sample-and-hold (Estan–Varghese, the slides' heavy-hitter
// scheme): on a miss the packet admits its flow with probability holdRate,
// decided from bits of the packet identity so sender and receiver admit a
// flow at the same packet. With holdRate 1 (the default) every flow is held
// from its first packet and Packets is exact; with holdRate p a flow of n
// packets is held with probability 1-(1-p)^n, so the table fills with the
// large flows the LDS measures well. When the table is full new flows are
// refused and counted, never stored.
//
// Observe is the hot path: no allocation, no map, no error value. The zero
// value is a table of capacity 0 that counts everything as missed.
type FlowTable struct {
	slots   []flowSlot
	keys    []FlowKeyBytes // keys[i] names slots[i]
	mask    uint64
	used    int
	limit   int    // flows the slots have room for now, < len(slots)
	max     int    // the configured capacity: Grow stops here
	holdThr uint64 // admit a new flow when Remix(h, saltFlowHold)>>32 < holdThr; 1<<32 admits all

	// scratch is Entries' buffer for the encoder, reused across the
	// encodings a control budget tries in one interval.
	scratch []FlowEntry

	missed  uint64 // packets of flows not held (not yet admitted, or table full)
	refused uint64 // admissions refused because the table was full
}

// NewFlowTable returns a table that holds up to capacity flows, admitting a
// new flow per packet with probability holdRate (0 means 1).
func NewFlowTable(capacity int, holdRate float64) (*FlowTable, error) {
	return newFlowTable(capacity, holdRate, false)
}

// newFlowTable is NewFlowTable; grow starts it with room for
// flowTableStart flows only (Grow adds more).
func newFlowTable(capacity int, holdRate float64, grow bool) (*FlowTable, error) {
	if capacity < 0 || capacity > maxFlowTable {
		return nil, errFlowTableCap
	}
	thr, err := ldsRateThreshold(holdRate)
	if err != nil {
		return nil, err
	}
	t := &FlowTable{holdThr: thr, max: capacity}
	if grow {
		t.alloc(min(capacity, flowTableStart))
	} else {
		t.alloc(capacity)
	}
	return t, nil
}

// flowTableStart is the room a table of an LDS with FlowsGrow allocates
// first: memory follows the flows observed (Grow), not the configured
// capacity, which for a million flows is about 200 MiB per copy.
const flowTableStart = 4096

// Grow makes room for n flows (at most the configured capacity), keeping
// what the table holds. It allocates, so it is not for the hot path: the
// control side calls it on an idle copy (LDS.ReserveFlows), and insert on
// decoding and merging. Observe never grows: a flow that finds no room is
// refused and counted.
func (t *FlowTable) Grow(n int) {
	n = min(n, max(t.max, t.limit))
	if n <= t.limit {
		return
	}
	old, oldKeys := t.slots, t.keys
	t.alloc(n)
	for i := range old {
		if old[i].weight == 0 {
			continue
		}
		j := t.find(old[i].hash)
		t.slots[j], t.keys[j] = old[i], oldKeys[i]
	}
}

// Capacity is how many flows the table holds before it refuses: the room
// allocated now, and the configured capacity Grow may reach.
func (t *FlowTable) Capacity() (now, configured int) { return t.limit, max(t.max, t.limit) }

// ReserveFlows grows l's flow table for the next interval from what this
// one saw: room for twice the flows held and refused. The control side
// calls it on an idle copy before handing it back to the worker.
func (l *LDS) ReserveFlows() {
	if t := l.flows; t != nil {
		t.Grow(2 * (t.used + int(min(t.refused, uint64(maxFlowTable)))))
	}
}

// alloc sizes the slot array for capacity flows at load ≤ 3/4, empty.
func (t *FlowTable) alloc(capacity int) {
	t.limit = capacity
	t.used = 0
	if capacity == 0 {
		t.slots, t.keys, t.mask = nil, nil, 0
		return
	}
	n := uint64(1) << bits.Len64(uint64(capacity+capacity/3))
	t.slots = make([]flowSlot, n)
	t.keys = make([]FlowKeyBytes, n)
	t.mask = n - 1
}

// ldsRateThreshold turns a sampling probability into a threshold on 32 hash
// bits: a packet is taken when hash>>32 < threshold. 0 means 1 (take all).
func ldsRateThreshold(rate float64) (uint64, error) {
	if rate == 0 {
		return 1 << 32, nil
	}
	if !(rate > 0 && rate <= 1) {
		return 0, fmt.Errorf("%w: sampling rate must be in (0, 1]", ErrBadConfig)
	}
	thr := uint64(math.Round(rate * (1 << 32)))
	if thr < 1 {
		thr = 1
	}
	return thr, nil
}

// Observe records one packet of flow flowHash with packet identity h. key
// names the flow (nil: unnamed); it is copied only when the flow is
// admitted. weight is the flow's weight (0 means 1).
func (t *FlowTable) Observe(flowHash, h uint64, key *FlowKeyBytes, weight uint32) {
	if k := t.observe(flowHash, h, weight); k != nil && key != nil {
		*k = *key
	}
}

// observe is Observe without the key: it returns the admitted flow's key
// slot, zeroed, for the caller to fill, or nil when the packet admitted
// no flow (its flow is already held, or it is not held). Callers that
// build the key from a packet's fields (SynSet.Record, ~40 bytes packed
// per packet) then build it only for a flow's first held packet.
func (t *FlowTable) observe(flowHash, h uint64, weight uint32) *FlowKeyBytes {
	if t.limit == 0 {
		t.missed++
		return nil
	}
	i := flowHash & t.mask
	for {
		s := &t.slots[i]
		if s.weight == 0 {
			break
		}
		if s.hash == flowHash {
			s.packets++
			return nil
		}
		i = (i + 1) & t.mask
	}
	// A miss: i is the empty slot that ends the probe sequence.
	if t.holdThr < 1<<32 && Remix(h, saltFlowHold)>>32 >= t.holdThr {
		t.missed++
		return nil
	}
	if t.used >= t.limit {
		t.refused++
		t.missed++
		return nil
	}
	if weight == 0 {
		weight = 1
	}
	t.slots[i] = flowSlot{hash: flowHash, packets: 1, weight: weight}
	t.keys[i] = FlowKeyBytes{}
	t.used++
	return &t.keys[i]
}

// find returns the index of the slot holding flowHash or of the empty slot
// where it would go; -1 when the table has no slots.
func (t *FlowTable) find(flowHash uint64) int {
	if len(t.slots) == 0 {
		return -1
	}
	i := flowHash & t.mask
	for {
		s := &t.slots[i]
		if s.weight == 0 || s.hash == flowHash {
			return int(i)
		}
		i = (i + 1) & t.mask
	}
}

func (t *FlowTable) entry(i int) FlowEntry {
	s := &t.slots[i]
	return FlowEntry{FlowHash: s.hash, Packets: s.packets, Weight: s.weight, Key: t.keys[i]}
}

// Lookup returns the entry of flowHash.
func (t *FlowTable) Lookup(flowHash uint64) (FlowEntry, bool) {
	i := t.find(flowHash)
	if i < 0 || t.slots[i].weight == 0 {
		return FlowEntry{}, false
	}
	return t.entry(i), true
}

// insert adds e's packets to its flow's entry, creating it when there is
// room; false when the table is full.
func (t *FlowTable) insert(e *FlowEntry) bool {
	i := t.find(e.FlowHash)
	if i < 0 {
		return false
	}
	s := &t.slots[i]
	if s.weight != 0 {
		s.packets += e.Packets
		return true
	}
	if t.used >= t.limit {
		if t.limit >= t.max {
			return false
		}
		t.Grow(max(2*t.limit, 1))
		return t.insert(e)
	}
	*s = flowSlot{hash: e.FlowHash, packets: e.Packets, weight: max(e.Weight, 1)}
	t.keys[i] = e.Key
	t.used++
	return true
}

// Len is the number of flows held.
func (t *FlowTable) Len() int { return t.used }

// Cap is the number of flows the table can hold.
func (t *FlowTable) Cap() int { return t.limit }

// Missed is the number of packets of flows that were not held (not yet
// admitted by sample-and-hold, or refused because the table was full).
func (t *FlowTable) Missed() uint64 { return t.missed }

// Refused is the number of admissions refused because the table was full;
// non-zero means the table is too small for the traffic.
func (t *FlowTable) Refused() uint64 { return t.refused }

// Entries appends the held flows to dst in flow-hash order and returns it.
// It allocates; call it on the control side.
func (t *FlowTable) Entries(dst []FlowEntry) []FlowEntry {
	start := len(dst)
	for i := range t.slots {
		if t.slots[i].weight != 0 {
			dst = append(dst, t.entry(i))
		}
	}
	slices.SortFunc(dst[start:], func(a, b FlowEntry) int { return cmp.Compare(a.FlowHash, b.FlowHash) })
	return dst
}

// Merge adds o's flows and counters to t (per-worker shards are summed).
// Flows that do not fit are counted as refused, their packets as missed.
func (t *FlowTable) Merge(o *FlowTable) {
	for i := range o.slots {
		if o.slots[i].weight == 0 {
			continue
		}
		e := o.entry(i)
		if !t.insert(&e) {
			t.refused++
			t.missed += e.Packets
		}
	}
	t.missed += o.missed
	t.refused += o.refused
}

// Reset empties the table, keeping its memory.
func (t *FlowTable) Reset() {
	clear(t.slots) // keys need no clearing: admission overwrites them
	t.used, t.missed, t.refused = 0, 0, 0
}

// Clone returns a deep copy.
func (t *FlowTable) Clone() *FlowTable {
	c := *t
	c.scratch = nil
	c.slots = append([]flowSlot(nil), t.slots...)
	c.keys = append([]FlowKeyBytes(nil), t.keys...)
	return &c
}

// PackFlowKey packs a 5-tuple into FlowKeyBytes with the variable part
// last, so the encoding (which trims trailing zero bytes) ships 14 bytes
// for IPv4 and 38 for IPv6: proto, flags (bit 0: IPv6), source port, dest
// port (big-endian), then the source and destination addresses — the last
// 4 bytes of each (IPv4-mapped) address for IPv4, all 16 for IPv6. The
// fields are those of classifier.FlowKey; synopsis takes them one by one so
// it does not depend on classifier.
func PackFlowKey(src, dst [16]byte, srcPort, dstPort uint16, proto uint8, ipv6 bool) FlowKeyBytes {
	var k FlowKeyBytes
	k[0] = proto
	k[2], k[3] = byte(srcPort>>8), byte(srcPort)
	k[4], k[5] = byte(dstPort>>8), byte(dstPort)
	if ipv6 {
		k[1] = 1
		copy(k[6:22], src[:])
		copy(k[22:38], dst[:])
	} else {
		copy(k[6:10], src[12:])
		copy(k[10:14], dst[12:])
	}
	return k
}

// UnpackFlowKey reverses PackFlowKey; IPv4 addresses come back
// IPv4-mapped (::ffff:a.b.c.d), as classifier.FlowKey stores them.
func UnpackFlowKey(k *FlowKeyBytes) (src, dst [16]byte, srcPort, dstPort uint16, proto uint8, ipv6 bool) {
	proto = k[0]
	ipv6 = k[1]&1 != 0
	srcPort = uint16(k[2])<<8 | uint16(k[3])
	dstPort = uint16(k[4])<<8 | uint16(k[5])
	if ipv6 {
		copy(src[:], k[6:22])
		copy(dst[:], k[22:38])
		return
	}
	src[10], src[11], dst[10], dst[11] = 0xff, 0xff, 0xff, 0xff
	copy(src[12:], k[6:10])
	copy(dst[12:], k[10:14])
	return
}
