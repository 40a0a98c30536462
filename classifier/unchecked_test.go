package classifier

import (
	"fmt"
	"testing"
)

// checkBounds verifies the invariants that keep the unchecked reads (at,
// unchecked.go) in range, over every value each read's inputs can take.
func (t *tables) checkBounds() error {
	if t == nil {
		return nil
	}
	var maxAddr [2][2]uint32
	for fam := range 2 {
		for dir := range 2 {
			m, err := t.addr[fam][dir].checkBounds()
			if err != nil {
				return fmt.Errorf("trie [%d][%d]: %w", fam, dir, err)
			}
			maxAddr[fam][dir] = m
		}
	}
	maxSp, err := t.sport.checkBounds()
	if err != nil {
		return fmt.Errorf("sport: %w", err)
	}
	maxDpo, err := t.dport.checkBounds()
	if err != nil {
		return fmt.Errorf("dport: %w", err)
	}
	if t.nFlat == 0 {
		return nil
	}
	maxV, maxDP := uint32(0), uint32(0)
	for _, v := range t.vlanID {
		maxV = max(maxV, uint32(v))
	}
	for _, v := range t.dpID {
		maxDP = max(maxDP, uint32(v))
	}
	if maxDP >= t.nDP || maxDpo >= t.nDport {
		return fmt.Errorf("DSCP-protocol class %d of %d, dport class %d of %d", maxDP, t.nDP, maxDpo, t.nDport)
	}
	n := uint32(len(t.arena))
	for fam := range t.flat {
		ai := uint32(1) // non-IP: index 0
		if fam < 2 {
			if maxAddr[fam][1] >= t.nDst[fam] {
				return fmt.Errorf("family %d: destination class %d of %d", fam, maxAddr[fam][1], t.nDst[fam])
			}
			ai = (maxAddr[fam][0] + 1) * t.nDst[fam]
		}
		dom := [3]uint32{(maxV + 1) * t.nDP, ai, (maxSp + 1) * t.nDport}
		end := t.flatEnd[fam]
		if end[0] > end[1] || end[1] > end[2] || int(end[2]) != len(t.flat[fam]) {
			return fmt.Errorf("family %d: pair ends %v of %d groups", fam, end, len(t.flat[fam]))
		}
		for p, g := range t.flat[fam] {
			in := [2]int{0, 1} // (vd, addrs)
			switch {
			case uint32(p) >= end[1]:
				in = [2]int{1, 2}
			case uint32(p) >= end[0]:
				in = [2]int{0, 2}
			}
			top := func(o, d uint32) (uint32, error) {
				if uint64(o)+uint64(d) > uint64(n) {
					return 0, fmt.Errorf("family %d, group %d: input at %d+%d past the arena (%d)", fam, p, o, d, n)
				}
				return slicesMax(t.arena[o : o+d]), nil
			}
			m0, err := top(g.o0, dom[in[0]])
			if err != nil {
				return err
			}
			m1, err := top(g.o1, dom[in[1]])
			if err != nil {
				return err
			}
			if uint64(m0)+uint64(m1) >= uint64(len(t.flatFirst)) {
				return fmt.Errorf("family %d, group %d: first match at up to %d+%d past the first-match tables (%d)", fam, p, m0, m1, len(t.flatFirst))
			}
		}
	}
	return nil
}

func slicesMax(a []uint32) uint32 {
	m := uint32(0)
	for _, x := range a {
		m = max(m, x)
	}
	return m
}

// checkBounds verifies every node reference names a node the trie has and
// returns the largest class id.
func (t *trie) checkBounds() (uint32, error) {
	m := uint32(0)
	ref := func(e int32) error {
		if e >= 0 {
			m = max(m, uint32(e))
			return nil
		}
		idx := uint64(^e) >> 8
		if idx >= uint64(len(t.meta)) || idx<<8|255 >= uint64(len(t.nodes)) {
			return fmt.Errorf("node %d of %d (%d entries)", idx, len(t.meta), len(t.nodes))
		}
		return nil
	}
	if err := ref(t.root); err != nil {
		return 0, err
	}
	for _, e := range t.nodes {
		if err := ref(e); err != nil {
			return 0, err
		}
	}
	for _, nm := range t.meta {
		if nm.miss < 0 {
			return 0, fmt.Errorf("miss %d", nm.miss)
		}
		m = max(m, uint32(nm.miss))
	}
	return m, nil
}

// checkBounds verifies every page offset leaves 256 entries in page and
// returns the largest class id.
func (p *portMap) checkBounds() (uint32, error) {
	m := p.none
	for _, e := range p.block {
		if e&uniformBlock != 0 {
			m = max(m, e&^uniformBlock)
			continue
		}
		if uint64(e)+255 >= uint64(len(p.page)) {
			return 0, fmt.Errorf("page offset %d of %d", e, len(p.page))
		}
	}
	return max(m, slicesMax(p.page)), nil
}

// TestCheckBoundsCatches: checkBounds rejects tables broken in each way
// an unchecked read would go out of range, so that its passing in
// TestTablesMatchReference means something.
func TestCheckBoundsCatches(t *testing.T) {
	c, err := NewClassifierFromSpecs(siteSpecs(1000))
	if err != nil {
		t.Fatal(err)
	}
	if c.tab == nil || c.tab.nFlat == 0 {
		t.Fatalf("1000 rules: want flat groups, got %s", shape(c))
	}
	if err := c.tab.checkBounds(); err != nil {
		t.Fatal(err)
	}
	breaks := map[string]func(tb *tables){
		"arena entry": func(tb *tables) {
			for fam := range tb.flat {
				if gs := tb.flat[fam]; len(gs) > 0 {
					tb.arena[gs[0].o1] += uint32(len(tb.flatFirst))
					return
				}
			}
		},
		"flat pairs":        func(tb *tables) { tb.flatEnd[1][1] = uint32(len(tb.flat[1]) + 1) },
		"arena short":       func(tb *tables) { tb.arena = tb.arena[:len(tb.arena)-1] },
		"first-match short": func(tb *tables) { tb.flatFirst = tb.flatFirst[:len(tb.flatFirst)-1] },
		"trie node": func(tb *tables) {
			for fam := range 2 {
				for dir := range 2 {
					if tr := &tb.addr[fam][dir]; len(tr.meta) > 0 {
						tr.root = ^int32(len(tr.meta) << 8)
						return
					}
				}
			}
			t.Fatal("no trie")
		},
		"port page": func(tb *tables) {
			tb.dport.page = append(tb.dport.page, 0)
			for i, e := range tb.dport.block {
				if e&uniformBlock == 0 {
					tb.dport.block[i] = uint32(len(tb.dport.page) - 255)
					return
				}
			}
			t.Fatal("no port page")
		},
		"dp class": func(tb *tables) { tb.dpID[0] = uint16(tb.nDP) },
	}
	for name, br := range breaks {
		c, _ := NewClassifierFromSpecs(siteSpecs(1000))
		br(c.tab)
		if err := c.tab.checkBounds(); err == nil {
			t.Errorf("%s: checkBounds passed broken tables", name)
		}
	}
}

// siteSpecs are n rules of a site's shapes (per-prefix, DSCP × port,
// per-host, VLAN × port classes), as BenchmarkClassifyScale's.
func siteSpecs(n int) []string {
	specs := make([]string, n)
	for i := range specs {
		k := i / 4
		switch i % 4 {
		case 0:
			specs[i] = fmt.Sprintf("p%d=dst:10.%d.%d.0/24", i, 3+k/256, k%256)
		case 1:
			lo := 1024 + (k*37)%8192
			specs[i] = fmt.Sprintf("c%d=dscp:ef,proto:tcp|udp,sport:%d-%d", i, lo, lo+15)
		case 2:
			specs[i] = fmt.Sprintf("h%d=src:2001:db8:1::%x/128", i, k)
		case 3:
			specs[i] = fmt.Sprintf("v%d=vlan:%d,dport:%d", i, 100+k%7+(k/7)*10, 5001+(k/7)%3)
		}
	}
	return specs
}
