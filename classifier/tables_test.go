package classifier

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"slices"
	"sync"
	"testing"
)

// propGen draws rules and packets for the table/reference equivalence
// test: prefixes of every length around a few base addresses, ranges and
// values around each other's ends, so that rules overlap and packets sit
// on the edges of what they match.
type propGen struct {
	r       *rand.Rand
	bases4  []netip.Addr
	bases6  []netip.Addr
	prefix  []netip.Prefix // every prefix a rule used, for packets
	edges   [4][]uint16    // vlan, dscp, proto, port: range ends seen
	maxEdge [4]uint16
}

func newPropGen(seed uint64) *propGen {
	g := &propGen{r: rand.New(rand.NewPCG(seed, 7)), maxEdge: [4]uint16{4095, 63, 255, 65535}}
	for _, s := range []string{"10.1.2.3", "10.1.200.9", "192.168.7.77", "0.0.0.1", "255.255.255.254"} {
		g.bases4 = append(g.bases4, netip.MustParseAddr(s))
	}
	for _, s := range []string{"2001:db8::1", "2001:db8:0:1::abcd", "fe80::1", "::ffff:10.1.2.3", "ffff:ffff::1"} {
		g.bases6 = append(g.bases6, netip.MustParseAddr(s))
	}
	for k := range g.edges {
		g.edges[k] = []uint16{0, g.maxEdge[k]}
	}
	g.edges[2] = append(g.edges[2], 6, 17, 1, 58)
	g.edges[3] = append(g.edges[3], 80, 443, 255, 256)
	return g
}

// value is a value of field k near a seen edge.
func (g *propGen) value(k int) uint16 {
	e := int(g.edges[k][g.r.IntN(len(g.edges[k]))]) + g.r.IntN(3) - 1
	return uint16(min(max(e, 0), int(g.maxEdge[k])))
}

func (g *propGen) ranges(k int, p float64) []Range {
	if g.r.Float64() >= p {
		return nil
	}
	var out []Range
	for n := 1 + g.r.IntN(3); n > 0; n-- {
		lo := g.value(k)
		if g.r.IntN(2) == 0 {
			lo = uint16(g.r.IntN(int(g.maxEdge[k]) + 1))
		}
		hi := lo
		if g.r.IntN(2) == 0 {
			hi = lo + uint16(g.r.IntN(min(int(g.maxEdge[k]-lo), 300)+1))
		}
		g.edges[k] = append(g.edges[k], lo, hi)
		out = append(out, Range{lo, hi})
	}
	return out
}

func (g *propGen) prefixes(p float64) []netip.Prefix {
	if g.r.Float64() >= p {
		return nil
	}
	var out []netip.Prefix
	for n := 1 + g.r.IntN(2); n > 0; n-- {
		var a netip.Addr
		if g.r.IntN(2) == 0 {
			a = g.bases4[g.r.IntN(len(g.bases4))]
		} else {
			a = g.bases6[g.r.IntN(len(g.bases6))]
		}
		a = g.perturb(a, g.r.IntN(a.BitLen()+1))
		pf, _ := a.Prefix(g.r.IntN(a.BitLen() + 1))
		g.prefix = append(g.prefix, pf)
		out = append(out, pf)
	}
	return out
}

// perturb flips address bit i (counting from the top; BitLen: none).
func (g *propGen) perturb(a netip.Addr, i int) netip.Addr {
	if i >= a.BitLen() {
		return a
	}
	b := a.AsSlice()
	b[i/8] ^= 0x80 >> (i % 8)
	out, _ := netip.AddrFromSlice(b)
	return out
}

// rule draws a rule; kind picks a field signature (so that rule sets
// have the shape of per-prefix and per-port x per-class sites), -1 any.
func (g *propGen) rule(i, kind int) Rule {
	p := [7]float64{.3, .3, .4, .4, .4, .3, .3}
	if kind >= 0 {
		for k := range p {
			p[k] = 0
			if kind>>k&1 != 0 {
				p[k] = 1
			}
		}
	}
	for {
		r := Rule{Name: fmt.Sprintf("r%d", i), VLAN: g.ranges(0, p[0]), DSCP: g.ranges(1, p[1]),
			Proto: g.ranges(2, p[2]), Src: g.prefixes(p[3]), Dst: g.prefixes(p[4]),
			SrcPort: g.ranges(3, p[5]), DstPort: g.ranges(3, p[6])}
		if g.r.IntN(40) == 0 {
			r.LinkLocal = true
		}
		if r.hasCondition() {
			return r
		}
	}
}

// addr draws an address of a family: inside, just outside or far from a
// rule's prefix.
func (g *propGen) addr(v6 bool) [16]byte {
	var cand []netip.Prefix
	for _, p := range g.prefix {
		if p.Addr().Is6() == v6 {
			cand = append(cand, p)
		}
	}
	var a netip.Addr
	if len(cand) == 0 || g.r.IntN(8) == 0 {
		bases := g.bases4
		if v6 {
			bases = g.bases6
		}
		a = g.perturb(bases[g.r.IntN(len(bases))], g.r.IntN(129))
	} else {
		p := cand[g.r.IntN(len(cand))]
		a = p.Addr()
		for k := p.Bits(); k < a.BitLen(); k++ { // random host bits
			if g.r.IntN(2) == 0 {
				a = g.perturb(a, k)
			}
		}
		if g.r.IntN(3) == 0 && p.Bits() > 0 { // just outside
			a = g.perturb(a, p.Bits()-1)
		}
	}
	return a.As16()
}

func (g *propGen) meta() Meta {
	var m Meta
	m.VLAN = g.value(0)
	switch g.r.IntN(6) {
	case 0:
		m.Flags = FlagNonIP
	case 1, 2:
		m.Flags = FlagIPv4
		m.Flow.Src, m.Flow.Dst = g.addr(false), g.addr(false)
	default:
		m.Flags = FlagIPv6
		m.Flow.IPv6 = true
		m.Flow.Src, m.Flow.Dst = g.addr(true), g.addr(true)
	}
	if m.Flags != FlagNonIP {
		m.DSCP = uint8(g.value(1))
		m.Proto = uint8(g.value(2))
		m.Flow.Proto = m.Proto
		if g.r.IntN(4) != 0 {
			m.Flags |= FlagPorts
			m.Flow.SrcPort, m.Flow.DstPort = g.value(3), g.value(3)
		}
	}
	return m
}

// naiveRuleClassify is the reference: the first rule, in order, that
// naiveMatch accepts, linklocal:yes rules skipped (Classify never returns
// them).
func naiveRuleClassify(rules []Rule, m *Meta) uint16 {
	for i := range rules {
		if !rules[i].LinkLocal && naiveMatch(&rules[i], m) {
			return uint16(i + 1)
		}
	}
	return 0
}

// withBudget runs f with the default limits but for the given table
// budgets (0: unchanged).
func withBudget(cross, first, bytes int, f func(lim limits)) {
	f(limitsWith(cross, first, bytes))
}

// limitsWith is the default limits with the given table budgets (0: unchanged).
func limitsWith(cross, first, bytes int) limits {
	lim := defaultLimits
	if cross > 0 {
		lim.crossEntries = cross
	}
	if first > 0 {
		lim.firstEntries = first
	}
	if bytes > 0 {
		lim.tableBytes = bytes
	}
	return lim
}

// shape names how a classifier matches, for the coverage check.
func shape(c *Classifier) string {
	switch {
	case c.sets != nil:
		return "sets"
	case c.tab == nil:
		return "linear"
	case c.tab.word != nil:
		return "word"
	case len(c.tab.groups) == 0 && c.tab.nFlat == 0:
		return "fields"
	case len(c.tab.groups)+c.tab.nFlat > 1:
		return "partition"
	case c.tab.nFlat == 1:
		return "flat"
	}
	return [...]string{"cross", "pairs", "triples", "fields", "flat"}[c.tab.groups[0].tier]
}

// TestTablesMatchReference: on many generated rule sets (1 to 1000 rules;
// random fields or the same few field sets; prefixes of every length,
// overlapping ranges, linklocal:yes rules among them) and packets on
// their edges, Classify equals the first-match reading of the rules, in
// every way the tables can be built (the budgets are shrunk to force the
// vector ANDs and the linear scan).
func TestTablesMatchReference(t *testing.T) {
	if raceEnabled {
		// The classifier runs on one goroutine: the race detector has
		// nothing to find here, and slows the 200 000 lookups 10×. The
		// plain pass runs it.
		t.Skip("one goroutine: nothing for the race detector (the plain pass runs it)")
	}
	seen := map[string]int{}
	budgets := []struct {
		name                string
		cross, first, bytes int
	}{
		{"default", 0, 0, 0},
		{"no-first", 0, 1, 0},
		{"no-pair", 1 << 10, 1, 0},
		{"no-cross", 1, 1, 0},
		{"no-tables", 1, 1, 1},
	}
	trial := 0
	for _, n := range []int{1, 2, 5, 17, 64, 65, 130, 300, 1000} {
		trials := 12
		if n >= 300 {
			trials = 3
		}
		for range trials {
			trial++
			g := newPropGen(uint64(trial))
			kinds := []int{-1}
			if trial%2 == 0 { // a site: a few field sets
				kinds = []int{1<<4 | 1<<2, 1<<1 | 1<<2 | 1<<5, 1 << 3, 1<<0 | 1<<6, 1<<3 | 1<<4}[:1+trial%5]
			}
			rules := make([]Rule, n)
			for i := range rules {
				rules[i] = g.rule(i, kinds[g.r.IntN(len(kinds))])
			}
			metas := make([]Meta, 400)
			for i := range metas {
				metas[i] = g.meta()
			}
			for _, bu := range budgets {
				if n >= 300 && bu.name != "default" && trial%3 != 0 {
					continue
				}
				withBudget(bu.cross, bu.first, bu.bytes, func(lim limits) {
					c, err := newClassifier(rules, lim)
					if err != nil {
						t.Fatal(err)
					}
					seen[shape(c)]++
					if err := c.tab.checkBounds(); err != nil {
						t.Fatalf("trial %d, %d rules, %s (%s): %v", trial, n, bu.name, shape(c), err)
					}
					for i := range metas {
						m := &metas[i]
						want := naiveRuleClassify(rules, m)
						if got := c.Classify(m); got != want {
							t.Fatalf("trial %d, %d rules, %s (%s): meta %+v: Classify %d, reference %d\nrules: %v",
								trial, n, bu.name, shape(c), *m, got, want, rules)
						}
						if want != 0 {
							seen["matched"]++
						}
					}
				})
			}
		}
	}
	t.Logf("built: %v", seen)
	for _, s := range []string{"sets", "word", "flat", "cross", "pairs", "triples", "fields", "partition", "linear"} {
		if seen[s] == 0 {
			t.Errorf("no rule set was matched as %s: the test does not cover it", s)
		}
	}
	if seen["matched"] < 20000 {
		t.Errorf("only %d packets matched a rule", seen["matched"])
	}
}

// TestClassifyZeroAllocs1000: Classify and Measure allocate nothing with
// 1000 rules, whichever way the tables are built.
func TestClassifyZeroAllocs1000(t *testing.T) {
	g := newPropGen(99)
	rules := make([]Rule, 1000)
	for i := range rules {
		rules[i] = g.rule(i, []int{1<<4 | 1<<2, 1<<1 | 1<<2 | 1<<5, 1 << 3}[i%3])
	}
	metas := make([]Meta, 64)
	for i := range metas {
		metas[i] = g.meta()
	}
	metas[0].Flags |= FlagLinkLocal
	for _, bu := range [][3]int{{0, 0, 0}, {0, 1, 0}, {1, 1, 0}, {1, 1, 1}} {
		withBudget(bu[0], bu[1], bu[2], func(lim limits) {
			c, err := newClassifier(rules, lim)
			if err != nil {
				t.Fatal(err)
			}
			if n := testing.AllocsPerRun(100, func() {
				for i := range metas {
					c.Classify(&metas[i])
					c.Measure(&metas[i])
				}
			}); n != 0 {
				t.Errorf("%s: %v allocations per run", shape(c), n)
			}
		})
	}
}

// TestTablesRuleLimit: the most rules a classifier takes build and
// classify (through whichever tier fits), and one more is a clear error.
func TestTablesRuleLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a 65535-rule classifier")
	}
	rules := make([]Rule, MaxRules)
	for i := range rules {
		rules[i] = Rule{Name: fmt.Sprintf("r%d", i), SrcPort: []Range{{uint16(i), uint16(i)}}, Proto: []Range{{6, 6}}}
	}
	c, err := NewClassifier(rules)
	if err != nil {
		t.Fatal(err)
	}
	m := Meta{Flags: FlagIPv4 | FlagPorts, Proto: 6}
	m.Flow.SrcPort = 40000
	if got := c.Classify(&m); got != 40001 {
		t.Fatalf("port 40000: %d (%s)", got, shape(c))
	}
	m.Proto = 17
	if got := c.Classify(&m); got != 0 {
		t.Fatalf("udp: %d", got)
	}
	rules = append(rules, Rule{Name: "one-more", VLAN: []Range{{1, 1}}})
	if _, err := NewClassifier(rules); err == nil {
		t.Fatal("65536 rules accepted")
	}
}

// FuzzTablesMatchReference: for a rule set drawn from the fuzzer's seed
// (1 to 100 rules: sets, words, combined tables; random fields or a site's few field sets), built under
// one of the budgets that force each way of matching, Classify equals the
// first-match reading of the rules on packets drawn near the rules' edges
// and on one packet decoded from the fuzzer's bytes.
func FuzzTablesMatchReference(f *testing.F) {
	f.Add(uint64(1), uint16(1000), uint8(2), uint8(0), []byte{0x08, 0, 100, 46, 17, 10, 2, 3, 4})
	f.Add(uint64(7), uint16(70), uint8(1), uint8(2), []byte{})
	f.Add(uint64(3), uint16(300), uint8(4), uint8(1), []byte{0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, seed uint64, n uint16, kind, budget uint8, raw []byte) {
		g := newPropGen(seed)
		kinds := []int{-1}
		if kind%6 != 0 {
			kinds = []int{1<<4 | 1<<2, 1<<1 | 1<<2 | 1<<5, 1 << 3, 1<<0 | 1<<6, 1<<3 | 1<<4, 1<<3 | 1<<2}[:kind%6]
		}
		rules := make([]Rule, 1+int(n)%100) // larger sets take up to seconds to build: TestTablesMatchReference has them, to 1000
		for i := range rules {
			rules[i] = g.rule(i, kinds[g.r.IntN(len(kinds))])
		}
		metas := make([]Meta, 64, 65)
		for i := range metas {
			metas[i] = g.meta()
		}
		metas = append(metas, rawMeta(raw))
		bu := [][3]int{{0, 0, 0}, {0, 1, 0}, {1 << 10, 1, 0}, {1, 1, 0}, {1, 1, 1}}[int(budget)%5]
		withBudget(bu[0], bu[1], bu[2], func(lim limits) {
			c, err := newClassifier(rules, lim)
			if err != nil {
				t.Fatal(err)
			}
			if err := c.tab.checkBounds(); err != nil {
				t.Fatalf("%d rules, budget %v (%s): %v", len(rules), bu, shape(c), err)
			}
			for i := range metas {
				m := &metas[i]
				if got, want := c.Classify(m), naiveRuleClassify(rules, m); got != want {
					t.Fatalf("%d rules, budget %v (%s): meta %+v: Classify %d, reference %d", len(rules), bu, shape(c), *m, got, want)
				}
			}
		})
	})
}

// rawMeta decodes a packet's fields from fuzzer bytes (missing bytes are
// zero): flags, VLAN, DSCP, protocol, then the address bytes and ports.
func rawMeta(p []byte) Meta {
	var b [44]byte
	copy(b[:], p)
	var m Meta
	switch b[0] % 4 {
	case 0:
		m.Flags = FlagNonIP
	case 1:
		m.Flags = FlagIPv4
		m.Flow.Src[10], m.Flow.Src[11], m.Flow.Dst[10], m.Flow.Dst[11] = 0xff, 0xff, 0xff, 0xff
		copy(m.Flow.Src[12:], b[6:10])
		copy(m.Flow.Dst[12:], b[10:14])
	default:
		m.Flags = FlagIPv6
		m.Flow.IPv6 = true
		copy(m.Flow.Src[:], b[6:22])
		copy(m.Flow.Dst[:], b[22:38])
	}
	m.VLAN = (uint16(b[1])<<8 | uint16(b[2])) & 4095
	if m.Flags != FlagNonIP {
		m.DSCP, m.Proto = b[3]&63, b[4]
		m.Flow.Proto = m.Proto
		if b[0]&4 != 0 {
			m.Flags |= FlagPorts
			m.Flow.SrcPort, m.Flow.DstPort = uint16(b[38])<<8|uint16(b[39]), uint16(b[40])<<8|uint16(b[41])
		}
	}
	return m
}

// TestFlatPairs: rule sets whose groups read each pair of inputs, and
// one input alone (laid out with a table of zeros for the other:
// setGroups), land in the section of the flat groups that reads that pair
// (the loop of classify that reads it), and Classify equals the reference.
// (Rules with a prefix are IP-only, so their groups read vd too, which
// tells non-IP frames apart: addresses and ports alone do not occur.)
func TestFlatPairs(t *testing.T) {
	const vd, addrs, ports = 0, 1, 2
	cases := []struct {
		name  string
		n     int
		kinds []int
		want  [][2]int // the pairs of inputs the groups read
		zero  int      // input 0 or 1 laid out as zeros (a group of one input), -1 none
	}{
		{"vd alone", 100, []int{1<<0 | 1<<2}, [][2]int{{vd, ports}}, 1},
		{"ports alone", 100, []int{1 << 6}, [][2]int{{vd, ports}}, 0},
		{"addrs", 100, []int{1 << 3}, [][2]int{{vd, addrs}}, -1},
		{"vd addrs", 100, []int{1<<2 | 1<<4}, [][2]int{{vd, addrs}}, -1},
		{"vd ports", 100, []int{1<<1 | 1<<5}, [][2]int{{vd, ports}}, -1},
		{"mixed", 1000, []int{1<<2 | 1<<4, 1<<1 | 1<<5, 1 << 6}, [][2]int{{vd, addrs}, {vd, ports}}, -1},
	}
	for i, tc := range cases {
		g := newPropGen(uint64(100 + i))
		rules := make([]Rule, tc.n)
		for j := range rules {
			rules[j] = g.rule(j, tc.kinds[j%len(tc.kinds)])
		}
		c, err := NewClassifier(rules)
		if err != nil {
			t.Fatal(err)
		}
		tb := c.tab
		if tb == nil || tb.nFlat == 0 || c.groups != tb {
			t.Fatalf("%s: built as %s, want flat groups on classify's path", tc.name, shape(c))
		}
		if err := tb.checkBounds(); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		for fam := range tb.flat {
			end := tb.flatEnd[fam]
			n := [3]uint32{end[0], end[1] - end[0], end[2] - end[1]} // groups per pair
			for _, p := range tc.want {
				if n[p[0]+p[1]-1] == 0 {
					t.Errorf("%s: family %d has no group reading inputs %v (groups per pair %v)", tc.name, fam, p, n)
				}
			}
			if int(n[0]+n[1]+n[2]) != tb.nFlat {
				t.Errorf("%s: family %d: %v groups per pair, %d flat groups", tc.name, fam, n, tb.nFlat)
			}
			if tc.zero >= 0 {
				fg := tb.flat[fam][0]
				o, d := fg.o1, tb.nPorts
				if tc.zero == 0 {
					o, d = fg.o0, tb.nVD
				}
				if slices.ContainsFunc(tb.arena[o:o+d], func(x uint32) bool { return x != 0 }) {
					t.Errorf("%s: family %d: input %d's table is not the zeros of a group of one input", tc.name, fam, tc.zero)
				}
			}
		}
		for range 2000 {
			m := g.meta()
			if got, want := c.Classify(&m), naiveRuleClassify(rules, &m); got != want {
				t.Fatalf("%s: meta %+v: Classify %d, reference %d", tc.name, m, got, want)
			}
		}
	}
}

// TestBuildReentrant: classifiers built at the same time with different
// limits each get their own (the limits are the builder's, not the
// package's): the same rules build to the same shape as when built alone.
// Under -race a shared limit would also be reported.
func TestBuildReentrant(t *testing.T) {
	g := newPropGen(7)
	rules := make([]Rule, 300)
	for i := range rules {
		rules[i] = g.rule(i, []int{1<<4 | 1<<2, 1<<1 | 1<<2 | 1<<5, 1 << 3}[i%3])
	}
	shapes := map[[3]int]string{}
	budgets := [][3]int{{0, 0, 0}, {1, 1, 0}, {1, 1, 1}}
	for _, bu := range budgets {
		c, err := newClassifier(rules, limitsWith(bu[0], bu[1], bu[2]))
		if err != nil {
			t.Fatal(err)
		}
		shapes[bu] = shape(c)
	}
	if shapes[budgets[0]] == shapes[budgets[2]] {
		t.Fatalf("the budgets build the same shape %q: the test shows nothing", shapes[budgets[0]])
	}
	var wg sync.WaitGroup
	errs := make(chan string, 3*len(budgets))
	for range 3 {
		for _, bu := range budgets {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c, err := newClassifier(rules, limitsWith(bu[0], bu[1], bu[2]))
				if err != nil {
					errs <- err.Error()
				} else if got := shape(c); got != shapes[bu] {
					errs <- fmt.Sprintf("budget %v: built %s concurrently, %s alone", bu, got, shapes[bu])
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}
