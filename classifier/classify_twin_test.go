package classifier

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"testing"
)

// naiveMatch is the reference semantics of a Rule, written on the Rule
// itself with netip, apart from the compiled bit sets.
func naiveMatch(r *Rule, m *Meta) bool {
	ip := m.Flags&(FlagIPv4|FlagIPv6) != 0
	inR := func(rs []Range, v uint16) bool {
		if rs == nil {
			return true
		}
		for _, x := range rs {
			if x.Lo <= v && v <= x.Hi {
				return true
			}
		}
		return false
	}
	inP := func(ps []netip.Prefix, a [16]byte) bool {
		if ps == nil {
			return true
		}
		addr := netip.AddrFrom16(a)
		if !m.Flow.IPv6 {
			addr = addr.Unmap()
		}
		for _, p := range ps {
			if p.Contains(addr) {
				return true
			}
		}
		return false
	}
	if (r.DSCP != nil || r.Proto != nil || r.Src != nil || r.Dst != nil) && !ip {
		return false
	}
	if (r.SrcPort != nil || r.DstPort != nil) && m.Flags&FlagPorts == 0 {
		return false
	}
	return inR(r.VLAN, m.VLAN) && inR(r.DSCP, uint16(m.DSCP)) && inR(r.Proto, uint16(m.Proto)) &&
		inP(r.Src, m.Flow.Src) && inP(r.Dst, m.Flow.Dst) && inR(r.SrcPort, m.Flow.SrcPort) && inR(r.DstPort, m.Flow.DstPort)
}

func naiveClassify(rules []Rule, m *Meta) uint16 {
	for i := range rules {
		if naiveMatch(&rules[i], m) {
			return uint16(i + 1)
		}
	}
	return 0
}

var (
	// Values on and around the bit-vector tables' block edges (first
	// address byte; ports >> 8), so that ok and part sets are exercised.
	twinV4 = []string{"10.0.0.1", "10.1.2.3", "192.168.5.5", "172.16.0.9", "11.255.0.1", "12.0.0.1", "9.9.9.9"}
	twinV6 = []string{"2001:db8::1", "2001:db8:1::5", "fe80::1", "::ffff:10.0.0.1", "3fff::1", "4000::1", "febf::1"}
	twinP  = []string{"10.0.0.0/8", "10.1.0.0/16", "192.168.0.0/16", "0.0.0.0/0", "10.0.0.1/32",
		"8.0.0.0/6", "12.0.0.0/7", "2001:db8::/32", "2001:db8:1::/48", "::/0", "::ffff:0:0/96", "fe80::/10",
		"2000::/3", "fe00::/8"}
	twinVals = []uint16{0, 1, 6, 17, 46, 58, 63, 100, 255, 256, 443, 511, 512, 4095, 40000, 65535}
)

func randomRanges(r *rand.Rand, max uint16) []Range {
	if r.IntN(3) != 0 {
		return nil
	}
	var out []Range
	for n := 1 + r.IntN(2); n > 0; n-- {
		lo := uint16(uint32(twinVals[r.IntN(len(twinVals))]) % (uint32(max) + 1))
		hi := lo
		if r.IntN(3) == 0 {
			hi = lo + uint16(r.IntN(int(max-lo)+1))
		}
		out = append(out, Range{lo, hi})
	}
	return out
}

func randomPrefixes(r *rand.Rand) []netip.Prefix {
	if r.IntN(3) != 0 {
		return nil
	}
	var out []netip.Prefix
	for n := 1 + r.IntN(2); n > 0; n-- {
		out = append(out, netip.MustParsePrefix(twinP[r.IntN(len(twinP))]))
	}
	return out
}

func randomRule(r *rand.Rand, i int) Rule {
	for {
		ru := Rule{Name: fmt.Sprintf("r%d", i), VLAN: randomRanges(r, 4095), DSCP: randomRanges(r, 63),
			Proto: randomRanges(r, 255), Src: randomPrefixes(r), Dst: randomPrefixes(r),
			SrcPort: randomRanges(r, 65535), DstPort: randomRanges(r, 65535)}
		if ru.hasCondition() {
			return ru
		}
	}
}

func randomMeta(r *rand.Rand) Meta {
	var m Meta
	m.VLAN = twinVals[r.IntN(len(twinVals))] % 4096
	switch r.IntN(5) {
	case 0:
		m.Flags = FlagNonIP
		return m
	case 1, 2:
		m.Flags = FlagIPv4
		a := netip.MustParseAddr(twinV4[r.IntN(len(twinV4))]).As16()
		b := netip.MustParseAddr(twinV4[r.IntN(len(twinV4))]).As16()
		m.Flow.Src, m.Flow.Dst = a, b
	default:
		m.Flags = FlagIPv6
		m.Flow.IPv6 = true
		m.Flow.Src = netip.MustParseAddr(twinV6[r.IntN(len(twinV6))]).As16()
		m.Flow.Dst = netip.MustParseAddr(twinV6[r.IntN(len(twinV6))]).As16()
	}
	m.DSCP = uint8(twinVals[r.IntN(len(twinVals))] % 64)
	m.Proto = uint8(twinVals[r.IntN(len(twinVals))])
	m.Flow.Proto = m.Proto
	if r.IntN(3) != 0 {
		m.Flags |= FlagPorts
		m.Flow.SrcPort = twinVals[r.IntN(len(twinVals))]
		m.Flow.DstPort = twinVals[r.IntN(len(twinVals))]
	}
	return m
}

// TestClassifyTwin compares Classify (bit vectors up to 64 rules, linear
// above) with the naive Rule semantics on random rules and packets.
func TestClassifyTwin(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	matched := 0
	for _, nrules := range []int{1, 3, 10, 64, 65, 100} {
		for trial := 0; trial < 20; trial++ {
			rules := make([]Rule, nrules)
			for i := range rules {
				rules[i] = randomRule(r, i)
			}
			c, err := NewClassifier(rules)
			if err != nil {
				t.Fatal(err)
			}
			if c.tab == nil && c.sets == nil {
				t.Fatalf("%d rules: no tables", nrules)
			}
			for k := 0; k < 200; k++ {
				m := randomMeta(r)
				want := naiveClassify(rules, &m)
				if got := c.Classify(&m); got != want {
					t.Fatalf("%d rules, meta %+v: Classify %d, naive %d (rule %v)", nrules, m, got, want, rules[max(int(got), int(want))-1])
				}
				ip := m.Flags&(FlagIPv4|FlagIPv6) != 0
				if got := c.classifyLinear(&m, ip); got != want {
					t.Fatalf("linear %d, naive %d", got, want)
				}
				if want != 0 {
					matched++
				}
			}
		}
	}
	if matched < 1000 {
		t.Fatalf("only %d packets matched a rule: the test does not exercise matching", matched)
	}
}
