package classifier

import (
	"math/bits"
	"net/netip"
)

// Up to maxSetsRules rules, Classify uses block-level bit vectors (Lakshman and
// Stiliadis' bit-parallel classification): for every field a table of
// 64-bit sets of the rules that accept each value, so a few ANDs leave
// the candidate rules, lowest (first) rule first. DSCP, protocol and VLAN
// are indexed by value; ports and addresses, whose ranges are too wide to
// index, by their top byte (ports >> 8; an address's first byte), with a
// second set per block of the rules that only partly cover it: a
// candidate in no partial set is a match without testing anything else,
// and only the others run the rule's own tests (match). For the few rules
// most sites have this costs about half the instructions of the exact
// per-field tables (tables.go), which take over above, where the partial
// candidates' own tests grow with the rule count.

// bitSets are the bit-vector tables: bit i of an entry stands for rule i.
// "ok" sets hold the rules a value's block can satisfy (all of the block
// or part of it), "part" sets those that cover only part of it; rules
// without the condition are in every ok set and no part set. About 56 KiB,
// of which a packet touches a few cache lines.
type bitSets struct {
	dscp    [64]uint64   // rule accepts this DSCP (IP packets)
	proto   [256]uint64  // rule accepts this protocol (IP packets)
	vlan    [4096]uint64 // rule accepts this VLAN id (every frame)
	nonIP   uint64       // rule can match a non-IP frame
	port    uint64       // rule has a port condition
	srcOK   [2][256]blockSet
	dstOK   [2][256]blockSet // [family: 0 IPv4, 1 IPv6][first address byte]
	sportOK [256]blockSet    // [port >> 8]
	dportOK [256]blockSet
}

// blockSet is one block's ok and part sets (part ⊆ ok), side by side so
// one cache line serves both loads.
type blockSet struct{ ok, part uint64 }

// buildSets fills the bit-vector tables from the rules (at most 64).
func buildSets(rules []Rule, comp []compiled) *bitSets {
	t := &bitSets{}
	for i := range comp {
		r, ru := &comp[i], &rules[i]
		if r.linkLocal {
			continue // in no table: not a candidate for any packet Classify sees
		}
		bit := uint64(1) << i
		for d := 0; d < 64; d++ {
			if r.dscp&(1<<d) != 0 {
				t.dscp[d] |= bit
			}
		}
		for p := 0; p < 256; p++ {
			if r.proto[p>>6]&(1<<(p&63)) != 0 {
				t.proto[p] |= bit
			}
		}
		for v := range t.vlan {
			if ru.VLAN == nil || inRanges(ru.VLAN, uint16(v)) {
				t.vlan[v] |= bit
			}
		}
		if !r.ipOnly {
			t.nonIP |= bit
		}
		if r.slow&(hasSport|hasDport) != 0 {
			t.port |= bit
		}
		portBlocks(&t.sportOK, ru.SrcPort, bit)
		portBlocks(&t.dportOK, ru.DstPort, bit)
		for fam, v6 := range []bool{false, true} {
			prefixBlocks(&t.srcOK[fam], ru.Src, v6, bit)
			prefixBlocks(&t.dstOK[fam], ru.Dst, v6, bit)
		}
	}
	return t
}

// portBlocks adds bit to the 256-port blocks the ranges touch (nil: no
// condition, every block), and to the part set of those they touch
// without covering.
func portBlocks(t *[256]blockSet, rs []Range, bit uint64) {
	var touch, full [256]bool
	if rs == nil {
		touch, full = allBlocks(), allBlocks()
	}
	for _, x := range rs {
		for b := int(x.Lo >> 8); b <= int(x.Hi>>8); b++ {
			touch[b] = true
			if x.Lo <= uint16(b)<<8 && x.Hi >= uint16(b)<<8|0xff {
				full[b] = true
			}
		}
	}
	markBlocks(t, &touch, &full, bit)
}

// prefixBlocks is portBlocks for one family's addresses, blocked by their
// first byte (IPv4's first octet; an IPv6 address's first byte). Prefixes
// of the other family do not match (Classify's family rule).
func prefixBlocks(t *[256]blockSet, ps []netip.Prefix, v6 bool, bit uint64) {
	var touch, full [256]bool
	if ps == nil {
		touch, full = allBlocks(), allBlocks()
	}
	for _, p := range ps {
		if p.Addr().Is6() != v6 {
			continue
		}
		first := int(p.Masked().Addr().AsSlice()[0])
		if n := p.Bits(); n < 8 {
			span := 1 << (8 - n) // the prefix covers these blocks whole
			for b := first; b < first+span; b++ {
				touch[b], full[b] = true, true
			}
		} else {
			touch[first] = true
			full[first] = full[first] || n == 8
		}
	}
	markBlocks(t, &touch, &full, bit)
}

func allBlocks() (a [256]bool) {
	for i := range a {
		a[i] = true
	}
	return a
}

func markBlocks(t *[256]blockSet, touch, full *[256]bool, bit uint64) {
	for b := range t {
		if touch[b] {
			t[b].ok |= bit
			if !full[b] {
				t[b].part |= bit
			}
		}
	}
}

func (c *Classifier) classifySets(m *Meta) uint16 {
	t := c.sets
	// The cheapest tables first, and out as soon as no rule is left: a
	// packet no rule wants (the common case) costs three or four loads.
	cand := t.vlan[m.VLAN&4095]
	var part uint64 // candidates whose own tests must still run
	if m.Flags&(FlagIPv4|FlagIPv6) != 0 {
		cand &= t.dscp[m.DSCP&63] & t.proto[m.Proto]
		if cand == 0 {
			return 0
		}
		fam, at := 0, 12 // IPv4 is stored IPv4-mapped: its first octet is byte 12
		if m.Flow.IPv6 {
			fam, at = 1, 0
		}
		src, dst := t.srcOK[fam][m.Flow.Src[at&15]], t.dstOK[fam][m.Flow.Dst[at&15]]
		cand &= src.ok & dst.ok
		part = src.part | dst.part
	} else {
		cand &= t.nonIP
	}
	if cand == 0 {
		return 0
	}
	if m.Flags&FlagPorts == 0 {
		cand &^= t.port
	} else {
		sp, dp := t.sportOK[m.Flow.SrcPort>>8], t.dportOK[m.Flow.DstPort>>8]
		cand &= sp.ok & dp.ok
		part |= sp.part | dp.part
	}
	part &= cand
	for cand != 0 {
		i := bits.TrailingZeros64(cand)
		if part&(1<<i) == 0 || c.rules[i&63].match(m) {
			return uint16(i + 1)
		}
		cand &= cand - 1
	}
	return 0
}
