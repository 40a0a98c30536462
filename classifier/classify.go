package classifier

import (
	"encoding/binary"
	"fmt"
)

// Classifier assigns a MEC id to a parsed packet: the index+1 of the first
// rule that matches, 0 ("all") when none does. It is immutable after
// NewClassifier, so any number of workers may share one without locking.
//
// Up to maxSetsRules rules Classify ANDs block-level bit vectors and
// tests the few candidates a block only partly covers (bitsets.go): the
// fewest instructions for the few rules most sites have. Above, it looks a
// packet's fields up in exact per-field tables of bit vectors (tables.go:
// Lakshman and Stiliadis' bit-parallel classification, with the
// aggregated summary words of Baboescu and Varghese): VLAN, DSCP and
// protocol by value, ports by a two-level map, addresses by a stride-8
// trie per family. The AND of the vectors is the set of rules the packet
// matches, its lowest bit the first match, so the cost grows little with
// the number of rules. A rule set whose tables would exceed the table limit (64 MiB)
// is matched by testing every rule in order.
type Classifier struct {
	rules   []compiled
	names   []string // index = MEC id
	weights []uint32 // index = MEC id

	sets *bitSets // the block bit vectors (bitsets.go), up to maxSetsRules rules
	tab  *tables  // the exact per-field tables (tables.go) above; both nil: linear (no rules, or tables too large)
	// The way classify takes, so that it costs a test or two: groups is
	// tab when that takes pathGroups (many rules), word its word tables
	// (up to 64), one tab when it takes pathOne. All nil: classifyOther.
	groups, one *tables
	word        *wordTables

	// linkLocal are the indices of the rules with linklocal:yes, the only
	// ones a link-local frame may match (Measure). They are in no table
	// and classifyLinear skips them: Classify never returns them.
	linkLocal []int
}

// Condition bits in compiled.slow.
const (
	hasVLAN uint8 = 1 << iota
	hasSrc
	hasDst
	hasSport
	hasDport
)

// compiled is a Rule laid out for Classify: DSCP and protocol as bitsets
// (all ones when the rule has no such condition) tested inline, the rest
// (VLAN, prefixes, ports) in match, so a rule that fails on DSCP or
// protocol costs a few loads and no call.
type compiled struct {
	linkLocal    bool      // linklocal:yes: matches link-local frames only (Measure)
	ipOnly       bool      // the rule has a DSCP, protocol or prefix condition
	slow         uint8     // hasVLAN|hasSrc|hasDst|hasSport|hasDport bits present
	dscp         uint64    // bit d set: DSCP d matches
	proto        [4]uint64 // bit p set: protocol p matches
	vlan         []Range
	sport, dport []Range
	src, dst     []prefix
}

// prefix is an IPv4 (as IPv4-mapped) or IPv6 prefix as (address & mask)
// in two big-endian-loaded 64-bit halves.
type prefix struct {
	hi, lo   uint64
	mhi, mlo uint64
	v6       bool
}

func (p *prefix) match(a *[16]byte, v6 bool) bool {
	return v6 == p.v6 &&
		binary.BigEndian.Uint64(a[0:])&p.mhi == p.hi &&
		binary.BigEndian.Uint64(a[8:])&p.mlo == p.lo
}

// NewClassifier checks the rules (names unique and valid, values in range)
// and compiles them. MEC ids: 0 is "all", rules[i] gets i+1.
func NewClassifier(rules []Rule) (*Classifier, error) {
	return newClassifier(rules, defaultLimits)
}

// newClassifier is NewClassifier with the table limits lim.
func newClassifier(rules []Rule, lim limits) (*Classifier, error) {
	if len(rules) > MaxRules {
		return nil, fmt.Errorf("mec: %d rules, at most %d", len(rules), MaxRules)
	}
	c := &Classifier{
		rules:   make([]compiled, len(rules)),
		names:   make([]string, 1, len(rules)+1),
		weights: make([]uint32, 1, len(rules)+1),
	}
	c.names[0], c.weights[0] = DefaultMEC, 1
	seen := map[string]bool{}
	for i := range rules {
		r := &rules[i]
		if err := r.validate(); err != nil {
			return nil, err
		}
		if seen[r.Name] {
			return nil, fmt.Errorf("mec %q: duplicate name", r.Name)
		}
		seen[r.Name] = true
		c.rules[i] = compile(r)
		if r.LinkLocal {
			c.linkLocal = append(c.linkLocal, i)
		}
		c.names = append(c.names, r.Name)
		w := r.Weight
		if w == 0 {
			w = 1
		}
		c.weights = append(c.weights, w)
	}
	switch {
	case len(c.rules) > maxSetsRules:
		c.tab = buildTables(rules, c.rules, lim)
	case len(c.rules) > 0:
		c.sets = buildSets(rules, c.rules)
	}
	if t := c.tab; t != nil {
		switch {
		case t.word != nil:
			c.word = t.word
		case t.path == pathGroups:
			c.groups = t
		case t.path == pathOne:
			c.one = t
		}
	}
	return c, nil
}

// NewClassifierFromSpecs parses repeated --mec flag values and builds the
// classifier; the error names the bad rule and token.
func NewClassifierFromSpecs(specs []string) (*Classifier, error) {
	rules := make([]Rule, 0, len(specs))
	for _, s := range specs {
		r, err := ParseMEC(s)
		if err != nil {
			return nil, err
		}
		rules = append(rules, r)
	}
	return NewClassifier(rules)
}

func compile(r *Rule) compiled {
	c := compiled{linkLocal: r.LinkLocal, dscp: ^uint64(0), proto: [4]uint64{^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0)}}
	if r.VLAN != nil {
		c.slow |= hasVLAN
		c.vlan = append([]Range(nil), r.VLAN...)
	}
	if r.DSCP != nil {
		c.ipOnly = true
		c.dscp = 0
		for _, x := range r.DSCP {
			for v := x.Lo; v <= x.Hi; v++ {
				c.dscp |= 1 << v
			}
		}
	}
	if r.Proto != nil {
		c.ipOnly = true
		c.proto = [4]uint64{}
		for _, x := range r.Proto {
			for v := int(x.Lo); v <= int(x.Hi); v++ {
				c.proto[v>>6] |= 1 << (v & 63)
			}
		}
	}
	if r.SrcPort != nil {
		c.slow |= hasSport
		c.sport = append([]Range(nil), r.SrcPort...)
	}
	if r.DstPort != nil {
		c.slow |= hasDport
		c.dport = append([]Range(nil), r.DstPort...)
	}
	if r.Src != nil {
		c.ipOnly = true
		c.slow |= hasSrc
		for _, p := range r.Src {
			c.src = append(c.src, compilePrefix(p.Addr().As16(), p.Bits(), p.Addr().Is6()))
		}
	}
	if r.Dst != nil {
		c.ipOnly = true
		c.slow |= hasDst
		for _, p := range r.Dst {
			c.dst = append(c.dst, compilePrefix(p.Addr().As16(), p.Bits(), p.Addr().Is6()))
		}
	}
	return c
}

func compilePrefix(a [16]byte, bits int, v6 bool) prefix {
	if !v6 {
		bits += 96 // IPv4-mapped, as FlowKey stores IPv4
	}
	var p prefix
	p.v6 = v6
	if bits >= 64 {
		p.mhi = ^uint64(0)
		if bits > 64 {
			p.mlo = ^uint64(0) << (128 - bits)
		}
	} else if bits > 0 {
		p.mhi = ^uint64(0) << (64 - bits)
	}
	p.hi = binary.BigEndian.Uint64(a[0:]) & p.mhi
	p.lo = binary.BigEndian.Uint64(a[8:]) & p.mlo
	return p
}

// Classify returns the MEC id of the packet m describes: the first rule
// that matches, 0 when none does (or c is nil). It reads m only, allocates
// nothing, and its cost does not depend on the number of rules. Without
// rules it inlines to a test.
//
// Classify does not look at FlagLinkLocal and never returns a
// linklocal:yes rule: a caller that records packets calls Measure for a
// frame with FlagLinkLocal (a lane tests that flag with the others it
// already branches on, so the common frame pays nothing for it).
func (c *Classifier) Classify(m *Meta) uint16 {
	if c == nil || len(c.rules) == 0 {
		return 0
	}
	return c.classify(m)
}

// maxSetsRules is the most rules the block bit vectors serve: with a few
// rules a packet's candidates are soon gone and the rare partial-block
// candidate's own test is cheap (3 rules: about 80 instructions a packet
// against about 160 with the exact tables); with more, the candidates
// that only part of a block satisfies must each run their tests, and the
// exact tables win (10 site-like rules: 24 ns against 11 ns a packet).
const maxSetsRules = 4

func (c *Classifier) classify(m *Meta) uint16 {
	if c.sets != nil {
		return c.classifySets(m)
	}
	if t := c.groups; t != nil {
		return t.classify(m)
	}
	if w := c.word; w != nil {
		return w.classify(m)
	}
	if t := c.one; t != nil {
		return t.classify1(&t.groups[0], m)
	}
	return c.classifyOther(m)
}

// classifyOther is classify with tables whose combinations did not fit
// (pathFields), or none (linear).
func (c *Classifier) classifyOther(m *Meta) uint16 {
	if c.tab == nil {
		return c.classifyLinear(m, m.Flags&(FlagIPv4|FlagIPv6) != 0)
	}
	return c.tab.andFields(m)
}

// classifyLinear tests every rule in order: rule sets too large for the
// tables, and a reference the tables are tested against.
func (c *Classifier) classifyLinear(m *Meta, ip bool) uint16 {
	dbit := uint64(1) << (m.DSCP & 63)
	pword, pbit := m.Proto>>6, uint64(1)<<(m.Proto&63)
	for i := range c.rules {
		r := &c.rules[i]
		if r.linkLocal || r.ipOnly && !ip || r.dscp&dbit == 0 || r.proto[pword&3]&pbit == 0 {
			continue
		}
		if r.slow == 0 || r.match(m) {
			return uint16(i + 1)
		}
	}
	return 0
}

// Measure says whether the frame m describes is measured and in which
// MEC: a frame Parse marked FlagLinkLocal is measured only when a rule
// with linklocal:yes matches it (the first such rule's id), and otherwise
// is left out of every synopsis (0, false); any other frame is measured,
// in Classify's class. Allocates nothing; a nil c measures no link-local
// frame.
func (c *Classifier) Measure(m *Meta) (uint16, bool) {
	if m.Flags&FlagLinkLocal == 0 {
		return c.Classify(m), true
	}
	if c == nil {
		return 0, false
	}
	return c.measureLinkLocal(m)
}

// measureLinkLocal tests the linklocal:yes rules in order.
func (c *Classifier) measureLinkLocal(m *Meta) (uint16, bool) {
	ip := m.Flags&(FlagIPv4|FlagIPv6) != 0
	dbit := uint64(1) << (m.DSCP & 63)
	pword, pbit := m.Proto>>6, uint64(1)<<(m.Proto&63)
	for _, i := range c.linkLocal {
		r := &c.rules[i]
		if r.ipOnly && !ip || r.dscp&dbit == 0 || r.proto[pword&3]&pbit == 0 {
			continue
		}
		if r.slow == 0 || r.match(m) {
			return uint16(i + 1), true
		}
	}
	return 0, false
}

// MeasuresLinkLocal reports whether any rule claims link-local frames.
func (c *Classifier) MeasuresLinkLocal() bool { return c != nil && len(c.linkLocal) > 0 }

// match tests the conditions Classify does not test inline. DSCP and
// protocol have passed; if the rule has a prefix condition, m is IP.
func (r *compiled) match(m *Meta) bool {
	if r.slow&hasVLAN != 0 && !inRanges(r.vlan, m.VLAN) {
		return false
	}
	if r.slow&hasSrc != 0 && !inPrefixes(r.src, &m.Flow.Src, m.Flow.IPv6) {
		return false
	}
	if r.slow&hasDst != 0 && !inPrefixes(r.dst, &m.Flow.Dst, m.Flow.IPv6) {
		return false
	}
	if r.slow&(hasSport|hasDport) != 0 {
		if m.Flags&FlagPorts == 0 {
			return false
		}
		if r.slow&hasSport != 0 && !inRanges(r.sport, m.Flow.SrcPort) {
			return false
		}
		if r.slow&hasDport != 0 && !inRanges(r.dport, m.Flow.DstPort) {
			return false
		}
	}
	return true
}

func inRanges(rs []Range, v uint16) bool {
	for _, r := range rs {
		if r.contains(v) {
			return true
		}
	}
	return false
}

func inPrefixes(ps []prefix, a *[16]byte, v6 bool) bool {
	for i := range ps {
		if ps[i].match(a, v6) {
			return true
		}
	}
	return false
}

// Names returns the MEC names; index = MEC id, Names()[0] == "all". The
// slice is shared: do not modify it.
func (c *Classifier) Names() []string {
	if c == nil {
		return []string{DefaultMEC}
	}
	return c.names
}

// NumClasses is the number of MECs including "all".
func (c *Classifier) NumClasses() int {
	if c == nil {
		return 1
	}
	return len(c.names)
}

// Weight is the LDS flow weight of MEC mec (1 unless the rule set
// weight:N; 1 for "all" and for ids out of range, so a caller never
// divides by zero).
func (c *Classifier) Weight(mec uint16) uint32 {
	if c == nil || int(mec) >= len(c.weights) {
		return 1
	}
	return c.weights[mec]
}
