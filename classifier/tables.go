package classifier

import (
	"encoding/binary"
	"math/bits"
	"net/netip"
	"slices"
)

// tables are the lookup structures Classify uses instead of testing rules
// one by one. Each field maps the packet's value to a class: the set of
// rules whose condition on that field accepts the value, a bit vector with
// bit i for rule i (a rule without the condition is in every class of the
// field; a linklocal:yes rule in none). The AND of a packet's classes is
// exactly the set of rules it matches, and its lowest bit the first match.
//
// Fields and how a value finds its class:
//
//	VLAN                   indexed by the id
//	DSCP × protocol        indexed by both (one more entry: a non-IP frame)
//	ports                  by port >> 8, then, in a block the rules split, by the low byte;
//	                       one more class each for a frame without ports
//	addresses              a path-compressed stride-8 trie per family and direction
//	                       (a third, trivial family: non-IP)
//
// Up to 64 rules (one word), Classify ANDs the field words directly
// (wordTables). Above, the classes are combined pairwise (Gupta and
// McKeown's recursive flow classification): VLAN × DSCP-protocol, source
// × destination address, source × destination port, two of those three
// (the pairing with the smallest table that fits), and that × the third
// into a table of first matches (tierCross). Each combined class is cut
// after its first rule that the fields still to come cannot reject
// (truncate), which keeps the tables small. A packet then costs about a
// dozen loads whatever the number of rules (a prefix one more per byte
// below what the rules' prefixes share). Class 0 of every combined set is
// the empty set.
//
// The combined tables grow as the product of their inputs' class counts,
// and rules on different fields multiply each other's classes: when one
// set of tables for all rules does not fit, the rules are split by the
// fields they constrain (partition), each group gets its tables, and a
// packet's match is the lowest of its groups'. A group whose rules
// constrain at most two of the three combinations (VLAN × DSCP-protocol,
// addresses, ports: a site's per-prefix or per-VLAN × port classes) skips
// the pair table: one table of first matches indexed by the two (tierFlat,
// all such groups in one arena); partition keeps such a group flat rather
// than join it into a group that needs all three. When that does not fit
// either, Classify stops at fewer combinations and ANDs their vectors, a
// summary word first (Baboescu and Varghese's aggregated bit vectors):
// two vectors (tierPairs), three (tierTriples), or the six field vectors
// (tierFields); the AND costs up to one word per 64 rules per vector.
// When even the fields do not fit the table limit, NewClassifier leaves tab
// nil and every rule is tested in order.
type tables struct {
	words  int // rule words per class vector
	stride int // uint64s per summed vector: words+1, or 1 when words == 1 (the word is its own summary)
	sgroup int // rule words per summary bit

	vlanID [4096]uint16
	dpID   [64*256 + 1]uint16 // [dscp<<8 | proto]; [64*256]: a non-IP frame
	sport  portMap            // with one more class: no ports
	dport  portMap
	addr   [3][2]trie // [IPv4, IPv6, non-IP][src, dst]; non-IP: no trie, class 0

	nDP, nDport uint32
	nDst        [3]uint32

	// groups partition the rules (one group: all of them); a packet's
	// match is the lowest of its groups' matches.
	groups []group

	// The tierFlat groups, taken out of groups: per family, each group's
	// offsets into arena (its input tables) and flatFirst (its first-match
	// table), one slice each for all groups so that a group costs three
	// loads and no slice header. The groups reading vd and addrs
	// come first, then from flatEnd[fam][0] those reading vd and ports,
	// then from flatEnd[fam][1] to flatEnd[fam][2] (the number of groups)
	// those reading addrs and ports.
	flat      [3][]flatGroup
	flatEnd   [3][3]uint32
	nFlat     int
	arena     []uint32
	flatFirst []uint16
	// nVD and nPorts are the numbers of values the vd and ports inputs
	// take (classify's in[0] and in[2]).
	nVD, nPorts uint32

	// path is how Classify goes: pathGroups (classify: the flat groups
	// and the tierCross ones), pathOne (classify1: one group of any tier
	// but flat) or pathFields (andFields). Unused when word is set.
	path uint8

	word *wordTables // up to 64 rules: instead of all the above

	// tierFields: the six field vectors, summed.
	vlanV, dpV, spV, dpoV []uint64
	addrV                 [3][2][]uint64
}

// group is the combined tables of a set of rules (all of them, or those
// constraining the same fields).
type group struct {
	tier int

	nAddr [3]uint32
	vd    []uint32    // [vlan class * nDP + dp class]
	addrs [3][]uint32 // [src class * nDst + dst class]
	ports []uint32    // [sport class * nDport + dport class]

	// Of the three classes (vd, addrs, ports), ord[0] and ord[1] are
	// combined by pair, and that with ord[2] by first. A packet's pair
	// entry is vd*pm[fam][0] + addrs*pm[fam][1] + ports*pm[fam][2], the
	// index of its ord[2] class vd*tm[0] + addrs*tm[1] + ports*tm[2].
	pm    [3][3]uint32
	tm    [3]uint32
	pair  [3][]uint32 // per family: [class ord[0] * nB + class ord[1]]
	nB    [3]uint32
	nC    [3]uint32   // classes of ord[2]
	first [3][]uint16 // tierCross: [pair class * nC + class ord[2]] = the MEC id

	// tierFlat: the group's rules constrain at most two of the three
	// (vd, addrs, ports); every class of the others holds them all (up to
	// truncate), so those are left out. in names the two read, as an
	// index into [vd, addrs, ports, none] (none: a constant 0, through a
	// one-entry table); ft[i][fam] is input i's table (the same slice in
	// every family but for addrs), ff[fam][x*fn[fam]+y] the MEC id.
	in [2]uint8
	ft [2][3][]uint32
	fn [3]uint32
	ff [3][]uint16

	// Summed vectors (summed) of the classes the tier ANDs.
	pairV, thirdV [3][]uint64
	vdV, portsV   []uint64
	addrsV        [3][]uint64
}

// flatGroup is a tierFlat group in tables.arena for one family: its
// match is flatFirst[arena[o0+i] + arena[o1+j]] for the packet's indices
// i, j of its two inputs. The first input's table holds its class times
// the second's class count, the second's its class plus the offset of the
// first-match table in flatFirst, so the sum is the first-match entry.
//
// A group that reads one input only reads it paired with a table of
// zeros (setGroups), so that every group reads one of three pairs —
// vd and addrs, vd and ports, addrs and ports — and classify has a loop
// for each: fewer loop heads than one per pair with the constant, and no
// per-group choice of inputs.
type flatGroup struct {
	o0, o1 uint32
}

// flatMatch is the match of flat group g for its inputs' indices i, j,
// as flatFirst holds it: the MEC id − 1, all ones when no rule matches,
// so that the first match of several is their minimum.
func flatMatch(a []uint32, f []uint16, g flatGroup, i, j uint32) uint16 {
	return at16(f, at(a, g.o0+i)+at(a, g.o1+j)) // in range: checkBounds
}

// lower is the lower of best and a group's match r, 0 meaning none.
func lower(best, r uint16) uint16 {
	if r-1 < best-1 { // r != 0 && (best == 0 || r < best)
		return r
	}
	return best
}

// Paths of tables.path.
const (
	pathGroups = iota
	pathOne
	pathFields
)

// Tiers, fastest first.
const (
	tierCross   = iota // first[pair][third]
	tierPairs          // AND of pair and third
	tierTriples        // AND of vd, addrs and ports
	tierFields         // AND of the six field vectors
	tierFlat           // first[one class][another]: rules on at most two of the three
)

// limits bound what building the tables may take. They are a value the
// builder carries (tests build with smaller ones), so building is
// reentrant: classifiers may be built concurrently.
type limits struct {
	// tableBytes bounds the tables.
	tableBytes int
	// crossEntries bounds the entries of the combined tables that intern
	// classes (each costs a vector AND and a hash), firstEntries those of
	// the first-match tables, and buildWork the words ANDed: they bound
	// NewClassifier's time (each attempt at a tier gets them afresh).
	crossEntries int
	firstEntries int
	buildWork    int
}

// defaultLimits are NewClassifier's.
var defaultLimits = limits{tableBytes: 64 << 20, crossEntries: 1 << 21, firstEntries: 1 << 23, buildWork: 1 << 26}

// oneGroupDiv is the share of crossEntries a first try at one group for
// all rules gets.
const oneGroupDiv = 8

// portMap maps a port to a class id: block[port>>8] is the id of a block
// the rules do not split (uniformBlock set) or the offset of its 256 ids
// in page. none is the class of a frame without ports.
type portMap struct {
	block [256]uint32
	page  []uint32
	none  uint32
}

const uniformBlock = 1 << 31

func (p *portMap) lookup(port uint16) uint32 {
	e := p.block[port>>8]
	if e&uniformBlock != 0 {
		return e &^ uniformBlock
	}
	return at(p.page, e+uint32(port&0xff)) // in range: checkBounds
}

// trie maps an address to a class id. An entry ≥ 0 is a class id; < 0 is
// the complement of a node reference: node index << 8 | skip << 4 | the
// address byte that indexes the node's 256 entries (nodes[index<<8:], so
// that the reference with its low byte cleared is their offset).
// A node with skip first compares the bytes it skips (those under its
// meta's masks) with meta's values, the class being meta's miss when they
// differ. So a level costs one load, and a node that skips one more.
type trie struct {
	root  int32
	nodes []int32
	meta  []trieMeta // by node index; used when skip is set
}

// trieMeta's masks and values are of the address's bytes 0-7 (hi) and
// 8-15 (lo) loaded little-endian: a plain load on the machines we run on,
// where big-endian would add a byte swap.
type trieMeta struct {
	mhi, mlo, vhi, vlo uint64
	miss               int32
}

// lookup inlines: a trie with one class for every address (the family
// or direction no rule's prefix is of) costs a test and no call.
func (t *trie) lookup(a *[16]byte) uint32 {
	if e := t.root; e >= 0 {
		return uint32(e)
	}
	return t.walk(a, t.root)
}

// walk is lookup below the root; not inlined, so that lookup is.
// tables.classify has its loop inline.
//
//go:noinline
func (t *trie) walk(a *[16]byte, e int32) uint32 {
	for e < 0 {
		c := uint32(^e)
		if c&16 != 0 {
			nm := &t.meta[c>>8]
			if binary.LittleEndian.Uint64(a[0:])&nm.mhi != nm.vhi || binary.LittleEndian.Uint64(a[8:])&nm.mlo != nm.vlo {
				return uint32(nm.miss)
			}
		}
		e = atI(t.nodes, c&^255|uint32(a[c&15])) // in range: checkBounds
	}
	return uint32(e)
}

// classify is Classify on tables of path pathGroups: it
// computes the packet's three inputs (VLAN × DSCP-protocol, source ×
// destination address and source × destination port indices) and takes
// the lowest match of the groups.
func (t *tables) classify(m *Meta) uint16 {
	fam, dpc := 2, uint32(t.dpID[64*256])
	if m.Flags&(FlagIPv4|FlagIPv6) != 0 {
		fam, dpc = 0, uint32(t.dpID[uint32(m.DSCP&63)<<8|uint32(m.Proto)])
		if m.Flow.IPv6 {
			fam = 1
		}
	}
	vdi := uint32(t.vlanID[m.VLAN&4095])*t.nDP + dpc
	ai := uint32(0)
	// The address lookups are trie.walk's loop inline: a call (and the
	// spills around it) costs more.
	if fam < 2 {
		tr, a := &t.addr[fam][0], &m.Flow.Src
		e := tr.root
		for e < 0 {
			c := uint32(^e)
			if c&16 != 0 {
				nm := atMeta(tr.meta, c>>8) // in range: checkBounds
				if binary.LittleEndian.Uint64(a[0:])&nm.mhi != nm.vhi || binary.LittleEndian.Uint64(a[8:])&nm.mlo != nm.vlo {
					e = nm.miss
					break
				}
			}
			e = atI(tr.nodes, c&^255|uint32(a[c&15])) // in range: checkBounds
		}
		s := uint32(e)
		tr, a = &t.addr[fam][1], &m.Flow.Dst
		e = tr.root
		for e < 0 {
			c := uint32(^e)
			if c&16 != 0 {
				nm := atMeta(tr.meta, c>>8) // in range: checkBounds
				if binary.LittleEndian.Uint64(a[0:])&nm.mhi != nm.vhi || binary.LittleEndian.Uint64(a[8:])&nm.mlo != nm.vlo {
					e = nm.miss
					break
				}
			}
			e = atI(tr.nodes, c&^255|uint32(a[c&15])) // in range: checkBounds
		}
		ai = s*t.nDst[fam] + uint32(e)
	}
	var pi uint32
	if m.Flags&FlagPorts != 0 {
		pi = t.sport.lookup(m.Flow.SrcPort)*t.nDport + t.dport.lookup(m.Flow.DstPort)
	} else {
		pi = t.sport.none*t.nDport + t.dport.none
	}
	// Every group is read (class 0 of each combination is the empty set,
	// so a group no rule of which matches gives 0 without a branch): with
	// mixed traffic, branching out early mispredicts more than it saves.
	gs, a, f := t.flat[fam], t.arena, t.flatFirst
	end := t.flatEnd[fam]
	best := ^uint16(0)
	k := uint32(0)
	for ; k < end[0]; k++ {
		best = min(best, flatMatch(a, f, atG(gs, k), vdi, ai)) // in range: checkBounds
	}
	for ; k < end[1]; k++ {
		best = min(best, flatMatch(a, f, atG(gs, k), vdi, pi))
	}
	for ; k < end[2]; k++ {
		best = min(best, flatMatch(a, f, atG(gs, k), ai, pi))
	}
	if len(t.groups) > 0 {
		return t.crossMin(vdi, ai, pi, fam, best+1)
	}
	return best + 1
}

// crossMin lowers best to the lowest nonzero match of the tierCross
// groups. Out of line, so that classify's registers stay its own when
// every group is flat.
//
//go:noinline
func (t *tables) crossMin(vdi, ai, pi uint32, fam int, best uint16) uint16 {
	for i := range t.groups {
		g := &t.groups[i]
		vd, aa, pp := g.vd[vdi], g.addrs[fam][ai], g.ports[pi]
		pm := &g.pm[fam]
		q := g.pair[fam][vd*pm[0]+aa*pm[1]+pp*pm[2]]
		best = lower(best, g.first[fam][q*g.nC[fam]+vd*g.tm[0]+aa*g.tm[1]+pp*g.tm[2]])
	}
	return best
}

// vlanDP returns the packet's VLAN and DSCP-protocol classes and its
// family (0 IPv4, 1 IPv6, 2 neither).
func (t *tables) vlanDP(m *Meta) (v, dpc uint32, fam int) {
	fam, dp := 2, uint32(64*256)
	if m.Flags&(FlagIPv4|FlagIPv6) != 0 {
		fam, dp = 0, uint32(m.DSCP&63)<<8|uint32(m.Proto)
		if m.Flow.IPv6 {
			fam = 1
		}
	}
	return uint32(t.vlanID[m.VLAN&4095]), uint32(t.dpID[dp]), fam
}

// classify1 is classify with one group, out as soon as a combination
// leaves no rule.
func (t *tables) classify1(g *group, m *Meta) uint16 {
	v, dpc, fam := t.vlanDP(m)
	vd := g.vd[v*t.nDP+dpc]
	if vd == 0 {
		return 0
	}
	var s, d uint32
	if fam < 2 {
		s, d = t.addr[fam][0].lookup(&m.Flow.Src), t.addr[fam][1].lookup(&m.Flow.Dst)
	}
	aa := g.addrs[fam][s*t.nDst[fam]+d]
	sp, dpo := t.sport.none, t.dport.none
	if m.Flags&FlagPorts != 0 {
		sp, dpo = t.sport.lookup(m.Flow.SrcPort), t.dport.lookup(m.Flow.DstPort)
	}
	pp := g.ports[sp*t.nDport+dpo]
	if g.tier == tierTriples {
		if aa == 0 || pp == 0 {
			return 0
		}
		var vs [6][]uint64
		vs[0], vs[1], vs[2] = t.vec(g.vdV, vd), t.vec(g.addrsV[fam], aa), t.vec(g.portsV, pp)
		return t.and(&vs, 3)
	}
	pm := &g.pm[fam]
	q := g.pair[fam][vd*pm[0]+aa*pm[1]+pp*pm[2]]
	c := vd*g.tm[0] + aa*g.tm[1] + pp*g.tm[2]
	if g.tier == tierCross {
		return g.first[fam][q*g.nC[fam]+c]
	}
	var vs [6][]uint64
	vs[0], vs[1] = t.vec(g.pairV[fam], q), t.vec(g.thirdV[fam], c)
	return t.and(&vs, 2)
}

// wordTables are the tables for up to 64 rules: one word per value or
// class, ANDed directly (the fewest loads; out as soon as the AND is
// empty, after VLAN, DSCP and protocol for most packets no rule wants).
type wordTables struct {
	vlan  [4096]uint64
	dscp  [64]uint64
	proto [256]uint64
	nonIP uint64 // rules a non-IP frame can match
	sport portMap
	dport portMap
	addr  [2][2]trie // [IPv4, IPv6][src, dst]
	spV   []uint64   // by class
	dpoV  []uint64
	addrV [2][2][]uint64
}

func (w *wordTables) classify(m *Meta) uint16 {
	x := w.vlan[m.VLAN&4095]
	if m.Flags&(FlagIPv4|FlagIPv6) != 0 {
		x &= w.dscp[m.DSCP&63] & w.proto[m.Proto]
		if x == 0 {
			return 0
		}
		fam := 0
		if m.Flow.IPv6 {
			fam = 1
		}
		x &= w.addrV[fam][0][w.addr[fam][0].lookup(&m.Flow.Src)] & w.addrV[fam][1][w.addr[fam][1].lookup(&m.Flow.Dst)]
	} else {
		x &= w.nonIP
	}
	if x == 0 {
		return 0
	}
	if m.Flags&FlagPorts == 0 {
		x &= w.spV[w.sport.none] & w.dpoV[w.dport.none]
	} else {
		x &= w.spV[w.sport.lookup(m.Flow.SrcPort)] & w.dpoV[w.dport.lookup(m.Flow.DstPort)]
	}
	if x == 0 {
		return 0
	}
	return uint16(bits.TrailingZeros64(x) + 1)
}

// buildWord fills the word tables from the field classes.
func buildWord(t *tables, vids, dids, pids []uint32, f *fields, dscp, proto *classSet, nonIP []uint64) *wordTables {
	w := &wordTables{sport: t.sport, dport: t.dport, nonIP: nonIP[0]}
	for x, id := range vids {
		w.vlan[x] = f.vlan.vec(id)[0]
	}
	for x, id := range dids {
		w.dscp[x] = dscp.vec(id)[0]
	}
	for x, id := range pids {
		w.proto[x] = proto.vec(id)[0]
	}
	w.spV, w.dpoV = f.sp.vecs, f.dpo.vecs
	for fam := range w.addr {
		w.addr[fam] = t.addr[fam]
		w.addrV[fam] = [2][]uint64{f.addr[fam][0].vecs, f.addr[fam][1].vecs}
	}
	return w
}

// andFields ANDs the six field vectors, out as soon as the summaries
// leave no rule.
func (t *tables) andFields(m *Meta) uint16 {
	v, dpc, fam := t.vlanDP(m)
	var vs [6][]uint64
	vs[0], vs[1] = t.vec(t.vlanV, v), t.vec(t.dpV, dpc)
	sum := vs[0][0] & vs[1][0]
	if sum == 0 {
		return 0
	}
	var s, d uint32
	if fam < 2 {
		s, d = t.addr[fam][0].lookup(&m.Flow.Src), t.addr[fam][1].lookup(&m.Flow.Dst)
	}
	vs[2], vs[3] = t.vec(t.addrV[fam][0], s), t.vec(t.addrV[fam][1], d)
	if sum&vs[2][0]&vs[3][0] == 0 {
		return 0
	}
	sp, dpo := t.sport.none, t.dport.none
	if m.Flags&FlagPorts != 0 {
		sp, dpo = t.sport.lookup(m.Flow.SrcPort), t.dport.lookup(m.Flow.DstPort)
	}
	vs[4], vs[5] = t.vec(t.spV, sp), t.vec(t.dpoV, dpo)
	return t.and(&vs, 6)
}

// vec is class id's summed vector in a.
func (t *tables) vec(a []uint64, id uint32) []uint64 {
	return a[int(id)*t.stride : int(id+1)*t.stride]
}

// and ANDs vs[:n] (summed vectors): their summaries, then the words the
// summaries leave, lowest first; the first rule in all of them, or 0.
func (t *tables) and(vs *[6][]uint64, n int) uint16 {
	sum := vs[0][0]
	for k := 1; k < n; k++ {
		sum &= vs[k][0]
	}
	if t.stride == 1 {
		if sum == 0 {
			return 0
		}
		return uint16(bits.TrailingZeros64(sum) + 1)
	}
	for sum != 0 {
		j := bits.TrailingZeros64(sum)
		sum &= sum - 1
		for w := 1 + j*t.sgroup; w <= (j+1)*t.sgroup && w < len(vs[0]); w++ {
			x := vs[0][w]
			for k := 1; k < n; k++ {
				x &= vs[k][w]
			}
			if x != 0 {
				return uint16((w-1)<<6 + bits.TrailingZeros64(x) + 1)
			}
		}
	}
	return 0
}

// builder holds what building the tables needs besides the tables.
type builder struct {
	lim   limits
	t     *tables
	rules []Rule
	comp  []compiled
	bytes int // table size so far
	work  int // words ANDed so far
	cells int // combined-table entries so far

	firstBytes int
}

// classSet interns the class vectors of one field: vecs holds class i's
// words at [i*words, (i+1)*words); slots is an open-addressing hash set of
// ids+1 (0: empty).
type classSet struct {
	words int
	vecs  []uint64
	slots []uint32
}

func (b *builder) newClassSet() *classSet {
	return &classSet{words: b.t.words, slots: make([]uint32, 16)}
}

func (cs *classSet) n() uint32 { return uint32(len(cs.vecs) / cs.words) }

func (cs *classSet) vec(i uint32) []uint64 {
	return cs.vecs[int(i)*cs.words : int(i+1)*cs.words]
}

func hashVec(v []uint64) uint64 {
	h := uint64(len(v))
	for _, x := range v {
		h = (h ^ x) * 0x9e3779b97f4a7c15
		h ^= h >> 31
	}
	h ^= h >> 33 // murmur3's finalizer: every bit reaches the low ones
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	return h ^ h>>33
}

// intern returns the id of the class with rule words v, adding it if new.
func (cs *classSet) intern(v []uint64) uint32 {
	mask := uint64(len(cs.slots) - 1)
	for i := hashVec(v) & mask; ; i = (i + 1) & mask {
		id := cs.slots[i]
		if id == 0 {
			break
		}
		if slices.Equal(cs.vec(id-1), v) {
			return id - 1
		}
	}
	id := cs.n()
	if len(cs.vecs)+len(v) > cap(cs.vecs) { // double: append grows large slices by 1.25
		cs.vecs = append(make([]uint64, 0, 2*cap(cs.vecs)+len(v)), cs.vecs...)
	}
	cs.vecs = append(cs.vecs, v...)
	if int(id+1)*2 > len(cs.slots) {
		cs.slots = make([]uint32, 2*len(cs.slots))
		for j := range id {
			cs.insert(j)
		}
	}
	cs.insert(id)
	return id
}

func (cs *classSet) insert(id uint32) {
	mask := uint64(len(cs.slots) - 1)
	i := hashVec(cs.vec(id)) & mask
	for cs.slots[i] != 0 {
		i = (i + 1) & mask
	}
	cs.slots[i] = id + 1
}

// buildTables compiles rules into tables, or returns nil when even the
// field tables would exceed lim.tableBytes.
func buildTables(rules []Rule, comp []compiled, lim limits) *tables {
	t := &tables{words: max(1, (len(rules)+63)/64), stride: 1}
	t.sgroup = (t.words + 63) / 64
	if t.words > 1 {
		t.stride = t.words + 1
	}
	b := &builder{lim: lim, t: t, rules: rules, comp: comp, bytes: 64 << 10}
	all := b.base(func(*Rule) bool { return false })

	vlan := b.newClassSet()
	vids := b.rangeClasses(vlan, func(r *Rule) []Range { return r.VLAN }, 4095)
	dscp, proto := b.newClassSet(), b.newClassSet()
	dids := b.rangeClasses(dscp, func(r *Rule) []Range { return r.DSCP }, 63)
	pids := b.rangeClasses(proto, func(r *Rule) []Range { return r.Proto }, 255)
	if vids == nil || dids == nil || pids == nil {
		return nil
	}
	for x, id := range vids {
		t.vlanID[x] = uint16(id)
	}
	dp := b.newClassSet()
	v := make([]uint64, t.words)
	for d := range dids {
		for p := range pids {
			and(v, dscp.vec(dids[d]), proto.vec(pids[p]))
			t.dpID[d<<8|p] = uint16(dp.intern(v))
		}
	}
	nonIP := make([]uint64, t.words)
	for i := range comp {
		if !comp[i].linkLocal && !comp[i].ipOnly {
			nonIP[i>>6] |= 1 << (i & 63)
		}
	}
	t.dpID[64*256] = uint16(dp.intern(nonIP))

	noPorts := make([]uint64, t.words)
	for i := range comp {
		if !comp[i].linkLocal && comp[i].slow&(hasSport|hasDport) == 0 {
			noPorts[i>>6] |= 1 << (i & 63)
		}
	}
	sp := b.ports(&t.sport, func(r *Rule) []Range { return r.SrcPort }, noPorts)
	dpo := b.ports(&t.dport, func(r *Rule) []Range { return r.DstPort }, all)
	if sp == nil || dpo == nil {
		return nil
	}

	var addr [3][2]*classSet
	for fam := range 2 {
		addr[fam][0] = b.trie(&t.addr[fam][0], func(r *Rule) []netip.Prefix { return r.Src }, fam == 1)
		addr[fam][1] = b.trie(&t.addr[fam][1], func(r *Rule) []netip.Prefix { return r.Dst }, fam == 1)
	}
	addr[2][0], addr[2][1] = b.newClassSet(), b.newClassSet()
	addr[2][0].intern(all)
	addr[2][1].intern(all)

	for _, cs := range []*classSet{vlan, dp, sp, dpo, addr[0][0], addr[0][1], addr[1][0], addr[1][1]} {
		b.bytes += len(cs.vecs) * 8
	}
	if b.bytes > b.lim.tableBytes || vlan.n() > 1<<16 || dp.n() > 1<<16 {
		return nil
	}
	t.nDP, t.nDport = dp.n(), dpo.n()
	t.nVD, t.nPorts = vlan.n()*dp.n(), sp.n()*dpo.n()
	for fam := range addr {
		t.nDst[fam] = addr[fam][1].n()
	}
	f := &fields{vlan: vlan, dp: dp, sp: sp, dpo: dpo, addr: addr}
	f.frees()
	// One group for all rules, if its tables are small; else a group per
	// set of fields the rules constrain (rules on different fields
	// multiply each other's classes, apart each set's tables stay small);
	// else one group with the whole budget, at the best tier it fits.
	if t.words == 1 {
		t.word = buildWord(t, vids, dids, pids, f, dscp, proto, nonIP)
		return t
	}
	start, budget := b.bytes, b.lim.crossEntries
	b.lim.crossEntries = budget / oneGroupDiv
	g := b.cross(f, nil)
	b.lim.crossEntries = budget
	if g.tier != tierCross && g.tier != tierFlat {
		b.bytes, b.cells, b.work = start, 0, 0
		if gs := b.partition(f); gs != nil {
			t.setGroups(gs)
			return t
		}
		b.bytes, b.cells, b.work = start, 0, 0
		g = b.cross(f, nil)
	}
	if g.tier != tierFields {
		t.setGroups([]group{*g})
	} else {
		t.path = pathFields
		t.vlanV, t.dpV, t.spV, t.dpoV = b.summed(vlan), b.summed(dp), b.summed(sp), b.summed(dpo)
		for fam := range addr {
			for dir := range addr[fam] {
				t.addrV[fam][dir] = b.summed(addr[fam][dir])
			}
		}
	}
	if b.bytes > b.lim.tableBytes {
		return nil
	}
	return t
}

// setGroups keeps the groups, the tierFlat ones laid out in the arena.
func (t *tables) setGroups(gs []group) {
	type key struct {
		p        *uint32
		mul, add uint32
	}
	at := map[key]uint32{} // a table shared by families or groups is laid out once
	put := func(x []uint32, mul, add uint32) uint32 {
		k := key{&x[0], mul, add}
		if o, ok := at[k]; ok {
			return o
		}
		o := uint32(len(t.arena))
		at[k] = o
		for _, id := range x {
			t.arena = append(t.arena, id*mul+add)
		}
		return o
	}
	// A group of one input reads it with the zeros of another (laid out
	// once, when some group needs them): as many entries as the vd or
	// ports combination, whose size combine's budget bounded.
	zeroVD, zeroPorts := make([]uint32, t.nVD), make([]uint32, t.nPorts)
	var byPair [3][3][]flatGroup // [fam][(vd, addrs), (vd, ports), (addrs, ports)]
	for _, g := range gs {
		if g.tier != tierFlat {
			t.groups = append(t.groups, g)
			continue
		}
		t.nFlat++
		for fam := range t.flat {
			ff := uint32(len(t.flatFirst))
			for _, r := range g.ff[fam] {
				t.flatFirst = append(t.flatFirst, r-1) // flatMatch: 0 (none) becomes all ones
			}
			var fg flatGroup
			var pair int
			switch in := g.in; {
			case in[1] != 3: // two inputs
				fg = flatGroup{o0: put(g.ft[0][fam], g.fn[fam], 0), o1: put(g.ft[1][fam], 1, ff)}
				pair = int(in[0] + in[1] - 1) // (0,1) → 0, (0,2) → 1, (1,2) → 2
			case in[0] == 2: // ports alone (fn is 1): vd's zeros and ports
				fg = flatGroup{o0: put(zeroVD, 1, 0), o1: put(g.ft[0][fam], 1, ff)}
				pair = 1
			default: // vd or addrs alone: it and ports' zeros
				fg = flatGroup{o0: put(g.ft[0][fam], 1, ff), o1: put(zeroPorts, 1, 0)}
				pair = int(in[0]) + 1
			}
			byPair[fam][pair] = append(byPair[fam][pair], fg)
		}
	}
	for fam := range t.flat {
		t.flat[fam] = slices.Concat(byPair[fam][:]...)
		t.flatEnd[fam] = [3]uint32{uint32(len(byPair[fam][0])), uint32(len(byPair[fam][0]) + len(byPair[fam][1])), uint32(len(t.flat[fam]))}
	}
	t.path = pathGroups
	if len(t.groups) == 1 && t.nFlat == 0 {
		t.path = pathOne
	}
}

// fields are the field classes buildTables combines, and per field the
// rules it does not constrain.
type fields struct {
	vlan, dp, sp, dpo *classSet
	addr              [3][2]*classSet

	fVlan, fDP, fPorts, fAddr []uint64
}

func (f *fields) frees() {
	f.fVlan, f.fDP, f.fPorts = f.vlan.free(), f.dp.free(), f.sp.free()
	and(f.fPorts, f.fPorts, f.dpo.free())
	f.fAddr = f.addr[2][0].free()
	for fam := range f.addr {
		for dir := range f.addr[fam] {
			and(f.fAddr, f.fAddr, f.addr[fam][dir].free())
		}
	}
}

// maxGroups bounds the partition: rules of the rarer field sets share
// the last group.
const maxGroups = 8

// partition builds a group per set of fields the rules constrain (the
// most common first, the rarest sharing the last group); nil unless every
// group fits as tierCross.
func (b *builder) partition(f *fields) []group {
	sig := func(r *Rule) int {
		k := 0
		for i, has := range []bool{r.VLAN != nil, r.DSCP != nil, r.Proto != nil, r.Src != nil, r.Dst != nil, r.SrcPort != nil, r.DstPort != nil} {
			if has {
				k |= 1 << i
			}
		}
		return k
	}
	count := map[int]int{}
	for i := range b.rules {
		if !b.comp[i].linkLocal {
			count[sig(&b.rules[i])]++
		}
	}
	if len(count) < 2 {
		return nil
	}
	sigs := make([]int, 0, len(count))
	for k := range count {
		sigs = append(sigs, k)
	}
	slices.SortFunc(sigs, func(x, y int) int {
		if count[x] != count[y] {
			return count[y] - count[x]
		}
		return x - y
	})
	groupOf := map[int]int{}
	for i, k := range sigs {
		groupOf[k] = min(i, maxGroups-1)
	}
	masks := make([][]uint64, min(len(sigs), maxGroups))
	for g := range masks {
		masks[g] = make([]uint64, b.t.words)
	}
	for i := range b.rules {
		if !b.comp[i].linkLocal {
			g := groupOf[sig(&b.rules[i])]
			masks[g][i>>6] |= 1 << (i & 63)
		}
	}
	// Each set joins the first group it can share small tables with (an
	// eighth of the budget, a 64th for the first-match tables: fewer
	// groups, fewer lookups per packet, but tables that stay in cache),
	// or starts its own with the whole budget.
	type part struct {
		mask  []uint64
		g     *group
		bytes int
	}
	var parts []*part
	try := func(mask []uint64, div int) (*group, int) {
		saved, cells, work, lim := b.bytes, b.cells, b.work, b.lim
		b.bytes = 0
		b.lim.crossEntries, b.lim.firstEntries = lim.crossEntries/div, lim.firstEntries/(div*div)
		g := b.cross(f, mask)
		n := b.bytes
		b.bytes, b.cells, b.work, b.lim = saved, cells, work, lim
		return g, n
	}
	for _, m := range masks {
		joined := false
		for _, p := range parts {
			u := slices.Clone(p.mask)
			for w := range u {
				u[w] |= m[w]
			}
			// A flat part stays flat: a third field would cost it two
			// more loads, about what a group of its own costs.
			if g, n := try(u, 8); g.tier == tierFlat || g.tier == tierCross && p.g.tier == tierCross {
				b.bytes += n - p.bytes
				p.mask, p.g, p.bytes = u, g, n
				joined = true
				break
			}
		}
		if !joined {
			g, n := try(m, 1)
			if g.tier != tierCross && g.tier != tierFlat {
				return nil
			}
			b.bytes += n
			parts = append(parts, &part{m, g, n})
		}
		if b.bytes > b.lim.tableBytes {
			return nil
		}
	}
	if len(parts) < 2 {
		return nil // one group: the caller's single cross did not fit it
	}
	var gs []group
	for _, p := range parts {
		gs = append(gs, *p.g)
	}
	return gs
}

// cross builds as many of a group's combined tables as fit (mask: the
// group's rules; nil, all) and returns the group with the tier they give.
func (b *builder) cross(f *fields, mask []uint64) *group {
	g := &group{}
	var vd, ports *classSet
	var addrs [3]*classSet
	ok := true
	start := b.bytes
	// A rule every class of the fields still to come holds (it has no
	// condition on them) ends the search: a class needs no rule after
	// the first such one it holds (truncate).
	free := func(a, b, c []uint64) []uint64 {
		x := slices.Clone(a)
		and(x, x, b)
		if c != nil {
			and(x, x, c)
		}
		return x
	}
	g.vd, vd, ok = b.combine(f.vlan, f.dp, free(f.fAddr, f.fPorts, nil), mask)
	for fam := range f.addr {
		if ok {
			g.addrs[fam], addrs[fam], ok = b.combine(f.addr[fam][0], f.addr[fam][1], free(f.fVlan, f.fDP, f.fPorts), mask)
		}
	}
	if ok {
		g.ports, ports, ok = b.combine(f.sp, f.dpo, free(f.fVlan, f.fDP, f.fAddr), mask)
	}
	for fam := range addrs {
		if ok {
			g.nAddr[fam] = addrs[fam].n()
		}
	}
	if ok && b.flat(g, vd, &addrs, ports) {
		b.bytes = start + b.firstBytes
		for i := range g.ft {
			for fam := range g.ft[i] {
				if fam == 0 || g.in[i] == 1 {
					b.bytes += 4 * len(g.ft[i][fam])
				}
			}
		}
		g.vd, g.ports, g.addrs = nil, nil, [3][]uint32{}
		g.tier = tierFlat
		return g
	}
	// The AND of three needs their vectors; keep them until a better
	// tier fits.
	if ok {
		g.vdV, g.portsV = b.summed(vd), b.summed(ports)
		for fam := range addrs {
			g.addrsV[fam] = b.summed(addrs[fam])
		}
		ok = b.bytes <= b.lim.tableBytes
	}
	if !ok {
		b.bytes = start
		return &group{tier: tierFields}
	}
	// Pair two of the three and take the third with the pair, in the
	// first order that fits.
	triples, cells, work := b.bytes, b.cells, b.work
	fVD := free(f.fVlan, f.fDP, nil)
	frees := [3][]uint64{fVD, f.fAddr, f.fPorts}
	for _, ord := range [][3]uint8{{0, 2, 1}, {0, 1, 2}, {2, 1, 0}} {
		b.bytes, b.cells, b.work = triples, cells, work // each order has the whole budget
		var pair, third [3]*classSet
		ok := true
		for fam := range addrs {
			sets := [3]*classSet{vd, addrs[fam], ports}
			third[fam] = sets[ord[2]]
			if fam > 0 && ord[0] != 1 && ord[1] != 1 { // the same for every family
				g.pair[fam], pair[fam], g.nB[fam] = g.pair[0], pair[0], g.nB[0]
			} else if ok {
				g.pair[fam], pair[fam], ok = b.combine(sets[ord[0]], sets[ord[1]], frees[ord[2]], nil)
				g.nB[fam] = sets[ord[1]].n()
			}
			g.nC[fam] = third[fam].n()
			g.pm[fam] = [3]uint32{}
			g.pm[fam][ord[0]], g.pm[fam][ord[1]] = g.nB[fam], 1
		}
		g.tm = [3]uint32{}
		g.tm[ord[2]] = 1
		if !ok {
			continue
		}
		pairs := b.bytes
		if first := b.firsts(&pair, &third); first != nil {
			// The first-match tables replace every vector.
			g.first = *first
			g.vdV, g.portsV, g.addrsV = nil, nil, [3][]uint64{}
			b.bytes = start + 4*(len(g.vd)+len(g.ports)+len(g.addrs[0])+len(g.addrs[1])+len(g.addrs[2])) + pairs - triples + b.firstBytes
			g.tier = tierCross
			return g
		}
		b.bytes = pairs
		for fam := range pair {
			if fam > 0 && pair[fam] == pair[0] {
				g.pairV[fam] = g.pairV[0]
			} else {
				g.pairV[fam] = b.summed(pair[fam])
			}
			g.thirdV[fam] = [3][]uint64{g.vdV, g.addrsV[fam], g.portsV}[ord[2]]
		}
		if b.bytes <= b.lim.tableBytes {
			g.vdV, g.portsV, g.addrsV = nil, nil, [3][]uint64{}
			g.tier = tierPairs
			return g
		}
		g.pairV, g.thirdV = [3][]uint64{}, [3][]uint64{}
	}
	g.pair = [3][]uint32{}
	b.bytes = triples
	g.tier = tierTriples
	return g
}

// flat makes g tierFlat when its rules constrain at most two of vd,
// addrs and ports (the others' tables hold one class, per family) and the
// first-match table of the two fits; false otherwise.
func (b *builder) flat(g *group, vd *classSet, addrs *[3]*classSet, ports *classSet) bool {
	tabs := [3][3][]uint32{{g.vd, g.vd, g.vd}, g.addrs, {g.ports, g.ports, g.ports}}
	sets := [3][3]*classSet{{vd, vd, vd}, *addrs, {ports, ports, ports}}
	var used []int
	for k := range tabs {
		for fam := range tabs[k] {
			if slices.ContainsFunc(tabs[k][fam], func(id uint32) bool { return id != tabs[k][fam][0] }) {
				used = append(used, k)
				break
			}
		}
	}
	if len(used) > 2 {
		return false
	}
	if len(used) == 0 { // rules that hold every value: read one table anyway (a group reads at least one)
		used = []int{0}
	}
	in := [2]uint8{3, 3}
	for i, k := range used {
		in[i] = uint8(k)
	}
	// The classes of input i in a family: the used field's, or one that
	// holds every rule (the constant fields' classes go into c).
	ones := make([]uint64, b.t.words)
	for w := range ones {
		ones[w] = ^uint64(0)
	}
	class := func(i, fam int, id uint32) []uint64 {
		if in[i] == 3 {
			return ones
		}
		return sets[in[i]][fam].vec(id)
	}
	n := func(i, fam int) uint32 {
		if in[i] == 3 {
			return 1
		}
		return sets[in[i]][fam].n()
	}
	total := 0
	for fam := range 3 {
		total += int(n(0, fam)) * int(n(1, fam))
	}
	b.firstBytes = 2 * total
	if total > b.lim.firstEntries || b.bytes+b.firstBytes > b.lim.tableBytes {
		return false
	}
	zero := []uint32{0}
	c := make([]uint64, b.t.words)
	v := make([]uint64, b.t.words)
	for fam := range 3 {
		copy(c, ones)
		for k := range tabs {
			if !slices.Contains(used, k) {
				and(c, c, sets[k][fam].vec(tabs[k][fam][0]))
			}
		}
		for i := range in {
			g.ft[i][fam] = zero
			if in[i] != 3 {
				g.ft[i][fam] = tabs[in[i]][fam]
			}
		}
		nx, ny := n(0, fam), n(1, fam)
		ff := make([]uint16, nx*ny)
		for x := range nx {
			and(v, c, class(0, fam, x))
			for y := range ny {
				y1 := class(1, fam, y)
				for w := range v {
					if z := v[w] & y1[w]; z != 0 {
						ff[x*ny+y] = uint16(w<<6 + bits.TrailingZeros64(z) + 1)
						break
					}
				}
			}
		}
		g.ff[fam], g.fn[fam] = ff, ny
	}
	g.in = in
	return true
}

// firsts builds the first-match tables pair × third per family; nil when
// they do not fit.
func (b *builder) firsts(pair, third *[3]*classSet) *[3][]uint16 {
	total := 0
	for fam := range pair {
		total += int(pair[fam].n()) * int(third[fam].n())
	}
	b.firstBytes = 2 * total
	if total > b.lim.firstEntries || b.bytes+b.firstBytes > b.lim.tableBytes {
		return nil
	}
	var out [3][]uint16
	for fam := range pair {
		nx, ny := pair[fam].n(), third[fam].n()
		f := make([]uint16, nx*ny)
		for i := range nx {
			x := pair[fam].vec(i)
			for j := range ny {
				y := third[fam].vec(j)
				for w := range x {
					if z := x[w] & y[w]; z != 0 {
						f[i*ny+j] = uint16(w<<6 + bits.TrailingZeros64(z) + 1)
						break
					}
				}
			}
		}
		out[fam] = f
	}
	return &out
}

// afford charges a combined table of nx*ny entries.
func (b *builder) afford(nx, ny uint32) bool {
	n := int(nx) * int(ny)
	b.bytes += n * 4
	b.work += n * b.t.words
	b.cells += n
	return b.cells <= b.lim.crossEntries && b.bytes <= b.lim.tableBytes && b.work <= b.lim.buildWork
}

// combine interns the AND of every pair of classes of x and y, truncated
// by free and restricted to mask (nil: every rule): the table [i*y.n()+j] holds the id of x's class i AND y's
// class j.
func (b *builder) combine(x, y *classSet, free, mask []uint64) ([]uint32, *classSet, bool) {
	nx, ny := x.n(), y.n()
	saved := b.bytes
	if !b.afford(nx, ny) {
		b.bytes = saved
		return nil, nil, false
	}
	z := b.newClassSet()
	v := make([]uint64, b.t.words)
	z.intern(v) // class 0: no rule
	ids := make([]uint32, nx*ny)
	for i := range nx {
		for j := range ny {
			and(v, x.vec(i), y.vec(j))
			if mask != nil {
				and(v, v, mask)
			}
			truncate(v, free)
			ids[i*ny+j] = z.intern(v)
			if len(z.vecs)&1023 == 0 && b.bytes+len(z.vecs)*8 > b.lim.tableBytes {
				b.bytes = saved
				return nil, nil, false
			}
		}
	}
	b.bytes += len(z.vecs) * 8
	return ids, z, true
}

// truncate clears the rules after the first one v and free share: the
// fields still to be ANDed hold that rule whatever the packet, so the
// first match is at or before it.
func truncate(v, free []uint64) {
	for w := range v {
		if x := v[w] & free[w]; x != 0 {
			v[w] &= (x&-x)<<1 - 1
			clear(v[w+1:])
			return
		}
	}
}

// free is the AND of every class: the rules with no condition on the
// field.
func (cs *classSet) free() []uint64 {
	f := slices.Clone(cs.vec(0))
	for i := range cs.n() {
		and(f, f, cs.vec(i))
	}
	return f
}

func and(dst, x, y []uint64) {
	for w := range dst {
		dst[w] = x[w] & y[w]
	}
}

// summed lays classes out for and: per class a summary word (bit j: rule
// words [j*group, (j+1)*group) have a bit set), then the rule words; when
// words == 1 the word alone.
func (b *builder) summed(cs *classSet) []uint64 {
	t := b.t
	out := make([]uint64, 0, int(cs.n())*t.stride)
	for i := range cs.n() {
		v := cs.vec(i)
		if t.stride > 1 {
			var sum uint64
			for w, x := range v {
				if x != 0 {
					sum |= 1 << (w / t.sgroup)
				}
			}
			out = append(out, sum)
		}
		out = append(out, v...)
	}
	b.bytes += len(out) * 8
	return out
}

// base is the vector of the rules without a condition on a field
// (linklocal:yes rules left out).
func (b *builder) base(has func(*Rule) bool) []uint64 {
	v := make([]uint64, b.t.words)
	for i := range b.rules {
		if !b.comp[i].linkLocal && !has(&b.rules[i]) {
			v[i>>6] |= 1 << (i & 63)
		}
	}
	return v
}

// rangeClasses returns the class id of every value 0..max of a range field
// (nil when that would take more than b.lim.buildWork). A sweep over the
// values keeps, per rule, how many of its ranges hold the value, and
// interns a vector at each value where some range starts or ends.
func (b *builder) rangeClasses(cs *classSet, get func(*Rule) []Range, max int) []uint32 {
	type event struct {
		at   int
		rule int
		d    int
	}
	var ev []event
	for i := range b.rules {
		if b.comp[i].linkLocal {
			continue
		}
		for _, x := range get(&b.rules[i]) {
			ev = append(ev, event{int(x.Lo), i, 1}, event{int(x.Hi) + 1, i, -1})
		}
	}
	slices.SortFunc(ev, func(x, y event) int { return x.at - y.at })
	b.work += (len(ev) + 1) * b.t.words
	if b.work > b.lim.buildWork {
		return nil
	}
	v := b.base(func(r *Rule) bool { return get(r) != nil })
	count := make([]int32, len(b.rules))
	ids := make([]uint32, max+1)
	for lo := 0; lo <= max; {
		for len(ev) > 0 && ev[0].at == lo {
			e := ev[0]
			ev = ev[1:]
			count[e.rule] += int32(e.d)
			if count[e.rule] > 0 {
				v[e.rule>>6] |= 1 << (e.rule & 63)
			} else {
				v[e.rule>>6] &^= 1 << (e.rule & 63)
			}
		}
		hi := max + 1
		if len(ev) > 0 {
			hi = ev[0].at
		}
		id := cs.intern(v)
		for x := lo; x < hi; x++ {
			ids[x] = id
		}
		lo = hi
	}
	return ids
}

// ports fills a port map, its class for a frame without ports being none;
// blocks of 256 ports that share one class take no page.
func (b *builder) ports(p *portMap, get func(*Rule) []Range, none []uint64) *classSet {
	cs := b.newClassSet()
	ids := b.rangeClasses(cs, get, 65535)
	if ids == nil {
		return nil
	}
	for blk := 0; blk < 256; blk++ {
		ps := ids[blk<<8 : blk<<8+256]
		uniform := true
		for _, id := range ps {
			uniform = uniform && id == ps[0]
		}
		if uniform {
			p.block[blk] = ps[0] | uniformBlock
			continue
		}
		p.block[blk] = uint32(len(p.page))
		p.page = append(p.page, ps...)
		b.bytes += 256 * 4
	}
	p.none = cs.intern(none)
	return cs
}

// trieEntry is one prefix of a trie being built: its bytes (4 for IPv4,
// 16 for IPv6), length and rule.
type trieEntry struct {
	a    [16]byte
	bits int
	rule int
}

// trie builds one family's address trie for a field and returns its
// classes.
func (b *builder) trie(t *trie, get func(*Rule) []netip.Prefix, v6 bool) *classSet {
	var ps []trieEntry
	for i := range b.rules {
		if b.comp[i].linkLocal {
			continue
		}
		for _, p := range get(&b.rules[i]) {
			if p.Addr().Is6() != v6 {
				continue // matches no packet of this family
			}
			e := trieEntry{bits: p.Bits(), rule: i}
			if v6 {
				e.a = p.Addr().As16()
			} else {
				a4 := p.Addr().As4()
				copy(e.a[:], a4[:])
			}
			ps = append(ps, e)
		}
	}
	off, n := 12, 4 // IPv4 is stored IPv4-mapped: bytes 12-15
	if v6 {
		off, n = 0, 16
	}
	cs := b.newClassSet()
	base := b.base(func(r *Rule) bool { return get(r) != nil })
	t.root = b.trieNode(t, cs, off, n, 0, base, ps)
	if len(t.nodes) == 256 && t.root == ^int32(off) && !slices.ContainsFunc(t.nodes, func(e int32) bool { return e != t.nodes[0] }) {
		t.root = t.nodes[0] // one class for every address: no load
	}
	return cs
}

// trieNode appends the node for the prefixes ps, all longer than 8*depth
// bits and agreeing on the bytes above depth; inherited holds the rules
// whose shorter prefixes cover the node. It returns the node's reference. A
// node skips the bytes on which all of ps agree and none ends.
func (b *builder) trieNode(t *trie, cs *classSet, off, n, depth int, inherited []uint64, ps []trieEntry) int32 {
	idx := len(t.meta)
	t.nodes = append(t.nodes, make([]int32, 256)...)
	t.meta = append(t.meta, trieMeta{})
	b.bytes += 256*4 + 48
	if b.bytes > b.lim.tableBytes || idx >= 1<<23 {
		b.bytes = b.lim.tableBytes + 1
		return 0 // buildTables gives up
	}
	var nm trieMeta
	for len(ps) > 0 && depth < n-1 {
		same := true
		for _, p := range ps {
			same = same && p.bits > 8*(depth+1) && p.a[depth] == ps[0].a[depth]
		}
		if !same {
			break
		}
		at := off + depth
		if at < 8 {
			nm.mhi |= 0xff << (8 * at)
			nm.vhi |= uint64(ps[0].a[depth]) << (8 * at)
		} else {
			nm.mlo |= 0xff << (8 * (at - 8))
			nm.vlo |= uint64(ps[0].a[depth]) << (8 * (at - 8))
		}
		depth++
	}
	ref := int32(idx)<<8 | int32(off+depth)
	if nm.mhi|nm.mlo != 0 {
		nm.miss = int32(cs.intern(inherited))
		ref |= 16
	}
	ref = ^ref
	t.meta[idx] = nm
	// Prefixes ending in this byte cover a run of its values; the longer
	// ones go down to the child of their byte.
	var deeper [256][]trieEntry
	var here []trieEntry
	for _, p := range ps {
		if p.bits <= 8*(depth+1) {
			here = append(here, p)
		} else {
			deeper[p.a[depth]] = append(deeper[p.a[depth]], p)
		}
	}
	v := make([]uint64, b.t.words)
	for x := 0; x < 256; x++ {
		copy(v, inherited)
		for _, p := range here {
			k := p.bits - 8*depth // 0..8 bits of this byte
			if x>>(8-k) == int(p.a[depth])>>(8-k) {
				v[p.rule>>6] |= 1 << (p.rule & 63)
			}
		}
		if len(deeper[x]) == 0 {
			t.nodes[idx<<8|x] = int32(cs.intern(v))
			continue
		}
		t.nodes[idx<<8|x] = b.trieNode(t, cs, off, n, depth+1, append([]uint64(nil), v...), deeper[x])
	}
	return ref
}
