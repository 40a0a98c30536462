package classifier

import (
	"encoding/binary"
	"fmt"
)

// Classifier assigns a MEC id to a parsed packet: the index+1 of the first
// rule that matches, 0 ("all") when none does. It is immutable after
// NewClassifier, so any number of workers may share one without locking.
type Classifier struct {
	rules   []compiled
	names   []string // index = MEC id
	weights []uint32 // index = MEC id
}

// Condition bits in compiled.has.
const (
	hasVLAN uint8 = 1 << iota
	hasDSCP
	hasProto
	hasSrc
	hasDst
	hasSport
	hasDport
)

// compiled is a Rule laid out for Classify: DSCP and protocol as bitsets,
// prefixes as masked 128-bit values, so matching is loads, ANDs and
// compares.
type compiled struct {
	has          uint8
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
		c.names = append(c.names, r.Name)
		w := r.Weight
		if w == 0 {
			w = 1
		}
		c.weights = append(c.weights, w)
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
	var c compiled
	if r.VLAN != nil {
		c.has |= hasVLAN
		c.vlan = append([]Range(nil), r.VLAN...)
	}
	if r.DSCP != nil {
		c.has |= hasDSCP
		for _, x := range r.DSCP {
			for v := x.Lo; v <= x.Hi; v++ {
				c.dscp |= 1 << v
			}
		}
	}
	if r.Proto != nil {
		c.has |= hasProto
		for _, x := range r.Proto {
			for v := int(x.Lo); v <= int(x.Hi); v++ {
				c.proto[v>>6] |= 1 << (v & 63)
			}
		}
	}
	if r.SrcPort != nil {
		c.has |= hasSport
		c.sport = append([]Range(nil), r.SrcPort...)
	}
	if r.DstPort != nil {
		c.has |= hasDport
		c.dport = append([]Range(nil), r.DstPort...)
	}
	if r.Src != nil {
		c.has |= hasSrc
		for _, p := range r.Src {
			c.src = append(c.src, compilePrefix(p.Addr().As16(), p.Bits(), p.Addr().Is6()))
		}
	}
	if r.Dst != nil {
		c.has |= hasDst
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
// nothing and costs O(rules).
func (c *Classifier) Classify(m *Meta) uint16 {
	if c == nil || len(c.rules) == 0 {
		return 0
	}
	for i := range c.rules {
		if c.rules[i].match(m) {
			return uint16(i + 1)
		}
	}
	return 0
}

func (r *compiled) match(m *Meta) bool {
	ip := m.Flags&(FlagIPv4|FlagIPv6) != 0
	if r.has&hasVLAN != 0 && !inRanges(r.vlan, m.VLAN) {
		return false
	}
	if r.has&(hasDSCP|hasProto|hasSrc|hasDst) != 0 {
		if !ip {
			return false
		}
		if r.has&hasDSCP != 0 && r.dscp&(1<<(m.DSCP&63)) == 0 {
			return false
		}
		if r.has&hasProto != 0 && r.proto[m.Proto>>6]&(1<<(m.Proto&63)) == 0 {
			return false
		}
		if r.has&hasSrc != 0 && !inPrefixes(r.src, &m.Flow.Src, m.Flow.IPv6) {
			return false
		}
		if r.has&hasDst != 0 && !inPrefixes(r.dst, &m.Flow.Dst, m.Flow.IPv6) {
			return false
		}
	}
	if r.has&(hasSport|hasDport) != 0 {
		if m.Flags&FlagPorts == 0 {
			return false
		}
		if r.has&hasSport != 0 && !inRanges(r.sport, m.Flow.SrcPort) {
			return false
		}
		if r.has&hasDport != 0 && !inRanges(r.dport, m.Flow.DstPort) {
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
