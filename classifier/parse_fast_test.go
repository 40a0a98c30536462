package classifier

import (
	"encoding/binary"
	"math/rand/v2"
	"reflect"
	"testing"
)

// fastCases are frames parseFast must take (the common case it exists
// for) — TCP (with and without SYN) and UDP over IPv4 and IPv6, with
// Ethernet padding after the IP packet — and frames it must leave to
// parseGeneral.
func fastCases(tb testing.TB) (take, leave [][]byte) {
	for _, kind := range []string{"ipv4-tcp", "ipv4-udp", "ipv6-tcp", "ipv6-udp"} {
		take = append(take, benchFrames(tb, kind)[:8]...)
	}
	leave = append(leave, benchFrames(tb, "qinq-ipv4-udp")[:2]...)
	// Untagged non-IP frames take the raw fast path: net_null's 64 zero
	// bytes, LLDP, an 802.3 length frame with padding, a control frame,
	// a bare Ethernet header.
	take = append(take, benchFrames(tb, "non-ip")[:2]...)
	lenFrame := make([]byte, 60)
	binary.BigEndian.PutUint16(lenFrame[12:], 20)
	for i := 14; i < len(lenFrame); i++ {
		lenFrame[i] = byte(i)
	}
	ctl := make([]byte, 80)
	binary.BigEndian.PutUint16(ctl[12:], ControlEtherType)
	take = append(take, make([]byte, 64), lenFrame, ctl, make([]byte, 14), nonIPFrame(0x88cc, make([]byte, 100)))
	for _, name := range sortedNames(basePkts()) {
		f := basePkts()[name].frame(tb)
		if parseFast(f, &Meta{}, LevelFull, false) {
			take = append(take, f)
		} else {
			leave = append(leave, f)
		}
	}
	for _, mf := range malformedFrames(tb) {
		leave = append(leave, mf.frame)
	}
	// A SYN, padding, a fragment, IPv4 options: built from a taken frame.
	v4 := cloneB(benchFrames(tb, "ipv4-tcp")[0])
	syn := cloneB(v4)
	syn[14+20+13] |= 0x02
	take = append(take, syn, append(cloneB(v4), 0, 0, 0, 0))
	frag := cloneB(v4)
	binary.BigEndian.PutUint16(frag[14+6:], 0x2000) // more fragments
	opts := cloneB(v4)
	opts[14] = 0x46
	short := cloneB(v4)
	binary.BigEndian.PutUint16(short[14+2:], 20+l4Window-1)
	long := cloneB(v4)
	binary.BigEndian.PutUint16(long[14+2:], uint16(len(v4)-14+1))
	leave = append(leave, frag, opts, short, long)
	// Tunnels (VXLAN and Geneve are UDP the fast path would otherwise
	// take, MPLS a non-IP EtherType): the general path reads through them.
	leave = append(leave, tunnelSeeds(tb)...)
	return take, leave
}

// TestParseFastIsGeneral holds the fast path against the general one (its
// naive twin): on every frame it takes, every field of the Meta is the
// same; the frames it exists for do take it; the others fall through
// with the Meta untouched.
func TestParseFastIsGeneral(t *testing.T) {
	take, leave := fastCases(t)
	if len(take) < 32 {
		t.Fatalf("only %d fast-path frames", len(take))
	}
	for i, f := range take {
		var fast, gen Meta
		if !parseFast(f, &fast, LevelFull, false) {
			t.Fatalf("frame %d (%d bytes) not taken by the fast path", i, len(f))
		}
		parseGeneral(f, &gen)
		if !reflect.DeepEqual(fast, gen) {
			t.Fatalf("frame %d: fast path differs:\n%+v\n%+v", i, fast, gen)
		}
	}
	for i, f := range leave {
		m := Meta{Hash: 7}
		if parseFast(f, &m, LevelFull, false) {
			var gen Meta
			parseGeneral(f, &gen)
			if !reflect.DeepEqual(m, gen) {
				t.Fatalf("left frame %d taken and wrong:\n%+v\n%+v", i, m, gen)
			}
			continue
		}
		if m != (Meta{Hash: 7}) {
			t.Fatalf("frame %d: fast path wrote the Meta and then declined", i)
		}
	}
	// Random single-byte corruptions of taken frames: whatever the fast
	// path takes must match the general path.
	r := rand.New(rand.NewPCG(1, 2))
	for n := 0; n < 20000; n++ {
		g := cloneB(take[r.IntN(len(take))])
		for k := 0; k < 1+r.IntN(3); k++ {
			g[12+r.IntN(len(g)-12)] = byte(r.Uint32())
		}
		var fast, gen Meta
		if parseFast(g, &fast, LevelFull, false) {
			parseGeneral(g, &gen)
			if !reflect.DeepEqual(fast, gen) {
				t.Fatalf("corrupted frame % x: fast path differs:\n%+v\n%+v", g, fast, gen)
			}
		}
	}
}

// FuzzParseFast: on any frame the fast path takes it agrees with the
// general path.
func FuzzParseFast(f *testing.F) {
	take, leave := fastCases(f)
	for _, fr := range append(take, leave...) {
		f.Add(fr)
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		var fast, gen Meta
		if parseFast(frame, &fast, LevelFull, false) {
			parseGeneral(frame, &gen)
			if !reflect.DeepEqual(fast, gen) {
				t.Fatalf("fast path differs:\n%+v\n%+v", fast, gen)
			}
		}
	})
}

// checkLean holds ParseLean and ParseNoFlowHash (and ParseShort, on a
// frame shorter than MinFastLen) against Parse on one
// frame: the same Hash, Flags and Len always; every field for frames off
// the IP fast path; and on it ParseLean leaves alone the fields it
// promises to leave alone, and ParseNoFlowHash writes every field with
// FlowHash 0.
func checkLean(t *testing.T, f []byte) {
	t.Helper()
	var full Meta
	Parse(f, &full)
	stale := Meta{FlowHash: 0xdead, VLAN: 7, EtherType: 0x1234, DSCP: 9, Proto: 99}
	stale.Flow.SrcPort = 4242
	lean, noFH := stale, stale
	ParseLean(f, &lean)
	ParseNoFlowHash(f, &noFH)
	// ParseLevel at each level is the function it names.
	for level, want := range []Meta{lean, noFH, full} {
		got := stale
		ParseLevel(f, &got, Level(level))
		if got != want {
			t.Fatalf("frame % x: ParseLevel(%d) %+v, want %+v", f, level, got, want)
		}
	}
	if len(f) < MinFastLen {
		// A lane's parse loop hands these to ParseShort.
		short := stale
		ParseShort(f, &short)
		if short != full {
			t.Fatalf("short frame % x:\n ParseShort %+v\n Parse      %+v", f, short, full)
		}
	}
	if parseFast(f, &Meta{}, LevelFull, false) && full.Flags&(FlagIPv4|FlagIPv6) != 0 {
		want := stale
		want.Hash, want.Flags, want.Len = full.Hash, full.Flags, full.Len
		if lean != want {
			t.Fatalf("fast-path frame % x:\n ParseLean %+v\n want      %+v", f, lean, want)
		}
		want = full
		want.FlowHash = 0
		if noFH != want {
			t.Fatalf("fast-path frame % x:\n ParseNoFlowHash %+v\n want            %+v", f, noFH, want)
		}
		return
	}
	if lean != full || noFH != full {
		t.Fatalf("general-path frame % x:\n ParseLean       %+v\n ParseNoFlowHash %+v\n Parse           %+v", f, lean, noFH, full)
	}
}

func TestParseLean(t *testing.T) {
	take, leave := fastCases(t)
	r := rand.New(rand.NewPCG(5, 6))
	for _, f := range append(take, leave...) {
		checkLean(t, f)
		for k := 0; k < 50; k++ { // corruptions: a byte flipped, the frame cut
			g := cloneB(f)
			if len(g) > 0 {
				g[r.IntN(len(g))] ^= byte(1 + r.IntN(255))
			}
			checkLean(t, g)
			checkLean(t, f[:r.IntN(len(f)+1)])
		}
	}
	var m Meta
	frames := take[:16]
	if a := testing.AllocsPerRun(100, func() {
		for _, f := range frames {
			ParseLean(f, &m)
			ParseNoFlowHash(f, &m)
		}
	}); a != 0 {
		t.Fatalf("ParseLean, ParseNoFlowHash allocate %v times per 16 frames", a)
	}
}

func FuzzParseLean(f *testing.F) {
	take, leave := fastCases(f)
	for _, fr := range append(take, leave...) {
		f.Add(fr)
	}
	f.Fuzz(func(t *testing.T, frame []byte) { checkLean(t, frame) })
}

// TestParseShortIsParse holds ParseShort to Parse on frames shorter than
// MinFastLen (and a few longer ones): random bytes, every EtherType Parse
// knows, VLAN tags, truncated IP headers.
func TestParseShortIsParse(t *testing.T) {
	r := rand.New(rand.NewPCG(19, 86))
	ets := []uint16{0, 20, 1500, 1501, etherTypeIPv4, etherTypeIPv6, tpid8021Q, tpid8021AD, tpidQinQ,
		ControlEtherType, 0x0806, 0x88cc, 0x8808, 0x1234}
	for n := 0; n < 20000; n++ {
		f := make([]byte, r.IntN(MinFastLen+8))
		for i := range f {
			f[i] = byte(r.Uint32())
		}
		if len(f) >= 14 && r.IntN(4) != 0 {
			binary.BigEndian.PutUint16(f[12:], ets[r.IntN(len(ets))])
			if r.IntN(2) == 0 {
				f[0] &^= 1 // unicast
			}
			if len(f) > 14 && r.IntN(2) == 0 {
				f[14] = 0x45
			}
		}
		var want, got Meta
		Parse(f, &want)
		got = Meta{Hash: 1, FlowHash: 2, VLAN: 3, Flags: 0xffff} // every field must be overwritten
		ParseShort(f, &got)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("frame % x:\nParseShort %+v\nParse      %+v", f, got, want)
		}
	}
}
