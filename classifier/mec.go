package classifier

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// Range is an inclusive range [Lo, Hi] of a small integer field: VLAN id,
// DSCP, IP protocol or L4 port. A single value has Lo == Hi.
type Range struct{ Lo, Hi uint16 }

func (r Range) contains(v uint16) bool { return r.Lo <= v && v <= r.Hi }

// Rule is one named measurement equivalence class (MEC): a conjunction of
// conditions, each a set of alternatives. A nil condition matches every
// packet; a non-nil one matches when any of its alternatives does.
//
// Conditions on DSCP, protocol and prefixes match IP packets only; port
// conditions match only packets with ports (TCP, UDP, UDP-Lite, SCTP; not
// ICMP, not non-first fragments). An IPv4 prefix matches only IPv4
// packets, an IPv6 prefix only IPv6 packets. VLAN is the outermost tag's
// id; vlan:0 matches untagged and priority-tagged frames.
type Rule struct {
	Name    string
	VLAN    []Range // 0-4095
	DSCP    []Range // 0-63
	Proto   []Range // 0-255
	Src     []netip.Prefix
	Dst     []netip.Prefix
	SrcPort []Range // 0-65535
	DstPort []Range // 0-65535
	// Weight is the flow weight LDS gives this class's flows (LDS paper
	// "flow weights"); 0 means not given, which counts as 1.
	Weight uint32
	// LinkLocal (linklocal:yes) makes the rule match link-local frames
	// (FlagLinkLocal) and nothing else. Link-local frames match no other
	// rule and, unclaimed, are not measured (Classifier.Measure).
	LinkLocal bool
}

// MaxRules is the most rules a Classifier takes: MEC ids are uint16 and 0
// is the default class "all".
const MaxRules = 1<<16 - 1

var errZone = errors.New("zone")

// maxNameLen bounds MEC names; they appear in every report line.
const maxNameLen = 64

// DefaultMEC is the name of MEC 0, the class of packets no rule matches.
const DefaultMEC = "all"

// protoNames are the protocol names the rule syntax accepts (lower case).
var protoNames = map[string]uint16{
	"icmp": 1, "igmp": 2, "ipip": 4, "tcp": 6, "udp": 17, "ipv6": 41, "gre": 47,
	"esp": 50, "ah": 51, "icmpv6": 58, "ospf": 89, "pim": 103,
	"vrrp": 112, "l2tp": 115, "sctp": 132, "udplite": 136,
}

// protoCanon is the name String renders for a protocol number.
var protoCanon = map[uint16]string{
	1: "icmp", 2: "igmp", 4: "ipip", 6: "tcp", 17: "udp", 41: "ipv6", 47: "gre",
	50: "esp", 51: "ah", 58: "icmpv6", 89: "ospf", 103: "pim", 112: "vrrp",
	115: "l2tp", 132: "sctp", 136: "udplite",
}

// dscpName maps the RFC 4594 / RFC 2474 code point names to values.
func dscpName(s string) (uint16, bool) {
	switch s {
	case "be", "df":
		return 0, true
	case "ef":
		return 46, true
	case "va":
		return 44, true
	}
	if len(s) == 3 && s[:2] == "cs" && s[2] >= '0' && s[2] <= '7' {
		return uint16(s[2]-'0') * 8, true
	}
	if len(s) == 4 && s[:2] == "af" && s[2] >= '1' && s[2] <= '4' && s[3] >= '1' && s[3] <= '3' {
		return uint16(s[2]-'0')*8 + uint16(s[3]-'0')*2, true
	}
	return 0, false
}

// ParseMEC parses one rule in the --mec syntax:
//
//	name=key:alt|alt|…,key:alt|…,…
//
// name is 1-64 letters, digits, '_', '-' or '.', and not "all". Keys (each
// at most once; their conditions are ANDed, the alternatives ORed):
//
//	vlan:N|N-M         outermost VLAN id, 0-4095 (0 = untagged)
//	dscp:N|N-M|name    0-63, or be, df, ef, va, cs0-cs7, af11-af43
//	proto:N|N-M|name   IP protocol 0-255, or tcp, udp, icmp, icmpv6, sctp, gre, esp, ah, …
//	src:PREFIX|ADDR    source prefix, IPv4 or IPv6 (an address means /32 or /128)
//	dst:PREFIX|ADDR    destination prefix
//	sport:N|N-M        L4 source port 0-65535
//	dport:N|N-M        L4 destination port 0-65535
//	weight:N           LDS flow weight of the class, N >= 1 (not a match condition)
//	linklocal:yes      match link-local frames (STP, LLDP, ARP, OSPF, NDP…: FlagLinkLocal),
//	                   which no rule without it matches and which are otherwise not measured
//
// Spaces around tokens are ignored; keys and names of protocols and DSCP
// values are case-insensitive. A prefix with host bits set is an error
// (it is usually a typo). Examples:
//
//	voice=dscp:ef,proto:udp,dport:16384-32767
//	mgmt=src:10.0.0.0/8|192.168.0.0/16,vlan:100
//	v6web=dst:2001:db8::/32,proto:tcp,dport:80|443,weight:4
//
// The error names the rule and the bad token, e.g.
// `mec "voice": bad dscp "64" (0-63)`.
func ParseMEC(spec string) (Rule, error) {
	name, body, ok := strings.Cut(spec, "=")
	name = strings.TrimSpace(name)
	if !ok {
		return Rule{}, fmt.Errorf("mec %q: want name=key:value,… (e.g. voice=dscp:ef)", spec)
	}
	r := Rule{Name: name}
	if err := checkName(name); err != nil {
		return Rule{}, err
	}
	if strings.TrimSpace(body) == "" {
		return Rule{}, fmt.Errorf("mec %q: no conditions", name)
	}
	var seen [len(keys)]bool
	for _, tok := range strings.Split(body, ",") {
		tok = strings.TrimSpace(tok)
		key, val, ok := strings.Cut(tok, ":")
		if !ok {
			return Rule{}, fmt.Errorf("mec %q: bad condition %q (want key:value)", name, tok)
		}
		key = strings.ToLower(strings.TrimSpace(key))
		val = strings.TrimSpace(val)
		k := keyIndex(key)
		if k < 0 {
			return Rule{}, fmt.Errorf("mec %q: unknown key %q (vlan, dscp, proto, src, dst, sport, dport, weight, linklocal)", name, key)
		}
		if seen[k] {
			return Rule{}, fmt.Errorf("mec %q: %s given twice (use | for alternatives)", name, key)
		}
		seen[k] = true
		var err error
		switch key {
		case "vlan":
			r.VLAN, err = parseRanges(name, key, val, 4095, nil)
		case "dscp":
			r.DSCP, err = parseRanges(name, key, val, 63, dscpName)
		case "proto":
			r.Proto, err = parseRanges(name, key, val, 255, func(s string) (uint16, bool) {
				v, ok := protoNames[s]
				return v, ok
			})
		case "src":
			r.Src, err = parsePrefixes(name, key, val)
		case "dst":
			r.Dst, err = parsePrefixes(name, key, val)
		case "sport":
			r.SrcPort, err = parseRanges(name, key, val, 65535, nil)
		case "dport":
			r.DstPort, err = parseRanges(name, key, val, 65535, nil)
		case "weight":
			w, perr := strconv.ParseUint(val, 10, 32)
			if perr != nil || w < 1 {
				err = fmt.Errorf("mec %q: bad weight %q (integer 1-4294967295)", name, val)
			}
			r.Weight = uint32(w)
		case "linklocal":
			if !strings.EqualFold(val, "yes") {
				err = fmt.Errorf("mec %q: bad linklocal %q (yes: the rule matches link-local frames only)", name, val)
			}
			r.LinkLocal = true
		}
		if err != nil {
			return Rule{}, err
		}
	}
	if !r.hasCondition() {
		return Rule{}, fmt.Errorf("mec %q: no match conditions (weight alone matches nothing)", name)
	}
	return r, nil
}

var keys = [...]string{"vlan", "dscp", "proto", "src", "dst", "sport", "dport", "weight", "linklocal"}

func keyIndex(k string) int {
	for i, s := range keys {
		if s == k {
			return i
		}
	}
	return -1
}

func checkName(name string) error {
	if name == "" || len(name) > maxNameLen {
		return fmt.Errorf("mec %q: bad name (1-%d letters, digits, '_', '-', '.')", name, maxNameLen)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			return fmt.Errorf("mec %q: bad name (1-%d letters, digits, '_', '-', '.')", name, maxNameLen)
		}
	}
	if name == DefaultMEC {
		return fmt.Errorf("mec %q: name reserved for the default class", name)
	}
	return nil
}

// parseRanges parses "a|b-c|name" with values in [0, max].
func parseRanges(rule, key, val string, max uint16, named func(string) (uint16, bool)) ([]Range, error) {
	alts := strings.Split(val, "|")
	out := make([]Range, 0, len(alts))
	for _, a := range alts {
		a = strings.TrimSpace(a)
		lo, hi, isRange := strings.Cut(a, "-")
		l, ok := parseValue(strings.TrimSpace(lo), max, named)
		h := l
		if ok && isRange {
			h, ok = parseValue(strings.TrimSpace(hi), max, named)
		}
		if !ok {
			return nil, fmt.Errorf("mec %q: bad %s %q (0-%d)", rule, key, a, max)
		}
		if l > h {
			return nil, fmt.Errorf("mec %q: bad %s %q (low end above high end)", rule, key, a)
		}
		out = append(out, Range{l, h})
	}
	return out, nil
}

func parseValue(s string, max uint16, named func(string) (uint16, bool)) (uint16, bool) {
	if named != nil {
		if v, ok := named(strings.ToLower(s)); ok {
			return v, true
		}
	}
	v, err := strconv.ParseUint(s, 10, 16)
	if err != nil || v > uint64(max) {
		return 0, false
	}
	return uint16(v), true
}

func parsePrefixes(rule, key, val string) ([]netip.Prefix, error) {
	alts := strings.Split(val, "|")
	out := make([]netip.Prefix, 0, len(alts))
	for _, a := range alts {
		a = strings.TrimSpace(a)
		var p netip.Prefix
		var err error
		if strings.Contains(a, "/") {
			p, err = netip.ParsePrefix(a)
		} else {
			var addr netip.Addr
			addr, err = netip.ParseAddr(a)
			if err == nil && addr.Zone() != "" {
				err = errZone
			}
			if err == nil {
				p = netip.PrefixFrom(addr, addr.BitLen())
			}
		}
		if err != nil || p.Addr().Zone() != "" {
			return nil, fmt.Errorf("mec %q: bad %s %q (IPv4 or IPv6 prefix or address)", rule, key, a)
		}
		if m := p.Masked(); m != p {
			return nil, fmt.Errorf("mec %q: bad %s %q (host bits set; did you mean %s?)", rule, key, a, m)
		}
		out = append(out, p)
	}
	return out, nil
}

func (r *Rule) hasCondition() bool {
	return r.VLAN != nil || r.DSCP != nil || r.Proto != nil || r.Src != nil || r.Dst != nil ||
		r.SrcPort != nil || r.DstPort != nil || r.LinkLocal
}

// String renders the rule in the syntax ParseMEC reads, keys in a fixed
// order; ParseMEC(r.String()) gives r back.
func (r Rule) String() string {
	var b strings.Builder
	b.WriteString(r.Name)
	b.WriteByte('=')
	n := 0
	cond := func(key string) {
		if n > 0 {
			b.WriteByte(',')
		}
		n++
		b.WriteString(key)
		b.WriteByte(':')
	}
	ranges := func(key string, rs []Range, names map[uint16]string) {
		if rs == nil {
			return
		}
		cond(key)
		for i, x := range rs {
			if i > 0 {
				b.WriteByte('|')
			}
			if s, ok := names[x.Lo]; ok && x.Lo == x.Hi {
				b.WriteString(s)
				continue
			}
			b.WriteString(strconv.Itoa(int(x.Lo)))
			if x.Hi != x.Lo {
				b.WriteByte('-')
				b.WriteString(strconv.Itoa(int(x.Hi)))
			}
		}
	}
	prefixes := func(key string, ps []netip.Prefix) {
		if ps == nil {
			return
		}
		cond(key)
		for i, p := range ps {
			if i > 0 {
				b.WriteByte('|')
			}
			b.WriteString(p.String())
		}
	}
	ranges("vlan", r.VLAN, nil)
	ranges("dscp", r.DSCP, nil)
	ranges("proto", r.Proto, protoCanon)
	prefixes("src", r.Src)
	prefixes("dst", r.Dst)
	ranges("sport", r.SrcPort, nil)
	ranges("dport", r.DstPort, nil)
	if r.Weight != 0 {
		cond("weight")
		b.WriteString(strconv.FormatUint(uint64(r.Weight), 10))
	}
	if r.LinkLocal {
		cond("linklocal")
		b.WriteString("yes")
	}
	return b.String()
}

// validate checks a Rule built in Go rather than by ParseMEC.
func (r *Rule) validate() error {
	if err := checkName(r.Name); err != nil {
		return err
	}
	if !r.hasCondition() {
		return fmt.Errorf("mec %q: no match conditions", r.Name)
	}
	check := func(key string, rs []Range, max uint16) error {
		for _, x := range rs {
			if x.Lo > x.Hi || x.Hi > max {
				return fmt.Errorf("mec %q: bad %s range %d-%d (0-%d)", r.Name, key, x.Lo, x.Hi, max)
			}
		}
		return nil
	}
	for _, c := range []struct {
		key string
		rs  []Range
		max uint16
	}{{"vlan", r.VLAN, 4095}, {"dscp", r.DSCP, 63}, {"proto", r.Proto, 255}, {"sport", r.SrcPort, 65535}, {"dport", r.DstPort, 65535}} {
		if err := check(c.key, c.rs, c.max); err != nil {
			return err
		}
	}
	for _, p := range append(append([]netip.Prefix(nil), r.Src...), r.Dst...) {
		if !p.IsValid() || p.Addr().Zone() != "" {
			return fmt.Errorf("mec %q: bad prefix %v", r.Name, p)
		}
	}
	return nil
}
